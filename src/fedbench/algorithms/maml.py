"""MAML in the LocalUpdate framework: each client sends the second-order MAML gradient, back-
propagated through K inner steps (Finn, Abbeel & Levine, "Model-Agnostic Meta-Learning for Fast
Adaptation of Deep Networks", ICML 2017; as a federated algorithm: Charles & Konečný,
"Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning", AISTATS 2021,
Section 3 and Theorem 2).

Client i, from the broadcast model x, with inner learning rate γ (``local.lr``) and K inner steps
(``inner_steps``), on one minibatch b of the round (one ``client_step``):

    X_0(x) = x,   X_{k+1}(x) = X_k(x) − γ (∇f_i(X_k(x); S_k) + λ X_k(x))     k = 0..K−1
    m(x) = f_i(X_K(x); S_out) + (λ/2)‖X_K(x)‖²
    g = ∇m(x)                     (autograd through the inner loop: ``torch.func.grad`` of m)

with S_0..S_{K−1}, S_out taken from b by ``inner_batches``:

- ``shared`` (the default): every inner step and the outer loss use all of b. With full-batch
  clients this is Theorem 2's setting (K full-batch gradient-descent steps, m = f_i ∘ X_K), where
  ∇m(x) = (I − γA_i)^{2K} A_i (x − c_i) on quadratics: the LocalUpdate member Θ_{2K+1} (tested on
  the engine against :mod:`fedbench.algorithms.local_update` with theta = [0, …, 0, 1]);
- ``split``: b's rows are dealt round-robin into K + 1 parts (row j → part j mod (K + 1)): S_k is
  part k, S_out part K, so the inner minibatches and the outer one are disjoint (the paper's
  fixed minibatches S_1..S_K and an independent z). Every minibatch needs at least K + 1 rows
  (``local.batch_size`` ≥ K + 1, and clients of at least K + 1 rows in each batch, partial last
  batches of an epoch included): an empty part has a NaN mean loss, and the run is recorded as
  diverged. Prefer ``local.steps`` with such batch sizes.

With ``local.steps`` (or epochs) giving S minibatches, the client evaluates S such meta-gradients at
the same x and sends their mean (like Mb-SGD's clients: :mod:`fedbench.algorithms.mb_sgd`):
``{"pseudo_grad": (1/S) Σ_s g_s}``. The server is LocalUpdate's (ServerOpt on the mean message:
``server_opt`` gd, heavy_ball, nesterov or adam; :func:`fedbench.algorithms.local_update.server_step`).

Departures and choices:

- The parts of ``split`` are formed by relabelling the rows of the other parts with the padding
  label −100 (each part's loss is the mean over its own rows: the models' losses honour it), not by
  slicing: the vectorized engine's padded rows (also labelled −100, appended after the real rows)
  then never shift a real row into another part, so both engines compute the same thing.
- Weight decay λ (``local.weight_decay``) is part of the inner and outer losses; gradient clipping
  is not part of the algorithm and is an error.
- ``loss`` of the step state is the outer loss f_i(X_K(x); S_out), the loss after adaptation.

Both engines: the vectorized engine runs ``client_step`` under ``torch.func.vmap``; the meta-gradient
is ``torch.func.grad`` of a function that calls the model's ``grad_fn`` (``torch.func.grad_and_value``
inside a transform), so the second-order terms are computed per client under vmap (grad of grad
composes with vmap; tested to 1e-10 against the sequential engine).
"""

from __future__ import annotations

import torch

from fedbench.algorithms.hparams import hparam
from fedbench.algorithms.local import advance, init_step_state, sgd_step
from fedbench.algorithms.local_update import broadcast, mean_pseudo_gradient, server_init, server_step, weight_decay_of
from fedbench.algorithms.local_update import check_server_opt as _check_server_opt
from fedbench.tree import Tree, tree_add, tree_axpy, tree_vdot, tree_zeros_like

#: ``inner_steps`` K changes the inner loop's length: structural (never stacked across values).
HPARAMS: dict = {"inner_steps": 1, "inner_batches": "shared", "server_opt": "gd", "server_lr": 1.0, "momentum": 0.9,
                 "beta1": 0.9, "beta2": 0.99, "tau": 1e-3}
BOUNDS: dict[str, str] = {"inner_steps": "[1, inf)", "server_lr": "[0, inf)", "momentum": "[0, 1)",
                          "beta1": "[0, 1)", "beta2": "[0, 1)", "tau": "(0, inf)"}
