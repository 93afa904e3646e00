"""FedAc (Yuan & Ma, NeurIPS 2020, Algorithm 1, eqs. 3.1 / 3.2, §5 vanilla) and its minibatch
baselines Mb-SGD and Mb-Ac-SGD, float64.

The module functions are driven directly (server_init → per client client_init, client_step × K,
client_final → server_update) on deterministic quadratic losses, and compared with a numpy
re-implementation of Algorithm 1 written here from the paper's equations (α, β, γ computed from
their printed forms, not through β⁻¹). Tolerance 1e-12 relative unless stated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedbench.algorithms import ALGORITHMS, fedac, fedavg, get_algorithm, mb_ac_sgd, mb_sgd
from fedbench.metrics.communication import count_floats

RTOL = 1e-12
SHAPES = {"a": (3,), "b": (2, 2)}  # two leaves, d = 7
D = 7



def _flat(tree):
    return torch.cat([tree[k].reshape(-1) for k in SHAPES])


def _tree(vec):
    out, i = {}, 0
    for k, s in SHAPES.items():
        n = math.prod(s)
        out[k] = vec[i:i + n].reshape(s)
        i += n
    return out


def grad_fn(params, x, y):
    """A quadratic ½ wᵀ x w − yᵀ w: ``x`` a (d, d) matrix (the "batch"), ``y`` a (d,) vector."""
    w = _flat(params)
    return _tree(x @ w - y), 0.5 * w @ x @ w - y @ w


def make_batches(rounds, clients, k, seed=0, spread=1.0):
    """batches[r][m][s] = (A, b): a random SPD A (eigenvalues in [0.5, 2.5]) and b per step."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rounds):
        rnd = []
        for _ in range(clients):
            steps = []
            for _ in range(k):
                q, _ = np.linalg.qr(rng.normal(size=(D, D)))
                a = q @ np.diag(rng.uniform(0.5, 2.5, size=D)) @ q.T
                steps.append((a, spread * rng.normal(size=D)))
            rnd.append(steps)
        out.append(rnd)
    return out


def w0(seed=1):
    return np.random.default_rng(seed).normal(size=D)


def run_module(algo, hparams, batches, weights, init=None):
    """Server params (and "w" where kept) after every round, as flat numpy vectors."""
    params = _tree(torch.from_numpy(w0() if init is None else init))
    server = algo.server_init(params, {k: v for k, v in hparams.items() if k in algo.HPARAMS}, len(weights))
    history = []
    for rnd in batches:
        messages = []
        for client in rnd:
            state = algo.client_init(server, None, hparams)
            for a, b in client:
                state = algo.client_step(state, (torch.from_numpy(a), torch.from_numpy(b)), hparams, grad_fn)
            msg, cstate = algo.client_final(server, state, hparams)
            assert cstate is None
            messages.append(msg)
        server = algo.server_update(server, messages, torch.tensor(weights, dtype=torch.float64), hparams)
        history.append({k: _flat(v).numpy() for k, v in server.items() if k in ("params", "w")})
    return history, messages, server


def paper_coefficients(eta, mu, k, variant, beta_formula="paper"):
    """(α, β, γ) as printed: eq. 3.1 (FedAc-I), eq. 3.2 (FedAc-II), §5 (vanilla); code β = 2α²/(α − 1)."""
    if variant == "vanilla":
        gamma = np.sqrt(eta / mu)
    else:
        gamma = max(np.sqrt(eta / (mu * k)), eta)
    if variant in ("I", "vanilla"):
        alpha = 1 / (gamma * mu)
        return alpha, alpha + 1, gamma
    alpha = 3 / (2 * gamma * mu) - 0.5
    beta = (2 * alpha**2 - 1) / (alpha - 1) if beta_formula == "paper" else 2 * alpha**2 / (alpha - 1)
    return alpha, beta, gamma


