"""Checkpoint and resume: a cell killed mid-run and rerun gives bitwise the uninterrupted metrics."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from fedbench.data.partition import make_partition, write_partition
from fedbench.data.store import Dataset, write_dataset
from fedbench.engine.rounds.cell import spec_id
from fedbench.engine.rounds.checkpoint import load_checkpoint
from fedbench.engine.rounds.loop import run_cell, train


def _dataset(n=400, d=8, c=4, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(d, c))
    x = rng.normal(size=(n + 100, d)).astype(np.float32)
    y = (x @ w).argmax(1)
    return Dataset("toy", x[:n], y[:n], x[n:], y[n:], num_classes=c)


def _spec(algorithm, hparams, rounds=12):
    return {
        "experiment": "t", "dataset": "toy", "partition": "dir", "algorithm": algorithm, "seed": 3,
        "algorithm_name": algorithm, "hparams": hparams, "model": {"name": "mlp", "hidden": [16]},
        "local": {"epochs": 1, "steps": None, "batch_size": 8, "lr": 0.05, "lr_decay": 0.99,
                  "weight_decay": 0.0, "clip_norm": None},
        "sampling": {"scheme": "uniform", "participation": 0.5},
        "rounds": rounds, "eval_every": 1, "dtype": "float32",
    }


def _no_time(table):
    return table.drop(["wall_seconds"])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    ds = _dataset()
    write_dataset(root / "toy", ds)
    write_partition(make_partition(ds, {"scheme": "dirichlet", "alpha": 0.5, "num_clients": 10}, seed=3),
                    ds, root / "part")
    return root


class Killed(Exception):
    pass


def _killed_in_round_8(monkeypatch, spec, ds, part, **train_kwargs):
    """Run ``train`` until its 16th evaluation (2 per round: inside round 8), then raise Killed."""
    import fedbench.engine.rounds.cell as cell  # where the round's evaluation is called

    real_evaluate, calls = cell.evaluate, []

    def dying_evaluate(*args, **kwargs):
        calls.append(1)
        if len(calls) > 15:
            raise Killed
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(cell, "evaluate", dying_evaluate)
    with pytest.raises(Killed):
        train(spec, ds, part, device="cpu", **train_kwargs)
    monkeypatch.setattr(cell, "evaluate", real_evaluate)


# SCAFFOLD and FedDyn carry persistent client state; FedAvgM carries server momentum; Elastic
# FedAvgM adds the held-out split, its per-round metric (boosted_pct) and, here, Δ histograms;
# Fed-Norm-SGDA+ the second player, the snapshot x̂ and its refresh counter.
@pytest.mark.parametrize("algorithm, hparams", [("scaffold", {"server_lr": 1.0}), ("feddyn", {"alpha": 0.01}),
                                                ("fedavgm", {"server_lr": 1.0, "momentum": 0.9}),
                                                ("elastic_fedavgm", {"server_lr": 1.0, "momentum": 0.9}),
                                                ("fed_norm_sgda_plus", {"projection": "ball", "snapshot_period": 3,
                                                                        "momentum": 0.5})])
@pytest.mark.parametrize("engine", ["vectorized", "sequential"])
def test_resume_in_process_is_bitwise_identical(files, tmp_path, monkeypatch, algorithm, hparams, engine):
    from fedbench.data.partition import read_partition
    from fedbench.data.store import load_dataset

    ds, part = load_dataset(files / "toy"), read_partition(files / "part" / "partition.parquet")
    spec = _spec(algorithm, hparams)
    if algorithm == "fed_norm_sgda_plus":  # two players; the snapshot (refreshed at rounds 3, 6, ...) and
        # its round counter straddle the round-5 checkpoint; drawn local work
        spec["model"] = {"name": "mlp", "hidden": [16], "minimax": {"problem": "robust"}}
        spec["local"] = spec["local"] | {"epochs": {"distribution": "uniform", "low": 1, "high": 3, "per": "round"}}
    if algorithm in ("feddyn", "elastic_fedavgm"):
        spec["delta_histogram"] = {"rounds": [2, 7, 12]}
    full, info_full = train(spec, ds, part, device="cpu", engine=engine)

    # interrupt the run inside round 8's evaluation (2 evaluations per round): last checkpoint is round 5
    ckpt = tmp_path / "checkpoint.pt"
    _killed_in_round_8(monkeypatch, spec, ds, part, engine=engine, checkpoint_path=ckpt, checkpoint_every=5)
    assert load_checkpoint(ckpt, spec_id(spec))["round"] == 5
    # a checkpoint of another spec is never taken
    assert load_checkpoint(ckpt, spec_id(spec | {"rounds": 13})) is None

    resumed, info = train(spec, ds, part, device="cpu", engine=engine, checkpoint_path=ckpt, checkpoint_every=5)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows]  # noqa: E731
    assert len(resumed) == 12
    assert strip(resumed) == strip(full)
    if "delta_histogram" in spec:  # rounds 2 and 7 straddle the checkpoint: restored, not recounted
        ident = {"experiment": "t", "dataset": "toy", "partition": "dir", "algorithm": algorithm, "seed": 3}
        assert info["delta_histogram"].to_table(ident).equals(info_full["delta_histogram"].to_table(ident))
        assert sorted(set(info["delta_histogram"].to_table(ident).column("round").to_pylist())) == [0, 2, 7, 12]
    if algorithm == "elastic_fedavgm":
        assert all(0 < r["boosted_pct"] < 100 for r in resumed)


def test_checkpoint_whose_histograms_lack_the_zero_counts_is_ignored(files, tmp_path, monkeypatch, capsys):
    """A Δ-histogram state of (bins, counts) pairs cannot say how many values were exactly 0: the
    cell does not resume from it but trains from round 1, to the uninterrupted run's histograms."""
    import torch

    from fedbench.data.partition import read_partition
    from fedbench.data.store import load_dataset
    from fedbench.engine.rounds.checkpoint import save_checkpoint

    ds, part = load_dataset(files / "toy"), read_partition(files / "part" / "partition.parquet")
    spec = _spec("feddyn", {"alpha": 0.01}) | {"delta_histogram": {"rounds": [2, 12]}}
    full, info_full = train(spec, ds, part, device="cpu", engine="sequential")
    ckpt = tmp_path / "checkpoint.pt"
    _killed_in_round_8(monkeypatch, spec, ds, part, engine="sequential", checkpoint_path=ckpt, checkpoint_every=5)
    state = torch.load(ckpt, weights_only=False)
    hist = state["delta_histogram"]
    assert all(len(h) == 3 for h in [*hist["per_round"].values(), *hist["cumulative"].values()])
    hist["per_round"] = {k: h[:2] for k, h in hist["per_round"].items()}
    hist["cumulative"] = {k: h[:2] for k, h in hist["cumulative"].items()}
    save_checkpoint(ckpt, state)
    capsys.readouterr()
    resumed, info = train(spec, ds, part, device="cpu", engine="sequential", checkpoint_path=ckpt,
                          checkpoint_every=5)
    err = capsys.readouterr().err
    assert f"ignoring checkpoint {ckpt}" in err and "exact-zero counts" in err and "resuming" not in err
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows]  # noqa: E731
    assert strip(resumed) == strip(full)
    ident = {"experiment": "t", "dataset": "toy", "partition": "dir", "algorithm": "feddyn", "seed": 3}
    assert info["delta_histogram"].to_table(ident).equals(info_full["delta_histogram"].to_table(ident))


