"""The vectorized engine equals the sequential reference (the oracle).

Tolerances (relative: max_leaf |a − b| / max |a|):
- float64: ≤ 1e-10 on the server parameters, server state and client states after several rounds
  (observed ~1e-16; often bitwise);
- float32: ≤ 1e-4 after 4 rounds (observed ~1e-7..1e-6; batched kernels may sum in another order);
- the same cell twice: bitwise-identical metrics and parameters.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedbench.data.partition import make_partition
from fedbench.data.store import Dataset
from fedbench.engine.clients.chunking import CPU_STACK_MAX_MACS, IGNORE_INDEX, auto_chunk_size, plan_groups
from fedbench.engine.clients.stacked import _select
from fedbench.engine.rounds.cell import spec_id
from fedbench.engine.rounds.loop import ENGINES, resolve_engine, train
from fedbench.models import build_model, make_grad_fn
from fedbench.tree import tree_numel

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible")),
]
HPARAMS = {"fedavg": {}, "fedavgm": {"server_lr": 1.0, "momentum": 0.9}, "fedprox": {"mu": 0.1},
           "scaffold": {"server_lr": 1.0}, "feddyn": {"alpha": 0.1},
           "fedelasticnet_prox": {"lambda1": 1e-3, "lambda2": 0.1, "epsilon": 1e-3},
           "fedelasticnet_scaffold": {"server_lr": 1.0, "lambda1": 1e-3, "lambda2": 0.0, "epsilon": 1e-3},
           "fedelasticnet_feddyn": {"lambda1": 1e-3, "lambda2": 0.1, "epsilon": 1e-3},
           "elastic_fedavg": {"tau": 0.5, "rho": 0.9, "sensitivity": "momentum"},
           "elastic_fedavgm": {"server_lr": 1.0, "momentum": 0.9, "dampening": 0.9, "tau": 0.5, "rho": 0.9,
                               "sensitivity": "average"},
           "elastic_fedprox": {"mu": 0.1, "tau": 0.3, "rho": 0.95, "sensitivity": "momentum"},
           "fedadam": {"server_lr": 0.05, "beta1": 0.9, "beta2": 0.99, "tau": 1e-3},
           "fedyogi": {"server_lr": 0.05, "beta1": 0.9, "beta2": 0.99, "tau": 1e-3},
           "fedadagrad": {"server_lr": 0.05, "beta1": 0.9, "tau": 1e-3},
           "fedac": {"variant": "II", "beta_formula": "code", "mu": None}, "mb_sgd": {},
           "mb_ac_sgd": {"variant": "vanilla", "beta_formula": "paper", "mu": 0.05},
           "fednova": {"server_lr": 0.8, "momentum": 0.5},
           "local_update": {"theta": [1.0, 0.5, 0.0, 2.0], "alpha": 0.1, "server_opt": "nesterov", "server_lr": 0.5,
                            "momentum": 0.5, "beta1": 0.9, "beta2": 0.99, "tau": 1e-3},
           "reptile": {"epsilon": 0.5},
           "maml": {"inner_steps": 2, "inner_batches": "shared", "server_opt": "heavy_ball", "server_lr": 0.5,
                    "momentum": 0.5, "beta1": 0.9, "beta2": 0.99, "tau": 1e-3}}
#: Algorithms that need a fixed number of local steps, no clipping and a weight decay λ > 0 (μ = λ):
#: their cells run these local settings instead of the epochs / clipping ones below.
STEPS_ONLY = {"fedac": {"epochs": None, "steps": 3, "weight_decay": 1e-2, "clip_norm": None},
              "mb_sgd": {"clip_norm": None}, "mb_ac_sgd": {"clip_norm": None},
              "local_update": {"clip_norm": None}, "maml": {"clip_norm": None}}
SAMPLING = {"uniform": {"scheme": "uniform", "participation": 0.5},
            "bernoulli": {"scheme": "bernoulli", "participation": 0.4}}



@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n, d, c = 300, 6, 3
    w = rng.normal(size=(d, c))
    x = rng.normal(size=(n + 60, d)).astype(np.float32)
    y = (x @ w + 0.5 * rng.normal(size=(n + 60, c))).argmax(1)
    ds = Dataset("toy", x[:n], y[:n], x[n:], y[n:], num_classes=c)
    # lognormal client sizes: unequal step counts and partial last batches
    part = make_partition(ds, {"scheme": "iid", "num_clients": 10, "sigma": 0.9, "min_size": 3}, seed=0)
    return ds, part


def _spec(algorithm, **over):
    spec = {
        "experiment": "t", "dataset": "toy", "partition": "iid", "algorithm": algorithm, "seed": 0,
        "algorithm_name": algorithm, "hparams": HPARAMS[algorithm], "model": {"name": "mlp", "hidden": [8]},
        "local": {"epochs": 2, "steps": None, "batch_size": 7, "lr": 0.1, "lr_decay": 0.95,
                  "weight_decay": 0.0, "clip_norm": None},
        "sampling": SAMPLING["uniform"], "rounds": 4, "eval_every": 1, "target_accuracy": 0.8,
        "dtype": "float64",
    }
    return spec | over


def _leaves(tree, prefix=""):
    if torch.is_tensor(tree):
        return {prefix: tree}
    if isinstance(tree, dict):
        out = {}
        for k, v in tree.items():
            out.update(_leaves(v, f"{prefix}/{k}"))
        return out
    return {}


def _rel(a, b):
    la, lb = _leaves(a), _leaves(b)
    assert la.keys() == lb.keys()
    worst = 0.0
    for k in la:
        x, y = la[k].double().cpu(), lb[k].double().cpu()
        assert x.shape == y.shape, k
        scale = float(x.abs().max()) if x.numel() else 0.0
        diff = float((x - y).abs().max()) if x.numel() else 0.0
        worst = max(worst, diff / scale if scale > 0 else diff)
    return worst


def _compare(spec, ds, part, device, rtol, **kw):
    rows_s, info_s = train(spec, ds, part, device=device, engine="sequential")
    rows_v, info_v = train(spec, ds, part, device=device, engine="vectorized", **kw)
    assert info_v["engine"] == "vectorized" and info_s["engine"] == "sequential"
    assert _rel(info_s["params"], info_v["params"]) <= rtol
    assert _rel(info_s["server_state"], info_v["server_state"]) <= rtol
    assert info_s["client_states"].keys() == info_v["client_states"].keys()
    assert _rel(info_s["client_states"], info_v["client_states"]) <= rtol
    assert len(rows_s) == len(rows_v)
    for a, b in zip(rows_s, rows_v):
        for key in ("round", "clients_sampled", "uplink_floats", "downlink_floats", "status"):
            assert a[key] == b[key], key
        for key in ("train_loss", "test_loss"):
            assert abs(a[key] - b[key]) <= rtol * abs(a[key]) * 10, key
        # counted from binned values / thresholded ζ: a value within rounding of a bin edge (or a
        # ζ within rounding of 1) may land on the other side, so allow a few such flips
        d = sum(v.numel() for v in info_s["params"].values())
        for key in ("uplink_entropy_bits", "uplink_entropy_bits_delta", "boosted_pct"):
            assert (a[key] is None) == (b[key] is None), key
            if a[key] is not None:
                rel = 1e-3 if rtol < 1e-6 else 0.05
                tol = {"boosted_pct": 100.0 / d + 1e-9}.get(key, rel * abs(a[key]))
                assert abs(b[key] - a[key]) <= tol, key
    assert info_s["holdout_sizes"] == info_v["holdout_sizes"]
    return info_s, info_v


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("sampling", sorted(SAMPLING))
@pytest.mark.parametrize("algorithm", sorted(HPARAMS))
def test_float64_matches_reference(data, algorithm, sampling, device):
    ds, part = data
    sizes = part.filter(part.column("split").to_numpy(zero_copy_only=False) == "train").group_by("client_id").aggregate(
        [("sample_index", "count")]).column("sample_index_count").to_pylist()
    assert len(set(sizes)) > 3 and any(s % 7 for s in sizes)  # unequal sizes and partial batches
    spec = _spec(algorithm, sampling=SAMPLING[sampling])
    spec["local"] |= STEPS_ONLY.get(algorithm, {})
    _, info_v = _compare(spec, ds, part, device, rtol=1e-10)
    assert info_v["padding_efficiency"] <= 1.0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("chunk_size", [1, 2])
@pytest.mark.parametrize("algorithm", sorted(HPARAMS))
def test_float64_steps_mode_clipping_weight_decay_small_chunks(data, algorithm, chunk_size, device):
    # fixed local steps (clients smaller than the batch get smaller batches), clipping, weight
    # decay, and chunks of 1 client (no vmap, unstacked step loop) or 2: still the reference to 1e-10
    ds, part = data
    local = _spec(algorithm)["local"] | {"epochs": None, "steps": 5, "batch_size": 40, "clip_norm": 1.0,
                                          "weight_decay": 1e-3} | STEPS_ONLY.get(algorithm, {})
    spec = _spec(algorithm, local=local, sampling=SAMPLING["bernoulli"])
    _compare(spec, ds, part, device, rtol=1e-10, chunk_size=chunk_size)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("algorithm", sorted(HPARAMS))
def test_float32_within_tolerance(data, algorithm, device):
    ds, part = data
    spec = _spec(algorithm, dtype="float32")
    spec["local"] |= STEPS_ONLY.get(algorithm, {})
    _compare(spec, ds, part, device, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("algorithm", ["scaffold", "feddyn"])
def test_same_cell_twice_is_bitwise_identical(data, algorithm, device):
    ds, part = data
    spec = _spec(algorithm, dtype="float32")
    rows1, info1 = train(spec, ds, part, device=device, engine="vectorized")
    rows2, info2 = train(spec, ds, part, device=device, engine="vectorized")
    drop = lambda rows: [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows]  # noqa: E731
    assert drop(rows1) == drop(rows2)
    assert all(torch.equal(info1["params"][k], info2["params"][k]) for k in info1["params"])


def test_vectorized_is_the_default_and_engine_is_not_identity():
    assert resolve_engine(None, None) == "vectorized" and set(ENGINES) == {"vectorized", "sequential"}
    assert resolve_engine(None, "sequential") == "sequential"
    assert resolve_engine("vectorized", "sequential") == "vectorized"
    with pytest.raises(ValueError, match="engine must be one of"):
        resolve_engine("turbo")
    base = _spec("fedavg")
    assert spec_id(base) == spec_id(base | {"engine": "sequential", "chunk_size": 4})


@pytest.mark.parametrize("model_cfg", [{"name": "mlp", "hidden": [5]}, {"name": "logreg"},
                                       {"name": "cnn", "channels": [2], "hidden": [4], "kernel_size": 3}])
def test_padded_rows_give_the_mean_over_real_rows(model_cfg):
    # The batching choice: a partial batch is padded with copies of a real row labelled
    # IGNORE_INDEX. Loss and gradient equal those of the unpadded batch, under vmap too.
    shape = (1, 6, 6) if model_cfg["name"] == "cnn" else (6,)
    model = build_model(model_cfg, shape, 3)
    grad_fn = make_grad_fn(model)
    g = torch.Generator().manual_seed(0)
    params = model.init(np.random.default_rng(0), dtype=torch.float64)
    x = torch.randn(5, *shape, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 2, 1, 1, 0])
    xp = torch.cat([x, x[:1].expand(3, *shape)])
    yp = torch.cat([y, torch.full((3,), IGNORE_INDEX)])
    g_ref, l_ref = grad_fn(params, x, y)
    g_pad, l_pad = grad_fn(params, xp, yp)
    torch.testing.assert_close(l_pad, l_ref, rtol=1e-14, atol=0)
    for k in params:
        torch.testing.assert_close(g_pad[k], g_ref[k], rtol=1e-13, atol=1e-16)
    # under vmap, each client has its own number of real rows
    stacked = {k: v.unsqueeze(0).expand(2, *v.shape) for k, v in params.items()}
    y2 = torch.stack([yp, torch.cat([y[:2], torch.full((6,), IGNORE_INDEX)])])
    g_v, l_v = torch.func.vmap(grad_fn)(stacked, torch.stack([xp, xp]), y2)
    g_2, l_2 = grad_fn(params, x[:2], y[:2])
    torch.testing.assert_close(l_v, torch.stack([l_ref, l_2]), rtol=1e-14, atol=0)
    for k in params:
        torch.testing.assert_close(g_v[k][1], g_2[k], rtol=1e-13, atol=1e-16)
    assert F.cross_entropy(torch.zeros(1, 3), torch.tensor([IGNORE_INDEX]), reduction="sum") == 0


def test_masked_step_is_an_exact_noop_even_with_nan():
    old = {"params": {"w": torch.arange(6.0).reshape(3, 2)}, "steps": torch.tensor([1, 1, 1])}
    new = {"params": {"w": torch.full((3, 2), float("nan"))}, "steps": torch.tensor([2, 2, 2])}
    out = _select(torch.tensor([True, False, True]), new, old)
    assert torch.equal(out["params"]["w"][1], old["params"]["w"][1])
    assert out["params"]["w"][[0, 2]].isnan().all()
    assert out["steps"].tolist() == [2, 1, 2]


@pytest.mark.parametrize("name,cfg,shape,classes,batch,stacked", [
    ("w3 logreg, B=1", {"name": "logreg"}, (123,), 2, 1, True),
    ("digits mlp, B=10", {"name": "mlp", "hidden": [64]}, (64,), 10, 10, True),
    ("2NN, B=50", {"name": "mlp", "hidden": [200, 200]}, (784,), 10, 50, False),  # 10 M MACs a step
    ("tiny cnn (layers slower stacked)", {"name": "cnn", "channels": [2], "kernel_size": 3, "hidden": [4],
                                          "padding": "same"}, (1, 8, 8), 3, 4, False),
    ("tiny lstm (fused kernel has no batching rule)", {"name": "lstm", "vocab_size": 5, "embed_dim": 2,
                                                      "hidden": [3]}, (6,), 5, 4, False),
])
def test_cpu_stacks_clients_only_where_it_pays(name, cfg, shape, classes, batch, stacked):
    model = build_model(cfg, shape, classes)
    params = model.init(np.random.default_rng(0))
    x = torch.zeros(1, *shape, dtype=torch.int64 if cfg["name"] == "lstm" else torch.float32)
    g = auto_chunk_size(model.apply, params, x, batch, 1, torch.device("cpu"), model.batch_clients_on_cpu)
    d = tree_numel(params)
    assert (g > 1) == stacked, (name, g, d * batch)
    if stacked:  # bounded by the 1 GiB budget, not by the size rule
        assert d * batch < CPU_STACK_MAX_MACS


def test_plan_groups_covers_every_client_once_and_bounds_chunks():
    rng = np.random.default_rng(0)
    steps = rng.integers(1, 40, size=57).tolist() + [0, 0]
    for chunk, overhead in [(5, 4.0), (100, 0.0), (100, 1e9), (1, 4.0)]:
        plan = plan_groups(steps, chunk, overhead)
        flat = np.concatenate(plan)
        assert sorted(flat.tolist()) == list(range(len(steps)))
        assert all(1 <= len(g) <= chunk for g in plan)
        maxes = [max(steps[i] for i in g) for g in plan]
        assert maxes == sorted(maxes, reverse=True)
    # no overhead: one group per distinct step count (no padding); huge overhead: one group
    assert all(len({steps[i] for i in g}) == 1 for g in plan_groups(steps, 100, 0.0))
    assert len(plan_groups(steps[:-2], 100, 1e9)) == 1
    assert [len(g) for g in plan_groups(steps, 100, 1e9)] == [57, 2]  # K = 0 clients cost nothing apart
    assert plan_groups([], 4) == []


def _executed(steps, plan):
    """Client-steps the engine executes for ``plan``: each chunk runs its largest K."""
    return sum(max(steps[i] for i in g) * len(g) for g in plan)


def _plan_cost(steps, plan, overhead):
    """The modelled cost Σ_chunks S · (overhead + |chunk|) of a plan of one chunk per group."""
    return sum(max(steps[i] for i in g) * (overhead + len(g)) for g in plan)


@pytest.mark.parametrize("floor", [0.5, 0.9, 1.0])
def test_plan_groups_keeps_the_padding_floor(floor):
    """Every plan executes at most Σ K_k / floor client-steps, whatever the chunk size and step
    overhead (the drawn τ_i of issue 18 times unequal client sizes); floor 1 never pads."""
    rng = np.random.default_rng(1)
    for _ in range(40):
        n = int(rng.integers(1, 80))
        steps = (rng.integers(2, 8, size=n) * rng.integers(1, 6, size=n)).tolist()
        for chunk in (1, 3, 1000):
            for overhead in (0.0, 4.0, 32.0, 1e9, math.inf):
                plan = plan_groups(steps, chunk, overhead, min_efficiency=floor)
                assert sorted(np.concatenate(plan).tolist()) == list(range(n))
                assert all(1 <= len(g) <= chunk for g in plan)
                assert sum(steps) >= floor * _executed(steps, plan) - 1e-9
                if floor == 1.0:
                    assert all(len({steps[i] for i in g}) == 1 for g in plan)
    assert [len(g) for g in plan_groups([5, 0, 0, 5], 10, 1e9, min_efficiency=0.9)] == [2, 2]  # K = 0 apart
    for bad in (1.5, -0.1):
        with pytest.raises(ValueError, match="min_efficiency"):
            plan_groups([1, 2], 4, 4.0, min_efficiency=bad)
    with pytest.raises(ValueError, match="step_overhead"):
        plan_groups([1, 2], 4, float("nan"))


def test_plan_groups_is_the_least_cost_plan_within_the_floor():
    """Against brute force over every grouping of consecutive distinct step counts (one chunk per
    group): the plan keeps every group's efficiency ≥ the floor and has the least modelled cost
    Σ_g S_g · (overhead + |G_g|) among such groupings; an infinite overhead without a floor gives
    one group (the eager engine's plan: padding costs nothing there)."""
    import itertools

    rng = np.random.default_rng(2)
    for _ in range(80):
        values = np.sort(rng.choice(np.arange(1, 30), size=int(rng.integers(1, 7)), replace=False))[::-1]
        counts = rng.integers(1, 6, size=len(values))
        steps = np.repeat(values, counts)[rng.permutation(int(counts.sum()))].tolist()
        overhead, floor = float(rng.choice([0.0, 2.0, 8.0, 32.0, 1e9])), float(rng.choice([0.0, 0.8, 0.9]))
        plan = plan_groups(steps, 1000, overhead, min_efficiency=floor)
        by_value = [[i for i, k in enumerate(steps) if k == v] for v in values]
        best = np.inf
        for cuts in itertools.product([False, True], repeat=len(values) - 1):
            groups, cur = [], list(by_value[0])
            for cut, members in zip(cuts, by_value[1:]):
                if cut:
                    groups.append(cur)
                    cur = []
                cur = cur + members
            groups.append(cur)
            if all(sum(steps[i] for i in g) >= floor * _executed(steps, [g]) for g in groups):
                best = min(best, _plan_cost(steps, groups, overhead))
        assert all(sum(steps[i] for i in g) >= floor * _executed(steps, [g]) - 1e-9 for g in plan)
        assert _plan_cost(steps, plan, overhead) == pytest.approx(best, rel=1e-12)
        one = plan_groups(steps, 1000, math.inf)
        assert len(one) == 1 and [steps[i] for i in one[0]] == sorted(steps, reverse=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("chunk_size", [None, 3])
@pytest.mark.parametrize("algorithm", ["fedavg", "scaffold"])
def test_float64_cnn_matches_reference(algorithm, chunk_size, device):
    # a convolutional model: vmapped (grouped) convolutions with chunk_size=3; one client per
    # chunk with the automatic size on CPU
    rng = np.random.default_rng(1)
    n = 90
    x = rng.normal(size=(n + 20, 1, 6, 6)).astype(np.float32)
    y = (x.reshape(n + 20, -1)[:, :3]).argmax(1)
    ds = Dataset("img", x[:n], y[:n], x[n:], y[n:], num_classes=3)
    part = make_partition(ds, {"scheme": "iid", "num_clients": 5, "sigma": 0.5, "min_size": 3}, seed=0)
    spec = _spec(algorithm, model={"name": "cnn", "channels": [2], "hidden": [4], "kernel_size": 3}, rounds=2,
                 dataset="img")
    _compare(spec, ds, part, device, rtol=1e-10, chunk_size=chunk_size)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("chunk_size", [None, 3])
@pytest.mark.parametrize("algorithm", ["fedavg", "feddyn"])
def test_float64_lstm_matches_reference(algorithm, chunk_size, device):
    # character ids in, the LSTM: the reference runs the fused torch.lstm kernel; the vectorized
    # engine runs it too in one-client chunks (automatic on CPU) and the explicit cell under vmap
    # with chunk_size=3, so this checks the two implementations against each other over rounds
    rng = np.random.default_rng(2)
    n, T, V = 80, 5, 7
    x = rng.integers(0, V, size=(n + 20, T)).astype(np.int64)
    y = x[:, -1] % 3
    ds = Dataset("chars", x[:n], y[:n], x[n:], y[n:], num_classes=3)
    part = make_partition(ds, {"scheme": "iid", "num_clients": 6, "sigma": 0.5, "min_size": 3}, seed=0)
    spec = _spec(algorithm, model={"name": "lstm", "vocab_size": V, "embed_dim": 3, "hidden": [4, 5]}, rounds=3,
                 dataset="chars")
    _compare(spec, ds, part, device, rtol=1e-10, chunk_size=chunk_size)
