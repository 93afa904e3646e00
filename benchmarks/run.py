"""Speed and memory of fedbench's client engines against a plain PyTorch FL loop, side by side.

    python benchmarks/run.py            # the recorded run (a few minutes on a 2-core CPU)
    python benchmarks/run.py --quick    # seconds: tiny sizes, for the smoke test
    python benchmarks/run.py --workloads W1,W3 --rounds 3 --out w13.md

Implementations, all on the same generated data, the same sampled clients and the same rounds:

(a) ``vectorized``  fedbench's vectorized engine (:class:`fedbench.engine.clients.vectorized.VectorizedClients`)
(a') ``seeds``       (a) with 10 seeds of the cell stacked (seed stacking, ``VectorizedClients.stacked``),
                    on the workloads where the engine stacks clients (SEED_STACKING); s/round per
                    cell-round
(b) ``sequential``  fedbench's sequential reference (:class:`fedbench.engine.clients.sequential.SequentialClients`)
(c) ``plain``       a plain PyTorch loop as reference FL codes write it: per client
                    ``copy.deepcopy(nn.Module)``, a shuffled ``DataLoader``, ``torch.optim.SGD``;
                    the server averages ``state_dict``s weighted by n_k.
(d) ``flower``      Flower's simulation engine: see ``flower_probe()``; recorded as not run when
                    ``flwr[simulation]`` cannot be installed or started here.

What one round times: client sampling, local training of the sampled clients, and the FedAvg
server update (for (a)/(b) the algorithm's ``server_update``). Not timed: evaluation and
communication accounting (the plain loop has neither). One untimed warm-up round (round 1 with
two clients: code paths and allocator warmed), then the timed rounds; the figure is their mean.

Each (workload, participation, implementation) runs in a fresh subprocess (same thread count),
so the peak memory is that run's own: the peak resident set size (RSS, sampled every 2 ms from
/proc/self/statm by a thread) during warm-up + timed rounds, minus the RSS just before them
(model, data and imports excluded). tracemalloc is not used: it does not see torch's allocations.

FLOP/s: analytic training FLOPs (forward multiply-adds × 2 × 3 for forward + backward) of the
real (unpadded) samples, divided by the round time; the peak is a 4096² float32 matmul timed in
the same run with the same thread count.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from fedbench.algorithms import get_algorithm  # noqa: E402
from fedbench.engine.clients.allocator import keep_freed_memory  # noqa: E402
from fedbench.engine.clients.sampling import sample_clients  # noqa: E402
from fedbench.engine.clients.sequential import SequentialClients  # noqa: E402
from fedbench.engine.clients.vectorized import VectorizedClients  # noqa: E402
from fedbench.models import build_model, make_grad_fn  # noqa: E402
from fedbench.rng import generator  # noqa: E402

# name: (model cfg, input shape, classes, clients, samples per client, local work, rounds at p=0.1, at p=1.0)
WORKLOADS = {
    "W1": dict(title="MLP 784-200-200-10 (2NN), 100 clients x 600 MNIST-shaped samples, E=5, B=50",
               model={"name": "mlp", "hidden": [200, 200]}, shape=(784,), classes=10, clients=100, n=600,
               local={"epochs": 5, "steps": None, "batch_size": 50}, rounds={0.1: 5, 1.0: 2}),
    "W2": dict(title="FedDyn CIFAR CNN (conv5x5 64, conv5x5 64, FC 384, 192, 10), 100 clients x 500 "
                     "CIFAR-shaped samples, E=1 (scaled down from 5), B=50",
               model={"name": "cnn", "channels": [64, 64], "hidden": [384, 192], "padding": "valid",
                      "kernel_size": 5},
               shape=(3, 32, 32), classes=10, clients=100, n=500,
               local={"epochs": 1, "steps": None, "batch_size": 50}, rounds={0.1: 3, 1.0: 2}),
    "W3": dict(title="logistic regression (a9a-shaped: 123 features, 2 classes), 1,024 clients x 32 samples, "
                     "B=1, 64 local steps",
               model={"name": "logreg"}, shape=(123,), classes=2, clients=1024, n=32,
               local={"epochs": None, "steps": 64, "batch_size": 1}, rounds={0.1: 5, 1.0: 3}),
    "W4": dict(title="character LSTM (embedding 8, 2 LSTM layers of 100, 80 classes, sequence 80; FedDyn's "
                     "Shakespeare model, 133,520 parameters), 100 clients x 200 generated sequences (LEAF's "
                     "2,000 per client scaled down 10x), E=1, B=20 (FedElasticNet's Shakespeare batch)",
               model={"name": "lstm", "vocab_size": 80, "embed_dim": 8, "hidden": [100, 100]}, shape=(80,),
               classes=80, vocab=80, clients=100, n=200,
               local={"epochs": 1, "steps": None, "batch_size": 20}, rounds={0.1: 4, 1.0: 2}),
}
QUICK = {
    "W1": dict(clients=4, n=60, model={"name": "mlp", "hidden": [16]},
               local={"epochs": 1, "steps": None, "batch_size": 50}, rounds={0.5: 1}),
    "W3": dict(clients=16, n=8, local={"epochs": None, "steps": 4, "batch_size": 1}, rounds={0.5: 1}),
    "W4": dict(clients=4, n=12, shape=(6,), model={"name": "lstm", "vocab_size": 80, "embed_dim": 4, "hidden": [8, 8]},
               local={"epochs": 1, "steps": None, "batch_size": 6}, rounds={0.5: 1}),
}
IMPLS = ("vectorized", "seeds", "sequential", "plain")
#: (a') ``seeds``: SEEDS cells (seeds 0..SEEDS-1, same data and partition) trained in lockstep as
#: one stacked engine (seed stacking, :func:`fedbench.engine.rounds.loop.train_seeds`); its s/round is
#: per cell-round (the lockstep round's time / SEEDS), so it compares with the other rows.
SEEDS = 10
#: Where (a') runs: the workloads whose clients the engine stacks on that device (on CPU, W1, W2
#: and W4 run one client per chunk, so stacking seeds cannot pay there and would take 10x the time).
SEED_STACKING = {"cpu": ("W3",), "cuda": ("W1", "W2", "W3", "W4")}
#: (workload, participation): timed rounds for Flower (d) (plus one untimed start-up round).
FLOWER_RUNS = {("W1", 0.1): 2, ("W1", 1.0): 2, ("W3", 0.1): 2, ("W3", 1.0): 1}
LR = 0.05
#: Everything from this line on in an existing ``--out`` file is kept when the table is rewritten.
NOTES_MARKER = "<!-- analysis: kept across reruns -->"

#: The speed targets: (device, workload, participations or None for every one measured, least
#: ratio of (a) vectorized to (c) plain). Every workload must be no slower than (c) (ratio 1). A
#: target is set only below the workload's FLOP ceiling (:func:`flop_ceiling`), which every run
#: prints beside its ratio.
TARGETS = [
    ("cpu", "W3", None, 10.0),
    ("cuda", "W1", None, 50.0),
]


# ------------------------------------------------------------------------------------------------
# data and models


def make_data(w: dict, seed: int = 0):
    """Generated data of the workload's shape: inputs U[0,1), labels from a random linear teacher;
    for a character model (``vocab`` set), int64 character ids and a next character that depends on
    the last two (so the task is learnable, like next-character prediction)."""
    rng = np.random.default_rng(seed)
    n_total = w["clients"] * w["n"]
    clients = [np.arange(k * w["n"], (k + 1) * w["n"]) for k in range(w["clients"])]
    if "vocab" in w:
        x = rng.integers(0, w["vocab"], (n_total, *w["shape"]), dtype=np.int64)
        y = (x[:, -1] * 7 + x[:, -2]) % w["classes"]
        return torch.from_numpy(x), torch.from_numpy(y).long(), clients
    d = int(np.prod(w["shape"]))
    x = rng.random((n_total, d), dtype=np.float32)
    teacher = rng.normal(size=(d, w["classes"])).astype(np.float32)
    y = np.argmax((x - 0.5) @ teacher + rng.gumbel(size=(n_total, w["classes"])).astype(np.float32), axis=1)
    x = x.reshape(n_total, *w["shape"])
    return torch.from_numpy(x), torch.from_numpy(y).long(), clients


def flops_per_sample(w: dict) -> float:
    """Training FLOPs of one sample: 2 × forward multiply-adds × 3 (forward + backward)."""
    cfg, shape = w["model"], w["shape"]
    if cfg["name"] == "logreg":
        macs = int(np.prod(shape)) * w["classes"]
    elif cfg["name"] == "mlp":
        sizes = [int(np.prod(shape)), *cfg["hidden"], w["classes"]]
        macs = sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
    elif cfg["name"] == "lstm":  # per time step and layer: 4 gates × (input + recurrent) matvecs
        sizes = [cfg["embed_dim"], *cfg["hidden"]]
        macs = shape[0] * sum(4 * h * (i + h) for i, h in zip(sizes[:-1], sizes[1:])) + sizes[-1] * w["classes"]
    else:
        c, h, wd = shape
        k = cfg["kernel_size"]
        macs = 0
        for ch in cfg["channels"]:
            h, wd = (h - k + 1, wd - k + 1) if cfg["padding"] == "valid" else (h, wd)
            macs += ch * c * k * k * h * wd
            c, h, wd = ch, h // 2, wd // 2
        sizes = [c * h * wd, *cfg["hidden"], w["classes"]]
        macs += sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))
    return 6.0 * macs


class CharLSTM(nn.Module):
    """The Shakespeare model as FedDyn's / LEAF's reference code writes it: ``nn.Embedding``,
    a stacked ``nn.LSTM`` (PyTorch's fused CPU kernel), ``nn.Linear`` on the last time step."""

    def __init__(self, vocab: int, embed: int, hidden: list[int], classes: int):
        super().__init__()
        if len(set(hidden)) != 1:
            raise ValueError("CharLSTM: nn.LSTM stacks layers of one size")
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden[0], num_layers=len(hidden), batch_first=True)
        self.fc = nn.Linear(hidden[0], classes)

    def forward(self, x):
        out, _ = self.lstm(self.embedding(x))
        return self.fc(out[:, -1])


