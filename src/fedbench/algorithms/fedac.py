"""FedAc: Federated Accelerated SGD (Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent",
NeurIPS 2020, Algorithm 1, with the hyperparameter choices FedAc-I, eq. (3.1), FedAc-II, eq. (3.2),
and the "vanilla" direct parallelization of accelerated SGD of §5).

Every client keeps two sequences, w (the "momentum" sequence) and w^ag (the aggregated output),
both starting at the server's averages. Each local step (Algorithm 1, lines 5–8), with η the
round's client learning rate and λ the ℓ2 regularization (``weight_decay``):

    w^md = β⁻¹ w + (1 − β⁻¹) w^ag                      (coupling)
    g    = ∇f(w^md; b) + λ w^md                          (stochastic gradient of the ℓ2-regularized loss)
    w^ag ← w^md − η g                                    (short "SGD" step)
    w    ← (1 − α⁻¹) w + α⁻¹ w^md − γ g                  (long "momentum" step)

After the K local steps of a round the client sends both sequences, as changes from the round's
start (fedbench's message convention, :mod:`fedbench.algorithms`): ``{"delta": w^ag − w̄^ag,
"delta_w": w − w̄}`` (2d floats, twice FedAvg's payload), and the server averages each sequence,
w̄^ag + Σ n_k Δ^ag_k / Σ n_k = Σ n_k w^ag_k / Σ n_k (and the same for w), and sends both averages
back (Algorithm 1, lines 9–10, the sync step every K steps). The server state's ``"params"`` is the
average of w^ag (the paper's output w̄^ag, what the engine evaluates); ``"w"`` the average of w.

Hyperparameters α, β, γ from η, μ (strong convexity) and K (local steps), with x = γμ:

- ``variant: "I"`` (eq. 3.1, the paper's default): γ = max(√(η/(μK)), η), α = 1/(γμ), β = α + 1,
  so α⁻¹ = x and β⁻¹ = x / (1 + x).
- ``variant: "II"`` (eq. 3.2): γ = max(√(η/(μK)), η), α = 3/(2γμ) − 1/2, so α⁻¹ = 2x / (3 − x), and
  ``beta_formula: "paper"`` β = (2α² − 1)/(α − 1), i.e. β⁻¹ = 3x(1 − x) / (9 − 6x − x²); or
  ``beta_formula: "code"`` β = 2α²/(α − 1) (the authors' experiment code), i.e.
  β⁻¹ = 3x(1 − x) / (3 − x)². Both are computed as β⁻¹, which is 0 (not a division by zero)
  at γμ = 1, where α = 1 and β = ∞.
- ``variant: "vanilla"`` (§5, "vanilla FedAc", the text before Fig. 2): γ = √(η/μ), α = 1/(γμ), β = α + 1, the standard
  accelerated SGD parameters with no trade-off in K.

``mu`` (μ): None (the default) means μ = λ = ``weight_decay``, the paper's setting (ℓ2-regularized
logistic regression with μ set to the regularization strength, §5), so η is the only tuned
hyperparameter; a number sets μ independently of λ. μ must be > 0.

Departures and choices:

- The server averages with the clients' sample counts n_k as weights (Σ n_k v_k / Σ n_k), as
  every fedbench algorithm does; the paper's workers are homogeneous and average plainly, which
  is the same thing on equal-sized partitions. The paper has no client sampling; with partial
  participation the server averages over the sampled clients and every client starts a round
  from the broadcast averages.
- K must be a fixed number of local steps (``local.steps``), since γ depends on it; local work
  given in epochs is an error. Gradient clipping (``local.clip_norm``) is not part of the
  algorithm and is an error; the shared local step :func:`fedbench.algorithms.local.sgd_step` is
  not used (the ℓ2 term is added to g explicitly, as above).
- The paper draws one sample per gradient; the batch size here is ``local.batch_size``.
- No check that ημ ≤ 1 (the analysis needs η ≤ 1/L ≤ 1/μ): outside it the coefficients leave
  their ranges and the run is expected to diverge, which the engine records, rather than stop a
  sweep.

The local step reads η and λ tensor-friendly (a 0-d tensor when stacked cells differ in them:
:mod:`fedbench.algorithms.hparams`), so it runs under :func:`torch.func.vmap`.
"""

from __future__ import annotations

import math

import torch

from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import init_step_state
from fedbench.tree import Tree, messages_weighted_mean, tree_add, tree_sub

#: ``variant`` (str, selects the formulas for α, β, γ: structural) and ``beta_formula`` (str, FedAc-II's β)
#: are non-numeric; ``mu`` is None (use ``weight_decay``) or a number > 0.
HPARAMS: dict = {"variant": "I", "beta_formula": "paper", "mu": None}
BOUNDS: dict[str, str] = {"mu": "(0, inf)"}

#: The allowed values of the non-numeric hyperparameters.
VARIANTS = ("I", "II", "vanilla")
BETA_FORMULAS = ("paper", "code")

