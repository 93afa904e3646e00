"""Comparison tables of one experiment from the collected metrics (``results/metrics.parquet``).

One row per (dataset, partition, algorithm), statistics over seeds:

- final test accuracy: at the last evaluated round of each run; mean ± sd over seeds;
- best test accuracy: the maximum over evaluated rounds; mean ± sd over seeds;
- rounds to target: the first evaluated round whose test accuracy is >= the target; the mean
  over the seeds that reached it, with how many did (``12.5 (2/3)``; ``not reached (0/3)``);
- uplink floats: total scalars sent client → server over the run (mean over seeds).

sd is the sample standard deviation (ddof = 1), so one seed shows no sd. A run whose status is
``diverged`` is never averaged in: the row says ``diverged (n/N seeds)``, and when every seed
diverged the statistics read ``diverged (N/N seeds)``.

The Markdown table (percentages, aligned columns) is for reading; the CSV keeps the numbers
(accuracies as fractions in [0, 1]) for further analysis.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import polars as pl

from fedbench.files import atomic_write

GROUP = ["dataset", "partition", "algorithm"]
RUN = [*GROUP, "seed"]
CSV_COLUMNS = [
    "dataset", "partition", "algorithm", "n_seeds", "n_diverged",
    "final_accuracy_mean", "final_accuracy_std", "best_accuracy_mean", "best_accuracy_std",
    "target_accuracy", "rounds_to_target_mean", "n_reached_target", "uplink_floats_mean", "rounds",
]


def _targets_frame(df: pl.DataFrame, targets: float | Mapping[str, float | None] | None) -> pl.DataFrame:
    datasets = df.get_column("dataset").unique(maintain_order=True).to_list()
    if targets is None or isinstance(targets, (int, float)):
        values = {d: targets for d in datasets}
    else:
        values = {d: targets.get(d) for d in datasets}
    return pl.DataFrame(
        {"dataset": list(values), "target": [None if v is None else float(v) for v in values.values()]},
        schema={"dataset": pl.String, "target": pl.Float64},
    )


def run_stats(df: pl.DataFrame, targets: float | Mapping[str, float | None] | None = None) -> pl.DataFrame:
    """One row per run (dataset, partition, algorithm, seed): diverged, final/best accuracy,
    first round reaching the target (null if never), total uplink floats, last round.
    Runs keep their order of first appearance in ``df``."""
    df = df.join(_targets_frame(df, targets), on="dataset", how="left", maintain_order="left")
    df = df.with_columns(pl.int_range(pl.len()).alias("_row")).sort(["round", "_row"])
    ok = pl.col("status") == "ok"
    runs = df.group_by(RUN, maintain_order=False).agg(
        _first=pl.col("_row").min(),
        diverged=(pl.col("status") == "diverged").any(),
        final_accuracy=pl.col("test_accuracy").last(),
        best_accuracy=pl.col("test_accuracy").filter(ok).max(),
        rounds_to_target=pl.col("round").filter(ok & (pl.col("test_accuracy") >= pl.col("target"))).min(),
        uplink_floats=pl.col("uplink_floats").last(),
        rounds=pl.col("round").max(),
        target=pl.col("target").first(),
    )
    return runs.sort("_first").drop("_first")


def summarize(df: pl.DataFrame, targets: float | Mapping[str, float | None] | None = None) -> pl.DataFrame:
    """The numeric table: one row per (dataset, partition, algorithm), columns :data:`CSV_COLUMNS`.
    Statistics use the runs that did not diverge only."""
    runs = run_stats(df, targets)
    ok = ~pl.col("diverged")
    out = runs.group_by(GROUP, maintain_order=True).agg(
        n_seeds=pl.len().cast(pl.Int64),
        n_diverged=pl.col("diverged").sum().cast(pl.Int64),
        final_accuracy_mean=pl.col("final_accuracy").filter(ok).mean(),
        final_accuracy_std=pl.col("final_accuracy").filter(ok).std(ddof=1),
        best_accuracy_mean=pl.col("best_accuracy").filter(ok).mean(),
        best_accuracy_std=pl.col("best_accuracy").filter(ok).std(ddof=1),
        target_accuracy=pl.col("target").first(),
        rounds_to_target_mean=pl.col("rounds_to_target").filter(ok).cast(pl.Float64).mean(),
        n_reached_target=pl.col("rounds_to_target").filter(ok).is_not_null().sum().cast(pl.Int64),
        uplink_floats_mean=pl.col("uplink_floats").filter(ok).cast(pl.Float64).mean(),
        rounds=pl.col("rounds").filter(ok).max(),
    )
    return out.select(CSV_COLUMNS)


# ----------------------------------------------------------------------------------------------
# Markdown


def _pct(mean: float | None, std: float | None, decimals: int = 2) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    s = f"{100 * mean:.{decimals}f}"
    if std is not None and not math.isnan(std):
        s += f" ± {100 * std:.{decimals}f}"
    return s


def _si(x: float | None) -> str:
    """1234567 -> '1.23M' (three significant digits)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}"


