"""The vectorized engine's fast path for linear logistic regression (:mod:`fedbench.engine.linear_fast.linear_steps`):
the same results as the generic (vmapped autograd) path to float rounding, for every algorithm it
serves, with stacked cells that differ in lr and seed, on FedAc's oracle (the ``shared`` partition
with ``local.replacement``); and the affine form it reads off each algorithm's ``client_step``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms import ALGORITHMS, fedac, get_algorithm
from fedbench.data.partition import make_partition
from fedbench.data.store import Dataset
from fedbench.engine.clients.vectorized import VectorizedClients
from fedbench.engine.linear_fast.cpu_rounds import lane_groups
from fedbench.engine.linear_fast.forms import affine_form
from fedbench.engine.linear_fast.rows import sparse_rows
from fedbench.engine.rounds.loop import train_seeds

RTOL = 1e-10
FAST_ALGORITHMS = ["fedavg", "fedac", "mb_sgd", "mb_ac_sgd"]


def _dataset(sparse: bool, classes: int = 2, n: int = 120, d: int = 9, seed: int = 0):
    rng = np.random.default_rng(seed)
    if sparse:  # binary features, 3 of d on per row (a9a-like)
        x = np.zeros((n + 30, d), dtype=np.float32)
        for i in range(len(x)):
            x[i, rng.choice(d, 3, replace=False)] = 1.0
    else:
        x = rng.normal(size=(n + 30, d)).astype(np.float32)
    y = (x @ rng.normal(size=(d, classes)) + rng.gumbel(size=(len(x), classes))).argmax(1)
    return Dataset("toy", x[:n], y[:n], x[n:], y[n:], num_classes=classes)


def _specs(algorithm: str, model: str, lrs=(0.05, 0.3), seeds=(0, 1), steps=5, batch_size=1, variant=None):
    hparams = dict(get_algorithm(algorithm).HPARAMS)
    if variant is not None:
        hparams["variant"] = variant
    return [{
        "experiment": "t", "dataset": "toy", "partition": "shared", "algorithm": f"{algorithm},lr={lr}",
        "seed": s, "algorithm_name": algorithm, "hparams": hparams,
        "model": model if isinstance(model, dict) else {"name": model},
        "local": {"epochs": None, "steps": steps, "batch_size": batch_size, "lr": lr, "lr_decay": 1.0,
                  "weight_decay": 0.01, "clip_norm": None, "replacement": True},
        "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": 3, "eval_every": 1,
        "target_accuracy": 0.8, "dtype": "float64"} for lr in lrs for s in seeds]


def _run(specs, ds, fast: bool, monkeypatch, chunk_size=None):
    monkeypatch.setattr(VectorizedClients, "fast_steps", fast)
    monkeypatch.setattr(VectorizedClients, "compiled_min_seconds", 0)  # these jobs are small
    used = []
    real = VectorizedClients._fast_chunk

    def spy(self, *a, **k):
        out = real(self, *a, **k)
        used.append(out is not None)
        return out

    monkeypatch.setattr(VectorizedClients, "_fast_chunk", spy)
    parts = [make_partition(ds, {"scheme": "shared", "num_clients": 5}, seed=s["seed"]) for s in specs]
    out = train_seeds(specs, ds, parts, device="cpu", engine="vectorized", chunk_size=chunk_size)
    return out, used


def _assert_close(a, b):
    for (rows_a, info_a), (rows_b, info_b) in zip(a, b):
        assert info_a["status"] == info_b["status"] == "ok"
        for k, v in info_b["params"].items():
            assert float((info_a["params"][k] - v).abs().max()) <= RTOL * float(v.abs().max())
        if "w" in info_b["server_state"]:  # FedAc's and Mb-Ac-SGD's second sequence
            for k, v in info_b["server_state"]["w"].items():
                assert float((info_a["server_state"]["w"][k] - v).abs().max()) <= RTOL * float(v.abs().max())
        for ra, rb in zip(rows_a, rows_b):
            for col in ("train_loss", "test_loss"):
                assert abs(ra[col] - rb[col]) <= RTOL * abs(rb[col])


@pytest.mark.parametrize("algorithm,variant", [("fedavg", None), ("fedac", "I"), ("fedac", "II"),
                                               ("fedac", "vanilla"), ("mb_sgd", None), ("mb_ac_sgd", None)])
@pytest.mark.parametrize("sparse", [True, False])
def test_fast_path_equals_generic_binary_logreg(algorithm, variant, sparse, monkeypatch):
    ds = _dataset(sparse)
    specs = _specs(algorithm, "binary_logreg", variant=variant)
    fast, used = _run(specs, ds, True, monkeypatch)
    assert used and all(used)  # every chunk ran the fast path
    generic, used = _run(specs, ds, False, monkeypatch)
    assert not any(used)
    _assert_close(fast, generic)


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
def test_fast_path_equals_generic_softmax_logreg(algorithm, monkeypatch):
    ds = _dataset(True, classes=3)
    specs = _specs(algorithm, "logreg", batch_size=3, steps=4)
    fast, used = _run(specs, ds, True, monkeypatch, chunk_size=7)  # chunks mixing cells
    assert used and all(used)
    generic, _ = _run(specs, ds, False, monkeypatch, chunk_size=7)
    _assert_close(fast, generic)


def test_stacked_cell_equals_lone_cell_bitwise_on_the_fast_path(monkeypatch):
    ds = _dataset(True)
    specs = _specs("fedac", "binary_logreg")
    stacked, _ = _run(specs, ds, True, monkeypatch)
    alone, _ = _run(specs[3:], ds, True, monkeypatch)
    for k, v in alone[0][1]["params"].items():
        assert torch.equal(stacked[3][1]["params"][k], v)


def test_affine_form_of_fedac_is_its_coefficients():
    """FedAc-I's step read off client_step: p = β⁻¹ w + (1 − β⁻¹) w^ag, and the rows of A and c
    are Algorithm 1's lines 7–8 with g + λ p (the coefficients of :func:`fedac.coefficients`)."""
    eta, lam, k = 0.2, 0.01, 4
    hp = {**fedac.HPARAMS, "lr": eta, "weight_decay": lam, "clip_norm": None, "local_steps": k}
    q, a, c = affine_form(fedac, ["params", "w"], ["weight"], hp, k)
    alpha_inv, beta_inv, gamma = fedac.coefficients(eta, lam, k)
    np.testing.assert_allclose(q, [1 - beta_inv, beta_inv], rtol=1e-15)
    np.testing.assert_allclose(a[0], (1 - eta * lam) * q, rtol=1e-14)
    np.testing.assert_allclose(a[1], [alpha_inv * (1 - beta_inv) - gamma * lam * (1 - beta_inv),
                                      1 - alpha_inv + alpha_inv * beta_inv - gamma * lam * beta_inv], rtol=1e-13)
    np.testing.assert_allclose(c, [-eta, -gamma], rtol=1e-15)


