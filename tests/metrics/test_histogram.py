"""fedbench.metrics.histogram: per-round and cumulative Δ histograms, counts only."""

import numpy as np
import pyarrow as pa
import pytest
import torch

from fedbench.metrics.communication import entropy_bits, entropy_from_counts, flatten
from fedbench.metrics.histogram import DELTA_HISTOGRAM_SCHEMA, DeltaHistogram, _merge

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


def _sparse_msgs(t):
    """Round t's two clients: known exact zeros (0.0 and −0.0), tiny non-zeros in bin 0 and
    values elsewhere; returns (messages, exact zeros of the delta entry, of delta_c)."""
    tiny = [1e-300, 1e-9, 0.004, 0.0099]
    a = {"delta": {"w": torch.tensor([0.0] * t + [-0.0] * 2 + tiny + [-0.003, 0.25], dtype=torch.float64)},
         "delta_c": {"w": torch.tensor([0.0, 1.0], dtype=torch.float64)}}
    b = {"delta": {"w": torch.tensor([0.0, 0.0, -0.5, 1e-12], dtype=torch.float64)}}  # no delta_c: SCAFFOLD-free
    return [a, b], t + 2 + 2, 1


def test_exact_zeros_per_round_cumulative_and_through_the_table():
    h = DeltaHistogram([2, 3])
    want = {}
    sent = []
    for t in (1, 2, 3):
        msgs, nz_delta, nz_c = _sparse_msgs(t)
        sent.append(msgs)
        h.add_round(t, msgs, flatten)
        want[(t, "delta")], want[(t, "delta_c")] = nz_delta, nz_c
    rows = h.to_table(IDENT).to_pylist()
    assert h.to_table(IDENT).schema == DELTA_HISTOGRAM_SCHEMA

    def col(name, rnd, entry):
        return {r["bin"]: r[name] for r in rows if r["round"] == rnd and r["entry"] == entry}

    for t in (2, 3):
        for e in ("delta", "delta_c"):
            assert col("zeros", t, e) == {b: (want[(t, e)] if b == 0 else 0) for b in col("count", t, e)}
        # bin 0 = the exact zeros + the 4 + 1 tiny non-zeros of [0, 0.01); -0.003 is in bin -1
        assert col("count", t, "delta")[0] == want[(t, "delta")] + 5
    for e in ("delta", "delta_c"):  # cumulative over rounds 1..3, round 1 included though not kept
        assert sum(col("zeros", 0, e).values()) == sum(want[(t, e)] for t in (1, 2, 3))
        assert set(col("zeros", 0, e)) == set(col("count", 0, e))
    assert all(r["zeros"] <= r["count"] and (r["zeros"] == 0 or r["bin"] == 0) for r in rows)
    # the counts, and the entropy, are those of the 0.01 bins, exact zeros included in bin 0
    pooled = flatten([m["delta"] for msgs in sent for m in msgs])
    assert sum(col("count", 0, "delta").values()) == pooled.size
    counts = np.array(list(col("count", 3, "delta").values()))
    assert entropy_from_counts(counts) == pytest.approx(entropy_bits(flatten([m["delta"] for m in sent[2]])), rel=1e-12)
    assert sum(col("zeros", 0, "delta").values()) == int(np.count_nonzero(pooled == 0))


def test_merge_adds_counts_and_zeros_bin_by_bin():
    a = (np.array([-1, 0, 3]), np.array([2, 5, 1]), np.array([0, 4, 0]))
    b = (np.array([0, 2]), np.array([3, 7]), np.array([1, 0]))
    bins, counts, zeros = _merge(a, b)
    assert bins.tolist() == [-1, 0, 2, 3] and counts.tolist() == [2, 8, 7, 1] and zeros.tolist() == [0, 5, 0, 0]
    assert zeros.dtype == counts.dtype == np.int64
    first = _merge(None, b)
    assert [x.tolist() for x in first] == [x.tolist() for x in b] and first[2] is not b[2]  # a copy


def test_state_keeps_the_zeros_and_resumes_to_the_same_table():
    full, part = DeltaHistogram([1, 3]), DeltaHistogram([1, 3])
    for t in (1, 2, 3):
        full.add_round(t, _sparse_msgs(t)[0], flatten)
    for t in (1, 2):
        part.add_round(t, _sparse_msgs(t)[0], flatten)
    resumed = DeltaHistogram.from_state(part.state())
    resumed.add_round(3, _sparse_msgs(3)[0], flatten)
    assert resumed.to_table(IDENT).equals(full.to_table(IDENT))
    assert sum(resumed.to_table(IDENT).column("zeros").to_pylist()) > 0


def test_a_state_without_zero_counts_is_rejected():
    h = DeltaHistogram([1])
    h.add_round(1, _sparse_msgs(1)[0], flatten)
    old = h.state()
    old = {**old, "per_round": {k: v[:2] for k, v in old["per_round"].items()},
           "cumulative": {k: v[:2] for k, v in old["cumulative"].items()}}
    with pytest.raises(ValueError, match="exact-zero counts"):
        DeltaHistogram.from_state(old)
