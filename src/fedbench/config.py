"""Check a workflow config and expand it into fully resolved training cells.

The config shape is documented key by key in ``config/README.md``; the JSON schema
``workflow/schemas/config.schema.yaml`` checks its structure inside Snakemake. This module adds
the checks a schema cannot make (names that must exist in the library's registries, the
algorithms' own hyperparameters, cross-references, consistency of shared partition ids) and is
usable without Snakemake::

    from fedbench.config import check_config, expand_cells
    check_config(cfg)            # raises ConfigError naming the key path and the fix
    cells = expand_cells(cfg)    # one dict per (experiment, dataset, partition, algorithm, seed)

Precedence of per-cell settings (later wins): the experiment's ``rounds``, ``eval_every``,
``target_accuracy``, ``sampling``, ``local``; the same keys under ``experiments.<e>.datasets.<d>``;
``local`` under ``experiments.<e>.algorithms.<label>``. ``augment`` (image datasets): the dataset's
own ``augment`` < ``experiments.<e>.augment`` < ``experiments.<e>.datasets.<d>.augment``. Mappings (``local``, ``sampling``) are merged
key by key. In ``local``, a level that sets ``epochs`` clears an inherited ``steps`` and vice versa;
one mapping may not set both.

Runtime-only blocks are checked here too but never enter a cell spec, so changing them reruns no
training: :func:`train_resources` (per experiment and dataset ``resources``: what a train job
asks the scheduler for; :func:`job_resources` turns them into Snakemake resources per attempt),
:func:`wandb_settings` (``wandb``) and :func:`table_settings` (``tables``, aggregation only).

A cell spec (see :func:`expand_cells`) is built in a fixed key order with canonical types
(floats as float, counts as int), so that reordering or reformatting the YAML does not change
its ``repr``: Snakemake's params trigger then reruns exactly the cells whose values changed.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = [
    "ConfigError", "check_config", "expand_cells", "datasets", "partitions", "train_resources", "job_resources",
    "wandb_settings", "table_settings", "ID_PATTERN", "RESOURCE_DEFAULTS", "WANDB_DEFAULTS", "TABLE_DEFAULTS",
]

# Ids become path components and Snakemake wildcard values (see rules/common.smk).
ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.\-]*"
_ID_RE = re.compile(rf"^{ID_PATTERN}$")

DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float32", "float64")
SAMPLING_SCHEMES = ("uniform", "bernoulli")

TOP_KEYS = {"datasets", "data", "device", "dtype", "engine", "chunk_size", "checkpoint_every", "experiments", "wandb", "tables"}
ENGINES = ("vectorized", "sequential")
EXPERIMENT_KEYS = {"seeds", "rounds", "eval_every", "target_accuracy", "sampling", "local", "datasets", "algorithms",
                   "resources", "paper", "augment", "delta_histogram", "stack_seeds"}
EXPERIMENT_DATASET_KEYS = {"model", "partitions", "rounds", "eval_every", "target_accuracy", "sampling", "local",
                           "resources", "augment"}
#: What one train job asks the scheduler for (runtime only: never part of a cell spec).
#: runtime in minutes, mem_mb in MB (both multiplied by the attempt number on retries), cpus per
#: job, gpus per job (0 = none), gres (a Slurm gres string such as "shard:1" to share a GPU;
#: null = none), slurm_partition (null = the profile's / cluster's default).
RESOURCE_DEFAULTS = {"runtime": 30, "mem_mb": 2000, "cpus": 1, "gpus": 0, "gres": None, "slurm_partition": None}
#: Weights & Biases logging (runtime only). mode: offline (runs written under results/wandb/,
#: uploaded by the `wandb_sync` target) or online (falls back to offline without an API key).
WANDB_DEFAULTS = {"enabled": False, "project": "fedbench", "entity": None, "mode": "offline"}
WANDB_MODES = ("offline", "online")
#: Formatting of the Markdown tables (aggregate rule only: changing it re-aggregates, no retraining).
TABLE_DEFAULTS = {"decimals": 2}
_GRES_RE = re.compile(r"^[a-zA-Z0-9_]+(:[a-zA-Z0-9_.]+)?(:\d+[TGM]?)?$")
LOCAL_KEYS = ("epochs", "steps", "batch_size", "lr", "lr_decay", "weight_decay", "clip_norm")
SAMPLING_DEFAULTS = {"scheme": "uniform", "participation": 1.0}
EXPERIMENT_DEFAULTS = {"eval_every": 1, "target_accuracy": None}

# Range checks for registry parameters that the registries themselves do not state, by name.
# (lo, lo_inclusive, hi, hi_inclusive); None = unbounded.
_HPARAM_BOUNDS = {
    "mu": (0.0, True, None, False),
    "momentum": (0.0, True, 1.0, False),
    "server_lr": (0.0, False, None, False),
    "alpha": (0.0, False, None, False),  # FedDyn α (the server step divides by it)
    "beta": (0.0, True, None, False),
    "lambda1": (0.0, True, None, False),
    "lambda2": (0.0, True, None, False),
    "epsilon": (0.0, True, None, False),  # FedElasticNet's threshold ε on |Δ|
    "dampening": (0.0, True, 1.0, True),
    "tau": (0.0, True, None, False),  # Elastic Aggregation's offset τ; FedAdam/Yogi/Adagrad's adaptivity τ
    "rho": (0.0, True, 1.0, False),  # Elastic Aggregation's sensitivity EMA ρ
    "beta1": (0.0, True, 1.0, False),  # FedAdam/Yogi/Adagrad moment decays
    "beta2": (0.0, True, 1.0, False),
}
_PARTITION_BOUNDS = {
    "alpha": (0.0, False, None, False),  # Dirichlet α
    "num_clients": (1, True, None, False),
    "shards_per_client": (1, True, None, False),
    "classes_per_client": (1, True, None, False),
    "min_size": (0, True, None, False),
}
_DATASET_BOUNDS = {
    "alpha": (0.0, True, None, False),  # Synthetic(α, β): 0 is the standard "no heterogeneity" setting
    "beta": (0.0, True, None, False),
    "num_clients": (1, True, None, False),
    "dim": (1, True, None, False),
    "num_classes": (2, True, None, False),
}
_MODEL_BOUNDS = {}


class ConfigError(ValueError):
    """An invalid workflow config. The message names the full key path and how to fix it."""


# --------------------------------------------------------------------------------------------
# Registries (imported lazily: they live in modules written alongside this one)


def _sources() -> dict:
    from fedbench.data.registry import SOURCES

    return SOURCES


def _schemes() -> dict:
    from fedbench.data.partition import SCHEMES

    return SCHEMES


def _models() -> dict:
    from fedbench.models import MODELS

    return MODELS


def _algorithms() -> tuple:
    import fedbench.algorithms as algorithms

    return tuple(algorithms.ALGORITHMS)


def _hparams(name: str) -> dict:
    import fedbench.algorithms as algorithms

    return dict(algorithms.get_algorithm(name).HPARAMS)


# --------------------------------------------------------------------------------------------
# Small checkers


def _fmt(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _known(options) -> str:
    return ", ".join(str(o) for o in options) if options else "(none)"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _mapping(value: Any, path: str, what: str = "a mapping") -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: must be {what} (got {_fmt(value)})")
    return value


def _check_id(key: Any, path: str) -> None:
    if not isinstance(key, str) or not _ID_RE.match(key):
        raise ConfigError(
            f"{path}: id {key!r} is not allowed; ids become paths and must match {ID_PATTERN} "
            f"(letters, digits, '_', '.', '-'; no '/' or '=')"
        )


def _unknown_keys(d: dict, allowed, path: str) -> None:
    for k in d:
        if k not in allowed:
            raise ConfigError(f"{path}.{k}: unknown key; allowed keys here: {_known(sorted(allowed))}")


def _n(x: Any) -> str:
    """A number as the user wrote it: -1.0 -> '-1', 0.3 -> '0.3'."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def _number(v: Any, path: str, *, lo=None, lo_incl=True, hi=None, hi_incl=True, integer=False) -> float | int:
    if integer:
        if not _is_int(v):
            raise ConfigError(f"{path}: must be an integer (got {_fmt(v)})")
    elif not _is_number(v):
        raise ConfigError(f"{path}: must be a number (got {_fmt(v)})")
    if not math.isfinite(v):
        raise ConfigError(f"{path}: must be finite (got {v})")
    if lo is not None and (v < lo or (v == lo and not lo_incl)):
        raise ConfigError(f"{path}: must be {'>=' if lo_incl else '>'} {_n(lo)} (got {_n(v)})")
    if hi is not None and (v > hi or (v == hi and not hi_incl)):
        raise ConfigError(f"{path}: must be {'<=' if hi_incl else '<'} {_n(hi)} (got {_n(v)})")
    return int(v) if integer else float(v)


