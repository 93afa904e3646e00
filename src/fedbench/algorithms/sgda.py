"""Federated stochastic gradient descent–ascent: the shared core of Local SGDA(+) and Fed-Norm-SGDA(+).

Sharma, Panda & Joshi, "Federated Minimax Optimization With Client Heterogeneity", TMLR 2023:
problem (1) min_x max_{y∈Y} Σ_i p_i f_i(x, y), Algorithm 1 (Fed-Norm-SGDA, Fed-Norm-SGDA+), its
generalized update (eq. 2), the aggregation (eq. 3), and the baselines of §6 (Local SGDA, Deng &
Mahdavi 2021; Local SGDA+; both with local momentum, Sharma et al. 2022). The four modules
:mod:`.local_sgda`, :mod:`.local_sgda_plus`, :mod:`.fed_norm_sgda`, :mod:`.fed_norm_sgda_plus` are
thin wrappers around the functions here.

Two players in one parameter tree. A minimax cell's model (:mod:`fedbench.models.minimax`) holds
both players in its parameter dict: x, the model (descent), and y, every leaf whose name starts
with :data:`DUAL_PREFIX` (``"y."``; ascent). Its ``grad_fn(θ, inputs, labels)`` returns the
gradient of f(x, y; batch) with respect to both. So the engines train a minimax cell unchanged:
the vectorized engine stacks and pads its step states like any other, and communication is
counted from the messages as sent.

Local steps (client i, round t, starting from (x, y) = (x^t, y^t), ξ the minibatch):

    g_x = ∇_x f_i(x, y; ξ)
    g_y = ∇_y f_i(x, y; ξ)      (plain)   or   ∇_y f_i(x̂, y; ξ)   ("+": the snapshot x̂, same ξ)
    v_x ← ρ v_x + clip(g_x) + λ x,    x ← x − η_x v_x                     (descent)
    v_y ← ρ v_y + g_y,                y ← Π_Y(y + η_y v_y)                (ascent, projected)

simultaneous (both gradients at the same (x, y)); η_x = ``local.lr`` (its schedule), η_y =
``y_lr_scale`` · η_x (the paper's Tables 3-4: η_y^c/η_x^c = 0.02/0.016 = 1.25); ρ = ``momentum``
(heavy ball, ``torch.optim.SGD`` form, buffers 0 at the start of each round: the paper's
Appendix A.1 a_i; ρ = 0 is plain SGDA); clipping (``local.clip_norm``) and weight decay
(``local.weight_decay``) act on x only. ‖a_i‖₁ is accumulated as in :mod:`.fednova`.

Aggregation over the sampled set C (|C| = P) of n clients, p_i the client weights
(``p``: ``samples`` p_i = n_i/N, the paper's example; ``uniform`` p_i = 1/n):

- ``estimator: unbiased`` (default; eq. 3): w̃_i = p_i · n / P, an unbiased estimate of Σ_{all} p_i ·
  under uniform sampling without replacement (the config's ``sampling.scheme: uniform``; under
  Bernoulli sampling P varies and this is a ratio estimator);
- ``estimator: sampled``: w̃_i = p_i / Σ_{j∈C} p_j (FedAvg's renormalization).

Local SGDA (naive): θ^{t+1} = θ^t + Σ_{i∈C} w̃_i (θ_i − θ^t) (with P = n: Σ p_i θ_i, iterate averaging).
Fed-Norm-SGDA (normalized): d_i = (θ_i − θ^t)/‖a_i‖₁ (the client lr folded in, as FedNova's code;
γ = ``server_lr`` = 1 as in the paper's Tables 3-4), θ^{t+1} = θ^t + γ τ_eff Σ_{i∈C} w̃_i d_i, with
``tau_eff: sampled`` (default) τ_eff = Σ_{i∈C} (p_i/Σ_{j∈C} p_j) ‖a_i‖₁ (as :mod:`.fednova`), or
``tau_eff: unbiased`` τ_eff = Σ_{i∈C} w̃_i ‖a_i‖₁ (an estimate of Theorem 1's Σ_{all} p_i ‖a_i‖₁).
After the server step y is projected onto Y again. With equal τ_i, P = n and γ = 1, Fed-Norm-SGDA
is Local SGDA exactly (tested).

The snapshot of the "+" variants (Algorithm 1, line 4): x̂ = x^0 at the start; after round t
(1-based) x̂ ← x^t when t ≡ 0 (mod S), S = ``snapshot_period``, so round t trains with x̂ = x^{s}
for the last s ≤ t − 1 with s ≡ 0 (mod S). x̂ is broadcast every round (counted as downlink: a
client sampled after a refresh needs it), d_x floats.

The set Y (``projection``): ``none`` (R^{d_y}, default), ``ball`` {‖y‖₂ ≤ ``radius``} over all y
leaves together (robust training, eq. 7: radius 1), ``simplex`` {y ≥ 0, Σ y = 1} for each y leaf
(fair classification, eq. 8). The paper leaves the projection unstated (its analysis assumes a
large Y); we project after every local step and after the server step.

Per-round metrics (the server state's ``metrics``, metrics.parquet columns): ``y_norm`` ‖y^t‖₂,
``x_step_norm`` ‖x^t − x^{t−1}‖₂, ``y_step_norm`` ‖y^t − y^{t−1}‖₂, ``tau_eff`` (Fed-Norm only).

Other choices: the server needs every client's n_i (N and n for w̃_i): ``server_init`` takes
``client_weights`` (all n_i; the engine passes them); a client with no step sends zeros and
‖a_i‖₁ = 0 (Fed-Norm) or Δ = 0 (Local SGDA).
"""

