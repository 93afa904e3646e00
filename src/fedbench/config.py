"""Check a workflow config and expand it into fully resolved training cells.

The config shape is documented key by key in ``config/README.md``. Its structure (keys, types,
ranges, defaults) is owned by one JSON schema, ``workflow/schemas/config.schema.yaml``;
:func:`validated` checks a config against it (the first error becomes a :class:`ConfigError`
naming the key path and what is allowed) and fills its defaults. This module then adds only what
a schema cannot check: names that must exist in the library's registries, the algorithms' own
hyperparameters and their ranges (each algorithm module's ``HPARAMS`` and ``BOUNDS``),
cross-references and the consistency of shared partition ids. Usable without Snakemake::

    from fedbench.config import check_config, expand_cells
    check_config(cfg)            # raises ConfigError naming the key path and the fix
    cells = expand_cells(cfg)    # one dict per (experiment, dataset, partition, algorithm, seed)

Precedence of per-cell settings (later wins): the experiment's ``rounds``, ``eval_every``,
``target_accuracy``, ``sampling``, ``local``; the same keys under ``experiments.<e>.datasets.<d>``;
``local`` under ``experiments.<e>.algorithms.<label>``. ``augment`` (image datasets): the
dataset's own ``augment`` < ``experiments.<e>.augment`` < ``experiments.<e>.datasets.<d>.augment``.
Mappings (``local``, ``sampling``) are merged key by key. In ``local``, a level that sets
``epochs`` clears an inherited ``steps`` and vice versa; one mapping may not set both.

Sweeps (``sweep:`` under ``experiments.<e>``, ``experiments.<e>.datasets.<d>`` or
``experiments.<e>.algorithms.<label>``): ``grid`` axes form a Cartesian product, ``zip`` axes are
paired value by value; every point becomes a normal cell, resolved exactly as if its values had
been given as single values where the sweep stands (hyperparameters in the algorithm, partition
parameters in the partition), so every value gets the checks a single value gets and an error
names the sweep key path (``experiments.s.algorithms.fedprox.sweep.grid.mu[2]: must be >= 0
(got -1)``). An inner level's sweep of the same axis replaces the outer one's values; an inner
level's single value wins over an outer sweep (that cell is not swept along the axis); ``select``
is merged key by key. A swept cell's ``algorithm`` label (or, for ``partition.<param>`` axes, its
``partition`` id) gets one ``,<short>=<value>`` per axis, and its report-only ``sweep`` key holds
the configured label and partition, the point, the grid and ``select`` (:func:`expand_cells`).
A point's spec depends on its values only: adding a value adds cells and changes no other cell's
:func:`training_spec`.

Runtime-only blocks never enter a cell spec, so changing them reruns no training:
:func:`train_resources` (per experiment and dataset ``resources``: what a train job asks the
scheduler for; :func:`job_resources` turns them into Snakemake resources per attempt),
:func:`wandb_settings` (``wandb``), :func:`table_settings` (``tables``, aggregation only) and
:func:`stacked_experiments` (``stack``).

A cell (see :func:`expand_cells`) is built in a fixed key order with canonical types (floats as
float, counts as int), so that reordering or reformatting the YAML does not change its ``repr``:
Snakemake's params trigger then reruns exactly the cells whose values changed.
:func:`training_spec` is the part of a cell that training sees.
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from fedbench import layout

__all__ = [
    "ConfigError", "validated", "typed_overrides", "load_yaml_strict", "check_config",
    "expand_cells", "training_spec", "datasets", "partitions",
    "train_resources", "job_resources", "stacked_experiments", "wandb_settings", "table_settings", "SCHEMA_PATH",
    "ID_PATTERN", "CELL_ID_PATTERN", "RESOURCE_DEFAULTS", "WANDB_DEFAULTS", "TABLE_DEFAULTS", "REPORT_KEYS",
    "SELECT_DEFAULTS", "select_metrics", "workflow_config",
]

#: The JSON schema of the config (structure, types, ranges, defaults).
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


@cache
def schema() -> dict:
    """The parsed config schema (:data:`SCHEMA_PATH`)."""
    return yaml.safe_load(SCHEMA_PATH.read_text())


_PROPS = schema()["properties"]
# Ids become path components and Snakemake wildcard values (see rules/common.smk).
ID_PATTERN = schema()["$defs"]["id"]["pattern"].removeprefix("^").removesuffix("$")
#: A cell's partition id or algorithm label: a config id, then one ``,<short>=<value>`` per swept
#: axis (:func:`expand_cells`); for the workflow's wildcards and results paths.
CELL_ID_PATTERN = ID_PATTERN + r"(?:,[A-Za-z0-9_]+=[A-Za-z0-9_.+\-]+)*"
#: Weights & Biases logging (runtime only), as the schema's defaults.
WANDB_DEFAULTS = {k: p["default"] for k, p in _PROPS["wandb"]["properties"].items()}
#: Formatting of the Markdown tables (aggregate rule only), as the schema's defaults.
TABLE_DEFAULTS = {k: p["default"] for k, p in _PROPS["tables"]["properties"].items()}
#: What one train job asks the scheduler for (runtime only: never part of a cell spec).
#: runtime in minutes, mem_mb in MB (both multiplied by the attempt number on retries), cpus per
#: job, gpus per job (0 = none), gres (a Slurm gres string such as "shard:1" to share a GPU;
#: null = none), slurm_partition (null = the profile's / cluster's default). Not schema defaults:
#: an unset key is inherited from the outer level.
#: runtime None: the job's estimated time with a margin (fedbench.estimate.auto_runtime, at least 30 min).
RESOURCE_DEFAULTS = {"runtime": None, "mem_mb": 2000, "cpus": 1, "gpus": 0, "gres": None, "slurm_partition": None}
# Defaults of the mappings merged across levels (experiment < dataset < algorithm): the schema
# cannot state them, since a default would shadow the outer level's value.
SAMPLING_DEFAULTS = {"scheme": "uniform", "participation": 1.0}
LOCAL_DEFAULTS = {"lr_decay": 1.0, "weight_decay": 0.0, "clip_norm": None, "replacement": False, "lr_schedule": None}
#: Local keys a cell's ``local`` holds only when they differ from their default, so that adding
#: them left every existing cell's spec (and spec_id) unchanged.
LOCAL_OPTIONAL = {"replacement": False, "lr_schedule": None}
LOCAL_KEYS = tuple(schema()["$defs"]["local"]["properties"])
#: Keys of a cell that only the tables, paper outputs and reports read: not part of the training
#: spec (:func:`training_spec`), so changing them re-aggregates without retraining.
REPORT_KEYS = ("target_accuracy", "paper", "sweep")
#: Keys of a cell that locate its inputs in the results folder (fedbench.layout): the prepared
#: dataset's and the partition's directories. Not part of its training spec (the data they hold is
#: the dataset's and partition's parameters, which the workflow tracks as the inputs' own).
PATH_KEYS = ("dataset_dir", "partition_dir")

# Ranges of registry parameters that the data registries do not state, by parameter name (the
# algorithms state theirs: ``BOUNDS`` in each module). Intervals as in mathematics.
_PARTITION_BOUNDS = {
    "alpha": "(0, inf)",  # Dirichlet α
    "num_clients": "[1, inf)",
    "shards_per_client": "[1, inf)",
    "classes_per_client": "[1, inf)",
    "min_size": "[0, inf)",
    "sigma": "[0, 5]",  # log-normal client sizes: fedbench.data.partition.MAX_SIGMA says why
}
_DATASET_BOUNDS = {
    "alpha": "[0, inf)",  # Synthetic(α, β): 0 is the standard "no heterogeneity" setting
    "beta": "[0, inf)",
    "num_clients": "[1, inf)",
    "dim": "[1, inf)",
    "num_classes": "[2, inf)",
    "test_fraction": "(0, 1)",  # digits, synthetic, shakespeare: a share held out for the test split
    "split_seed": "[0, 4294967295]",  # scikit-learn's random_state of the test split: < 2^32
}
# A source's own bounds where they differ (libsvm_file: no test split is allowed, test_fraction 0).
_SOURCE_BOUNDS = {"libsvm_file": {"test_fraction": "[0, 1)", "n_features": "[1, inf)"},
                  "breast_cancer": {"test_fraction": "[0, 1)"}}
#: Bernoulli client sampling draws round t of seed s from numpy's RandomState(s + t - 1), whose
#: seeds are < 2^32 (fedbench.engine.clients.sampling.sample_clients); so does binary_logreg's init numpy_legacy.
BERNOULLI_SEED_LIMIT = 2**32


class ConfigError(ValueError):
    """An invalid workflow config. The message names the full key path and how to fix it."""


# --------------------------------------------------------------------------------------------
# Registries (imported lazily: importing them pulls in torch)


def _sources() -> dict:
    from fedbench.data.registry import SOURCES

    return SOURCES


def _schemes() -> dict:
    from fedbench.data.partition import SCHEMES

    return SCHEMES


def _models() -> dict:
    from fedbench.models import MODELS

    return MODELS


# What a missing registry key may name (listed in the "missing" message).
_REGISTRY_OF_KEY = {"source": _sources, "scheme": _schemes, "name": _models}


# --------------------------------------------------------------------------------------------
# Formatting


def _fmt(value: Any) -> str:
    if _is_number(value):
        return _n(value)
    return repr(value) if isinstance(value, str) else "null" if value is None else str(value)


def _known(options) -> str:
    return ", ".join("null" if o is None else str(o) for o in options) if options else "(none)"


def _either(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _n(x: Any) -> str:
    """A number as the user wrote it: -1.0 -> '-1', 0.3 -> '0.3'."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def _interval(text: str) -> tuple:
    """``"[0, 1)"`` -> (0, True, 1, False); an infinite end is None, an integer end an int."""
    lo, hi = (x.strip() for x in text[1:-1].split(","))

    def end(x):  # an integer end stays an int: "<= 4294967295", not "<= 4.29497e+09"
        return None if x in ("inf", "-inf") else int(x) if x.lstrip("-").isdigit() else float(x)

    return end(lo), text[0] == "[", end(hi), text[-1] == "]"


