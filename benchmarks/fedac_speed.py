"""FedAc's experiments, fedbench against the authors' numpy code, run for run.

    python benchmarks/fedac_speed.py --authors /path/to/FedAc-NeurIPS20             # default grid
    python benchmarks/fedac_speed.py --authors ... --algorithms fedac --M 256 --K 1,16,256
    FEDAC_AUTHORS=/path/to/FedAc-NeurIPS20 python benchmarks/fedac_speed.py --quick

A *run* is one point of Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS
2020, §5 (a9a, ℓ2-regularized logistic regression, λ = 1e-3): one algorithm, M workers, K local
steps per round, T = 4,096 steps per worker in all (T/K rounds), batch size 1 drawn with
replacement from the whole training set, one η, one seed, the population loss recorded every 512
steps. Side by side, in this one script:

- fedbench: the η grid × seeds of one (algorithm, M, K) trained as the workflow trains
  them, stacked in one job (:func:`fedbench.engine.rounds.loop.train_seeds`, the ``shared`` partition,
  ``local.replacement``, ``binary_logreg``, float64, vectorized engine on CPU); each job in its own
  subprocess (its peak RSS is its own). Per-run time = the job's time / its 54 runs (the 18-value η
  grid × 3 seeds of ``config/experiments/fedac.yaml``'s ``fedac_a9a_lam1e3``). A job's time is its
  set-up, rounds and evaluations, plus 1/9 of the process's start-up (the compiled code loaded from
  numba's cache; on CUDA also the context, the data and a warm-up round), as the workflow runs 9
  jobs a process (``stack_groups_per_job: 9``); the start-up's whole is printed beside it.
- the authors' code (github.com/hongliny/FedAc-NeurIPS20, ``logistic.py``): the same run (same M,
  K, T, η, λ) through its ``LogiBinaryLibSVM.fedavg / fedac / mbsgd / mbasgd``, one η (the grid's
  middle), in its own subprocess. That repository has no license: fedbench never copies it. Give a
  checkout with ``--authors`` or ``FEDAC_AUTHORS`` (``git clone
  https://github.com/hongliny/FedAc-NeurIPS20``); without one its column says how to get it.

Both read the same a9a-shaped file, written here in the LIBSVM format (no download): 32,561 rows ×
123 binary features with 14 ones per row (a9a's shape and density), labels from a planted logistic
model; a 16,281-row test file beside it.

Large jobs (M·T/K·54 client-rounds) can be timed on fewer steps (``--T-fedbench``): the per-run
time is then scaled to T = 4,096 (training time is linear in the rounds; the scale is printed).
``--estimate`` adds the time of the whole figure set (Figs. 1 and 3: ``fedac_a9a_lam1e3``'s 4
algorithms × M ∈ {4, ..., 8192} × K ∈ {1, ..., 256} × 18 η × 3 seeds) from a fit of the measured jobs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.optimize
import yaml

REPO = Path(__file__).resolve().parents[1]
LAMBDA = 1e-3
T_TOTAL = 4096
RECORD = 512
#: The experiment whose jobs are measured: its η grid, seeds, algorithms and M (Figs. 1 and 3).
EXPERIMENT = "fedac_a9a_lam1e3"
SPEC = yaml.safe_load((REPO / "config" / "experiments" / "fedac.yaml").read_text())["experiments"][EXPERIMENT]
#: The η grid and the seeds of one (algorithm, M, K) job, as the workflow stacks them (18 × 3).
ETAS = [float(v) for v in SPEC["sweep"]["grid"]["local.lr"]]
SEEDS = [int(v) for v in SPEC["seeds"]]
CELLS = len(ETAS) * len(SEEDS)
#: Jobs a workflow process trains one after another (the K values of an (algorithm, M):
#: ``stack_groups_per_job``); the process's start-up (the compiled code's, and on CUDA the context's)
#: is paid once for them, so a job is charged its share.
PROCESS_JOBS = int(SPEC["stack_groups_per_job"])
#: The η of the authors' runs (the grid's 0.1).
AUTHORS_ETA = 0.1
ALGORITHMS = {  # fedbench algorithm, its hparams -> the authors' method
    "fedavg": ("fedavg", {}),
    "fedac": ("fedac", {"variant": "I"}),
    "mb_sgd": ("mb_sgd", {}),
    "mb_ac_sgd": ("mb_ac_sgd", {"variant": "vanilla"}),
}
HOW_TO_GET = "git clone https://github.com/hongliny/FedAc-NeurIPS20 and pass --authors <dir> (or FEDAC_AUTHORS)"


# ----------------------------------------------------------------------------------------------
# data


def write_a9a_like(directory: Path, seed: int = 0) -> tuple[Path, Path]:
    """``directory/a9a`` (32,561 rows) and ``a9a.t`` (16,281): 123 binary features, 14 ones per
    row, labels ±1 from a planted logistic model. Returns the two paths."""
    rng = np.random.default_rng(seed)
    w = rng.normal(0.0, 1.0, 123)
    paths = []
    for name, rows in (("a9a", 32_561), ("a9a.t", 16_281)):
        cols = np.sort(np.argsort(rng.random((rows, 123)), axis=1)[:, :14], axis=1)
        y = np.where(rng.random(rows) < 1.0 / (1.0 + np.exp(-w[cols].sum(axis=1))), "+1", "-1")
        lines = [lab + " " + " ".join(f"{c + 1}:1" for c in row) for lab, row in zip(y, cols)]
        path = directory / name
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths[0], paths[1]


# ----------------------------------------------------------------------------------------------
# one fedbench job (in a subprocess)


def fedbench_job(algorithm: str, m: int, k: int, steps: int, data_dir: str, threads: int, generic: bool,
                 device: str = "cpu", kernels: bool = True, warm_round: bool = True) -> dict:
    """Train the η grid × seeds of (algorithm, M, K) stacked, for ``steps`` steps per worker, on
    ``device`` (``cpu`` or ``cuda``: the CUDA context's creation counts in the set-up); on CUDA
    with the round's Triton kernels (``kernels``) or its torch operations, after one untimed round
    of the whole job (``warm_round``; the figure set's driver, which times whole jobs as the
    workflow runs them, turns it off)."""
    sys.path.insert(0, str(REPO / "src"))
    import torch

    from fedbench.engine.linear_fast import tensor_rounds

    tensor_rounds.KERNELS = kernels

    from fedbench.data.libsvm import load_a9a
    from fedbench.data.partition import make_partition
    from fedbench.engine.clients.vectorized import VectorizedClients
    from fedbench.engine.rounds.loop import train_seeds

    torch.set_num_threads(threads)
    VectorizedClients.fast_steps = not generic
    t_start = time.perf_counter()
    if device == "cuda":
        torch.zeros(1, device=device)  # the CUDA context
    ds = load_a9a({"train": Path(data_dir) / "a9a", "test": Path(data_dir) / "a9a.t"})
    name, hparams = ALGORITHMS[algorithm]
    specs, parts = [], {}
    for eta in ETAS:
        for s in SEEDS:
            specs.append({
                "experiment": "fedac_speed", "dataset": "a9a", "partition": "shared", "algorithm": f"{name},eta={eta}",
                "seed": s, "algorithm_name": name, "hparams": dict(hparams), "model": {"name": "binary_logreg"},
                "local": {"epochs": None, "steps": k, "batch_size": 1, "lr": eta, "lr_decay": 1.0,
                          "weight_decay": LAMBDA, "clip_norm": None, "replacement": True},
                "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": steps // k,
                "eval_every": max(1, RECORD // k), "eval_initial": True, "uplink_entropy": False,
                "collapse": False, "dtype": "float64"})  # as config/experiments/fedac.yaml
            if s not in parts:
                parts[s] = make_partition(ds, {"scheme": "shared", "num_clients": m}, seed=s)
    if device == "cuda" and warm_round:  # one round of the whole job first, untimed: Triton's kernels and numba's draws
        # compile or load from their caches here (once per process), not in the rounds that are scaled
        one = [dict(spec, rounds=1, eval_every=1) for spec in specs]
        train_seeds(one, ds, [parts[spec["seed"]] for spec in one], device=device, engine="vectorized")
        torch.cuda.synchronize()
    first = []  # when the first round starts: what comes before it is the job's set-up
    real = VectorizedClients.train_cells

    def timed(self, *a, **kw):
        if not first:
            first.append(time.perf_counter())
            self.planned_rounds = T_TOTAL // k  # the whole run's rounds, even when fewer are timed
        return real(self, *a, **kw)

    real_rounds = VectorizedClients.train_rounds

    def timed_rounds(self, *a, **kw):
        if not first:
            first.append(time.perf_counter())
            self.planned_rounds = T_TOTAL // k
        return real_rounds(self, *a, **kw)

    VectorizedClients.train_cells = timed
    VectorizedClients.train_rounds = timed_rounds
    # once per job, counted in its set-up and never scaled: the CUDA context's creation (with the
    # data's load and the one-round warm-up), or the compiled CPU code's start-up
    if device == "cuda":
        warm = time.perf_counter() - t_start
    else:
        warm = 0.0 if generic else warm_compiled()
    t0 = time.perf_counter()
    try:
        out = train_seeds(specs, ds, [parts[s["seed"]] for s in specs], device=device, engine="vectorized")
    finally:  # a later job in this process wraps the originals again
        VectorizedClients.train_cells, VectorizedClients.train_rounds = real, real_rounds
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gpu_mb = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else 0.0
    return {"seconds": seconds + warm, "setup_seconds": first[0] - t0 + warm, "warm_seconds": warm,
            "cells": len(specs), "peak_rss_mb": peak, "peak_gpu_mb": gpu_mb,
            "ok": sum(info["status"] == "ok" for _, info in out),
            "final_loss_mid_eta": out[len(out) // 2][0][-1]["train_loss"]}


def warm_compiled() -> float:
    """Seconds of the compiled code's start-up in this process (numba import, LLVM, the kernels
    loaded from numba's cache), which a job pays once, in its first round: paid here, before the
    timed rounds, so that scaling the rounds does not scale it."""
    t0 = time.perf_counter()
    from fedbench.engine.linear_fast import cpu_rounds, keyed_integers, rows, step_kernels

    keyed_integers.uniform_rows([0], 1, [0], 10, (1, 1))
    keyed_integers.permutations([0], 1, [0], 10, 1)
    state = np.zeros((1, 2, 3))
    csr = rows.sparse_rows(np.eye(3))
    step_kernels._run_sparse(state, *csr, 1, np.zeros((1, 1, 1), dtype=np.int64), np.zeros((1, 1, 1), dtype=np.int64),
                             np.zeros(1, dtype=np.int64), np.ones((1, 2)), np.ones((1, 2, 2)), np.ones((1, 2)), True, 1,
                             3, False, np.zeros(1), np.zeros(1), 0, 1)
    three, four, i64 = np.ones((1, 1, 1)), np.ones((1, 1, 1, 1)), np.zeros(1, dtype=np.int64)
    cpu_rounds._run_rounds(np.zeros((1, 1, 3)), *csr, 1, np.zeros(3, dtype=np.int64), np.arange(3)[None], i64,
                           np.full(1, 3), i64, i64, 1, i64, i64, np.ones(1, dtype=np.int64), np.ones(1), three, four,
                           three, four, four, four, four, four, three, 1, 1, True, 1, 3, False, 1, 1, 1,
                           np.zeros((1, 1), dtype=np.int64), np.zeros((1, 1), dtype=np.bool_))
    return time.perf_counter() - t0


# ----------------------------------------------------------------------------------------------
# one authors' run (in a subprocess)


def authors_run(algorithm: str, m: int, k: int, steps: int, eta: float, authors: str, data_dir: str) -> dict:
    """The authors' ``logistic.py`` on the same run; α, β, γ from fedbench's formulas (the same
    values their ``train`` computes: FedAc-I eq. 3.1, the vanilla parameters for Mb-Ac-SGD)."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(REPO / "src"))
    sys.path.insert(0, authors)
    os.chdir(data_dir)  # their loader reads ./libsvm_datasets/<name>
    import logistic  # the authors' module, from their checkout

    from fedbench.algorithms import fedac

    model = logistic.LogiBinaryLibSVM("a9a", LAMBDA)
    t0 = time.perf_counter()
    if algorithm == "fedavg":
        seq = model.fedavg(eta, m, k, steps, 1, record_intvl=RECORD, SEED=1)
    elif algorithm == "mb_sgd":
        seq = model.mbsgd(eta, m, k, steps, 1, record_intvl=RECORD, SEED=1)
    else:
        variant = ALGORITHMS[algorithm][1]["variant"]
        a_inv, b_inv, gamma = fedac.coefficients(eta, LAMBDA, 1 if algorithm == "mb_ac_sgd" else k, variant)
        run = model.fedac if algorithm == "fedac" else model.mbasgd
        seq = run(eta, gamma, 1.0 / a_inv, 1.0 / b_inv, m, k, steps, 1, record_intvl=RECORD, SEED=1)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "final_loss": float(seq.iloc[-1])}


