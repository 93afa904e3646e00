"""The ℓ2-regularized binary logistic objective over a whole data set, in float64.

    F(w) = (1/N) Σ_i log(1 + exp(−y_i x_iᵀw)) + (λ/2)‖w‖²,   y_i = +1 for label 1, −1 for label 0,
    ∇F(w) = −(1/N) Σ_i y_i σ(−y_i x_iᵀw) x_i + λ w.

Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §5: the objective
whose suboptimality F(w) − F* on the full training set is every figure's metric (the paper's
"regularized population loss"). Its data term is what :mod:`fedbench.models.binary_logreg` trains.

Numerics: everything in float64 whatever the storage dtype of x (float32 rows are cast exactly);
log(1 + e^a) as logaddexp(0, a) and σ as the logistic function of scipy / torch, stable for any
margin (|x_iᵀw| = 1000 gives 1000 or 0, not inf). Rows are processed in chunks of at most
``chunk_elements`` entries, so the float64 copy of x never exceeds one chunk (epsilon's 400,000 x
2,000 float32 rows are never held twice).

Inputs:
    w: (D,) or a stack of S vectors (S, D): numpy array or torch tensor (any float dtype).
    x: (N, D): a dense numpy array, a scipy.sparse matrix (CSR best) or a torch tensor (computed
       on its device, returned as numpy).
    y: (N,) labels in {0, 1} (as fedbench stores them), numpy or torch.
    lam: λ ≥ 0.
Outputs are numpy float64: F a float for w (D,) or (S,) for (S, D); ∇F the shape of w.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse
import scipy.special
import torch

#: Entries of x cast to float64 at a time (2**24: 128 MiB).
CHUNK_ELEMENTS = 1 << 24


def objective(w, x, y, lam: float, *, chunk_elements: int = CHUNK_ELEMENTS):
    """F(w) (module docstring): a float for w (D,), (S,) float64 for a stack w (S, D).

    Raises:
        ValueError: shapes that do not match, labels outside {0, 1}, λ < 0 or not finite.
    """
    return _evaluate(w, x, y, lam, chunk_elements, grad=False)[0]


def gradient(w, x, y, lam: float, *, chunk_elements: int = CHUNK_ELEMENTS) -> np.ndarray:
    """∇F(w) (module docstring), float64 of w's shape ((D,) or (S, D)).

    Raises:
        ValueError: as :func:`objective`.
    """
    return _evaluate(w, x, y, lam, chunk_elements, grad=True)[1]


def value_and_grad(w, x, y, lam: float, *, chunk_elements: int = CHUNK_ELEMENTS):
    """(F(w), ∇F(w)) in one pass over x (for a solver: ``scipy.optimize.minimize(..., jac=True)``).

    Raises:
        ValueError: as :func:`objective`.
    """
    return _evaluate(w, x, y, lam, chunk_elements, grad=True)


def _check(w: np.ndarray, x, y: np.ndarray, lam: float) -> None:
    if getattr(x, "ndim", None) != 2:
        raise ValueError(f"x must be 2-D (N, D); got shape {tuple(getattr(x, 'shape', ()))}")
    n, d = x.shape
    if w.ndim not in (1, 2) or w.shape[-1] != d:
        raise ValueError(f"w must be (D,) or (S, D) with D = {d} (x's columns); got shape {w.shape}")
    if y.shape != (n,):
        raise ValueError(f"y must be (N,) with N = {n} (x's rows); got shape {y.shape}")
    if n == 0:
        raise ValueError("x has no rows: the objective is a mean over samples")
    if not np.isin(y, (0, 1)).all():
        raise ValueError(f"labels must be 0 or 1 (label 1 is y = +1); got values {np.unique(y)[:5].tolist()}")
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam (the l2 weight λ) must be finite and >= 0; got {lam!r}")


def _evaluate(w, x, y, lam: float, chunk_elements: int, grad: bool):
    w = w.detach().cpu().numpy() if torch.is_tensor(w) else np.asarray(w)
    y = y.detach().cpu().numpy() if torch.is_tensor(y) else np.asarray(y)
    lam = float(lam)
    _check(w, x, y, lam)
    W = w.astype(np.float64).reshape(-1, w.shape[-1]).T  # (D, S)
    s = 2.0 * y.astype(np.float64) - 1.0                 # (N,) in {−1, +1}
    if scipy.sparse.issparse(x) and x.format != "csr":
        x = x.tocsr()  # row slices of CSR are cheap; COO / CSC are converted once
    n, d = x.shape
    rows = max(1, int(chunk_elements) // max(d, 1))
    chunk = _torch_chunk if torch.is_tensor(x) else _numpy_chunk
    data = np.zeros(W.shape[1])
    g = np.zeros_like(W) if grad else None
    for i in range(0, n, rows):
        loss_sum, grad_sum = chunk(x[i:i + rows], s[i:i + rows], W, grad)
        data += loss_sum
        if grad:
            g += grad_sum
    value = data / n + 0.5 * lam * np.einsum("ds,ds->s", W, W)
    value = value.reshape(w.shape[:-1])
    value = float(value) if w.ndim == 1 else value
    if not grad:
        return value, None
    return value, (g / n + lam * W).T.reshape(w.shape)


def _numpy_chunk(xc, s: np.ndarray, W: np.ndarray, grad: bool):
    """Σ over the chunk's rows of log(1 + e^{−s z}) (S,) and of −s σ(−s z) x (D, S), z = x W."""
    if scipy.sparse.issparse(xc):
        xc = scipy.sparse.csr_matrix(xc, dtype=np.float64)
        z = np.asarray(xc @ W)
    else:
        xc = np.asarray(xc, dtype=np.float64)
        z = xc @ W
    a = -s[:, None] * z                                    # (n, S): −y z
    loss = np.logaddexp(0.0, a).sum(axis=0)
    if not grad:
        return loss, None
    coef = -s[:, None] * scipy.special.expit(a)            # d/dz log(1 + e^{−y z}) = −y σ(−y z)
    return loss, np.asarray(xc.T @ coef)


def _torch_chunk(xc: torch.Tensor, s: np.ndarray, W: np.ndarray, grad: bool):
    """:func:`_numpy_chunk` for a torch chunk, on its device, in float64."""
    xc = xc.to(torch.float64)
    st = torch.from_numpy(s).to(xc.device)[:, None]
    a = -st * (xc @ torch.from_numpy(W).to(xc.device))
    loss = torch.logaddexp(torch.zeros((), dtype=torch.float64, device=xc.device), a).sum(dim=0)
    if not grad:
        return loss.cpu().numpy(), None
    coef = -st * torch.sigmoid(a)
    return loss.cpu().numpy(), (xc.T @ coef).cpu().numpy()


__all__ = ["CHUNK_ELEMENTS", "gradient", "objective", "value_and_grad"]