def _bounded(v: Any, path: str, bounds) -> None:
    if bounds is None or not _is_number(v):
        return
    lo, lo_incl, hi, hi_incl = bounds
    _number(v, path, lo=lo, lo_incl=lo_incl, hi=hi, hi_incl=hi_incl)


def _coerce_like(v: Any, default: Any, path: str) -> Any:
    """``v`` converted to the type of the registry default ``default`` (canonical repr)."""
    if default is None:
        return v
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise ConfigError(f"{path}: must be true or false (got {_fmt(v)})")
        return v
    if isinstance(default, int):
        if not _is_int(v):
            raise ConfigError(f"{path}: must be an integer (got {_fmt(v)})")
        return v
    if isinstance(default, float):
        if not _is_number(v):
            raise ConfigError(f"{path}: must be a number (got {_fmt(v)})")
        if not math.isfinite(v):
            raise ConfigError(f"{path}: must be finite (got {v})")
        return float(v)
    if isinstance(default, str):
        if not isinstance(v, str):
            raise ConfigError(f"{path}: must be a string (got {_fmt(v)})")
        return v
    if isinstance(default, (list, tuple)):
        if not isinstance(v, (list, tuple)):
            raise ConfigError(f"{path}: must be a list (got {_fmt(v)})")
        return list(v)
    return v


