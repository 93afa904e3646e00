"""Minimax problems as models: a base classifier x plus an ascent player y in one parameter dict.

Sharma, Panda & Joshi, "Federated Minimax Optimization With Client Heterogeneity", TMLR 2023, §6.
A model config ``{name: <base model>, ..., minimax: {problem: <problem>, ...}}`` wraps the base
model (:func:`fedbench.models.build_model`): its parameters gain the ascent player's leaves, named
``y.*`` (:data:`DUAL_PREFIX`), and its ``objective(params, inputs, labels)`` is f(x, y; batch)
(robust: the cross-entropy of ``apply``), so the engine's ``grad_fn`` gives ∇_x f and ∇_y f together and the minimax
algorithms (:mod:`fedbench.algorithms.sgda`) descend on x and ascend on y.

Problems:

``fair`` (eq. 8; Mohri et al. 2019, agnostic federated learning; Nouiehed et al. 2019):
    min_x max_{y ∈ Δ_C} Σ_c y_c F_c(x) − (λ/2) ‖y‖²₂, F_c(x; ξ) the mean cross-entropy of the batch
    rows of class c. Leaf ``y.class_weights`` (C,), initialized uniform 1/C; train with
    ``projection: simplex``. ``lambda`` λ ≥ 0 (default 0.1; the paper states none). A class absent
    from a batch (frequent under Dirichlet(0.1) splits; the paper does not say), ``empty_classes``:
    ``zero`` (default) F_c = 0, so its y-gradient is −λ y_c only and the simplex projection moves
    weight to the classes present; ``batch_mean`` F_c = the batch's mean loss over all its rows, so
    an absent class is neither favoured nor penalized relative to the batch. ``apply`` is the base
    model's logits (y does not enter predictions).
``robust`` (eq. 7; Sinha et al. 2017, Nouiehed et al. 2019):
    min_x max_{‖y‖₂ ≤ r} mean_j ℓ(h_x(a_j + y), b_j), y one additive input perturbation shared by all
    samples. Leaf ``y.perturbation`` of the input's shape, initialized 0; train with
    ``projection: ball`` (radius r = 1 in the paper). ``apply(params, a) = h_x(a + y)``, so the
    engine's test accuracy is the accuracy under the learned perturbation ("robust test accuracy"
    with the learned y; the paper does not state its attack). Real-valued inputs only.

Rows labelled with a negative label (the vectorized engine's padding rows) count nowhere.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.tree import Tree

#: problem -> its options and their defaults.
PROBLEMS: dict[str, dict] = {"fair": {"lambda": 0.1, "empty_classes": "zero"}, "robust": {}}
#: How ``fair`` treats a class with no row in the batch.
EMPTY_CLASSES = ("zero", "batch_mean")
#: The projection each problem's set Y needs (checked by the config against the algorithm's).
PROJECTION = {"fair": "simplex", "robust": "ball"}
#: Parameter names of the ascent player y start with this prefix; every other leaf is x.
DUAL_PREFIX = "y."


def options(cfg) -> dict:
    """The ``minimax`` option in canonical form ``{"problem": ..., **options}`` (defaults filled).

    Raises:
        ValueError: not a mapping, an unknown problem or option, or λ not a number ≥ 0.
    """
    if not isinstance(cfg, dict) or "problem" not in cfg:
        raise ValueError(f"option 'minimax' must be a mapping with a 'problem' ({', '.join(PROBLEMS)}); got {cfg!r}")
    problem = cfg["problem"]
    if problem not in PROBLEMS:
        raise ValueError(f"minimax problem must be one of {', '.join(PROBLEMS)} (got {problem!r})")
    unknown = sorted(set(cfg) - {"problem"} - set(PROBLEMS[problem]))
    if unknown:
        raise ValueError(f"minimax problem {problem!r} has no option {', '.join(map(repr, unknown))}; "
                         f"allowed: {', '.join(PROBLEMS[problem]) or 'none'}")
    out = {"problem": problem, **PROBLEMS[problem], **{k: v for k, v in cfg.items() if k != "problem"}}
    if problem == "fair":
        lam = out["lambda"]
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not np.isfinite(lam) or lam < 0:
            raise ValueError(f"minimax option 'lambda' must be a number >= 0 (got {lam!r})")
        out["lambda"] = float(lam)
        if out["empty_classes"] not in EMPTY_CLASSES:
            raise ValueError(f"minimax option 'empty_classes' must be one of {', '.join(EMPTY_CLASSES)} "
                             f"(got {out['empty_classes']!r})")
    return out


def _split(params: Tree) -> tuple[Tree, Tree]:
    return ({k: v for k, v in params.items() if not k.startswith(DUAL_PREFIX)},
            {k: v for k, v in params.items() if k.startswith(DUAL_PREFIX)})


def wrap(base, opts: dict, input_shape: tuple, num_classes: int):
    """The minimax :class:`fedbench.models.Model` of ``base`` for the checked options ``opts``.

    Raises:
        ValueError: an unknown problem.
    """
    from fedbench.models import Model

    problem = opts["problem"]
    if problem == "fair":
        lam = float(opts["lambda"])
        classes = int(num_classes)
        batch_mean = opts.get("empty_classes", "zero") == "batch_mean"

        def init(rng: np.random.Generator, dtype: torch.dtype = torch.float32, seed: int | None = None) -> Tree:
            y = torch.full((classes,), 1.0 / classes, dtype=dtype)
            return {**base.init(rng, dtype, seed), "y.class_weights": y}

        def apply(params: Tree, inputs: torch.Tensor) -> torch.Tensor:
            return base.apply(_split(params)[0], inputs)

        def loss(params: Tree, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            y = params["y.class_weights"]
            logits = apply(params, inputs)
            ce = F.cross_entropy(logits, labels.clamp(min=0), reduction="none")
            onehot = (labels.unsqueeze(1) == torch.arange(classes, device=labels.device)).to(logits.dtype)
            counts = onehot.sum(0)
            per_class = (onehot * ce.unsqueeze(1)).sum(0) / counts.clamp(min=1.0)
            if batch_mean:  # absent classes: the mean over the batch's real rows
                real = (labels >= 0).to(logits.dtype)
                mean = (ce * real).sum() / real.sum().clamp(min=1.0)
                per_class = torch.where(counts > 0, per_class, mean)
            return (y * per_class).sum() - 0.5 * lam * (y * y).sum()

        return Model(init, apply, base.batch_clients_on_cpu, base.loss, objective=loss)
    if problem == "robust":
        shape = tuple(int(s) for s in input_shape)

        def init(rng: np.random.Generator, dtype: torch.dtype = torch.float32, seed: int | None = None) -> Tree:
            return {**base.init(rng, dtype, seed), "y.perturbation": torch.zeros(shape, dtype=dtype)}

        def apply(params: Tree, inputs: torch.Tensor) -> torch.Tensor:
            x, y = _split(params)
            return base.apply(x, inputs + y["y.perturbation"])

        return Model(init, apply, base.batch_clients_on_cpu, base.loss)
    raise ValueError(f"minimax problem must be one of {', '.join(PROBLEMS)} (got {problem!r})")
