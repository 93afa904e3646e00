"""The workflow on a real Slurm cluster: `snakemake --profile profiles/slurm` (+ the CI overlay).

Needs a running Slurm (one node is enough). `.ci/run` starts one with `.ci/start-slurm.sh`
(Debian's slurm-wlm + munge, no systemd); when none is running and we are root with Slurm
installed, this module starts it itself (set FEDBENCH_SLURM_AUTOSTART=0 to forbid that).
Otherwise the tests skip, saying why.

A small experiment (digits, logreg, 2 algorithms, 1 seed, 3 rounds) and a stacked one (an
lr sweep of 2 values x 2 seeds in one job: `stack: true`) run twice: through Slurm and locally. Every train
cell must have run inside its own Slurm job, with the time limit, memory and CPUs of the
config's `resources`, the light rules on the submitting node, and results/metrics.parquet must
equal the local run's (wall_seconds aside).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"
START = REPO / ".ci" / "start-slurm.sh"
STATUS_FILE = Path(os.environ.get("FEDBENCH_SLURM_STATUS", "/tmp/fedbench-slurm-status"))

EXPERIMENT = {
    "seeds": [0],
    "rounds": 3,
    "sampling": {"scheme": "uniform", "participation": 0.5},
    "local": {"epochs": 1, "batch_size": 32, "lr": 0.1},
    "resources": {"runtime": 7, "mem_mb": 600, "cpus": 1, "gpus": 0},
    "datasets": {
        "digits": {
            "model": {"name": "logreg"},
            "partitions": {"iid": {"scheme": "iid", "num_clients": 4}},
        }
    },
    "algorithms": {"fedavg": {}, "scaffold": {}},
}
CONFIG = {
    "datasets": {"digits": {"source": "digits"}},
    "device": "cpu",
    "experiments": {
        "slurm": copy.deepcopy(EXPERIMENT),
        # stacking: a 2-value lr sweep x 2 seeds, all four cells in a single Slurm job (train_stacked_<id>)
        "stacked": copy.deepcopy(EXPERIMENT) | {"seeds": [0, 1], "stack": True, "algorithms": {"fedavg": {}},
                                                 "sweep": {"grid": {"local.lr": [0.05, 0.1]}}},
    },
}
CELLS = ["fedavg", "scaffold"]
STACKED = [f"stacked/digits/iid/fedavg,lr={lr}/seed={s}" for lr in (0.05, 0.1) for s in (0, 1)]


def _node_state() -> str | None:
    if shutil.which("sinfo") is None:
        return None
    try:
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        return None
    states = out.stdout.split()
    return states[0].rstrip("*~#!%$@^") if out.returncode == 0 and states else None


def _why_not() -> str | None:
    """None if a Slurm node can take jobs, else why not."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return "Slurm is not installed (no sbatch/sinfo; `.ci/start-slurm.sh` installs it as root)"
    state = _node_state()
    if state in ("idle", "mixed", "allocated"):
        return None
    return f"no Slurm node is up (sinfo: {state or 'no answer from slurmctld'})"


@pytest.fixture(scope="module")
def slurm():
    reason = _why_not()
    if reason and os.environ.get("FEDBENCH_SLURM_AUTOSTART", "1") != "0" and os.geteuid() == 0 \
            and shutil.which("slurmctld"):
        proc = subprocess.run(["bash", str(START), "--no-install"], capture_output=True, text=True, timeout=180)
        reason = _why_not() if proc.returncode == 0 else \
            f"{START.name} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
    if reason and STATUS_FILE.exists():
        reason += f"; {START.name} reported: {STATUS_FILE.read_text().strip()}"
    if reason:
        pytest.skip(f"no usable Slurm cluster: {reason}")