@pytest.mark.parametrize("algorithm", ["fedprox", "scaffold", "fedelasticnet_prox", "fedavg"])
def test_affine_form_refuses_steps_that_are_not_affine(algorithm):
    """Clipping (a global norm) and FedElasticNet's sign are not affine: no form, the generic path runs."""
    algo = get_algorithm(algorithm)
    hp = {**algo.HPARAMS, "lr": 0.1, "weight_decay": 0.0, "clip_norm": 1.0, "local_steps": 3}
    if algorithm == "fedelasticnet_prox":
        hp = {**hp, "clip_norm": None, "lambda1": 0.01}
    server = algo.server_init({"weight": torch.zeros(2)}, dict(algo.HPARAMS), 4)
    state = algo.client_init(server, None, hp)
    keys = [k for k in state if k not in ("steps", "loss", "params")]
    assert affine_form(algo, ["params", *keys], ["weight"], hp, 3) is None
    if algorithm != "fedelasticnet_prox":  # without clipping the step is affine (FedProx: in θ and θ^{t−1})
        assert affine_form(algo, ["params", *keys], ["weight"], {**hp, "clip_norm": None}, 3) is not None


def test_affine_form_sees_a_global_norm_without_the_clip_setting():
    """A step that rescales by a norm over all coordinates is caught by the second, larger probe."""

    class Normed:
        @staticmethod
        def client_step(state, batch, hp, grad_fn):
            g, loss = grad_fn(state["params"], *batch)
            scale = 1.0 / (1.0 + torch.linalg.vector_norm(g["weight"]))
            return {**state, "params": {"weight": state["params"]["weight"] - 0.1 * scale * g["weight"]},
                    "steps": state["steps"] + 1, "loss": loss}

    assert affine_form(Normed, ["params"], ["weight"], {"lr": 0.1, "clip_norm": None}, 3) is None


def test_sparse_rows_round_trip():
    rng = np.random.default_rng(1)
    x = (rng.random((40, 12)) < 0.2) * rng.normal(size=(40, 12))
    indptr, indices, values = sparse_rows(x)
    back = np.zeros_like(x)
    for r in range(len(x)):
        back[r, indices[indptr[r]:indptr[r + 1]]] = values[indptr[r]:indptr[r + 1]]
    np.testing.assert_array_equal(back, x)
    assert sparse_rows(rng.normal(size=(5, 4))) is None  # dense: read as dense rows


