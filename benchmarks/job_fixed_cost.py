"""A training job's fixed cost as the workflow runs it, side by side against another commit.

    python benchmarks/job_fixed_cost.py --mirror /path/to/libsvm-mirror --against HEAD~1 --repeats 5
    python benchmarks/job_fixed_cost.py --mirror ... --config my.yaml   # another job (any config)

A job's fixed cost is everything but its training: starting Python, Snakemake's arguments
(unpickled by the ``script:`` preamble), importing torch and numba, loading the compiled kernels
from numba's cache, reading the data and partitions, writing each cell's files, and ending the
process. Measured here as the job's process time (wall clock, and CPU = user + sys) minus the
training time the job reports (the largest ``wall_seconds`` of its cells' summary.json: the
stacked run's time from its first cell's set-up to its end). Two figures per tree:

- *job*: the kept job script (``--skip-script-cleanup``) run alone as Snakemake runs it
  (``python <script>``), outputs in place;
- *command*: the whole ``snakemake --until <train rules>`` with the cells' outputs removed
  (Snakemake's start, its DAG, the job, its bookkeeping): the command's time minus the training.

Each tree (the live one or ``--rev REV``; ``--against REV``; a revision in a ``git worktree``, its
own ``src`` first on ``PYTHONPATH``) first runs the whole config once in its own folder (data, partitions, F*: not
timed); then the repeats alternate the trees (paired), and medians (min–max) are printed. The
default config (``benchmarks/job_fixed_cost.yaml``) is one a9a FedAc-I job of FedAc's figure set
(M = 256, K = 16, T = 4,096, 18 η × 3 seeds stacked). A loaded machine inflates wall times; CPU
seconds move less.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from quick_files import timed_command  # noqa: E402

#: Run as ``python harness.py <kept job script>``: the script under timers, per component (wall, CPU),
#: printed as one JSON line on the process's stdout at the job's end.
HARNESS = r"""
import json, os, sys, time
import importlib

def age():
    fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
    return float(open("/proc/uptime").read().split()[0]) - int(fields[19]) / os.sysconf("SC_CLK_TCK")

started = age()
acc, last = {}, [time.perf_counter(), time.process_time()]
W0 = last[0]

def add(name, w, c):
    a = acc.setdefault(name, [0.0, 0.0]); a[0] += w; a[1] += c

def step(name):
    w, c = time.perf_counter(), time.process_time()
    add(name, w - last[0], c - last[1]); last[0], last[1] = w, c

def wrap(obj, attr, name):
    f = getattr(obj, attr, None)
    if f is None:
        return
    def timed(*a, **k):
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            return f(*a, **k)
        finally:
            add(name, time.perf_counter() - w0, time.process_time() - c0)
    setattr(obj, attr, timed)

def report():
    step("rest of the script (arguments, log lines)")
    out = {k: v for k, v in acc.items()}
    out["in-script"] = [time.perf_counter() - W0, time.process_time()]
    out["python start"] = [started, None]
    sys.__stdout__.write("PHASES " + json.dumps(out) + "\n"); sys.__stdout__.flush()

path = sys.argv[1]
pre, body = open(path).read().split("######## snakemake preamble end #########", 1)
g = {"__name__": "__main__", "__file__": path}
step("harness")
exec(compile(pre, path, "exec"), g); step("Snakemake's arguments (the script: preamble)")
import torch; step("import torch")
import fedbench.engine.rounds.loop as loop; step("import fedbench (the engine)")
import numba; step("import numba")
for name in ("fedbench.engine.linear_fast.linear_steps", "fedbench.engine.linear_steps"):
    try:
        importlib.import_module(name); break
    except ImportError:
        pass
step("import the compiled path's modules")
from numba.core.dispatcher import Dispatcher
wrap(Dispatcher, "_compile_for_args", "compiled kernels (numba's cache)")
wrap(loop, "load_dataset", "read the dataset")
wrap(loop, "read_partition", "read partitions")
wrap(loop, "partition_rows", "partitions' rows")
wrap(loop, "write_cell", "write the cells' files")
wrap(loop, "train_seeds", "train_seeds")
wrap(loop, "run_cells", "run_cells")
try:
    import fedbench.runlog as runlog
    end = getattr(runlog, "end_process", None)
    if end is not None:
        def ending(status=0):
            report(); end(status)
        runlog.end_process = ending
except ImportError:
    end = None
