"""FedNova (Wang et al., NeurIPS 2020): normalized averaging.

- equal τ_i: FedNova is FedAvg (1e-12, through the reference round loop of the engine);
- the message: d_i = (θ^{t−1} − θ_i)/‖a_i‖₁ and ‖a_i‖₁ (d + 1 floats), ‖a_i‖₁ = τ_i for SGD and the
  paper's Σ_j (1 − ρ^j)/(1 − ρ) for local momentum, whose steps are torch.optim.SGD's and whose update
  is exactly η_l G_i a_i;
- quadratics f_i(x) = ½(x − c_i)ᵀA_i(x − c_i), full-batch gradients, unequal τ_i: FedAvg's fixed point
  is the zero of Σ p_i S_i A_i (x − c_i), S_i = Σ_{j<τ_i} (I − ηA_i)^j, FedNova's the same with
  p_i/τ_i (one round of the real module functions maps each to itself to 1e-12; many rounds reach
  it to 1e-8);
- as η → 0 they approach argmin Σ p_i τ_i f_i (FedAvg, the objective mismatch) and argmin Σ p_i f_i
  (FedNova), at distance O(η): log-log slope ≈ 1 over a table of η (printed with ``-s``);
- with local momentum ρ: the zero of Σ_i (p_i/‖a_i‖₁)(I − M_i)(x − c_i), M_i the heavy-ball propagator;
- through both engines (sequential, vectorized): FedNova = FedAvg with equal steps, not with unequal epochs.
"""

import numpy as np
import pytest
import torch

from fedbench.algorithms import ALGORITHMS, fedavg, fednova, get_algorithm
from fedbench.metrics.communication import count_floats

HP = {"lr": 0.1, "weight_decay": 0.0, "clip_norm": None}


def _close(a, b, atol):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0.0, atol=atol, msg=k)


def test_registered():
    assert "fednova" in ALGORITHMS and get_algorithm("fednova") is fednova
    assert fednova.HPARAMS == {"server_lr": 1.0, "momentum": 0.0}


@pytest.mark.parametrize("sampled", [None, lambda t: [0, 1, 3] if t % 2 else [1, 2]])
def test_equal_steps_is_fedavg(params0, unequal_clients, grad_fn, rounds_runner, sampled):
    kw = dict(rounds=4, steps=5, sampled=sampled)
    a, _, _ = rounds_runner(fedavg, params0, unequal_clients, HP, grad_fn, **kw)
    n, _, hist = rounds_runner(fednova, params0, unequal_clients, HP, grad_fn, record=True, **kw)
    _close(a["params"], n["params"], 1e-12)
    assert all(float(m["a_norm"]) == 5.0 for h in hist for m in h["messages"])


def test_equal_epochs_equal_sizes_is_fedavg_with_clipping_and_weight_decay(params0, equal_clients, grad_fn,
                                                                             rounds_runner):
    hp = {**HP, "weight_decay": 1e-2, "clip_norm": 0.5}
    a, _, _ = rounds_runner(fedavg, params0, equal_clients, hp, grad_fn, rounds=3, epochs=2)
    n, _, _ = rounds_runner(fednova, params0, equal_clients, hp, grad_fn, rounds=3, epochs=2)
    _close(a["params"], n["params"], 1e-12)


def test_unequal_epochs_differs_from_fedavg_and_tau_eff(params0, unequal_clients, grad_fn, rounds_runner):
    # n_k = 12, 20, 9, 15 at batch 4: τ = 3, 5, 3, 4 steps per epoch
    a, _, _ = rounds_runner(fedavg, params0, unequal_clients, HP, grad_fn, rounds=2, epochs=1)
    n, _, hist = rounds_runner(fednova, params0, unequal_clients, HP, grad_fn, rounds=2, epochs=1, record=True)
    assert [float(m["a_norm"]) for m in hist[0]["messages"]] == [3.0, 5.0, 3.0, 4.0]
    w = np.array([12.0, 20.0, 9.0, 15.0])
    assert float(fednova.tau_eff(hist[0]["messages"], w)) == pytest.approx(float(w @ [3, 5, 3, 4] / w.sum()),
                                                                         rel=1e-15)
    assert max(float((a["params"][k] - n["params"][k]).abs().max()) for k in a["params"]) > 1e-4


