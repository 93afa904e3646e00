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
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from fedbench.analysis.style import (
    algorithm_colors,
    apply_metric_axis,
    base_label,
    metric_axis,
    seeds_phrase,
    wrap_title,
)
from fedbench.files import atomic_write

RUN = ["dataset", "partition", "algorithm", "seed"]


def _palette(algorithms: list[str]) -> dict:
    """The colours of ``algorithms`` (:func:`fedbench.analysis.style.algorithm_colors`: one colour
    per algorithm name in every figure)."""
    return algorithm_colors(algorithms)


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


def _family_text(label: str, members: list[str]) -> str:
    """The legend entry of a sweep's grid points: "theta_all: lr=0.001 (dark) … lr=0.09 (light), 5 points"."""
    def point(name):
        text = name.split(",", 1)[1] if "," in name else name
        return text if len(text) <= 28 else text[:27] + "…"

    return f"{label}: {point(members[0])} (dark) … {point(members[-1])} (light), {len(members)} points"


def _message_figure(path, text: str, title: str | None, dpi: int) -> Path:
    """A small figure that only says ``text`` (e.g. the experiment records no accuracy)."""
    fig = Figure(figsize=(6.0, 2.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.set_axis_off()
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(text, 70)), ha="center", va="center", transform=ax.transAxes)
    if title:
        fig.suptitle(wrap_title(title, 6.0), fontsize=11)
    return _save(fig, path, dpi)


