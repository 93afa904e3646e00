"""What a paper module declares: its tables (:class:`Table`) and figures (:class:`PaperFigure`), each
with the cells it reads. Shared by the paper modules; imports no paper module (so that a paper's
code version, :func:`fedbench.papers.code_version`, does not depend on the other papers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: The papers' numbers (one CSV per table; README.md there describes the columns).
REFERENCE_DIR = Path(__file__).resolve().parent / "reference"

#: The note under every paper table: where the paper's numbers are.
REFERENCE_NOTE = ("Paper values: src/fedbench/papers/reference/ (README.md there maps the paper's names "
                  "to our labels).")


@dataclass(frozen=True)
class Table:
    """A paper table: ``results/tables/paper/<name>.md`` (the paper's layout) and ``.csv`` (long).

    Attributes:
        name: the file stem (unique over all papers: start it with the paper's key).
        paper: the paper's key.
        cells: the rows it reads (dicts; a rule param, so JSON-like values only).
        reference: the CSV of the paper's numbers.
        label: a short description (report label).
        inputs: further files the table reads (paths relative to the workflow's directory, e.g. a
            prepared dataset's ``resources/datasets/<id>/meta.json``): inputs of rule paper_table.
        scales: ``[experiment, dataset, scale]`` of the cells behind it (set by
            :func:`fedbench.papers.tables` from the cells' ``scale``): its long CSV's ``scale`` column.
    """

    name: str
    paper: str
    cells: list[dict]
    reference: Path
    label: str
    inputs: list[str] = field(default_factory=list)
    scales: list[list[str]] = field(default_factory=list)


@dataclass(frozen=True)
class PaperFigure:
    """A paper figure: ``results/plots/paper/<name>.png``.

    Attributes:
        name: the file stem (unique over all papers: start it with the paper's key).
        paper: the paper's key.
        cells: the rows it reads (dicts; a rule param, so JSON-like values only).
        label: a short description (report label).
        caption: what the figure shows (report caption).
        cell_file: None: the figure reads ``results/metrics.parquet``; else a file that each
            training cell of ``file_cells`` writes in its run directory (e.g.
            ``delta_histogram.parquet``), which it reads instead.
        file_cells: the cells (experiment, dataset, partition, algorithm, seed) of ``cell_file``.
    """

    name: str
    paper: str
    cells: list[dict]
    label: str
    caption: str
    cell_file: str | None = None
    file_cells: list[dict] = field(default_factory=list)


def unique_rows(cells: Iterable[Mapping], keys: Iterable[str], by: Iterable[str] | None = None) -> list[dict]:
    """One dict of ``keys`` per distinct ``by`` (default: ``keys``) of ``cells``, in first-seen
    order (the last cell of a group gives the values)."""
    keys = tuple(keys)
    by = keys if by is None else tuple(by)
    out: dict[tuple, dict] = {}
    for c in cells:
        out[tuple(c[k] for k in by)] = {k: c[k] for k in keys}
    return list(out.values())
