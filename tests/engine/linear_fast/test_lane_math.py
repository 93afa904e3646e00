"""fedbench.engine.linear_fast.lane_math: exp and log1p within 1 ulp of the true value, the same bits whether a
loop vectorizes or not, and loops over them that vectorize."""

import math
import re

import mpmath
import numba
import numpy as np
import pytest

from fedbench.engine.linear_fast.lane_math import div, exp_nonpos, log1p_unit


@numba.njit(fastmath={"contract"})
def _exp_all(x, out):
    for i in range(x.shape[0]):
        out[i] = exp_nonpos(x[i])


@numba.njit(fastmath={"contract"})
def _log1p_all(u, out):
    for i in range(u.shape[0]):
        out[i] = log1p_unit(u[i])


@numba.njit(fastmath={"contract"})
def _div_all(a, b, out):
    for i in range(a.shape[0]):
        out[i] = div(a[i], b[i])


def _apply(fn, *args):
    out = np.empty_like(args[0])
    fn(*args, out)
    return out


def _ulps(got: np.ndarray, exact: list) -> np.ndarray:
    """|got − exact| in units of the last place of the float64 nearest to exact."""
    return np.array([float(abs((mpmath.mpf(float(g)) - e) / mpmath.mpf(float(np.spacing(float(e))))))
                     for g, e in zip(got, exact)])


def test_exp_is_within_one_ulp_of_the_true_value():
    mpmath.mp.dps = 60
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.exponential(3.0, 1500), -rng.uniform(0.0, 708.0, 1500),
                        -np.arange(0, 40) * math.log(2) / 2])  # at and between the reduction's breaks
    got = _apply(_exp_all, x)
    err = _ulps(got, [mpmath.exp(mpmath.mpf(float(v))) for v in x])
    assert err.max() <= 1.0, (x[np.argmax(err)], err.max())


def test_exp_at_its_ends_and_on_specials():
    x = np.array([0.0, -0.0, -1e-300, -745.0, -745.2, -744.4, -709.0, -720.0, -746.0, -1e308, -np.inf, np.nan])
    got = _apply(_exp_all, x)
    assert got[0] == 1.0 and got[1] == 1.0 and got[2] == 1.0
    # down to the subnormals: the nearest float64 of e^x, as libm gives it (one subnormal step at most)
    ref = np.array([math.exp(v) for v in x[3:8]])
    assert np.all(np.abs(got[3:8] - ref) <= 5e-324)
    assert got[8] == 0.0 and got[9] == 0.0 and got[10] == 0.0
    assert math.isnan(got[11])


def test_log1p_is_within_one_ulp_of_the_true_value():
    mpmath.mp.dps = 60
    rng = np.random.default_rng(1)
    u = np.concatenate([rng.uniform(0.0, 1.0, 1500), np.exp(-rng.uniform(0.0, 700.0, 1500)),
                        [1.0, 0.5, math.sqrt(2) - 1, np.nextafter(math.sqrt(2) - 1, 1.0),
                         np.nextafter(math.sqrt(2) - 1, 0.0), 2.0 ** -52, 2.0 ** -53, 1e-300, 5e-324]])
    got = _apply(_log1p_all, u)
    err = _ulps(got, [mpmath.log1p(mpmath.mpf(float(v))) for v in u])
    assert err.max() <= 1.0, (u[np.argmax(err)], err.max())
    assert _apply(_log1p_all, np.array([0.0]))[0] == 0.0
    assert math.isnan(_apply(_log1p_all, np.array([np.nan]))[0])


def test_a_value_is_the_same_in_a_vectorized_loop_as_alone():
    """A lane's numbers must not depend on how many lanes share its loop: the vector body and the
    scalar remainder (and a loop of one) give the same bits."""
    rng = np.random.default_rng(2)
    x = -rng.exponential(5.0, 1003)
    u = rng.uniform(0.0, 1.0, 1003)
    together_e, together_l = _apply(_exp_all, x), _apply(_log1p_all, u)
    alone_e = np.array([_apply(_exp_all, x[i:i + 1])[0] for i in range(len(x))])
    alone_l = np.array([_apply(_log1p_all, u[i:i + 1])[0] for i in range(len(u))])
    assert np.array_equal(together_e, alone_e)
    assert np.array_equal(together_l, alone_l)


def test_div_is_ieee_division():
    a = np.array([1.0, -1.0, 0.0, 3.0, 1e308])
    b = np.array([0.0, 0.0, 0.0, 7.0, 1e-308])
    got = _apply(_div_all, a, b)
    assert got[0] == np.inf and got[1] == -np.inf and math.isnan(got[2])
    assert got[3] == 3.0 / 7.0 and got[4] == np.inf


def test_div_rejects_what_is_not_float64():
    @numba.njit
    def ints(a, b):
        return div(a, b)

    with pytest.raises(numba.core.errors.TypingError):
        ints(1, 2)


@pytest.mark.skipif(not re.match(r"x86_64|AMD64", __import__("platform").machine()), reason="x86-64 assembly")
def test_loops_over_them_vectorize():
    """The point of the module: no call into libm and no zero-divisor branch in the loop, so LLVM
    emits packed double-precision arithmetic (x86-64: `mulpd`/`vmulpd`, `vfmadd…pd`)."""
    packed = re.compile(r"\b(v?mulpd|vfmadd\d+pd|v?addpd)\b")
    for fn, args in ((_exp_all, (np.zeros(4), np.zeros(4))), (_log1p_all, (np.zeros(4), np.zeros(4)))):
        fn(*args)
        asm = "".join(fn.inspect_asm().values())
        assert packed.search(asm), fn
        libm = re.findall(r"\$(exp|log1p|log)\b", asm)  # numba calls libm through its address: movabsq $exp, %reg
        assert not libm, (fn, libm)