from __future__ import annotations

import torch

from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import clip_by_global_norm
from fedbench.models.minimax import DUAL_PREFIX
from fedbench.tree import Tree, tree_norm, tree_sub, tree_zeros_like

__all__ = ["DUAL_PREFIX", "HPARAMS", "BOUNDS", "NORM_HPARAMS", "NORM_BOUNDS", "PLUS_HPARAMS", "PLUS_BOUNDS",
           "aggregation_weights", "broadcast", "check_cell", "client_final_naive", "client_final_normalized",
           "client_init", "client_step", "finish_server", "in_set", "project", "server_init", "server_update_naive",
           "server_update_normalized", "split", "tau_eff"]
PROJECTIONS = ("none", "ball", "simplex")
P_WEIGHTS = ("samples", "uniform")
ESTIMATORS = ("unbiased", "sampled")
TAU_EFF = ("sampled", "unbiased")

HPARAMS: dict = {"y_lr_scale": 1.0, "momentum": 0.0, "projection": "none", "radius": 1.0,
                 "p": "samples", "estimator": "unbiased"}
BOUNDS: dict[str, str] = {"y_lr_scale": "[0, inf)", "momentum": "[0, 1)", "radius": "(0, inf)"}
#: Added by the Fed-Norm modules.
NORM_HPARAMS: dict = {"server_lr": 1.0, "tau_eff": "sampled"}
NORM_BOUNDS: dict[str, str] = {"server_lr": "(0, inf)"}
#: Added by the "+" modules.
PLUS_HPARAMS: dict = {"snapshot_period": 1}
PLUS_BOUNDS: dict[str, str] = {"snapshot_period": "[1, inf)"}


# -- the two players ------------------------------------------------------------------------------


def split(tree: Tree) -> tuple[Tree, Tree]:
    """(x, y): the leaves of the descent player and those named ``y.*`` (the ascent player)."""
    return ({k: v for k, v in tree.items() if not k.startswith(DUAL_PREFIX)},
            {k: v for k, v in tree.items() if k.startswith(DUAL_PREFIX)})


def project(y: Tree, hparams: dict) -> Tree:
    """Π_Y(y) for ``projection`` (module docstring); pure, branch-free on values (vmap-safe).

    ``ball``: y · min(1, r/‖y‖₂) over all y leaves. ``simplex``: each leaf, flattened, projected onto
    the probability simplex (the sort-based projection of Held, Wolfe & Crowder 1974 / Duchi et al.
    2008: w = max(v − θ, 0), θ = (Σ_{j≤ρ} u_j − 1)/ρ, u sorted descending, ρ the largest j with
    u_j > (Σ_{l≤j} u_l − 1)/j).

    Raises:
        ValueError: an unknown projection.
    """
    kind = hparam(hparams, HPARAMS, "projection")
    if kind == "none" or not y:
        return y
    if kind == "ball":
        radius = number(hparam(hparams, HPARAMS, "radius"))
        scale = torch.clamp(radius / tree_norm(y), max=1.0)
        return {k: v * scale.to(v.dtype) for k, v in y.items()}
    if kind == "simplex":
        return {k: _simplex(v.reshape(-1)).reshape(v.shape) for k, v in y.items()}
    raise ValueError(f"projection must be one of {', '.join(PROJECTIONS)} (got {kind!r})")


