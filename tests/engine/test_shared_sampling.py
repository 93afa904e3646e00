"""FedAc's stochastic oracle through the engines: the ``shared`` partition (every client holds the
whole training set) with ``local.replacement`` (each step's rows i.i.d. uniform, with replacement).

Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §4: M homogeneous
workers, each gradient query drawn uniformly with replacement from the whole training set, full
participation. The sequential reference and the vectorized engine agree to 1e-10 (float64), and
the vectorized engine keeps one row array for all clients (no [M, n] table).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms import fedavg, get_algorithm
from fedbench.data.partition import make_partition
from fedbench.data.store import Dataset
from fedbench.engine.clients.batches import local_batches
from fedbench.engine.clients.vectorized import VectorizedClients


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4)).astype(np.float32)
    y = (x @ rng.normal(size=(4, 2))).argmax(1)
    ds = Dataset("toy", x[:50], y[:50], x[50:], y[50:], num_classes=2)
    return ds, make_partition(ds, {"scheme": "shared", "num_clients": 6}, seed=0)


def _spec(algorithm: str, batch_size: int) -> dict:
    return {
        "experiment": "t", "dataset": "toy", "partition": "shared", "algorithm": algorithm, "seed": 3,
        "algorithm_name": algorithm, "hparams": dict(get_algorithm(algorithm).HPARAMS),
        "model": {"name": "logreg"},
        "local": {"epochs": None, "steps": 4, "batch_size": batch_size, "lr": 0.3, "lr_decay": 1.0,
                  "weight_decay": 0.01, "clip_norm": None, "replacement": True},
        "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": 3, "eval_every": 1,
        "target_accuracy": 0.8, "dtype": "float64",
    }


@pytest.mark.parametrize("algorithm", ["fedavg", "fedac"])
@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize("compiled", [False, True])  # per-client draws and generic steps, or the compiled paths
def test_engines_agree_on_shared_with_replacement(toy, algorithm, batch_size, compiled, monkeypatch):
    from fedbench.engine.rounds.loop import train

    if compiled:
        monkeypatch.setattr(VectorizedClients, "compiled_min_seconds", 0)
    ds, part = toy
    engines = []
    stacked = VectorizedClients.stacked.__func__

    def spy(cls, *args, **kwargs):
        engines.append(stacked(cls, *args, **kwargs))
        return engines[-1]

    monkeypatch.setattr(VectorizedClients, "stacked", classmethod(spy))
    spec = _spec(algorithm, batch_size)
    rows_s, info_s = train(spec, ds, part, device="cpu", engine="sequential")
    rows_v, info_v = train(spec, ds, part, device="cpu", engine="vectorized", chunk_size=4)
    for k, v in info_s["params"].items():
        assert float((v - info_v["params"][k]).abs().max()) <= 1e-10 * float(v.abs().max())
    for a, b in zip(rows_s, rows_v):
        assert abs(a["train_loss"] - b["train_loss"]) <= 1e-10 * abs(a["train_loss"])
    assert [r["clients_sampled"] for r in rows_s] == [6, 6, 6]  # full participation
    without = {**spec, "local": {**spec["local"], "replacement": False}}
    _, info_w = train(without, ds, part, device="cpu", engine="sequential")
    assert any(float((v - info_w["params"][k]).abs().max()) > 1e-6 for k, v in info_s["params"].items())
    (eng,) = engines
    assert eng._row_table is not None and eng._row_table.shape == (1, 50)  # one row array, not [M, n]
    assert all(c is eng.clients[0] for c in eng.clients)


def test_vectorized_rows_are_the_iid_draws_over_the_whole_training_set():
    """At a9a's scale (M = 8,192 workers, n = 32,561 rows, B = 1): the rows each client's steps
    gather are ``rows[local_batches(..., replacement=True)]``, from a [1, n] table."""
    n, m, k = 32_561, 8192, 2
    x = torch.zeros((n, 1), dtype=torch.float64)
    y = torch.zeros(n, dtype=torch.int64)
    rows = np.arange(n, dtype=np.int64)
    local = {"epochs": None, "steps": k, "batch_size": 1, "lr": 0.1, "replacement": True}
    eng = VectorizedClients(fedavg, None, None, x, y, [rows] * m, local, seed=5, chunk_size=m)
    members = list(range(m))
    batches = {j: eng._client_batches(1, j) for j in members}
    idx, _, mask, ks, _ = eng._group_tensors(members, batches)
    assert eng._row_table.shape == (1, n) and idx.shape == (k, m, 1) and mask.all() and (ks == k).all()
    for j in (0, 1, m - 1):
        np.testing.assert_array_equal(idx[:, j, :].numpy(), local_batches(5, 1, j, n, 1, steps=k, replacement=True))
    counts = np.bincount(idx.numpy().ravel() * 10 // n, minlength=10)  # 16,384 draws over 10 bins
    assert np.all(np.abs(counts - idx.numel() / 10) < 6 * np.sqrt(idx.numel() * 0.09)), counts


# ---------------------------------------------------------------------------------------------
# the workflow: a dry run plans the jobs; an epochs + replacement config fails before any job

FEDAC_TINY = {
    "datasets": {"digits": {"source": "digits"}},
    "device": "cpu",
    "experiments": {
        "oracle": {
            "seeds": [0],
            "rounds": 2,
            "target_accuracy": 0.5,
            "local": {"steps": 2, "batch_size": 1, "lr": 0.1, "weight_decay": 0.01, "replacement": True},
            "datasets": {"digits": {"model": {"name": "logreg"},
                                    "partitions": {"all": {"scheme": "shared", "num_clients": 8192}}}},
            "algorithms": {"fedavg": {}, "fedac": {}},
        }
    },
}


def _snakemake(workdir, config: dict, *args: str):
    import os
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    snakefile = Path(__file__).resolve().parents[2] / "Snakefile"
    cfg = workdir / "config.yaml"
    cfg.write_text(yaml.safe_dump(config, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env["MPLBACKEND"] = "Agg"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", str(workdir),
           "--configfile", str(cfg), "--cores", "1", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=300)


def test_snakemake_dry_run_of_the_fedac_oracle(tmp_path):
    import re

    proc = _snakemake(tmp_path, FEDAC_TINY, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    trains = re.findall(r"rule train:\n(?:\s+.*\n)*?\s+wildcards: (.*)", out)
    assert len(trains) == 2 and all("partition=all" in w for w in trains), trains
    assert "rule partition:" in out and not (tmp_path / "results").exists()

    bad = {**FEDAC_TINY, "experiments": {"oracle": {**FEDAC_TINY["experiments"]["oracle"],
                                                    "local": {"epochs": 1, "batch_size": 1, "lr": 0.1,
                                                              "replacement": True}}}}
    proc = _snakemake(tmp_path, bad, "-n")
    assert proc.returncode != 0
    assert "experiments.oracle.local.replacement: minibatches drawn with replacement need local.steps" in (
        proc.stdout + proc.stderr)
