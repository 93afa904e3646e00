"""Where stacking clients pays on a CPU: one local step's gradient, alone vs vmapped over G clients.

    python benchmarks/stacking.py            # a table in seconds (1 torch thread)
    python benchmarks/stacking.py --threads 2

For each model and batch size, side by side in one process: the per-client time of G gradient
calls on one client's parameters each (what the sequential engine and a one-client chunk do),
and of one ``vmap`` over the G stacked clients (what a chunk of G does). Their ratio is what
stacking gains (> 1) or loses (< 1). The vectorized engine's automatic rule
(:data:`fedbench.engine.vectorized.CPU_STACK_MAX_MACS`: stack on CPU only while parameters × B
is below 1 M) was set from this table; benchmarks/RESULTS.md records a run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.func import vmap  # noqa: E402

from fedbench.engine.allocator import keep_freed_memory  # noqa: E402
from fedbench.engine.vectorized import CPU_STACK_MAX_MACS  # noqa: E402
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


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clients", default="10,100", help="comma-separated G (clients stacked)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # as train() does
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
