"""The compiled local steps: all the steps of a round of a chunk of clients in one compiled loop
(CPU), what :meth:`~.linear_steps.LinearSteps.run` calls.

For the FedAc regime (Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020,
§5: thousands of workers, batch size 1, a 123-feature linear model) a vmapped step of the generic
path is a dozen tiny tensor operations over the stacked [G, d] state, each a pass through memory
plus dispatch overhead: ~4.8 µs per client-step (benchmarks/RESULTS.md). This module runs the same
steps as one compiled (numba) loop, client by client: a client's state is loaded once per round and
its K steps run in cache, with the gradient of the model written out (:mod:`~.logits`; no autograd,
no vmap). The step is the algorithm's own, as the affine map (q, A, c) read off its ``client_step``
(:func:`~.forms.affine_form`): p = Σ_j q_j s_j, then s_i ← Σ_j A_ij s_j + c_i ∇f(p; b).

Inputs are sparse rows (:func:`_run_sparse`) or dense rows (:func:`_run_dense`) (:mod:`~.rows`);
a chunk's clients can be split over threads (:func:`_run_sparse_threads`, :func:`_run_dense_threads`).
"""

from __future__ import annotations

import numba
import numpy as np

from fedbench.engine.linear_fast.logits import _FLAGS, _loss_and_logit_grads
from fedbench.engine.linear_fast.rows import _copy_row


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _point(s, qg, n, k):
    """p_k = Σ_j q_j s_jk (unrolled for n ≤ 3)."""
    if n == 1:
        return qg[0] * s[0, k]
    if n == 2:
        return qg[0] * s[0, k] + qg[1] * s[1, k]
    if n == 3:
        return qg[0] * s[0, k] + qg[1] * s[1, k] + qg[2] * s[2, k]
    acc = 0.0
    for j in range(n):
        acc += qg[j] * s[j, k]
    return acc


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _linear_map(s, ag, n, p_total, tmp):
    """s ← A s for every coordinate (unrolled for n ≤ 3, so the loop over coordinates vectorizes)."""
    if n == 1:
        a00 = ag[0, 0]
        for k in range(p_total):
            s[0, k] = a00 * s[0, k]
    elif n == 2:
        a00, a01, a10, a11 = ag[0, 0], ag[0, 1], ag[1, 0], ag[1, 1]
        for k in range(p_total):
            v0, v1 = s[0, k], s[1, k]
            s[0, k] = a00 * v0 + a01 * v1
            s[1, k] = a10 * v0 + a11 * v1
    elif n == 3:
        for k in range(p_total):
            v0, v1, v2 = s[0, k], s[1, k], s[2, k]
            s[0, k] = ag[0, 0] * v0 + ag[0, 1] * v1 + ag[0, 2] * v2
            s[1, k] = ag[1, 0] * v0 + ag[1, 1] * v1 + ag[1, 2] * v2
            s[2, k] = ag[2, 0] * v0 + ag[2, 1] * v1 + ag[2, 2] * v2
    else:
        for k in range(p_total):
            for j in range(n):
                tmp[j] = s[j, k]
            for i in range(n):
                acc = 0.0
                for j in range(n):
                    acc += ag[i, j] * tmp[j]
                s[i, k] = acc


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _affine_axpy(s, ag, cg, n, off, length, gz, xr, tmp):
    """s_i,off+k ← Σ_j A_ij s_j,off+k + c_i · gz · xr[k] for k < length (one pass; unrolled for n ≤ 2)."""
    if n == 1:
        a00, c0 = ag[0, 0], cg[0] * gz
        for k in range(length):
            s[0, off + k] = a00 * s[0, off + k] + c0 * xr[k]
    elif n == 2:
        a00, a01, a10, a11 = ag[0, 0], ag[0, 1], ag[1, 0], ag[1, 1]
        c0, c1 = cg[0] * gz, cg[1] * gz
        for k in range(length):
            v0, v1 = s[0, off + k], s[1, off + k]
            s[0, off + k] = a00 * v0 + a01 * v1 + c0 * xr[k]
            s[1, off + k] = a10 * v0 + a11 * v1 + c1 * xr[k]
    else:
        for k in range(length):
            for j in range(n):
                tmp[j] = s[j, off + k]
            for i in range(n):
                acc = 0.0
                for j in range(n):
                    acc += ag[i, j] * tmp[j]
                s[i, off + k] = acc + cg[i] * gz * xr[k]


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _scatter(s, cg, n, k, gv):
    """s_ik += c_i · gv for every sequence i (unrolled for n ≤ 3)."""
    if n == 1:
        s[0, k] += cg[0] * gv
    elif n == 2:
        s[0, k] += cg[0] * gv
        s[1, k] += cg[1] * gv
    else:
        for i in range(n):
            s[i, k] += cg[i] * gv


