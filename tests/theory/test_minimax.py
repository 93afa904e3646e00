"""fedbench.theory.minimax: exact fixed points of Local SGDA and Fed-Norm-SGDA on quadratic saddles.

- the affine round map equals stepping the recursion by hand (1e-13);
- the fixed point of Local SGDA is the zero of Σ p_i S_i H G_i, Fed-Norm-SGDA's the same with p_i/τ_i
  (the S_i propagator form of the module docstring; 1e-10 relative), and many rounds reach them;
- Fed-Norm-SGDA's fixed point does not depend on the server lr; with equal τ_i it is Local SGDA's;
- as the lr shrinks: distance to the saddle of Σ p_i τ_i f_i (Local SGDA) and of Σ p_i f_i
  (Fed-Norm-SGDA) O(lr), log-log slope 1; Local SGDA's distance to the true saddle stays bounded
  away (the objective mismatch); the table is printed with ``-s``;
- momentum: naive averaging tends to the saddle of Σ p_i ‖a_i‖₁ f_i, Fed-Norm to Σ p_i f_i;
- the "+" snapshot: the fixed point is reached for every refresh period S and also tends to the
  true saddle under Fed-Norm;
- ∇Φ vanishes at the saddle's x.
"""

import numpy as np
import pytest

from fedbench.theory.minimax import (
    SaddleQuadratic,
    a_norm,
    client_round_map,
    envelope_grad,
    field,
    fixed_point,
    jacobian,
    random_problem,
    round_map,
    saddle,
    trajectory,
)

P = np.array([0.4, 0.6])
TAUS = (2, 5)


@pytest.fixture(scope="module")
def problems():
    rng = np.random.default_rng(0)
    return [random_problem(rng, 2, 2) for _ in TAUS]


def _by_hand(q, z, x_hat, tau, eta_x, eta_y, rho, plus):
    dx = q.dims[0]
    v = np.zeros_like(z)
    for _ in range(tau):
        g = field(q, z)
        if plus:
            g[dx:] = field(q, np.concatenate([x_hat, z[dx:]]))[dx:]
        v = rho * v + g
        z = z - np.concatenate([np.full(dx, eta_x), np.full(len(z) - dx, eta_y)]) * v
    return z


@pytest.mark.parametrize("rho,plus", [(0.0, False), (0.9, False), (0.0, True), (0.5, True)])
def test_client_round_map_is_the_recursion(problems, rho, plus):
    rng = np.random.default_rng(1)
    z, x_hat = rng.normal(size=4), rng.normal(size=2)
    for q in problems:
        Pm, Qm, r = client_round_map(q, 5, 0.07, 0.11, rho, plus)
        want = _by_hand(q, z, x_hat, 5, 0.07, 0.11, rho, plus)
        np.testing.assert_allclose(Pm @ z + Qm @ x_hat + r, want, rtol=0, atol=1e-13)
        if not plus:
            assert np.abs(Qm).max() == 0.0


def _zero_of_weighted_propagators(problems, p, taus, eta, normalized):
    """Σ_i w_i S_i H G_i(z) = 0, S_i = Σ_{j<τ_i} (I − ηJ_i)^j, w_i = p_i or p_i/τ_i (summary formula)."""
    lhs, rhs = 0, 0
    for q, pi, t in zip(problems, p, taus):
        J = jacobian(q)
        S = sum(np.linalg.matrix_power(np.eye(len(J)) - eta * J, j) for j in range(t))
        w = pi / t if normalized else pi
        lhs, rhs = lhs + w * S @ J, rhs + w * S @ J @ q.center
    return np.linalg.solve(lhs, rhs)


@pytest.mark.parametrize("eta", [0.2, 0.05])
@pytest.mark.parametrize("normalized", [False, True])
def test_fixed_point_closed_form_and_convergence(problems, eta, normalized):
    z_star = fixed_point(problems, P, TAUS, eta, eta, normalized)
    np.testing.assert_allclose(z_star, _zero_of_weighted_propagators(problems, P, TAUS, eta, normalized),
                               rtol=1e-10, atol=1e-12)
    Pm, Qm, r = round_map(problems, P, TAUS, eta, eta, normalized)
    np.testing.assert_allclose(Pm @ z_star + r, z_star, rtol=0, atol=1e-12)
    traj = trajectory(problems, P, TAUS, eta, eta, normalized, np.zeros(4), 3000)
    assert np.abs(traj[-1] - z_star).max() <= 1e-8
    other = fixed_point(problems, P, TAUS, eta, eta, not normalized)
    assert np.abs(other - z_star).max() > 1e-2


