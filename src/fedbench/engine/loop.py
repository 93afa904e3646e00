"""The sequential reference round loop: one training cell from start to metrics.

For t = 1..T (McMahan et al. 2017, Algorithm 1, generalised by the algorithm protocol of
:mod:`fedbench.algorithms`):

1. sample P_t (:mod:`fedbench.engine.sampling`), keyed by (seed, t);
2. for each k ∈ P_t in ascending id order: draw its minibatches from the key (seed, t, k),
   run ``client_init`` → ``client_step``×K → ``client_final`` (:func:`fedbench.engine.local.train_client`);
3. ``server_update`` with the messages and the clients' sample counts n_k;
4. count communication from the messages; every ``eval_every`` rounds (and at T) evaluate θ^t
   and write a row (:mod:`fedbench.metrics.schema`).

Algorithms that hold out data (Elastic Aggregation's sensitivity subset B_k;
:mod:`fedbench.engine.holdout`) get their split once, before round 1, keyed (seed, 0, k,
"holdout"): the engines train on D_k \\ B_k (n_k counts those rows) and run the algorithm's
held-out pass on B_k each round. Algorithms without one cost nothing extra.

Communication columns come from the messages as sent: uplink floats, non-zeros, the entropy
(bits/value, bin width 0.01, pooled over the round's clients and entries), and the same entropy
in the Δ convention (FedDyn's θ_k replaced by Δ_k = θ_k − θ^{t−1},
:func:`fedbench.metrics.communication.as_delta`). The server state's ``metrics`` (Elastic
Aggregation's ``boosted_pct``) become columns of the same name. A spec with
``delta_histogram: {rounds: [...]}`` also keeps Δ histograms (:mod:`fedbench.metrics.histogram`;
written by :func:`run_cell` as ``delta_histogram.parquet``).

Training minibatches of image datasets are augmented when the cell says so (spec
``augmentation``, else the dataset's ``meta["augmentation"]``; :mod:`fedbench.engine.augment`):
draws keyed by (seed, t, k, "augment"), made up front like the batch indices, identical in both
engines. Evaluation never sees augmented data.

A round whose client losses or new server parameters are NaN/inf ends training: its row is
written with status ``diverged`` and the cell finishes normally, so the workflow continues.

Step 2 is done by one of two engines with the same results (to float rounding):

``sequential``
    The reference, written to be obviously right, not fast: one client at a time
    (:func:`fedbench.engine.local.train_client`). The oracle of the equivalence tests.
``vectorized`` (default)
    All sampled clients of a round at once, the same algorithm code run under
    :func:`torch.func.vmap` (:mod:`fedbench.engine.vectorized`). Proven equal to the reference
    in ``tests/engine/test_vectorized.py`` (float64: 1e-10 relative on parameters).

Checkpoint and resume: with ``checkpoint_path`` and ``checkpoint_every = k``, the full training state
(server state, persistent client states, metrics rows so far, communication counters) is written
atomically after every k-th round. Every random draw is keyed by (seed, round, client, purpose),
so there is no RNG position to save: a cell killed at any point (SIGKILL, node failure, Slurm
time limit, preemption) and restarted resumes after the last checkpointed round and produces
bitwise the metrics of an uninterrupted run (``wall_seconds`` aside, which measures time).
A checkpoint whose spec differs from the cell's is ignored. The checkpoint is deleted when the
cell finishes, so a finished cell is never resumed by a later run with changed code.

Seed stacking: :func:`train_seeds` (and :func:`run_cells`, the workflow's ``stack_seeds``) runs
several cells that differ only in their seed in lockstep. Steps 1, 3 and 4 stay per cell
(:class:`_Cell`); step 2 trains the sampled clients of all of them as one set
(:meth:`fedbench.engine.vectorized.VectorizedClients.stacked`), each client with its own cell's
keys and server state. :func:`train` is the one-cell case of the same loop.

The engine is chosen by the ``engine`` argument of :func:`train` / :func:`run_cell`, else by a
``engine`` key of the spec, else the default. Like the device, it is not part of a cell's
identity (:func:`spec_id` ignores it).
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from tqdm import tqdm

from fedbench.algorithms import get_algorithm
from fedbench.data.partition import client_indices, read_partition
from fedbench.data.store import Dataset, load_dataset
from fedbench.engine.allocator import keep_freed_memory
from fedbench.engine.augment import check_record
from fedbench.engine.evaluate import evaluate
from fedbench.engine.holdout import holdout_fraction, holdout_split, make_output_grad_fn
from fedbench.engine.sampling import sample_clients
from fedbench.engine.vectorized import SequentialClients, VectorizedClients
from fedbench.files import atomic_write
from fedbench.metrics.communication import as_delta, count_floats, count_nonzeros, entropy_bits, flatten
from fedbench.metrics.histogram import DeltaHistogram
from fedbench.metrics.schema import ALGORITHM_METRICS, METRICS_SCHEMA, check_metrics_table
from fedbench.models import build_model, make_grad_fn
from fedbench.rng import generator
from fedbench.tree import tree_all_finite

IDENTITY_KEYS = ("experiment", "dataset", "partition", "algorithm", "seed")
DTYPES = {"float32": torch.float32, "float64": torch.float64}
ENGINES = ("vectorized", "sequential")
DEFAULT_ENGINE = "vectorized"
#: Spec keys that choose how a cell runs, not what it computes: excluded from :func:`spec_id`.
RUNTIME_KEYS = ("engine", "chunk_size")
#: Version of the checkpoint's content; a checkpoint of another version is ignored (fresh start).
CHECKPOINT_FORMAT = 2
ALGORITHM_METRIC_NAMES = tuple(name for name, _ in ALGORITHM_METRICS)


def spec_id(spec: dict) -> str:
    """A short stable hash of everything in a cell spec that is not its identity (12 hex chars)."""
    body = {k: v for k, v in spec.items() if k not in IDENTITY_KEYS and k not in RUNTIME_KEYS}
    return hashlib.sha1(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:12]


def augmentation_of(spec: dict, dataset: Dataset) -> dict | None:
    """The augmentation record a cell trains with: the spec's ``augmentation`` when the spec has
    that key (the config resolved it: :func:`fedbench.config.expand_cells`; None = off), else the
    dataset's ``meta["augmentation"]`` (None when absent)."""
    if "augmentation" in spec:
        return spec["augmentation"]
    return dataset.meta.get("augmentation")


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` → CUDA when available, else CPU; ``cpu``; ``cuda`` (error if no GPU is visible)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device: cuda was requested but no CUDA GPU is visible; set device: auto or cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda (got {device!r})")
    return torch.device(device)


def resolve_engine(engine: str | None, spec: dict | None = None) -> str:
    """The engine to use: the argument, else ``spec["engine"]``, else :data:`DEFAULT_ENGINE`.

    Raises:
        ValueError: unknown engine name.
    """
    name = engine if engine is not None else (spec or {}).get("engine") or DEFAULT_ENGINE
    if name not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)} (got {name!r})")
    return name


def train(
    spec: dict,
    dataset: Dataset,
    partition: pa.Table,
    device: str = "auto",
    progress: bool = False,
    engine: str | None = None,
    chunk_size: int | str | None = None,
    checkpoint_path: str | os.PathLike | None = None,
    checkpoint_every: int = 0,
) -> tuple[list[dict], dict]:
    """Train one cell in memory (resuming from ``checkpoint_path`` when it holds this cell's state).

    Args:
        spec: the resolved cell spec (see :func:`fedbench.config.expand_cells`).
        dataset: the prepared dataset.
        partition: the partition table (client_id, sample_index, split).
        device: "auto" | "cpu" | "cuda".
        progress: show a tqdm bar (rounds, latest accuracy) on stderr.
        engine: "vectorized" | "sequential" | None (= ``spec.get("engine")``, else vectorized).
        chunk_size: vectorized engine only: clients per vectorized chunk; None/"auto" =
            ``spec.get("chunk_size")``, else an automatic memory-bounded size.
        checkpoint_path: where to write/read the resume checkpoint (None: no checkpointing).
        checkpoint_every: write it after every k-th round (0: never write; an existing
            checkpoint is still resumed from).

    Returns:
        (rows, info): one dict per evaluated round in METRICS_SCHEMA column order, and a dict
        with status, final parameters (``params``), server state and timing.
    """
    return train_seeds([spec], dataset, [partition], device=device, progress=progress, engine=engine,
                       chunk_size=chunk_size, checkpoint_paths=[checkpoint_path],
                       checkpoint_every=checkpoint_every)[0]


def check_stackable(specs: list[dict]) -> None:
    """Raise ValueError unless ``specs`` are cells that differ only in their seed (and runtime keys).

    Seed stacking trains such cells in lockstep (:func:`train_seeds`): one dataset, one model,
    one algorithm and hyperparameters, one round schedule; only the seed (hence the partition, the
    initial model and every random draw) differs.
    """
    if not specs:
        raise ValueError("train_seeds: no cell specs given")
    first = {**identity_of(specs[0]), "hparams_id": spec_id(specs[0])}
    for spec in specs[1:]:
        other = {**identity_of(spec), "hparams_id": spec_id(spec)}
        diff = sorted(k for k in first if k != "seed" and first[k] != other[k])
        if diff:
            raise ValueError(f"train_seeds: cells {first} and {other} differ in {', '.join(diff)}; only seeds of "
                             "one cell (same experiment, dataset, partition, algorithm and spec) can be stacked")
    seeds = [int(s["seed"]) for s in specs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"train_seeds: seed repeated in {seeds}; give each seed once")


def train_seeds(
    specs: list[dict],
    dataset: Dataset,
    partitions: list[pa.Table],
    device: str = "auto",
    progress: bool = False,
    engine: str | None = None,
    chunk_size: int | str | None = None,
    checkpoint_paths: list[str | os.PathLike | None] | None = None,
    checkpoint_every: int = 0,
) -> list[tuple[list[dict], dict]]:
    """Train several seeds of one cell in lockstep: seed stacking (issue 3, "where it pays").

    Each round, the sampled clients of every seed are trained as one set by the vectorized
    engine (:meth:`fedbench.engine.vectorized.VectorizedClients.stacked`), so C seeds of a small
    model (where one round's clients do not fill the machine: W3-shaped logistic regression, the
    digits MLP, anything on a GPU) cost about one round of C× the clients instead of C rounds.
    Everything else is per cell, exactly as :func:`train` runs one cell: sampling, server update,
    communication counts, evaluation, divergence (a diverged seed stops; the others go on) and
    checkpoints. With ``engine: sequential`` the cells run one after the other within each round.

    Args:
        specs: the cells (:func:`check_stackable`: equal but for the seed).
        dataset: the prepared dataset (shared).
        partitions: per cell, its partition table (partitions are keyed by seed).
        device, progress, engine, chunk_size, checkpoint_every: as for :func:`train`.
        checkpoint_paths: per cell, its checkpoint (None: no checkpointing).

    Returns:
        Per cell, in the order of ``specs``, what :func:`train` returns for it. ``wall_seconds``
        (metrics rows and info) is the time of the stacked run, the same for every cell.

    Raises:
        ValueError: the specs cannot be stacked, or the lists have different lengths.

    The metrics equal those of the cells run one by one to float rounding (vectorized chunks of
    another size may sum in another order; ``tests/engine/test_loop.py``).
    """
    check_stackable(specs)
    checkpoint_paths = [None] * len(specs) if checkpoint_paths is None else list(checkpoint_paths)
    if not (len(specs) == len(partitions) == len(checkpoint_paths)):
        raise ValueError(f"train_seeds: {len(specs)} specs, {len(partitions)} partitions and "
                         f"{len(checkpoint_paths)} checkpoint paths; give one of each per cell")
    spec = specs[0]
    dev = resolve_device(device)
    engine = resolve_engine(engine, spec)
    keep_freed_memory()
    if chunk_size is None:
        chunk_size = spec.get("chunk_size")
    dtype = DTYPES[spec["dtype"]]
    local = spec["local"]
    hp_base = dict(spec["hparams"])
    algo = get_algorithm(spec["algorithm_name"])
    held_fraction = holdout_fraction(algo, hp_base)
    # Integer inputs (Shakespeare's character ids) stay integer ids; real inputs take the cell's dtype.
    x_dtype = dtype if np.issubdtype(dataset.x_train.dtype, np.floating) else torch.int64
    x_train = torch.as_tensor(np.array(dataset.x_train), dtype=x_dtype, device=dev)
    y_train = torch.as_tensor(np.array(dataset.y_train), dtype=torch.int64, device=dev)
    test = (torch.as_tensor(np.array(dataset.x_test), dtype=x_dtype, device=dev),
            torch.as_tensor(np.array(dataset.y_test), dtype=torch.int64, device=dev))
    model = build_model(spec["model"], dataset.feature_shape, dataset.num_classes)
    grad_fn = make_grad_fn(model)
    aug = check_record(augmentation_of(spec, dataset), dataset.feature_shape)
    output_grad_fn = make_output_grad_fn(model.apply) if held_fraction > 0 else None

    cells = [_Cell(s, p, algo, model, x_train, y_train, test, held_fraction, dtype, dev)
             for s, p in zip(specs, partitions)]
    if engine == "vectorized":
        stacked = VectorizedClients.stacked(
            algo, model, grad_fn, x_train, y_train, [c.seed for c in cells], [c.clients for c in cells], local,
            chunk_size=chunk_size, augmentation=aug, holdout=[c.held for c in cells] if held_fraction > 0 else None,
            output_grad_fn=output_grad_fn)
        trainers = [(stacked, i) for i in range(len(cells))]  # (trainer, the cell's index in it)
    else:
        def rows(ix):
            ix = torch.as_tensor(ix, device=dev)
            return x_train[ix], y_train[ix]

        trainers = [(SequentialClients(algo, grad_fn, [rows(ix) for ix in c.clients], c.clients, local, c.seed,
                                       augmentation=aug,
                                       holdout_data=[rows(h) for h in c.held] if held_fraction > 0 else None,
                                       output_grad_fn=output_grad_fn), 0) for c in cells]
    for cell, path, (trainer, i) in zip(cells, checkpoint_paths, trainers):
        states = cell.resume(path)
        if states is not None:
            trainer.load_client_states(states, i)

    rounds = int(spec["rounds"])
    first_round = min(c.first_round for c in cells)
    seeds = ",".join(str(c.seed) for c in cells)
    bar = tqdm(range(first_round, rounds + 1), desc=f"{spec['algorithm']} seed{'s' * (len(cells) > 1)}={seeds}",
               disable=not progress, file=sys.stderr, mininterval=2.0, unit="round", initial=first_round - 1,
               total=rounds)
    for t in bar:
        active = [i for i, c in enumerate(cells) if c.status == "ok" and t >= c.first_round]
        if not active:
            break
        hp = {**hp_base, "lr": local["lr"] * local["lr_decay"] ** (t - 1),
              "weight_decay": local["weight_decay"], "clip_norm": local["clip_norm"]}
        sampled = [cells[i].sample(t) for i in active]
        if engine == "vectorized":
            results = stacked.train_cells([cells[i].server for i in active], sampled, hp, t, cells=active)
        else:
            results = [trainers[i][0].train_round(cells[i].server, s, hp, t) for i, s in zip(active, sampled)]
        for i, s, result in zip(active, sampled, results):
            trainer, j = trainers[i]
            cells[i].end_round(t, s, result, hp, lambda: trainer.client_states(j), checkpoint_paths[i],
                               checkpoint_every)
        latest = cells[active[0]].rows[-1] if cells[active[0]].rows else None
        if latest is not None and latest["round"] == t:
            bar.set_postfix(acc=f"{latest['test_accuracy']:.4f}", loss=f"{latest['train_loss']:.4f}")
    bar.close()
    out = []
    for cell, (trainer, i) in zip(cells, trainers):
        info = cell.info()
        info.update(client_states=trainer.client_states(i), device=str(dev), engine=engine,
                    padding_efficiency=trainer.padding_efficiency)
        out.append((cell.rows, info))
    return out


class _Cell:
    """One cell's side of the round loop (steps 1, 3 and 4 of the module docstring): its
    partition, server state, communication counters, metrics rows and checkpoint."""

    def __init__(self, spec: dict, partition: pa.Table, algo, model, x_train: torch.Tensor,
                 y_train: torch.Tensor, test: tuple[torch.Tensor, torch.Tensor], held_fraction: float,
                 dtype: torch.dtype, dev: torch.device):
        self.spec, self.algo, self.model, self.test = spec, algo, model, test
        self.seed = int(spec["seed"])
        all_clients = client_indices(partition, "train")
        self.m = len(all_clients)
        # D_k \ B_k and B_k (held_fraction 0: all rows train, none held out)
        self.clients, self.held = holdout_split(all_clients, held_fraction, self.seed)
        self.weights = np.array([len(ix) for ix in self.clients], dtype=np.float64)
        used = torch.as_tensor(np.sort(np.concatenate(all_clients)), device=dev)
        self.x_used, self.y_used = x_train[used], y_train[used]
        params = {k: v.to(dev) for k, v in model.init(generator(self.seed, 0, -1, "init"), dtype=dtype).items()}
        self.server = algo.server_init(params, dict(spec["hparams"]), self.m)
        self.dev = dev
        self.identity = {
            "experiment": spec["experiment"],
            "dataset": spec["dataset"],
            "partition": spec["partition"],
            "algorithm": spec["algorithm"],
            "algorithm_name": spec["algorithm_name"],
            "hparams_id": spec_id(spec),
            "seed": self.seed,
        }
        self.counters = (0, 0, 0, 0.0, 0.0)  # uplink floats, non-zeros, downlink floats, entropy, entropy (Δ)
        self.hist = None
        if spec.get("delta_histogram") is not None:
            self.hist = DeltaHistogram(spec["delta_histogram"]["rounds"])
        self.rows: list[dict] = []
        self.status = "ok"
        self.first_round = 1
        self.t_start = time.perf_counter()

    def resume(self, checkpoint_path) -> dict | None:
        """Load this cell's checkpoint if there is one; returns its client states (None: fresh start)."""
        ckpt = load_checkpoint(checkpoint_path, self.identity["hparams_id"], self.dev)
        if ckpt is None:
            return None
        self.server = ckpt["server"]
        self.rows = ckpt["rows"]
        self.counters = tuple(ckpt["counters"])
        if self.hist is not None:
            self.hist = DeltaHistogram.from_state(ckpt["delta_histogram"])
        self.first_round = ckpt["round"] + 1
        self.t_start = time.perf_counter() - ckpt["elapsed"]
        print(f"resuming from {checkpoint_path} after round {ckpt['round']}", file=sys.stderr)
        return ckpt["client_states"]

    def sample(self, t: int) -> np.ndarray:
        sampling = self.spec["sampling"]
        return sample_clients(sampling["scheme"], self.m, sampling["participation"], self.seed, t)

    def end_round(self, t: int, sampled: np.ndarray, result, hp: dict, client_states, checkpoint_path,
                  checkpoint_every: int) -> None:
        """Server update, communication, evaluation and checkpoint of round t (steps 3 and 4)."""
        algo, spec = self.algo, self.spec
        rounds = int(spec["rounds"])
        messages, losses = result.messages, result.losses
        down = count_floats(algo.broadcast(self.server))
        theta_prev = self.server["params"]
        self.server = algo.server_update(self.server, messages, torch.as_tensor(self.weights[sampled]), hp)
        algo_metrics = algorithm_metrics(self.server)

        up_floats, up_nnz, down_floats, up_entropy, up_entropy_delta = self.counters
        diverged = not (np.all(np.isfinite(losses)) and tree_all_finite(self.server["params"]))
        up_floats += sum(count_floats(msg) for msg in result.counted)
        up_nnz += sum(count_nonzeros(msg) for msg in result.counted)
        down_floats += down * len(sampled)
        if not diverged:
            h_t = entropy_bits(flatten(result.counted))
            up_entropy += h_t
            # The Δ convention: differs only for messages holding a model θ_k (FedDyn).
            if any("params" in msg for msg in messages) or self.hist is not None:
                delta_msgs = [as_delta(msg, theta_prev) for msg in messages]
                if any("params" in msg for msg in messages):
                    h_t = entropy_bits(flatten(delta_msgs))
                if self.hist is not None:
                    self.hist.add_round(t, delta_msgs, flatten)
            up_entropy_delta += h_t
        else:
            up_entropy = up_entropy_delta = float("nan")
        self.counters = (up_floats, up_nnz, down_floats, up_entropy, up_entropy_delta)
        if diverged or t % spec["eval_every"] == 0 or t == rounds:
            params = self.server["params"]
            train_loss, train_acc = evaluate(self.model.apply, params, self.x_used, self.y_used)
            test_loss, test_acc = evaluate(self.model.apply, params, *self.test)
            diverged = diverged or not np.isfinite(train_loss)
            if diverged:
                self.status, test_acc, train_acc = "diverged", float("nan"), float("nan")
            self.rows.append({**self.identity, "round": t, "clients_sampled": int(len(sampled)),
                              "train_loss": train_loss, "train_accuracy": train_acc,
                              "test_loss": test_loss, "test_accuracy": test_acc,
                              "uplink_floats": up_floats, "uplink_nonzeros": up_nnz,
                              "uplink_entropy_bits": up_entropy, "uplink_entropy_bits_delta": up_entropy_delta,
                              "downlink_floats": down_floats,
                              "wall_seconds": time.perf_counter() - self.t_start, "status": self.status,
                              **algo_metrics})
        if diverged:
            return
        if checkpoint_path is not None and checkpoint_every and t % checkpoint_every == 0 and t < rounds:
            save_checkpoint(checkpoint_path, {
                "format": CHECKPOINT_FORMAT, "hparams_id": self.identity["hparams_id"], "round": t,
                "server": self.server, "client_states": client_states(), "rows": self.rows,
                "counters": self.counters, "delta_histogram": None if self.hist is None else self.hist.state(),
                "elapsed": time.perf_counter() - self.t_start})

    def info(self) -> dict:
        return {"status": self.status, "rounds_completed": self.rows[-1]["round"] if self.rows else 0,
                "params": self.server["params"], "server_state": self.server,
                "wall_seconds": time.perf_counter() - self.t_start, "delta_histogram": self.hist,
                "holdout_sizes": [len(h) for h in self.held]}


def identity_of(spec: dict) -> dict:
    """experiment, dataset, partition, algorithm (label) and seed of a cell spec."""
    return {k: (int(spec[k]) if k == "seed" else spec[k]) for k in IDENTITY_KEYS}


def algorithm_metrics(server_state: dict) -> dict[str, float | None]:
    """The row's algorithm-metric columns from the server state's ``metrics`` (None where the
    algorithm has no such metric).

    Raises:
        KeyError: the state holds a metric that is not a schema column (add it to
            :data:`fedbench.metrics.schema.ALGORITHM_METRICS` and document it there).
    """
    metrics = server_state.get("metrics") or {}
    unknown = sorted(set(metrics) - set(ALGORITHM_METRIC_NAMES))
    if unknown:
        raise KeyError(f"server state metrics {unknown} are not metrics.parquet columns; known: "
                       f"{', '.join(ALGORITHM_METRIC_NAMES)} (fedbench.metrics.schema.ALGORITHM_METRICS)")
    return {name: float(metrics[name]) if name in metrics else None for name in ALGORITHM_METRIC_NAMES}


def save_checkpoint(path: str | os.PathLike, state: dict) -> None:
    """Write a resume checkpoint atomically (temporary file, fsync, rename)."""
    with atomic_write(path) as tmp:
        torch.save(state, tmp)


def load_checkpoint(path: str | os.PathLike | None, hparams_id: str, device: torch.device | str = "cpu") -> dict | None:
    """The checkpoint at ``path`` if it exists and belongs to the cell ``hparams_id``, else None.

    A checkpoint of another spec (a changed hyperparameter) is ignored with a message: the cell
    starts from round 1.
    """
    if path is None or not Path(path).exists():
        return None
    state = torch.load(path, map_location=device, weights_only=False)
    if state.get("format") != CHECKPOINT_FORMAT:
        print(f"ignoring checkpoint {path}: written by another fedbench version (format "
              f"{state.get('format', 1)}, expected {CHECKPOINT_FORMAT})", file=sys.stderr)
        return None
    if state.get("hparams_id") != hparams_id:
        print(f"ignoring checkpoint {path}: it belongs to spec {state.get('hparams_id')}, "
              f"not {hparams_id}", file=sys.stderr)
        return None
    return state


def rows_to_table(rows: list[dict]) -> pa.Table:
    """Rows from :func:`train` as a METRICS_SCHEMA table (checked)."""
    table = pa.Table.from_pylist(rows, schema=METRICS_SCHEMA)
    check_metrics_table(table)
    return table


def run_cell(
    spec: dict,
    dataset_dir: str | os.PathLike,
    partition_path: str | os.PathLike,
    metrics_path: str | os.PathLike,
    summary_path: str | os.PathLike,
    device: str = "auto",
    num_threads: int | None = None,
    progress: bool = True,
    engine: str | None = None,
    chunk_size: int | str | None = None,
    checkpoint_every: int = 0,
    delta_histogram_path: str | os.PathLike | None = None,
) -> dict:
    """Train one cell and write ``metrics.parquet`` and ``summary.json`` (each atomically), and
    ``delta_histogram.parquet`` when the spec has ``delta_histogram``.

    With ``checkpoint_every = k > 0`` the state is checkpointed every k rounds to
    ``checkpoint.pt`` beside ``metrics_path``; a rerun after a kill resumes from it, and it is
    removed once the outputs are written. ``metrics.parquet`` only ever appears complete.

    Args:
        spec: resolved cell spec (:func:`fedbench.config.expand_cells`).
        dataset_dir: ``resources/datasets/<dataset>``.
        partition_path: ``results/partitions/.../partition.parquet``.
        metrics_path, summary_path: outputs.
        device: "auto" | "cpu" | "cuda".
        num_threads: torch intra-op threads (the Snakemake job's thread count).
        engine, chunk_size: see :func:`train`.
        delta_histogram_path: where to write the Δ histograms (:mod:`fedbench.metrics.histogram`)
            of a spec with ``delta_histogram``; default ``delta_histogram.parquet`` beside
            ``metrics_path``.

    Raises:
        ValueError: ``delta_histogram_path`` given for a spec without ``delta_histogram``.

    Returns:
        The summary dict. A diverged run returns normally with ``status: diverged``.
    """
    return run_cells([spec], dataset_dir, [partition_path], [metrics_path], [summary_path], device=device,
                     num_threads=num_threads, progress=progress, engine=engine, chunk_size=chunk_size,
                     checkpoint_every=checkpoint_every,
                     delta_histogram_paths=None if delta_histogram_path is None else [delta_histogram_path])[0]


def run_cells(
    specs: list[dict],
    dataset_dir: str | os.PathLike,
    partition_paths: list[str | os.PathLike],
    metrics_paths: list[str | os.PathLike],
    summary_paths: list[str | os.PathLike],
    device: str = "auto",
    num_threads: int | None = None,
    progress: bool = True,
    engine: str | None = None,
    chunk_size: int | str | None = None,
    checkpoint_every: int = 0,
    delta_histogram_paths: list[str | os.PathLike] | None = None,
) -> list[dict]:
    """:func:`run_cell` for several seeds of one cell trained in lockstep (:func:`train_seeds`):
    per cell, the same outputs, checkpoint and summary as :func:`run_cell` writes for it alone,
    plus ``stacked_seeds`` (the seeds trained together) in its summary. Arguments are per cell,
    in the order of ``specs``; returns the summaries in that order.

    Raises:
        ValueError: the lists have different lengths, the specs cannot be stacked
            (:func:`check_stackable`), or a Δ-histogram path is given for a spec without
            ``delta_histogram``.
    """
    n = len(specs)
    hist_paths = [None] * n if delta_histogram_paths is None else list(delta_histogram_paths)
    if not (len(partition_paths) == len(metrics_paths) == len(summary_paths) == len(hist_paths) == n):
        raise ValueError(f"run_cells: {n} specs, {len(partition_paths)} partitions, {len(metrics_paths)} metrics "
                         f"paths, {len(summary_paths)} summary paths, {len(hist_paths)} Δ-histogram paths; "
                         "give one of each per cell")
    for spec, hist_path in zip(specs, hist_paths):
        if hist_path is not None and spec.get("delta_histogram") is None:
            raise ValueError(f"delta_histogram_path {hist_path} given, but the cell's spec does not ask "
                             "for Δ histograms (experiment key delta_histogram)")
    check_stackable(specs)
    if num_threads:
        torch.set_num_threads(int(num_threads))
    metrics_paths, summary_paths = [Path(p) for p in metrics_paths], [Path(p) for p in summary_paths]
    for path in (*metrics_paths, *summary_paths):
        path.parent.mkdir(parents=True, exist_ok=True)
    dataset = load_dataset(dataset_dir)
    partitions = [read_partition(p) for p in partition_paths]
    checkpoint_paths = [p.parent / "checkpoint.pt" for p in metrics_paths]
    results = train_seeds(specs, dataset, partitions, device=device, progress=progress, engine=engine,
                          chunk_size=chunk_size, checkpoint_paths=checkpoint_paths, checkpoint_every=checkpoint_every)
    summaries = []
    for spec, (rows, info), metrics_path, summary_path, hist_path, ckpt in zip(
            specs, results, metrics_paths, summary_paths, hist_paths, checkpoint_paths):
        table = rows_to_table(rows)
        last = rows[-1]
        ok_rows = [r for r in rows if r["status"] == "ok"]
        summary = {
            "spec": spec,
            "hparams_id": spec_id(spec),
            "status": info["status"],
            "rounds_completed": info["rounds_completed"],
            "final_test_accuracy": last["test_accuracy"],
            "best_test_accuracy": max((r["test_accuracy"] for r in ok_rows), default=None),
            "final_train_loss": last["train_loss"],
            "uplink_floats": last["uplink_floats"],
            "wall_seconds": info["wall_seconds"],
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "num_parameters": int(sum(v.numel() for v in info["params"].values())),
            "device": info["device"],
            "engine": info["engine"],
            "padding_efficiency": info["padding_efficiency"],
            "torch": torch.__version__,
        }
        if n > 1:
            summary["stacked_seeds"] = [int(s["seed"]) for s in specs]
        if info["delta_histogram"] is not None:
            hist_file = Path(hist_path or metrics_path.parent / "delta_histogram.parquet")
            hist_table = info["delta_histogram"].to_table(identity_of(spec))
            with atomic_write(hist_file) as tmp:
                pq.write_table(hist_table, tmp)
            summary["delta_histogram"] = str(hist_file)
        with atomic_write(metrics_path) as tmp:
            pq.write_table(table, tmp)
        with atomic_write(summary_path) as tmp:
            tmp.write_text(json.dumps(summary, indent=2, default=float) + "\n")
        ckpt.unlink(missing_ok=True)
        print(f"{spec['experiment']}/{spec['dataset']}/{spec['partition']}/{spec['algorithm']} seed={spec['seed']}: "
              f"status={info['status']} final test accuracy={last['test_accuracy']:.4f} "
              f"({info['wall_seconds']:.1f}s, peak RSS {summary['peak_rss_mb']:.0f} MB)", file=sys.stderr)
        summaries.append(summary)
    return summaries
