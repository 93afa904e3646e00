"""Heat map of a partition's per-client class counts (clients x classes).

Uses matplotlib's object API (``Figure`` + the Agg canvas), never ``pyplot``, so it works with
any or no ``MPLBACKEND`` and leaks no global figure state.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedbench.files import atomic_write

MAX_HEIGHT_IN = 30.0  # a 1,000-client partition still fits one readable image
ANNOTATE_MAX_CELLS = 400  # write the count in each cell only when there are few cells


def _to_columns(counts_table) -> dict[str, np.ndarray]:
    if hasattr(counts_table, "column_names"):  # pyarrow.Table
        return {c: counts_table.column(c).to_numpy() for c in counts_table.column_names}
    if hasattr(counts_table, "columns"):  # pandas / polars DataFrame
        return {str(c): np.asarray(counts_table[c]) for c in counts_table.columns}
    raise TypeError(f"counts_table must be a pyarrow Table or a DataFrame, got {type(counts_table).__name__}")


def plot_class_counts(counts_table, path: str | os.PathLike, title: str | None = None) -> Path:
    """Draw a clients x classes heat map of train sample counts and save it.

    Args:
        counts_table: the output of :func:`fedbench.data.partition.class_counts` (pyarrow Table,
            or a pandas/polars DataFrame with the same columns): client_id, class_0..class_{C-1},
            optionally num_samples.
        path: output image; the format follows the suffix (``.png``, ``.pdf``, ``.svg``).
            Parent directories are created.
        title: figure title; default "Class counts per client (K clients, C classes, n samples)".

    Returns:
        ``path`` as a Path.

    Raises:
        ValueError: the table has no ``class_*`` column or no client row.
        TypeError: ``counts_table`` is neither a pyarrow Table nor a DataFrame.

    The figure height grows with the number of clients (about 0.18 in per client, capped at
    30 in); at most about 60 client ids are labelled, evenly spaced. Cells carry their count when the
    grid has at most 400 cells.
    """
    cols = _to_columns(counts_table)
    class_cols = sorted((c for c in cols if c.startswith("class_")), key=lambda c: int(c.split("_", 1)[1]))
    if not class_cols:
        raise ValueError("counts_table has no class_* columns; pass the output of fedbench.data.partition.class_counts")
    counts = np.stack([np.asarray(cols[c], dtype=np.int64) for c in class_cols], axis=1)
    num_clients, num_classes = counts.shape
    if num_clients == 0:
        raise ValueError("counts_table has no client rows: the partition is empty")
    client_ids = np.asarray(cols.get("client_id", np.arange(num_clients)))

    width = min(max(6.0, 4.0 + 0.45 * num_classes), 24.0)
    height = min(max(3.0, 1.5 + 0.18 * num_clients), MAX_HEIGHT_IN)
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    annotate = num_clients * num_classes <= ANNOTATE_MAX_CELLS
    sns.heatmap(
        counts,
        ax=ax,
        cmap="viridis",
        annot=annotate,
        fmt="d",
        annot_kws={"fontsize": 7},
        xticklabels=[c.split("_", 1)[1] for c in class_cols],
        yticklabels=False,
        cbar_kws={"label": "train samples"},
    )
    # at most ~60 client labels, evenly spaced (seaborn's "auto" thinning is slow for large grids)
    rows = np.arange(0, num_clients, max(1, int(np.ceil(num_clients / 60))))
    ax.set_yticks(rows + 0.5, [str(int(client_ids[r])) for r in rows], rotation=0,
                  fontsize=7 if num_clients > 30 else 9)
    ax.set_xlabel("class")
    ax.set_ylabel("client")
    total = int(counts.sum())
    ax.set_title(title or f"Class counts per client ({num_clients} clients, {num_classes} classes, {total} samples)")
    path = Path(path)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=120)
    return path
