"""The vectorized engine's fast path: a round's local steps of linear logistic regression in one
compiled loop (CPU).

For the FedAc regime (Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020,
§5: thousands of workers, batch size 1, a 123-feature linear model) a vmapped step of the generic
path is a dozen tiny tensor operations over the stacked [G, d] state, each a pass through memory
plus dispatch overhead: ~4.8 µs per client-step (benchmarks/RESULTS.md). This module runs the same
steps as one compiled (numba) loop, client by client: a client's state is loaded once per round and
its K steps run in cache, with the gradient of the model written out (no autograd, no vmap).

Where the update rules come from (no second copy)
=================================================

The algorithm's own ``client_step`` stays the single source of its rule. Every algorithm whose
local step is *affine in its state and the minibatch gradient, coordinate by coordinate* (FedAvg's
SGD step with weight decay, FedAc's coupling and two sequences, Mb-SGD's and Mb-Ac-SGD's gradient
sums, ...) has the form, for its n parameter-shaped sequences s_1..s_n (``params``, ``w``,
``grad_sum``, ...):

    p   = Σ_j q_j s_j                        (the point where the gradient is taken)
    s_i ← Σ_j A_ij s_j + c_i ∇f(p; b)         (every coordinate alike)

:func:`affine_form` reads (q, A, c) off ``client_step`` itself: it calls it once on probe states
whose coordinates are the basis vectors (s = e_j, gradient 0; s = 0, gradient 1) and a few random
coordinates that check the form holds (and again at another step count, to check the step does not
depend on it). A step that is not of this form (clipping, a sign, per-leaf rules, extra state, a
second gradient call) fails the check and the engine runs the generic path. FedAc's α, β, γ thus
come from :func:`fedbench.algorithms.fedac.coefficients` through ``client_step``, nowhere else.

The model: ``binary_logreg`` (logits [0, xᵀw], no bias) and ``logreg`` (logits Wx + b), both with
the mean softmax cross-entropy of :func:`fedbench.models.make_loss_fn`; the gradient in the logits is
softmax − one-hot, over the rows of the batch. Inputs are read as sparse rows (a9a: 14 of 123
features are non-zero) when at most half the entries are non-zero, else dense.

Equality: the same values as the generic path to float rounding (another summation order);
``tests/engine/linear_fast/test_linear_steps.py``: float64, 1e-10 relative, every algorithm above, stacked cells
differing in lr and seed, the ``shared`` partition with ``local.replacement``. The rows drawn are
the engine's, unchanged. Which path runs is decided by the engine per chunk
(:meth:`fedbench.engine.clients.vectorized.VectorizedClients._fast_chunk`; docs/engines.md).

Whole rounds
============

With full participation and a server side that is linear too (:func:`round_form` reads
``client_init``, ``client_final`` and ``server_update`` off the algorithm the same way),
:meth:`LinearSteps.rounds` runs whole rounds of all stacked cells in compiled code
(:func:`_run_rounds`): each client's keyed draw, ``client_init``, K steps and message, the
messages' non-zeros and weighted mean, each cell's server update, round after round until an
evaluation or checkpoint is due (:meth:`fedbench.engine.clients.vectorized.VectorizedClients.train_rounds`).
The kernels read rows as CSR: dense rows (epsilon) as CSR rows that store every entry
(:func:`dense_rows`). For K = 1 step the clients of a cell share their start, and the minibatch
baselines (Mb-SGD, Mb-Ac-SGD) take all K steps' gradients at that start, so a client costs its
rows' non-zeros (:func:`_round_item_one_step`).

The stacked cells whose clients draw the same rows (one seed's learning-rate grid:
:func:`lane_groups`) run as the lanes of one loop, states laid out [sequences, P·L] with the L
lanes of a coordinate side by side: a client's rows are drawn and read once for the whole group,
the work at a row's non-zeros runs across the lanes, and the dense passes are single loops over
P·L. Nothing is summed across lanes, so each lane's numbers are its cell's alone. At K ≥ 2 a client
forms no iterate: a row's logit is the row read against the client's state at its segment's start
(s⁰, shared by the lane's clients, in the first), times q Aᵗ⁻ʳ, plus its products with the
segment's earlier rows times their logit gradients (:func:`_round_item_products`). For a state of
one sequence (FedAvg: A = a) the client's own part is kept instead, scaled by a⁻ᵗ so that only the
coordinates a row touches change (:func:`_round_item_scaled`). :func:`round_mode` chooses. A work item
draws its clients' rows first and requests the cache lines of the rows a few ahead of the one being
read (:func:`_prefetch_rows`).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch

from fedbench.engine.linear_fast.keyed_integers import _threshold, keyed_integers_into
from fedbench.engine.linear_fast.lane_math import div, exp_nonpos, log1p_unit
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
from fedbench.engine.linear_fast.prefetch import prefetch
from fedbench.models import binary_logreg, logreg
from fedbench.rng import _purpose_id
from fedbench.tree import _mean_weights

#: The models this path knows: their ``apply`` → kind. "binary": logits [0, xᵀw] (``weight`` (D,));
#: "softmax": logits Wx + b (``weight`` (C, D), ``bias`` (C,)).
LINEAR_MODELS = {binary_logreg.apply: "binary", logreg.apply: "softmax"}

#: Inputs are read as sparse rows when at most this fraction of their entries is non-zero.
SPARSE_DENSITY = 0.5

#: A chunk is split over torch's threads only with at least this many clients per thread.
MIN_CLIENTS_PER_THREAD = 64

#: LLVM may reassociate sums (so a dot product over d inputs vectorizes instead of adding one term
#: at a time) and fuse multiply-adds: float rounding only. No "nnan"/"ninf": a diverging run's
#: NaN and inf propagate as in the generic path.
_FLAGS = {"reassoc", "contract"}

#: Whole rounds (:meth:`LinearSteps.rounds`) are split over torch's threads only with at least this
#: many clients per thread and round (a round then takes ~0.1 ms or more, the threads' hand-off ~0.05 ms).
MIN_ROUND_CLIENTS_PER_THREAD = 512

#: Relative tolerance of the affine-form check (float64 probes).
_CHECK_RTOL = 1e-12


# ----------------------------------------------------------------------------------------------
# the algorithm's step as an affine map


def sequence_keys(state: dict) -> list[str] | None:
    """The step state's parameter-shaped sequences (``params`` first, then the other entries that
    are dicts with the same keys), or None when the state holds anything else besides ``steps``
    and ``loss`` (the fast path cannot carry it)."""
    params = state.get("params")
    if not isinstance(params, dict):
        return None
    keys = ["params"]
    for k, v in state.items():
        if k in ("params", "steps", "loss"):
            continue
        if not (isinstance(v, dict) and set(v) == set(params)):
            return None
        keys.append(k)
    return keys


def affine_form(algo, state_keys: list[str], leaf_names: list[str], hp: dict,
                local_steps: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(q [n], A [n, n], c [n]) of ``algo.client_step`` with hyperparameters ``hp`` (module
    docstring), read off the step itself in float64; None when the step is not of that form
    (also when ``hp`` asks for gradient clipping, a norm over all coordinates).

    Args:
        algo: the algorithm module.
        state_keys: the step state's sequences (:func:`sequence_keys`), n of them.
        leaf_names: the model's parameter names (every leaf is probed; all must agree).
        hp: the cell's round hyperparameters (Python numbers).
        local_steps: K; the step counts probed are 0 and max(1, K − 1) (both must give the same form).
    """
    n = len(state_keys)
    rng = np.random.default_rng(12345)
    n_check = 3
    width = n + 1 + n_check
    s_in = np.zeros((n, width))
    g_in = np.zeros(width)
    s_in[:, :n] = np.eye(n)
    g_in[n] = 1.0
    s_in[:, n + 1:] = rng.uniform(-2.0, 2.0, size=(n, n_check))
    g_in[n + 1:] = rng.uniform(-2.0, 2.0, size=n_check)
    if hp.get("clip_norm") is not None:  # a global norm: not coordinate by coordinate
        return None
    forms = []
    last = max(1, int(local_steps or 1) - 1)
    # Two probes: at step 0, then at another step count with the random columns 1000× larger (a
    # rule that reads the step count, or a norm over all coordinates, gives another form).
    for steps, scale in ((0, 1.0), (last, 1e3)):
        s_in[:, n + 1:] *= scale
        g_in[n + 1:] *= scale
        state = {k: {name: torch.tensor(s_in[i]) for name in leaf_names} for i, k in enumerate(state_keys)}
        state["steps"] = steps
        state["loss"] = torch.tensor(float("nan"), dtype=torch.float64)
        calls = []
        probe_loss = torch.tensor(0.625, dtype=torch.float64)

        def grad_fn(p, x, y, calls=calls, probe_loss=probe_loss):
            calls.append(p)
            return {name: torch.tensor(g_in) for name in leaf_names}, probe_loss

        try:
            new = algo.client_step(state, (None, None), hp, grad_fn)
        except Exception:  # a step that needs a real batch or tensor shapes: not this path's
            return None
        if len(calls) != 1 or set(new) != set(state) or not torch.is_tensor(new["loss"]):
            return None
        if float(new["loss"]) != 0.625 or int(new["steps"]) != steps + 1:
            return None
        p_leaves = [calls[0].get(name) for name in leaf_names]
        out = []
        for k in state_keys:
            leaves = [new[k].get(name) for name in leaf_names]
            if any(not torch.is_tensor(v) or v.shape != (width,) for v in leaves):
                return None
            out.append([v.double().numpy() for v in leaves])
        if any(not torch.is_tensor(v) or v.shape != (width,) for v in p_leaves):
            return None
        p_leaves = [v.double().numpy() for v in p_leaves]
        q, a, c = p_leaves[0][:n].copy(), np.array([o[0][:n] for o in out]), np.array([o[0][n] for o in out])
        for li in range(len(leaf_names)):  # every leaf: the same form, and it holds on the random columns
            if not (np.array_equal(p_leaves[li][:n], q) and np.all(p_leaves[li][n] == 0.0)):
                return None
            want_p = q @ s_in[:, n + 1:]
            if not np.allclose(p_leaves[li][n + 1:], want_p, rtol=_CHECK_RTOL, atol=_CHECK_RTOL * scale):
                return None
            for i in range(n):
                if not (np.array_equal(out[i][li][:n], a[i]) and out[i][li][n] == c[i]):
                    return None
                want = a[i] @ s_in[:, n + 1:] + c[i] * g_in[n + 1:]
                if not np.allclose(out[i][li][n + 1:], want, rtol=_CHECK_RTOL, atol=_CHECK_RTOL * scale):
                    return None
        forms.append((q, a, c))
    q0, a0, c0 = forms[0]
    if any(not (np.array_equal(q, q0) and np.array_equal(a, a0) and np.array_equal(c, c0)) for q, a, c in forms):
        return None
    return q0, a0, c0


