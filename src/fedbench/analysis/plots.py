"""Test accuracy vs round for one experiment: one panel per (dataset, partition), one line per
algorithm (the mean over seeds) with a band of ± one sd over seeds.

Headless: figures are built on :class:`matplotlib.figure.Figure` with the Agg canvas, never
through pyplot, so no display and no global backend change are needed. Runs that diverged are
left out of the mean and the band and listed in the panel.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedbench.files import atomic_write


def plot_accuracy(
    df: pl.DataFrame,
    path: str | os.PathLike,
    targets: float | Mapping[str, float | None] | None = None,
    title: str | None = None,
    dpi: int = 120,
) -> Path:
    """Draw and save the accuracy curves of one experiment.

    Args:
        df: collected metrics rows (METRICS_SCHEMA) of one experiment.
        path: output image (PNG).
        targets: target accuracy, one for all or per dataset id; drawn as a dashed line.
        title: figure title.

    Returns:
        ``path``.

    Raises:
        ValueError: ``df`` is empty.
    """
    if df.height == 0:
        raise ValueError("plot_accuracy: no metrics rows")
    diverged = (
        df.group_by(["dataset", "partition", "algorithm", "seed"])
        .agg((pl.col("status") == "diverged").any().alias("diverged"))
    )
    ok_runs = diverged.filter(~pl.col("diverged")).drop("diverged")
    curves = df.join(ok_runs, on=["dataset", "partition", "algorithm", "seed"], how="semi")
    panels = df.select("dataset", "partition").unique(maintain_order=True).rows()
    algorithms = df.get_column("algorithm").unique(maintain_order=True).to_list()
    palette = dict(zip(algorithms, sns.color_palette("tab10" if len(algorithms) <= 10 else "husl", len(algorithms))))

    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(4.4 * ncols + 1.6, 3.4 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)

    for ax, (dataset, partition) in zip(axes, panels):
        sel = (pl.col("dataset") == dataset) & (pl.col("partition") == partition)
        data = curves.filter(sel).select("algorithm", "seed", "round", "test_accuracy").to_pandas()
        if len(data):
            sns.lineplot(
                data=data, x="round", y="test_accuracy", hue="algorithm", hue_order=algorithms,
                palette=palette, errorbar="sd", estimator="mean", ax=ax, legend=False,
            )
        else:
            ax.text(0.5, 0.5, "no run finished", ha="center", va="center", transform=ax.transAxes)
        target = targets if not isinstance(targets, Mapping) else targets.get(dataset)
        if target is not None:
            ax.axhline(target, ls="--", lw=1, color="0.5")
        div = diverged.filter(sel & pl.col("diverged")).group_by("algorithm", maintain_order=True).len()
        if div.height:
            total = diverged.filter(sel).group_by("algorithm").len()
            totals = dict(total.iter_rows())
            note = "diverged: " + ", ".join(f"{a} ({n}/{totals[a]})" for a, n in div.iter_rows())
            ax.text(0.98, 0.02, note, ha="right", va="bottom", fontsize=8, color="firebrick", transform=ax.transAxes)
        ax.set_title(f"{dataset} / {partition}")
        ax.set_xlabel("round")
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)

    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=palette[a], lw=2) for a in algorithms]
    fig.legend(handles, algorithms, title="algorithm", loc="outside right center", frameon=False)
    if title:
        fig.suptitle(f"{title}: test accuracy (mean ± sd over seeds)")
    path = Path(path)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=dpi)
    return path