def test_threads_give_the_same_bits(monkeypatch):
    """Clients split over threads run the same per-client loop: bitwise the one-thread result."""
    ds = _dataset(True)
    specs = _specs("fedac", "binary_logreg", seeds=(0, 1, 2))
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one, _ = _run(specs, ds, True, monkeypatch)
        torch.set_num_threads(2)
        monkeypatch.setattr("fedbench.engine.linear_fast.linear_steps.MIN_CLIENTS_PER_THREAD", 1)
        two, _ = _run(specs, ds, True, monkeypatch)
    finally:
        torch.set_num_threads(old)
    for (_, a), (_, b) in zip(one, two):
        for k, v in a["params"].items():
            assert torch.equal(v, b["params"][k])


def test_small_jobs_keep_the_per_client_path(monkeypatch):
    """Below ``compiled_min_seconds`` of estimated saving the engine neither draws with the compiled code nor
    runs the fast steps (their start-up would not be repaid)."""
    ds = _dataset(True)
    specs = _specs("fedac", "binary_logreg")
    monkeypatch.setattr(VectorizedClients, "fast_steps", True)
    used = []
    real = VectorizedClients._fast_chunk
    monkeypatch.setattr(VectorizedClients, "_fast_chunk", lambda self, *a, **k: used.append(real(self, *a, **k)))
    parts = [make_partition(ds, {"scheme": "shared", "num_clients": 5}, seed=s["seed"]) for s in specs]
    train_seeds(specs, ds, parts, device="cpu", engine="vectorized")
    assert used and all(u is None for u in used)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_equals_the_generic_path(algorithm, monkeypatch):
    """Whatever the affine-form check decides for an algorithm (fast path or not), the results
    equal the generic path's (``logreg``, stacked cells differing in lr and seed)."""
    ds = _dataset(False, classes=3)
    model = "logreg"
    if "projection" in get_algorithm(algorithm).HPARAMS:  # minimax: the model with its ascent player
        model = {"name": "logreg", "minimax": {"problem": "fair", "lambda": 0.1}}
    specs = _specs(algorithm, model, lrs=(0.05, 0.2), seeds=(0, 1), steps=3, batch_size=2)
    fast, used = _run(specs, ds, True, monkeypatch)
    used = list(used)  # (the next run's spy wraps this one's)
    generic, _ = _run(specs, ds, False, monkeypatch)
    _assert_close(fast, generic)
    if algorithm in FAST_ALGORITHMS:
        assert used and all(used)


# ----------------------------------------------------------------------------------------------
# whole rounds in one compiled call (VectorizedClients.train_rounds)


def _round_specs(algorithm, model="binary_logreg", steps=1, batch_size=1, variant=None, rounds=7, eval_every=3,
                 lrs=(0.05, 0.3), seeds=(0, 1)):
    specs = _specs(algorithm, model, lrs=lrs, seeds=seeds, steps=steps, batch_size=batch_size, variant=variant)
    for s in specs:  # FedAc's protocol (config/experiments/fedac.yaml): what lets rounds run at once
        s.update(rounds=rounds, eval_every=eval_every, uplink_entropy=False, eval_initial=True)
    return specs


def _run_rounds_spy(specs, ds, fast: bool, monkeypatch, device: str = "cpu", tensor: bool = False, **kw):
    """train_seeds with (fast) or without (generic per-round path) the compiled paths, on ``device``
    (``tensor``: the whole-rounds tensor path of :mod:`fedbench.engine.linear_fast.tensor_rounds`, CUDA's, on
    any device); returns (results, the (t0, t1, ran) of every train_rounds call)."""
    monkeypatch.setattr(VectorizedClients, "fast_steps", fast)
    monkeypatch.setattr(VectorizedClients, "tensor_rounds", tensor)
    monkeypatch.setattr(VectorizedClients, "compiled_min_seconds", 0)
    calls = []
    real = VectorizedClients.train_rounds

    def spy(self, servers, hps, t0, t1, cells):
        out = real(self, servers, hps, t0, t1, cells)
        calls.append((t0, t1, out is not None))
        return out

    monkeypatch.setattr(VectorizedClients, "train_rounds", spy)
    parts = [make_partition(ds, {"scheme": "shared", "num_clients": 5}, seed=s["seed"]) for s in specs]
    return train_seeds(specs, ds, parts, device=device, engine="vectorized", **kw), calls


