"""Evaluation of the server model: mean cross-entropy and accuracy over a dataset split (or the
mean of a model's own loss, without accuracy: :class:`fedbench.models.Model`'s ``loss``), and the
accuracy under an L2 PGD attack (:func:`pgd_accuracy`)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F


@torch.no_grad()
def evaluate(
    apply: Callable, params: dict, x: torch.Tensor, y: torch.Tensor, batch_size: int = 4096,
    loss: Callable | None = None, worst_class: bool = False,
) -> tuple[float, float] | tuple[float, float, float]:
    """(mean loss per sample, accuracy in [0, 1]) of ``apply(params, ·)`` on (x, y); with
    ``worst_class`` also the worst-class accuracy min_c (accuracy on the rows of class c), over the
    classes present in y: the "test accuracy on the worst distribution" of fair classification
    (Sharma, Panda & Joshi, TMLR 2023, §6; the worst vertex of the class simplex).

    Args:
        x: (n, *feature_shape) inputs on the model's device; y: (n,) int64 labels.
        batch_size: evaluation chunk size (memory bound only; the result does not depend on it
            beyond float summation order).
        loss: None (cross-entropy of the logits, and accuracy), or a model's own
            ``loss(outputs, y, reduction)`` (:class:`fedbench.models.Model`): its mean, and accuracy NaN.

    Returns NaN for every value when n = 0.
    """
    n = int(y.shape[0])
    if n == 0:
        return (float("nan"),) * (3 if worst_class else 2)
    loss_sum = torch.zeros((), dtype=torch.float64, device=x.device)
    correct = 0
    hits = counts = None
    for i in range(0, n, batch_size):
        logits = apply(params, x[i : i + batch_size])
        yy = y[i : i + batch_size]
        if loss is not None:
            loss_sum += loss(logits, yy, reduction="sum").double()
            continue
        loss_sum += F.cross_entropy(logits, yy, reduction="sum").double()
        right = logits.argmax(dim=1) == yy
        correct += int(right.sum())
        if worst_class:
            c = logits.shape[1]
            h, k = torch.bincount(yy[right], minlength=c), torch.bincount(yy, minlength=c)
            hits, counts = (h, k) if hits is None else (hits + h, counts + k)
    acc = float("nan") if loss is not None else correct / n
    if not worst_class:
        return float(loss_sum) / n, acc
    if hits is None:  # a model with its own loss: no accuracy
        return float(loss_sum) / n, acc, float("nan")
    present = counts > 0
    return float(loss_sum) / n, acc, float((hits[present].double() / counts[present].double()).min())


#: PGD iterations K of :func:`pgd_accuracy` (the cell's ``test_pgd_accuracy``).
PGD_STEPS = 10
#: PGD step size in units of the radius per step: α = PGD_STEP_SCALE · r / K (Madry et al., 2018's
#: rule of thumb 2.5 r / K, so that a straight path reaches the sphere after 0.4 K steps).
PGD_STEP_SCALE = 2.5


def pgd_perturbation(apply: Callable, params: dict, x: torch.Tensor, y: torch.Tensor, radius: float,
                     steps: int = PGD_STEPS, step_size: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample L2 projected gradient ascent on the cross-entropy (Madry et al., "Towards Deep
    Learning Models Resistant to Adversarial Attacks", ICLR 2018, with normalized L2 steps):
    δ_j^0 = 0 (no random start: deterministic, no RNG key), then K times
    δ_j ← Π_{‖δ‖₂ ≤ r}(δ_j + α g_j / ‖g_j‖₂), g_j = ∇_δ ℓ(apply(params, x_j + δ_j), y_j).

    Args:
        apply: logits ``apply(params, inputs)``; params: its parameters (not differentiated).
        x: (B, *feature_shape) real inputs; y: (B,) int64 labels.
        radius: r ≥ 0, the L2 ball of each row's perturbation (over all its features).
        steps: K ≥ 0; step_size: α (None: PGD_STEP_SCALE · r / K).

    Returns:
        (δ, fooled): δ (B, *feature_shape) with ‖δ_j‖₂ ≤ r (to float rounding), and (B,) bool,
        true where some iterate δ^0, ..., δ^K (δ^0 = 0 the clean input) misclassifies row j.
    """
    delta = torch.zeros_like(x)
    view = (-1,) + (1,) * (x.dim() - 1)
    tiny = torch.finfo(x.dtype).tiny
    alpha = PGD_STEP_SCALE * radius / max(steps, 1) if step_size is None else step_size
    fooled = torch.zeros(y.shape[0], dtype=torch.bool, device=y.device)
    for _ in range(steps):
        delta.requires_grad_(True)
        with torch.enable_grad():
            logits = apply(params, x + delta)
            (g,) = torch.autograd.grad(F.cross_entropy(logits, y, reduction="sum"), delta)
        with torch.no_grad():
            fooled |= logits.argmax(dim=1) != y
            gnorm = g.reshape(g.shape[0], -1).norm(dim=1).clamp(min=tiny).view(view)
            delta = delta.detach() + alpha * g / gnorm
            dnorm = delta.reshape(delta.shape[0], -1).norm(dim=1).view(view)
            delta = delta * torch.clamp(radius / dnorm.clamp(min=tiny), max=1.0)
    with torch.no_grad():
        fooled |= apply(params, x + delta).argmax(dim=1) != y
    return delta.detach(), fooled


def pgd_accuracy(apply: Callable, params: dict, x: torch.Tensor, y: torch.Tensor, radius: float,
                 steps: int = PGD_STEPS, batch_size: int = 1024) -> float:
    """Robust accuracy in [0, 1]: the fraction of rows that :func:`pgd_perturbation` fools at no
    iterate (so it is at most the clean accuracy, δ^0 = 0). The ``test_pgd_accuracy`` of robust
    minimax cells (Sharma, Panda & Joshi, TMLR 2023, eq. 7; ours: the paper reports the accuracy
    under the learned perturbation only). Costs K + 1 forward and K backward passes over (x, y).

    Args:
        x: (n, *feature_shape), y: (n,) on the model's device; batch_size: rows per attack chunk
            (memory only: rows are attacked independently).

    Returns NaN when n = 0.
    """
    n = int(y.shape[0])
    if n == 0:
        return float("nan")
    robust = 0
    for i in range(0, n, batch_size):
        _, fooled = pgd_perturbation(apply, params, x[i : i + batch_size], y[i : i + batch_size], radius, steps)
        robust += int((~fooled).sum())
    return robust / n


@torch.no_grad()
def regularized_objective(loss: float, params: dict, weight_decay: float | None) -> float:
    """The ℓ2-regularized objective loss + (λ/2)‖θ‖², λ = ``weight_decay`` (None or 0: ``loss``).

    The objective that local SGD with weight decay λ descends (its gradient adds λθ,
    :func:`fedbench.algorithms.local.sgd_step`); for ``binary_logreg`` it is exactly FedAc's
    F(w) = (1/N) Σ log(1 + exp(−y xᵀw)) + (λ/2)‖w‖² (Yuan & Ma, NeurIPS 2020, §5), whose optimum
    F* is :func:`fedbench.metrics.optimum.solve_optimum`.

    Args:
        loss: the mean loss per sample (from :func:`evaluate`); NaN stays NaN.
        params: the model's parameters (any shapes); ‖θ‖² sums every entry, in float64.
        weight_decay: λ ≥ 0.
    """
    if not weight_decay:
        return float(loss)
    sq = sum(float(torch.sum(p.double() ** 2)) for p in params.values())
    return float(loss) + 0.5 * float(weight_decay) * sq
