"""Federated descent–ascent (Sharma, Panda & Joshi, TMLR 2023): Local SGDA(+), Fed-Norm-SGDA(+).

The real module functions, run round by round on quadratic saddle problems with exact gradients
(the "batch" is the client's index), against :mod:`fedbench.theory.minimax`:

- the fixed points: one round of the modules maps the closed-form fixed point to itself (1e-12) and
  many rounds reach it (1e-8), for Local SGDA, Fed-Norm-SGDA, with local momentum 0.9, and the "+"
  variants (S = 1 and 3), τ = (2, 5);
- Fed-Norm-SGDA ≡ Local SGDA with equal τ_i, P = n and server lr 1 (1e-12), also with momentum,
  the snapshot and a projection; with unequal τ_i they differ;
- y stays in Y after every local and server step (ball, simplex); the simplex projection against
  a bisection reference;
- eq. 3: w̃_i = p_i n / P; τ_eff choices; the snapshot schedule; the messages; the errors.
"""

import numpy as np
import pytest
import torch

from fedbench.algorithms import (
    ALGORITHMS,
    fed_norm_sgda,
    fed_norm_sgda_plus,
    get_algorithm,
    local_sgda,
    local_sgda_plus,
    sgda,
)
from fedbench.metrics.communication import count_floats
from fedbench.theory import minimax as theory

TAUS = (2, 5)
N_K = np.array([3.0, 5.0])
NAIVE = {False: local_sgda, True: local_sgda_plus}
NORM = {False: fed_norm_sgda, True: fed_norm_sgda_plus}


def test_registered():
    for name in ("local_sgda", "local_sgda_plus", "fed_norm_sgda", "fed_norm_sgda_plus"):
        assert name in ALGORITHMS and get_algorithm(name).__name__.endswith(name)
    assert fed_norm_sgda_plus.HPARAMS["snapshot_period"] == 1 and fed_norm_sgda.HPARAMS["server_lr"] == 1.0


@pytest.fixture(scope="module")
def problems():
    rng = np.random.default_rng(0)
    return [theory.random_problem(rng, 2, 2) for _ in TAUS]


def _grad_fn(problems):
    """Exact gradient of f_i(x, y) (both players, ``y.y`` the ascent leaf); the batch input is i."""
    def grad_fn(params, i, _labels):
        q = problems[int(i)]
        u, w = params["x"] - torch.from_numpy(q.c), params["y.y"] - torch.from_numpy(q.d)
        A, B, C = (torch.from_numpy(m) for m in (q.A, q.B, q.C))
        gx = A @ u + B @ w
        gy = B.T @ u - C @ w
        return {"x": gx, "y.y": gy}, 0.5 * u @ A @ u + u @ B @ w - 0.5 * w @ C @ w
    return grad_fn


def _params(z):
    z = torch.as_tensor(z, dtype=torch.float64)
    return {"x": z[:2].clone(), "y.y": z[2:].clone()}


def _z(params):
    return torch.cat([params["x"], params["y.y"]]).numpy()


def _round(alg, server, problems, hp, taus=TAUS, sampled=None, record=None):
    grad_fn = _grad_fn(problems)
    sampled = range(len(problems)) if sampled is None else sampled
    msgs = []
    for i in sampled:
        state = alg.client_init(server, None, hp)
        for _ in range(taus[i]):
            state = alg.client_step(state, (i, None), hp, grad_fn)
            if record is not None:
                record.append(sgda.split(state["params"])[1])
        msgs.append(alg.client_final(server, state, hp)[0])
    return alg.server_update(server, msgs, torch.from_numpy(N_K[list(sampled)]), hp), msgs


def _hp(eta, **kw):
    return {"lr": eta, "weight_decay": 0.0, "clip_norm": None, "local_steps": None, **kw}


