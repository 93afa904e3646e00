"""The papers fedbench reproduces: one module per paper, and :data:`PAPERS`, the one list of them.

An experiment feeds a paper when its ``paper`` key (config) is the paper's :data:`KEY
<fedbench.papers.fedelasticnet.KEY>`; its cells then carry that key (``cell["paper"]``). A paper
module holds the paper's citation (its docstring), its tables and figures in the paper's layouts,
and its reference numbers (``reference/<key>_*.csv``, package data). It defines:

- ``KEY`` (the registry key) and ``NAME`` (how reports name the paper);
- ``tables(cells)`` / ``figures(cells)``: the :class:`~fedbench.papers.base.Table` /
  :class:`~fedbench.papers.base.PaperFigure` outputs it declares, given its own cells (each
  with the cells it reads);
- ``write_table(name, df, reference, cells, md_path, csv_path)`` and
  ``write_figure(name, cells, path, metrics=None, files=())``: write one of them;
- ``claims()``: the paper's claims as code (:class:`fedbench.analysis.scorecard.Claim`), decided on
  every run by the scorecard (rule scorecard, ``rules/scorecard.smk``: :func:`scorecard_inputs`,
  :func:`scorecard_rows`).

The workflow (``rules/aggregate.smk``) only iterates over what :func:`tables` and
:func:`figures` return; it names no paper. Adding a paper = its module (and reference files) +
one entry in :data:`PAPERS`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from types import ModuleType

from fedbench.papers import elastic_aggregation, fed_minimax, fedac, fedelasticnet, local_update
from fedbench.papers.base import PaperFigure, Table

__all__ = ["PAPERS", "get", "keys", "check_paper", "paper_cells", "tables", "figures", "code_version",
           "display_name", "paper_of_table", "scorecard_inputs", "scorecard_rows", "Table", "PaperFigure"]

#: The papers, in the order their outputs are listed.
PAPERS: tuple[ModuleType, ...] = (
    fedelasticnet,
    elastic_aggregation,
    fedac,
    fed_minimax,
    local_update,
)

_BY_KEY = {p.KEY: p for p in PAPERS}
if len(_BY_KEY) != len(PAPERS):
    raise RuntimeError("fedbench.papers.PAPERS: two papers have the same KEY")


def keys() -> list[str]:
    """The registry keys (the valid values of an experiment's ``paper``)."""
    return list(_BY_KEY)


def get(key: str) -> ModuleType:
    """The module of paper ``key``."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown paper {key!r}; known papers: {', '.join(_BY_KEY)}") from None


def check_paper(value, path: str = "paper", error: type[Exception] = ValueError) -> None:
    """Check an experiment's ``paper`` value: absent (None) or a registry key.

    Args:
        value: the value as written in the config.
        path: its key path for the message, e.g. ``experiments.<id>.paper``.
        error: the exception class raised (e.g. :class:`fedbench.config.ConfigError`).
    """
    if value is None or (isinstance(value, str) and value in _BY_KEY):
        return
    raise error(f"{path}: unknown paper {value!r}; known papers: {', '.join(_BY_KEY)} "
                "(the registry fedbench.papers.PAPERS)")


def display_name(value: str | None) -> str | None:
    """How reports name the paper of registry key ``value`` (``NAME``); other values as given."""
    return _BY_KEY[value].NAME if value in _BY_KEY else value


def paper_cells(cells: Sequence[Mapping], key: str) -> list[Mapping]:
    """The cells of the experiments whose ``paper`` is ``key``."""
    return [c for c in cells if c.get("paper") == key]


def tables(cells: Sequence[Mapping]) -> dict[str, Table]:
    """{name: table} that the papers declare for ``cells`` (each paper given its own cells)."""
    return _unique(t for p in PAPERS for t in p.tables(paper_cells(cells, p.KEY)))


def figures(cells: Sequence[Mapping]) -> dict[str, PaperFigure]:
    """{name: figure} that the papers declare for ``cells`` (each paper given its own cells)."""
    return _unique(f for p in PAPERS for f in p.figures(paper_cells(cells, p.KEY)))


def paper_of_table(name: str) -> str | None:
    """The key of the paper that declares table ``name`` (a table's name starts with its paper's key:
    :class:`~fedbench.papers.base.Table`; the longest key that fits), None for none."""
    fits = [k for k in _BY_KEY if name == k or name.startswith(k + "_")]
    return max(fits, key=len) if fits else None


def scorecard_inputs(metrics, table_paths: Sequence[str]) -> tuple[dict, dict]:
    """The scorecard's evidence per paper, from the folder's files: ({key: the rows of ``metrics`` of
    the experiments its tables name (column ``experiment``)}, {key: {table name: its long CSV as a
    frame}}), for each paper with a table among ``table_paths`` (``results/tables/paper/<name>.csv``),
    in :data:`PAPERS` order."""
    from pathlib import Path

    import polars as pl

    tables: dict[str, dict] = {}
    for path in table_paths:
        name = Path(path).stem
        key = paper_of_table(name)
        if key is not None:
            tables.setdefault(key, {})[name] = pl.read_csv(path, infer_schema_length=None)
    tables = {p.KEY: tables[p.KEY] for p in PAPERS if p.KEY in tables}
    by_paper = {}
    for key, own in tables.items():
        exps = sorted({e for t in own.values() if "experiment" in t.columns for e in t["experiment"].drop_nulls()})
        by_paper[key] = (metrics.filter(pl.col("experiment").is_in(exps)) if metrics.height else metrics)
    return by_paper, tables


def scorecard_rows(keys: Sequence[str], metrics: Mapping[str, object], tables: Mapping[str, Mapping[str, object]]
                   ) -> list[dict]:
    """The scorecard rows (:func:`fedbench.analysis.scorecard.evaluate`) of papers ``keys``, in
    order: each paper's claims decided on its own evidence, ``metrics[key]`` (the collected metrics
    of its experiments, a polars frame; absent: empty) and ``tables[key]`` ({its paper table name:
    the table's long CSV as a frame})."""
    import polars as pl

    from fedbench.analysis.scorecard import Evidence, evaluate

    rows = []
    for key in keys:
        ev = Evidence(metrics=metrics.get(key, pl.DataFrame()), tables=dict(tables.get(key, {})))
        rows += evaluate(get(key).claims(), ev)
    return rows


def name_pattern(names, none: str) -> str:
    """A wildcard constraint matching exactly one of ``names`` (``none`` when there are none)."""
    import re

    return "|".join(re.escape(n) for n in names) or none


def metrics_inputs(cells: Sequence[Mapping]) -> list[str]:
    """The collected metrics files of the experiments of ``cells``
    (``results/metrics/<experiment>.parquet``, fedbench.layout), in order of first appearance."""
    from fedbench.layout import experiment_metrics

    return [experiment_metrics(e) for e in dict.fromkeys(c["experiment"] for c in cells)]


def figure_inputs(fig: PaperFigure, run_dir: str) -> dict:
    """The inputs of rule paper_figure: the collected metrics of its cells' experiments, or the
    per-cell files (e.g. delta_histogram.parquet, under ``run_dir``, a path pattern of the cells'
    keys) the figure reads."""
    if fig.cell_file is None:
        return {"metrics": metrics_inputs(fig.cells)}
    return {"files": [f"{run_dir}/{fig.cell_file}".format(**c) for c in fig.file_cells]}


def _unique(outputs) -> dict:
    out = {}
    for o in outputs:
        if o.name in out:
            raise RuntimeError(f"papers {out[o.name].paper!r} and {o.paper!r} both declare an output {o.name!r}")
        out[o.name] = o
    return out


def code_version(key: str) -> str:
    """A 16-hex-digit version of paper ``key``'s module and of the modules of ``fedbench.papers``
    and ``fedbench.analysis`` it imports (not the registry, not the other papers): a rule param,
    so that editing one paper's module re-makes its outputs only."""
    from fedbench.codeversion import module_closure, source_digest

    mod = get(key).__name__
    others = {p.__name__ for p in PAPERS} - {mod}
    names = [m for m in module_closure(mod, "fedbench")
             if m.startswith(("fedbench.papers.", "fedbench.analysis.")) and m not in others]
    h = hashlib.sha256()
    for name in names:
        h.update(f"{name}={source_digest(name, 'fedbench')}\n".encode())
    return h.hexdigest()[:16]
