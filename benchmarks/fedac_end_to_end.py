"""FedAc's a9a figure set end to end as a user runs it, against the authors' code's summed run time.

    python benchmarks/fedac_end_to_end.py --mirror /path/to/libsvm-mirror --authors /path/to/FedAc-NeurIPS20
    python benchmarks/fedac_end_to_end.py ... --authors-only            # the authors' sample alone

Figs. 1 and 3 of Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §5:
``config/experiments/fedac.yaml``'s ``fedac_a9a_lam1e3`` on the real a9a (4 algorithms × 12 M ×
9 K × 18 η × 3 seeds = 23,328 runs, T = 4,096 steps per worker).

1. **fedbench, the whole command.** A fresh clone of ``--rev`` (its own ``src`` first on
   ``PYTHONPATH``; numba's cache starts cold) runs ``snakemake --cores 2 --configfile cfg.yaml``,
   cfg.yaml being ``fedac.yaml`` cut to ``fedac_a9a_lam1e3`` and its dataset with ``data.mirror``
   set to ``--mirror`` (a folder holding ``a9a``, ``a9a.t`` and their ``SHA256SUMS``, as a
   ``data.mirror``; ``trust_mirror_checksums``). Measured:
   the command's wall and CPU time (user + sys of every process it started), and from each train
   job's last log line (``[fedbench] job: …``) its time and its training time (the cells'
   ``wall_seconds``). Each algorithm is charged its jobs' time plus a share of everything else in
   the command (Snakemake, data, partitions, F*, collect, tables, report) in proportion to its jobs'
   time.
2. **The authors' code, a stratified sample.** Their ``logistic.py`` (a checkout given by
   ``--authors``; it has no license, so it is imported from there, never copied) runs one η (0.1)
   and seed at every algorithm × M ∈ ``--sample-M`` × K ∈ ``--sample-K`` on the same a9a file, each
   run in its own process (``benchmarks/fedac_speed.py``'s ``authors_run``); runs above
   ``--max-worker-steps`` worker-steps are timed on fewer steps and scaled to T. Per (algorithm, K)
   a run's time is fitted as a + b·M (least squares over the sampled M); K not sampled is
   interpolated in log K between its sampled neighbours; the figure set's authors' time is that
   summed over the 12 M × 9 K × 54 runs (18 η × 3 seeds) of each algorithm.

Printed per algorithm: the authors' summed time, fedbench's time as the user runs it (its share of
the whole command's CPU time, and of its wall time on 2 cores), the training loops' own time, the
two ratios, and the share of the command outside the training loops. The authors' code runs on one
core: the CPU-time ratio compares like with like, the wall ratio is what a user of ``--cores 2``
waits (the authors' runs are independent, so two at a time would halve theirs: both are printed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from fedac_speed import AUTHORS_ETA, CELLS, EXPERIMENT, T_TOTAL, subprocess_json  # noqa: E402
from quick_files import fresh_clone, timed_command  # noqa: E402

ALGORITHMS = ("fedac", "fedavg", "mb_sgd", "mb_ac_sgd")
JOB_LINE = re.compile(r"\[fedbench\] job: ([\d.]+) s since its process started: .* of which ([\d.]+) s training")
WROTE = re.compile(r"\[fedbench\] wrote results/runs/[^/]+/[^/]+/[^/]+/([a-z_]+)[,/]")


def figure_set_grid(experiment: str = EXPERIMENT) -> tuple[list[int], list[int]]:
    """(M values, K values) of an a9a experiment of ``fedac.yaml`` (``fedac_a9a_lam1e3``)."""
    spec = yaml.safe_load((ROOT / "config/experiments/fedac.yaml").read_text())["experiments"][experiment]
    ms = [int(m) for m in spec["sweep"]["grid"]["partition.num_clients"]]
    ks = [int(k) for k in spec["sweep"]["zip"]["local.steps"]]
    return ms, ks


def cut_config(mirror: Path, experiment: str = EXPERIMENT) -> dict:
    """``fedac.yaml`` with only ``experiment`` (``fedac_a9a_lam1e3``), its dataset, and
    ``data.mirror`` (its SHA256SUMS trusted, as for the real a9a in the tests)."""
    cfg = yaml.safe_load((ROOT / "config/experiments/fedac.yaml").read_text())
    cfg = {k: v for k, v in cfg.items() if not k.startswith("_")}
    cfg["experiments"] = {experiment: cfg["experiments"][experiment]}
    cfg["datasets"] = {"a9a": cfg["datasets"]["a9a"]}
    cfg["data"] = {**(cfg.get("data") or {}), "mirror": str(mirror), "trust_mirror_checksums": True}
    return cfg


def run_workflow(rev: str, mirror: Path, keep: Path | None, experiment: str = EXPERIMENT) -> dict:
    """The whole command in a fresh clone; its times and the train jobs' times per algorithm."""
    with fresh_clone(rev, "fedbench-fedac-e2e-") as (clone, env):
        (clone / "cfg.yaml").write_text(yaml.safe_dump(cut_config(mirror, experiment), sort_keys=False))
        cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "cfg.yaml"]
        proc, wall, cpu = timed_command(cmd, clone, env)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "snakemake.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-5000:]}")
        jobs = defaultdict(lambda: {"jobs": 0, "job_s": 0.0, "training_s": 0.0})
        for log in (clone / "results/logs").rglob("*.log"):
            text = log.read_text(errors="replace")
            m, a = JOB_LINE.search(text), WROTE.search(text)
            if m and a:
                row = jobs[a.group(1)]
                row["jobs"] += 1
                row["job_s"] += float(m.group(1))
                row["training_s"] += float(m.group(2))
        runs = sum(1 for _ in (clone / "results/runs" / experiment).rglob("summary.json"))
        if keep is not None:  # the tables (scorecard.md among them) and the plots, for the docs
            for kept in ("tables", "plots"):
                if (clone / "results" / kept).is_dir():
                    shutil.copytree(clone / "results" / kept, keep / kept, dirs_exist_ok=True)
        return {"wall_s": wall, "cpu_s": cpu,
                "runs": runs, "per_algorithm": dict(jobs)}


