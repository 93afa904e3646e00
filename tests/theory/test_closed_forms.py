"""fedbench.theory.closed_forms: φ, ψ and κ against their sum forms, Lemmas 3/4/6, §4.1, and every §4 reference value.

Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning"
(AISTATS 2021). The figures are images without numbers; the reference values (Figs. 1–4) are the
values derived from the paper's formulas (Lemmas 3–4, Table 2, eq. (17)) and printed to 4 decimals
in the project's reproduction notes; each is checked to half a unit in its last printed digit.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.theory import closed_forms as cf
from fedbench.theory import limits, rates
from fedbench.theory import quadratic as qd


def printed(value, reference, digits=4):
    """value rounds to the printed reference (half a unit of the last printed digit, plus rounding slack)."""
    assert abs(float(value) - reference) <= 0.5 * 10.0**-digits + 1e-12, (float(value), reference)


# --- closed forms against the sum forms -------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.5, 5.0])
@pytest.mark.parametrize("K", [1, 2, 7, 40])
def test_phi_closed_form_equals_sum_form(alpha, K):
    """Eq. (10) = (33): Σ_{k≤K} (1 − γ(λ+α))^{k−1} λ = (1 − (1 − γ(λ+α))^K)/γ · λ/(λ+α)."""
    lam = np.linspace(1.0, 10.0, 13)
    for gamma in (0.0, 1e-3, 0.3 / (10 + alpha), 0.999 / (10 + alpha)):
        expected = qd.distortion_eigenvalues(lam, alpha, gamma, qd.theta_full(K)) * lam
        np.testing.assert_allclose(cf.phi(lam, alpha, gamma, K), expected, rtol=1e-13)


@pytest.mark.parametrize("alpha", [0.0, 0.5])
@pytest.mark.parametrize("K", [1, 2, 7, 40])
def test_psi_equals_sum_form(alpha, K):
    lam = np.linspace(1.0, 10.0, 13)
    for gamma in (0.0, 1e-3, 0.5 / (10 + alpha)):
        expected = qd.distortion_eigenvalues(lam, alpha, gamma, qd.theta_last(K)) * lam
        np.testing.assert_allclose(cf.psi(lam, alpha, gamma, K), expected, rtol=1e-13)


def test_large_K_keeps_precision():
    """K = 10⁶ with γ = 10⁻⁷ (Fig. 9's regime): log1p/expm1 against the exact series expansion."""
    K, gamma, lam = 1e6, 1e-7, 3.0
    x = K * np.log1p(-gamma * lam)
    series = -(x + x**2 / 2 + x**3 / 6 + x**4 / 24 + x**5 / 120 + x**6 / 720)  # 1 − e^x, |x| = 0.3
    assert cf.phi(lam, 0.0, gamma, K) == pytest.approx(series / gamma, rel=1e-6)
    assert np.isfinite(cf.kappa_full(1.0, 10.0, 0.0, 1e-3, 1e9))


@pytest.mark.parametrize("alpha", [0.0, 0.5, 5.0])
def test_b3_tightness_condition_equals_closed_forms(alpha):
    """Appendix B.3: for one client with A = diag(L, μ), κ (9) equals φ(L)/φ(μ), resp. ψ(L)/ψ(μ)."""
    A = np.diag([10.0, 1.0])[None]
    for K in (1, 3, 25):
        gamma = 0.7 / (10 + alpha)
        assert qd.condition_bound(A, [1.0], alpha, gamma, qd.theta_full(K)) == pytest.approx(
            float(cf.kappa_full(1.0, 10.0, alpha, gamma, K)), rel=1e-13
        )
        gamma = 0.7 / (K * 10 + alpha)
        assert qd.condition_bound(A, [1.0], alpha, gamma, qd.theta_last(K)) == pytest.approx(
            float(cf.kappa_last(1.0, 10.0, alpha, gamma, K)), rel=1e-13
        )


def test_lemmas_3_4_surrogate_spectrum_in_closed_form_interval(make_instance):
    """Every eigenvalue of H̃ lies in [φ(μ), φ(L)] (Θ_{1:K}) or [ψ(μ), ψ(L)] (Θ_K, γ < 1/(KL+α));
    cond(H̃) ≤ κ (9) ≤ (11)/(13); Lemma 6: cond(Q_i) ≤ κ₀/κ_closed."""
    A, _, p = make_instance(20)
    for alpha in (0.0, 0.8):
        for K in (2, 6):
            for theta, form, gamma in (
                (qd.theta_full(K), cf.phi, 0.9 / (10 + alpha)),
                (qd.theta_last(K), cf.psi, 0.9 / (K * 10 + alpha)),
            ):
                lam = np.linalg.eigvalsh(qd.surrogate_hessian(A, p, alpha, gamma, theta))
                lo, hi = form(1.0, alpha, gamma, K), form(10.0, alpha, gamma, K)
                assert lo * (1 - 1e-13) <= lam.min() and lam.max() <= hi * (1 + 1e-13)
                kappa9 = qd.condition_bound(A, p, alpha, gamma, theta)
                assert lam[-1] / lam[0] <= kappa9 * (1 + 1e-13) <= hi / lo * (1 + 1e-12)
                condQ = np.linalg.cond(qd.distortion_matrix(A, alpha, gamma, theta))
                assert np.all(condQ <= 10.0 / (hi / lo) * (1 + 1e-12))


def test_psi_monotone_only_below_lemma4_threshold():
    """ψ'(λ) = ζ^{K−2}(1 − γ(Kλ + α)) ≥ 0 on [μ, L] iff γ ≤ 1/(KL + α)."""
    lam = np.linspace(1.0, 10.0, 1001)
    K, alpha = 20, 0.5
    assert np.all(np.diff(cf.psi(lam, alpha, 0.99 / (K * 10 + alpha), K)) > 0)
    assert np.any(np.diff(cf.psi(lam, alpha, 2.0 / (K * 10 + alpha), K)) < 0)
    with pytest.raises(ValueError):
        cf.kappa_last(1.0, 10.0, alpha, 2.0 / (K * 10 + alpha), K)
    with pytest.raises(ValueError):
        cf.kappa_full(1.0, 10.0, alpha, 1 / (10 + alpha), K)


# --- §4.1 qualitative facts -------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.0, 0.5, 5.0])
def test_kappa_full_equals_kappa0_iff_gamma_zero_or_K_one(alpha):
    """κ(α, γ, Θ_{1:K}) ≤ L/μ with equality iff γ = 0 or K = 1, for any α (q(λ) strictly decreases otherwise)."""
    L = 10.0
    assert cf.kappa_full(1.0, L, alpha, 0.0, 50) == pytest.approx(L, rel=1e-15)
    assert cf.kappa_full(1.0, L, alpha, 0.9 / (L + alpha), 1) == pytest.approx(L, rel=1e-15)
    K = np.arange(2, 200)
    for gamma in (1e-4, 0.05, 0.9 / (L + alpha)):
        assert np.all(cf.kappa_full(1.0, L, alpha, gamma, K) < L)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 5.0])
