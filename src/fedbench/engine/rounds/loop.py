"""The round loop: train one cell, or several stackable cells in lockstep, from start to metrics.

For t = 1..T (McMahan et al., "Communication-Efficient Learning of Deep Networks from
Decentralized Data", AISTATS 2017, Algorithm 1, generalised by the algorithm protocol of
:mod:`fedbench.algorithms`), per cell (:class:`fedbench.engine.rounds.cell.Cell`):

1. sample P_t (:mod:`fedbench.engine.clients.sampling`), keyed by (seed, t);
2. local training of every k ∈ P_t: its minibatches drawn from the key (seed, t, k),
   ``client_init`` → ``client_step``×K → ``client_final``, by the client engine;
3. ``server_update`` with the messages and the clients' sample counts n_k;
4. count communication from the messages; every ``eval_every`` rounds (and at T) evaluate θ^t
   and write a row (:mod:`fedbench.metrics.schema`); checkpoint every ``checkpoint_every`` rounds
   (:mod:`fedbench.engine.rounds.checkpoint`).

A cell with ``eval_initial: true`` also evaluates θ⁰ before round 1 and writes it as the row of
round 0 (:meth:`fedbench.engine.rounds.cell.Cell.evaluate_initial`), once: a resumed cell's checkpoint
holds it already.

Steps 1, 3 and 4 are the cell's (:mod:`fedbench.engine.rounds.cell`). Step 2 is done by one of two
client engines with the same results (to float rounding) and one interface
(:class:`fedbench.engine.clients.interface.ClientEngine`), built by :func:`make_engine`, the only place
where the engine kind matters:

``sequential``
    The reference, written to be obviously right, not fast: one client at a time
    (:mod:`fedbench.engine.clients.sequential`). The oracle of the equivalence tests.
``vectorized`` (default)
    All sampled clients of a round at once, the same algorithm code run under
    :func:`torch.func.vmap` (:mod:`fedbench.engine.clients.vectorized`). Proven equal to the reference
    in ``tests/engine/clients/test_vectorized.py`` (float64: 1e-10 relative on parameters).

The engine is chosen by the ``engine`` argument of :func:`train` / :func:`run_cell`, else by a
``engine`` key of the spec, else the default. Like the device, it is not part of a cell's
identity (:func:`fedbench.engine.rounds.cell.spec_id` ignores it).

Algorithms that hold out data (Elastic Aggregation's sensitivity subset B_k;
:mod:`fedbench.engine.clients.holdout`) get their split once, before round 1, keyed (seed, 0, k,
"holdout"): the engines train on D_k \\ B_k (n_k counts those rows) and run the algorithm's
held-out pass on B_k each round. Training minibatches of image datasets are augmented when the
cell says so (:meth:`fedbench.engine.spec.CellSpec.augmentation_for`;
:mod:`fedbench.engine.clients.augment`): draws keyed by
(seed, t, k, "augment"), identical in both engines. Evaluation never sees augmented data.

Stacking: :func:`train_seeds` (and :func:`run_cells`, the workflow's ``stack: true``) runs
several stackable cells in lockstep (:mod:`fedbench.engine.rounds.stacking`: they may differ in seed,
label, local lr, lr_decay, weight_decay, clip_norm value and numeric non-structural
hyperparameters): steps 1, 3 and 4 stay per cell; step 2 trains the sampled clients of all of
them in one call of the engine, each client with its own cell's keys, server state and
hyperparameters. :func:`train` is the one-cell case of the same loop.

Files: :func:`run_cell` / :func:`run_cells` load a cell's dataset and partition, train it with a
resume checkpoint beside its metrics, and write its files (:mod:`fedbench.engine.rounds.output`).
"""

from __future__ import annotations

import os
import sys
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch
from tqdm import tqdm

from fedbench.algorithms import get_algorithm
from fedbench.data.partition import read_partition
from fedbench.data.store import Dataset, load_dataset
from fedbench.engine.clients.allocator import keep_freed_memory
from fedbench.engine.clients.augment import check_record
from fedbench.engine.clients.holdout import holdout_fraction, make_output_grad_fn
from fedbench.engine.clients.interface import ClientEngine
from fedbench.engine.clients.sequential import SequentialClients
from fedbench.engine.clients.vectorized import VectorizedClients
from fedbench.engine.rounds.cell import Cell, partition_rows
from fedbench.engine.rounds.lifetime import CellLock
from fedbench.engine.rounds.output import write_cell
from fedbench.engine.rounds.stacking import check_stackable
from fedbench.engine.spec import CellSpec, LocalWork
from fedbench.files import remove_stale_temporaries
from fedbench.models import build_model, make_grad_fn