def authors_sample(authors: str, mirror: Path, ms: list[int], ks: list[int], max_worker_steps: int) -> list[dict]:
    """The authors' time of one run at each algorithm × M × K of the sample (seconds, scaled to T)."""
    root = Path(tempfile.mkdtemp(prefix="fedbench-fedac-authors-"))
    (root / "libsvm_datasets").mkdir()
    for name in ("a9a", "a9a.t"):
        (root / "libsvm_datasets" / name).symlink_to(Path(mirror).resolve() / name)
    rows = []
    for algorithm in ALGORITHMS:
        for m in ms:
            for k in ks:
                steps = max(k, min(T_TOTAL, max_worker_steps // m) // k * k)
                res = subprocess_json(["--_job", "authors:" + json.dumps(
                    {"algorithm": algorithm, "m": m, "k": k, "steps": steps, "eta": AUTHORS_ETA, "authors": authors,
                     "data_dir": str(root)})])
                rows.append({"algorithm": algorithm, "M": m, "K": k, "timed_steps": steps,
                             "run_s": res["seconds"] * T_TOTAL / steps})
                print(f"  authors {algorithm} M={m} K={k}: {rows[-1]['run_s']:.3f} s a run "
                      f"({steps} steps timed)", flush=True)
    return rows


def authors_total(sample: list[dict], ms: list[int], ks: list[int]) -> dict[str, float]:
    """The authors' summed time of the whole figure set per algorithm (seconds), from the sample."""
    out = {}
    for algorithm in ALGORITHMS:
        fits = {}
        for k in sorted({r["K"] for r in sample if r["algorithm"] == algorithm}):
            pts = [(r["M"], r["run_s"]) for r in sample if r["algorithm"] == algorithm and r["K"] == k]
            x = np.array([[1.0, m] for m, _ in pts])
            a, b = np.linalg.lstsq(x, np.array([t for _, t in pts]), rcond=None)[0]
            fits[k] = (a, b)
        known = sorted(fits)

        def run_s(m, k, fits=fits, known=known):
            lo = max([q for q in known if q <= k], default=known[0])
            hi = min([q for q in known if q >= k], default=known[-1])
            w = 0.0 if hi == lo else (math.log(k) - math.log(lo)) / (math.log(hi) - math.log(lo))
            a = (1 - w) * fits[lo][0] + w * fits[hi][0]
            b = (1 - w) * fits[lo][1] + w * fits[hi][1]
            return max(a + b * m, 0.0)

        out[algorithm] = sum(run_s(m, k) for m in ms for k in ks) * CELLS
    return out


def hms(seconds: float) -> str:
    h, rest = divmod(round(seconds), 3600)
    m, s = divmod(rest, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {s:02d} s"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirror", type=Path, required=True, help="a folder with the real a9a and a9a.t")
    ap.add_argument("--authors", help="a checkout of FedAc-NeurIPS20 (without it: fedbench only)")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--sample-M", default="4,64,1024,8192")
    ap.add_argument("--sample-K", default="1,16,256")
    ap.add_argument("--max-worker-steps", type=int, default=4_200_000,
                    help="an authors' run of more worker-steps (M × T) is timed on fewer steps and scaled")
    ap.add_argument("--experiment", default=EXPERIMENT, help="another a9a experiment of fedac.yaml "
                    "(fedac_a9a_lam1e2: Figs. 4 and 5), with --workflow-only: its command and scorecard")
    ap.add_argument("--authors-only", action="store_true")
    ap.add_argument("--workflow-only", action="store_true")
    ap.add_argument("--from-json", type=Path, help="print the report of an earlier --json (both parts in it)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", type=Path,
                    help="keep the command's console output, its tables (scorecard.md among them) and plots here")
    args = ap.parse_args(argv)
    for name in ("a9a", "a9a.t"):
        if not (args.mirror / name).is_file():
            ap.error(f"--mirror {args.mirror}: no file {name} (a data.mirror folder of LIBSVM files)")
    ms, ks = figure_set_grid(args.experiment)
    out = json.loads(args.from_json.read_text()) if args.from_json else {}
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    out.setdefault("commit", rev)
    out.setdefault("date", time.strftime("%Y-%m-%d %H:%M %Z"))
    print(f"{out['date']}: commit {out['commit']}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}", flush=True)
    if not args.from_json and not args.authors_only:
        out["workflow"] = run_workflow(rev, args.mirror, args.keep, args.experiment)
        print(f"fedbench: {hms(out['workflow']['wall_s'])} wall, {hms(out['workflow']['cpu_s'])} CPU, "
              f"{out['workflow']['runs']} runs", flush=True)
    if not args.from_json and not args.workflow_only and args.authors:
        sm, sk = [int(v) for v in args.sample_M.split(",")], [int(v) for v in args.sample_K.split(",")]
        out["authors_sample"] = authors_sample(str(Path(args.authors).resolve()), args.mirror, sm, sk,
                                               args.max_worker_steps)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    if "workflow" in out and "authors_sample" in out:
        report(out, ms, ks)


def report(out: dict, ms: list[int], ks: list[int]) -> None:
    wf = out["workflow"]
    per = wf["per_algorithm"]
    authors = authors_total(out["authors_sample"], ms, ks)
    jobs_s = sum(r["job_s"] for r in per.values())
    training_s = sum(r["training_s"] for r in per.values())
    outside = wf["cpu_s"] - jobs_s  # Snakemake, data, partitions, F*, collect, tables, report
    print(f"\nThe whole command: {hms(wf['wall_s'])} wall, {hms(wf['cpu_s'])} CPU; train jobs {hms(jobs_s)} "
          f"(training {hms(training_s)}); outside the training loops {100 * (1 - training_s / wf['cpu_s']):.1f} % "
          f"of the CPU time\n")
    print("| algorithm | runs | the authors' code, summed (est.) | fedbench as run: CPU share | ratio (CPU) | "
          "fedbench wall share | ratio (wall; authors 2 at a time) | training loops | ratio (loops) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for algorithm in ALGORITHMS:
        if algorithm not in per:
            continue
        r = per[algorithm]
        share = r["job_s"] / jobs_s
        cpu = r["job_s"] + outside * share
        wall = wf["wall_s"] * share
        a = authors[algorithm]
        print(f"| {algorithm} | {len(ms) * len(ks) * CELLS} | {hms(a)} | {hms(cpu)} | **{a / cpu:.1f}×** | "
              f"{hms(wall)} | {a / wall:.1f}× ({a / 2 / wall:.1f}×) | {hms(r['training_s'])} | "
              f"{a / r['training_s']:.1f}× |")


if __name__ == "__main__":
    main()