def _resolve_params(given: dict, registry: dict, path: str, what: str, bounds: dict) -> dict:
    """Registry defaults overridden by ``given`` (unknown names rejected), in registry order."""
    out = {}
    for k, v in given.items():
        if k not in registry:
            raise ConfigError(f"{path}.{k}: unknown parameter for {what}; known: {_known(list(registry))}")
    for k, default in registry.items():
        v = given.get(k, default)
        if v is not None:
            v = _coerce_like(v, default, f"{path}.{k}")
            _bounded(v, f"{path}.{k}", bounds.get(k))
        out[k] = v
    return out


# --------------------------------------------------------------------------------------------
# Resolution of the pieces


def _resolve_dataset(dataset_id: str, cfg: Any) -> dict:
    path = f"datasets.{dataset_id}"
    cfg = _mapping(cfg, path)
    if "source" not in cfg:
        raise ConfigError(f"{path}.source: missing; give the data source, one of: {_known(list(_sources()))}")
    source = cfg["source"]
    sources = _sources()
    if source not in sources:
        raise ConfigError(f"{path}.source: unknown dataset source {_fmt(source)}; known sources: {_known(list(sources))}")
    params = {k: v for k, v in cfg.items() if k != "source"}
    resolved = _resolve_params(params, dict(sources[source]), path, f"source {source!r}", _DATASET_BOUNDS)
    try:  # value checks of downloaded sources, made before anything is fetched
        from fedbench.data.registry import REMOTE, check_remote_params
    except ImportError:
        return {"source": source, **resolved}
    if source in REMOTE:
        try:
            check_remote_params(source, resolved)
        except ValueError as e:
            raise ConfigError(f"{path}: {e}") from None
    return {"source": source, **resolved}


def _resolve_partition(path: str, cfg: Any) -> dict:
    cfg = _mapping(cfg, path)
    schemes = _schemes()
    if "scheme" not in cfg:
        raise ConfigError(f"{path}.scheme: missing; give the partition scheme, one of: {_known(list(schemes))}")
    scheme = cfg["scheme"]
    if scheme not in schemes:
        raise ConfigError(f"{path}.scheme: unknown partition scheme {_fmt(scheme)}; known schemes: {_known(list(schemes))}")
    params = {k: v for k, v in cfg.items() if k != "scheme"}
    resolved = _resolve_params(params, dict(schemes[scheme]), path, f"scheme {scheme!r}", _PARTITION_BOUNDS)
    try:  # the partitioner's own value checks (Dirichlet form, ...)
        from fedbench.data.partition import resolve_partition_params
    except ImportError:
        return {"scheme": scheme, **resolved}
    try:
        resolved = resolve_partition_params({"scheme": scheme, **resolved})
    except ValueError as e:
        raise ConfigError(f"{path}: {e}") from None
    return {"scheme": scheme, **resolved}


def _resolve_model(path: str, cfg: Any) -> dict:
    if isinstance(cfg, str):
        cfg = {"name": cfg}
    cfg = _mapping(cfg, path)
    models = _models()
    if "name" not in cfg:
        raise ConfigError(f"{path}.name: missing; give the model, one of: {_known(list(models))}")
    name = cfg["name"]
    if name not in models:
        raise ConfigError(f"{path}.name: unknown model {_fmt(name)}; known models: {_known(list(models))}")
    options = {k: v for k, v in cfg.items() if k != "name"}
    resolved = {"name": name, **_resolve_params(options, dict(models[name]), path, f"model {name!r}", _MODEL_BOUNDS)}
    try:  # the model registry's own value checks (list lengths, paddings, ...)
        from fedbench.models import model_options
    except ImportError:
        return resolved
    try:
        name, opts = model_options(resolved)
    except ValueError as e:
        raise ConfigError(f"{path}: {e}") from None
    return {"name": name, **opts}


