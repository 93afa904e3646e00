"""Two paper figures that need more than the accuracy curves:

- **Elastic Aggregation, Figure 1** ("percentage of parameters boosted during training",
  summary-seed-000 §4): :func:`plot_boosted`, the ``boosted_pct`` column (100 · #{i : ζ^i > 1} / n)
  against the round, one line per Elastic Aggregation algorithm (the paper compares
  elastic(momentum), solid, with elastic(average), dashed), one panel per (experiment, dataset,
  partition); mean over the seeds that did not diverge.
- **FedElasticNet, Figure 2** ("histogram of transmitted Δ_k^t" of FedDyn, Algorithm 2 and
  Algorithm 3 on CIFAR-10, 10 %, Dir(0.3); summary-seed-003 §5.5): :func:`plot_delta_histograms`,
  from the cells' ``delta_histogram.parquet`` (:mod:`fedbench.metrics.histogram`): the
  cumulative histogram (round 0: every round's transmitted Δ, pooled over clients and seeds) of
  the ``delta`` entry, as the fraction of values per 0.01 bin on a log axis (a Gaussian is a
  parabola there, a Laplacian a tent), one column per method in the paper's order, one row per
  (dataset, partition). Each panel states the entropy of its histogram (bits per value).

Headless (Agg canvas, no pyplot), like :mod:`fedbench.analysis.plots`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fedbench.files import atomic_write
from fedbench.metrics.communication import ENTROPY_BIN_WIDTH, entropy_from_counts

#: FedElasticNet's Figure 2 columns: algorithm module -> the paper's name.
HISTOGRAM_METHODS = {"feddyn": "FedDyn", "fedelasticnet_scaffold": "Alg. 2 (SCAFFOLD + ℓ1)",
                     "fedelasticnet_feddyn": "Alg. 3 (FedDyn + EN)"}
#: Elastic Aggregation algorithm modules (they have ``boosted_pct``).
ELASTIC_ALGORITHMS = ("elastic_fedavg", "elastic_fedavgm", "elastic_fedprox")


def _save(fig: Figure, path: str | os.PathLike, dpi: int) -> Path:
    path = Path(path)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=dpi)
    return path


def _grid(n: int, ncols: int, width: float, height: float):
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    fig = Figure(figsize=(width * ncols + 1.0, height * nrows + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


# ----------------------------------------------------------------------------------------------
# Elastic Aggregation, Figure 1


def boosted_frame(df: pl.DataFrame, cells: Sequence[dict]) -> pl.DataFrame:
    """Mean boosted percentage per (experiment, dataset, partition, algorithm, round) over the
    non-diverged seeds, for the ``cells`` (dicts with experiment, dataset, partition, algorithm,
    algorithm_name) of an Elastic Aggregation algorithm; rows with a null ``boosted_pct`` are
    dropped. Columns: those five keys but algorithm_name, ``sensitivity`` (from the cell's
    hparams when given, else ""), round, boosted_pct."""
    keys = ["experiment", "dataset", "partition", "algorithm"]
    sel = [{**{k: c[k] for k in keys}, "sensitivity": str((c.get("hparams") or {}).get("sensitivity", ""))}
           for c in cells if c.get("algorithm_name") in ELASTIC_ALGORITHMS]
    schema = {**{k: pl.String for k in keys}, "sensitivity": pl.String, "round": pl.Int64, "boosted_pct": pl.Float64}
    if not sel or "boosted_pct" not in df.columns or df.height == 0:
        return pl.DataFrame(schema=schema)
    sel_df = pl.DataFrame(sel, schema={**{k: pl.String for k in keys}, "sensitivity": pl.String}).unique(
        maintain_order=True)
    runs = df.group_by([*keys, "seed"]).agg(diverged=(pl.col("status") == "diverged").any())
    ok = runs.filter(~pl.col("diverged")).drop("diverged")
    data = (df.join(ok, on=[*keys, "seed"], how="semi").join(sel_df, on=keys, how="inner")
            .filter(pl.col("boosted_pct").is_not_null()))
    return (data.group_by([*keys, "sensitivity", "round"]).agg(pl.col("boosted_pct").mean())
            .sort([*keys, "round"]).select(list(schema)))


def plot_boosted(df: pl.DataFrame, cells: Sequence[dict], path: str | os.PathLike, dpi: int = 120) -> Path:
    """Save Elastic Aggregation's Figure 1 (see the module docstring). With no Elastic
    Aggregation run the figure says so."""
    data = boosted_frame(df, cells)
    panels = data.select("experiment", "dataset", "partition").unique(maintain_order=True).rows()
    fig, axes = _grid(max(1, len(panels)), 3, 4.4, 3.3)
    flat = axes.ravel()
    for ax in flat[len(panels):]:
        ax.set_visible(False)
    if not panels:
        flat[0].set_visible(True)
        flat[0].text(0.5, 0.5, "no Elastic Aggregation run with a boosted percentage", ha="center", va="center",
                     transform=flat[0].transAxes)
    for ax, (exp, ds, pid) in zip(flat, panels):
        sel = data.filter((pl.col("experiment") == exp) & (pl.col("dataset") == ds) & (pl.col("partition") == pid))
        for (alg, sens), part in sel.group_by(["algorithm", "sensitivity"], maintain_order=True):
            style = "--" if sens == "average" else ":" if sens == "none" else "-"
            ax.plot(part["round"], part["boosted_pct"], ls=style, lw=1.6, label=f"{alg} ({sens or 'momentum'})")
        ax.set_title(f"{ds} / {pid} ({exp})", fontsize=9)
        ax.set_xlabel("round")
        ax.set_ylabel("parameters boosted, ζ > 1 (%)")
        if sel.height:  # zoom on the data (values often sit near 100 %), within [0, 100]
            lo, hi = float(sel["boosted_pct"].min()), float(sel["boosted_pct"].max())
            pad = max(1.0, 0.1 * (hi - lo))
            ax.set_ylim(max(0.0, lo - pad), min(100.0, hi + pad) + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Elastic Aggregation Figure 1: percentage of parameters boosted "
                 "(solid: momentum sensitivity, dashed: average)")
    return _save(fig, path, dpi)


# ----------------------------------------------------------------------------------------------
# FedElasticNet, Figure 2


def read_histograms(paths: Sequence[str | os.PathLike]) -> pl.DataFrame:
    """Concatenate cells' ``delta_histogram.parquet`` files (checked against the schema)."""
    from fedbench.metrics.histogram import DELTA_HISTOGRAM_SCHEMA

    want = dict(pl.from_arrow(DELTA_HISTOGRAM_SCHEMA.empty_table()).schema)
    frames = []
    for p in paths:
        f = pl.read_parquet(p)
        for name, dtype in want.items():
            if f.schema.get(name) != dtype:
                raise ValueError(f"{p}: column {name!r} is {f.schema.get(name)}, expected {dtype} "
                                 "(fedbench.metrics.histogram.DELTA_HISTOGRAM_SCHEMA)")
        frames.append(f.select(list(want)))
    return pl.concat(frames) if frames else pl.DataFrame(schema=want)


