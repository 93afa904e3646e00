"""Hyperparameter sweeps: the best value of each sweep, its table and its sensitivity plot.

A swept cell (:func:`fedbench.config.expand_cells`) carries a report-only ``sweep`` record::

    {"label": "fedprox", "partition": "iid",
     "point": {"local.lr": 0.1, "mu": 0.01},                          # this cell's value per axis
     "grid": {"local.lr": [0.01, 0.1, 1.0], "mu": [0.001, 0.01, 0.1]},  # every value per axis
     "select": {"metric": "test_accuracy", "statistic": "final", "last": 10,
                "direction": "max", "average_seeds": True}}

(``None`` for an unswept cell). A *group* is the set of cells sharing experiment, dataset,
``sweep.partition`` and ``sweep.label``: they differ only by their sweep point and their seed.

Score of a cell (:func:`cell_scores`), the statistic of ``select.metric`` over its evaluated rows:

- ``final``: the value at the last evaluated row;
- ``best``: the maximum (``direction: max``) or minimum (``min``) over the evaluated rows;
- ``mean_last``: the mean over the last ``select.last`` evaluated rows (all of them if fewer).

The row of round 0 (the initial model, written by cells with ``eval_initial``:
:mod:`fedbench.metrics.schema`) is an evaluated row: ``best`` includes it (the FedAc paper's best
over time includes t = 0) and so does ``mean_last`` when ``last`` reaches back to it.

A cell whose last row has status ``diverged`` (NaN/inf loss or parameters, or a collapsed run:
:mod:`fedbench.metrics.schema`) has no score and is never selected, even when the metric it
reached before diverging would be the best.

Selection (:func:`select`), per group:

- ``average_seeds: true``: the score of a point is the mean of its seeds' scores; a point where any
  seed diverged is not eligible (and counts as diverged); the best eligible point by ``direction``
  is chosen, ties going to the first point in grid order (the Cartesian product of the axes in
  axis order, each axis' values in config order; zipped axes pair values by position);
- ``average_seeds: false``: each seed chooses its own best point among its non-diverged cells
  (same tie rule); the row reports each seed's choice and the mean ± sd of the chosen scores.

The *edge flag*: an axis whose chosen value is the smallest or largest number of its grid (an axis
with at least two values) may have its optimum outside the grid; the table marks it (⚠) and
says to widen the grid.

The Markdown table (:func:`write_selection`; accuracies in %, ± sd or the 95 % t-interval's
half-width as config ``tables``) is for reading, the CSV keeps the numbers. The sensitivity plot
(:func:`sensitivity_plot`) draws the score against each swept axis with the other axes held at
the chosen point. :func:`selected_cells` returns the cells at the chosen points, for downstream
tables.

sd is the sample standard deviation over seeds (ddof = 1); ci95 the half-width of the 95 %
t-interval of the mean (:func:`fedbench.analysis.tables.ci95_halfwidth`).
"""

from __future__ import annotations

import math
import os
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import polars as pl

from fedbench.analysis.style import format_mean_sd, format_sig, metric_axis
from fedbench.analysis.tables import _check_interval, ci95_halfwidth
from fedbench.files import atomic_write

__all__ = [
    "IDENTITY", "STATISTICS", "DIRECTIONS", "cell_name", "format_value", "sweep_cells", "conditions", "cell_scores",
    "select",
    "selected_cells", "markdown_selection", "write_selection", "sensitivity_plot",
]

#: The keys naming a cell (and the metrics rows of its run).
IDENTITY = ("experiment", "dataset", "partition", "algorithm", "seed")
STATISTICS = ("final", "best", "mean_last")
DIRECTIONS = ("max", "min")
#: Columns of :func:`select` before the axis columns, and after them.
_HEAD = ["experiment", "dataset", "partition", "algorithm"]
_TAIL = ["metric", "statistic", "last", "direction", "average_seeds", "mean", "sd", "ci95", "n_seeds", "points",
         "diverged", "diverged_cells", "edge", "status", "axes", "fixed", "cells"]
# Axis keys in words (plot labels); other keys read "hyperparameter <key>".
_AXIS_WORDS = {
    "local.lr": "local learning rate",
    "local.lr_decay": "learning-rate decay per round",
    "local.lr_schedule": "step learning-rate schedule",
    "local.weight_decay": "weight decay",
    "local.clip_norm": "gradient clipping norm",
    "local.epochs": "local epochs",
    "local.batch_size": "batch size",
    "partition.num_clients": "number of clients",
    "partition.alpha": "Dirichlet concentration α",
}


def cell_name(cell: Mapping) -> str:
    """``experiment/dataset/partition/algorithm/seed=s``: the name of a cell (as summary.json's
    ``stacked_cells``)."""
    return "{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}".format(**{k: cell[k] for k in IDENTITY})