def _check_range(v: Any, path: str, interval: str | None) -> None:
    if interval is None or not _is_number(v):
        return
    lo, lo_incl, hi, hi_incl = _interval(interval)
    if lo is not None and (v < lo or (v == lo and not lo_incl)):
        raise ConfigError(f"{path}: must be {'>=' if lo_incl else '>'} {_n(lo)} (got {_n(v)})")
    if hi is not None and (v > hi or (v == hi and not hi_incl)):
        raise ConfigError(f"{path}: must be {'<=' if hi_incl else '<'} {_n(hi)} (got {_n(v)})")


def _finite(v: Any, path: str) -> float:
    if not math.isfinite(v):
        raise ConfigError(f"{path}: must be finite (got {v})")
    return float(v)


# --------------------------------------------------------------------------------------------
# The schema: structure, types, ranges, defaults

_TYPE_WORDS = {"boolean": ["true", "false"], "null": ["null"], "integer": ["an integer"], "number": ["a number"],
               "string": ["a string"], "object": ["a mapping"], "array": ["a list"]}
_COMPARISONS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


@cache
def _validator():
    """A validator of :func:`schema` that also fills the ``default:`` values it passes (as
    snakemake.utils.validate does)."""
    import jsonschema

    base = jsonschema.validators.validator_for(schema())
    check_properties = base.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, subschema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub:
                    instance.setdefault(key, copy.deepcopy(sub["default"]))
        yield from check_properties(validator, properties, instance, subschema)

    return jsonschema.validators.extend(base, {"properties": properties_with_defaults})(schema())