def _check_fits(dpath: str, source: str, model: str, parts: dict) -> None:
    """The dataset source can feed the model and has what each partition scheme needs (natural
    clients, coarse labels): fedbench.data.registry.check_fits, before anything is downloaded."""
    from fedbench.data.registry import check_fits

    try:
        check_fits(source, model=model)
    except ValueError as e:
        raise ConfigError(f"{dpath}.model: {e}") from None
    for pid, pcfg in parts.items():
        try:
            check_fits(source, scheme=pcfg.get("scheme") if isinstance(pcfg, dict) else None)
        except ValueError as e:
            raise ConfigError(f"{dpath}.partitions.{pid}: {e}") from None


def _merge_local(base: dict, over: Any, path: str) -> dict:
    over = _mapping(over, path)
    _unknown_keys(over, LOCAL_KEYS, path)
    if over.get("epochs") is not None and over.get("steps") is not None:
        raise ConfigError(
            f"{path}: give exactly one of epochs or steps (got epochs={over['epochs']}, steps={over['steps']}); "
            f"delete one of them"
        )
    out = dict(base)
    if "epochs" in over and over["epochs"] is not None:
        out["steps"] = None
    if "steps" in over and over["steps"] is not None:
        out["epochs"] = None
    out.update(over)
    return out


def _finish_local(local: dict, path: str) -> dict:
    epochs, steps = local.get("epochs"), local.get("steps")
    if (epochs is None) == (steps is None):
        raise ConfigError(
            f"{path}: give exactly one of local.epochs or local.steps "
            f"(got {'both' if epochs is not None else 'neither'})"
        )
    for key in ("batch_size", "lr"):
        if local.get(key) is None:
            raise ConfigError(f"{path}.{key}: missing; set local.{key} in the experiment (or per dataset/algorithm)")
    out = {
        "epochs": None if epochs is None else _number(epochs, f"{path}.epochs", lo=1, integer=True),
        "steps": None if steps is None else _number(steps, f"{path}.steps", lo=1, integer=True),
        "batch_size": _number(local["batch_size"], f"{path}.batch_size", lo=1, integer=True),
        "lr": _number(local["lr"], f"{path}.lr", lo=0.0, lo_incl=False),
        "lr_decay": _number(local.get("lr_decay", 1.0), f"{path}.lr_decay", lo=0.0, lo_incl=False),
        "weight_decay": _number(local.get("weight_decay", 0.0), f"{path}.weight_decay", lo=0.0),
        "clip_norm": None,
    }
    if local.get("clip_norm") is not None:
        out["clip_norm"] = _number(local["clip_norm"], f"{path}.clip_norm", lo=0.0, lo_incl=False)
    return out


def _merge_sampling(base: dict, over: Any, path: str) -> dict:
    over = _mapping(over, path)
    _unknown_keys(over, ("scheme", "participation"), path)
    return {**base, **over}


def _finish_sampling(s: dict, path: str) -> dict:
    if s.get("scheme") not in SAMPLING_SCHEMES:
        raise ConfigError(f"{path}.scheme: must be one of {_known(SAMPLING_SCHEMES)} (got {_fmt(s.get('scheme'))})")
    p = s.get("participation")
    return {
        "scheme": s["scheme"],
        "participation": _number(p, f"{path}.participation", lo=0.0, lo_incl=False, hi=1.0),
    }


def _target(v: Any, path: str) -> float | None:
    if v is None:
        return None
    return _number(v, path, lo=0.0, lo_incl=False, hi=1.0)


def _resolve_algorithm(label: str, cfg: Any, path: str) -> tuple[str, dict, dict]:
    """(algorithm module name, resolved hparams, local overrides) of one algorithm label."""
    cfg = _mapping(cfg, path)
    name = cfg.get("algorithm", label)
    known = _algorithms()
    if name not in known:
        where = f"{path}.algorithm" if "algorithm" in cfg else path
        raise ConfigError(
            f"{where}: unknown algorithm {_fmt(name)}; known algorithms: {_known(known)} "
            f"(a label other than a module name needs `algorithm: <name>`)"
        )
    defaults = _hparams(name)
    given = {k: v for k, v in cfg.items() if k not in ("algorithm", "local")}
    for k in given:
        if k not in defaults:
            raise ConfigError(
                f"{path}.{k}: unknown hyperparameter for algorithm {name!r}; known: {_known(list(defaults))}"
                + ("; local optimizer settings go under `local:`" if k in LOCAL_KEYS else "")
            )
    hparams = {}
    for k, default in defaults.items():
        v = given.get(k, default)
        if v is not None:
            v = _coerce_like(v, default, f"{path}.{k}")
            if _is_number(v) and not math.isfinite(v):
                raise ConfigError(f"{path}.{k}: must be finite (got {v})")
            _bounded(v, f"{path}.{k}", _HPARAM_BOUNDS.get(k))
        hparams[k] = v
    return name, hparams, _mapping(cfg.get("local"), f"{path}.local")


