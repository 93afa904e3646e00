"""A trained cell's files: ``metrics.parquet``, ``summary.json`` and ``delta_histogram.parquet``.

:func:`write_cell` turns what :func:`fedbench.engine.rounds.loop.train` returns for a cell (its metrics
rows and info) into its output files, each written atomically (:func:`fedbench.files.atomic_write`),
so a file only ever appears complete. ``metrics.parquet`` follows
:data:`fedbench.metrics.schema.METRICS_SCHEMA` (checked); ``summary.json`` is :func:`cell_summary`;
the Δ histograms (:mod:`fedbench.metrics.histogram`) are written when the spec asks for them.
"""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from fedbench.engine.rounds.cell import identity_of, spec_id
from fedbench.files import atomic_write
from fedbench.metrics.schema import METRICS_SCHEMA, check_metrics_table


def rows_to_table(rows: list[dict]) -> pa.Table:
    """Rows from :func:`fedbench.engine.rounds.loop.train` as a METRICS_SCHEMA table (checked)."""
    table = pa.Table.from_pylist(rows, schema=METRICS_SCHEMA)
    check_metrics_table(table)
    return table


def cell_summary(spec: dict, rows: list[dict], info: dict, stacked_cells: list[str] | None = None,
                 extra: dict | None = None) -> dict:
    """The ``summary.json`` of a cell from its rows and info; ``stacked_cells``: the names
    (experiment/dataset/partition/algorithm/seed=s) of the cells trained together with it, itself
    included (None: trained alone); ``extra``: entries merged in last (the workflow's fingerprint)."""
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
    if info.get("status_reason") is not None:  # why a diverged run is not a result (absent when ok)
        summary["status_reason"] = info["status_reason"]
    if stacked_cells is not None:
        summary["stacked_cells"] = list(stacked_cells)
    summary.update(extra or {})
    return summary


def write_cell(spec: dict, rows: list[dict], info: dict, metrics_path: str | os.PathLike,
               summary_path: str | os.PathLike, delta_histogram_path: str | os.PathLike | None = None,
               stacked_cells: list[str] | None = None, extra: dict | None = None) -> dict:
    """Write a trained cell's files; returns its summary.

    The Δ histograms (when ``info["delta_histogram"]`` holds them) go to ``delta_histogram_path``,
    default ``delta_histogram.parquet`` beside ``metrics_path``; the summary records that path.
    """
    metrics_path = Path(metrics_path)
    table = rows_to_table(rows)
    summary = cell_summary(spec, rows, info, stacked_cells, extra)
    if info["delta_histogram"] is not None:
        hist_file = Path(delta_histogram_path or metrics_path.parent / "delta_histogram.parquet")
        hist_table = info["delta_histogram"].to_table(identity_of(spec))
        with atomic_write(hist_file) as tmp:
            pq.write_table(hist_table, tmp)
        summary["delta_histogram"] = str(hist_file)
    with atomic_write(metrics_path) as tmp:
        pq.write_table(table, tmp)
    with atomic_write(summary_path) as tmp:
        tmp.write_text(json.dumps(summary, indent=2, default=float) + "\n")
    return summary
