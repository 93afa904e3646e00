"""One training cell through a run: what names it, and its side of the round loop.

A cell is one (experiment, dataset, partition, algorithm, seed) with its resolved spec
(:func:`fedbench.config.expand_cells`). :func:`identity_of` gives the names, :func:`spec_id` a
hash of everything else, so two cells with the same identity and ``hparams_id`` compute the same
thing. :class:`Cell` holds the cell's state through the round loop (:mod:`fedbench.engine.rounds.loop`):
its partition (and held-out split), server state, communication counters, metrics rows,
divergence status and checkpoint. Per round it does steps 1, 3 and 4 of the loop: sampling
(:meth:`Cell.sample`), then the server update, communication counts, evaluation, metrics row and
checkpoint (:meth:`Cell.end_round`); step 2, local training, is the client engine's.

Communication columns come from the messages as sent: uplink floats, non-zeros, the entropy
(bits/value, bin width 0.01, pooled over the round's clients and entries), and the same entropy
in the Δ convention (FedDyn's θ_k replaced by Δ_k = θ_k − θ^{t−1},
:func:`fedbench.metrics.communication.as_delta`). The server state's ``metrics`` (Elastic
Aggregation's ``boosted_pct``) become columns of the same name (:func:`algorithm_metrics`).
A spec with ``delta_histogram: {rounds: [...]}`` also keeps Δ histograms
(:mod:`fedbench.metrics.histogram`).

A round whose client losses or new server parameters are NaN/inf ends the cell's training: its
row is written with status ``diverged`` and the cell stops (the other cells of a stacked run go on).

Collapse (:func:`collapse_reason`): training can also blow up without reaching inf, the model
stuck at a huge finite loss and chance accuracy (FedAvg at lr 1e4 on the digits MLP: train loss
1,200–3,500 for every round, test accuracy 0.09–0.11). Such a run is recorded the same way,
status ``diverged`` (never averaged into a table), at the evaluation where the rule fires, with
the reason in ``info["status_reason"]`` (summary.json). The rule's parameters come from the
spec's optional ``collapse`` mapping, defaults :data:`COLLAPSE_DEFAULTS`; a spec without the key
computes exactly what it computed before the rule existed (same rows, same ``spec_id``) unless
it collapses.

A spec with ``uplink_entropy: false`` does not measure the uplink entropy (null columns): at
FedAc's 8,192 workers a round its histogram of 2·8,192·d values costs more than the round's
training.

A spec with ``eval_initial: true`` also has a row for round 0, the initial model θ⁰ evaluated
before any training (:meth:`Cell.evaluate_initial`); it draws nothing, so every later row is that
of the same cell without it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import sys
import time

import numpy as np
import pyarrow as pa
import torch

from fedbench.data.partition import client_indices, train_rows
from fedbench.engine.clients.holdout import holdout_split
from fedbench.engine.clients.sampling import sample_clients
from fedbench.engine.rounds.checkpoint import CHECKPOINT_FORMAT, load_checkpoint, save_checkpoint
from fedbench.engine.rounds.evaluate import evaluate, pgd_accuracy, regularized_objective
from fedbench.engine.spec import CellSpec
from fedbench.metrics.communication import as_delta, count_floats, count_nonzeros, entropy_bits, flatten
from fedbench.metrics.histogram import DeltaHistogram
from fedbench.metrics.schema import ALGORITHM_METRICS
from fedbench.rng import generator
from fedbench.tree import tree_all_finite

IDENTITY_KEYS = ("experiment", "dataset", "partition", "algorithm", "seed")
#: Spec keys that choose how a cell runs, not what it computes: excluded from :func:`spec_id`.
RUNTIME_KEYS = ("engine", "chunk_size")
ALGORITHM_METRIC_NAMES = tuple(name for name, _ in ALGORITHM_METRICS)

#: Defaults of the collapse rule (:func:`collapse_reason`), overridden per key by a spec's
#: ``collapse`` mapping. Measured: the healthy default suite and the quick paper suites (130
#: runs, digits and Synthetic(1, 1), 10 classes) never exceed 1.32 × ln C in train loss and stay
#: at chance accuracy (≤ 1/C + 0.02) for at most 5 consecutive evaluations, all by round 9; a
#: collapsed FedAvg (lr 1e4, digits MLP) sits at 1,200–3,500 (≥ 520 × ln 10) from round 1 and
#: at test accuracy ≤ 0.108 throughout.
COLLAPSE_DEFAULTS = {
    "loss_factor": 100.0,   # train loss above loss_factor × ln(num_classes) (ln C: a uniform guess) ...
    "loss_patience": 3,     # ... for this many consecutive evaluations (or at the final one)
    "chance_margin": 0.02,  # test accuracy at most 1/num_classes + chance_margin ...
    "chance_after": 10,     # ... counting only evaluations after this round ...
    "chance_patience": 10,  # ... for this many consecutive evaluations (0: accuracy rule off)
}


def collapse_rule(spec: dict) -> dict:
    """The collapse rule's parameters for a cell: :data:`COLLAPSE_DEFAULTS` updated by the spec's
    ``collapse`` mapping (absent, null or true: the defaults; ``collapse: false`` turns the rule off).

    Raises:
        ValueError: an unknown key.
    """
    over = spec.get("collapse")
    if over is False:
        return {**COLLAPSE_DEFAULTS, "loss_patience": 0, "chance_patience": 0}
    over = {} if over is None or over is True else dict(over)
    unknown = sorted(set(over) - set(COLLAPSE_DEFAULTS))
    if unknown:
        raise ValueError(f"collapse: unknown keys {unknown}; known: {', '.join(COLLAPSE_DEFAULTS)}")
    return {**COLLAPSE_DEFAULTS, **over}


def collapse_reason(rows: list[dict], num_classes: int | None, rule: dict, final: bool) -> str | None:
    """Why the run whose evaluated rows are ``rows`` (the latest last) has collapsed, or None.

    A run has collapsed when either

    * its train loss has exceeded ``loss_factor`` × ln C (C = ``num_classes``; ln C is the loss of
      a uniform prediction, about that of an untrained model) for the last ``loss_patience``
      evaluations, or at the final evaluation (``final``); or
    * its test accuracy has been at most 1/C + ``chance_margin`` for the last ``chance_patience``
      evaluations, all after round ``chance_after``.

    The streaks are read from the rows, so a resumed run needs no extra state. A round-0 row (the
    initial model, ``eval_initial``) is ignored: the rule fires at the same evaluation, with the
    same reason, with or without it. With C unknown
    (None) or below 2, or a patience of 0, that part of the rule is off. The accuracy part
    compares with 1/C, not with the majority class's share: on a skewed test set a constant
    predictor may score above it, and only the loss part catches that collapse.
    """
    rows = [r for r in rows if r["round"] >= 1]  # the initial model's row (round 0) is no training result
    if not rows or num_classes is None or num_classes < 2:
        return None
    c = int(num_classes)
    bound = float(rule["loss_factor"]) * math.log(c)
    patience = int(rule["loss_patience"])
    if patience > 0:
        streak = 0
        for r in reversed(rows):
            if not r["train_loss"] > bound:
                break
            streak += 1
        if streak >= patience or (final and streak > 0):
            first = rows[-streak]["round"]
            return (f"collapsed: train loss {rows[-1]['train_loss']:.4g} above {rule['loss_factor']:g} × ln {c} "
                    f"= {bound:.4g} at {streak} consecutive evaluations (rounds {first}–{rows[-1]['round']})")
    patience = int(rule["chance_patience"])
    if patience > 0:
        chance = 1.0 / c + float(rule["chance_margin"])
        streak = 0
        for r in reversed(rows):
            if r["round"] <= int(rule["chance_after"]) or not r["test_accuracy"] <= chance:
                break
            streak += 1
        if streak >= patience:
            first = rows[-streak]["round"]
            return (f"collapsed: test accuracy at most {chance:.4g} (chance 1/{c} + {rule['chance_margin']:g}) "
                    f"at {streak} consecutive evaluations (rounds {first}–{rows[-1]['round']})")
    return None


def spec_id(spec: dict) -> str:
    """A short stable hash of everything in a cell spec that is not its identity (12 hex chars)."""
    body = {k: v for k, v in spec.items() if k not in IDENTITY_KEYS and k not in RUNTIME_KEYS}
    return hashlib.sha1(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:12]


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


def partition_rows(partition: pa.Table) -> tuple[list[np.ndarray], np.ndarray]:
    """A partition's train rows as a cell reads them: each client's (:func:`client_indices`, K int64
    arrays) and their union, ascending, each row once (:func:`train_rows`)."""
    return client_indices(partition, "train"), train_rows(partition)


class Cell:
    """One cell's side of the round loop (steps 1, 3 and 4 of :mod:`fedbench.engine.rounds.loop`): its
    partition, server state, communication counters, metrics rows, status and checkpoint.

    Args:
        spec: the cell's resolved spec.
        partition: its partition table (client_id, sample_index, split).
        algo, model: the algorithm module and the model.
        x_train, y_train: the whole training split on the compute device.
        test: the test split (x, y) on the compute device.
        held_fraction: the fraction of each client's rows the algorithm holds out (0: none;
            :func:`fedbench.engine.clients.holdout.holdout_fraction`).
        dtype, dev: the parameters' dtype and device.
        num_classes: C, for the collapse rule (:func:`collapse_reason`; None: rule off).

    The initial model is drawn from the key (seed, 0, -1, "init"); the held-out split B_k once,
    from (seed, 0, k, "holdout") (:func:`fedbench.engine.clients.holdout.holdout_split`): ``clients``
    are the rows D_k \\ B_k that train, ``held`` the rows B_k, and n_k (the aggregation weights)
    counts the training rows.
    """

    def __init__(self, spec: CellSpec, partition: pa.Table, algo, model, x_train: torch.Tensor,
                 y_train: torch.Tensor, test: tuple[torch.Tensor, torch.Tensor], held_fraction: float,
                 dtype: torch.dtype, dev: torch.device, num_classes: int | None = None,
                 rows: tuple[list[np.ndarray], np.ndarray] | None = None):
        self.spec, self.algo, self.model, self.test = spec, algo, model, test
        #: robust minimax cells: the radius r of the PGD attack of ``test_pgd_accuracy`` (None: not measured)
        self.pgd_radius = spec.pgd_radius
        self.seed = spec.seed
        # each client's train rows and their union (ascending, O(n) also for shared partitions); ``rows``:
        # the two already read from this partition (the cells of a learning-rate grid share one table)
        all_clients, used = rows if rows is not None else partition_rows(partition)
        self.m = len(all_clients)
        # D_k \ B_k and B_k (held_fraction 0: all rows train, none held out)
        self.clients, self.held = holdout_split(all_clients, held_fraction, self.seed)
        self.weights = np.array([len(ix) for ix in self.clients], dtype=np.float64)
        if len(used) == len(y_train):  # every row (iid, shared, ...): no copy, one array for stacked cells
            self.x_used, self.y_used = x_train, y_train
        else:
            used = torch.as_tensor(used, device=dev)
            self.x_used, self.y_used = x_train[used], y_train[used]
        params = {k: v.to(dev) for k, v in model.init(generator(self.seed, 0, -1, "init"), dtype=dtype,
                                                    seed=self.seed).items()}
        kw = {"client_weights": self.weights} if "client_weights" in inspect.signature(algo.server_init).parameters \
            else {}  # the minimax algorithms' unbiased reweighting needs every n_k
        self.server = algo.server_init(params, dict(spec.hparams), self.m, **kw)
        self.dev = dev
        self.identity = {
            "experiment": spec.experiment,
            "dataset": spec.dataset,
            "partition": spec.partition,
            "algorithm": spec.algorithm,
            "algorithm_name": spec.algorithm_name,
            "hparams_id": spec_id(spec.record),
            "seed": self.seed,
        }
        self.counters = (0, 0, 0, 0.0, 0.0)  # uplink floats, non-zeros, downlink floats, entropy, entropy (Δ)
        self.hist = None
        if spec.delta_histogram_rounds is not None:
            self.hist = DeltaHistogram(list(spec.delta_histogram_rounds))
        self.rows: list[dict] = []
        self.status = "ok"
        self.status_reason = None
        self.num_classes = num_classes
        self.collapse = collapse_rule(spec.record)
        self.first_round = 1
        self.t_start = time.perf_counter()

    def resume(self, checkpoint_path) -> dict | None:
        """Load this cell's checkpoint if there is one; returns its client states (None: fresh start).
        A checkpoint whose Δ-histogram state lacks the exact-zero counts
        (:meth:`fedbench.metrics.histogram.DeltaHistogram.from_state`) is ignored with a message:
        the cell trains from its first round."""
        ckpt = load_checkpoint(checkpoint_path, self.identity["hparams_id"], self.dev)
        if ckpt is None:
            return None
        if self.hist is not None:
            try:
                hist = DeltaHistogram.from_state(ckpt["delta_histogram"])
            except ValueError as e:  # a snapshot without the exact-zero counts: they cannot be recounted
                print(f"ignoring checkpoint {checkpoint_path}: {e}; the cell trains from its first round",
                      file=sys.stderr)
                return None
            self.hist = hist
        self.server = ckpt["server"]
        self.rows = ckpt["rows"]
        self.counters = tuple(ckpt["counters"])
        self.first_round = ckpt["round"] + 1
        self.t_start = time.perf_counter() - ckpt["elapsed"]
        print(f"resuming from {checkpoint_path} after round {ckpt['round']}", file=sys.stderr)
        return ckpt["client_states"]

    def evaluates_at(self, t: int, diverged: bool = False) -> bool:
        """Whether round t's row is written (and the model evaluated): every ``eval_every`` rounds,
        the last round, and a round in which the cell diverged."""
        return bool(diverged) or t % self.spec.eval_every == 0 or t == self.spec.rounds

    def evaluation(self, params: dict, given: tuple | None = None) -> tuple:
        """(train loss, train accuracy, test loss, test accuracy, test worst-class accuracy) of
        ``params``: on the training rows the cell's clients hold and on the test split
        (:func:`fedbench.engine.rounds.evaluate.evaluate`), or ``given`` when the loop evaluated several
        cells at once (:func:`fedbench.engine.rounds.loop.evaluate_cells`)."""
        if given is not None:
            return given
        train_loss, train_acc = evaluate(self.model.apply, params, self.x_used, self.y_used, loss=self.model.loss)
        return (train_loss, train_acc, *evaluate(self.model.apply, params, *self.test, loss=self.model.loss,
                                                 worst_class=True))

    def evaluate_initial(self, evaluation: tuple | None = None) -> None:
        """Write the row of round 0: the initial model θ⁰ (after ``server_init``) evaluated exactly
        as any evaluation of :meth:`end_round` (train loss and accuracy on all clients' training
        rows, test loss and accuracy), communication counters and ``clients_sampled`` 0, status
        ``ok``, the algorithm metrics as ``server_init`` leaves them (null where it keeps none).

        For a spec with ``eval_initial: true`` (the FedAc authors' evaluation at t = 0: Yuan & Ma,
        "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §5, best suboptimality
        over the evaluations including the initial point). Draws nothing: every later row equals
        that of the same cell without it. Called by the loop before round 1 of a fresh start only
        (a resumed cell's checkpoint already holds the row).

        ``evaluation``: θ⁰'s numbers when the loop computed them (:meth:`evaluation`).

        Raises:
            RuntimeError: the cell already has rows (a resumed or trained cell).
        """
        if self.rows:
            raise RuntimeError(f"evaluate_initial: the cell already has rows up to round {self.rows[-1]['round']}")
        params = self.server["params"]
        train_loss, train_acc, test_loss, test_acc, test_worst = self.evaluation(params, evaluation)
        h0 = 0.0 if self.spec.uplink_entropy else None
        self.rows.append({**self.identity, "round": 0, "clients_sampled": 0,
                          "train_loss": train_loss, "train_accuracy": train_acc,
                          "train_objective": self.objective(train_loss, params),
                          "test_loss": test_loss, "test_accuracy": test_acc, "test_worst_class_accuracy": test_worst,
                          "test_pgd_accuracy": self.pgd_accuracy(params),
                          "uplink_floats": 0, "uplink_nonzeros": 0,
                          "uplink_entropy_bits": h0, "uplink_entropy_bits_delta": h0,
                          "downlink_floats": 0,
                          "wall_seconds": time.perf_counter() - self.t_start, "status": "ok",
                          **algorithm_metrics(self.server)})

    def pgd_accuracy(self, params: dict) -> float | None:
        """The ``test_pgd_accuracy`` column: for a robust minimax cell (``model.minimax.problem:
        robust``) the test accuracy of the classifier h_x under a per-sample L2 PGD attack in the
        ball of the cell's ``radius`` (:func:`fedbench.engine.rounds.evaluate.pgd_accuracy`), the learned
        perturbation y replaced by the attack's; None for every other cell (nothing computed)."""
        if self.pgd_radius is None:
            return None
        x_only = {k: (torch.zeros_like(v) if k.startswith("y.") else v) for k, v in params.items()}
        return pgd_accuracy(self.model.apply, x_only, *self.test, self.pgd_radius)

    def objective(self, train_loss: float, params: dict) -> float:
        """The ``train_objective`` column: ``train_loss`` + (λ/2)‖θ‖², λ = the spec's
        ``local.weight_decay`` (:func:`fedbench.engine.rounds.evaluate.regularized_objective`)."""
        return regularized_objective(train_loss, params, self.spec.local.weight_decay)

    def sample(self, t: int) -> np.ndarray:
        """Step 1: the clients P_t of round t (ascending ids), keyed by (seed, t)."""
        return sample_clients(self.spec.scheme, self.m, self.spec.participation, self.seed, t)

    def end_round(self, t: int, sampled: np.ndarray, result, hp: dict, client_states, checkpoint_path,
                  checkpoint_every: int) -> None:
        """Server update, communication, evaluation and checkpoint of round t (steps 3 and 4).

        Args:
            t, sampled, hp: the round, its sampled clients and its hyperparameters.
            result: the engine's :class:`fedbench.engine.clients.interface.RoundResult` for this cell.
            client_states: a function returning the cell's persistent client states (called only
                when a checkpoint is written).
            checkpoint_path, checkpoint_every: write a checkpoint after every k-th round (not
                after the last one, nor after a diverged one).
        """
        algo, spec = self.algo, self.spec
        messages, losses = result.messages, result.losses
        down = count_floats(algo.broadcast(self.server))
        theta_prev = self.server["params"]
        self.server = algo.server_update(self.server, messages, torch.as_tensor(self.weights[sampled]), hp)

        up_floats, up_nnz, down_floats, up_entropy, up_entropy_delta = self.counters
        diverged = not (np.all(np.isfinite(losses)) and tree_all_finite(self.server["params"]))
        up_floats += sum(count_floats(msg) for msg in result.counted)
        up_nnz += sum(count_nonzeros(msg) for msg in result.counted)
        down_floats += down * len(sampled)
        measured = spec.uplink_entropy  # false: not measured, null columns
        if not diverged:
            # The Δ convention: differs only for messages holding a model θ_k (FedDyn).
            # (the keys every message has; the vectorized engine's StackedMessages know them without
            # building a dict per client)
            entries = getattr(messages, "entries", None)
            with_params = "params" in (entries if entries is not None else {e for msg in messages for e in msg})
            delta_msgs = None
            if (measured and with_params) or self.hist is not None:
                delta_msgs = [as_delta(msg, theta_prev) for msg in messages]
            if measured:
                h_t = entropy_bits(flatten(result.counted))
                up_entropy += h_t
                if with_params:
                    h_t = entropy_bits(flatten(delta_msgs))
                up_entropy_delta += h_t
            if self.hist is not None:
                self.hist.add_round(t, delta_msgs, flatten)
        else:
            up_entropy = up_entropy_delta = float("nan")
        if not measured:
            up_entropy = up_entropy_delta = None
        self.counters = (up_floats, up_nnz, down_floats, up_entropy, up_entropy_delta)
        self._close_round(t, len(sampled), diverged, client_states, checkpoint_path, checkpoint_every)

    def end_rounds(self, t: int, clients: int, rounds: int, result: dict, client_states, checkpoint_path,
                   checkpoint_every: int, evaluation: tuple | None = None) -> None:
        """:meth:`end_round` for the last of ``rounds`` rounds (``t − rounds + 1`` to t) that the
        engine ran at once with every one of the cell's ``clients`` clients and their server
        updates (:meth:`fedbench.engine.clients.vectorized.VectorizedClients.train_rounds`): the server
        state and the communication counts of those rounds come from ``result``; the rounds
        before t had no evaluation, checkpoint or divergence (the engine stops at a diverged round).
        ``evaluation``: round t's model evaluated by the loop with other cells' (:meth:`evaluation`).

        Raises:
            ValueError: the cell measures the uplink entropy or keeps Δ histograms (they need
                every round's messages).
        """
        if self.spec.uplink_entropy or self.hist is not None:
            raise ValueError("end_rounds: the uplink entropy and Δ histograms need every round's messages")
        down = count_floats(self.algo.broadcast(self.server))
        self.server = result["server"]
        up_floats, up_nnz, down_floats, _, _ = self.counters
        self.counters = (up_floats + result["uplink_floats"], up_nnz + result["uplink_nonzeros"],
                         down_floats + down * clients * rounds, None, None)
        self._close_round(t, clients, result["diverged"], client_states, checkpoint_path, checkpoint_every,
                          evaluation)

    def _close_round(self, t: int, clients: int, diverged: bool, client_states, checkpoint_path,
                     checkpoint_every: int, evaluation: tuple | None = None) -> None:
        """Evaluation, metrics row, collapse and checkpoint after round t's server update (``clients``
        the number that trained; ``diverged``: a client's loss or the new parameters not finite)."""
        spec = self.spec
        rounds = spec.rounds
        algo_metrics = algorithm_metrics(self.server)
        up_floats, up_nnz, down_floats, up_entropy, up_entropy_delta = self.counters
        if self.evaluates_at(t, diverged):
            params = self.server["params"]
            train_loss, train_acc, test_loss, test_acc, test_worst = self.evaluation(params, evaluation)
            diverged = diverged or not np.isfinite(train_loss)
            test_pgd = None if diverged else self.pgd_accuracy(params)
            if diverged:
                self.status, test_acc, train_acc, test_worst = "diverged", float("nan"), float("nan"), float("nan")
                test_pgd = None if self.pgd_radius is None else float("nan")
                self.status_reason = f"non-finite loss or parameters at round {t}"
            self.rows.append({**self.identity, "round": t, "clients_sampled": int(clients),
                              "train_loss": train_loss, "train_accuracy": train_acc,
                              "train_objective": self.objective(train_loss, params),
                              "test_loss": test_loss, "test_accuracy": test_acc,
                              "test_worst_class_accuracy": test_worst, "test_pgd_accuracy": test_pgd,
                              "uplink_floats": up_floats, "uplink_nonzeros": up_nnz,
                              "uplink_entropy_bits": up_entropy, "uplink_entropy_bits_delta": up_entropy_delta,
                              "downlink_floats": down_floats,
                              "wall_seconds": time.perf_counter() - self.t_start, "status": self.status,
                              **algo_metrics})
            if not diverged:
                reason = collapse_reason(self.rows, self.num_classes, self.collapse, final=t == rounds)
                if reason is not None:
                    diverged = True
                    self.status = self.rows[-1]["status"] = "diverged"
                    self.status_reason = reason
                    print(f"{spec.algorithm} seed={self.seed}: {reason}; stopping this cell", file=sys.stderr)
        if diverged:
            return
        if checkpoint_path is not None and checkpoint_every and t % checkpoint_every == 0 and t < rounds:
            self.checkpoint(checkpoint_path, t, client_states())

    def checkpoint(self, path, t: int, client_states: dict[int, dict]) -> None:
        """Write the cell's state after round t to ``path`` (:mod:`fedbench.engine.rounds.checkpoint`)."""
        save_checkpoint(path, {
            "format": CHECKPOINT_FORMAT, "hparams_id": self.identity["hparams_id"], "round": t,
            "server": self.server, "client_states": client_states, "rows": self.rows,
            "counters": self.counters, "delta_histogram": None if self.hist is None else self.hist.state(),
            "elapsed": time.perf_counter() - self.t_start})

    def info(self) -> dict:
        """What :func:`fedbench.engine.rounds.loop.train` returns about the cell (besides its rows)."""
        return {"status": self.status, "status_reason": self.status_reason,
                "rounds_completed": self.rows[-1]["round"] if self.rows else 0,
                "params": self.server["params"], "server_state": self.server,
                "wall_seconds": time.perf_counter() - self.t_start, "delta_histogram": self.hist,
                "holdout_sizes": [len(h) for h in self.held]}