def _linear_probe(fn, n_in: int, leaf_names: list[str]) -> np.ndarray | None:
    """M [n_out, n_in] with out_i = Σ_j M_ij in_j (every coordinate, every leaf) for a function
    ``fn`` of n_in parameter-shaped trees returning a list of n_out such trees, read off ``fn``
    itself as :func:`affine_form` reads a step: on the basis vectors, checked on random
    coordinates at two scales. None when ``fn`` raises, returns None, or is not of that form (an
    offset, a norm, a sign, per-leaf rules)."""
    rng = np.random.default_rng(54321)
    n_check = 3
    width = n_in + n_check
    cols = np.zeros((n_in, width))
    cols[:, :n_in] = np.eye(n_in)
    cols[:, n_in:] = rng.uniform(-2.0, 2.0, size=(n_in, n_check))
    found = []
    for scale in (1.0, 1e3):
        cols[:, n_in:] *= scale
        try:
            outs = fn([{name: torch.tensor(cols[j]) for name in leaf_names} for j in range(n_in)])
        except Exception:  # a rule that needs real shapes or values: not this path's
            return None
        if outs is None:
            return None
        rows = []
        for out in outs:
            leaves = [out.get(name) if isinstance(out, dict) else None for name in leaf_names]
            if any(not torch.is_tensor(v) or v.shape != (width,) for v in leaves):
                return None
            leaves = [v.double().numpy() for v in leaves]
            row = leaves[0][:n_in].copy()
            for v in leaves:
                if not (np.array_equal(v[:n_in], row)
                        and np.allclose(v[n_in:], row @ cols[:, n_in:], rtol=_CHECK_RTOL, atol=_CHECK_RTOL * scale)):
                    return None
            rows.append(row)
        found.append(np.array(rows).reshape(len(outs), n_in))
    return found[0] if np.array_equal(found[0], found[1]) else None


