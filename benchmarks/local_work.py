"""Heterogeneous local work (τ_i ~ Uniform{2..E} epochs, ``local.epochs`` a distribution) in the
vectorized engine: its padding efficiency, and whether grouping clients by step count pays.

    python benchmarks/local_work.py              # both workloads, a markdown table
    python benchmarks/local_work.py --rounds 5   # quicker
    python benchmarks/local_work.py --overheads 16,64   # also plan_groups with these step overheads

The vectorized engine trains a round's clients in lockstep: a client with K_k < S steps runs
S − K_k padded no-op steps. :func:`fedbench.engine.vectorized.plan_groups` groups clients by step
count (a dynamic programme trading padded client-steps against per-step launches, weighted by
``step_overhead``). Side by side in one process, per workload and local-work setting:

- ``sequential``: the reference, one client at a time (no padding);
- ``vectorized, planned``: the engine's default plan (CPU step_overhead 4);
- ``vectorized, one group``: every client in one group (step_overhead → ∞): the most padding;
- ``vectorized, group per τ``: one group per distinct step count (step_overhead 0): no padding
  across counts, the most vectorized steps.

Each row gives the padding efficiency (real / executed client-steps), seconds per round (the
mean over a whole run, one evaluation included; the better of two runs after a warm-up) and the
ratio to the sequential engine. Workloads: (A) paper-shaped,
15 clients, Dirichlet(0.1) over the embedded digits data, MLP 64-64, B = 32 (Sharma, Panda & Joshi,
TMLR 2023, §6, with digits for CIFAR-10 / VGG-11); (B) many small clients, 100 clients of
log-normal size (σ = 0.5) over digits, logistic regression, B = 8. Full participation, float32, FedNova.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from fedbench.data.digits import load_digits  # noqa: E402
from fedbench.data.partition import make_partition  # noqa: E402
from fedbench.engine import vectorized  # noqa: E402
from fedbench.engine.allocator import keep_freed_memory  # noqa: E402
from fedbench.engine.loop import train  # noqa: E402

WORKLOADS = {
    "A: 15 clients, Dir(0.1), MLP 64-64, B=32": (
        {"scheme": "dirichlet", "alpha": 0.1, "num_clients": 15, "min_size": 8},
        {"name": "mlp", "hidden": [64, 64]}, 32),
    "B: 100 clients, log-normal sizes, logreg, B=8": (
        {"scheme": "iid", "num_clients": 100, "sigma": 0.5, "min_size": 2}, {"name": "logreg"}, 8),
}
WORK = {
    "E = 5 fixed": 5,
    "τ_i ~ U{2..5} per round": {"distribution": "uniform", "low": 2, "high": 5, "per": "round"},
    "τ_i ~ U{2..7} per round": {"distribution": "uniform", "low": 2, "high": 7, "per": "round"},
}
MODES = {"sequential": None, "vectorized, planned": 4.0, "vectorized, one group": 1e12,
         "vectorized, group per τ": 0.0}


def run(ds, part, model, batch, epochs, mode, rounds):
    overhead = MODES[mode]
    if overhead is not None:
        vectorized.DEFAULT_STEP_OVERHEAD["cpu"] = overhead
    spec = {"experiment": "b", "dataset": "digits", "partition": "p", "algorithm": "fednova", "seed": 0,
            "algorithm_name": "fednova", "hparams": {}, "model": model,
            "local": {"epochs": epochs, "steps": None, "batch_size": batch, "lr": 0.05, "lr_decay": 1.0,
                      "weight_decay": 0.0, "clip_norm": None},
            "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": rounds, "eval_every": rounds,
            "target_accuracy": 0.99, "dtype": "float32"}
    t0 = time.perf_counter()
    _, info = train(spec, ds, part, device="cpu", engine="sequential" if overhead is None else "vectorized")
    return info["padding_efficiency"], (time.perf_counter() - t0) / rounds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--overheads", default="",
                    help="extra vectorized rows: comma-separated plan_groups step overheads, e.g. 16,64")
    args = ap.parse_args()
    for value in filter(None, args.overheads.split(",")):
        MODES[f"vectorized, overhead {float(value):g}"] = float(value)
    torch.set_num_threads(args.threads)
    keep_freed_memory()
    ds = load_digits()
    print("| workload | local work | engine | padding efficiency | s / round | vs sequential |")
    print("|---|---|---|---:|---:|---:|")
    for wname, (pcfg, model, batch) in WORKLOADS.items():
        part = make_partition(ds, pcfg, seed=0)
        for lname, epochs in WORK.items():
            base = None
            for mode in MODES:
                run(ds, part, model, batch, epochs, mode, 1)  # warm-up (first-call costs)
                eff, sec = min(run(ds, part, model, batch, epochs, mode, args.rounds) for _ in range(2))
                base = sec if base is None else base
                print(f"| {wname} | {lname} | {mode} | {eff:.3f} | {sec:.4f} | {base / sec:.2f}× |", flush=True)
    vectorized.DEFAULT_STEP_OVERHEAD["cpu"] = 4.0


if __name__ == "__main__":
    main()