def _simplex(v: torch.Tensor) -> torch.Tensor:
    u = torch.sort(v, descending=True).values
    css = torch.cumsum(u, 0) - 1.0
    j = torch.arange(1, v.shape[0] + 1, dtype=v.dtype, device=v.device)
    rho = (u - css / j > 0).sum()  # ≥ 1 always (j = 1: u_1 − (u_1 − 1) = 1 > 0)
    theta = torch.gather(css, 0, (rho - 1).reshape(1)) / rho.to(v.dtype)
    return torch.clamp(v - theta, min=0.0)


def in_set(y: Tree, hparams: dict, atol: float = 1e-12) -> bool:
    """Whether y ∈ Y up to ``atol`` (tests and checks; not vmap-safe)."""
    kind = hparam(hparams, HPARAMS, "projection")
    if kind == "ball":
        return float(tree_norm(y)) <= float(hparam(hparams, HPARAMS, "radius")) + atol
    if kind == "simplex":
        return all(float(v.min()) >= -atol and abs(float(v.sum()) - 1.0) <= atol * max(1, v.numel())
                   for v in y.values())
    return True


def check_cell(hparams: dict) -> None:
    """The string hyperparameters are known values (the config check calls this before any job).

    Raises:
        ValueError: an unknown ``projection``, ``p``, ``estimator`` or ``tau_eff``.
    """
    defaults = {**HPARAMS, **NORM_HPARAMS}
    for key, allowed in (("projection", PROJECTIONS), ("p", P_WEIGHTS), ("estimator", ESTIMATORS),
                         ("tau_eff", TAU_EFF)):
        value = hparams.get(key, defaults[key])
        if value not in allowed:
            raise ValueError(f"{key} must be one of {', '.join(allowed)} (got {value!r})")


# -- server ---------------------------------------------------------------------------------------


def server_init(params: Tree, hparams: dict, num_clients: int, client_weights=None, plus: bool = False) -> dict:
    """ServerState ``{"params": θ⁰ = (x⁰, Π_Y(y⁰)), "n_total": N = Σ n_i, "num_clients": n, "metrics": ...}``
    plus, for the "+" variants, ``"snapshot"`` x̂ = x⁰ and ``"round"`` (0-d int64, rounds done).

    Args:
        params: θ⁰, both players (``y.*`` leaves are y).
        num_clients: n.
        client_weights: (n,) every client's n_i (the engine passes them). None: equal weights;
            then ``p: samples`` with ``estimator: unbiased`` cannot be formed.

    Raises:
        ValueError: no ``y.*`` leaf, ``client_weights`` of the wrong length, or
            ``p: samples`` + ``estimator: unbiased`` without ``client_weights``.
    """
    check_cell(hparams)
    x, y = split(params)
    if not y:
        raise ValueError(f"a minimax algorithm needs the ascent player: parameters named {DUAL_PREFIX!r}* "
                         f"(a minimax model, fedbench.models.minimax); got only {sorted(params)}")
    if client_weights is None:
        if hparam(hparams, HPARAMS, "p") == "samples" and hparam(hparams, HPARAMS, "estimator") == "unbiased":
            raise ValueError("p: samples with estimator: unbiased needs every client's n_i (client_weights)")
        n_i = torch.ones(int(num_clients), dtype=torch.float64)
    else:
        n_i = torch.as_tensor(client_weights, dtype=torch.float64).cpu()
        if n_i.shape != (int(num_clients),):
            raise ValueError(f"client_weights: {tuple(n_i.shape)} values for {num_clients} clients")
    params = {**x, **project(y, hparams)}
    zero = torch.zeros((), dtype=torch.float64)
    metrics = {"y_norm": tree_norm(split(params)[1]).detach().to(torch.float64).cpu(), "x_step_norm": zero,
               "y_step_norm": zero}
    state = {"params": params, "n_total": n_i.sum(), "num_clients": int(num_clients), "metrics": metrics}
    if plus:
        state["snapshot"] = x
        state["round"] = torch.zeros((), dtype=torch.int64)
    return state


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": (x^t, y^t)}``, plus ``"snapshot"`` x̂ for the "+" variants."""
    out = {"params": server_state["params"]}
    if "snapshot" in server_state:
        out["snapshot"] = server_state["snapshot"]
    return out