def reference_fedac(batches, weights, eta, lam, alpha, beta, gamma, k):
    """Algorithm 1 for T = R·K steps on M workers, ℓ2 term λ w added to each gradient; the sync
    step averages v and v^ag with weights n_m (the paper: equal weights)."""
    p = np.asarray(weights, dtype=float) / np.sum(weights)
    m = len(weights)
    w = [w0() for _ in range(m)]
    w_ag = [w0() for _ in range(m)]
    history = []
    for t in range(len(batches) * k):
        r, s = divmod(t, k)
        v, v_ag = [], []
        for j in range(m):
            a, b = batches[r][j][s]
            w_md = (1 / beta) * w[j] + (1 - 1 / beta) * w_ag[j]
            g = a @ w_md - b + lam * w_md
            v_ag.append(w_md - eta * g)
            v.append((1 - 1 / alpha) * w[j] + (1 / alpha) * w_md - gamma * g)
        if t % k == k - 1:
            mean_v = sum(pj * vj for pj, vj in zip(p, v))
            mean_ag = sum(pj * vj for pj, vj in zip(p, v_ag))
            w, w_ag = [mean_v] * m, [mean_ag] * m
            history.append({"params": mean_ag, "w": mean_v})
        else:
            w, w_ag = v, v_ag
    return history


def assert_close(a, b, rtol=RTOL):
    scale = max(np.max(np.abs(b)), 1e-300)
    assert np.max(np.abs(a - b)) <= rtol * scale, (np.max(np.abs(a - b)) / scale)


def hp(eta=0.1, lam=0.3, k=3, **extra):
    return {"lr": eta, "weight_decay": lam, "clip_norm": None, "local_steps": k, **extra}


# ---------------------------------------------------------------------------------------------
# Algorithm 1 against the numpy reference


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("eta, lam, mu", [(0.1, 0.3, None), (0.2, 0.3, 0.8), (0.5, 0.4, 1.0)])
@pytest.mark.parametrize("variant, beta_formula", [("I", "paper"), ("II", "paper"), ("II", "code"),
                                                   ("vanilla", "paper"), ("vanilla", "code")])
def test_fedac_equals_the_paper_algorithm(k, eta, lam, mu, variant, beta_formula):
    weights = [4.0, 4.0, 4.0] if mu is None else [3.0, 7.0, 5.0]  # equal (the paper) and n_k-weighted
    batches = make_batches(rounds=4, clients=3, k=k)
    got, messages, _ = run_module(fedac, hp(eta, lam, k, variant=variant, beta_formula=beta_formula, mu=mu),
                                  batches, weights)
    alpha, beta, gamma = paper_coefficients(eta, lam if mu is None else mu, k, variant, beta_formula)
    ref = reference_fedac(batches, weights, eta, lam, alpha, beta, gamma, k)
    for g, r in zip(got, ref):
        assert_close(g["params"], r["params"])
        assert_close(g["w"], r["w"])
    assert count_floats(messages[0]) == 2 * D


def test_the_cases_above_reach_both_branches_of_gamma_and_the_betas_differ():
    # (η, μ, K) = (0.5, 1, 3): η > √(η/(μK)), so γ = η; (0.1, 0.3, 3): γ = √(η/(μK))
    assert fedac.coefficients(0.5, 1.0, 3)[2] == 0.5
    assert fedac.coefficients(0.1, 0.3, 3)[2] == pytest.approx(math.sqrt(0.1 / 0.9), rel=1e-15)
    # FedAc-II at γμ = 0.5 (α = 2.5): the paper's β = (2α² − 1)/(α − 1) = 23/3, the authors' code's
    # 2α²/(α − 1) = 25/3 (Yuan & Ma, NeurIPS 2020, FedAc-II)
    a_inv, b_paper, _ = fedac.coefficients(0.5, 1.0, 3, "II", "paper")
    _, b_code, _ = fedac.coefficients(0.5, 1.0, 3, "II", "code")
    assert a_inv == pytest.approx(1 / 2.5, rel=1e-15)
    assert 1 / b_paper == pytest.approx(23 / 3, rel=1e-14) and 1 / b_code == pytest.approx(25 / 3, rel=1e-14)


