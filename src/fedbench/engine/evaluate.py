"""Evaluation of the server model: mean cross-entropy and accuracy over a dataset split."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F


@torch.no_grad()
def evaluate(
    apply: Callable, params: dict, x: torch.Tensor, y: torch.Tensor, batch_size: int = 4096,
    worst_class: bool = False,
) -> tuple[float, float] | tuple[float, float, float]:
    """(mean loss per sample, accuracy in [0, 1]) of ``apply(params, ·)`` on (x, y); with
    ``worst_class`` also the worst-class accuracy min_c (accuracy on the rows of class c), over the
    classes present in y: the "test accuracy on the worst distribution" of fair classification
    (Sharma, Panda & Joshi, TMLR 2023, §6; the worst vertex of the class simplex).

    Args:
        x: (n, *feature_shape) inputs on the model's device; y: (n,) int64 labels.
        batch_size: evaluation chunk size (memory bound only; the result does not depend on it
            beyond float summation order).

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
        loss_sum += F.cross_entropy(logits, yy, reduction="sum").double()
        right = logits.argmax(dim=1) == yy
        correct += int(right.sum())
        if worst_class:
            c = logits.shape[1]
            h, k = torch.bincount(yy[right], minlength=c), torch.bincount(yy, minlength=c)
            hits, counts = (h, k) if hits is None else (hits + h, counts + k)
    if not worst_class:
        return float(loss_sum) / n, correct / n
    present = counts > 0
    return float(loss_sum) / n, correct / n, float((hits[present].double() / counts[present].double()).min())