@pytest.mark.parametrize("plus", [False, True])
@pytest.mark.parametrize("rho", [0.0, 0.9])
@pytest.mark.parametrize("normalized", [False, True])
def test_fixed_point_of_the_modules_is_the_closed_form(problems, normalized, rho, plus):
    eta = 0.05 if rho == 0 else 0.01
    alg = (NORM if normalized else NAIVE)[plus]
    hp = _hp(eta, momentum=rho)
    p = N_K / N_K.sum()
    z_star = theory.fixed_point(problems, p, TAUS, eta, eta, normalized, rho=rho, plus=plus)
    server = alg.server_init(_params(z_star), hp, 2, client_weights=N_K)
    nxt, _ = _round(alg, server, problems, hp)
    assert np.abs(_z(nxt["params"]) - z_star).max() <= 1e-12
    other = theory.fixed_point(problems, p, TAUS, eta, eta, not normalized, rho=rho, plus=plus)
    assert np.abs(other - z_star).max() > 1e-3  # Local SGDA and Fed-Norm really differ


@pytest.mark.parametrize("alg,normalized", [(local_sgda, False), (fed_norm_sgda_plus, True)])
def test_rounds_reach_the_fixed_point(problems, alg, normalized):
    """From far away (S = 3 for the "+" variant: the same fixed point, the snapshot equals x there)."""
    eta, plus = 0.1, alg is fed_norm_sgda_plus
    hp = _hp(eta, snapshot_period=3)
    z_star = theory.fixed_point(problems, N_K / N_K.sum(), TAUS, eta, eta, normalized, plus=plus)
    server = alg.server_init(_params(np.zeros(4)), hp, 2, client_weights=N_K)
    for _ in range(1200):
        server, _ = _round(alg, server, problems, hp)
    assert np.abs(_z(server["params"]) - z_star).max() <= 1e-8


def test_trajectory_equals_the_theory_round_map(problems):
    eta = 0.1
    p = N_K / N_K.sum()
    for normalized in (False, True):
        alg = NORM[True] if normalized else NAIVE[True]
        hp = _hp(eta, snapshot_period=2, server_lr=0.7) if normalized else _hp(eta, snapshot_period=2)
        traj = theory.trajectory(problems, p, TAUS, eta, eta, normalized, np.ones(4), 7, plus=True,
                                 snapshot_period=2, server_lr=0.7 if normalized else 1.0)
        server = alg.server_init(_params(np.ones(4)), hp, 2, client_weights=N_K)
        for t in range(1, 8):
            server, _ = _round(alg, server, problems, hp)
            assert np.abs(_z(server["params"]) - traj[t]).max() <= 1e-12


@pytest.mark.parametrize("plus", [False, True])
@pytest.mark.parametrize("extra", [{}, {"momentum": 0.9}, {"projection": "ball", "radius": 0.5},
                                   {"y_lr_scale": 1.25, "projection": "simplex"}])
def test_fed_norm_is_local_sgda_with_equal_tau_full_participation_server_lr_1(problems, plus, extra):
    hp = _hp(0.05, **extra)
    z0 = np.array([1.0, -2.0, 0.3, 0.2])
    a = NAIVE[plus].server_init(_params(z0), hp, 2, client_weights=N_K)
    b = NORM[plus].server_init(_params(z0), hp, 2, client_weights=N_K)
    for _ in range(6):
        a, _ = _round(NAIVE[plus], a, problems, hp, taus=(3, 3))
        b, _ = _round(NORM[plus], b, problems, hp, taus=(3, 3))
        assert np.abs(_z(a["params"]) - _z(b["params"])).max() <= 1e-12
    c = NORM[plus].server_init(_params(z0), hp, 2, client_weights=N_K)
    c, _ = _round(NORM[plus], c, problems, hp)
    a2 = NAIVE[plus].server_init(_params(z0), hp, 2, client_weights=N_K)
    a2, _ = _round(NAIVE[plus], a2, problems, hp)
    assert np.abs(_z(a2["params"]) - _z(c["params"])).max() > 1e-4  # unequal τ_i: they differ