#: Rows gathered ahead per block of clients (sparse path): their loads are independent, so the
#: memory latency of a random row overlaps instead of stalling every step.
_GATHER_ROWS = 256

#: The dense path copies about this many bytes of rows ahead per block of clients.
_GATHER_BYTES = 256 << 10


@numba.njit(cache=True, fastmath=_FLAGS)
def _run_sparse(state, indptr, indices, values, max_nnz, idx, lab, coef_of, q, a, c, binary, n_lin, d, has_bias,
                loss_sum, last_loss, lo, hi):
    """The S steps of clients lo..hi−1 (module docstring), inputs as CSR rows (at most ``max_nnz``
    non-zeros a row); ``idx`` and ``lab`` [G, S, B]. ``state`` [G, n, P] is updated in place;
    ``loss_sum`` [G] += each step's loss; ``last_loss`` [G] = the last one.

    Clients are taken in blocks: first every row of the block's steps is copied into a buffer
    (independent loads, so their latencies overlap), then the block's clients run their steps
    one client at a time, each keeping its state in cache for all its S steps."""
    n = state.shape[1]
    _, s_steps, b_size = idx.shape
    per_client = s_steps * b_size
    block = max(1, _GATHER_ROWS // max(1, per_client))
    buf_i = np.empty((block * per_client, max(1, max_nnz)), dtype=indices.dtype)
    buf_v = np.empty((block * per_client, max(1, max_nnz)), dtype=values.dtype)
    cnt = np.empty(block * per_client, dtype=np.int64)
    tmp = np.empty(n)
    z = np.empty(n_lin)
    dz = np.empty((b_size, n_lin))
    g0 = lo
    while g0 < hi:
        g1 = min(hi, g0 + block)
        j = 0
        for g in range(g0, g1):  # gather the block's rows
            for t in range(s_steps):
                for b in range(b_size):
                    _copy_row(idx[g, t, b], indptr, indices, values, buf_i, buf_v, cnt, j)
                    j += 1
        for g in range(g0, g1):
            s = state[g]
            e = coef_of[g]
            qg, ag, cg = q[e], a[e], c[e]
            total = 0.0
            step_loss = 0.0
            row0 = (g - g0) * per_client
            for t in range(s_steps):
                step_loss = _sparse_step(s, qg, ag, cg, buf_i, buf_v, cnt, row0 + t * b_size, lab[g, t], binary, n_lin,
                                         d, has_bias, z, dz, tmp)
                total += step_loss
            loss_sum[g] += total
            last_loss[g] = step_loss
        g0 = g1


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _sparse_step(s, qg, ag, cg, buf_i, buf_v, cnt, j0, labs, binary, n_lin, d, has_bias, z, dz, tmp):
    """One step of one client (state ``s`` [n, P], in place) on the B = len(labs) rows
    ``j0..j0+B−1`` of the gathered CSR buffers (``buf_i``, ``buf_v``, ``cnt``): the gradient at
    p = Σ q_j s_j, then s ← A s + c ∇f. Returns the step's mean loss."""
    n, p_total = s.shape[0], s.shape[1]
    b_size = len(labs)
    inv_b = 1.0 / b_size
    bias_at = n_lin * d
    step_loss = 0.0
    for b in range(b_size):
        j = j0 + b
        m = cnt[j]
        for cl in range(n_lin):
            acc = 0.0
            off = cl * d
            for u in range(m):
                acc += buf_v[j, u] * _point(s, qg, n, off + buf_i[j, u])
            if has_bias:
                acc += _point(s, qg, n, bias_at + cl)
            z[cl] = acc
        step_loss += _loss_and_logit_grads(z, labs[b], binary, n_lin, inv_b, dz[b])
    step_loss *= inv_b
    _linear_map(s, ag, n, p_total, tmp)  # s ← A s, every coordinate
    for b in range(b_size):  # s ← s + c ∇f: the gradient's non-zero coordinates only
        j = j0 + b
        m = cnt[j]
        for cl in range(n_lin):
            off = cl * d
            gz = dz[b, cl]
            for u in range(m):
                _scatter(s, cg, n, off + buf_i[j, u], gz * buf_v[j, u])
            if has_bias:
                _scatter(s, cg, n, bias_at + cl, gz)
    return step_loss


@numba.njit(cache=True, parallel=True, fastmath=_FLAGS)
def _run_sparse_threads(state, indptr, indices, values, max_nnz, idx, lab, coef_of, q, a, c, binary, n_lin, d,
                        has_bias, loss_sum, last_loss, bounds):
    """:func:`_run_sparse` over the client ranges ``bounds[i]..bounds[i+1]``, one per thread."""
    for i in numba.prange(len(bounds) - 1):
        _run_sparse(state, indptr, indices, values, max_nnz, idx, lab, coef_of, q, a, c, binary, n_lin, d, has_bias,
                    loss_sum, last_loss, bounds[i], bounds[i + 1])


@numba.njit(cache=True, parallel=True, fastmath=_FLAGS)
def _run_dense_threads(state, x, idx, lab, coef_of, q, a, c, binary, n_lin, d, has_bias, loss_sum, last_loss,
                       bounds):
    """:func:`_run_dense` over the client ranges ``bounds[i]..bounds[i+1]``, one per thread."""
    for i in numba.prange(len(bounds) - 1):
        _run_dense(state, x, idx, lab, coef_of, q, a, c, binary, n_lin, d, has_bias, loss_sum, last_loss, bounds[i],
                   bounds[i + 1])


@numba.njit(cache=True, fastmath=_FLAGS)
def _run_dense(state, x, idx, lab, coef_of, q, a, c, binary, n_lin, d, has_bias, loss_sum, last_loss, lo, hi):
    """:func:`_run_sparse` with dense input rows ``x`` [N, D]: a block's rows are copied ahead
    (about 256 KiB of them) so that their loads overlap."""
    n, p_total = state.shape[1], state.shape[2]
    _, s_steps, b_size = idx.shape
    inv_b = 1.0 / b_size
    bias_at = n_lin * d
    per_client = s_steps * b_size
    block = max(1, (_GATHER_BYTES // max(1, d * x.itemsize)) // max(1, per_client))
    buf = np.empty((block * per_client, d), dtype=x.dtype)
    tmp = np.empty(n)
    one = np.ones(1, dtype=x.dtype)
    z = np.empty(n_lin)
    dz = np.empty((b_size, n_lin))
    g0 = lo
    while g0 < hi:
        g1 = min(hi, g0 + block)
        j = 0
        for g in range(g0, g1):  # gather the block's rows
            for t in range(s_steps):
                for b in range(b_size):
                    buf[j] = x[idx[g, t, b]]
                    j += 1
        for g in range(g0, g1):
            s = state[g]
            e = coef_of[g]
            qg, ag, cg = q[e], a[e], c[e]
            total = 0.0
            step_loss = 0.0
            row0 = (g - g0) * per_client
            for t in range(s_steps):
                step_loss = 0.0
                for b in range(b_size):
                    xr = buf[row0 + t * b_size + b]
                    for cl in range(n_lin):
                        off = cl * d
                        acc = 0.0
                        for k in range(d):
                            acc += xr[k] * _point(s, qg, n, off + k)
                        if has_bias:
                            acc += _point(s, qg, n, bias_at + cl)
                        z[cl] = acc
                    step_loss += _loss_and_logit_grads(z, lab[g, t, b], binary, n_lin, inv_b, dz[b])
                step_loss *= inv_b
                total += step_loss
                if b_size == 1:  # s ← A s + c ∇f in one pass over the coordinates
                    xr = buf[row0 + t]
                    for cl in range(n_lin):
                        _affine_axpy(s, ag, cg, n, cl * d, d, dz[0, cl], xr, tmp)
                        if has_bias:
                            _affine_axpy(s, ag, cg, n, bias_at + cl, 1, dz[0, cl], one, tmp)
                    continue
                _linear_map(s, ag, n, p_total, tmp)  # s ← A s, then + c ∇f
                for b in range(b_size):
                    xr = buf[row0 + t * b_size + b]
                    for cl in range(n_lin):
                        off = cl * d
                        gz = dz[b, cl]
                        for i in range(n):
                            ci = cg[i] * gz
                            for k in range(d):
                                s[i, off + k] += ci * xr[k]
                        if has_bias:
                            for i in range(n):
                                s[i, bias_at + cl] += cg[i] * gz
            loss_sum[g] += total
            last_loss[g] = step_loss
        g0 = g1