def round_form(algo, server_keys: list[str], leaf_names: list[str], hp: dict, local_steps: int):
    """The server side of a round of full participation as linear maps, read off the algorithm's
    own ``client_init``, ``client_final`` and ``server_update`` (:func:`_linear_probe`), for a
    server state of n_s parameter-shaped sequences S (``server_keys``, ``params`` first) and
    stateless clients:

        s   = B S                              (client_init: the step state's n sequences)
        e_l = Σ_i C_li s_i + Σ_j D_lj S_j        (client_final after K steps: message entry l)
        S'  = E S + F ē,   ē_l = Σ_k n_k e_kl / Σ_k n_k   (server_update with the weighted mean)

    Returns:
        (state_keys, entries, B [n, n_s], C [n_m, n], D [n_m, n_s], E [n_s, n_s], F [n_s, n_m]), or
        None when a rule is not of this form, a client keeps state, or the server state changes
        its keys.
    """
    ns = len(server_keys)
    found: dict = {}

    def init(ins):
        st = algo.client_init(dict(zip(server_keys, ins)), None, hp)
        keys = sequence_keys(st)
        if keys is None or int(st.get("steps", -1)) != 0:
            return None
        found["state_keys"] = keys
        return [st[k] for k in keys]

    b = _linear_probe(init, ns, leaf_names)
    if b is None:
        return None
    state_keys = found["state_keys"]
    n = len(state_keys)

    def final(ins):
        state = {**dict(zip(state_keys, ins[ns:])), "steps": int(local_steps),
                 "loss": torch.tensor(float("nan"), dtype=torch.float64)}
        msg, cs = algo.client_final(dict(zip(server_keys, ins[:ns])), state, hp)
        if cs or not isinstance(msg, dict):
            return None
        found["entries"] = sorted(msg)
        return [msg[e] for e in found["entries"]]

    cd = _linear_probe(final, ns + n, leaf_names)
    if cd is None:
        return None
    entries = found["entries"]
    nm = len(entries)

    def update(ins):
        new = algo.server_update(dict(zip(server_keys, ins[:ns])), [dict(zip(entries, ins[ns:]))],
                                 torch.ones(1, dtype=torch.float64), hp)
        return [new[k] for k in server_keys] if set(new) == set(server_keys) else None

    ef = _linear_probe(update, ns + nm, leaf_names)
    if ef is None:
        return None
    return state_keys, entries, b, cd[:, ns:], cd[:, :ns], ef[:, :ns], ef[:, ns:]


def _hp_key(hp: dict) -> tuple:
    """The hyperparameter values as a cache key."""
    return tuple(sorted((k, repr(v)) for k, v in hp.items()))


def step_form(cache: dict, algo, keys: list[str], names: list[str], hp: dict):
    """:func:`affine_form`, cached in ``cache`` per hyperparameter values."""
    key = (tuple(keys), _hp_key(hp))
    if key not in cache:
        cache[key] = affine_form(algo, keys, names, hp, hp.get("local_steps"))
    return cache[key]


def cell_forms(cache: dict, algo, server_keys: list[str], names: list[str], hp: dict):
    """:func:`round_form` with the step's :func:`affine_form`, cached in ``cache`` per
    hyperparameter values: (state_keys, entries, (q, A, c), B, C, D, E, F), or None (K not a
    positive integer, or a rule not of the linear form)."""
    key = ("round", tuple(server_keys), _hp_key(hp))
    if key not in cache:
        k = hp.get("local_steps")
        rf = round_form(algo, server_keys, names, hp, k) if isinstance(k, int) and k >= 1 else None
        step = None if rf is None else step_form(cache, algo, rf[0], names, hp)
        cache[key] = None if step is None else (rf[0], rf[1], step, *rf[2:])
    return cache[key]


# ----------------------------------------------------------------------------------------------
# inputs as rows


def sparse_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(indptr [N+1] int64, indices [nnz] int32, values [nnz]) of the rows of ``x`` [N, D] (CSR),
    or None when more than :data:`SPARSE_DENSITY` of the entries are non-zero."""
    x = x.reshape(len(x), -1)
    nz = x != 0
    if nz.mean() > SPARSE_DENSITY if x.size else True:
        return None
    counts = nz.sum(axis=1)
    indptr = np.zeros(len(x) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    rows, cols = np.nonzero(nz)
    return indptr, cols.astype(np.int32), np.ascontiguousarray(x[rows, cols])


def dense_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of a dense ``x`` [N, D] in the CSR layout the whole-round kernels read: indptr
    [N+1] int64 = 0, D, 2D, …; indices [N·D] the columns 0..D−1 of every row, int16 where D ≤
    32,767 (else int32); values: ``x``'s own memory (no copy when ``x`` is C-contiguous). Zeros are
    stored like any entry: a zero adds 0 to the logits and its coordinate's gradient is 0 · ∂ℓ/∂z,
    what the dense generic path computes. Costs N·D·2 bytes beside ``x`` (epsilon, 400,000 × 2,000:
    1.6 GB beside its 6.4 GB of float64 rows)."""
    x = np.ascontiguousarray(x.reshape(len(x), -1))
    n, d = x.shape
    index_dtype = np.int16 if d <= np.iinfo(np.int16).max else np.int32
    indptr = np.arange(n + 1, dtype=np.int64) * d
    indices = np.empty((n, d), dtype=index_dtype)
    indices[:] = np.arange(d, dtype=index_dtype)
    return indptr, indices.reshape(-1), x.reshape(-1)


def csr_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of ``x`` [N, D] as CSR for the compiled kernels: :func:`sparse_rows` where at most
    :data:`SPARSE_DENSITY` of the entries are non-zero, else :func:`dense_rows`."""
    csr = sparse_rows(x)
    return dense_rows(x) if csr is None else csr


# ----------------------------------------------------------------------------------------------
# the compiled loop


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _binary_loss_and_grad(zz, lab, inv_b, with_loss):
    """(σ(z) − [y = 1]) / B and the cross-entropy log(1 + e^z) − [y = 1] z of the logits [0, z],
    from one e^{−|z|} (:mod:`fedbench.engine.linear_fast.lane_math`: the same bits in a vectorized lane loop as
    one at a time); without ``with_loss``, z in place of the loss (finite exactly when it is)."""
    ez = exp_nonpos(-abs(zz))
    sig = div(1.0 if zz >= 0 else ez, 1.0 + ez)
    g = ((sig - 1.0) if lab == 1 else sig) * inv_b
    if not with_loss:
        return g, zz
    sp = max(zz, 0.0) + log1p_unit(ez)
    return g, (sp - zz if lab == 1 else sp)


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _loss_and_logit_grads(z, lab, binary, n_lin, inv_b, dz_row, with_loss=True):
    """Cross-entropy of the logits (binary: [0, z[0]]; else z[:n_lin]) for class ``lab``; writes
    (softmax − one-hot) / B into dz_row; returns the loss (binary with ``with_loss`` False: z[0],
    finite exactly when the loss is, without the log)."""
    if binary:
        zz = z[0]
        dz_row[0], loss = _binary_loss_and_grad(zz, lab, inv_b, with_loss)
        return loss
    m = z[0]
    for c in range(1, n_lin):
        m = max(m, z[c])
    tot = 0.0
    for c in range(n_lin):
        tot += math.exp(z[c] - m)
    lse = m + math.log(tot)
    for c in range(n_lin):
        dz_row[c] = (math.exp(z[c] - lse) - (1.0 if c == lab else 0.0)) * inv_b
    return lse - z[lab]


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


@numba.njit(cache=True, inline="always")
def _copy_row(r, indptr, indices, values, buf_i, buf_v, cnt, j):
    """CSR row r's non-zeros copied into line j of ``buf_i``/``buf_v``, their count into ``cnt[j]``."""
    start = indptr[r]
    m = indptr[r + 1] - start
    cnt[j] = m
    for u in range(m):
        buf_i[j, u] = indices[start + u]
        buf_v[j, u] = values[start + u]


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


