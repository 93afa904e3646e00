import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from fedbench.data.partition import make_partition, write_partition
from fedbench.data.store import Dataset, write_dataset
from fedbench.engine.rounds.cell import spec_id
from fedbench.engine.rounds.loop import run_cell, train
from fedbench.metrics.schema import check_metrics_table


def _dataset(n=240, d=6, c=3, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(d, c))
    x = rng.normal(size=(n + 60, d)).astype(np.float32)
    y = (x @ w).argmax(1)
    return Dataset("toy", x[:n], y[:n], x[n:], y[n:], num_classes=c)


def _spec(algorithm="fedavg", **over):
    spec = {
        "experiment": "t", "dataset": "toy", "partition": "iid", "algorithm": algorithm, "seed": 0,
        "algorithm_name": algorithm, "hparams": {}, "model": {"name": "logreg"},
        "local": {"epochs": 1, "steps": None, "batch_size": 10, "lr": 0.1, "lr_decay": 1.0,
                  "weight_decay": 0.0, "clip_norm": None},
        "sampling": {"scheme": "uniform", "participation": 0.5},
        "rounds": 4, "eval_every": 1, "target_accuracy": 0.8, "dtype": "float64",
    }
    return spec | over


HPARAMS = {"fedavg": {}, "fedavgm": {"server_lr": 1.0, "momentum": 0.9}, "fedprox": {"mu": 0.01},
           "scaffold": {"server_lr": 1.0}, "feddyn": {"alpha": 0.01}}


@pytest.fixture(scope="module")
def data():
    ds = _dataset()
    part = make_partition(ds, {"scheme": "iid", "num_clients": 8}, seed=0)
    return ds, part


def _drop_time(rows):
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows]


@pytest.mark.parametrize("algorithm", sorted(HPARAMS))
def test_every_algorithm_learns_and_is_deterministic(data, algorithm):
    ds, part = data
    spec = _spec(algorithm, hparams=HPARAMS[algorithm], rounds=15)
    rows, info = train(spec, ds, part, device="cpu")
    assert info["status"] == "ok" and [r["round"] for r in rows] == list(range(1, 16))
    assert rows[-1]["test_accuracy"] > 0.7
    assert rows[-1]["train_loss"] < rows[0]["train_loss"]
    rows2, _ = train(spec, ds, part, device="cpu")
    assert _drop_time(rows) == _drop_time(rows2)  # bitwise: same floats, same counts


def test_communication_is_counted_from_messages(data):
    ds, part = data
    d = 6 * 3 + 3  # logistic regression: W (6x3) + b (3)
    rows, _ = train(_spec("fedprox", hparams={"mu": 0.01}), ds, part, device="cpu")
    sampled = np.cumsum([r["clients_sampled"] for r in rows])
    assert [r["uplink_floats"] for r in rows] == (d * sampled).tolist()
    assert [r["downlink_floats"] for r in rows] == (d * sampled).tolist()
    rows_s, _ = train(_spec("scaffold", hparams={"server_lr": 1.0}), ds, part, device="cpu")
    assert [r["uplink_floats"] for r in rows_s] == [2 * r["uplink_floats"] for r in rows]
    assert all(0 < r["uplink_nonzeros"] <= r["uplink_floats"] for r in rows)
    assert all(b["uplink_entropy_bits"] > a["uplink_entropy_bits"] for a, b in zip(rows, rows[1:]))


def test_eval_every_and_final_round(data):
    ds, part = data
    rows, _ = train(_spec(rounds=7, eval_every=3), ds, part, device="cpu")
    assert [r["round"] for r in rows] == [3, 6, 7]


def test_divergence_is_recorded_and_stops_training(tmp_path, data):
    ds, part = data
    write_dataset(tmp_path / "toy", ds)
    write_partition(part, ds, tmp_path / "part")
    # an MLP in float32 with an absurd learning rate overflows to inf within a few rounds
    spec = _spec(local=_spec()["local"] | {"lr": 1e20}, rounds=20, dtype="float32",
                 model={"name": "mlp", "hidden": [8]})
    summary = run_cell(spec, tmp_path / "toy", tmp_path / "part" / "partition.parquet",
                       tmp_path / "m.parquet", tmp_path / "s.json", device="cpu", progress=False)
    table = pq.read_table(tmp_path / "m.parquet")
    check_metrics_table(table)
    status = table.column("status").to_pylist()
    assert summary["status"] == "diverged" and status[-1] == "diverged" and set(status[:-1]) <= {"ok"}
    assert len(status) < 20
    assert np.isnan(table.column("test_accuracy").to_pylist()[-1])
    assert json.loads((tmp_path / "s.json").read_text())["status"] == "diverged"


