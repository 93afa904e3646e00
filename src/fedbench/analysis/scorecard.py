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

A claim that no run can decide (a statement about the paper's own hardware, a proof, a figure
without numbers that no experiment of ours reproduces) is still a row: ``decide`` is None and
``no_run`` says why in one sentence, so the scorecard lists every claim the paper makes.

Every verdict carries the **scale** it was decided at (:data:`SCALES`): ``paper scale`` (the
paper's data set at the paper's rounds), ``reduced real data`` (real data, fewer samples, clients or
rounds than the paper), ``toy data`` (embedded or generated data: digits, Synthetic(α, β),
quadratics), or ``the paper's own numbers`` (:func:`paper_numbers_frame`). A claim that holds only
at toy scale is never counted as reproduced (:func:`summary_line`).

The same rule is applied to the numbers the paper itself reports (``on_paper``): run as
``python -m fedbench.analysis.scorecard --paper-numbers``. A rule that the paper's own numbers
break is declared so (``contradicted``) and its row says "contradicted by the paper's own ...":
a finding shown to the reader, never hidden by a widened tolerance.

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

__all__ = ["HOLDS", "FAILS", "UNDECIDED", "PAPER_SCALE", "REDUCED_REAL", "TOY", "PAPER_NUMBERS", "SCALES",
           "Verdict", "Claim", "Evidence", "evaluate", "paper_number_rows", "paper_numbers_frame", "scorecard_frame",
           "summary_line", "inventory_markdown", "markdown_scorecard", "html_scorecard", "write_scorecard",
           "cell_name", "ratio_text"]