# ----------------------------------------------------------------------------------------------
# whole rounds: draws, local steps, messages and the server update of every stacked cell


#: Clients per work item of :func:`_run_rounds`: each item sums its clients' weighted messages in
#: client order, and the items of a group are added in order, so the result does not depend on how
#: many threads share the items.
ROUND_BLOCK = 64

#: How :func:`_run_rounds` computes a round's clients: every gradient at the round's one shared
#: point, K = 1 or the minibatch baselines' accumulation (:func:`_round_item_one_step`); or each
#: client's gradients from its rows' products with each other, its iterates never formed
#: (:func:`_round_item_products`); or, for a state of one sequence, the client's own part kept
#: scaled by a⁻ᵗ (:func:`_round_item_scaled`). :func:`round_mode` chooses.
ONE_STEP, PRODUCTS, SCALED = 0, 1, 2

#: From how many rows a client's round (K·B) a one-sequence state (FedAvg) takes the
#: :data:`SCALED` path: a row reads the client's part at its non-zeros, which the products path
#: saves while the rows' products are few. Measured (FedAvg, a9a-shaped rows, M = 256,
#: benchmarks/RESULTS.md, stop 33): the two equal at K = 8, the products path 1.05–1.13× faster at
#: K = 4 and 2, the scaled path 1.15× faster at K = 16 and 1.4× at K = 32.
SCALED_FROM_ROWS = 8

#: The most |a|⁻ᴷ of the :data:`SCALED` path (the growth of the scaled terms, a the one-sequence
#: step's A): beyond it, a step that nearly erases the state (|a| ≪ 1, e.g. η μ near 1), the
#: products path runs instead.
SCALED_MAX_GROWTH = 1e100

#: The rows of a segment of the :data:`PRODUCTS` path, per sequence of the state: a row's products
#: with the segment's earlier rows grow with it, the cost of a segment's start (a power of A at every
#: coordinate the client touched) shrinks. Measured (FedAc-I, M = 256 and 1,024; benchmarks/RESULTS.md,
#: stop 33): 32 (FedAc: 64 steps at B = 1) and 16 equal at K = 256, 32 faster at K = 64.
PRODUCTS_SEGMENT_ROWS = 32

#: The lane kernels vectorize across lanes (cells), never along a sum, so they do not reassociate:
#: a lane's numbers are the same with 1 lane or 13, in the vector body or its scalar remainder.
_LANE_FLAGS = {"contract"}