__all__ = ["BETA_FORMULAS", "BOUNDS", "HPARAMS", "VARIANTS", "accelerated_step", "broadcast", "check_cell",
           "check_choices", "check_local", "client_final", "client_init", "client_step", "coefficients", "couple",
           "regularized", "server_init", "server_update", "strong_convexity"]


def check_choices(hparams: dict) -> tuple[str, str]:
    """(``variant``, ``beta_formula``), checked.

    Raises:
        ValueError: a value not in :data:`VARIANTS` / :data:`BETA_FORMULAS`.
    """
    variant = hparam(hparams, HPARAMS, "variant")
    if variant not in VARIANTS:
        raise ValueError(f"fedac: variant must be one of {', '.join(map(repr, VARIANTS))} (got {variant!r})")
    formula = hparam(hparams, HPARAMS, "beta_formula")
    if formula not in BETA_FORMULAS:
        raise ValueError(f"fedac: beta_formula must be one of {', '.join(map(repr, BETA_FORMULAS))} "
                         f"(got {formula!r})")
    return variant, formula


def check_cell(hparams: dict) -> None:
    """Protocol hook (before any job): the checks of :func:`check_choices` and :func:`check_local`
    on a cell's round-1 hyperparameters.

    Raises:
        ValueError: as those two.
    """
    check_choices(hparams)
    check_local(hparams)


def strong_convexity(hparams: dict):
    """μ: the ``mu`` hyperparameter, or ``weight_decay`` λ when it is None (a Python number or,
    inside ``client_step`` of stacked cells, a 0-d tensor)."""
    mu = hparam(hparams, HPARAMS, "mu")
    return number(hparams.get("weight_decay", 0.0) if mu is None else mu)


def check_local(hparams: dict, name: str = "fedac", need_steps: bool = True) -> None:
    """Checks the round hyperparameters (Python numbers: ``client_init``, ``server_update``).

    Raises:
        ValueError: ``local_steps`` is None (local work given in epochs) when ``need_steps``;
            ``clip_norm`` is set; μ (``mu``, else ``weight_decay``) is missing, not a number or ≤ 0.
    """
    if need_steps and hparams.get("local_steps") is None:
        raise ValueError(f"{name}: needs a fixed number of local steps K (local.steps), since γ depends on K; "
                         "local work given in epochs (local.epochs) or drawn per client (a local.steps "
                         "distribution) is not supported")
    if hparams.get("clip_norm") is not None:
        raise ValueError(f"{name}: gradient clipping is not part of the algorithm; set local.clip_norm to null "
                         f"(got {hparams['clip_norm']!r})")
    mu = hparam(hparams, HPARAMS, "mu")
    source = "mu" if mu is not None else "local.weight_decay (mu is null: μ = λ)"
    value = hparams.get("weight_decay", 0.0) if mu is None else mu
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}: the strong-convexity parameter μ must be a finite number > 0; it is taken from "
                         f"{source}, which is {value!r}")


def _max(a, b):
    """max(a, b) for Python numbers or 0-d tensors (elementwise, branch-free)."""
    if not torch.is_tensor(a) and not torch.is_tensor(b):
        return max(a, b)
    ref = a if torch.is_tensor(a) else b
    a = a if torch.is_tensor(a) else torch.as_tensor(a, dtype=ref.dtype, device=ref.device)
    b = b if torch.is_tensor(b) else torch.as_tensor(b, dtype=ref.dtype, device=ref.device)
    return torch.maximum(a, b)


def _sqrt(v):
    """√v for a Python number (``math.sqrt``) or a 0-d tensor (``torch.sqrt``)."""
    return torch.sqrt(v) if torch.is_tensor(v) else math.sqrt(v)


def coefficients(eta, mu, k: int, variant: str = "I", beta_formula: str = "paper") -> tuple:
    """(α⁻¹, β⁻¹, γ) of FedAc's ``variant`` (module docstring; paper eqs. 3.1, 3.2 and §5).

    Args:
        eta: η > 0, the learning rate (a Python number or a 0-d tensor).
        mu: μ > 0, the strong-convexity parameter (a Python number or a 0-d tensor).
        k: K ≥ 1, the local steps per round (a Python int; unused by "vanilla").
        variant: "I", "II" or "vanilla".
        beta_formula: FedAc-II's β: "paper" (2α² − 1)/(α − 1) or "code" 2α²/(α − 1).

    Returns:
        Python numbers, or 0-d tensors when ``eta`` or ``mu`` is one. β⁻¹ is computed directly
        (finite at γμ = 1, where FedAc-II's β is infinite).

    Raises:
        ValueError: unknown ``variant`` or ``beta_formula``.
    """
    if variant == "vanilla":
        gamma = _sqrt(eta / mu)
    elif variant in ("I", "II"):
        gamma = _max(_sqrt(eta / (mu * k)), eta)
    else:
        raise ValueError(f"fedac: variant must be one of {', '.join(map(repr, VARIANTS))} (got {variant!r})")
    x = gamma * mu
    if variant in ("I", "vanilla"):
        return x, x / (1 + x), gamma
    if beta_formula == "paper":
        beta_inv = 3 * x * (1 - x) / (9 - 6 * x - x * x)
    elif beta_formula == "code":
        beta_inv = 3 * x * (1 - x) / ((3 - x) * (3 - x))
    else:
        raise ValueError(f"fedac: beta_formula must be one of {', '.join(map(repr, BETA_FORMULAS))} "
                         f"(got {beta_formula!r})")
    return 2 * x / (3 - x), beta_inv, gamma


