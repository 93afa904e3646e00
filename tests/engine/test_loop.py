import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from fedbench.data.partition import make_partition, write_partition
from fedbench.data.store import Dataset, write_dataset
from fedbench.engine.loop import run_cell, spec_id, train
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
