"""One local step of the whole-rounds tensor path (:mod:`fedbench.engine.linear_fast.tensor_rounds`) in three
layouts, side by side on one device: what a step of FedAc's largest jobs costs against the bytes
it must move.

The step (FedAc-I's form: n = 2 sequences, B = 1, float64) over G groups × L lanes × M clients × d
coordinates; U = G·L·M·d·8 bytes is one sequence of every client. A fused step reads the state
(n·U) and writes it (n·U): 4U at n = 2, the floor against the device's copy bandwidth (measured
here: a device-to-device copy, bytes read + written).

- ``einsum``: the state [G, L, M, n, d], every contraction by ``torch.einsum`` (the first version);
- ``bmm``: the state [G, L, n, M, d], so that p = q s and A s are batched matrix products over
  [n, M·d] without a copy, the logit and the gradient by broadcasting;
- ``elementwise``: the same layout, every contraction over n as a sum of n scaled sequences
  (``addcmul``: n is 2 or 3, and each pass is one coalesced read-modify-write).

All three compute the same numbers (checked against ``einsum`` to 1e-12). Usage:

    python benchmarks/tensor_step_layouts.py [--device cuda] [--M 8192] [--G 3] [--L 18] [--reps 20]
"""

from __future__ import annotations

import argparse
import time

import torch


def make(g: int, l: int, m: int, n: int, d: int, rows: int, device: str):
    gen = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.rand(*shape, generator=gen, dtype=torch.float64).to(device)

    x, y = rand(rows, d), (rand(rows) < 0.5).double()
    q, a, c = rand(g, l, n), 0.5 * rand(g, l, n, n), rand(g, l, n)
    idx = torch.randint(0, rows, (g, m, 1), generator=gen).to(device)
    s = rand(g, l, m, n, d)
    return x, y, q, a, c, idx, s


def step_einsum(s, x, y, q, a, c, idx):
    xb, yb = x[idx], y[idx]
    p = torch.einsum("gln,glmnd->glmd", q, s)
    z = torch.einsum("glmd,gmbd->glmb", p, xb)
    grad = torch.einsum("glmb,gmbd->glmd", torch.sigmoid(z) - yb.unsqueeze(1), xb)
    return torch.einsum("glij,glmjd->glmid", a, s) + c[:, :, None, :, None] * grad.unsqueeze(3)


def step_bmm(s, x, y, q, a, c, idx):
    g, l, n, m, d = s.shape
    xb, yb = x[idx[:, :, 0]], y[idx[:, :, 0]]  # [G, M, d], [G, M]
    sf = s.view(g * l, n, m * d)
    p = torch.bmm(q.reshape(g * l, 1, n), sf).view(g, l, m, d)
    dz = torch.sigmoid(torch.linalg.vecdot(p, xb.unsqueeze(1))) - yb.unsqueeze(1)  # [G, L, M]
    new = torch.bmm(a.reshape(g * l, n, n), sf).view(g, l, n, m, d)
    return new.addcmul_(c[:, :, :, None, None], (dz.unsqueeze(-1) * xb.unsqueeze(1)).unsqueeze(2))


def step_elementwise(s, x, y, q, a, c, idx):
    g, l, n, m, d = s.shape
    xb, yb = x[idx[:, :, 0]], y[idx[:, :, 0]]
    p = s[:, :, 0] * q[:, :, 0, None, None]
    for j in range(1, n):
        p.addcmul_(s[:, :, j], q[:, :, j, None, None])
    grad = (torch.sigmoid(torch.linalg.vecdot(p, xb.unsqueeze(1))) - yb.unsqueeze(1)).unsqueeze(-1) * xb.unsqueeze(1)
    new = torch.empty_like(s)
    for i in range(n):
        out = torch.mul(grad, c[:, :, i, None, None], out=new[:, :, i])
        for j in range(n):
            out.addcmul_(s[:, :, j], a[:, :, i, j, None, None])
    return new


def timed(fn, args, reps: int, device: str) -> float:
    fn(*args)
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn(*args)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--G", type=int, default=3)
    ap.add_argument("--L", type=int, default=18)
    ap.add_argument("--M", type=int, default=8192)
    ap.add_argument("--d", type=int, default=123)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    dev = args.device
    x, y, q, a, c, idx, s = make(args.G, args.L, args.M, 2, args.d, 32_561, dev)
    s_t = s.permute(0, 1, 3, 2, 4).contiguous()
    ref = step_einsum(s, x, y, q, a, c, idx).permute(0, 1, 3, 2, 4)
    u = args.G * args.L * args.M * args.d * 8
    big = torch.rand(u // 8 * 4, dtype=torch.float64, device=dev)  # 4U: a copy reads and writes it
    bw = 2 * big.numel() * 8 / timed(torch.clone, (big,), args.reps, dev)
    big = None
    print(f"device {torch.cuda.get_device_name() if dev == 'cuda' else 'cpu'}; G {args.G} L {args.L} M {args.M} "
          f"d {args.d}: U = {u / 1e6:.0f} MB; copy bandwidth {bw / 1e9:.0f} GB/s; floor (4U) {4 * u / bw * 1e3:.2f} ms")
    for name, fn, state in (("einsum", step_einsum, s), ("bmm", step_bmm, s_t), ("elementwise", step_elementwise, s_t)):
        out = fn(state, x, y, q, a, c, idx)
        err = float((out - (ref if state is s_t else ref.permute(0, 1, 3, 2, 4))).abs().max() / ref.abs().max())
        sec = timed(fn, (state, x, y, q, a, c, idx), args.reps, dev)
        print(f"{name:12s} {sec * 1e3:8.2f} ms a step  {4 * u / sec / 1e9:7.0f} GB/s of the 4U floor  "
              f"x{sec / (4 * u / bw):5.1f} the floor  rel. err {err:.1e}")


if __name__ == "__main__":
    main()