def test_run_cell_writes_schema_checked_metrics(tmp_path, data):
    ds, part = data
    write_dataset(tmp_path / "toy", ds)
    write_partition(part, ds, tmp_path / "part")
    spec = _spec()
    run_cell(spec, tmp_path / "toy", tmp_path / "part" / "partition.parquet",
             tmp_path / "out" / "metrics.parquet", tmp_path / "out" / "summary.json", device="cpu", progress=False)
    table = pq.read_table(tmp_path / "out" / "metrics.parquet")
    check_metrics_table(table)
    assert table.num_rows == 4
    assert set(table.column("hparams_id").to_pylist()) == {spec_id(spec)}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["metrics.parquet", "summary.json"]


def test_spec_id_ignores_identity_but_not_hparams():
    assert spec_id(_spec(seed=1)) == spec_id(_spec(seed=0))
    assert spec_id(_spec(hparams={"mu": 0.1})) != spec_id(_spec(hparams={"mu": 0.2}))


@pytest.mark.parametrize("engine", ["vectorized", "sequential"])
def test_character_ids_train_an_lstm(engine):
    # Shakespeare-style data: uint8 character ids, next-character labels, natural clients
    rng = np.random.default_rng(0)
    x = rng.integers(0, 80, size=(90, 12)).astype(np.uint8)
    y = (x[:, -1].astype(np.int64) + 1) % 80  # next char = last char + 1: learnable
    ds = Dataset("chars", x[:60], y[:60], x[60:], y[60:], num_classes=80,
                 client_train=np.repeat(np.arange(3), 20), client_test=np.repeat(np.arange(3), 10))
    part = make_partition(ds, {"scheme": "natural"}, seed=0)
    spec = _spec(model={"name": "lstm"}, rounds=3, local=_spec()["local"] | {"lr": 1.0},
                 sampling={"scheme": "uniform", "participation": 1.0})
    rows, info = train(spec, ds, part, device="cpu", engine=engine)
    assert info["status"] == "ok" and rows[-1]["train_loss"] < rows[0]["train_loss"]
    assert info["params"]["embedding.weight"].dtype.is_floating_point


# ---------------------------------------------------------------------------------------------
# Δ-convention entropy, algorithm metrics (boosted_pct), train accuracy, Δ histograms