@numba.njit(cache=True, inline="always")
def _segment_steps(k_steps, b_size, n):
    """S, the steps of a products segment (:func:`_round_item_products`): the steps of
    :data:`PRODUCTS_SEGMENT_ROWS` · n rows, at least 1, at most K (one segment where K ≤ S)."""
    return min(k_steps, max(1, PRODUCTS_SEGMENT_ROWS * n // b_size))


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


@numba.njit(cache=True, inline="always", fastmath=_LANE_FLAGS)
def _grads_lanes(z, lab, binary, n_lin, inv_b, dz, loss, with_loss, zl, dzl):
    """Per lane l: the cross-entropy of the logits z[:, l] for class ``lab`` added to loss[l]
    (:func:`_loss_and_logit_grads`, the same numbers), its logit gradients in dz[:, l]."""
    lanes = z.shape[1]
    if binary:  # one pass over the lanes, which vectorizes
        z0, d0 = z[0], dz[0]
        for ln in range(lanes):
            g, lv = _binary_loss_and_grad(z0[ln], lab, inv_b, with_loss)
            d0[ln] = g
            loss[ln] += lv
        return
    for ln in range(lanes):
        for cl in range(n_lin):
            zl[cl] = z[cl, ln]
        loss[ln] += _loss_and_logit_grads(zl, lab, binary, n_lin, inv_b, dzl, with_loss)
        for cl in range(n_lin):
            dz[cl, ln] = dzl[cl]


@numba.njit(cache=True, inline="always", fastmath=_LANE_FLAGS)
def _logits_lanes(z, w, indices, values, start, m, n_lin, d, has_bias, lanes):
    """z[c, l] = the logit c of lane l's linear model at the CSR row of non-zeros start..start+m−1:
    Σ_u x_u w[(c·d + k_u)·L + l] (+ the bias w[(C·d + c)·L + l]); ``w`` [P·L] coordinate-major."""
    bias_at = n_lin * d
    for cl in range(n_lin):
        off = cl * d
        zc = z[cl]
        for ln in range(lanes):
            zc[ln] = 0.0
        u = 0
        while u + 1 < m:  # two non-zeros a pass: half the loads and stores of z
            dot2_into(zc, w, (off + indices[start + u]) * lanes, float(values[start + u]),
                      (off + indices[start + u + 1]) * lanes, float(values[start + u + 1]), lanes)
            u += 2
        if u < m:
            fma_into(zc, 0, w, (off + indices[start + u]) * lanes, float(values[start + u]), lanes)
        if has_bias:
            i0 = (bias_at + cl) * lanes
            wk = w[i0:i0 + lanes]
            for ln in range(lanes):
                zc[ln] += wk[ln]


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
    (q A = q and A c = c: Mb-SGD's and Mb-Ac-SGD's accumulation; :func:`round_mode`). Its message is
    e_k = e_shared + (C c) Σ_steps ∇f(p; rows) with e_shared = C Aᴷ s⁰ + D S and p = q s⁰ computed
    once per lane (:func:`_round_shared`), so a client costs its rows' non-zeros, not passes over
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
    the lane's clients: :func:`_round_shared`; s⁰ itself in the first segment), and its products
    with the segment's earlier rows (computed once for all lanes) times their logit gradients and
    q Aᵗ⁻¹⁻ʲ c (``hqx``: for j from K − 1 down). A segment ending at r' < K
    scatters each row's gradient into u_r' with ``ac[r' − 1 − j]`` = A^(r'−1−j) c, u_r' starting
    at A^(r'−r) u_r (``pw``); the last one scatters into the message e = C s_K + D S = ``e_shared``
    + C u_K with ``mc[K − 1 − j]`` = C Aᴷ⁻¹⁻ʲ c, starting at C Aᴷ⁻ʳ u_r (``cpw``), a coordinate's
    n_m messages side by side ([P, n_m, L]). A row costs its non-zeros once per lane for each
    sequence of the point and of the scatter, and its products with the segment's rows (≤ S·B); a
    segment start costs a product with a power of A at each touched coordinate and a pass over
    s_r. S = :func:`_segment_steps`. ``sx`` [⌈K / S⌉, P·n·L + 8] (coordinate-major, then 8 zeros),
    ``hqx`` [K·B·L₈] (:func:`_round_buffers`), ``mc`` [K, n_m, L], ``ac`` [K, n, L], ``pw`` [K + 1, n,
    n, L], ``cpw`` [K + 1, n_m, n, L], ``qpw`` [K + 1, n, L] (:func:`_powers`). ``acc`` [n_m, P·L]
    gets Σ weight[g] e at the touched coordinates, ``acc_w`` [P] the weight of the clients that
    touched each coordinate (the rest take e_shared: :func:`_round_reduce`); nnz[l] counts the
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
    x·(q aᵗ s⁰) + q aᵗ (x·û_t): the row read against ``v[t]`` (:func:`_round_shared`) and û, times
    ``qpw[t]`` = q aᵗ; its gradient goes into û with ``cs[t]`` = c a⁻⁽ᵗ⁺¹⁾; the message is e =
    ``e_shared`` + C aᴷ û_K (``cpw[K]``) at the touched coordinates. A row costs two passes over its
    non-zeros per lane (one read, one read and write). The terms of û grow as |a|⁻ᵗ, which
    :func:`round_mode` bounds; the rounding relative to s is that of the steps. ``v`` [K, P·L],
    ``qpw`` [K + 1, 1, L], ``cs`` [K, L], ``cpw`` [K + 1, n_m, 1, L] (:func:`_powers`); ``acc``,
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
    """Work items i0..i1−1 of round t (by ``mode``: :data:`ONE_STEP` :func:`_round_item_one_step`,
    :data:`PRODUCTS` :func:`_round_item_products`, :data:`SCALED` :func:`_round_item_scaled`),
    their sums into ``part[it]`` (and ``part_w[it]``), their non-zeros and loss checks per lane,
    weights beside."""
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
    :meth:`LinearSteps._threaded_rounds`): per work item its summed messages ``part`` [items, n_m,
    P·L], its non-zero counts and finiteness per lane, and its weight; the draw thresholds of
    ``sizes``; per group what its clients share (:func:`_round_shared`): ``e_shared``, ``d_shared``
    [G, n_m, P·L], the start ``s0`` [G, n, P·L] and its point ``p0`` [G, P·L]; the powers of A
    ``pw`` [G, K + 1, n, n, L] (:func:`_powers`); per item the weight at each coordinate ``part_w``
    [items, P] (not :data:`ONE_STEP`; else empty); the :data:`PRODUCTS` path's segment starts ``sx``
    [G, ⌈K / S⌉, P·n·L + 8] (S = ``seg_steps``: :func:`_segment_steps`), ``hqx`` [G, K·B·L₈] = q Aʲ c
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

    The forms of :func:`round_form`, per group: ``q``, ``c`` [G, n, L] and ``cc`` [G, n_m, L] = C c
    (read at one coordinate at a time); A, B, C, D, E, F as ``af``, ``bf``, ``cmf``, ``dmf``, ``emf``,
    ``fmf`` [G, rows, cols, P·L], each lane's coefficient repeated at every coordinate so the dense
    passes are single vectorized loops.

    Per round: the work items (clients ``item_lo[it]`` to ``item_hi[it] − 1`` of group
    ``item_group[it]``, engine-wide ids of its first cell; :func:`_round_items`) each sum their
    clients' weighted messages in client order; then :func:`_round_reduce`. Each round first
    computes what its clients share (:func:`_round_shared`).
    :meth:`LinearSteps.rounds` runs the same three parts with the items split over threads (the same
    numbers: an item's sum does not depend on who runs it)."""
    n_items = len(item_group)
    seg_steps = _segment_steps(k_steps, b_size, q.shape[1])
    (part, item_nnz, item_ok, item_w, thresholds, e_shared, d_shared, s0, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw,
     part_w) = _round_buffers(n_items, server, q, af, c, cmf, cc, sizes, mode, k_steps, b_size, seg_steps)
    last = t0 - 1
    for t in range(t0, t1 + 1):
        _round_shared(server, q, bf, cmf, dmf, pw, qpw, seg_steps, s0, p0, v, sx, e_shared, d_shared)
        _round_items(0, n_items, t, indptr, indices, values, max_nnz, y_all, row_table, slot, sizes, thresholds,
                     key_seed, key_id, purpose, item_group, item_lo, item_hi, weight, cc, k_steps, b_size, binary,
                     n_lin, d, has_bias, mode, e_shared, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw, part, part_w,
                     item_nnz, item_ok, item_w)
        last = t
        if _round_reduce(server, item_group, emf, fmf, cc, mode, e_shared, part, part_w, item_nnz, item_ok, item_w,
                         nonzeros, diverged):
            break
    return last


# ----------------------------------------------------------------------------------------------
# evaluation of many cells in one pass over the rows


@numba.njit(cache=True, nogil=True, fastmath=_LANE_FLAGS)
def _evaluate_lanes(indptr, indices, values, y, w, binary, n_lin, d, has_bias, num_classes):
    """The mean cross-entropy, accuracy and per-class hits of L linear models at once over the CSR
    rows (``indptr``, ``indices``, ``values``) with labels ``y`` [N]: ``w`` [P·L], the models'
    parameters coordinate-major (coordinate k of lane l at k·L + l; binary: logits [0, xᵀw]; else
    Wx + b). Each lane's numbers are those of its model alone (rows summed in order, nothing summed
    across lanes). Returns (loss_sum [L], hits [C, L] of rows predicted right per class, counts [C])."""
    lanes = w.shape[0] // (n_lin * d + (n_lin if has_bias else 0))
    loss = np.zeros(lanes)
    hits = np.zeros((num_classes, lanes))
    counts = np.zeros(num_classes)
    _evaluate_rows(indptr, indices, values, y, w, binary, n_lin, d, has_bias, np.empty((n_lin, lanes)),
                   np.empty((n_lin, lanes)), np.empty(n_lin), np.empty(n_lin), loss, hits, counts)
    return loss, hits, counts


@numba.njit(cache=True, nogil=True, fastmath=_LANE_FLAGS, _nrt=False)
def _evaluate_rows(indptr, indices, values, y, w, binary, n_lin, d, has_bias, z, dz, zl, dzl, loss, hits, counts):
    """The loop of :func:`_evaluate_lanes` over its scratch arrays (``z``, ``dz`` [C, L], ``zl``,
    ``dzl`` [C]), adding into ``loss``, ``hits`` and ``counts``; compiled without reference
    counting, as :func:`_one_step_clients`."""
    lanes = z.shape[1]
    for r in range(len(y)):
        start = indptr[r]
        _logits_lanes(z, w, indices, values, start, indptr[r + 1] - start, n_lin, d, has_bias, lanes)
        lab = y[r]
        _grads_lanes(z, lab, binary, n_lin, 1.0, dz, loss, True, zl, dzl)
        counts[lab] += 1.0
        hl = hits[lab]
        for ln in range(lanes):
            if binary:  # logits [0, z]: class 1 where z > 0 (the first of equal logits wins, as argmax)
                pred = 1 if z[0, ln] > 0.0 else 0
            else:
                pred = 0
                for cl in range(1, n_lin):
                    if z[cl, ln] > z[pred, ln]:
                        pred = cl
            hl[ln] += 1.0 if pred == lab else 0.0


# ----------------------------------------------------------------------------------------------
# the engine's side


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


class LinearSteps:
    """The fast path of one vectorized engine: the model's kind and the training inputs as rows.

    Build it with :meth:`build` (None when the model or device does not qualify); :meth:`run`
    trains a chunk of clients for all the steps of its round, or returns None when the chunk does
    not qualify (its algorithm's step is not affine, the state holds more than sequences), and the
    engine then runs the generic path.
    """

    def __init__(self, kind: str, x_all: torch.Tensor):
        self.kind = kind
        self._x_all = x_all
        self._rows = None  # ("sparse", indptr, indices, values) or ("dense", x), on first use
        self._round_rows = None  # (indptr, indices, values, max_nnz) for whole rounds, on first use
        self._forms: dict = {}
        self._pool: ThreadPoolExecutor | None = None  # the threads of :meth:`rounds`, on first use
        self._eval_rows: dict = {}  # id(x) -> (x, its CSR rows or None, labels): :meth:`evaluate`

    @classmethod
    def build(cls, model, grad_fn, x_all: torch.Tensor) -> LinearSteps | None:
        """The fast path for ``model`` trained with ``grad_fn`` on ``x_all``, or None: the model is
        not one of :data:`LINEAR_MODELS`, ``grad_fn`` is not its cross-entropy gradient
        (:func:`fedbench.models.make_grad_fn` marks it), or the inputs are not floating-point CPU tensors."""
        apply = getattr(grad_fn, "model_apply", None)
        kind = LINEAR_MODELS.get(apply)
        if kind is None or model.apply is not apply or x_all.device.type != "cpu" or not x_all.is_floating_point():
            return None
        return cls(kind, x_all)

    def rows(self):
        if self._rows is None:
            x = self._x_all.detach().reshape(len(self._x_all), -1).numpy()
            csr = sparse_rows(x)
            self._rows = (("dense", np.ascontiguousarray(x)) if csr is None
                          else ("sparse", *csr, int(np.diff(csr[0]).max(initial=0))))
        return self._rows

    def round_rows(self):
        """The training inputs as CSR rows for the whole-round kernels (indptr, indices, values,
        the most non-zeros of a row): :meth:`rows`' sparse rows, or its dense rows through
        :func:`dense_rows` (their indices cost N·D·2 bytes, made on first use)."""
        if self._round_rows is None:
            rows = self.rows()
            self._round_rows = rows[1:] if rows[0] == "sparse" else (*dense_rows(rows[1]), rows[1].shape[1])
        return self._round_rows

    def form(self, algo, keys: list[str], names: list[str], hp: dict):
        """:func:`step_form` cached in this path's forms."""
        return step_form(self._forms, algo, keys, names, hp)

    def run(self, algo, state: dict, hps: list[dict], coef_of: np.ndarray, idx: torch.Tensor,
            y: torch.Tensor) -> tuple[dict, np.ndarray] | None:
        """All S steps of a chunk of G clients, or None when the chunk does not qualify.

        Args:
            algo: the algorithm module.
            state: the chunk's stacked step state ``[G, ...]`` after ``client_init``.
            hps: the hyperparameters of the chunk's cells (Python numbers).
            coef_of: [G] int, member j's cell's position in ``hps``.
            idx: [S, G, B] rows of the training inputs; y: [S, G, B] their labels (no padding).

        Returns:
            (the step state after the S steps, [G] float64 sum of the S steps' losses).
        """
        keys = sequence_keys(state)
        if keys is None:
            return None
        params = state["params"]
        names = ["weight"] if self.kind == "binary" else ["weight", "bias"]
        if set(params) != set(names):
            return None
        weight = params["weight"]
        g, dtype = weight.shape[0], weight.dtype
        d = weight.shape[-1]
        n_lin = 1 if self.kind == "binary" else weight.shape[1]
        forms = [self.form(algo, keys, names, hp) for hp in hps]
        if any(f is None for f in forms):
            return None
        q, a, c = (np.ascontiguousarray(np.stack([f[i] for f in forms])) for i in range(3))
        n, width = len(keys), n_lin * d + (0 if self.kind == "binary" else n_lin)
        flat = torch.empty((g, n, width), dtype=dtype)
        for i, k in enumerate(keys):
            flat[:, i, : n_lin * d] = state[k]["weight"].reshape(g, n_lin * d)
            if self.kind != "binary":
                flat[:, i, n_lin * d:] = state[k]["bias"]
        loss_sum = np.zeros(g)
        last = np.zeros(g)
        idx_np = np.ascontiguousarray(idx.numpy().transpose(1, 0, 2))  # [G, S, B]: a client's rows together
        lab = np.ascontiguousarray(y.numpy().transpose(1, 0, 2))
        coef_of = np.ascontiguousarray(coef_of, dtype=np.int64)
        binary, has_bias = self.kind == "binary", self.kind != "binary"
        rows = self.rows()
        threads = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS, g // MIN_CLIENTS_PER_THREAD))
        state_np = flat.numpy()
        if threads > 1:  # the clients split into one contiguous range per thread (torch's thread count)
            numba.set_num_threads(threads)
            bounds = np.linspace(0, g, threads + 1).astype(np.int64)
            if rows[0] == "sparse":
                _run_sparse_threads(state_np, *rows[1:], idx_np, lab, coef_of, q, a, c, binary, n_lin, d, has_bias,
                                    loss_sum, last, bounds)
            else:
                _run_dense_threads(state_np, rows[1], idx_np, lab, coef_of, q, a, c, binary, n_lin, d, has_bias,
                                   loss_sum, last, bounds)
        elif rows[0] == "sparse":
            _run_sparse(state_np, *rows[1:], idx_np, lab, coef_of, q, a, c, binary, n_lin, d, has_bias, loss_sum,
                        last, 0, g)
        else:
            _run_dense(state_np, rows[1], idx_np, lab, coef_of, q, a, c, binary, n_lin, d, has_bias, loss_sum, last,
                       0, g)
        new = dict(state)
        for i, k in enumerate(keys):
            leaf = {"weight": flat[:, i, : n_lin * d].reshape(weight.shape)}
            if self.kind != "binary":
                leaf["bias"] = flat[:, i, n_lin * d:]
            new[k] = leaf
        new["steps"] = state["steps"] + idx.shape[0]
        new["loss"] = torch.from_numpy(last).to(dtype)
        return new, loss_sum

    def _threaded_rounds(self, threads: int, args: tuple, t0: int, t1: int, nonzeros: np.ndarray,
                         diverged: np.ndarray) -> int:
        """:func:`_run_rounds` with each round's work items split over ``threads`` threads (the
        compiled parts release the GIL): contiguous ranges of items with about equal clients; the
        items' sums and their order in the reduction are those of one thread, so are the results."""
        (server, indptr, indices, values, max_nnz, y_all, row_table, slot, sizes, key_seed, key_id, purpose,
         item_group, item_lo, item_hi, weight, q, af, c, bf, cmf, dmf, emf, fmf, cc, k_steps, b_size, binary, n_lin, d,
         has_bias, mode) = args
        n_items = len(item_group)
        seg_steps = _segment_steps(k_steps, b_size, q.shape[1])
        (part, item_nnz, item_ok, item_w, thresholds, e_shared, d_shared, s0, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw,
         part_w) = _round_buffers(n_items, server, q, af, c, cmf, cc, sizes, mode, k_steps, b_size, seg_steps)
        done = np.concatenate([[0], np.cumsum(item_hi - item_lo)])
        cuts = np.searchsorted(done, np.linspace(0, done[-1], threads + 1)[1:-1])
        ranges = list(zip([0, *cuts], [*cuts, n_items]))
        if self._pool is None or self._pool._max_workers != threads - 1:
            self._pool = ThreadPoolExecutor(threads - 1)

        def items(i0, i1, t):
            _round_items(i0, i1, t, indptr, indices, values, max_nnz, y_all, row_table, slot, sizes, thresholds,
                         key_seed, key_id, purpose, item_group, item_lo, item_hi, weight, cc, k_steps, b_size, binary,
                         n_lin, d, has_bias, mode, e_shared, p0, v, sx, hqx, mc, ac, cs, pw, qpw, cpw, part, part_w,
                         item_nnz, item_ok, item_w)

        last = t0 - 1
        for t in range(t0, t1 + 1):
            _round_shared(server, q, bf, cmf, dmf, pw, qpw, seg_steps, s0, p0, v, sx, e_shared, d_shared)
            futures = [self._pool.submit(items, i0, i1, t) for i0, i1 in ranges[1:]]
            items(*ranges[0], t)
            for f in futures:
                f.result()
            last = t
            if _round_reduce(server, item_group, emf, fmf, cc, mode, e_shared, part, part_w, item_nnz, item_ok,
                             item_w, nonzeros, diverged):
                break
        return last

    def evaluate(self, params: list[dict], x: torch.Tensor, y: torch.Tensor) -> list[tuple] | None:
        """:func:`fedbench.engine.rounds.evaluate.evaluate` (with ``worst_class``) of several models of this
        kind on the same rows in one pass (:func:`_evaluate_lanes`): per model (mean cross-entropy
        per sample, accuracy, worst-class accuracy), each the model's own numbers whatever the
        others (to float rounding the generic evaluation's: another summation order). None where
        it does not apply: not float64. The rows of ``x`` are kept per tensor as CSR
        (:func:`csr_rows`: dense rows cost N·D·2 bytes of indices beside them); the training
        inputs' are those the whole rounds read (:meth:`round_rows`), not a second copy.

        Args:
            params: per model its parameters (``weight``, and ``bias`` for ``logreg``).
            x: [N, ...] the rows (CPU); y: [N] int64 labels (0/1 for ``binary_logreg``, < C for ``logreg``).
        """
        if x.dtype != torch.float64 or any(p["weight"].dtype != torch.float64 for p in params) or not len(params):
            return None
        if len(x) == 0:  # an empty split (a dataset without a test split): evaluate()'s NaNs
            return [(float("nan"),) * 3 for _ in params]
        hit = self._eval_rows.get(id(x))
        if hit is None or hit[0] is not x:
            csr = (self.round_rows()[:3] if x is self._x_all
                   else csr_rows(x.detach().reshape(len(x), -1).numpy()))
            hit = self._eval_rows[id(x)] = (x, csr, y.numpy().astype(np.int64))
        csr, labels = hit[1], hit[2]
        n = len(labels)
        binary = self.kind == "binary"
        weight = params[0]["weight"]
        n_lin, d = (1, weight.shape[-1]) if binary else (weight.shape[0], weight.shape[-1])
        width = n_lin * d + (0 if binary else n_lin)
        w = np.empty((width, len(params)))  # coordinate-major, the models side by side
        for ln, p in enumerate(params):
            w[: n_lin * d, ln] = p["weight"].detach().reshape(-1).numpy()
            if not binary:
                w[n_lin * d:, ln] = p["bias"].detach().numpy()
        loss, hits, counts = _evaluate_lanes(*csr, labels, w.reshape(-1), binary, n_lin, d, not binary,
                                             2 if binary else n_lin)
        present = counts > 0
        return [(float(loss[ln] / n), float(hits[:, ln].sum() / n), float((hits[present, ln] / counts[present]).min()))
                for ln in range(len(params))]

    def round_form(self, algo, server_keys: list[str], names: list[str], hp: dict):
        """:func:`cell_forms` cached in this path's forms."""
        return cell_forms(self._forms, algo, server_keys, names, hp)

    def rounds(self, algo, servers: list[dict], hps: list[dict], t0: int, t1: int, y_all: np.ndarray,
               batch_size: int, key_seed: np.ndarray, key_id: np.ndarray, row_table: np.ndarray, slot: np.ndarray,
               sizes: np.ndarray, bounds: list[tuple[int, int]]) -> tuple[int, list[dict]] | None:
        """Rounds t0..t1 of C cells with full participation, every client drawing its K·B rows
        with replacement, in one compiled call (:func:`_run_rounds`); None when they do not
        qualify (inputs not float64, a rule not of :func:`round_form`'s form, cells
        with different sequences).

        Args:
            algo: the algorithm module.
            servers, hps: per cell, its server state and its hyperparameters (the same every round).
            t0, t1: the first and last round (1-based).
            y_all: [N] int64, the labels of the training inputs' rows.
            batch_size: B.
            key_seed, key_id: per engine-wide client, its randomness key (seed, id).
            row_table, slot, sizes: client g's rows are ``row_table[slot[g], :sizes[g]]``.
            bounds: per cell, its clients ``lo..hi−1`` (engine-wide ids; every one participates).

        Returns:
            (the last round run: t1, or the round in which a cell diverged; per cell ``{"server":
            its new server state, "uplink_floats", "uplink_nonzeros": the counts of the rounds run,
            "diverged": bool}``).
        """
        names = ["weight"] if self.kind == "binary" else ["weight", "bias"]
        server_keys = sequence_keys(servers[0])
        if server_keys is None or any(sequence_keys(s) != server_keys for s in servers):
            return None
        if set(servers[0]["params"]) != set(names):
            return None
        weight = servers[0]["params"]["weight"]
        if weight.dtype != torch.float64 or self._x_all.dtype != torch.float64:
            return None
        forms = [self.round_form(algo, server_keys, names, hp) for hp in hps]
        if any(f is None for f in forms) or len({(tuple(f[0]), tuple(f[1])) for f in forms}) != 1:
            return None
        k_steps = int(hps[0]["local_steps"])
        if any(int(hp["local_steps"]) != k_steps for hp in hps):
            return None
        d = weight.shape[-1]
        n_lin = 1 if self.kind == "binary" else weight.shape[0]
        width = n_lin * d + (0 if self.kind == "binary" else n_lin)
        lanes = lane_groups(bounds, key_seed, key_id, row_table, slot, sizes)
        n_lanes = max(len(g) for g in lanes)
        # Per group, its cells as lanes, the last one repeated up to n_lanes (its copies' numbers are dropped).
        lane_cell = np.array([g + [g[-1]] * (n_lanes - len(g)) for g in lanes], dtype=np.int64)  # [G, L]
        server = np.empty((len(lanes), len(server_keys), width, n_lanes))  # [G, n_s, P, L], flat below
        for gi in range(len(lanes)):
            for ln in range(n_lanes):
                srv = servers[lane_cell[gi, ln]]
                for i, k in enumerate(server_keys):
                    server[gi, i, : n_lin * d, ln] = srv[k]["weight"].detach().reshape(-1).numpy()
                    if self.kind != "binary":
                        server[gi, i, n_lin * d:, ln] = srv[k]["bias"].detach().numpy()
        server = server.reshape(len(lanes), len(server_keys), width * n_lanes)
        steps = [f[2] for f in forms]  # (q, A, c) per cell, then B, C, D, E, F per cell
        per_cell = [np.stack(m) for m in (*zip(*steps), *zip(*(f[3:] for f in forms)))]
        per_cell.append(np.einsum("cen,cn->ce", per_cell[4], per_cell[2]))  # C c: the one-step path's coefficients
        # [C, ...] → [G, ..., L]: a group's lanes last
        q, a, c, bm, cm, dm, em, fm, cc = (np.moveaxis(m[lane_cell], 1, -1) for m in per_cell)
        q, c, cc = (np.ascontiguousarray(m) for m in (q, c, cc))
        # the maps of the dense passes with each lane's coefficient repeated at every coordinate: [G, r, c, P·L]
        af, bf, cmf, dmf, emf, fmf = (np.ascontiguousarray(np.tile(m, width)) for m in (a, bm, cm, dm, em, fm))
        weight_of = np.zeros(len(key_seed))
        item_group, item_lo, item_hi = [], [], []
        for gi, group in enumerate(lanes):
            lo, hi = bounds[group[0]]
            weight_of[lo:hi] = _mean_weights(torch.as_tensor(sizes[lo:hi], dtype=torch.float64), hi - lo).numpy()
            for b0 in range(lo, hi, ROUND_BLOCK):
                item_group.append(gi)
                item_lo.append(b0)
                item_hi.append(min(hi, b0 + ROUND_BLOCK))
        nonzeros = np.zeros((len(lanes), n_lanes), dtype=np.int64)
        diverged = np.zeros((len(lanes), n_lanes), dtype=np.bool_)
        args = (server, *self.round_rows(), y_all, row_table, slot, np.ascontiguousarray(sizes, dtype=np.int64),
                key_seed, key_id, _purpose_id("batches"), np.array(item_group, dtype=np.int64),
                np.array(item_lo, dtype=np.int64), np.array(item_hi, dtype=np.int64), weight_of, q, af, c, bf, cmf,
                dmf, emf, fmf, cc, k_steps, int(batch_size), self.kind == "binary", n_lin, d, self.kind != "binary",
                round_mode(k_steps, int(batch_size), *per_cell[:3]))
        draws = sum(bounds[g[0]][1] - bounds[g[0]][0] for g in lanes) * n_lanes
        threads = min(torch.get_num_threads(), draws // MIN_ROUND_CLIENTS_PER_THREAD, len(item_group))
        if threads > 1:
            last = self._threaded_rounds(threads, args, int(t0), int(t1), nonzeros, diverged)
        else:
            last = _run_rounds(*args, int(t0), int(t1), nonzeros, diverged)
        out = []
        ran = last - t0 + 1
        at = {ci: (gi, ln) for gi, group in enumerate(lanes) for ln, ci in enumerate(group)}
        for ci, (lo, hi) in enumerate(bounds):
            gi, ln = at[ci]
            new = dict(servers[ci])
            for i, k in enumerate(server_keys):
                arr = torch.from_numpy(server[gi, i, ln::n_lanes].copy())
                leaf = {"weight": arr[: n_lin * d].reshape(weight.shape)}
                if self.kind != "binary":
                    leaf["bias"] = arr[n_lin * d:]
                new[k] = leaf
            out.append({"server": new, "uplink_floats": ran * (hi - lo) * len(forms[ci][1]) * width,
                        "uplink_nonzeros": int(nonzeros[gi, ln]), "diverged": bool(diverged[gi, ln])})
        return last, out