def load_latency_ns(sizes_mib=(0.25, 1, 4, 8, 64), loads: int = 2_000_000) -> dict:
    """ns per dependent load over arrays of these sizes (MiB): a pointer chase through one random
    cycle, so every load waits for the one before. Where the caches end and what a miss costs: the
    random rows of a client-step are such a chain (row → ``indptr`` → ``indices``), and a9a's CSR
    arrays are 5.6 MB."""
    import numba

    @numba.njit
    def chase(nxt, n):
        i = 0
        for _ in range(n):
            i = nxt[i]
        return i

    rng = np.random.default_rng(0)
    out = {}
    for mib in sizes_mib:
        m = int(mib * 2**20 / 8)
        perm = rng.permutation(m)
        nxt = np.empty(m, dtype=np.int64)
        nxt[perm] = np.roll(perm, -1)
        chase(nxt, 10)
        t0 = time.perf_counter()
        chase(nxt, loads)
        out[str(mib)] = (time.perf_counter() - t0) / loads * 1e9
    return out


def lane_loops_floor_ns(data_dir: str, lanes: int = 18, rows: int = 1 << 16) -> dict:
    """ns per row and lane of the two loops every client-step needs at any K, alone: the logits
    z_l = Σ_u x_u w[k_u·L + l] (+ bias) of a random a9a row (14 non-zeros) for L lanes, by the
    kernels' own ``_logits_lanes``, and the scatter
    acc[k_u·L + l] += g_l x_u of its gradient, laid out as the fast path lays out its lanes
    (coordinate-major, L side by side), nothing else (no exp, no draw, no count, no state).
    What the fast path's arithmetic costs at best on this core, in the kernel's own loop shape; a
    per-run target below it needs another algorithmic shape, not a faster loop."""
    import numba

    sys.path.insert(0, str(REPO / "src"))
    from fedbench.engine.linear_fast.logits import _logits_lanes

    @numba.njit(fastmath={"contract"})
    def logits(w, indptr, indices, values, picked, z):
        lanes = z.shape[1]
        for r in picked:  # the kernels' own logit loop (binary: one logit, 123 weights and the bias)
            _logits_lanes(z, w, indices, values, indptr[r], indptr[r + 1] - indptr[r], 1, 123, True, lanes)
        return z[0, 0]

    @numba.njit(fastmath={"contract"})
    def scatter(acc, indptr, indices, values, picked, g):
        lanes = g.shape[0]
        for r in picked:
            start, m = indptr[r], indptr[r + 1] - indptr[r]
            for u in range(m):
                i0, v = indices[start + u] * lanes, values[start + u]
                ak = acc[i0:i0 + lanes]
                for ln in range(lanes):
                    ak[ln] += g[ln] * v
        return acc[0]

    from sklearn.datasets import load_svmlight_file

    x, _ = load_svmlight_file(str(Path(data_dir) / "a9a"), n_features=123)
    x = x.tocsr()
    indptr, indices, values = x.indptr.astype(np.int64), x.indices.astype(np.int32), x.data.astype(np.float64)
    rng = np.random.default_rng(0)
    picked = rng.integers(0, x.shape[0], size=rows)
    w, acc, z, g = rng.normal(size=124 * lanes), np.zeros(124 * lanes), np.zeros((1, lanes)), rng.normal(size=lanes)
    out = {"lanes": lanes}
    for name, fn, args in (("logits_ns", logits, (w, indptr, indices, values, picked, z)),
                           ("scatter_ns", scatter, (acc, indptr, indices, values, picked, g))):
        fn(*args)
        best = math.inf
        for _ in range(5):
            t0 = time.perf_counter()
            fn(*args)
            best = min(best, time.perf_counter() - t0)
        out[name] = best / (rows * lanes) * 1e9
    return out


