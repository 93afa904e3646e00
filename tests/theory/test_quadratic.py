"""Oracles for fedbench.theory.quadratic (Charles & Konečný, AISTATS 2021, Theorems 1–2, Lemmas 1, 2, 9, 11).

The reference implementation of LocalUpdate here is a literal numpy transcription of the paper's
Algorithms 1–2 in the deterministic mode (full-batch client gradients, every client every round),
so the theory functions are checked against the algorithm, not against themselves.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fedbench.theory import quadratic as qd

MU, L = 1.0, 10.0


def client_update(x, A, c, alpha, gamma, theta):
    """Algorithm 2 with full-batch gradients of ½(y − c)ᵀA(y − c) + (α/2)‖y − x‖²: returns Σ_k θ_k g_k."""
    y, out = x.copy(), np.zeros_like(x)
    for th in theta:
        g = A @ (y - c) + alpha * (y - x)
        out += th * g
        y = y - gamma * g
    return out


def server_round(x, A, c, p, alpha, gamma, theta, eta):
    """Algorithm 1, deterministic: q = Σ_i p_i ClientUpdate(i, x), x⁺ = x − η q."""
    q = sum(pi * client_update(x, Ai, ci, alpha, gamma, theta) for pi, Ai, ci in zip(p, A, c))
    return x - eta * q


THETAS = {
    "full": qd.theta_full(6),
    "last": qd.theta_last(6),
    "one": qd.theta_full(1),
    "random": np.array([0.3, 0.0, 1.7, 0.2, 0.0, 0.9]),
}


def power_sum(A, alpha, gamma, theta):
    R = np.eye(A.shape[-1]) - gamma * (A + alpha * np.eye(A.shape[-1]))
    return sum(th * np.linalg.matrix_power(R, k) for k, th in enumerate(theta))


@pytest.mark.parametrize("name", sorted(THETAS))
@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_distortion_matrix_equals_eq6_power_sum(name, alpha, make_instance):
    A, _, _ = make_instance(0)
    gamma = 0.5 / (L + alpha)
    Q = qd.distortion_matrix(A, alpha, gamma, THETAS[name])
    for i in range(A.shape[0]):
        np.testing.assert_allclose(Q[i], power_sum(A[i], alpha, gamma, THETAS[name]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 4.0])
def test_full_theta_equals_geometric_sum_formula(alpha, make_instance):
    """Θ_{1:K}: Q = (I − (I − γ(A + αI))^K) (γ(A + αI))^{-1}, the matrix form of eq. (33)."""
    A, _, _ = make_instance(1)
    K, gamma = 9, 0.6 / (L + alpha)
    Q = qd.distortion_matrix(A, alpha, gamma, qd.theta_full(K))
    eye = np.eye(A.shape[-1])
    for i in range(A.shape[0]):
        Aa = A[i] + alpha * eye
        expected = (eye - np.linalg.matrix_power(eye - gamma * Aa, K)) @ np.linalg.inv(gamma * Aa)
        np.testing.assert_allclose(Q[i], expected, rtol=0, atol=1e-12)


def test_theta_one_gives_no_distortion(make_instance):
    A, _, _ = make_instance(2)
    np.testing.assert_allclose(
        qd.distortion_matrix(A, 0.5, 0.05, [2.5]), 2.5 * np.broadcast_to(np.eye(5), A.shape), atol=1e-14
    )


def test_theta_helpers_and_validation(make_instance):
    assert qd.theta_steps([0.0, 1.0, 0.0, 0.0]) == 2
    assert qd.theta_weight(qd.theta_full(7)) == 7.0
    np.testing.assert_array_equal(qd.theta_last(3), [0.0, 0.0, 1.0])
    for bad in ([], [0.0, 0.0], [1.0, -0.1], [[1.0]], [np.inf]):
        with pytest.raises(ValueError):
            qd.check_theta(bad)
    with pytest.raises(ValueError):
        qd.theta_full(0)
    with pytest.raises(ValueError):
        qd.distortion_eigenvalues(1.0, -1.0, 0.1, [1.0])
    with pytest.raises(ValueError):
        qd.distortion_matrix(np.array([[1.0, 2.0], [0.0, 1.0]]), 0.0, 0.1, [1.0])
    A, c, p = make_instance(3)
    with pytest.raises(ValueError):
        qd.surrogate_minimizer(A, c, p * 2, 0.0, 0.01, [1.0])


@pytest.mark.parametrize("name", sorted(THETAS))
@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_theorem1_client_update_is_surrogate_gradient(name, alpha, make_instance):
    """Theorem 1 (deterministic): ClientUpdate(i, x, α, γ, Θ) = Q_i A_i (x − c_i) exactly."""
    A, c, _ = make_instance(4)
    x = np.random.default_rng(5).standard_normal(5)
    gamma = 0.8 / (L + alpha)
    for i in range(A.shape[0]):
        expected = qd.client_surrogate_gradient(x, A[i], c[i], alpha, gamma, THETAS[name])
        np.testing.assert_allclose(client_update(x, A[i], c[i], alpha, gamma, THETAS[name]), expected, atol=1e-12)


@pytest.mark.parametrize("K", [1, 2, 5])
def test_theorem2_maml_gradient_is_theta_2k_plus_1(K, make_instance):
    """Theorem 2: ∇_x f_i(X_K(x)) with X_K = K GD steps = (I − γA)^{2K} A (x − c) = ∇f̃_i(x, 0, γ, Θ_{2K+1}).

    m(x) = f_i(X_K(x)) is quadratic in x, so central differences are exact up to rounding.
    """
    A, c, _ = make_instance(6)
    A, c, gamma = A[0], c[0], 0.07

    def m(x):
        for _ in range(K):
            x = x - gamma * A @ (x - c)
        return 0.5 * (x - c) @ A @ (x - c)

    x = np.random.default_rng(7).standard_normal(5)
    eye = np.eye(5)
    fd = np.array([(m(x + eye[j]) - m(x - eye[j])) / 2 for j in range(5)])
    expected = qd.client_surrogate_gradient(x, A, c, 0.0, gamma, qd.theta_last(2 * K + 1))
    np.testing.assert_allclose(fd, expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["full", "last", "random"])
@pytest.mark.parametrize("alpha", [0.0, 0.7])
def test_lemma11_local_update_converges_to_surrogate_minimizer_at_the_predicted_rate(name, alpha, make_instance):
    """Lemma 11 and Theorem 3: server GD with η = 2/(λ_max + λ_min)(H̃) contracts by (cond H̃ − 1)/(cond H̃ + 1)
    towards x*(α, γ, Θ), which differs from x*."""
    A, c, p = make_instance(8)
    theta, gamma = THETAS[name], 0.5 / (6 * L + alpha)
    H = qd.surrogate_hessian(A, p, alpha, gamma, theta)
    lam = np.linalg.eigvalsh(H)
    eta, cond = 2 / (lam[0] + lam[-1]), lam[-1] / lam[0]
    rho = (cond - 1) / (cond + 1)
    np.testing.assert_allclose(np.linalg.norm(np.eye(5) - eta * H, 2), rho, rtol=1e-13)

    x_sur = qd.surrogate_minimizer(A, c, p, alpha, gamma, theta)
    x = np.zeros(5)
    errors = []
    for _ in range(400):
        x = server_round(x, A, c, p, alpha, gamma, theta, eta)
        errors.append(np.linalg.norm(x - x_sur))
    assert errors[-1] < 1e-12
    errors = np.array([e for e in errors if e > 1e-8])  # rounding moves a ratio by ~eps/error
    ratios = errors[1:] / errors[:-1]
    assert np.all(ratios <= rho + 1e-7)
    assert abs(ratios[-1] - rho) < 1e-2 * rho  # the asymptotic contraction is the extreme-eigenvalue one
    assert np.linalg.norm(x_sur - qd.true_minimizer(A, c, p)) > 1e-4


def test_surrogate_minimizer_exceptions_equal_true_minimizer(make_instance):
    """x*(α, γ, Θ) = x* when γ = 0, K(Θ) = 1, all A_i equal, or all c_i equal
    (no drift without both heterogeneities).
    """
    A, c, p = make_instance(9)
    x_true = qd.true_minimizer(A, c, p)
    theta = THETAS["random"]
    np.testing.assert_allclose(qd.surrogate_minimizer(A, c, p, 0.4, 0.0, theta), x_true, atol=1e-13)
    np.testing.assert_allclose(qd.surrogate_minimizer(A, c, p, 0.4, 0.05, [3.0]), x_true, atol=1e-13)
    same_A = np.broadcast_to(A[0], A.shape)
    np.testing.assert_allclose(
        qd.surrogate_minimizer(same_A, c, p, 0.4, 0.05, theta), qd.true_minimizer(same_A, c, p), atol=1e-13
    )
    np.testing.assert_allclose(qd.true_minimizer(same_A, c, p), p @ c, atol=1e-13)
    same_c = np.broadcast_to(c[0], c.shape)
    np.testing.assert_allclose(qd.surrogate_minimizer(A, same_c, p, 0.4, 0.05, theta), c[0], atol=1e-13)


def test_lemma1_distortion_is_positive_definite_below_the_step_bound(make_instance):
    A, _, _ = make_instance(10)
    for alpha in (0.0, 2.0):
        gamma = 0.999 / (L + alpha)
        for theta in THETAS.values():
            assert np.linalg.eigvalsh(qd.distortion_matrix(A, alpha, gamma, theta)).min() > 0


def test_lemma2_condition_bound_dominates_cond_and_is_exact_for_one_client(make_instance):
    A, _, p = make_instance(11)
    for theta in THETAS.values():
        lam = np.linalg.eigvalsh(qd.surrogate_hessian(A, p, 0.3, 0.02, theta))
        assert qd.condition_bound(A, p, 0.3, 0.02, theta) >= lam[-1] / lam[0] * (1 - 1e-13)
        lam1 = np.linalg.eigvalsh(qd.distorted_hessian(A[0], 0.3, 0.02, theta))
        np.testing.assert_allclose(qd.condition_bound(A[:1], [1.0], 0.3, 0.02, theta), lam1[-1] / lam1[0], rtol=1e-13)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 5.0])
def test_kappa_equals_kappa0_iff_gamma_zero_or_one_step(alpha, make_instance):
    """§4.1 (corrected note): κ(α, γ, Θ_{1:K}) = L/μ iff γ = 0 or K = 1, for every α; else κ < L/μ."""
    A, _, p = make_instance(12)
    kappa0 = L / MU
    assert qd.condition_bound(A, p, alpha, 0.0, qd.theta_full(8)) == pytest.approx(kappa0, rel=1e-13)
    assert qd.condition_bound(A, p, alpha, 0.05, qd.theta_full(1)) == pytest.approx(kappa0, rel=1e-13)
    for K in (2, 8):
        for gamma in (1e-3, 0.05):
            assert qd.condition_bound(A, p, alpha, gamma, qd.theta_full(K)) < kappa0 * (1 - 1e-6)


def test_surrogate_loss_at_gamma_zero_is_weighted_loss(make_instance):
    """γ → 0: f̃ → w(Θ) f (paper §3); exact at γ = 0, O(γ) close for small γ."""
    A, c, p = make_instance(13)
    x = np.random.default_rng(14).standard_normal(5)
    theta = THETAS["random"]
    w = qd.theta_weight(theta)
    f = qd.global_loss(x, A, c, p)
    assert qd.surrogate_loss(x, A, c, p, 0.6, 0.0, theta) == pytest.approx(w * f, rel=1e-14)
    assert qd.surrogate_loss(x, A, c, p, 0.6, 1e-7, theta) == pytest.approx(w * f, rel=1e-4)


def test_distortion_extremes_match_matrix_spectrum(make_instance):
    A, _, _ = make_instance(15)
    Q = qd.distortion_matrix(A, 0.2, 0.03, THETAS["random"])
    a, b = qd.distortion_extremes(A, 0.2, 0.03, THETAS["random"])
    eig = np.linalg.eigvalsh(Q)
    assert a == pytest.approx(eig.min(), rel=1e-13) and b == pytest.approx(eig.max(), rel=1e-13)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_theorem1_stochastic_expectation_by_enumeration(alpha):
    """Theorem 1 with example noise: E[ClientUpdate] over every sequence of single-example minibatches
    (m^K equally likely paths) equals Q A (x − c) with A = E[B_z], c = A^{-1} E[B_z c_z] (paper §2)."""
    rng = np.random.default_rng(21)
    m, d, K, gamma = 3, 3, 4, 0.04
    B = np.empty((m, d, d))
    for j in range(m):
        G = rng.standard_normal((d, d))
        B[j] = G @ G.T + 0.5 * np.eye(d)
    cz = rng.standard_normal((m, d))
    A = B.mean(0)
    c = np.linalg.solve(A, np.einsum("jkl,jl->k", B, cz) / m)
    x = rng.standard_normal(d)
    theta = np.array([0.5, 1.0, 0.0, 2.0])
    mean = np.zeros(d)
    for path in itertools.product(range(m), repeat=K):
        y, out = x.copy(), np.zeros(d)
        for th, j in zip(theta, path):
            g = B[j] @ (y - cz[j]) + alpha * (y - x)
            out += th * g
            y = y - gamma * g
        mean += out / m**K
    np.testing.assert_allclose(mean, qd.client_surrogate_gradient(x, A, c, alpha, gamma, theta), rtol=0, atol=1e-12)


def test_lemma10_constants_sandwich_the_surrogate_hessian(make_instance):
    """Lemmas 8 and 10: μ̃ I ⪯ E[Q_i A_i] ⪯ L̃ I with (L̃, μ̃) = (E λ_max(Q_i A_i), E λ_min(Q_i A_i))."""
    A, _, p = make_instance(16)
    for theta in THETAS.values():
        smooth, strong = qd.surrogate_constants(A, p, 0.4, 0.05, theta)
        lam = np.linalg.eigvalsh(qd.surrogate_hessian(A, p, 0.4, 0.05, theta))
        assert strong * (1 - 1e-13) <= lam[0] and lam[-1] <= smooth * (1 + 1e-13)
        assert qd.condition_bound(A, p, 0.4, 0.05, theta) == smooth / strong
    with pytest.raises(ValueError):
        qd.surrogate_constants(A, p, 0.0, 0.5, qd.theta_full(2))  # γ > 1/L: Q_i A_i indefinite
