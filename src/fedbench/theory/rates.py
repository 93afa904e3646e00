"""Server convergence rate ρ(κ) (Table 2), its tuned server hyperparameters, and the suboptimality Δ(κ).

Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning"
(AISTATS 2021), Theorem 3, Table 2 and eq. (17). ServerOpt runs on the surrogate f̃ (a quadratic
with smoothness L̃ and strong convexity μ̃, κ = L̃/μ̃, eq. (9)); with tuned hyperparameters
(Lessard, Recht & Packard, "Analysis and Design of Optimization Algorithms via Integral Quadratic
Constraints", SIAM J. Optim. 2016, Proposition 1) ‖x_T − x*(α, γ, Θ)‖ ≤ ρ^T ‖x_0 − x*(α, γ, Θ)‖.

Server optimizers: ``"gd"`` (gradient descent, x⁺ = x − ηq), ``"heavy_ball"``
(x⁺ = x − ηq(x) + β(x − x⁻)), ``"nesterov"`` (y = x + β(x − x⁻), x⁺ = y − ηq(y)).
All functions broadcast over numpy arrays of κ.
"""

from __future__ import annotations

import numpy as np

SERVER_OPTIMIZERS = ("gd", "nesterov", "heavy_ball")


def _check_kappa(kappa) -> np.ndarray:
    kappa = np.asarray(kappa, dtype=np.float64)
    if np.any(~(kappa >= 1)):
        raise ValueError("κ must be ≥ 1")
    return kappa


def rate(kappa, server: str = "gd"):
    """ρ(κ) of Table 2: (κ − 1)/(κ + 1) for gd, 1 − 2/√(3κ + 1) for nesterov, (√κ − 1)/(√κ + 1) for heavy_ball.

    kappa: float or array, ≥ 1 (+inf gives 1). Returns the same shape (a 0-d array for a float), in
    [0, 1]. Raises ValueError for κ < 1 or an unknown server name.
    """
    kappa = _check_kappa(kappa)
    with np.errstate(invalid="ignore"):
        if server == "gd":
            return np.where(np.isinf(kappa), 1.0, (kappa - 1) / (kappa + 1))
        if server == "nesterov":
            return 1 - 2 / np.sqrt(3 * kappa + 1)
        if server == "heavy_ball":
            s = np.sqrt(kappa)
            return np.where(np.isinf(kappa), 1.0, (s - 1) / (s + 1))
    raise ValueError(f"unknown server optimizer {server!r}; expected one of {SERVER_OPTIMIZERS}")


def tuned_server_parameters(smoothness: float, strong_convexity: float, server: str = "gd") -> tuple[float, float]:
    """(η, β) that attain Table 2's ρ on a quadratic with spectrum in [μ̃, L̃] (Lessard et al. 2016, Prop. 1).

    gd: η = 2/(L̃ + μ̃), β = 0. nesterov: η = 4/(3L̃ + μ̃), β = (√(3κ+1) − 2)/(√(3κ+1) + 2).
    heavy_ball: η = 4/(√L̃ + √μ̃)², β = ((√κ − 1)/(√κ + 1))². κ = L̃/μ̃. Raises ValueError unless
    0 < μ̃ ≤ L̃, or for an unknown server name.
    """
    L, mu = float(smoothness), float(strong_convexity)
    if not (0 < mu <= L < np.inf):
        raise ValueError(f"need 0 < μ̃ ≤ L̃ < ∞, got μ̃ = {mu}, L̃ = {L}")
    kappa = L / mu
    if server == "gd":
        return 2 / (L + mu), 0.0
    if server == "nesterov":
        s = np.sqrt(3 * kappa + 1)
        return 4 / (3 * L + mu), float((s - 2) / (s + 2))
    if server == "heavy_ball":
        s = np.sqrt(kappa)
        return 4 / (np.sqrt(L) + np.sqrt(mu)) ** 2, float(((s - 1) / (s + 1)) ** 2)
    raise ValueError(f"unknown server optimizer {server!r}; expected one of {SERVER_OPTIMIZERS}")


def suboptimality(kappa0, kappa):
    """Δ = (√κ₀ − √κ)/(√κ₀ + √κ), eq. (17): the asymptotic worst-case ‖x*(α, γ, Θ) − x*‖ divided by 8C.

    kappa0 = L/μ (≥ 1), kappa = κ(α, γ, Θ) (≥ 1); arrays broadcast. In [0, 1) when 1 ≤ κ ≤ κ₀;
    negative when κ > κ₀ (possible for Θ_K beyond γ < 1/(KL + α): use
    :func:`suboptimality_from_distortion` there). Raises ValueError for κ₀ < 1 or κ < 1.
    """
    s0, s = np.sqrt(_check_kappa(kappa0)), np.sqrt(_check_kappa(kappa))
    return (s0 - s) / (s0 + s)


def suboptimality_from_distortion(a, b):
    """Δ in the form of Lemma 5 (eq. (15) divided by 8C): (√b − √a)/(√b + √a), with a ≤ b the extreme eigenvalues of Q.

    The paper's Appendix D.1 uses this form for simulated frontiers; for Θ_{1:K}, and for Θ_K with
    γ < 1/(KL + α), b/a = κ₀/κ and it equals eq. (17). Raises ValueError unless 0 < a ≤ b.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if np.any(~(a > 0)) or np.any(~(b >= a)):
        raise ValueError("need 0 < a ≤ b")
    sa, sb = np.sqrt(a), np.sqrt(b)
    return (sb - sa) / (sb + sa)


def frontier_point(kappa0, kappa, server: str = "gd") -> tuple[np.ndarray, np.ndarray]:
    """(ρ(κ), Δ(κ₀, κ)), a point of the paper's Pareto frontiers (Figs. 1–4). Arrays broadcast."""
    return rate(kappa, server), suboptimality(kappa0, kappa)