def _check_runtime(config: dict) -> None:
    """Runtime-only keys (how and where jobs run; never part of a cell spec)."""
    data = _mapping(config.get("data"), "data")
    _unknown_keys(data, ("mirror", "trust_mirror_checksums"), "data")
    if data.get("mirror") is not None and not isinstance(data["mirror"], str):
        raise ConfigError(f"data.mirror: must be a directory, file:// or http(s):// prefix, or null (got {_fmt(data['mirror'])})")
    trust = data.get("trust_mirror_checksums", False)
    if not isinstance(trust, bool):
        raise ConfigError(f"data.trust_mirror_checksums: must be true or false (got {_fmt(trust)})")
    if trust and data.get("mirror") is None:
        raise ConfigError("data.trust_mirror_checksums: true needs a local data.mirror holding a SHA256SUMS file; "
                          "set data.mirror or remove trust_mirror_checksums")
    engine = config.get("engine")
    if engine is not None and engine not in ENGINES:
        raise ConfigError(f"engine: must be one of {_known(ENGINES)} or null for the default (got {_fmt(engine)})")
    chunk = config.get("chunk_size")
    if chunk is not None and chunk != "auto":
        _number(chunk, "chunk_size", lo=1, integer=True)
    if config.get("checkpoint_every") is not None:
        _number(config["checkpoint_every"], "checkpoint_every", lo=0, integer=True)
    wandb_settings(config)
    table_settings(config)


def _merge_resources(base: dict, over: Any, path: str) -> dict:
    over = _mapping(over, path)
    _unknown_keys(over, RESOURCE_DEFAULTS, path)
    out = dict(base)
    for k, v in over.items():
        p = f"{path}.{k}"
        if k in ("gres", "slurm_partition"):
            if v is not None and (not isinstance(v, str) or not v):
                raise ConfigError(f"{p}: must be a non-empty string or null (got {_fmt(v)})")
            if k == "gres" and v is not None and not _GRES_RE.match(v):
                raise ConfigError(f"{p}: must look like name[:type][:count], e.g. gpu:1, gpu:a100:2, shard:1 (got {v!r})")
        else:
            v = _number(v, p, lo=0 if k == "gpus" else 1, integer=True)
        out[k] = v
    return out


def train_resources(config: dict) -> dict[tuple[str, str], dict]:
    """``{(experiment, dataset id): resources}``: what each train job of that experiment and
    dataset asks the scheduler for, :data:`RESOURCE_DEFAULTS` overridden by
    ``experiments.<e>.resources`` and then ``experiments.<e>.datasets.<d>.resources`` (key by key).

    Runtime only: these never enter a cell spec, so changing them reruns nothing."""
    out = {}
    for exp, ecfg in _experiments(config).items():
        epath = f"experiments.{exp}"
        ecfg = _mapping(ecfg, epath)
        base = _merge_resources(RESOURCE_DEFAULTS, ecfg.get("resources"), f"{epath}.resources")
        for ds, dcfg in _mapping(ecfg.get("datasets"), f"{epath}.datasets").items():
            dcfg = _mapping(dcfg, f"{epath}.datasets.{ds}")
            out[(exp, ds)] = _merge_resources(base, dcfg.get("resources"), f"{epath}.datasets.{ds}.resources")
    return out


def stacked_seeds(config: dict) -> dict[str, list[int]]:
    """``{experiment: seeds}`` of the experiments with ``stack_seeds: true`` and at least two seeds:
    their train jobs train all seeds of a cell at once (:func:`fedbench.engine.loop.run_cells`).

    Runtime only: it never enters a cell spec. Raises :class:`ConfigError` when ``stack_seeds``
    is not a boolean."""
    out = {}
    for exp, ecfg in _experiments(config).items():
        ecfg = _mapping(ecfg, f"experiments.{exp}")
        flag = ecfg.get("stack_seeds", False)
        if not isinstance(flag, bool):
            raise ConfigError(f"experiments.{exp}.stack_seeds: must be true or false (got {_fmt(flag)})")
        seeds = _seeds(ecfg.get("seeds"), f"experiments.{exp}.seeds")
        if flag and len(seeds) > 1:
            out[exp] = seeds
    return out