def _key_path(error) -> str:
    out = ""
    for part in error.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out or "config"


def _child(path: str, key: Any) -> str:
    return str(key) if path == "config" else f"{path}.{key}"


def _fitting_branch_error(error):
    """Of an anyOf error, the deepest error of the only alternative whose type fits the value
    (None when no or several alternatives fit)."""
    branches: dict[int, list] = {}
    for sub in error.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    fitting = [errs for errs in branches.values()
               if not any(e.validator in ("type", "const", "enum") and not e.relative_path for e in errs)]
    return max(fitting[0], key=lambda e: len(e.absolute_path)) if len(fitting) == 1 else None


def _describe(sub: dict) -> str:
    """What a (sub)schema allows, in words: 'an integer >= 1', "'last'", 'null'."""
    if "$ref" in sub:
        sub = schema()["$defs"][sub["$ref"].rsplit("/", 1)[-1]]
    if "const" in sub:
        return _fmt(sub["const"])
    if "enum" in sub:
        return "one of " + _known(sub["enum"])
    types = sub.get("type", [])
    words = _either(sum((_TYPE_WORDS[t] for t in ([types] if isinstance(types, str) else types)), [])) or "a value"
    limits = [f"{op} {_n(sub[k])}" for k, op in _COMPARISONS.items() if k in sub]
    return " ".join([words, " and ".join(limits)]) if limits else words


def _schema_message(error) -> str:
    """The message of one schema error: the dotted key path, then what is allowed there."""
    path, v, s, kind = _key_path(error), error.instance, error.schema, error.validator
    got = f" (got {_fmt(v)})"
    if kind in ("anyOf", "oneOf"):
        inner = _fitting_branch_error(error)
        if inner is not None:
            return _schema_message(inner)
        return f"{path}: must be {_either([_describe(b) for b in error.validator_value])}{got}"
    if kind == "additionalProperties":
        allowed = s.get("properties", {})
        extra = next(k for k in v if k not in allowed)
        return f"{_child(path, extra)}: unknown key; allowed keys here: {_known(sorted(allowed))}"
    if kind == "required":
        missing = next(k for k in error.validator_value if k not in v)
        hint = (f"; one of: {_known(list(_REGISTRY_OF_KEY[missing]()))}" if missing in _REGISTRY_OF_KEY
                else "; see config/README.md")
        return f"{_child(path, missing)}: missing (required here: {_known(error.validator_value)}){hint}"
    if kind == "pattern" and "propertyNames" in error.absolute_schema_path:
        return (f"{_child(path, v)}: id {v!r} is not allowed; ids become paths and must match {ID_PATTERN} "
                f"(letters, digits, '_', '.', '-'; no '/' or '=')")
    if kind == "pattern":
        return f"{path}: must look like {s.get('title', s['pattern'])}{got}"
    if kind == "type":
        types = [error.validator_value] if isinstance(error.validator_value, str) else error.validator_value
        return f"{path}: must be {_either(sum((_TYPE_WORDS[t] for t in types), []))}{got}"
    if kind == "enum":
        return f"{path}: must be one of {_known(error.validator_value)}{got}"
    if kind == "const":
        return f"{path}: must be {_fmt(error.validator_value)}{got}"
    if kind in _COMPARISONS:
        return f"{path}: must be {_COMPARISONS[kind]} {_n(error.validator_value)}{got}"
    if kind == "minItems":
        return f"{path}: must be a non-empty list{got}"
    if kind == "uniqueItems":
        return f"{path}: items must be distinct{got}"
    if kind == "minProperties":
        return f"{path}: must not be empty; give at least one entry ({_child(path, '<id>')}: ...)"
    if kind == "minLength":
        return f"{path}: must be a non-empty string{got}"
    return f"{path}: {error.message}"


def validated(config: Any) -> dict:
    """A copy of ``config`` checked against the schema (:data:`SCHEMA_PATH`), with the schema's
    ``default:`` values filled in. Raises :class:`ConfigError` for the deepest first error."""
    if not isinstance(config, dict):
        raise ConfigError(f"config: must be a mapping (the parsed YAML) (got {_fmt(config)})")
    config = copy.deepcopy(dict(config))
    experiments = config.get("experiments")
    for exp, ecfg in (experiments.items() if isinstance(experiments, dict) else ()):
        if isinstance(ecfg, dict) and "stack_seeds" in ecfg:
            raise ConfigError(f"experiments.{exp}.stack_seeds: renamed to `stack` (stack: true trains every set of "
                              f"stackable cells of the experiment in one job: its seeds and the values of a sweep's "
                              f"continuous hyperparameters); write "
                              f"`stack: {_label_value(ecfg['stack_seeds'])}` instead")
    errors = list(_validator().iter_errors(config))
    if errors:
        raise ConfigError(_schema_message(max(errors, key=lambda e: len(e.absolute_path))))
    for exp, ecfg in config["experiments"].items():
        if ecfg["stack_groups_per_job"] > 1 and not ecfg["stack"]:
            raise ConfigError(f"experiments.{exp}.stack_groups_per_job: {ecfg['stack_groups_per_job']} bundles "
                              "stacked groups, and the experiment has stack: false; set stack: true or remove "
                              "stack_groups_per_job")
    return config


