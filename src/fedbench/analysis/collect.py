"""Gather the cells' ``metrics.parquet`` files into one schema-checked table.

The input is an explicit list of files (the workflow passes the cells of the current config),
never a glob: a glob would pick up stale cells from configs that have since been removed.

A cell file that cannot be read (truncated by a full disk, changed bytes) stops the collection
with one :class:`~fedbench.data.errors.DamagedFileError` naming every such file and what is wrong;
each such cell's outputs are set aside (``metrics.parquet.damaged``, ...:
:func:`fedbench.filecheck.set_cell_aside`), so rerunning the same command retrains just those cells.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from fedbench.data.errors import DamagedFileError
from fedbench.filecheck import set_aside, set_cell_aside
from fedbench.files import atomic_write
from fedbench.metrics.schema import ADDED_COLUMNS, COLLECTED_COLUMNS, METRICS_SCHEMA, STATUSES

# METRICS_SCHEMA (pyarrow) as polars dtypes: pa.string -> pl.String, pa.int64 -> pl.Int64, ...
POLARS_SCHEMA: dict[str, pl.DataType] = dict(pl.from_arrow(METRICS_SCHEMA.empty_table()).schema)
CELL_KEYS = ["experiment", "dataset", "partition", "algorithm", "seed"]


def check_metrics_frame(df: pl.DataFrame, source: str = "metrics") -> None:
    """The polars equivalent of :func:`fedbench.metrics.schema.check_metrics_table`.

    Raises:
        ValueError: a core column is missing or has another type, or a status is unknown;
            the message starts with ``source``.
    """
    for name, dtype in POLARS_SCHEMA.items():
        if name not in df.columns:
            raise ValueError(f"{source}: lacks column {name!r} ({dtype}); schema: fedbench.metrics.schema")
        if df.schema[name] != dtype:
            raise ValueError(f"{source}: column {name!r} has type {df.schema[name]}, expected {dtype}")
    bad = set(df.get_column("status").unique().to_list()) - set(STATUSES)
    if bad:
        raise ValueError(f"{source}: column 'status' holds {sorted(map(str, bad))}; allowed: {STATUSES}")


def with_added_columns(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with every :data:`~fedbench.metrics.schema.ADDED_COLUMNS` column it lacks added as
    nulls of the schema's type (a cell file written before the column existed)."""
    missing = [c for c in ADDED_COLUMNS if c not in df.columns]
    return df.with_columns(pl.lit(None, POLARS_SCHEMA[c]).alias(c) for c in missing) if missing else df


def with_suboptimality(df: pl.DataFrame, optima: Mapping[tuple, float] | None = None) -> pl.DataFrame:
    """``df`` with the column ``suboptimality`` = train_objective − F* for the rows of the cells
    in ``optima`` ((experiment, dataset, partition, algorithm, seed) -> F*), null elsewhere
    (:data:`fedbench.metrics.schema.COLLECTED_COLUMNS`)."""
    fstar = pl.DataFrame(
        [(*k, float(v)) for k, v in (optima or {}).items()],
        schema={**{k: POLARS_SCHEMA[k] for k in CELL_KEYS}, "_fstar": pl.Float64}, orient="row")
    out = df.join(fstar, on=CELL_KEYS, how="left", maintain_order="left")
    return out.with_columns((pl.col("train_objective") - pl.col("_fstar")).alias("suboptimality")).drop("_fstar")


def collect(paths: Sequence[str | os.PathLike], out_path: str | os.PathLike,
            optima: Mapping[tuple, float] | None = None) -> pl.DataFrame:
    """Read, check and concatenate cell metrics files; write them to ``out_path`` (Parquet).

    Columns: METRICS_SCHEMA's columns first, in schema order, then the collected columns
    (``suboptimality``: :func:`with_suboptimality`), then any algorithm extras (in order of first
    appearance; null for cells that lack them). Rows keep the order of ``paths``. A file written
    before a column of ``ADDED_COLUMNS`` existed gets it as nulls.

    Args:
        paths: the cells' ``metrics.parquet`` files.
        out_path: e.g. ``results/metrics.parquet``; written atomically.
        optima: F* per cell (experiment, dataset, partition, algorithm, seed) for the cells that
            have one (rule optimum); None: none has.

    Returns:
        The collected frame.

    Raises:
        fedbench.data.errors.DamagedFileError (a ValueError): files that cannot be read; every one
            is named with what is wrong, and its cell's outputs have been set aside so that rerunning
            the same command retrains just those cells. Nothing is written.
        FileNotFoundError: a file does not exist.
        ValueError: no paths, a file that breaks the schema (named in the message), or two
            files holding the same cell (experiment, dataset, partition, algorithm, seed).
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("collect: no metrics files given")
    frames, damaged = [], []
    for p in paths:
        try:
            df = pl.read_parquet(p)
        except FileNotFoundError:
            raise
        except (pl.exceptions.PolarsError, OSError) as e:
            aside = set_cell_aside(p.parent) if p.name == "metrics.parquet" else [set_aside(p)]
            moved = ", ".join(m.name for m in aside if m is not None)
            damaged.append((p, f"{p}: cannot be read ({type(e).__name__}: {e}); set this cell's outputs aside "
                               f"({moved or 'none left'})"))
            continue
        df = with_added_columns(df)
        check_metrics_frame(df, str(p))
        frames.append(df)
    if damaged:
        raise DamagedFileError(
            "\n".join(line for _, line in damaged) + f"\nfix: rerun the same command: it retrains just "
            f"{'this cell' if len(damaged) == 1 else f'these {len(damaged)} cells'} and collects again",
            [p for p, _ in damaged])
    out = pl.concat(frames, how="diagonal_relaxed")
    out = with_suboptimality(out, optima)
    collected = [name for name, _ in COLLECTED_COLUMNS]
    extras = [c for c in out.columns if c not in POLARS_SCHEMA and c not in collected]
    out = out.select([*POLARS_SCHEMA, *collected, *extras])
    check_metrics_frame(out, "collected metrics")

    owners: dict[tuple, Path] = {}
    for p, df in zip(paths, frames):
        for key in df.select(CELL_KEYS).unique().iter_rows():
            if key in owners and owners[key] != p:
                raise ValueError(f"collect: cell {key} appears in both {owners[key]} and {p}")
            owners[key] = p

    with atomic_write(out_path) as tmp:
        out.write_parquet(tmp)
    return out
