"""Binary logistic regression without bias: the model of FedAc's experiments.

Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §5 (and App. A):
ℓ2-regularized logistic regression F(w) = (1/N) Σ_i log(1 + exp(−y_i x_iᵀw)) + (λ/2)‖w‖² with
y ∈ {−1, +1}, no intercept. The data term is what the engine trains (its softmax cross-entropy,
:func:`fedbench.models.make_loss_fn`); the (λ/2)‖w‖² term is the local ``weight_decay`` λ, and
the whole objective in float64, with its gradient and optimum, is :mod:`fedbench.metrics.optimum`.

Shapes:
    params: ``weight`` (D,), D = prod(input_shape).
    x: (B, *input_shape) → logits (B, 2) = [0, xᵀw].

Labels as fedbench stores them (:mod:`fedbench.data.libsvm`): class 1 ↔ y = +1, class 0 ↔ y = −1.

Why the logits [0, z] (z = xᵀw) make the engine's loss exactly the paper's: softmax cross-entropy
of logits l and class c is logsumexp(l) − l_c = log(1 + e^z) − l_c. Class 1 (y = +1):
log(1 + e^z) − z = log(1 + e^{−z}); class 0 (y = −1): log(1 + e^z) − 0. Both are
log(1 + exp(−y z)), an identity, not an approximation; its gradient in z is
σ(z) − [c = 1] = −y σ(−y z), the paper's. Numerically torch evaluates logsumexp with the max
subtracted, so the loss agrees with log1p(exp(−y z)) to a few float64 ulps of max(1, |z|)
(``tests/models/test_binary_logreg.py``: 1e-14 absolute).

Initialisation: w₀ ~ N(0, I_D). The paper says "the same random initialization for all algorithms
under all settings"; the authors' code draws ``np.random.randn(d)`` after ``np.random.seed(seed)``.
``init: normal`` (the default) draws the same distribution from fedbench's keyed init generator
(``rng.standard_normal(D)``, keyed ``(seed, 0, -1, "init")`` by the engine: the same w₀ for every
algorithm of a seed). ``init: numpy_legacy`` draws the authors' exact vector for the run's seed:
numpy's legacy ``RandomState(seed).standard_normal(D)``, which is what ``np.random.seed(seed)``
then ``np.random.randn(D)`` returns. It matters on a9a: at large M the runs are nearly
deterministic and their best suboptimality depends on w₀ (full-gradient descent at η = 2 for 256
steps, Mb-SGD's limit at M = 8,192, K = 16 under λ = 1e-3, reaches 0.0090 from the authors' seed-1
vector, as their published run does, and 0.012–0.017 from seeds 0, 2, 3). ``init: zeros`` gives
w₀ = 0 (the start of the theory's examples), for which the generator is unused.
"""

from __future__ import annotations

import numpy as np
import torch

from fedbench.tree import Tree

#: The number of classes this model fits: datasets with any other number are refused.
NUM_CLASSES = 2
#: ``init`` option values: w₀ ~ N(0, I) from the keyed generator, w₀ = 0, or the authors' w₀ for the seed.
INITS = ("normal", "zeros", "numpy_legacy")


def init(rng: np.random.Generator, input_shape: tuple, num_classes: int, dtype: torch.dtype = torch.float32,
         init: str = "normal", seed: int | None = None) -> Tree:
    """Parameters ``{"weight": (D,)}``, D = prod(input_shape).

    ``init="normal"``: w₀ = ``rng.standard_normal(D)`` in float64, then cast (identical on every
    device); ``"numpy_legacy"``: w₀ = ``np.random.RandomState(seed).standard_normal(D)``, the
    authors' vector for ``seed`` (module docstring), ``rng`` unused; ``"zeros"``: w₀ = 0.

    Raises:
        ValueError: ``num_classes`` is not 2, an unknown ``init``, or ``numpy_legacy`` without a
            seed (an integer in [0, 2³²)).
    """
    if int(num_classes) != NUM_CLASSES:
        raise ValueError(f"binary_logreg fits datasets with exactly 2 classes (labels 0/1), got {num_classes}")
    d = int(np.prod(input_shape))
    if init == "normal":
        return {"weight": torch.from_numpy(rng.standard_normal(d)).to(dtype)}
    if init == "numpy_legacy":
        if seed is None or not 0 <= int(seed) < 2**32:
            raise ValueError(f"binary_logreg: init 'numpy_legacy' needs the run's seed, an integer in [0, 2**32); "
                             f"got {seed!r}")
        return {"weight": torch.from_numpy(np.random.RandomState(int(seed)).standard_normal(d)).to(dtype)}
    if init == "zeros":
        return {"weight": torch.zeros(d, dtype=dtype)}
    raise ValueError(f"binary_logreg: init must be one of {INITS}; got {init!r}")


def apply(params: Tree, x: torch.Tensor) -> torch.Tensor:
    """Logits [0, xᵀw] (B, 2) for x (B, *input_shape): their softmax cross-entropy is
    log(1 + exp(−y xᵀw)) (module docstring). Pure, vmap- and grad-safe."""
    z = x.flatten(start_dim=1) @ params["weight"]
    return torch.stack([torch.zeros_like(z), z], dim=1)