def test_message_is_normalized_update_plus_one_float(params0, unequal_clients, grad_fn, rounds_runner):
    _, _, hist = rounds_runner(fednova, params0, unequal_clients, HP, grad_fn, rounds=1, epochs=2, record=True)
    d = sum(v.numel() for v in params0.values())
    theta = hist[0]["prev"]["params"]
    for m in hist[0]["messages"]:
        assert set(m) == {"normalized_update", "a_norm"} and count_floats(m) == d + 1
        assert m["a_norm"].shape == () and m["a_norm"].dtype == torch.float64
    # server: θ^t = θ^{t−1} − τ_eff Σ p_i d_i
    w = torch.tensor([12.0, 20.0, 9.0, 15.0], dtype=torch.float64)
    p = w / w.sum()
    tau = sum(pi * m["a_norm"] for pi, m in zip(p, hist[0]["messages"]))
    expect = {k: theta[k] - tau * sum(pi * m["normalized_update"][k] for pi, m in zip(p, hist[0]["messages"]))
              for k in theta}
    _close(hist[0]["server"]["params"], expect, 1e-13)


def test_server_lr_scales_the_step():
    p0 = {"w": torch.zeros(3, dtype=torch.float64)}
    msgs = [{"normalized_update": {"w": torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)},
             "a_norm": torch.tensor(4.0, dtype=torch.float64)},
            {"normalized_update": {"w": torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64)},
             "a_norm": torch.tensor(2.0, dtype=torch.float64)}]
    w = torch.tensor([1.0, 3.0], dtype=torch.float64)
    s = fednova.server_update(fednova.server_init(p0, {}, 2), msgs, w, {"server_lr": 0.5})
    tau = 0.25 * 4 + 0.75 * 2
    expect = -0.5 * tau * (0.25 * msgs[0]["normalized_update"]["w"] + 0.75 * msgs[1]["normalized_update"]["w"])
    torch.testing.assert_close(s["params"]["w"], expect, rtol=0, atol=1e-15)


# -- local momentum ---------------------------------------------------------------------------


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
@pytest.mark.parametrize("tau", [0, 1, 2, 7])
def test_a_norm_closed_form(tau, rho):
    assert fednova.a_norm_closed_form(tau, rho) == pytest.approx(
        sum((1 - rho**j) / (1 - rho) for j in range(1, tau + 1)), rel=1e-14, abs=0)


def _quadratic_client(rng, dim=4):
    q = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    a = torch.from_numpy(q @ np.diag(rng.uniform(0.5, 2.0, size=dim)) @ q.T)
    c = torch.from_numpy(rng.normal(size=dim))
    return a, c


def _quad_grad_fn(problems):
    """Full-batch gradient of f_i(x) = ½(x − c_i)ᵀA_i(x − c_i); the "batch" x is the client index i."""
    def grad_fn(params, i, _y):
        a, c = problems[i]
        e = params["w"] - c
        return {"w": a @ e}, 0.5 * e @ (a @ e)
    return grad_fn


@pytest.mark.parametrize("rho,wd,clip", [(0.9, 0.0, None), (0.5, 1e-2, 0.3)])
def test_local_momentum_is_torch_sgd_and_update_is_g_a(rho, wd, clip):
    """The local steps are torch.optim.SGD(momentum=ρ) with clip_grad_norm_; the update is
    θ^{t−1} − θ_i = η Σ_k a^{(k)} d^{(k)} with a^{(k)} = (1 − ρ^{τ−k})/(1 − ρ), d^{(k)} the (clipped,
    decayed) direction of step k; ‖a‖₁ the closed form."""
    rng = np.random.default_rng(3)
    problems = [_quadratic_client(rng)]
    grad_fn = _quad_grad_fn(problems)
    eta, tau = 0.05, 6
    hp = {"lr": eta, "weight_decay": wd, "clip_norm": clip, "momentum": rho}
    x0 = torch.from_numpy(rng.normal(size=4))
    server = fednova.server_init({"w": x0}, hp, 1)
    state = fednova.client_init(server, None, hp)
    # torch.optim.SGD oracle, recording every direction
    w = torch.nn.Parameter(x0.clone())
    opt = torch.optim.SGD([w], lr=eta, momentum=rho, weight_decay=wd)
    dirs = []
    for _ in range(tau):
        state = fednova.client_step(state, (0, None), hp, grad_fn)
        opt.zero_grad()
        w.grad = grad_fn({"w": w.detach()}, 0, None)[0]["w"].clone()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_([w], clip)
        dirs.append(w.grad.detach() + wd * w.detach())
        opt.step()
    torch.testing.assert_close(state["params"]["w"], w.detach(), rtol=0, atol=1e-14)
    a = [(1 - rho ** (tau - k)) / (1 - rho) for k in range(tau)]
    torch.testing.assert_close(x0 - state["params"]["w"], eta * sum(ak * dk for ak, dk in zip(a, dirs)),
                               rtol=0, atol=1e-13)
    msg, cstate = fednova.client_final(server, state, hp)
    assert cstate is None
    assert float(msg["a_norm"]) == pytest.approx(sum(a), rel=1e-14)
    assert float(msg["a_norm"]) == pytest.approx(fednova.a_norm_closed_form(tau, rho), rel=1e-14)
    torch.testing.assert_close(msg["normalized_update"]["w"], (x0 - state["params"]["w"]) / sum(a),
                               rtol=0, atol=1e-15)