def local_steps_probe(data_dir: str, m: int = 256, k: int = 16, cells: int = CELLS) -> dict:
    """What bounds the local steps: one chunk of ``cells`` × ``m`` FedAc-I clients (float64, B = 1),
    its K steps by the generic path (K vmapped steps, as the engine runs them) and by the fast
    path's compiled loop, ns per client-step; the bytes a client-step moves; the memory
    bandwidth of this machine (numpy copy of 512 MiB, read + write); and the latency of a load that
    misses the caches (:func:`load_latency_ns`)."""
    sys.path.insert(0, str(REPO / "src"))
    import torch
    from torch.func import vmap

    from fedbench.algorithms import fedac
    from fedbench.data.libsvm import load_a9a
    from fedbench.engine.linear_fast.linear_steps import LinearSteps
    from fedbench.models import build_model, make_grad_fn

    torch.set_num_threads(1)
    ds = load_a9a({"train": Path(data_dir) / "a9a", "test": Path(data_dir) / "a9a.t"})
    x = torch.as_tensor(np.array(ds.x_train), dtype=torch.float64)
    y = torch.as_tensor(np.array(ds.y_train))
    model = build_model({"name": "binary_logreg"}, (123,), 2)
    grad_fn = make_grad_fn(model)
    g = m * cells
    rng = np.random.default_rng(0)
    idx = torch.as_tensor(rng.integers(0, len(x), size=(k, g, 1)))
    hp = {**fedac.HPARAMS, "lr": 0.1, "weight_decay": LAMBDA, "clip_norm": None, "local_steps": k}
    w0 = torch.as_tensor(rng.normal(size=(g, 123)))
    state = {"params": {"weight": w0.clone()}, "w": {"weight": w0.clone()},
             "steps": torch.zeros(g, dtype=torch.int64), "loss": torch.zeros(g, dtype=torch.float64)}
    step = vmap(lambda st, xb, yb: fedac.client_step(st, (xb, yb), hp, grad_fn))

    def generic():
        st = state
        for t in range(k):
            st = step(st, x[idx[t]], y[idx[t]])
        return st

    fast = LinearSteps.build(model, grad_fn, x)
    coef_of = np.zeros(g, dtype=np.int64)

    def compiled():
        return fast.run(fedac, state, [hp], coef_of, idx, y[idx])

    out = {}
    for name, fn in (("generic", generic), ("fast", compiled)):
        fn()
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        out[f"{name}_ns"] = best / (g * k) * 1e9
    a = np.ones(64 << 20)  # 512 MiB
    b = np.empty_like(a)
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t0)
    out["copy_gb_s"] = 2 * a.nbytes / best / 1e9
    out["load_ns"] = load_latency_ns()
    out["floor"] = lane_loops_floor_ns(data_dir)
    nnz = 14
    # bytes per client-step of the fast path: the row (indptr 16 B + nnz × (4 B index + 8 B value)),
    # its row id and label (16 B), and the state (w, w^ag: 2 × 123 × 8 B) read and written once
    # per round of K steps
    out["bytes_per_step"] = 16 + nnz * 12 + 16 + 2 * 2 * 123 * 8 / k
    out.update(m=m, k=k, cells=cells)
    return out


