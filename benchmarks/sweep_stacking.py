"""A learning-rate sweep through the workflow, stacked in one job versus one job per cell.

    python benchmarks/sweep_stacking.py                 # 13 lr x 3 seeds, W3-shaped, p = 1.0 and 0.1
    python benchmarks/sweep_stacking.py --quick         # 3 lr x 2 seeds, tiny: a smoke run

Side by side from the same Snakemake command a user types (``snakemake --cores 2``), in two
fresh work directories that differ only in the experiment's ``stack`` key: W3-shaped cells
(a9a-shaped logistic regression: 123 binary features, 2 classes, 248 parameters; 1,024 clients of
~32 samples, batch 1, 64 local steps, FedAvg) over a 13-value client-lr grid x 3 seeds = 39 cells.
The a9a files are generated in the LIBSVM format (the real file's row and feature counts, a
planted logistic model) into a local ``data.mirror``, so nothing is downloaded. Dataset
preparation and partitioning run first in each directory, untimed; the timed command trains
and collects (target ``results/metrics.parquet``). Peak memory: each job's summary.json
(``peak_rss_mb``, the training process's maximum resident set).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
LRS = [float(f"{x:.3g}") for x in np.logspace(-3, 1, 13)]


def write_libsvm(path: Path, rows: int, features: int, rng: np.random.Generator, w: np.ndarray) -> None:
    """``rows`` lines ``<±1> i:1 ...`` with ~14 active binary features (a9a's density), labels
    drawn from a logistic model with weights ``w``."""
    lines = []
    for _ in range(rows):
        idx = np.sort(rng.choice(features, size=14, replace=False))
        p = 1.0 / (1.0 + np.exp(-w[idx].sum()))
        y = "+1" if rng.random() < p else "-1"
        lines.append(y + " " + " ".join(f"{i + 1}:1" for i in idx))
    path.write_text("\n".join(lines) + "\n")


def config(mirror: Path, stack: bool, lrs: list[float], seeds: list[int], clients: int, steps: int,
           rounds: int, participation: float) -> dict:
    return {
        "datasets": {"a9a": {"source": "a9a"}},
        "device": "cpu",
        "checkpoint_every": 0,
        "data": {"mirror": str(mirror)},
        "experiments": {
            "w3_sweep": {
                "seeds": seeds,
                "rounds": rounds,
                "eval_every": rounds,
                "stack": stack,
                # what a user gives each job: one job per cell runs two at a time on --cores 2;
                # the stacked job is alone, so it gets both cores
                "resources": {"cpus": 2 if stack else 1},
                "sampling": {"scheme": "uniform", "participation": participation},
                "local": {"steps": steps, "batch_size": 1, "lr": 0.1},
                "sweep": {"grid": {"local.lr": lrs}},
                "datasets": {"a9a": {"model": {"name": "logreg"},
                                     "partitions": {"iid": {"scheme": "iid", "num_clients": clients}}}},
                "algorithms": {"fedavg": {}},
            }
        },
    }


def snakemake(workdir: Path, *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env["MPLBACKEND"] = "Agg"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), "--cores", "2", "--quiet", "all", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"snakemake failed in {workdir}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 lr x 2 seeds, 64 clients, 8 steps, 1 round")
    ap.add_argument("--participation", type=float, nargs="*", default=[1.0, 0.1])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    args = ap.parse_args()
    lrs, seeds, clients, steps, rounds = LRS, [0, 1, 2], 1024, 64, args.rounds
    if args.quick:
        lrs, seeds, clients, steps, rounds = LRS[::6], [0, 1], 64, 8, 1
    root = Path(tempfile.mkdtemp(prefix="fedbench-sweep-bench-"))
    rng = np.random.default_rng(0)
    mirror = root / "mirror"
    mirror.mkdir()
    w = rng.normal(0, 1, 123)
    write_libsvm(mirror / "a9a", 32561, 123, rng, w)
    write_libsvm(mirror / "a9a.t", 16281, 123, rng, w)
    print(f"{len(lrs)} lr x {len(seeds)} seeds = {len(lrs) * len(seeds)} cells; {clients} clients, batch 1, "
          f"{steps} local steps, {rounds} rounds; work dirs under {root}")
    print("| participation | one job per cell | stacked | ratio | jobs (per cell / stacked) | peak RSS of a job, MB "
          "(per cell / stacked) |")
    print("|---|---|---|---|---|---|")
    for p in args.participation:
        times, rss, jobs = {}, {}, {}
        for stack in (False, True):
            wd = root / f"p{p}-{'stacked' if stack else 'cells'}"
            wd.mkdir()
            (wd / "config.yaml").write_text(yaml.safe_dump(config(mirror, stack, lrs, seeds, clients, steps, rounds,
                                                                  p), sort_keys=False))
            snakemake(wd, "--until", "partition")  # prepare + partition, untimed
            times[stack] = snakemake(wd, "--until", "collect")
            summaries = [json.loads(f.read_text()) for f in (wd / "results/runs").rglob("summary.json")]
            assert len(summaries) == len(lrs) * len(seeds), len(summaries)
            rss[stack] = max(s["peak_rss_mb"] for s in summaries)
            jobs[stack] = len({tuple(s.get("stacked_cells") or [i]) for i, s in enumerate(summaries)})
        print(f"| {p} | {times[False]:.1f} s | {times[True]:.1f} s | **{times[False] / times[True]:.1f}x** | "
              f"{jobs[False]} / {jobs[True]} | {rss[False]:.0f} / {rss[True]:.0f} |", flush=True)
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