def test_momentum_zero_as_tensor_is_the_plain_path_bitwise(params0, unequal_clients, grad_fn):
    """Stacked cells pass ρ as a 0-d tensor: ρ = 0 then gives the plain SGD path's exact bits."""
    x, y = unequal_clients[0]
    hp = {**HP, "weight_decay": 1e-2, "clip_norm": 0.5}
    server = fednova.server_init(params0, {}, 4)
    s_num = fednova.client_init(server, None, hp)
    s_ten = fednova.client_init(server, None, hp)
    for k in range(3):
        b = (x[4 * k:4 * k + 4], y[4 * k:4 * k + 4])
        s_num = fednova.client_step(s_num, b, {**hp, "momentum": 0.0}, grad_fn)
        s_ten = fednova.client_step(s_ten, b, {**hp, "momentum": torch.tensor(0.0, dtype=torch.float64)}, grad_fn)
    for k in s_num["params"]:
        assert torch.equal(s_num["params"][k], s_ten["params"][k])
    assert float(s_num["a_norm"]) == float(s_ten["a_norm"]) == 3.0


def test_zero_steps_sends_zero(params0):
    server = fednova.server_init(params0, {}, 1)
    msg, _ = fednova.client_final(server, fednova.client_init(server, None, HP), HP)
    assert float(msg["a_norm"]) == 0.0 and all(float(v.abs().max()) == 0.0 for v in msg["normalized_update"].values())


# -- quadratics: fixed points and their limits ------------------------------------------------

TAUS = (2, 5, 9)
N_K = np.array([3.0, 5.0, 2.0])


@pytest.fixture(scope="module")
def quadratics():
    rng = np.random.default_rng(7)
    return [_quadratic_client(rng, dim=3) for _ in TAUS]


def _one_round(alg, x, problems, eta, hparams=None, taus=TAUS):
    """One full-participation round of ``alg``'s real functions, full-batch gradients, τ_i = taus[i]."""
    hp = {"lr": eta, "weight_decay": 0.0, "clip_norm": None, **(hparams or {})}
    grad_fn = _quad_grad_fn(problems)
    server = alg.server_init({"w": x}, hp, len(problems))
    msgs = []
    for i, tau in enumerate(taus):
        state = alg.client_init(server, None, hp)
        for _ in range(tau):
            state = alg.client_step(state, (i, None), hp, grad_fn)
        msgs.append(alg.client_final(server, state, hp)[0])
    return alg.server_update(server, msgs, torch.from_numpy(N_K), hp)["params"]["w"]


def _fixed_point(problems, eta, normalized, taus=TAUS):
    """The zero of Σ_i w_i S_i A_i (x − c_i), w_i = p_i (FedAvg) or p_i/τ_i (FedNova)."""
    p = N_K / N_K.sum()
    lhs, rhs = 0, 0
    for (a, c), tau, pi in zip(problems, taus, p):
        a, c = a.numpy(), c.numpy()
        prop = np.eye(len(c)) - eta * a
        s = sum(np.linalg.matrix_power(prop, j) for j in range(tau))
        wi = pi / tau if normalized else pi
        lhs = lhs + wi * s @ a
        rhs = rhs + wi * s @ a @ c
    return np.linalg.solve(lhs, rhs)


def _minimizer(problems, weights):
    """argmin Σ_i w_i f_i = (Σ w_i A_i)^{-1} Σ w_i A_i c_i."""
    lhs = sum(w * a.numpy() for (a, _), w in zip(problems, weights))
    rhs = sum(w * a.numpy() @ c.numpy() for (a, c), w in zip(problems, weights))
    return np.linalg.solve(lhs, rhs)