def torch_module(w: dict) -> nn.Module:
    """The nn.Module a reference FL code would write for the workload's model."""
    cfg, shape, c = w["model"], w["shape"], w["classes"]
    if cfg["name"] == "lstm":
        return CharLSTM(cfg["vocab_size"], cfg["embed_dim"], cfg["hidden"], c)
    if cfg["name"] == "logreg":
        return nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(shape)), c))
    if cfg["name"] == "mlp":
        sizes = [int(np.prod(shape)), *cfg["hidden"], c]
        layers: list[nn.Module] = [nn.Flatten()]
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)
    layers, ch_in = [], shape[0]
    for ch in cfg["channels"]:
        layers += [nn.Conv2d(ch_in, ch, cfg["kernel_size"], padding=cfg["padding"]), nn.ReLU(), nn.MaxPool2d(2)]
        ch_in = ch
    layers.append(nn.Flatten())
    probe = nn.Sequential(*layers)(torch.zeros(1, *shape)).shape[1]
    sizes = [probe, *cfg["hidden"], c]
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


# ------------------------------------------------------------------------------------------------
# the plain loop (c)


def plain_round(global_model: nn.Module, x, y, clients, sampled, local: dict, lr: float, device="cpu"):
    """One FedAvg round as reference FL codes write it (data on the host, ``.to(device)`` per batch)."""
    from torch.utils.data import DataLoader, TensorDataset

    states, weights = [], []
    for k in sampled.tolist():
        model = copy.deepcopy(global_model)
        ix = torch.as_tensor(clients[k])
        loader = DataLoader(TensorDataset(x[ix], y[ix]), batch_size=local["batch_size"], shuffle=True)
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        model.train()
        if local["epochs"] is not None:
            batches = (b for _ in range(local["epochs"]) for b in loader)
        else:  # fixed steps: re-create the iterator when exhausted (FedDyn's code)
            def steps_gen(loader=loader):
                done = 0
                while True:
                    for b in loader:
                        if done == local["steps"]:
                            return
                        yield b
                        done += 1
            batches = steps_gen()
        for xb, yb in batches:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
        states.append(model.state_dict())
        weights.append(len(clients[k]))
    total = float(sum(weights))
    new = {key: sum(s[key] * (wk / total) for s, wk in zip(states, weights)) for key in states[0]}
    global_model.load_state_dict(new)


