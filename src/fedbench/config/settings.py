"""A cell's settings merged across the levels of a config, in canonical form.

Precedence of per-cell settings (later wins): the experiment's ``rounds``, ``eval_every``,
``target_accuracy``, ``sampling``, ``local``; the same keys under ``experiments.<e>.datasets.<d>``;
``local`` under ``experiments.<e>.algorithms.<label>``. ``augment`` (image datasets): the
dataset's own ``augment`` < ``experiments.<e>.augment`` < ``experiments.<e>.datasets.<d>.augment``.
Mappings (``local``, ``sampling``) are merged key by key. In ``local``, a level that sets
``epochs`` clears an inherited ``steps`` and vice versa; one mapping may not set both.
"""

from __future__ import annotations

from typing import Any

from fedbench.config.checks import (
    _check_chance_margin,
    _check_fits,
    _check_sizes,
    _resolve_algorithm,
    _resolve_model,
    _resolve_partition,
)
from fedbench.config.errors import ConfigError, _finite, _known
from fedbench.config.registries import _sources

# Defaults of the mappings merged across levels (experiment < dataset < algorithm): the schema
# cannot state them, since a default would shadow the outer level's value.
SAMPLING_DEFAULTS = {"scheme": "uniform", "participation": 1.0}
LOCAL_DEFAULTS = {"lr_decay": 1.0, "weight_decay": 0.0, "clip_norm": None, "replacement": False, "lr_schedule": None}
#: Local keys a cell's ``local`` holds only when they differ from their default, so that adding
#: them left every existing cell's spec (and spec_id) unchanged.
LOCAL_OPTIONAL = {"replacement": False, "lr_schedule": None}


def _merge_local(base: dict, over: dict | None, path: str) -> dict:
    """``base`` overridden by the level's ``over`` (epochs and steps clear each other). The level's
    own local-work distributions and lr schedule are checked here, at their key paths, even where
    an inner level or a sweep replaces them in every cell."""
    over = over or {}
    if over.get("epochs") is not None and over.get("steps") is not None:
        raise ConfigError(f"{path}: give exactly one of epochs or steps (got epochs={over['epochs']}, "
                          f"steps={over['steps']}); delete one of them")
    for key in ("epochs", "steps"):
        _local_work(over.get(key), f"{path}.{key}")
    if over.get("lr_schedule") is not None:
        _lr_schedule(over["lr_schedule"], f"{path}.lr_schedule")
    out = dict(base)
    if over.get("epochs") is not None:
        out["steps"] = None
    if over.get("steps") is not None:
        out["epochs"] = None
    return {**out, **over}


def _finish_local(local: dict, path: str) -> dict:
    """The merged ``local`` in canonical form (fixed key order; counts int, rates float;
    ``replacement`` only when true, ``lr_schedule`` only when set).

    Raises:
        ConfigError: not exactly one of epochs/steps, batch_size or lr missing, a non-finite rate,
            ``replacement`` not a boolean or given with epochs (key path ``<path>.replacement``), or
            a bad ``lr_schedule`` (:func:`_lr_schedule`).
    """
    local = {**LOCAL_DEFAULTS, **local}
    epochs, steps = local.get("epochs"), local.get("steps")
    if (epochs is None) == (steps is None):
        raise ConfigError(f"{path}: give exactly one of local.epochs or local.steps "
                          f"(got {'both' if epochs is not None else 'neither'})")
    for key in ("batch_size", "lr"):
        if local.get(key) is None:
            raise ConfigError(f"{path}.{key}: missing; set local.{key} in the experiment (or per dataset/algorithm)")
    replacement = local["replacement"]
    if not isinstance(replacement, bool):
        raise ConfigError(f"{path}.replacement: must be true or false, got {replacement!r}")
    if replacement and epochs is not None:
        raise ConfigError(f"{path}.replacement: minibatches drawn with replacement need local.steps (an epoch is a "
                          f"pass without replacement; got epochs={epochs}): give local.steps instead of "
                          f"local.epochs, or set replacement: false")
    out = {
        "epochs": _local_work(epochs, f"{path}.epochs"),
        "steps": _local_work(steps, f"{path}.steps"),
        "batch_size": int(local["batch_size"]),
        "lr": _finite(local["lr"], f"{path}.lr"),
        "lr_decay": _finite(local["lr_decay"], f"{path}.lr_decay"),
        "weight_decay": _finite(local["weight_decay"], f"{path}.weight_decay"),
        "clip_norm": None if local["clip_norm"] is None else _finite(local["clip_norm"], f"{path}.clip_norm"),
    }
    if replacement:  # only when true: every cell without it keeps its spec and spec_id
        out["replacement"] = True
    if local["lr_schedule"] is not None:  # only when set, likewise
        out["lr_schedule"] = _lr_schedule(local["lr_schedule"], f"{path}.lr_schedule")
    return out


