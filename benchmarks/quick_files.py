"""The default suite and every quick file, each run as a new user runs it, timed.

    python benchmarks/quick_files.py --json quick_files.json            # all, HEAD
    python benchmarks/quick_files.py --only default,fedac_quick --rev HEAD~1

Each run is a fresh clone of ``--rev`` (default HEAD) in a temporary folder, its own ``src`` first
on ``PYTHONPATH`` (so numba's cache starts cold, as in a new user's clone), and the command its
header states:

    snakemake --cores 2 [--configfile config/experiments/<name>.yaml]

run to its end in that clone. Printed per run: wall time, CPU time (user + sys of the command and
every process it started), the number of jobs Snakemake ran, and the load average before and after
(another process on the machine inflates wall time; CPU moves less). The runs go one after another,
never at once. The headers of the config files and docs/papers.md state these times with the date
and machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: name → the ``--configfile`` of its command (None: the default suite, ``config/config.yaml``).
RUNS = {
    "default": None,
    "lr_sweep_quick": "config/experiments/lr_sweep_quick.yaml",
    "local_update_quick": "config/experiments/local_update_quick.yaml",
    "fedac_quick": "config/experiments/fedac_quick.yaml",
    "fed_minimax_quick": "config/experiments/fed_minimax_quick.yaml",
    "elastic_aggregation_quick": "config/experiments/elastic_aggregation_quick.yaml",
    "fedelasticnet_quick": "config/experiments/fedelasticnet_quick.yaml",
}


@contextmanager
def fresh_clone(rev: str, prefix: str):
    """A fresh clone of this repository at ``rev`` in a temporary folder (removed afterwards):
    yields (its root, an environment with its own ``src`` first on ``PYTHONPATH``)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        clone = Path(tmp) / "fedbench"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", rev], check=True)
        yield clone, {**os.environ, "PYTHONPATH": str(clone / "src")}


def timed_command(cmd: list[str], cwd: Path, env: dict) -> tuple[subprocess.CompletedProcess, float, float]:
    """``cmd`` run to its end, output captured: (the process, wall seconds, CPU seconds = user + sys
    of it and every process it started)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_one(name: str, configfile: str | None, rev: str, cores: int, keep: Path | None) -> dict:
    """Clone ``rev``, run the command, return its timings (raises if the command fails)."""
    with fresh_clone(rev, f"fedbench-quick-{name}-") as (clone, env):
        cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores)]
        if configfile:
            cmd += ["--configfile", configfile]
        load_before = os.getloadavg()[0]
        proc, wall, cpu = timed_command(cmd, clone, env)
        log = proc.stdout + proc.stderr
        if keep is not None:  # the console output, and the scorecard the run wrote (docs/papers.md quotes it)
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{name}.log").write_text(log)
            for ext in ("md", "csv"):
                card = clone / "results" / "tables" / f"scorecard.{ext}"
                if card.is_file():
                    (keep / f"{name}.scorecard.{ext}").write_text(card.read_text(encoding="utf-8"), encoding="utf-8")
        if proc.returncode != 0:
            raise RuntimeError(f"{name}: {' '.join(cmd)} failed ({proc.returncode}):\n{log[-4000:]}")
        done = re.findall(r"(\d+) of (\d+) steps \(100%\) done", log)
        command = f"snakemake --cores {cores}" + (f" --configfile {configfile}" if configfile else "")
        return {"name": name, "command": command, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                "jobs": int(done[-1][1]) if done else None,
                "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}


def minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rev", default="HEAD", help="the commit to clone (default HEAD)")
    ap.add_argument("--only", help="comma-separated names among: " + ", ".join(RUNS))
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--logs", type=Path, help="keep each command's console output and scorecard here")
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else list(RUNS)
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        ap.error(f"unknown run(s) {unknown}: choose among {list(RUNS)}")
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    rows = []
    print(f"{platform.node()}: {os.cpu_count()} CPUs, commit {rev}, {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"{'run':<28} {'wall':>12} {'CPU':>12} {'jobs':>5} {'load before/after':>18}")
    for name in names:
        row = run_one(name, RUNS[name], rev, args.cores, args.logs)
        rows.append(row)
        print(f"{name:<28} {minutes(row['wall_s']):>12} {minutes(row['cpu_s']):>12} {row['jobs'] or '—':>5} "
              f"{row['load_before']:>9} / {row['load_after']:<7}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"commit": rev, "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
                                         "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
