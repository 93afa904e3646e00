"""Where stacking clients pays on a CPU: one local step's gradient, alone vs vmapped over G clients;
and (``--sweep``) what stacking a learning-rate sweep's cells in one job gains.

    python benchmarks/stacking.py            # a table in seconds (1 torch thread)
    python benchmarks/stacking.py --threads 2
    python benchmarks/stacking.py --sweep    # 13 lrs x 3 seeds of W3-shaped cells: stacked vs one at a time

For each model and batch size, side by side in one process: the per-client time of G gradient
calls on one client's parameters each (what the sequential engine and a one-client chunk do),
and of one ``vmap`` over the G stacked clients (what a chunk of G does). Their ratio is what
stacking gains (> 1) or loses (< 1). The vectorized engine's automatic rule
(:data:`fedbench.engine.clients.chunking.CPU_STACK_MAX_MACS`: stack on CPU only while parameters × B
is below 1 M) was set from this table; benchmarks/RESULTS.md records a run.

``--sweep`` (:func:`sweep`): a 13-value learning-rate grid × 3 seeds of W3-shaped cells (logistic
regression, 123 features, 2 classes, 1,024 clients × 32 generated samples as in
``benchmarks/run.py``, B = 1, 64 local steps, full participation, float32, FedAvg), 39 cells,
trained (1) stacked in one :func:`fedbench.engine.rounds.loop.train_seeds` call (hyperparameter
stacking, :mod:`fedbench.engine.rounds.stacking`) and (2) one cell at a time
(:func:`fedbench.engine.rounds.loop.train`),
each mode in its own subprocess so that its peak RSS is its own. Prints seconds, the ratio, peak
RSS, and the largest relative difference of the final parameters between the two modes.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.func import vmap  # noqa: E402

from fedbench.engine.clients.allocator import keep_freed_memory  # noqa: E402
from fedbench.engine.clients.chunking import CPU_STACK_MAX_MACS  # noqa: E402
from fedbench.models import build_model, make_grad_fn, tree_numel  # noqa: E402

# name, model config, input shape, classes, batch size
CASES = [
    ("W3 logistic regression (a9a)", {"name": "logreg"}, (123,), 2, 1),
    ("digits logistic regression", {"name": "logreg"}, (64,), 10, 10),
    ("digits MLP 64-64", {"name": "mlp", "hidden": [64, 64]}, (64,), 10, 16),
    ("MNIST logistic regression", {"name": "logreg"}, (784,), 10, 50),
    ("MLP 784-50-10", {"name": "mlp", "hidden": [50]}, (784,), 10, 50),
    ("MLP 784-100-100-10", {"name": "mlp", "hidden": [100, 100]}, (784,), 10, 50),
    ("2NN 784-200-200-10, B=10", {"name": "mlp", "hidden": [200, 200]}, (784,), 10, 10),
    ("2NN 784-200-200-10, B=50 (W1)", {"name": "mlp", "hidden": [200, 200]}, (784,), 10, 50),
]


def per_client_seconds(fn, g: int, min_time: float = 0.3) -> float:
    """Mean seconds per client of ``fn()`` (which handles g clients), after one warm-up call."""
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_time:
        fn()
        n += 1
    return (time.perf_counter() - t0) / n / g


def measure(cfg: dict, shape: tuple, classes: int, batch: int, g: int) -> tuple[int, float, float]:
    """(parameters d, seconds per client alone, seconds per client vmapped over g)."""
    model = build_model(cfg, shape, classes)
    grad_fn = make_grad_fn(model)
    params = model.init(np.random.default_rng(0))
    x = torch.randn(g, batch, *shape)
    y = torch.randint(0, classes, (g, batch))
    stacked = {k: v.expand(g, *v.shape).clone() for k, v in params.items()}

    def alone():
        for i in range(g):
            grad_fn({k: v[i] for k, v in stacked.items()}, x[i], y[i])

    batched = vmap(grad_fn)
    return tree_numel(params), per_client_seconds(alone, g), per_client_seconds(lambda: batched(stacked, x, y), g)


SWEEP_LRS = [float(v) for v in np.logspace(-3, 1, 13)]  # 0.001 ... 10, 13 values
SWEEP_SEEDS = (0, 1, 2)


def sweep_cells(clients: int = 1024, n: int = 32, steps: int = 64, rounds: int = 3):
    """The sweep's dataset, cell specs (lr-major, then seed) and per-cell partitions."""
    from fedbench.data.partition import make_partition
    from fedbench.data.store import Dataset

    rng = np.random.default_rng(0)
    d, classes, total = 123, 2, clients * n
    x = rng.random((total + 2000, d), dtype=np.float32)  # as benchmarks/run.py: U[0,1), linear teacher
    teacher = rng.normal(size=(d, classes)).astype(np.float32)
    y = np.argmax((x - 0.5) @ teacher + rng.gumbel(size=(len(x), classes)).astype(np.float32), axis=1)
    ds = Dataset("w3", x[:total], y[:total], x[total:], y[total:], num_classes=classes)
    parts = {s: make_partition(ds, {"scheme": "iid", "num_clients": clients}, seed=s) for s in SWEEP_SEEDS}
    specs = []
    for lr in SWEEP_LRS:
        for s in SWEEP_SEEDS:
            specs.append({
                "experiment": "sweep", "dataset": "w3", "partition": "iid", "algorithm": f"fedavg,lr={lr!r}",
                "seed": s, "algorithm_name": "fedavg", "hparams": {}, "model": {"name": "logreg"},
                "local": {"epochs": None, "steps": steps, "batch_size": 1, "lr": lr, "lr_decay": 1.0,
                          "weight_decay": 0.0, "clip_norm": None},
                "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": rounds, "eval_every": rounds,
                "dtype": "float32"})
    return ds, specs, [parts[s["seed"]] for s in specs]


