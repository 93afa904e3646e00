"""Comparison tables of one experiment from the collected metrics (``results/metrics/<experiment>.parquet``).

One row per (dataset, partition, algorithm), statistics over seeds:

- final test accuracy: at the last evaluated round of each run; mean ± sd over seeds;
- best test accuracy: the maximum over evaluated rounds; mean ± sd over seeds;
- rounds to target: the first evaluated round whose test accuracy is >= the target; the mean
  over the seeds that reached it, with how many did (``12.5 (2/3)``; ``not reached (0/3)``);
- uplink floats: total scalars sent client → server over the run (mean over seeds).

A run of a cell with ``eval_initial`` starts with the row of round 0, the initial model θ⁰
(:mod:`fedbench.metrics.schema`). It is an evaluated round like any other: it counts for best
(the FedAc paper's best over time includes t = 0: Yuan & Ma, "Federated Accelerated Stochastic
Gradient Descent", NeurIPS 2020, §5), and rounds to target is 0 exactly when θ⁰ already meets the
target (right: no round was needed), else the first round t ≥ 1 that does. Final, uplink floats
and the last round are unchanged by it (nothing is sent in round 0).

sd is the sample standard deviation (ddof = 1), so one seed shows no sd. A run whose status is
``diverged`` is never averaged in: the row says ``diverged (n/N seeds)``, and when every seed
diverged the statistics read ``diverged (N/N seeds)``.

The Markdown table (percentages, aligned columns) is for reading; the CSV keeps the numbers
(accuracies as fractions in [0, 1]) for further analysis. The same table is rendered as HTML (for
the Snakemake report) and as LaTeX (booktabs, for a paper) from the Markdown text
(:func:`markdown_to_html`, :func:`markdown_to_latex`, which also serve the paper tables).

The spread after "±" is the sd over seeds (config ``tables.interval: sd``, the default) or the
half-width of the 95 % t-interval of the mean over the non-diverged seeds (``ci95``: t with
n − 1 degrees of freedom; the CSV then gains ``final_accuracy_ci95`` and ``best_accuracy_ci95``).
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Mapping

import polars as pl

from fedbench.analysis.style import format_mean_sd
from fedbench.files import atomic_write

GROUP = ["dataset", "partition", "algorithm"]
RUN = [*GROUP, "seed"]
CSV_COLUMNS = [
    "dataset", "partition", "algorithm", "n_seeds", "n_diverged",
    "final_accuracy_mean", "final_accuracy_std", "best_accuracy_mean", "best_accuracy_std",
    "target_accuracy", "rounds_to_target_mean", "n_reached_target", "uplink_floats_mean", "rounds",
    "final_train_loss_mean", "final_train_loss_std", "final_suboptimality_mean", "final_suboptimality_std",
]
INTERVALS = ("sd", "ci95")  # config tables.interval
CI_COLUMNS = ["final_accuracy_ci95", "best_accuracy_ci95"]


def ci95_halfwidth(std: float | None, n: int) -> float | None:
    """Half-width of the 95 % t-interval of a mean over ``n`` values with sample sd ``std``
    (t quantile 0.975 with n − 1 degrees of freedom); None with fewer than 2 values."""
    if std is None or n < 2 or math.isnan(std):
        return None
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1) * std / math.sqrt(n))


def _check_interval(interval: str) -> None:
    if interval not in INTERVALS:
        raise ValueError(f"tables.interval must be one of {', '.join(INTERVALS)}, not {interval!r}")


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
        final_train_loss=pl.col("train_loss").last(),
        final_suboptimality=(pl.col("suboptimality").last() if "suboptimality" in df.columns
                             else pl.lit(None, pl.Float64)),
    )
    return runs.sort("_first").drop("_first")


def summarize(df: pl.DataFrame, targets: float | Mapping[str, float | None] | None = None,
              interval: str = "sd") -> pl.DataFrame:
    """The numeric table: one row per (dataset, partition, algorithm), columns :data:`CSV_COLUMNS`
    (+ :data:`CI_COLUMNS` with ``interval="ci95"``). Statistics use the runs that did not diverge only."""
    _check_interval(interval)
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
        final_train_loss_mean=pl.col("final_train_loss").filter(ok).cast(pl.Float64).mean(),
        final_train_loss_std=pl.col("final_train_loss").filter(ok).cast(pl.Float64).std(ddof=1),
        final_suboptimality_mean=pl.col("final_suboptimality").filter(ok).cast(pl.Float64).mean(),
        final_suboptimality_std=pl.col("final_suboptimality").filter(ok).cast(pl.Float64).std(ddof=1),
    )
    out = out.select(CSV_COLUMNS)
    if interval == "ci95":
        n_ok = (out.get_column("n_seeds") - out.get_column("n_diverged")).to_list()
        out = out.with_columns(
            pl.Series(f"{m}_accuracy_ci95", dtype=pl.Float64,
                      values=[ci95_halfwidth(s, n) for s, n in zip(out.get_column(f"{m}_accuracy_std"), n_ok)])
            for m in ("final", "best")
        )
    return out


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


def _measured(summary: pl.DataFrame, column: str) -> bool:
    """Whether ``column`` has a finite value in some row (an experiment without accuracy, e.g. the
    quadratic model, has none)."""
    col = summary.get_column(column)
    return bool(col.is_not_null().any()) and bool(col.drop_nulls().is_finite().any())


def markdown_table(summary: pl.DataFrame, title: str | None = None, decimals: int = 2, interval: str = "sd") -> str:
    """The readable table of :func:`summarize`'s output, with aligned columns: the result columns
    the experiment measures: accuracies in % with ``decimals`` decimal places (config
    ``tables.decimals``) when any run records one, the final suboptimality when an F* exists,
    the final train loss when no accuracy is recorded (both with two significant digits of their
    spread: :func:`fedbench.analysis.style.format_mean_sd`); after "±" the sd over seeds
    (``interval="sd"``) or the 95 % t-interval's half-width (``"ci95"``: ``summary`` needs
    :data:`CI_COLUMNS`, from ``summarize(..., interval="ci95")``). The notes say "one seed" when
    every row has one seed (no spread)."""
    _check_interval(interval)
    spread = "std" if interval == "sd" else "ci95"
    has_acc = _measured(summary, "final_accuracy_mean") or not (summary.get_column("n_diverged")
                                                               < summary.get_column("n_seeds")).any()
    has_sub = "final_suboptimality_mean" in summary.columns and _measured(summary, "final_suboptimality_mean")
    has_loss = not has_acc and "final_train_loss_mean" in summary.columns
    has_target = has_acc and summary.get_column("target_accuracy").is_not_null().any()
    per_dataset_target = summary.get_column("target_accuracy").drop_nulls().n_unique() > 1
    one_seed = bool((summary.get_column("n_seeds") - summary.get_column("n_diverged") <= 1).all())
    header = ["dataset", "partition", "algorithm"]
    if has_acc:
        header += ["final acc. (%)", "best acc. (%)"]
    if has_target:
        header.append(_target_label(summary.get_column("target_accuracy")))
    if has_sub:
        header.append("final suboptimality")
    if has_loss:
        header.append("final train loss")
    header += ["uplink floats", "seeds"]
    right = set(range(3, len(header) - 1))

    rows = []
    for r in summary.iter_rows(named=True):
        n, nd = r["n_seeds"], r["n_diverged"]
        all_div = nd == n
        div = f"diverged ({nd}/{n} seeds)"
        row = [r["dataset"], r["partition"], r["algorithm"]]
        if has_acc:
            row.append(div if all_div else _pct(r["final_accuracy_mean"], r[f"final_accuracy_{spread}"], decimals))
            row.append(div if all_div else _pct(r["best_accuracy_mean"], r[f"best_accuracy_{spread}"], decimals))
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
        for on, m in ((has_sub, "final_suboptimality"), (has_loss, "final_train_loss")):
            if on:
                sd = r[f"{m}_std"]
                if interval == "ci95":
                    sd = ci95_halfwidth(sd, n - nd)
                row.append(div if all_div else format_mean_sd(r[f"{m}_mean"], sd, sci=m == "final_suboptimality"))
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
    if one_seed:
        stat = "one seed per row (no spread)"
    elif interval == "sd":
        stat = "mean ± sd over seeds (sd with ddof = 1)"
    else:
        stat = ("mean ± half-width of the 95% t-interval of the mean over the non-diverged seeds (t with n − 1 "
                "degrees of freedom; none with one seed)")
    if has_acc:
        out.append(
            f"Accuracy: test accuracy in %, {stat}; final = last evaluated round, best = maximum over evaluated "
            "rounds (round 0, the initial model, among them when evaluated: eval_initial)."
        )
    if has_sub:
        out.append(f"Suboptimality: F(w) − F* at the last evaluated round, {stat}.")
    if has_loss:
        out.append(f"Train loss at the last evaluated round, {stat}: this experiment records no accuracy "
                   "(e.g. the quadratic model).")
    if has_target:
        out.append(
            "Rounds to target: first evaluated round with test accuracy ≥ the target, mean over the seeds "
            "that reached it (reached/seeds in brackets); 0 when the initial model already meets it."
        )
    out.append("Uplink floats: total scalars sent client → server over the run"
               + ("." if one_seed else " (mean over seeds)."))
    out.append("Diverged runs (NaN/inf loss or parameters, or collapsed: a finite loss far above ln C or chance "
               "accuracy, see summary.json's status_reason) are counted in the seeds column and never averaged in.")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------
# HTML and LaTeX, from the Markdown text (this module's tables and the paper tables alike)


def parse_markdown(md: str) -> dict:
    """Split a Markdown text of one pipe table into ``title`` (the ``# `` heading or None),
    ``header``, ``align`` ("l" or "r" per column, from the rule line's ``:``), ``rows`` and
    ``notes`` (the other non-empty lines, in order).

    Raises:
        ValueError: no pipe table, or a row with another number of cells than the header.
    """
    title, header, align, rows, notes = None, None, None, [], []
    for line in md.splitlines():
        text = line.strip()
        if not text:
            continue
        if text.startswith("|"):
            cells = [c.strip() for c in text.strip("|").split("|")]
            if header is None:
                header = cells
            elif align is None and all(re.fullmatch(r":?-+:?", c) for c in cells):
                align = ["r" if c.endswith(":") else "l" for c in cells]
            else:
                if len(cells) != len(header):
                    raise ValueError(f"table row with {len(cells)} cells, header has {len(header)}: {text}")
                rows.append(cells)
        elif text.startswith("# ") and title is None and header is None:
            title = text[2:].strip()
        else:
            notes.append(text)
    if header is None:
        raise ValueError("no Markdown pipe table in the text")
    return {"title": title, "header": header, "align": align or ["l"] * len(header), "rows": rows, "notes": notes}


def head_rows(md: str, max_rows: int, path: str) -> str:
    """A Markdown text of one pipe table (as :func:`parse_markdown` reads) with at most
    ``max_rows`` of its data rows, then a line saying how many more rows ``path`` holds; the
    heading and notes are kept. For the console, where a sweep's table can have thousands of rows.

    Raises:
        ValueError: ``max_rows`` < 1.
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1 (got {max_rows})")
    out, table_lines, dropped = [], 0, 0
    for line in md.rstrip().splitlines():
        if line.lstrip().startswith("|"):
            table_lines += 1
            if table_lines > 2 + max_rows:  # header, rule line, then the data rows
                dropped += 1
                continue
        elif dropped and table_lines:
            out.append(f"… {dropped} more rows in {path}")
            table_lines, dropped = 0, 0
        out.append(line)
    if dropped:
        out.append(f"… {dropped} more rows in {path}")
    return "\n".join(out)


#: Scoped to the page's one ``div.fedbench-table``, so the page can also be embedded in another
#: (the report's landing page, workflow/report/workflow.rst) without restyling it.
_HTML_STYLE = """
.fedbench-table { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1rem 0; color: #222; }
.fedbench-table h1 { font-size: 1.2rem; margin: 0 0 .6rem; }
.fedbench-table table { border-collapse: collapse; font-size: .9rem; margin: 0; }
.fedbench-table th, .fedbench-table td { padding: .25rem .6rem; border-bottom: 1px solid #ddd; white-space: nowrap; }
.fedbench-table th { border-bottom: 2px solid #444; text-align: left; }
.fedbench-table td.r, .fedbench-table th.r { text-align: right; font-variant-numeric: tabular-nums; }
.fedbench-table tr:hover td { background: #f3f6fa; }
.fedbench-table td.diverged { color: #b22222; }
.fedbench-table p.note { font-size: .8rem; color: #555; max-width: 60rem; margin: .3rem 0; }
"""


def markdown_to_html(md: str) -> str:
    """A standalone HTML page of a Markdown pipe table (:func:`parse_markdown`): the heading,
    the table (right-aligned numeric columns, cells saying "diverged" in red) and the notes, in
    one ``div.fedbench-table`` that the page's style is scoped to."""
    t = parse_markdown(md)
    esc = html.escape

    def cell(tag, text, a):
        cls = [a] if a == "r" else []
        if tag == "td" and "diverged" in text:
            cls.append("diverged")
        attr = f' class="{" ".join(cls)}"' if cls else ""
        return f"<{tag}{attr}>{esc(text)}</{tag}>"

    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{esc(t['title'] or 'table')}</title><style>{_HTML_STYLE}</style></head><body>",
           '<div class="fedbench-table">']
    if t["title"]:
        out.append(f"<h1>{esc(t['title'])}</h1>")
    out.append("<table><thead><tr>" + "".join(cell("th", h, a) for h, a in zip(t["header"], t["align"]))
               + "</tr></thead><tbody>")
    for r in t["rows"]:
        out.append("<tr>" + "".join(cell("td", c, a) for c, a in zip(r, t["align"])) + "</tr>")
    out.append("</tbody></table>")
    out += [f'<p class="note">{esc(n)}</p>' for n in t["notes"]]
    out.append("</div></body></html>")
    return "\n".join(out) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "±": r"$\pm$", "≥": r"$\geq$", "≤": r"$\leq$", "→": r"$\rightarrow$", "×": r"$\times$",
    "—": "---", "–": "--", "−": r"$-$", "θ": r"$\theta$", "Δ": r"$\Delta$", "λ": r"$\lambda$",
    "μ": r"$\mu$", "τ": r"$\tau$", "η": r"$\eta$", "α": r"$\alpha$", "β": r"$\beta$",
}