def _lr_schedule(schedule: Any, path: str) -> dict:
    """``local.lr_schedule`` in canonical form ``{"milestones": [int, ...], "factor": float}``
    (factor defaults to 0.1): the step schedule of :meth:`fedbench.engine.spec.LocalWork.lr_at`.

    Raises:
        ConfigError: not a mapping, milestones missing, not integers >= 1 or not strictly
            increasing, or a factor that is not a finite number > 0 (key paths
            ``<path>.milestones``, ``<path>.factor``).
    """
    if not isinstance(schedule, dict):
        raise ConfigError(f"{path}: must be a mapping {{milestones: [...], factor: 0.1}}, got {schedule!r}")
    milestones = schedule.get("milestones")
    if (not isinstance(milestones, list) or not milestones
            or not all(isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in milestones)):
        raise ConfigError(f"{path}.milestones: must be a non-empty list of rounds (integers >= 1), got "
                          f"{milestones!r}; e.g. [100, 200] multiplies the lr by factor after rounds 100 and 200")
    if any(b <= a for a, b in zip(milestones, milestones[1:])):
        raise ConfigError(f"{path}.milestones: must be strictly increasing, got {milestones}; sort them and "
                          "drop repeats")
    factor = schedule.get("factor", 0.1)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 0:
        raise ConfigError(f"{path}.factor: must be a number > 0, got {factor!r}")
    return {"milestones": [int(m) for m in milestones], "factor": _finite(factor, f"{path}.factor")}


def _local_work(amount: Any, path: str) -> int | dict | None:
    """``local.epochs`` / ``local.steps`` in canonical form: None, an int, or the distribution
    ``{"distribution", "low", "high", "per"}`` in that key order (``per`` defaults to ``"round"``;
    drawn by :func:`fedbench.engine.clients.batches.local_work`).

    Raises:
        ConfigError: low > high (key path ``<path>.high``).
    """
    if amount is None or not isinstance(amount, dict):
        return None if amount is None else int(amount)
    low, high = int(amount["low"]), int(amount["high"])
    if low > high:
        raise ConfigError(f"{path}.high: must be >= {path}.low (got low={low}, high={high}); "
                          f"the count is drawn uniformly from {{low, ..., high}}")
    return {"distribution": str(amount["distribution"]), "low": low, "high": high,
            "per": str(amount.get("per", "round"))}


def _augmentation(dataset_id: str, dataset: dict, ecfg: dict, dcfg: dict, dpath: str) -> tuple[bool, Any]:
    """(applies, record) of a cell's training augmentation.

    ``applies`` is False for sources without augmentation (no ``augment`` parameter: the spec then
    has no ``augmentation`` key). Otherwise the record (:func:`fedbench.data.images.augmentation_record`;
    None = off) follows ``experiments.<e>.datasets.<d>.augment``, else ``experiments.<e>.augment``,
    else the dataset's own ``augment``. ``augment: true`` given for one dataset of an
    experiment whose source cannot augment is an error; at the experiment level it applies to the
    datasets that can.
    """
    if "augment" not in dataset:
        if dcfg.get("augment"):
            able = [s for s, p in _sources().items() if "augment" in p]
            raise ConfigError(
                f"{dpath}.augment: dataset {dataset_id!r} (source {dataset['source']!r}) has no training "
                f"augmentation; it exists for the image sources {_known(able)}; remove the key")
        return False, None
    on = next((v for v in (dcfg.get("augment"), ecfg.get("augment"), dataset["augment"]) if v is not None), None)
    from fedbench.data.images import augmentation_record

    return True, augmentation_record(on)


