"""The rates behind the cost estimate printed before a run (fedbench.estimate), and its error.

    python benchmarks/cost_rates.py FOLDER [--write]

FOLDER is a results folder in which the default suite and the shipped quick files ran one after
another with `snakemake --cores 2` (benchmarks/RESULTS.md, "Cost estimates", gives the loop); its
``times.txt`` holds one line per config file run, ``<config file> rc=<status> wall=<seconds>``.

For every config file it reads the finished cells (summary.json: wall_seconds, engine, device) and
learns rates in seconds per sample-step per (model, engine, device, stacked) key exactly as the
workflow does (fedbench.estimate.learn_rates: the median), and the per-job start-up from the
default suite as (2 cores × wall − Σ training seconds) / jobs. Then, per config file, it estimates
the file's training time as a fresh folder would, from the rates of the *other* files (leave one
file out: a key that only this file has is then a guess, the slowest known rate), against:

    measured CPU s = Σ training seconds of its jobs (summary.json) + jobs × start-up
    measured wall  = the command's wall time (times.txt), against the estimate / 2 cores

With --shipped, each file is priced instead as the workflow prices it in a fresh folder: from
the shipped table (src/fedbench/cost_rates.json, its start-up included), as printed before a run.

With --write, the rates learned from all the files become src/fedbench/cost_rates.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
from pathlib import Path

import yaml

from fedbench import estimate
from fedbench.config import datasets, expand_cells, partitions, stacked_experiments

REPO = Path(__file__).resolve().parents[1]
CORES = 2


def _run_dir(c: dict) -> str:
    return f"results/runs/{c['experiment']}/{c['dataset']}/{c['partition']}/{c['algorithm']}/seed={c['seed']}"


def measure(folder: Path, config_file: str) -> dict:
    """One config file's cells in ``folder``: their (summary, sample-steps), measured training
    seconds (a stacked group's wall counted once), jobs and the work of each cell."""
    cfg = yaml.safe_load((REPO / config_file).read_text())
    cells, known, parts, stacked = expand_cells(cfg), datasets(cfg), partitions(cfg), stacked_experiments(cfg)
    sizes = estimate.client_sizes(cells, known, parts, root=folder)
    finished, groups, work = [], {}, []
    for c in cells:
        steps = estimate.sample_steps(c, *sizes[(c["dataset"], c["partition"])])
        summary = json.loads((folder / _run_dir(c) / "summary.json").read_text())
        finished.append((summary, steps))
        groups[tuple(summary.get("stacked_cells") or [_run_dir(c)])] = summary["wall_seconds"]
        work.append((steps, estimate.rate_key(c["model"]["name"], summary["engine"], summary["device"],
                                              c["experiment"] in stacked)))
    jobs = sum(estimate.job_count([c for c in cells if c["experiment"] == e], stacked.get(e))
               for e in dict.fromkeys(c["experiment"] for c in cells))
    return {"finished": finished, "training_s": sum(groups.values()), "jobs": jobs, "work": work}


def _cpu() -> str:
    """The CPU's model name (/proc/cpuinfo), or the platform's processor string."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--write", action="store_true", help="write src/fedbench/cost_rates.json")
    ap.add_argument("--shipped", action="store_true", help="price each file from the shipped rates, not the others'")
    args = ap.parse_args()
    walls = {}  # the last run of each file
    for line in (args.folder / "times.txt").read_text().splitlines():
        if " rc=0 " in line:
            name, _, wall = line.split()
            walls[name] = float(wall.removeprefix("wall="))
    runs = {f: measure(args.folder, f) for f in walls}
    default = runs["config/config.yaml"]
    startup = max(0.0, (CORES * walls["config/config.yaml"] - default["training_s"]) / default["jobs"])
    print(f"job start-up: {startup:.2f} s (default suite: {default['jobs']} jobs, "
          f"{default['training_s']:.1f} s training, {walls['config/config.yaml']:.1f} s wall on {CORES} cores)\n")
    print("| config file | jobs | estimated CPU s | measured CPU s | ratio | estimated wall s | measured wall s "
          "| ratio | keys guessed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for f, run in runs.items():
        job = estimate.Job(f, run["work"], None)
        if args.shipped:
            shipped = estimate.shipped_rates()
            estimate.price([job], {}, {**shipped, "job_startup_s": 0.0})
            est_cpu = job.seconds + run["jobs"] * shipped["job_startup_s"]
        else:
            others = [x for g, r in runs.items() if g != f for x in r["finished"]]
            estimate.price([job], estimate.learn_rates(others), {"rates": {}, "job_startup_s": 0.0})
            est_cpu = job.seconds + run["jobs"] * startup
        meas_cpu = run["training_s"] + run["jobs"] * startup
        est_wall = est_cpu / CORES
        print(f"| {f} | {run['jobs']} | {est_cpu:.0f} | {meas_cpu:.0f} | {est_cpu / meas_cpu:.2f} | {est_wall:.0f} "
              f"| {walls[f]:.0f} | {est_wall / walls[f]:.2f} | {', '.join(sorted(job.guessed)) or '—'} |")
    rates = estimate.learn_rates([x for r in runs.values() for x in r["finished"]])
    if args.write:
        out = {
            "measured": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {_cpu()}, {CORES} cores",
            "command": "python benchmarks/cost_rates.py <folder> --write, the folder made by the loop in "
                       "benchmarks/RESULTS.md, 'Cost estimates'",
            "unit": "seconds per sample-step (fedbench.estimate)",
            "job_startup_s": round(startup, 3),
            "rates": {k: v["points"] for k, v in sorted(rates.items())},
            "cells": {k: v["cells"] for k, v in sorted(rates.items())},
        }
        path = REPO / "src/fedbench/cost_rates.json"
        path.write_text(json.dumps(out, indent=1) + "\n")
        every = [y for points in out["rates"].values() for _, y in points]
        print(f"\nwrote {path.relative_to(REPO)}: {len(rates)} keys, {len(every)} points, rates "
              f"{min(every):.2e} to {max(every):.2e} s per sample-step")


if __name__ == "__main__":
    main()
