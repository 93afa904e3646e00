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
    zeros    int64 ≥ 0: how many of that bin's ``count`` values are exactly 0.0 (−0.0 included);
             0 on every row but bin 0's. Bin 0 = [0, 0.01) pools the exact zeros that sparse
             updates send with small non-zero values; Figure 2 shows them as a bar of their own
             (:func:`fedbench.papers.fedelasticnet.plot_delta_histograms`), while ``count``, and
             so the entropy, keep the paper's 0.01 quantisation.

So Σ count over the rows of one (round, entry) = the number of scalars of that entry sent in the
round(s), Σ zeros = the number of those that are exactly 0, and the entropy of the counts pooled
over entries is the round's ``uplink_entropy_bits_delta`` increment (tested), unless values fell
into the overflow bins.

A file without the column ``zeros`` (or of other column types) does not have this layout: its
readers (:func:`fedbench.analysis.paper_figures.read_histograms`) stop with a ValueError naming
the file and the fix, retraining its cell.
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
    ("zeros", pa.int64()),
])
IDENTITY = ("experiment", "dataset", "partition", "algorithm", "seed")


#: A sparse histogram: (bins, counts, zeros), int64 arrays of one length, bins increasing
#: (:func:`fedbench.metrics.communication.histogram`).
Hist = tuple[np.ndarray, np.ndarray, np.ndarray]


def _merge(a: Hist | None, b: Hist) -> Hist:
    """The sum of two sparse histograms (bins, counts, zeros); ``a`` None: a copy of ``b``."""
    if a is None:
        return tuple(x.copy() for x in b)
    all_bins = np.concatenate([a[0], b[0]])
    u, inv = np.unique(all_bins, return_inverse=True)

    def total(i: int) -> np.ndarray:
        return np.bincount(inv, weights=np.concatenate([a[i], b[i]]), minlength=len(u)).astype(np.int64)

    return u, total(1), total(2)


class DeltaHistogram:
    """Accumulates the Δ histograms of one cell over its rounds.

    Args:
        rounds: the rounds t ≥ 1 whose own histogram is kept (besides the cumulative one).

    Raises:
        ValueError: a round < 1.
    """

    def __init__(self, rounds: Iterable[int]):
        self.rounds = sorted({int(r) for r in rounds})
        if any(r < 1 for r in self.rounds):
            raise ValueError(f"delta histogram rounds must be >= 1 (got {self.rounds})")
        self.per_round: dict[tuple[int, str], Hist] = {}
        self.cumulative: dict[str, Hist] = {}

    def add_round(self, t: int, messages: list[dict], flatten) -> None:
        """Add round t's messages (Δ convention), entry by entry; ``flatten(list of pytrees)``
        gives an entry's values as one float64 vector."""
        entries = sorted({e for m in messages for e in m})
        for e in entries:
            h = histogram(flatten([m[e] for m in messages if e in m]))
            if t in self.rounds:
                self.per_round[(t, e)] = h
            self.cumulative[e] = _merge(self.cumulative.get(e), h)

    def state(self) -> dict:
        """A picklable snapshot (for the resume checkpoint)."""
        return {"rounds": self.rounds, "per_round": self.per_round, "cumulative": self.cumulative}

    @classmethod
    def from_state(cls, state: dict) -> DeltaHistogram:
        """The histogram of a :meth:`state` snapshot.

        Raises:
            ValueError: the snapshot's histograms are not (bins, counts, zeros) triples (a snapshot
                without the exact-zero counts cannot be continued: its zeros are unknown).
        """
        h = cls(state["rounds"])
        h.per_round, h.cumulative = dict(state["per_round"]), dict(state["cumulative"])
        if any(len(x) != 3 for x in (*h.per_round.values(), *h.cumulative.values())):
            raise ValueError("the Δ-histogram state holds (bins, counts) pairs without the exact-zero counts "
                             "(bins, counts, zeros)")
        return h

    def to_table(self, identity: dict) -> pa.Table:
        """The :data:`DELTA_HISTOGRAM_SCHEMA` table: per-round rows (round order), then the
        cumulative rows (round 0); entries in name order, bins increasing."""
        cols: dict[str, list] = {f.name: [] for f in DELTA_HISTOGRAM_SCHEMA}
        items = [((t, e), h) for (t, e), h in sorted(self.per_round.items())]
        items += [((0, e), h) for e, h in sorted(self.cumulative.items())]
        for (t, e), (bins, counts, zeros) in items:
            n = len(bins)
            for key in IDENTITY:
                cols[key].extend([identity[key]] * n)
            cols["round"].extend([t] * n)
            cols["entry"].extend([e] * n)
            cols["bin"].extend(bins.tolist())
            cols["count"].extend(counts.tolist())
            cols["zeros"].extend(zeros.tolist())
        return pa.table(cols, schema=DELTA_HISTOGRAM_SCHEMA)