def _assert_rows_equal(a, b, rtol=RTOL):
    """Every row column equal (floats to ``rtol`` relative, counts and the rest exactly), and the
    final server states (``params``, FedAc's ``w``) to ``rtol``; rtol 0: bit for bit."""
    for (rows_a, info_a), (rows_b, info_b) in zip(a, b):
        assert info_a["status"] == info_b["status"]
        assert [r["round"] for r in rows_a] == [r["round"] for r in rows_b]
        for ra, rb in zip(rows_a, rows_b):
            for col, vb in rb.items():
                va = ra[col]
                if col == "wall_seconds":
                    continue
                if isinstance(vb, float) and not isinstance(va, int):
                    assert va == vb or (np.isnan(va) and np.isnan(vb)) or abs(va - vb) <= rtol * abs(vb), (col, va, vb)
                else:
                    assert va == vb, (col, va, vb)
        for key in ("params", "w"):
            for k, v in info_b["server_state"].get(key, {}).items():
                got = info_a["server_state"][key][k]
                if rtol == 0:
                    assert torch.equal(got, v)
                    continue
                fin = torch.isfinite(v)  # a diverged cell: non-finite in the same places (inf + -inf
                assert torch.equal(torch.isfinite(got), fin)  # may be NaN in one summation order only)
                if fin.any():
                    assert float((got - v)[fin].abs().max()) <= rtol * float(v[fin].abs().max())


# A covering set, not the 6 × 2 × 2 product: every algorithm at both K (the one-step path and every
# client's steps) and on both sparse and dense rows, and every (K, rows) pair (the row format does
# not depend on the algorithm's coefficients).
@pytest.mark.parametrize("algorithm,variant,steps,sparse", [
    ("fedavg", None, 1, True), ("fedac", "I", 1, False), ("fedac", "II", 1, True), ("fedac", "vanilla", 1, False),
    ("mb_sgd", None, 1, True), ("mb_ac_sgd", None, 1, False),
    ("fedavg", None, 3, False), ("fedac", "I", 3, True), ("fedac", "II", 3, False), ("fedac", "vanilla", 3, True),
    ("mb_sgd", None, 3, False), ("mb_ac_sgd", None, 3, True)])
def test_whole_rounds_equal_the_generic_path(algorithm, variant, steps, sparse, monkeypatch):
    """Rounds run at once (K = 1: the one-step path; K = 3: every client's steps) give the generic
    path's rows, every column (train/test loss and accuracy, objective, uplink floats and non-zeros,
    downlink floats, the initial row) and server states, float64, 1e-10; on sparse rows and on dense
    rows (read as CSR rows that store every entry: epsilon's case)."""
    ds = _dataset(sparse)
    specs = _round_specs(algorithm, steps=steps, variant=variant)
    fused, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
    assert calls == [(1, 3, True), (4, 6, True), (7, 7, True)]  # segments end at the evaluations
    generic, calls = _run_rounds_spy(specs, ds, False, monkeypatch)
    assert not any(ran for *_, ran in calls)
    _assert_rows_equal(fused, generic)


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
@pytest.mark.parametrize("steps,batch_size", [(1, 1), (1, 3), (2, 3)])
def test_whole_rounds_softmax_logreg(algorithm, steps, batch_size, monkeypatch):
    """Softmax regression (3 classes) through the whole rounds equals the generic path (1e-10); K = 1
    with B = 3 is the one-step path with a client's gradient summed over its rows, for FedAc its
    two messages counted apart."""
    ds = _dataset(True, classes=3)
    specs = _round_specs(algorithm, "logreg", steps=steps, batch_size=batch_size, rounds=4, eval_every=2)
    fused, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
    assert calls and all(ran for *_, ran in calls)
    generic, _ = _run_rounds_spy(specs, ds, False, monkeypatch)
    _assert_rows_equal(fused, generic)


@pytest.mark.parametrize("algorithm,steps,d,sparse", [
    ("fedac", 1, 9, True), ("fedac", 3, 9, True), ("fedac", 8, 64, True),  # one point; products: every coordinate,
    ("fedac", 3, 9, False), ("fedac", 65, 9, True), ("fedac", 65, 9, False),  # a few; dense; 2 segments, sparse
    ("fedavg", 12, 9, True), ("fedavg", 12, 9, False)])  # and dense; scaled, sparse and dense