def test_kappa_full_decreases_in_K_and_gamma(alpha):
    L = 10.0
    K = np.unique(np.geomspace(1, 1e5, 300).round())
    assert np.all(np.diff(cf.kappa_full(1.0, L, alpha, 0.3 / (L + alpha), K)) <= 0)
    assert np.all(np.diff(cf.kappa_full(1.0, L, alpha, 0.3 / (L + alpha), K[:60])) < 0)
    gammas = np.linspace(0, 0.999 / (L + alpha), 300)
    assert np.all(np.diff(cf.kappa_full(1.0, L, alpha, gammas, 10)) < 0)


def test_alpha_direction_for_full_theta_depends_on_K():
    """At fixed γ and K, how α moves κ(Θ_{1:K}) (§4.1 of the paper: α shrinks the frontier, Fig. 3).

    Checked here: it increases for K ≥ 5 (all γ < 1/(L+α) in the grid; e.g. L = 10, K = 10,
    γ = 0.04 gives 2.9655, 3.0829, 3.2048, 4.2744 for α = 0, 0.5, 1, 5); but for K = 2 it *decreases*
    for every γ: κ = L(2 − γ(L+α)) / (μ(2 − γ(μ+α))); and K = 3, 4 go either way. Small-γ expansion:
    d ln κ/dα ≈ γ²(L − μ)(K − 1)(K − 5)/12, so the sign is that of K − 5 for small γ.
    """
    for alpha, ref in zip((0.0, 0.5, 1.0, 5.0), (2.9655, 3.0829, 3.2048, 4.2744)):
        printed(cf.kappa_full(1.0, 10.0, alpha, 0.04, 10), ref)
    alphas = np.linspace(0, 20, 201)
    for L in (1.5, 10.0, 100.0):
        for frac in (1e-3, 0.1, 0.5, 0.9, 0.999):
            gamma = frac / (L + alphas[-1])
            for K in (5, 6, 10, 100, 10**4):
                log_kappa = np.log(cf.kappa_full(1.0, L, alphas, gamma, K))
                assert np.all(np.diff(log_kappa) > -1e-13)
            k2 = cf.kappa_full(1.0, L, alphas, gamma, 2)
            np.testing.assert_allclose(k2, L * (2 - gamma * (L + alphas)) / (2 - gamma * (1 + alphas)), rtol=1e-13)
            assert np.all(np.diff(k2) < 0)
    for K in (3, 10):  # the small-γ expansion of d ln κ/dα
        gamma, h = 1e-3, 1e-3
        slope = (
            np.log(cf.kappa_full(1.0, 10.0, 1 + h, gamma, K)) - np.log(cf.kappa_full(1.0, 10.0, 1 - h, gamma, K))
        ) / (2 * h)
        assert slope == pytest.approx(gamma**2 * 9 * (K - 1) * (K - 5) / 12, rel=0.05)
    # K = 3 both ways: decreasing at small γ, increasing somewhere at large γ and large α
    assert np.all(np.diff(cf.kappa_full(1.0, 10.0, alphas, 0.01 / 30, 3)) < 0)
    big = cf.kappa_full(1.0, 100.0, np.linspace(0, 500, 501), 0.999 / 600, 3)
    assert np.any(np.diff(big) > 0) and np.any(np.diff(big) < 0)