def _simplex_reference(v):
    """Bisection on θ: Σ max(v − θ, 0) = 1."""
    lo, hi = v.min() - 1.0, v.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.maximum(v - mid, 0).sum() > 1 else (lo, mid)
    return np.maximum(v - 0.5 * (lo + hi), 0)


def test_projections():
    rng = np.random.default_rng(2)
    for _ in range(20):
        v = rng.normal(scale=3.0, size=7)
        got = sgda.project({"y.w": torch.from_numpy(v)}, {"projection": "simplex"})["y.w"].numpy()
        np.testing.assert_allclose(got, _simplex_reference(v), rtol=0, atol=1e-12)
        assert sgda.in_set({"y.w": torch.from_numpy(got)}, {"projection": "simplex"})
    inside = {"y.a": torch.tensor([0.3, 0.4], dtype=torch.float64)}
    assert sgda.project(inside, {"projection": "ball", "radius": 1.0})["y.a"].equal(inside["y.a"])
    big = {"y.a": torch.tensor([3.0, 4.0], dtype=torch.float64), "y.b": torch.zeros(2, dtype=torch.float64)}
    out = sgda.project(big, {"projection": "ball", "radius": 2.0})
    torch.testing.assert_close(out["y.a"], torch.tensor([1.2, 1.6], dtype=torch.float64), rtol=0, atol=1e-15)
    # vmap over a client dimension
    vs = torch.from_numpy(rng.normal(size=(4, 5)))
    batched = torch.func.vmap(lambda v: sgda.project({"y.w": v}, {"projection": "simplex"})["y.w"])(vs)
    for row, v in zip(batched, vs):
        np.testing.assert_allclose(row.numpy(), _simplex_reference(v.numpy()), rtol=0, atol=1e-12)


@pytest.mark.parametrize("projection", ["ball", "simplex"])
@pytest.mark.parametrize("alg", [local_sgda, fed_norm_sgda_plus])
def test_y_stays_in_y_after_every_step(problems, alg, projection):
    """A strong ascent pull (large d_i): unprojected y would leave Y within a step."""
    far = [q._replace(d=q.d * 20.0) for q in problems]
    hp = _hp(0.2, projection=projection, radius=0.5, momentum=0.9)
    server = alg.server_init(_params(np.array([0.0, 0.0, 3.0, -3.0])), hp, 2, client_weights=N_K)
    assert sgda.in_set(sgda.split(server["params"])[1], hp)
    for _ in range(5):
        local = []
        server, _ = _round(alg, server, far, hp, record=local)
        assert local and all(sgda.in_set(y, hp) for y in local)
        assert sgda.in_set(sgda.split(server["params"])[1], hp)
    assert float(server["metrics"]["y_norm"]) > 0.1  # y sits on the boundary, not at 0