def _resolve_ref(sub: dict) -> dict:
    while isinstance(sub, dict) and "$ref" in sub:
        sub = schema()["$defs"][sub["$ref"].rsplit("/", 1)[-1]]
    return sub


_JSON_TYPES = {"boolean": lambda v: isinstance(v, bool), "null": lambda v: v is None,
               "integer": lambda v: isinstance(v, int) and not isinstance(v, bool), "number": _is_number,
               "string": lambda v: isinstance(v, str), "object": lambda v: isinstance(v, dict),
               "array": lambda v: isinstance(v, list)}


def _type_fits(sub: Any, v: Any) -> bool:
    """Whether ``v`` has a type (or const/enum value) that the (sub)schema ``sub`` allows; ranges
    and patterns are not looked at."""
    sub = _resolve_ref(sub)
    if not isinstance(sub, dict):
        return True
    if "anyOf" in sub or "oneOf" in sub:
        return any(_type_fits(b, v) for b in sub.get("anyOf", sub.get("oneOf")))
    if "const" in sub and not (v == sub["const"] and type(v) is type(sub["const"])):
        return False
    if "enum" in sub and not any(v == e and type(v) is type(e) for e in sub["enum"]):
        return False
    types = sub.get("type")
    if types is None:
        return True
    return any(_JSON_TYPES[t](v) for t in ([types] if isinstance(types, str) else types))


def _typed(v: Any, sub: Any) -> Any:
    """``v`` with every string that the (sub)schema ``sub`` does not accept as a string, but does
    accept as the YAML value it spells (true, 3, 0.5, null), replaced by that value."""
    sub = _resolve_ref(sub)
    if not isinstance(sub, dict):  # untyped by the schema (registry parameters, hyperparameters): as in a file
        if isinstance(v, str):
            try:
                return yaml.safe_load(v)
            except yaml.YAMLError:
                return v
        if isinstance(v, dict):
            return {k: _typed(x, None) for k, x in v.items()}
        return [_typed(x, None) for x in v] if isinstance(v, list) else v
    if isinstance(v, str):
        if _type_fits(sub, v):
            return v
        try:
            parsed = yaml.safe_load(v)
        except yaml.YAMLError:
            return v
        return parsed if not isinstance(parsed, str) and _type_fits(sub, parsed) else v
    branches = [_resolve_ref(b) for b in sub.get("anyOf", sub.get("oneOf", []))]
    if branches:  # descend into the one branch whose type fits (mappings and lists)
        fitting = [b for b in branches if _type_fits(b, v)]
        return _typed(v, fitting[0]) if len(fitting) == 1 else v
    if isinstance(v, dict):
        props, extra = sub.get("properties", {}), sub.get("additionalProperties")
        return {k: _typed(x, props.get(k, extra if isinstance(extra, dict) else None)) for k, x in v.items()}
    if isinstance(v, list):
        return [_typed(x, sub.get("items")) for x in v]
    return v


def typed_overrides(overrides: dict) -> dict:
    """The ``--config`` overrides of a Snakemake command line, typed as the schema says.

    Snakemake parses a top-level ``--config key=value`` as int, float, bool or string, but a
    nested one (``--config wandb='{enabled: true}'``) with YAML's BaseLoader: every scalar in it
    is a string (``{"enabled": "true"}``). Where the schema does not accept a string there, the
    string's YAML value is used instead when the schema accepts that (true, 3, 0.5, null);
    everything else is left for :func:`validated` to reject. Values the schema leaves untyped
    (registry parameters, hyperparameters, model options, sweep values) become what the same YAML
    would give in a config file (``mu: 0.5`` -> 0.5, ``hidden: [32]`` -> [32], ``theta: all`` -> 'all')."""
    return _typed(copy.deepcopy(dict(overrides)), schema())


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:  # the literal keys: a merge (<<) may be overridden
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:  # an unhashable key: SafeLoader's own error follows
                    continue
                if first is not key_node:
                    raise ConfigError(
                        f"{self.name}:{key_node.start_mark.line + 1}: key {_fmt(key)} given twice in one mapping "
                        f"(first at line {first.start_mark.line + 1}); YAML would silently keep the last one: "
                        f"delete one of them")
        return super().construct_mapping(node, deep=deep)


def load_yaml_strict(path: str | Path) -> Any:
    """The YAML (or JSON) file ``path``, parsed as Snakemake does (safe), except that a key given
    twice in one mapping is a :class:`ConfigError` naming the file, the line and the key."""
    path = Path(path)
    with path.open(encoding="utf-8") as f:
        loader = _StrictLoader(f)
        loader.name = str(path)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()


# --------------------------------------------------------------------------------------------
# Registry entries: a name that must exist, parameters with the registry's defaults


