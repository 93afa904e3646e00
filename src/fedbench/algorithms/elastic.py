"""Elastic Aggregation (Chen, Hu, Tan, Wei and Wu, "Elastic Aggregation for Federated Optimization",
CVPR 2023, and its supplement: Algorithms 1-2, eq. (1)): the pieces shared by ``elastic_fedavg``,
``elastic_fedavgm`` and ``elastic_fedprox``. Not an algorithm itself.

Client side, parameter sensitivity Ω_k, exactly the supplement's estimator (§2.1): a held-out
subset B_k of the client's data (a fraction ``sensitivity_fraction`` = 10 %, drawn once before
training and removed from D_k, so n_k counts D_k \\ B_k), and at the start of every round, at the
freshly received global θ^{t−1}, Ω_k ← 0 and for each minibatch x of B_k

    g = ∇_θ mean_{x_i ∈ x} ‖F(θ^{t−1}; x_i)‖²₂                     (F = the model's logits, label-free)
    momentum (default):  Ω_k ← ρ Ω_k + (1 − ρ) |g|                   (no bias correction, as printed)
    average (Eq. 1):     Ω_k ← mean over the minibatches of B_k of |g|

The algorithm declares this through the protocol's optional held-out pass
(:mod:`fedbench.algorithms`): :func:`holdout_fraction` (what to hold out) and
:func:`client_holdout_step` (one minibatch of B_k); both engines run it before local training,
with the engine's ``output_grad_fn`` (:func:`fedbench.engine.clients.holdout.make_output_grad_fn`). The
local training itself is the base algorithm's, unchanged. The client uploads Ω_k beside its
update Δ_k (3× FedAvg's per-round traffic, as the paper says).

Server side (:func:`elastic_delta`), with w_k = n_k / Σ_{j∈P_t} n_j:

    Ω = Σ_k w_k Ω_k;   Ω′ = max_i Ω^i (one scalar over all parameters of all layers)
    ζ^i = 1 + τ − Ω^i / Ω′  ∈ [τ, 1 + τ]                              (exactly τ at the argmax)
    Δ^i = ζ^i · Σ_k w_k Δ_k^i

then the base optimizer's server step on Δ. Parameters with ζ > 1 are "boosted"; the server
state keeps ``metrics["boosted_pct"]`` = 100 · #{i : ζ^i > 1} / n of the last round (a 0-d
float64 tensor; 0 before the first round), recorded by the engine as the ``boosted_pct`` column.

Hyperparameters shared by the three modules (:data:`HPARAMS`): ``tau`` τ, ``rho`` ρ,
``sensitivity`` ∈ {"momentum", "average", "none"} and ``sensitivity_fraction`` (|B_k| / n_k,
in (0, 1); it sets |B_k|, so it is listed in :data:`STRUCTURAL_HPARAMS`: cells that differ in it
are never stacked, :mod:`fedbench.engine.rounds.stacking`). "none" is naive aggregation (ζ ≡ 1,
nothing held out, no Ω sent): exactly the base optimizer with the same data, the "naive" column
of the paper's Table 1. τ = 0.5 and ρ = 0.95 are FL-bench's defaults: the supplement gives no
values, so they are assumed; the fraction 10 % is the supplement's (§4, its "μ").

Decisions where the supplement is silent:

- |B_k| = min(n_k − 1, ⌈0.1 · n_k⌉) (:func:`fedbench.engine.clients.holdout.holdout_size`): a client with
  fewer than 10 samples still holds out one, and one is always left to train on. A client with
  n_k = 1 holds out nothing and sends Ω_k = 0 (it lowers Ω by its weight, as a client whose
  output does not depend on θ would).
- The sensitivity pass uses the training batch size, one pass over B_k per round in an order
  reshuffled every round (keyed (seed, t, k, "holdout")), no augmentation; "mean over the batch
  of the per-sample ‖F‖²₂" (§2.5 note 5: a global scale cancels in Ω/Ω′). Consequence: when
  every client's B_k fits in one batch, momentum gives (1 − ρ)|g| and average |g|, the same ζ,
  so the two estimators coincide exactly; they differ only with several held-out batches.
- The train loss and accuracy columns are measured on all clients' training data, B_k included,
  so that they compare across algorithms.
- Ω′ = 0 (every Ω^i = 0) is guarded: Ω/Ω′ is taken as 0, so ζ ≡ 1 + τ.
- ζ is applied to every entry of the parameter dict (models here have no buffers).
- Sign convention: Δ_k = θ_k − θ^{t−1} and the server adds it (the paper's θ − θ_k with a minus).
"""

from __future__ import annotations

