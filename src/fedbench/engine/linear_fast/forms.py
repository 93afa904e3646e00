"""The update rules of the fast path, read off the algorithm itself: the local step as an affine
map, and a round's server side as linear maps.

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

With full participation the server side is read the same way (:func:`round_form`): ``client_init``,
``client_final`` and ``server_update`` as linear maps of the server's and the step state's
sequences (:func:`_linear_probe`). :func:`step_form` and :func:`cell_forms` cache both per
hyperparameter values.
"""

from __future__ import annotations

import numpy as np
import torch

#: Relative tolerance of the affine-form check (float64 probes).
_CHECK_RTOL = 1e-12


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
