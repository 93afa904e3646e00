"""F*, the optimum of ℓ2-regularised binary logistic regression, by a deterministic reference solver.

The objective is the one of Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS
2020, Section 5 and Appendix A ("ℓ2-regularized logistic regression", the full training set):

    F(w) = (1/N) Σ_i log(1 + exp(−y_i x_iᵀw)) + (λ/2)‖w‖²,    y_i ∈ {−1, +1},

no intercept, natural log, the regulariser on every weight. The paper reports suboptimality F(w) − F*
against a "pre-computed optimum" without saying how it was computed; this module computes it to a
gradient norm of 1e-12 (float64), so that F* is exact to about ‖∇F‖²/(2λ) ≤ 1e-20 for λ ≥ 1e-4.

Labels may be given as {−1, +1} or as {0, 1} (fedbench's datasets store {0, 1}: 0 is mapped to −1);
anything else raises ``ValueError``. ``x`` is a dense numpy array (N, D) or a scipy.sparse matrix
(CSR is used as is; other sparse formats are converted to CSR). A sparse input is never densified.
All arithmetic is float64; an input of another dtype (fedbench stores features as float32) is
converted row block by row block on the fly (:data:`CHUNK_BYTES` at a time), so memory holds one
copy of ``x`` (the caller's) plus a block.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy
import scipy.linalg
import scipy.optimize
import scipy.sparse
import scipy.sparse.linalg
from scipy.special import expit

from fedbench.files import atomic_write

CHUNK_BYTES = 64 * 2**20  # float64 bytes of one converted row block
DENSE_HESSIAN_MAX_DIM = 4096  # polish with an exact (Cholesky) Newton step up to this D, else CG
MAX_TRUST_ITER = 1000
MAX_POLISH_STEPS = 8


class OptimumNotReached(RuntimeError):
    """The solver stopped with ‖∇F(w)‖₂ above the requested tolerance."""


@dataclass(frozen=True)
class Optimum:
    """A solution of ``min_w F(w)``.

    Attributes:
        w: the minimiser w*, shape (D,) float64 (``None`` when read back without its ``.npy``).
        value: F* = F(w*).
        grad_norm: ‖∇F(w*)‖₂ recomputed at the returned w*.
        iterations: trust-region iterations plus Newton polishing steps.
        method: the solver and its tolerances, in words.
        lam: λ. n: N (rows). d: D (features). tol: the requested gradient-norm tolerance.
        info: further details (scipy version, trust-region iterations, polishing steps).
    """

    w: np.ndarray | None
    value: float
    grad_norm: float
    iterations: int
    method: str
    lam: float
    n: int
    d: int
    tol: float
    info: dict = field(default_factory=dict)


def signed_labels(y) -> np.ndarray:
    """Labels as float64 ±1, shape (N,).

    Args:
        y: (N,) labels in {−1, +1} or in {0, 1} (0 becomes −1); any numeric dtype.

    Raises:
        ValueError: ``y`` is not one-dimensional, or holds a value outside both sets.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {y.shape}")
    vals = set(np.unique(y).tolist())
    if vals <= {-1, 1}:
        return y.astype(np.float64)
    if vals <= {0, 1}:
        return np.where(y > 0, 1.0, -1.0)
    raise ValueError(f"labels must be in {{-1, +1}} or in {{0, 1}}; found {sorted(vals)[:6]}")


