"""The config's structure: the JSON schema and the values typed and checked against it.

Keys, types, ranges and defaults are owned by one JSON schema, ``workflow/schemas/config.schema.yaml``
(:data:`SCHEMA_PATH`). :func:`validated` checks a config against it (the deepest first error
becomes a :class:`~fedbench.config.errors.ConfigError` naming the key path and what is allowed)
and fills its defaults. Before that, what Snakemake hands over is read the way the schema means
it: :func:`load_yaml_strict` refuses a key given twice in one mapping, :func:`typed_overrides`
types the ``--config`` values Snakemake leaves as strings.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from fedbench.config.errors import ConfigError, _either, _fmt, _is_number, _known, _label_value, _n
from fedbench.config.registries import _REGISTRY_OF_KEY

#: The JSON schema of the config (structure, types, ranges, defaults).
SCHEMA_PATH = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


@cache
def schema() -> dict:
    """The parsed config schema (:data:`SCHEMA_PATH`)."""
    return yaml.safe_load(SCHEMA_PATH.read_text())


_PROPS = schema()["properties"]
# Ids become path components and Snakemake wildcard values (see rules/common.smk).
ID_PATTERN = schema()["$defs"]["id"]["pattern"].removeprefix("^").removesuffix("$")
LOCAL_KEYS = tuple(schema()["$defs"]["local"]["properties"])


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
