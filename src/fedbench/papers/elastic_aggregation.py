"""Elastic Aggregation: Dengsheng Chen, Jie Hu, Vince Junkai Tan, Xiaoming Wei, Enhua Wu,
"Elastic Aggregation for Federated Optimization", CVPR 2023 (pp. 12187–12197); Table 1 and
Figure 1 are in its supplementary material.

Registry key ``elastic_aggregation`` (``paper: elastic_aggregation`` in an experiment file): the
cells of those experiments feed the outputs below.

Table (``results/tables/paper/<name>.{md,csv}``, the paper's numbers in
``reference/elastic_aggregation_table1.csv`` beside ours; :mod:`fedbench.analysis.paper_tables`):

- ``elastic_aggregation_table1``: Table 1 (performance with different parameter-sensitivity
  computation approaches), final test accuracy and train accuracy (of θ^T on all clients'
  training data, ``train_accuracy``) of naive aggregation / elastic (average) / elastic
  (momentum) (labels ``fedavg``, ``elastic_fedavg_average``, ``elastic_fedavg``), one layout row
  per metric as in the paper.

Figure (``results/plots/paper/<name>.png``):

- ``elastic_aggregation_boosted``: Figure 1 (percentage of parameters boosted during training),
  when an experiment of the paper runs an Elastic Aggregation algorithm: :func:`plot_boosted`,
  the ``boosted_pct`` column (100 · #{i : ζ^i > 1} / n) against the round, one line per Elastic
  Aggregation algorithm (the paper compares elastic(momentum), solid, with elastic(average),
  dashed), one panel per (experiment, dataset, partition); mean over the seeds that did not
  diverge.

Claim (:func:`claims`, decided by the scorecard, :mod:`fedbench.analysis.scorecard`): Table 1's ordering
of the sensitivity estimators, elastic(momentum) first on test and train accuracy.

Headless (Agg canvas, no pyplot), like :mod:`fedbench.analysis.plots`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl
from matplotlib.ticker import MaxNLocator

from fedbench.analysis import paper_tables as _tables
from fedbench.analysis.folder import read_metrics
from fedbench.analysis.paper_figures import figure_grid, save_figure
from fedbench.analysis.paper_tables import load_reference
from fedbench.papers.base import REFERENCE_DIR, REFERENCE_NOTE, PaperFigure, Table, unique_rows

__all__ = ["claims",
           "KEY", "NAME", "TABLES", "tables", "figures", "write_table", "write_figure", "load_reference",
           "paper_table", "markdown_paper_table", "write_paper_table", "ELASTIC_ALGORITHMS", "boosted_frame",
           "plot_boosted"]

#: The registry key: the value of ``paper`` in the experiment files.
KEY = "elastic_aggregation"
#: How the paper is named in reports.
NAME = "Elastic Aggregation (Chen et al., CVPR 2023)"

COLUMNS = [("fedavg", "naive"), ("elastic_fedavg_average", "elastic(average)"), ("elastic_fedavg", "elastic(momentum)")]

#: table name -> spec (:mod:`fedbench.analysis.paper_tables`) + ``reference`` (its CSV file).
TABLES = {
    "elastic_aggregation_table1": {
        "title": "Elastic Aggregation Table 1: final test accuracy (%) by sensitivity estimator",
        "number": 1, "reference": "elastic_aggregation_table1.csv", "metrics": ["test_accuracy", "train_accuracy"],
        "scale": 0.01, "participation": "any", "columns": COLUMNS,
        "row_metrics": [("test_accuracy", "test acc (%)"), ("train_accuracy", "train acc (%)")],
        "notes": [
            "Train accuracy: ours is θ^T on every client's training data (the held-out sensitivity "
            "subsets included); the paper does not say how it measured its own (its train accuracy is "
            "below its test accuracy). The paper's row is CIFAR-10 (synthetic federated split; "
            "optimizer, α, τ and ρ not stated): it is matched to every partition of our dataset cifar10.",
            REFERENCE_NOTE,
        ],
    },
}

#: Elastic Aggregation algorithm modules (they have ``boosted_pct``).
ELASTIC_ALGORITHMS = ("elastic_fedavg", "elastic_fedavgm", "elastic_fedprox")

BOOSTED_FIGURE = "elastic_aggregation_boosted"
_BOOSTED_CAPTION = (
    "Elastic Aggregation's Figure 1: the percentage of parameters boosted by the elastic server step, "
    "100 · #{i : ζ^i > 1} / n with ζ = 1 + τ − Ω/max Ω, against the round (column ``boosted_pct`` of the "
    "metrics), one line per Elastic Aggregation algorithm, mean over the seeds that did not diverge; one "
    "panel per (experiment, dataset, partition). Solid: momentum sensitivity (EMA with ρ over the held-out "
    "batches), dashed: average (Eq. 1), dotted: naive (ζ ≡ 1, always 0 %). The paper reports only the "
    "qualitative result: momentum boosts fewer parameters than average.")


# ----------------------------------------------------------------------------------------------
# What the paper declares, given its cells (the cells whose ``paper`` is KEY)


def tables(cells: Sequence[Mapping]) -> list[Table]:
    """Table 1, over all the cells of the paper."""
    rows = unique_rows(({**c, "participation": c["sampling"]["participation"]} for c in cells),
                       ("experiment", "dataset", "partition", "algorithm", "participation"))
    return [Table(name, KEY, rows, REFERENCE_DIR / spec["reference"], spec["title"])
            for name, spec in TABLES.items()] if cells else []


def figures(cells: Sequence[Mapping]) -> list[PaperFigure]:
    """Figure 1, when some cell runs an Elastic Aggregation algorithm."""
    boosted = unique_rows((c for c in cells if c["algorithm_name"] in ELASTIC_ALGORITHMS),
                          ("experiment", "dataset", "partition", "algorithm", "algorithm_name", "hparams"),
                          by=("experiment", "dataset", "partition", "algorithm"))
    return [PaperFigure(BOOSTED_FIGURE, KEY, boosted, "Elastic Aggregation: boosted parameters",
                        _BOOSTED_CAPTION)] if boosted else []


def write_table(name: str, df: pl.DataFrame, reference: str | os.PathLike, cells: list[dict],
                md_path: str | os.PathLike, csv_path: str | os.PathLike) -> pl.DataFrame:
    """Write one of :data:`TABLES` (Markdown in the paper's layout, long CSV)."""
    return write_paper_table(df, reference, cells, name, md_path, csv_path)


def write_figure(name: str, cells: list[dict], path: str | os.PathLike,
                 metrics: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
                 files: Sequence[str | os.PathLike] = ()) -> Path:
    """Write the figure that :func:`figures` declares."""
    if name == BOOSTED_FIGURE:
        return plot_boosted(read_metrics(metrics), cells, path)
    raise KeyError(f"{name!r} is not a figure of {KEY}")


# ----------------------------------------------------------------------------------------------
# Table 1


def paper_table(df: pl.DataFrame, reference: pl.DataFrame, cells: list[dict], table: str) -> pl.DataFrame:
    """The long form of one of :data:`TABLES` (:func:`fedbench.analysis.paper_tables.paper_table`)."""
    return _tables.paper_table(df, reference, cells, table, TABLES[table])


def markdown_paper_table(long: pl.DataFrame, table: str) -> str:
    """One of :data:`TABLES` in the paper's layout (:func:`fedbench.analysis.paper_tables.markdown_paper_table`)."""
    return _tables.markdown_paper_table(long, TABLES[table])


def write_paper_table(df: pl.DataFrame, reference_path: str | os.PathLike, cells: list[dict], table: str,
                      md_path: str | os.PathLike, csv_path: str | os.PathLike) -> pl.DataFrame:
    """Write one of :data:`TABLES` as Markdown and CSV."""
    return _tables.write_paper_table(df, reference_path, cells, table, TABLES[table], md_path, csv_path)


# ----------------------------------------------------------------------------------------------
# Figure 1: parameters boosted


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
    """Save Elastic Aggregation's Figure 1 (see the module docstring): panels in the order of the
    cells (the config's, as the tables' rows), each algorithm in its colour
    (:func:`fedbench.analysis.style.algorithm_colors`), the y axis in % inside [0, 100]. With no
    Elastic Aggregation run the figure says so."""
    from fedbench.analysis.style import algorithm_colors, apply_metric_axis, metric_axis, wrap_title

    data = boosted_frame(df, cells)
    have = set(data.select("experiment", "dataset", "partition").unique().rows())
    panels = [k for k in dict.fromkeys((c["experiment"], c["dataset"], c["partition"]) for c in cells) if k in have]
    panels += [k for k in data.select("experiment", "dataset", "partition").unique(maintain_order=True).rows()
               if k not in panels]
    palette = algorithm_colors(list(dict.fromkeys(c["algorithm"] for c in cells)))
    fig, axes = figure_grid(max(1, len(panels)), 3, 4.4, 3.3)
    flat = axes.ravel()
    for ax in flat[len(panels):]:
        ax.set_visible(False)
    if not panels:
        flat[0].set_visible(True)
        flat[0].text(0.5, 0.5, "no Elastic Aggregation run with a boosted percentage", ha="center", va="center",
                     transform=flat[0].transAxes)
    yaxis = metric_axis("boosted_pct")
    for ax, (exp, ds, pid) in zip(flat, panels):
        sel = data.filter((pl.col("experiment") == exp) & (pl.col("dataset") == ds) & (pl.col("partition") == pid))
        for (alg, sens), part in sel.group_by(["algorithm", "sensitivity"], maintain_order=True):
            style = "--" if sens == "average" else ":" if sens == "none" else "-"
            ax.plot(part["round"], part["boosted_pct"], ls=style, lw=1.6, color=palette.get(alg),
                    label=f"{alg} ({sens or 'momentum'})")
        ax.set_title(f"{ds} / {pid} ({exp})", fontsize=9)
        ax.set_xlabel("round")
        ax.set_ylabel("parameters boosted, ζ > 1 (%)")
        if sel.height:  # zoom on the data (values often sit near 100 %), never past [0, 100]
            apply_metric_axis(ax, yaxis, sel["boosted_pct"].to_list())
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    handles, labels = [], []
    for ax in flat:  # one legend for the figure, under it: the panels' data stay visible
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(labels)), fontsize=8)
    fig.suptitle(wrap_title("Elastic Aggregation Figure 1: percentage of parameters boosted "
                            "(solid: momentum sensitivity, dashed: average)", fig.get_figwidth()))
    return save_figure(fig, path, dpi)