def _target_label(targets: pl.Series) -> str:
    vals = sorted({v for v in targets.to_list() if v is not None})
    if len(vals) == 1:
        return f"rounds to {100 * vals[0]:g}%"
    return "rounds to target"


def markdown_table(summary: pl.DataFrame, title: str | None = None, decimals: int = 2) -> str:
    """The readable table of :func:`summarize`'s output, with aligned columns; accuracies in %
    with ``decimals`` decimal places (config ``tables.decimals``)."""
    has_target = summary.get_column("target_accuracy").is_not_null().any()
    per_dataset_target = summary.get_column("target_accuracy").drop_nulls().n_unique() > 1
    header = ["dataset", "partition", "algorithm", "final acc. (%)", "best acc. (%)"]
    if has_target:
        header.append(_target_label(summary.get_column("target_accuracy")))
    header += ["uplink floats", "seeds"]
    right = {3, 4, 5, 6} if has_target else {3, 4, 5}

    rows = []
    for r in summary.iter_rows(named=True):
        n, nd = r["n_seeds"], r["n_diverged"]
        all_div = nd == n
        div = f"diverged ({nd}/{n} seeds)"
        final = div if all_div else _pct(r["final_accuracy_mean"], r["final_accuracy_std"], decimals)
        best = div if all_div else _pct(r["best_accuracy_mean"], r["best_accuracy_std"], decimals)
        row = [r["dataset"], r["partition"], r["algorithm"], final, best]
        if has_target:
            if r["target_accuracy"] is None:
                cell = "—"
            elif all_div:
                cell = div
            else:
                ok_n = n - nd
                k = r["n_reached_target"]
                cell = f"{r['rounds_to_target_mean']:.1f} ({k}/{ok_n})" if k else f"not reached (0/{ok_n})"
                if per_dataset_target:
                    cell += f" @{100 * r['target_accuracy']:g}%"
            row.append(cell)
        row.append(div if all_div else _si(r["uplink_floats_mean"]))
        row.append(f"{n}" if nd == 0 else f"{n}, {div}")
        rows.append(row)

    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]

    def line(cells):
        return "| " + " | ".join(
            str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    out = []
    if title:
        out += [f"# {title}", ""]
    out += [line(header), rule, *(line(r) for r in rows), ""]
    out.append(
        "Accuracy: test accuracy in %, mean ± sd over seeds (sd with ddof = 1); final = last evaluated "
        "round, best = maximum over evaluated rounds."
    )
    if has_target:
        out.append(
            "Rounds to target: first evaluated round with test accuracy ≥ the target, mean over the seeds "
            "that reached it (reached/seeds in brackets)."
        )
    out.append("Uplink floats: total scalars sent client → server over the run (mean over seeds).")
    out.append("Diverged runs (NaN/inf loss or parameters) are counted in the seeds column and never averaged in.")
    return "\n".join(out) + "\n"



def write_tables(
    df: pl.DataFrame,
    md_path: str | os.PathLike,
    csv_path: str | os.PathLike,
    targets: float | Mapping[str, float | None] | None = None,
    title: str | None = None,
    decimals: int = 2,
) -> pl.DataFrame:
    """Write one experiment's table as Markdown and CSV; return the numeric summary.

    Args:
        df: the collected metrics of one experiment (rows of METRICS_SCHEMA).
        targets: target test accuracy in (0, 1], one for all datasets or per dataset id; None
            leaves out rounds-to-target.
        title: heading of the Markdown file (e.g. the experiment name).
        decimals: decimal places of the accuracies (in %) in the Markdown table; the CSV keeps
            full precision.

    Raises:
        ValueError: ``df`` is empty.
    """
    if df.height == 0:
        raise ValueError("write_tables: no metrics rows (is the experiment name right?)")
    summary = summarize(df, targets)
    with atomic_write(md_path) as tmp:
        tmp.write_text(markdown_table(summary, title, decimals=decimals))
    with atomic_write(csv_path) as tmp:
        summary.write_csv(tmp)
    return summary
