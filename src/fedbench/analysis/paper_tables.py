"""Tables in the layout of a paper, with the paper's numbers beside ours (no paper named here).

A paper module (:mod:`fedbench.papers`) describes each of its tables by a spec (a dict):

- ``title``: the Markdown heading;
- ``number``: the paper's table number (the ``table`` column of the reference CSV);
- ``metrics``: our metric columns, the first the main one (e.g. ``uplink_entropy_bits`` and
  ``uplink_entropy_bits_delta``); ``scale``: ours is divided by it (1e7 for a unit of 1e7, 0.01
  for a fraction shown in %);
- ``participation``: which cells it shows: ``"partial"`` (< 1), ``"full"`` (1) or ``"any"``;
- ``columns``: (algorithm label, the paper's name) in the paper's order;
- ``delta_columns``: the labels shown as "θ (Δ)": the main metric, and in brackets its
  ``<metric>_delta`` (the same messages with θ_k replaced by the update Δ_k); a run written
  before the Δ column existed shows "n/m" (not measured);
- ``row_metrics`` (optional): (metric, row name) when the layout has one row per metric;
- ``beside`` (optional): (metric, words, scale) of what the main metric was bought with, printed
  beside every one of our values, e.g. ``("test_accuracy", "acc.", 0.01)``: a communication count
  next to the final test accuracy (%) of the same runs, so that "less communication at comparable
  accuracy" reads off the table;
- ``notes``: lines printed under the table.

Which of our rows match a paper row: the same dataset id, partition id, participation and
algorithm label (a blank partition or participation in the reference matches any). The paper's
rows that we did not run are kept (ours "—"), and our rows that the paper lacks are added
(paper "—"), so the table always has the paper's layout.

Our value of a metric is its value at the last round of each run (seed), averaged over the seeds
that did not diverge; the ratio is ours / paper.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from fedbench.files import atomic_write

NOT_MEASURED = "n/m"
DASH = "—"
KEY = ["experiment", "dataset", "partition", "participation", "algorithm"]
CSV_COLUMNS = ["table", "experiment", "dataset", "partition", "participation", "rounds", "algorithm",
               "paper_algorithm", "metric", "unit", "ours", "n_seeds", "paper", "ratio"]


def load_reference(path: str | os.PathLike) -> pl.DataFrame:
    """A reference CSV of a paper (``fedbench/papers/reference/*.csv``; every column as text,
    ``value`` as float)."""
    ref = pl.read_csv(path, infer_schema=False)
    return ref.with_columns(pl.col("value").cast(pl.Float64))


def _ours(df: pl.DataFrame, cells: pl.DataFrame, metric: str, scale: float) -> pl.DataFrame:
    """Mean over non-diverged seeds of ``metric`` at each run's last round, scaled; KEY + rounds."""
    if metric not in df.columns or df.height == 0:
        return pl.DataFrame(schema={**{k: pl.String for k in KEY}, "rounds": pl.Int64, "ours": pl.Float64,
                                    "n_seeds": pl.Int64}).with_columns(pl.col("participation").cast(pl.Float64))
    last = (df.sort("round").group_by(["experiment", "dataset", "partition", "algorithm", "seed"])
            .agg(value=pl.col(metric).last(), rounds=pl.col("round").max(),
                 diverged=(pl.col("status") == "diverged").any()))
    last = (last.join(cells.with_row_index("_ord"), on=["experiment", "dataset", "partition", "algorithm"],
                      how="inner").sort(["_ord", "seed"]))
    ok = ~pl.col("diverged")
    return last.group_by(KEY, maintain_order=True).agg(
        rounds=pl.col("rounds").max(),
        ours=(pl.col("value").filter(ok).cast(pl.Float64) / scale).mean(),
        n_seeds=ok.sum().cast(pl.Int64),
    )


def _participation_ok(p: float, which: str) -> bool:
    return which == "any" or (which == "full") == (p >= 1.0)


def paper_table(df: pl.DataFrame, reference: pl.DataFrame, cells: list[dict], table: str,
                spec: Mapping) -> pl.DataFrame:
    """The long table of one paper table: one row per (row of the layout, algorithm column, metric),
    columns :data:`CSV_COLUMNS`.

    Args:
        df: collected metrics (``results/metrics.parquet`` rows), any experiments.
        reference: :func:`load_reference` of the table's CSV.
        cells: one dict per (experiment, dataset, partition, algorithm) with ``participation``
            (the cells of the experiments whose ``paper`` is this table's paper).
        table: the table's name (the ``table`` column of the result).
        spec: the table's spec (see the module docstring).
    """
    names = dict(spec["columns"])
    cells_df = pl.DataFrame(
        [{k: c[k] for k in ("experiment", "dataset", "partition", "algorithm")}
         | {"participation": float(c["participation"])} for c in cells
         if c["algorithm"] in names and _participation_ok(float(c["participation"]), spec["participation"])],
        schema={"experiment": pl.String, "dataset": pl.String, "partition": pl.String, "algorithm": pl.String,
                "participation": pl.Float64},
    ).unique(maintain_order=True)
    metrics = list(spec["metrics"])
    if spec.get("beside") and spec["beside"][0] not in metrics:
        metrics.append(spec["beside"][0])
    scales = {spec["beside"][0]: spec["beside"][2]} if spec.get("beside") else {}
    ref_t = reference.filter(pl.col("table") == str(spec["number"]))
    unit = ref_t.get_column("unit")[0] if ref_t.height else ""

    rows = []
    for metric in metrics:
        if metric in df.columns or metric == metrics[0]:
            ours = _ours(df if cells_df.height else df.head(0), cells_df, metric, scales.get(metric, spec["scale"]))
            if metric == metrics[0]:
                main_ours = ours
        else:  # a metric our runs did not record (e.g. a Δ entropy, train accuracy): our rows, no value
            ours = main_ours.with_columns(ours=pl.lit(None, pl.Float64), n_seeds=pl.lit(0, pl.Int64))
        ref_m = ref_t.filter(pl.col("metric") == metric)
        for r in ours.iter_rows(named=True):
            match = ref_m.filter(
                (pl.col("dataset") == r["dataset"]) & (pl.col("algorithm") == r["algorithm"])
                & ((pl.col("partition") == r["partition"]) | pl.col("partition").is_null())
                & (pl.col("participation").is_null()
                   | (pl.col("participation").cast(pl.Float64, strict=False) == r["participation"]))
            )
            paper = match.get_column("value")[0] if match.height else None
            rows.append({**r, "metric": metric, "paper": paper})
        # the paper's rows that we did not run
        have = {(r["dataset"], r["partition"], r["algorithm"]) for r in rows if r["metric"] == metric}
        have_ds_alg = {(r["dataset"], r["algorithm"]) for r in rows if r["metric"] == metric}
        for r in ref_m.iter_rows(named=True):
            if r["partition"] is None:
                if (r["dataset"], r["algorithm"]) in have_ds_alg:
                    continue
            elif (r["dataset"], r["partition"], r["algorithm"]) in have:
                continue
            rows.append({"experiment": None, "dataset": r["dataset"], "partition": r["partition"],
                         "participation": None if r["participation"] is None else float(r["participation"]),
                         "algorithm": r["algorithm"], "rounds": None if r["rounds"] is None else int(r["rounds"]),
                         "ours": None, "n_seeds": 0, "metric": metric, "paper": r["value"]})
    out = pl.DataFrame(rows, schema={"experiment": pl.String, "dataset": pl.String, "partition": pl.String,
                                     "participation": pl.Float64, "algorithm": pl.String, "rounds": pl.Int64,
                                     "ours": pl.Float64, "n_seeds": pl.Int64, "metric": pl.String,
                                     "paper": pl.Float64})
    out = out.with_columns(
        table=pl.lit(table),
        paper_algorithm=pl.col("algorithm").replace_strict(names, default=None),
        unit=pl.lit(unit),
        ratio=pl.when(pl.col("ours").is_not_null() & pl.col("paper").is_not_null() & (pl.col("paper") != 0))
        .then(pl.col("ours") / pl.col("paper")).otherwise(None),
    )
    return out.select(CSV_COLUMNS)


# ----------------------------------------------------------------------------------------------
# Markdown


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    if abs(x) >= 100:
        return f"{x:.2f}"
    return f"{x:.4g}"


def _cell(ours: float | None, paper: float | None, ratio: float | None) -> str:
    """'ours / paper (×ratio)', with '—' for a missing side."""
    s = f"{_num(ours)} / {_num(paper)}"
    if ratio is not None and not math.isnan(ratio):
        s += f" (×{ratio:.3f})"
    return s


def _split_label(p: str | None) -> str:
    return p if p else "(any)"


def markdown_paper_table(long: pl.DataFrame, spec: Mapping) -> str:
    """The paper's layout: one row per (split, dataset, participation, experiment), one column per
    method; each cell 'ours / paper (×ours/paper)'. The ``delta_columns`` show θ (Δ); with
    ``row_metrics``, one row per metric (e.g. test, train accuracy)."""
    row_metrics = spec.get("row_metrics") or [(spec["metrics"][0], None)]
    main = row_metrics[0][0]
    delta = main + "_delta"
    rowkey = ["partition", "dataset", "participation", "experiment"]
    keys = (long.filter(pl.col("metric") == main).select([*rowkey, "rounds"])
            .group_by(rowkey, maintain_order=True).agg(pl.col("rounds").max()))
    header = (["split", "dataset", "participation", "rounds", "experiment"]
              + (["metric"] if len(row_metrics) > 1 else []) + [name for _, name in spec["columns"]])
    lines = []
    for k, (metric, metric_name) in ((k, m) for k in keys.iter_rows(named=True) for m in row_metrics):
        sel = long.filter(
            pl.all_horizontal([(pl.col(c) == k[c]) if k[c] is not None else pl.col(c).is_null() for c in rowkey]))
        part = k["participation"]
        row = [_split_label(k["partition"]), k["dataset"], DASH if part is None else f"{100 * part:g}%",
               DASH if k["rounds"] is None else str(k["rounds"]), k["experiment"] or "(paper only)"]
        if metric_name is not None:
            row.append(metric_name)
        for label, _ in spec["columns"]:
            m = sel.filter((pl.col("algorithm") == label) & (pl.col("metric") == metric))
            if m.height == 0:
                row.append(DASH)
                continue
            r = m.row(0, named=True)
            text = _cell(r["ours"], r["paper"], r["ratio"])
            beside = ""
            if spec.get("beside") and r["ours"] is not None:
                b = sel.filter((pl.col("algorithm") == label) & (pl.col("metric") == spec["beside"][0]))
                bv = b.get_column("ours")[0] if b.height else None
                beside = f"; {spec['beside'][1]} {DASH if bv is None else f'{bv:.1f}%'}"
            if label in spec.get("delta_columns", ()):
                d = sel.filter((pl.col("algorithm") == label) & (pl.col("metric") == delta))
                dr = d.row(0, named=True) if d.height else {"ours": None, "paper": None, "ratio": None}
                ours_d = NOT_MEASURED if dr["ours"] is None and r["ours"] is not None else _num(dr["ours"])
                ratios = ([f"×{r['ratio']:.3f}"] if r["ratio"] is not None else []) + (
                    [f"Δ ×{dr['ratio']:.3f}"] if dr["ratio"] is not None else [])
                text = (f"{_num(r['ours'])} ({ours_d}) / {_num(r['paper'])} ({_num(dr['paper'])})"
                        + (f" ({'; '.join(ratios)})" if ratios else ""))
            row.append(text + beside)
        lines.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)] if lines else [len(h) for h in header]

    def fmt(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    out = [f"# {spec['title']}", "", fmt(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
           *(fmt(r) for r in lines), ""]
    seeds = {int(n) for n in long.filter(pl.col("ours").is_not_null()).get_column("n_seeds").to_list()}
    ours_words = ("the value at the last round of one seed" if seeds <= {1} else
                  "the value at the last round, mean over the seeds that did not diverge"
                  + (f" ({min(seeds)} to {max(seeds)})" if len(seeds) > 1 else f" ({seeds.pop()})"))
    out.append("Each cell: ours / the paper's (×ours/paper). \"—\": no value (not run here, or not in the paper). "
               f"Ours: {ours_words}.")
    if spec.get("beside"):
        metric, words, _ = spec["beside"]
        out.append(f"{words}: our final {metric.replace('_', ' ')} (%) of the same runs, beside each of our values: "
                   "what the communication bought.")
    out.extend(spec.get("notes", ()))
    return "\n".join(out) + "\n"


def write_paper_table(df: pl.DataFrame, reference_path: str | os.PathLike, cells: list[dict], table: str,
                      spec: Mapping, md_path: str | os.PathLike, csv_path: str | os.PathLike) -> pl.DataFrame:
    """Write one paper table as Markdown (the paper's layout) and CSV (long: :data:`CSV_COLUMNS`)."""
    long = paper_table(df, load_reference(reference_path), cells, table, spec)
    for path, text in ((Path(md_path), markdown_paper_table(long, spec)), (Path(csv_path), None)):
        with atomic_write(path) as tmp:
            if text is None:
                long.write_csv(tmp)
            else:
                tmp.write_text(text)
    return long
