"""The expansion of a checked config into cells: one per (experiment, dataset, partition,
algorithm, seed), and one per point of a sweep (:func:`expand_cells`).

A cell is built in a fixed key order with canonical types (floats as float, counts as int), so
that reordering or reformatting the YAML does not change its ``repr``: Snakemake's params trigger
then reruns exactly the cells whose values changed. :func:`training_spec` is the part of a cell
that training sees; :data:`REPORT_KEYS` are read by the reports only, :data:`PATH_KEYS` locate
its inputs. The partitions the cells use (swept ones included) are checked for consistency across
experiments: a partition id names one set of parameters per dataset.
"""

from __future__ import annotations

import itertools
import re

from fedbench import layout
from fedbench.config.checks import (
    _check_algorithm_cell,
    _check_minimax,
    _check_runtime,
    _check_seeds,
    _datasets,
    _resolve_algorithm,
    _resolve_partition,
)
from fedbench.config.errors import ConfigError, _fmt, _label_value
from fedbench.config.registries import _schemes
from fedbench.config.settings import (
    SAMPLING_DEFAULTS,
    _dataset_settings,
    _experiment_settings,
    _finish_local,
    _merge_local,
)
from fedbench.config.structure import ID_PATTERN, validated
from fedbench.config.sweeps import (
    _axis_kind,
    _canonical,
    _cell_sweep,
    _check_axes_exist,
    _check_reached,
    _parse_sweep,
    _plain_path,
    _rewrite,
    _substituted,
    _unmeasured,
)

#: A cell's partition id or algorithm label: a config id, then one ``,<short>=<value>`` per swept
#: axis (:func:`expand_cells`); for the workflow's wildcards and results paths.
CELL_ID_PATTERN = ID_PATTERN + r"(?:,[A-Za-z0-9_]+=[A-Za-z0-9_.+\-]+)*"


#: Keys of a cell that only the tables, paper outputs and reports read: not part of the training
#: spec (:func:`training_spec`), so changing them re-aggregates without retraining.
REPORT_KEYS = ("target_accuracy", "paper", "scale", "sweep")


#: Keys of a cell that locate its inputs in the results folder (fedbench.layout): the prepared
#: dataset's and the partition's directories. Not part of its training spec (the data they hold is
#: the dataset's and partition's parameters, which the workflow tracks as the inputs' own).
PATH_KEYS = ("dataset_dir", "partition_dir")


