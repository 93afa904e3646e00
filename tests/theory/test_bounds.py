"""fedbench.theory.bounds: Lemma 5, Theorems 4–6, Lemma 12, Corollaries 1–2 on random instances
(Charles & Konečný, AISTATS 2021)."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.theory import bounds, rates
from fedbench.theory import closed_forms as cf
from fedbench.theory import quadratic as qd


def test_theorem6_below_lemma5_on_a_grid():
    """2(b − a)/b ≤ 8(√b − √a)/(√b + √a) for all 0 < a ≤ b (the last step of Lemma 5's proof)."""
    a = np.geomspace(1e-6, 1, 200)
    for b in (1.0, 3.0, 1e3):
        assert np.all(bounds.bias_bound_theorem6(a * b, b, 1.0) <= bounds.bias_bound_lemma5(a * b, b, 1.0) + 1e-15)
    assert bounds.bias_bound_lemma5(2.0, 2.0, 5.0) == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_minimizer_distance_bounds(make_instance, seed):
    """‖x*(·) − x*‖ ≤ 2C(b−a)/b ≤ 8C(√b−√a)/(√b+√a), and ≤ 8CΔ(κ_closed) (Theorem 4), ‖c_i‖ ≤ C = 1."""
    A, c, p = make_instance(100 + seed, n=5, d=4)
    x_true = qd.true_minimizer(A, c, p)
    for alpha in (0.0, 1.0):
        for K in (2, 10, 200):
            for theta, gamma, kappa in (
                (qd.theta_full(K), 0.9 / (10 + alpha), cf.kappa_full(1.0, 10.0, alpha, 0.9 / (10 + alpha), K)),
                (qd.theta_last(K), 0.9 / (K * 10 + alpha), cf.kappa_last(1.0, 10.0, alpha, 0.9 / (K * 10 + alpha), K)),
            ):
                gap = np.linalg.norm(qd.surrogate_minimizer(A, c, p, alpha, gamma, theta) - x_true)
                a, b = qd.distortion_extremes(A, alpha, gamma, theta)
                t6 = bounds.bias_bound_theorem6(a, b, 1.0)
                assert gap <= t6 + 1e-13
                assert t6 <= bounds.bias_bound_lemma5(a, b, 1.0) + 1e-13
                assert gap <= bounds.bias_bound_theorem4(10.0, kappa, 1.0) + 1e-13
                # Lemma 6: b/a ≤ κ₀/κ, so Lemma 5's bound is at most Theorem 4's
                assert b / a <= 10.0 / kappa * (1 + 1e-12)


def test_one_dimensional_bound(make_instance):
    """Lemma 12 (d = 1): ‖x*(·) − x*‖ ≤ 2C(√b − √a)/(√b + √a)."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = 3
        A = rng.uniform(1, 10, (n, 1, 1))
        c = rng.uniform(-1, 1, (n, 1))
        p = rng.dirichlet(np.ones(n))
        for theta in (qd.theta_full(20), qd.theta_last(20)):
            gap = np.linalg.norm(qd.surrogate_minimizer(A, c, p, 0.0, 0.09, theta) - qd.true_minimizer(A, c, p))
            a, b = qd.distortion_extremes(A, 0.0, 0.09, theta)
            assert gap <= bounds.bias_bound_one_dimensional(a, b, 1.0) + 1e-14


def test_corollary1_with_server_gradient_descent(make_instance):
    """‖x_T − x*‖ ≤ ρ^T ‖x_0 − x*(·)‖ + 8CΔ with κ = φ(L)/φ(μ) and η = 2/(φ(L) + φ(μ)) (spectrum of H̃ in between)."""
    A, c, p = make_instance(40)
    alpha, gamma, K = 0.3, 0.5 / 10.3, 8
    theta = qd.theta_full(K)
    lo, hi = cf.phi(1.0, alpha, gamma, K), cf.phi(10.0, alpha, gamma, K)
    eta, _ = rates.tuned_server_parameters(float(hi), float(lo), "gd")
    kappa = float(hi / lo)
    rho = float(rates.rate(kappa))
    H = qd.surrogate_hessian(A, p, alpha, gamma, theta)
    x_sur = qd.surrogate_minimizer(A, c, p, alpha, gamma, theta)
    x_true = qd.true_minimizer(A, c, p)
    x = np.full(5, 3.0)
    d0 = np.linalg.norm(x - x_sur)
    for T in range(60):
        bound = bounds.corollary1_bound(rho, T, d0, 10.0, kappa, 1.0)
        assert np.linalg.norm(x - x_true) <= bound + 1e-12
        assert np.linalg.norm(x - x_sur) <= rho**T * d0 * (1 + 1e-12) + 1e-14
        x = x - eta * (H @ (x - x_sur))


def test_theorem5_and_corollary2():
    """Theorem 5: D(X) ≤ 2(b − EX)(EX − a)/(b − a), equality on {a, b}; Corollary 2: D(X) ≤ (b − a)/2."""
    rng = np.random.default_rng(8)
    a, b = -1.0, 3.0
    for _ in range(200):
        m = rng.integers(2, 7)
        values = rng.uniform(a, b, m)
        probs = rng.dirichlet(np.ones(m))
        mean = probs @ values
        D = bounds.mean_absolute_deviation(values, probs)
        assert D <= bounds.mad_bound_theorem5(a, b, mean) + 1e-14
        assert D <= bounds.mad_bound_corollary2(a, b) + 1e-14
    for q in (0.1, 0.5, 0.8):
        values, probs = np.array([a, b]), np.array([q, 1 - q])
        D = bounds.mean_absolute_deviation(values, probs)
        assert D == pytest.approx(float(bounds.mad_bound_theorem5(a, b, probs @ values)), abs=1e-14)
    assert bounds.mean_absolute_deviation([a, b], [0.5, 0.5]) == pytest.approx(float(bounds.mad_bound_corollary2(a, b)))


def test_validation():
    with pytest.raises(ValueError):
        bounds.bias_bound_theorem6(2.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        bounds.bias_bound_lemma5(1.0, 2.0, -1.0)
    with pytest.raises(ValueError):
        bounds.corollary1_bound(1.5, 3, 1.0, 10.0, 2.0, 1.0)
    with pytest.raises(ValueError):
        bounds.mad_bound_theorem5(0.0, 1.0, 2.0)
    with pytest.raises(ValueError):
        bounds.mean_absolute_deviation([0.0, 1.0], [0.7, 0.7])