def test_unbiased_weights_and_tau_eff_under_partial_participation(problems):
    n_k = np.array([3.0, 5.0, 2.0, 6.0])
    probs = problems + problems
    hp = _hp(0.05)
    srv = fed_norm_sgda.server_init(_params(np.zeros(4)), hp, 4, client_weights=n_k)
    sampled = [1, 3]
    w = sgda.aggregation_weights(srv, torch.from_numpy(n_k[sampled]), hp)
    np.testing.assert_allclose(w.numpy(), n_k[sampled] / n_k.sum() * 4 / 2, rtol=1e-15)
    w_s = sgda.aggregation_weights(srv, torch.from_numpy(n_k[sampled]), {**hp, "estimator": "sampled"})
    np.testing.assert_allclose(w_s.numpy(), n_k[sampled] / n_k[sampled].sum(), rtol=1e-15)
    w_u = sgda.aggregation_weights(srv, torch.from_numpy(n_k[sampled]), {**hp, "p": "uniform"})
    np.testing.assert_allclose(w_u.numpy(), [0.5, 0.5], rtol=1e-15)
    taus = (2, 5, 3, 4)
    msgs = [{"a_norm": torch.tensor(float(taus[i]), dtype=torch.float64)} for i in sampled]
    t_s = sgda.tau_eff(srv, msgs, torch.from_numpy(n_k[sampled]), hp)
    t_u = sgda.tau_eff(srv, msgs, torch.from_numpy(n_k[sampled]), {**hp, "tau_eff": "unbiased"})
    assert float(t_s) == pytest.approx((5 * 5 + 6 * 4) / 11, rel=1e-15)
    assert float(t_u) == pytest.approx((5 * 5 + 6 * 4) / 16 * 2, rel=1e-15)
    # the server step uses exactly these: θ⁺ = θ + τ_eff Σ w̃_i d_i
    grad_fn = _grad_fn(probs)
    real = []
    for i in sampled:
        st = fed_norm_sgda.client_init(srv, None, hp)
        for _ in range(taus[i]):
            st = fed_norm_sgda.client_step(st, (i, None), hp, grad_fn)
        real.append(fed_norm_sgda.client_final(srv, st, hp)[0])
    nxt = fed_norm_sgda.server_update(srv, real, torch.from_numpy(n_k[sampled]), hp)
    want = sum(float(wi) * float(t_s) * _z(m["normalized_update"]) for wi, m in zip(w, real))
    np.testing.assert_allclose(_z(nxt["params"]), want, rtol=0, atol=1e-15)
    assert float(nxt["metrics"]["tau_eff"]) == float(t_s)


def test_snapshot_refresh_schedule(problems):
    hp = _hp(0.1, snapshot_period=3)
    srv = local_sgda_plus.server_init(_params(np.ones(4)), hp, 2, client_weights=N_K)
    xs = [srv["params"]["x"]]
    for t in range(1, 8):
        snap = srv["snapshot"]["x"]
        want = xs[3 * ((t - 1) // 3)]  # x^s, s the last multiple of 3 below t
        assert torch.equal(snap, want), t
        assert count_floats(local_sgda_plus.broadcast(srv)) == 4 + 2
        srv, _ = _round(local_sgda_plus, srv, problems, hp)
        xs.append(srv["params"]["x"])
        assert int(srv["round"]) == t


def test_messages_and_metrics(problems):
    hp = _hp(0.1)
    for alg, size in ((local_sgda, 4), (fed_norm_sgda, 5)):
        srv = alg.server_init(_params(np.ones(4)), hp, 2, client_weights=N_K)
        nxt, msgs = _round(alg, srv, problems, hp)
        assert all(count_floats(m) == size for m in msgs)
        x0, y0 = sgda.split(srv["params"])
        x1, y1 = sgda.split(nxt["params"])
        assert float(nxt["metrics"]["x_step_norm"]) == pytest.approx(float(torch.linalg.norm(x1["x"] - x0["x"])))
        assert float(nxt["metrics"]["y_step_norm"]) == pytest.approx(float(torch.linalg.norm(y1["y.y"] - y0["y.y"])))
        assert float(nxt["metrics"]["y_norm"]) == pytest.approx(float(torch.linalg.norm(y1["y.y"])))
    assert set(fed_norm_sgda.server_init(_params(np.ones(4)), hp, 2, N_K)["metrics"]) == {
        "y_norm", "x_step_norm", "y_step_norm", "tau_eff"}


def test_errors():
    hp = _hp(0.1)
    with pytest.raises(ValueError, match="ascent player"):
        local_sgda.server_init({"w": torch.zeros(2)}, hp, 2, client_weights=N_K)
    with pytest.raises(ValueError, match="client_weights"):
        local_sgda.server_init(_params(np.ones(4)), hp, 2)
    local_sgda.server_init(_params(np.ones(4)), {**hp, "estimator": "sampled"}, 2)  # N not needed
    for key in ("projection", "p", "estimator", "tau_eff"):
        with pytest.raises(ValueError, match=f"{key} must be one of"):
            sgda.check_cell({key: "bogus"})
