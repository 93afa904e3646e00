"""FedElasticNet's λ1 sweep (the paper's Figures 3–5): final test accuracy and cumulative uplink
non-zeros (unit 1e7) against λ1, one line per FedElasticNet algorithm (Alg. 1, 2, 3) and per
(experiment, dataset, partition) that runs one algorithm at two or more values of λ1.

Our value: at the last round of each run, mean over the seeds that did not diverge.
Headless (Agg canvas, no pyplot), like :mod:`fedbench.analysis.plots`.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedbench.files import atomic_write

NAMES = {"fedelasticnet_prox": "Alg. 1 (FedProx + EN)", "fedelasticnet_scaffold": "Alg. 2 (SCAFFOLD + ℓ1)",
         "fedelasticnet_feddyn": "Alg. 3 (FedDyn + EN)"}


def sweep_cells(cells: list[dict]) -> list[dict]:
    """The cells (dicts with experiment, dataset, partition, algorithm, algorithm_name, hparams)
    that belong to a λ1 sweep: a FedElasticNet algorithm run at >= 2 values of λ1 within one
    (experiment, dataset, partition). Returned flat: the keys above with ``lambda1``."""
    groups: dict[tuple, set] = {}
    for c in cells:
        if c["algorithm_name"] in NAMES:
            groups.setdefault((c["experiment"], c["dataset"], c["partition"], c["algorithm_name"]), set()).add(
                float(c["hparams"]["lambda1"]))
    out, seen = [], set()
    for c in cells:
        g = (c["experiment"], c["dataset"], c["partition"], c["algorithm_name"])
        if c["algorithm_name"] in NAMES and len(groups[g]) >= 2:
            row = (*g[:3], c["algorithm"], c["algorithm_name"], float(c["hparams"]["lambda1"]))
            if row not in seen:
                seen.add(row)
                out.append(dict(zip(("experiment", "dataset", "partition", "algorithm", "algorithm_name", "lambda1"),
                                    row)))
    return out


def sweep_frame(df: pl.DataFrame, cells: list[dict]) -> pl.DataFrame:
    """One row per sweep point: experiment, dataset, partition, algorithm_name, lambda1,
    final_accuracy, nonzeros_1e7 (means over the non-diverged seeds), sorted by λ1."""
    sc = pl.DataFrame(sweep_cells(cells), schema={"experiment": pl.String, "dataset": pl.String,
                                                  "partition": pl.String, "algorithm": pl.String,
                                                  "algorithm_name": pl.String, "lambda1": pl.Float64})
    last = (df.sort("round").group_by(["experiment", "dataset", "partition", "algorithm", "seed"])
            .agg(acc=pl.col("test_accuracy").last(), nnz=pl.col("uplink_nonzeros").last(),
                 diverged=(pl.col("status") == "diverged").any()))
    j = last.join(sc, on=["experiment", "dataset", "partition", "algorithm"], how="inner").filter(~pl.col("diverged"))
    return (j.group_by(["experiment", "dataset", "partition", "algorithm_name", "lambda1"])
            .agg(final_accuracy=pl.col("acc").mean(), nonzeros_1e7=(pl.col("nnz").cast(pl.Float64) / 1e7).mean())
            .sort(["experiment", "dataset", "partition", "algorithm_name", "lambda1"]))


def plot_lambda1_sweep(df: pl.DataFrame, cells: list[dict], path: str | os.PathLike, dpi: int = 120) -> Path:
    """Save the sweep figure (two panels: final accuracy in %, cumulative non-zeros in 1e7, against
    λ1 on a log axis). With no sweep in ``cells`` the figure says so."""
    data = sweep_frame(df, cells)
    fig = Figure(figsize=(10, 4))
    FigureCanvasAgg(fig)
    ax_acc, ax_nnz = fig.subplots(1, 2)
    for key, part in data.group_by(["experiment", "dataset", "partition", "algorithm_name"], maintain_order=True):
        exp, ds, pid, name = key
        label = f"{NAMES[name]}: {ds}/{pid} ({exp})"
        ax_acc.plot(part["lambda1"], 100 * part["final_accuracy"], marker="o", label=label)
        ax_nnz.plot(part["lambda1"], part["nonzeros_1e7"], marker="o", label=label)
    for ax, ylabel in ((ax_acc, "final test accuracy (%)"), (ax_nnz, "cumulative uplink non-zeros (1e7)")):
        ax.set_xscale("log")
        ax.set_xlabel("λ1")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    if data.height:
        ax_acc.legend(fontsize=7)
    else:
        ax_acc.text(0.5, 0.5, "no λ1 sweep in this config", ha="center", va="center", transform=ax_acc.transAxes)
    fig.suptitle("FedElasticNet: λ1 sweep (paper Figures 3–5)")
    fig.tight_layout()
    path = Path(path)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=dpi)
    return path