def sweep_mode(mode: str, out: str, **size) -> None:
    """Train the sweep's cells ``stacked`` or ``alone``; write seconds, peak RSS and the final
    parameters to ``out`` (a torch file)."""
    from fedbench.engine.rounds.loop import train, train_seeds

    ds, specs, parts = sweep_cells(**size)
    t0 = time.perf_counter()
    if mode == "stacked":
        results = train_seeds(specs, ds, parts, device="cpu")
    else:
        results = [train(s, ds, p, device="cpu") for s, p in zip(specs, parts)]
    seconds = time.perf_counter() - t0
    torch.save({"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "status": [info["status"] for _, info in results],
                "accuracy": [rows[-1]["test_accuracy"] for rows, _ in results],
                "params": [info["params"] for _, info in results]}, out)


def sweep(threads: int, **size) -> dict:
    """Run both modes (each in a subprocess) and print and return the comparison."""
    import tempfile

    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("stacked", "alone"):
            out = f"{tmp}/{mode}.pt"
            subprocess.run([sys.executable, __file__, "--threads", str(threads), "--sweep-mode", mode, "--sweep-out",
                            out, "--sweep-size", json.dumps(size)], check=True)
            res[mode] = torch.load(out)
    a, b = res["stacked"], res["alone"]
    rel = max(float((pa[k] - pb[k]).norm() / pb[k].norm()) for pa, pb in zip(a["params"], b["params"])
              for k in pb if a["status"] == b["status"] and torch.isfinite(pb[k]).all())
    n = len(a["params"])
    print(f"torch {torch.__version__}, {threads} thread(s); {n} cells ({len(SWEEP_LRS)} lrs x {len(SWEEP_SEEDS)} "
          f"seeds), W3-shaped, sizes {size or 'default'}")
    print("| mode | seconds | peak RSS (MB) |\n|---|---|---|")
    print(f"| stacked (one train_seeds call) | {a['seconds']:.1f} | {a['peak_rss_mb']:.0f} |")
    print(f"| one cell at a time (train x {n}) | {b['seconds']:.1f} | {b['peak_rss_mb']:.0f} |")
    print(f"\nspeed-up (one at a time / stacked): {b['seconds'] / a['seconds']:.2f}x; statuses equal: "
          f"{a['status'] == b['status']} ({sum(s == 'ok' for s in a['status'])} ok); largest relative difference "
          f"of final parameters: {rel:.2e}")
    return {"stacked_s": a["seconds"], "alone_s": b["seconds"], "ratio": b["seconds"] / a["seconds"],
            "stacked_rss_mb": a["peak_rss_mb"], "alone_rss_mb": b["peak_rss_mb"], "max_rel_diff": rel}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clients", default="10,100", help="comma-separated G (clients stacked)")
    ap.add_argument("--sweep", action="store_true", help="the lr sweep: 39 cells stacked vs one at a time")
    ap.add_argument("--sweep-mode", choices=("stacked", "alone"), help=argparse.SUPPRESS)
    ap.add_argument("--sweep-out", help=argparse.SUPPRESS)
    ap.add_argument("--sweep-size", default="{}", help="JSON: clients, n, steps, rounds (default 1024, 32, 64, 3)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # as train() does
    if args.sweep_mode:
        sweep_mode(args.sweep_mode, args.sweep_out, **json.loads(args.sweep_size))
        return
    if args.sweep:
        sweep(args.threads, **json.loads(args.sweep_size))
        return
    gs = [int(g) for g in args.clients.split(",")]
    print(f"torch {torch.__version__}, {args.threads} thread(s); rule: stack while d x B < {CPU_STACK_MAX_MACS:,}\n")
    head = " | ".join(f"G={g}: alone / vmapped (ms per client), gain" for g in gs)
    print(f"| model | d | B | d x B | {head} | automatic |")
    print("|---|---|---|---|" + "---|" * len(gs) + "---|")
    for name, cfg, shape, classes, batch in CASES:
        cells, d = [], 0
        for g in gs:
            d, a, v = measure(cfg, shape, classes, batch, g)
            cells.append(f"{1e3 * a:.3f} / {1e3 * v:.3f}, {a / v:.2f}x")
        auto = "stacked" if d * batch < CPU_STACK_MAX_MACS else "one client"
        print(f"| {name} | {d:,} | {batch} | {d * batch:,} | " + " | ".join(cells) + f" | {auto} |")


if __name__ == "__main__":
    main()
