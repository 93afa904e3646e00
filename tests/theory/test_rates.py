"""Oracles for fedbench.theory.rates (Charles & Konečný, AISTATS 2021, Table 2, eq. (17), Lemma 5)."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.theory import rates

KAPPAS = np.array([1.0, 1.5, 2.0, 10.0, 100.0, 1e4])


def test_table2_values():
    k = KAPPAS
    np.testing.assert_allclose(rates.rate(k, "gd"), (k - 1) / (k + 1), rtol=0, atol=1e-15)
    np.testing.assert_allclose(rates.rate(k, "nesterov"), 1 - 2 / np.sqrt(3 * k + 1), rtol=0, atol=1e-15)
    np.testing.assert_allclose(rates.rate(k, "heavy_ball"), (np.sqrt(k) - 1) / (np.sqrt(k) + 1), atol=1e-15)
    assert rates.rate(10.0, "gd") == pytest.approx(9 / 11, abs=1e-15)


def test_momentum_ordering_heavy_ball_below_nesterov_below_gd():
    """Fig. 2: for every κ > 1, ρ_HB < ρ_Nes < ρ_GD; all vanish at κ = 1."""
    k = np.geomspace(1 + 1e-6, 1e6, 400)
    assert np.all(rates.rate(k, "heavy_ball") < rates.rate(k, "nesterov"))
    assert np.all(rates.rate(k, "nesterov") < rates.rate(k, "gd"))
    for server in rates.SERVER_OPTIMIZERS:
        assert rates.rate(1.0, server) == 0.0


def _spectral_radius(server, eta, beta, lam):
    """Largest |root| of the per-eigenvalue characteristic polynomial of the server iteration on a quadratic."""
    c = 1 - eta * lam
    if server == "gd":
        return abs(c)
    if server == "heavy_ball":  # x⁺ = x − ηλx + β(x − x⁻)
        coeffs = [1.0, -(1 + beta - eta * lam), beta]
    else:  # nesterov: y = x + β(x − x⁻), x⁺ = (1 − ηλ) y
        coeffs = [1.0, -(1 + beta) * c, beta * c]
    return np.abs(np.roots(coeffs)).max()


@pytest.mark.parametrize("server", rates.SERVER_OPTIMIZERS)
@pytest.mark.parametrize("kappa", [2.0, 10.0, 100.0])
def test_tuned_parameters_attain_table2_rate(server, kappa):
    """Lessard, Recht & Packard 2016, Prop. 1: with the tuned (η, β), the spectral radius of the iteration
    over eigenvalues λ ∈ [μ̃, L̃] equals Table 2's ρ (double roots at the ends cost √eps of accuracy)."""
    mu = 0.3
    eta, beta = rates.tuned_server_parameters(kappa * mu, mu, server)
    radius = max(_spectral_radius(server, eta, beta, lam) for lam in np.linspace(mu, kappa * mu, 2001))
    tol = 1e-14 if server == "gd" else 1e-7
    assert radius == pytest.approx(float(rates.rate(kappa, server)), abs=tol)


def test_heavy_ball_discriminant_is_non_positive_on_the_spectrum():
    """Exact form of the heavy-ball case: every root has modulus √β = ρ_HB (complex pair) on [μ̃, L̃]."""
    mu, L = 1.0, 37.0
    eta, beta = rates.tuned_server_parameters(L, mu, "heavy_ball")
    lam = np.linspace(mu, L, 1001)
    assert np.all((1 + beta - eta * lam) ** 2 - 4 * beta <= 1e-13)
    assert np.sqrt(beta) == pytest.approx(float(rates.rate(L / mu, "heavy_ball")), abs=1e-15)


def test_heavy_ball_symmetry():
    """§5 of the paper conjectures the symmetry; it is exact: Δ(κ₀, κ) = ρ_HB(κ₀/κ), so the HB frontier
    is symmetric about ρ = Δ."""
    for kappa0 in (2.0, 10.0, 50.0):
        k = np.linspace(1, kappa0, 101)
        np.testing.assert_allclose(rates.suboptimality(kappa0, k), rates.rate(kappa0 / k, "heavy_ball"), atol=1e-15)


def test_suboptimality_endpoints_and_lemma5_form():
    assert rates.suboptimality(10.0, 10.0) == 0.0
    assert rates.suboptimality(10.0, 1.0) == pytest.approx((np.sqrt(10) - 1) / (np.sqrt(10) + 1), abs=1e-15)
    assert rates.suboptimality(10.0, 20.0) < 0  # κ > κ₀ (Θ_K beyond γ < 1/(KL+α)): (17) leaves [0, 1]
    # b/a = κ₀/κ makes the two forms equal (Appendix D.1)
    np.testing.assert_allclose(
        rates.suboptimality_from_distortion(0.5, 0.5 * 10.0 / 3.0), rates.suboptimality(10.0, 3.0), atol=1e-15
    )
    rho, delta = rates.frontier_point(10.0, 3.0, "heavy_ball")
    assert rho == rates.rate(3.0, "heavy_ball") and delta == rates.suboptimality(10.0, 3.0)


def test_validation():
    with pytest.raises(ValueError):
        rates.rate(0.5)
    with pytest.raises(ValueError):
        rates.rate(2.0, "adam")
    with pytest.raises(ValueError):
        rates.tuned_server_parameters(1.0, 2.0)
    with pytest.raises(ValueError):
        rates.suboptimality_from_distortion(2.0, 1.0)