def test_fedac_ii_at_gamma_mu_one_has_beta_inverse_zero():
    # η = μ = K = 1: γ = 1, γμ = 1, α = 1 and β = ∞: β⁻¹ = 0 for both formulas, no division by zero
    for formula in fedac.BETA_FORMULAS:
        alpha_inv, beta_inv, gamma = fedac.coefficients(1.0, 1.0, 1, "II", formula)
        assert (alpha_inv, beta_inv, gamma) == (1.0, 0.0, 1.0)


def test_tensor_hyperparameters_give_the_number_path_values():
    for variant in fedac.VARIANTS:
        for formula in fedac.BETA_FORMULAS:
            nums = fedac.coefficients(0.2, 0.3, 3, variant, formula)
            tens = fedac.coefficients(torch.tensor(0.2, dtype=torch.float64), torch.tensor(0.3, dtype=torch.float64),
                                      3, variant, formula)
            for a, b in zip(nums, tens):
                assert torch.is_tensor(b) and abs(float(b) - a) <= 1e-15 * abs(a)
    # a step with η and λ as 0-d tensors (stacked cells) equals the step with numbers
    batches = make_batches(rounds=2, clients=2, k=3)
    a, _, _ = run_module(fedac, hp(0.2, 0.3, 3), batches, [1.0, 1.0])
    state = fedac.client_init(fedac.server_init(_tree(torch.from_numpy(w0())), {}, 2), None, hp(0.2, 0.3, 3))
    thp = hp(torch.tensor(0.2, dtype=torch.float64), torch.tensor(0.3, dtype=torch.float64), 3)
    s_num = fedac.client_step(state, tuple(map(torch.from_numpy, batches[0][0][0])), hp(0.2, 0.3, 3), grad_fn)
    s_ten = fedac.client_step(state, tuple(map(torch.from_numpy, batches[0][0][0])), thp, grad_fn)
    for key in ("params", "w"):
        assert_close(_flat(s_ten[key]).numpy(), _flat(s_num[key]).numpy(), 1e-15)
    assert len(a) == 2


# ---------------------------------------------------------------------------------------------
# the minibatch baselines against their definitions


@pytest.mark.parametrize("k", [1, 3])
def test_mb_sgd_is_one_sgd_step_with_the_mean_gradient(k):
    eta, lam, weights = 0.15, 0.2, [3.0, 7.0, 5.0]
    batches = make_batches(rounds=3, clients=3, k=k)
    got, messages, _ = run_module(mb_sgd, hp(eta, lam, k), batches, weights)
    p = np.array(weights) / sum(weights)
    w = w0()
    for rnd, g in zip(batches, got):
        gbar = sum(pj * np.mean([a @ w - b for a, b in client], axis=0) for pj, client in zip(p, rnd))
        w = w - eta * (gbar + lam * w)
        assert_close(g["params"], w)
    assert count_floats(messages[0]) == D


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("variant", ["vanilla", "I", "II"])
def test_mb_ac_sgd_is_one_accelerated_step_with_the_mean_gradient(k, variant):
    eta, lam, weights = 0.15, 0.2, [3.0, 7.0, 5.0]
    batches = make_batches(rounds=3, clients=3, k=k)
    got, messages, server = run_module(mb_ac_sgd, hp(eta, lam, k, variant=variant), batches, weights)
    alpha, beta, gamma = paper_coefficients(eta, lam, 1, variant)  # one step: K = 1 in the formulas
    p = np.array(weights) / sum(weights)
    w, w_ag = w0(), w0()
    for rnd, g in zip(batches, got):
        w_md = w / beta + (1 - 1 / beta) * w_ag
        gbar = sum(pj * np.mean([a @ w_md - b for a, b in client], axis=0) for pj, client in zip(p, rnd))
        grad = gbar + lam * w_md
        w_ag, w = w_md - eta * grad, (1 - 1 / alpha) * w + w_md / alpha - gamma * grad
        assert_close(g["params"], w_ag)
        assert_close(g["w"], w)
    assert count_floats(messages[0]) == D and count_floats(mb_ac_sgd.broadcast(server)) == 2 * D


