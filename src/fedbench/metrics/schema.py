"""The results schema: ``metrics.parquet`` of one training cell, and ``results/metrics.parquet``.

One row per evaluated round. The cell's identity is in the file itself, so collected tables
need no path parsing.

Identity columns
    experiment, dataset, partition, algorithm (the config label, e.g. ``fedprox_mu0.01``),
    algorithm_name (the module, e.g. ``fedprox``), hparams_id (hash of the resolved cell spec),
    seed.
Per-round columns
    round            1-based round index t after which the row was evaluated; 0 for the row of
                     the initial model θ⁰, written before round 1 when the cell's spec has
                     ``eval_initial: true`` (:meth:`fedbench.engine.rounds.cell.Cell.evaluate_initial`).
    clients_sampled  |P_t|, clients that trained in round t (0 in round 0).
    train_loss       loss of the server model θ^t on all clients' training data (mean per sample;
                     every training row of the partition, held-out rows of Elastic Aggregation
                     included, so the column compares across algorithms).
    train_accuracy   accuracy of θ^t on the same rows, in [0, 1] (NaN on a diverged row).
    train_objective  train_loss + (λ/2)‖θ^t‖², λ = the cell's ``local.weight_decay``: the
                     ℓ2-regularized objective the local steps descend (equal to train_loss when
                     λ = 0). For ``binary_logreg`` it is FedAc's F(w) (Yuan & Ma, NeurIPS 2020,
                     §5), whose optimum F* gives ``suboptimality`` below.
    test_loss        loss of θ^t on the test set (mean per sample).
    test_accuracy    accuracy of θ^t on the test set, in [0, 1].
    test_worst_class_accuracy  min over the classes c present in the test set of the accuracy on
                     class c's test rows, in [0, 1]: fair classification's "test accuracy on the worst
                     distribution" (Sharma, Panda & Joshi, TMLR 2023, §6); NaN on a diverged row.
    test_pgd_accuracy  robust minimax cells only (``model.minimax.problem: robust``; null for every
                     other cell): accuracy in [0, 1] of the classifier h_x on the test set under a
                     per-sample L2 PGD attack in the ball ‖δ‖₂ ≤ r of the cell's ``radius``, the
                     learned perturbation y set aside (10 steps of size 2.5 r / 10 from δ = 0, a row
                     counts as robust when no iterate misclassifies it:
                     :func:`fedbench.engine.rounds.evaluate.pgd_accuracy`). Ours: the paper reports the
                     accuracy under the learned y only (``test_accuracy`` of those cells). NaN on a
                     diverged row.
    uplink_floats    cumulative count of scalars sent client → server, rounds 1..t (dense count:
                     every element of every tensor in each ClientMessage).
    uplink_nonzeros  cumulative count of non-zero scalars sent client → server, rounds 1..t.
    uplink_entropy_bits  cumulative Σ_{s ≤ t} H_s, where H_s is the Shannon entropy (bits per value)
                     of all values sent uplink in round s, pooled over the sampled clients,
                     quantised at bin width 0.01 (values v in bin ⌊v / 0.01⌋).
    uplink_entropy_bits_delta  the same, of the messages in the Δ convention: an entry ``params``
                     (a client's model θ_k: FedDyn) replaced by Δ_k = θ_k − θ^{t−1}, every other
                     entry as sent. Equal to uplink_entropy_bits (the same float) for algorithms
                     that send no model (all but FedDyn): FedElasticNet's "θ (Δ)" (Tables 3-4).
    downlink_floats  cumulative count of scalars sent server → clients (broadcast × |P_t|).
    wall_seconds     wall-clock seconds since the cell started training.
    status           ``ok``, or ``diverged`` on the row of the round where the loss or the
                     parameters became NaN/inf, or where the run collapsed with a finite loss
                     (:func:`fedbench.engine.rounds.cell.collapse_reason`: loss above 100 · ln C, or
                     chance accuracy; loss and accuracy kept as measured). Training stops there
                     (no later rows); summary.json's ``status_reason`` says why.
Algorithm metrics (:data:`ALGORITHM_METRICS`; the server state's ``metrics`` after round t, null
for algorithms that do not have it)
    boosted_pct      Elastic Aggregation: percentage of parameters boosted in round t,
                     100 · #{i : ζ^i > 1} / n (0 for naive aggregation, ζ ≡ 1).
    y_norm           minimax (:mod:`fedbench.algorithms.sgda`): ‖y^t‖₂, the ascent player after
                     round t (both players' per-round metrics: this and the two below).
    x_step_norm      minimax: ‖x^t − x^{t−1}‖₂, the model's server step.
    y_step_norm      minimax: ‖y^t − y^{t−1}‖₂, the ascent player's server step (after projection).
    tau_eff          Fed-Norm-SGDA(+): the round's τ_eff (the server's step scale).

Cumulative columns (uplink_*, downlink_floats) count every round 1..t, not only evaluated ones.

The round-0 row (``eval_initial``) is an evaluation like any other: train_loss is θ⁰'s loss on the
training rows, the same quantity as in every row (the column is never the clients' mean local
loss, so no convention is needed for a round without clients); the communication columns are 0
(nothing sent yet), status ``ok``, the algorithm metrics as ``server_init`` leaves them (null where
it keeps none). Analyses count it as an evaluation: best over time includes it (FedAc, Yuan & Ma,
NeurIPS 2020, §5: the evaluations start at t = 0), so does a sweep's ``mean_last``, and rounds to
target are 0 when θ⁰ already meets the target; the collapse rule ignores it.
Collected columns (:data:`COLLECTED_COLUMNS`: only in ``results/metrics.parquet``, added by
:func:`fedbench.analysis.collect.collect`, never in a cell's own file)
    suboptimality    train_objective − F*, F* the minimum of the same objective over the
                     dataset's training split and the cell's λ (:mod:`fedbench.metrics.optimum`,
                     rule ``optimum``: ``results/optimum/<id>-<digest>/l2=<λ>.json``), for cells
                     whose model is ``binary_logreg`` (null for every other cell). FedAc's
                     metric: the paper's "suboptimality" F(w̄) − F* (Yuan & Ma, NeurIPS 2020,
                     §5), recorded at each evaluation.

Columns in :data:`ADDED_COLUMNS` came after the first release: a cell file written before them
lacks them and :func:`fedbench.analysis.collect.collect` fills them with nulls (unknown, not 0).
"""

