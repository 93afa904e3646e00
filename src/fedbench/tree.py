"""Arithmetic on pytrees: flat ``dict[str, torch.Tensor]`` with identical keys and shapes.

Every parameter set, update, control variate and optimizer state in fedbench is such a dict,
so the algorithms read as the papers' vector equations (``tree_add(θ, tree_scale(Δ, η))``).
All functions are pure: they return new dicts and never modify their arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

Tree = dict[str, torch.Tensor]


def tree_map(fn, *trees: Tree) -> Tree:
    """Apply ``fn`` leaf-wise to one or more trees with the same keys."""
    return {k: fn(*(t[k] for t in trees)) for k in trees[0]}


def tree_add(a: Tree, b: Tree) -> Tree:
    """a + b."""
    return {k: a[k] + b[k] for k in a}


def tree_sub(a: Tree, b: Tree) -> Tree:
    """a − b."""
    return {k: a[k] - b[k] for k in a}


def tree_scale(a: Tree, s: float | torch.Tensor) -> Tree:
    """s · a for a scalar s."""
    return {k: v * s for k, v in a.items()}


def tree_axpy(alpha: float | torch.Tensor, x: Tree, y: Tree) -> Tree:
    """alpha · x + y."""
    return {k: alpha * x[k] + y[k] for k in x}


def tree_sign(a: Tree) -> Tree:
    """Element-wise sign, with sign(0) = 0 (``torch.sign``)."""
    return {k: torch.sign(v) for k, v in a.items()}


def tree_threshold(a: Tree, eps: float) -> Tree:
    """a with every entry of magnitude ≤ eps set to exactly 0 (FedElasticNet's ε-thresholding).

    Entries with |a_i| > eps are returned unchanged (bitwise); with eps = 0 only zeros (±0) are
    touched, and they become +0. Branch-free on values, so it runs under ``torch.func.vmap``.
    """
    return {k: torch.where(v.abs() <= eps, torch.zeros_like(v), v) for k, v in a.items()}


def tree_zeros_like(a: Tree) -> Tree:
    """A tree of zeros with a's shapes, dtypes and devices."""
    return {k: torch.zeros_like(v) for k, v in a.items()}


def tree_clone(a: Tree) -> Tree:
    """A detached copy of a."""
    return {k: v.detach().clone() for k, v in a.items()}


def tree_weighted_mean(trees: Sequence[Tree], weights: torch.Tensor | Iterable[float]) -> Tree:
    """Σ_i w_i · trees[i] / Σ_i w_i.

    Args:
        trees: P trees with identical keys and shapes.
        weights: P non-negative weights (for example client sample counts n_k), not all zero.

    Raises:
        ValueError: if ``trees`` is empty or the weights sum to zero.
    """
    scale = _mean_weights(weights, len(trees))
    out = {}
    for k in trees[0]:  # one stacked contraction per leaf (not a Python loop over the P trees)
        stacked = torch.stack([t[k] for t in trees])
        out[k] = torch.tensordot(scale.to(device=stacked.device, dtype=stacked.dtype), stacked, dims=1)
    return out


def _mean_weights(weights, count: int) -> torch.Tensor:
    """w_i / Σ w (float64) for ``count`` trees, checked as :func:`tree_weighted_mean` documents."""
    if count == 0:
        raise ValueError("tree_weighted_mean needs at least one tree")
    w = torch.as_tensor(list(weights) if not torch.is_tensor(weights) else weights, dtype=torch.float64)
    total = float(w.sum())
    if total <= 0:
        raise ValueError(f"tree_weighted_mean: weights sum to {total}; need a positive total")
    return w / total


def messages_weighted_mean(messages: Sequence[dict], entry: str, weights) -> Tree:
    """Σ_k w_k · messages[k][entry] / Σ_k w_k: :func:`tree_weighted_mean` of one entry of a
    round's messages. Messages the vectorized engine hands over stacked
    (:class:`fedbench.engine.clients.stacked.StackedMessages`) are averaged as they are, without a
    tensor per client; the result is the same either way (the same stacked contraction).

    Raises:
        ValueError: as :func:`tree_weighted_mean`.
    """
    stacked = getattr(messages, "stacked", None)
    if stacked is None:
        return tree_weighted_mean([m[entry] for m in messages], weights)
    scale = _mean_weights(weights, len(messages))
    return {k: torch.tensordot(scale.to(device=v.device, dtype=v.dtype), v, dims=1) for k, v in stacked(entry).items()}


def tree_mean(trees: Sequence[Tree]) -> Tree:
    """The unweighted mean (1/P) Σ_i trees[i]."""
    return tree_weighted_mean(trees, [1.0] * len(trees))


def tree_sum(trees: Sequence[Tree]) -> Tree:
    """Σ_i trees[i]."""
    if len(trees) == 0:
        raise ValueError("tree_sum needs at least one tree")
    out = {k: torch.zeros_like(v) for k, v in trees[0].items()}
    for t in trees:
        out = {k: out[k] + t[k] for k in out}
    return out


def tree_vdot(a: Tree, b: Tree) -> torch.Tensor:
    """⟨a, b⟩ summed over all leaves (a 0-d tensor)."""
    return sum((a[k] * b[k]).sum() for k in a)


def tree_norm(a: Tree) -> torch.Tensor:
    """The global ℓ2 norm ‖a‖₂ over all leaves (a 0-d tensor)."""
    return torch.sqrt(sum((v.double() ** 2).sum() for v in a.values())).to(next(iter(a.values())).dtype)


def tree_numel(a: Tree) -> int:
    """Total number of scalars in a."""
    return sum(v.numel() for v in a.values())


def tree_all_finite(a: Tree) -> bool:
    """True when no leaf holds NaN or ±inf."""
    return all(bool(torch.isfinite(v).all()) for v in a.values())
