"""Helpers shared by the papers' figures (:mod:`fedbench.papers`; no paper named here):
saving a figure atomically, a grid of panels, reading the cells' Δ histograms.

Headless (Agg canvas, no pyplot), like :mod:`fedbench.analysis.plots`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedbench.files import atomic_write


def save_figure(fig: Figure, path: str | os.PathLike, dpi: int) -> Path:
    """Write ``fig`` to ``path`` (atomically) and return the path."""
    path = Path(path)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=dpi)
    return path


def figure_grid(n: int, ncols: int, width: float, height: float):
    """A headless figure with ``n`` panels in rows of ``ncols`` (each ``width`` × ``height``
    inches): (figure, 2-d array of axes)."""
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    fig = Figure(figsize=(width * ncols + 1.0, height * nrows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def read_histograms(paths: Sequence[str | os.PathLike]) -> pl.DataFrame:
    """Concatenate cells' ``delta_histogram.parquet`` files, each checked against
    :data:`fedbench.metrics.histogram.DELTA_HISTOGRAM_SCHEMA` (its columns, in schema order).

    Raises:
        ValueError: a file lacks a column of the schema (e.g. ``zeros``, the exact-zero counts) or
            holds one of another type; the message names the file, the column and the fix
            (retrain that cell: remove the file and rerun the same snakemake command).
    """
    from fedbench.metrics.histogram import DELTA_HISTOGRAM_SCHEMA

    want = dict(pl.from_arrow(DELTA_HISTOGRAM_SCHEMA.empty_table()).schema)
    frames = []
    for p in paths:
        f = pl.read_parquet(p)
        for name, dtype in want.items():
            got = f.schema.get(name)
            if got != dtype:
                problem = (f"has no column {name!r}" if got is None
                           else f"has column {name!r} of type {got}, not {dtype}")
                raise ValueError(f"{p} {problem} (fedbench.metrics.histogram.DELTA_HISTOGRAM_SCHEMA), so no figure "
                                 f"can be drawn from it; fix: retrain its cell: remove {p} and rerun the same "
                                 "snakemake command")
        frames.append(f.select(list(want)))
    return pl.concat(frames) if frames else pl.DataFrame(schema=want)