class LogisticProblem:
    """F, ∇F and Hessian-vector products of one (x, y, λ), caching the margins of the last w.

    Args:
        x: (N, D) features, dense numpy or scipy.sparse (kept, not copied, except a non-CSR sparse
            matrix, converted to CSR once).
        y: (N,) labels, see :func:`signed_labels`.
        lam: λ > 0.

    Raises:
        ValueError: λ not a positive finite number, x not two-dimensional, N = 0, row counts of x
            and y differ, non-finite features, or bad labels.
    """

    def __init__(self, x, y, lam: float):
        if not (isinstance(lam, (int, float, np.floating)) and math.isfinite(lam) and lam > 0):
            raise ValueError(f"lam must be a positive finite number, got {lam!r}")
        if scipy.sparse.issparse(x):
            x = x.tocsr()
            finite = np.isfinite(x.data).all()
        else:
            x = np.asarray(x)
            finite = None
        if x.ndim != 2:
            raise ValueError(f"x must be two-dimensional (N, D), got shape {x.shape}")
        self.y = signed_labels(y)
        if x.shape[0] != self.y.shape[0] or x.shape[0] == 0:
            raise ValueError(f"x has {x.shape[0]} rows and y {self.y.shape[0]} labels; they must be equal and > 0")
        self.x = x
        self.n, self.d = x.shape
        self.lam = float(lam)
        self.sparse = scipy.sparse.issparse(x)
        self.native = x.dtype == np.float64
        self.rows = max(1, CHUNK_BYTES // (8 * max(self.d, 1)))
        if finite is None:
            finite = all(np.isfinite(self._block(i)).all() for i in range(0, self.n, self.rows))
        if not finite:
            raise ValueError("x holds a non-finite value (nan or inf)")
        self._w = None
        self._m = None

    def _block(self, i: int):
        """Rows i .. i + self.rows of x as float64 (a view when x is dense float64)."""
        b = self.x[i:i + self.rows]
        return b if b.dtype == np.float64 else b.astype(np.float64)

    def matvec(self, w: np.ndarray) -> np.ndarray:
        """x w, shape (N,) float64."""
        if self.native:
            return np.asarray(self.x @ w, dtype=np.float64)
        out = np.empty(self.n)
        for i in range(0, self.n, self.rows):
            out[i:i + self.rows] = self._block(i) @ w
        return out

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """xᵀ v, shape (D,) float64 (row blocks summed in a fixed order: deterministic)."""
        if self.native:
            return np.asarray(self.x.T @ v, dtype=np.float64)
        out = np.zeros(self.d)
        for i in range(0, self.n, self.rows):
            out += self._block(i).T @ v[i:i + self.rows]
        return out

    def margins(self, w: np.ndarray) -> np.ndarray:
        """m_i = y_i x_iᵀ w, shape (N,); the last one is cached (scipy asks F, ∇F, ∇²F·v at one w)."""
        w = np.asarray(w, dtype=np.float64)
        if w.shape != (self.d,):
            raise ValueError(f"w must have shape ({self.d},), got {w.shape}")
        if self._w is None or not np.array_equal(self._w, w):
            self._m = self.y * self.matvec(w)
            self._w = w.copy()
        return self._m

    def value(self, w) -> float:
        """F(w); log(1 + e^{−m}) as ``logaddexp(0, −m)`` (no overflow for any margin)."""
        m = self.margins(w)
        w = np.asarray(w, dtype=np.float64)
        return float(np.sum(np.logaddexp(0.0, -m)) / self.n + 0.5 * self.lam * np.dot(w, w))

    def gradient(self, w) -> np.ndarray:
        """∇F(w) = −(1/N) Σ_i y_i σ(−m_i) x_i + λw, shape (D,); σ = scipy.special.expit."""
        m = self.margins(w)
        return -self.rmatvec(self.y * expit(-m)) / self.n + self.lam * np.asarray(w, dtype=np.float64)

    def curvature(self, w) -> np.ndarray:
        """s_i = σ(m_i) σ(−m_i) ∈ (0, 1/4], shape (N,): ∇²F(w) = (1/N) xᵀ diag(s) x + λI."""
        m = self.margins(w)
        return expit(m) * expit(-m)

    def hessp(self, w, v) -> np.ndarray:
        """∇²F(w) v = (1/N) xᵀ (s ⊙ x v) + λv, shape (D,)."""
        v = np.asarray(v, dtype=np.float64)
        s = self.curvature(w)
        return self.rmatvec(s * self.matvec(v)) / self.n + self.lam * v

    def hessian(self, w) -> np.ndarray:
        """∇²F(w) as a dense (D, D) array (D² floats: used only up to :data:`DENSE_HESSIAN_MAX_DIM`)."""
        s = self.curvature(w)
        h = np.zeros((self.d, self.d))
        for i in range(0, self.n, self.rows):
            b = self._block(i)
            sb = s[i:i + self.rows]
            if self.sparse:
                h += (b.T @ b.multiply(sb[:, None]).tocsr()).toarray()
            else:
                h += b.T @ (sb[:, None] * b)
        h /= self.n
        h = 0.5 * (h + h.T)
        h[np.diag_indices(self.d)] += self.lam
        return h


def logistic_objective(w, x, y, lam: float) -> float:
    """F(w) = (1/N) Σ_i log(1 + exp(−y_i x_iᵀw)) + (λ/2)‖w‖² (Yuan & Ma, NeurIPS 2020, Sec. 5).

    Args:
        w: (D,) weights. x: (N, D) dense or scipy.sparse. y: (N,) labels in {−1, +1} or {0, 1}.
        lam: λ > 0.

    Raises:
        ValueError: see :class:`LogisticProblem`; w of the wrong shape.
    """
    return LogisticProblem(x, y, lam).value(w)


def logistic_gradient(w, x, y, lam: float) -> np.ndarray:
    """∇F(w), shape (D,) float64; arguments and errors as :func:`logistic_objective`."""
    return LogisticProblem(x, y, lam).gradient(w)


def logistic_hessp(w, v, x, y, lam: float) -> np.ndarray:
    """∇²F(w) v, shape (D,) float64, for a direction v (D,); otherwise as :func:`logistic_objective`."""
    return LogisticProblem(x, y, lam).hessp(w, v)


def _newton_step(problem: LogisticProblem, w: np.ndarray, g: np.ndarray, dense_max: int) -> tuple[np.ndarray, str]:
    """The Newton direction −∇²F(w)⁻¹ g: Cholesky of the exact Hessian, or CG on Hessian-vector products."""
    if problem.d <= dense_max:
        return -scipy.linalg.cho_solve(scipy.linalg.cho_factor(problem.hessian(w)), g), "Cholesky"
    op = scipy.sparse.linalg.LinearOperator((problem.d, problem.d), matvec=lambda v: problem.hessp(w, v),
                                            dtype=np.float64)
    p, _ = scipy.sparse.linalg.cg(op, -g, rtol=1e-6, atol=0.0, maxiter=10 * problem.d)
    return p, "CG"


def solve_optimum(x, y, lam: float, tol: float = 1e-12, *, dense_hessian_max_dim: int = DENSE_HESSIAN_MAX_DIM,
                  max_iter: int = MAX_TRUST_ITER) -> Optimum:
    """w* and F* = min_w F(w) (the "pre-computed optimum" of Yuan & Ma, NeurIPS 2020, Sec. 5), to ‖∇F‖₂ ≤ tol.

    Method, from w = 0 (deterministic: no randomness, fixed summation order):

    1. ``scipy.optimize.minimize(method="trust-ncg", gtol=tol)`` with the exact gradient and
       Hessian-vector product: Newton steps solved by Steihaug CG inside a trust region, globally
       convergent and superlinear, one pass over x per CG iteration and never a D×D matrix (epsilon:
       D = 2,000, N = 400,000). Its trust-region test compares the predicted with the actual decrease
       of F; once ‖∇F‖² / λ falls near float64 resolution of F (about 1e-10 for λ = 1e-4), the
       actual decrease is rounding noise, so it may stop ("failed to predict improvement") before tol.
    2. Polishing, while ‖∇F‖ > tol: full Newton steps w ← w − ∇²F(w)⁻¹∇F(w) (Cholesky of the exact
       Hessian for D ≤ ``dense_hessian_max_dim``, else CG to relative residual 1e-6), accepted only
       while they reduce ‖∇F‖₂ (a criterion that stays meaningful at any precision, unlike F). Close
       to w* Newton converges quadratically, so one or two steps reach 1e-12.

    Args:
        x: (N, D) features, dense numpy or scipy.sparse (never densified; any float dtype).
        y: (N,) labels in {−1, +1} or {0, 1} (0 ↦ −1).
        lam: λ > 0 (F is then λ-strongly convex: w* exists and is unique, even for separable data).
        tol: required ‖∇F(w*)‖₂.
        dense_hessian_max_dim: the largest D polished with a dense Hessian.
        max_iter: trust-region iteration cap.

    Returns:
        :class:`Optimum` with ``method`` naming the solver and tolerances.

    Raises:
        ValueError: bad inputs (see :class:`LogisticProblem`) or tol ≤ 0.
        OptimumNotReached: ‖∇F‖₂ > tol after the trust region and the polishing (the message gives
            the gradient norm reached and scipy's message).
    """
    if not (math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    problem = LogisticProblem(x, y, lam)
    res = scipy.optimize.minimize(problem.value, np.zeros(problem.d), jac=problem.gradient, hessp=problem.hessp,
                                  method="trust-ncg", options={"gtol": tol, "maxiter": max_iter})
    w = np.asarray(res.x, dtype=np.float64)
    g = problem.gradient(w)
    gnorm = float(np.linalg.norm(g))
    steps, how = 0, None
    while gnorm > tol and steps < MAX_POLISH_STEPS:
        p, how = _newton_step(problem, w, g, dense_hessian_max_dim)
        w_new = w + p
        g_new = problem.gradient(w_new)
        gnorm_new = float(np.linalg.norm(g_new))
        if not gnorm_new < gnorm:
            break
        w, g, gnorm = w_new, g_new, gnorm_new
        steps += 1
    if not gnorm <= tol:
        raise OptimumNotReached(
            f"logistic regression (N={problem.n}, D={problem.d}, lam={problem.lam}): ||grad F|| = {gnorm:.3e} > "
            f"tol = {tol:.1e} after {res.nit} trust-ncg iterations ({res.message!r}) and {steps} Newton polishing "
            f"steps; raise tol or check the data (non-finite or huge features)")
    method = f"scipy.optimize.minimize(method='trust-ncg', gtol={tol:g}, maxiter={max_iter}) from w=0"
    if steps:
        method += f" + {steps} Newton step(s) ({how}) accepted while ||grad F||_2 decreases"
    return Optimum(w=w, value=problem.value(w), grad_norm=gnorm, iterations=int(res.nit) + steps, method=method,
                   lam=problem.lam, n=problem.n, d=problem.d, tol=float(tol),
                   info={"scipy": scipy.__version__, "trust_ncg_iterations": int(res.nit),
                         "trust_ncg_message": str(res.message), "newton_steps": steps,
                         "newton_solver": how})


JSON_FIELDS = ("value", "grad_norm", "iterations", "method", "lam", "n", "d", "tol", "info")


def weights_path(path) -> Path:
    """The ``.npy`` written beside an optimum's JSON: ``PATH`` with its suffix replaced by ``.w.npy``."""
    path = Path(path)
    return path.with_name(path.stem + ".w.npy")


def write_optimum(result: Optimum, path, save_w: bool = True) -> None:
    """Write ``result`` as JSON (F* and ‖∇F‖ as repr floats: they read back bit for bit) and, with
    ``save_w``, w* as ``weights_path(path)`` (written first, so a JSON present means both are).

    Both files are written with :func:`fedbench.files.atomic_write`.

    Raises:
        ValueError: ``save_w`` with ``result.w`` None.
    """
    path = Path(path)
    record = {k: getattr(result, k) for k in JSON_FIELDS}
    record["w_file"] = None
    if save_w:
        if result.w is None:
            raise ValueError("write_optimum(save_w=True): the result holds no w (read without its .npy?)")
        wp = weights_path(path)
        with atomic_write(wp) as tmp:
            with open(tmp, "wb") as f:
                np.save(f, np.asarray(result.w, dtype=np.float64))
        record["w_file"] = wp.name
    with atomic_write(path) as tmp:
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")


def read_optimum(path) -> Optimum:
    """Read an optimum written by :func:`write_optimum` (w* loaded when its ``.npy`` was written).

    Raises:
        FileNotFoundError: ``path``, or the ``.npy`` it names, is missing.
        ValueError: the JSON lacks a field or is not an object.
    """
    path = Path(path)
    record = json.loads(path.read_text())
    missing = [k for k in JSON_FIELDS + ("w_file",) if not isinstance(record, dict) or k not in record]
    if missing:
        raise ValueError(f"{path}: not an optimum record, missing {missing}; rewrite it with write_optimum")
    w = None
    if record["w_file"] is not None:
        w = np.load(path.parent / os.path.basename(record["w_file"]))
    return Optimum(w=w, **{k: record[k] for k in JSON_FIELDS})