def format_value(v) -> str:
    """An axis value as the cell labels write it: floats with ``repr``, ints with ``str``,
    ``null`` for None, ``true``/``false`` for booleans, a local-work distribution as
    ``uniform2-5`` (:func:`fedbench.engine.clients.batches.work_label`), an lr schedule as ``step100-200x0.1``
    (:func:`fedbench.engine.spec.schedule_label`); anything else with ``str``."""
    if isinstance(v, Mapping) and "distribution" in v:
        from fedbench.engine.clients.batches import work_label

        return work_label(v)
    if isinstance(v, Mapping) and "milestones" in v:
        from fedbench.engine.spec import schedule_label

        return schedule_label(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _numeric(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _index(values: Sequence, v) -> int:
    """Position of ``v`` in ``values`` (same value and same kind: 1 is not True)."""
    for i, w in enumerate(values):
        if w == v and isinstance(w, bool) == isinstance(v, bool):
            return i
    raise ValueError(f"sweep value {format_value(v)} is not in its grid {[format_value(w) for w in values]}")


def sweep_cells(cells: Iterable[Mapping], experiment: str | None = None) -> list[dict]:
    """The swept cells (``sweep`` not None) of ``experiment`` (all when None), reduced to their
    identity keys and ``sweep``: what :func:`select` and the workflow's rule sweep_select need."""
    return [
        {**{k: c[k] for k in IDENTITY}, "sweep": c["sweep"]}
        for c in cells
        if c.get("sweep") is not None and (experiment is None or c["experiment"] == experiment)
    ]


def _select_settings(cell: Mapping) -> dict:
    sel = dict(cell["sweep"]["select"])
    where = f"cell {cell_name(cell)}: sweep.select"
    if sel.get("statistic") not in STATISTICS:
        raise ValueError(f"{where}.statistic must be one of {', '.join(STATISTICS)}, not {sel.get('statistic')!r}")
    if sel.get("direction") not in DIRECTIONS:
        raise ValueError(f"{where}.direction must be max or min, not {sel.get('direction')!r}")
    if sel["statistic"] == "mean_last" and not (isinstance(sel.get("last"), int) and sel["last"] >= 1):
        raise ValueError(f"{where}.last must be an integer >= 1 with statistic mean_last, not {sel.get('last')!r}")
    sel.setdefault("average_seeds", True)
    return sel


def _fixed_axes(cell: Mapping, conditions_free: bool = False) -> list[str]:
    """The axes of the cell's sweep that are not in ``select.over`` (the experimental conditions:
    they form groups; ``over: []`` makes every axis one). With ``conditions_free`` none (the plot
    of a sweep whose every axis is a condition draws the score against them)."""
    over = cell["sweep"]["select"].get("over")
    if over is None or conditions_free:
        return []
    return [a for a in cell["sweep"]["point"] if a not in over]


def conditions(cell: Mapping) -> list[str]:
    """The axes of a swept cell that are experimental conditions (compared, never selected): the
    axes not in ``select.over`` when the config gives ``over`` (``over: []``: every axis)."""
    return _fixed_axes(cell)


def _group_key(cell: Mapping, conditions_free: bool = False) -> tuple:
    s = cell["sweep"]
    return (cell["experiment"], cell["dataset"], s["partition"], s["label"],
            tuple((a, format_value(s["point"][a])) for a in _fixed_axes(cell, conditions_free)))


# ----------------------------------------------------------------------------------------------
# Scores


def cell_scores(metrics: pl.DataFrame, cells: Iterable[Mapping]) -> pl.DataFrame:
    """The score of each swept cell: the statistic ``sweep.select.statistic`` of its metric
    ``sweep.select.metric`` (see the module docstring); unswept cells are skipped.

    Args:
        metrics: collected metrics rows (:data:`fedbench.metrics.schema.METRICS_SCHEMA`), one per
            cell per evaluated round; other cells' rows are ignored.
        cells: cells with at least the :data:`IDENTITY` keys and ``sweep``.

    Returns:
        One row per swept cell, in the order of ``cells``: the identity columns, ``name``
        (:func:`cell_name`), ``label`` and ``sweep_partition`` (the configured algorithm label and
        partition id), ``status`` (``ok``/``diverged``: the status of the last row), ``score``
        (Float64; null when diverged), ``rounds`` (last evaluated round).

    Raises:
        ValueError: a cell has no metrics rows (``results/metrics/<experiment>.parquet`` older than the config),
            the metric is not a metrics column, or it has no value in a non-diverged cell; an
            unknown statistic or direction.
    """
    cells = [c for c in cells if c.get("sweep") is not None]
    out = {k: [] for k in [*IDENTITY, "name", "label", "sweep_partition", "status", "score", "rounds"]}
    if not cells:
        return pl.DataFrame(out, schema=_scores_schema())
    runs = metrics.sort("round").partition_by(list(IDENTITY), as_dict=True, maintain_order=True)
    for cell in cells:
        sel = _select_settings(cell)
        metric = sel["metric"]
        if metric not in metrics.columns:
            raise ValueError(f"cell {cell_name(cell)}: sweep.select.metric {metric!r} is not a metrics column "
                             f"(fedbench.metrics.schema); e.g. test_accuracy, test_loss, train_loss")
        key = tuple(cell[k] for k in IDENTITY)
        rows = runs.get(key)
        if rows is None or rows.height == 0:
            raise ValueError(f"no metrics rows for swept cell {cell_name(cell)}: the collected metrics "
                             f"(results/metrics/<experiment>.parquet) do not hold its run (rerun the workflow "
                             f"so that rule collect includes it)")
        status = rows.get_column("status")[-1]
        score = None
        if status != "diverged":
            values = rows.get_column(metric).cast(pl.Float64)
            if sel["statistic"] == "final":
                score = values[-1]
            elif sel["statistic"] == "best":
                score = values.max() if sel["direction"] == "max" else values.min()
            else:
                score = values.tail(sel["last"]).mean()
            if score is None or not math.isfinite(score):
                raise ValueError(f"cell {cell_name(cell)}: metric {metric!r} has no finite value in its "
                                 f"{sel['statistic']} statistic although the run did not diverge (a cell file "
                                 f"written before the column existed: rerun the cell)")
        for k in IDENTITY:
            out[k].append(cell[k])
        out["name"].append(cell_name(cell))
        out["label"].append(cell["sweep"]["label"])
        out["sweep_partition"].append(cell["sweep"]["partition"])
        out["status"].append("diverged" if status == "diverged" else "ok")
        out["score"].append(None if score is None else float(score))
        out["rounds"].append(int(rows.get_column("round")[-1]))
    return pl.DataFrame(out, schema=_scores_schema())


def _scores_schema() -> dict:
    return {"experiment": pl.String, "dataset": pl.String, "partition": pl.String, "algorithm": pl.String,
            "seed": pl.Int64, "name": pl.String, "label": pl.String, "sweep_partition": pl.String,
            "status": pl.String, "score": pl.Float64, "rounds": pl.Int64}


# ----------------------------------------------------------------------------------------------
# Selection


class _Group:
    """The cells of one sweep group with their scores, points in grid order."""

    def __init__(self, cells: list[Mapping], scores: Mapping[str, tuple[str, float | None]],
                 conditions_free: bool = False):
        first = cells[0]
        self.key = _group_key(first, conditions_free)
        self.cells = cells
        self.sel = _select_settings(first)
        fixed = _fixed_axes(first, conditions_free)
        self.fixed = {a: first["sweep"]["point"][a] for a in fixed}
        self.grid = {a: list(v) for a, v in first["sweep"]["grid"].items() if a not in fixed}
        self.axes = list(self.grid)
        for c in cells:
            if _select_settings(c) != self.sel or list(c["sweep"]["point"]) != [*self.axes, *fixed] and \
                    sorted(c["sweep"]["point"]) != sorted([*self.axes, *fixed]):
                raise ValueError(f"cells {cell_name(first)} and {cell_name(c)} are in one sweep group but differ in "
                                 f"sweep.select or in their axes: the config helper should give them equal ones")
        points: dict[tuple, dict] = {}
        for c in cells:
            p = c["sweep"]["point"]
            idx = tuple(_index(self.grid[a], p[a]) for a in self.axes)
            status, score = scores[cell_name(c)]
            points.setdefault(idx, {"point": dict(p), "runs": {}})["runs"][c["seed"]] = (c, status, score)
        self.points = [points[i] for i in sorted(points)]  # grid order
        self.seeds = sorted({c["seed"] for c in cells})
        for p in self.points:
            p["diverged"] = any(st == "diverged" for _, st, _ in p["runs"].values())
            ok = [s for _, st, s in p["runs"].values() if st != "diverged"]
            p["mean"] = None if p["diverged"] else sum(ok) / len(ok)

    def best(self, candidates: list[tuple[int, float]]) -> int | None:
        """Index (into self.points) of the best (index, score) candidate, the first on ties."""
        best = None
        for i, s in candidates:
            if best is None or (s > best[1] if self.sel["direction"] == "max" else s < best[1]):
                best = (i, s)
        return None if best is None else best[0]


def _edges(group: _Group, chosen_points: list[dict]) -> str:
    """"axis: lower edge (v)" / "upper edge (v)" for each axis with ≥ 2 grid values where a chosen
    value is the smallest or largest number of the grid; joined with "; "."""
    notes = []
    for a in group.axes:
        nums = [v for v in group.grid[a] if _numeric(v)]
        if len(set(nums)) < 2:
            continue
        lo, hi = min(nums), max(nums)
        values = {p[a] for p in chosen_points if _numeric(p[a])}
        for side, v in (("lower", lo), ("upper", hi)):
            if v in values:
                notes.append(f"{a}: {side} edge ({format_value(v)})")
    return "; ".join(notes)


def _per_seed_values(group: _Group, axis: str, choices: dict[int, dict]) -> str:
    by_value: dict[str, list[int]] = {}
    for seed, p in sorted(choices.items()):
        by_value.setdefault(format_value(p[axis]), []).append(seed)
    if len(by_value) == 1:
        return next(iter(by_value))
    return "; ".join(f"{v} (seed{'s' if len(s) > 1 else ''} {', '.join(map(str, s))})" for v, s in by_value.items())


def select(metrics: pl.DataFrame, cells: Iterable[Mapping]) -> pl.DataFrame:
    """The chosen point of every sweep group (see the module docstring).

    Args:
        metrics: collected metrics rows (METRICS_SCHEMA).
        cells: cells with the :data:`IDENTITY` keys and ``sweep`` (unswept cells are skipped),
            e.g. :func:`sweep_cells` of the workflow's cells.

    Returns:
        One row per group, in the order of first appearance in ``cells``, columns:
        experiment, dataset, partition (``sweep.partition``), algorithm (``sweep.label``); one
        String column per axis (the union over groups, in order of first appearance; null where
        the group has no such axis) holding the chosen value (:func:`format_value`), or with
        ``average_seeds: false`` each seed's choice (``"0.1 (seeds 0, 2); 1.0 (seed 1)"``, one
        value when all seeds agree); metric, statistic, last, direction, average_seeds; mean, sd,
        ci95 (Float64, the score at the choice: over the seeds of the chosen point, or over the
        seeds' own choices; null when nothing could be chosen); n_seeds (seeds behind mean);
        points (grid points present), diverged (points with at least one diverged seed),
        diverged_cells; edge (:func:`_edges` text, empty when interior); status (``ok`` or
        ``all diverged``); axes (list of the group's axis keys); cells (list of the chosen
        cells' names, :func:`cell_name`).

    Raises:
        ValueError: as :func:`cell_scores`; an axis key equal to one of the fixed column names;
            cells of one group with different ``sweep.select`` or axes.
    """
    cells = [c for c in cells if c.get("sweep") is not None]
    scores = cell_scores(metrics, cells)
    by_name = {n: (st, s) for n, st, s in scores.select("name", "status", "score").iter_rows()}
    grouped: dict[tuple, list[Mapping]] = {}
    for c in cells:
        grouped.setdefault(_group_key(c), []).append(c)
    axis_columns: list[str] = []
    rows = []
    for key, members in grouped.items():
        g = _Group(members, by_name)
        for a in [*g.fixed, *g.axes]:
            if a in _HEAD or a in _TAIL:
                raise ValueError(f"sweep axis {a!r} of {'/'.join(key)} has the name of a selection column")
            if a not in axis_columns:
                axis_columns.append(a)
        rows.append(_select_group(g))
    schema = {**{k: pl.String for k in _HEAD}, **{a: pl.String for a in axis_columns},
              "metric": pl.String, "statistic": pl.String, "last": pl.Int64, "direction": pl.String,
              "average_seeds": pl.Boolean, "mean": pl.Float64, "sd": pl.Float64, "ci95": pl.Float64,
              "n_seeds": pl.Int64, "points": pl.Int64, "diverged": pl.Int64, "diverged_cells": pl.Int64,
              "edge": pl.String, "status": pl.String, "axes": pl.List(pl.String), "fixed": pl.List(pl.String),
              "cells": pl.List(pl.String)}
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row")


def _select_group(g: _Group) -> dict:
    experiment, dataset, partition, label, _ = g.key
    row = {"experiment": experiment, "dataset": dataset, "partition": partition, "algorithm": label,
           **{a: format_value(v) for a, v in g.fixed.items()},
           "metric": g.sel["metric"], "statistic": g.sel["statistic"],
           "last": g.sel.get("last") if g.sel["statistic"] == "mean_last" else None,
           "direction": g.sel["direction"], "average_seeds": bool(g.sel["average_seeds"]),
           "points": len(g.points), "diverged": sum(p["diverged"] for p in g.points),
           "diverged_cells": sum(st == "diverged" for p in g.points for _, st, _ in p["runs"].values()),
           "axes": list(g.axes), "fixed": list(g.fixed), "edge": "", "mean": None, "sd": None, "ci95": None,
           "n_seeds": 0, "cells": []}
    if g.sel["average_seeds"]:
        i = g.best([(i, p["mean"]) for i, p in enumerate(g.points) if not p["diverged"]])
        if i is None:
            return {**row, "status": "all diverged"}
        chosen = g.points[i]
        chosen_scores = [s for _, _, s in chosen["runs"].values()]
        row.update({a: format_value(chosen["point"][a]) for a in g.axes})
        row["cells"] = [cell_name(c) for c, _, _ in sorted(chosen["runs"].values(), key=lambda r: r[0]["seed"])]
        row["edge"] = _edges(g, [chosen["point"]])
    else:
        choices: dict[int, dict] = {}
        chosen_scores, names = [], []
        for seed in g.seeds:
            cand = [(i, p["runs"][seed][2]) for i, p in enumerate(g.points)
                    if seed in p["runs"] and p["runs"][seed][1] != "diverged"]
            i = g.best(cand)
            if i is None:
                continue
            c, _, s = g.points[i]["runs"][seed]
            choices[seed] = g.points[i]["point"]
            chosen_scores.append(s)
            names.append(cell_name(c))
        if not choices:
            return {**row, "status": "all diverged"}
        row.update({a: _per_seed_values(g, a, choices) for a in g.axes})
        row["cells"] = names
        row["edge"] = _edges(g, list(choices.values()))
    n = len(chosen_scores)
    mean = sum(chosen_scores) / n
    sd = math.sqrt(sum((s - mean) ** 2 for s in chosen_scores) / (n - 1)) if n > 1 else None
    row.update({"status": "ok", "mean": mean, "sd": sd, "ci95": ci95_halfwidth(sd, n), "n_seeds": n})
    return row


def selected_cells(selection: pl.DataFrame, cells: Iterable[Mapping]) -> list[Mapping]:
    """The cells at the chosen points of ``selection`` (:func:`select`), in the order of
    ``cells``: with ``average_seeds`` every seed of the chosen point, otherwise each seed's own
    choice. A group where everything diverged contributes none. Use them to restrict a table or
    a paper table to the tuned configuration of each sweep."""
    names = {n for row in selection.get_column("cells").to_list() for n in row}
    return [c for c in cells if cell_name(c) in names]


# ----------------------------------------------------------------------------------------------
# Markdown and CSV


def _is_accuracy(metric: str) -> bool:
    return metric.endswith("accuracy")


def _criterion(metric: str, statistic: str, last: int | None, direction: str) -> str:
    what = metric.replace("_", " ")
    stat = {"final": "final", "best": "best", "mean_last": f"mean of the last {last} evaluations of the"}[statistic]
    unit = " (%)" if _is_accuracy(metric) else ""
    return f"{stat} {what}{unit}, {direction}"


def _number(v: float | None, metric: str, decimals: int) -> str:
    if v is None or math.isnan(v):
        return ""
    return f"{100 * v:.{decimals}f}" if _is_accuracy(metric) else format_sig(v, 5)


def _score(mean: float | None, spread: float | None, metric: str, decimals: int) -> str:
    """An accuracy in % with ``decimals`` decimals (± the same), any other metric to the
    significant digits of its spread (:func:`fedbench.analysis.style.format_mean_sd`)."""
    if mean is None or math.isnan(mean):
        return ""
    if _is_accuracy(metric):
        out = _number(mean, metric, decimals)
        return out + (f" ± {_number(spread, metric, decimals)}" if spread is not None else "")
    return format_mean_sd(mean, spread, sci=metric_axis(metric).kind == "gap")


def markdown_selection(selection: pl.DataFrame, title: str | None = None, decimals: int = 2,
                       interval: str = "sd") -> str:
    """The readable table of :func:`select`'s output: one row per group, one column per axis
    (the chosen value of a tuned axis, ⚠ on a value at the edge of its grid; the group's value of
    a condition, an axis the config's ``select.over`` leaves out, headed "(condition)" and never
    flagged; "—" for an axis the group does not sweep), the selection criterion (or, when no
    group tunes anything, the statistic shown), the score (accuracies in % with ``decimals``
    decimals, other metrics to two significant digits of their spread; ± sd or ± ci95
    half-width per ``interval``), the seeds and the diverged points; notes below (the ⚠ footnote
    saying to widen the grid; "one seed" when every row has one).

    Raises:
        ValueError: an unknown ``interval``.
    """
    _check_interval(interval)
    axis_cols = [c for c in selection.columns if c not in _HEAD and c not in _TAIL]
    records = list(selection.iter_rows(named=True))
    cond_cols = {a for a in axis_cols if any(r[a] is not None for r in records)
                 and all(a in r["fixed"] for r in records if r[a] is not None)}
    tuned_any = any(r["axes"] and r["points"] > 1 for r in records)
    one_seed = all(r["n_seeds"] <= 1 for r in records)
    header = ["dataset", "partition", "algorithm", *(f"{a} (condition)" if a in cond_cols else a for a in axis_cols),
              "selected by" if tuned_any else "statistic", "score" if tuned_any else "value", "seeds",
              "diverged points"]
    right = set(range(len(header) - 3, len(header)))
    rows, any_edge, any_div = [], False, False
    for r in records:
        edge_axes = {e.split(": ")[0] for e in r["edge"].split("; ") if e}
        any_edge |= bool(edge_axes)
        values = []
        for a in axis_cols:
            v = r[a]
            if v is None:  # an axis this group does not sweep
                values.append("—")
            else:
                values.append(f"{v} ⚠" if a in edge_axes else v)
        if r["status"] == "all diverged":
            score = f"all {r['points']} points diverged"
        else:
            score = _score(r["mean"], r["sd"] if interval == "sd" else r["ci95"], r["metric"], decimals)
        criterion = _criterion(r["metric"], r["statistic"], r["last"], r["direction"])
        if not (r["axes"] and r["points"] > 1):
            criterion = criterion.rsplit(", ", 1)[0] + (" (nothing tuned)" if tuned_any else "")
        seeds = str(r["n_seeds"]) if r["average_seeds"] else f"{r['n_seeds']} (each its own choice)"
        any_div |= r["diverged"] > 0
        rows.append([r["dataset"], r["partition"], r["algorithm"], *values, criterion, score, seeds,
                     f"{r['diverged']}/{r['points']}"])
    stat_col = len(header) - 4
    shared = {r[stat_col] for r in rows}
    if not tuned_any and len(shared) == 1:  # one statistic for every row: said once, in the notes
        header.pop(stat_col)
        for r in rows:
            r.pop(stat_col)
        right = {i - 1 for i in right}
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    out = [f"# {title}", ""] if title else []
    out += [line(header), rule, *(line(r) for r in rows), ""]
    if one_seed:
        spread_words = "one seed (no spread)"
    else:
        spread_words = "mean ± " + ("sd over seeds (ddof = 1)" if interval == "sd" else
                                    "half-width of the 95% t-interval of the mean (t with n − 1 degrees of freedom)")
    pct = "; accuracies in %" if any(_is_accuracy(r["metric"]) for r in records) else ""
    if tuned_any:
        out.append(f"Score: the selection statistic at the chosen point, {spread_words}{pct}. "
                   "Each tuned axis column holds the chosen value (per seed when seeds choose on their own).")
    else:
        what = f"the {shared.pop()}" if "statistic" not in header else "the statistic"
        out.append(f"Value: {what} at each point, {spread_words}{pct}. Nothing is tuned: "
                   "every row is one point of the grid.")
    if cond_cols:
        out.append("(condition): an experimental condition that the rows compare (the config's sweep select.over "
                   "leaves it out): each value is its own row, never selected and never flagged.")
    if any_edge:
        out.append("⚠ the chosen value is the smallest or largest value of its grid: the best value may lie "
                   "outside the grid; widen the grid of that axis (the sweep in the config) and rerun.")
    if any_div or any(r["status"] == "all diverged" for r in records):
        out.append("Diverged points: grid points where at least one seed diverged (NaN/inf loss or parameters, or "
                   "collapsed; summary.json's status_reason says why); they are never chosen.")
    return "\n".join(out) + "\n"


def write_selection(metrics: pl.DataFrame, cells: Iterable[Mapping], md_path: str | os.PathLike,
                    csv_path: str | os.PathLike, title: str | None = None, decimals: int = 2,
                    interval: str = "sd") -> pl.DataFrame:
    """Write the selection of ``cells``' sweeps (:func:`select`) as a Markdown table
    (:func:`markdown_selection`) and a CSV (full precision, scores as in the metrics: accuracies
    as fractions; the list columns ``axes`` and ``cells`` joined with "; "); return the selection.

    Raises:
        ValueError: no swept cell in ``cells``; as :func:`select`; an unknown ``interval``.
    """
    _check_interval(interval)
    selection = select(metrics, cells)
    if selection.height == 0:
        raise ValueError("write_selection: no swept cells (is the experiment name right, does it declare a sweep?)")
    md = markdown_selection(selection, title, decimals=decimals, interval=interval)
    with atomic_write(md_path) as tmp:
        tmp.write_text(md, encoding="utf-8")
    flat = selection.with_columns(pl.col("axes").list.join("; "), pl.col("fixed").list.join("; "),
                                  pl.col("cells").list.join("; "))
    with atomic_write(csv_path) as tmp:
        flat.write_csv(tmp)
    return selection


# ----------------------------------------------------------------------------------------------
# Sensitivity plot


def _axis_words(axis: str) -> str:
    return _AXIS_WORDS.get(axis, f"hyperparameter {axis}")


def _reference(g: _Group, row: Mapping) -> dict:
    """The point the other axes are held at: the chosen point (with per-seed choices the one
    chosen by most seeds, the first in grid order on ties); the first grid point when all diverged."""
    names = set(row["cells"])
    if not names:
        return g.points[0]["point"]
    counts = Counter({i: sum(cell_name(c) in names for c, _, _ in p["runs"].values()) for i, p in enumerate(g.points)})
    i = max(range(len(g.points)), key=lambda i: (counts[i], -i))
    return g.points[i]["point"]


def _coupled(g: _Group, axis: str) -> set[str]:
    """Axes zipped with ``axis``: those whose value's grid position equals ``axis``' on every point."""
    out = set()
    for b in g.axes:
        if b != axis and len(g.grid[b]) == len(g.grid[axis]) > 1:
            if all(_index(g.grid[axis], p["point"][axis]) == _index(g.grid[b], p["point"][b]) for p in g.points):
                out.add(b)
    return out


def _fixed_styles(groups: list[_Group]) -> tuple[dict[tuple, tuple[float, str, str]], list[tuple[str, dict]]]:
    """How the groups of one label that differ in their conditions (``select.over`` leaves them
    out, e.g. FedAc's M and K) are told apart: the first condition by the shade of the label's
    colour (dark to light), the others by marker and line style. Returns ({fixed key: (shade in
    [−0.45, 0.5], marker, linestyle)}, legend rows (text, Line2D keyword arguments))."""
    fixed_axes = list(dict.fromkeys(a for g in groups for a in g.fixed))
    if not fixed_axes:
        return {}, []
    first = fixed_axes[0]
    firsts = list(dict.fromkeys(format_value(g.fixed[first]) for g in groups if first in g.fixed))
    rests = list(dict.fromkeys(tuple((a, format_value(g.fixed[a])) for a in fixed_axes[1:] if a in g.fixed)
                               for g in groups))
    markers, styles = "os^vDPXh*<>", ["-", "--", ":", "-."]
    out = {}
    for g in groups:
        f = format_value(g.fixed[first]) if first in g.fixed else None
        shade = 0.0 if f is None or len(firsts) == 1 else -0.45 + 0.95 * firsts.index(f) / (len(firsts) - 1)
        rest = tuple((a, format_value(g.fixed[a])) for a in fixed_axes[1:] if a in g.fixed)
        j = rests.index(rest)
        out[tuple(sorted(g.fixed.items(), key=lambda kv: kv[0]))] = (shade, markers[j % len(markers)],
                                                                     styles[(j // len(markers)) % len(styles)])
    legend = []
    if len(firsts) > 1:
        legend.append((f"{first} = {', '.join(firsts)}: dark → light", {"color": "0.35", "lw": 6, "alpha": 0.6}))
    for j, rest in enumerate(rests):
        if rest:
            legend.append((", ".join(f"{a} = {v}" for a, v in rest),
                           {"color": "0.3", "marker": markers[j % len(markers)], "ms": 5,
                            "ls": styles[(j // len(markers)) % len(styles)], "lw": 1.2}))
    return out, legend


def sensitivity_plot(metrics: pl.DataFrame, cells: Iterable[Mapping], path: str | os.PathLike,
                     selection: pl.DataFrame | None = None, title: str | None = None, dpi: int = 120) -> Path:
    """Draw and save the sensitivity of each sweep's score to its axes.

    One panel per swept axis (columns) and per (dataset, ``sweep.partition``) (rows; per
    (dataset, partition, algorithm label) when the groups differ in conditions, e.g. FedAc's
    (M, K)); in a panel one line per algorithm label sweeping that axis (one per condition
    point: the label's colour, shaded by the first condition, marker and line style by the
    others): its score (mean over seeds; error bars ± sd) against the axis value, the other axes
    held at the label's chosen point (zipped axes move together). The chosen point is a star; a
    diverged point (any seed) is an "x" at the bottom of the panel (the top for ``direction:
    min``), never a number. A sweep whose every axis is a condition (``select.over: []``) draws
    its score against them, without stars. The x-axis is logarithmic when every value is > 0 and
    they span a factor ≥ 10; non-numeric axes are categorical. The y axis follows the metric
    (:func:`fedbench.analysis.style.metric_axis`: accuracies in %, suboptimality on a log axis).
    Colours: :func:`fedbench.analysis.style.algorithm_colors`. Headless (Agg canvas, no pyplot),
    written atomically.

    Args:
        metrics, cells: as :func:`select`.
        path: output image (PNG).
        selection: :func:`select`'s output (computed when None).
        title: figure title (e.g. the experiment).

    Returns:
        ``path``.

    Raises:
        ValueError: no swept cells; as :func:`select`.
    """
    # imported here: the workflow imports this module when it builds the DAG (sweep_cells)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.transforms import blended_transform_factory

    from fedbench.analysis.plots import _save
    from fedbench.analysis.style import _shade, algorithm_colors, apply_metric_axis, seeds_phrase, wrap_title

    cells = [c for c in cells if c.get("sweep") is not None]
    if not cells:
        raise ValueError("sensitivity_plot: no swept cells")
    if selection is None:
        selection = select(metrics, cells)
    scores = cell_scores(metrics, cells)
    by_name = {n: (st, s) for n, st, s in scores.select("name", "status", "score").iter_rows()}
    grouped: dict[tuple, list[Mapping]] = {}
    for c in cells:
        grouped.setdefault(_group_key(c), []).append(c)
    groups = [_Group(m, by_name) for m in grouped.values()]
    rows_of = {(*(r[k] for k in _HEAD), tuple((a, r[a]) for a in r["fixed"])): r
               for r in selection.iter_rows(named=True)}
    # nothing tuned anywhere (every axis a condition): the score against the conditions, no choice
    nothing_tuned = all(len(g.points) <= 1 for g in groups) and any(g.fixed for g in groups)
    if nothing_tuned:
        grouped = {}
        for c in cells:
            grouped.setdefault(_group_key(c, conditions_free=True), []).append(c)
        groups = [_Group(m, by_name, conditions_free=True) for m in grouped.values()]
    styles, style_legend = _fixed_styles(groups)
    split = bool(styles)  # groups of one label differ in their conditions: one panel row per label
    panels_rows = list(dict.fromkeys((g.key[1], g.key[2], g.key[3] if split else None) for g in groups))
    axes_names = list(dict.fromkeys(a for g in groups for a in g.axes if len(g.grid[a]) > 1))
    if not axes_names:
        axes_names = list(dict.fromkeys(a for g in groups for a in g.axes))
    labels = list(dict.fromkeys(g.key[3] for g in groups))
    palette = algorithm_colors(labels)

    nrows, ncols = len(panels_rows), max(1, len(axes_names))
    # one swept axis and several rows of panels: the rows side by side, two per line
    gcols = min(2, nrows) if ncols == 1 else ncols
    grows = math.ceil(nrows * ncols / gcols)
    width = 4.6 * gcols + 2.6
    fig = Figure(figsize=(width, 3.4 * grows + 0.9), layout="constrained")
    FigureCanvasAgg(fig)
    flat_axes = fig.subplots(grows, gcols, squeeze=False).ravel()
    for extra in flat_axes[nrows * ncols:]:
        extra.set_visible(False)
    grid_axes = [flat_axes[r * ncols:(r + 1) * ncols] for r in range(nrows)]
    any_div, any_chosen = False, False
    n_seeds = []
    for ri, (dataset, partition, only) in enumerate(panels_rows):
        for ci, axis in enumerate(axes_names):
            ax = grid_axes[ri][ci]
            members = [g for g in groups if (g.key[1], g.key[2]) == (dataset, partition) and axis in g.axes
                       and (only is None or g.key[3] == only)]
            values = list({format_value(v): v for g in members for v in g.grid[axis]}.values())  # dicts too
            numeric = bool(values) and all(_numeric(v) for v in values)
            categories = {format_value(v): i for i, v in enumerate(values)}

            def xpos(v, numeric=numeric, categories=categories):
                return v if numeric else categories[format_value(v)]

            ylabels, shown, yaxis = [], [], None
            for k, g in enumerate(members):
                row = None if nothing_tuned else rows_of[g.key]
                yaxis = metric_axis(g.sel["metric"])
                ylabels.append(_criterion(g.sel["metric"], g.sel["statistic"], g.sel.get("last"), g.sel["direction"])
                               .rsplit(", ", 1)[0])
                ref = g.points[0]["point"] if row is None else _reference(g, row)
                free = {axis} | _coupled(g, axis)
                sl = [p for p in g.points if all(p["point"][b] == ref[b] for b in g.axes if b not in free)]
                sl.sort(key=lambda p: (xpos(p["point"][axis]),))
                ok = [p for p in sl if not p["diverged"]]
                shade, marker, ls = styles.get(tuple(sorted(g.fixed.items(), key=lambda kv: kv[0])), (0.0, "o", "-"))
                color = _shade(palette[g.key[3]], shade) if shade else palette[g.key[3]]
                # categories: the lines side by side around each value, so that their error bars do not hide each other
                dodge = 0.0 if numeric else 0.06 * (k - (len(members) - 1) / 2)
                xs = [xpos(p["point"][axis]) + dodge for p in ok]
                ms, sds = [], []
                for p in ok:
                    vals = [s for _, _, s in p["runs"].values()]
                    n_seeds.append(len(vals))
                    m = sum(vals) / len(vals)
                    sd = math.sqrt(sum((s - m) ** 2 for s in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
                    ms.append(yaxis.scale * m)
                    sds.append(yaxis.scale * sd)
                shown += ms + [m + sd for m, sd in zip(ms, sds)] + [m - sd for m, sd in zip(ms, sds) if m - sd > 0]
                if ok:
                    lower = [min(sd, 0.95 * m) if yaxis.is_log(ms) else sd for m, sd in zip(ms, sds)]
                    ax.errorbar(xs, ms, yerr=[lower, sds], color=color, lw=1.4, ls=ls, marker=marker, ms=4, capsize=3)
                chosen = set() if row is None else set(row["cells"])
                for p, x, m in zip(ok, xs, ms):
                    if any(cell_name(c) in chosen for c, _, _ in p["runs"].values()) and p["point"] == ref:
                        ax.plot([x], [m], marker="*", ms=14, color=color, markeredgecolor="black", zorder=5)
                        any_chosen = True
                div = [xpos(p["point"][axis]) for p in sl if p["diverged"]]
                if div:
                    any_div = True
                    y = 0.03 + 0.05 * (k % 12)  # one height per line: markers at one value do not hide each other
                    y = y if g.sel["direction"] == "max" else 1 - y
                    ax.plot(div, [y] * len(div), ls="none", marker="x", ms=9, mew=2, color=color, clip_on=False,
                            transform=blended_transform_factory(ax.transData, ax.transAxes), zorder=6)
            if numeric and all(v > 0 for v in values) and max(values) / min(values) >= 10:
                ax.set_xscale("log")
            if not numeric:
                ax.set_xticks(list(categories.values()), list(categories))
            if not members:
                ax.text(0.5, 0.5, f"{_axis_words(axis)}\nnot swept for {dataset} / {partition}", ha="center",
                        va="center", transform=ax.transAxes, color="0.4")
                ax.set_axis_off()
                continue
            if yaxis is not None and shown:
                apply_metric_axis(ax, yaxis, shown)
            ax.set_xlabel(f"{_axis_words(axis)} ({axis})")
            ylabel = " / ".join(dict.fromkeys(ylabels)) or "score"
            ylabel += (" (%)" if yaxis is not None and yaxis.kind == "accuracy" and yaxis.scale == 100
                       and "(%)" not in ylabel else "")
            ax.set_ylabel("\n".join(textwrap.wrap(ylabel, 34)), fontsize=9 if len(ylabel) > 34 else 10)
            where = f"{dataset} / {partition}" + (f", {only}" if only is not None else "")
            ax.set_title("\n".join(textwrap.wrap(f"{where}: {_axis_words(axis)}", 52)), fontsize=9)
            ax.grid(alpha=0.3, which="both" if ax.get_yscale() == "log" else "major")

    handles = [Line2D([], [], color=palette[a], lw=2, marker="o", ms=4) for a in labels]
    names = list(labels)
    for text, kw in style_legend:
        handles.append(Line2D([], [], **kw))
        names.append(text)
    if any_chosen:
        handles.append(Line2D([], [], ls="none", marker="*", ms=12, color="0.5", markeredgecolor="black"))
        names.append("chosen")
    if any_div:
        handles.append(Line2D([], [], ls="none", marker="x", ms=8, mew=2, color="0.3"))
        names.append("diverged")
    fig.legend(handles, names, title="algorithm", loc="outside right center", frameon=False, fontsize=8)
    head = f"{title}: " if title else ""
    what = ("score against the conditions (nothing tuned)" if nothing_tuned else
            "sensitivity to the swept hyperparameters, the others at the chosen point")
    fig.suptitle(wrap_title(f"{head}{what} ({seeds_phrase(n_seeds or [1])})", width), fontsize=11)
    return _save(fig, path, dpi)
