"""Models written as pure functions of a parameter dict.

A :class:`Model` is a pair of functions:

``init(rng, dtype=torch.float32) -> params``
    ``rng`` is a :class:`numpy.random.Generator` (keyed ``(seed, 0, -1, "init")`` by the engine);
    every tensor is drawn with numpy in float64 and converted with ``torch.from_numpy``, so the
    initial model is identical on every device. Parameters are a flat ``dict[str, Tensor]`` on
    the CPU, named as the equivalent ``nn.Module``'s ``state_dict`` (``fc1.weight``, …).

``apply(params, x) -> logits``
    x: (B, *input_shape) → (B, num_classes). Pure torch.nn.functional code (no in-place ops), so
    it runs under ``torch.func.grad`` and ``torch.func.vmap``.

Models that fit only a given number of classes declare it as ``NUM_CLASSES`` in their module
(:func:`check_classes`; the config checks it before any job, :func:`build_model` again).

Models and their options (defaults in :data:`MODELS`):

- ``logreg`` (:mod:`.logreg`): multinomial logistic regression on the flattened input.
- ``binary_logreg`` (:mod:`.binary_logreg`): binary logistic regression without bias, FedAc's
  model (2-class datasets only); ``init``: ``normal`` (w₀ ~ N(0, I), the authors' code) or ``zeros``.
- ``mlp`` (:mod:`.mlp`): ``hidden`` sizes, ReLU.
- ``cnn`` (:mod:`.cnn`): the FedAvg-paper CNN; ``channels``, ``kernel_size``, ``hidden``, ``padding``.
- ``lstm`` (:mod:`.lstm`): the Shakespeare character LSTM; ``vocab_size``, ``embed_dim``, ``hidden``
  (one LSTM layer per entry). Input: (B, T) integer character ids.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.models import binary_logreg, cnn, logreg, lstm, mlp
from fedbench.params import resolve_params
from fedbench.tree import Tree, tree_numel


class Model(NamedTuple):
    """``init(rng, dtype=torch.float32) -> params`` and ``apply(params, x) -> logits``.

    ``batch_clients_on_cpu``: whether stacking clients under ``vmap`` is faster per client than
    one client at a time on CPU, as measured for the model's layers (False for the CNN and the
    LSTM; see :data:`fedbench.models.cnn.BATCH_CLIENTS_ON_CPU` and
    :data:`fedbench.models.lstm.BATCH_CLIENTS_ON_CPU`). The vectorized engine's automatic chunk
    size is 1 on CPU when it is False.
    """

    init: Callable[..., Tree]
    apply: Callable[[Tree, torch.Tensor], torch.Tensor]
    batch_clients_on_cpu: bool = True


MODELS: dict[str, dict] = {
    "logreg": {},
    "mlp": {"hidden": [200, 200]},
    "cnn": {"channels": [32, 64], "kernel_size": 5, "hidden": [512], "padding": "same"},
    "lstm": {"vocab_size": 80, "embed_dim": 8, "hidden": [100, 100]},
    "binary_logreg": {"init": "normal"},
}


def _int_list(name: str, key: str, value) -> list[int]:
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0 for v in value
    ):
        raise ValueError(f"model {name!r}: option {key!r} must be a list of positive integers; got {value!r}")
    return [int(v) for v in value]


def model_options(cfg: dict) -> tuple[str, dict]:
    """(name, options with defaults filled in) for a model config ``{"name": ..., **options}``.

    Raises:
        ValueError: no name, unknown model or option (:func:`fedbench.params.resolve_params`),
            or an ill-typed option value.
    """
    name, opts = resolve_params(cfg, "name", MODELS, "model")
    for key in ("hidden", "channels"):
        if key in opts:
            opts[key] = _int_list(name, key, opts[key])
    if "channels" in opts and not opts["channels"]:
        raise ValueError(f"model {name!r}: 'channels' needs at least one convolution")
    if name == "lstm" and not opts["hidden"]:
        raise ValueError(f"model {name!r}: 'hidden' needs at least one LSTM layer")
    for key in ("vocab_size", "embed_dim"):
        if key in opts:
            v = opts[key]
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"model {name!r}: {key!r} must be a positive integer; got {v!r}")
            opts[key] = int(v)
    if "kernel_size" in opts:
        k = opts["kernel_size"]
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
            raise ValueError(f"model {name!r}: 'kernel_size' must be a positive integer; got {k!r}")
        opts["kernel_size"] = int(k)
    if name == "binary_logreg" and opts["init"] not in binary_logreg.INITS:
        raise ValueError(f"model {name!r}: 'init' must be one of {binary_logreg.INITS}; got {opts['init']!r}")
    if "padding" in opts and opts["padding"] not in cnn.PADDINGS:
        raise ValueError(f"model {name!r}: 'padding' must be one of {cnn.PADDINGS}; got {opts['padding']!r}")
    return name, opts


_MODULES = {"logreg": logreg, "binary_logreg": binary_logreg, "mlp": mlp, "cnn": cnn, "lstm": lstm}


def check_classes(name: str, num_classes: int | None) -> None:
    """Check that model ``name`` fits a dataset of ``num_classes`` classes (None: not known yet,
    nothing to check). Only models whose module sets ``NUM_CLASSES`` (``binary_logreg``: 2) are
    restricted; the others take any number.

    Raises:
        ValueError: the model needs another number of classes; the message says which and what
            to use instead.
    """
    need = getattr(_MODULES.get(name), "NUM_CLASSES", None)
    if need is not None and num_classes is not None and int(num_classes) != need:
        raise ValueError(f"model {name!r} fits datasets with exactly {need} classes, but this one has "
                         f"{int(num_classes)}: use a binary dataset (a9a, epsilon) or model logreg")


def build_model(cfg: dict, input_shape: tuple, num_classes: int) -> Model:
    """The :class:`Model` for config ``cfg`` on inputs of shape ``input_shape`` with ``num_classes``.

    Raises:
        ValueError: unknown model or option (see :func:`model_options`), an input shape the
            model cannot take (e.g. an image too small for the CNN), or a number of classes it
            cannot fit (:func:`check_classes`).
    """
    name, opts = model_options(cfg)
    input_shape = tuple(int(v) for v in input_shape)
    num_classes = int(num_classes)
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1 (got {num_classes})")
    check_classes(name, num_classes)
    if name == "cnn":  # check the input shape now, not at the first forward pass
        cnn.feature_size(input_shape, opts["channels"], opts["kernel_size"], opts["padding"])
    module = _MODULES[name]

    def init(rng: np.random.Generator, dtype: torch.dtype = torch.float32) -> Tree:
        return module.init(rng, input_shape, num_classes, dtype, **opts)

    if name == "cnn":
        apply = functools.partial(cnn.apply, input_shape=cnn.image_shape(input_shape), padding=opts["padding"])
    else:
        apply = module.apply
    return Model(init, apply, getattr(module, "BATCH_CLIENTS_ON_CPU", True))


def make_loss_fn(model: Model) -> Callable[[Tree, torch.Tensor, torch.Tensor], torch.Tensor]:
    """``loss_fn(params, x, y) -> 0-d tensor``: mean cross-entropy of ``model.apply(params, x)``."""

    def loss_fn(params: Tree, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(model.apply(params, x), y)

    return loss_fn


def make_grad_fn(model: Model) -> Callable[[Tree, torch.Tensor, torch.Tensor], tuple[Tree, torch.Tensor]]:
    """``grad_fn(params, x, y) -> (grads, loss)``: gradient of the mean cross-entropy and its value.

    Pure for its caller (no in-place updates of ``params``, no ``.item()``), so it composes with
    :func:`torch.func.vmap` over a client dimension. Two routes to the same gradient:

    - inside a ``torch.func`` transform (the vectorized engine's vmapped chunks):
      :func:`torch.func.grad_and_value`;
    - called on plain tensors (the sequential reference, and the vectorized engine's one-client
      chunks): ``torch.autograd.grad`` on detached leaf copies of ``params``. Same autograd
      graph, but the model's forward sees ordinary tensors, so it may use kernels that have no
      batching rule (the LSTM's fused ``torch.lstm``: 2.2x faster per client-step than our
      explicit cell on CPU, ``tests/models/test_lstm.py``); under ``torch.func.grad`` that kernel
      falls back to a slow composite path.

    Grads of parameters the loss does not touch are zeros, as ``grad_and_value`` gives them.
    The function carries ``model_apply`` (``model.apply``): the vectorized engine's fast path for
    linear models (:mod:`fedbench.engine.linear_steps`) writes this gradient out for the models it knows.
    """
    loss_fn = make_loss_fn(model)
    transformed = torch.func.grad_and_value(loss_fn)

    def grad_fn(params: Tree, x: torch.Tensor, y: torch.Tensor) -> tuple[Tree, torch.Tensor]:
        if torch._C._are_functorch_transforms_active():
            return transformed(params, x, y)
        leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
        with torch.enable_grad():
            loss = loss_fn(leaves, x, y)
            grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True, materialize_grads=True)
        return dict(zip(leaves, grads)), loss.detach()

    grad_fn.model_apply = model.apply  # what it differentiates (the engine's fast path reads it)
    return grad_fn


def num_parameters(params: Tree) -> int:
    """Total number of scalars in a parameter dict."""
    return tree_numel(params)


__all__ = ["MODELS", "Model", "build_model", "check_classes", "make_grad_fn", "make_loss_fn", "model_options",
           "num_parameters"]
