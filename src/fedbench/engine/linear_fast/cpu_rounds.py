"""Whole rounds in compiled code (CPU): every stacked cell's draws, local steps, messages and
server update, round after round, in one compiled call.

With full participation and a server side that is linear too (:func:`~.forms.round_form` reads
``client_init``, ``client_final`` and ``server_update`` off the algorithm the way
:func:`~.forms.affine_form` reads the step), :meth:`~.linear_steps.LinearSteps.rounds` runs whole
rounds of all stacked cells here (:func:`_run_rounds`): each client's keyed draw, ``client_init``, K
steps and message, the messages' non-zeros and weighted mean, each cell's server update, round after
round until an evaluation or checkpoint is due
(:meth:`fedbench.engine.clients.compiled.CompiledPaths.train_rounds`). The kernels read rows as
CSR (:mod:`~.rows`).

The stacked cells whose clients draw the same rows (one seed's learning-rate grid:
:func:`lane_groups`) run as the lanes of one loop, states laid out [sequences, P·L] with the L
lanes of a coordinate side by side: a client's rows are drawn and read once for the whole group,
the work at a row's non-zeros runs across the lanes, and the dense passes are single loops over
P·L. Nothing is summed across lanes, so each lane's numbers are its cell's alone.

A round: what its clients share (:func:`_round_shared`), its work items of :data:`ROUND_BLOCK`
clients (:func:`_round_items`, computed as :func:`round_mode` chooses: :mod:`~.round_items`), then
each group's server updates (:func:`_round_reduce`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from fedbench.engine.linear_fast.keyed_integers import _threshold
from fedbench.engine.linear_fast.logits import _LANE_FLAGS
from fedbench.engine.linear_fast.round_items import (
    _lanes_point,
    _round_item_one_step,
    _round_item_products,
    _round_item_scaled,
    _segment_steps,
)

#: Clients per work item of :func:`_run_rounds`: each item sums its clients' weighted messages in
#: client order, and the items of a group are added in order, so the result does not depend on how
#: many threads share the items.
ROUND_BLOCK = 64

#: How :func:`_run_rounds` computes a round's clients: every gradient at the round's one shared
#: point, K = 1 or the minibatch baselines' accumulation (:func:`~.round_items._round_item_one_step`);
#: or each client's gradients from its rows' products with each other, its iterates never formed
#: (:func:`~.round_items._round_item_products`); or, for a state of one sequence, the client's own
#: part kept scaled by a⁻ᵗ (:func:`~.round_items._round_item_scaled`). :func:`round_mode` chooses.
ONE_STEP, PRODUCTS, SCALED = 0, 1, 2

#: From how many rows a client's round (K·B) a one-sequence state (FedAvg) takes the
#: :data:`SCALED` path: a row reads the client's part at its non-zeros, which the products path
#: saves while the rows' products are few. Measured (FedAvg, a9a-shaped rows, M = 256, 2-core
#: AMD EPYC VM, 2026-11-26): the two equal at K = 8, the products path 1.05–1.13× faster at
#: K = 4 and 2, the scaled path 1.15× faster at K = 16 and 1.4× at K = 32.
SCALED_FROM_ROWS = 8

#: The most |a|⁻ᴷ of the :data:`SCALED` path (the growth of the scaled terms, a the one-sequence
#: step's A): beyond it, a step that nearly erases the state (|a| ≪ 1, e.g. η μ near 1), the
#: products path runs instead.
SCALED_MAX_GROWTH = 1e100


@numba.njit(cache=True, inline="always", fastmath=_LANE_FLAGS)
def _mix(out, coef, src, add, lanes):
    """out (+)= Σ_j coef[j] src[j] elementwise over the flat (coordinate, lane) index i = k·L + l,
    a zero coefficient skipped (0 · inf is NaN: a copy stays a copy), and a j whose L lane
    coefficients are all zero not passed over; ``out`` [P·L], ``coef`` [J, P·L] (a lane's
    coefficient repeated at every coordinate, so the loop is one long vectorizable pass), ``src``
    [J, P·L]; without ``add`` out starts at 0."""
    size = out.shape[0]
    if not add:
        out[:] = 0.0
    for j in range(coef.shape[0]):
        cj, sj = coef[j], src[j]
        used = False
        for ln in range(lanes):
            used = used or cj[ln] != 0.0
        if not used:
            continue
        for i in range(size):
            cf = cj[i]
            v = out[i]
            out[i] = v + cf * sj[i] if cf != 0.0 else v


@numba.njit(cache=True)
def _powers(af, q, cmf, k_steps, lanes):
    """Aʲ, q Aʲ and C Aʲ for j = 0..K, per group and lane: ``pw`` [G, K + 1, n, n, L], ``qpw`` [G,
    K + 1, n, L], ``cpw`` [G, K + 1, n_m, n, L] (A and C read off ``af`` [G, n, n, P·L] and ``cmf``
    [G, n_m, n, P·L] at coordinate 0, where each lane's coefficients start; ``q`` [G, n, L]; A⁰ = I,
    A¹ = A and q A⁰ = q exactly, Aʲ = A Aʲ⁻¹)."""
    n_groups, n, nm = af.shape[0], af.shape[1], cmf.shape[1]
    pw = np.zeros((n_groups, k_steps + 1, n, n, lanes))
    qpw = np.empty((n_groups, k_steps + 1, n, lanes))
    cpw = np.empty((n_groups, k_steps + 1, nm, n, lanes))
    for gi in range(n_groups):
        for r in range(n):
            for ln in range(lanes):
                pw[gi, 0, r, r, ln] = 1.0
                for c in range(n):
                    pw[gi, 1, r, c, ln] = af[gi, r, c, ln]
        for j in range(2, k_steps + 1):
            for r in range(n):
                for c in range(n):
                    for ln in range(lanes):
                        acc = 0.0
                        for m in range(n):
                            acc += af[gi, r, m, ln] * pw[gi, j - 1, m, c, ln]
                        pw[gi, j, r, c, ln] = acc
        qpw[gi, 0] = q[gi]
        for j in range(1, k_steps + 1):
            for c in range(n):
                for ln in range(lanes):
                    acc = 0.0
                    for r in range(n):
                        acc += q[gi, r, ln] * pw[gi, j, r, c, ln]
                    qpw[gi, j, c, ln] = acc
        for j in range(k_steps + 1):
            for e in range(nm):
                for c in range(n):
                    for ln in range(lanes):
                        acc = 0.0
                        for r in range(n):
                            acc += cmf[gi, e, r, ln] * pw[gi, j, r, c, ln]
                        cpw[gi, j, e, c, ln] = acc
    return pw, qpw, cpw


@numba.njit(cache=True, nogil=True, fastmath=_LANE_FLAGS)
def _round_shared(server, q, bf, cmf, dmf, pw, qpw, seg_steps, s0, p0, v, sx, e_shared, d_shared):
    """What every client of a lane shares in a round (all start from s⁰ = B S), for every group g
    and lane: s0[g] = s⁰ [n, P·L], its point p0[g] = q s⁰ [P·L], d_shared[g] = D S and e_shared[g]
    = C Aᴷ s⁰ + D S [n_m, P·L] (Aᴷ = pw[g, K]: :func:`_powers`), the message of a client whose rows
    touched nothing; v[g, t] = q Aᵗ s⁰ [P·L] for the t < v.shape[1] (``qpw``: :func:`_powers`; the
    :data:`SCALED` path's, else none); and sx[g, i] = Aʳ s⁰ at the start r = i·S of each products
    segment (S = ``seg_steps``), coordinate-major [P, n, L] (the :data:`PRODUCTS` path's, else
    none)."""
    n_groups, lanes = server.shape[0], q.shape[2]
    n, size, nm = q.shape[1], server.shape[2], cmf.shape[1]
    k_steps = pw.shape[1] - 1
    end = np.empty((n, size))  # Aᴷ s⁰
    for gi in range(n_groups):
        sc, start, pk = server[gi], s0[gi], pw[gi, k_steps]
        for i in range(n):
            _mix(start[i], bf[gi, i], sc, False, lanes)
        for k in range(size // lanes):
            i0 = k * lanes
            _lanes_point(start, q[gi], i0, p0[gi, i0:i0 + lanes])
            for r in range(n):  # row r of Aᴷ at the coordinate
                _lanes_point(start, pk[r], i0, end[r, i0:i0 + lanes])
        for e in range(nm):
            _mix(d_shared[gi, e], dmf[gi, e], sc, False, lanes)
            _mix(e_shared[gi, e], cmf[gi, e], end, False, lanes)
            for i in range(size):
                e_shared[gi, e, i] += d_shared[gi, e, i]
        for si in range(sx.shape[1]):  # Aʳ s⁰ at each segment start r, coordinate-major [P, n, L]
            pr = pw[gi, si * seg_steps]
            for k in range(size // lanes):
                for i in range(n):
                    i0 = (k * n + i) * lanes
                    _lanes_point(start, pr[i], k * lanes, sx[gi, si, i0:i0 + lanes])
        for tv in range(v.shape[1]):
            out = v[gi, tv]
            for k in range(size // lanes):
                _lanes_point(start, qpw[gi, tv], k * lanes, out[k * lanes:(k + 1) * lanes])


@numba.njit(cache=True, nogil=True, fastmath=_LANE_FLAGS)
def _round_items(i0, i1, t, indptr, indices, values, max_nnz, y_all, row_table, slot, sizes, thresholds, key_seed,
                 key_id, purpose, item_group, item_lo, item_hi, weight, cc, k_steps, b_size, binary, n_lin, d, has_bias,
                 mode, e_shared, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw, part, part_w, item_nnz, item_ok, item_w):
    """Work items i0..i1−1 of round t (by ``mode``: :data:`ONE_STEP`
    :func:`~.round_items._round_item_one_step`, :data:`PRODUCTS` :func:`~.round_items._round_item_products`,
    :data:`SCALED` :func:`~.round_items._round_item_scaled`), their sums into ``part[it]`` (and
    ``part_w[it]``), their non-zeros and loss checks per lane, weights beside."""
    for it in range(i0, i1):
        gi = item_group[it]
        item_nnz[it, :] = 0
        item_ok[it, :] = True
        if mode == PRODUCTS:
            item_w[it] = _round_item_products(
                sx[gi], hqx[gi], mc[gi], ac[gi], pw[gi], cpw[gi], qpw[gi], e_shared[gi], item_lo[it], item_hi[it], t,
                indptr, indices, values,
                max(1, max_nnz), y_all, row_table, slot, sizes, thresholds, key_seed, key_id, purpose, weight, k_steps,
                b_size, binary, n_lin, d, has_bias, part[it], part_w[it], item_nnz[it], item_ok[it])
        elif mode == SCALED:
            item_w[it] = _round_item_scaled(
                v[gi], qpw[gi], cs[gi], cpw[gi], e_shared[gi], item_lo[it], item_hi[it], t, indptr, indices, values,
                max(1, max_nnz), y_all, row_table, slot, sizes, thresholds, key_seed, key_id, purpose, weight, k_steps,
                b_size, binary, n_lin, d, has_bias, part[it], part_w[it], item_nnz[it], item_ok[it])
        else:
            item_w[it] = _round_item_one_step(
                p0[gi], e_shared[gi], item_lo[it], item_hi[it], t, indptr, indices, values, y_all, row_table, slot,
                sizes, thresholds, key_seed, key_id, purpose, weight, cc[gi], k_steps, b_size, binary, n_lin, d,
                has_bias, part[it, 0], item_nnz[it], item_ok[it])


@numba.njit(cache=True, nogil=True, fastmath=_LANE_FLAGS)
def _round_reduce(server, item_group, emf, fmf, cc, mode, e_shared, part, part_w, item_nnz, item_ok, item_w,
                  nonzeros, diverged):
    """The server updates of a round, group by group, a group's items added in order: ē = Σ of its
    items' sums (one step: Σ w e_shared + (C c) Σ w ∇f; touched and products: plus, at each
    coordinate, the weight of the clients that did not touch it times e_shared), S ← E S + F ē,
    every lane at once; the messages' non-zeros added to ``nonzeros[g, l]``; ``diverged[g, l]``
    set where a loss or the new ``params`` (sequence 0) is not finite. Returns whether a lane
    diverged."""
    n_items = len(item_group)
    ns, size, lanes = server.shape[1], server.shape[2], cc.shape[2]
    nm = part.shape[1]
    one_step = mode == ONE_STEP
    ebar = np.empty((nm, size))
    w_at = np.empty(size // lanes)
    new = np.empty((ns, size))
    ok = np.empty(lanes, dtype=np.bool_)
    stop = False
    it = 0
    while it < n_items:
        gi = item_group[it]
        ebar[:, :] = 0.0
        w_at[:] = 0.0
        w_sum = 0.0
        ok[:] = True
        while it < n_items and item_group[it] == gi:
            w_sum += item_w[it]
            if not one_step:
                for k in range(size // lanes):
                    w_at[k] += part_w[it, k]
            for e in range(1 if one_step else nm):
                for i in range(size):
                    ebar[e, i] += part[it, e, i]
            for ln in range(lanes):
                nonzeros[gi, ln] += item_nnz[it, ln]
                ok[ln] = ok[ln] and item_ok[it, ln]
            it += 1
        if one_step:  # ē_e = Σ w e_shared_e + (C c)_e Σ w ∇f (entry 0 last: it holds Σ w ∇f)
            for e in range(nm - 1, -1, -1):
                for k in range(size // lanes):
                    for ln in range(lanes):
                        i = k * lanes + ln
                        ebar[e, i] = w_sum * e_shared[gi, e, i] + cc[gi, e, ln] * ebar[0, i]
        else:  # the clients that did not touch coordinate k sent e_shared there
            for e in range(nm):
                for k in range(size // lanes):
                    w_rest = w_sum - w_at[k]
                    for ln in range(lanes):
                        i = k * lanes + ln
                        ebar[e, i] += w_rest * e_shared[gi, e, i]
        sc = server[gi]
        for i in range(ns):
            _mix(new[i], emf[gi, i], sc, False, lanes)
            _mix(new[i], fmf[gi, i], ebar, True, lanes)
        sc[:, :] = new
        for k in range(size // lanes):
            for ln in range(lanes):
                ok[ln] = ok[ln] and math.isfinite(sc[0, k * lanes + ln])
        for ln in range(lanes):
            if not ok[ln]:
                diverged[gi, ln] = True
                stop = True
    return stop


@numba.njit(cache=True, nogil=True)
def _thresholds(sizes):
    out = np.empty(len(sizes), dtype=np.uint64)
    for g in range(len(sizes)):
        out[g] = _threshold(sizes[g])
    return out


@numba.njit(cache=True)
def _round_buffers(n_items, server, q, af, c, cmf, cc, sizes, mode, k_steps, b_size, seg_steps):
    """The scratch arrays of a segment of rounds (:func:`_run_rounds`, and the threaded
    :meth:`~.linear_steps.LinearSteps._threaded_rounds`): per work item its summed messages ``part`` [items, n_m,
    P·L], its non-zero counts and finiteness per lane, and its weight; the draw thresholds of
    ``sizes``; per group what its clients share (:func:`_round_shared`): ``e_shared``, ``d_shared``
    [G, n_m, P·L], the start ``s0`` [G, n, P·L] and its point ``p0`` [G, P·L]; the powers of A
    ``pw`` [G, K + 1, n, n, L] (:func:`_powers`); per item the weight at each coordinate ``part_w``
    [items, P] (not :data:`ONE_STEP`; else empty); the :data:`PRODUCTS` path's segment starts ``sx``
    [G, ⌈K / S⌉, P·n·L + 8] (S = ``seg_steps``: :func:`~.round_items._segment_steps`), ``hqx`` [G, K·B·L₈] = q Aʲ c
    with j from K − 1 down, each B times (L₈: L padded to whole vectors of 8, zeros past L; the
    layout :func:`fedbench.engine.linear_fast.lane_vectors.products_into` reads),
    ``mc`` [G, K, n_m, L] = C Aʲ c and ``ac`` [G, K, n, L] = Aʲ c, and the :data:`SCALED` path's points
    ``v`` [G, K, P·L] and ``cs`` [G, K, L] = c a⁻⁽ʲ⁺¹⁾ (else empty)."""
    n_groups, size, lanes, nm, n = server.shape[0], server.shape[2], cc.shape[2], cmf.shape[1], q.shape[1]
    pw, qpw, cpw = _powers(af, q, cmf, k_steps, lanes)
    k_products = k_steps if mode == PRODUCTS else 0
    cs = np.zeros((n_groups, k_steps if mode == SCALED else 0, lanes))
    for gi in range(n_groups):
        for ln in range(lanes):
            inv = 1.0
            for j in range(cs.shape[1]):  # c a⁻⁽ʲ⁺¹⁾
                inv /= af[gi, 0, 0, ln]
                cs[gi, j, ln] = c[gi, 0, ln] * inv
    lp = -(-lanes // 8) * 8
    hqx = np.zeros((n_groups, k_products * b_size * lp))
    mc = np.zeros((n_groups, k_products, nm, lanes))
    ac = np.zeros((n_groups, k_products, n, lanes))
    for gi in range(n_groups):
        for j in range(k_products):
            for r in range(n):
                for ln in range(lanes):
                    for b in range(b_size):
                        hqx[gi, ((k_products - 1 - j) * b_size + b) * lp + ln] += qpw[gi, j, r, ln] * c[gi, r, ln]
                    for e in range(nm):
                        mc[gi, j, e, ln] += cpw[gi, j, e, r, ln] * c[gi, r, ln]
                    for cl in range(n):
                        ac[gi, j, cl, ln] += pw[gi, j, cl, r, ln] * c[gi, r, ln]
    return (np.zeros((n_items, nm, size)), np.zeros((n_items, lanes), dtype=np.int64),
            np.ones((n_items, lanes), dtype=np.bool_), np.zeros(n_items), _thresholds(sizes),
            np.empty((n_groups, nm, size)), np.empty((n_groups, nm, size)), np.empty((n_groups, n, size)),
            np.empty((n_groups, size)), np.empty((n_groups, k_steps if mode == SCALED else 0, size)),
            np.zeros((n_groups, -(-k_steps // seg_steps), n * size + 8) if mode == PRODUCTS else (n_groups, 0, 0)),
            hqx, mc, ac,
            cs, pw, qpw, cpw, np.zeros((n_items, size // lanes if mode != ONE_STEP else 1)))


@numba.njit(cache=True, nogil=True, fastmath=_LANE_FLAGS)
def _run_rounds(server, indptr, indices, values, max_nnz, y_all, row_table, slot, sizes, key_seed, key_id, purpose,
                item_group, item_lo, item_hi, weight, q, af, c, bf, cmf, dmf, emf, fmf, cc, k_steps, b_size, binary,
                n_lin, d, has_bias, mode, t0, t1, nonzeros, diverged):
    """Rounds t0..t1 of full participation of G groups of L lanes (cells whose clients draw the same
    rows: :func:`lane_groups`), in place on the server states ``server`` [G, n_s, P·L] (flat index
    k·L + l: the lanes of a coordinate side by side); stops after a round in which a lane diverged
    (a client's loss or the lane's new ``params``, sequence 0, not finite: ``diverged[g, l]`` set).
    Returns the last round run.

    The forms of :func:`~.forms.round_form`, per group: ``q``, ``c`` [G, n, L] and ``cc`` [G, n_m, L] = C c
    (read at one coordinate at a time); A, B, C, D, E, F as ``af``, ``bf``, ``cmf``, ``dmf``, ``emf``,
    ``fmf`` [G, rows, cols, P·L], each lane's coefficient repeated at every coordinate so the dense
    passes are single vectorized loops.

    Per round: the work items (clients ``item_lo[it]`` to ``item_hi[it] − 1`` of group
    ``item_group[it]``, engine-wide ids of its first cell; :func:`_round_items`) each sum their
    clients' weighted messages in client order; then :func:`_round_reduce`. Each round first
    computes what its clients share (:func:`_round_shared`).
    :meth:`~.linear_steps.LinearSteps.rounds` runs the same three parts with the items split over threads (the same
    numbers: an item's sum does not depend on who runs it)."""
    n_items = len(item_group)
    seg_steps = _segment_steps(k_steps, b_size, q.shape[1])
    (part, item_nnz, item_ok, item_w, thresholds, e_shared, d_shared, s0, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw,
     part_w) = _round_buffers(n_items, server, q, af, c, cmf, cc, sizes, mode, k_steps, b_size, seg_steps)
    last = t0 - 1
    first = np.int64(0)  # typed int64, not the literal 0: the signature LinearSteps.rounds' threads call with,
    for t in range(t0, t1 + 1):  # so _round_items compiles once per row format, not twice
        _round_shared(server, q, bf, cmf, dmf, pw, qpw, seg_steps, s0, p0, v, sx, e_shared, d_shared)
        _round_items(first, n_items, t, indptr, indices, values, max_nnz, y_all, row_table, slot, sizes, thresholds,
                     key_seed, key_id, purpose, item_group, item_lo, item_hi, weight, cc, k_steps, b_size, binary,
                     n_lin, d, has_bias, mode, e_shared, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw, part, part_w,
                     item_nnz, item_ok, item_w)
        last = t
        if _round_reduce(server, item_group, emf, fmf, cc, mode, e_shared, part, part_w, item_nnz, item_ok, item_w,
                         nonzeros, diverged):
            break
    return last


def round_mode(k_steps: int, batch_size: int, q: np.ndarray, a: np.ndarray, c: np.ndarray) -> int:
    """How the compiled rounds compute a round's clients, given K, B and the cells' step forms
    ``q`` [C, n], ``a`` [C, n, n], ``c`` [C, n]: :data:`ONE_STEP`, every gradient at one point, where
    there is one step (every client starts from the same point) or, in every cell, a point that
    gradients do not move and a gradient sum carried as is (q A = q, A c = c and q c = 0 exactly:
    Mb-SGD, Mb-Ac-SGD; FedAvg without weight decay has the first two, not the third); else
    :data:`PRODUCTS`, but :data:`SCALED` for one sequence (n = 1) beyond :data:`SCALED_FROM_ROWS`
    rows a client's round (K·B) where every cell's |a|⁻ᴷ ≤ :data:`SCALED_MAX_GROWTH`."""
    fixed = all(np.array_equal(qi @ ai, qi) and np.array_equal(ai @ ci, ci) and qi @ ci == 0
                for qi, ai, ci in zip(q, a, c))
    if k_steps == 1 or fixed:
        return ONE_STEP
    if q.shape[1] == 1 and k_steps * batch_size > SCALED_FROM_ROWS:
        with np.errstate(divide="ignore", over="ignore"):
            growth = np.abs(a[:, 0, 0]).astype(np.float64) ** -float(k_steps)
        if np.all(growth <= SCALED_MAX_GROWTH):
            return SCALED
    return PRODUCTS


def lane_groups(bounds: list[tuple[int, int]], key_seed: np.ndarray, key_id: np.ndarray, row_table: np.ndarray,
                slot: np.ndarray, sizes: np.ndarray) -> list[list[int]]:
    """The cells whose clients draw the same rows every round, as groups of cell positions (in
    order): the same number of clients with the same randomness keys (seed and id: the stacked cells
    of one seed, e.g. a learning-rate grid) and the same row arrays (``row_table[slot[g],
    :sizes[g]]``, compared by content). The compiled rounds run a group's cells as lanes of one
    loop: a client's rows are drawn and read once for all of them."""
    content: dict = {}
    used, first = np.unique(slot, return_index=True)
    same = np.zeros(int(used.max(initial=0)) + 1, dtype=np.int64)  # slot -> the first slot with the same rows
    for u, g in zip(used.tolist(), first.tolist()):
        same[u] = content.setdefault(row_table[u, :int(sizes[g])].tobytes(), u)
    canonical = same[slot]
    groups: dict = {}
    for ci, (lo, hi) in enumerate(bounds):
        sig = (hi - lo, key_seed[lo:hi].tobytes(), key_id[lo:hi].tobytes(), canonical[lo:hi].tobytes())
        groups.setdefault(sig, []).append(ci)
    return list(groups.values())