def _coerce_like(v: Any, default: Any, path: str) -> Any:
    """``v`` converted to the type of the registry default ``default`` (canonical repr)."""
    if default is None:
        return v
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise ConfigError(f"{path}: must be true or false (got {_fmt(v)})")
        return v
    if isinstance(default, int):
        if not (isinstance(v, int) and not isinstance(v, bool)):
            raise ConfigError(f"{path}: must be an integer (got {_fmt(v)})")
        return v
    if isinstance(default, float):
        if not _is_number(v):
            raise ConfigError(f"{path}: must be a number (got {_fmt(v)})")
        return _finite(v, path)
    if isinstance(default, str):
        if not isinstance(v, str):
            raise ConfigError(f"{path}: must be a string (got {_fmt(v)})")
        return v
    if isinstance(default, (list, tuple)):
        if not isinstance(v, (list, tuple)):
            raise ConfigError(f"{path}: must be a list (got {_fmt(v)})")
        return list(v)
    return v


def _resolve_params(given: dict, defaults: dict, bounds: dict, path: str, unknown: str) -> dict:
    """``defaults`` overridden by ``given``, in the defaults' order; ``unknown`` ends the message
    for a name not in ``defaults``."""
    for k in given:
        if k not in defaults:
            raise ConfigError(f"{path}.{k}: {unknown}; known: {_known(list(defaults))}")
    out = {}
    for k, default in defaults.items():
        v = given.get(k, default)
        if v is not None:
            v = _coerce_like(v, default, f"{path}.{k}")
            _check_range(v, f"{path}.{k}", bounds.get(k))
        out[k] = v
    return out


def _entry(cfg: dict, key: str, registry: dict, path: str, what: str) -> str:
    """``cfg[key]``, which must name an entry of ``registry``."""
    if cfg[key] not in registry:
        raise ConfigError(f"{path}.{key}: unknown {what} {_fmt(cfg[key])}; known {what}s: {_known(list(registry))}")
    return cfg[key]


def _resolve_dataset(dataset_id: str, cfg: dict) -> dict:
    path = f"datasets.{dataset_id}"
    source = _entry(cfg, "source", _sources(), path, "dataset source")
    params = {k: v for k, v in cfg.items() if k != "source"}
    resolved = _resolve_params(params, dict(_sources()[source]), {**_DATASET_BOUNDS, **_SOURCE_BOUNDS.get(source, {})},
                               path, f"unknown parameter for source {source!r}")
    from fedbench.data.registry import LOCAL_FILES, REMOTE, check_local_params, check_remote_params

    if source in REMOTE:  # value checks of downloaded sources, made before anything is fetched
        try:
            check_remote_params(source, resolved)
        except ValueError as e:
            raise ConfigError(f"{path}: {e}") from None
    if source in LOCAL_FILES:  # a local file's source (libsvm_file): the files exist, relative to the cwd
        try:
            check_local_params(source, resolved)
        except ValueError as e:
            raise ConfigError(f"{path}.{e.key}: {e}" if hasattr(e, "key") else f"{path}: {e}") from None
    return {"source": source, **resolved}


def _resolve_partition(path: str, cfg: dict) -> dict:
    scheme = _entry(cfg, "scheme", _schemes(), path, "partition scheme")
    params = {k: v for k, v in cfg.items() if k != "scheme"}
    resolved = _resolve_params(params, dict(_schemes()[scheme]), _PARTITION_BOUNDS, path,
                               f"unknown parameter for scheme {scheme!r}")
    from fedbench.data.partition import resolve_partition_params

    try:  # the partitioner's own value checks (Dirichlet form, ...)
        return {"scheme": scheme, **resolve_partition_params({"scheme": scheme, **resolved})}
    except ValueError as e:
        raise ConfigError(f"{path}: {e}") from None


def _resolve_model(path: str, cfg: Any) -> dict:
    cfg = {"name": cfg} if isinstance(cfg, str) else cfg
    name = _entry(cfg, "name", _models(), path, "model")
    options = {k: v for k, v in cfg.items() if k not in ("name", "minimax")}
    resolved = {"name": name, **_resolve_params(options, dict(_models()[name]), {}, path,
                                                f"unknown parameter for model {name!r}")}
    if cfg.get("minimax") is not None:  # a minimax problem around the model (fedbench.models.minimax)
        resolved["minimax"] = cfg["minimax"]
    from fedbench.models import model_options

    try:  # the model registry's own value checks (list lengths, paddings, ...)
        name, opts = model_options(resolved)
    except ValueError as e:  # a minimax option's message names it: the key path does too
        said = re.match(r"minimax (?:option '(\w+)'|problem '\w+' has no option '(\w+)'|(problem) must)", str(e))
        key = next(g for g in said.groups() if g) if said else None
        raise ConfigError(f"{path}.minimax.{key}: {e}" if key else f"{path}: {e}") from None
    return {"name": name, **opts}


def _resolve_algorithm(label: str, cfg: dict | None, path: str) -> tuple[str, dict, dict]:
    """(algorithm module name, resolved hparams, local overrides) of one algorithm label: the
    module's ``HPARAMS`` overridden by the config, each within the module's ``BOUNDS``."""
    import fedbench.algorithms as algorithms

    cfg = cfg or {}
    name = cfg.get("algorithm", label)
    if name not in algorithms.ALGORITHMS:
        where = f"{path}.algorithm" if "algorithm" in cfg else path
        raise ConfigError(f"{where}: unknown algorithm {_fmt(name)}; known algorithms: {_known(algorithms.ALGORITHMS)} "
                          f"(a label other than a module name needs `algorithm: <name>`)")
    module = algorithms.get_algorithm(name)
    given = {k: v for k, v in cfg.items() if k not in ("algorithm", "local", "sweep")}
    for k in given:
        if k in LOCAL_KEYS and k not in module.HPARAMS:
            raise ConfigError(f"{path}.{k}: unknown hyperparameter for algorithm {name!r}; known: "
                              f"{_known(list(module.HPARAMS))}; local optimizer settings go under `local:`")
    hparams = _resolve_params(given, dict(module.HPARAMS), module.BOUNDS, path,
                              f"unknown hyperparameter for algorithm {name!r}")
    return name, hparams, cfg.get("local") or {}