@pytest.mark.parametrize("eta", [0.2, 0.05])
@pytest.mark.parametrize("alg,normalized", [(fedavg, False), (fednova, True)])
def test_quadratic_fixed_point_is_mapped_to_itself(quadratics, alg, normalized, eta):
    x_star = _fixed_point(quadratics, eta, normalized)
    x_next = _one_round(alg, torch.from_numpy(x_star), quadratics, eta).numpy()
    assert np.abs(x_next - x_star).max() <= 1e-12
    other = _fixed_point(quadratics, eta, not normalized)
    assert np.abs(other - x_star).max() > 1e-2  # the two fixed points really differ
    # and it is the fixed point the rounds converge to (from far away)
    x = torch.zeros(3, dtype=torch.float64)
    for _ in range(400):
        x = _one_round(alg, x, quadratics, eta)
    assert np.abs(x.numpy() - x_star).max() <= 1e-8


def test_fednova_fixed_point_does_not_depend_on_server_lr(quadratics):
    x_star = _fixed_point(quadratics, 0.1, True)
    x_next = _one_round(fednova, torch.from_numpy(x_star), quadratics, 0.1, {"server_lr": 0.3}).numpy()
    assert np.abs(x_next - x_star).max() <= 1e-12


def distance_table(problems, etas):
    """Rows (η, ‖x_FedAvg(η) − x̃‖, ‖x_FedNova(η) − x*‖, ‖x_FedAvg(η) − x*‖), with x̃ = argmin Σ p_i τ_i f_i
    and x* = argmin Σ p_i f_i; each fixed point checked against one round of the real module."""
    p = N_K / N_K.sum()
    x_mismatch = _minimizer(problems, p * np.array(TAUS))
    x_true = _minimizer(problems, p)
    rows = []
    for eta in etas:
        fa, fn = _fixed_point(problems, eta, False), _fixed_point(problems, eta, True)
        for alg, x in ((fedavg, fa), (fednova, fn)):
            assert np.abs(_one_round(alg, torch.from_numpy(x), problems, eta).numpy() - x).max() <= 1e-12
        rows.append((eta, np.linalg.norm(fa - x_mismatch), np.linalg.norm(fn - x_true), np.linalg.norm(fa - x_true)))
    return np.array(rows)


def test_small_lr_limits_objective_mismatch_table(quadratics):
    etas = 0.2 / 2.0 ** np.arange(8)
    table = distance_table(quadratics, etas)
    print("\n   lr      |FedAvg - argmin Σp τ f|  |FedNova - argmin Σp f|  |FedAvg - argmin Σp f|")
    for eta, da, dn, dat in table:
        print(f"{eta:10.6f}  {da:22.3e}  {dn:22.3e}  {dat:22.3e}")
    log_eta = np.log(table[:, 0])
    for col in (1, 2):  # distance O(η): slope ≈ 1 in log-log, distance/η converging
        slopes = np.diff(np.log(table[:, col])) / np.diff(log_eta)
        assert np.all(np.abs(slopes[-4:] - 1.0) < 0.05), slopes
        ratio = table[:, col] / table[:, 0]
        assert abs(ratio[-1] / ratio[-2] - 1.0) < 0.05
    # FedAvg's limit is not the true minimizer: its distance to argmin Σ p_i f_i stays bounded away
    gap = np.linalg.norm(_minimizer(quadratics, N_K / N_K.sum() * np.array(TAUS)) - _minimizer(quadratics, N_K))
    assert gap > 0.05
    # (at large η FedAvg may pass nearer to it: 0.12 at η = 0.2); as η → 0 its distance tends to the gap
    assert np.all(table[-4:, 3] > 0.9 * gap) and abs(table[-1, 3] - gap) < 0.01


# -- through the engines ----------------------------------------------------------------------


def _engine_case(algorithm, hparams, local_over):
    from fedbench.data.partition import make_partition
    from fedbench.data.store import Dataset

    rng = np.random.default_rng(0)
    n, d, c = 200, 6, 3
    x = rng.normal(size=(n + 40, d)).astype(np.float32)
    y = (x @ rng.normal(size=(d, c))).argmax(1)
    ds = Dataset("toy", x[:n], y[:n], x[n:], y[n:], num_classes=c)
    # lognormal client sizes: with epochs, unequal step counts τ_i
    part = make_partition(ds, {"scheme": "iid", "num_clients": 8, "sigma": 0.9, "min_size": 3}, seed=0)
    spec = {
        "experiment": "t", "dataset": "toy", "partition": "iid", "algorithm": algorithm, "seed": 0,
        "algorithm_name": algorithm, "hparams": hparams, "model": {"name": "mlp", "hidden": [8]},
        "local": {"epochs": None, "steps": None, "batch_size": 8, "lr": 0.1, "lr_decay": 0.95,
                  "weight_decay": 0.0, "clip_norm": None} | local_over,
        "sampling": {"scheme": "uniform", "participation": 0.5}, "rounds": 4, "eval_every": 1,
        "target_accuracy": 0.8, "dtype": "float64",
    }
    return spec, ds, part


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_engines_equal_steps_is_fedavg_unequal_epochs_is_not(engine):
    from fedbench.engine.rounds.loop import train

    out = {}
    for local in ({"steps": 5}, {"epochs": 2}):
        for alg in ("fedavg", "fednova"):
            spec, ds, part = _engine_case(alg, {}, local)
            rows, info = train(spec, ds, part, device="cpu", engine=engine)
            out[alg, tuple(local)] = (rows, info["params"])
    (ra, pa), (rn, pn) = out["fedavg", ("steps",)], out["fednova", ("steps",)]
    _close(pa, pn, 1e-12)
    d = sum(v.numel() for v in pa.values())
    for a, b in zip(ra, rn):  # FedNova sends one float more per client: ‖a_i‖₁
        assert b["uplink_floats"] - a["uplink_floats"] == a["uplink_floats"] // d
    (_, pa), (_, pn) = out["fedavg", ("epochs",)], out["fednova", ("epochs",)]
    assert max(float((pa[k] - pn[k]).abs().max()) for k in pa) > 1e-6


