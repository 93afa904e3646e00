"""Sweeps: grids of values at one level of a config, each point of which becomes a normal cell.

``sweep:`` stands under ``experiments.<e>``, ``experiments.<e>.datasets.<d>`` or
``experiments.<e>.algorithms.<label>``: ``grid`` axes form a Cartesian product, ``zip`` axes are
paired value by value; every point becomes a normal cell, resolved exactly as if its values had
been given as single values where the sweep stands (hyperparameters in the algorithm, partition
parameters in the partition), so every value gets the checks a single value gets and an error
names the sweep key path (``experiments.s.algorithms.fedprox.sweep.grid.mu[2]: must be >= 0
(got -1)``). An inner level's sweep of the same axis replaces the outer one's values; an inner
level's single value wins over an outer sweep (that cell is not swept along the axis); ``select``
is merged key by key. A swept cell's ``algorithm`` label (or, for ``partition.<param>`` axes, its
``partition`` id) gets one ``,<short>=<value>`` per axis, and its report-only ``sweep`` key holds
the configured label and partition, the point, the grid and ``select``
(:func:`fedbench.config.cells.expand_cells`, which builds the swept cells from what this module
parses). A point's spec depends on its values only: adding a value adds cells and changes no
other cell's :func:`~fedbench.config.cells.training_spec`.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from fedbench.config.errors import ConfigError, _finite, _fmt, _is_number, _known, _n
from fedbench.config.registries import _schemes
from fedbench.config.settings import LOCAL_OPTIONAL
from fedbench.config.structure import _PROPS, LOCAL_KEYS, _schema_message, schema

#: What selects a sweep's best point, where the config leaves it out (``direction`` then follows
#: the metric: max when its name contains "accuracy", else min).
SELECT_DEFAULTS = {"metric": "test_accuracy", "statistic": "final", "last": 10, "average_seeds": True, "over": None}
# ``over`` (None: every axis) enters a cell's ``sweep.select`` only when set.


def select_metrics() -> tuple[str, ...]:
    """The metrics a sweep may select on: the numeric per-round columns of
    :data:`fedbench.metrics.schema.METRICS_SCHEMA` (``round`` aside) and its algorithm metrics."""
    import pyarrow as pa

    from fedbench.metrics.schema import ALGORITHM_METRICS, COLLECTED_COLUMNS, PER_ROUND

    return tuple(name for name, t in PER_ROUND + ALGORITHM_METRICS + COLLECTED_COLUMNS
                 if name != "round" and (pa.types.is_integer(t) or pa.types.is_floating(t)))


def _axis_kind(axis: str) -> str:
    """'local', 'participation', 'rounds', 'eval_every', 'partition' or 'hparam' (a bare name), or
    '' (unknown)."""
    if axis in ("sampling.participation", "rounds", "eval_every"):
        return axis.rsplit(".", 1)[-1]
    head, _, tail = axis.partition(".")
    if head == "local" and tail in LOCAL_KEYS:
        return "local"
    if head == "partition" and tail and "." not in tail and tail != "scheme":
        return "partition"
    return "hparam" if not tail else ""


def _value_key(v: Any) -> tuple:
    """Equality of config values, with true distinct from 1 (duplicate detection)."""
    return (isinstance(v, bool), repr(v) if isinstance(v, (list, dict)) else v)


@cache
def _value_validator(sub_json: str):
    import json

    import jsonschema

    sub = {"$defs": schema()["$defs"], **json.loads(sub_json)}
    return jsonschema.validators.validator_for(schema())(sub)


def _check_value(sub: dict, v: Any, path: str) -> None:
    """``v`` against the (sub)schema ``sub`` as a single value at ``path`` would be checked."""
    import json

    errors = list(_value_validator(json.dumps(sub, sort_keys=True)).iter_errors(v))
    if errors:
        msg = _schema_message(max(errors, key=lambda e: len(e.absolute_path)))
        raise ConfigError(path + msg.removeprefix("config"))
    if _is_number(v):
        _finite(v, path)


def _value_schema(axis: str) -> dict | None:
    """The schema of a single value of a local / sampling / rounds axis (None: checked by resolution)."""
    kind = _axis_kind(axis)
    if kind == "local":
        return schema()["$defs"]["local"]["properties"][axis.split(".", 1)[1]]
    if kind == "participation":
        return {"$ref": "#/$defs/probability"}
    if kind in ("rounds", "eval_every"):
        return _PROPS["experiments"]["additionalProperties"]["properties"][kind]
    return None


def _parse_sweep(sweep: dict | None, path: str, local: dict | None) -> dict | None:
    """One level's ``sweep`` (``path`` = its key path): axes, their key paths, its zip group and
    ``select``. Raises :class:`ConfigError` for an unknown axis, a duplicate value, zip lists of
    unequal length or an axis both gridded and zipped; a value of a local, sampling or rounds axis
    that a single value could not be."""
    if not sweep:
        return None
    grid, zipped = sweep.get("grid") or {}, sweep.get("zip") or {}
    axes: dict[str, list] = {}
    paths: dict[str, str] = {}
    for part, block in (("grid", grid), ("zip", zipped)):
        for axis, values in block.items():
            kp = f"{path}.{part}.{axis}"
            if not _axis_kind(axis):
                raise ConfigError(
                    f"{kp}: unknown sweep axis {axis!r}; allowed: local.<key> ({_known(LOCAL_KEYS)}), "
                    f"sampling.participation, rounds, eval_every, partition.<a parameter of the partition scheme>, "
                    f"or an algorithm hyperparameter by its bare name (e.g. mu)")
            if part == "zip" and axis in grid:
                raise ConfigError(f"{kp}: {axis!r} is also in {path}.grid; an axis is either gridded or zipped "
                                  f"at one level: delete one of them")
            if part == "grid":
                seen: dict = {}
                for i, v in enumerate(values):
                    j = seen.setdefault(_value_key(v), i)
                    if j != i:
                        raise ConfigError(f"{kp}[{i}]: duplicate of {kp}[{j}] ({_fmt(v)}); give each value once")
            sub = _value_schema(axis)
            for i, v in enumerate(values):
                if sub is not None:
                    _check_value(sub, v, f"{kp}[{i}]")
            key = axis.split(".", 1)[-1]
            other = {"epochs": "steps", "steps": "epochs"}.get(key)
            if _axis_kind(axis) == "local" and other and (local or {}).get(other) is not None:
                raise ConfigError(f"{kp}: the same level sets local.{other} ({path.removesuffix('.sweep')}.local."
                                  f"{other}); give exactly one of epochs or steps per level: delete local.{other}")
            axes[axis], paths[axis] = list(values), kp
    if zipped:
        lengths = {axis: len(v) for axis, v in zipped.items()}
        if len(set(lengths.values())) > 1:
            raise ConfigError(f"{path}.zip: zipped lists must have equal lengths (got "
                              f"{', '.join(f'{a}: {n}' for a, n in lengths.items())}); they are paired value by value")
        seen = {}
        for i, row in enumerate(zip(*zipped.values())):
            j = seen.setdefault(tuple(_value_key(v) for v in row), i)
            if j != i:
                raise ConfigError(f"{path}.zip: the pairs [{j}] and [{i}] are equal "
                                  f"({', '.join(f'{a}={_fmt(v)}' for a, v in zip(zipped, row))}); give each pair once")
    return {"path": path, "axes": axes, "paths": paths, "zip": tuple(zipped), "select": dict(sweep.get("select") or {})}


def _check_axes_exist(lvl: dict | None, where: int, hparams: dict[str, dict], schemes: list[str]) -> None:
    """Each bare-name axis of a level is a hyperparameter of an algorithm it reaches (``hparams``:
    label -> HPARAMS of those algorithms), each partition axis a parameter of a partition scheme it
    reaches (``schemes``)."""
    if lvl is None:
        return
    for axis, kp in lvl["paths"].items():
        kind, key = _axis_kind(axis), axis.split(".", 1)[-1]
        if kind == "hparam" and not any(axis in hp for hp in hparams.values()):
            what = (f"algorithm label {next(iter(hparams))!r}" if where == 2
                    else f"any algorithm of the experiment ({_known(list(hparams))})")
            hint = f"; local optimizer settings are swept as local.{axis}" if axis in LOCAL_KEYS else ""
            known = sorted({k for hp in hparams.values() for k in hp})
            raise ConfigError(f"{kp}: {axis!r} is not a hyperparameter of {what}; known: {_known(known)}{hint}")
        if kind == "partition" and not any(key in _schemes()[s] for s in schemes):
            known = sorted({k for s in schemes for k in _schemes()[s]})
            raise ConfigError(f"{kp}: {key!r} is not a parameter of the partition schemes it reaches "
                              f"({_known(sorted(set(schemes)))}); known: {_known(known)}")


def _select(levels: list[dict | None]) -> dict:
    """``select`` merged key by key over the levels, with :data:`SELECT_DEFAULTS`; the metric checked."""
    out, where, over_path = dict(SELECT_DEFAULTS), None, None
    for lvl in levels:
        if lvl is not None:
            out.update(lvl["select"])
            where = f"{lvl['path']}.select.metric" if "metric" in lvl["select"] else where
            over_path = f"{lvl['path']}.select.over" if "over" in lvl["select"] else over_path
    if out["metric"] not in select_metrics():
        raise ConfigError(f"{where}: unknown metric {_fmt(out['metric'])}; allowed: {_known(select_metrics())} "
                          f"(numeric per-round columns of fedbench.metrics.schema)")
    out.setdefault("direction", "max" if "accuracy" in out["metric"] else "min")
    # over: [] = nothing tuned, every axis an experimental condition (kept: it differs from no over)
    keys = ("metric", "statistic", "last", "direction", "average_seeds") + (("over",) if out["over"] is not None
                                                                            else ())
    return {**{k: out[k] for k in keys}, "over_path": over_path, "metric_path": where}


def _unmeasured(metric: str, cell: dict) -> str | None:
    """Why ``metric`` is null in every row of ``cell`` (a sweep could not select on it), or None."""
    has_optimum = cell["model"]["name"] == "binary_logreg" and cell["local"]["weight_decay"] > 0  # rule optimum
    if metric == "suboptimality" and not has_optimum:
        return ("suboptimality needs F*, computed only for model binary_logreg with local.weight_decay > 0 "
                f"(model {cell['model']['name']!r}, weight_decay {_n(cell['local']['weight_decay'])})")
    if metric.startswith("uplink_entropy") and cell.get("uplink_entropy") is False:
        return f"{metric} is not measured with uplink_entropy: false"
    return None


def _inner_sets(axis: str, cfgs: list[dict], levels: list[dict | None], li: int) -> bool:
    """Whether a level inside level ``li`` gives ``axis`` a single value (or, for local epochs /
    steps, sets or sweeps the other one): the inner value wins, the outer sweep does not apply."""
    kind, key = _axis_kind(axis), axis.split(".", 1)[-1]
    other = {"epochs": "steps", "steps": "epochs"}.get(key)
    for inner in range(li + 1, 3):
        cfg, lvl = cfgs[inner] or {}, levels[inner]
        if kind == "local":
            local = cfg.get("local") or {}
            if key in local or (other and local.get(other) is not None):
                return True
            if other and lvl is not None and f"local.{other}" in lvl["axes"]:
                return True
        elif kind == "participation" and inner == 1 and "participation" in (cfg.get("sampling") or {}):
            return True
        elif kind in ("rounds", "eval_every") and inner == 1 and kind in cfg:
            return True
        elif kind == "hparam" and inner == 2 and axis in cfg:
            return True
    return False


def _cell_sweep(levels: list[dict | None], cfgs: list[dict], applies, reached: set) -> tuple[dict, list, dict]:
    """The sweep of one (dataset, partition, algorithm): ``axes`` (axis -> (level, values, key
    path), in axis order: outer levels first, an inner level's axis replacing the outer one's in
    place) and the factors of the product (each a tuple of axes and the rows of value indices:
    one axis, or a zip group less the axes that do not apply, repeated rows dropped)."""
    axes: dict[str, tuple] = {}
    for li, lvl in enumerate(levels):
        if lvl is None:
            continue
        for axis, values in lvl["axes"].items():
            if applies(axis) and not _inner_sets(axis, cfgs, levels, li):
                axes[axis] = (li, values, lvl["paths"][axis])
                reached.add(lvl["paths"][axis])
    factors, done = [], set()
    for axis, (li, values, _) in axes.items():
        if axis in done:
            continue
        group = [a for a in axes if a in (levels[li]["zip"] if axis in levels[li]["zip"] else (axis,))
                 and axes[a][0] == li]
        rows, seen = [], set()
        for i in range(len(values)):
            key = tuple(_value_key(axes[a][1][i]) for a in group)
            if key not in seen:
                seen.add(key)
                rows.append(i)
        factors.append((tuple(group), rows))
        done.update(group)
    if not axes:
        return axes, factors, {}
    select = _select(levels)
    over_path = select.pop("over_path")
    for i, a in enumerate(select.get("over") or []):
        if a not in axes:
            raise ConfigError(f"{over_path}[{i}]: {a!r} is not an axis of this sweep (its axes: {_known(list(axes))}); "
                              f"select.over lists the axes the best point is chosen over, the others form groups")
    return axes, factors, select


def _check_reached(lvl: dict | None, reached: set[str]) -> None:
    for axis, kp in (lvl or {"paths": {}})["paths"].items():
        if kp not in reached:
            raise ConfigError(f"{kp}: sweeps no cell: every cell it reaches gives {axis} a single value at an inner "
                              f"level (a dataset's or algorithm's own value wins over an outer sweep; local epochs "
                              f"and steps clear each other); move the sweep to that level or delete that value")


def _substituted(cfgs: list[dict], pid: str, point: dict[str, tuple]) -> tuple[dict, dict, dict]:
    """Copies of the experiment, dataset and algorithm configs with each point value put where a
    single value would have been given: at the sweep's level (rounds and participation of an
    algorithm-level sweep at the dataset's: nothing is inside an algorithm), hyperparameters in
    the algorithm, partition parameters in the partition."""
    e, d, a = (dict(c or {}) for c in cfgs)
    for axis, (li, v) in point.items():
        kind, key = _axis_kind(axis), axis.split(".", 1)[-1]
        target = (e, d, a)[li] if kind == "local" else (e, d, d)[li]
        if kind == "local":
            target["local"] = {**(target.get("local") or {}), key: v}
        elif kind == "participation":
            target["sampling"] = {**(target.get("sampling") or {}), "participation": v}
        elif kind in ("rounds", "eval_every"):
            target[kind] = v
        elif kind == "partition":
            d["partitions"] = {**d["partitions"], pid: {**d["partitions"][pid], key: v}}
        else:
            a[axis] = v
    d["partitions"] = {pid: d["partitions"][pid]}
    return e, d, a


def _canonical(axis: str, cell: dict, partition: dict) -> Any:
    """The value of ``axis`` in a resolved cell (canonical type: what the cell trains with)."""
    kind, key = _axis_kind(axis), axis.split(".", 1)[-1]
    if kind == "local":
        return cell["local"][key] if key in cell["local"] else LOCAL_OPTIONAL[key]
    if kind == "participation":
        return cell["sampling"]["participation"]
    if kind in ("rounds", "eval_every"):
        return cell[kind]
    return partition[key] if kind == "partition" else cell["hparams"][axis]


def _plain_path(axis: str, li: int, epath: str, dpath: str, apath: str, pid: str) -> str:
    """The key path a single value of ``axis`` given at level ``li`` has in error messages."""
    kind, key = _axis_kind(axis), axis.split(".", 1)[-1]
    if kind == "partition":
        return f"{dpath}.partitions.{pid}.{key}"
    if kind == "hparam":
        return f"{apath}.{axis}"
    base = (epath, dpath, dpath if kind != "local" else apath)[li]
    return f"{base}.{axis}" if kind in ("local", "rounds", "eval_every") else f"{base}.sampling.participation"


def _rewrite(msg: str, paths: dict[str, str]) -> tuple[str, bool]:
    """``msg`` with each plain key path replaced by the sweep key path of its value."""
    hit = False
    for plain, swept in paths.items():
        new = re.sub(r"(?<![\w.])" + re.escape(plain) + r"(?![\w.\[-])", lambda _, swept=swept: swept, msg)
        hit, msg = hit or new != msg, new
    return msg, hit