def test_fed_norm_fixed_point_ignores_server_lr_and_equals_local_sgda_with_equal_tau(problems):
    a = fixed_point(problems, P, TAUS, 0.1, 0.1, True, server_lr=1.0)
    b = fixed_point(problems, P, TAUS, 0.1, 0.1, True, server_lr=0.3)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    c = fixed_point(problems, P, (3, 3), 0.1, 0.1, True)
    d = fixed_point(problems, P, (3, 3), 0.1, 0.1, False)
    np.testing.assert_allclose(c, d, rtol=0, atol=1e-12)
    Pn, _, rn = round_map(problems, P, (3, 3), 0.1, 0.1, True, server_lr=1.0)
    Pl, _, rl = round_map(problems, P, (3, 3), 0.1, 0.1, False)
    np.testing.assert_allclose(Pn, Pl, rtol=0, atol=1e-14)
    np.testing.assert_allclose(rn, rl, rtol=0, atol=1e-14)


def distance_table(problems, etas, rho=0.0):
    """Rows (lr, ‖z_Local − z̃‖, ‖z_FedNorm − z*‖, ‖z_Local − z*‖), z̃ the saddle of Σ p_i ‖a_i‖₁ f_i
    (the mismatched objective), z* the saddle of Σ p_i f_i (the true one)."""
    norms = np.array([a_norm(t, rho) for t in TAUS])
    z_mis, z_true = saddle(problems, P * norms), saddle(problems, P)
    rows = []
    for eta in etas:
        zl = fixed_point(problems, P, TAUS, eta, eta, False, rho=rho)
        zn = fixed_point(problems, P, TAUS, eta, eta, True, rho=rho)
        rows.append((eta, np.linalg.norm(zl - z_mis), np.linalg.norm(zn - z_true), np.linalg.norm(zl - z_true)))
    return np.array(rows)


@pytest.mark.parametrize("rho", [0.0, 0.9])
def test_small_lr_limits_objective_mismatch(problems, rho):
    etas = (0.1 if rho == 0 else 0.01) / 2.0 ** np.arange(8)
    table = distance_table(problems, etas, rho)
    print(f"\nρ = {rho}:   lr   |Local − saddle Σp‖a‖f|  |FedNorm − saddle Σp f|  |Local − saddle Σp f|")
    for row in table:
        print("  ".join(f"{v:12.4e}" for v in row))
    for col in (1, 2):
        slopes = np.diff(np.log(table[:, col])) / np.diff(np.log(table[:, 0]))
        assert np.all(np.abs(slopes[-4:] - 1.0) < 0.05), slopes
    gap = np.linalg.norm(saddle(problems, P * np.array([a_norm(t, rho) for t in TAUS])) - saddle(problems, P))
    assert gap > 0.1 and abs(table[-1, 3] - gap) < 0.05 * gap


@pytest.mark.parametrize("period", [1, 3])
def test_plus_snapshot_fixed_point(problems, period):
    eta = 0.05
    z_star = fixed_point(problems, P, TAUS, eta, eta, True, plus=True)
    traj = trajectory(problems, P, TAUS, eta, eta, True, np.zeros(4), 4000, plus=True, snapshot_period=period)
    assert np.abs(traj[-1] - z_star).max() <= 1e-8
    # differs from the plain fixed point, and tends to the true saddle as the lr shrinks
    assert np.abs(z_star - fixed_point(problems, P, TAUS, eta, eta, True)).max() > 1e-4
    dist = [np.linalg.norm(fixed_point(problems, P, TAUS, e, e, True, plus=True) - saddle(problems, P))
            for e in (0.01, 0.005, 0.0025)]
    assert dist[1] / dist[0] == pytest.approx(0.5, abs=0.03) and dist[2] / dist[1] == pytest.approx(0.5, abs=0.03)


def test_envelope_gradient_vanishes_at_the_saddle(problems):
    z = saddle(problems, P)
    assert np.abs(envelope_grad(problems, P, z[:2])).max() <= 1e-12
    assert np.abs(envelope_grad(problems, P, z[:2] + 0.1)).max() > 1e-3


def test_errors():
    q = SaddleQuadratic(np.eye(2), np.zeros((2, 1)), np.eye(1), np.zeros(2), np.zeros(1))
    with pytest.raises(ValueError, match="summing to 1"):
        round_map([q, q], [0.5, 0.6], (1, 1), 0.1, 0.1, False)
    with pytest.raises(ValueError, match="taus"):
        round_map([q, q], [0.5, 0.5], (1, 0), 0.1, 0.1, False)
    bad = q._replace(c=np.zeros(3))
    with pytest.raises(ValueError, match="shapes"):
        saddle([q, bad], [0.5, 0.5])
    assert a_norm(5) == 5.0 and a_norm(2, 0.9) == pytest.approx(1 + 1.9)
