"""Histograms of the transmitted updates Δ (FedElasticNet, Kim et al., Figure 2).

Kim, Woo, Seo & Kim, "Communication-Efficient and Drift-Robust Federated Learning via Elastic
Net" (arXiv 2022), §4 and Figure 2, show the distribution of the transmitted Δ_k^t of FedDyn,
Algorithm 2 and Algorithm 3 (CIFAR-10, 10 % participation, Dir(0.3)) to argue that a sparse,
Laplacian-like Δ has a lower entropy than FedDyn's Gaussian-like one. Raw Δ are never stored
(a CIFAR-10 run sends ~1.6e9 values): a cell that asks for it (config ``delta_histogram``) keeps
only bin counts at the entropy's bin width 0.01, so the figure and the entropy columns describe
the same quantisation.

``delta_histogram.parquet`` of a cell (:data:`DELTA_HISTOGRAM_SCHEMA`), beside ``metrics.parquet``:

    experiment, dataset, partition, algorithm, seed   the cell (as in metrics.parquet)
    round    t ≥ 1: the values sent in round t (the rounds the config lists);
             0: cumulative, every round 1..T the cell ran (T = the last round, or the round it
             diverged at, which is left out since its values are not finite)
    entry    the message entry: ``delta`` (Δ_k; FedDyn's θ_k converted to Δ_k = θ_k − θ^{t−1},
             :func:`fedbench.metrics.communication.as_delta`), ``delta_c`` (SCAFFOLD's Δc_k),
             ``omega`` (Elastic Aggregation's Ω_k)
    bin      int64 b: the values v with ⌊v / 0.01⌋ = b, i.e. v ∈ [0.01·b, 0.01·(b+1)); the
             overflow bins ±2^62 also hold every value beyond ±4.6e16
             (:func:`fedbench.metrics.communication.histogram`)
    count    int64 > 0: values sent in that bin, pooled over the round's sampled clients and
             every tensor of the entry (only non-empty bins are stored)

So Σ count over the rows of one (round, entry) = the number of scalars of that entry sent in the
round(s), and the entropy of the counts pooled over entries is the round's
``uplink_entropy_bits_delta`` increment (tested), unless values fell into the overflow bins.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from fedbench.metrics.communication import histogram

DELTA_HISTOGRAM_SCHEMA = pa.schema([
    ("experiment", pa.string()),
    ("dataset", pa.string()),
    ("partition", pa.string()),
    ("algorithm", pa.string()),
    ("seed", pa.int64()),
    ("round", pa.int64()),
    ("entry", pa.string()),
    ("bin", pa.int64()),
    ("count", pa.int64()),
])
IDENTITY = ("experiment", "dataset", "partition", "algorithm", "seed")


def _merge(a: tuple[np.ndarray, np.ndarray] | None, bins: np.ndarray, counts: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """The sum of two sparse histograms (sorted bins, counts)."""
    if a is None:
        return bins.copy(), counts.copy()
    all_bins = np.concatenate([a[0], bins])
    all_counts = np.concatenate([a[1], counts])
    u, inv = np.unique(all_bins, return_inverse=True)
    return u, np.bincount(inv, weights=all_counts, minlength=len(u)).astype(np.int64)


class DeltaHistogram:
    """Accumulates the Δ histograms of one cell over its rounds.

    Args:
        rounds: the rounds t ≥ 1 whose own histogram is kept (besides the cumulative one).
    """

    def __init__(self, rounds: Iterable[int]):
        self.rounds = sorted({int(r) for r in rounds})
        if any(r < 1 for r in self.rounds):
            raise ValueError(f"delta histogram rounds must be >= 1 (got {self.rounds})")
        self.per_round: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
        self.cumulative: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add_round(self, t: int, messages: list[dict], flatten) -> None:
        """Add round t's messages (Δ convention), entry by entry; ``flatten(list of pytrees)``
        gives an entry's values as one float64 vector."""
        entries = sorted({e for m in messages for e in m})
        for e in entries:
            bins, counts = histogram(flatten([m[e] for m in messages if e in m]))
            if t in self.rounds:
                self.per_round[(t, e)] = (bins, counts)
            self.cumulative[e] = _merge(self.cumulative.get(e), bins, counts)

    def state(self) -> dict:
        """A picklable snapshot (for the resume checkpoint)."""
        return {"rounds": self.rounds, "per_round": self.per_round, "cumulative": self.cumulative}

    @classmethod
    def from_state(cls, state: dict) -> DeltaHistogram:
        h = cls(state["rounds"])
        h.per_round, h.cumulative = dict(state["per_round"]), dict(state["cumulative"])
        return h

    def to_table(self, identity: dict) -> pa.Table:
        """The :data:`DELTA_HISTOGRAM_SCHEMA` table: per-round rows (round order), then the
        cumulative rows (round 0); entries in name order, bins increasing."""
        cols: dict[str, list] = {f.name: [] for f in DELTA_HISTOGRAM_SCHEMA}
        items = [((t, e), h) for (t, e), h in sorted(self.per_round.items())]
        items += [((0, e), h) for e, h in sorted(self.cumulative.items())]
        for (t, e), (bins, counts) in items:
            n = len(bins)
            for key in IDENTITY:
                cols[key].extend([identity[key]] * n)
            cols["round"].extend([t] * n)
            cols["entry"].extend([e] * n)
            cols["bin"].extend(bins.tolist())
            cols["count"].extend(counts.tolist())
        return pa.table(cols, schema=DELTA_HISTOGRAM_SCHEMA)
