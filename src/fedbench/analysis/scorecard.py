"""The reproduction scorecard: each paper's claims, decided on the cells of a run.

A paper module (:mod:`fedbench.papers`) declares its claims with ``claims()``: a list of
:class:`Claim`, each what the paper says (with its section, table or figure), the quantity our
cells measure, the rule that decides it, and ``decide``, a function of the run's :class:`Evidence`
(the collected metrics of the paper's experiments, its cells, its paper tables) that returns a
:class:`Verdict`:

- ``holds``: the rule is met (the margin says by how much);
- ``fails``: it is not (the margin says by how much);
- ``not decidable``: the run lacks what the rule needs, e.g. a quick file on embedded data where
  the claim is about the paper's datasets, or cells that did not run. The note says what is missing.
  A claim is never passed for want of evidence.

:func:`evaluate` decides every claim of every paper that has cells; :func:`write_scorecard`
writes ``results/tables/scorecard.{md,html,csv}`` (rule scorecard, ``rules/scorecard.smk``).
"""

from __future__ import annotations

import html
import math
import os
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from fedbench.files import atomic_write

__all__ = ["HOLDS", "FAILS", "UNDECIDED", "Verdict", "Claim", "Evidence", "evaluate", "scorecard_frame",
           "markdown_scorecard", "html_scorecard", "write_scorecard", "cell_name", "ratio_text"]

HOLDS, FAILS, UNDECIDED = "holds", "fails", "not decidable"
VERDICTS = (HOLDS, FAILS, UNDECIDED)
#: The CSV's columns, in order.
COLUMNS = ("paper", "claim", "where", "says", "paper_value", "measure", "rule", "ours", "verdict", "margin",
           "cells", "note")


@dataclass(frozen=True)
class Verdict:
    """The decision on one claim.

    Attributes:
        status: :data:`HOLDS`, :data:`FAILS` or :data:`UNDECIDED`.
        ours: our number(s) behind it, as text ("" when none).
        margin: by how much it holds or fails (text; "" when not decidable).
        cells: the cells (or groups of cells) the decision rests on.
        note: why it is not decidable, or a detail a reader needs.
    """

    status: str
    ours: str = ""
    margin: str = ""
    cells: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self):
        if self.status not in VERDICTS:
            raise ValueError(f"Verdict status must be one of {VERDICTS}, got {self.status!r}")

    @classmethod
    def decide(cls, ok: bool, ours: str, margin: str, cells: Sequence[str] = (), note: str = "") -> Verdict:
        """``holds`` when ``ok``, else ``fails``."""
        return cls(HOLDS if ok else FAILS, ours, margin, tuple(cells), note)

    @classmethod
    def undecidable(cls, note: str, cells: Sequence[str] = (), ours: str = "") -> Verdict:
        """Not decidable at this run's scale: ``note`` says what is missing."""
        return cls(UNDECIDED, ours, "", tuple(cells), note)


@dataclass
class Evidence:
    """What a paper's claims are decided on.

    Attributes:
        metrics: the collected metrics of the paper's experiments (``results/metrics/<e>.parquet``,
            concatenated; empty when none ran).
        cells: the paper's cells (the workflow's cell specs, or the rows its tables read).
        tables: {paper table name: its long CSV as written by rule paper_table}, those present.
    """

    metrics: pl.DataFrame = field(default_factory=pl.DataFrame)
    cells: list[Mapping] = field(default_factory=list)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    """One claim of a paper, as code.

    Attributes:
        id: unique over all papers (start it with the paper's key).
        paper: the paper's key.
        where: the paper's section, table or figure ("§5", "Fig. 2", "Table 2").
        says: what the paper says (quoted or paraphrased).
        paper_value: the paper's number, or its qualitative statement in short.
        measure: the quantity our cells measure.
        rule: the rule that decides it.
        decide: (Evidence) -> Verdict.
    """

    id: str
    paper: str
    where: str
    says: str
    paper_value: str
    measure: str
    rule: str
    decide: Callable[[Evidence], Verdict]


def cell_name(experiment: str, dataset: str, partition: str, algorithm: str, seed=None) -> str:
    """How the scorecard names a cell (``experiment/dataset/partition/algorithm[/seed=s]``): its run directory."""
    name = f"{experiment}/{dataset}/{partition}/{algorithm}"
    return name if seed is None else f"{name}/seed={seed}"


def ratio_text(x: float) -> str:
    """A ratio as "1.23×" (3 significant digits)."""
    return "—" if x is None or not math.isfinite(x) else f"{x:.3g}×"


def evaluate(claims: Sequence[Claim], evidence: Evidence) -> list[dict]:
    """One row per claim (the columns of :data:`COLUMNS`). A claim whose ``decide`` raises is
    ``not decidable`` with the error in its note (never a pass); the traceback goes to stderr."""
    rows = []
    for c in claims:
        try:
            v = c.decide(evidence)
            if not isinstance(v, Verdict):
                raise TypeError(f"decide returned {type(v).__name__}, not a Verdict")
        except Exception as e:  # noqa: BLE001 (a broken rule must show in its row, not stop the others)
            traceback.print_exc()
            v = Verdict.undecidable(f"the rule raised {type(e).__name__}: {e}")
        rows.append({"paper": c.paper, "claim": c.id, "where": c.where, "says": c.says, "paper_value": c.paper_value,
                     "measure": c.measure, "rule": c.rule, "ours": v.ours, "verdict": v.status, "margin": v.margin,
                     "cells": "; ".join(v.cells), "note": v.note})
    return rows