DTYPES = {"float32": torch.float32, "float64": torch.float64}
ENGINES = ("vectorized", "sequential")
DEFAULT_ENGINE = "vectorized"


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` → CUDA when available, else CPU; ``cpu``; ``cuda`` (error if no GPU is visible)."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device: cuda was requested but no CUDA GPU is visible; set device: auto or cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda (got {device!r})")
    return torch.device(device)


def resolve_engine(engine: str | None, spec_engine: str | None = None) -> str:
    """The engine to use: the argument, else the spec's (``spec_engine``), else :data:`DEFAULT_ENGINE`.

    Raises:
        ValueError: unknown engine name.
    """
    name = engine if engine is not None else spec_engine or DEFAULT_ENGINE
    if name not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)} (got {name!r})")
    return name


def make_engine(name: str, algo, model, grad_fn, x_train: torch.Tensor, y_train: torch.Tensor,
                seeds: list[int], clients: list, local: LocalWork, **options) -> ClientEngine:
    """The client engine ``name`` (one of :data:`ENGINES`) for the cells of ``seeds``, cell c's
    clients training on the rows ``clients[c]``; ``options`` (chunk_size, augmentation, holdout,
    output_grad_fn) as for :meth:`fedbench.engine.clients.vectorized.VectorizedClients.stacked`."""
    cls = {"vectorized": VectorizedClients, "sequential": SequentialClients}[name]
    return cls.stacked(algo, model, grad_fn, x_train, y_train, seeds, clients, local, **options)


def train(
    spec: dict | CellSpec,
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
        spec: the cell's training spec (:func:`fedbench.config.training_spec`), or it resolved.
        dataset: the prepared dataset.
        partition: the partition table (client_id, sample_index, split).
        device: "auto" | "cpu" | "cuda".
        progress: show a tqdm bar (rounds, latest accuracy) on stderr.
        engine: "vectorized" | "sequential" | None (= the spec's ``engine``, else vectorized).
        chunk_size: vectorized engine only: clients per vectorized chunk; None/"auto" = the spec's
            ``chunk_size``, else an automatic memory-bounded size.
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


def train_seeds(
    specs: list[dict | CellSpec],
    dataset: Dataset,
    partitions: list[pa.Table],
    device: str = "auto",
    progress: bool = False,
    engine: str | None = None,
    chunk_size: int | str | None = None,
    checkpoint_paths: list[str | os.PathLike | None] | None = None,
    checkpoint_every: int = 0,
) -> list[tuple[list[dict], dict]]:
    """Train several stackable cells in lockstep (stacking: seeds, and hyperparameter values).

    Each round, the sampled clients of every cell are trained in one call of the client engine
    (:func:`make_engine`), each cell with its own round hyperparameters
    (:meth:`fedbench.engine.spec.CellSpec.round_hparams`);
    the vectorized engine trains them as one set
    (:meth:`fedbench.engine.clients.vectorized.VectorizedClients.stacked`), so C cells of a small
    model (where one round's clients do not fill the machine: W3-shaped logistic regression, the
    digits MLP, anything on a GPU) cost about one round of C× the clients instead of C rounds.
    Everything else is per cell, exactly as :func:`train` runs one cell: sampling, server update,
    communication counts, evaluation, divergence (a diverged cell stops; the others go on) and
    checkpoints. With ``engine: sequential`` the cells run one after the other within each round.

    Args:
        specs: the cells' training specs, resolved here once (:meth:`fedbench.engine.spec.CellSpec.of`;
            :func:`fedbench.engine.rounds.stacking.check_stackable`: equal
            :func:`fedbench.engine.rounds.stacking.stack_key`; seed, label, local lr, lr_decay,
            weight_decay, clip_norm value and numeric non-structural hyperparameters may differ).
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
    another size may sum in another order; ``tests/engine/rounds/test_loop.py`` for seeds,
    ``tests/engine/rounds/test_stacking.py`` for hyperparameters: 1e-10 relative in float64).
    """
    specs = [CellSpec.of(s) for s in specs]
    check_stackable([s.record for s in specs])
    checkpoint_paths = [None] * len(specs) if checkpoint_paths is None else list(checkpoint_paths)
    if not (len(specs) == len(partitions) == len(checkpoint_paths)):
        raise ValueError(f"train_seeds: {len(specs)} specs, {len(partitions)} partitions and "
                         f"{len(checkpoint_paths)} checkpoint paths; give one of each per cell")
    spec = specs[0]
    dev = resolve_device(device)
    engine = resolve_engine(engine, spec.engine)
    keep_freed_memory()
    if chunk_size is None:
        chunk_size = spec.chunk_size
    dtype = DTYPES[spec.dtype]
    local = spec.local  # batch size, epochs, steps: equal for stackable cells
    algo = get_algorithm(spec.algorithm_name)
    held_fraction = holdout_fraction(algo, dict(spec.hparams))  # its hyperparameters are structural
    # Integer inputs (Shakespeare's character ids) stay integer ids; real inputs take the cell's dtype.
    x_dtype = dtype if np.issubdtype(dataset.x_train.dtype, np.floating) else torch.int64
    x_train = torch.tensor(dataset.x_train, dtype=x_dtype, device=dev)  # one copy, converted as it is made
    y_train = torch.tensor(dataset.y_train, dtype=torch.int64, device=dev)
    test = (torch.tensor(dataset.x_test, dtype=x_dtype, device=dev),
            torch.tensor(dataset.y_test, dtype=torch.int64, device=dev))
    model = build_model(spec.model, dataset.feature_shape, dataset.num_classes)
    grad_fn = make_grad_fn(model)
    aug = check_record(spec.augmentation_for(dataset.meta), dataset.feature_shape)
    output_grad_fn = make_output_grad_fn(model.apply) if held_fraction > 0 else None

    rows = {}  # read once per partition table: the cells of a seed's learning-rate grid share one
    for p in partitions:
        if id(p) not in rows:
            rows[id(p)] = partition_rows(p)
    cells = [Cell(s, p, algo, model, x_train, y_train, test, held_fraction, dtype, dev, dataset.num_classes,
                  rows=rows[id(p)]) for s, p in zip(specs, partitions)]
    clients = make_engine(engine, algo, model, grad_fn, x_train, y_train, [c.seed for c in cells],
                          [c.clients for c in cells], local, chunk_size=chunk_size, augmentation=aug,
                          holdout=[c.held for c in cells] if held_fraction > 0 else None,
                          output_grad_fn=output_grad_fn)
    if hasattr(clients, "planned_rounds"):  # the vectorized engine: whether its compiled paths pay
        clients.planned_rounds = spec.rounds
    fused = fusable(specs) and hasattr(clients, "train_rounds")
    fresh = []
    for i, (cell, path) in enumerate(zip(cells, checkpoint_paths)):
        states = cell.resume(path)
        if states is not None:
            clients.load_client_states(states, i)
        elif cell.spec.eval_initial:  # a fresh start: θ⁰'s row (a checkpoint already holds it)
            fresh.append(cell)
    initial = evaluate_cells(clients, fresh, [c.server["params"] for c in fresh]) if fused else [None] * len(fresh)
    for cell, evaluation in zip(fresh, initial):
        cell.evaluate_initial(evaluation)

    rounds = spec.rounds
    first_round = min(c.first_round for c in cells)
    seeds = ",".join(str(c.seed) for c in cells)
    desc = (f"{spec.algorithm} seed{'s' * (len(cells) > 1)}={seeds}" if len({s.algorithm for s in specs}) == 1
            else f"{spec.algorithm_name} ×{len(cells)} cells")
    bar = tqdm(desc=desc,
               disable=not progress, file=sys.stderr, mininterval=2.0, unit="round", initial=first_round - 1,
               total=rounds)
    t = first_round
    while t <= rounds:
        active = [i for i, c in enumerate(cells) if c.status == "ok" and t >= c.first_round]
        if not active:
            break
        if fused:  # rounds t..end in one call of the engine, where it can (else: round by round from here)
            end = segment_end(cells, t, checkpoint_paths, checkpoint_every)
            hps = [cells[i].spec.round_hparams(t) for i in active]
            done = clients.train_rounds([cells[i].server for i in active], hps, t, end, active)
            if done is not None:
                last, results = done
                due = [(i, r) for i, r in zip(active, results) if cells[i].evaluates_at(last, r["diverged"])]
                evaluations = dict(zip((i for i, _ in due), evaluate_cells(
                    clients, [cells[i] for i, _ in due], [r["server"]["params"] for _, r in due])))
                for i, result in zip(active, results):
                    cells[i].end_rounds(last, cells[i].m, last - t + 1, result, partial(clients.client_states, i),
                                        checkpoint_paths[i], checkpoint_every, evaluations.get(i))
                bar.update(last - t + 1)
                t = last + 1
                continue
            fused = False
        hps = [cells[i].spec.round_hparams(t) for i in active]
        sampled = [cells[i].sample(t) for i in active]
        results = clients.train_cells([cells[i].server for i in active], sampled, hps, t, cells=active)
        for i, s, result, hp in zip(active, sampled, results, hps):
            cells[i].end_round(t, s, result, hp, partial(clients.client_states, i), checkpoint_paths[i],
                               checkpoint_every)
        latest = cells[active[0]].rows[-1] if cells[active[0]].rows else None
        if latest is not None and latest["round"] == t:
            bar.set_postfix(acc=f"{latest['test_accuracy']:.4f}", loss=f"{latest['train_loss']:.4f}")
        bar.update(1)
        t += 1
    bar.close()
    out = []
    for i, cell in enumerate(cells):
        info = cell.info()
        info.update(client_states=clients.client_states(i), device=str(dev), engine=engine,
                    padding_efficiency=clients.padding_efficiency)
        out.append((cell.rows, info))
    return out


def evaluate_cells(clients, cells: list[Cell], params: list[dict]) -> list[tuple | None]:
    """Per cell, :meth:`Cell.evaluation` of ``params`` computed for many cells at once where the
    engine's linear paths can (``clients.evaluator``: on CPU
    :meth:`fedbench.engine.linear_fast.linear_steps.LinearSteps.evaluate`, linear models on float64 rows, one
    pass over the rows for all cells that share their training rows and test split; on CUDA
    :meth:`fedbench.engine.linear_fast.tensor_rounds.TensorRounds.evaluate`, ``binary_logreg``), else None
    (the cell evaluates itself)."""
    out: list[tuple | None] = [None] * len(cells)
    linear = getattr(clients, "evaluator", None) if cells and getattr(clients, "fast_steps", False) else None
    if linear is None:
        return out
    groups: dict = {}
    for j, cell in enumerate(cells):
        if cell.model.loss is None and cell.pgd_radius is None:
            groups.setdefault((id(cell.x_used), id(cell.test[0])), []).append(j)
    for members in groups.values():
        first = cells[members[0]]
        ps = [params[j] for j in members]
        train = linear.evaluate(ps, first.x_used, first.y_used)
        test = None if train is None else linear.evaluate(ps, *first.test)
        if test is None:
            continue
        for j, (tr_loss, tr_acc, _), te in zip(members, train, test):
            out[j] = (tr_loss, tr_acc, *te)
    return out


def fusable(specs: list[CellSpec]) -> bool:
    """Whether cells of these specs may have several rounds run in one call of the engine
    (:meth:`fedbench.engine.clients.vectorized.VectorizedClients.train_rounds`, which checks the rest):
    full participation (every client every round: nothing is drawn), the same hyperparameters
    every round (no ``lr_decay``, no ``lr_schedule``), and nothing recorded that needs every
    round's messages (``uplink_entropy: false``, no ``delta_histogram``)."""
    return all(s.participation == 1.0 and s.local.lr_decay == 1.0 and not s.local.lr_schedule
               and not s.uplink_entropy and s.delta_histogram_rounds is None for s in specs)


def segment_end(cells: list[Cell], t: int, checkpoint_paths: list, checkpoint_every: int) -> int:
    """The last round of the segment that starts at round ``t``: the first round ≥ t at which an
    active cell evaluates (``eval_every``, its last round) or writes a checkpoint, or the round
    before a resumed cell joins. A function of t and the specs only, so a run resumed from a
    checkpoint cuts the same segments as the uninterrupted one (and the rounds are the same
    either way: the engine computes every round of such a job with the same code)."""
    end = None
    for cell, path in zip(cells, checkpoint_paths):
        if cell.status != "ok":
            continue
        if t < cell.first_round:  # joins later
            bound = cell.first_round - 1
        else:
            every = cell.spec.eval_every
            bound = min(cell.spec.rounds, -(-t // every) * every)
            if path is not None and checkpoint_every:
                bound = min(bound, -(-t // checkpoint_every) * checkpoint_every)
        end = bound if end is None else min(end, bound)
    return end


def run_cell(
    spec: dict | CellSpec,
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
        spec: the cell's training spec (:func:`fedbench.config.training_spec`), or it resolved.
        dataset_dir: ``resources/datasets/<id>-<digest>`` (fedbench.layout).
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
    specs: list[dict | CellSpec],
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
    summary_extra: list[dict] | None = None,
) -> list[dict]:
    """:func:`run_cell` for several stackable cells trained in lockstep (:func:`train_seeds`):
    per cell, the same outputs, checkpoint and summary as :func:`run_cell` writes for it alone,
    plus, when more than one cell is given, ``stacked_cells`` (the names
    experiment/dataset/partition/algorithm/seed=s of the cells trained together, in the order
    of ``specs``) in its summary, and ``summary_extra[i]`` merged into cell i's summary (the
    workflow records its fingerprint there). Arguments are per cell, in the order of ``specs``;
    returns the summaries in that order.

    Raises:
        ValueError: the lists have different lengths, the specs cannot be stacked
            (:func:`fedbench.engine.rounds.stacking.check_stackable`), or a Δ-histogram path is given for
            a spec without ``delta_histogram``.
    """
    n = len(specs)
    hist_paths = [None] * n if delta_histogram_paths is None else list(delta_histogram_paths)
    extras = [{} for _ in range(n)] if summary_extra is None else [dict(e or {}) for e in summary_extra]
    if not (len(partition_paths) == len(metrics_paths) == len(summary_paths) == len(hist_paths) == len(extras) == n):
        raise ValueError(f"run_cells: {n} specs, {len(partition_paths)} partitions, {len(metrics_paths)} metrics "
                         f"paths, {len(summary_paths)} summary paths, {len(hist_paths)} Δ-histogram paths, "
                         f"{len(extras)} summary extras; give one of each per cell")
    specs = [CellSpec.of(s) for s in specs]
    for spec, hist_path in zip(specs, hist_paths):
        if hist_path is not None and spec.delta_histogram_rounds is None:
            raise ValueError(f"delta_histogram_path {hist_path} given, but the cell's spec does not ask "
                             "for Δ histograms (experiment key delta_histogram)")
    check_stackable([s.record for s in specs])
    if num_threads:
        torch.set_num_threads(int(num_threads))
    metrics_paths, summary_paths = [Path(p) for p in metrics_paths], [Path(p) for p in summary_paths]
    for path in (*metrics_paths, *summary_paths):
        path.parent.mkdir(parents=True, exist_ok=True)
    checkpoint_paths = [p.parent / "checkpoint.pt" for p in metrics_paths]
    with ExitStack() as locks:
        for spec, ckpt in zip(specs, checkpoint_paths):
            locks.enter_context(CellLock(ckpt.with_name(f".{ckpt.name}.lock"), spec.name))
        # This process owns the cells now: what a killed writer left half-written is garbage.
        for path in (*checkpoint_paths, *metrics_paths, *summary_paths,
                     *[Path(h) for h in hist_paths if h is not None],
                     *[m.parent / "delta_histogram.parquet" for m in metrics_paths]):
            for stale in remove_stale_temporaries(path):
                print(f"removed {stale}, left by an interrupted write", file=sys.stderr)
        return _run_locked(specs, dataset_dir, partition_paths, metrics_paths, summary_paths, hist_paths,
                           checkpoint_paths, device, progress, engine, chunk_size, checkpoint_every, extras)


def _run_locked(specs, dataset_dir, partition_paths, metrics_paths, summary_paths, hist_paths, checkpoint_paths,
                device, progress, engine, chunk_size, checkpoint_every, extras) -> list[dict]:
    """:func:`run_cells` once it holds the cells' locks."""
    n = len(specs)
    dataset = load_dataset(dataset_dir)
    # Cells of one seed share a partition file (a learning-rate grid: 18 cells, one table): read
    # each file once, so that its rows are also computed once (train_seeds keys them by table).
    tables, partitions = {}, []
    for path in partition_paths:
        key = Path(path).resolve()
        if key not in tables:
            tables[key] = read_partition(path)
        partitions.append(tables[key])
    results = train_seeds(specs, dataset, partitions, device=device, progress=progress, engine=engine,
                          chunk_size=chunk_size, checkpoint_paths=checkpoint_paths, checkpoint_every=checkpoint_every)
    summaries = []
    stacked = [s.name for s in specs] if n > 1 else None
    for spec, (rows, info), metrics_path, summary_path, hist_path, ckpt, extra in zip(
            specs, results, metrics_paths, summary_paths, hist_paths, checkpoint_paths, extras):
        summary = write_cell(spec.record, rows, info, metrics_path, summary_path, hist_path, stacked_cells=stacked,
                             extra=extra)
        ckpt.unlink(missing_ok=True)
        last = rows[-1]
        reason = f" ({info['status_reason']})" if info.get("status_reason") else ""
        print(f"{spec.name}: status={info['status']}{reason} final test accuracy={last['test_accuracy']:.4f} "
              f"({info['wall_seconds']:.1f}s, peak RSS {summary['peak_rss_mb']:.0f} MB)", file=sys.stderr)
        summaries.append(summary)
    return summaries