def test_whole_rounds_do_not_depend_on_segments_threads_or_stacking(algorithm, steps, d, sparse, monkeypatch,
                                                                     tmp_path):
    """Bit for bit: with checkpoints every 2 rounds (other segments), a run resumed from its
    checkpoint, two threads instead of one, a cell trained alone instead of stacked; and to 1e-10
    the generic path's rows (sparse and dense rows)."""
    ds = _dataset(sparse, d=d)
    specs = _round_specs(algorithm, steps=steps, seeds=(0, 1, 2))
    base, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
    assert calls and all(ran for *_, ran in calls)  # whole rounds compiled, not round by round
    paths = [tmp_path / f"ckpt{i}.pt" for i in range(len(specs))]
    cut, calls = _run_rounds_spy(specs, ds, True, monkeypatch, checkpoint_paths=paths, checkpoint_every=2)
    assert [(t0, t1) for t0, t1, _ in calls] == [(1, 2), (3, 3), (4, 4), (5, 6), (7, 7)]
    _assert_rows_equal(cut, base, rtol=0)
    resumed, calls = _run_rounds_spy(specs, ds, True, monkeypatch, checkpoint_paths=paths)  # from round 6's
    assert [(t0, t1) for t0, t1, _ in calls] == [(7, 7)]
    _assert_rows_equal(resumed, base, rtol=0)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setattr("fedbench.engine.linear_fast.linear_steps.MIN_ROUND_CLIENTS_PER_THREAD", 1)
        two, _ = _run_rounds_spy(specs, ds, True, monkeypatch)
    finally:
        torch.set_num_threads(old)
    _assert_rows_equal(two, base, rtol=0)
    alone, _ = _run_rounds_spy(specs[4:5], ds, True, monkeypatch)
    _assert_rows_equal(alone, base[4:5], rtol=0)
    generic, _ = _run_rounds_spy(specs, ds, False, monkeypatch)  # and the numbers are the generic path's
    _assert_rows_equal(base, generic)


@pytest.mark.parametrize("algorithm,steps,rounds,eval_every", [
    ("fedac", 2, 120, 60), ("fedac", 65, 8, 2), ("fedavg", 12, 60, 8)])  # products: 1, 2 segments; scaled
