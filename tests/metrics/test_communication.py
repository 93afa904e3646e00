import math

import numpy as np
import pytest
import torch

from fedbench.metrics.communication import count_floats, count_nonzeros, entropy_bits, flatten


def test_counts_over_nested_messages():
    msg = {"delta": {"w": torch.tensor([[0.0, 1.0], [2.0, 0.0]]), "b": torch.zeros(3)},
           "delta_c": {"w": torch.ones(2, 2), "b": torch.tensor([0.0, 0.0, 5.0])}}
    assert count_floats(msg) == 14
    assert count_nonzeros(msg) == 2 + 4 + 1
    assert flatten([msg, msg]).size == 28


def test_entropy_of_uniform_over_bins_is_log2_bins():
    # 8 equally likely bins of width 0.01 -> exactly 3 bits per value
    v = np.repeat(np.arange(8) * 0.01 + 0.005, 100)
    assert entropy_bits(v) == pytest.approx(3.0, abs=1e-12)


def test_entropy_of_bernoulli_matches_closed_form():
    p = 0.2
    v = np.array([0.0] * 800 + [1.0] * 200)
    h = -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
    assert entropy_bits(v) == pytest.approx(h, abs=1e-12)


def test_entropy_of_constant_is_zero_and_of_gaussian_matches_differential_entropy():
    assert entropy_bits(np.full(50, 0.123)) == 0.0
    rng = np.random.default_rng(0)
    sigma = 1.0
    v = rng.normal(0, sigma, 2_000_000)
    # quantised Gaussian: H ≈ h(X) − log2(bin width), h(X) = ½ log2(2πe σ²)
    expected = 0.5 * math.log2(2 * math.pi * math.e * sigma**2) - math.log2(0.01)
    assert entropy_bits(v) == pytest.approx(expected, abs=0.01)


def test_entropy_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        entropy_bits(np.array([0.0, np.nan]))


def test_entropy_of_huge_finite_values_does_not_overflow():
    v = np.array([1e300, -1e300, 1e300, 5.0])
    assert entropy_bits(v) == pytest.approx(1.5)


def test_histogram_counts_every_value_in_floor_bins():
    from fedbench.metrics.communication import histogram

    v = np.array([0.0, 0.004, -0.004, 0.0101, -0.5, 0.0, 2.0])
    bins, counts, zeros = histogram(v)
    assert bins.tolist() == [-50, -1, 0, 1, 200] and counts.tolist() == [1, 1, 3, 1, 1]
    assert zeros.tolist() == [0, 0, 2, 0, 0]
    assert counts.sum() == v.size and bins.dtype == np.int64 and zeros.dtype == np.int64
    wide = np.array([0.0, 1e7, -1e7])  # more bins than the dense path allows: the sort-based path
    b2, c2, z2 = histogram(wide)
    assert b2.tolist() == [-1_000_000_000, 0, 1_000_000_000] and c2.tolist() == [1, 1, 1] and z2.tolist() == [0, 1, 0]
    assert all(a.size == 0 for a in histogram(np.zeros(0)))
    with pytest.raises(ValueError, match="NaN or inf"):
        histogram(np.array([np.nan]))


def test_histogram_counts_the_exact_zeros_of_bin_zero_apart():
    """Sparse updates (FedElasticNet's Algorithms 2 and 3) send exact zeros; bin 0 = [0, 0.01) also
    holds tiny non-zero values. ``zeros`` counts exactly the values == 0 (−0.0 included), within
    bin 0's count, so the counts and the entropy stay those of the 0.01 bins."""
    from fedbench.metrics.communication import entropy_from_counts, histogram

    tiny = [5e-324, 1e-12, 0.009999, 0.0099999999]  # in [0, 0.01), none of them 0
    v = np.array([0.0] * 5 + [-0.0] * 3 + tiny + [-1e-12, -0.02, 0.01, 0.5])
    bins, counts, zeros = histogram(v)
    assert bins.tolist() == [-2, -1, 0, 1, 50]
    assert counts.tolist() == [1, 1, 8 + len(tiny), 1, 1]  # bin 0 keeps its zeros in its count
    assert zeros.tolist() == [0, 0, 8, 0, 0]
    assert entropy_from_counts(counts) == entropy_bits(v)  # the entropy's bins, zeros included
    _, c, z = histogram(v.astype(np.float32))  # float32: 5e-324 rounds to an exact 0 (a float32 model's Δ)
    assert z.sum() == 9 and c.sum() == v.size
    _, _, z = histogram(torch.zeros(7, dtype=torch.float64).numpy())
    assert z.tolist() == [7]
    b, c, z = histogram(np.array([0.003, -0.5]))  # bin 0 without exact zeros
    assert b.tolist() == [-50, 0] and c.tolist() == [1, 1] and z.tolist() == [0, 0]


def test_as_delta_replaces_a_model_by_its_update():
    from fedbench.metrics.communication import as_delta

    theta_prev = {"w": torch.tensor([1.0, 2.0]), "b": torch.tensor([0.5])}
    msg = {"params": {"w": torch.tensor([1.5, 1.0]), "b": torch.tensor([0.5])}}
    d = as_delta(msg, theta_prev)
    assert set(d) == {"delta"}
    assert d["delta"]["w"].tolist() == [0.5, -1.0] and d["delta"]["b"].tolist() == [0.0]
    update = {"delta": {"w": torch.ones(2)}, "delta_c": {"w": torch.zeros(2)}}
    assert as_delta(update, theta_prev) is update  # already in the Δ convention
    with pytest.raises(ValueError, match="ambiguous"):
        as_delta({"params": msg["params"], "delta": msg["params"]}, theta_prev)


def test_histogram_counts_values_beyond_int64_bins_in_the_overflow_bins():
    from fedbench.metrics.communication import MAX_BIN, histogram

    # finite but blown-up updates (a run on its way to divergence) must not stop the cell
    v = np.array([1e300, -1e300, 5.0, 2e300, 4e16, 5e16])
    bins, counts, zeros = histogram(v)
    assert bins.dtype == np.int64 and counts.sum() == v.size and not zeros.any()
    assert dict(zip(bins.tolist(), counts.tolist())) == {-MAX_BIN: 1, 500: 1, int(4e18): 1, MAX_BIN: 3}
    b2, c2, z2 = histogram(np.append(v, [0.0, -0.0, 1e-300]))  # overflow bins and exact zeros together
    assert dict(zip(b2.tolist(), z2.tolist())) == {-MAX_BIN: 0, 0: 2, 500: 0, int(4e18): 0, MAX_BIN: 0}
    assert dict(zip(b2.tolist(), c2.tolist()))[0] == 3
    assert entropy_bits(v) == pytest.approx(math.log2(6))  # the entropy keeps all six bins apart
