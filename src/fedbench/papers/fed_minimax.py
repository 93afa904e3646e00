"""Federated minimax with client heterogeneity: Pranay Sharma, Rohan Panda, Gauri Joshi, "Federated
Minimax Optimization With Client Heterogeneity", Transactions on Machine Learning Research (TMLR),
2023 (OpenReview ``NnUmg1chLL``).

Registry key ``fed_minimax`` (``paper: fed_minimax`` in an experiment file): the cells of those
experiments feed the figures below. The paper reports no numbers (its results are curves only),
so it declares no table; ``results/tables/<experiment>.md`` has the usual per-cell summary.

Figures (``results/plots/paper/<name>.png``):

- ``fed_minimax_curves``: Figs. 3 and 5 (and their training-loss companions, Figs. 6): per
  experiment and (dataset, partition), the paper's metric against the round, one colour per
  algorithm (the configured label, before a sweep's suffix), one line style per local-work setting
  (the paper: solid E = 5, dashed E = 7, i.e. τ_i ~ Uniform{2..E} epochs), mean over the seeds
  that did not diverge. The metric follows the cells' minimax problem: fair classification
  (``model.minimax.problem: fair``, Fig. 5) the worst-class test accuracy
  (``test_worst_class_accuracy``), robust training (Fig. 3) the test accuracy under the learned
  perturbation (``test_accuracy``); a second row of panels gives ``train_loss``.
- ``fed_minimax_toy``: Fig. 1 on our two-client quadratic saddle problem, τ = (2, 5)
  (:mod:`fedbench.analysis.minimax_toy`: trajectories of the real Local SGDA / Fed-Norm-SGDA
  modules, the closed-form fixed points and saddles). It reads no cell.

Headless (Agg canvas, no pyplot), like :mod:`fedbench.analysis.plots`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from fedbench.analysis.paper_figures import figure_grid, save_figure
from fedbench.papers.base import PaperFigure, Table, unique_rows

__all__ = ["KEY", "NAME", "TABLES", "tables", "figures", "write_table", "write_figure", "curves_frame", "plot_curves",
           "METRIC_OF_PROBLEM"]

#: The registry key: the value of ``paper`` in the experiment files.
KEY = "fed_minimax"
#: How the paper is named in reports.
NAME = "Federated minimax (Sharma, Panda & Joshi, TMLR 2023)"

#: The paper reports no numbers: no table (the registry's contract: name -> spec).
TABLES: dict[str, dict] = {}
CURVES = "fed_minimax_curves"
TOY = "fed_minimax_toy"
#: The paper's metric per minimax problem (None: a cell without one).
METRIC_OF_PROBLEM = {"fair": "test_worst_class_accuracy", "robust": "test_accuracy", None: "test_accuracy"}
_METRIC_WORDS = {"test_worst_class_accuracy": "worst-class test accuracy (%)",
                 "test_accuracy": "test accuracy (%)"}
_STYLES = ("-", "--", ":", "-.")
_CURVES_CAPTION = (
    "Sharma, Panda & Joshi (TMLR 2023), Figs. 3 and 5 (top row) and their training losses (Fig. 6, bottom "
    "row): the paper's metric against the round (fair classification: worst-class test accuracy; robust "
    "training: test accuracy under the learned perturbation), one colour per algorithm, one line style per "
    "local-work setting (solid: the first, e.g. τ_i ~ Uniform{2..5} epochs; dashed: the second, e.g. "
    "Uniform{2..7}), mean over the seeds that did not diverge; one column per (experiment, dataset, partition).")
_TOY_CAPTION = (
    "Sharma, Panda & Joshi (TMLR 2023), Fig. 1 on our own instance (the paper gives none): two clients with "
    "quadratic saddle objectives and τ = (2, 5) local steps, p = (½, ½). Local SGDA's server iterates (real "
    "module) converge to its closed-form fixed point near the saddle of Σ p_i τ_i f_i (the objective "
    "mismatch); Fed-Norm-SGDA's to one near the saddle of Σ p_i f_i; both at distance O(lr) "
    "(python -m fedbench.analysis.minimax_toy prints the table).")


def _work(cell: Mapping) -> str:
    from fedbench.engine.batches import work_label

    local = cell.get("local") or {}
    unit = "epochs" if local.get("epochs") is not None else "steps"
    amount = local.get(unit)
    return f"{unit}={work_label(amount) if isinstance(amount, Mapping) else amount}"


def _curve_cell(c: Mapping) -> dict:
    return {"experiment": c["experiment"], "dataset": c["dataset"], "partition": c["partition"],
            "algorithm": c["algorithm"], "label": (c.get("sweep") or {}).get("label") or c["algorithm"],
            "work": _work(c), "problem": ((c.get("model") or {}).get("minimax") or {}).get("problem")}


# ----------------------------------------------------------------------------------------------
# What the paper declares, given its cells (the cells whose ``paper`` is KEY)


def tables(cells: Sequence[Mapping]) -> list[Table]:
    """None: the paper reports no numbers."""
    return []


def figures(cells: Sequence[Mapping]) -> list[PaperFigure]:
    """The curves (Figs. 3/5/6) and the toy (Fig. 1), when the paper has cells."""
    if not cells:
        return []
    rows = unique_rows((_curve_cell(c) for c in cells), ("experiment", "dataset", "partition", "algorithm", "label",
                                                          "work", "problem"))
    return [PaperFigure(CURVES, KEY, rows, "Federated minimax: metric and train loss vs round", _CURVES_CAPTION),
            PaperFigure(TOY, KEY, [], "Federated minimax: the objective mismatch (Fig. 1)", _TOY_CAPTION)]


def write_table(name: str, df: pl.DataFrame, reference, cells, md_path, csv_path):
    """The paper declares no table.

    Raises:
        KeyError: always.
    """
    raise KeyError(f"{name!r} is not a table of {KEY} (the paper reports no numbers)")


def write_figure(name: str, cells: list[dict], path: str | os.PathLike, metrics: str | os.PathLike | None = None,
                 files: Sequence[str | os.PathLike] = ()) -> Path:
    """Write a figure that :func:`figures` declares.

    Raises:
        KeyError: an unknown figure name.
    """
    if name == CURVES:
        return plot_curves(pl.read_parquet(metrics), cells, path)
    if name == TOY:
        from fedbench.analysis.minimax_toy import plot

        return plot(path)
    raise KeyError(f"{name!r} is not a figure of {KEY}")


# ----------------------------------------------------------------------------------------------
# Figs. 3 / 5 / 6


def curves_frame(df: pl.DataFrame, cells: Sequence[Mapping]) -> pl.DataFrame:
    """Mean over the non-diverged seeds, per declared cell (``cells``: :func:`figures`' rows) and round,
    of its problem's metric (``value``) and ``train_loss``. Columns: experiment, dataset, partition,
    algorithm, label, work, problem, metric, round, value, train_loss."""
    keys = ["experiment", "dataset", "partition", "algorithm"]
    schema = {**{k: pl.String for k in [*keys, "label", "work", "problem", "metric"]}, "round": pl.Int64,
              "value": pl.Float64, "train_loss": pl.Float64}
    if not cells or df.height == 0:
        return pl.DataFrame(schema=schema)
    sel = pl.DataFrame([{**{k: c[k] for k in [*keys, "label", "work"]}, "problem": c.get("problem") or "",
                         "metric": METRIC_OF_PROBLEM.get(c.get("problem"), "test_accuracy")} for c in cells],
                       schema={k: pl.String for k in [*keys, "label", "work", "problem", "metric"]})
    runs = df.group_by([*keys, "seed"]).agg(diverged=(pl.col("status") == "diverged").any())
    ok = runs.filter(~pl.col("diverged")).drop("diverged")
    data = df.join(ok, on=[*keys, "seed"], how="semi").join(sel, on=keys, how="inner")
    metric_cols = sorted(set(sel["metric"].to_list()))
    value = pl.lit(None, dtype=pl.Float64)
    for m in metric_cols:
        value = pl.when(pl.col("metric") == m).then(pl.col(m).cast(pl.Float64)).otherwise(value)
    data = data.with_columns(value=value)
    return (data.group_by([*keys, "label", "work", "problem", "metric", "round"], maintain_order=True)
            .agg(pl.col("value").mean(), pl.col("train_loss").mean())
            .sort([*keys, "round"]).select(list(schema)))


def plot_curves(df: pl.DataFrame, cells: Sequence[Mapping], path: str | os.PathLike, dpi: int = 120) -> Path:
    """Save Figs. 3/5 (top row) and 6 (bottom row), see the module docstring. One column per
    (experiment, dataset, partition); colours by algorithm label, line styles by local-work setting."""
    import seaborn as sns

    data = curves_frame(df, cells)
    panels = data.select("experiment", "dataset", "partition").unique(maintain_order=True).rows()
    n = max(1, len(panels))
    fig, axes = figure_grid(2 * n, n, 4.6, 3.3)
    labels = list(dict.fromkeys(data["label"].to_list()))
    colors = dict(zip(labels, sns.color_palette("colorblind", max(1, len(labels)))))
    if not panels:
        axes[0][0].text(0.5, 0.5, "no run of this paper with metrics", ha="center", va="center",
                        transform=axes[0][0].transAxes)
        axes[1][0].set_visible(False)
    for col, (exp, ds, pid) in enumerate(panels):
        sel = data.filter((pl.col("experiment") == exp) & (pl.col("dataset") == ds) & (pl.col("partition") == pid))
        works = list(dict.fromkeys(sel["work"].to_list()))
        metric = sel["metric"][0]
        top, bottom = axes[0][col], axes[1][col]
        for (_alg, label, work), part in sel.group_by(["algorithm", "label", "work"], maintain_order=True):
            style = _STYLES[works.index(work) % len(_STYLES)]
            top.plot(part["round"], 100.0 * part["value"], ls=style, lw=1.5, color=colors[label],
                     label=f"{label}, {work}")
            bottom.plot(part["round"], part["train_loss"], ls=style, lw=1.5, color=colors[label])
        top.set_title(f"{exp}\n{ds} / {pid}", fontsize=9)
        top.set_ylabel(_METRIC_WORDS.get(metric, metric))
        bottom.set_ylabel("train loss")
        for ax in (top, bottom):
            ax.set_xlabel("round")
            ax.grid(alpha=0.3)
        top.legend(fontsize=7)
    fig.suptitle("Sharma, Panda & Joshi (TMLR 2023), Figs. 3/5/6: heterogeneous local epochs "
                 "(line style) and aggregation (colour)")
    return save_figure(fig, path, dpi)