def aggregation_weights(server_state: dict, sampled_weights, hparams: dict) -> torch.Tensor:
    """(P,) w̃_i of the round's clients (module docstring), float64 on the CPU.

    ``sampled_weights``: (P,) the sampled clients' n_i (what the engine passes to ``server_update``);
    the clients' p_i are found from them: p_i ∝ n_i (``samples``) or 1/n (``uniform``).

    Raises:
        ValueError: no clients, or a non-positive total weight.
    """
    n_i = torch.as_tensor(sampled_weights, dtype=torch.float64).cpu()
    if n_i.numel() == 0:
        raise ValueError("sgda: no messages")
    if hparam(hparams, HPARAMS, "p") == "samples":
        p_i = n_i / server_state["n_total"]
    else:
        p_i = torch.full_like(n_i, 1.0 / server_state["num_clients"])
    if float(p_i.sum()) <= 0:
        raise ValueError(f"sgda: the sampled clients' weights sum to {float(p_i.sum())}")
    if hparam(hparams, HPARAMS, "estimator") == "unbiased":
        return p_i * (server_state["num_clients"] / n_i.numel())
    return p_i / p_i.sum()


def finish_server(server_state: dict, new_params: Tree, hparams: dict, extra_metrics: dict | None = None) -> dict:
    """The new server state: y projected onto Y, the metrics, and the snapshot refreshed."""
    x_new, y_new = split(new_params)
    y_new = project(y_new, hparams)
    x_old, y_old = split(server_state["params"])
    metric = lambda v: v.detach().to(torch.float64).cpu()  # noqa: E731
    metrics = {"y_norm": metric(tree_norm(y_new)), "x_step_norm": metric(tree_norm(tree_sub(x_new, x_old))),
               "y_step_norm": metric(tree_norm(tree_sub(y_new, y_old))), **(extra_metrics or {})}
    out = {**server_state, "params": {**x_new, **y_new}, "metrics": metrics}
    if "snapshot" in server_state:
        t = int(server_state["round"]) + 1
        period = int(hparam(hparams, PLUS_HPARAMS, "snapshot_period"))
        out["round"] = torch.tensor(t, dtype=torch.int64)
        if t % period == 0:
            out["snapshot"] = x_new
    return out


# -- client ---------------------------------------------------------------------------------------


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """Step state: θ_i = θ^t, momentum buffers 0 (both players), ``q`` = ``a_norm`` = 0 (0-d
    float64), ``steps`` 0, ``loss`` NaN, and the snapshot x̂ ("+"). Clients are stateless."""
    params = server_state["params"]
    first = next(iter(params.values()))
    zero = torch.zeros((), dtype=torch.float64, device=first.device)
    state = {"params": params, "steps": 0, "loss": torch.full((), float("nan"), dtype=first.dtype, device=first.device),
             "momentum_buffer": tree_zeros_like(params), "q": zero, "a_norm": zero}
    if "snapshot" in server_state:
        state["snapshot"] = server_state["snapshot"]
    return state


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """One simultaneous SGDA step (module docstring), y projected; with ``"snapshot"`` in the state
    the y-gradient is taken at (x̂, y) on the same minibatch (a second gradient call).
    Branch-free on tensor values (vmap-safe); hyperparameters may be 0-d tensors."""
    rho = number(hparam(hparams, HPARAMS, "momentum"))
    lr = hparams["lr"]
    lr_y = lr * number(hparam(hparams, HPARAMS, "y_lr_scale"))
    inputs, labels = batch
    params = step_state["params"]
    grads, loss = grad_fn(params, inputs, labels)
    g_x, g_y = split(grads)
    x, y = split(params)
    if "snapshot" in step_state:
        g_hat, _ = grad_fn({**step_state["snapshot"], **y}, inputs, labels)
        g_y = split(g_hat)[1]
    clip_norm = hparams.get("clip_norm")
    if clip_norm is not None:
        g_x = clip_by_global_norm(g_x, clip_norm if torch.is_tensor(clip_norm) else float(clip_norm))
    weight_decay = hparams.get("weight_decay", 0.0)
    if torch.is_tensor(weight_decay) or weight_decay:
        g_x = {k: g_x[k] + weight_decay * x[k] for k in g_x}
    buf = step_state["momentum_buffer"]
    v = {k: rho * buf[k] + d for k, d in {**g_x, **g_y}.items()}
    v_x, v_y = split(v)
    new_x = {k: x[k] - lr * v_x[k] for k in x}
    new_y = project({k: y[k] + lr_y * v_y[k] for k in y}, hparams)
    q = step_state["q"] * rho + 1.0
    return {**step_state, "params": {**new_x, **new_y}, "steps": step_state["steps"] + 1, "loss": loss,
            "momentum_buffer": v, "q": q, "a_norm": step_state["a_norm"] + q}


