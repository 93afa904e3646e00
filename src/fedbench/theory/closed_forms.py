"""Closed forms of the surrogate's spectrum for Θ_{1:K} (φ, Lemma 3) and Θ_K (ψ, Lemma 4), and κ from them.

Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning"
(AISTATS 2021), eqs. (10)–(13), (33). For an eigenvalue λ of A_i, the eigenvalue of Q_i A_i is

    φ(λ, α, γ, K) = Σ_{k=1}^{K} (1 − γ(λ+α))^{k−1} λ = (1 − (1 − γ(λ+α))^K)/γ · λ/(λ+α)   Θ_{1:K}, (10)/(33)
    ψ(λ, α, γ, K) = (1 − γ(λ+α))^{K−1} λ                                                   Θ_K, (12)

so that κ(α, γ, Θ_{1:K}) ≤ φ(L)/φ(μ) (11), valid for γ < 1/(L+α), and κ(α, γ, Θ_K) ≤ ψ(L)/ψ(μ) =
((1 − γ(L+α))/(1 − γ(μ+α)))^{K−1} L/μ (13), valid for γ < 1/(KL+α); both are equalities for the
instance A = diag(L, μ) (Appendix B.3) and are the κ of the paper's analytic frontiers (Figs. 1–4, 9).

All functions broadcast over numpy arrays (λ, α, γ, K may be arrays; K may be a float grid up to 1e6
and beyond) and use log1p/expm1, so K = 10⁶ with γ = 10⁻⁷ keeps full relative precision.
"""

from __future__ import annotations

import numpy as np


def _check(lam, alpha, gamma, K):
    lam, alpha, gamma, K = (np.asarray(v, dtype=np.float64) for v in (lam, alpha, gamma, K))
    if np.any(~(lam > 0)):
        raise ValueError("λ must be > 0 (Assumption 1: μ > 0)")
    if np.any(~(np.isfinite(alpha) & (alpha >= 0))):
        raise ValueError("α must be finite and ≥ 0")
    if np.any(~(gamma >= 0)):
        raise ValueError("γ must be ≥ 0")
    if np.any(~(K >= 1)):
        raise ValueError("K must be ≥ 1")
    return lam, alpha, gamma, K


def phi(lam, alpha, gamma, K):
    """φ(λ, α, γ, K), eq. (10)/(33): the eigenvalue of Q_i A_i for Θ_{1:K}; Kλ at γ = 0.

    Arrays broadcast. Requires γ(λ + α) ≤ 1 (γ ≤ 1/(L + α) over the spectrum). Raises ValueError
    for λ ≤ 0, α < 0, γ < 0, K < 1 or γ(λ + α) > 1.
    """
    lam, alpha, gamma, K = _check(lam, alpha, gamma, K)
    s = gamma * (lam + alpha)
    if np.any(s > 1):
        raise ValueError("φ needs γ(λ + α) ≤ 1")
    with np.errstate(divide="ignore", invalid="ignore"):
        one_minus = -np.expm1(K * np.log1p(-s))  # 1 − (1 − s)^K; s = 1 gives log1p = −∞ and 1
        value = one_minus / gamma * lam / (lam + alpha)
    return np.where(gamma == 0, K * lam, value)


def psi(lam, alpha, gamma, K):
    """ψ(λ, α, γ, K) = (1 − γ(λ+α))^{K−1} λ, eq. (12): the eigenvalue of Q_i A_i for Θ_K.

    Arrays broadcast. Requires γ(λ + α) ≤ 1. Raises ValueError as :func:`phi`.
    """
    lam, alpha, gamma, K = _check(lam, alpha, gamma, K)
    s = gamma * (lam + alpha)
    if np.any(s > 1):
        raise ValueError("ψ needs γ(λ + α) ≤ 1")
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.exp((K - 1) * np.log1p(-s))
    return np.where(K == 1, 1.0, power) * lam


def kappa_full(mu, L, alpha, gamma, K):
    """κ(α, γ, Θ_{1:K}) = φ(L)/φ(μ), Lemma 3 eq. (11) (the paper's lemma prints Θ_K: erratum).

    μ ≤ L > 0; arrays broadcast. Raises ValueError unless γ < 1/(L + α) (Lemma 3's condition).
    """
    mu, L, alpha = (np.asarray(v, dtype=np.float64) for v in (mu, L, alpha))
    if np.any(~(np.asarray(gamma) * (L + alpha) < 1)):
        raise ValueError("Lemma 3 needs γ < 1/(L + α)")
    if np.any(~(mu <= L)):
        raise ValueError("need μ ≤ L")
    return phi(L, alpha, gamma, K) / phi(mu, alpha, gamma, K)