def test_checkpoint_of_an_older_format_is_ignored(tmp_path):
    import torch

    from fedbench.engine.rounds.checkpoint import save_checkpoint

    ckpt = tmp_path / "checkpoint.pt"
    save_checkpoint(ckpt, {"hparams_id": "abc", "round": 3, "counters": (1, 2, 3, 4.0)})  # format 1: no "format"
    assert load_checkpoint(ckpt, "abc") is None
    save_checkpoint(ckpt, {"format": 2, "hparams_id": "abc", "round": 3, "x": torch.zeros(1)})
    assert load_checkpoint(ckpt, "abc")["round"] == 3


def _damaged_checkpoint(path, how):
    import torch

    from fedbench.engine.rounds.checkpoint import save_checkpoint

    values = torch.arange(1000, dtype=torch.float32)
    save_checkpoint(path, {"format": 2, "hparams_id": "abc", "round": 3, "x": values})
    raw = bytearray(path.read_bytes())
    if how == "truncate":
        raw = raw[: len(raw) // 2]
    else:  # one byte inside the tensor's data: torch.load alone would load it without a word
        raw[raw.find(values.numpy()[500:502].tobytes())] ^= 0x10
    path.write_bytes(bytes(raw))
    return bytes(raw)


@pytest.mark.parametrize("how,reason", [("truncate", "does not end with a zip directory"),
                                        ("flip", r"fails the CRC check of its member .*data/0")])
def test_a_damaged_checkpoint_warns_is_set_aside_and_gives_a_fresh_start(tmp_path, how, reason):
    ckpt = tmp_path / "checkpoint.pt"
    raw = _damaged_checkpoint(ckpt, how)
    with pytest.warns(RuntimeWarning, match=rf"checkpoint {ckpt} {reason}.*set aside as checkpoint.pt.damaged; "
                                            r"the cell trains from its first round"):
        assert load_checkpoint(ckpt, "abc") is None
    assert not ckpt.exists() and (tmp_path / "checkpoint.pt.damaged").read_bytes() == raw


def test_a_cell_with_a_damaged_checkpoint_trains_from_its_start(files, tmp_path):
    from fedbench.data.partition import read_partition
    from fedbench.data.store import load_dataset

    ds, part = load_dataset(files / "toy"), read_partition(files / "part")
    spec = _spec("fedavg", {}, rounds=3)
    fresh, _ = train(spec, ds, part, device="cpu")
    ckpt = tmp_path / "checkpoint.pt"
    _damaged_checkpoint(ckpt, "truncate")
    with pytest.warns(RuntimeWarning, match="does not end with a zip directory"):
        again, _ = train(spec, ds, part, device="cpu", checkpoint_path=ckpt)
    assert [r["round"] for r in again] == [1, 2, 3]
    assert _no_time(pq_table(again)).equals(_no_time(pq_table(fresh)))


def pq_table(rows):
    from fedbench.engine.rounds.output import rows_to_table

    return rows_to_table(rows)


RUNNER = """
import sys
import time
from pathlib import Path
from fedbench.engine.rounds.loop import run_cell
spec = eval(sys.argv[1])
if len(sys.argv) > 6:  # the run to kill: it stops for good inside round STOP (2 evaluations a round)
    import fedbench.engine.rounds.cell as cell
    stop, marker, real, calls = int(sys.argv[6]), Path(sys.argv[7]), cell.evaluate, []
    def evaluate(*args, **kwargs):
        calls.append(1)
        if len(calls) > 2 * (stop - 1):
            marker.touch()
            time.sleep(3600)
        return real(*args, **kwargs)
    cell.evaluate = evaluate
run_cell(spec, sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], device="cpu", num_threads=1,
         progress=False, checkpoint_every=2)
"""


def _run(args, files, out, *stop):
    return [sys.executable, "-c", RUNNER, repr(args), str(files / "toy"), str(files / "part" / "partition.parquet"),
            str(out / "metrics.parquet"), str(out / "summary.json"), *map(str, stop)]


def test_sigkill_mid_run_then_rerun_gives_the_uninterrupted_metrics(files, tmp_path):
    """A cell process SIGKILLed in the middle of round 7 (its checkpoint, every 2 rounds, at round 6;
    round 7's work lost), then rerun: it resumes from round 6 and writes bitwise the metrics of an
    uninterrupted run; no partial metrics or summary before, no checkpoint after. The process stops
    itself inside round 7 (RUNNER) so that the kill always lands mid-run, however loaded the machine."""
    spec = _spec("scaffold", {"server_lr": 1.0}, rounds=12)
    ref_dir, out = tmp_path / "ref", tmp_path / "killed"
    threads = torch.get_num_threads()
    try:  # the uninterrupted run: RUNNER's run_cell, in this process (one process start fewer)
        run_cell(spec, files / "toy", files / "part" / "partition.parquet", ref_dir / "metrics.parquet",
                 ref_dir / "summary.json", device="cpu", num_threads=1, progress=False, checkpoint_every=2)
    finally:
        torch.set_num_threads(threads)
    reference = pq.read_table(ref_dir / "metrics.parquet")
    assert not (ref_dir / "checkpoint.pt").exists()  # removed once the cell finished

    marker = tmp_path / "in_round_7"
    proc = subprocess.Popen(_run(spec, files, out, 7, marker))
    ckpt = out / "checkpoint.pt"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not marker.exists():
        time.sleep(0.05)
    running = proc.poll() is None
    if running:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert running and marker.exists(), "the run did not stop inside round 7"
    assert load_checkpoint(ckpt, spec_id(spec))["round"] == 6
    assert not (out / "metrics.parquet").exists()  # no partial metrics ever appear as an output
    assert not (out / "summary.json").exists()

    subprocess.run(_run(spec, files, out), check=True)
    resumed = pq.read_table(out / "metrics.parquet")
    assert _no_time(resumed).equals(_no_time(reference))
    assert not ckpt.exists()


def test_run_cell_without_checkpointing_writes_none(files, tmp_path):
    run_cell(_spec("fedavg", {}, rounds=3), files / "toy", files / "part" / "partition.parquet",
             tmp_path / "metrics.parquet", tmp_path / "summary.json", device="cpu", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.parquet", "summary.json"]


def test_stacked_seeds_resume_each_from_its_own_checkpoint(files, tmp_path, monkeypatch):
    # Seed 3 was killed after its round-5 checkpoint; seed 4 never started. Stacked, seed 3
    # resumes at round 6 and seed 4 starts at round 1 (alone until round 6); each ends with the
    # metrics of its uninterrupted lone run (float64: to rounding, the chunks differ).
    from fedbench.data.partition import make_partition, read_partition
    from fedbench.data.store import load_dataset
    from fedbench.engine.rounds.loop import train_seeds

    ds, part3 = load_dataset(files / "toy"), read_partition(files / "part" / "partition.parquet")
    part4 = make_partition(ds, {"scheme": "dirichlet", "alpha": 0.5, "num_clients": 10}, seed=4)
    spec3 = _spec("scaffold", {"server_lr": 1.0}) | {"dtype": "float64"}
    spec4 = spec3 | {"seed": 4}
    ckpt3 = tmp_path / "seed3.pt"
    _killed_in_round_8(monkeypatch, spec3, ds, part3, checkpoint_path=ckpt3, checkpoint_every=5)

    stacked = train_seeds([spec3, spec4], ds, [part3, part4], device="cpu",
                          checkpoint_paths=[ckpt3, tmp_path / "seed4.pt"], checkpoint_every=5)
    assert load_checkpoint(tmp_path / "seed4.pt", spec_id(spec4))["round"] == 10
    for spec, part, (rows, info) in zip([spec3, spec4], [part3, part4], stacked):
        ref, ref_info = train(spec, ds, part, device="cpu")
        assert [r["round"] for r in rows] == list(range(1, 13))
        for r, q in zip(rows, ref):
            for k, v in q.items():
                if k != "wall_seconds":
                    assert r[k] == (pytest.approx(v, rel=1e-9) if isinstance(v, float) else v), (spec["seed"], k)
        for k, v in ref_info["params"].items():
            assert float((info["params"][k] - v).norm() / v.norm()) < 1e-10


@pytest.mark.parametrize("engine", ["vectorized", "sequential"])
def test_eval_initial_row_is_neither_duplicated_nor_lost_on_resume(files, tmp_path, monkeypatch, engine):
    # 3 rounds, a checkpoint after every round: the file left holds round 2 (none after the last
    # round). Resuming from it must not evaluate θ⁰ again, nor drop its row; and a run killed
    # before its first checkpoint (inside round 1's evaluation) starts afresh with one round-0 row.
    import fedbench.engine.rounds.cell as cell
    from fedbench.data.partition import read_partition
    from fedbench.data.store import load_dataset

    ds, part = load_dataset(files / "toy"), read_partition(files / "part" / "partition.parquet")
    spec = _spec("scaffold", {"server_lr": 1.0}, rounds=3) | {"eval_initial": True}
    ckpt = tmp_path / "checkpoint.pt"
    full, _ = train(spec, ds, part, device="cpu", engine=engine, checkpoint_path=ckpt, checkpoint_every=1)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "wall_seconds"} for r in rows]  # noqa: E731
    assert [r["round"] for r in full] == [0, 1, 2, 3]
    saved = load_checkpoint(ckpt, spec_id(spec))
    assert saved["round"] == 2 and [r["round"] for r in saved["rows"]] == [0, 1, 2]

    real_evaluate, calls = cell.evaluate, []

    def counting(*args, **kwargs):
        calls.append(1)
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(cell, "evaluate", counting)
    resumed, _ = train(spec, ds, part, device="cpu", engine=engine, checkpoint_path=ckpt, checkpoint_every=1)
    assert len(calls) == 2  # round 3 only (train and test split): θ⁰ is not evaluated again
    assert strip(resumed) == strip(full)

    def dying(*args, **kwargs):  # dies at evaluation call limit + 1 (θ⁰: calls 1-2, round t: 2t+1, 2t+2)
        calls.append(1)
        if len(calls) > limit:
            raise RuntimeError("killed")
        return real_evaluate(*args, **kwargs)

    # killed in round 1's evaluation (no checkpoint yet), then in round 2's (the round-1 checkpoint)
    for limit, left in ((2, None), (4, [0, 1])):
        calls.clear()
        path = tmp_path / f"killed{limit}.pt"
        monkeypatch.setattr(cell, "evaluate", dying)
        with pytest.raises(RuntimeError, match="killed"):
            train(spec, ds, part, device="cpu", engine=engine, checkpoint_path=path, checkpoint_every=1)
        monkeypatch.setattr(cell, "evaluate", real_evaluate)
        rows_left = [r["round"] for r in load_checkpoint(path, spec_id(spec))["rows"]] if path.exists() else None
        assert rows_left == left
        again, _ = train(spec, ds, part, device="cpu", engine=engine, checkpoint_path=path, checkpoint_every=1)
        assert strip(again) == strip(full)