def job_resources(resources: dict, attempt: int = 1) -> dict:
    """The Snakemake resources of a train job from its config resources (:func:`train_resources`).

    ``runtime`` (minutes) and ``mem_mb`` are multiplied by ``attempt`` (1, 2, ... under
    ``--retries``), so a job killed for its time or memory limit asks for more the next time;
    ``cpus`` -> ``cpus_per_task`` (Slurm --cpus-per-task; unlike threads, not capped by
    --cores); ``gpus`` -> ``gpu`` (Slurm --gpus; 0 = none); ``gres`` and ``slurm_partition``
    pass through (None = not set)."""
    attempt = max(1, int(attempt))
    return {
        "runtime": resources["runtime"] * attempt,
        "mem_mb": resources["mem_mb"] * attempt,
        "cpus_per_task": resources["cpus"],
        "gpu": resources["gpus"],
        "gres": resources["gres"],
        "slurm_partition": resources["slurm_partition"],
    }


def wandb_settings(config: dict) -> dict:
    """The ``wandb:`` block with defaults (:data:`WANDB_DEFAULTS`), checked. Runtime only."""
    w = _mapping(config.get("wandb"), "wandb")
    _unknown_keys(w, WANDB_DEFAULTS, "wandb")
    out = {**WANDB_DEFAULTS, **w}
    if not isinstance(out["enabled"], bool):
        raise ConfigError(f"wandb.enabled: must be true or false (got {_fmt(out['enabled'])})")
    if not isinstance(out["project"], str) or not out["project"]:
        raise ConfigError(f"wandb.project: must be a non-empty string (got {_fmt(out['project'])})")
    if out["entity"] is not None and (not isinstance(out["entity"], str) or not out["entity"]):
        raise ConfigError(f"wandb.entity: must be a non-empty string or null (got {_fmt(out['entity'])})")
    if out["mode"] not in WANDB_MODES:
        raise ConfigError(f"wandb.mode: must be one of {_known(WANDB_MODES)} (got {_fmt(out['mode'])})")
    return out


def table_settings(config: dict) -> dict:
    """The ``tables:`` block with defaults (:data:`TABLE_DEFAULTS`), checked."""
    t = _mapping(config.get("tables"), "tables")
    _unknown_keys(t, TABLE_DEFAULTS, "tables")
    out = {**TABLE_DEFAULTS, **t}
    out["decimals"] = _number(out["decimals"], "tables.decimals", lo=0, hi=6, integer=True)
    return out


def _augmentation(dataset_id: str, dataset: dict, ecfg: dict, dcfg: dict, epath: str, dpath: str) -> tuple[bool, Any]:
    """(applies, record) of a cell's training augmentation.

    ``applies`` is False for sources without augmentation (no ``augment`` parameter: the spec then
    has no ``augmentation`` key). Otherwise the record (:func:`fedbench.data.images.augmentation_record`;
    None = off) follows ``experiments.<e>.datasets.<d>.augment``, else ``experiments.<e>.augment``,
    else the dataset's own ``augment``. ``augment: true`` given for one dataset of an
    experiment whose source cannot augment is an error; at the experiment level it applies to the
    datasets that can.
    """
    for where, cfg in ((dpath, dcfg), (epath, ecfg)):
        if cfg.get("augment") is not None and not isinstance(cfg["augment"], bool):
            raise ConfigError(f"{where}.augment: must be true, false or null (got {_fmt(cfg['augment'])})")
    if "augment" not in dataset:
        if dcfg.get("augment"):
            able = [s for s, p in _sources().items() if "augment" in p]
            raise ConfigError(
                f"{dpath}.augment: dataset {dataset_id!r} (source {dataset['source']!r}) has no training "
                f"augmentation; it exists for the image sources {_known(able)}; remove the key")
        return False, None
    on = dcfg.get("augment")
    if on is None:
        on = ecfg.get("augment")
    if on is None:
        on = dataset["augment"]
    from fedbench.data.images import augmentation_record

    return True, augmentation_record(on)


def _seeds(v: Any, path: str) -> list[int]:
    if not isinstance(v, list) or not v:
        raise ConfigError(f"{path}: must be a non-empty list of integers >= 0 (got {_fmt(v)})")
    out = [_number(s, f"{path}[{i}]", lo=0, integer=True) for i, s in enumerate(v)]
    if len(set(out)) != len(out):
        raise ConfigError(f"{path}: seeds must be distinct (got {out})")
    return out


# --------------------------------------------------------------------------------------------
# Public API


def datasets(config: dict) -> dict[str, dict]:
    """``{dataset_id: {"source": ..., **params with defaults}}`` for every dataset in ``datasets:``."""
    top = _mapping(config.get("datasets"), "datasets")
    out = {}
    for dataset_id, cfg in top.items():
        _check_id(dataset_id, f"datasets.{dataset_id}")
        out[dataset_id] = _resolve_dataset(dataset_id, cfg)
    return out


def _experiments(config: dict) -> dict:
    exps = _mapping(config.get("experiments"), "experiments")
    if not exps:
        raise ConfigError("experiments: must define at least one experiment (experiments.<name>: {...})")
    return exps


