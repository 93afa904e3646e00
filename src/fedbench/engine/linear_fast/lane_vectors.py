"""Loops over the lanes (cells) of one coordinate, written as explicit vector code for the compiled
(numba) kernels of :mod:`fedbench.engine.linear_fast.round_items` and :mod:`~fedbench.engine.linear_fast.logits`.

A client-step of batch-1 logistic regression touches a row's ~14 coordinates, and at each of them
the kernels run a loop over the L lanes of a stacked group (18 η values in FedAc's grids): the
logit's terms, the gradient's scatter, a message's sum and count. Such a loop is short, and numba
compiles it through LLVM's loop vectorizer, which adds a run-time check that its arrays do not
overlap (numba marks none ``noalias``), a vector body of 32 lanes that 18 lanes never enter, a
4-lane remainder and a scalar one: at 18 lanes most of the work then runs in the scalar
remainder.

Each function here is a numba intrinsic that emits, for lanes 0..n−1, vectors of 8 float64 while 8
are left, then at most one vector each of 4, 2 and 1 (n's bits): no loop of LLVM's to vectorize,
so no overlap check and no remainder loop. The two sums over many terms (:func:`products_into`,
:func:`gather_point_into`) carry up to 4 vectors of 8 lanes in registers across their terms, the
last vector's first lanes read by a masked load (zeros past n) and written back one by one (a
masked store was slower here, 2026-11-27). Every lane gets the same operations in the same
order whichever width its vector has (an ``fma`` is one rounding at any width), so a lane's bits
do not depend on how many lanes share the call, and they equal those of the plain loops they
replace, compiled with the lane kernels' flags (``contract``: a·b + c is one fma):
``tests/engine/linear_fast/test_lane_vectors.py`` checks each against that loop, bit for bit, at 1 to 70 lanes
(a NaN as a NaN: IEEE 754 leaves its sign and payload open).

Compiled code only (call them from a ``numba.njit`` function). The arrays are 1-d, C-contiguous
float64; offsets and n are not bounds-checked (the callers index within their arrays), and an
output must not overlap an input but at the same element (``y`` read and written in place).
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

_F64 = ir.DoubleType()
_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
#: The widest vector: 8 float64 (512 bits; on a machine with 256-bit vectors LLVM splits it in two).
_WIDTH = 8


def _vector_array(t) -> bool:
    return isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype == types.float64


def _int_array(t) -> bool:
    return isinstance(t, types.Array) and t.ndim == 1 and isinstance(t.dtype, types.Integer)


def _chunks(builder, n, body):
    """Emit body(i, w) over lanes i..i+w−1: w = 8 while 8 lanes are left, then w = 4, 2, 1 once each
    where n's bit w is set."""
    n = _offset(builder, n)
    n_full = builder.and_(n, _I64(-_WIDTH))
    with cgutils.for_range_slice(builder, _I64(0), n_full, _I64(_WIDTH)) as (i, _):
        body(i, _WIDTH)
    i = n_full
    w = _WIDTH // 2
    while w >= 1:
        bit = builder.and_(n, _I64(w))
        with builder.if_then(builder.icmp_unsigned("!=", bit, _I64(0))):
            body(i, w)
        i = builder.add(i, bit)
        w //= 2


def _at(builder, base, offset, i, w):
    """A <w x double> pointer to base[offset + i]."""
    ptr = builder.gep(base, [builder.add(offset, i)])
    return builder.bitcast(ptr, ir.VectorType(_F64, w).as_pointer())


def _load(builder, ptr):
    return builder.load(ptr, align=8)


def _read(builder, base, offset, i, w):
    """base[offset + i .. offset + i + w − 1] as a <w x double>."""
    return _load(builder, _at(builder, base, offset, i, w))


def _store(builder, value, ptr):
    builder.store(value, ptr, align=8)


def _splat(builder, value, w):
    vt = ir.VectorType(value.type, w)
    one = builder.insert_element(ir.Constant(vt, ir.Undefined), value, _I32(0))
    return builder.shuffle_vector(one, ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(_I32, w), [0] * w))