def test_alpha_decreases_kappa_last():
    """For Θ_K below Lemma 4's threshold, α decreases κ: (1 − γ(L+α))/(1 − γ(μ+α)) = 1 − γ(L−μ)/(1 − γ(μ+α))."""
    alphas = np.linspace(0, 5, 101)
    for K in (2, 10, 100):
        gamma = 0.9 / (K * 10 + 5)
        assert np.all(np.diff(cf.kappa_last(1.0, 10.0, alphas, gamma, K)) < 0)


def test_kappa_last_falls_exponentially_and_tends_to_kappa0():
    assert cf.kappa_last(1.0, 10.0, 0.3, 0.0, 50) == pytest.approx(10.0, rel=1e-15)
    assert cf.kappa_last(1.0, 10.0, 0.3, 1e-3, 1) == pytest.approx(10.0, rel=1e-15)
    K = np.arange(1, 60)
    log_kappa = np.log(cf.kappa_last(1.0, 10.0, 0.0, 1e-3, K))
    np.testing.assert_allclose(np.diff(log_kappa), np.log(0.99 / 0.999), rtol=1e-12)


def test_simulated_last_point_has_one_shot_delta_at_the_cusp():
    """The kink of the simulated Θ_K frontier (Fig. 5): at K_cusp, ψ(L) = ψ(μ), b/a = κ₀ and
    Δ = (√κ₀−1)/(√κ₀+1); K_cusp = 255.4 for Fig. 5."""
    mu, L, gamma = 1.0, 10.0, 1e-3
    K = float(limits.last_cusp_steps(mu, L, 0.0, gamma))
    printed(K, 255.4, digits=1)
    lam = np.linspace(mu, L, 100)
    kappa, delta = cf.last_spectrum_point(lam, 0.0, gamma, K)
    assert delta == pytest.approx(float(rates.suboptimality(L / mu, 1.0)), abs=1e-12)
    psi = cf.psi(np.array([mu, L]), 0.0, gamma, K)
    assert psi[0] == pytest.approx(psi[1], rel=1e-12)
    # below Lemma 4's threshold the simulated point is the analytic one (b/a = κ₀/κ: eq. (17) = Lemma 5 form)
    kappa, delta = cf.last_spectrum_point(lam, 0.0, gamma, 50)
    assert kappa == pytest.approx(float(cf.kappa_last(mu, L, 0.0, gamma, 50)), rel=1e-12)
    assert delta == pytest.approx(float(rates.suboptimality(L / mu, kappa)), abs=1e-12)
    kappa, delta = cf.last_spectrum_point(lam, 0.0, gamma, 1e6)  # ρ, Δ → 1
    assert rates.rate(kappa) == 1.0 and delta == 1.0


