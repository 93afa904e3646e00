"""fedbench.engine.linear_fast.lane_vectors: each explicit-vector loop gives, lane for lane, the bits of the plain
loop it replaces (compiled with the lane kernels' flags), at every lane count, offset and special
value, and leaves the elements outside its lanes alone."""

import numba
import numpy as np
import pytest

from fedbench.engine.linear_fast.lane_vectors import (
    dot2_into,
    fma_into,
    gather_point_into,
    gradient_messages_into,
    messages_into,
    mul_into,
    products_into,
    scaled_dot2_into,
    scaled_messages_into,
)

_FLAGS = {"contract"}  # logits._LANE_FLAGS
LANES = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 18, 20, 24, 31, 32, 41]


@numba.njit(fastmath=_FLAGS)
def _fma_loop(y, y0, x, x0, a, n):
    for i in range(n):
        y[y0 + i] += a * x[x0 + i]


@numba.njit(fastmath=_FLAGS)
def _fma_vec(y, y0, x, x0, a, n):
    fma_into(y, y0, x, x0, a, n)


@numba.njit(fastmath=_FLAGS)
def _mul_loop(y, y0, x, x0, a, n):
    for i in range(n):
        y[y0 + i] = x[x0 + i] * a


@numba.njit(fastmath=_FLAGS)
def _mul_vec(y, y0, x, x0, a, n):
    mul_into(y, y0, x, x0, a, n)


@numba.njit(fastmath=_FLAGS)
def _dot2_loop(z, w, i0, x0, i1, x1, n):
    for i in range(n):
        z[i] += x0 * w[i0 + i] + x1 * w[i1 + i]


@numba.njit(fastmath=_FLAGS)
def _dot2_vec(z, w, i0, x0, i1, x1, n):
    dot2_into(z, w, i0, x0, i1, x1, n)


@numba.njit(fastmath=_FLAGS)
def _messages_loop(es, de, ae, count, at, m, wg, n):
    for j in range(m):
        o = at[j] * n
        for i in range(n):
            x = es[o + i] + de[o + i]
            ae[o + i] += wg * x
            count[i] += (1.0 if x != 0.0 else 0.0) - (1.0 if es[o + i] != 0.0 else 0.0)


@numba.njit(fastmath=_FLAGS)
def _messages_vec(es, de, ae, count, at, m, wg, n):
    messages_into(es, de, ae, count, at, m, wg, n)


@numba.njit(fastmath=_FLAGS)
def _scaled_dot2_loop(z, v, h, q, i0, x0, i1, x1, n):
    for i in range(n):
        z[i] += x0 * (v[i0 + i] + q[i] * h[i0 + i]) + x1 * (v[i1 + i] + q[i] * h[i1 + i])


@numba.njit(fastmath=_FLAGS)
def _scaled_dot2_vec(z, v, h, q, i0, x0, i1, x1, n):
    scaled_dot2_into(z, v, h, q, i0, x0, i1, x1, n)


@numba.njit(fastmath=_FLAGS)
def _scaled_messages_loop(es, c, h, ae, count, at, m, wg, n, sums_h):
    """The loop of scaled_messages_into (the message x summed) and, with ``sums_h``, of
    gradient_messages_into (h summed)."""
    for j in range(m):
        o = at[j] * n
        for i in range(n):
            x = es[o + i] + c[i] * h[o + i]
            ae[o + i] += wg * (h[o + i] if sums_h else x)
            count[i] += (1.0 if x != 0.0 else 0.0) - (1.0 if es[o + i] != 0.0 else 0.0)


@numba.njit(fastmath=_FLAGS)
def _scaled_messages_vec(es, c, h, ae, count, at, m, wg, n):
    scaled_messages_into(es, c, h, ae, count, at, m, wg, n)


@numba.njit(fastmath=_FLAGS)
def _gradient_messages_vec(es, c, g, ag, count, at, m, wg, n):
    gradient_messages_into(es, c, g, ag, count, at, m, wg, n)


@numba.njit(fastmath=_FLAGS)
def _gradient_counts_vec(es, c, g, count, at, m, wg, n):
    gradient_messages_into(es, c, g, None, count, at, m, wg, n)


@numba.njit(fastmath=_FLAGS)
def _products_loop(z, gr, rows, dz, d0, ds, hx, h0, hs, n):
    for j in range(rows):
        g = gr[j]
        if g != 0.0:
            for ln in range(n):
                z[ln] += g * (dz[d0 + j * ds + ln] * hx[h0 + j * hs + ln])


@numba.njit(fastmath=_FLAGS)
def _products_vec(z, gr, rows, dz, d0, ds, hx, h0, hs, n):
    products_into(z, gr, rows, dz, d0, ds, hx, h0, hs, n)


