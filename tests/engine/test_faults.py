"""Faults: collapsed training recorded as diverged, stale temporaries removed on (re)start, one
process per cell, and a training job that ends with the workflow that started it."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_loop import _dataset, _spec

from fedbench.data.partition import make_partition, write_partition
from fedbench.data.store import Dataset, write_dataset
from fedbench.engine.rounds.cell import COLLAPSE_DEFAULTS, collapse_reason, collapse_rule
from fedbench.engine.rounds.lifetime import CellBusyError, CellLock
from fedbench.engine.rounds.loop import run_cell
from fedbench.files import remove_stale_temporaries, temporary_sibling
from fedbench.metrics.schema import check_metrics_table

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _rows(losses, accs, start=1):
    return [{"round": start + i, "train_loss": loss, "test_accuracy": acc}
            for i, (loss, acc) in enumerate(zip(losses, accs))]


def test_collapse_rule_loss_part():
    rule = collapse_rule({})
    assert rule == COLLAPSE_DEFAULTS
    bound = 100 * np.log(10)  # 230.3
    assert collapse_reason(_rows([2.3, 2.0, 1.5], [0.2, 0.5, 0.7]), 10, rule, final=True) is None
    # two evaluations above the bound: not yet (a transient spike may recover) ...
    assert collapse_reason(_rows([8e13, 1665.5], [0.1, 0.1]), 10, rule, final=False) is None
    # ... three are a collapse, and so is the final evaluation above it
    reason = collapse_reason(_rows([8e13, 1665.5, 1217.4], [0.1, 0.1, 0.1]), 10, rule, final=False)
    assert reason.startswith("collapsed: train loss 1217 above 100 × ln 10") and "rounds 1–3" in reason
    assert collapse_reason(_rows([2.3, bound + 1], [0.5, 0.5]), 10, rule, final=True) is not None
    assert collapse_reason(_rows([2.3, bound - 1], [0.5, 0.5]), 10, rule, final=True) is None
    # the streak must be the latest evaluations
    assert collapse_reason(_rows([1e4, 1e4, 1e4, 2.0], [0.1] * 4), 10, rule, final=True) is None


def test_collapse_rule_accuracy_part_and_overrides():
    rule = collapse_rule({})
    at_chance = [0.11] * 20
    # at chance from round 1: only the evaluations after round 10 count, ten of them needed
    assert collapse_reason(_rows([2.3] * 19, at_chance), 10, rule, final=False) is None
    reason = collapse_reason(_rows([2.3] * 20, at_chance), 10, rule, final=False)
    assert reason.startswith("collapsed: test accuracy at most 0.12") and "rounds 11–20" in reason
    # the healthy run with the longest chance-level stretch measured (5 evaluations, rounds 5-9)
    healthy = [0.13, 0.14, 0.09, 0.21, 0.10, 0.10, 0.10, 0.10, 0.10, 0.26, 0.11, 0.10] + [0.4] * 8
    assert collapse_reason(_rows([2.3] * 20, healthy), 10, rule, final=True) is None
    assert collapse_reason(_rows([2.3] * 20, at_chance), 10, collapse_rule({"collapse": {"chance_patience": 0}}),
                           final=True) is None
    off = collapse_rule({"collapse": False})
    assert collapse_reason(_rows([1e4] * 20, at_chance), 10, off, final=True) is None
    assert collapse_reason(_rows([1e4] * 3, at_chance), None, rule, final=True) is None  # C unknown: off
    with pytest.raises(ValueError, match="unknown keys \\['patience'\\]"):
        collapse_rule({"collapse": {"patience": 3}})


def _digits(tmp_path):
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = (d.data / 16).astype(np.float32), d.target.astype(np.int64)
    ds = Dataset("digits", x[:1437], y[:1437], x[1437:], y[1437:], num_classes=10)
    write_dataset(tmp_path / "digits", ds)
    write_partition(make_partition(ds, {"scheme": "iid", "num_clients": 20}, seed=0), ds, tmp_path / "part")
    return tmp_path / "digits", tmp_path / "part" / "partition.parquet"


def _digits_spec(lr, rounds):
    return {"experiment": "baselines", "dataset": "digits", "partition": "iid", "algorithm": "fedavg", "seed": 0,
            "algorithm_name": "fedavg", "hparams": {}, "model": {"name": "mlp", "hidden": [64]},
            "local": {"epochs": 2, "steps": None, "batch_size": 16, "lr": lr, "lr_decay": 1.0,
                      "weight_decay": 0.0, "clip_norm": None},
            "sampling": {"scheme": "uniform", "participation": 0.25}, "rounds": rounds, "eval_every": 1,
            "dtype": "float32"}


def test_fedavg_at_lr_1e4_on_digits_is_recorded_as_diverged(tmp_path):
    # The case: a finite train loss of 1,200-3,500 at chance accuracy was recorded "ok".
    dataset_dir, part = _digits(tmp_path)
    out = tmp_path / "out"
    summary = run_cell(_digits_spec(1e4, 8), dataset_dir, part, out / "metrics.parquet", out / "summary.json",
                       device="cpu", progress=False)
    table = pq.read_table(out / "metrics.parquet")
    check_metrics_table(table)
    assert table.column("round").to_pylist() == [1, 2, 3]
    assert table.column("status").to_pylist() == ["ok", "ok", "diverged"]
    assert np.isfinite(table.column("train_loss").to_pylist()).all()
    on_disk = json.loads((out / "summary.json").read_text())
    assert summary["status"] == on_disk["status"] == "diverged"
    assert on_disk["status_reason"].startswith("collapsed: train loss")


def test_a_healthy_run_has_no_status_reason_and_no_extra_files(tmp_path):
    dataset_dir, part = _digits(tmp_path)
    out = tmp_path / "out"
    summary = run_cell(_digits_spec(0.1, 3), dataset_dir, part, out / "metrics.parquet", out / "summary.json",
                       device="cpu", progress=False)
    assert summary["status"] == "ok" and "status_reason" not in summary
    assert sorted(p.name for p in out.iterdir()) == ["metrics.parquet", "summary.json"]  # lock file removed


def _toy_cell(tmp_path):
    ds = _dataset()
    write_dataset(tmp_path / "toy", ds)
    write_partition(make_partition(ds, {"scheme": "iid", "num_clients": 8}, seed=0), ds, tmp_path / "part")
    return tmp_path / "toy", tmp_path / "part" / "partition.parquet"


def test_stale_temporaries_are_removed_when_a_cell_starts(tmp_path):
    dataset_dir, part = _toy_cell(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    # what a SIGKILL during writes leaves: temporaries of the checkpoint and outputs of a dead pid
    stale = [out / ".checkpoint.pt.tmp999999.pt", out / ".metrics.parquet.tmp999999.parquet",
             out / ".summary.json.tmp12.json"]
    for p in stale:
        p.write_bytes(b"\0" * 1024)
    (out / ".other.tmp1").write_text("not ours")
    run_cell(_spec(), dataset_dir, part, out / "metrics.parquet", out / "summary.json", device="cpu",
             progress=False, checkpoint_every=1)
    assert sorted(p.name for p in out.iterdir()) == [".other.tmp1", "metrics.parquet", "summary.json"]


def test_remove_stale_temporaries(tmp_path):
    dest = tmp_path / "checkpoint.pt"
    dest.write_text("keep")
    (tmp_path / ".checkpoint.pt.tmp4242.pt").write_text("x")
    (tmp_path / ".checkpoint.pt.tmp7").mkdir()
    (tmp_path / ".checkpoint.pt.lock").write_text("")
    removed = remove_stale_temporaries(dest)
    assert [p.name for p in removed] == [".checkpoint.pt.tmp4242.pt", ".checkpoint.pt.tmp7"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".checkpoint.pt.lock", "checkpoint.pt"]
    assert temporary_sibling(dest).name.startswith(".checkpoint.pt.tmp")  # the pattern atomic_write uses
    assert remove_stale_temporaries(tmp_path / "missing" / "x") == []


def _python(code, **kw):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env, **kw)


def test_a_second_process_on_the_same_cell_is_refused(tmp_path):
    lock = tmp_path / ".checkpoint.pt.lock"
    holder = _python(f"""
        import sys, time
        from fedbench.engine.rounds.lifetime import CellLock
        with CellLock({str(lock)!r}, "e/d/p/a/seed=0"):
            print("locked", flush=True)
            time.sleep(60)
        """, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(CellBusyError, match=f"cell e/d/p/a/seed=0 .*pid {holder.pid}"):
            CellLock(lock, "e/d/p/a/seed=0").acquire()
        second = _python(f"""
            from fedbench.engine.rounds.lifetime import CellLock
            CellLock({str(lock)!r}, "e/d/p/a/seed=0").acquire()
            """, stderr=subprocess.PIPE, text=True)
        _, err = second.communicate(timeout=60)
        assert second.returncode != 0 and f"pid {holder.pid}" in err
    finally:
        holder.kill()
        holder.wait()
    # the kernel released the dead holder's lock: the cell can be taken again
    with CellLock(lock, "e/d/p/a/seed=0"):
        assert lock.read_text().strip() == str(os.getpid())
    assert not lock.exists()


def test_run_cell_refuses_a_cell_another_process_trains(tmp_path):
    dataset_dir, part = _toy_cell(tmp_path)
    out = tmp_path / "out"
    with CellLock(out / ".checkpoint.pt.lock", "other"):
        with pytest.raises(CellBusyError, match=f"cell t/toy/iid/fedavg/seed=0 .*pid {os.getpid()}"):
            run_cell(_spec(), dataset_dir, part, out / "metrics.parquet", out / "summary.json", device="cpu",
                     progress=False)
    assert not (out / "metrics.parquet").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG: Linux")
@pytest.mark.parametrize("through_shell", [False, True])
def test_the_training_job_ends_when_its_parent_is_killed(tmp_path, through_shell):
    # parent (stands for Snakemake) -> [bash -c "...; python child"] -> child running the same
    # set-up as workflow/scripts/train.py; SIGKILL the parent, the child must exit.
    pid_file = tmp_path / "child.pid"
    child = textwrap.dedent(f"""
        import os, time
        from fedbench.engine.rounds.lifetime import exit_with_parent
        exit_with_parent(poll_seconds=0.2)
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        try:
            time.sleep(120)
        finally:
            open({str(pid_file)!r} + ".exited", "w").write("clean")
        """)
    (tmp_path / "child.py").write_text(child)
    cmd = [sys.executable, str(tmp_path / "child.py")]
    if through_shell:  # what Snakemake's script: directive does (set -euo pipefail; python ...)
        cmd = ["bash", "-c", f"set -euo pipefail; {sys.executable} {tmp_path / 'child.py'}; true"]
    parent = _python(f"""
        import subprocess, sys, time
        subprocess.Popen({cmd!r})
        time.sleep(120)
        """)
    child_pid = None
    try:
        deadline = time.time() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.time() < deadline, "the child did not start"
            time.sleep(0.1)
        child_pid = int(pid_file.read_text())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.time() + 10
        while Path(f"/proc/{child_pid}").exists() and _state(child_pid) not in ("Z", "X"):
            assert time.time() < deadline, "the child outlived its parent"
            time.sleep(0.1)
        assert Path(str(pid_file) + ".exited").read_text() == "clean"  # SIGTERM → SystemExit: finally ran
    finally:
        if parent.poll() is None:
            parent.kill()
        if child_pid is not None and _state(child_pid) not in ("Z", "X"):
            os.kill(child_pid, signal.SIGKILL)


def _state(pid):
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "X"
    return text[text.rindex(")") + 2]