import torch

from fedbench.algorithms.hparams import hparam, number
from fedbench.tree import Tree, tree_weighted_mean, tree_zeros_like

HPARAMS: dict = {"tau": 0.5, "rho": 0.95, "sensitivity": "momentum", "sensitivity_fraction": 0.1}
BOUNDS: dict[str, str] = {"tau": "[0, inf)", "rho": "[0, 1)"}
#: Numeric hyperparameters that change a round's structure (:mod:`fedbench.engine.rounds.stacking`):
#: the fraction sets |B_k|, hence every client's training rows and step count; cells that differ
#: in it are not trained together.
STRUCTURAL_HPARAMS: tuple[str, ...] = ("sensitivity_fraction",)
SENSITIVITIES = ("momentum", "average", "none")


def sensitivity_mode(hparams: dict) -> str:
    """The ``sensitivity`` hyperparameter, checked (and ``sensitivity_fraction`` with it).

    Raises:
        ValueError: not one of :data:`SENSITIVITIES`, or a fraction outside (0, 1) while the
            sensitivity is not "none".
    """
    mode = hparam(hparams, HPARAMS, "sensitivity")
    if mode not in SENSITIVITIES:
        raise ValueError(f"elastic aggregation: sensitivity must be one of {SENSITIVITIES} (got {mode!r})")
    if mode != "none":
        f = float(hparam(hparams, HPARAMS, "sensitivity_fraction"))
        if not 0.0 < f < 1.0:
            raise ValueError(f"elastic aggregation: sensitivity_fraction must be in (0, 1) (got {f}); "
                             "use sensitivity: none for naive aggregation")
    return mode


def check_cell(hparams: dict) -> None:
    """Protocol hook (before any job) of the Elastic Aggregation modules: :func:`sensitivity_mode`.

    Raises:
        ValueError: as :func:`sensitivity_mode`.
    """
    sensitivity_mode(hparams)


def holdout_fraction(hparams: dict) -> float:
    """Protocol hook: the fraction of each client's data held out as B_k (0 for "none")."""
    if sensitivity_mode(hparams) == "none":
        return 0.0
    return float(hparam(hparams, HPARAMS, "sensitivity_fraction"))


def init_omega(step_state: dict, hparams: dict) -> dict:
    """``step_state`` with Ω_k = 0 and the held-out batch count 0 added (nothing for "none")."""
    if sensitivity_mode(hparams) == "none":
        return step_state
    return {**step_state, "omega": tree_zeros_like(step_state["params"]), "omega_batches": 0}


def accumulate(omega: Tree, grads: Tree, batches_before, hparams: dict) -> Tree:
    """Ω_k after one more minibatch gradient g: ρ Ω + (1 − ρ)|g| ("momentum") or the running mean
    Ω + (|g| − Ω)/(s + 1) with s the minibatches already accumulated ("average").
    ``batches_before`` may be an int or a 0-d integer tensor (vectorized engine)."""
    mode = sensitivity_mode(hparams)
    if mode == "momentum":
        rho = number(hparam(hparams, HPARAMS, "rho"))  # a 0-d tensor when stacked cells differ in ρ
        return {k: rho * omega[k] + (1.0 - rho) * grads[k].abs() for k in omega}
    count = batches_before + 1
    return {k: omega[k] + (grads[k].abs() - omega[k]) / count for k in omega}


def client_holdout_step(step_state: dict, batch, hparams: dict, output_grad_fn) -> dict:
    """Protocol hook, one minibatch x of B_k: Ω_k ← accumulate(Ω_k, ∇_θ mean_x ‖F(θ; x)‖²₂).

    Runs before local training, so θ = ``step_state["params"]`` is the received θ^{t−1}; the
    local model, step count and loss are left unchanged.

    Args:
        step_state: the state from ``client_init`` (holds ``omega`` and ``omega_batches``).
        batch: (x, y) with x of shape (B, *feature_shape); y only marks padded rows (negative).
        output_grad_fn: ``(params, x, y) -> (grads, value)``, the gradient of the mean squared
            output norm (:func:`fedbench.engine.clients.holdout.make_output_grad_fn`).
    """
    x, y = batch
    grads, _ = output_grad_fn(step_state["params"], x, y)
    omega = accumulate(step_state["omega"], grads, step_state["omega_batches"], hparams)
    return {**step_state, "omega": omega, "omega_batches": step_state["omega_batches"] + 1}


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
    z = zeta(omega, float(hparam(hparams, HPARAMS, "tau")))
    return {k: z[k] * delta[k] for k in delta}, {"boosted_pct": boosted_pct(z)}