def partitions(config: dict) -> dict[tuple[str, str], dict]:
    """``{(dataset_id, partition_id): {"scheme": ..., **params with defaults}}`` over all experiments.

    Raises:
        ConfigError: the same partition id is given different parameters for the same dataset
            (they would share one ``results/partitions/<dataset>/<partition>/`` directory).
    """
    out: dict[tuple[str, str], dict] = {}
    where: dict[tuple[str, str], str] = {}
    for exp, ecfg in _experiments(config).items():
        ecfg = _mapping(ecfg, f"experiments.{exp}")
        for ds, dcfg in _mapping(ecfg.get("datasets"), f"experiments.{exp}.datasets").items():
            dpath = f"experiments.{exp}.datasets.{ds}"
            dcfg = _mapping(dcfg, dpath)
            parts = _mapping(dcfg.get("partitions"), f"{dpath}.partitions")
            for pid, pcfg in parts.items():
                ppath = f"{dpath}.partitions.{pid}"
                _check_id(pid, ppath)
                resolved = _resolve_partition(ppath, pcfg)
                key = (ds, pid)
                if key in out and out[key] != resolved:
                    raise ConfigError(
                        f"{ppath}: partition id {pid!r} of dataset {ds!r} is already defined at {where[key]} "
                        f"with different parameters ({out[key]} vs {resolved}); partitions are shared across "
                        f"experiments by id, so give this one a different id"
                    )
                out.setdefault(key, resolved)
                where.setdefault(key, ppath)
    return out


def _delta_histogram(v: Any, path: str) -> list | None:
    """An experiment's ``delta_histogram``: null/false = off; true = rounds [1, "last"]; or
    ``{rounds: [t ≥ 1 or "last", ...]}``. Returns the raw round list (None when off)."""
    if v is None or v is False:
        return None
    if v is True:
        return [1, "last"]
    v = _mapping(v, path)
    _unknown_keys(v, {"rounds"}, path)
    rounds = v.get("rounds")
    if not isinstance(rounds, list) or not rounds:
        raise ConfigError(f"{path}.rounds: must be a non-empty list of rounds (integers >= 1 or \"last\"), "
                          f"got {_fmt(rounds)}")
    for i, r in enumerate(rounds):
        if r != "last":
            _number(r, f"{path}.rounds[{i}]", lo=1, integer=True)
    return rounds


