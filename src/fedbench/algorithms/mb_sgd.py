"""Mb-SGD: minibatch SGD, the baseline of Yuan & Ma, "Federated Accelerated Stochastic Gradient
Descent", NeurIPS 2020, §5 (after Dekel et al., "Optimal Distributed Online Prediction Using
Mini-Batches", JMLR 2012).

One SGD step per round with one large minibatch: every sampled client k evaluates its K local
minibatch gradients at the *same* broadcast point w (its model does not move within the round)
and sends their mean

    ḡ_k = (1/K) Σ_{s=1}^{K} ∇f(w; b_{k,s})                        (d floats)

and the server steps with the mean over clients plus the ℓ2 term (λ = ``weight_decay``):

    ḡ = Σ_k n_k ḡ_k / Σ_k n_k,      w ← w − η (ḡ + λ w)

With M clients of K steps and batch size b this is SGD with batch M·K·b for R = T/K steps: the
same rounds and the same gradient budget per client as FedAvg with K local steps. With K = 1 it
is FedAvg (with weight decay λ) exactly, up to rounding (tested).

Departures and choices:

- The clients' means are weighted by their sample counts n_k, as FedAvg's are in fedbench; the
  paper's homogeneous workers average plainly (the same thing on equal-sized partitions).
- Local work may be given in steps (the paper's K) or in epochs (then each batch of the client's
  epochs counts once in ḡ_k, a last partial batch as much as a full one).
- Gradient clipping (``local.clip_norm``) is not part of the algorithm and is an error.
"""

from __future__ import annotations

from fedbench.algorithms.local import advance, init_step_state
from fedbench.tree import Tree, messages_weighted_mean, tree_add, tree_zeros_like

HPARAMS: dict = {}
BOUNDS: dict[str, str] = {}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "check_cell", "check_no_clipping", "client_final", "client_init",
           "client_step", "gradient_state", "mean_gradient", "server_init", "server_update"]


def check_no_clipping(hparams: dict, name: str) -> None:
    """Raises ValueError when ``clip_norm`` is set (the minibatch baselines do not clip)."""
    if hparams.get("clip_norm") is not None:
        raise ValueError(f"{name}: gradient clipping is not part of the algorithm; set local.clip_norm to null "
                         f"(got {hparams['clip_norm']!r})")


def check_cell(hparams: dict) -> None:
    """Protocol hook (before any job): Mb-SGD has no gradient clipping.

    Raises:
        ValueError: ``clip_norm`` set.
    """
    check_no_clipping(hparams, "mb_sgd")


def gradient_state(point: Tree) -> dict:
    """Step state of a client that only evaluates gradients at ``point``: ``{"params": point,
    "grad_sum": 0, "steps": 0, "loss": NaN}``."""
    return init_step_state(point, grad_sum=tree_zeros_like(point))


def mean_gradient(messages: list[dict], weights) -> Tree:
    """ḡ = Σ_k n_k ḡ_k / Σ_k n_k over the round's messages (``"grad"`` entries)."""
    return messages_weighted_mean(messages, "grad", weights)


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": w⁰}``."""
    return {"params": params}


def broadcast(server_state: dict) -> dict[str, Tree]:
    """``{"params": w}`` (d floats)."""
    return {"params": server_state["params"]}


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """Gradients are taken at w (``params``), summed in ``grad_sum``; clients are stateless.

    Raises:
        ValueError: ``clip_norm`` is set.
    """
    check_no_clipping(hparams, "mb_sgd")
    return gradient_state(server_state["params"])


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """grad_sum += ∇f(w; b); the point w does not move. ``loss``: the minibatch loss at w."""
    x, y = batch
    grads, loss = grad_fn(step_state["params"], x, y)
    return advance({**step_state, "grad_sum": tree_add(step_state["grad_sum"], grads)}, step_state["params"], loss)


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, None]:
    """Message ``{"grad": ḡ_k = grad_sum / K}`` (d floats; K the steps taken, possibly a 0-d
    integer tensor under vmap); no client state."""
    steps = step_state["steps"]
    return {"grad": {k: v / steps for k, v in step_state["grad_sum"].items()}}, None


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """w ← w − η (ḡ + λ w), η = ``lr``, λ = ``weight_decay``."""
    w, g = server_state["params"], mean_gradient(messages, weights)
    eta, lam = float(hparams["lr"]), float(hparams.get("weight_decay") or 0.0)
    return {**server_state, "params": {k: w[k] - eta * (g[k] + lam * w[k]) for k in w}}
