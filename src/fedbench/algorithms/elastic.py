"""Elastic Aggregation (Chen et al., "Elastic Aggregation for Federated Optimization", CVPR 2023;
supplement = summary-seed-000 §2.1-§2.5): the pieces shared by ``elastic_fedavg``,
``elastic_fedavgm`` and ``elastic_fedprox``. Not an algorithm itself.

Client side, parameter sensitivity Ω_k (reset to 0 every round), accumulated over the round's
minibatches from the element-wise magnitude of a gradient g:

    momentum (default):  Ω_k ← ρ Ω_k + (1 − ρ) |g|                   (no bias correction, as printed)
    average (Eq. 1):     Ω_k ← mean over the round's minibatches of |g|

The client uploads Ω_k beside its update Δ_k (3× FedAvg's per-round traffic, as the paper says).

Server side (:func:`elastic_delta`), with w_k = n_k / Σ_{j∈P_t} n_j:

    Ω = Σ_k w_k Ω_k;   Ω′ = max_i Ω^i (one scalar over all parameters of all layers)
    ζ^i = 1 + τ − Ω^i / Ω′  ∈ [τ, 1 + τ]                              (exactly τ at the argmax)
    Δ^i = ζ^i · Σ_k w_k Δ_k^i

then the base optimizer's server step on Δ. Parameters with ζ > 1 are "boosted"; the server
state keeps ``metrics["boosted_pct"]`` = 100 · #{i : ζ^i > 1} / n of the last round (a 0-d
float64 tensor; 0 before the first round).

Hyperparameters shared by the three modules (:data:`HPARAMS`): ``tau`` τ, ``rho`` ρ and
``sensitivity`` ∈ {"momentum", "average", "none"}. "none" is naive aggregation (ζ ≡ 1, no Ω sent):
exactly the base optimizer, the "naive" column of the paper's Table 1. τ = 0.5 and ρ = 0.95 are
FL-bench's defaults: the supplement gives no values (summary-seed-000 §6), so they are assumed.

Departures, and why:

- **Which gradient, on which data.** The paper takes g = ∇_θ ‖F(θ; x)‖²₂ (the squared norm of the
  model output, label-free) at the received global θ, on a held-out 10% subset B_k of the
  client's data drawn once. The algorithm protocol (``fedbench.algorithms``) hands a client only
  its training minibatches and ``grad_fn`` (the gradient of the mean cross-entropy), not the
  model's output function nor a held-out split. So Ω_k is accumulated from the gradient the local
  step already computes: g = ∇_θ CE(θ_k; b) on each training minibatch b of the round, along the
  local trajectory (the first one is at θ^{t−1}). This is the supervised-loss choice of FL-bench's
  ``elastic.py`` (summary-seed-000 §2.5 note 10) and costs nothing extra. For the paper's exact
  estimator the engines would need (a) a per-client held-out split B_k (10%, drawn once from the
  keyed RNG and removed from D_k; n_k then counts D_k \\ B_k), and (b) a protocol hook, e.g.
  ``client_sensitivity(server_state, batches_of_B_k, hparams, output_grad_fn)`` with
  ``output_grad_fn(params, x) = ∇_θ mean_x ‖F(θ; x)‖²₂``, run by both engines (vmapped in the
  vectorized one) before ``client_step``; :func:`accumulate` would be reused unchanged.
- Ω′ = 0 (every Ω^i = 0) is guarded: Ω/Ω′ is taken as 0, so ζ ≡ 1 + τ.
- ζ is applied to every entry of the parameter dict (models here have no buffers).
- Sign convention: Δ_k = θ_k − θ^{t−1} and the server adds it (the paper's θ − θ_k with a minus).
"""

from __future__ import annotations

import torch

from fedbench.tree import Tree, tree_weighted_mean, tree_zeros_like

HPARAMS: dict = {"tau": 0.5, "rho": 0.95, "sensitivity": "momentum"}
SENSITIVITIES = ("momentum", "average", "none")


def _hp(hparams: dict, key: str):
    return hparams.get(key, HPARAMS[key])


