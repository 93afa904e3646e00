"""The training jobs of FedAc's whole a9a λ = 1e-3 figure set, run as the workflow runs them, timed.

    python benchmarks/fedac_figure_set.py --device cuda --parallel 8 --json out.json
    python benchmarks/fedac_figure_set.py --M 4,64 --K 1,256 --T 512          # a part, on the CPU

Figs. 1 and 3 of Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020 are
``config/experiments/fedac.yaml``'s ``fedac_a9a_lam1e3``: 4 algorithms × 12 M (4 … 8,192) × 9 K
(1 … 256), each (algorithm, M, K) one job that trains its 18 η × 3 seeds stacked, T = 4,096 steps
per worker. Each job here is its own Python process, as a Snakemake job is (interpreter, torch and
CUDA start-up, the data's load, the stacked training with its evaluations), through
``benchmarks/fedac_speed.py``'s job (the a9a-shaped file it writes: 32,561 × 123, 14 ones a row).
``--groups-per-job N`` runs the K values of an (algorithm, M) N at a time in one process, one after
another, as the workflow's ``stack_groups_per_job: N`` does. ``--parallel`` processes run at once
(the workflow's ``--cores`` / ``--jobs``). The order alternates the
largest and the smallest jobs left (``--order interleave``): a large job's time is the GPU's, a
small one's is the host's (interpreter, imports, set-up), so the two overlap; ``--order largest``
runs the largest first.

Printed: the wall time of the whole set, the sum of the jobs' times, the slowest jobs, every job's
cells that stayed finite, and the peak memory (GPU: torch's peak allocation per job; host: the
largest job's RSS). With ``--limit-s`` no job starts after that many seconds: the set is then
reported as cut short, with the jobs that did not run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fedac_speed import ALGORITHMS, CELLS, SPEC, T_TOTAL, write_a9a_like  # noqa: E402


def run_jobs(jobs: list[dict], data_dir: str, device: str, env: dict, t_start: float,
             limit_s: float | None) -> list[dict]:
    """(algorithm, M, K) jobs one after another in one process: per job, the process's wall time
    (the same for all its jobs) and what the job reported."""
    if limit_s is not None and time.perf_counter() - t_start > limit_s:
        return [{**job, "skipped": True} for job in jobs]
    specs = [{"algorithm": j["algorithm"], "m": j["M"], "k": j["K"], "steps": j["T"], "data_dir": data_dir,
              "threads": 1, "generic": False, "device": device, "warm_round": False} for j in jobs]
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(HERE / "fedac_speed.py"), "--_job",
                           "fedbench_many:" + json.dumps({"jobs": specs})], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return [{**job, "wall_s": wall, "error": proc.stderr[-2000:]} for job in jobs]
    outs = json.loads(proc.stdout.strip().splitlines()[-1])
    return [{**job, "wall_s": wall, "process_jobs": len(jobs), "start_s": t0 - t_start, "job_s": out["seconds"],
             "setup_s": out["setup_seconds"], "ok": out["ok"], "cells": out["cells"],
             "peak_rss_mb": out["peak_rss_mb"], "peak_gpu_mb": out["peak_gpu_mb"]} for job, out in zip(jobs, outs)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ms_all = ",".join(str(m) for m in SPEC["sweep"]["grid"]["partition.num_clients"])
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS))
    ap.add_argument("--M", default=ms_all)
    ap.add_argument("--K", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--T", type=int, default=T_TOTAL, help="steps per worker (the figure set's: 4,096)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--parallel", type=int, default=1, help="processes at once")
    ap.add_argument("--groups-per-job", type=int, default=1,
                    help="(algorithm, M, K) jobs per process: the K values of an (algorithm, M), in order")
    ap.add_argument("--numba-threads", type=int, default=None,
                    help="NUMBA_NUM_THREADS of each job (default: the CPUs / --parallel)")
    ap.add_argument("--order", choices=["interleave", "largest"], default="interleave")
    ap.add_argument("--limit-s", type=float, default=None, help="start no job after this many seconds")
    ap.add_argument("--warm", action="store_true",
                    help="first, untimed: each algorithm at M = 4, 16, 1,024 and K = 1, 2 for one round, so that "
                         "numba's and Triton's caches hold every compiled variant (a machine's one-time cost)")
    ap.add_argument("--json", help="write every job's row to this file")
    args = ap.parse_args(argv)
    jobs = [{"algorithm": a, "M": int(m), "K": int(k), "T": args.T}
            for a in args.algorithms.split(",") for m in args.M.split(",") for k in args.K.split(",")]
    jobs.sort(key=lambda j: (-j["M"], j["algorithm"], j["K"]))  # the largest first
    n = args.groups_per_job
    bundles = []  # the processes: up to n K values of one (M, algorithm) each
    for key in dict.fromkeys((j["M"], j["algorithm"]) for j in jobs):
        same = [j for j in jobs if (j["M"], j["algorithm"]) == key]
        bundles += [same[i:i + n] for i in range(0, len(same), n)]
    if args.order == "interleave":
        bundles = [bundles[i // 2] if i % 2 == 0 else bundles[-1 - i // 2] for i in range(len(bundles))]
    root = Path(tempfile.mkdtemp(prefix="fedbench-fedac-set-"))
    write_a9a_like(root)
    threads = args.numba_threads or max(1, (os.cpu_count() or 1) // args.parallel)
    env = {**os.environ, "NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": "1"}
    print(f"# {len(jobs)} jobs ({CELLS} runs each, T = {args.T}) in {len(bundles)} processes of up to {n} jobs, on "
          f"{args.device}, {args.parallel} processes at a time ({args.order}), "
          f"{threads} numba threads a job, {os.cpu_count()} CPUs", flush=True)
    if args.warm:
        t0 = time.perf_counter()
        warm = [{"algorithm": a, "M": m, "K": k, "T": k} for a in args.algorithms.split(",") for m in (4, 16, 1024)
                for k in (1, 2)]
        with ThreadPoolExecutor(args.parallel) as pool:
            out = [r for rs in pool.map(lambda j: run_jobs([j], str(root), args.device, env, t0, None), warm)
                   for r in rs]
        bad = [r for r in out if "error" in r]
        print(f"Warm-up (compiled code into the caches, untimed below): {len(warm)} one-round jobs, "
              f"{time.perf_counter() - t0:.1f} s{', FAILED: ' + bad[0]['error'] if bad else ''}", flush=True)
    t_start = time.perf_counter()
    rows = []
    with ThreadPoolExecutor(args.parallel) as pool:
        futures = [pool.submit(run_jobs, b, str(root), args.device, env, t_start, args.limit_s) for b in bundles]
        for f in as_completed(futures):
            rows.extend(f.result())
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=1))
    wall = time.perf_counter() - t_start
    done = [r for r in rows if "job_s" in r]
    failed = [r for r in rows if "error" in r]
    skipped = [r for r in rows if r.get("skipped")]
    print(f"\nWall time of the set: {wall:.1f} s ({wall / 60:.2f} min); {len(done)} jobs ran, {len(failed)} failed, "
          f"{len(skipped)} not started (--limit-s)")
    if done:
        total = sum(r["wall_s"] / r["process_jobs"] for r in done)
        processes = sum(1 / r["process_jobs"] for r in done)
        print(f"Sum of the processes' times: {total:.1f} s; of which the jobs' set-up (imports excluded) "
              f"{sum(r['setup_s'] for r in done):.1f} s; mean process {total / processes:.2f} s")
        print(f"Peak memory: GPU {max(r['peak_gpu_mb'] for r in done):.0f} MB (torch's peak allocation, largest job); "
              f"host RSS {max(r['peak_rss_mb'] for r in done):.0f} MB (largest job)")
        print(f"Cells that stayed finite: {sum(r['ok'] for r in done)} of {sum(r['cells'] for r in done)}")
        print("Slowest jobs: " + "; ".join(f"{r['algorithm']} M={r['M']} K={r['K']} {r['job_s']:.1f} s"
                                           for r in sorted(done, key=lambda r: -r["job_s"])[:6]))
    for r in failed[:3]:
        print(f"FAILED {r['algorithm']} M={r['M']} K={r['K']}:\n{r['error']}")


if __name__ == "__main__":
    main()
