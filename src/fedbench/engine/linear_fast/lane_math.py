"""exp and log1p for the compiled lane loops: the same float64 result whether LLVM vectorizes the
loop or not, and loops that it can vectorize.

Binary logistic regression needs e^{−|z|} at every client-step and, for the loss, log(1 + e^{−|z|})
at every evaluated row. ``math.exp`` and ``math.log1p`` compile to calls into libm, one lane at a
time (~5 and ~6 ns a value here), and a loop that calls them cannot vectorize; a vector math
library (SVML) would, but would give the vector body and the loop's scalar remainder different
last bits, and a lane's numbers must not depend on how many lanes share its loop. The two
functions below are plain float64 arithmetic (a range reduction, a polynomial, a scale by a power
of two), the same instructions in the vector body and the remainder, so every lane gets the same
bits at any lane count; vectorized, they take ~0.6 ns a value (benchmarks/RESULTS.md, "The
minibatch baselines' ceiling").

Accuracy (``tests/engine/linear_fast/test_lane_math.py``, against mpmath at 60 digits): within 1 ulp of the
true value, as libm's (measured on 40,000 arguments each: at most 0.83 ulp for :func:`exp_nonpos`,
libm 0.50; 0.75 ulp for :func:`log1p_unit`, libm 0.75). The last bit differs from libm's for ~6%
(exp) and ~8% (log1p) of arguments.

Their divisions are :func:`div`, IEEE 754 division as it is: numba's ``/`` checks every divisor
for zero, to raise ZeroDivisionError, and that branch stops a loop from vectorizing.
"""

from __future__ import annotations

import math

import numba
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

#: Floating-point contraction only (a·b + c may become one fma): no reassociation, so a result
#: does not depend on the order the compiler picks. The same flags as the lane kernels.
_FLAGS = {"contract"}

_LOG2E = 1.4426950408889634
#: ln 2 split so that n·_LN2_HI is exact for |n| < 2^11 (its low 21 bits are zero): Cody and
#: Waite's reduction (W. J. Cody, W. Waite, "Software Manual for the Elementary Functions", 1980).
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SQRT2 = 1.4142135623730951

# e^r = Σ_k r^k / k! on |r| ≤ ln2 / 2: the terms after r^13 / 13! add < 2e-18 relative
_E2, _E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = (1.0 / math.factorial(k) for k in range(2, 14))
# log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| ≤ 0.1716: R(z) = Σ_{k ≥ 1} 2 z^k / (2k + 1), z = s²,
# the terms after k = 11 add < 1e-18 relative
_R1, _R2, _R3, _R4, _R5, _R6, _R7, _R8, _R9, _R10, _R11 = (2.0 / (2 * k + 1) for k in range(1, 12))


@intrinsic
def _bits_as_float(typingctx, bits):
    """The float64 whose IEEE 754 bit pattern is the int64 ``bits`` (a bitcast: no conversion)."""
    if not (isinstance(bits, types.Integer) and bits.bitwidth == 64):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(bits), codegen


@intrinsic
def div(typingctx, a, b):
    """a / b for float64 a and b as IEEE 754 division (b = 0 gives ±inf or NaN), without the check
    for a zero divisor that numba's default error model adds to ``/`` (a branch to raise
    ZeroDivisionError, which stops a loop from vectorizing)."""
    if not (a == types.float64 and b == types.float64):
        return None

    def codegen(context, builder, signature, args):
        return builder.fdiv(args[0], args[1])

    return types.float64(a, b), codegen


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def exp_nonpos(x):
    """e^x for a float64 x ≤ 0 (e^{−|z|} of a logit z): 0 for x ≤ −746 and −inf, NaN for NaN.

    x = n ln 2 + r with n = round(x / ln 2) and |r| ≤ ln 2 / 2 (Cody–Waite, ln 2 in two parts),
    e^r by its Taylor polynomial to degree 13 (Horner), then scaled by 2^n as two powers of two
    (2^⌊n/2⌋ · 2^{n − ⌊n/2⌋}, each a normal number, so that results down to the smallest subnormal
    come out). Positive x is outside its range (n > 1023 would overflow the exponent field).
    Compiled code only (a ``numba.njit`` function).
    """
    xc = x if x > -746.0 else -746.0  # NaN compares false: kept finite here, returned as NaN below
    n = math.floor(xc * _LOG2E + 0.5)
    r = (xc - n * _LN2_HI) - n * _LN2_LO
    p = _E13
    p = p * r + _E12
    p = p * r + _E11
    p = p * r + _E10
    p = p * r + _E9
    p = p * r + _E8
    p = p * r + _E7
    p = p * r + _E6
    p = p * r + _E5
    p = p * r + _E4
    p = p * r + _E3
    p = p * r + _E2
    p = p * r + 1.0
    p = p * r + 1.0
    ni = numba.int64(n)
    n1 = ni >> 1
    n2 = ni - n1
    res = p * _bits_as_float((n1 + 1023) << 52) * _bits_as_float((n2 + 1023) << 52)
    return res if x == x else x


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def log1p_unit(u):
    """log(1 + u) for a float64 u in [0, 1] (log(1 + e^{−|z|}), the softplus of a logit); NaN for
    NaN.

    1 + u = 2^k (1 + f) with k ∈ {0, 1} and f ∈ [√2/2 − 1, √2 − 1]; log(1 + f) = f − f²/2 + s (f²/2
    + R(s²)) with s = f / (2 + f) (the series of 2 atanh s), plus k ln 2 (in two parts) and the
    rounding error of 1 + u, c = (u − ((1 + u) − 1)) / (1 + u), added back (the arrangement of
    fdlibm's ``log1p``, Sun Microsystems 1993, with the series' own coefficients). Outside [0, 1]
    the result is wrong, not an error. Compiled code only (a ``numba.njit`` function).
    """
    s = 1.0 + u
    k = 1.0 if s > _SQRT2 else 0.0
    f = s * (1.0 - 0.5 * k) - 1.0  # (1 + u) / 2^k − 1, exact
    c = div(u - (s - 1.0), s)
    hfsq = 0.5 * f * f
    sd = div(f, 2.0 + f)
    z = sd * sd
    r = _R11
    r = r * z + _R10
    r = r * z + _R9
    r = r * z + _R8
    r = r * z + _R7
    r = r * z + _R6
    r = r * z + _R5
    r = r * z + _R4
    r = r * z + _R3
    r = r * z + _R2
    r = r * z + _R1
    r = r * z
    return k * _LN2_HI - ((hfsq - (sd * (hfsq + r) + (k * _LN2_LO + c))) - f)