# --- §4 reference values (Figs. 1–4) ------------------------------------------------------------------

FIG1_LEFT = [  # L, K (γ = 0.01), κ, ρ_GD, Δ
    (5, 1, 5, 0.6667, 0),
    (5, 10, 4.1965, 0.6151, 0.0438),
    (5, 100, 1.5680, 0.2212, 0.2820),
    (50, 1, 50, 0.9608, 0),
    (50, 10, 10.4481, 0.8253, 0.3726),
    (50, 100, 1.5774, 0.2240, 0.6983),
]


@pytest.mark.parametrize("L, K, kappa, rho, delta", FIG1_LEFT)
def test_fig1_left(L, K, kappa, rho, delta):
    k = cf.kappa_full(1.0, L, 0.0, 0.01, K)
    printed(k, kappa)
    printed(rates.rate(k, "gd"), rho)
    printed(rates.suboptimality(L, k), delta)


@pytest.mark.parametrize("L, delta", [(5, 0.3820), (50, 0.7522)])
def test_fig1_left_large_K(L, delta):
    for K in (1000, 1e4, 1e6):
        k = cf.kappa_full(1.0, L, 0.0, 0.01, K)
        printed(k, 1.0)
        printed(rates.rate(k, "gd"), 0.0)
        printed(rates.suboptimality(L, k), delta)


def test_fig1_right_endpoint():
    """γ → 1/L at K = 100: κ → 1/(1 − (1 − μ/L)^K)."""
    k5 = limits.kappa_full_limit_step_size(1.0, 5.0, 0.0, 100)
    printed(k5, 1.0000000002, digits=10)
    printed(rates.rate(k5), 0.0)
    k50 = limits.kappa_full_limit_step_size(1.0, 50.0, 0.0, 100)
    printed(k50, 1.1529)
    printed(rates.rate(k50), 0.0710)
    printed(rates.suboptimality(50.0, k50), 0.7363)
    for L, k in ((5.0, k5), (50.0, k50)):  # the limit is the closed form's
        assert float(cf.kappa_full(1.0, L, 0.0, (1 - 1e-12) / L, 100)) == pytest.approx(float(k), rel=1e-10)


FIG2 = [  # K (L = 10, γ = 1/(2L)), κ, ρ_GD, ρ_Nes, ρ_HB, Δ
    (1, 10, 0.8182, 0.6408, 0.5195, 0),
    (2, 7.6923, 0.7699, 0.5924, 0.4700, 0.0655),
    (5, 4.2824, 0.6214, 0.4625, 0.3484, 0.2089),
    (10, 2.4897, 0.4269, 0.3128, 0.2242, 0.3343),
    (100, 1.0060, 0.0030, 0.0022, 0.0015, 0.5184),
]


@pytest.mark.parametrize("K, kappa, gd, nesterov, heavy_ball, delta", FIG2)
def test_fig2(K, kappa, gd, nesterov, heavy_ball, delta):
    k = cf.kappa_full(1.0, 10.0, 0.0, 1 / 20, K)
    printed(k, kappa)
    printed(rates.rate(k, "gd"), gd)
    printed(rates.rate(k, "nesterov"), nesterov)
    printed(rates.rate(k, "heavy_ball"), heavy_ball)
    printed(rates.suboptimality(10.0, k), delta)


@pytest.mark.parametrize("L, delta", [(2, 0.1716), (5, 0.3820), (10, 0.5195), (50, 0.7522), (100, 0.8182)])
def test_fig2_other_L(L, delta):
    """K = 1: ρ_GD = (L−1)/(L+1); K → ∞: Δ = (√L − 1)/(√L + 1)."""
    gamma = 1 / (2 * L)
    assert rates.rate(cf.kappa_full(1.0, L, 0.0, gamma, 1)) == pytest.approx((L - 1) / (L + 1), abs=1e-15)
    printed(rates.suboptimality(L, cf.kappa_full(1.0, L, 0.0, gamma, 1e6)), delta)


