"""fedbench.metrics.histogram: per-round and cumulative Δ histograms, counts only."""

import numpy as np
import pyarrow as pa
import pytest
import torch

from fedbench.metrics.communication import entropy_bits, flatten
from fedbench.metrics.histogram import DELTA_HISTOGRAM_SCHEMA, DeltaHistogram

IDENT = {"experiment": "e", "dataset": "d", "partition": "p", "algorithm": "a", "seed": 0}


def _msgs(rng, n_clients, scale):
    return [{"delta": {"w": torch.as_tensor(rng.normal(scale=scale, size=(3, 4))), "b": torch.zeros(4)},
             "delta_c": {"w": torch.as_tensor(rng.laplace(scale=scale, size=(3, 4))), "b": torch.ones(4)}}
            for _ in range(n_clients)]


def test_counts_sum_to_transmitted_values_and_cumulate():
    rng = np.random.default_rng(0)
    h = DeltaHistogram([1, 3])
    sent = []
    for t in range(1, 5):
        msgs = _msgs(rng, n_clients=t, scale=0.05 * t)
        sent.append(msgs)
        h.add_round(t, msgs, flatten)
    table = h.to_table(IDENT)
    assert table.schema == DELTA_HISTOGRAM_SCHEMA
    rows = table.to_pylist()
    assert {(r["round"], r["entry"]) for r in rows} == {(t, e) for t in (0, 1, 3) for e in ("delta", "delta_c")}

    def total(rnd, entry):
        return sum(r["count"] for r in rows if r["round"] == rnd and r["entry"] == entry)

    assert total(1, "delta") == 1 * 16 and total(3, "delta_c") == 3 * 16
    assert total(0, "delta") == sum(t * 16 for t in range(1, 5))  # every value of every round
    # a round's histogram is exactly the binned values: its entropy is entropy_bits of them
    for t in (1, 3):
        counts = np.array([r["count"] for r in rows if r["round"] == t and r["entry"] == "delta"])
        p = counts / counts.sum()
        assert float(-(p * np.log2(p)).sum()) == pytest.approx(entropy_bits(flatten([m["delta"] for m in sent[t - 1]])),
                                                                rel=1e-12)
    # the cumulative histogram is the histogram of all the values pooled
    pooled = flatten([m["delta"] for msgs in sent for m in msgs])
    q = np.floor(pooled / 0.01).astype(np.int64)
    b, c = np.unique(q, return_counts=True)
    cum = [(r["bin"], r["count"]) for r in rows if r["round"] == 0 and r["entry"] == "delta"]
    assert cum == list(zip(b.tolist(), c.tolist()))
    # b = 0 always holds the exact zeros of the bias entries
    assert dict(cum)[0] >= sum(t * 4 for t in range(1, 5))


def test_state_round_trip_and_validation():
    rng = np.random.default_rng(1)
    h = DeltaHistogram([2])
    h.add_round(1, _msgs(rng, 2, 0.1), flatten)
    h.add_round(2, _msgs(rng, 2, 0.1), flatten)
    back = DeltaHistogram.from_state(h.state())
    assert back.to_table(IDENT).equals(h.to_table(IDENT))
    assert DeltaHistogram([]).to_table(IDENT).num_rows == 0
    with pytest.raises(ValueError, match=">= 1"):
        DeltaHistogram([0])
    assert isinstance(h.to_table(IDENT), pa.Table)
