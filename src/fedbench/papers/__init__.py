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
           "display_name", "paper_of_table", "scorecard_inputs", "scorecard_rows", "cell_scale", "write_table",
           "TOY_SOURCES", "Table", "PaperFigure"]

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
    """{name: table} that the papers declare for ``cells`` (each paper given its own cells), each
    with the scales of its experiments' cells (:attr:`Table.scales <fedbench.papers.base.Table>`)."""
    from dataclasses import replace

    out = []
    for p in PAPERS:
        own = paper_cells(cells, p.KEY)
        scales = {(c["experiment"], c["dataset"]): c.get("scale") for c in own}  # None: written as toy data
        for t in p.tables(own):
            exps = {r.get("experiment") for r in t.cells}
            out.append(replace(t, scales=[[e, d, s] for (e, d), s in scales.items() if e in exps]))
    return _unique(out)


def figures(cells: Sequence[Mapping]) -> dict[str, PaperFigure]:
    """{name: figure} that the papers declare for ``cells`` (each paper given its own cells)."""
    return _unique(f for p in PAPERS for f in p.figures(paper_cells(cells, p.KEY)))


def paper_of_table(name: str) -> str | None:
    """The key of the paper that declares table ``name`` (a table's name starts with its paper's key:
    :class:`~fedbench.papers.base.Table`; the longest key that fits), None for none."""
    fits = [k for k in _BY_KEY if name == k or name.startswith(k + "_")]
    return max(fits, key=len) if fits else None


#: Dataset sources that are embedded or generated stand-ins, never the papers' data: a verdict
#: decided on them is at toy scale.
TOY_SOURCES = ("digits", "synthetic", "quadratic")


def cell_scale(paper: str | None, dataset: Mapping, rounds: int, local_steps: int | None = None) -> str:
    """The scale a cell decides its paper's claims at (:data:`fedbench.analysis.scorecard.SCALES`).

    Args:
        paper: the experiment's paper key (None: no paper; then only toy / reduced real apply).
        dataset: the cell's dataset config, resolved (``{"source": ..., **params}``).
        rounds: the cell's number of rounds.
        local_steps: the cell's ``local.steps`` (None when it trains by epochs).

    Returns:
        ``toy data`` for :data:`TOY_SOURCES`; ``paper scale`` when the source is one of the paper's
        data sets and the cell runs at least the paper's length: the module's ``PAPER_SCALE``
        ({source: the paper's rounds}), or ``PAPER_STEPS`` ({source: the paper's local steps per
        client in all, rounds × ``local_steps``: FedAc's T}); ``reduced real data`` otherwise (real
        data: fewer samples, clients or rounds than the paper, or a real data set it did not use).
    """
    from fedbench.analysis.scorecard import PAPER_SCALE, REDUCED_REAL, TOY

    source = dataset["source"]
    if source in TOY_SOURCES:
        return TOY
    module = get(paper) if paper in _BY_KEY else None
    rounds_full = getattr(module, "PAPER_SCALE", {})
    steps_full = getattr(module, "PAPER_STEPS", {})
    if source in rounds_full and rounds >= rounds_full[source]:
        return PAPER_SCALE
    if source in steps_full and rounds * (local_steps or 1) >= steps_full[source]:
        return PAPER_SCALE
    return REDUCED_REAL


def write_table(key: str, name: str, df, reference, cells: Sequence[Mapping], md_path, csv_path,
                scales: Sequence[Sequence[str]] = ()) -> None:
    """Write paper ``key``'s table ``name`` (its module's ``write_table``) and add to its long CSV the
    column ``scale``: each row's (experiment, dataset) scale from ``scales`` (``[experiment,
    dataset, scale]``, :func:`tables`; a row of none: toy data), which the scorecard decides apart
    (:func:`scorecard_inputs`)."""
    import polars as pl

    from fedbench.analysis.scorecard import SCALES, TOY

    get(key).write_table(name, df, reference, list(cells), md_path, csv_path)
    frame = pl.read_csv(csv_path, infer_schema_length=None)
    if "experiment" not in frame.columns:
        return
    known = pl.DataFrame([list(s) for s in scales], schema={"experiment": pl.String, "dataset": pl.String,
                                                             "scale": pl.String}, orient="row")
    on = ["experiment", "dataset"] if "dataset" in frame.columns else ["experiment"]
    if on == ["experiment"]:  # an experiment's least faithful scale
        rank = {s: i for i, s in enumerate(SCALES)}
        known = known.group_by("experiment").agg(pl.col("scale").sort_by(pl.col("scale").replace_strict(
            rank, default=len(SCALES), return_dtype=pl.Int64)).last())
    frame = frame.drop("scale", strict=False).with_columns(pl.col(c).cast(pl.String) for c in on)
    frame = frame.join(known, on=on, how="left")  # a row of the paper's alone (no experiment) has no scale
    frame.with_columns(pl.when(pl.col("experiment").is_not_null()).then(pl.col("scale").fill_null(TOY))
                       .alias("scale")).write_csv(csv_path)