def _snakemake(workdir: Path, *args: str) -> subprocess.Popen:
    cfg = workdir / "config.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    env = {k: v for k, v in os.environ.items()
           if k not in ("SNAKEMAKE_PROFILE", "WANDB_SERVICE") and not k.startswith("SLURM_")}
    env["MPLBACKEND"] = "Agg"
    # The Slurm job runs `python -m snakemake` of this interpreter (--export=ALL passes PATH).
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir),
           "--configfile", str(cfg), *args]
    return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen, what: str, timeout: float) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"{what} did not finish in {timeout:.0f} s:\n{out[-5000:]}")
    assert proc.returncode == 0, f"{what} failed ({proc.returncode}):\n{out[-6000:]}"
    return out


def _scontrol(job_id: str) -> dict:
    """`scontrol show job` as a dict (finished jobs stay visible for MinJobAge seconds)."""
    out = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True, timeout=15)
    return dict(kv.split("=", 1) for kv in out.stdout.split() if "=" in kv)


@pytest.mark.slow
def test_slurm_run_matches_local_run(slurm, tmp_path):
    on_slurm, local = tmp_path / "slurm", tmp_path / "local"
    on_slurm.mkdir()
    local.mkdir()
    # One after the other: on a 2-CPU machine running both at once is slower.
    out = _finish(_snakemake(on_slurm, "--profile", str(REPO / "profiles" / "slurm"),
                             "--profile", str(REPO / "profiles" / "ci-slurm")), "the Slurm run", timeout=240)
    _finish(_snakemake(local, "--cores", "2"), "the local run", timeout=240)

    # Only the train cells went to Slurm, each as its own job; the light rules stayed local.
    submitted = re.findall(r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: .*?rule_(\w+)/", out)
    rules = sorted(rule for _, rule in submitted)
    assert rules[:-1] == ["train"] * len(CELLS) and rules[-1].startswith("train_stacked_"), out[-4000:]
    for rule in ("prepare_dataset", "partition", "collect", "aggregate", "all"):
        assert re.search(rf"^localrule {rule}:", out, re.M), f"{rule} did not run locally"

    job_ids = set()
    for algo in CELLS:
        cell = f"slurm/digits/iid/{algo}/seed=0"
        summary = json.loads((on_slurm / "results/runs" / cell / "summary.json").read_text())
        slurm_job = summary["job"]["slurm"]
        assert slurm_job and slurm_job["job_id"], f"{cell} did not run inside a Slurm job: {summary['job']}"
        job_ids.add(slurm_job["job_id"])
        log = (on_slurm / "results/logs/train" / f"{cell}.log").read_text()
        assert f"Slurm job {slurm_job['job_id']}" in log
        assert "100%|" in log and "acc=" in log  # the progress bar, as lines
        # The job got what the config asked for (resources: runtime 7, mem_mb 600, cpus 1).
        info = _scontrol(slurm_job["job_id"])
        if info:  # still known to slurmctld (MinJobAge)
            assert info.get("TimeLimit") == "00:07:00", info
            assert info.get("NumCPUs") == "1", info
            assert info.get("MinMemoryNode") == "600M", info
        # The local run's cells ran outside Slurm.
        local_summary = json.loads((local / "results/runs" / cell / "summary.json").read_text())
        assert local_summary["job"]["slurm"] is None
    assert len(job_ids) == len(CELLS)
    # The stacked cells: both lrs x both seeds trained in one Slurm job, with one log.
    summaries = [json.loads((on_slurm / "results/runs" / cell / "summary.json").read_text()) for cell in STACKED]
    stacked_jobs = {s["job"]["slurm"]["job_id"] for s in summaries}
    assert len(stacked_jobs) == 1 and not stacked_jobs & job_ids
    (log,) = [p.read_text() for p in (on_slurm / "results/logs/train/stacked/digits/iid").glob("stack-*.log")]
    assert f"Slurm job {next(iter(stacked_jobs))}" in log and all(cell in log for cell in STACKED)

    a = pl.read_parquet(on_slurm / "results/metrics.parquet").drop("wall_seconds")
    b = pl.read_parquet(local / "results/metrics.parquet").drop("wall_seconds")
    assert a.height == (len(CELLS) + len(STACKED)) * 3
    assert a.equals(b), f"Slurm and local metrics differ:\n{a}\n{b}"