# ------------------------------------------------------------------------------------------------
# one measured run (in a subprocess)


class PeakRSS:
    """Peak RSS of this process, sampled from /proc/self/statm every 2 ms in a thread."""

    def __init__(self):
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = self.baseline = self.rss()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(0.002)

    def __enter__(self):
        self.baseline = self.peak = self.rss()
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self.rss())


def _sync(dev: torch.device):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def worker(wname: str, participation: float, impl: str, rounds: int, quick: bool, device: str = "cpu") -> dict:
    w = {**WORKLOADS[wname], **(QUICK.get(wname, {}) if quick else {})}
    dev = torch.device(device)
    allocator_tuned = keep_freed_memory()  # what fedbench's train() does; for every impl, (c) included
    torch.manual_seed(0)
    x_host, y_host, clients = make_data(w)
    x, y = x_host.to(dev), y_host.to(dev)
    m = len(clients)
    local = {**w["local"], "lr": LR}
    hp = {"lr": LR, "weight_decay": 0.0, "clip_norm": None}
    seed = 0
    seeds = list(range(SEEDS)) if impl == "seeds" else [seed]
    # per round, every seed's sampled clients (the same count); one seed except for (a')
    sampled_seeds = [[sample_clients("uniform", m, participation, s, t) for s in seeds] for t in range(1, rounds + 2)]
    weights_all = np.array([len(c) for c in clients], dtype=np.float64)

    if impl == "plain":
        gm = torch_module(w).to(dev)

        def one_round(t):
            plain_round(gm, x_host, y_host, clients, sampled_seeds[t - 1][0], local, LR, dev)
    else:
        model = build_model(w["model"], w["shape"], w["classes"])
        grad_fn = make_grad_fn(model)
        algo = get_algorithm("fedavg")
        params = {k: v.to(dev) for k, v in model.init(generator(seed, 0, -1, "init"), dtype=torch.float32).items()}
        state = {"server": algo.server_init(params, {}, m)}
        if impl == "seeds":
            trainer = VectorizedClients.stacked(algo, model, grad_fn, x, y, seeds, [clients] * len(seeds), local)
            servers = [algo.server_init({k: v.to(dev) for k, v in model.init(generator(s, 0, -1, "init"),
                                                                             dtype=torch.float32).items()}, {}, m)
                       for s in seeds]

            def one_round(t):
                sampled = sampled_seeds[t - 1]
                results = trainer.train_cells(servers, sampled, hp, t)
                for i, (res, smp) in enumerate(zip(results, sampled)):
                    servers[i] = algo.server_update(servers[i], res.messages, torch.as_tensor(weights_all[smp]), hp)
        elif impl == "vectorized":
            trainer = VectorizedClients(algo, model, grad_fn, x, y, clients, local, seed)
        else:
            data = [(x[torch.as_tensor(c, device=dev)], y[torch.as_tensor(c, device=dev)]) for c in clients]
            trainer = SequentialClients(algo, grad_fn, data, clients, local, seed)
        if impl != "seeds":
            def one_round(t):
                sampled = sampled_seeds[t - 1][0]
                res = trainer.train_round(state["server"], sampled, hp, t)
                state["server"] = algo.server_update(state["server"], res.messages,
                                                     torch.as_tensor(weights_all[sampled]), hp)

    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
        gpu_base = torch.cuda.memory_allocated(dev)
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        full = sampled_seeds[0]
        sampled_seeds[0] = [smp[:2] for smp in full]
        one_round(1)  # warm-up: round 1 with its first two clients (of each seed) only (untimed)
        sampled_seeds[0] = full
        _sync(dev)
        t1 = time.perf_counter()
        for t in range(2, rounds + 2):
            one_round(t)
        _sync(dev)
        t2 = time.perf_counter()
    per_round = (t2 - t1) / rounds / len(seeds)  # (a'): per cell-round
    clients_per_round = float(np.mean([len(smp[0]) for smp in sampled_seeds[1:]]))
    if local["epochs"] is not None:
        samples = local["epochs"] * w["n"] * clients_per_round
    else:
        samples = local["steps"] * min(local["batch_size"], w["n"]) * clients_per_round
    out = {"workload": wname, "participation": participation, "impl": impl, "rounds": rounds,
           "warmup_s": t1 - t0, "round_s": per_round, "rounds_per_s": 1.0 / per_round,
           "client_updates_per_s": clients_per_round / per_round,
           "flops_per_s": samples * flops_per_sample(w) / per_round,
           "peak_rss_delta_mb": (mem.peak - mem.baseline) / 2**20, "threads": torch.get_num_threads(),
           "device": str(dev), "allocator_tuned": allocator_tuned}
    if dev.type == "cuda":
        out["peak_gpu_delta_mb"] = (torch.cuda.max_memory_allocated(dev) - gpu_base) / 2**20
    if impl in ("vectorized", "seeds"):
        out["padding_efficiency"] = trainer.padding_efficiency
        out["chunk_size"] = trainer.chunk_size or getattr(trainer, "_chunk_cache", None)
        if trainer.graphs is not None:  # CUDA: captured steps (fedbench.engine.clients.graphs)
            out["graph_captures"], out["graph_replays"] = trainer.graphs.captures, trainer.graphs.replays
    return out