def _check_fits(dpath: str, source: str, model: str, parts: dict, params: dict) -> None:
    """The dataset source can feed the model (its inputs: fedbench.data.registry.check_fits; its
    classes, where the registry knows them: fedbench.models.check_classes) and has what each
    partition scheme needs (natural clients, coarse labels), before anything is downloaded."""
    from fedbench.data.registry import check_fits, train_classes
    from fedbench.models import check_classes

    try:
        check_fits(source, model=model)
        check_classes(model, train_classes(source, params))
    except ValueError as e:
        raise ConfigError(f"{dpath}.model: {e}") from None
    for pid, pcfg in parts.items():
        try:
            check_fits(source, scheme=pcfg["scheme"])
        except ValueError as e:
            raise ConfigError(f"{dpath}.partitions.{pid}: {e}") from None


def _check_sizes(dpath: str, dataset_id: str, dataset: dict, parts: dict[str, dict]) -> None:
    """Each partition asks no more of the dataset than it has (clients, shards, samples per
    client, min_size against its train size; natural clients; shards enough for its classes),
    by the sizes the data registry knows before anything is downloaded or generated (a generated
    source's parameters are checked on the way: ``datasets.<id>.<parameter>``)."""
    from fedbench.data.partition import size_problem
    from fedbench.data.registry import natural_client_count, train_classes, train_size

    params = {k: v for k, v in dataset.items() if k != "source"}
    try:
        n = train_size(dataset["source"], params)
    except ValueError as e:  # fedbench.data.synthetic.ParamError: key names the parameter
        raise ConfigError(f"datasets.{dataset_id}.{getattr(e, 'key', '')}".rstrip(".") + f": {e}") from None
    natural = natural_client_count(dataset["source"], params)
    classes = train_classes(dataset["source"], params)
    for pid, p in parts.items():
        problem = size_problem(p["scheme"], p, n, natural, classes)
        if problem is not None:
            key, message = problem
            raise ConfigError(f"{dpath}.partitions.{pid}.{key}: {message} (dataset {dataset_id!r}, source "
                              f"{dataset['source']!r})")


# --------------------------------------------------------------------------------------------
# Settings merged across levels


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
    (factor defaults to 0.1): the step schedule of :func:`fedbench.engine.rounds.loop.round_hparams`.

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


# --------------------------------------------------------------------------------------------
# Cells: experiment -> its datasets -> partitions x algorithms x seeds


def _datasets(cfg: dict) -> dict[str, dict]:
    return {dataset_id: _resolve_dataset(dataset_id, dcfg) for dataset_id, dcfg in cfg["datasets"].items()}


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


def _check_chance_margin(collapse: Any, dataset: dict, path: str, dataset_id: str) -> None:
    """A collapse rule's ``chance_margin`` leaves room above chance: 1/C + margin < 1, C the
    dataset's number of classes where the registry knows it (else every run would count as at
    chance, :func:`fedbench.engine.rounds.cell.collapse_reason`)."""
    from fedbench.data.registry import train_classes

    margin = collapse.get("chance_margin") if isinstance(collapse, dict) else None
    c = train_classes(dataset["source"], {k: v for k, v in dataset.items() if k != "source"})
    if margin is not None and c is not None and c >= 2 and 1 / c + margin >= 1:
        raise ConfigError(f"{path}: must be < 1 - 1/C = {_n(1 - 1 / c)} for dataset {dataset_id!r} ({c} classes; "
                          f"got {_n(margin)}): with 1/C + chance_margin >= 1 every run counts as at chance and "
                          f"diverged; the default is 0.02")


def _check_algorithm_cell(name: str, hparams: dict, local: dict, path: str) -> None:
    """The algorithm module's own check of a cell's settings, made before any job: its optional
    ``check_cell(round_hparams)`` (:mod:`fedbench.algorithms`, e.g. FedAc needs ``local.steps`` and
    no clipping) gets the hyperparameters of round 1 (:func:`fedbench.engine.rounds.loop.round_hparams`);
    its ValueError becomes a ConfigError at ``path``, or at ``path.<hyperparameter>`` when the
    message starts with a hyperparameter's name ("variant must be one of ...")."""
    import fedbench.algorithms as algorithms

    check = getattr(algorithms.get_algorithm(name), "check_cell", None)
    if check is None:
        return
    from fedbench.engine.rounds.loop import round_hparams

    try:
        check(round_hparams({"hparams": hparams, "local": local}, 1))
    except ValueError as e:
        said = re.match(r"(?:[\w ]+: )?(\w+) must ", str(e))  # "fedac: variant must be one of ..."
        key = said.group(1) if said and said.group(1) in hparams else None
        raise ConfigError(f"{path}.{key}: {e}" if key else f"{path}: {e}") from None