# ---------------------------------------------------------------------------------------------
# K = 1 equivalences


@pytest.mark.parametrize("variant", ["I", "II", "vanilla"])
def test_fedac_with_one_local_step_is_mb_ac_sgd(variant):
    """With K = 1 both take, each round, one accelerated step from the same (w, w^ag) with the same
    (α, β, γ): FedAc averages the clients' w^md − η g_k and (1 − α⁻¹) w + α⁻¹ w^md − γ g_k, which are
    affine in g_k, so the averages are the step with ḡ. Equal: the server's w^ag (params) and w
    after every round, to rounding."""
    eta, lam, weights = 0.15, 0.2, [3.0, 7.0, 5.0]
    batches = make_batches(rounds=5, clients=3, k=1)
    a, _, _ = run_module(fedac, hp(eta, lam, 1, variant=variant), batches, weights)
    b, _, _ = run_module(mb_ac_sgd, hp(eta, lam, 1, variant=variant), batches, weights)
    for x, y in zip(a, b):
        assert_close(x["params"], y["params"])
        assert_close(x["w"], y["w"])


def test_with_one_local_step_fedac_i_vanilla_and_mb_ac_sgd_coincide():
    # K = 1 and ημ ≤ 1: FedAc-I's γ = max(√(η/μ), η) = √(η/μ), vanilla's γ: the same coefficients
    # (summary §7's sanity check FedAc-I ≡ Vanilla ≡ Mb-Ac-Sgd at K = 1)
    eta, lam, weights = 0.15, 0.2, [1.0, 1.0, 1.0]
    assert fedac.coefficients(eta, lam, 1, "I") == fedac.coefficients(eta, lam, 1, "vanilla")
    batches = make_batches(rounds=5, clients=3, k=1)
    runs = [run_module(fedac, hp(eta, lam, 1, variant="I"), batches, weights)[0],
            run_module(fedac, hp(eta, lam, 1, variant="vanilla"), batches, weights)[0],
            run_module(mb_ac_sgd, hp(eta, lam, 1), batches, weights)[0]]
    for other in runs[1:]:
        for x, y in zip(runs[0], other):
            assert_close(x["params"], y["params"])


def test_fedavg_with_one_local_step_is_mb_sgd():
    """FedAvg's client step θ − η(g_k + λθ) (local.sgd_step with weight_decay λ), averaged, is
    Mb-SGD's θ − η(ḡ + λθ): equal server params after every round, to rounding."""
    eta, lam, weights = 0.15, 0.2, [3.0, 7.0, 5.0]
    batches = make_batches(rounds=5, clients=3, k=1)
    a, _, _ = run_module(fedavg, hp(eta, lam, 1), batches, weights)
    b, _, _ = run_module(mb_sgd, hp(eta, lam, 1), batches, weights)
    for x, y in zip(a, b):
        assert_close(x["params"], y["params"])
    # and with K = 3 they differ (the test can tell)
    batches = make_batches(rounds=2, clients=3, k=3)
    a, _, _ = run_module(fedavg, hp(eta, lam, 3), batches, weights)
    b, _, _ = run_module(mb_sgd, hp(eta, lam, 3), batches, weights)
    assert np.max(np.abs(a[-1]["params"] - b[-1]["params"])) > 1e-3


# ---------------------------------------------------------------------------------------------
# convergence and communication