def _copied(value):
    """A copy of a YAML value (dicts and lists of scalars, nested): what ``copy.deepcopy`` gives
    for them, without its memo (a sweep builds one cell per point and seed: ~100,000 in
    ``fedac.yaml``)."""
    if isinstance(value, dict):
        return {k: _copied(v) if isinstance(v, (dict, list)) else v for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


def _seed_cells(exp: dict, dset: dict, pid: str, label: str, algo: tuple[str, dict, dict]) -> list[dict]:
    """The cells of one (partition, algorithm label) of a dataset of an experiment, one per seed."""
    name, hparams, local_over = algo
    after_local = {k: v for k, v in dset["shared"].items() if k != "model"}
    _check_seeds(exp, dset["shared"])
    apath = f"{exp['path']}.algorithms.{label}.local"
    local = _finish_local(_merge_local(dset["local"], local_over, apath), apath if local_over else dset["local_path"])
    _check_algorithm_cell(name, hparams, local, f"{exp['path']}.algorithms.{label}")
    _check_minimax(name, hparams, dset["shared"]["model"], f"{exp['path']}.algorithms.{label}")
    return [{
        "experiment": exp["experiment"], "dataset": dset["dataset"], "partition": pid,
        "algorithm": label, "seed": seed, "algorithm_name": name, "hparams": dict(hparams),
        "model": _copied(dset["shared"]["model"]), "local": dict(local),
        **_copied(after_local), "sweep": None,
    } for seed in exp["seeds"]]


def _swept_cells(ctx: dict, ds: str, pid: str, label: str, axes: dict, factors: list, select: dict) -> list[dict]:
    """The cells of the sweep of one (dataset, partition, algorithm label): one per point of the
    product of ``factors`` and seed, each resolved as if its values had been given as single
    values; errors name the sweep key path of the offending value."""
    settings, cfgs, epath = ctx["settings"], [ctx["ecfg"], ctx["dcfg"], ctx["ecfg"]["algorithms"][label]], ctx["epath"]
    dpath, apath = f"{epath}.datasets.{ds}", f"{epath}.algorithms.{label}"
    cells, canon, owner = [], {a: {} for a in axes}, {}
    for combo in itertools.product(*[[(group, i) for i in rows] for group, rows in factors]):
        idx = {a: i for group, i in combo for a in group}
        point = {a: (axes[a][0], axes[a][1][idx[a]]) for a in axes}
        where = {a: f"{axes[a][2]}[{idx[a]}]" for a in axes}
        e2, d2, a2 = _substituted(cfgs, pid, point)
        try:
            key = repr((pid, [(a, li, v) for a, (li, v) in point.items()
                              if _axis_kind(a) != "hparam" and not (_axis_kind(a) == "local" and li == 2)]))
            if key not in ctx["cache"]:
                s2 = {**settings, "local": _merge_local({}, e2["local"], f"{epath}.local"),
                      "sampling": {**SAMPLING_DEFAULTS, **(e2.get("sampling") or {})}}
                ctx["cache"][key] = (s2, _dataset_settings(s2, e2, ds, d2, ctx["known"], ctx["dtype"]),
                                     _resolve_partition(f"{dpath}.partitions.{pid}", d2["partitions"][pid]))
            s2, dset2, part = ctx["cache"][key]
            point_cells = _seed_cells(s2, dset2, pid, label, _resolve_algorithm(label, a2, apath))
        except ConfigError as e:
            plain = {_plain_path(a, li, epath, dpath, apath, pid): where[a] for a, (li, _) in point.items()}
            msg, hit = _rewrite(str(e), plain)
            if hit and any(_axis_kind(a) == "hparam" and li < 2 for a, (li, _) in point.items()):
                msg += f" (algorithm {label!r})"
            if not hit:
                msg += f" (at the sweep point {', '.join(f'{where[a]} = {_fmt(v)}' for a, (_, v) in point.items())})"
            raise ConfigError(msg) from None
        why = _unmeasured(select["metric"], point_cells[0])
        if why is not None:
            raise ConfigError(f"{select['metric_path']}: the sweep of cell {label!r} ({ds}/{pid}) cannot select on "
                              f"{select['metric']!r}: {why}; choose a metric its cells record, e.g. test_accuracy")
        values = {a: _canonical(a, point_cells[0], part) for a in axes}
        for a in axes:
            canon[a][idx[a]] = values[a]
        suffix = {kind: "".join(f",{a.rsplit('.', 1)[-1]}={_label_value(v)}" for a, v in values.items()
                                if (_axis_kind(a) == "partition") == (kind == "partition"))
                  for kind in ("partition", "algorithm")}
        name = (pid + suffix["partition"], label + suffix["algorithm"])
        for a, v in values.items():
            if not re.fullmatch(r"[A-Za-z0-9_.+\-]+", _label_value(v)):
                raise ConfigError(f"{where[a]}: the value {_fmt(v)} cannot be written into a cell's label or "
                                  f"partition id (they become paths): use letters, digits, '_', '.', '+' or '-'")
        if name in owner:
            raise ConfigError(
                f"{', '.join(where.values())}: this sweep point gives the same cell as "
                f"{', '.join(owner[name])} (partition {name[0]!r}, algorithm {name[1]!r}): two values that are "
                f"equal once converted (1 and 1.0), or two axes with the same last key component; give each "
                f"value once, or sweep one of the axes under another algorithm label")
        owner[name] = list(where.values())
        if suffix["partition"]:
            ctx["add_partition"]((ds, name[0]), part, f"{dpath}.partitions.{pid} swept by {', '.join(where.values())}")
        for c in point_cells:
            c["partition"], c["algorithm"] = name
            c["sweep"] = {"label": label, "partition": pid, "point": dict(values), "grid": None,
                          "select": {k: v for k, v in select.items() if k != "metric_path"}}
        cells += point_cells
    grid = {a: [canon[a][i] for i in rows] for group, rows in factors for a in group}
    grid = {a: grid[a] for a in axes}
    for c in cells:
        c["sweep"]["grid"] = _copied(grid)
    return cells


def _expand(cfg: dict) -> tuple[list[dict], dict[tuple[str, str], dict]]:
    """The cells of a validated config and the partitions they use (swept ones included)."""
    _check_runtime(cfg)
    known = _datasets(cfg)
    parts: dict[tuple[str, str], dict] = {}
    where: dict[tuple[str, str], str] = {}

    def add_partition(key: tuple[str, str], resolved: dict, path: str) -> None:
        if key in parts and parts[key] != resolved:
            raise ConfigError(
                f"{path}: partition id {key[1]!r} of dataset {key[0]!r} is already defined at {where[key]} "
                f"with different parameters ({parts[key]} vs {resolved}); partitions are shared across "
                f"experiments by id, so give this one a different id")
        parts.setdefault(key, resolved)
        where.setdefault(key, path)

    for exp, ecfg in cfg["experiments"].items():  # cross-experiment consistency of partition ids
        for ds, dcfg in ecfg["datasets"].items():
            for pid, pcfg in dcfg["partitions"].items():
                ppath = f"experiments.{exp}.datasets.{ds}.partitions.{pid}"
                add_partition((ds, pid), _resolve_partition(ppath, pcfg), ppath)
    import fedbench.algorithms as algorithms

    cells = []
    for exp, ecfg in cfg["experiments"].items():
        settings = _experiment_settings(exp, ecfg)
        epath = settings["path"]
        hparams = {label: algorithms.get_algorithm(algo[0]).HPARAMS for label, algo in settings["algorithms"].items()}
        all_schemes = [p["scheme"] for d in ecfg["datasets"].values() for p in d["partitions"].values()]
        lvl_e = _parse_sweep(ecfg.get("sweep"), f"{epath}.sweep", ecfg.get("local"))
        _check_axes_exist(lvl_e, 0, hparams, all_schemes)
        lvl_a = {}
        for label, acfg in ecfg["algorithms"].items():
            acfg = acfg or {}
            lvl_a[label] = _parse_sweep(acfg.get("sweep"), f"{epath}.algorithms.{label}.sweep", acfg.get("local"))
            _check_axes_exist(lvl_a[label], 2, {label: hparams[label]}, all_schemes)
        reached: set[str] = set()
        for ds, dcfg in ecfg["datasets"].items():
            dset = _dataset_settings(settings, ecfg, ds, dcfg, known, cfg["dtype"])
            lvl_d = _parse_sweep(dcfg.get("sweep"), f"{epath}.datasets.{ds}.sweep", dcfg.get("local"))
            _check_axes_exist(lvl_d, 1, hparams, [p["scheme"] for p in dcfg["partitions"].values()])
            ctx = {"settings": settings, "ecfg": ecfg, "dcfg": dcfg, "epath": epath, "known": known,
                   "dtype": cfg["dtype"], "cache": {}, "add_partition": add_partition}
            for pid in dset["partitions"]:
                scheme = dcfg["partitions"][pid]["scheme"]
                for label, algo in settings["algorithms"].items():
                    def applies(axis, hp=hparams[label], scheme=scheme):
                        kind = _axis_kind(axis)
                        return ((kind != "hparam" or axis in hp)
                                and (kind != "partition" or axis.split(".", 1)[1] in _schemes()[scheme]))

                    levels = [lvl_e, lvl_d, lvl_a[label]]
                    axes, factors, select = _cell_sweep(levels, [ecfg, dcfg, ecfg["algorithms"][label]], applies,
                                                        reached)
                    cells += (_swept_cells(ctx, ds, pid, label, axes, factors, select) if axes
                              else _seed_cells(settings, dset, pid, label, algo))
            _check_reached(lvl_d, reached)
        for lvl in (lvl_e, *lvl_a.values()):
            _check_reached(lvl, reached)
    from fedbench.papers import cell_scale  # the paper registry (its modules import plotting)

    dirs, scales = {}, {}  # (dataset, partition, seed): the two directories, digested once; scales likewise
    for c in cells:  # where the cell's inputs live: directories named by what they hold (fedbench.layout)
        steps = c["local"].get("steps")  # an int, None (epochs), or a distribution of heterogeneous local work
        skey = (c["paper"], c["dataset"], c["rounds"], steps if isinstance(steps, int) else None)
        if skey not in scales:  # after the sweeps: a swept rounds or local.steps changes the scale
            scales[skey] = cell_scale(c["paper"], known[c["dataset"]], *skey[2:])
        c["scale"] = scales[skey]
        key = (c["dataset"], c["partition"], c["seed"])
        if key not in dirs:
            dparams = known[c["dataset"]]
            dirs[key] = (layout.dataset_dir(c["dataset"], dparams),
                         layout.partition_dir(c["dataset"], dparams, c["partition"], parts[key[:2]], c["seed"]))
        c["dataset_dir"], c["partition_dir"] = dirs[key]
    return cells, parts


def expand_cells(config: dict) -> list[dict]:
    """One fully resolved cell per (experiment, dataset, partition, algorithm, seed), in config
    order. Runs every check of :func:`check_config`.

    Each cell has exactly the keys: experiment, dataset, partition, algorithm (the config label),
    seed, algorithm_name, hparams, model, local, sampling, rounds, eval_every, target_accuracy,
    paper (the experiment's ``paper``, or None), scale (the scale its paper's claims are decided at:
    :func:`fedbench.papers.cell_scale`), dtype; and, for image datasets that can augment
    (a source with an ``augment`` parameter), ``augmentation``: the training augmentation record
    or None (see :func:`_augmentation`); and, for experiments with ``delta_histogram``,
    ``delta_histogram: {"rounds": [sorted ints]}`` ("last" resolved to the cell's rounds; a round
    beyond them is an error); ``collapse`` when the experiment sets it; ``eval_initial: True`` when
    the experiment or dataset sets it true (a round-0 row, :meth:`fedbench.engine.rounds.cell.Cell.evaluate_initial`);
    ``uplink_entropy: False`` when the experiment turns the entropy measurement off;
    last, ``sweep``: None for a cell of no sweep, else
    ``{"label": <configured label>, "partition": <configured partition id>, "point": {axis: value},
    "grid": {axis: [values]}, "select": {metric, statistic, last, direction, average_seeds}}``
    (axes in axis order: experiment level, then dataset, then algorithm, an inner level's axis in
    place of the outer one's; values canonical, as the cell trains with them; zipped axes as lists
    of equal length). A swept cell's ``algorithm`` is the label plus ``,<short>=<value>`` per axis
    (short: the axis key's last dotted component; value: repr of a float, str of an int, null,
    true/false), e.g. ``fedprox,lr=0.1,mu=0.01``; ``partition.<param>`` axes suffix ``partition``
    instead (``iid,num_clients=10``). ``device`` is deliberately absent: it changes where a cell
    runs, not its result. :data:`REPORT_KEYS` are for the tables and reports only (see
    :func:`training_spec`).

    Raises:
        ConfigError: anything :func:`check_config` rejects; for sweeps also an unknown axis, an empty
            list, a duplicate value, zip lists of unequal length, an axis both gridded and zipped at
            one level, a bare name no algorithm of the experiment has (a partition parameter no
            partition it reaches has), an axis that reaches no cell (inner single values everywhere),
            an unknown ``select.metric`` and two points giving the same cell.
    """
    return _expand(validated(config))[0]


def training_spec(cell: dict) -> dict:
    """The spec a cell is trained with: everything in it that changes its result (the cell less
    :data:`REPORT_KEYS` and :data:`PATH_KEYS`). Its :func:`fedbench.engine.rounds.cell.spec_id` names the
    cell's results."""
    return {k: v for k, v in cell.items() if k not in REPORT_KEYS and k not in PATH_KEYS}


def check_config(config: dict) -> None:
    """Check ``config``: its structure against the schema, then its meaning. Raises
    :class:`ConfigError` naming the key path and the fix."""
    expand_cells(config)


def datasets(config: dict) -> dict[str, dict]:
    """``{dataset_id: {"source": ..., **params with defaults}}`` for every dataset in ``datasets:``."""
    return _datasets(validated(config))


def partitions(config: dict) -> dict[tuple[str, str], dict]:
    """``{(dataset_id, partition_id): {"scheme": ..., **params with defaults}}`` over all experiments,
    the partitions of sweeps over ``partition.<param>`` included (ids such as ``iid,num_clients=10``).

    Raises:
        ConfigError: the same partition id is given different parameters for the same dataset
            (they would share one ``results/partitions/<dataset>/<partition>/`` directory).
    """
    return _expand(validated(config))[1]