FIG3 = [  # α, κ_∞, ρ_GD, Δ(K → ∞), Δ(K = 10); γ = ½(L+α)⁻¹, L = 10
    (0.0, 1.0, 0.0, 0.5195, 0.3343),
    (0.5, 1.4286, 0.1765, 0.4514, 0.3139),
    (1.0, 1.8182, 0.2903, 0.4021, 0.2956),
    (5.0, 4.0, 0.6, 0.2251, 0.1983),
]


@pytest.mark.parametrize("alpha, kappa_inf, rho, delta_inf, delta10", FIG3)
def test_fig3(alpha, kappa_inf, rho, delta_inf, delta10):
    gamma = 0.5 / (10 + alpha)
    k_inf = limits.kappa_full_limit_steps(1.0, 10.0, alpha)
    assert float(cf.kappa_full(1.0, 10.0, alpha, gamma, 1e7)) == pytest.approx(float(k_inf), rel=1e-12)
    printed(k_inf, kappa_inf)
    printed(rates.rate(k_inf), rho)
    printed(rates.suboptimality(10.0, k_inf), delta_inf)
    printed(rates.suboptimality(10.0, cf.kappa_full(1.0, 10.0, alpha, gamma, 10)), delta10)


def test_fig4_maml_branch():
    """Θ_K with γ = (2LK)⁻¹: κ = ((1 − 1/(2K))/(1 − 1/(20K)))^{K−1}·10 → 10 e^{−0.45} = 6.3763."""
    k2 = cf.kappa_last(1.0, 10.0, 0.0, 1 / 40, 2)
    printed(k2, 7.6923)
    printed(rates.suboptimality(10.0, k2), 0.0655)
    k_inf = limits.kappa_last_limit_scaled_step(1.0, 10.0, 0.5)
    assert float(cf.kappa_last(1.0, 10.0, 0.0, 1 / (20 * 1e9), 1e9)) == pytest.approx(float(k_inf), rel=1e-8)
    printed(k_inf, 6.3763)
    printed(rates.rate(k_inf, "gd"), 0.7289)
    printed(rates.rate(k_inf, "nesterov"), 0.5542)
    printed(rates.rate(k_inf, "heavy_ball"), 0.4326)
    printed(rates.suboptimality(10.0, k_inf), 0.1120)
    K = np.unique(np.geomspace(1, 1e6, 200).round())
    assert np.all(np.diff(cf.kappa_last(1.0, 10.0, 0.0, 1 / (20 * K), K)) < 0)  # the branch stops at k_inf


@pytest.mark.parametrize(
    "K, kappa, rho, delta",
    [(10, 9.6049, 0.8114, 0.0101), (100, 6.6588, 0.7389, 0.1013), (1000, 1.5814, 0.2252, 0.4309)],
)
def test_fig4_fedavg_branch(K, kappa, rho, delta):
    k = cf.kappa_full(1.0, 10.0, 0.0, 1e-3, K)
    printed(k, kappa)
    printed(rates.rate(k), rho)
    printed(rates.suboptimality(10.0, k), delta)


def test_fig4_fedavg_branch_large_K():
    for K in (1e4, 1e6):
        k = cf.kappa_full(1.0, 10.0, 0.0, 1e-3, K)
        printed(k, 1.0)
        printed(rates.rate(k), 0.0)
        printed(rates.suboptimality(10.0, k), 0.5195)


@pytest.mark.parametrize("d", [2, 5, 100])
def test_random_spectrum_is_appendix_d1(d):
    """A = β₁BᵀB + β₂I with λ_min(A) = μ and λ_max(A) = L: an affine map of BᵀB's spectrum."""
    rng = np.random.default_rng(d)
    lam = cf.random_spectrum(rng, d, 1.0, 10.0)
    assert lam.shape == (d,) and lam[0] == 1.0 and lam[-1] == 10.0 and np.all(np.diff(lam) >= 0)
    B = np.random.default_rng(d).standard_normal((d, d))
    s = np.linalg.eigvalsh(B.T @ B)
    beta1 = 9.0 / (s[-1] - s[0])
    np.testing.assert_allclose(lam, beta1 * s + (1.0 - beta1 * s[0]), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError):
        cf.random_spectrum(rng, 1, 1.0, 10.0)