@pytest.mark.parametrize("variant", ["I", "II", "vanilla"])
def test_fedac_converges_to_the_minimizer_of_a_strongly_convex_quadratic(variant):
    """Full-batch gradients, homogeneous clients (the paper's setting): F(w) = ½ wᵀAw − bᵀw + (λ/2)‖w‖²,
    x* = (A + λI)⁻¹ b; μ = λ (the default), η = 1/L."""
    rng = np.random.default_rng(5)
    q, _ = np.linalg.qr(rng.normal(size=(D, D)))
    a = q @ np.diag(np.linspace(0.0, 3.0, D)) @ q.T  # singular: only λ makes F strongly convex
    b = rng.normal(size=D)
    lam, k, rounds = 0.5, 4, 150
    x_star = np.linalg.solve(a + lam * np.eye(D), b)
    eta = 1 / (3.0 + lam)
    batches = [[[(a, b)] * k] * 3 for _ in range(rounds)]
    got, messages, server = run_module(fedac, hp(eta, lam, k, variant=variant), batches, [2.0, 5.0, 3.0])
    assert np.max(np.abs(got[-1]["params"] - x_star)) <= 1e-10 * np.max(np.abs(x_star))
    assert np.max(np.abs(got[0]["params"] - x_star)) > 1e-2  # it did have to travel
    assert count_floats(messages[0]) == 2 * D  # uplink: w and w^ag
    assert count_floats(fedac.broadcast(server)) == 2 * D  # downlink: both averages


# ---------------------------------------------------------------------------------------------
# through the engines


def _engine_spec(algorithm, hparams=None, **local):
    return {
        "experiment": "t", "dataset": "toy", "partition": "iid", "algorithm": algorithm, "seed": 0,
        "algorithm_name": algorithm, "hparams": {**get_algorithm(algorithm).HPARAMS, **(hparams or {})},
        "model": {"name": "logreg"},
        "local": {"epochs": None, "steps": 3, "batch_size": 4, "lr": 0.2, "lr_decay": 1.0, "weight_decay": 0.01,
                  "clip_norm": None} | local,
        "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": 2, "eval_every": 1,
        "target_accuracy": 0.8, "dtype": "float64",
    }


@pytest.fixture(scope="module")
def toy():
    from fedbench.data.partition import make_partition
    from fedbench.data.store import Dataset

    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 4)).astype(np.float32)
    y = (x @ rng.normal(size=(4, 2))).argmax(1)
    ds = Dataset("toy", x[:80], y[:80], x[80:], y[80:], num_classes=2)
    return ds, make_partition(ds, {"scheme": "iid", "num_clients": 4}, seed=0)


@pytest.mark.parametrize("algorithm", ["fedac", "mb_sgd", "mb_ac_sgd"])
def test_registered_and_run_by_both_engines(toy, algorithm):
    from fedbench.engine.rounds.loop import train

    assert algorithm in ALGORITHMS
    ds, part = toy
    spec = _engine_spec(algorithm)
    rows_s, info_s = train(spec, ds, part, device="cpu", engine="sequential")
    rows_v, info_v = train(spec, ds, part, device="cpu", engine="vectorized", chunk_size=4)
    d = sum(v.numel() for v in info_s["params"].values())
    per_client = {"fedac": 2 * d, "mb_sgd": d, "mb_ac_sgd": d}[algorithm]
    assert [r["uplink_floats"] for r in rows_s] == [4 * per_client * t for t in (1, 2)]
    down = {"fedac": 2 * d, "mb_sgd": d, "mb_ac_sgd": 2 * d}[algorithm]
    assert [r["downlink_floats"] for r in rows_s] == [4 * down * t for t in (1, 2)]
    for k, v in info_s["params"].items():
        assert float((v - info_v["params"][k]).abs().max()) <= 1e-10 * float(v.abs().max())
    assert rows_s[-1]["train_loss"] < rows_s[0]["train_loss"] or algorithm != "fedac"


# ---------------------------------------------------------------------------------------------
# errors


def test_epochs_instead_of_steps_is_an_error(toy):
    from fedbench.engine.rounds.loop import train

    ds, part = toy
    with pytest.raises(ValueError, match=r"fedac: needs a fixed number of local steps K \(local.steps\)"):
        train(_engine_spec("fedac", epochs=1, steps=None), ds, part, device="cpu", engine="sequential")
    with pytest.raises(ValueError, match="local.steps"):
        fedac.client_init(fedac.server_init(_tree(torch.zeros(D)), {}, 2), None, hp(k=None))