def scorecard_inputs(metrics, table_paths: Sequence[str]) -> list[tuple[str, str, object, dict]]:
    """The scorecard's evidence, from the folder's files: one ``(paper key, scale, metrics, tables)``
    per paper with a table among ``table_paths`` (``results/tables/paper/<name>.csv``) and per scale
    its tables' rows are at (column ``scale``, :func:`write_table`; a table written without it counts
    as toy data), in :data:`PAPERS` order and :data:`~fedbench.analysis.scorecard.SCALES` order:
    ``metrics`` the rows of the folder's metrics of the (experiment, dataset) pairs at that scale,
    ``tables`` {table name: its rows at that scale, and its rows of the paper's numbers alone (no
    experiment, no scale); all its rows when it names no experiment}."""
    from pathlib import Path

    import polars as pl

    from fedbench.analysis.scorecard import SCALES, TOY

    own: dict[str, dict] = {}
    for path in table_paths:
        name = Path(path).stem
        key = paper_of_table(name)
        if key is not None:
            frame = pl.read_csv(path, infer_schema_length=None)
            if "experiment" in frame.columns and "scale" not in frame.columns:
                frame = frame.with_columns(pl.lit(TOY).alias("scale"))
            own.setdefault(key, {})[name] = frame
    out = []
    for p in PAPERS:
        if p.KEY not in own:
            continue
        tables = own[p.KEY]
        present = {s for t in tables.values() if "scale" in t.columns for s in t["scale"].drop_nulls()}
        for scale in [s for s in SCALES if s in present] or [TOY]:
            part = {n: (t.filter((pl.col("scale") == scale) | pl.col("scale").is_null()) if "scale" in t.columns
                        else t) for n, t in tables.items()}  # a row of the paper's alone (no scale) in every group
            pairs = {(e, d) for t in part.values() if "experiment" in t.columns
                     for e, d in zip(t["experiment"].cast(pl.String),
                                     t["dataset"].cast(pl.String) if "dataset" in t.columns
                                     else [None] * t.height) if e is not None}
            if metrics.height:
                exps = {e for e, _ in pairs}
                keep = pl.col("experiment").is_in(sorted(exps))
                if all(d is not None for _, d in pairs):
                    keep = pl.struct("experiment", "dataset").is_in(
                        [{"experiment": e, "dataset": d} for e, d in sorted(pairs)])
                rows = metrics.filter(keep)
            else:
                rows = metrics
            out.append((p.KEY, scale, rows, part))
    return out


def scorecard_rows(inputs: Sequence[tuple[str, str, object, Mapping]]) -> list[dict]:
    """The scorecard rows (:func:`fedbench.analysis.scorecard.evaluate`): for each ``(paper key,
    scale, metrics, tables)`` of :func:`scorecard_inputs`, the paper's claims decided on that
    evidence, each row labelled with its scale."""
    from fedbench.analysis.scorecard import Evidence, evaluate

    rows = []
    for key, scale, metrics, tables in inputs:
        rows += evaluate(get(key).claims(), Evidence(metrics=metrics, tables=dict(tables), scale=scale))
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


#: Imports of the registry that a paper's code version does not follow: the scorecard's command line
#: (--paper-numbers, --inventory) reads every paper; a paper's claims use only its Claim and Verdict.
CODE_VERSION_REGISTRIES = {"fedbench.analysis.scorecard": ["fedbench.papers"]}


def code_version(key: str) -> str:
    """A 16-hex-digit version of paper ``key``'s module and of the modules of ``fedbench.papers``
    and ``fedbench.analysis`` it imports (not the registry, not the other papers): a rule param,
    so that editing one paper's module re-makes its outputs only."""
    from fedbench.codeversion import module_closure, source_digest

    mod = get(key).__name__
    others = {p.__name__ for p in PAPERS} - {mod}
    names = [m for m in module_closure(mod, "fedbench", CODE_VERSION_REGISTRIES)
             if m.startswith(("fedbench.papers.", "fedbench.analysis.")) and m not in others]
    h = hashlib.sha256()
    for name in names:
        h.update(f"{name}={source_digest(name, 'fedbench')}\n".encode())
    return h.hexdigest()[:16]
