"""Heterogeneous local work (τ_i ~ Uniform{2..E} epochs, ``local.epochs`` a distribution) in the
vectorized engine: its padding efficiency and speed, old and new, side by side.

    python benchmarks/local_work.py                      # both workloads, a markdown table
    python benchmarks/local_work.py --rounds 5 --repeats 3
    python benchmarks/local_work.py --overheads 8,128    # also the padded floor plan with these overheads
    python benchmarks/local_work.py --probe              # measure the CPU step overhead instead

The vectorized engine trains a chunk of clients in lockstep. A client with K_k < S steps either
runs S − K_k padded no-op steps (masked by ``torch.where``; CUDA graphs, and the engine before
2026-11-25), grouped by step count by :func:`fedbench.engine.clients.chunking.plan_groups` (a dynamic
programme trading padded client-steps against per-step launches, weighted by ``step_overhead``,
among the groupings whose every group keeps a padding efficiency ≥ ``min_efficiency``), or, in
eager chunks now, leaves the chunk once its steps are done (``VectorizedClients.retire_finished``:
the clients are sorted by K_k, so the vmapped step runs over the prefix still stepping; no padded
step is executed). Side by side in one process, per workload and local-work setting:

- ``sequential``: the reference, one client at a time (no padding);
- ``vectorized, old: padded, overhead 4, no floor``: the engine before (padded steps, CPU step
  overhead 4, no floor);
- ``vectorized, padded, floor 0.9, overhead 32``: padded steps grouped by step count under the
  padding floor with the measured CPU step overhead (the CUDA-graph plan, run on CPU);
- ``vectorized, new: finished clients leave``: the engine's default on CPU (one group, chunked);
- ``vectorized, padded, floor 0.9, overhead X`` (``--overheads``): the padded floor plan with another overhead.

Each row gives the padding efficiency (real / executed client-steps over the run), the lowest
padding efficiency of any one round, seconds per round (the mean over a run of ``--rounds``
rounds, one evaluation included) as the median over ``--repeats`` runs with the range, and the
ratio to the sequential engine (median over the repeats of the per-repeat ratio, with its range).
The repeats interleave the modes (one run of each mode per repeat, after one warm-up round each),
so a change of load on this shared machine hits every mode alike. Workloads: (A) paper-shaped,
15 clients, Dirichlet(0.1) over the embedded digits data, MLP 64-64, B = 32 (Sharma, Panda & Joshi,
TMLR 2023, §6, with digits for CIFAR-10 / VGG-11); (B) many small clients, 100 clients of
log-normal size (σ = 0.5) over digits, logistic regression, B = 8. Full participation, float32, FedNova.

``--probe`` measures the cost model's ``step_overhead`` on this machine with the engine itself
(its padded-step loop): for G clients of equal step count K (no padding), the time of one vectorized step is
(T(K = 12) − T(K = 4)) / 8 (set-up, ``client_final`` and aggregation cancel); a straight line
t(G) = a + b·G over G ∈ {2, 4, …, 64} gives the fixed cost a of a step and the cost b of one
client in it; a / b is the step overhead in client-steps, and t(1) / b (G = 1: the engine's lone
client, run without vmap) the cost of a lone client's step.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from fedbench.algorithms import get_algorithm  # noqa: E402
from fedbench.data.digits import load_digits  # noqa: E402
from fedbench.data.partition import make_partition  # noqa: E402
from fedbench.engine.clients import chunking, vectorized  # noqa: E402
from fedbench.engine.clients.allocator import keep_freed_memory  # noqa: E402
from fedbench.engine.rounds.loop import train  # noqa: E402
from fedbench.models import build_model, make_grad_fn  # noqa: E402

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
DEFAULTS = (vectorized.VectorizedClients.retire_finished, chunking.DEFAULT_STEP_OVERHEAD["cpu"],
            vectorized.VectorizedClients.min_padding_efficiency)
FLOOR = chunking.PADDING_EFFICIENCY_FLOOR
#: mode → (retire_finished, CPU step overhead, padding floor) of the vectorized engine; None: sequential
MODES = {"sequential": None,
         "vectorized, old: padded, overhead 4, no floor": (False, 4.0, 0.0),
         f"vectorized, padded, floor {FLOOR:g}, overhead {DEFAULTS[1]:g}": (False, DEFAULTS[1], FLOOR),
         "vectorized, new: finished clients leave": DEFAULTS}


def configure(plan):
    v = vectorized.VectorizedClients
    v.retire_finished, chunking.DEFAULT_STEP_OVERHEAD["cpu"], v.min_padding_efficiency = plan


class RoundEfficiency:
    """Records each round's padding efficiency (the engine's step counters before and after)."""

    def __init__(self):
        self.rounds: list[float] = []
        self._train_cells = vectorized.VectorizedClients.train_cells
        recorder = self

        def train_cells(engine, *args, **kwargs):
            executed, real = engine.executed_steps, engine.real_steps
            out = recorder._train_cells(engine, *args, **kwargs)
            if engine.executed_steps > executed:
                recorder.rounds.append((engine.real_steps - real) / (engine.executed_steps - executed))
            return out

        vectorized.VectorizedClients.train_cells = train_cells


def run(ds, part, model, batch, epochs, mode, rounds, recorder):
    plan = MODES[mode]
    if plan is not None:
        configure(plan)
    spec = {"experiment": "b", "dataset": "digits", "partition": "p", "algorithm": "fednova", "seed": 0,
            "algorithm_name": "fednova", "hparams": {}, "model": model,
            "local": {"epochs": epochs, "steps": None, "batch_size": batch, "lr": 0.05, "lr_decay": 1.0,
                      "weight_decay": 0.0, "clip_norm": None},
            "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": rounds, "eval_every": rounds,
            "target_accuracy": 0.99, "dtype": "float32"}
    recorder.rounds.clear()
    t0 = time.perf_counter()
    _, info = train(spec, ds, part, device="cpu", engine="sequential" if plan is None else "vectorized")
    sec = (time.perf_counter() - t0) / rounds
    return info["padding_efficiency"], min(recorder.rounds, default=1.0), sec


def compare(args, ds):
    recorder = RoundEfficiency()
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    print("| workload | local work | engine | padding efficiency (run / worst round) | s / round, median (range) "
          "| vs sequential, median (range) |")
    print("|---|---|---|---:|---:|---:|")
    for wname, (pcfg, model, batch) in WORKLOADS.items():
        part = make_partition(ds, pcfg, seed=0)
        for lname, epochs in WORK.items():
            for mode in MODES:
                run(ds, part, model, batch, epochs, mode, 1, recorder)  # warm-up (first-call costs)
            secs = {mode: [] for mode in MODES}
            effs = {}
            for _ in range(args.repeats):
                for mode in MODES:
                    eff, worst, sec = run(ds, part, model, batch, epochs, mode, args.rounds, recorder)
                    secs[mode].append(sec)
                    effs[mode] = (eff, worst)
            base = secs["sequential"]
            for mode in MODES:
                ratios = [b / s for b, s in zip(base, secs[mode])]
                eff, worst = effs[mode]
                print(f"| {wname} | {lname} | {mode} | {eff:.3f} / {worst:.3f} | {statistics.median(secs[mode]):.4f} "
                      f"({min(secs[mode]):.4f}–{max(secs[mode]):.4f}) | {statistics.median(ratios):.2f}× "
                      f"({min(ratios):.2f}–{max(ratios):.2f}) |", flush=True)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)


def probe(args, ds):
    """The fixed cost a and the per-client cost b of one vectorized step, t(G) = a + b·G (see the
    module docstring); prints a, b and a / b per workload's model and batch size."""
    rng = np.random.default_rng(0)
    x = torch.as_tensor(ds.x_train)
    y = torch.as_tensor(ds.y_train, dtype=torch.int64)
    sizes = (1, 2, 4, 8, 16, 32, 64)
    clients = [np.sort(rng.choice(len(x), 64, replace=False)) for _ in range(max(sizes))]
    algo = get_algorithm("fednova")
    hp = {"lr": 0.05, "weight_decay": 0.0, "clip_norm": None}
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    print("| model, batch | G: ms per step (min of repeats) | a (ms) | b (ms / client) | a / b | t(1) / b |")
    print("|---|---|---:|---:|---:|---:|")
    for _, model_cfg, batch in WORKLOADS.values():
        model = build_model(model_cfg, ds.feature_shape, ds.num_classes)
        grad_fn = make_grad_fn(model)
        server = algo.server_init(model.init(np.random.default_rng(0)), {}, len(clients))
        per_step = []
        for g in sizes:
            sampled = np.arange(g)
            times = {}
            for k in (4, 12):
                local = {"epochs": None, "steps": k, "batch_size": batch}
                engine = vectorized.VectorizedClients(algo, model, grad_fn, x, y, clients, local, 0,
                                                      chunk_size=max(sizes))
                engine.fast_steps = False
                engine.retire_finished = False
                engine.train_round(server, sampled, hp, 1)  # warm-up
                best = float("inf")
                for t in range(args.repeats):
                    t0 = time.perf_counter()
                    engine.train_round(server, sampled, hp, 2 + t)
                    best = min(best, time.perf_counter() - t0)
                times[k] = best
            per_step.append((times[12] - times[4]) / 8)
        b, a = np.polyfit(np.asarray(sizes[1:], dtype=float), np.asarray(per_step[1:]), 1)
        cells = ", ".join(f"{g}: {1e3 * t:.3f}" for g, t in zip(sizes, per_step))
        print(f"| {model_cfg['name']}, B={batch} | {cells} | {1e3 * a:.3f} | {1e3 * b:.4f} | {a / b:.1f} "
              f"| {per_step[0] / b:.1f} |", flush=True)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--overheads", default="",
                    help="extra vectorized rows: comma-separated plan_groups step overheads (with the floor)")
    ap.add_argument("--probe", action="store_true", help="measure the CPU step overhead instead")
    args = ap.parse_args()
    for value in filter(None, args.overheads.split(",")):
        MODES[f"vectorized, padded, floor {FLOOR:g}, overhead {float(value):g}"] = (False, float(value), FLOOR)
    torch.set_num_threads(args.threads)
    keep_freed_memory()
    ds = load_digits()
    try:
        probe(args, ds) if args.probe else compare(args, ds)
    finally:
        configure(DEFAULTS)


if __name__ == "__main__":
    main()