last[:] = [time.perf_counter(), time.process_time()]
exec(compile(body, path, "exec"), g)
report()
"""

#: The components printed, in order, and how each is computed from the harness's timers.
NESTED = ("compiled kernels (numba's cache)", "partitions' rows")


def timed(cmd: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall, CPU = user + sys) seconds of ``cmd`` run to its end (it must succeed)."""
    proc, wall, cpu = timed_command(cmd, cwd, env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return wall, cpu


class Tree:
    """A checkout (the live tree or a worktree at a commit) and its workflow folder."""

    def __init__(self, label: str, root: Path, work: Path, config: Path):
        self.label, self.root, self.work, self.config = label, root, work, config
        self.env = {**os.environ, "PYTHONPATH": str(root / "src")}
        self.rules: list[str] = []

    def snakemake(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "snakemake", "-s", str(self.root / "Snakefile"), "--directory",
                str(self.work), "--configfile", str(self.config), "--cores", "1", "--skip-script-cleanup", *args]

    def setup(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        timed(self.snakemake(), self.env, self.work)
        logs = (self.work / ".snakemake" / "log").glob("*.snakemake.log")  # this run's, or a kept folder's
        self.rules = sorted({r for log in logs for r in re.findall(r"localrule (train[^:\s]*):", log.read_text())})
        if not self.rules:
            raise RuntimeError(f"{self.label}: no train job ran (is the folder already complete?)")

    def scripts(self) -> list[Path]:
        """The kept script of each train job, the latest of each rule."""
        kept = sorted((self.work / ".snakemake" / "scripts").glob("*.train.py"), key=lambda p: p.stat().st_mtime)
        return kept[-len(self.rules):]

    def training(self) -> float:
        """Sum over the jobs of the training time they report (their cells' largest wall_seconds)."""
        by_job: dict[str, float] = {}
        for summary in (self.work / "results" / "runs").rglob("summary.json"):
            s = json.loads(summary.read_text())
            key = json.dumps(s.get("stacked_cells") or [str(summary)])
            by_job[key] = max(by_job.get(key, 0.0), s["wall_seconds"])
        return sum(by_job.values())

    def measure_job(self) -> dict:
        wall = cpu = 0.0
        for script in self.scripts():
            w, c = timed([sys.executable, str(script)], self.env, self.work)
            wall, cpu = wall + w, cpu + c
        training = self.training()
        return {"wall": wall, "cpu": cpu, "training": training, "fixed_wall": wall - training}

    def measure_phases(self, harness: Path) -> dict:
        """Each job's script under :data:`HARNESS`: seconds (wall, CPU) per component, summed over the jobs."""
        total: dict[str, list[float]] = {}
        for script in self.scripts():
            proc, wall, cpu = timed_command([sys.executable, str(harness), str(script)], self.work, self.env)
            lines = [line for line in proc.stdout.splitlines() if line.startswith("PHASES ")]
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"{script} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
            raw = json.loads(lines[-1][len("PHASES "):])
            start_wall = raw.pop("python start")[0]
            in_wall, in_cpu = raw.pop("in-script")
            rows = {"Python start": [start_wall, 0.0]}
            rows.update({k: v for k, v in raw.items() if k not in ("harness", "train_seeds", "run_cells")})
            ts, rc = raw.get("train_seeds", [0.0, 0.0]), raw.get("run_cells", [0.0, 0.0])
            nested = [raw.get(k, [0.0, 0.0]) for k in NESTED]
            rows["training (rounds, evaluations; without the kernels' load)"] = [
                ts[0] - sum(n[0] for n in nested), ts[1] - sum(n[1] for n in nested)]
            other = [rc[i] - ts[i] - sum(raw.get(k, [0.0, 0.0])[i] for k in
                                         ("read the dataset", "read partitions", "write the cells' files"))
                     for i in (0, 1)]
            rows["run_cells' other work (locks, tensors, engine)"] = other
            rest = "rest of the script (arguments, log lines)"  # its timer ran across run_cells
            rows[rest] = [rows[rest][i] - rc[i] for i in (0, 1)]
            rows["process end (after the script)"] = [wall - start_wall - in_wall, cpu - in_cpu]
            rows["whole process"] = [wall, cpu]
            for k, v in rows.items():
                t = total.setdefault(k, [0.0, 0.0])
                t[0] += v[0]
                t[1] += v[1]
        return total

    def measure_command(self) -> dict:
        # A stacked job's rule exists only while some of its cells are not trained: remove their outputs.
        for name in ("summary.json", "metrics.parquet"):
            for path in (self.work / "results" / "runs").rglob(name):
                path.unlink()
        wall, cpu = timed(self.snakemake("--until", *self.rules), self.env, self.work)
        training = self.training()
        return {"wall": wall, "cpu": cpu, "training": training, "fixed_wall": wall - training}


def summarize(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} ({min(values):.2f}–{max(values):.2f})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=REPO / "benchmarks" / "job_fixed_cost.yaml")
    ap.add_argument("--mirror", type=Path, help="data.mirror: a folder holding the config's dataset files")
    ap.add_argument("--against", help="a git revision to measure side by side (its tree in a worktree)")
    ap.add_argument("--rev", help="measure this git revision (in a worktree) instead of the live tree")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--what", choices=["job", "command", "both", "phases"], default="both",
                    help="phases: each component of the job (its script under timers) instead of the totals")
    ap.add_argument("--keep", type=Path, help="work in this folder (kept) instead of a temporary one")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    args = ap.parse_args(argv)

    base = args.keep or Path(tempfile.mkdtemp(prefix="job_fixed_cost_"))
    base.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load(args.config.read_text())
    if args.mirror is not None:
        config.setdefault("data", {})["mirror"] = str(args.mirror.resolve())
    config_path = base / "config.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))

    def at(revision: str) -> Tree:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", revision], check=True,
                             capture_output=True, text=True).stdout.strip()
        worktree = base / f"tree-{rev}"
        if not worktree.exists():
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), rev], check=True,
                           capture_output=True)
        return Tree(rev, worktree, base / rev, config_path)

    trees = [at(args.rev) if args.rev else Tree("live", REPO, base / "live", config_path)]
    if args.against:
        trees.insert(0, at(args.against))
    for tree in trees:
        print(f"[{tree.label}] first run (data, partitions, F*, the train jobs): not timed", flush=True)
        tree.setup()
    if args.what == "phases":
        harness = base / "harness.py"
        harness.write_text(HARNESS)
        phases = {t.label: [] for t in trees}
        for r in range(args.repeats):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                phases[tree.label].append(tree.measure_phases(harness))
                print(f"  repeat {r + 1} {tree.label}: whole process {phases[tree.label][-1]['whole process']}",
                      flush=True)
        names = list(dict.fromkeys(k for t in trees for m in phases[t.label] for k in m))
        print(f"\n{args.config.name}: where a job's time goes, seconds (wall / CPU), medians of {args.repeats} repeats")
        print(f"{'component':62s}" + "".join(f"{t.label:>22s}" for t in trees))
        for name in names:
            cells = []
            for t in trees:
                ms = [m[name] for m in phases[t.label] if name in m]
                cells.append(f"{statistics.median(v[0] for v in ms):8.3f} / {statistics.median(v[1] for v in ms):6.3f}"
                             if ms else "-")
            print(f"{name:62s}" + "".join(f"{c:>22s}" for c in cells))
        if args.json:
            args.json.write_text(json.dumps(phases, indent=1))
        print(f"folders: {base}")
        return
    kinds = ["job", "command"] if args.what == "both" else [args.what]
    results = {t.label: {k: [] for k in kinds} for t in trees}
    for r in range(args.repeats):
        for kind in kinds:
            for tree in trees if r % 2 == 0 else trees[::-1]:  # alternate the order: paired
                m = tree.measure_job() if kind == "job" else tree.measure_command()
                results[tree.label][kind].append(m)
                print(f"  repeat {r + 1} {tree.label:8s} {kind:7s} wall {m['wall']:.2f} s, CPU {m['cpu']:.2f} s, "
                      f"training {m['training']:.2f} s -> fixed {m['fixed_wall']:.2f} s", flush=True)
    jobs = len(trees[-1].rules)
    print(f"\n{args.config.name}: {jobs} train job(s); medians (min–max) of {args.repeats} repeats, seconds in all")
    print(f"{'tree':10s} {'what':8s} {'wall':>20s} {'CPU':>20s} {'training':>20s} {'fixed (wall - training)':>24s}")
    for tree in trees:
        for kind in kinds:
            ms = results[tree.label][kind]
            print(f"{tree.label:10s} {kind:8s} {summarize([m['wall'] for m in ms]):>20s} "
                  f"{summarize([m['cpu'] for m in ms]):>20s} {summarize([m['training'] for m in ms]):>20s} "
                  f"{summarize([m['fixed_wall'] for m in ms]):>24s}")
    if len(trees) == 2:
        for kind in kinds:
            old, new = results[trees[0].label][kind], results[trees[1].label][kind]
            ratio = [b["fixed_wall"] / a["fixed_wall"] for a, b in zip(old, new)]
            cpu = [b["cpu"] / a["cpu"] for a, b in zip(old, new)]
            print(f"{kind}: {trees[1].label} / {trees[0].label}, paired medians: fixed cost "
                  f"{statistics.median(ratio):.2f}×, CPU {statistics.median(cpu):.2f}×")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"folders: {base}")


if __name__ == "__main__":
    main()