def subprocess_json(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------------
# the figure set


def fit_and_estimate(rows: list[dict]) -> dict:
    """The time of the whole a9a λ = 1e-3 figure set (``fedac_a9a_lam1e3``: its algorithms × M ∈
    {4, ..., 8192} × K ∈ {1, ..., 256}, one job of 54 runs each) from the measured jobs: per K
    measured for FedAc-I, job seconds − set-up = a_K + b_K·M (non-negative least squares, relative
    errors; b_K/(T·54) is the cost of a client-step); K not measured interpolated in log K; the
    other algorithms scaled by their time against FedAc-I's at the same (M, K) where measured
    (FedAc's vanilla and II variants run FedAc-I's computation)."""
    setup = float(np.mean([r["setup_s"] for r in rows]))
    fit = {}
    for k in sorted({r["K"] for r in rows if r["algorithm"] == "fedac"}):
        pts = [r for r in rows if r["algorithm"] == "fedac" and r["K"] == k]
        if len({r["M"] for r in pts}) < 2:
            continue
        x = np.array([[1.0, r["M"]] for r in pts])
        y = np.array([r["job_s_T"] - r["setup_s"] for r in pts])
        coef, *_ = scipy.optimize.nnls(x / y[:, None], np.ones(len(y)))
        fit[k] = coef
    if not fit:
        raise SystemExit("--estimate needs FedAc-I jobs at two or more M for some K")
    known = sorted(fit)

    def model(k: int, m: int) -> float:
        if k <= known[0] or k >= known[-1]:
            c = fit[known[0] if k <= known[0] else known[-1]]
        else:
            lo = max(q for q in known if q <= k)
            hi = min(q for q in known if q >= k)
            f = 0.0 if hi == lo else (math.log(k) - math.log(lo)) / (math.log(hi) - math.log(lo))
            c = (1 - f) * fit[lo] + f * fit[hi]
        return float(c[0] + c[1] * m)

    factor = {}
    for alg in {r["algorithm"] for r in rows} - {"fedac"}:
        ratios = [(r["job_s_T"] - r["setup_s"]) / model(r["K"], r["M"]) for r in rows if r["algorithm"] == alg]
        factor[alg] = float(np.mean(ratios))
    algorithms = [spec.get("algorithm", name) if name not in ALGORITHMS else name
                  for name, spec in SPEC["algorithms"].items()]
    ms = [int(m) for m in SPEC["sweep"]["grid"]["partition.num_clients"]]
    ks = [2**i for i in range(0, 9)]
    total = sum(setup + factor.get(alg, 1.0) * model(k, m) for alg in algorithms for m in ms for k in ks)
    return {"setup_s": setup, "per_client_step_ns": {k: fit[k][1] / (T_TOTAL * CELLS) * 1e9 for k in known},
            "factor": factor, "jobs": len(algorithms) * len(ms) * len(ks),
            "runs": len(algorithms) * len(ms) * len(ks) * CELLS, "total_s": total}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--authors", default=os.environ.get("FEDAC_AUTHORS"), help="a checkout of FedAc-NeurIPS20")
    ap.add_argument("--algorithms", default="fedavg,fedac,mb_sgd,mb_ac_sgd")
    ap.add_argument("--M", default="256,1024")
    ap.add_argument("--K", default="1,16,256")
    ap.add_argument("--T-fedbench", type=int, default=T_TOTAL, help="steps per worker timed (scaled to 4,096)")
    ap.add_argument("--T-authors", type=int, default=T_TOTAL, help="the authors' steps per worker (scaled)")
    ap.add_argument("--max-client-rounds", type=int, default=None,
                    help="time fewer rounds where a fedbench job exceeds this many client-rounds (M × 54 × rounds)")
    ap.add_argument("--max-worker-steps", type=int, default=None,
                    help="time fewer steps where an authors' run would exceed this many worker-steps (M × T)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of a fedbench job")
    ap.add_argument("--generic", action="store_true", help="fedbench without the fast path (for comparison)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where fedbench's jobs train (the authors' code runs on the CPU either way)")
    ap.add_argument("--torch-rounds", action="store_true",
                    help="on CUDA: the tensor path's rounds as torch operations, not Triton kernels (to compare)")
    ap.add_argument("--estimate", action="store_true", help="estimate the whole a9a λ = 1e-3 figure set")
    ap.add_argument("--probe", action="store_true", help="first: the local steps alone (generic vs fast, "
                    "ns per client-step) and the memory bandwidth")
    ap.add_argument("--quick", action="store_true", help="fedac, M = 256, K = 16, T = 512: a smoke run")
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("--estimate-from", help="comma-separated --json files of earlier runs: print the estimate only")
    ap.add_argument("--_job", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._job:
        kind, payload = args._job.split(":", 1)
        spec = json.loads(payload)
        fn = {"fedbench": fedbench_job, "authors": authors_run, "probe": local_steps_probe,
              "fedbench_many": lambda jobs: [fedbench_job(**j) for j in jobs]}[kind]
        out = fn(**spec)
        print(json.dumps(out))
        return
    if args.estimate_from:
        rows = [r for f in args.estimate_from.split(",") for r in json.loads(Path(f).read_text())]
        print_estimate(rows)
        return
    if args.quick:
        args.algorithms, args.M, args.K, args.T_fedbench, args.T_authors = "fedac", "256", "16", 512, 512
    algorithms = args.algorithms.split(",")
    ms = [int(v) for v in args.M.split(",")]
    ks = [int(v) for v in args.K.split(",")]
    authors = None
    if args.authors and (Path(args.authors) / "logistic.py").is_file():
        authors = str(Path(args.authors).resolve())
    root = Path(tempfile.mkdtemp(prefix="fedbench-fedac-speed-"))
    (root / "libsvm_datasets").mkdir()
    write_a9a_like(root / "libsvm_datasets")
    data_dir = str(root / "libsvm_datasets")
    load = os.getloadavg()
    print(f"# FedAc runs: fedbench ({len(ETAS)} η × {len(SEEDS)} seeds stacked per job) vs the authors' numpy code")
    print(f"- load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} logical CPUs; "
          f"fedbench torch threads {args.threads}{' (generic path)' if args.generic else ''}")
    print(f"- authors' checkout: {authors or 'none: ' + HOW_TO_GET}")
    if args.device == "cuda":
        import torch

        print(f"- fedbench on {torch.cuda.get_device_name()} (torch {torch.__version__}); set-up includes the "
              "CUDA context")
    print(f"- T = {T_TOTAL} steps per worker; fedbench timed on {args.T_fedbench}, the authors on "
          f"{args.T_authors} (scaled to {T_TOTAL}); η of the authors' run: {AUTHORS_ETA}\n")
    if args.probe:
        p = subprocess_json(["--_job", "probe:" + json.dumps({"data_dir": data_dir})])
        print(f"Local steps alone, FedAc-I, {p['cells']} × {p['m']} clients, K = {p['k']}, B = 1, float64, 1 thread: "
              f"generic path (vmapped client_step) {p['generic_ns']:.0f} ns per client-step, fast path "
              f"{p['fast_ns']:.0f} ns ({p['generic_ns'] / p['fast_ns']:.1f}×); the fast path moves ~"
              f"{p['bytes_per_step']:.0f} B per client-step; memory bandwidth (numpy copy, read + write) "
              f"{p['copy_gb_s']:.1f} GB/s, i.e. {p['bytes_per_step'] / p['copy_gb_s']:.0f} ns per client-step "
              "if it were bandwidth-bound. A dependent load (pointer chase) over "
              + ", ".join(f"{k} MiB {v:.1f} ns" for k, v in p["load_ns"].items()) + ". "
              f"The two loops every client-step needs, alone at {p['floor']['lanes']} lanes (logits of a "
              f"random row, its gradient's scatter): {p['floor']['logits_ns']:.1f} + "
              f"{p['floor']['scatter_ns']:.1f} ns per row and lane.\n")
    print(f"| algorithm | M | K | rounds | fedbench job ({CELLS} runs) | fedbench per run | authors per run | ratio | "
          f"fedbench ns per client-step | process start-up (1/{PROCESS_JOBS} in the job) | peak RSS of the job (MB) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for algorithm in algorithms:
        for m in ms:
            for k in ks:
                rounds = max(1, args.T_fedbench // k)
                if args.max_client_rounds:
                    rounds = max(1, min(rounds, args.max_client_rounds // (m * CELLS)))
                steps = rounds * k
                job = subprocess_json(["--_job", "fedbench:" + json.dumps(
                    {"algorithm": algorithm, "m": m, "k": k, "steps": steps, "data_dir": data_dir,
                     "threads": args.threads, "generic": args.generic, "device": args.device,
                     "kernels": not args.torch_rounds})])
                scale = T_TOTAL / steps  # the rounds scale; the set-up (cells, partitions, compiled code) does not
                setup_s = job["setup_seconds"] - job["warm_seconds"] * (1.0 - 1.0 / PROCESS_JOBS)
                job_s = setup_s + (job["seconds"] - job["setup_seconds"]) * scale
                per_run = job_s / job["cells"]
                row = {"algorithm": algorithm, "M": m, "K": k, "rounds": T_TOTAL // k, "job_s_T": job_s,
                       "per_run_s": per_run, "timed_steps": steps, "peak_rss_mb": job["peak_rss_mb"],
                       "ok_cells": job["ok"], "device": args.device, "peak_gpu_mb": job["peak_gpu_mb"],
                       "version": "torch" if args.torch_rounds else "kernels"}
                authors_cell = "skipped: " + HOW_TO_GET
                ratio = "-"
                if authors:
                    a_steps = max(k, args.T_authors // k * k)
                    if args.max_worker_steps:
                        a_steps = max(k, min(a_steps, args.max_worker_steps // m // k * k))
                    res = subprocess_json(["--_job", "authors:" + json.dumps(
                        {"algorithm": algorithm, "m": m, "k": k, "steps": a_steps, "eta": AUTHORS_ETA,
                         "authors": authors, "data_dir": str(root)})])
                    a_run = res["seconds"] * T_TOTAL / a_steps
                    row["authors_per_run_s"] = a_run
                    authors_cell = f"{a_run:.3f} s" + ("" if a_steps == T_TOTAL else f" ({a_steps} steps timed)")
                    ratio = f"**{a_run / per_run:.1f}×**"
                rows.append(row)
                ns = job_s / (job["cells"] * m * T_TOTAL) * 1e9
                row["setup_s"], row["startup_s"] = setup_s, job["warm_seconds"]
                timed = "" if scale == 1 else f" ({steps // k} timed)"
                gpu = f" (GPU {job['peak_gpu_mb']:.0f})" if args.device == "cuda" else ""
                print(f"| {algorithm} | {m} | {k} | {T_TOTAL // k} | {job_s:.2f} s{timed} | {per_run:.4f} s | "
                      f"{authors_cell} | {ratio} | {ns:.0f} | {job['warm_seconds']:.2f} s | "
                      f"{job['peak_rss_mb']:.0f}{gpu} |", flush=True)
                if args.json:  # after every job: a run cut short keeps what it measured
                    Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.estimate and len(rows) >= 3:
        print_estimate(rows)
    end = os.getloadavg()
    print(f"\n- load average at end: {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}")


def print_estimate(rows: list[dict]) -> None:
    """The fit of :func:`fit_and_estimate` and the figure set's time."""
    est = fit_and_estimate(rows)
    steps = ", ".join(f"K = {k}: {v:.0f} ns" for k, v in est["per_client_step_ns"].items())
    factors = ", ".join(f"{a} {f:.2f}×" for a, f in sorted(est["factor"].items()))
    print(f"\nFit over the {len(rows)} jobs: {est['setup_s']:.1f} s set-up; per client-step and run (FedAc-I, large M) "
          f"{steps}; the other algorithms against FedAc-I: {factors}. Whole a9a λ = 1e-3 figure set "
          f"({EXPERIMENT}: {est['jobs']} jobs, {est['runs']} runs): {est['total_s'] / 3600:.2f} h "
          f"= {est['total_s'] / 60:.0f} min of job time "
          + ("(one job at a time on the GPU)." if rows[0].get("device") == "cuda"
             else "(one job per core: half that on 2 cores)."))


if __name__ == "__main__":
    main()