@numba.njit(fastmath=_FLAGS)
def _gather_point_loop(z, u, cols, vals, m, col_off, bias_k, wn, q, n_seq, lanes):
    y = np.zeros(wn)
    for i in range(m + (1 if bias_k >= 0 else 0)):
        k, x = (col_off + cols[i], vals[i]) if i < m else (bias_k, 1.0)
        for j in range(wn):
            y[j] += x * u[k * wn + j]
    for r in range(n_seq):
        for ln in range(lanes):
            z[ln] += q[r, ln] * y[r * lanes + ln]


@numba.njit(fastmath=_FLAGS)
def _gather_point_vec(z, u, cols, vals, m, col_off, bias_k, wn, q, n_seq, lanes):
    gather_point_into(z, u, cols, vals, m, col_off, bias_k, wn, q, n_seq, lanes)


def _values(rng, size):
    """Random float64 of mixed scales with zeros, signed zeros, subnormals, infinities and NaN."""
    v = rng.standard_normal(size) * 10.0 ** rng.integers(-8, 8, size)
    specials = np.array([0.0, -0.0, 5e-324, -2e-310, np.inf, -np.inf, np.nan, 1e308])
    at = rng.random(size) < 0.15
    v[at] = rng.choice(specials, at.sum())
    return v


def _same(a, b):
    """Bit for bit (-0.0 apart from 0.0), a NaN where the other has one: IEEE 754 leaves a NaN
    result's sign and payload open, and x86 takes them from whichever operand LLVM put first."""
    nan = np.isnan(a)
    return np.array_equal(nan, np.isnan(b)) and np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64))


@pytest.mark.parametrize("lanes", LANES)
def test_fma_and_mul_are_their_loops_bit_for_bit(lanes):
    rng = np.random.default_rng(lanes)
    for y0, x0 in [(0, 0), (3, 5), (lanes, 2 * lanes + 1)]:
        x = _values(rng, x0 + lanes + 3)
        y = _values(rng, y0 + lanes + 3)
        for a in (0.37, -1e-300, 0.0, np.inf, float(rng.standard_normal())):
            for loop, vec in [(_fma_loop, _fma_vec), (_mul_loop, _mul_vec)]:
                want, got = y.copy(), y.copy()
                loop(want, y0, x, x0, a, lanes)
                vec(got, y0, x, x0, a, lanes)
                assert _same(want, got), (loop.__name__, lanes, y0, x0, a)
                assert _same(got[:y0], y[:y0]) and _same(got[y0 + lanes:], y[y0 + lanes:])


@pytest.mark.parametrize("lanes", LANES)
def test_dot2_is_its_loop_bit_for_bit(lanes):
    """The two-term form is the one LLVM contracts the loop to, z + fma(x0, w0, x1 · w1): checked
    against the loop, not assumed."""
    rng = np.random.default_rng(100 + lanes)
    w = _values(rng, 6 * lanes)
    for i0, i1 in [(0, lanes), (4 * lanes, lanes + 1), (2, 2)]:
        for x0, x1 in [(0.5, -3.25), (float(rng.standard_normal()), float(rng.standard_normal())), (1.0, 0.0)]:
            z = _values(rng, lanes + 2)
            want, got = z.copy(), z.copy()
            _dot2_loop(want, w, i0, x0, i1, x1, lanes)
            _dot2_vec(got, w, i0, x0, i1, x1, lanes)
            assert _same(want, got), (lanes, i0, i1, x0, x1)
    # finite random data, where the two contractions that LLVM could have picked differ in the last bit
    w, z = rng.standard_normal(4 * lanes), rng.standard_normal(lanes)
    want, got = z.copy(), z.copy()
    _dot2_loop(want, w, 0, 0.3712, 2 * lanes, -1.2345, lanes)
    _dot2_vec(got, w, 0, 0.3712, 2 * lanes, -1.2345, lanes)
    assert _same(want, got)