def scorecard_frame(rows: Sequence[Mapping]) -> pl.DataFrame:
    """The rows of :func:`evaluate` (of every paper) as a frame with the columns of :data:`COLUMNS`."""
    return pl.DataFrame([{k: str(r.get(k, "")) for k in COLUMNS} for r in rows],
                        schema={k: pl.String for k in COLUMNS}, orient="row")


def _counts(frame: pl.DataFrame) -> str:
    n = {v: frame.filter(pl.col("verdict") == v).height for v in VERDICTS}
    return f"{frame.height} claims: {n[HOLDS]} hold, {n[FAILS]} fail, {n[UNDECIDED]} not decidable at this run's scale"


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _verdict_text(r: Mapping) -> str:
    v = {HOLDS: "✅ holds", FAILS: "❌ fails", UNDECIDED: "— not decidable"}[r["verdict"]]
    detail = r["margin"] if r["verdict"] != UNDECIDED else r["note"]
    return f"{v}: {detail}" if detail else v


def _cells_text(cells: str, limit: int = 4) -> str:
    parts = [c for c in cells.split("; ") if c]
    if len(parts) <= limit:
        return ", ".join(parts) or "—"
    return ", ".join(parts[:limit]) + f" and {len(parts) - limit} more (CSV)"


def markdown_scorecard(frame: pl.DataFrame, names: Mapping[str, str] | None = None,
                       command: str | None = None) -> str:
    """The scorecard as Markdown: a count line, then one row per claim (paper, where, the claim,
    the paper's number, ours, the verdict with its margin or why it is not decidable, the cells)."""
    names = names or {}
    lines = ["# Reproduction scorecard: the papers' claims, decided on this run", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    if frame.height == 0:
        return "\n".join(lines + ["No experiment of this run feeds a paper (an experiment's `paper` key): "
                                  "no claim to decide.", ""])
    lines += [_counts(frame) + ".", ""]
    lines.append("| paper | where | claim | paper | ours | verdict | cells |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in frame.iter_rows(named=True):
        lines.append("| " + " | ".join(_md_cell(x) for x in (
            names.get(r["paper"], r["paper"]), r["where"], r["says"], r["paper_value"], r["ours"] or "—",
            _verdict_text(r), _cells_text(r["cells"]))) + " |")
    lines += ["", "Each claim's quantity and rule: the CSV (columns measure, rule) and the paper's module "
              "(fedbench.papers.<paper>, claims()). Not decidable: the run lacks what the rule needs (the claim's "
              "dataset, scale or cells), never counted as a pass.", ""]
    return "\n".join(lines)


_STYLE = {HOLDS: "color:#176c2e", FAILS: "color:#b3261e;font-weight:bold", UNDECIDED: "color:#6b6b6b"}


def html_scorecard(frame: pl.DataFrame, names: Mapping[str, str] | None = None, command: str | None = None) -> str:
    """The scorecard as one HTML fragment (``div.fedbench-table``), verdicts coloured, each row's rule
    and measure in a tooltip; it is the top of the report's landing page."""
    names = names or {}
    e = html.escape
    out = ['<div class="fedbench-table fedbench-scorecard">',
           "<h3>Reproduction scorecard: the papers' claims, decided on this run</h3>"]
    if command:
        out.append(f"<p>Command: <code>{e(command)}</code></p>")
    if frame.height == 0:
        out.append("<p>No experiment of this run feeds a paper: no claim to decide.</p></div>")
        return "\n".join(out) + "\n"
    out.append(f"<p>{e(_counts(frame))}.</p>")
    out.append("<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in
                                              ("paper", "where", "claim", "paper", "ours", "verdict", "cells"))
               + "</tr></thead><tbody>")
    for r in frame.iter_rows(named=True):
        tip = e(f"measure: {r['measure']}\nrule: {r['rule']}", quote=True)
        out.append(f'<tr title="{tip}">' + "".join(f"<td>{e(str(x))}</td>" for x in (
            names.get(r["paper"], r["paper"]), r["where"], r["says"], r["paper_value"], r["ours"] or "—"))
            + f'<td style="{_STYLE[r["verdict"]]}">{e(_verdict_text(r))}</td>'
            + f"<td>{e(_cells_text(r['cells']))}</td></tr>")
    out.append("</tbody></table>")
    out.append("<p>Hover a row for the quantity measured and the rule that decides it. Not decidable: the run lacks "
               "what the rule needs (the claim's dataset, scale or cells), never counted as a pass.</p></div>")
    return "\n".join(out) + "\n"


def write_scorecard(frame: pl.DataFrame, md_path: str | os.PathLike, html_path: str | os.PathLike,
                    csv_path: str | os.PathLike, names: Mapping[str, str] | None = None,
                    command: str | None = None) -> None:
    """Write the scorecard's three files."""
    for path, text in ((md_path, markdown_scorecard(frame, names, command)),
                       (html_path, html_scorecard(frame, names, command))):
        with atomic_write(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    with atomic_write(csv_path) as tmp:
        frame.write_csv(tmp)