def couple(w: Tree, w_ag: Tree, beta_inv) -> Tree:
    """w^md = β⁻¹ w + (1 − β⁻¹) w^ag (Algorithm 1, line 5); ``beta_inv`` a number or a 0-d tensor."""
    return {k: beta_inv * w[k] + (1 - beta_inv) * w_ag[k] for k in w}


def accelerated_step(w: Tree, w_md: Tree, g: Tree, eta, alpha_inv, gamma) -> tuple[Tree, Tree]:
    """(w^ag, w) after one step from w^md with direction g (Algorithm 1, lines 7–8):
    w^ag = w^md − η g, w = (1 − α⁻¹) w + α⁻¹ w^md − γ g. Scalars: numbers or 0-d tensors."""
    w_ag = {k: w_md[k] - eta * g[k] for k in w_md}
    w_new = {k: (1 - alpha_inv) * w[k] + alpha_inv * w_md[k] - gamma * g[k] for k in w}
    return w_ag, w_new


def regularized(grads: Tree, w: Tree, lam) -> Tree:
    """g + λ w: the gradient of the loss plus (λ/2)‖w‖² (λ a number or a 0-d tensor)."""
    return {k: grads[k] + lam * w[k] for k in grads}


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": w̄^ag = θ⁰, "w": w̄ = θ⁰}`` (Algorithm 1: w_0^ag = w_0 on every worker).

    Raises:
        ValueError: unknown ``variant`` or ``beta_formula``; ``mu`` set but ≤ 0. (K, clipping and μ
            from ``weight_decay`` are round settings, checked by :func:`client_init`.)
    """
    check_choices(hparams)
    mu = hparam(hparams, HPARAMS, "mu")
    if mu is not None and not (isinstance(mu, (int, float)) and not isinstance(mu, bool) and mu > 0):
        raise ValueError(f"fedac: mu must be a number > 0 or null (= local.weight_decay) (got {mu!r})")
    return {"params": params, "w": params}


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": w̄^ag, "w": w̄}``: both averaged sequences (2d floats)."""
    return {"params": server_state["params"], "w": server_state["w"]}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """Step state ``{"params": w^ag = w̄^ag, "w": w̄, "steps": 0, "loss": NaN}``; clients are stateless.

    Raises:
        ValueError: local work in epochs (``local_steps`` None), ``clip_norm`` set, μ ≤ 0 or missing,
            unknown ``variant`` / ``beta_formula``.
    """
    check_choices(hparams)
    check_local(hparams)
    return init_step_state(server_state["params"], w=server_state["w"])


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """One step of Algorithm 1 (module docstring): gradient at w^md, then both sequences advance.

    ``step_state["params"]`` is w^ag, ``step_state["w"]`` is w (same keys and shapes as the model);
    ``loss`` is the minibatch loss at w^md (without the ℓ2 term). Branch-free on tensor values:
    η (``lr``), λ (``weight_decay``) and μ may be 0-d tensors.
    """
    variant, formula = hparam(hparams, HPARAMS, "variant"), hparam(hparams, HPARAMS, "beta_formula")
    eta, lam = number(hparams["lr"]), number(hparams.get("weight_decay", 0.0))
    alpha_inv, beta_inv, gamma = coefficients(eta, strong_convexity(hparams), int(hparams["local_steps"]),
                                              variant, formula)
    w, w_ag = step_state["w"], step_state["params"]
    w_md = couple(w, w_ag, beta_inv)
    x, y = batch
    grads, loss = grad_fn(w_md, x, y)
    w_ag, w = accelerated_step(w, w_md, regularized(grads, w_md, lam), eta, alpha_inv, gamma)
    return {**step_state, "params": w_ag, "w": w, "steps": step_state["steps"] + 1, "loss": loss}


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Message ``{"delta": w^ag − w̄^ag, "delta_w": w − w̄}`` (both sequences as changes from the
    round's start: 2d floats); no client state."""
    return {"delta": tree_sub(step_state["params"], server_state["params"]),
            "delta_w": tree_sub(step_state["w"], server_state["w"])}, None


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """w̄^ag ← w̄^ag + Σ n_k Δ^ag_k / Σ n_k (= Σ n_k w_k^ag / Σ n_k, the new ``params``) and
    w̄ ← w̄ + Σ n_k Δ^w_k / Σ n_k (Algorithm 1, line 10)."""
    return {**server_state,
            "params": tree_add(server_state["params"], messages_weighted_mean(messages, "delta", weights)),
            "w": tree_add(server_state["w"], messages_weighted_mean(messages, "delta_w", weights))}