@pytest.mark.parametrize("lanes", LANES)
def test_messages_are_their_loop_bit_for_bit(lanes):
    """A client's messages at its touched coordinates (none, one, some in any order, all), summed
    and counted; at past m never read, the count past n left alone."""
    rng = np.random.default_rng(200 + lanes)
    coords = 9
    es = _values(rng, coords * lanes + 4)
    de = _values(rng, coords * lanes + 4)
    de[: len(de) // 3] = -es[: len(de) // 3]  # messages that cancel to exactly 0
    for at in ([], [3], [8, 0, 5, 2], list(range(coords))[::-1]):
        at = np.array(at + [7], dtype=np.int64)  # one more entry, past m: never read
        m = len(at) - 1
        ae, count = _values(rng, coords * lanes + 4), rng.integers(0, 50, lanes + 3).astype(np.float64)
        for wg in (0.125, 1.0, float(rng.random())):
            want = ae.copy(), count.copy()
            got = ae.copy(), count.copy()
            _messages_loop(es, de, want[0], want[1], at, m, wg, lanes)
            _messages_vec(es, de, got[0], got[1], at, m, wg, lanes)
            assert _same(want[0], got[0]) and _same(want[1], got[1]), (lanes, at, wg)
            assert _same(got[1][lanes:], count[lanes:])  # count only at 0..n−1


@pytest.mark.parametrize("lanes", LANES)
def test_the_scaled_paths_loops_are_their_loops_bit_for_bit(lanes):
    rng = np.random.default_rng(300 + lanes)
    v, h, q = _values(rng, 6 * lanes), _values(rng, 6 * lanes), _values(rng, lanes)
    for i0, i1 in [(0, lanes), (4 * lanes, lanes + 1), (2, 2)]:
        for x0, x1 in [(0.5, -3.25), (float(rng.standard_normal()), 0.0)]:
            z = _values(rng, lanes + 2)
            want, got = z.copy(), z.copy()
            _scaled_dot2_loop(want, v, h, q, i0, x0, i1, x1, lanes)
            _scaled_dot2_vec(got, v, h, q, i0, x0, i1, x1, lanes)
            assert _same(want, got), (lanes, i0, i1)
    v, h, q, z = (rng.standard_normal(4 * lanes), rng.standard_normal(4 * lanes), rng.standard_normal(lanes),
                  rng.standard_normal(lanes))  # finite: the contractions LLVM could pick differ in the last bits
    want, got = z.copy(), z.copy()
    _scaled_dot2_loop(want, v, h, q, 0, 0.3712, 2 * lanes, -1.2345, lanes)
    _scaled_dot2_vec(got, v, h, q, 0, 0.3712, 2 * lanes, -1.2345, lanes)
    assert _same(want, got)
    for at in ([0], [4, 1, 3]):
        at = np.array(at, dtype=np.int64)
        es, c, hk = _values(rng, 5 * lanes + 4), _values(rng, lanes), _values(rng, 5 * lanes + 4)
        es[lanes: lanes + lanes // 2] = 0.0
        ae, count = _values(rng, 5 * lanes + 4), np.zeros(lanes + 2)
        want, got = (ae.copy(), count.copy()), (ae.copy(), count.copy())
        _scaled_messages_loop(es, c, hk, want[0], want[1], at, len(at), 0.25, lanes, False)
        _scaled_messages_vec(es, c, hk, got[0], got[1], at, len(at), 0.25, lanes)
        assert _same(want[0], got[0]) and _same(want[1], got[1]), (lanes, at)


@pytest.mark.parametrize("lanes", LANES)
def test_gradient_messages_are_their_loop_bit_for_bit(lanes):
    """The minibatch baselines' client end: its gradient sum weighted into ag and its message
    (es + c g) counted at its touched coordinates (none, one, some in any order, all), messages that
    cancel to exactly 0 and a zero shared message among them; at past m never read, the count past
    n left alone; with ag None, the same count and nothing summed."""
    rng = np.random.default_rng(400 + lanes)
    coords = 9
    es, c, g = _values(rng, coords * lanes + 4), _values(rng, lanes), _values(rng, coords * lanes + 4)
    c[0] = 1.0
    es[lanes: 2 * lanes] = 0.0
    g[: coords * lanes: lanes] = -es[: coords * lanes: lanes]  # lane 0: es + 1·g = 0 exactly
    for at in ([], [3], [8, 0, 5, 2, 1], list(range(coords))[::-1]):
        at = np.array(at + [7], dtype=np.int64)
        m = len(at) - 1
        ag, count = _values(rng, coords * lanes + 4), rng.integers(0, 50, lanes + 3).astype(np.float64)
        for wg in (0.125, float(rng.random())):
            want, got = (ag.copy(), count.copy()), (ag.copy(), count.copy())
            _scaled_messages_loop(es, c, g, want[0], want[1], at, m, wg, lanes, True)
            _gradient_messages_vec(es, c, g, got[0], got[1], at, m, wg, lanes)
            assert _same(want[0], got[0]) and _same(want[1], got[1]), (lanes, at, wg)
            assert _same(got[1][lanes:], count[lanes:])
            alone = count.copy()
            _gradient_counts_vec(es, c, g, alone, at, m, wg, lanes)
            assert _same(alone, want[1]), (lanes, at, wg)


@pytest.mark.parametrize("lanes", LANES + [33, 64, 70])
@pytest.mark.parametrize("rows", [0, 1, 7, 37])
def test_products_are_the_ordered_loop_bit_for_bit(lanes, rows):
    """Each lane's chain in j's order, zero products skipped (their dz hx may be inf or NaN), the
    rows padded to a multiple of 8 lanes with NaN that must not leak into z."""
    rng = np.random.default_rng(1000 * lanes + rows)
    padded = -(-lanes // 8) * 8
    ds, hs = 2 * padded, padded  # two classes' logit gradients a row; q Aʲ c a row
    dz, hx = np.full(rows * ds + padded + 8, np.nan), np.full((rows + 3) * hs, np.nan)
    for j in range(rows):
        dz[j * ds: j * ds + 2 * padded][:lanes] = rng.standard_normal(lanes)  # class 0's lanes
        dz[j * ds + padded: j * ds + padded + lanes] = _values(rng, lanes)  # class 1's lanes
    for j in range(rows + 3):
        hx[j * hs: j * hs + lanes] = _values(rng, lanes)
    gr = rng.integers(-3, 4, rows + 2).astype(np.float64) * rng.random(rows + 2)
    gr[::3] = 0.0
    for d0, h0 in [(0, 0), (padded, 2 * hs)]:
        z = rng.standard_normal(lanes + 2)
        want, got = z.copy(), z.copy()
        _products_loop(want, gr, rows, dz, d0, ds, hx, h0, hs, lanes)
        _products_vec(got, gr, rows, dz, d0, ds, hx, h0, hs, lanes)
        assert _same(want, got), (lanes, rows, d0, h0)
        assert _same(got[lanes:], z[lanes:])
    if lanes > 1:  # a lane alone: its own bits
        one = z[:1].copy()
        _products_vec(one, gr, rows, dz, 0, ds, hx, 0, hs, 1)
        _products_loop(z, gr, rows, dz, 0, ds, hx, 0, hs, lanes)
        assert _same(one, z[:1])


@pytest.mark.parametrize("lanes", LANES + [33, 64, 70])
@pytest.mark.parametrize("n_seq", [1, 2, 3])
def test_gather_point_is_its_loops_bit_for_bit(lanes, n_seq):
    """A row read against u_r at its non-zeros (and the bias), times q per sequence, in the loops'
    order; u padded past its end with NaN that must not leak; float32 values widened exactly."""
    rng = np.random.default_rng(10 * lanes + n_seq)
    coords, wn = 30, n_seq * lanes
    u = np.concatenate([_values(rng, coords * wn), np.full(8, np.nan)])
    q = _values(rng, n_seq * lanes).reshape(n_seq, lanes)
    for dtype in (np.float64, np.float32):
        for m, col_off, bias_k in [(0, 0, -1), (1, 3, -1), (14, 0, coords - 1), (13, 10, 5)]:
            cols = rng.choice(coords - col_off - 1, size=m, replace=False).astype(np.int32)
            vals = rng.standard_normal(m).astype(dtype)
            z = rng.standard_normal(lanes + 3)
            want, got = z.copy(), z.copy()
            _gather_point_loop(want, u, cols, vals, m, col_off, bias_k, wn, q, n_seq, lanes)
            _gather_point_vec(got, u, cols, vals, m, col_off, bias_k, wn, q, n_seq, lanes)
            assert _same(want, got), (lanes, n_seq, dtype, m, bias_k)
            assert _same(got[lanes:], z[lanes:])


def test_a_count_moves_by_the_zeros_it_sees():
    """[x ≠ 0] − [e ≠ 0] per lane: a message that cancels to 0 counts −1, one that becomes non-zero
    where the shared one is 0 counts +1, NaN counts as non-zero."""
    es = np.array([1.0, 0.0, 2.0, 0.0, np.nan, 3.0])
    de = np.array([-1.0, 4.0, 1.0, 0.0, 0.0, np.nan])
    ae, count = np.zeros(6), np.zeros(6)
    _messages_vec(es, de, ae, count, np.zeros(1, dtype=np.int64), 1, 1.0, 6)
    assert count.tolist() == [-1.0, 1.0, 0.0, 0.0, 0.0, 0.0]


def test_wrong_arguments_fail_to_compile():
    @numba.njit
    def two_d(y):
        fma_into(y, 0, y, 0, 1.0, 2)

    @numba.njit
    def float32(y):
        fma_into(y, 0, y, 0, 1.0, 2)

    @numba.njit
    def int_scalar(y):
        mul_into(y, 0, y, 0, 1, 2)

    @numba.njit
    def float_coordinates(y):
        messages_into(y, y, y, y, y, 1, 1.0, 2)

    with pytest.raises(numba.core.errors.TypingError):
        two_d(np.zeros((2, 2)))
    with pytest.raises(numba.core.errors.TypingError):
        float32(np.zeros(2, dtype=np.float32))
    with pytest.raises(numba.core.errors.TypingError):
        int_scalar(np.zeros(2))
    with pytest.raises(numba.core.errors.TypingError):
        float_coordinates(np.zeros(2))