# ----------------------------------------------------------------------------------------------
# Claims (the scorecard: fedbench.analysis.scorecard)


def _decide_ordering(ev):
    from fedbench.analysis.scorecard import Verdict

    t = ev.tables.get("elastic_aggregation_table1")
    if t is None:
        return Verdict.undecidable("no elastic_aggregation_table1 (no cell of the paper)")
    names = dict(COLUMNS)
    ours = t.filter(pl.col("ours").is_not_null() & pl.col("algorithm").is_in(list(names)))
    rows, bad, texts, cells, seeds = 0, [], [], [], set()
    for key, g in ours.group_by(["experiment", "dataset", "partition", "participation", "metric"], maintain_order=True):
        vals = dict(zip(g["algorithm"].to_list(), g["ours"].to_list()))
        if set(vals) != set(names):
            continue
        rows += 1
        seeds.update(g["n_seeds"].to_list())
        gap = vals["elastic_fedavg"] - max(v for a, v in vals.items() if a != "elastic_fedavg")
        ranked = sorted(vals, key=vals.get, reverse=True)
        order = names[ranked[0]] + "".join((" = " if vals[b] == vals[a] else " > ") + names[b]
                                           for a, b in zip(ranked, ranked[1:]))
        texts.append(f"{key[0]}/{key[2]} {key[4].replace('_accuracy', '')}: {order}")
        cells += [f"{key[0]}/{key[1]}/{key[2]}/{a}" for a in vals]
        if gap < 0:
            bad.append((gap, texts[-1]))
    if rows == 0:
        return Verdict.undecidable("needs the three estimators (fedavg, elastic_fedavg_average, elastic_fedavg) in one "
                                   "experiment")
    note = (f"over {min(seeds)} seed{'s' if min(seeds) > 1 else ''}" if seeds else "") + \
        ("; the paper's row is CIFAR-10" if not ours.filter(pl.col("paper").is_not_null()).height else "")
    if bad:
        worst = min(bad)
        return Verdict.decide(False, "; ".join(texts), f"elastic(momentum) not first in {len(bad)} of {rows} rows, "
                              f"{-worst[0]:.2f} pp behind at worst", cells, note)
    return Verdict.decide(True, "; ".join(texts), f"elastic(momentum) first in {rows} of {rows} rows", cells, note)


def claims():
    """The paper's claims, as code (:class:`fedbench.analysis.scorecard.Claim`)."""
    from fedbench.analysis.scorecard import Claim

    return [
        Claim("elastic_aggregation.table1_ordering", KEY, "Table 1 (supplementary material)",
              "the momentum estimate of the parameter sensitivity beats the average estimate and naive aggregation",
              "CIFAR-10: test 61.45 / 61.11 / 61.22 %, train 58.74 / 55.49 / 55.39 % (momentum / average / naive)",
              "final test and train accuracy (%) of naive / elastic(average) / elastic(momentum), mean over seeds: "
              "table elastic_aggregation_table1",
              "elastic(momentum) has the highest value of the three (a tie counts) in every row and metric",
              _decide_ordering),
    ]
