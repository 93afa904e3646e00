"""(d) Flower's simulation engine on the same workloads as ``benchmarks/run.py`` (W1, W3).

Runs in a separate virtualenv that has ``flwr[simulation]`` (never a project dependency); the
project's own packages (torch, fedbench) are made visible to it through a ``.pth`` file:

    python -m venv /tmp/flwr-venv && /tmp/flwr-venv/bin/pip install "flwr[simulation]"
    .venv/bin/python -c 'import site; print(site.getsitepackages()[0])' \
        > /tmp/flwr-venv/lib/python3.11/site-packages/zz_project.pth   # the project venv's site-packages
    /tmp/flwr-venv/bin/python benchmarks/flower_bench.py W1 0.1 3

Setup (Flower's recommended simulation setup, so that the comparison is fair): Flower 1.x
Message API (``ServerApp`` + ``ClientApp``), the built-in ``FedAvg`` strategy (its own client
sampling: same count, not the same ids), ``client_resources = {num_cpus: 1}`` (2 concurrent
clients on 2 cores), torch 1 thread per client. Each client deserialises the global ``state_dict``, trains the same
``nn.Module``, ``DataLoader`` and ``torch.optim.SGD`` loop as the plain baseline (c), and sends its
``state_dict`` back. Round 1 (Ray and actor start-up, data generation in each actor) is reported
separately; the round time is the mean over rounds 2..R, timed at the strategy's aggregations.

Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402
from flwr.serverapp.strategy import FedAvg  # noqa: E402
from flwr.simulation import run_simulation  # noqa: E402

import run as bench  # noqa: E402  (benchmarks/run.py: workloads, data, nn.Module)

WNAME, P, ROUNDS = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
W = bench.WORKLOADS[WNAME]
_DATA = {}


def _data():
    if not _DATA:
        _DATA["xyc"] = bench.make_data(W)
    return _DATA["xyc"]


client_app = ClientApp()


@client_app.train()
def train(msg: Message, context: Context) -> Message:
    torch.set_num_threads(1)
    from torch.utils.data import DataLoader, TensorDataset

    x, y, clients = _data()
    k = int(context.node_config["partition-id"])
    model = bench.torch_module(W)
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    ix = torch.as_tensor(clients[k])
    loader = DataLoader(TensorDataset(x[ix], y[ix]), batch_size=W["local"]["batch_size"], shuffle=True)
    opt = torch.optim.SGD(model.parameters(), lr=bench.LR)
    local = W["local"]
    done = 0
    for _ in range(local["epochs"] or 10**9):
        for xb, yb in loader:
            if local["steps"] is not None and done == local["steps"]:
                break
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
            done += 1
        if local["steps"] is not None and done == local["steps"]:
            break
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()),
                          "metrics": MetricRecord({"num-examples": len(ix)})})
    return Message(content=content, reply_to=msg)


STAMPS: list[float] = []


class TimedFedAvg(FedAvg):
    def aggregate_train(self, server_round, replies):
        out = super().aggregate_train(server_round, replies)
        STAMPS.append(time.perf_counter())
        return out


server_app = ServerApp()


@server_app.main()
def main(grid: Grid, context: Context) -> None:
    m = W["clients"]
    n_round = max(1, int(bench.sample_clients("uniform", m, P, 0, 1).size))
    strategy = TimedFedAvg(fraction_train=P, fraction_evaluate=0.0, min_train_nodes=n_round,
                           min_evaluate_nodes=0, min_available_nodes=m)
    STAMPS.append(time.perf_counter())
    strategy.start(grid=grid, initial_arrays=ArrayRecord(bench.torch_module(W).state_dict()), num_rounds=ROUNDS)


if __name__ == "__main__":
    t0 = time.perf_counter()
    run_simulation(server_app=server_app, client_app=client_app, num_supernodes=W["clients"],
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    total = time.perf_counter() - t0
    per_round = float(np.mean(np.diff(STAMPS[1:]))) if len(STAMPS) > 2 else float("nan")
    n_round = max(1, int(bench.sample_clients("uniform", W["clients"], P, 0, 1).size))
    print(json.dumps({"workload": WNAME, "participation": P, "impl": "flower", "rounds": ROUNDS - 1,
                      "startup_and_round1_s": (STAMPS[1] - t0) if len(STAMPS) > 1 else None,
                      "round_s": per_round, "client_updates_per_s": n_round / per_round, "total_s": total}))
