"""The federated quadratic model, the distortion matrix Q_i and the surrogate loss.

Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning"
(AISTATS 2021), §2 and §3. Client i has the loss f_i(x) = ½‖A_i^{1/2}(x − c_i)‖² with
μI ⪯ A_i ⪯ LI (Assumption 1) and weight p_i; the global loss is f = Σ_i p_i f_i. LocalUpdate with
coefficients Θ = (θ_1, …, θ_K), client learning rate γ and proximal strength α sends, in
expectation, the gradient of the surrogate f̃_i(x) = ½‖(Q_i A_i)^{1/2}(x − c_i)‖² (Theorem 1), with
the distortion matrix

    Q_i(α, γ, Θ) = Σ_{k=1}^{K(Θ)} θ_k (I − γ(A_i + αI))^{k−1}                       (6)

Shapes: d the dimension, n the number of clients; a client set is ``A`` (n, d, d) symmetric,
``c`` (n, d), ``p`` (n,) non-negative summing to 1. Θ is a 1-D array of non-negative floats,
``theta[k − 1]`` = θ_k, with at least one positive entry. Everything is float64 numpy; matrices
are formed in the eigenbasis of A_i (Lemma 9: Q_i v = q(λ) v for every eigenpair (λ, v) of A_i),
which keeps Q_i A_i exactly symmetric.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import polynomial

_SUM_TOLERANCE = 1e-12


def theta_full(K: int) -> np.ndarray:
    """Θ_{1:K} = (1, …, 1), K ones: FedAvg / FedProx / Reptile (paper §2, Table 1). Shape (K,).

    Raises ValueError if K < 1.
    """
    if K < 1:
        raise ValueError(f"K must be ≥ 1, got {K}")
    return np.ones(int(K))


def theta_last(K: int) -> np.ndarray:
    """Θ_K = (0, …, 0, 1), K − 1 zeros: the FOMAML-type member; Θ_{2K+1} is MAML (Theorem 2). Shape (K,).

    Raises ValueError if K < 1.
    """
    if K < 1:
        raise ValueError(f"K must be ≥ 1, got {K}")
    theta = np.zeros(int(K))
    theta[-1] = 1.0
    return theta


def check_theta(theta) -> np.ndarray:
    """Θ as a float64 1-D array with trailing zeros dropped, so its length is K(Θ) = max{k : θ_k > 0}.

    Raises ValueError if Θ is not 1-D, has a negative or non-finite entry, or has no positive entry.
    """
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 1:
        raise ValueError(f"Θ must be 1-D, got shape {theta.shape}")
    if not np.all(np.isfinite(theta)) or np.any(theta < 0):
        raise ValueError("Θ must have finite, non-negative entries")
    support = np.flatnonzero(theta > 0)
    if support.size == 0:
        raise ValueError("Θ must have at least one positive entry")
    return theta[: support[-1] + 1]


def theta_steps(theta) -> int:
    """K(Θ) = max{k : θ_k > 0}, the number of local steps a client takes (paper §2)."""
    return int(check_theta(theta).size)


def theta_weight(theta) -> float:
    """w(Θ) = Σ_k θ_k; as γ → 0, f̃ → w(Θ) f (paper §3, after Theorem 1)."""
    return float(check_theta(theta).sum())


def _check_step(alpha: float, gamma: float) -> None:
    if not (np.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"α must be finite and ≥ 0, got {alpha}")
    if not (np.isfinite(gamma) and gamma >= 0):
        raise ValueError(f"γ must be finite and ≥ 0, got {gamma}")


def distortion_eigenvalues(lam, alpha: float, gamma: float, theta) -> np.ndarray:
    """q(λ) = Σ_k θ_k (1 − γ(λ + α))^{k−1}, the eigenvalue of Q_i for the eigenvalue λ of A_i (Lemma 9).

    lam: array of any shape (eigenvalues of A_i); returns the same shape. Evaluated by Horner's
    rule, O(K(Θ)) per entry. Raises ValueError for α < 0, γ < 0 or an invalid Θ (:func:`check_theta`).
    """
    _check_step(alpha, gamma)
    theta = check_theta(theta)
    r = 1.0 - gamma * (np.asarray(lam, dtype=np.float64) + alpha)
    return polynomial.polyval(r, theta)


def _eigh(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must be (…, d, d), got shape {A.shape}")
    if not np.allclose(A, np.swapaxes(A, -1, -2), rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(A).max()))):
        raise ValueError("A must be symmetric")
    return np.linalg.eigh(A)


def _spectral(U: np.ndarray, values: np.ndarray) -> np.ndarray:
    """U diag(values) Uᵀ, batched over leading axes."""
    return (U * values[..., None, :]) @ np.swapaxes(U, -1, -2)


def distortion_matrix(A, alpha: float, gamma: float, theta) -> np.ndarray:
    """Q(α, γ, Θ) = Σ_k θ_k (I − γ(A + αI))^{k−1}, eq. (6).

    A: (…, d, d) symmetric (one client or a stack of n clients); returns (…, d, d), formed as
    U diag(q(λ)) Uᵀ from A = U diag(λ) Uᵀ (Lemma 9). Raises ValueError for a non-symmetric A,
    α < 0, γ < 0 or an invalid Θ.
    """
    lam, U = _eigh(A)
    return _spectral(U, distortion_eigenvalues(lam, alpha, gamma, theta))


def distorted_hessian(A, alpha: float, gamma: float, theta) -> np.ndarray:
    """Q_i A_i, the Hessian of the client surrogate f̃_i, eq. (7); symmetric since Q_i is a polynomial in A_i.

    A: (…, d, d) symmetric; returns (…, d, d) = U diag(q(λ) λ) Uᵀ. Errors as :func:`distortion_matrix`.
    """
    lam, U = _eigh(A)
    return _spectral(U, distortion_eigenvalues(lam, alpha, gamma, theta) * lam)


def client_surrogate_gradient(x, A, c, alpha: float, gamma: float, theta) -> np.ndarray:
    """∇f̃_i(x) = Q_i A_i (x − c_i) = E[ClientUpdate(i, x, α, γ, Θ)], Theorem 1.

    x: (d,); A: (d, d) symmetric; c: (d,). Returns (d,).
    """
    x = np.asarray(x, dtype=np.float64)
    return distorted_hessian(A, alpha, gamma, theta) @ (x - np.asarray(c, dtype=np.float64))


def check_clients(A, c, p) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """A client set as float64 arrays: A (n, d, d), c (n, d) or None, p (n,) non-negative summing to 1.

    Raises ValueError on a shape mismatch or invalid weights.
    """
    A = np.asarray(A, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    if A.ndim != 3 or A.shape[1] != A.shape[2]:
        raise ValueError(f"A must be (n, d, d), got shape {A.shape}")
    if p.shape != (A.shape[0],):
        raise ValueError(f"p must be ({A.shape[0]},), got shape {p.shape}")
    if np.any(p < 0) or abs(p.sum() - 1.0) > _SUM_TOLERANCE * p.size:
        raise ValueError("p must be non-negative and sum to 1")
    if c is not None:
        c = np.asarray(c, dtype=np.float64)
        if c.shape != A.shape[:2]:
            raise ValueError(f"c must be {A.shape[:2]}, got shape {c.shape}")
    return A, c, p


def global_loss(x, A, c, p) -> float:
    """f(x) = Σ_i p_i · ½ (x − c_i)ᵀ A_i (x − c_i), the global loss of paper §2 (up to a constant).

    x: (d,); A: (n, d, d); c: (n, d); p: (n,) summing to 1.
    """
    A, c, p = check_clients(A, c, p)
    r = np.asarray(x, dtype=np.float64)[None, :] - c
    return float(0.5 * np.einsum("i,ij,ijk,ik->", p, r, A, r))


def surrogate_loss(x, A, c, p, alpha: float, gamma: float, theta) -> float:
    """f̃(x, α, γ, Θ) = Σ_i p_i · ½ (x − c_i)ᵀ Q_i A_i (x − c_i), eqs. (7)–(8).

    x: (d,); A: (n, d, d); c: (n, d); p: (n,) summing to 1.
    """
    A, c, p = check_clients(A, c, p)
    r = np.asarray(x, dtype=np.float64)[None, :] - c
    return float(0.5 * np.einsum("i,ij,ijk,ik->", p, r, distorted_hessian(A, alpha, gamma, theta), r))


def surrogate_hessian(A, p, alpha: float, gamma: float, theta) -> np.ndarray:
    """H̃ = ∇²f̃ = E_i[Q_i A_i] = Σ_i p_i Q_i A_i, Lemma 11. A: (n, d, d); p: (n,). Returns (d, d)."""
    A, _, p = check_clients(A, None, p)
    return np.einsum("i,ijk->jk", p, distorted_hessian(A, alpha, gamma, theta))


def surrogate_minimizer(A, c, p, alpha: float, gamma: float, theta) -> np.ndarray:
    """x*(α, γ, Θ) = E_i[Q_i A_i]^{-1} E_i[Q_i A_i c_i], the fixed point of LocalUpdate (Lemma 11).

    A: (n, d, d); c: (n, d); p: (n,). Returns (d,). Unique when γ < 1/(L + α) (Lemma 1: Q_i ≻ 0);
    raises numpy.linalg.LinAlgError if H̃ is singular.
    """
    A, c, p = check_clients(A, c, p)
    QA = distorted_hessian(A, alpha, gamma, theta)
    return np.linalg.solve(np.einsum("i,ijk->jk", p, QA), np.einsum("i,ijk,ik->j", p, QA, c))


def true_minimizer(A, c, p) -> np.ndarray:
    """x* = E_i[A_i]^{-1} E_i[A_i c_i], the minimizer of f (paper §2).

    A: (n, d, d); c: (n, d); p: (n,). Returns (d,).
    """
    A, c, p = check_clients(A, c, p)
    return np.linalg.solve(np.einsum("i,ijk->jk", p, A), np.einsum("i,ijk,ik->j", p, A, c))


def surrogate_constants(A, p, alpha: float, gamma: float, theta) -> tuple[float, float]:
    """(L̃, μ̃) = (E_i[λ_max(Q_i A_i)], E_i[λ_min(Q_i A_i)]): f̃ is L̃-smooth and μ̃-strongly convex (Lemma 10).

    μ̃ I ⪯ H̃ ⪯ L̃ I (Lemma 8), so these are the constants the server optimizer is tuned with
    (:func:`fedbench.theory.rates.tuned_server_parameters`). A: (n, d, d); p: (n,). Raises
    ValueError if some λ_min(Q_i A_i) ≤ 0 (possible only for γ ≥ 1/(L + α), outside Lemma 1).
    """
    A, _, p = check_clients(A, None, p)
    lam = np.linalg.eigvalsh(A)
    values = distortion_eigenvalues(lam, alpha, gamma, theta) * lam
    lo = values.min(axis=-1)
    if np.any(lo <= 0):
        raise ValueError("some Q_i A_i is not positive definite (γ ≥ 1/(L + α)?)")
    return float(p @ values.max(axis=-1)), float(p @ lo)


def condition_bound(A, p, alpha: float, gamma: float, theta) -> float:
    """κ(α, γ, Θ) = E_i[λ_max(Q_i A_i)] / E_i[λ_min(Q_i A_i)] = L̃/μ̃, eq. (9) (Lemmas 2 and 10).

    κ ≥ cond(H̃), with equality for one client. A: (n, d, d); p: (n,). Raises ValueError as
    :func:`surrogate_constants`.
    """
    smooth, strong = surrogate_constants(A, p, alpha, gamma, theta)
    return smooth / strong


def distortion_extremes(A, alpha: float, gamma: float, theta) -> tuple[float, float]:
    """(a, b) = (min_i λ_min(Q_i), max_i λ_max(Q_i)), the constants of Lemma 5 and Theorem 6.

    A: (n, d, d) or (d, d). Returns floats a ≤ b.
    """
    A = np.asarray(A, dtype=np.float64)
    q = distortion_eigenvalues(np.linalg.eigvalsh(A), alpha, gamma, theta)
    return float(q.min()), float(q.max())