def _check_minimax(name: str, hparams: dict, model: dict, path: str) -> None:
    """A minimax algorithm (:mod:`fedbench.algorithms.sgda`) needs a minimax model
    (:mod:`fedbench.models.minimax`) whose set Y its ``projection`` matches, and a minimax model
    needs a minimax algorithm (another one would descend on y)."""
    import fedbench.algorithms as algorithms

    is_minimax = "projection" in getattr(algorithms.get_algorithm(name), "HPARAMS", {})
    problem = (model.get("minimax") or {}).get("problem")
    if is_minimax and problem is None:
        raise ConfigError(f"{path}: algorithm {name!r} is a minimax algorithm; give the dataset's model a "
                          f"minimax problem (model: {{name: ..., minimax: {{problem: fair | robust}}}})")
    if problem is not None and not is_minimax:
        raise ConfigError(f"{path}: the model is a minimax problem ({problem!r}) but algorithm {name!r} is not a "
                          f"minimax algorithm: use local_sgda, local_sgda_plus, fed_norm_sgda or fed_norm_sgda_plus")
    if problem is not None:
        from fedbench.models.minimax import PROJECTION

        want = PROJECTION[problem]
        if hparams.get("projection") != want:
            raise ConfigError(f"{path}.projection: the minimax problem {problem!r} keeps y in its set Y: set "
                              f"projection: {want} (got {_fmt(hparams.get('projection'))})")


def _seed_cells(exp: dict, dset: dict, pid: str, label: str, algo: tuple[str, dict, dict]) -> list[dict]:
    """The cells of one (partition, algorithm label) of a dataset of an experiment, one per seed."""
    name, hparams, local_over = algo
    after_local = {k: v for k, v in dset["shared"].items() if k != "model"}
    if after_local["sampling"]["scheme"] == "bernoulli":
        for i, seed in enumerate(exp["seeds"]):
            if seed + after_local["rounds"] > BERNOULLI_SEED_LIMIT:
                raise ConfigError(
                    f"{exp['path']}.seeds[{i}]: with sampling.scheme bernoulli, seed + rounds must be <= 2^32 = "
                    f"{BERNOULLI_SEED_LIMIT} (got {seed} + {after_local['rounds']}): round t draws its clients from "
                    f"numpy's RandomState(seed + t - 1); use a smaller seed, or sampling.scheme uniform")
    if dset["shared"]["model"].get("init") == "numpy_legacy":
        for i, seed in enumerate(exp["seeds"]):
            if seed >= BERNOULLI_SEED_LIMIT:
                raise ConfigError(
                    f"{exp['path']}.seeds[{i}]: with model init numpy_legacy the seed must be < 2^32 = "
                    f"{BERNOULLI_SEED_LIMIT} (got {seed}): w₀ is numpy's RandomState(seed).standard_normal(D); use "
                    f"a smaller seed, or init normal")
    apath = f"{exp['path']}.algorithms.{label}.local"
    local = _finish_local(_merge_local(dset["local"], local_over, apath), apath if local_over else dset["local_path"])
    _check_algorithm_cell(name, hparams, local, f"{exp['path']}.algorithms.{label}")
    _check_minimax(name, hparams, dset["shared"]["model"], f"{exp['path']}.algorithms.{label}")
    return [{
        "experiment": exp["experiment"], "dataset": dset["dataset"], "partition": pid,
        "algorithm": label, "seed": seed, "algorithm_name": name, "hparams": dict(hparams),
        "model": copy.deepcopy(dset["shared"]["model"]), "local": dict(local),
        **copy.deepcopy(after_local), "sweep": None,
    } for seed in exp["seeds"]]


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
        c["sweep"]["grid"] = copy.deepcopy(grid)
    return cells


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
    for c in cells:  # where the cell's inputs live: directories named by what they hold (fedbench.layout)
        dparams = known[c["dataset"]]
        c["dataset_dir"] = layout.dataset_dir(c["dataset"], dparams)
        c["partition_dir"] = layout.partition_dir(c["dataset"], dparams, c["partition"],
                                                  parts[(c["dataset"], c["partition"])], c["seed"])
    return cells, parts


def _check_reached(lvl: dict | None, reached: set[str]) -> None:
    for axis, kp in (lvl or {"paths": {}})["paths"].items():
        if kp not in reached:
            raise ConfigError(f"{kp}: sweeps no cell: every cell it reaches gives {axis} a single value at an inner "
                              f"level (a dataset's or algorithm's own value wins over an outer sweep; local epochs "
                              f"and steps clear each other); move the sweep to that level or delete that value")


# --------------------------------------------------------------------------------------------
# Sweeps: grids of values, each point a normal cell

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


