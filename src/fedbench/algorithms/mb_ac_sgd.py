"""Mb-Ac-SGD: minibatch accelerated SGD, the baseline of Yuan & Ma, "Federated Accelerated
Stochastic Gradient Descent", NeurIPS 2020, §5 (after Cotter et al., "Better Mini-Batch Algorithms
via Accelerated Gradient Methods", NeurIPS 2011, and Dekel et al., JMLR 2012).

One accelerated SGD step per round with one large minibatch: the three-sequence update of FedAc's
Algorithm 1 with K = 1 (:mod:`fedbench.algorithms.fedac`), run by the server with the mean of the
clients' gradients. The server holds w^ag (``params``, the output the engine evaluates) and w;
each sampled client k evaluates its K local minibatch gradients at the same coupling point

    w^md = β⁻¹ w + (1 − β⁻¹) w^ag

(computed from the two broadcast sequences: 2d floats down) and sends their mean ḡ_k (d floats);
the server, with ḡ = Σ_k n_k ḡ_k / Σ_k n_k and λ = ``weight_decay``:

    g = ḡ + λ w^md,   w^ag ← w^md − η g,   w ← (1 − α⁻¹) w + α⁻¹ w^md − γ g

(α, β, γ) are FedAc's formulas for one step (K = 1) of a batch of M·K·b samples:
``variant: "vanilla"`` (the default, as in the authors' experiment code: γ = √(η/μ), α = 1/(γμ),
β = α + 1, full acceleration); ``"I"`` or ``"II"`` (eqs. 3.1, 3.2 with K = 1) are available for
comparison. ``mu`` (μ): None = ``weight_decay`` (the paper: μ = λ); must be > 0.

With K = 1 local step FedAc (any variant) equals Mb-Ac-SGD of the same variant up to rounding:
averaging the clients' w^ag and w after one step, which is linear in the gradient, is one step with
the averaged gradient (tested).

Departures and choices:

- The paper says only that the other hyperparameters follow from μ = λ with η tuned; the
  vanilla parameters are those of the authors' code.
- The clients' means are weighted by n_k (plain averaging on equal-sized partitions).
- The downlink counts both sequences (2d): the clients need w^md, which depends on η, so the
  server sends w and w^ag and the clients couple them. Sending w^md alone (d floats) would do
  the same with a known η.
- Local work may be given in steps or in epochs (each batch counts once in ḡ_k). Gradient clipping
  (``local.clip_norm``) is an error.
"""

from __future__ import annotations

from fedbench.algorithms import fedac
from fedbench.algorithms.hparams import hparam
from fedbench.algorithms.mb_sgd import client_final, client_step, gradient_state, mean_gradient
from fedbench.tree import Tree

#: ``variant`` and ``beta_formula`` are non-numeric (str) hyperparameters, allowed values
#: :data:`fedbench.algorithms.fedac.VARIANTS` and :data:`fedbench.algorithms.fedac.BETA_FORMULAS`;
#: ``mu`` is None (use ``weight_decay``) or a number > 0.
HPARAMS: dict = {"variant": "vanilla", "beta_formula": "paper", "mu": None}
BOUNDS: dict[str, str] = {"mu": "(0, inf)"}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "check_cell", "client_final", "client_init", "client_step",
           "server_init", "server_update"]


def _settings(hparams: dict) -> dict:
    """The module's defaults under the given values (fedac reads its own defaults otherwise)."""
    return {**hparams, **{k: hparam(hparams, HPARAMS, k) for k in HPARAMS}}


def check_cell(hparams: dict) -> None:
    """Protocol hook (before any job): no clipping, μ > 0, a known ``variant`` / ``beta_formula``.

    Raises:
        ValueError: as :func:`fedbench.algorithms.fedac.check_local` and ``check_choices``.
    """
    hp = _settings(hparams)
    fedac.check_local(hp, "mb_ac_sgd", need_steps=False)
    fedac.check_choices(hp)


def _coupling(server_state: dict, hparams: dict) -> tuple[Tree, tuple]:
    """(w^md, (α⁻¹, β⁻¹, γ)) of this round (Python numbers: η = ``lr``, μ, K = 1).

    Raises:
        ValueError: ``clip_norm`` set; μ ≤ 0 or missing; unknown ``variant`` / ``beta_formula``.
    """
    hp = _settings(hparams)
    fedac.check_local(hp, "mb_ac_sgd", need_steps=False)
    variant, formula = fedac.check_choices(hp)
    coef = fedac.coefficients(float(hp["lr"]), float(fedac.strong_convexity(hp)), 1, variant, formula)
    return fedac.couple(server_state["w"], server_state["params"], coef[1]), coef


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": w^ag = θ⁰, "w": θ⁰}``.

    Raises:
        ValueError: unknown ``variant`` or ``beta_formula``; ``mu`` set but ≤ 0.
    """
    return fedac.server_init(params, _settings(hparams), num_clients)


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": w^ag, "w": w}`` (2d floats; the clients couple them into w^md)."""
    return {"params": server_state["params"], "w": server_state["w"]}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """Gradients are taken at w^md (``params``), summed in ``grad_sum``; clients are stateless.

    Raises:
        ValueError: as :func:`_coupling`.
    """
    return gradient_state(_coupling(server_state, hparams)[0])


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """g = ḡ + λ w^md; w^ag ← w^md − η g; w ← (1 − α⁻¹) w + α⁻¹ w^md − γ g."""
    w_md, (alpha_inv, _, gamma) = _coupling(server_state, hparams)
    g = fedac.regularized(mean_gradient(messages, weights), w_md, float(hparams.get("weight_decay") or 0.0))
    w_ag, w = fedac.accelerated_step(server_state["w"], w_md, g, float(hparams["lr"]), alpha_inv, gamma)
    return {**server_state, "params": w_ag, "w": w}