def _hand_entropy(values):
    """Independent of fedbench.metrics: bins ⌊v / 0.01⌋, −Σ p log2 p."""
    _, counts = np.unique(np.floor(np.asarray(values, dtype=np.float64) / 0.01), return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


class _Recorder:
    """Wraps an engine's train_cells (what the round loop calls): records (θ^{t−1}, messages) of
    every round of every cell."""

    def __init__(self, monkeypatch, cls_name):
        import fedbench.engine.rounds.loop as loop

        self.rounds = []
        base = getattr(loop, cls_name)
        recorder = self

        class Recording(base):
            def train_cells(self, servers, sampled, hps, t, cells=None):
                results = super().train_cells(servers, sampled, hps, t, cells)
                for server, result in zip(servers, results):
                    recorder.rounds.append(({k: v.clone() for k, v in server["params"].items()},
                                            [{e: {n: v.clone() for n, v in tree.items()} for e, tree in m.items()}
                                             for m in result.messages]))
                return results

        monkeypatch.setattr(loop, cls_name, Recording)


@pytest.mark.parametrize("engine, cls_name", [("sequential", "SequentialClients"), ("vectorized", "VectorizedClients")])
def test_feddyn_delta_entropy_is_the_entropy_of_theta_minus_global(data, monkeypatch, engine, cls_name):
    ds, part = data
    rec = _Recorder(monkeypatch, cls_name)
    rows, _ = train(_spec("feddyn", hparams={"alpha": 0.01}, rounds=3), ds, part, device="cpu", engine=engine)
    h_theta = h_delta = 0.0
    assert len(rec.rounds) == len(rows) == 3  # the recorder saw every round
    for (theta_prev, messages), row in zip(rec.rounds, rows):
        assert all(set(m) == {"params"} for m in messages)  # FedDyn sends θ_k
        theta = np.concatenate([m["params"][n].numpy().ravel() for m in messages for n in sorted(m["params"])])
        delta = np.concatenate([(m["params"][n] - theta_prev[n]).numpy().ravel()
                                for m in messages for n in sorted(m["params"])])
        h_theta += _hand_entropy(theta)
        h_delta += _hand_entropy(delta)
        assert row["uplink_entropy_bits"] == pytest.approx(h_theta, rel=1e-12)
        assert row["uplink_entropy_bits_delta"] == pytest.approx(h_delta, rel=1e-12)
    assert rows[-1]["uplink_entropy_bits_delta"] < rows[-1]["uplink_entropy_bits"]  # Δ is more concentrated


def test_delta_entropy_equals_entropy_for_algorithms_that_send_updates(data):
    ds, part = data
    for algorithm, hp in (("fedavg", {}), ("scaffold", {"server_lr": 1.0})):
        rows, _ = train(_spec(algorithm, hparams=hp), ds, part, device="cpu")
        assert all(r["uplink_entropy_bits_delta"] == r["uplink_entropy_bits"] > 0 for r in rows)


def test_boosted_pct_column_and_train_accuracy(data):
    ds, part = data
    rows_avg, info_avg = train(_spec("fedavg", rounds=3), ds, part, device="cpu")
    assert all(r["boosted_pct"] is None for r in rows_avg)  # no such metric: null
    # train accuracy: θ^T on every training row of the partition
    import torch

    from fedbench.models import build_model

    apply = build_model({"name": "logreg"}, ds.feature_shape, ds.num_classes).apply
    pred = apply(info_avg["params"], torch.as_tensor(ds.x_train, dtype=torch.float64)).argmax(1).numpy()
    assert rows_avg[-1]["train_accuracy"] == pytest.approx(float((pred == ds.y_train).mean()), abs=1e-12)
    rows_ea, info = train(_spec("elastic_fedavg", hparams={"tau": 0.5, "rho": 0.9}, rounds=3), ds, part,
                          device="cpu")
    assert all(0.0 < r["boosted_pct"] < 100.0 for r in rows_ea)
    assert float(info["server_state"]["metrics"]["boosted_pct"]) == rows_ea[-1]["boosted_pct"]
    assert info["holdout_sizes"] == [3] * 8  # iid: 30 samples a client, ⌈0.1 · 30⌉ = 3 held out


def test_naive_elastic_aggregation_is_fedavg_through_the_engine(data):
    # sensitivity none: nothing held out (same n_k, same batches), ζ ≡ 1, boosted 0 %
    ds, part = data
    rows_avg, info_avg = train(_spec("fedavg"), ds, part, device="cpu")
    rows_ea, info_ea = train(_spec("elastic_fedavg", hparams={"sensitivity": "none"}), ds, part, device="cpu")
    assert info_ea["holdout_sizes"] == [0] * 8
    for a, b in zip(rows_avg, rows_ea):
        for k in ("train_loss", "test_loss", "test_accuracy", "uplink_floats", "uplink_entropy_bits"):
            assert a[k] == b[k], k
        assert b["boosted_pct"] == 0.0
    for n in info_avg["params"]:
        assert (info_avg["params"][n] == info_ea["params"][n]).all()


def test_unknown_algorithm_metric_is_an_error():
    from fedbench.engine.rounds.cell import algorithm_metrics

    assert algorithm_metrics({"params": {}}) == {"boosted_pct": None, "y_norm": None, "x_step_norm": None,
                                                 "y_step_norm": None, "tau_eff": None}
    with pytest.raises(KeyError, match="ALGORITHM_METRICS"):
        algorithm_metrics({"metrics": {"zeta_mean": 1.0}})


@pytest.mark.parametrize("algorithm, hparams, entries", [
    ("feddyn", {"alpha": 0.01}, {"delta"}),
    ("scaffold", {"server_lr": 1.0}, {"delta", "delta_c"}),
])
def test_delta_histogram_counts_every_transmitted_value(tmp_path, data, algorithm, hparams, entries):
    ds, part = data
    write_dataset(tmp_path / "toy", ds)
    write_partition(part, ds, tmp_path / "part")
    spec = _spec(algorithm, hparams=hparams, rounds=4, delta_histogram={"rounds": [1, 3]})
    out = tmp_path / "out"
    summary = run_cell(spec, tmp_path / "toy", tmp_path / "part" / "partition.parquet", out / "metrics.parquet",
                       out / "summary.json", device="cpu", progress=False)
    hist = pq.read_table(out / "delta_histogram.parquet").to_pylist()
    rows = pq.read_table(out / "metrics.parquet").to_pylist()
    assert summary["delta_histogram"] == str(out / "delta_histogram.parquet")
    assert {h["round"] for h in hist} == {0, 1, 3} and {h["entry"] for h in hist} == entries
    assert {(h["experiment"], h["algorithm"], h["seed"]) for h in hist} == {("t", algorithm, 0)}
    total = lambda rnd: sum(h["count"] for h in hist if h["round"] == rnd)  # noqa: E731
    per_round_floats = np.diff([0] + [r["uplink_floats"] for r in rows])
    assert total(1) == per_round_floats[0] and total(3) == per_round_floats[2]
    assert total(0) == rows[-1]["uplink_floats"]  # cumulative: every value sent in rounds 1..T
    assert all(h["count"] > 0 for h in hist)
    # the histogram of round 1 gives the Δ-convention entropy of round 1
    counts = np.array([h["count"] for h in hist if h["round"] == 1])
    bins = [(h["entry"], h["bin"]) for h in hist if h["round"] == 1]
    pooled = {}
    for (_, b), c in zip(bins, counts):
        pooled[b] = pooled.get(b, 0) + c
    p = np.array(list(pooled.values())) / counts.sum()
    assert rows[0]["uplink_entropy_bits_delta"] == pytest.approx(float(-(p * np.log2(p)).sum()), rel=1e-12)


def test_delta_histogram_zeros_are_the_exact_zeros_sent_in_both_engines(data):
    """Algorithm 2 (SCAFFOLD + ℓ1, Kim et al., arXiv 2022) sends sparse Δ: the histograms' zeros
    of a round are its sent values that are exactly 0 (= uplink floats − non-zeros: Algorithm 2
    sends in the Δ convention), all in bin 0, and the vectorized engine's histogram file is the
    sequential one's, zeros included."""
    ds, part = data
    hp = {"server_lr": 1.0, "lambda1": 1e-3, "lambda2": 0.0, "epsilon": 1e-3}
    spec = _spec("fedelasticnet_scaffold", hparams=hp, rounds=4, delta_histogram={"rounds": [1, 2, 3, 4]})
    ident = {k: spec[k] for k in ("experiment", "dataset", "partition", "algorithm", "seed")}
    tables = {}
    for engine in ("sequential", "vectorized"):
        rows, info = train(spec, ds, part, device="cpu", engine=engine)
        hist = info["delta_histogram"].to_table(ident).to_pylist()
        sent_zeros = np.diff([0] + [r["uplink_floats"] - r["uplink_nonzeros"] for r in rows])
        per_round = [sum(h["zeros"] for h in hist if h["round"] == t) for t in (1, 2, 3, 4)]
        assert per_round == sent_zeros.tolist() and sum(per_round) > 0
        assert sum(h["zeros"] for h in hist if h["round"] == 0) == sum(per_round)
        assert all(h["bin"] == 0 and 0 < h["zeros"] <= h["count"] for h in hist if h["zeros"])
        tables[engine] = info["delta_histogram"].to_table(ident)
    assert tables["vectorized"].equals(tables["sequential"])


def test_delta_histogram_path_without_the_spec_key_is_an_error(tmp_path, data):
    with pytest.raises(ValueError, match="delta_histogram"):
        run_cell(_spec(), tmp_path / "toy", tmp_path / "p", tmp_path / "m.parquet", tmp_path / "s.json",
                 delta_histogram_path=tmp_path / "h.parquet", progress=False)


# -- seed stacking (train_seeds): several seeds of one cell in lockstep --------------------------

def _seed_cells(ds, algorithm, seeds, **over):
    hparams = (HPARAMS | {"elastic_fedavgm": {"server_lr": 1.0, "momentum": 0.9}})[algorithm]
    specs = [_spec(algorithm, hparams=hparams, seed=s, **over) for s in seeds]
    # partitions are keyed by seed; Dirichlet ones give the seeds unequal client sizes
    parts = [make_partition(ds, {"scheme": "dirichlet", "alpha": 0.5, "num_clients": 8}, seed=s) for s in seeds]
    return specs, parts


def _close(a, b, rtol):
    return all(np.allclose(a[k], b[k], rtol=rtol, atol=0, equal_nan=True) if isinstance(a[k], float)
               else a[k] == b[k] for k in a if k != "wall_seconds")


# elastic_fedavgm: a held-out pass per client and a per-round server metric (boosted_pct)
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA GPU visible"))])
@pytest.mark.parametrize("algorithm", [*sorted(HPARAMS), "elastic_fedavgm"])
def test_stacked_seeds_equal_the_seeds_run_one_by_one(data, algorithm, device):
    from fedbench.engine.rounds.loop import train_seeds

    ds, _ = data
    specs, parts = _seed_cells(ds, algorithm, [0, 1, 2], rounds=5)
    stacked = train_seeds(specs, ds, parts, device=device, chunk_size=24)  # chunks mix the seeds' clients
    for spec, part, (rows, info) in zip(specs, parts, stacked):
        ref_rows, ref_info = train(spec, ds, part, device="cpu", chunk_size=24)  # the CPU run is the reference
        assert [r["seed"] for r in rows] == [spec["seed"]] * 5
        for k, v in ref_info["params"].items():
            rel = (info["params"][k].cpu() - v).norm() / v.norm()
            assert rel < 1e-10, (spec["seed"], k, float(rel))
        assert all(_close(r, q, 1e-9) for r, q in zip(rows, ref_rows))
        assert sorted(info["client_states"]) == sorted(ref_info["client_states"])
    again = train_seeds(specs, ds, parts, device=device, chunk_size=24)
    assert [_drop_time(r) for r, _ in again] == [_drop_time(r) for r, _ in stacked]  # bitwise


def test_stacked_seeds_with_the_sequential_engine_equal_the_reference(data):
    from fedbench.engine.rounds.loop import train_seeds

    ds, _ = data
    specs, parts = _seed_cells(ds, "scaffold", [4, 5], rounds=3)
    for spec, part, (rows, _) in zip(specs, parts, train_seeds(specs, ds, parts, device="cpu", engine="sequential")):
        assert _drop_time(rows) == _drop_time(train(spec, ds, part, device="cpu", engine="sequential")[0])


def test_a_diverged_seed_stops_and_the_others_go_on(data):
    from fedbench.engine.rounds.loop import train_seeds

    ds, _ = data
    # float32 MLP with an absurd learning rate: the six seeds overflow at rounds 8 to 10, so the
    # stacked run goes on with fewer cells after each divergence; each must match its lone run.
    # (collapse: false: the collapse rule would stop them all earlier, at the same round, on their
    # way to inf; this test is about cells stopping at different rounds.)
    over = dict(local=_spec()["local"] | {"lr": 30.0}, rounds=12, dtype="float32", model={"name": "mlp", "hidden": [8]},
                collapse=False)
    specs, parts = _seed_cells(ds, "fedavg", range(6), **over)
    stacked = train_seeds(specs, ds, parts, device="cpu")
    lone = [train(s, ds, p, device="cpu") for s, p in zip(specs, parts)]
    assert len({len(rows) for rows, _ in stacked}) > 1  # the seeds stopped at different rounds
    for (rows, info), (ref_rows, ref_info) in zip(stacked, lone):
        assert info["status"] == ref_info["status"] == "diverged"
        assert [r["status"] for r in rows] == [r["status"] for r in ref_rows]
        assert rows[-1]["status"] == "diverged" and np.isnan(rows[-1]["test_accuracy"])
        assert all(_close(r, q, 1e-4) for r, q in zip(rows[:-3], ref_rows[:-3]))


def test_stacking_refuses_cells_that_differ_in_more_than_the_seed(data):
    from fedbench.engine.rounds.loop import train_seeds

    ds, _ = data
    specs, parts = _seed_cells(ds, "fedavg", [0, 1])
    with pytest.raises(ValueError, match="differ in rounds"):
        train_seeds([specs[0], specs[1] | {"rounds": 9}], ds, parts, device="cpu")
    with pytest.raises(ValueError, match="differ in algorithm_name"):
        train_seeds([specs[0], specs[1] | {"algorithm_name": "fedprox"}], ds, parts, device="cpu")
    with pytest.raises(ValueError, match="cell repeated"):
        train_seeds([specs[0], specs[0]], ds, parts, device="cpu")
    with pytest.raises(ValueError, match="one of each per cell"):
        train_seeds(specs, ds, parts[:1], device="cpu")


# -- eval_initial: the initial model's row (round 0) ------------------------------------------------

def _without(rows, *keys):
    return [{k: v for k, v in r.items() if k not in keys} for r in rows]


@pytest.mark.parametrize("engine", ["vectorized", "sequential"])
@pytest.mark.parametrize("algorithm", ["fedavg", "scaffold", "elastic_fedavgm"])
def test_eval_initial_adds_round_0_and_changes_no_later_row(data, engine, algorithm):
    from fedbench.engine.rounds.evaluate import evaluate
    from fedbench.models import build_model
    from fedbench.rng import generator

    ds, part = data
    hparams = (HPARAMS | {"elastic_fedavgm": {"server_lr": 1.0, "momentum": 0.9}})[algorithm]
    spec = _spec(algorithm, hparams=hparams, rounds=4, eval_every=2)
    rows, info = train(spec, ds, part, device="cpu", engine=engine)
    rows0, info0 = train(spec | {"eval_initial": True}, ds, part, device="cpu", engine=engine)
    assert [r["round"] for r in rows0] == [0, 2, 4] and info0["rounds_completed"] == info["rounds_completed"] == 4
    # every later row is bitwise that of the cell without the key (the key is in the spec: hparams_id differs)
    assert _without(rows0[1:], "wall_seconds", "hparams_id") == _without(rows, "wall_seconds", "hparams_id")
    assert rows0[0]["hparams_id"] == spec_id(spec | {"eval_initial": True}) != spec_id(spec)
    assert all(torch.equal(info0["params"][k], v) for k, v in info["params"].items())
    # round 0: θ⁰ (the keyed initial model) evaluated as any evaluation; nothing sent, nobody sampled
    model = build_model(spec["model"], ds.feature_shape, ds.num_classes)
    theta0 = model.init(generator(0, 0, -1, "init"), dtype=torch.float64)
    x = torch.as_tensor(np.array(ds.x_train), dtype=torch.float64)  # the iid partition uses every row
    order = np.sort(np.concatenate([np.asarray(ix) for ix in _all_train_rows(part)]))
    train_loss, train_acc = evaluate(model.apply, theta0, x[order], torch.as_tensor(ds.y_train[order]))
    test_loss, test_acc = evaluate(model.apply, theta0, torch.as_tensor(np.array(ds.x_test), dtype=torch.float64),
                                   torch.as_tensor(ds.y_test))
    r0 = rows0[0]
    assert (r0["train_loss"], r0["train_accuracy"], r0["test_loss"], r0["test_accuracy"]) == (
        train_loss, train_acc, test_loss, test_acc)
    assert r0["train_loss"] > rows0[-1]["train_loss"]
    assert [r0[k] for k in ("clients_sampled", "uplink_floats", "uplink_nonzeros", "uplink_entropy_bits",
                            "uplink_entropy_bits_delta", "downlink_floats")] == [0] * 6
    assert r0["status"] == "ok"
    # algorithm metrics as server_init leaves them: Elastic Aggregation's boosted_pct starts at 0
    assert r0["boosted_pct"] == (0.0 if algorithm == "elastic_fedavgm" else None)


def _all_train_rows(part):
    from fedbench.data.partition import client_indices
    return client_indices(part, "train")


def test_eval_initial_stacked_seeds_each_write_their_own_round_0(data):
    from fedbench.engine.rounds.loop import train_seeds

    ds, _ = data
    specs, parts = _seed_cells(ds, "fedavg", [0, 1, 2], rounds=3, eval_initial=True)
    stacked = train_seeds(specs, ds, parts, device="cpu", chunk_size=24)
    firsts = set()
    for spec, part, (rows, _) in zip(specs, parts, stacked):
        ref_rows, _ = train(spec, ds, part, device="cpu", chunk_size=24)
        assert [r["round"] for r in rows] == [0, 1, 2, 3] and [r["seed"] for r in rows] == [spec["seed"]] * 4
        assert _drop_time(rows[:1]) == _drop_time(ref_rows[:1])  # θ⁰ of its own seed: bitwise
        assert all(_close(r, q, 1e-9) for r, q in zip(rows, ref_rows))
        firsts.add(rows[0]["test_loss"])
    assert len(firsts) == 3  # three seeds, three initial models


def test_eval_initial_run_cell_writes_the_row_and_the_summary_counts_it(tmp_path, data):
    ds, part = data
    write_dataset(tmp_path / "toy", ds)
    write_partition(part, ds, tmp_path / "part")
    spec = _spec(rounds=2, eval_initial=True)
    summary = run_cell(spec, tmp_path / "toy", tmp_path / "part" / "partition.parquet", tmp_path / "m.parquet",
                       tmp_path / "s.json", device="cpu", progress=False)
    table = pq.read_table(tmp_path / "m.parquet")
    check_metrics_table(table)
    assert table.column("round").to_pylist() == [0, 1, 2]
    assert summary["rounds_completed"] == 2 and summary["spec"]["eval_initial"] is True
    assert summary["best_test_accuracy"] == max(table.column("test_accuracy").to_pylist())


def test_collapse_rule_ignores_the_round_0_row():
    from fedbench.engine.rounds.cell import COLLAPSE_DEFAULTS, collapse_reason

    def row(t, loss, acc):
        return {"round": t, "train_loss": loss, "test_accuracy": acc}

    rule = dict(COLLAPSE_DEFAULTS, loss_patience=3, chance_after=0, chance_patience=3)
    big = 1000.0  # above 100 · ln 10
    # loss streak: rounds 1 and 2 only; a huge θ⁰ loss must not make it 3
    rows = [row(1, big, 0.5), row(2, big, 0.5)]
    assert collapse_reason([row(0, big, 0.5), *rows], 10, rule, final=False) is None
    assert collapse_reason(rows + [row(3, big, 0.5)], 10, rule, final=False) == collapse_reason(
        [row(0, big, 0.5), *rows, row(3, big, 0.5)], 10, rule, final=False) is not None
    # chance streak: with chance_after 0, θ⁰'s chance accuracy is not an evaluation "after round 0" anyway
    rows = [row(1, 1.0, 0.1), row(2, 1.0, 0.1)]
    assert collapse_reason([row(0, 1.0, 0.1), *rows], 10, rule, final=False) is None
    # a lone round-0 row never collapses, final or not
    assert collapse_reason([row(0, big, 0.1)], 10, rule, final=True) is None


def test_round_hparams_step_schedule_divides_the_lr_after_each_milestone():
    """Sharma, Panda & Joshi (TMLR 2023), Table 3: η = 0.02 in rounds 1–100, 2e-3 in 101–200,
    2e-4 after; on top of lr_decay; without a schedule lr · lr_decay^(t−1) as before."""
    from fedbench.engine.spec import CellSpec

    def round_hparams(spec, t):
        return CellSpec.of(spec).round_hparams(t)

    spec = _spec()
    spec["local"] = spec["local"] | {"lr": 0.02, "lr_schedule": {"milestones": [100, 200], "factor": 0.1}}
    lrs = {t: round_hparams(spec, t)["lr"] for t in (1, 99, 100, 101, 200, 201, 500)}
    want = {1: 0.02, 99: 0.02, 100: 0.02, 101: 2e-3, 200: 2e-3, 201: 2e-4, 500: 2e-4}
    assert lrs == pytest.approx(want, rel=1e-15)
    decayed = spec | {"local": spec["local"] | {"lr_decay": 0.99}}
    for t in (99, 100, 101, 200, 201):
        assert round_hparams(decayed, t)["lr"] == pytest.approx(lrs[t] * 0.99 ** (t - 1), rel=1e-15)
    plain = _spec()
    plain["local"] = plain["local"] | {"lr_decay": 0.5}
    assert [round_hparams(plain, t)["lr"] for t in (1, 2, 3)] == [0.1, 0.05, 0.025]