def _plot_curves(
    df: pl.DataFrame, path, *, x: str, y: str, xlabel: str,
    targets: float | Mapping[str, float | None] | None = None, title: str | None = None,
    what: str, dpi: int = 120, xlog: bool = False,
) -> Path:
    """One panel per (dataset, partition), one line per algorithm with a drawn curve; the y axis
    from the metric ``y`` (:func:`fedbench.analysis.style.metric_axis`)."""
    if df.height == 0:
        raise ValueError(f"{what}: no metrics rows")
    yaxis = metric_axis(y)
    scale = yaxis.scale
    ylabel = yaxis.label
    diverged = _diverged_runs(df)
    ok_runs = diverged.filter(~pl.col("diverged")).drop("diverged")
    measured = df.filter(pl.col(y).is_not_null() & pl.col(y).is_not_nan()) if df.schema[y].is_float() else \
        df.filter(pl.col(y).is_not_null())
    head = f"{title}: " if title else ""
    if measured.height == 0:  # e.g. the quadratic model: no accuracy at all
        words = ylabel.removesuffix(" (%)")
        return _message_figure(path, f"No {words} metric: no run of this experiment records {y} (a model "
                                     "without one, such as the quadratic, or no test set). See the train-loss "
                                     "plot and the tables.",
                               f"{head}{words} vs {xlabel.split(' (')[0]}", dpi)
    curves = df.join(ok_runs, on=RUN, how="semi").filter(pl.col(y).is_not_null() & pl.col(y).is_finite())
    panels = df.select("dataset", "partition").unique(maintain_order=True).rows()
    algorithms = df.get_column("algorithm").unique(maintain_order=True).to_list()
    palette = _palette(algorithms)
    n_seeds = df.select(RUN).unique().group_by(["dataset", "partition", "algorithm"]).len().get_column("len")
    # a sweep's grid points (names label,axis=value): one legend entry per label, its points in shades
    families = {}
    for a in algorithms:
        families.setdefault(base_label(a), []).append(a)
    grouped_legend = len(families) < len(algorithms) and len(algorithms) > 12  # a few points: one entry each
    # one scale for every panel, from every value drawn
    log_y = yaxis.is_log((curves.get_column(y).cast(pl.Float64) * scale).to_list())

    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    legend_chars = max(len(_family_text(b, m)) if grouped_legend and len(m) > 1 else len(b if grouped_legend else m[0])
                       for b, m in families.items())
    width = 4.4 * ncols + 0.6 + max(1.2, 0.075 * max(legend_chars, max(len(a) for a in algorithms) if not grouped_legend
                                                     else 0))
    fig = Figure(figsize=(width, 3.6 * nrows + 0.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[len(panels):]:
        ax.set_visible(False)

    drawn: list[str] = []
    for ax, (dataset, partition) in zip(axes, panels):
        sel = (pl.col("dataset") == dataset) & (pl.col("partition") == partition)
        stats = (
            curves.filter(sel)
            .group_by("algorithm", "round")
            .agg(x=pl.col(x).cast(pl.Float64).mean(), m=(pl.col(y) * scale).mean(), s=(pl.col(y) * scale).std(ddof=1))
            .sort("round")
        )
        if stats.height == 0:
            ax.text(0.5, 0.5, "every run diverged" if not ok_runs.filter(sel).height else f"no {y} recorded",
                    ha="center", va="center", transform=ax.transAxes)
        shown: list[float] = []
        for a in algorithms:
            s = stats.filter(pl.col("algorithm") == a)
            if not s.height:
                continue
            xs, m, sd = s.get_column("x").to_numpy(), s.get_column("m").to_numpy(), s.get_column("s").fill_null(0.0)
            ax.plot(xs, m, color=palette[a], lw=1.6)
            lo, hi = m - sd.to_numpy(), m + sd.to_numpy()
            if log_y:
                lo = [max(v, 0.05 * c) for v, c in zip(lo, m)]
            ax.fill_between(xs, lo, hi, color=palette[a], alpha=0.2, lw=0)
            shown += [float(v) for v in m]
            if a not in drawn:
                drawn.append(a)
        target = targets if not isinstance(targets, Mapping) else targets.get(dataset)
        if target is not None and stats.height:
            ty = scale * target
            shown.append(ty)
            ax.axhline(ty, ls="--", lw=1, color="0.4")
            ax.annotate(f"target {ty:g}%" if scale == 100 else f"target {ty:g}", xy=(0.01, ty),
                        xycoords=("axes fraction", "data"), xytext=(0, 2), textcoords="offset points",
                        ha="left", va="bottom", fontsize=8, color="0.3")
        if stats.height:
            apply_metric_axis(ax, yaxis, shown, log=log_y)
        note = diverged_note(diverged.filter(sel))
        ax.set_xlabel(xlabel)
        if note:  # under the x label (anchored to it), never over it
            ax.annotate(note, xy=(0.5, 0), xycoords=ax.xaxis.label, xytext=(0, -3), textcoords="offset points",
                        ha="center", va="top", fontsize=8, color="firebrick", annotation_clip=False)
        ax.set_title("\n".join(textwrap.wrap(f"{dataset} / {partition}", 40)), fontsize=10)
        ax.set_ylabel(ylabel)
        if xlog:
            ax.set_xscale("log")
        if x == "round":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)

    if grouped_legend:
        names = [b for b, members in families.items() if any(a in drawn for a in members)]
        handles = [Line2D([], [], color=palette[[a for a in families[b] if a in drawn][len(
            [a for a in families[b] if a in drawn]) // 2]], lw=2) for b in names]
        names = [b if len(families[b]) == 1 else _family_text(b, families[b]) for b in names]
    else:
        handles, names = [Line2D([], [], color=palette[a], lw=2) for a in drawn], drawn
    if handles:
        fig.legend(handles, names, title="algorithm", loc="outside right center", frameon=False,
                   fontsize=8 if len(names) > 12 else 10, ncols=1 if len(names) <= 24 else 2)
    if title:
        spread = seeds_phrase(n_seeds.to_list())
        fig.suptitle(wrap_title(f"{title}: {ylabel.removesuffix(' (%)')} vs {xlabel.split(' (')[0]} ({spread})",
                                width), fontsize=11)
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
    return _plot_curves(df, path, x="round", y="test_accuracy", xlabel="round", targets=targets, title=title,
                        what="plot_accuracy", dpi=dpi)


def plot_accuracy_vs_uplink(
    df: pl.DataFrame,
    path: str | os.PathLike,
    targets: float | Mapping[str, float | None] | None = None,
    title: str | None = None,
    dpi: int = 120,
) -> Path:
    """Test accuracy (%) vs cumulative uplink floats (mean over seeds at each round; the
    communication cost of reaching an accuracy). Same arguments as :func:`plot_accuracy`."""
    return _plot_curves(df, path, x="uplink_floats", y="test_accuracy",
                        xlabel="cumulative uplink floats (client → server)", targets=targets, title=title,
                        what="accuracy_vs_uplink_floats", dpi=dpi)


def plot_train_loss(df: pl.DataFrame, path: str | os.PathLike, title: str | None = None, dpi: int = 120) -> Path:
    """Train loss vs round, mean ± sd over seeds. Arguments as :func:`plot_accuracy`."""
    path = _plot_curves(df, path, x="round", y="train_loss", xlabel="round",
                        title=title, what="train_loss", dpi=dpi)
    return path


def plot_comparison(df: pl.DataFrame, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Final test accuracy (%) per algorithm across experiments: one panel per experiment, one
    group of bars per (dataset, partition), one bar per algorithm (mean over the non-diverged
    seeds, error bar ± sd); a group where every seed of an algorithm diverged shows "×".

    Raises:
        ValueError: ``df`` is empty.
    """
    from fedbench.analysis.tables import _measured, summarize

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
    drawn: list[str] = []
    for ax, (exp, s) in zip(axes, sums.items()):
        groups = s.select("dataset", "partition").unique(maintain_order=True).rows()
        algs = [a for a in algorithms if a in set(s.get_column("algorithm").to_list())]
        w = 0.8 / max(1, len(algs))
        measured = _measured(s, "final_accuracy_mean")
        if not measured and s.filter(pl.col("n_diverged") < pl.col("n_seeds")).height:
            ax.text(0.5, 0.5, "no accuracy metric\n(e.g. the quadratic model)", ha="center", va="center",
                    transform=ax.transAxes, color="0.4", fontsize=9)
        for i, a in enumerate(algs):
            for g, (d, p) in enumerate(groups):
                r = s.filter((pl.col("dataset") == d) & (pl.col("partition") == p) & (pl.col("algorithm") == a))
                if not r.height:
                    continue
                r = r.row(0, named=True)
                xpos = g - 0.4 + w * (i + 0.5)
                if r["n_diverged"] == r["n_seeds"]:
                    ax.text(xpos, 2, "×", ha="center", va="bottom", color="firebrick", fontsize=10)
                    continue
                if r["final_accuracy_mean"] is None or math.isnan(r["final_accuracy_mean"]):
                    continue
                sd = r["final_accuracy_std"]
                ax.bar(xpos, 100 * r["final_accuracy_mean"], width=w, color=palette[a],
                       yerr=None if sd is None else 100 * sd, capsize=2, error_kw={"lw": 0.8})
                if a not in drawn:
                    drawn.append(a)
        ax.set_xticks(range(len(groups)), [f"{d}\n{p}" for d, p in groups], fontsize=8)
        ax.set_title("\n".join(textwrap.wrap(exp, max(12, int(6 * widths[experiments.index(exp)])))), fontsize=10)
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("final test accuracy (%)")
    if drawn:
        handles = [Line2D([], [], color=palette[a], lw=6) for a in drawn]
        fig.legend(handles, drawn, title="algorithm", loc="outside right center", frameon=False,
                   fontsize=8 if len(drawn) > 12 else 10, ncols=1 if len(drawn) <= 24 else 2)
    seeds = df.select(RUN).unique().group_by(["dataset", "partition", "algorithm"]).len().get_column("len")
    fig.suptitle(wrap_title(f"final test accuracy per algorithm ({seeds_phrase(seeds.to_list())}; × = every seed "
                            "diverged)", fig.get_figwidth()), fontsize=11)
    return _save(fig, path, dpi)