def latex_escape(text: str) -> str:
    r"""``text`` as LaTeX text: the special characters escaped, ``±`` as ``$\pm$``, a few other
    symbols and Greek letters in math mode, dashes as ``---``/``--``."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def markdown_to_latex(md: str, label: str | None = None) -> str:
    r"""A LaTeX ``table`` of a Markdown pipe table (:func:`parse_markdown`) with booktabs rules
    (``\toprule``/``\midrule``/``\bottomrule``; needs ``\usepackage{booktabs}``): the heading as
    the caption, the notes in small print below the tabular."""
    t = parse_markdown(md)
    lines = [
        r"% fedbench table; needs \usepackage{booktabs} (and \usepackage[T1]{fontenc} for the text)",
        r"\begin{table}[htbp]",
        r"\centering",
    ]
    if t["title"]:
        lines.append(rf"\caption{{{latex_escape(t['title'])}}}")
    if label:
        lines.append(rf"\label{{{re.sub(r'[^A-Za-z0-9:_.-]', '-', label)}}}")
    lines += [
        r"\begin{tabular}{" + "".join(t["align"]) + "}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in t["header"]) + r" \\",
        r"\midrule",
        *(" & ".join(latex_escape(c) for c in r) + r" \\" for r in t["rows"]),
        r"\bottomrule",
        r"\end{tabular}",
    ]
    if t["notes"]:
        lines.append(r"\par\smallskip{\footnotesize " + r" \par ".join(latex_escape(n) for n in t["notes"]) + r"\par}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def write_tables(
    df: pl.DataFrame,
    md_path: str | os.PathLike,
    csv_path: str | os.PathLike,
    targets: float | Mapping[str, float | None] | None = None,
    title: str | None = None,
    decimals: int = 2,
    interval: str = "sd",
    html_path: str | os.PathLike | None = None,
    tex_path: str | os.PathLike | None = None,
) -> pl.DataFrame:
    """Write one experiment's table as Markdown and CSV (and, when their paths are given, as an
    HTML page and a LaTeX table of the Markdown text); return the numeric summary.

    Args:
        df: the collected metrics of one experiment (rows of METRICS_SCHEMA).
        targets: target test accuracy in (0, 1], one for all datasets or per dataset id; None
            leaves out rounds-to-target.
        title: heading of the Markdown file (e.g. the experiment name).
        decimals: decimal places of the accuracies (in %) in the Markdown table; the CSV keeps
            full precision.
        interval: the spread after "±": ``"sd"`` or ``"ci95"`` (config ``tables.interval``).

    Raises:
        ValueError: ``df`` is empty, or an unknown ``interval``.
    """
    if df.height == 0:
        raise ValueError("write_tables: no metrics rows (is the experiment name right?)")
    summary = summarize(df, targets, interval=interval)
    md = markdown_table(summary, title, decimals=decimals, interval=interval)
    with atomic_write(md_path) as tmp:
        tmp.write_text(md)
    with atomic_write(csv_path) as tmp:
        summary.write_csv(tmp)
    write_renderings(md, html_path, tex_path, label=f"tab:{title}" if title else None)
    return summary


def write_renderings(md: str, html_path: str | os.PathLike | None = None, tex_path: str | os.PathLike | None = None,
                     label: str | None = None) -> None:
    """Write the HTML page and/or the LaTeX table of a Markdown table text (paths None: skipped)."""
    if html_path is not None:
        with atomic_write(html_path) as tmp:
            tmp.write_text(markdown_to_html(md), encoding="utf-8")
    if tex_path is not None:
        with atomic_write(tex_path) as tmp:
            tmp.write_text(markdown_to_latex(md, label=label), encoding="utf-8")