HOLDS, FAILS, UNDECIDED = "holds", "fails", "not decidable"
VERDICTS = (HOLDS, FAILS, UNDECIDED)
#: The scales a verdict is decided at, from the most to the least faithful to the paper.
PAPER_SCALE, REDUCED_REAL, TOY = "paper scale", "reduced real data", "toy data"
PAPER_NUMBERS = "the paper's own numbers"
SCALES = (PAPER_SCALE, REDUCED_REAL, TOY, PAPER_NUMBERS)
#: The prefix of the margin of a rule that fails on the paper's own numbers.
CONTRADICTED = "contradicted by the paper's own"
#: The CSV's columns, in order.
COLUMNS = ("paper", "claim", "where", "says", "paper_value", "measure", "rule", "basis", "ours", "verdict",
           "scale", "margin", "cells", "note", "figure")


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
        scale: the scale of the experiments behind it (one of :data:`SCALES`; the scorecard
            decides each scale's experiments apart).
    """

    metrics: pl.DataFrame = field(default_factory=pl.DataFrame)
    cells: list[Mapping] = field(default_factory=list)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    scale: str = TOY


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
        decide: (Evidence) -> Verdict; None when no run can decide the claim (``no_run`` says why).
        basis: where each threshold and tolerance of ``rule`` comes from: the paper's sentence, or a
            measured seed spread with the command that measured it ("no threshold: ..." for an exact
            ordering or identity). Required when ``decide`` is set.
        on_paper: () -> Verdict: the same rule applied to the numbers the paper itself reports
            (its tables, figure values its text gives, FedAc's released runs); None when the paper
            gives no numbers for it.
        paper_source: what ``on_paper`` reads, e.g. "Table 2" or "released runs (Fig. 1)".
        contradicted: non-empty when the paper's own numbers break the rule: what they show. The
            test of every paper requires ``on_paper`` to fail exactly when this is set.
        no_run: why no run can decide the claim (one sentence), when ``decide`` is None.
        figure: the file name (``results/plots/paper/<figure>.png``) of the paper figure that shows
            the evidence, "" for none.
    """

    id: str
    paper: str
    where: str
    says: str
    paper_value: str
    measure: str
    rule: str
    decide: Callable[[Evidence], Verdict] | None
    basis: str = ""
    on_paper: Callable[[], Verdict] | None = None
    paper_source: str = ""
    contradicted: str = ""
    no_run: str = ""
    figure: str = ""

    def __post_init__(self):
        if (self.decide is None) == (not self.no_run):
            raise ValueError(f"claim {self.id}: give exactly one of decide (a rule) and no_run (why no run can "
                             "decide it)")
        if self.decide is not None and not self.basis:
            raise ValueError(f"claim {self.id}: basis is empty; name where each threshold comes from (the paper's "
                             "sentence or a measured seed spread with its command), or 'no threshold: ...'")
        if self.on_paper is not None and not self.paper_source:
            raise ValueError(f"claim {self.id}: on_paper needs paper_source (which of the paper's numbers it reads)")


def cell_name(experiment: str, dataset: str, partition: str, algorithm: str, seed=None) -> str:
    """How the scorecard names a cell (``experiment/dataset/partition/algorithm[/seed=s]``): its run directory."""
    name = f"{experiment}/{dataset}/{partition}/{algorithm}"
    return name if seed is None else f"{name}/seed={seed}"


def ratio_text(x: float) -> str:
    """A ratio as "1.23×" (3 significant digits)."""
    return "—" if x is None or not math.isfinite(x) else f"{x:.3g}×"


def _row(c: Claim, v: Verdict, scale: str) -> dict:
    return {"paper": c.paper, "claim": c.id, "where": c.where, "says": c.says, "paper_value": c.paper_value,
            "measure": c.measure, "rule": c.rule, "basis": c.basis, "ours": v.ours, "verdict": v.status,
            "scale": scale, "margin": v.margin, "cells": "; ".join(v.cells), "note": v.note, "figure": c.figure}


def _safely(c: Claim, fn: Callable[[], Verdict]) -> Verdict:
    try:
        v = fn()
        if not isinstance(v, Verdict):
            raise TypeError(f"decide returned {type(v).__name__}, not a Verdict")
        return v
    except Exception as e:  # noqa: BLE001 (a broken rule must show in its row, not stop the others)
        traceback.print_exc()
        return Verdict.undecidable(f"the rule raised {type(e).__name__}: {e}")


def evaluate(claims: Sequence[Claim], evidence: Evidence) -> list[dict]:
    """One row per claim (the columns of :data:`COLUMNS`), at ``evidence.scale``. A claim whose
    ``decide`` raises is ``not decidable`` with the error in its note (never a pass); the traceback
    goes to stderr. A claim no run can decide is ``not decidable`` with its ``no_run`` sentence."""
    rows = []
    for c in claims:
        if c.decide is None:
            v = Verdict.undecidable(f"no run can decide it: {c.no_run}")
        else:
            v = _safely(c, lambda c=c: c.decide(evidence))
        rows.append(_row(c, v, evidence.scale))
    return rows


def paper_number_rows(claims: Sequence[Claim]) -> list[dict]:
    """Each claim's rule applied to the paper's own reported numbers (``on_paper``), at scale
    :data:`PAPER_NUMBERS`. A rule that fails there has its margin start with "contradicted by the
    paper's own <paper_source>"; a claim without ``on_paper`` is not decidable (the paper gives no
    numbers for it, or no run can decide it)."""
    rows = []
    for c in claims:
        if c.on_paper is None:
            why = (f"no run can decide it: {c.no_run}" if c.decide is None
                   else "the paper reports no numbers this rule can be applied to")
            v = Verdict.undecidable(why)
        else:
            v = _safely(c, c.on_paper)
            if v.status == FAILS:
                v = Verdict(FAILS, v.ours, f"{CONTRADICTED} {c.paper_source}: {v.margin}", v.cells,
                            c.contradicted or v.note)
        rows.append(_row(c, v, PAPER_NUMBERS))
    return rows


def paper_numbers_frame(keys: Sequence[str] | None = None) -> pl.DataFrame:
    """Every claim of the papers ``keys`` (default: all, :data:`fedbench.papers.PAPERS` order),
    decided on the papers' own numbers (:func:`paper_number_rows`)."""
    import fedbench.papers as papers

    keys = papers.keys() if keys is None else list(keys)
    return scorecard_frame([r for k in keys for r in paper_number_rows(papers.get(k).claims())])


def scorecard_frame(rows: Sequence[Mapping]) -> pl.DataFrame:
    """The rows of :func:`evaluate` (of every paper) as a frame with the columns of :data:`COLUMNS`."""
    return pl.DataFrame([{k: str(r.get(k, "")) for k in COLUMNS} for r in rows],
                        schema={k: pl.String for k in COLUMNS}, orient="row")


def summary_line(frame: pl.DataFrame) -> str:
    """The count line: the rows, then what holds at each scale apart (a claim that holds only on toy
    data is not counted as reproduced), what fails and what is not decidable."""
    def n(verdict, scale=None):
        f = frame.filter(pl.col("verdict") == verdict)
        return (f if scale is None else f.filter(pl.col("scale") == scale)).height

    parts = [f"{n(HOLDS, PAPER_SCALE)} reproduced at paper scale",
             f"{n(HOLDS, REDUCED_REAL)} hold on reduced real data",
             f"{n(HOLDS, TOY)} hold on toy data only (not counted as reproduced)"]
    if frame.height and frame.filter(pl.col("scale") != PAPER_NUMBERS).height == 0:
        parts = [f"{n(HOLDS)} hold on the papers' own numbers"]
    contradicted = frame.filter((pl.col("verdict") == FAILS) & pl.col("margin").str.starts_with(CONTRADICTED)).height
    fails = f"{n(FAILS)} fail" + (f" ({contradicted} contradicted by the paper's own numbers)" if contradicted else "")
    return f"{frame.height} claim rows: " + ", ".join(parts + [fails, f"{n(UNDECIDED)} not decidable"])



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


#: Where a claim's figure is, relative to the scorecard's folder (results/tables/).
FIGURE_DIR = "../plots/paper"
_HEADERS = ("paper", "where", "claim", "paper's number", "ours", "verdict", "scale", "cells", "figure")


def _groups(frame: pl.DataFrame, names: Mapping[str, str]):
    """(paper's name, its rows ordered by :data:`SCALES`, claims in declared order within a scale),
    papers in the order they come."""
    rank = {s: i for i, s in enumerate(SCALES)}
    ordered = frame.with_row_index("_i").with_columns(pl.col("scale").replace_strict(rank, default=len(SCALES),
                                                                                     return_dtype=pl.Int64).alias("_s"))
    for paper in dict.fromkeys(frame["paper"].to_list()):
        part = ordered.filter(pl.col("paper") == paper).sort("_s", "_i").drop("_i", "_s")
        yield names.get(paper, paper), part


def _title(paper_numbers: bool) -> str:
    if paper_numbers:
        return "Reproduction scorecard: the papers' claims, decided on the papers' own numbers"
    return "Reproduction scorecard: the papers' claims, decided on this run"


def _cells_of(r: Mapping, names: Mapping[str, str]) -> tuple:
    return (names.get(r["paper"], r["paper"]), r["where"], r["says"], r["paper_value"], r["ours"] or "—",
            _verdict_text(r), r["scale"], _cells_text(r["cells"]))


_FOOTER = ("Scale: paper scale = the paper's data set at the paper's rounds; reduced real data = real data with "
           "fewer samples, clients or rounds; toy data = embedded or generated data (digits, Synthetic, "
           "quadratics): a claim that holds only there is not counted as reproduced. Each claim's quantity, "
           "rule and the source of its thresholds: the CSV (columns measure, rule, basis) and the paper's module "
           "(fedbench.papers.<paper>, claims()). Not decidable: the run lacks what the rule needs (the claim's "
           "dataset, scale or cells), never counted as a pass.")


def markdown_scorecard(frame: pl.DataFrame, names: Mapping[str, str] | None = None,
                       command: str | None = None, paper_numbers: bool = False) -> str:
    """The scorecard as Markdown: the count line (:func:`summary_line`), then per paper its count
    line and one table, rows grouped by scale (:data:`SCALES` order), a row per claim and scale
    (paper, where, the claim, the paper's number, ours, the verdict with its margin or why it is not
    decidable, the scale, the cells, a link to the figure that shows it)."""
    names = names or {}
    lines = [f"# {_title(paper_numbers)}", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    if frame.height == 0:
        return "\n".join(lines + ["No experiment of this run feeds a paper (an experiment's `paper` key): "
                                  "no claim to decide.", ""])
    lines += [summary_line(frame) + ".", ""]
    for name, part in _groups(frame, names):
        lines += [f"## {name}", "", summary_line(part) + ".", "",
                  "| " + " | ".join(_HEADERS) + " |", "|" + "---|" * len(_HEADERS)]
        for r in part.iter_rows(named=True):
            fig = f"[{r['figure']}]({FIGURE_DIR}/{r['figure']}.png)" if r["figure"] else "—"
            lines.append("| " + " | ".join(_md_cell(x) for x in _cells_of(r, names)) + f" | {fig} |")
        lines.append("")
    lines += [_FOOTER, ""]
    return "\n".join(lines)


_STYLE = {HOLDS: "color:#176c2e", FAILS: "color:#b3261e;font-weight:bold", UNDECIDED: "color:#6b6b6b"}


def html_scorecard(frame: pl.DataFrame, names: Mapping[str, str] | None = None, command: str | None = None,
                   paper_numbers: bool = False) -> str:
    """The scorecard as one HTML fragment (``div.fedbench-table``): the count line, one table per
    paper (claim, paper's number, ours, verdict, scale; rows grouped by scale), verdicts coloured,
    each row's rule, measure and threshold source in a tooltip, a link to the figure that decides
    it; it is the top of the report's landing page."""
    names = names or {}
    e = html.escape
    out = ['<div class="fedbench-table fedbench-scorecard">', f"<h3>{e(_title(paper_numbers))}</h3>"]
    if command:
        out.append(f"<p>Command: <code>{e(command)}</code></p>")
    if frame.height == 0:
        out.append("<p>No experiment of this run feeds a paper: no claim to decide.</p></div>")
        return "\n".join(out) + "\n"
    out.append(f"<p>{e(summary_line(frame))}.</p>")
    for name, part in _groups(frame, names):
        out.append(f"<h4>{e(name)}</h4><p>{e(summary_line(part))}.</p>")
        out.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in _HEADERS) + "</tr></thead><tbody>")
        for r in part.iter_rows(named=True):
            tip = e(f"measure: {r['measure']}\nrule: {r['rule']}\nbasis: {r['basis']}", quote=True)
            cols = _cells_of(r, names)
            fig = (f'<a href="{e(FIGURE_DIR)}/{e(r["figure"])}.png">{e(r["figure"])}</a>' if r["figure"] else "—")
            out.append(f'<tr title="{tip}">' + "".join(f"<td>{e(str(x))}</td>" for x in cols[:5])
                       + f'<td style="{_STYLE[r["verdict"]]}">{e(cols[5])}</td>'
                       + "".join(f"<td>{e(str(x))}</td>" for x in cols[6:]) + f"<td>{fig}</td></tr>")
        out.append("</tbody></table>")
    out.append(f"<p>{e(_FOOTER)} Hover a row for the quantity measured, the rule and the source of its "
               "thresholds.</p></div>")
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


