"""fedbench.engine.linear_fast.prefetch: a prefetch changes no value and rejects what it cannot address."""

import numba
import numpy as np
import pytest

from fedbench.engine.linear_fast.prefetch import prefetch


@numba.njit
def _gather_sum(x, rows, ahead):
    """Σ_j x[rows[j]], requesting x[rows[j + ahead]] before reading x[rows[j]]."""
    total = 0.0
    for j in range(len(rows)):
        if j + ahead < len(rows):
            prefetch(x, rows[j + ahead])
        total += x[rows[j]]
    return total


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
def test_prefetch_changes_no_value(dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(-1000, 1000, size=1 << 16).astype(dtype)
    rows = rng.integers(0, len(x), size=5000)
    expected = float(np.sum(x[rows].astype(np.float64)))
    assert _gather_sum(x, rows, 8) == expected  # requested 8 rows ahead
    assert _gather_sum(x, rows, len(rows)) == expected  # never requested


def test_prefetch_of_every_element_type_compiles():
    @numba.njit
    def touch(a):
        for i in range(len(a)):
            prefetch(a, i)
        return a.sum()

    for dtype in (np.float64, np.float32, np.int32, np.int64, np.uint64, np.bool_):
        a = np.ones(3, dtype=dtype)
        assert touch(a) == a.sum()


def test_prefetch_rejects_a_2d_array_or_a_float_index():
    @numba.njit
    def two_d(a):
        prefetch(a, 0)

    @numba.njit
    def float_index(a):
        prefetch(a, 0.5)

    with pytest.raises(numba.core.errors.TypingError):
        two_d(np.zeros((2, 2)))
    with pytest.raises(numba.core.errors.TypingError):
        float_index(np.zeros(2))