from __future__ import annotations

import pyarrow as pa

IDENTITY = [
    ("experiment", pa.string()),
    ("dataset", pa.string()),
    ("partition", pa.string()),
    ("algorithm", pa.string()),
    ("algorithm_name", pa.string()),
    ("hparams_id", pa.string()),
    ("seed", pa.int64()),
]
PER_ROUND = [
    ("round", pa.int64()),
    ("clients_sampled", pa.int64()),
    ("train_loss", pa.float64()),
    ("train_accuracy", pa.float64()),
    ("train_objective", pa.float64()),
    ("test_loss", pa.float64()),
    ("test_accuracy", pa.float64()),
    ("test_worst_class_accuracy", pa.float64()),
    ("test_pgd_accuracy", pa.float64()),
    ("uplink_floats", pa.int64()),
    ("uplink_nonzeros", pa.int64()),
    ("uplink_entropy_bits", pa.float64()),
    ("uplink_entropy_bits_delta", pa.float64()),
    ("downlink_floats", pa.int64()),
    ("wall_seconds", pa.float64()),
    ("status", pa.string()),
]
#: Per-round diagnostics an algorithm keeps in its server state's ``metrics`` (nullable float64).
ALGORITHM_METRICS = [
    ("boosted_pct", pa.float64()),
    ("y_norm", pa.float64()),
    ("x_step_norm", pa.float64()),
    ("y_step_norm", pa.float64()),
    ("tau_eff", pa.float64()),
]
METRICS_SCHEMA = pa.schema(IDENTITY + PER_ROUND + ALGORITHM_METRICS)
#: Columns added after the first release (nullable): older cell files may lack them.
ADDED_COLUMNS = ("train_accuracy", "train_objective", "test_worst_class_accuracy", "test_pgd_accuracy",
                 "uplink_entropy_bits_delta",
                 "boosted_pct", "y_norm", "x_step_norm", "y_step_norm", "tau_eff")
STATUSES = ("ok", "diverged")
#: Columns that rule collect adds to ``results/metrics.parquet`` (after METRICS_SCHEMA's).
COLLECTED_COLUMNS = [("suboptimality", pa.float64())]


def check_metrics_table(table: pa.Table) -> None:
    """Raise ValueError naming the first column whose name or type differs from METRICS_SCHEMA,
    or an unknown status value."""
    got = {f.name: f.type for f in table.schema}
    for f in METRICS_SCHEMA:
        if f.name not in got:
            raise ValueError(f"metrics table lacks column {f.name!r} ({f.type}); schema: fedbench.metrics.schema")
        if got[f.name] != f.type:
            raise ValueError(f"metrics column {f.name!r} has type {got[f.name]}, expected {f.type}")
    bad = set(table.column("status").to_pylist()) - set(STATUSES)
    if bad:
        raise ValueError(f"metrics column 'status' holds {sorted(bad)}; allowed: {STATUSES}")
