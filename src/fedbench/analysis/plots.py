"""Plots of one experiment (and one across experiments) from the collected metrics.

- :func:`plot_accuracy`: test accuracy (%) vs round;
- :func:`plot_accuracy_vs_uplink`: test accuracy (%) vs cumulative uplink floats (client → server);
- :func:`plot_train_loss`: train loss vs round;
- :func:`plot_comparison`: final test accuracy per algorithm, one panel per experiment, one bar
  group per (dataset, partition).

Curves: one panel per (dataset, partition), one line per algorithm (the mean over seeds at each
round) with a band of ± one sd over seeds. Runs that diverged are left out of the means and bands
and listed under their panel ("diverged: …", wrapped, inside the figure).
A cell with ``eval_initial`` has a row for round 0 (the initial model, 0 floats sent): its
curves start there, at x = 0 (round and uplink floats alike).

Headless: figures are built on :class:`matplotlib.figure.Figure` with the Agg canvas, never
through pyplot, so no display and no global backend change are needed.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fedbench.files import atomic_write

RUN = ["dataset", "partition", "algorithm", "seed"]


def _palette(algorithms: list[str]) -> dict:
    return dict(zip(algorithms, sns.color_palette("tab10" if len(algorithms) <= 10 else "husl", len(algorithms))))


def _diverged_runs(df: pl.DataFrame) -> pl.DataFrame:
    return df.group_by(RUN).agg((pl.col("status") == "diverged").any().alias("diverged"))


def diverged_note(diverged: pl.DataFrame, width: int = 48) -> str | None:
    """"diverged: a (1/3), b (3/3)" for the runs of one panel (``diverged``: RUN + bool column
    ``diverged``), wrapped to lines of ``width`` characters; None when no run diverged."""
    div = diverged.filter(pl.col("diverged")).group_by("algorithm", maintain_order=True).len()
    if not div.height:
        return None
    totals = dict(diverged.group_by("algorithm").len().iter_rows())
    note = "diverged: " + ", ".join(f"{a} ({n}/{totals[a]})" for a, n in div.iter_rows())
    return "\n".join(textwrap.wrap(note, width))


def _save(fig: Figure, path: str | os.PathLike, dpi: int) -> Path:
    path = Path(path)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=dpi)
    return path


def _plot_curves(
    df: pl.DataFrame, path, *, x: str, y: str, ylabel: str, xlabel: str, scale: float = 1.0,
    targets: float | Mapping[str, float | None] | None = None, title: str | None = None,
    what: str, dpi: int = 120, xlog: bool = False,
) -> Path:
    if df.height == 0:
        raise ValueError(f"{what}: no metrics rows")
    diverged = _diverged_runs(df)
    ok_runs = diverged.filter(~pl.col("diverged")).drop("diverged")
    curves = df.join(ok_runs, on=RUN, how="semi").filter(pl.col(y).is_not_null() & pl.col(y).is_finite())
    panels = df.select("dataset", "partition").unique(maintain_order=True).rows()
    algorithms = df.get_column("algorithm").unique(maintain_order=True).to_list()
    palette = _palette(algorithms)

    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(4.4 * ncols + 1.6, 3.6 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)

    for ax, (dataset, partition) in zip(axes, panels):
        sel = (pl.col("dataset") == dataset) & (pl.col("partition") == partition)
        stats = (
            curves.filter(sel)
            .group_by("algorithm", "round")
            .agg(x=pl.col(x).cast(pl.Float64).mean(), m=(pl.col(y) * scale).mean(), s=(pl.col(y) * scale).std(ddof=1))
            .sort("round")
        )
        if stats.height == 0:
            ax.text(0.5, 0.5, "no run finished", ha="center", va="center", transform=ax.transAxes)
        for a in algorithms:
            s = stats.filter(pl.col("algorithm") == a)
            if not s.height:
                continue
            xs, m, sd = s.get_column("x").to_numpy(), s.get_column("m").to_numpy(), s.get_column("s").fill_null(0.0)
            ax.plot(xs, m, color=palette[a], lw=1.6)
            ax.fill_between(xs, m - sd.to_numpy(), m + sd.to_numpy(), color=palette[a], alpha=0.2, lw=0)
        target = targets if not isinstance(targets, Mapping) else targets.get(dataset)
        if target is not None:
            ty = scale * target
            ax.axhline(ty, ls="--", lw=1, color="0.4")
            ax.annotate(f"target {ty:g}%" if scale == 100 else f"target {ty:g}", xy=(0.01, ty),
                        xycoords=("axes fraction", "data"), xytext=(0, 2), textcoords="offset points",
                        ha="left", va="bottom", fontsize=8, color="0.3")
        note = diverged_note(diverged.filter(sel))
        ax.set_xlabel(xlabel)
        if note:
            ax.annotate(note, xy=(0.5, 0), xycoords="axes fraction", xytext=(0, -28), textcoords="offset points",
                        ha="center", va="top", fontsize=8, color="firebrick", annotation_clip=False)
        ax.set_title(f"{dataset} / {partition}")
        ax.set_ylabel(ylabel)
        if xlog:
            ax.set_xscale("log")
        ax.grid(alpha=0.3)

    handles = [Line2D([], [], color=palette[a], lw=2) for a in algorithms]
    fig.legend(handles, algorithms, title="algorithm", loc="outside right center", frameon=False)
    if title:
        fig.suptitle(f"{title}: {ylabel.removesuffix(' (%)')} vs {xlabel.split(' (')[0]} (mean ± sd over seeds)")
    return _save(fig, path, dpi)


def plot_accuracy(
    df: pl.DataFrame,
    path: str | os.PathLike,
    targets: float | Mapping[str, float | None] | None = None,
    title: str | None = None,
    dpi: int = 120,
) -> Path:
    """Draw and save the test accuracy (%) vs round curves of one experiment.

    Args:
        df: collected metrics rows (METRICS_SCHEMA) of one experiment.
        path: output image (PNG).
        targets: target accuracy (fraction), one for all or per dataset id; drawn as a dashed,
            labelled line.
        title: figure title.

    Returns:
        ``path``.

    Raises:
        ValueError: ``df`` is empty.
    """
    return _plot_curves(df, path, x="round", y="test_accuracy", scale=100.0, ylabel="test accuracy (%)",
                        xlabel="round", targets=targets, title=title, what="plot_accuracy", dpi=dpi)


def plot_accuracy_vs_uplink(
    df: pl.DataFrame,
    path: str | os.PathLike,
    targets: float | Mapping[str, float | None] | None = None,
    title: str | None = None,
    dpi: int = 120,
) -> Path:
    """Test accuracy (%) vs cumulative uplink floats (mean over seeds at each round; the
    communication cost of reaching an accuracy). Same arguments as :func:`plot_accuracy`."""
    return _plot_curves(df, path, x="uplink_floats", y="test_accuracy", scale=100.0, ylabel="test accuracy (%)",
                        xlabel="cumulative uplink floats (client → server)", targets=targets, title=title,
                        what="accuracy_vs_uplink_floats", dpi=dpi)


def plot_train_loss(df: pl.DataFrame, path: str | os.PathLike, title: str | None = None, dpi: int = 120) -> Path:
    """Train loss vs round, mean ± sd over seeds. Arguments as :func:`plot_accuracy`."""
    path = _plot_curves(df, path, x="round", y="train_loss", ylabel="train loss", xlabel="round",
                        title=title, what="train_loss", dpi=dpi)
    return path


def plot_comparison(df: pl.DataFrame, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Final test accuracy (%) per algorithm across experiments: one panel per experiment, one
    group of bars per (dataset, partition), one bar per algorithm (mean over the non-diverged
    seeds, error bar ± sd); a group where every seed of an algorithm diverged shows "×".

    Raises:
        ValueError: ``df`` is empty.
    """
    from fedbench.analysis.tables import summarize

    if df.height == 0:
        raise ValueError("plot_comparison: no metrics rows")
    experiments = df.get_column("experiment").unique(maintain_order=True).to_list()
    algorithms = df.get_column("algorithm").unique(maintain_order=True).to_list()
    palette = _palette(algorithms)
    sums = {e: summarize(df.filter(pl.col("experiment") == e)) for e in experiments}
    widths = [max(2.5, 0.35 * s.height + 1.0) for s in sums.values()]
    fig = Figure(figsize=(min(sum(widths) + 2.0, 40), 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(experiments), squeeze=False, sharey=True, width_ratios=widths).ravel()
    for ax, (exp, s) in zip(axes, sums.items()):
        groups = s.select("dataset", "partition").unique(maintain_order=True).rows()
        algs = [a for a in algorithms if a in set(s.get_column("algorithm").to_list())]
        w = 0.8 / max(1, len(algs))
        for i, a in enumerate(algs):
            for g, (d, p) in enumerate(groups):
                r = s.filter((pl.col("dataset") == d) & (pl.col("partition") == p) & (pl.col("algorithm") == a))
                if not r.height:
                    continue
                r = r.row(0, named=True)
                xpos = g - 0.4 + w * (i + 0.5)
                if r["n_diverged"] == r["n_seeds"] or r["final_accuracy_mean"] is None:
                    ax.text(xpos, 2, "×", ha="center", va="bottom", color="firebrick", fontsize=10)
                    continue
                sd = r["final_accuracy_std"]
                ax.bar(xpos, 100 * r["final_accuracy_mean"], width=w, color=palette[a],
                       yerr=None if sd is None else 100 * sd, capsize=2, error_kw={"lw": 0.8})
        ax.set_xticks(range(len(groups)), [f"{d}\n{p}" for d, p in groups], fontsize=8)
        ax.set_title(exp)
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("final test accuracy (%)")
    handles = [Line2D([], [], color=palette[a], lw=6) for a in algorithms]
    fig.legend(handles, algorithms, title="algorithm", loc="outside right center", frameon=False)
    fig.suptitle("final test accuracy per algorithm (mean ± sd over seeds; × = every seed diverged)")
    return _save(fig, path, dpi)