def histogram_panels(hist: pl.DataFrame, cells: Sequence[dict], entry: str = "delta", round: int = 0
                     ) -> dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]:
    """{(dataset, partition, algorithm_name): (bins, counts)} of ``entry`` at ``round`` (0 =
    cumulative), summed over the seeds and over the cells with that algorithm module, for the
    methods of :data:`HISTOGRAM_METHODS`."""
    name_of = {c["algorithm"]: c["algorithm_name"] for c in cells}
    h = hist.filter((pl.col("entry") == entry) & (pl.col("round") == round))
    h = h.with_columns(pl.col("algorithm").replace_strict(name_of, default=None).alias("algorithm_name"))
    h = h.filter(pl.col("algorithm_name").is_in(list(HISTOGRAM_METHODS)))
    out = {}
    for key, part in h.group_by(["dataset", "partition", "algorithm_name"], maintain_order=True):
        agg = part.group_by("bin").agg(pl.col("count").sum()).sort("bin")
        out[tuple(key)] = (agg["bin"].to_numpy(), agg["count"].to_numpy())
    return out


def plot_delta_histograms(paths: Sequence[str | os.PathLike], cells: Sequence[dict], path: str | os.PathLike,
                          title: str = "", dpi: int = 120) -> Path:
    """Save FedElasticNet's Figure 2 for one experiment (see the module docstring).

    Args:
        paths: the experiment's cells' ``delta_histogram.parquet`` files.
        cells: dicts with experiment, dataset, partition, algorithm (label) and algorithm_name.
        path: output PNG.
        title: the experiment, for the figure title.
    """
    panels = histogram_panels(read_histograms(paths), cells)
    settings = list(dict.fromkeys((ds, pid) for ds, pid, _ in panels))
    methods = [m for m in HISTOGRAM_METHODS if any(k[2] == m for k in panels)] or list(HISTOGRAM_METHODS)
    fig = Figure(figsize=(4.2 * len(methods) + 0.8, 2.9 * max(1, len(settings)) + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(max(1, len(settings)), len(methods), squeeze=False)
    if not settings:
        axes[0, 0].text(0.5, 0.5, "no FedDyn / Alg. 2 / Alg. 3 histogram", ha="center", va="center",
                        transform=axes[0, 0].transAxes)
    w = ENTROPY_BIN_WIDTH
    for i, (ds, pid) in enumerate(settings):
        # one x range per row, so that the methods compare: the central 99.8 % of all their values
        lo_hi = []
        for m in methods:
            if (ds, pid, m) in panels:
                bins, counts = panels[(ds, pid, m)]
                cdf = np.cumsum(counts) / counts.sum()
                lo_hi.append((bins[np.searchsorted(cdf, 0.001)], bins[min(len(bins) - 1, np.searchsorted(cdf, 0.999))]))
        lo = min(a for a, _ in lo_hi) if lo_hi else -5
        hi = max(b for _, b in lo_hi) if lo_hi else 5
        lo, hi = min(lo, -5), max(hi, 5)
        for j, m in enumerate(methods):
            ax = axes[i, j]
            if (ds, pid, m) not in panels:
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
                continue
            bins, counts = panels[(ds, pid, m)]
            frac = counts / counts.sum()
            ax.stairs(frac, np.append(bins, bins[-1] + 1) * w, fill=True, alpha=0.75)
            ax.set_yscale("log")
            ax.set_xlim((lo - 1) * w, (hi + 2) * w)
            ax.set_title(f"{HISTOGRAM_METHODS[m]}: {ds} / {pid}", fontsize=9)
            ax.text(0.98, 0.96, f"H = {entropy_from_counts(counts):.2f} bits/value\n{int(counts.sum()):,} values",
                    ha="right", va="top", fontsize=8, transform=ax.transAxes)
            ax.set_xlabel("transmitted Δ (bins of 0.01)")
            if j == 0:
                ax.set_ylabel("fraction of values")
            ax.grid(alpha=0.3)
    fig.suptitle(f"FedElasticNet Figure 2: histograms of the transmitted Δ, all rounds{f' ({title})' if title else ''}")
    return _save(fig, path, dpi)