def _label_value(v: Any) -> str:
    """A swept value in a cell label: repr of a float, str of an int, null, true/false; a local-work
    distribution as ``uniform2-5`` (drawn per round) or ``uniform2-5.client`` (fixed per client); an
    lr schedule as ``step100-200x0.1`` (milestones, factor)."""
    if isinstance(v, dict) and "milestones" in v:
        from fedbench.engine.rounds.loop import schedule_label

        return schedule_label(v)
    if isinstance(v, dict) and "distribution" in v:
        from fedbench.engine.clients.batches import work_label

        return work_label(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    return repr(v) if isinstance(v, float) else str(v)


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
    keys = ("metric", "statistic", "last", "direction", "average_seeds") + (("over",) if out["over"] else ())
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


# --------------------------------------------------------------------------------------------
# Public API


def expand_cells(config: dict) -> list[dict]:
    """One fully resolved cell per (experiment, dataset, partition, algorithm, seed), in config
    order. Runs every check of :func:`check_config`.

    Each cell has exactly the keys: experiment, dataset, partition, algorithm (the config label),
    seed, algorithm_name, hparams, model, local, sampling, rounds, eval_every, target_accuracy,
    paper (the experiment's ``paper``, or None), dtype; and, for image datasets that can augment
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
    :data:`REPORT_KEYS` and :data:`PATH_KEYS`). Its :func:`fedbench.engine.rounds.loop.spec_id` names the
    cell's results."""
    return {k: v for k, v in cell.items() if k not in REPORT_KEYS and k not in PATH_KEYS}


def check_config(config: dict) -> None:
    """Check ``config``: its structure against the schema, then its meaning. Raises
    :class:`ConfigError` naming the key path and the fix."""
    expand_cells(config)


def workflow_config(config: dict, configfiles: list = (), overrides: dict | None = None) -> dict:
    """Every check the workflow makes at parse time, before any job (``rules/common.smk`` calls
    this): each of ``configfiles`` re-read refusing a key given twice (:func:`load_yaml_strict`);
    the ``--config`` ``overrides`` (as Snakemake parsed them) typed as the schema says
    (:func:`typed_overrides`) and merged into ``config`` (Snakemake's ``update_config``); the
    result checked against the schema, its defaults filled, and expanded into cells.

    ``config`` is the dict Snakemake built from the config files and the overrides; it is updated
    in place with the typed overrides and the schema's defaults (the scripts read it).

    Returns:
        ``{"cells": expand_cells, "datasets", "partitions", "train_resources", "wandb", "tables",
        "stacked"}``: the results of the public functions of the same names.

    Raises:
        ConfigError: the first problem, naming the file and line (a duplicate key) or the key path.
    """
    from snakemake.utils import update_config

    for path in configfiles:
        load_yaml_strict(path)
    update_config(config, typed_overrides(overrides or {}))
    config.update(validated(config))
    cells, parts = _expand(config)
    return {"cells": cells, "datasets": _datasets(config), "partitions": parts,
            "train_resources": train_resources(config), "wandb": wandb_settings(config),
            "tables": table_settings(config), "stacked": stacked_experiments(config)}


def _check_runtime(cfg: dict) -> None:
    """Runtime-only keys the schema cannot check together."""
    if cfg["data"]["trust_mirror_checksums"] and cfg["data"]["mirror"] is None:
        raise ConfigError("data.trust_mirror_checksums: true needs a local data.mirror holding a SHA256SUMS file; "
                          "set data.mirror or remove trust_mirror_checksums")


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


def train_resources(config: dict) -> dict[tuple[str, str], dict]:
    """``{(experiment, dataset id): resources}``: what each train job of that experiment and
    dataset asks the scheduler for, :data:`RESOURCE_DEFAULTS` overridden by
    ``experiments.<e>.resources`` and then ``experiments.<e>.datasets.<d>.resources`` (key by key).

    Runtime only: these never enter a cell spec, so changing them reruns nothing."""
    return {(exp, ds): {**RESOURCE_DEFAULTS, **(ecfg.get("resources") or {}), **(dcfg.get("resources") or {})}
            for exp, ecfg in validated(config)["experiments"].items() for ds, dcfg in ecfg["datasets"].items()}


def stacked_experiments(config: dict) -> dict[str, int]:
    """``{experiment: stack_groups_per_job}`` for the experiments with ``stack: true``, in config
    order: the workflow trains each set of their stackable cells (:func:`fedbench.engine.rounds.stacking.stack_key`
    of :func:`training_spec`: cells differing only in seed, local lr, lr_decay, weight_decay,
    clip_norm value, algorithm label and numeric hyperparameters) as one group, and up to
    ``stack_groups_per_job`` groups of a dataset one after another in one job. Runtime only: it
    never enters a cell spec."""
    return {exp: ecfg["stack_groups_per_job"] for exp, ecfg in validated(config)["experiments"].items()
            if ecfg["stack"]}


def job_resources(resources: dict, attempt: int = 1, estimate_seconds: float | None = None) -> dict:
    """The Snakemake resources of a train job from its config resources (:func:`train_resources`).

    ``runtime`` (minutes; unset: :func:`fedbench.estimate.auto_runtime` of ``estimate_seconds``,
    the job's estimated time) and ``mem_mb`` are multiplied by ``attempt`` (1, 2, ... under
    ``--retries``), so a job killed for its time or memory limit asks for more the next time;
    ``cpus`` -> ``cpus_per_task`` (Slurm --cpus-per-task; unlike threads, not capped by
    --cores); ``gpus`` -> ``gpu`` (Slurm --gpus; 0 = none); ``gres`` and ``slurm_partition``
    pass through (None = not set)."""
    from fedbench.estimate import auto_runtime

    attempt = max(1, int(attempt))
    runtime = resources["runtime"] if resources["runtime"] is not None else auto_runtime(estimate_seconds)
    return {
        "runtime": runtime * attempt,
        "mem_mb": resources["mem_mb"] * attempt,
        "cpus_per_task": resources["cpus"],
        "gpu": resources["gpus"],
        "gres": resources["gres"],
        "slurm_partition": resources["slurm_partition"],
    }


def wandb_settings(config: dict) -> dict:
    """The ``wandb:`` block with the schema's defaults (:data:`WANDB_DEFAULTS`). Runtime only."""
    return validated(config)["wandb"]


def table_settings(config: dict) -> dict:
    """The ``tables:`` block with the schema's defaults (:data:`TABLE_DEFAULTS`)."""
    return validated(config)["tables"]