def sensitivity_mode(hparams: dict) -> str:
    """The ``sensitivity`` hyperparameter, checked.

    Raises:
        ValueError: not one of :data:`SENSITIVITIES`.
    """
    mode = _hp(hparams, "sensitivity")
    if mode not in SENSITIVITIES:
        raise ValueError(f"elastic aggregation: sensitivity must be one of {SENSITIVITIES} (got {mode!r})")
    return mode


def init_omega(step_state: dict, hparams: dict) -> dict:
    """``step_state`` with Ω_k = 0 added (nothing when the sensitivity is "none")."""
    if sensitivity_mode(hparams) == "none":
        return step_state
    return {**step_state, "omega": tree_zeros_like(step_state["params"])}


def accumulate(omega: Tree, grads: Tree, steps_before, hparams: dict) -> Tree:
    """Ω_k after one more minibatch gradient g: ρ Ω + (1 − ρ)|g| ("momentum") or the running mean
    Ω + (|g| − Ω)/(s + 1) with s the steps already taken ("average"). ``steps_before`` may be an
    int or a 0-d integer tensor (vectorized engine)."""
    mode = sensitivity_mode(hparams)
    if mode == "momentum":
        rho = float(_hp(hparams, "rho"))
        return {k: rho * omega[k] + (1.0 - rho) * grads[k].abs() for k in omega}
    count = steps_before + 1
    return {k: omega[k] + (grads[k].abs() - omega[k]) / count for k in omega}


def with_sensitivity(base_client_step):
    """``client_step`` of a base algorithm, also accumulating Ω_k from the gradient it computes."""

    def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
        if sensitivity_mode(hparams) == "none":
            return base_client_step(step_state, batch, hparams, grad_fn)
        seen = {}

        def capturing_grad_fn(params, x, y):
            grads, loss = grad_fn(params, x, y)
            seen.setdefault("grads", grads)  # the step's gradient of L_k at θ_k
            return grads, loss

        new_state = base_client_step(step_state, batch, hparams, capturing_grad_fn)
        omega = accumulate(step_state["omega"], seen["grads"], step_state["steps"], hparams)
        return {**new_state, "omega": omega}

    return client_step


def with_omega(base_client_final):
    """``client_final`` of a base algorithm, adding ``"omega": Ω_k`` to the message."""

    def client_final(server_state: dict, step_state: dict, hparams: dict):
        message, client_state = base_client_final(server_state, step_state, hparams)
        if sensitivity_mode(hparams) == "none":
            return message, client_state
        return {**message, "omega": step_state["omega"]}, client_state

    return client_final


def zeta(omega: Tree, tau: float) -> Tree:
    """ζ = 1 + τ − Ω/max(Ω), the max over every entry of every leaf; Ω/max taken as 0 if max = 0.

    Evaluated as τ + (1 − Ω/Ω′), so that ζ is exactly τ at the argmax (Ω′/Ω′ = 1 in floating point)
    and exactly 1 + τ where Ω = 0; (1 + τ) − 1 would miss τ by a rounding error.
    """
    peak = torch.stack([v.max() for v in omega.values()]).max()
    safe = torch.where(peak > 0, peak, torch.ones_like(peak))
    return {k: tau + (1.0 - v / safe) for k, v in omega.items()}


def boosted_pct(z: Tree) -> torch.Tensor:
    """100 · #{i : ζ^i > 1} / n as a 0-d float64 tensor."""
    boosted = sum(int((v > 1.0).sum()) for v in z.values())
    total = sum(v.numel() for v in z.values())
    return torch.tensor(100.0 * boosted / total, dtype=torch.float64)


def init_metrics() -> dict:
    """The server state's ``metrics`` entry before the first round."""
    return {"boosted_pct": torch.zeros((), dtype=torch.float64)}


def elastic_delta(messages: list[dict], weights, hparams: dict) -> tuple[Tree, dict]:
    """(Δ = ζ ⊙ Σ w_k Δ_k, metrics) for the round; plain Σ w_k Δ_k and ``init_metrics()`` when "none"."""
    delta = tree_weighted_mean([m["delta"] for m in messages], weights)
    if sensitivity_mode(hparams) == "none":
        return delta, init_metrics()
    omega = tree_weighted_mean([m["omega"] for m in messages], weights)
    z = zeta(omega, float(_hp(hparams, "tau")))
    return {k: z[k] * delta[k] for k in delta}, {"boosted_pct": boosted_pct(z)}