def _momentum_propagator(a, eta, rho, tau):
    """M with x_τ − c = M (x_0 − c) for τ heavy-ball steps on ½(x − c)ᵀA(x − c), buffer 0 at the start:
    the top-left block of T^τ, T = [[I − ηA, −ηρI], [A, ρI]] acting on (x − c, v)."""
    d = a.shape[0]
    eye = np.eye(d)
    t = np.block([[eye - eta * a, -eta * rho * eye], [a, rho * eye]])
    return np.linalg.matrix_power(t, tau)[:d, :d]


@pytest.mark.parametrize("rho", [0.5, 0.9])
def test_quadratic_fixed_point_with_local_momentum(quadratics, rho):
    """FedNova with local momentum: the zero of Σ_i (p_i/‖a_i‖₁)(I − M_i)(x − c_i), M_i the τ_i-step
    heavy-ball propagator and ‖a_i‖₁ = Σ_{j≤τ_i} (1 − ρ^j)/(1 − ρ); one round maps it to itself."""
    eta = 0.05
    p = N_K / N_K.sum()
    lhs, rhs = 0, 0
    for (a, c), tau, pi in zip(quadratics, TAUS, p):
        a, c = a.numpy(), c.numpy()
        w = pi / fednova.a_norm_closed_form(tau, rho) * (np.eye(3) - _momentum_propagator(a, eta, rho, tau))
        lhs, rhs = lhs + w, rhs + w @ c
    x_star = np.linalg.solve(lhs, rhs)
    x_next = _one_round(fednova, torch.from_numpy(x_star), quadratics, eta, {"momentum": rho}).numpy()
    assert np.abs(x_next - x_star).max() <= 1e-12
    assert np.abs(x_star - _fixed_point(quadratics, eta, True)).max() > 1e-3  # momentum moves it


# -- drawn local work (local.steps a distribution, fixed per client) ------------------------------


def test_fixed_point_with_drawn_tau_fixed_per_client(quadratics):
    """τ_i ~ Uniform{1..9} drawn once per client (``per: client``, the keyed draw of
    :func:`fedbench.engine.clients.batches.local_work`): FedNova's fixed point is the closed form with the
    drawn τ_i, mapped to itself by every round's real module functions to 1e-12. Redrawn per round,
    the same point is moved (no fixed point: τ_i^(t) changes)."""
    from fedbench.engine.clients.batches import local_work

    eta, seed = 0.1, 11
    fixed = {"distribution": "uniform", "low": 1, "high": 9, "per": "client"}
    taus = [local_work(fixed, seed, 1, i) for i in range(len(quadratics))]
    assert len(set(taus)) > 1  # unequal τ_i (this seed)
    x_star = _fixed_point(quadratics, eta, True, taus)
    for t in range(1, 6):
        drawn = [local_work(fixed, seed, t, i) for i in range(len(quadratics))]
        assert drawn == taus
        x_next = _one_round(fednova, torch.from_numpy(x_star), quadratics, eta, taus=drawn).numpy()
        assert np.abs(x_next - x_star).max() <= 1e-12
    per_round = {**fixed, "per": "round"}
    moved = 0.0
    for t in range(1, 6):
        drawn = [local_work(per_round, seed, t, i) for i in range(len(quadratics))]
        x_next = _one_round(fednova, torch.from_numpy(x_star), quadratics, eta, taus=drawn).numpy()
        moved = max(moved, np.abs(x_next - x_star).max())
    assert moved > 1e-4