def test_whole_rounds_stop_at_a_diverged_cell(algorithm, steps, rounds, eval_every, monkeypatch):
    """A cell whose run blows up (η far above 1/L) is recorded diverged at the round the generic
    path records it, with the same row; the other cells go on to the end."""
    ds = _dataset(True)
    specs = _round_specs(algorithm, steps=steps, lrs=(0.05, 3e3), seeds=(0,), rounds=rounds, eval_every=eval_every)
    for s in specs:
        s["collapse"] = False  # NaN/inf, not the collapse rule
    fused, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
    generic, _ = _run_rounds_spy(specs, ds, False, monkeypatch)
    assert [info["status"] for _, info in fused] == ["ok", "diverged"]
    stop = fused[1][0][-1]["round"]
    segment_end = min(rounds, (stop // eval_every + 1) * eval_every)  # the rest of the segment, run again
    assert eval_every < stop < rounds and (stop + 1, segment_end, True) in calls
    assert fused[0][0][-1]["round"] == rounds
    _assert_rows_equal(fused, generic)


def test_rounds_need_full_participation_and_no_entropy(monkeypatch):
    """Partial participation, a measured uplink entropy or a decaying lr: round by round."""
    ds = _dataset(True)
    for change in ({"sampling": {"scheme": "uniform", "participation": 0.6}}, {"uplink_entropy": True},
                   {"local": {**_round_specs("fedac")[0]["local"], "lr_decay": 0.9}}):
        specs = [{**s, **change} for s in _round_specs("fedac")]
        _, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
        assert calls == []


def test_small_jobs_run_round_by_round(monkeypatch):
    """Below ``compiled_min_seconds`` of estimated saving whole rounds are not run at once either."""
    ds = _dataset(True)
    monkeypatch.setattr(VectorizedClients, "fast_steps", True)
    calls = []
    real = VectorizedClients.train_rounds
    monkeypatch.setattr(VectorizedClients, "train_rounds", lambda self, *a: calls.append(real(self, *a)))
    specs = _round_specs("fedac")
    parts = [make_partition(ds, {"scheme": "shared", "num_clients": 5}, seed=s["seed"]) for s in specs]
    train_seeds(specs, ds, parts, device="cpu", engine="vectorized")
    assert calls == [None]  # asked once, then round by round


def test_lane_groups_are_the_cells_that_draw_the_same_rows():
    """Cells of one seed whose clients hold equal rows (by content, not by array identity) form one
    group; another seed, other rows or another client count do not join it."""
    rows_a, rows_b = np.arange(10), np.arange(10)[::-1].copy()
    row_table = np.stack([rows_a, rows_a.copy(), rows_b, rows_a.copy(), rows_a.copy()])
    # five cells of two clients: seeds 0, 0, 0, 1, 0; cell 2's clients hold other rows
    bounds = [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    key_seed = np.array([0, 0, 0, 0, 0, 0, 1, 1, 0, 0])
    key_id = np.tile([0, 1], 5)
    slot = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    sizes = np.full(10, 10)
    assert lane_groups(bounds, key_seed, key_id, row_table, slot, sizes) == [[0, 1, 4], [2], [3]]
    assert lane_groups([(0, 2), (2, 3)], key_seed, key_id, row_table, slot, sizes) == [[0], [1]]


@pytest.mark.parametrize("steps", [1, 3])
def test_every_lane_of_a_wide_grid_equals_its_cell_alone(steps, monkeypatch):
    """17 learning rates of one seed run as the 17 lanes of one loop (vectorized across lanes, with
    a remainder): each lane is bit for bit its cell trained alone, and within 1e-10 of the generic path."""
    ds = _dataset(True)
    lrs = tuple(float(v) for v in np.geomspace(0.01, 0.8, 17))
    specs = _round_specs("fedac", steps=steps, lrs=lrs, seeds=(0,), rounds=4, eval_every=2)
    base, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
    assert calls and all(ran for *_, ran in calls)
    for i in (0, 7, 15, 16):
        alone, _ = _run_rounds_spy(specs[i:i + 1], ds, True, monkeypatch)
        _assert_rows_equal(alone, base[i:i + 1], rtol=0)
    generic, _ = _run_rounds_spy(specs, ds, False, monkeypatch)
    _assert_rows_equal(base, generic)


@pytest.mark.parametrize("algorithm,variant", [("fedavg", None), ("fedac", "I"), ("fedac", "II"), ("mb_sgd", None),
                                               ("mb_ac_sgd", None)])
@pytest.mark.parametrize("model,steps,batch_size", [("binary_logreg", 2, 1), ("binary_logreg", 3, 2),
                                                    ("logreg", 2, 1), ("binary_logreg", 5, 1),
                                                    ("binary_logreg", 37, 1), ("logreg", 11, 2)])
def test_products_scaled_and_shared_point_paths_equal_the_round_by_round_steps_and_the_generic_path(
        algorithm, variant, model, steps, batch_size, monkeypatch):
    """The ways to compute a round's clients (64 features, 3 non-zeros a row), each forced in
    turn: the products path, which forms no iterate and reads each row against q Aᵗ s⁰ plus its products
    with the client's earlier rows (in segments: K = 37 and 11 give FedAvg three and two, FedAc two
    at K = 37, the later ones reading the client's part u at their start); for FedAvg (one
    sequence) the scaled path, which keeps the client's part scaled by a⁻ᵗ; and, for the minibatch
    baselines, whose gradients are all taken at the round's start, the shared-point path. Each
    gives the rows of the round-by-round compiled steps (every coordinate, step by step; float64,
    1e-12) and of the generic path (1e-10); each runs the mode it was given, and
    :func:`round_mode` gives the minibatch baselines the shared-point path."""
    from fedbench.engine.linear_fast import cpu_rounds, linear_steps

    ds = _dataset(True, classes=3 if model == "logreg" else 2, d=64)
    specs = _round_specs(algorithm, model, steps=steps, batch_size=batch_size, variant=variant, rounds=5, eval_every=2)
    modes = []
    real_rounds, real_mode = linear_steps._run_rounds, linear_steps.round_mode

    def spy(*args):
        modes.append(args[-5])
        return real_rounds(*args)

    monkeypatch.setattr(linear_steps, "_run_rounds", spy)
    generic, _ = _run_rounds_spy(specs, ds, False, monkeypatch)
    monkeypatch.setattr(VectorizedClients, "train_rounds", lambda *a: None)  # round by round, compiled steps
    steps_, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
    assert calls and not any(ran for *_, ran in calls) and not modes
    monkeypatch.undo()
    monkeypatch.setattr(linear_steps, "_run_rounds", spy)
    one_point = algorithm.startswith("mb_")
    one_sequence = algorithm == "fedavg"  # n = 1: the scaled path
    forced = ([cpu_rounds.PRODUCTS] + ([cpu_rounds.SCALED] if one_sequence else [])
              + ([cpu_rounds.ONE_STEP] if one_point else []))
    for mode in forced:
        monkeypatch.setattr(linear_steps, "round_mode", lambda *a, mode=mode: mode)
        fast, _ = _run_rounds_spy(specs, ds, True, monkeypatch)
        assert modes and set(modes) == {mode}
        modes.clear()
        _assert_rows_equal(fast, steps_, rtol=1e-12)
        _assert_rows_equal(fast, generic)
    monkeypatch.setattr(linear_steps, "round_mode", real_mode)
    _run_rounds_spy(specs, ds, True, monkeypatch)
    assert (set(modes) == {cpu_rounds.ONE_STEP}) == one_point


@pytest.mark.parametrize("algorithm,variant,steps,batch_size", [("fedac", "I", 1, 3), ("mb_sgd", None, 4, 1),
                                                              ("mb_ac_sgd", None, 4, 1), ("mb_ac_sgd", None, 1, 3)])
def test_the_shared_point_path_counts_each_messages_nonzeros(algorithm, variant, steps, batch_size, monkeypatch):
    """From w⁰ = 0 on rows of 3 non-zeros in 64 features, a client's messages stay zero where no row
    of any round so far touched, so their non-zeros are fewer than the floats sent: the shared-point
    path's count, summed over a client's K·B rows (FedAc's two messages each at K = 1, B = 3; the
    minibatch baselines' gradient sum), equals the generic path's count of the messages themselves.
    The non-zeros are normal draws: with binary features (``_dataset``) the logit gradients at w = 0
    are ±1/2, two rows' gradients can cancel to exactly 0, and whether they do depends on the
    summation order, which differs between the paths."""
    rng = np.random.default_rng(3)
    x = np.zeros((150, 64), dtype=np.float32)
    for row in x:
        row[rng.choice(64, 3, replace=False)] = rng.normal(size=3)
    y = (x @ rng.normal(size=64) + rng.logistic(size=150) > 0).astype(np.int64)
    ds = Dataset("toy", x[:120], y[:120], x[120:], y[120:], num_classes=2)
    specs = _round_specs(algorithm, steps=steps, batch_size=batch_size, variant=variant, rounds=4, eval_every=2)
    for s in specs:
        s["model"] = {"name": "binary_logreg", "init": "zeros"}
    fused, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
    assert calls and all(ran for *_, ran in calls)
    generic, _ = _run_rounds_spy(specs, ds, False, monkeypatch)
    _assert_rows_equal(fused, generic)
    for rows, _ in fused:
        assert 0 < rows[-1]["uplink_nonzeros"] < rows[-1]["uplink_floats"]


@pytest.mark.parametrize("steps", [4, 12])  # the products path, the scaled path
def test_fedavg_without_weight_decay_does_not_take_the_shared_point(steps, monkeypatch):
    """FedAvg with weight decay 0 has q A = q and A c = c (A = q = 1) but its gradients move the
    point (q c = −η): :func:`round_mode` must not give it the shared-point path, and its rows equal
    the generic path's (1e-10). Until stop 33 it took the shared point and was wrong."""
    from fedbench.engine.linear_fast import cpu_rounds, linear_steps

    ds = _dataset(True)
    specs = _round_specs("fedavg", steps=steps)
    for s in specs:
        s["local"] = {**s["local"], "weight_decay": 0.0}
    modes, real = [], linear_steps.round_mode
    monkeypatch.setattr(linear_steps, "round_mode", lambda *a: modes.append(real(*a)) or modes[-1])
    fast, calls = _run_rounds_spy(specs, ds, True, monkeypatch)
    assert calls and modes and cpu_rounds.ONE_STEP not in modes
    generic, _ = _run_rounds_spy(specs, ds, False, monkeypatch)
    _assert_rows_equal(fast, generic)


def test_round_mode_takes_products_but_scaled_for_long_rounds_of_one_sequence():
    """K = 1 or a point the gradients do not move (q A = q, A c = c, q c = 0): one shared point; else the
    products path, but the scaled path for one sequence (FedAvg) beyond :data:`SCALED_FROM_ROWS`
    rows a client's round (K·B), unless a cell's |a|⁻ᴷ passes :data:`SCALED_MAX_GROWTH`."""
    from fedbench.engine.linear_fast import cpu_rounds as cr

    fedac_q, fedac_a, fedac_c = np.array([[1.0, 0.0]]), np.array([[[0.9, 0.1], [0.0, 1.0]]]), np.array([[-0.1, -0.2]])
    fedavg = np.array([[1.0], [1.0]]), np.array([[[0.99]], [[0.5]]]), np.array([[-0.1], [-0.5]])
    fixed = np.array([[1.0, 0.0]]), np.eye(2)[None], np.array([[0.0, -0.1]])  # Mb-SGD: (w, Σ ∇f)
    no_decay = np.array([[1.0]]), np.array([[[1.0]]]), np.array([[-0.1]])  # FedAvg, weight decay 0: the point moves
    top = cr.SCALED_FROM_ROWS
    assert cr.round_mode(1, 1, fedac_q, fedac_a, fedac_c) == cr.ONE_STEP
    assert cr.round_mode(16, 3, *fixed) == cr.ONE_STEP
    assert cr.round_mode(2, 1, *no_decay) == cr.PRODUCTS
    assert cr.round_mode(16, 3, *no_decay) == cr.SCALED
    assert cr.round_mode(2, 1, *fedavg) == cr.PRODUCTS
    assert cr.round_mode(top, 1, *fedavg) == cr.PRODUCTS
    assert cr.round_mode(top + 1, 1, *fedavg) == cr.SCALED
    assert cr.round_mode(top // 2 + 1, 2, *fedavg) == cr.SCALED
    assert cr.round_mode(2, 1, fedac_q, fedac_a, fedac_c) == cr.PRODUCTS
    assert cr.round_mode(256, 4, fedac_q, fedac_a, fedac_c) == cr.PRODUCTS
    # 0.5⁻³³² ≈ 8.7e99, 0.5⁻³³³ ≈ 1.7e100: one cell past the bound sends the group to the products path
    assert cr.round_mode(332, 1, *fedavg) == cr.SCALED
    assert cr.round_mode(333, 1, *fedavg) == cr.PRODUCTS
    assert cr.round_mode(64, 1, np.array([[1.0]]), np.array([[[0.0]]]), np.array([[-1.0]])) == cr.PRODUCTS


@pytest.mark.parametrize("model_name,classes", [("binary_logreg", 2), ("logreg", 3)])
@pytest.mark.parametrize("sparse", [True, False])
def test_many_models_evaluated_in_one_pass_equal_the_generic_evaluation(model_name, classes, sparse):
    """LinearSteps.evaluate: per model the generic evaluate()'s loss, accuracy and worst-class
    accuracy (float64, 1e-12), and each model's numbers bit for bit those it gets alone; sparse
    and dense rows."""
    from fedbench.engine.linear_fast.linear_steps import LinearSteps
    from fedbench.engine.rounds.evaluate import evaluate
    from fedbench.models import build_model, make_grad_fn

    ds = _dataset(sparse, classes=classes, n=300, d=40)
    x = torch.from_numpy(ds.x_train).double()
    y = torch.from_numpy(ds.y_train).long()
    model = build_model({"name": model_name}, ds.x_train.shape[1:], classes)
    ls = LinearSteps.build(model, make_grad_fn(model), x)
    rng = np.random.default_rng(3)
    shapes = {k: v.shape for k, v in model.init(rng, torch.float64).items()}
    params = [{k: torch.from_numpy(rng.normal(size=s)) for k, s in shapes.items()} for _ in range(5)]
    many = ls.evaluate(params, x, y)
    for p, got in zip(params, many):
        want = evaluate(model.apply, p, x, y, worst_class=True)
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert ls.evaluate([p], x, y)[0] == got
    assert ls.evaluate(params, x.float(), y) is None  # float32 rows: the generic evaluation
    empty = ls.evaluate(params, x[:0], y[:0])  # no rows (a dataset without a test split): NaN, as evaluate()
    assert len(empty) == len(params) and all(np.isnan(v) for got in empty for v in got)
    assert all(np.isnan(v) for v in evaluate(model.apply, params[0], x[:0], y[:0], worst_class=True))


def test_whole_rounds_evaluate_every_cell_in_one_pass(monkeypatch):
    """The evaluations of a job on the whole-rounds path (θ⁰ and every eval_every rounds) run for
    all its cells at once, one call per split and evaluation round, and give the generic rows (1e-10)."""
    from fedbench.engine.linear_fast.linear_steps import LinearSteps

    ds = _dataset(True)
    ds = Dataset("toy", ds.x_train.astype(np.float64), ds.y_train, ds.x_test.astype(np.float64), ds.y_test,
                 num_classes=2)
    calls = []
    real = LinearSteps.evaluate

    def spy(self, params, x, y):
        out = real(self, params, x, y)
        calls.append((len(params), out is not None))
        return out

    monkeypatch.setattr(LinearSteps, "evaluate", spy)
    specs = _round_specs("fedac", steps=2)
    fused, _ = _run_rounds_spy(specs, ds, True, monkeypatch)
    assert calls == [(4, True)] * 2 * 4  # rounds 0, 3, 6, 7; train and test
    generic, _ = _run_rounds_spy(specs, ds, False, monkeypatch)
    _assert_rows_equal(fused, generic)
