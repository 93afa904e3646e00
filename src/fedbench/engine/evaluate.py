"""Evaluation of the server model: mean cross-entropy and accuracy over a dataset split (or the
mean of a model's own loss, without accuracy: :class:`fedbench.models.Model`'s ``loss``)."""

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
