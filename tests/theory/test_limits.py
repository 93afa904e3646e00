"""fedbench.theory.limits against the closed forms and the surrogate minimizer.

Charles & Konečný, AISTATS 2021, §4.1, Lemma 3, Appendix C.2.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.theory import bounds, limits
from fedbench.theory import closed_forms as cf
from fedbench.theory import quadratic as qd


@pytest.mark.parametrize("alpha", [0.0, 0.5, 5.0])
def test_minimizer_limit_in_K(make_instance, alpha):
    """K → ∞ (Θ_{1:K}, any 0 < γ < 1/(L+α)): Q_i A_i → A_i(A_i + αI)^{-1}/γ; x*(·) → Σ p_i c_i at α = 0."""
    A, c, p = make_instance(30)
    limit = limits.minimizer_limit_steps(A, c, p, alpha)
    for frac in (0.3, 0.9):
        gamma = frac / (10 + alpha)
        x = qd.surrogate_minimizer(A, c, p, alpha, gamma, qd.theta_full(20000))
        np.testing.assert_allclose(x, limit, rtol=0, atol=1e-12)
    if alpha == 0:
        np.testing.assert_allclose(limit, p @ c, atol=1e-14)
    # κ (9) of the instance tends to at most the closed-form κ_∞ = κ₀(μ + α)/(L + α)
    kappa = qd.condition_bound(A, p, alpha, 0.5 / (10 + alpha), qd.theta_full(20000))
    assert kappa <= float(limits.kappa_full_limit_steps(1.0, 10.0, alpha)) * (1 + 1e-12)


def test_minimizer_limit_gamma_zero(make_instance):
    """γ → 0: x*(α, γ, Θ) → x*, at rate O(γ)."""
    A, c, p = make_instance(31)
    x_true = qd.true_minimizer(A, c, p)
    gaps = [np.linalg.norm(qd.surrogate_minimizer(A, c, p, 0.5, g, qd.theta_full(10)) - x_true) for g in (1e-4, 1e-5)]
    assert gaps[1] < 1e-4 and gaps[0] / gaps[1] == pytest.approx(10, rel=1e-2)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 5.0])
@pytest.mark.parametrize("K", [1, 2, 10, 100])
def test_kappa_limit_in_gamma(alpha, K):
    """γ → 1/(L + α): κ(α, γ, Θ_{1:K}) → L(μ+α)/(μ(L+α)(1 − ((L−μ)/(L+α))^K)), never 1 at finite K."""
    mu, L = 1.0, 10.0
    limit = float(limits.kappa_full_limit_step_size(mu, L, alpha, K))
    assert float(cf.kappa_full(mu, L, alpha, (1 - 1e-13) / (L + alpha), K)) == pytest.approx(limit, rel=1e-10)
    if alpha == 0:
        assert limit == pytest.approx(1 / (1 - (1 - mu / L) ** K), rel=1e-14)
    assert limit > 1


def test_kappa_limit_in_K_equals_closed_form():
    for alpha in (0.0, 0.5, 1.0, 5.0):
        expected = 10.0 * (1 + alpha) / (10 + alpha)
        assert float(limits.kappa_full_limit_steps(1.0, 10.0, alpha)) == pytest.approx(expected, rel=1e-15)
        assert float(cf.kappa_full(1.0, 10.0, alpha, 0.2 / (10 + alpha), 1e8)) == pytest.approx(expected, rel=1e-12)


def test_kappa_last_scaled_step_limit():
    for L, scale in ((10.0, 0.5), (100.0, 0.9), (2.0, 0.1)):
        limit = float(limits.kappa_last_limit_scaled_step(1.0, L, scale))
        assert limit == pytest.approx(L * np.exp(-scale * (L - 1) / L), rel=1e-15)
        K = 1e10
        assert float(cf.kappa_last(1.0, L, 0.0, scale / (L * K), K)) == pytest.approx(limit, rel=1e-8)


@pytest.mark.parametrize("p1", [0.3, 0.9, 0.99])
def test_appendix_c2_tight_example(p1):
    """Appendix C.2 (d = 1): A = (4, 1), c = (1, −1), α = 0, γ = 1/8, Θ_K: ‖x*(·) − x*‖ → 8p/(3p+1), and it
    stays below Lemma 12's 2C(√b − √a)/(√b + √a) (C = 1) for every K."""
    A = np.array([[[4.0]], [[1.0]]])
    c = np.array([[1.0], [-1.0]])
    p = np.array([p1, 1 - p1])
    x_true = qd.true_minimizer(A, c, p)
    np.testing.assert_allclose(x_true, [(5 * p1 - 1) / (3 * p1 + 1)], atol=1e-15)
    for K in (1, 2, 10, 100, 400):
        theta = qd.theta_last(K)
        gap = np.linalg.norm(qd.surrogate_minimizer(A, c, p, 0.0, 1 / 8, theta) - x_true)
        Q1, Q2 = 0.5 ** (K - 1), (7 / 8) ** (K - 1)  # the paper prints exponent K (erratum)
        expected = (4 * p1 * Q1 - (1 - p1) * Q2) / (4 * p1 * Q1 + (1 - p1) * Q2)
        np.testing.assert_allclose(qd.surrogate_minimizer(A, c, p, 0.0, 1 / 8, theta), [expected], atol=1e-14)
        a, b = qd.distortion_extremes(A, 0.0, 1 / 8, theta)
        assert gap <= bounds.bias_bound_one_dimensional(a, b, 1.0) + 1e-14
    assert gap == pytest.approx(8 * p1 / (3 * p1 + 1), abs=1e-12)
    if p1 == 0.9:
        assert round(gap, 6) == 1.945946


def test_cusp_and_validation():
    """K_cusp solves ψ(L) = ψ(μ) for Θ_K; it exists only for 0 < γ < 1/(L + α)."""
    for alpha, gamma in ((0.0, 1e-3), (0.5, 1e-2), (5.0, 0.05)):
        K = float(limits.last_cusp_steps(1.0, 10.0, alpha, gamma))
        psi = cf.psi(np.array([1.0, 10.0]), alpha, gamma, K)
        assert psi[0] == pytest.approx(psi[1], rel=1e-12)
    with pytest.raises(ValueError):
        limits.last_cusp_steps(1.0, 10.0, 0.0, 0.1)
    with pytest.raises(ValueError):
        limits.kappa_full_limit_steps(2.0, 1.0, 0.0)
    with pytest.raises(ValueError):
        limits.kappa_last_limit_scaled_step(1.0, 10.0, 1.0)