# ------------------------------------------------------------------------------------------------
# driver


def matmul_peak(n: int = 4096, reps: int = 3, device: str = "cpu") -> float:
    dev = torch.device(device)
    a, b = torch.randn(n, n, device=dev), torch.randn(n, n, device=dev)
    a @ b
    best = float("inf")
    for _ in range(reps):
        _sync(dev)
        t = time.perf_counter()
        a @ b
        _sync(dev)
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best


def flower_probe() -> str:
    """Whether Flower's simulation engine can run here; the reason if not (one line)."""
    venv = Path(os.environ.get("FLWR_VENV", "/tmp/flwr-venv"))
    py = venv / "bin" / "python"
    if not py.exists():
        return (f"not run: no Flower venv at {venv} (create it with `python -m venv {venv} && "
                f"{venv}/bin/pip install 'flwr[simulation]'`; it is kept out of the project deps)")
    probe = ("import flwr, ray; from flwr.simulation import run_simulation; "
             "print(flwr.__version__, ray.__version__)")
    r = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return "not run: importing flwr/ray failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return (f"flwr {r.stdout.split()[0]}, ray {r.stdout.split()[1]} in {venv} (outside the project deps), "
            "run by benchmarks/flower_bench.py with client_resources num_cpus=1 (2 concurrent clients), 1 torch "
            "thread per client")