@pytest.mark.parametrize("algo", [fedac, mb_sgd, mb_ac_sgd])
def test_clipping_is_an_error(algo):
    server = algo.server_init(_tree(torch.zeros(D, dtype=torch.float64)), {}, 2)
    with pytest.raises(ValueError, match=r"gradient clipping is not part of the algorithm; set local.clip_norm"):
        algo.client_init(server, None, hp(clip_norm=1.0))


@pytest.mark.parametrize("algo", [fedac, mb_ac_sgd])
def test_mu_must_be_positive(algo):
    server = algo.server_init(_tree(torch.zeros(D, dtype=torch.float64)), {}, 2)
    with pytest.raises(ValueError, match=r"μ must be a finite number > 0; it is taken from local.weight_decay "
                                         r"\(mu is null: μ = λ\), which is 0.0"):
        algo.client_init(server, None, hp(lam=0.0))
    with pytest.raises(ValueError, match=r"μ must be a finite number > 0; it is taken from mu, which is -0.1"):
        algo.client_init(server, None, hp(mu=-0.1))
    with pytest.raises(ValueError, match="mu must be a number > 0 or null"):
        algo.server_init(_tree(torch.zeros(D)), {"mu": 0.0}, 2)
    # an explicit μ > 0 with λ = 0 is allowed (μ need not be λ)
    algo.client_init(server, None, hp(lam=0.0, mu=0.1))


def test_unknown_variant_or_beta_formula_is_an_error():
    with pytest.raises(ValueError, match=r"variant must be one of 'I', 'II', 'vanilla' \(got 'III'\)"):
        fedac.server_init(_tree(torch.zeros(D)), {"variant": "III"}, 2)
    with pytest.raises(ValueError, match=r"beta_formula must be one of 'paper', 'code' \(got 'x'\)"):
        mb_ac_sgd.server_init(_tree(torch.zeros(D)), {"beta_formula": "x"}, 2)


# ---------------------------------------------------------------------------------------------
# the config check


def _config(algorithms):
    return {
        "datasets": {"digits": {"source": "digits"}},
        "experiments": {"e": {
            "seeds": [0], "rounds": 2, "local": {"steps": 4, "batch_size": 1, "lr": 0.05, "weight_decay": 1e-3},
            "datasets": {"digits": {"model": {"name": "logreg"},
                                    "partitions": {"iid": {"scheme": "iid", "num_clients": 4}}}},
            "algorithms": algorithms}},
    }


def test_the_config_accepts_the_defaults_and_checks_mu_and_the_string_choices():
    from fedbench.config import ConfigError, expand_cells

    cells = expand_cells(_config({"fedac": {}, "mb_sgd": {}, "mb_ac_sgd": {},
                                  "fedac_ii": {"algorithm": "fedac", "variant": "II", "beta_formula": "code",
                                               "mu": 0.01}}))
    by = {c["algorithm"]: c for c in cells}
    assert by["fedac"]["hparams"] == {"variant": "I", "beta_formula": "paper", "mu": None}
    assert by["mb_ac_sgd"]["hparams"] == {"variant": "vanilla", "beta_formula": "paper", "mu": None}
    assert by["fedac_ii"]["hparams"] == {"variant": "II", "beta_formula": "code", "mu": 0.01}
    assert by["fedac"]["local"]["steps"] == 4 and by["mb_sgd"]["hparams"] == {}
    with pytest.raises(ConfigError, match=r"algorithms.fedac.mu: must be > 0 \(got 0"):
        expand_cells(_config({"fedac": {"mu": 0.0}}))
    with pytest.raises(ConfigError, match=r"algorithms.fedac.variant: must be a string"):
        expand_cells(_config({"fedac": {"variant": 2}}))


