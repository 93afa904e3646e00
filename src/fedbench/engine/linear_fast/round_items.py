"""The compiled round of a work item: a block of clients' keyed draws, local steps and messages in
one round, for one group of stacked cells run as lanes (CPU), what the whole rounds of
:mod:`~.cpu_rounds` run in each round.

A work item draws its clients' rows first (:func:`_item_rows`: the engine's keyed draws,
:mod:`~.keyed_integers`) and requests the cache lines of the rows a few ahead of the one being read
(:func:`_prefetch_rows`). Its clients' messages are summed in client order, weighted, and their
non-zeros counted. A round's clients are computed one of three ways (:func:`~.cpu_rounds.round_mode`
chooses):

- every gradient at one shared point (:func:`_round_item_one_step`): for K = 1 step the clients of a
  cell share their start, and the minibatch baselines (Mb-SGD, Mb-Ac-SGD) take all K steps'
  gradients at that start, so a client costs its rows' non-zeros;
- at K ≥ 2, a client forms no iterate (:func:`_round_item_products`): a row's logit is the row read
  against the client's state at its segment's start (s⁰, shared by the lane's clients, in the
  first), times q Aᵗ⁻ʳ, plus its products with the segment's earlier rows times their logit
  gradients;
- for a state of one sequence (FedAvg: A = a) the client's own part is kept instead, scaled by a⁻ᵗ
  so that only the coordinates a row touches change (:func:`_round_item_scaled`).

Each ``_round_item_*`` allocates its scratch arrays and hands them to its loops
(``_one_step_clients``, ``_products_clients``, ``_scaled_clients``), compiled without reference
counting.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from fedbench.engine.linear_fast.keyed_integers import keyed_integers_into
from fedbench.engine.linear_fast.lane_vectors import (
    fma_into,
    gather_point_into,
    gradient_messages_into,
    messages_into,
    mul_into,
    products_into,
    scaled_dot2_into,
    scaled_messages_into,
)
from fedbench.engine.linear_fast.logits import _LANE_FLAGS, _grads_lanes, _logits_lanes
from fedbench.engine.linear_fast.prefetch import prefetch
from fedbench.engine.linear_fast.rows import _copy_row

#: The rows of a segment of the :data:`~.cpu_rounds.PRODUCTS` path, per sequence of the state: a
#: row's products with the segment's earlier rows grow with it, the cost of a segment's start (a power
#: of A at every coordinate the client touched) shrinks. Measured (FedAc-I, M = 256 and 1,024,
#: 2-core AMD EPYC VM, 2026-11-26): 32 (FedAc: 64 steps at B = 1) and 16 equal at K = 256, 32 faster
#: at K = 64.
PRODUCTS_SEGMENT_ROWS = 32


@numba.njit(cache=True, inline="always")
def _segment_steps(k_steps, b_size, n):
    """S, the steps of a products segment (:func:`_round_item_products`): the steps of
    :data:`PRODUCTS_SEGMENT_ROWS` · n rows, at least 1, at most K (one segment where K ≤ S)."""
    return min(k_steps, max(1, PRODUCTS_SEGMENT_ROWS * n // b_size))


@numba.njit(cache=True, inline="always", fastmath=_LANE_FLAGS)
def _lanes_point(s, qg, i0, out):
    """out[l] = Σ_j q_jl s_j,i0+l for every lane: p at one coordinate (flat index i0 = k·L), a
    pass over the lanes per sequence."""
    lanes = out.shape[0]
    s0, q0 = s[0, i0:i0 + lanes], qg[0]
    for ln in range(lanes):
        out[ln] = q0[ln] * s0[ln]
    for j in range(1, s.shape[0]):
        sj, qj = s[j, i0:i0 + lanes], qg[j]
        for ln in range(lanes):
            out[ln] += qj[ln] * sj[ln]


@numba.njit(cache=True, inline="always")
def _item_rows(lo, hi, t, per_client, key_seed, key_id, purpose, sizes, thresholds, row_table, slot, ent, pool, words,
               loc):
    """Clients lo..hi−1's K·B rows of round t (rows of the training inputs), client after client in
    ``loc`` [(hi − lo)·K·B]: client g's drawn from the key (key_seed[g], t, key_id[g], purpose) as
    :func:`fedbench.engine.clients.batches.local_batches` draws them with replacement
    (:mod:`fedbench.engine.linear_fast.keyed_integers`), then all mapped through their clients' row arrays (a
    pass of its own, so that its loads do not wait on each other). Compiled without reference
    counting only (a view per client)."""
    for g in range(lo, hi):
        c0 = (g - lo) * per_client
        ent[0, 0], ent[0, 1], ent[0, 2], ent[0, 3] = key_seed[g], t, key_id[g] + 1, purpose
        keyed_integers_into(ent, 0, sizes[g], thresholds[g], loc[c0:c0 + per_client], pool, words)
    for g in range(lo, hi):
        u, c0 = slot[g], (g - lo) * per_client
        for j in range(c0, c0 + per_client):
            loc[j] = row_table[u, loc[j]]


#: How many rows ahead of the one being read :func:`_prefetch_rows` keeps the rows' cache lines
#: requested (their ``indptr`` entries twice as far): a row's work at a few lanes is shorter than
#: a load that misses the last-level cache (~130 ns here), at 18 lanes ~10 times longer.
PREFETCH_ROWS = 8


@numba.njit(cache=True, inline="always")
def _prefetch_rows(cur, upto, loc, indptr, indices, values, y_all):
    """Request the cache lines of the CSR rows loc[cur[0]..upto−1] (label and non-zeros) and of the
    ``indptr`` entries of the rows up to upto + :data:`PREFETCH_ROWS` − 1, advancing the cursors
    ``cur`` [2] (rows requested, ``indptr`` entries requested) past them; rows past the end of
    ``loc`` are left alone. A prefetch changes no value (:mod:`fedbench.engine.linear_fast.prefetch`)."""
    n = len(loc)
    last = min(upto + PREFETCH_ROWS, n)
    while cur[1] < last:
        prefetch(indptr, loc[cur[1]])
        cur[1] += 1
    last = min(upto, n)
    step_i, step_v = max(1, 64 // indices.itemsize), max(1, 64 // values.itemsize)
    while cur[0] < last:
        r = loc[cur[0]]
        prefetch(y_all, r)
        a, b = indptr[r], indptr[r + 1]
        if b > a:
            for u in range(a, b, step_i):
                prefetch(indices, u)
            prefetch(indices, b - 1)
            for u in range(a, b, step_v):
                prefetch(values, u)
            prefetch(values, b - 1)
        cur[0] += 1


@numba.njit(cache=True, inline="always")
def _gather_rows(loc, c0, per_client, cur, y_all, indptr, indices, values, labs, buf_i, buf_v, cnt):
    """The CSR rows loc[c0..c0 + per_client − 1] copied out: labels into ``labs``, non-zeros into
    ``buf_i``/``buf_v`` (a row a line), their counts into ``cnt``; the rows after them in ``loc``
    requested ahead (:func:`_prefetch_rows`, cursors ``cur``)."""
    for j in range(per_client):
        _prefetch_rows(cur, c0 + j + 1 + PREFETCH_ROWS, loc, indptr, indices, values, y_all)
        r = loc[c0 + j]
        labs[j] = y_all[r]
        _copy_row(r, indptr, indices, values, buf_i, buf_v, cnt, j)


@numba.njit(cache=True, fastmath=_LANE_FLAGS)
def _round_item_one_step(p, e_shared, lo, hi, t, indptr, indices, values, y_all, row_table, slot, sizes, thresholds,
                         key_seed, key_id, purpose, weight, ccg, k_steps, b_size, binary, n_lin, d, has_bias, acc, nnz,
                         ok):
    """One round of clients lo..hi−1 of one group of L lanes where every gradient of a client's
    round is taken at the same point p: one step (K = 1, any algorithm: every client of a lane
    starts from s⁰ = B S), or K steps of an
    algorithm whose point does not move with the gradients and whose gradient sum is carried as is
    (q A = q and A c = c: Mb-SGD's and Mb-Ac-SGD's accumulation; :func:`~.cpu_rounds.round_mode`). Its message is
    e_k = e_shared + (C c) Σ_steps ∇f(p; rows) with e_shared = C Aᴷ s⁰ + D S and p = q s⁰ computed
    once per lane (:func:`~.cpu_rounds._round_shared`), so a client costs its rows' non-zeros, not passes over
    the parameters: its gradient summed over its K·B rows at the coordinates they touch, then
    weighted into ``acc`` and its messages' non-zeros counted there
    (:func:`fedbench.engine.linear_fast.lane_vectors.gradient_messages_into`). ``p`` [P·L], ``e_shared`` [n_m,
    P·L] (flat index k·L + l), ``ccg`` [n_m, L]; ``acc`` [P·L] (zeroed first) gets Σ_k weight[g]
    Σ_steps ∇f(p; rows). Returns Σ_k weight[g]."""
    nm, size, lanes = e_shared.shape[0], e_shared.shape[1], ccg.shape[1]
    p_total = size // lanes
    per_client = k_steps * b_size
    inv_b = 1.0 / b_size
    bias_at = n_lin * d
    z = np.empty((n_lin, lanes))
    dz = np.empty((n_lin, lanes))
    fin = np.zeros(lanes)
    zl = np.empty(n_lin)
    dzl = np.empty(n_lin)
    loc = np.empty((hi - lo) * per_client, dtype=np.int64)  # every client's rows, drawn first
    cur = np.zeros(2, dtype=np.int64)
    ent = np.empty((1, 4), dtype=np.uint64)
    pool = np.empty(4, dtype=np.uint64)
    words = np.empty(8, dtype=np.uint64)
    grad = np.empty(size)  # the client's gradient sum at its touched coordinates
    pos = np.full(p_total, -1, dtype=np.int64)
    touched = np.empty(p_total, dtype=np.int64)
    change = np.zeros(lanes)  # Σ over the clients of the change in their messages' non-zeros (exact in float64)
    base = np.zeros(lanes)
    return _one_step_clients(
        p, e_shared, lo, hi, t, indptr, indices, values, y_all, row_table, slot, sizes, thresholds, key_seed, key_id,
        purpose, weight, ccg, k_steps, b_size, binary, n_lin, d, has_bias, acc, nnz, ok, nm, size, lanes, p_total,
        per_client, inv_b, bias_at, z, dz, fin, zl, dzl, loc, cur, ent, pool, words, grad, pos, touched, change, base)


@numba.njit(cache=True, fastmath=_LANE_FLAGS, _nrt=False)
def _one_step_clients(
        p, e_shared, lo, hi, t, indptr, indices, values, y_all, row_table, slot, sizes, thresholds, key_seed, key_id,
        purpose, weight, ccg, k_steps, b_size, binary, n_lin, d, has_bias, acc, nnz, ok, nm, size, lanes, p_total,
        per_client, inv_b, bias_at, z, dz, fin, zl, dzl, loc, cur, ent, pool, words, grad, pos, touched, change, base):
    """The loops of :func:`_round_item_one_step` over its scratch arrays, compiled without
    reference counting: there every view and every array handed to an inlined helper cost an atomic
    increment and decrement, a quarter of the time."""
    _shared_nonzeros(e_shared, p_total, lanes, base)
    acc[:] = 0.0
    w_sum = 0.0
    _item_rows(lo, hi, t, per_client, key_seed, key_id, purpose, sizes, thresholds, row_table, slot, ent, pool, words,
               loc)
    for g in range(lo, hi):
        c0 = (g - lo) * per_client
        wg = weight[g]
        w_sum += wg
        n_touched = 0
        for j in range(c0, c0 + per_client):
            _prefetch_rows(cur, j + 1 + PREFETCH_ROWS, loc, indptr, indices, values, y_all)
            r = loc[j]
            start = indptr[r]
            m = indptr[r + 1] - start
            _logits_lanes(z, p, indices, values, start, m, n_lin, d, has_bias, lanes)
            for ln in range(lanes):
                fin[ln] = 0.0
            _grads_lanes(z, y_all[r], binary, n_lin, inv_b, dz, fin, False, zl, dzl)  # finite where the loss is
            for ln in range(lanes):
                ok[ln] = ok[ln] & math.isfinite(fin[ln])
            row_i, row_v = indices[start:start + m], values[start:start + m]
            for cl in range(n_lin):  # the client's gradient sum at its touched coordinates
                n_touched = _scatter_row(grad, lanes, dz[cl], row_i, row_v, m, cl * d, has_bias, bias_at + cl, pos,
                                         touched, n_touched)
        # acc += w Σ ∇f and the change in the messages' non-zeros, where the client touched (the other
        # messages counted alone: the round sums one, _round_reduce derives the rest from it)
        gradient_messages_into(e_shared[0], ccg[0], grad, acc, change, touched, n_touched, wg, lanes)
        for e in range(1, nm):
            gradient_messages_into(e_shared[e], ccg[e], grad, None, change, touched, n_touched, wg, lanes)
        for jt in range(n_touched):
            pos[touched[jt]] = -1
    for ln in range(lanes):
        nnz[ln] += int(base[ln]) * (hi - lo) + int(change[ln])
    return w_sum


@numba.njit(cache=True, inline="always", fastmath=_LANE_FLAGS)
def _shared_nonzeros(e_shared, p_total, lanes, base):
    """base[l] += the non-zeros of lane l's shared messages ``e_shared`` [n_m, P·L]: those of a
    client whose rows touch nothing."""
    for e in range(e_shared.shape[0]):
        for k in range(p_total):
            ek = e_shared[e, k * lanes:(k + 1) * lanes]
            for ln in range(lanes):
                base[ln] += 1.0 if ek[ln] != 0.0 else 0.0


@numba.njit(cache=True, inline="always")
def _row_scratch(n_clients, per_client, width, indices, values):
    """A work item's row buffers: its clients' drawn rows ``loc`` [n_clients·K·B] (drawn first), the
    prefetch cursors ``cur`` [2], one client's labels, non-zeros and their counts (``labs``,
    ``buf_i``/``buf_v`` [K·B, width], ``cnt``) and the draws' scratch (``ent``, ``pool``,
    ``words``: :func:`_item_rows`)."""
    return (np.empty(n_clients * per_client, dtype=np.int64), np.zeros(2, dtype=np.int64),
            np.empty(per_client, dtype=np.int64), np.empty((per_client, width), dtype=indices.dtype),
            np.empty((per_client, width), dtype=values.dtype), np.empty(per_client, dtype=np.int64),
            np.empty((1, 4), dtype=np.uint64), np.empty(4, dtype=np.uint64), np.empty(8, dtype=np.uint64))


@numba.njit(cache=True, inline="always", fastmath=_LANE_FLAGS)
def _scatter_row(tgt, wt, cf, row_i, row_v, m, off, has_bias, bias_k, pos, touched, n_touched):
    """tgt[k·wt + i] (+)= cf[i] x_k for i < wt at the m non-zeros of a row (coordinates off +
    row_i[u], values row_v[u]) and, with ``has_bias``, at coordinate ``bias_k`` with x = 1; a
    coordinate the client has not touched (pos[k] < 0) is stored, not added, and appended to
    ``touched`` (its place in pos). Returns the new count of touched coordinates."""
    for u in range(m + (1 if has_bias else 0)):
        k, xv = (off + row_i[u], row_v[u]) if u < m else (bias_k, 1.0)
        if pos[k] < 0:  # first touched: the change starts here
            pos[k] = n_touched
            touched[n_touched] = k
            n_touched += 1
            mul_into(tgt, k * wt, cf, 0, float(xv), wt)
        else:
            fma_into(tgt, k * wt, cf, 0, float(xv), wt)
    return n_touched


@numba.njit(cache=True, fastmath=_LANE_FLAGS)
def _round_item_products(sx, hqx, mc, ac, pw, cpw, qpw, e_shared, lo, hi, t, indptr, indices, values, width, y_all,
                         row_table, slot, sizes, thresholds, key_seed, key_id, purpose, weight, k_steps, b_size,
                         binary, n_lin, d, has_bias, acc, acc_w, nnz, ok):
    """One round of clients lo..hi−1 of one group of L lanes, each client's K·B gradients from its
    rows' products with each other, its iterates never formed, in segments of S steps. Every client
    of a lane starts from s⁰ = B S and the step s ← A s + c ∇f(q s) is linear but for the logit
    gradients, so

        s_t = Aᵗ s⁰ + u_t,   u_t = Aᵗ⁻ʳ u_r + Σ_{r ≤ j < t} Aᵗ⁻¹⁻ʲ c Σ_b dz_{j,b} x_{j,b}

    (Σ_b over the step's B rows x_{j,b}, dz the logit gradients with 1/B; u, the client's own part,
    is zero but at the coordinates its rows touched). The logit of a row x at step t of the segment
    that starts at step r is then

        x·(q Aᵗ⁻ʳ s_r) + Σ_{r ≤ j < t, b} (q Aᵗ⁻¹⁻ʲ c) dz_{j,b} (x·x_{j,b}),   s_r = Aʳ s⁰ + u_r:

    the row read against the client's state at the segment's start, times ``qpw[t − r]`` = q Aᵗ⁻ʳ
    (s_r formed at every coordinate when the segment starts, from ``sx[r / S]`` = Aʳ s⁰, shared by
    the lane's clients: :func:`~.cpu_rounds._round_shared`; s⁰ itself in the first segment), and its products
    with the segment's earlier rows (computed once for all lanes) times their logit gradients and
    q Aᵗ⁻¹⁻ʲ c (``hqx``: for j from K − 1 down). A segment ending at r' < K
    scatters each row's gradient into u_r' with ``ac[r' − 1 − j]`` = A^(r'−1−j) c, u_r' starting
    at A^(r'−r) u_r (``pw``); the last one scatters into the message e = C s_K + D S = ``e_shared``
    + C u_K with ``mc[K − 1 − j]`` = C Aᴷ⁻¹⁻ʲ c, starting at C Aᴷ⁻ʳ u_r (``cpw``), a coordinate's
    n_m messages side by side ([P, n_m, L]). A row costs its non-zeros once per lane for each
    sequence of the point and of the scatter, and its products with the segment's rows (≤ S·B); a
    segment start costs a product with a power of A at each touched coordinate and a pass over
    s_r. S = :func:`_segment_steps`. ``sx`` [⌈K / S⌉, P·n·L + 8] (coordinate-major, then 8 zeros),
    ``hqx`` [K·B·L₈] (:func:`~.cpu_rounds._round_buffers`), ``mc`` [K, n_m, L], ``ac`` [K, n, L], ``pw`` [K + 1, n,
    n, L], ``cpw`` [K + 1, n_m, n, L], ``qpw`` [K + 1, n, L] (:func:`~.cpu_rounds._powers`). ``acc`` [n_m, P·L]
    gets Σ weight[g] e at the touched coordinates, ``acc_w`` [P] the weight of the clients that
    touched each coordinate (the rest take e_shared: :func:`~.cpu_rounds._round_reduce`); nnz[l] counts the
    messages' non-zeros, ok[l] is cleared where a lane's loss is not finite. Returns Σ weight[g]."""
    lanes, n = qpw.shape[2], ac.shape[1]
    p_total = (sx.shape[1] - 8) // (n * lanes)
    nm = mc.shape[1]
    per_client = k_steps * b_size
    seg_steps = _segment_steps(k_steps, b_size, n)
    seg_rows = seg_steps * b_size
    # [P, n_m, L], a coordinate's messages side by side: the client's message minus e_shared at its
    # touched coordinates, e_shared, the item's sum of the messages there (one message: their own
    # arrays, the layouts agree)
    delta = np.empty(p_total * nm * lanes)
    es_i = e_shared[0] if nm == 1 else np.empty(p_total * nm * lanes)
    acc_i = acc[0] if nm == 1 else np.empty(p_total * nm * lanes)
    # u at the start and the end of a segment, [P, n, L], zero but at the touched coordinates, and
    # s_r = Aʳ s⁰ + u_r, 8 zeros past its end (gather_point_into reads whole vectors): only with more
    # than one segment
    u2 = np.zeros((2, p_total * n * lanes if seg_steps < k_steps else 0))
    sr = np.zeros(p_total * n * lanes + 8 if seg_steps < k_steps else 0)
    xd = np.zeros(d * seg_rows + 8)  # feature f of the segment's rows so far: [d, S·B], and 8 zeros
    gr = np.empty(seg_rows)  # a row's products with the segment's earlier rows
    ones = np.ones(seg_rows)  # the 1s that gather_point_into multiplies gr's sums by (q is read only to j0)
    lp = -(-lanes // 8) * 8  # lanes padded to whole vectors of 8: what lane_vectors.products_into reads
    cf = np.empty(max(nm, n) * lanes)
    pos = np.full(p_total, -1, dtype=np.int64)
    touched = np.empty(p_total, dtype=np.int64)
    z = np.empty((n_lin, lanes))
    dzf = np.zeros(seg_rows * n_lin * lp)  # the segment's logit gradients [S·B, C, lp]
    dz = dzf.reshape((seg_rows, n_lin, lp))
    fin = np.empty(lanes)
    count = np.zeros(nm * lanes)
    base = np.zeros(lanes)
    zl = np.empty(n_lin)
    dzl = np.empty(n_lin)
    loc, cur, labs, buf_i, buf_v, cnt, ent, pool, words = _row_scratch(hi - lo, per_client, width, indices, values)
    return _products_clients(
        sx, hqx, mc, ac, pw, cpw, qpw, e_shared, lo, hi, t, indptr, indices, values, y_all, row_table, slot, sizes,
        thresholds, key_seed, key_id, purpose, weight, k_steps, b_size, binary, n_lin, d, has_bias, acc, acc_w, nnz,
        ok, lanes, p_total, nm, n, per_client, seg_steps, delta, es_i, acc_i, u2, sr, xd, gr, ones, dzf, cf, pos,
        touched, z, dz, fin, count, base, zl, dzl, loc, cur, labs, buf_i, buf_v, cnt, ent, pool, words)


@numba.njit(cache=True, fastmath=_LANE_FLAGS, _nrt=False)
def _products_clients(
        sx, hqx, mc, ac, pw, cpw, qpw, e_shared, lo, hi, t, indptr, indices, values, y_all, row_table, slot, sizes,
        thresholds, key_seed, key_id, purpose, weight, k_steps, b_size, binary, n_lin, d, has_bias, acc, acc_w, nnz,
        ok, lanes, p_total, nm, n, per_client, seg_steps, delta, es_i, acc_i, u2, sr, xd, gr, ones, dzf, cf, pos,
        touched, z, dz, fin, count, base, zl, dzl, loc, cur, labs, buf_i, buf_v, cnt, ent, pool, words):
    """The loops of :func:`_round_item_products` over its scratch arrays, compiled without
    reference counting, as :func:`_one_step_clients`."""
    _shared_nonzeros(e_shared, p_total, lanes, base)
    acc_w[:] = 0.0
    w_sum = 0.0
    inv_b = 1.0 / b_size
    bias_at = n_lin * d
    seg_rows = seg_steps * b_size
    lp = dz.shape[2]  # lanes padded to whole vectors of 8
    width_m, width_n = nm * lanes, n * lanes
    for i in range(p_total * width_m):
        acc_i[i] = 0.0
    if nm > 1:
        for e in range(nm):
            for k in range(p_total):
                src, dst = e_shared[e, k * lanes:(k + 1) * lanes], es_i[k * width_m + e * lanes:]
                for ln in range(lanes):
                    dst[ln] = src[ln]
    _item_rows(lo, hi, t, per_client, key_seed, key_id, purpose, sizes, thresholds, row_table, slot, ent, pool, words,
               loc)
    for g in range(lo, hi):
        _gather_rows(loc, (g - lo) * per_client, per_client, cur, y_all, indptr, indices, values, labs, buf_i, buf_v,
                     cnt)
        n_touched = 0
        for r0 in range(0, k_steps, seg_steps):
            r1 = min(r0 + seg_steps, k_steps)
            last = r1 == k_steps
            # where the segment's rows go: u_r1 (its n sequences) or, in the last segment, the message
            half = (r0 // seg_steps) % 2
            ur = u2[1 - half]
            tgt, co, wt = (delta, mc, width_m) if last else (u2[half], ac, width_n)
            point = sx[0]
            if r0 > 0:  # at the coordinates touched before: A^(r1 − r0) u_r, or C A^(K − r0) u_r
                pa = cpw[r1 - r0] if last else pw[r1 - r0]
                for jt in range(n_touched):
                    k = touched[jt]
                    src = ur[k * width_n:(k + 1) * width_n].reshape((n, lanes))
                    for e in range(pa.shape[0]):  # row e of the power at the coordinate
                        _lanes_point(src, pa[e], 0, tgt[k * wt + e * lanes:k * wt + (e + 1) * lanes])
                shared = sx[r0 // seg_steps]  # s_r = Aʳ s⁰ + u_r
                for i in range(p_total * width_n):
                    sr[i] = shared[i] + ur[i]
                point = sr
            for t_local in range(r0, r1):
                tt = t_local - r0
                j0 = tt * b_size  # the segment's rows before this step
                qt = qpw[tt]
                for b in range(b_size):  # the logits at s_t
                    j = t_local * b_size + b
                    m = cnt[j]
                    if j0 > 0:  # x·x_jj for the segment's earlier rows (the bias's 1·1 included)
                        for jj in range(j0):
                            gr[jj] = 1.0 if has_bias else 0.0
                        gather_point_into(gr, xd, buf_i[j], buf_v[j], m, 0, -1, seg_rows, ones, 1, j0)
                    for cl in range(n_lin):
                        zc = z[cl]
                        for ln in range(lanes):
                            zc[ln] = 0.0
                        # x·(q Aᵗ⁻ʳ s_r)
                        gather_point_into(zc, point, buf_i[j], buf_v[j], m, cl * d, bias_at + cl if has_bias else -1,
                                          width_n, qt, n, lanes)
                        if j0 > 0:  # + Σ_jj (x·x_jj) (q Aᵗ⁻¹⁻ʲ c) dz_jj, hqx's row (K − t)·B + jj
                            products_into(zc, gr, j0, dzf, cl * lp, n_lin * lp, hqx, (k_steps - tt) * b_size * lp,
                                          lp, lanes)
                    for ln in range(lanes):
                        fin[ln] = 0.0
                    _grads_lanes(z, labs[j], binary, n_lin, inv_b, dz[j0 + b], fin, False, zl, dzl)
                    for ln in range(lanes):  # finite where the loss is
                        ok[ln] = ok[ln] & math.isfinite(fin[ln])
                ct = co[r1 - 1 - t_local]
                for b in range(b_size):  # the rows into the products and their gradients into u_r1 or e
                    j, js = t_local * b_size + b, j0 + b
                    m = cnt[j]
                    if t_local < r1 - 1:  # (the segment's last step: no later row reads its products)
                        for u in range(m):
                            xd[buf_i[j, u] * seg_rows + js] = buf_v[j, u]
                    for cl in range(n_lin):
                        off, dj = cl * d, dz[js, cl]
                        for e in range(ct.shape[0]):
                            for ln in range(lanes):
                                cf[e * lanes + ln] = ct[e, ln] * dj[ln]
                        n_touched = _scatter_row(tgt, wt, cf, buf_i[j], buf_v[j], m, off, has_bias, bias_at + cl,
                                                 pos, touched, n_touched)
            for j in range(r0 * b_size, (r1 - 1) * b_size):
                for u in range(cnt[j]):
                    xd[buf_i[j, u] * seg_rows + j - r0 * b_size] = 0.0
        wg = weight[g]
        w_sum += wg
        messages_into(es_i, delta, acc_i, count, touched, n_touched, wg, width_m)  # summed and counted
        for jt in range(n_touched):
            k = touched[jt]
            acc_w[k] += wg
            pos[k] = -1
        if seg_steps < k_steps:  # u back to zero
            for jt in range(n_touched):
                i0 = touched[jt] * width_n
                for i in range(width_n):
                    u2[0, i0 + i] = 0.0
                    u2[1, i0 + i] = 0.0
    for e in range(nm):
        if nm > 1:
            for k in range(p_total):
                src, dst = acc_i[k * width_m + e * lanes:], acc[e, k * lanes:(k + 1) * lanes]
                for ln in range(lanes):
                    dst[ln] = src[ln]
        for ln in range(lanes):
            nnz[ln] += int(count[e * lanes + ln])
    for ln in range(lanes):
        nnz[ln] += int(base[ln]) * (hi - lo)
    return w_sum


@numba.njit(cache=True, fastmath=_LANE_FLAGS)
def _round_item_scaled(v, qpw, cs, cpw, e_shared, lo, hi, t, indptr, indices, values, width, y_all, row_table, slot,
                       sizes, thresholds, key_seed, key_id, purpose, weight, k_steps, b_size, binary, n_lin, d,
                       has_bias, acc, acc_w, nnz, ok):
    """One round of clients lo..hi−1 of one group of L lanes for a state of one sequence (n = 1,
    FedAvg: A = a, a number per lane), its client's own part kept scaled. Every client of a lane
    starts from s⁰ = B S and s ← a s + c ∇f(q s), so

        s_t = aᵗ s⁰ + aᵗ û_t,   û_t = Σ_{j<t} (c a⁻⁽ʲ⁺¹⁾) Σ_b dz_{j,b} x_{j,b}

    (dz the logit gradients with 1/B): û, zero but at the coordinates the client's rows touched,
    changes only there, each step (no coordinate is brought forward). A row's logit at step t is
    x·(q aᵗ s⁰) + q aᵗ (x·û_t): the row read against ``v[t]`` (:func:`~.cpu_rounds._round_shared`) and û, times
    ``qpw[t]`` = q aᵗ; its gradient goes into û with ``cs[t]`` = c a⁻⁽ᵗ⁺¹⁾; the message is e =
    ``e_shared`` + C aᴷ û_K (``cpw[K]``) at the touched coordinates. A row costs two passes over its
    non-zeros per lane (one read, one read and write). The terms of û grow as |a|⁻ᵗ, which
    :func:`~.cpu_rounds.round_mode` bounds; the rounding relative to s is that of the steps. ``v`` [K, P·L],
    ``qpw`` [K + 1, 1, L], ``cs`` [K, L], ``cpw`` [K + 1, n_m, 1, L] (:func:`~.cpu_rounds._powers`); ``acc``,
    ``acc_w``, ``nnz``, ``ok`` and the return as :func:`_round_item_products`, the same numbers to
    rounding."""
    size, lanes = v.shape[1], cs.shape[1]
    p_total = size // lanes
    per_client = k_steps * b_size
    uh = np.zeros(size)  # û [P·L], zero but at the touched coordinates
    pos = np.full(p_total, -1, dtype=np.int64)
    touched = np.empty(p_total, dtype=np.int64)
    cf = np.empty(lanes)
    z = np.empty((n_lin, lanes))
    dz = np.empty((b_size, n_lin, lanes))
    fin = np.empty(lanes)
    count = np.zeros(lanes)
    base = np.zeros(lanes)
    zl = np.empty(n_lin)
    dzl = np.empty(n_lin)
    loc, cur, labs, buf_i, buf_v, cnt, ent, pool, words = _row_scratch(hi - lo, per_client, width, indices, values)
    return _scaled_clients(
        v, qpw, cs, cpw, e_shared, lo, hi, t, indptr, indices, values, y_all, row_table, slot, sizes, thresholds,
        key_seed, key_id, purpose, weight, k_steps, b_size, binary, n_lin, d, has_bias, acc, acc_w, nnz, ok, lanes,
        p_total, per_client, uh, pos, touched, cf, z, dz, fin, count, base, zl, dzl, loc, cur, labs, buf_i, buf_v,
        cnt, ent, pool, words)


@numba.njit(cache=True, fastmath=_LANE_FLAGS, _nrt=False)
def _scaled_clients(
        v, qpw, cs, cpw, e_shared, lo, hi, t, indptr, indices, values, y_all, row_table, slot, sizes, thresholds,
        key_seed, key_id, purpose, weight, k_steps, b_size, binary, n_lin, d, has_bias, acc, acc_w, nnz, ok, lanes,
        p_total, per_client, uh, pos, touched, cf, z, dz, fin, count, base, zl, dzl, loc, cur, labs, buf_i, buf_v,
        cnt, ent, pool, words):
    """The loops of :func:`_round_item_scaled` over its scratch arrays, compiled without reference
    counting, as :func:`_products_clients`."""
    nm = e_shared.shape[0]
    _shared_nonzeros(e_shared, p_total, lanes, base)
    acc[:, :] = 0.0
    acc_w[:] = 0.0
    w_sum = 0.0
    inv_b = 1.0 / b_size
    bias_at = n_lin * d
    ck = cpw[k_steps]
    _item_rows(lo, hi, t, per_client, key_seed, key_id, purpose, sizes, thresholds, row_table, slot, ent, pool, words,
               loc)
    for g in range(lo, hi):
        _gather_rows(loc, (g - lo) * per_client, per_client, cur, y_all, indptr, indices, values, labs, buf_i, buf_v,
                     cnt)
        n_touched = 0
        for t_local in range(k_steps):
            vt, qt = v[t_local], qpw[t_local, 0]
            for b in range(b_size):  # the logits x·v_t + q aᵗ (x·û)
                j = t_local * b_size + b
                m = cnt[j]
                m_all = m + (1 if has_bias else 0)
                for cl in range(n_lin):
                    off, zc = cl * d, z[cl]
                    for ln in range(lanes):
                        zc[ln] = 0.0
                    u = 0
                    while u < m_all:  # two non-zeros a pass (past the end: the first again, times 0)
                        k0, x0 = (off + buf_i[j, u], buf_v[j, u]) if u < m else (bias_at + cl, 1.0)
                        k1, x1 = ((off + buf_i[j, u + 1], buf_v[j, u + 1]) if u + 1 < m else
                                  ((bias_at + cl, 1.0) if u + 1 < m_all else (k0, 0.0)))
                        scaled_dot2_into(zc, vt, uh, qt, k0 * lanes, float(x0), k1 * lanes, float(x1), lanes)
                        u += 2
                for ln in range(lanes):
                    fin[ln] = 0.0
                _grads_lanes(z, labs[j], binary, n_lin, inv_b, dz[b], fin, False, zl, dzl)
                for ln in range(lanes):  # finite where the loss is
                    ok[ln] = ok[ln] & math.isfinite(fin[ln])
            ct = cs[t_local]
            for b in range(b_size):  # û += c a⁻⁽ᵗ⁺¹⁾ ∇f at the rows' coordinates
                j = t_local * b_size + b
                m = cnt[j]
                for cl in range(n_lin):
                    off, dj = cl * d, dz[b, cl]
                    for ln in range(lanes):
                        cf[ln] = ct[ln] * dj[ln]
                    n_touched = _scatter_row(uh, lanes, cf, buf_i[j], buf_v[j], m, off, has_bias, bias_at + cl, pos,
                                             touched, n_touched)
        wg = weight[g]
        w_sum += wg
        for e in range(nm):  # the message e_shared + C aᴷ û at the touched coordinates, summed and counted
            scaled_messages_into(e_shared[e], ck[e, 0], uh, acc[e], count, touched, n_touched, wg, lanes)
        for jt in range(n_touched):
            k = touched[jt]
            acc_w[k] += wg
            pos[k] = -1
            hk = uh[k * lanes:(k + 1) * lanes]
            for ln in range(lanes):
                hk[ln] = 0.0
    for ln in range(lanes):
        nnz[ln] += int(base[ln]) * (hi - lo) + int(count[ln])
    return w_sum