def client_final_naive(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Local SGDA's message ``{"delta": θ_i − θ^t}`` (both players; d floats); no client state."""
    return {"delta": tree_sub(step_state["params"], server_state["params"])}, None


def client_final_normalized(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Fed-Norm-SGDA's message ``{"normalized_update": d_i = (θ_i − θ^t)/‖a_i‖₁, "a_norm": ‖a_i‖₁}``
    (d + 1 floats). ‖a_i‖₁ is 0 (no step, d_i = 0) or ≥ 1, so dividing by max(‖a_i‖₁, 1) is exact."""
    a_norm = step_state["a_norm"]
    denom = torch.clamp(a_norm, min=1.0)
    update = tree_sub(step_state["params"], server_state["params"])
    return {"normalized_update": {k: v / denom.to(v.dtype) for k, v in update.items()}, "a_norm": a_norm}, None


def _weighted_sum(trees: list[Tree], w: torch.Tensor) -> Tree:
    out = {}
    for k in trees[0]:
        acc = None
        for t, wi in zip(trees, w):
            term = t[k] * wi.to(device=t[k].device, dtype=t[k].dtype)
            acc = term if acc is None else acc + term
        out[k] = acc
    return out


def server_update_naive(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """Local SGDA(+): θ^{t+1} = θ^t + Σ_{i∈C} w̃_i Δ_i, then y ← Π_Y(y)."""
    w = aggregation_weights(server_state, weights, hparams)
    step = _weighted_sum([m["delta"] for m in messages], w)
    theta = server_state["params"]
    return finish_server(server_state, {k: theta[k] + step[k] for k in theta}, hparams)


def tau_eff(server_state: dict, messages: list[dict], weights, hparams: dict) -> torch.Tensor:
    """τ_eff of the round (``tau_eff``: module docstring), 0-d float64."""
    a = torch.stack([torch.as_tensor(m["a_norm"]).detach().to(torch.float64).cpu() for m in messages])
    if hparam(hparams, NORM_HPARAMS, "tau_eff") == "unbiased":
        w = aggregation_weights(server_state, weights, hparams)
    else:
        w = aggregation_weights(server_state, weights, {**hparams, "estimator": "sampled"})
    return (w * a).sum()


def server_update_normalized(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """Fed-Norm-SGDA(+): θ^{t+1} = θ^t + γ τ_eff Σ_{i∈C} w̃_i d_i, then y ← Π_Y(y) (Algorithm 1, line 20)."""
    w = aggregation_weights(server_state, weights, hparams)
    tau = tau_eff(server_state, messages, weights, hparams)
    gamma = float(hparam(hparams, NORM_HPARAMS, "server_lr"))
    step = _weighted_sum([m["normalized_update"] for m in messages], w * (gamma * tau))
    theta = server_state["params"]
    return finish_server(server_state, {k: theta[k] + step[k] for k in theta}, hparams, {"tau_eff": tau})