def _fma(builder, a, b, c, w):
    vt = ir.VectorType(_F64, w)
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]), f"llvm.fma.v{w}f64")
    return builder.call(fn, [a, b, c])


def _data(context, builder, sig, args, k):
    return context.make_array(sig.args[k])(context, builder, args[k]).data


def _offset(builder, value):
    return builder.sext(value, _I64) if value.type.width < 64 else value


def _scaled_x(y, y0, x, x0, a, n, update):
    """The signature and code of y[y0 + i] = update(builder, a, x[x0 + i], &y[y0 + i], w) for i < n,
    w lanes a vector (a splat across them); None where the arguments are not two 1-d C-contiguous
    float64 arrays, integer offsets and count, and a float64 a."""
    if not (_vector_array(y) and _vector_array(x) and isinstance(y0, types.Integer)
            and isinstance(x0, types.Integer) and a == types.float64 and isinstance(n, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        yp, xp = _data(context, builder, sig, args, 0), _data(context, builder, sig, args, 2)
        yo, xo, av = _offset(builder, args[1]), _offset(builder, args[3]), args[4]

        def body(i, w):
            py = _at(builder, yp, yo, i, w)
            _store(builder, update(builder, _splat(builder, av, w), _read(builder, xp, xo, i, w), py, w), py)

        _chunks(builder, args[5], body)
        return context.get_dummy_value()

    return types.void(y, y0, x, x0, a, n), codegen


@intrinsic
def fma_into(typingctx, y, y0, x, x0, a, n):
    """y[y0 + i] = fma(a, x[x0 + i], y[y0 + i]) for i < n: ``y[i] += a * x[i]`` contracted (a
    gradient scattered into a coordinate's lanes, a logit's term).

    Raises:
        numba.core.errors.TypingError: at compile time, when ``y`` or ``x`` is not a 1-d
            C-contiguous float64 array, y0, x0 or n not an integer, or a not a float64.
    """
    return _scaled_x(y, y0, x, x0, a, n, lambda builder, av, xv, py, w: _fma(builder, av, xv, _load(builder, py), w))


@intrinsic
def mul_into(typingctx, y, y0, x, x0, a, n):
    """y[y0 + i] = x[x0 + i] · a for i < n (a gradient stored at a coordinate first touched).

    Raises:
        numba.core.errors.TypingError: as :func:`fma_into`.
    """
    return _scaled_x(y, y0, x, x0, a, n, lambda builder, av, xv, py, w: builder.fmul(xv, av))


@intrinsic
def dot2_into(typingctx, z, w, i0, x0, i1, x1, n):
    """z[i] += fma(x0, w[i0 + i], x1 · w[i1 + i]) for i < n: two non-zeros x0, x1 of a row read
    against the lanes of their coordinates (flat offsets i0, i1) in one pass, as the loop
    ``z[i] += x0 * w0[i] + x1 * w1[i]`` compiles with contraction.

    Raises:
        numba.core.errors.TypingError: at compile time, when ``z`` or ``w`` is not a 1-d
            C-contiguous float64 array, i0, i1 or n not an integer, or x0, x1 not float64.
    """
    if not (_vector_array(z) and _vector_array(w) and isinstance(i0, types.Integer)
            and isinstance(i1, types.Integer) and x0 == types.float64 and x1 == types.float64
            and isinstance(n, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        zp, wp = _data(context, builder, sig, args, 0), _data(context, builder, sig, args, 1)
        o0, o1, zero = _offset(builder, args[2]), _offset(builder, args[4]), _I64(0)
        v0, v1 = args[3], args[5]

        def body(i, width):
            pz = _at(builder, zp, zero, i, width)
            t = builder.fmul(_splat(builder, v1, width), _read(builder, wp, o1, i, width))
            u = _fma(builder, _splat(builder, v0, width), _read(builder, wp, o0, i, width), t, width)
            _store(builder, builder.fadd(_load(builder, pz), u), pz)

        _chunks(builder, args[6], body)
        return context.get_dummy_value()

    return types.void(z, w, i0, x0, i1, x1, n), codegen


def _messages(builder, ep, ap, cp, tp, m, wv, n, change):
    """Emit, for each vector of lanes i..i+w−1 (:func:`_chunks`), a loop over the m coordinates
    at ``tp``[0..m−1] (flat offset o = at[j]·n): (x, s) = change(i, w)(o, e), x the message from the
    shared one e = ep[o + i ..] and s what is summed (x itself, or the client's gradient),
    ap[o + i ..] = fma(wv, s, ap[o + i ..]) (not with ``ap`` None: the count alone), and the count
    cp[i ..] += [x ≠ 0] − [e ≠ 0], held in a register across the coordinates (read and written
    once). ``change(i, w)`` runs once per vector, before the loop (what it loads there is loaded
    once)."""
    sums = {w: cgutils.alloca_once(builder, ir.VectorType(_F64, w)) for w in (8, 4, 2, 1)}

    def body(i, w):
        vt = ir.VectorType(_F64, w)
        nil, one = ir.Constant(vt, [0.0] * w), ir.Constant(vt, [1.0] * w)
        pc, x_of = _at(builder, cp, _I64(0), i, w), change(i, w)
        builder.store(_load(builder, pc), sums[w])
        with cgutils.for_range(builder, m) as loop:
            o = builder.mul(_offset(builder, builder.load(builder.gep(tp, [loop.index]))), n)
            e = _read(builder, ep, o, i, w)
            x, summed = x_of(o, e)
            if ap is not None:
                pa = _at(builder, ap, o, i, w)
                _store(builder, _fma(builder, _splat(builder, wv, w), summed, _load(builder, pa), w), pa)
            nx = builder.select(builder.fcmp_unordered("!=", x, nil), one, nil)
            ne = builder.select(builder.fcmp_unordered("!=", e, nil), one, nil)
            builder.store(builder.fadd(builder.load(sums[w]), builder.fsub(nx, ne)), sums[w])
        _store(builder, builder.load(sums[w]), pc)

    _chunks(builder, n, body)


@intrinsic
def messages_into(typingctx, es, de, ae, count, at, m, wg, n):
    """A client's message at each of its m touched coordinates at[0..m−1], summed and its non-zeros
    counted, for i < n (flat o + i with o = at[j]·n: the coordinate's messages and lanes side by
    side), coordinates in at's order:

        x = es[o + i] + de[o + i]          (the shared message plus the client's own change)
        ae[o + i] = fma(wg, x, ae[o + i])  (the weighted sum of the clients' messages)
        count[i] += [x ≠ 0] − [es[o + i] ≠ 0]

    (``count`` [n] from index 0: the change in the messages' non-zeros against a client whose rows
    touched nothing; exact in float64 while under 2^53). The count is carried in registers across
    the coordinates, read and written once (as a sum through memory, it was a chain of stores and
    reloads, one a coordinate).

    Raises:
        numba.core.errors.TypingError: at compile time, when es, de, ae or count is not 1-d
            C-contiguous float64, at not a 1-d integer array, m or n not an integer, or wg not a
            float64.
    """
    if not (all(_vector_array(t) for t in (es, de, ae, count)) and _int_array(at) and isinstance(m, types.Integer)
            and wg == types.float64 and isinstance(n, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        ep, dp, ap, cp, tp = (_data(context, builder, sig, args, k) for k in range(5))

        def change(i, w):  # x = es + de
            def x_of(o, e):
                x = builder.fadd(e, _read(builder, dp, o, i, w))
                return x, x

            return x_of

        _messages(builder, ep, ap, cp, tp, _offset(builder, args[5]), args[6], _offset(builder, args[7]), change)
        return context.get_dummy_value()

    return types.void(es, de, ae, count, at, m, wg, n), codegen


@intrinsic
def scaled_dot2_into(typingctx, z, v, h, q, i0, x0, i1, x1, n):
    """z[i] += x0 (v[i0 + i] + q[i] h[i0 + i]) + x1 (v[i1 + i] + q[i] h[i1 + i]) for i < n, as that
    loop compiles with contraction: each point fma(q, h, v), then z + fma(x0, ·, x1 · ·). Two
    non-zeros of a row read against the shared point ``v`` plus q times the client's scaled part
    ``h`` (:func:`fedbench.engine.linear_fast.round_items._round_item_scaled`); ``q`` [n] from index 0.

    Raises:
        numba.core.errors.TypingError: at compile time, when an array is not 1-d C-contiguous
            float64, i0, i1 or n not an integer, or x0, x1 not float64.
    """
    if not (all(_vector_array(t) for t in (z, v, h, q)) and isinstance(i0, types.Integer)
            and isinstance(i1, types.Integer) and x0 == types.float64 and x1 == types.float64
            and isinstance(n, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        zp, vp, hp, qp = (_data(context, builder, sig, args, k) for k in range(4))
        o0, o1, zero = _offset(builder, args[4]), _offset(builder, args[6]), _I64(0)
        c0, c1 = args[5], args[7]

        def body(i, w):
            qv = _read(builder, qp, zero, i, w)
            a0 = _fma(builder, qv, _read(builder, hp, o0, i, w), _read(builder, vp, o0, i, w), w)
            a1 = _fma(builder, qv, _read(builder, hp, o1, i, w), _read(builder, vp, o1, i, w), w)
            u = _fma(builder, _splat(builder, c0, w), a0, builder.fmul(_splat(builder, c1, w), a1), w)
            pz = _at(builder, zp, zero, i, w)
            _store(builder, builder.fadd(_load(builder, pz), u), pz)

        _chunks(builder, args[8], body)
        return context.get_dummy_value()

    return types.void(z, v, h, q, i0, x0, i1, x1, n), codegen


def _scaled_messages(es, c, h, ae, count, at, m, wg, n, sums_h):
    """The signature and code of the loop of :func:`_messages` with the message x = fma(c, h, es)
    (``c`` [n] from index 0, loaded once per vector), summing x itself or, with ``sums_h``, h; None
    where the arguments are not those of :func:`messages_into` (``ae`` None: the count alone)."""
    if not (all(_vector_array(t) for t in (es, c, h, count)) and (_vector_array(ae) or ae == types.none)
            and _int_array(at) and isinstance(m, types.Integer) and wg == types.float64
            and isinstance(n, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        ep, cp, hp, kp, tp = (_data(context, builder, sig, args, k) for k in (0, 1, 2, 4, 5))
        ap = None if ae == types.none else _data(context, builder, sig, args, 3)

        def change(i, w):
            cv = _read(builder, cp, _I64(0), i, w)

            def x_of(o, e):
                hv = _read(builder, hp, o, i, w)
                x = _fma(builder, cv, hv, e, w)
                return x, (hv if sums_h else x)

            return x_of

        _messages(builder, ep, ap, kp, tp, _offset(builder, args[6]), args[7], _offset(builder, args[8]), change)
        return context.get_dummy_value()

    return types.void(es, c, h, ae, count, at, m, wg, n), codegen


@intrinsic
def scaled_messages_into(typingctx, es, c, h, ae, count, at, m, wg, n):
    """As :func:`messages_into`, the client's change being c[i] h[o + i] (``c`` [n] from index 0,
    C aᴷ per lane; ``h`` the client's scaled part û): x = fma(c, h, es), then the sum and the count.

    Raises:
        numba.core.errors.TypingError: as :func:`messages_into`.
    """
    return _scaled_messages(es, c, h, ae, count, at, m, wg, n, False)


@intrinsic
def gradient_messages_into(typingctx, es, c, g, ag, count, at, m, wg, n):
    """A client whose gradients were all taken at one point (the minibatch baselines' round, K·B
    rows): at each of its m touched coordinates at[0..m−1], its gradient sum ``g`` weighted into
    ``ag`` and its message's non-zeros counted, for i < n (flat o + i, o = at[j]·n):

        x = fma(c[i], g[o + i], es[o + i])  (the message: the shared one plus (C c) Σ ∇f)
        ag[o + i] = fma(wg, g[o + i], ag[o + i])
        count[i] += [x ≠ 0] − [es[o + i] ≠ 0]

    (``c`` [n] and ``count`` [n] from index 0), as :func:`messages_into`: the count in registers
    across the coordinates, coordinates in at's order. With ``ag`` None, the count alone (a
    client's messages past the first: their sum is not kept).

    Raises:
        numba.core.errors.TypingError: as :func:`messages_into`.
    """
    return _scaled_messages(es, c, g, ag, count, at, m, wg, n, True)


#: At most this many vectors of 8 lanes are summed side by side (:func:`products_into`); more
#: lanes run in blocks of 32.
_BLOCK_VECTORS = 4


def _mask(builder, rest):
    """The <8 x i1> of lanes 0..rest−1."""
    return builder.icmp_signed("<", ir.Constant(ir.VectorType(_I64, _WIDTH), list(range(_WIDTH))),
                               _splat(builder, rest, _WIDTH))


def _partial(builder, base, offset, rest):
    """base[offset .. offset + rest − 1] (1 ≤ rest ≤ 8) in the first lanes of a <8 x double>, zeros
    after (a masked load: nothing read past rest)."""
    ptr = _at(builder, base, offset, _I64(0), _WIDTH)
    v8 = ir.VectorType(_F64, _WIDTH)
    mask = _mask(builder, rest)
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v8, [ptr.type, _I32, mask.type, v8]),
                                        "llvm.masked.load.v8f64.p0")
    return builder.call(fn, [ptr, _I32(8), mask, ir.Constant(v8, [0.0] * _WIDTH)])


def _store_partial(builder, value, base, offset, rest, slot):
    """The first ``rest`` lanes of the <8 x double> ``value`` into base[offset ..] (element by
    element: a masked store is slow on this CPU)."""
    builder.store(value, slot)
    lanes = builder.bitcast(slot, _F64.as_pointer())
    with cgutils.for_range(builder, rest) as loop:
        builder.store(builder.load(builder.gep(lanes, [loop.index])),
                      builder.gep(base, [builder.add(offset, loop.index)]))


def _blocks(builder, n, run):
    """Emit run(b, count, k) for the lanes b..b+count−1 of each block of up to 32 (k = ⌈count / 8⌉
    vectors, a constant in each of the four variants emitted)."""
    block = _WIDTH * _BLOCK_VECTORS
    with cgutils.for_range_slice(builder, _I64(0), n, _I64(block)) as (b, _):
        count = builder.sub(n, b)
        count = builder.select(builder.icmp_signed("<", count, _I64(block)), count, _I64(block))
        vectors = builder.udiv(builder.add(count, _I64(_WIDTH - 1)), _I64(_WIDTH))
        for k in range(1, _BLOCK_VECTORS + 1):
            with builder.if_then(builder.icmp_unsigned("==", vectors, _I64(k))):
                run(b, count, k)


@intrinsic
def products_into(typingctx, z, gr, rows, dz, d0, ds, hx, h0, hs, n):
    """For each lane l < n, in order j = 0, 1, …, rows − 1, skipping a j with gr[j] = 0:

        z[l] = fma(gr[j], dz[d0 + j·ds + l] · hx[h0 + j·hs + l], z[l])

    a row's products with its segment's earlier rows x_j times their logit gradients and q Aᵗ⁻¹⁻ʲ c
    (:func:`fedbench.engine.linear_fast.round_items._round_item_products`): the loop ``for j: if gr[j] != 0:
    for l: z[l] += gr[j] * (dz[…] * hx[…])`` compiled with contraction, bit for bit. Each lane's
    sum is its own chain in j's order (the same with any number of lanes); up to 4 vectors of 8
    lanes are carried side by side in registers across the j, so the chains overlap and z is read
    and written once. A skipped term is not 0 · (dz hx), which is NaN where dz hx is not finite.

    ``dz`` and ``hx`` are read 8 lanes at a time, past n up to the next multiple of 8: their rows
    (strides ``ds``, ``hs``) must have that many elements, finite or not (those lanes are
    discarded). ``z`` [≥ n] is read and written at 0..n−1 only.

    Raises:
        numba.core.errors.TypingError: at compile time, when an array is not 1-d C-contiguous
            float64 or an offset, stride or count not an integer.
    """
    if not (all(_vector_array(t) for t in (z, gr, dz, hx))
            and all(isinstance(t, types.Integer) for t in (rows, d0, ds, h0, hs, n))):
        return None

    def codegen(context, builder, sig, args):
        zp, gp, dp, hp = (_data(context, builder, sig, args, k) for k in (0, 1, 3, 6))
        rows_, d0_, ds_, h0_, hs_, n_ = (_offset(builder, args[k]) for k in (2, 4, 5, 7, 8, 9))
        v8 = ir.VectorType(_F64, _WIDTH)
        slot = cgutils.alloca_once(builder, v8)  # a block's last vector, where it is not full
        accs = [cgutils.alloca_once(builder, v8) for _ in range(_BLOCK_VECTORS)]

        def run(b, count, k):  # lanes b..b+count−1 (8(k − 1) < count ≤ 8k) as k vectors
            last = builder.add(b, _I64((k - 1) * _WIDTH))
            rest = builder.sub(count, _I64((k - 1) * _WIDTH))  # 1..8 lanes in the last vector
            for c in range(k - 1):
                builder.store(_read(builder, zp, b, _I64(c * _WIDTH), _WIDTH), accs[c])
            builder.store(_partial(builder, zp, last, rest), accs[k - 1])
            with cgutils.for_range(builder, rows_) as loop:
                j = loop.index
                g = builder.load(builder.gep(gp, [j]))
                take = builder.fcmp_unordered("!=", g, ir.Constant(_F64, 0.0))
                gv = _splat(builder, g, _WIDTH)
                dj = builder.add(d0_, builder.mul(j, ds_))
                hj = builder.add(h0_, builder.mul(j, hs_))
                for c in range(k):
                    lane = builder.add(b, _I64(c * _WIDTH))
                    prod = builder.fmul(_read(builder, dp, dj, lane, _WIDTH), _read(builder, hp, hj, lane, _WIDTH))
                    old = builder.load(accs[c])
                    builder.store(builder.select(take, _fma(builder, gv, prod, old, _WIDTH), old), accs[c])
            for c in range(k - 1):
                _store(builder, builder.load(accs[c]), _at(builder, zp, b, _I64(c * _WIDTH), _WIDTH))
            _store_partial(builder, builder.load(accs[k - 1]), zp, last, rest, slot)

        _blocks(builder, n_, run)
        return context.get_dummy_value()

    return types.void(z, gr, rows, dz, d0, ds, hx, h0, hs, n), codegen


@intrinsic
def gather_point_into(typingctx, z, u, cols, vals, m, col_off, bias_k, wn, q, n_seq, lanes):
    """z[l] += Σ_r q[r·L + l] y_r[l] for l < L = ``lanes``, r = 0..n_seq − 1 in order, where

        y_r[l] = Σ_i x_i u[k_i·wn + r·L + l]   (i in order: the m non-zeros, then the bias)

    with k_i = col_off + cols[i], x_i = vals[i], and the bias (k = bias_k, x = 1) last where
    bias_k ≥ 0: a row read against a client's state s_r at the start of its products segment (its
    n sequences side by side at a coordinate, wn = n·L), times q Aᵗ⁻ʳ (``q`` [n, L], C order), and
    a row's products with the segment's earlier rows (n_seq = 1, q = 1)
    (:func:`fedbench.engine.linear_fast.round_items._round_item_products`). The bits of the loops ``y = 0; for
    i: for l: y[r·L + l] += x_i u[…]``, then ``for r: for l: z[l] += q[…] y[…]``, compiled with
    contraction; a y is kept in registers, up to 4 vectors of 8 lanes side by side.

    ``u`` is read 8 lanes at a time past L up to the next multiple of 8: it needs that many
    elements after its last coordinate's last sequence (finite or not; those lanes are discarded).

    Raises:
        numba.core.errors.TypingError: at compile time, when z, u or q is not C-contiguous float64
            (z and u 1-d), cols not a 1-d integer array, vals not 1-d float32 or float64, or a
            count, offset or index not an integer.
    """
    if not (_vector_array(z) and _vector_array(u) and _int_array(cols)
            and isinstance(vals, types.Array) and vals.ndim == 1 and vals.dtype in (types.float32, types.float64)
            and isinstance(q, types.Array) and q.layout == "C" and q.dtype == types.float64
            and all(isinstance(t, types.Integer) for t in (m, col_off, bias_k, wn, n_seq, lanes))):
        return None

    def codegen(context, builder, sig, args):
        zp, up, cp, xp, qp = (_data(context, builder, sig, args, k) for k in (0, 1, 2, 3, 8))
        m_, off_, bias_, wn_, ns_, n_ = (_offset(builder, args[k]) for k in (4, 5, 6, 7, 9, 10))
        v8 = ir.VectorType(_F64, _WIDTH)
        slot = cgutils.alloca_once(builder, v8)
        accs = [cgutils.alloca_once(builder, v8) for _ in range(_BLOCK_VECTORS)]
        wide = sig.args[3].dtype == types.float32

        def add_term(k, x, r_base, k_vectors):  # accs[c] += x · u[k·wn + r·L + b + 8c]
            base = builder.add(builder.mul(k, wn_), r_base)
            xv = _splat(builder, x, _WIDTH)
            for c in range(k_vectors):
                old = builder.load(accs[c])
                builder.store(_fma(builder, xv, _read(builder, up, base, _I64(c * _WIDTH), _WIDTH), old, _WIDTH),
                              accs[c])

        def run(r, b, count, k_vectors):
            r_base = builder.add(builder.mul(r, n_), b)  # r·L + b
            for c in range(k_vectors):
                builder.store(ir.Constant(v8, [0.0] * _WIDTH), accs[c])
            with cgutils.for_range(builder, m_) as loop:
                col = _offset(builder, builder.load(builder.gep(cp, [loop.index])))
                x = builder.load(builder.gep(xp, [loop.index]))
                add_term(builder.add(off_, col), builder.fpext(x, _F64) if wide else x, r_base, k_vectors)
            with builder.if_then(builder.icmp_signed(">=", bias_, _I64(0))):
                add_term(bias_, ir.Constant(_F64, 1.0), r_base, k_vectors)
            for c in range(k_vectors - 1):
                pz = _at(builder, zp, b, _I64(c * _WIDTH), _WIDTH)
                qv = _read(builder, qp, r_base, _I64(c * _WIDTH), _WIDTH)
                _store(builder, _fma(builder, qv, builder.load(accs[c]), _load(builder, pz), _WIDTH), pz)
            last = _I64((k_vectors - 1) * _WIDTH)
            rest = builder.sub(count, last)
            qv = _partial(builder, qp, builder.add(r_base, last), rest)
            zv = _partial(builder, zp, builder.add(b, last), rest)
            new = _fma(builder, qv, builder.load(accs[k_vectors - 1]), zv, _WIDTH)
            _store_partial(builder, new, zp, builder.add(b, last), rest, slot)

        with cgutils.for_range(builder, ns_) as seq:
            _blocks(builder, n_, lambda b, count, k: run(seq.index, b, count, k))
        return context.get_dummy_value()

    return types.void(z, u, cols, vals, m, col_off, bias_k, wn, q, n_seq, lanes), codegen