def _histogram_rounds(v: Any, rounds: int, epath: str, rpath: str, ds: str) -> list[int] | None:
    """An experiment's ``delta_histogram`` for a dataset of ``rounds`` rounds: null/false = off
    (None); true = rounds [1, "last"]; ``{rounds: [...]}``; sorted, "last" resolved."""
    if v is None or v is False:
        return None
    hist = sorted({rounds if r == "last" else int(r) for r in ([1, "last"] if v is True else v["rounds"])})
    if hist[-1] > rounds:
        raise ConfigError(f"{epath}.delta_histogram.rounds: round {hist[-1]} is beyond the {rounds} "
                          f"rounds of dataset {ds} ({rpath}); use \"last\" for the final round")
    return hist


def _experiment_settings(exp: str, ecfg: dict) -> dict:
    """What every dataset of experiment ``exp`` starts from, its algorithms resolved."""
    from fedbench.papers import check_paper  # the paper registry (its modules import plotting)

    epath = f"experiments.{exp}"
    check_paper(ecfg.get("paper"), f"{epath}.paper", ConfigError)
    return {
        "experiment": exp,
        "path": epath,
        "seeds": [int(s) for s in ecfg["seeds"]],
        "local": _merge_local({}, ecfg["local"], f"{epath}.local"),
        "sampling": {**SAMPLING_DEFAULTS, **(ecfg.get("sampling") or {})},
        "algorithms": {label: _resolve_algorithm(label, acfg, f"{epath}.algorithms.{label}")
                       for label, acfg in ecfg["algorithms"].items()},
        "paper": ecfg.get("paper"),
    }


def _dataset_settings(exp: dict, ecfg: dict, ds: str, dcfg: dict, known: dict, dtype: str) -> dict:
    """The settings shared by all cells of one dataset of an experiment (a cell without its
    partition, algorithm and seed), and the local settings its algorithms start from."""
    epath, dpath = exp["path"], f"{exp['path']}.datasets.{ds}"
    if ds not in known:
        raise ConfigError(f"{dpath}: unknown dataset id {ds!r}; define it under the top-level `datasets:` "
                          f"(known: {_known(list(known))})")
    model = _resolve_model(f"{dpath}.model", dcfg["model"])
    _check_fits(dpath, known[ds]["source"], model["name"], dcfg["partitions"], known[ds])
    _check_sizes(dpath, ds, known[ds], {pid: _resolve_partition(f"{dpath}.partitions.{pid}", pcfg)
                                        for pid, pcfg in dcfg["partitions"].items()})

    def inherited(key):  # the dataset's value, else the experiment's (schema defaults filled)
        return dcfg[key] if key in dcfg else ecfg[key]

    def inherited_or_none(key):  # the same for a key without a schema default (None when unset)
        return dcfg[key] if dcfg.get(key) is not None else ecfg.get(key)

    rounds = int(inherited("rounds"))
    target = inherited("target_accuracy")
    sampling = {**exp["sampling"], **(dcfg.get("sampling") or {})}
    shared = {
        "model": model,
        "sampling": {"scheme": sampling["scheme"], "participation": float(sampling["participation"])},
        "rounds": rounds,
        "eval_every": int(inherited("eval_every")),
        "target_accuracy": None if target is None else float(target),
        "paper": exp["paper"],
        "scale": None,  # its place in the cell's key order: set once the sweeps are applied (cells._expand)
        "dtype": dtype,
    }
    has_aug, record = _augmentation(ds, known[ds], ecfg, dcfg, dpath)
    if has_aug:
        shared["augmentation"] = record
    rpath = f"{dpath}.rounds" if "rounds" in dcfg else f"{epath}.rounds"
    hist = _histogram_rounds(ecfg.get("delta_histogram"), rounds, epath, rpath, ds)
    if hist is not None:
        shared["delta_histogram"] = {"rounds": hist}
    if ecfg.get("collapse") is not None:  # only when set: the engine's defaults otherwise, same spec_id
        _check_chance_margin(ecfg["collapse"], known[ds], f"{epath}.collapse.chance_margin", ds)
        shared["collapse"] = ecfg["collapse"]
    if inherited_or_none("eval_initial"):  # only when true: no round-0 row otherwise, same spec_id
        shared["eval_initial"] = True
    if ecfg.get("uplink_entropy") is False:  # only when false: measured otherwise, same spec_id
        shared["uplink_entropy"] = False
    local_path = f"{dpath}.local" if dcfg.get("local") else f"{epath}.local"
    return {"dataset": ds, "partitions": list(dcfg["partitions"]), "shared": shared,
            "local": _merge_local(exp["local"], dcfg.get("local"), f"{dpath}.local"), "local_path": local_path}
