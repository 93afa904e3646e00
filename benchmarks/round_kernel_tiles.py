"""The CUDA round kernels' tile shapes, timed: ms per round of FedAc-I-shaped rounds.

    python benchmarks/round_kernel_tiles.py                      # on a machine with a CUDA GPU
    python benchmarks/round_kernel_tiles.py --M 8192 --K 1,16
    # a smoke run, Triton interpreted on the CPU:
    TRITON_INTERPRET=1 python benchmarks/round_kernel_tiles.py --device cpu --M 8 --K 2 --steps 4 --lanes 1,2

:mod:`fedbench.engine.linear_fast.round_kernels` holds a tile of BLOCK_M clients × BLOCK_D coordinates of each
sequence in registers (``TILE`` = BLOCK_M · BLOCK_D elements), ``NUM_WARPS`` warps a program, and at
most ``MAX_BLOCKS`` client blocks a lane. This script runs rounds through the tensor path's own
:class:`fedbench.engine.linear_fast.tensor_rounds._KernelRounds` for each setting of those three, on a9a-shaped
rows (32,561 × 123, 14 ones a row), G = 3 seeds × L = 18 learning rates (``--lanes``), FedAc's two sequences and
two message entries (fixed stable coefficients: the timing does not depend on them), rows drawn
once beforehand (the draws are not timed). Per setting: ms per round (CUDA events, after two
warm-up rounds) and ns per client-step and lane.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from fedbench.engine.linear_fast import round_kernels, tensor_rounds  # noqa: E402

G, L, D, ROWS = 3, 18, 123, 32_561


class _Fixed:
    """Stands in for the path's draws: the same pre-drawn rows every span."""

    def __init__(self, rows: torch.Tensor):
        self.rows, self.span = rows, rows.shape[0]

    def __call__(self, t0: int, t1: int) -> torch.Tensor:
        return self.rows[: t1 - t0 + 1]


def forms(dev) -> list[torch.Tensor]:
    """q, A, c, B, C, D, E, F of every lane [G, L, ...]: a FedAc-like averaging of two sequences."""
    def lanes(v):
        t = torch.as_tensor(v, dtype=torch.float64, device=dev)
        return t.expand(G, L, *t.shape).contiguous()
    eta = torch.logspace(-3, 0, L, dtype=torch.float64, device=dev)
    c = torch.stack([-eta, -0.5 * eta], -1).expand(G, L, 2).contiguous()
    return [lanes([0.5, 0.5]), lanes([[0.9, 0.1], [0.2, 0.8]]), c, lanes([[1.0, 0.0], [0.0, 1.0]]),
            lanes([[1.0, 0.0], [0.0, 1.0]]), lanes([[-1.0, 0.0], [0.0, -1.0]]), lanes([[1.0, 0.0], [0.0, 1.0]]),
            lanes([[1.0, 0.0], [0.0, 1.0]])]


@functools.cache
def data(dev) -> tuple[torch.Tensor, torch.Tensor]:
    """a9a-shaped rows x [ROWS, D] (14 ones a row) and labels y [ROWS] in {0, 1}, on ``dev``."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.zeros(ROWS, D, dtype=torch.float64)
    x.scatter_(1, torch.argsort(torch.rand(ROWS, D, generator=gen), dim=1)[:, :14], 1.0)
    return x.to(dev), (torch.rand(ROWS, generator=gen) < 0.3).double().to(dev)


def time_rounds(m: int, k: int, rounds: int, dev) -> float:
    """ms per round with the module's current tile settings."""
    gen = torch.Generator(device="cpu").manual_seed(1)
    x, y = data(dev)
    q, a, c, bm, cm, dm, em, fm = forms(dev)
    server = torch.randn(G, L, 2, D, generator=gen, dtype=torch.float64).mul_(0.01).to(dev)
    weight = torch.full((G, m), 1.0 / m, dtype=torch.float64, device=dev)
    rows = torch.randint(0, ROWS, (rounds + 2, G, m, k), generator=gen).to(dev)
    run = tensor_rounds._KernelRounds(x, y, server, q, a, c, bm, cm, dm, em, fm, weight, k, 1, (2, 2, 2))
    run(_Fixed(rows), 1, 2)  # compile and warm
    if dev.type != "cuda":
        t0 = time.perf_counter()
        run(_Fixed(rows), 3, rounds + 2)
        return (time.perf_counter() - t0) * 1e3 / rounds
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run(_Fixed(rows), 3, rounds + 2)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / rounds


def main(argv=None) -> None:
    global G, L
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--M", default="256,8192")
    ap.add_argument("--K", default="1,16")
    ap.add_argument("--tiles", default="512,1024,2048", help="TILE values (BLOCK_M · BLOCK_D)")
    ap.add_argument("--warps", default="2,4,8")
    ap.add_argument("--blocks", default="64,256", help="MAX_BLOCKS values")
    ap.add_argument("--steps", type=int, default=64, help="local steps timed per setting (rounds = steps / K)")
    ap.add_argument("--device", default="cuda", help="cuda, or cpu with TRITON_INTERPRET=1 (a smoke run)")
    ap.add_argument("--lanes", default=f"{G},{L}", help="G seeds, L learning rates (the figure set's: 3,18)")
    args = ap.parse_args(argv)
    G, L = (int(v) for v in args.lanes.split(","))
    dev = torch.device(args.device)
    name = torch.cuda.get_device_name() if dev.type == "cuda" else "the CPU (Triton's interpreter)"
    print(f"# round kernels on {name}: G × L = {G} × {L} lanes, d = {D}, float64")
    print("| M | K | TILE | warps | MAX_BLOCKS | ms per round | ns per client-step and lane |")
    print("|---|---|---|---|---|---|---|")
    default = (round_kernels.TILE, round_kernels.NUM_WARPS, round_kernels.MAX_BLOCKS)
    for m, k in itertools.product([int(v) for v in args.M.split(",")], [int(v) for v in args.K.split(",")]):
        rounds = max(2, args.steps // k)
        for tile, warps, blocks in itertools.product([int(v) for v in args.tiles.split(",")],
                                                     [int(v) for v in args.warps.split(",")],
                                                     [int(v) for v in args.blocks.split(",")]):
            round_kernels.TILE, round_kernels.NUM_WARPS, round_kernels.MAX_BLOCKS = tile, warps, blocks
            ms = time_rounds(m, k, rounds, dev)
            mark = " (default)" if (tile, warps, blocks) == default else ""
            print(f"| {m} | {k} | {tile} | {warps} | {blocks}{mark} | {ms:.3f} | "
                  f"{ms * 1e6 / (m * k * G * L):.2f} |", flush=True)
    round_kernels.TILE, round_kernels.NUM_WARPS, round_kernels.MAX_BLOCKS = default


if __name__ == "__main__":
    main()
