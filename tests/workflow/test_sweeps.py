"""Sweeps through the workflow, as a user runs them: grids in the config, a stacked experiment's
cells trained in one job per stackable group, reruns of exactly the new cells, the selection
table and sensitivity plot in the outputs and the report."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

SNAKEFILE = Path(__file__).resolve().parents[2] / "Snakefile"

SWEEP = {
    "datasets": {"digits": {"source": "digits"}},
    "device": "cpu",
    "experiments": {
        "sw": {
            "seeds": [0, 1],
            "rounds": 2,
            "stack": True,
            "sampling": {"scheme": "uniform", "participation": 0.5},
            "local": {"epochs": 1, "batch_size": 32, "lr": 0.1},
            "sweep": {"grid": {"local.lr": [0.05, 0.1]}, "select": {"metric": "test_accuracy"}},
            "datasets": {
                "digits": {
                    "model": {"name": "logreg"},
                    "partitions": {"iid": {"scheme": "iid", "num_clients": 4}},
                }
            },
            "algorithms": {"fedavg": {}, "fedprox": {"mu": 0.01, "sweep": {"grid": {"mu": [0.01, 0.1]}}}},
        }
    },
}


def snakemake(workdir: Path, config: dict, *args: str) -> subprocess.CompletedProcess:
    """``snakemake --cores 2`` on ``config`` (written to workdir/config.yaml) in ``workdir``."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"} | {"MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=600)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"snakemake failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    return proc


def dry_run(workdir: Path, config: dict) -> str:
    """The console of a dry run with every job's whole output list: Snakemake's own console
    (``--workflow-profile none``), since fedbench's cuts lists of more than four files."""
    return ok(snakemake(workdir, config, "-n", "--workflow-profile", "none")).stdout


def train_jobs(out: str) -> list[tuple[str, list[str]]]:
    """(rule, its metrics.parquet outputs) of every train job a dry run prints (:func:`dry_run`)."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \S+:)", out):
        m = re.match(r"(?:local)?rule (train\S*):", block)
        if not m:
            continue
        outputs = re.search(r"^\s+output: (.*)$", block, re.M).group(1).split(", ")
        jobs.append((m.group(1), sorted(o for o in outputs if o.endswith("metrics.parquet"))))
    return sorted(jobs)


def train_inputs(out: str) -> list[list[str]]:
    """The input files of every train job a dry run prints (:func:`dry_run`), in rule order."""
    blocks = sorted(b for b in re.split(r"\n(?=(?:local)?rule \S+:)", out) if re.match(r"(?:local)?rule train", b))
    return [re.search(r"^\s+input: (.*)$", b, re.M).group(1).split(", ") for b in blocks]


def cells_of(jobs) -> list[str]:
    return sorted(re.sub(r"^results/runs/|/metrics.parquet$", "", o) for _, outs in jobs for o in outs)


@pytest.mark.slow
def test_stacked_sweep_trains_one_job_per_group_and_an_added_value_only_its_cells(tmp_path):
    out = dry_run(tmp_path, SWEEP)
    jobs = train_jobs(out)
    # FedAvg: 2 lr x 2 seeds; FedProx: 2 lr x 2 mu x 2 seeds; one job each (different algorithms)
    assert [len(outs) for _, outs in jobs] == [4, 8] or [len(outs) for _, outs in jobs] == [8, 4]
    # each job reads the dataset and the 2 seeds' partitions, each file declared once (Snakemake hashes
    # every input once per output when a job ends)
    assert [len(files) for files in train_inputs(out)] == [3, 3]
    assert all(len(set(files)) == len(files) for files in train_inputs(out))
    assert all(rule.startswith("train_sw_") for rule, _ in jobs)
    assert "sw/digits/iid/fedprox,lr=0.05,mu=0.1/seed=1" in cells_of(jobs)

    ok(snakemake(tmp_path, SWEEP))
    summary = json.loads((tmp_path / "results/runs/sw/digits/iid/fedavg,lr=0.1/seed=1/summary.json").read_text())
    assert summary["spec"]["local"]["lr"] == 0.1 and summary["fingerprint"]
    assert sorted(summary["stacked_cells"]) == sorted(
        f"sw/digits/iid/fedavg,lr={lr}/seed={s}" for lr in (0.05, 0.1) for s in (0, 1))
    selection = pl.read_csv(tmp_path / "results/tables/sweeps/sw.csv")
    assert selection.height == 2  # one row per (dataset, partition, algorithm)
    assert (tmp_path / "results/plots/sweeps/sw.png").stat().st_size > 0
    assert "Nothing to be done" in ok(snakemake(tmp_path, SWEEP, "-n")).stdout

    wider = copy.deepcopy(SWEEP)
    wider["experiments"]["sw"]["sweep"]["grid"]["local.lr"].append(0.2)
    jobs = train_jobs(dry_run(tmp_path, wider))
    assert cells_of(jobs) == sorted(
        [f"sw/digits/iid/fedavg,lr=0.2/seed={s}" for s in (0, 1)]
        + [f"sw/digits/iid/fedprox,lr=0.2,mu={mu}/seed={s}" for mu in (0.01, 0.1) for s in (0, 1)])
    assert len(jobs) == 2

    # a changed hyperparameter of one algorithm retrains exactly its cells (one job)
    changed = copy.deepcopy(SWEEP)
    changed["experiments"]["sw"]["algorithms"]["fedprox"]["sweep"]["grid"]["mu"] = [0.01, 0.5]
    jobs = train_jobs(dry_run(tmp_path, changed))
    assert cells_of(jobs) == sorted(f"sw/digits/iid/fedprox,lr={lr},mu=0.5/seed={s}" for lr in (0.05, 0.1)
                                    for s in (0, 1))


def test_unstacked_sweep_runs_one_job_per_cell_and_a_bad_value_fails_before_any_job(tmp_path):
    cfg = copy.deepcopy(SWEEP)
    cfg["experiments"]["sw"]["stack"] = False
    jobs = train_jobs(dry_run(tmp_path, cfg))
    assert len(jobs) == 12 and {rule for rule, _ in jobs} == {"train"}

    bad = copy.deepcopy(SWEEP)
    bad["experiments"]["sw"]["algorithms"]["fedprox"]["sweep"]["grid"]["mu"] = [0.01, -1.0]
    proc = snakemake(tmp_path, bad, "-n")
    assert proc.returncode != 0
    assert "experiments.sw.algorithms.fedprox.sweep.grid.mu[1]" in proc.stdout + proc.stderr
