"""Costs of federated minimax training (Sharma, Panda & Joshi, "Federated Minimax Optimization With
Client Heterogeneity", TMLR 2023): two CPU measurements, side by side in one process.

1. A Fed-Norm-SGDA+ local step against a Local SGDA step (the "+" variants take the y-gradient at
   the snapshot x̂: two gradient calls per step; target ≤ 2.1×). Per client-step cost from two
   runs of the sequential engine that differ only in the local steps (8 vs 4), so set-up,
   aggregation and evaluation cancel: (T₈ − T₄) / (4 · clients).
2. One round of the paper's robust-training shape (VGG-11 on 32×32×3 inputs, 15 clients, batch 32,
   τ_i ~ U{2, …, 7} local steps drawn per client and round), the vectorized engine against the
   per-client sequential loop (target on CPU: no slower).

Synthetic CIFAR-shaped data (Gaussian images, 10 classes, Dir-free equal split): the costs do not
depend on the pixel values. One torch thread per run unless --threads. ``--device cuda`` runs both
measurements on the GPU (target there: the vectorized round ≥ 5× the loop); the round
also prints the vectorized engine's padding efficiency (real / executed client-steps: 1 in eager
chunks, whose finished clients leave; ≥ 0.9 under CUDA graphs, whose steps run padded, grouped by
step count by ``plan_groups`` with the floor ``PADDING_EFFICIENCY_FLOOR``). ``--unit epochs``
draws τ_i ~ U{2..7} epochs (the paper's "2–7 epochs each": 2·τ_i steps of batch 32 at 64 samples
per client) instead of steps. Usage:

    python benchmarks/minimax_costs.py [--clients 15] [--samples 64] [--rounds 1] [--threads 1]
                                       [--device cpu|cuda] [--unit steps|epochs]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from fedbench.data.partition import make_partition
from fedbench.data.store import Dataset
from fedbench.engine.rounds.loop import train


def dataset(clients: int, samples: int) -> tuple[Dataset, object]:
    rng = np.random.default_rng(0)
    n = clients * samples
    x = rng.standard_normal((n + 32, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, n + 32)
    ds = Dataset("cifar_like", x[:n], y[:n], x[n:], y[n:], num_classes=10)
    return ds, make_partition(ds, {"scheme": "iid", "num_clients": clients}, seed=0)


def spec(algorithm: str, steps, rounds: int, unit: str = "steps") -> dict:
    hp = {"projection": "ball", "radius": 1.0}
    if algorithm.endswith("_plus"):
        hp["snapshot_period"] = 1
    return {
        "experiment": "b", "dataset": "c", "partition": "iid", "algorithm": algorithm, "seed": 0,
        "algorithm_name": algorithm, "hparams": hp,
        "model": {"name": "vgg11", "minimax": {"problem": "robust"}},
        "local": {"epochs": None, "steps": None, unit: steps, "batch_size": 32, "lr": 0.016, "lr_decay": 1.0,
                  "weight_decay": 0.0, "clip_norm": None},
        "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": rounds, "eval_every": rounds,
        "target_accuracy": None, "dtype": "float32", "collapse": False, "uplink_entropy": False,
    }


def timed(s: dict, ds, part, engine: str, device: str = "cpu") -> tuple[float, dict]:
    """(wall seconds, train's info) of one run."""
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    _, info = train(s, ds, part, device=device, engine=engine)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=15)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--unit", choices=["steps", "epochs"], default="steps",
                    help="what tau_i ~ U{2..7} counts in the round of part 2")
    args = ap.parse_args()
    dev = args.device
    if dev == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA GPU visible")
    torch.set_num_threads(args.threads)
    ds, part = dataset(args.clients, args.samples)
    timed(spec("local_sgda", 1, 1), ds, part, "sequential", dev)  # warm-up (imports, allocator)
    print(f"device: {torch.cuda.get_device_name() if dev == 'cuda' else 'cpu'}")

    print("1. local step cost, sequential engine, VGG-11 robust problem, batch 32")
    per = {}
    for algorithm in ("local_sgda", "fed_norm_sgda_plus"):
        t4 = timed(spec(algorithm, 4, args.rounds), ds, part, "sequential", dev)[0]
        t8 = timed(spec(algorithm, 8, args.rounds), ds, part, "sequential", dev)[0]
        per[algorithm] = (t8 - t4) / (4 * args.clients * args.rounds)
        print(f"   {algorithm:20s} T(4 steps) {t4:7.2f} s  T(8 steps) {t8:7.2f} s  "
              f"per client-step {1e3 * per[algorithm]:7.1f} ms")
    print(f"   Fed-Norm-SGDA+ / Local SGDA per step: {per['fed_norm_sgda_plus'] / per['local_sgda']:.2f}x "
          f"(target <= 2.1x)")

    print(f"2. {args.rounds} round(s), tau_i ~ U{{2..7}} {args.unit} per client and round, Local SGDA")
    work = {"distribution": "uniform", "low": 2, "high": 7, "per": "round"}
    s2 = spec("local_sgda", work, args.rounds, args.unit)
    if dev == "cuda":  # first-call costs of the vectorized engine (CUDA graph captures) out of the timing
        timed(spec("local_sgda", work, 1, args.unit), ds, part, "vectorized", dev)
    seq = timed(s2, ds, part, "sequential", dev)[0]
    vec, info = timed(s2, ds, part, "vectorized", dev)
    target = ">= 5x" if dev == "cuda" else ">= 1.0x"
    print(f"   sequential {seq:7.2f} s  vectorized {vec:7.2f} s  vectorized speed-up {seq / vec:.2f}x "
          f"(target on {dev}: {target})")
    print(f"   vectorized padding efficiency {info['padding_efficiency']:.3f} (real / executed client-steps; "
          f"target >= 0.9)")


if __name__ == "__main__":
    main()