def expand_cells(config: dict) -> list[dict]:
    """One fully resolved spec per cell, in config order (experiment, dataset, partition,
    algorithm, seed). Runs every check of :func:`check_config`.

    Each spec has exactly the keys: experiment, dataset, partition, algorithm (the config label),
    seed, algorithm_name, hparams, model, local, sampling, rounds, eval_every, target_accuracy,
    paper (the experiment's ``paper``, or None), dtype; and, for image datasets that can augment (a source with an ``augment`` parameter),
    ``augmentation``: the training augmentation record or None (see :func:`_augmentation`); and,
    for experiments with ``delta_histogram``, ``delta_histogram: {"rounds": [sorted ints]}``
    ("last" resolved to the cell's rounds; a round beyond them is an error).
    ``device`` is deliberately absent: it changes where a cell runs, not its result.
    """
    config = _mapping(config, "config", "a mapping (the parsed YAML)")
    _unknown_keys(config, TOP_KEYS, "config")
    if config.get("device", "auto") not in DEVICES:
        raise ConfigError(f"device: must be one of {_known(DEVICES)} (got {_fmt(config.get('device'))})")
    _check_runtime(config)
    dtype = config.get("dtype", "float32")
    if dtype not in DTYPES:
        raise ConfigError(f"dtype: must be one of {_known(DTYPES)} (got {_fmt(dtype)})")
    known_datasets = datasets(config)
    partitions(config)  # cross-experiment consistency of partition ids

    cells: list[dict] = []
    for exp, ecfg in _experiments(config).items():
        epath = f"experiments.{exp}"
        _check_id(exp, epath)
        ecfg = _mapping(ecfg, epath)
        _unknown_keys(ecfg, EXPERIMENT_KEYS, epath)
        for key in ("seeds", "rounds", "datasets", "algorithms", "local"):
            if ecfg.get(key) is None:
                raise ConfigError(f"{epath}.{key}: missing; see config/README.md")
        if ecfg.get("paper") is not None and not isinstance(ecfg["paper"], str):
            raise ConfigError(f"{epath}.paper: must be a string (got {_fmt(ecfg['paper'])})")
        base_resources = _merge_resources(RESOURCE_DEFAULTS, ecfg.get("resources"), f"{epath}.resources")
        seeds = _seeds(ecfg["seeds"], f"{epath}.seeds")
        base_local = _merge_local({}, ecfg["local"], f"{epath}.local")
        base_sampling = _merge_sampling(SAMPLING_DEFAULTS, ecfg.get("sampling"), f"{epath}.sampling")
        hist_rounds = _delta_histogram(ecfg.get("delta_histogram"), f"{epath}.delta_histogram")

        algos = _mapping(ecfg["algorithms"], f"{epath}.algorithms")
        if not algos:
            raise ConfigError(f"{epath}.algorithms: must list at least one algorithm")
        resolved_algos = {}
        for label, acfg in algos.items():
            apath = f"{epath}.algorithms.{label}"
            _check_id(label, apath)
            resolved_algos[label] = (apath, *_resolve_algorithm(label, acfg, apath))

        exp_datasets = _mapping(ecfg["datasets"], f"{epath}.datasets")
        if not exp_datasets:
            raise ConfigError(f"{epath}.datasets: must list at least one dataset")
        for ds, dcfg in exp_datasets.items():
            dpath = f"{epath}.datasets.{ds}"
            if ds not in known_datasets:
                raise ConfigError(
                    f"{dpath}: unknown dataset id {ds!r}; define it under the top-level `datasets:` "
                    f"(known: {_known(list(known_datasets))})"
                )
            dcfg = _mapping(dcfg, dpath)
            _unknown_keys(dcfg, EXPERIMENT_DATASET_KEYS, dpath)
            _merge_resources(base_resources, dcfg.get("resources"), f"{dpath}.resources")
            if dcfg.get("model") is None:
                raise ConfigError(f"{dpath}.model: missing; give e.g. model: {{name: logreg}}")
            model = _resolve_model(f"{dpath}.model", dcfg["model"])
            rpath = f"{dpath}.rounds" if "rounds" in dcfg else f"{epath}.rounds"
            rounds = _number(dcfg.get("rounds", ecfg["rounds"]), rpath, lo=1, integer=True)
            eve = dcfg.get("eval_every", ecfg.get("eval_every", EXPERIMENT_DEFAULTS["eval_every"]))
            eval_every = _number(eve, f"{dpath}.eval_every" if "eval_every" in dcfg else f"{epath}.eval_every",
                                 lo=1, integer=True)
            tgt = dcfg["target_accuracy"] if "target_accuracy" in dcfg else ecfg.get("target_accuracy")
            target = _target(tgt, f"{dpath}.target_accuracy" if "target_accuracy" in dcfg else f"{epath}.target_accuracy")
            ds_local = _merge_local(base_local, dcfg.get("local"), f"{dpath}.local")
            spath = f"{dpath}.sampling" if "sampling" in dcfg else f"{epath}.sampling"
            sampling = _finish_sampling(_merge_sampling(base_sampling, dcfg.get("sampling"), f"{dpath}.sampling"), spath)
            has_aug, aug_record = _augmentation(ds, known_datasets[ds], ecfg, dcfg, epath, dpath)
            hist = None
            if hist_rounds is not None:
                hist = sorted({rounds if r == "last" else int(r) for r in hist_rounds})
                if hist[-1] > rounds:
                    raise ConfigError(f"{epath}.delta_histogram.rounds: round {hist[-1]} is beyond the {rounds} "
                                      f"rounds of dataset {ds} ({rpath}); use \"last\" for the final round")
            parts = _mapping(dcfg.get("partitions"), f"{dpath}.partitions")
            if not parts:
                raise ConfigError(f"{dpath}.partitions: must define at least one partition, e.g. iid: {{scheme: iid}}")
            _check_fits(dpath, known_datasets[ds]["source"], model["name"], parts)
            for pid in parts:
                for label, (apath, name, hparams, local_over) in resolved_algos.items():
                    local = _finish_local(
                        _merge_local(ds_local, local_over, f"{apath}.local"),
                        f"{apath}.local" if local_over else f"{dpath}.local" if dcfg.get("local") else f"{epath}.local",
                    )
                    for seed in seeds:
                        cell = {
                            "experiment": exp,
                            "dataset": ds,
                            "partition": pid,
                            "algorithm": label,
                            "seed": seed,
                            "algorithm_name": name,
                            "hparams": dict(hparams),
                            "model": dict(model),
                            "local": dict(local),
                            "sampling": dict(sampling),
                            "rounds": rounds,
                            "eval_every": eval_every,
                            "target_accuracy": target,
                            "paper": ecfg.get("paper"),
                            "dtype": dtype,
                        }
                        if has_aug:
                            cell["augmentation"] = aug_record
                        if hist is not None:
                            cell["delta_histogram"] = {"rounds": hist}
                        cells.append(cell)
    return cells


def check_config(config: dict) -> None:
    """Check ``config`` beyond its schema. Raises :class:`ConfigError` naming the key path and the fix."""
    expand_cells(config)
    stacked_seeds(config)