def kappa_last(mu, L, alpha, gamma, K):
    """κ(α, γ, Θ_K) = ψ(L)/ψ(μ) = ((1 − γ(L+α))/(1 − γ(μ+α)))^{K−1} L/μ, Lemma 4 eq. (13).

    μ ≤ L > 0; arrays broadcast. Raises ValueError unless γ < 1/(KL + α) (Lemma 4's condition;
    beyond it ψ is not monotone on [μ, L] and κ depends on the interior spectrum: use
    :func:`last_spectrum_point`).
    """
    mu, L, K, alpha, gamma = (np.asarray(v, dtype=np.float64) for v in (mu, L, K, alpha, gamma))
    if np.any(~(gamma * (K * L + alpha) < 1)):
        raise ValueError("Lemma 4 needs γ < 1/(KL + α)")
    if np.any(~(mu <= L)):
        raise ValueError("need μ ≤ L")
    _check(mu, alpha, gamma, K)
    log_ratio = np.log1p(-gamma * (L + alpha)) - np.log1p(-gamma * (mu + alpha))
    return np.exp((K - 1) * log_ratio) * L / mu


def last_spectrum_point(lam, alpha: float, gamma: float, K: float) -> tuple[float, float]:
    """(κ, Δ) of Θ_K on one client with spectrum ``lam``: the paper's simulated frontiers (Appendix D.1).

    κ = max_λ ψ(λ)/min_λ ψ(λ) (eq. (9) for one client); Δ = (√b − √a)/(√b + √a) in the Lemma-5 form,
    a ≤ b the extreme eigenvalues (1 − γ(λ+α))^{K−1} of Q, computed as tanh(ln(b/a)/4) so that
    K up to 10⁶ neither under- nor overflows (κ may be +inf there; :func:`fedbench.theory.rates.rate`
    maps it to ρ = 1). Valid for any γ < 1/(L + α) (Lemma 1), including γ ≥ 1/(KL + α) where (13)
    no longer applies (Figs. 5, 7, 8, 10). lam: 1-D eigenvalues of A, all > 0. Raises ValueError if
    γ(λ + α) ≥ 1 for some λ.
    """
    lam = np.asarray(lam, dtype=np.float64)
    _check(lam, alpha, gamma, K)
    if np.any(gamma * (lam + alpha) >= 1):
        raise ValueError("need γ < 1/(L + α) (Lemma 1)")
    log_q = (K - 1) * np.log1p(-gamma * (lam + alpha))
    log_qa = log_q + np.log(lam)
    with np.errstate(over="ignore"):
        kappa = float(np.exp(log_qa.max() - log_qa.min()))
    return kappa, float(np.tanh((log_q.max() - log_q.min()) / 4))


def random_spectrum(rng: np.random.Generator, d: int, mu: float, L: float) -> np.ndarray:
    """The eigenvalues of one random A = β₁BᵀB + β₂I of Appendix D.1 (the simulated frontiers, Figs. 5, 7, 8, 10).

    B is d × d with i.i.d. N(0, 1) entries (drawn from ``rng``); β₁ = (L − μ)/(λ_max(BᵀB) − λ_min(BᵀB))
    and β₂ = μ − β₁λ_min(BᵀB) are the unique scalars with λ_min(A) = μ and λ_max(A) = L. Returns the
    (d,) ascending eigenvalues of A (the endpoints set to μ and L exactly); only the spectrum enters
    :func:`last_spectrum_point`. Requires d ≥ 2 and 0 < μ < L; raises ValueError otherwise.
    """
    if int(d) < 2 or not (0 < mu < L):
        raise ValueError(f"need d ≥ 2 and 0 < μ < L, got d = {d}, μ = {mu}, L = {L}")
    B = rng.standard_normal((int(d), int(d)))
    s = np.linalg.eigvalsh(B.T @ B)
    lam = mu + (L - mu) * (s - s[0]) / (s[-1] - s[0])  # β₁ s + β₂
    lam[0], lam[-1] = mu, L
    return lam
