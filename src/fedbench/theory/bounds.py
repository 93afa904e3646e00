"""Bounds on the surrogate minimizer's distance from x*, Corollary 1, and the mean-absolute-deviation inequalities.

Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning"
(AISTATS 2021), Lemma 5 (eq. (15)), Theorem 6 (the tighter intermediate bound in its proof),
Lemma 12 (d = 1), Theorem 4 (eq. (16)), Corollary 1, Theorem 5 and Corollary 2. With
a = min_i λ_min(Q_i) and b = max_i λ_max(Q_i) (:func:`fedbench.theory.quadratic.distortion_extremes`)
and ‖c_i‖ ≤ C (Assumption 2):

    ‖x*(α, γ, Θ) − x*‖ ≤ 2C(b − a)/b ≤ 8C(√b − √a)/(√b + √a)          Theorem 6, Lemma 5
    ‖x*(α, γ, Θ) − x*‖ ≤ 2C(√b − √a)/(√b + √a)                         Lemma 12, d = 1 only
    ‖x*(α, γ, Θ) − x*‖ ≤ 8C(√κ₀ − √κ)/(√κ₀ + √κ) = 8CΔ                  Theorem 4 (Θ_{1:K}, or Θ_K with γ < 1/(KL+α))

All functions broadcast over numpy arrays.
"""

from __future__ import annotations

import numpy as np

from fedbench.theory.rates import suboptimality, suboptimality_from_distortion


def _check_radius(C):
    C = np.asarray(C, dtype=np.float64)
    if np.any(~(C >= 0)):
        raise ValueError("C must be ≥ 0")
    return C


def bias_bound_theorem6(a, b, C):
    """2C(b − a)/b: the bound the proof of Lemma 5 establishes (Theorem 6 with X_i = Q_i, Y_i = p_i A_i).

    0 < a ≤ b (extreme eigenvalues of the Q_i), C ≥ 0. Raises ValueError otherwise.
    """
    suboptimality_from_distortion(a, b)  # validates 0 < a ≤ b
    return 2 * _check_radius(C) * (np.asarray(b, dtype=np.float64) - a) / b


def bias_bound_lemma5(a, b, C):
    """8C(√b − √a)/(√b + √a), Lemma 5 eq. (15) (the proof's "+" in the numerator is an erratum for "−")."""
    return 8 * _check_radius(C) * suboptimality_from_distortion(a, b)


def bias_bound_one_dimensional(a, b, C):
    """2C(√b − √a)/(√b + √a), Lemma 12: the d = 1 bound, tight by Appendix C.2 (conjectured for every d)."""
    return 2 * _check_radius(C) * suboptimality_from_distortion(a, b)


def bias_bound_theorem4(kappa0, kappa, C):
    """8C(√κ₀ − √κ)/(√κ₀ + √κ) = 8CΔ, Theorem 4 eq. (16), for κ the closed-form bound (11) or (13)."""
    return 8 * _check_radius(C) * suboptimality(kappa0, kappa)


def corollary1_bound(rho, T, initial_distance, kappa0, kappa, C):
    """ρ^T ‖x_0 − x*(α, γ, Θ)‖ + 8CΔ(κ₀, κ), Corollary 1: the distance ‖x_T − x*‖ after T server rounds.

    rho in [0, 1] (Table 2, :func:`fedbench.theory.rates.rate`), T ≥ 0 rounds, initial_distance ≥ 0.
    """
    rho, T = np.asarray(rho, dtype=np.float64), np.asarray(T, dtype=np.float64)
    if np.any(~((rho >= 0) & (rho <= 1))) or np.any(~(T >= 0)):
        raise ValueError("need 0 ≤ ρ ≤ 1 and T ≥ 0")
    return rho**T * np.asarray(initial_distance, dtype=np.float64) + bias_bound_theorem4(kappa0, kappa, C)


def mean_absolute_deviation(values, probabilities) -> float:
    """D(X) = E|X − EX| of a discrete X (Theorem 5). values, probabilities: (m,), probabilities summing to 1."""
    values, probabilities = np.asarray(values, dtype=np.float64), np.asarray(probabilities, dtype=np.float64)
    if values.shape != probabilities.shape or np.any(probabilities < 0) or abs(probabilities.sum() - 1) > 1e-12:
        raise ValueError("need matching shapes and probabilities ≥ 0 summing to 1")
    return float(probabilities @ np.abs(values - probabilities @ values))


def mad_bound_theorem5(a, b, mean):
    """2(b − EX)(EX − a)/(b − a), Theorem 5: D(X) for X on [a, b]; equality iff X is supported on {a, b}.

    Requires a < b and a ≤ mean ≤ b; raises ValueError otherwise.
    """
    a, b, mean = (np.asarray(v, dtype=np.float64) for v in (a, b, mean))
    if np.any(~(a < b)) or np.any(~((a <= mean) & (mean <= b))):
        raise ValueError("need a < b and a ≤ EX ≤ b")
    return 2 * (b - mean) * (mean - a) / (b - a)


def mad_bound_corollary2(a, b):
    """(b − a)/2, Corollary 2 (Popoviciu analogue): D(X) for X on [a, b]; equality iff X = a or b with probability ½."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if np.any(~(a <= b)):
        raise ValueError("need a ≤ b")
    return (b - a) / 2
