"""The local optimizer shared by every algorithm: one SGD step with clipping and weight decay.

Each algorithm builds its own local *direction* d (FedAvg: ∇L; FedProx: ∇L + μ(θ − θ^{t−1});
SCAFFOLD: ∇L − c_k + c; FedDyn: ∇L − g_k + α(θ − θ^{t−1})) and hands it to :func:`sgd_step`,
which applies it exactly as the FedDyn reference code's local loop does
(``loss.backward(); clip_grad_norm_(params, clip_norm); torch.optim.SGD(lr, weight_decay).step()``):

    d ← d · min(1, clip_norm / (‖d‖₂ + 1e−6))      only when clip_norm is not None
    d ← d + weight_decay · θ                        only when weight_decay ≠ 0
    θ ← θ − lr · d

The clipping uses the global ℓ2 norm over all leaves (``torch.nn.utils.clip_grad_norm_``), and the
weight decay is added after clipping (``torch.optim.SGD``), so decay is never clipped.

Everything here is pure and branch-free on tensor values (no ``.item()``), so it runs under
:func:`torch.func.vmap` over a client dimension. Hyperparameters may be Python numbers or 0-d
tensors (one value per client under vmap, when the vectorized engine stacks cells with different
values: :mod:`fedbench.engine.rounds.stacking`): Python numbers take the ``torch.add(..., alpha=x)``
path, tensors ``torch.addcmul`` (the same rounding: bitwise equal on CPU, tested).
"""

from __future__ import annotations

import torch

from fedbench.tree import Tree, tree_axpy, tree_sign, tree_sub

#: The ε that ``torch.nn.utils.clip_grad_norm_`` adds to the norm.
CLIP_EPS = 1e-6


def global_norm(tree: Tree) -> torch.Tensor:
    """‖tree‖₂ over all leaves, computed as ``clip_grad_norm_`` does (norm of the per-leaf norms)."""
    norms = [torch.linalg.vector_norm(v, 2) for v in tree.values()]
    return torch.linalg.vector_norm(torch.stack(norms), 2)


def clip_by_global_norm(tree: Tree, max_norm) -> Tree:
    """``tree · min(1, max_norm / (‖tree‖₂ + 1e−6))``: ``torch.nn.utils.clip_grad_norm_`` semantics.
    ``max_norm``: a Python number or a 0-d tensor."""
    coef = torch.clamp(max_norm / (global_norm(tree) + CLIP_EPS), max=1.0)
    return {k: v * coef.to(v.dtype) for k, v in tree.items()}


def sgd_step(params: Tree, direction: Tree, hparams: dict) -> Tree:
    """One local SGD step θ ← θ − lr · (clip(d) + weight_decay · θ).

    Args:
        params: θ, the current local model.
        direction: d, the algorithm's local direction (same keys and shapes as θ).
        hparams: ``lr`` (required), ``weight_decay`` (default 0), ``clip_norm`` (default None:
            no clipping). Each a Python number or a 0-d tensor (a tensor weight decay is always
            applied: adding 0 · θ changes nothing).

    Returns:
        The new parameters (new tensors; the inputs are not modified).
    """
    lr = hparams["lr"]
    weight_decay = hparams.get("weight_decay", 0.0)
    clip_norm = hparams.get("clip_norm")
    d = direction
    if clip_norm is not None:
        d = clip_by_global_norm(d, clip_norm if torch.is_tensor(clip_norm) else float(clip_norm))
    # A tensor hyperparameter goes through torch.addcmul, which rounds as torch.add(..., alpha=x)
    # does (one fused multiply-add on CPU): the same bits as the Python-number path.
    if torch.is_tensor(weight_decay):
        d = {k: torch.addcmul(d[k], params[k], weight_decay) for k in d}
    elif weight_decay:  # None or 0: no decay
        d = {k: torch.add(d[k], params[k], alpha=weight_decay) for k in d}
    if torch.is_tensor(lr):
        return {k: torch.addcmul(params[k], d[k], lr, value=-1) for k in params}
    return {k: torch.add(params[k], d[k], alpha=-lr) for k in params}


def init_step_state(params: Tree, **extra) -> dict:
    """The common ClientStepState: local model θ = θ^{t−1}, ``steps`` 0, ``loss`` NaN, plus ``extra``.

    ``params`` is not copied: every update builds new tensors, so sharing θ^{t−1} is safe.
    """
    first = next(iter(params.values()))
    loss = torch.full((), float("nan"), dtype=first.dtype, device=first.device)
    return {"params": params, "steps": 0, "loss": loss, **extra}


def advance(step_state: dict, params: Tree, loss: torch.Tensor) -> dict:
    """``step_state`` after one step: new ``params``, ``steps + 1``, ``loss``; other entries kept."""
    return {**step_state, "params": params, "steps": step_state["steps"] + 1, "loss": loss}


def elastic_net_direction(direction: Tree, params: Tree, anchor: Tree, lambda1, lambda2) -> Tree:
    """d + λ2 (θ − θ^{t−1}) + λ1 sign(θ − θ^{t−1}): FedElasticNet's (sub)gradient of
    (λ2/2)‖θ − θ^{t−1}‖²₂ + λ1‖θ − θ^{t−1}‖₁ added to an algorithm's local direction d
    (Kim et al., "Communication-Efficient and Drift-Robust Federated Learning via Elastic Net",
    arXiv 2022, eqs. (4), (7), (10)), with sign(0) = 0.

    Computed as ``λ1·s + (λ2·(θ − θ^{t−1}) + d)`` so that with λ2 = μ it is FedProx's direction
    ``μ·(θ − θ^{t−1}) + d`` plus the ℓ1 term, and with λ1 = λ2 = 0 it equals d exactly.
    λ1 and λ2: Python numbers or 0-d tensors.
    """
    diff = tree_sub(params, anchor)
    return tree_axpy(lambda1, tree_sign(diff), tree_axpy(lambda2, diff, direction))