# ---------------------------------------------------------------------------------------------
# the paper's structural facts: M = 1, Theorem 4.2


@pytest.mark.parametrize("k", [2, 4, 8])
def test_fedavg_with_one_worker_does_not_depend_on_k(k):
    """M = 1: averaging one worker is the identity, so FedAvg is SGD on the same samples whatever
    the synchronization interval K (Yuan & Ma, NeurIPS 2020, §5's sanity check)."""
    steps = [s for rnd in make_batches(rounds=8, clients=1, k=1, seed=3) for s in rnd[0]]
    one, _, _ = run_module(fedavg, hp(0.2, 0.1, 1), [[[s]] for s in steps], [1.0])
    grouped = [[steps[i:i + k]] for i in range(0, len(steps), k)]
    many, _, _ = run_module(fedavg, hp(0.2, 0.1, k), grouped, [1.0])
    assert_close(many[-1]["params"], one[-1]["params"], rtol=1e-14)
    for r, h in enumerate(many):  # and at every synchronization
        assert_close(h["params"], one[(r + 1) * k - 1]["params"], rtol=1e-14)


def _difference_after(variant, blocks, kappa=25.0, L=1.0, eps=1e-3):
    """Theorem 4.2's construction (App. F, Lemmas F.2–F.3): the gap between two AGD runs started ε
    apart evolves linearly, with the curvature F'' at w^md equal to L once every three steps
    (t mod 3 = 1) and μ = L/κ otherwise. Runs the FedAc module's own local step on that linear
    field (η = 1/L, λ = 0, μ given) for 3·blocks steps; returns the final (w^ag, w) gap and the
    largest |gap| on the way."""
    hparams = {"lr": 1.0 / L, "weight_decay": 0.0, "local_steps": 3 * blocks, "mu": L / kappa,
               "variant": variant, "beta_formula": "paper"}
    gap = {"params": {"w": torch.tensor([eps], dtype=torch.float64)},
           "w": {"w": torch.tensor([eps], dtype=torch.float64)}, "steps": 0, "loss": math.nan}
    largest = eps
    for t in range(3 * blocks):
        h = L if t % 3 == 1 else L / kappa
        gap = fedac.client_step(gap, (None, None), hparams, lambda p, x, y, h=h: ({"w": h * p["w"]}, 0.0))
        largest = max(largest, abs(float(gap["params"]["w"])), abs(float(gap["w"]["w"])))
    return float(gap["params"]["w"]), float(gap["w"]["w"]), largest


@pytest.mark.parametrize("blocks", [1, 5, 20, 100])
def test_standard_agd_is_initial_value_unstable_and_fedac_i_is_not(blocks):
    """Theorem 4.2 / F.1: with η = 1/L, γ = 1/√(Lμ), α = √κ, β = √κ + 1 (FedAc's ``vanilla``
    variant: standard AGD) the gap after 3K steps is exactly (F.8)
    ½ε(−2(1 − 1/√κ)³)^K · (1 + 1/√κ, √κ + 1), hence ≥ ½ε·1.02^K for κ ≥ 25 (F.9). FedAc-I's
    damped γ = max(√(η/(μ·3K)), η) keeps the same gap below 2ε throughout."""
    kappa, eps = 25.0, 1e-3
    ag, w, _ = _difference_after("vanilla", blocks, kappa, eps=eps)
    factor = 0.5 * eps * (-2 * (1 - 1 / math.sqrt(kappa)) ** 3) ** blocks
    assert ag == pytest.approx(factor * (1 + 1 / math.sqrt(kappa)), rel=1e-12)
    assert w == pytest.approx(factor * (math.sqrt(kappa) + 1), rel=1e-12)
    assert abs(ag) >= 0.5 * eps * 1.02 ** blocks and abs(w) >= eps * 1.02 ** blocks
    _, _, largest = _difference_after("I", blocks, kappa, eps=eps)
    assert largest <= 2 * eps