STRUCTURAL_HPARAMS = ("inner_steps",)
INNER_BATCHES = ("shared", "split")
#: The label that excludes a row from a loss's mean (cross-entropy's ``ignore_index``).
IGNORE_INDEX = -100

__all__ = ["BOUNDS", "HPARAMS", "INNER_BATCHES", "STRUCTURAL_HPARAMS", "broadcast", "check_cell", "client_final",
           "client_init", "client_step", "inner_parts", "meta_gradient", "server_init", "server_update"]


def _choices(hparams: dict) -> tuple[int, str]:
    k = hparam(hparams, HPARAMS, "inner_steps")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"maml: inner_steps must be an integer >= 1 (got {k!r})")
    mode = hparam(hparams, HPARAMS, "inner_batches")
    if mode not in INNER_BATCHES:
        raise ValueError(f"maml: inner_batches must be one of {', '.join(INNER_BATCHES)} (got {mode!r})")
    return k, mode


def check_cell(hparams: dict) -> None:
    """Protocol hook (before any job): ``inner_steps``, ``inner_batches`` and ``server_opt`` are
    valid; no gradient clipping.

    Raises:
        ValueError: as said.
    """
    _choices(hparams)
    _check_server_opt(hparams)
    _check_no_clipping(hparams)


def _check_no_clipping(hparams: dict) -> None:
    if hparams.get("clip_norm") is not None:
        raise ValueError(f"maml: gradient clipping is not part of the algorithm; set local.clip_norm to null "
                         f"(got {hparams['clip_norm']!r})")


def inner_parts(x: torch.Tensor, y: torch.Tensor, inner_steps: int, mode: str) -> list[tuple]:
    """The K + 1 minibatches (S_0, …, S_{K−1}, S_out) of batch (x, y): all (x, y) for ``shared``; for
    ``split``, part k keeps the labels of rows j ≡ k (mod K + 1) and relabels the others −100."""
    if mode == "shared":
        return [(x, y)] * (inner_steps + 1)
    row = torch.arange(y.shape[0], device=y.device) % (inner_steps + 1)
    return [(x, torch.where(row == k, y, torch.full_like(y, IGNORE_INDEX))) for k in range(inner_steps + 1)]


def meta_gradient(params: Tree, batch, hparams: dict, grad_fn) -> tuple[Tree, torch.Tensor]:
    """(∇m(x), f_i(X_K(x); S_out)) at x = ``params`` (module docstring), by ``torch.func.grad``
    through the K inner steps. γ = ``lr`` and λ = ``weight_decay`` may be 0-d tensors."""
    inner_steps, mode = _choices(hparams)
    gamma = hparams["lr"]
    lam = weight_decay_of(hparams)
    parts = inner_parts(*batch, inner_steps, mode)

    def meta_loss(point: Tree):
        q = point
        for k in range(inner_steps):
            g, _ = grad_fn(q, *parts[k])
            if torch.is_tensor(lam) or lam:
                g = tree_axpy(lam, q, g)
            q = sgd_step(q, g, {"lr": gamma})
        _, outer = grad_fn(q, *parts[inner_steps])
        value = outer
        if torch.is_tensor(lam) or lam:
            value = outer + 0.5 * lam * tree_vdot(q, q)
        return value, outer.detach()

    return torch.func.grad(meta_loss, has_aux=True)(params)


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """The point x (``params``, which does not move) and ``grad_sum`` = 0; clients are stateless.

    Raises:
        ValueError: ``clip_norm`` is set, or an invalid ``inner_steps`` / ``inner_batches``.
    """
    _check_no_clipping(hparams)
    _choices(hparams)
    return init_step_state(server_state["params"], grad_sum=tree_zeros_like(server_state["params"]))


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """grad_sum += ∇m(x) on this minibatch; ``loss``: the outer loss after adaptation."""
    g, loss = meta_gradient(step_state["params"], batch, hparams, grad_fn)
    return advance({**step_state, "grad_sum": tree_add(step_state["grad_sum"], g)}, step_state["params"], loss)


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Message ``{"pseudo_grad": grad_sum / S}`` (d floats; S the steps taken, possibly a 0-d
    integer tensor under vmap); no client state."""
    steps = step_state["steps"]
    return {"pseudo_grad": {k: v / steps for k, v in step_state["grad_sum"].items()}}, None


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """x ← ServerOpt(x, q̄), q̄ the n_i-weighted mean of the clients' mean MAML gradients."""
    return server_step(server_state, mean_pseudo_gradient(messages, weights), hparams)
