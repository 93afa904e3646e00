"""Limits of the surrogate as K → ∞ and γ → 1/(L + α), and the cusp of the simulated Θ_K frontier.

Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning"
(AISTATS 2021), §4.1 and Figs. 1–5; the formulas here are derived from Lemmas 3–4 and eq. (6) (the
paper states the limits qualitatively): for Θ_{1:K} and 0 < γ < 1/(L + α),
Q_i A_i → A_i (A_i + αI)^{-1}/γ as K → ∞ ("one-shot averaging" when α = 0).
"""

from __future__ import annotations

import numpy as np

from fedbench.theory.quadratic import check_clients


def _check_spectrum(mu, L, alpha):
    mu, L = np.asarray(mu, dtype=np.float64), np.asarray(L, dtype=np.float64)
    if np.any(~((0 < mu) & (mu <= L))) or not (np.isfinite(alpha) and alpha >= 0):
        raise ValueError("need 0 < μ ≤ L and α ≥ 0")
    return mu, L


def kappa_full_limit_steps(mu, L, alpha: float):
    """lim_{K→∞} κ(α, γ, Θ_{1:K}) = κ₀ (μ + α)/(L + α), any 0 < γ < 1/(L + α); 1 when α = 0.

    So FedProx (α > 0) cannot reach ρ = 0, i.e. cannot recover one-shot averaging (Fig. 3).
    """
    mu, L = _check_spectrum(mu, L, alpha)
    return L / mu * (mu + alpha) / (L + alpha)


def kappa_full_limit_step_size(mu, L, alpha: float, K):
    """lim_{γ→1/(L+α)} κ(α, γ, Θ_{1:K}) = L(μ+α) / (μ(L+α)(1 − ((L−μ)/(L+α))^K)); 1/(1 − (1 − μ/L)^K) at α = 0.

    The paper's §4.1 "lim κ ≠ 0" means ≠ 1: the γ sweep of Fig. 1 (right) cannot reach ρ = 0 at fixed K.
    """
    mu, L = _check_spectrum(mu, L, alpha)
    K = np.asarray(K, dtype=np.float64)
    if np.any(~(K >= 1)):
        raise ValueError("K must be ≥ 1")
    return L * (mu + alpha) / (mu * (L + alpha) * -np.expm1(K * np.log((L - mu) / (L + alpha))))


def kappa_last_limit_scaled_step(mu, L, scale: float):
    """lim_{K→∞} κ(0, γ_K, Θ_K) with γ_K = scale/(LK), 0 < scale < 1: κ₀ exp(−scale (L − μ)/L).

    Fig. 4's "MAML" branch (scale = ½): its frontier stops at this κ (10 e^{−0.45} for μ = 1, L = 10).
    """
    mu, L = _check_spectrum(mu, L, 0.0)
    if not (0 < scale < 1):
        raise ValueError("need 0 < scale < 1 (Lemma 4: γ < 1/(KL))")
    return L / mu * np.exp(-scale * (L - mu) / L)


def minimizer_limit_steps(A, c, p, alpha: float) -> np.ndarray:
    """lim_{K→∞} x*(α, γ, Θ_{1:K}) = E[A_i(A_i+αI)^{-1}]^{-1} E[A_i(A_i+αI)^{-1} c_i], any 0 < γ < 1/(L + α).

    Σ_i p_i c_i when α = 0 (one-shot averaging: Q_i A_i → I/γ). A: (n, d, d); c: (n, d); p: (n,). Returns (d,).
    """
    A, c, p = check_clients(A, c, p)
    if not (np.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"α must be finite and ≥ 0, got {alpha}")
    lam, U = np.linalg.eigh(A)
    W = (U * (lam / (lam + alpha))[..., None, :]) @ np.swapaxes(U, -1, -2)
    return np.linalg.solve(np.einsum("i,ijk->jk", p, W), np.einsum("i,ijk,ik->j", p, W, c))


def last_cusp_steps(mu, L, alpha: float, gamma):
    """K_cusp = 1 + ln κ₀ / ln((1 − γ(μ+α))/(1 − γ(L+α))): where ψ(L) = ψ(μ) for Θ_K.

    The kink of the simulated Θ_K frontier (Fig. 5, unexplained in the paper): there λ_min(QA)
    moves from the μ end to the L end, b/a = κ₀ and Δ = (√κ₀ − 1)/(√κ₀ + 1), the one-shot value.
    Requires 0 < γ < 1/(L + α) and μ < L.
    """
    mu, L = _check_spectrum(mu, L, alpha)
    gamma = np.asarray(gamma, dtype=np.float64)
    if np.any(~((gamma > 0) & (gamma * (L + alpha) < 1))) or np.any(~(mu < L)):
        raise ValueError("need 0 < γ < 1/(L + α) and μ < L")
    return 1 + np.log(L / mu) / (np.log1p(-gamma * (mu + alpha)) - np.log1p(-gamma * (L + alpha)))