def machine() -> str:
    info: dict[str, str] = {}
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    # family/model tell CPU generations apart where "model name" does not (e.g. "AMD EPYC"):
    # the ratios below depend on them (benchmarks/RESULTS.md, "Ratios and their ceilings").
    cpu = (f"{info.get('model name', '?')}, family {info.get('cpu family', '?')} model {info.get('model', '?')}, "
           f"{'AVX-512' if 'avx512f' in info.get('flags', '').split() else 'no AVX-512'}")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return (f"{platform.node()}: {os.cpu_count()} logical CPUs ({cpu}), GPU {gpu}; Python {platform.python_version()}, "
            f"torch {torch.__version__}, numpy {np.__version__}, torch threads {torch.get_num_threads()}")


def run_all(args) -> list[dict]:
    results = []
    for wname in args.workloads:
        w = {**WORKLOADS[wname], **(QUICK.get(wname, {}) if args.quick else {})}
        plan = w["rounds"]
        if args.participations:
            plan = {float(p): plan.get(float(p), 1) for p in args.participations.split(",")}
        for p, rounds in plan.items():
            if args.rounds:
                rounds = args.rounds
            for impl in args.impls:
                if impl == "seeds" and wname not in SEED_STACKING[args.device]:
                    continue
                if args.inprocess:
                    res = worker(wname, p, impl, rounds, args.quick, args.device)
                else:
                    cmd = [sys.executable, __file__, "--worker", wname, str(p), impl, str(rounds),
                           f"--threads={args.threads}", f"--device={args.device}"]
                    if args.quick:
                        cmd.append("--quick")
                    r = subprocess.run(cmd, capture_output=True, text=True,
                                       env={**os.environ, "PYTHONHASHSEED": "0"})
                    if r.returncode != 0:
                        print(r.stderr, file=sys.stderr)
                        raise SystemExit(f"worker failed: {' '.join(cmd)}")
                    res = json.loads(r.stdout.strip().splitlines()[-1])
                results.append(res)
                _print(res)
            if args.flower and (wname, p) in FLOWER_RUNS:
                res = run_flower(wname, p, FLOWER_RUNS[(wname, p)], w)
                if res is not None:
                    results.append(res)
                    _print(res)
    return results