def inventory_markdown(keys: Sequence[str] | None = None) -> str:
    """Every claim of the papers ``keys`` (default: all) as Markdown, one table per paper: its id,
    where the paper says it, what it says, the rule that decides it and the source of its
    thresholds (or why no run can decide it), and its verdict on the paper's own numbers. The
    claims section of docs/papers.md is this text (a test keeps them equal)."""
    import fedbench.papers as papers

    keys = papers.keys() if keys is None else list(keys)
    lines = []
    for key in keys:
        claims = papers.get(key).claims()
        rows = paper_number_rows(claims)
        lines += [f"#### {papers.display_name(key)}: {len(claims)} claims, "
                  f"{sum(c.decide is not None for c in claims)} decided by a rule", "",
                  "| claim | where | the paper says | rule (source of its thresholds), or why no run can decide it "
                  "| on the paper's own numbers |", "|---|---|---|---|---|"]
        for c, r in zip(claims, rows):
            rule = f"{c.rule} ({c.basis})" if c.decide is not None else f"no run can decide it: {c.no_run}"
            own = _verdict_text(r) + (f" ({c.paper_source})" if c.on_paper is not None else "")
            lines.append("| " + " | ".join(_md_cell(x) for x in (f"`{c.id}`", c.where, c.says, rule, own)) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m fedbench.analysis.scorecard --paper-numbers [--paper KEY ...] [--csv PATH]``:
    print (Markdown) every claim row of the papers, decided on the papers' own numbers;
    ``--inventory``: every claim with its rule or why no run can decide it (:func:`inventory_markdown`)."""
    import argparse
    import sys

    import fedbench.papers as papers

    ap = argparse.ArgumentParser(prog="python -m fedbench.analysis.scorecard", description=main.__doc__)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--paper-numbers", action="store_true",
                      help="decide every claim on the numbers the paper itself reports")
    mode.add_argument("--inventory", action="store_true",
                      help="list every claim with its rule or why no run can decide it (docs/papers.md)")
    ap.add_argument("--paper", action="append", choices=papers.keys(), help="only this paper (repeatable)")
    ap.add_argument("--csv", help="also write the rows as CSV here")
    args = ap.parse_args(argv)
    if args.inventory:
        sys.stdout.write(inventory_markdown(args.paper))
        return 0
    frame = paper_numbers_frame(args.paper)
    names = {k: papers.display_name(k) for k in papers.keys()}
    sys.stdout.write(markdown_scorecard(frame, names, paper_numbers=True))
    if args.csv:
        frame.write_csv(args.csv)
    return 0


if __name__ == "__main__":  # run as a script, this file is __main__: use the library's module (one Verdict class)
    from fedbench.analysis.scorecard import main as _main

    raise SystemExit(_main())
