"""Memory and time of FedAc's epsilon jobs: one stacked job of ``fedac_epsilon_lam1e4`` at full size.

    python benchmarks/fedac_epsilon_memory.py                      # M = 2,048, K = 1 and 64, 4 rounds
    python benchmarks/fedac_epsilon_memory.py --M 256,8192 --K 64 --rounds 2 --json eps.json
    python benchmarks/fedac_epsilon_memory.py --rows 40000 --test-rows 10000      # a tenth, minutes

epsilon (Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §5, Figs. 6
and 7) is 400,000 training rows × 2,000 dense features (100,000 test rows). It cannot be downloaded
here, so this script writes an epsilon-shaped dataset in fedbench's own store format
(:func:`fedbench.data.store.write_dataset`: float32, unit-norm rows as LIBSVM's
``epsilon_normalized``, labels from a planted logistic model), loads it the way a workflow job does
(memory-mapped: :func:`fedbench.data.store.load_dataset`), and trains one job of the experiment as
the workflow stacks it (the 16-value η grid × 3 seeds of ``config/experiments/fedac.yaml``'s
``fedac_epsilon_lam1e4``, the ``shared`` partition, ``local.replacement``, float64, the vectorized
engine on CPU, its automatic chunk size) for a few rounds, each (algorithm, M, K) in its own
subprocess so that its peak RSS is its own. It prints, per job: the peak RSS, the set-up (data to
float64 tensors, cells), the seconds per round and per evaluation, and the whole job's time
estimated for the experiment's T = 4,096 steps (rounds = T / K, an evaluation every 512 steps).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
EXPERIMENT = "fedac_epsilon_lam1e4"
SPEC = yaml.safe_load((REPO / "config" / "experiments" / "fedac.yaml").read_text())["experiments"][EXPERIMENT]
ETAS = [float(v) for v in SPEC["sweep"]["grid"]["local.lr"]]
SEEDS = [int(v) for v in SPEC["seeds"]]
LAMBDA = float(SPEC["local"]["weight_decay"])
T_TOTAL, RECORD = 4096, 512
FEATURES = 2000
ALGORITHMS = {"fedac": ("fedac", {"variant": "I"}), "fedavg": ("fedavg", {}), "mb_sgd": ("mb_sgd", {}),
              "mb_ac_sgd": ("mb_ac_sgd", {"variant": "vanilla"})}


def write_epsilon_like(directory: Path, rows: int, test_rows: int, seed: int = 0) -> Path:
    """An epsilon-shaped dataset in the store format under ``directory/epsilon_like``: float32 rows
    of unit norm, 2,000 features, labels 0/1 from a planted logistic model. Returns its directory."""
    sys.path.insert(0, str(REPO / "src"))
    from fedbench.data.store import Dataset, write_dataset

    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, 1.0, FEATURES) * 4.0 / np.sqrt(FEATURES)

    def block(n):
        x = np.empty((n, FEATURES), dtype=np.float32)
        for a in range(0, n, 50_000):  # in blocks: no float64 copy of the whole array
            b = min(n, a + 50_000)
            x[a:b] = rng.standard_normal((b - a, FEATURES), dtype=np.float32)
            x[a:b] /= np.linalg.norm(x[a:b], axis=1, keepdims=True)
        z = x @ w.astype(np.float32)
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-z))).astype(np.int64)
        return x, y

    x, y = block(rows)
    xt, yt = block(test_rows)
    out = directory / "epsilon_like"
    write_dataset(out, Dataset("epsilon_like", x, y, xt, yt, num_classes=2),
                  source="benchmarks/fedac_epsilon_memory.py", params={"rows": rows, "test_rows": test_rows})
    return out


def job(data_dir: str, algorithm: str, m: int, k: int, rounds: int) -> dict:
    """One stacked job (η grid × seeds) for ``rounds`` rounds, evaluated at the start, halfway and
    at its last round; returns its peak RSS and times: a round (the engine's training calls after
    the first, which loads the compiled code), an evaluation, and the rest (set-up: data to float64
    tensors, partitions, cells; the first call's extra; the server updates, negligible here)."""
    sys.path.insert(0, str(REPO / "src"))
    import torch

    from fedbench.data.partition import make_partition
    from fedbench.data.store import load_dataset
    from fedbench.engine.clients.vectorized import VectorizedClients
    from fedbench.engine.rounds import loop
    from fedbench.engine.rounds.cell import Cell
    from fedbench.engine.rounds.loop import train_seeds

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    ds = load_dataset(data_dir)  # memory-mapped, as a workflow job
    name, hparams = ALGORITHMS[algorithm]
    eval_every = max(1, rounds // 2)  # two segments of rounds on the whole-rounds path: the second is timed
    specs, parts = [], {}
    for eta in ETAS:
        for s in SEEDS:
            specs.append({
                "experiment": EXPERIMENT, "dataset": "epsilon", "partition": "shared", "algorithm": f"{name},eta={eta}",
                "seed": s, "algorithm_name": name, "hparams": dict(hparams), "model": {"name": "binary_logreg"},
                "local": {"epochs": None, "steps": k, "batch_size": 1, "lr": eta, "lr_decay": 1.0,
                          "weight_decay": LAMBDA, "clip_norm": None, "replacement": True},
                "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": rounds,
                "eval_every": eval_every, "eval_initial": True, "uplink_entropy": False, "collapse": False,
                "dtype": "float64"})
            if s not in parts:
                parts[s] = make_partition(ds, {"scheme": "shared", "num_clients": m}, seed=s)
    spent = {"eval": 0.0, "depth": 0}
    calls = []  # (seconds, rounds) of each training call of the engine that ran rounds

    def timed(kind, real):
        def call(*a, **kw):
            if kind != "eval":  # the engine chooses its compiled paths for the whole run's rounds
                a[0].planned_rounds = T_TOTAL // k
            spent["depth"] += 1
            t = time.perf_counter()
            try:
                out = real(*a, **kw)
            finally:
                spent["depth"] -= 1
            dt = time.perf_counter() - t
            if kind == "eval" and spent["depth"] == 0:  # an evaluation inside another is counted once
                spent["eval"] += dt
            elif kind == "rounds" and out is not None:  # train_rounds(servers, hps, t0, t1, cells)
                calls.append((dt, out[0] - a[3] + 1))
            elif kind == "round":
                calls.append((dt, 1))
            return out
        return call

    VectorizedClients.train_cells = timed("round", VectorizedClients.train_cells)
    VectorizedClients.train_rounds = timed("rounds", VectorizedClients.train_rounds)
    Cell.evaluation = timed("eval", Cell.evaluation)
    loop.evaluate_cells = timed("eval", loop.evaluate_cells)
    out = train_seeds(specs, ds, [parts[s["seed"]] for s in specs], device="cpu", engine="vectorized")
    end = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    evals = 1 + rounds // eval_every
    # a round's time: the calls after the first (which loads the compiled code), where there are some
    timed_calls = calls[1:] if len(calls) > 1 else calls
    round_s = sum(dt for dt, _ in timed_calls) / max(1, sum(n for _, n in timed_calls))
    return {"algorithm": algorithm, "M": m, "K": k, "rounds": rounds, "cells": len(specs),
            "setup_s": end - t0 - rounds * round_s - spent["eval"], "eval_s": spent["eval"] / evals,
            "round_s": round_s, "job_s": end - t0, "peak_rss_mb": peak,
            "ok": sum(info["status"] == "ok" for _, info in out)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=400_000, help="training rows (epsilon: 400,000)")
    ap.add_argument("--test-rows", type=int, default=100_000, help="test rows (epsilon: 100,000)")
    ap.add_argument("--algorithms", default="fedac")
    ap.add_argument("--M", default="2048")
    ap.add_argument("--K", default="1,64")
    ap.add_argument("--rounds", type=int, default=4, help="rounds per job (evaluated halfway and at the end; "
                    "the first training call, which loads the compiled code, is counted in the set-up)")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--_job", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._job:
        print(json.dumps(job(**json.loads(args._job))))
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="fedbench-epsilon-") as tmp:
        t = time.perf_counter()
        data_dir = write_epsilon_like(Path(tmp), args.rows, args.test_rows)
        print(f"epsilon-shaped data: {args.rows:,} + {args.test_rows:,} rows × {FEATURES} float32 "
              f"({(args.rows + args.test_rows) * FEATURES * 4 / 2**30:.2f} GiB on disk), written in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
        print("| algorithm | M | K | cells | set-up (s) | s per round | s per evaluation | job at T = 4,096 (est., s) "
              "| peak RSS (GiB) |\n|---|---|---|---|---|---|---|---|---|", flush=True)
        for alg in args.algorithms.split(","):
            for m in (int(v) for v in args.M.split(",")):
                for k in (int(v) for v in args.K.split(",")):
                    spec = json.dumps({"data_dir": str(data_dir), "algorithm": alg, "m": m, "k": k,
                                       "rounds": args.rounds})
                    proc = subprocess.run([sys.executable, __file__, "--_job", spec], capture_output=True, text=True)
                    if proc.returncode != 0:
                        raise SystemExit(f"job {alg} M={m} K={k} failed:\n{proc.stderr[-3000:]}")
                    r = json.loads(proc.stdout.strip().splitlines()[-1])
                    full_rounds = T_TOTAL // k
                    evals = 1 + T_TOTAL // RECORD
                    r["job_T_s"] = r["setup_s"] + full_rounds * r["round_s"] + evals * r["eval_s"]
                    rows.append(r)
                    print(f"| {alg} | {m} | {k} | {r['cells']} | {r['setup_s']:.1f} | {r['round_s']:.3f} | "
                          f"{r['eval_s']:.1f} | {r['job_T_s']:.0f} | {r['peak_rss_mb'] / 1024:.2f} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
