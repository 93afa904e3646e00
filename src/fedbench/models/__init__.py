"""Models written as pure functions of a parameter dict.

A :class:`Model` is a pair of functions:

``init(rng, dtype=torch.float32, seed=None) -> params``
    ``rng`` is a :class:`numpy.random.Generator` (keyed ``(seed, 0, -1, "init")`` by the engine;
    ``seed``, the run's seed, is read only by ``binary_logreg``'s ``init: numpy_legacy``);
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
  model (2-class datasets only); ``init``: ``normal`` (w₀ ~ N(0, I)), ``zeros``, or ``numpy_legacy``
  (the FedAc authors' exact w₀ for the run's seed).
- ``mlp`` (:mod:`.mlp`): ``hidden`` sizes, ReLU.
- ``cnn`` (:mod:`.cnn`): the FedAvg-paper CNN; ``channels``, ``kernel_size``, ``hidden``, ``padding``.
- ``lstm`` (:mod:`.lstm`): the Shakespeare character LSTM; ``vocab_size``, ``embed_dim``, ``hidden``
  (one LSTM layer per entry). Input: (B, T) integer character ids.
- ``resnet18_gn`` (:mod:`.resnet18_gn`): ResNet-18 with GroupNorm (``groups``, default 2), CIFAR stem;
  Charles & Konečný's CIFAR-100 model (after Reddi et al. 2021). Images only.
- ``vgg11`` (:mod:`.vgg11`): VGG-11 (configuration A) for ≥ 32×32 images with one linear head;
  ``norm`` ``none`` (default) or ``group`` (``groups``). Sharma et al.'s CIFAR-10 model.
- ``quadratic`` (:mod:`.quadratic`): least squares on the rows [a, t] of the federated quadratic
  problem (:mod:`fedbench.data.quadratic`); ``init``: ``zeros`` or ``normal``. Not a classifier:
  it declares its own loss ½(aᵀx − t)² (``Model.loss``) and has no accuracy.

Any classifier (not ``lstm``, not ``quadratic``) takes the option ``minimax: {problem: fair |
robust, ...}`` (:mod:`.minimax`): the model plus an ascent player y, for the minimax algorithms.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.models import binary_logreg, cnn, logreg, lstm, mlp, quadratic, resnet18_gn, vgg11
from fedbench.params import resolve_params
from fedbench.tree import Tree, tree_numel


class Model(NamedTuple):
    """``init(rng, dtype=torch.float32, seed=None) -> params`` and ``apply(params, x) -> logits``.

    ``batch_clients_on_cpu``: whether stacking clients under ``vmap`` is faster per client than
    one client at a time on CPU, as measured for the model's layers (False for the CNN and the
    LSTM; see :data:`fedbench.models.cnn.BATCH_CLIENTS_ON_CPU` and
    :data:`fedbench.models.lstm.BATCH_CLIENTS_ON_CPU`). The vectorized engine's automatic chunk
    size is 1 on CPU when it is False.

    ``loss``: None for a classifier (``apply`` gives logits; the loss is cross-entropy and the
    evaluation reports accuracy), or ``loss(outputs, y, reduction) -> 0-d tensor`` for a model that
    declares its own (the quadratic model: ½ r²; ``reduction`` "mean" over the rows whose label is
    not −100, or "sum"); such a model has no accuracy (NaN).
    """

    init: Callable[..., Tree]
    apply: Callable[[Tree, torch.Tensor], torch.Tensor]
    batch_clients_on_cpu: bool = True
    loss: Callable[..., torch.Tensor] | None = None
    #: ``objective(params, x, y) -> 0-d tensor``: the training objective when it needs more than the
    #: outputs (a minimax model's f(x, y; batch), :mod:`fedbench.models.minimax`); None: the loss
    #: above (or cross-entropy). Training only: evaluation still uses ``apply`` and ``loss``.
    objective: Callable[[Tree, torch.Tensor, torch.Tensor], torch.Tensor] | None = None


MODELS: dict[str, dict] = {
    "logreg": {},
    "mlp": {"hidden": [200, 200]},
    "cnn": {"channels": [32, 64], "kernel_size": 5, "hidden": [512], "padding": "same"},
    "lstm": {"vocab_size": 80, "embed_dim": 8, "hidden": [100, 100]},
    "binary_logreg": {"init": "normal"},
    "quadratic": {"init": "zeros"},
    "resnet18_gn": {"groups": 2},
    "vgg11": {"norm": "none", "groups": 2},
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
    minimax_cfg = cfg.get("minimax") if isinstance(cfg, dict) else None
    if minimax_cfg is not None:
        cfg = {k: v for k, v in cfg.items() if k != "minimax"}
    name, opts = resolve_params(cfg, "name", MODELS, "model")
    if minimax_cfg is not None:  # only when given: every other model keeps its options (and spec)
        from fedbench.models import minimax

        if name in ("lstm", "quadratic"):
            raise ValueError(f"model {name!r}: option 'minimax' needs real-valued inputs and a classifier head "
                             "(logreg, mlp, cnn, vgg11, resnet18_gn)")
        opts["minimax"] = minimax.options(minimax_cfg)
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
    if name == "quadratic" and opts["init"] not in quadratic.INITS:
        raise ValueError(f"model {name!r}: 'init' must be one of {quadratic.INITS}; got {opts['init']!r}")
    if name == "binary_logreg" and opts["init"] not in binary_logreg.INITS:
        raise ValueError(f"model {name!r}: 'init' must be one of {binary_logreg.INITS}; got {opts['init']!r}")
    if name == "resnet18_gn":
        resnet18_gn.check_groups(opts["groups"])
    if name == "vgg11":
        vgg11.check_options(opts["norm"], opts["groups"])
    if "padding" in opts and opts["padding"] not in cnn.PADDINGS:
        raise ValueError(f"model {name!r}: 'padding' must be one of {cnn.PADDINGS}; got {opts['padding']!r}")
    return name, opts


_MODULES = {"logreg": logreg, "binary_logreg": binary_logreg, "mlp": mlp, "cnn": cnn, "lstm": lstm,
            "quadratic": quadratic, "resnet18_gn": resnet18_gn, "vgg11": vgg11}


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
    minimax_opts = opts.pop("minimax", None)
    input_shape = tuple(int(v) for v in input_shape)
    num_classes = int(num_classes)
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1 (got {num_classes})")
    check_classes(name, num_classes)
    if name == "cnn":  # check the input shape now, not at the first forward pass
        cnn.feature_size(input_shape, opts["channels"], opts["kernel_size"], opts["padding"])
    if name == "vgg11":
        vgg11.feature_shape(input_shape)
    module = _MODULES[name]

    def init(rng: np.random.Generator, dtype: torch.dtype = torch.float32, seed: int | None = None) -> Tree:
        # the run's seed reaches only binary_logreg, whose init "numpy_legacy" draws from it
        return module.init(rng, input_shape, num_classes, dtype, **opts, **({"seed": seed} if module is binary_logreg
                                                                            else {}))

    if name == "cnn":
        apply = functools.partial(cnn.apply, input_shape=cnn.image_shape(input_shape), padding=opts["padding"])
    elif name in ("resnet18_gn", "vgg11"):
        apply = functools.partial(module.apply, input_shape=cnn.image_shape(input_shape), groups=opts["groups"])
    else:
        apply = module.apply
    model = Model(init, apply, getattr(module, "BATCH_CLIENTS_ON_CPU", True), getattr(module, "loss", None))
    if minimax_opts is not None:
        from fedbench.models import minimax

        model = minimax.wrap(model, minimax_opts, input_shape, num_classes)
    return model


def make_loss_fn(model: Model) -> Callable[[Tree, torch.Tensor, torch.Tensor], torch.Tensor]:
    """``loss_fn(params, x, y) -> 0-d tensor``: the model's ``objective`` when it has one (a minimax
    model's f(x, y; batch)); else mean cross-entropy of ``model.apply(params, x)``, or the model's
    own loss (``model.loss``, mean reduction) when it declares one."""
    if model.objective is not None:
        return model.objective
    if model.loss is not None:
        own = model.loss

        def own_loss_fn(params: Tree, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return own(model.apply(params, x), y)

        return own_loss_fn

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
    linear models (:mod:`fedbench.engine.linear_fast.logits`) writes this gradient out for the models it knows.
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
