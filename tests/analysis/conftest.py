"""Fixtures of the analysis tests: hand-made metrics rows (METRICS_SCHEMA) with known statistics."""

from __future__ import annotations

import math
from types import SimpleNamespace

import polars as pl
import pyarrow as pa
import pytest

from fedbench.metrics.schema import METRICS_SCHEMA


def run_rows(accs, *, experiment="e", dataset="d", partition="p", algorithm="a", seed=0,
             uplink_per_round=10, diverge_at=None, initial=None):
    """Rows of one run with test accuracies ``accs`` at rounds 1..len(accs).

    With ``diverge_at=t`` the run stops at round t with status diverged and NaN accuracy. With
    ``initial=acc`` the run starts with the row of round 0 (``eval_initial``: the initial model,
    test accuracy ``acc``, train and test loss 2.0, nothing sent, status ok).
    """
    rows = []
    if initial is not None:
        rows.append({
            "experiment": experiment, "dataset": dataset, "partition": partition, "algorithm": algorithm,
            "algorithm_name": algorithm, "hparams_id": "0" * 12, "seed": seed, "round": 0,
            "clients_sampled": 0, "train_loss": 2.0, "test_loss": 2.0, "test_accuracy": float(initial),
            "uplink_floats": 0, "uplink_nonzeros": 0, "uplink_entropy_bits": 0.0, "downlink_floats": 0,
            "wall_seconds": 0.0, "status": "ok",
        })
    for t, acc in enumerate(accs, start=1):
        diverged = diverge_at is not None and t == diverge_at
        rows.append({
            "experiment": experiment, "dataset": dataset, "partition": partition, "algorithm": algorithm,
            "algorithm_name": algorithm, "hparams_id": "0" * 12, "seed": seed, "round": t,
            "clients_sampled": 2, "train_loss": 1.0 / t, "test_loss": 1.0 / t,
            "test_accuracy": math.nan if diverged else float(acc),
            "uplink_floats": uplink_per_round * t, "uplink_nonzeros": uplink_per_round * t,
            "uplink_entropy_bits": float(t), "downlink_floats": uplink_per_round * t,
            "wall_seconds": 0.1 * t, "status": "diverged" if diverged else "ok",
        })
        if diverged:
            break
    return rows


def table(rows) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=METRICS_SCHEMA)


def frame(rows) -> pl.DataFrame:
    return pl.from_arrow(table(rows))


@pytest.fixture
def mr():
    """The helpers: ``mr.run_rows(accs, ...)``, ``mr.table(rows)``, ``mr.frame(rows)``."""
    return SimpleNamespace(run_rows=run_rows, table=table, frame=frame)