def _print(res):
    if res["round_s"] == res["round_s"]:
        wname, p, impl = res["workload"], res["participation"], res["impl"]
        mem = res.get("peak_rss_delta_mb")
        print(f"{wname} p={p} {impl:10s} {res['round_s']:8.3f} s/round "
                      f"{res['client_updates_per_s']:9.1f} client-updates/s "
              f"{res['flops_per_s'] / 1e9:7.2f} GFLOP/s  peak RSS +{mem if mem is None else round(mem)} MB"
              + (f"  GPU +{res['peak_gpu_delta_mb']:.0f} MB" if "peak_gpu_delta_mb" in res else "")
              + (f"  graphs {res['graph_captures']} captured, {res['graph_replays']} replays"
                 if "graph_captures" in res else ""),
              file=sys.stderr, flush=True)


def run_flower(wname: str, p: float, rounds: int, w: dict) -> dict | None:
    """(d): benchmarks/flower_bench.py in the Flower venv; None (and a note) when it cannot run."""
    venv = Path(os.environ.get("FLWR_VENV", "/tmp/flwr-venv"))
    cmd = [str(venv / "bin" / "python"), str(Path(__file__).with_name("flower_bench.py")), wname, str(p),
           str(rounds + 1)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        res = json.loads(r.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 - recorded in the results, never fatal
        FLOWER_NOTES.append(f"{wname} p={p}: failed ({type(e).__name__}: {str(e)[:200]})")
        return None
    samples = (w["local"]["epochs"] * w["n"] if w["local"]["epochs"] is not None
               else w["local"]["steps"] * min(w["local"]["batch_size"], w["n"]))
    res["flops_per_s"] = samples * res["client_updates_per_s"] * flops_per_sample(w)
    res["rounds_per_s"] = 1.0 / res["round_s"]
    res["peak_rss_delta_mb"] = None
    FLOWER_NOTES.append(f"{wname} p={p}: start-up + round 1 took {res['startup_and_round1_s']:.1f} s (not in "
                        f"the round time)")
    return res


FLOWER_NOTES: list[str] = []


def render(results: list[dict], args, peak_before: float, peak_after: float, flower: str, wall: float) -> str:
    peak = max(peak_before, peak_after)
    lines = [
        "# fedbench benchmarks: vectorized engine vs sequential reference vs a plain PyTorch loop",
        "",
        f"- Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        "- Command: `" + " ".join(["python", "benchmarks/run.py", *args.argv]) + "`",
        f"- Machine: {machine()}",
        f"- torch intra-op threads in every run: {args.threads}",
        f"- Device: {args.device}" + (" (TF32 off: torch default for float32 matmul)" if args.device == "cuda" else ""),
        f"- Matmul peak (4096² float32, same thread count): {peak_before / 1e9:.1f} GFLOP/s before, "
        f"{peak_after / 1e9:.1f} GFLOP/s after the runs (MFU below uses the larger)",
        f"- Whole command: {wall:.0f} s",
        "- Allocator: " + ("glibc malloc with trim threshold 1 GiB and mmap threshold 32 MiB in every (a), (b), (c) "
                           "run (`fedbench.engine.clients.allocator.keep_freed_memory`, which `train()` calls)"
                           if all(r.get("allocator_tuned") for r in results if r["impl"] != "flower")
                           else "the C library's defaults (mallopt unavailable or refused)"),
        "- Round = sampling + local training + FedAvg server update; mean over the timed rounds after one "
        f"untimed warm-up round; every row in its own subprocess. (a'): {SEEDS} seeds (each its own sampled clients "
        "and model) trained in lockstep by one stacked engine; its s/round is the lockstep round / "
        f"{SEEDS}, its client-updates/s counts every seed's clients. Peak memory = peak RSS during the rounds "
        "minus RSS before them (sampled every 2 ms; not tracemalloc, which does not see torch's allocator).",
        "",
        "| workload | p | impl | rounds timed | s/round | rounds/s | client-updates/s | ratio to (c) | "
        "GFLOP/s | MFU | peak RSS Δ (MB) | padding eff. |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        base = next(b for b in results if b["workload"] == r["workload"] and b["participation"] == r["participation"]
                    and b["impl"] == "plain")
        ratio = base["round_s"] / r["round_s"]
        label = {"vectorized": "(a) vectorized", "seeds": f"(a') {SEEDS} seeds stacked",
                 "sequential": "(b) sequential", "plain": "(c) plain loop",
                 "flower": "(d) Flower"}[r["impl"]]
        mem = "n/a" if r["peak_rss_delta_mb"] is None else f"{r['peak_rss_delta_mb']:.0f}"
        if "peak_gpu_delta_mb" in r:
            mem += f" (GPU {r['peak_gpu_delta_mb']:.0f})"
        pad = f"{r['padding_efficiency']:.3f}" if "padding_efficiency" in r else "-"
        lines.append(
            f"| {r['workload']} | {r['participation']} | {label} | {r['rounds']} | {r['round_s']:.3f} | "
            f"{r['rounds_per_s']:.3f} | {r['client_updates_per_s']:.1f} | {ratio:.2f}x | "
            f"{r['flops_per_s'] / 1e9:.2f} | {100 * r['flops_per_s'] / peak:.1f}% | {mem} | {pad} |")
    lines += ["", f"(a) / (c) on {args.device} against its FLOP ceiling (the most any implementation running at the "
              "matmul probe's rate could beat (c) by: 1 / (c)'s MFU) and the target (1× = no slower than (c)):", "",
              "| workload | p | (a) / (c) | FLOP ceiling | target | verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {w} | {p} | {ratio:.2f}× | {_ceiling_text(flop_ceiling(results, w, p, peak))} | ≥ {goal:g}× "
              f"| {verdict} |" for w, p, goal, ratio, verdict in target_rows(results, args.device)]
    lines += ["", "Workloads:", ""]
    for wname in args.workloads:
        lines.append(f"- {wname}: {WORKLOADS[wname]['title']}" + (" (--quick sizes)" if args.quick else ""))
    lines += ["",
              f"(d) Flower: {flower}. Peak memory not measured for Flower (Ray spreads the work over "
              "several processes). Flower's FedAvg samples its own clients (same count per round).", ""]
    lines += [f"- {n}" for n in FLOWER_NOTES] + ([""] if FLOWER_NOTES else [])
    return "\n".join(lines)


def flop_ceiling(results: list[dict], workload: str, p: float, peak: float | None) -> float | None:
    """The FLOP ceiling of (a)/(c) for one (workload, p): ``peak`` / (c)'s FLOP/s, i.e. 1 / (c)'s MFU.

    An implementation that ran every FLOP of the round at the matmul probe's rate would take
    FLOPs / peak; (c) takes FLOPs / its own FLOP/s, so no such implementation beats (c) by more.
    A ceiling below 1 means (c) already runs faster than the probe (oneDNN's convolutions, the
    fused LSTM). None without a (c) row, its FLOP/s or a peak.
    """
    c = next((r for r in results if r["workload"] == workload and r["participation"] == p
              and r["impl"] == "plain"), None)
    if c is None or not peak or not c.get("flops_per_s"):
        return None
    return peak / c["flops_per_s"]


def _ceiling_text(ceiling: float | None) -> str:
    if ceiling is None:
        return "-"
    return f"{ceiling:.1f}× ((c) at {100 / ceiling:.1f}% of the probe)"


def target_rows(results: list[dict], device: str) -> list[tuple[str, float, float, float, str]]:
    """The targets this run measured: (workload, p, target, (a)/(c) ratio, verdict).

    The target is 1× (no slower than (c)) unless :data:`TARGETS` sets one for the workload. The
    verdict is ``met`` or ``missed by X×`` (target / ratio); the ratio is of s/round, (c) over
    (a), as in the table. Rows without both (a) and (c) are skipped. :func:`flop_ceiling` says
    how far any implementation could go.
    """
    rows = []
    by = {(r["workload"], r["participation"], r["impl"]): r for r in results}
    for (wname, p, impl), r in by.items():
        if impl != "vectorized" or (wname, p, "plain") not in by:
            continue
        ratio = by[(wname, p, "plain")]["round_s"] / r["round_s"]
        goal = max([1.0] + [t for dev, w, ps, t in TARGETS if dev == device and w == wname and (ps is None or p in ps)])
        verdict = "met" if ratio >= goal else f"missed by {goal / ratio:.1f}×"
        rows.append((wname, p, goal, ratio, verdict))
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--worker":
        wname, p, impl, rounds = argv[1], float(argv[2]), argv[3], int(argv[4])
        device = "cpu"
        for a in argv:
            if a.startswith("--threads="):
                torch.set_num_threads(int(a.split("=", 1)[1]))
            if a.startswith("--device="):
                device = a.split("=", 1)[1]
        print(json.dumps(worker(wname, p, impl, rounds, "--quick" in argv, device)))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (seconds), for the smoke test")
    ap.add_argument("--workloads", default=None, help="comma-separated, default W1,W3,W2,W4 (W1,W3,W4 with --quick)")
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help=f"comma-separated, from {', '.join(IMPLS)} "
                         "(default all; (d) Flower runs when its venv exists)")
    ap.add_argument("--participations", default=None,
                    help="comma-separated participation rates (default: 0.1 and 1.0)")
    ap.add_argument("--rounds", type=int, default=None, help="timed rounds per run (default per workload)")
    ap.add_argument("--inprocess", action="store_true",
                    help="run every measurement in this process (faster start; memory deltas less clean)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads in every run and in the matmul peak (default 1: on a shared "
                         "2-core machine, 2 OpenMP threads per process collapse under contention)")
    ap.add_argument("--no-flower", dest="flower", action="store_false",
                    help="skip (d) Flower even when its venv exists")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where (a), (b), (c) train; (c) keeps its data on the host and moves each batch")
    ap.add_argument("--out", default=None, help="write the Markdown table here (default: print only)")
    args = ap.parse_args(argv)
    args.argv = argv
    args.workloads = (args.workloads or ("W1,W3,W4" if args.quick else "W1,W3,W2,W4")).split(",")
    args.impls = args.impls.split(",")
    unknown = sorted(set(args.impls) - set(IMPLS))
    if unknown:
        ap.error(f"unknown --impls {', '.join(unknown)}; choose from {', '.join(IMPLS)} "
                 "(a = vectorized, a' = seeds, b = sequential, c = plain; plain is the baseline of every ratio)")
    if "plain" not in args.impls:
        ap.error("--impls must include plain: it is the baseline every ratio is taken against")
    t0 = time.perf_counter()
    if args.quick:
        args.inprocess = True
        args.flower = False
    elif args.flower and args.device != "cpu":
        args.flower = False  # flower_bench.py is CPU-only
    elif args.flower and not (Path(os.environ.get("FLWR_VENV", "/tmp/flwr-venv")) / "bin" / "python").exists():
        args.flower = False
    torch.set_num_threads(args.threads)
    peak_before = matmul_peak(512 if args.quick else 4096, device=args.device)
    results = run_all(args)
    peak_after = matmul_peak(512 if args.quick else 4096, device=args.device)
    flower = "not probed (--quick)" if args.quick else flower_probe()
    text = render(results, args, peak_before, peak_after, flower, time.perf_counter() - t0)
    print(text)
    peak = max(peak_before, peak_after)
    for w, p, goal, ratio, verdict in target_rows(results, args.device):
        ceiling = flop_ceiling(results, w, p, peak)
        print(f"{w} p={p}: (a)/(c) {ratio:.2f}x, FLOP ceiling "
              f"{'-' if ceiling is None else f'{ceiling:.1f}x'}; target >= {goal:g}x: {verdict}", file=sys.stderr)
    if args.out:
        out = Path(args.out)
        notes = ""
        if out.exists() and NOTES_MARKER in out.read_text():  # keep the hand-written analysis
            old = out.read_text()
            notes = "\n" + old[old.index(NOTES_MARKER):]
        out.write_text(text + "\n" + notes)


if __name__ == "__main__":
    main()
