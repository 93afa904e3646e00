"""The dataset sources fedbench can prepare, their parameters, and the prepare step.

A dataset config is ``{"source": <name>, **params}``; every parameter has a default, so
``{"source": "digits"}`` is complete. :data:`SOURCES` is what the config checker uses to reject
unknown sources and parameters before any job runs.

==============  ==========================================  ======================================
source          builder                                     parameters (defaults)
==============  ==========================================  ======================================
``digits``      :func:`fedbench.data.digits.load_digits`    test_fraction 0.2, split_seed 0
``synthetic``   :func:`fedbench.data.synthetic.             alpha 1, beta 1, num_clients 30, iid
                generate_synthetic`                         false, size_distribution lognormal, …
==============  ==========================================  ======================================
"""

from __future__ import annotations

import os
from pathlib import Path

from fedbench.data.digits import load_digits
from fedbench.data.store import Dataset, write_dataset
from fedbench.data.synthetic import generate_synthetic

SOURCES: dict[str, dict] = {
    "digits": {"test_fraction": 0.2, "split_seed": 0},
    "synthetic": {
        "alpha": 1.0,
        "beta": 1.0,
        "num_clients": 30,
        "iid": False,
        "size_distribution": "lognormal",
        "size_mean": 4.0,
        "size_sigma": 2.0,
        "powerlaw_a": 1.5,
        "min_samples_per_client": 50,
        "max_samples_per_client": 1000,
        "test_fraction": 0.1,
        "seed": 0,
    },
}

_BUILDERS = {"digits": load_digits, "synthetic": generate_synthetic}


def resolve_dataset_params(cfg: dict) -> dict:
    """The parameters of a dataset config with every default filled in (``source`` excluded).

    Args:
        cfg: ``{"source": name, **params}``.

    Returns:
        A new dict: the source's defaults updated with ``cfg``'s parameters, in the order of
        :data:`SOURCES`.

    Raises:
        ValueError: ``source`` missing or unknown, or a parameter the source does not take
            (the message names the key and lists the allowed ones).
    """
    if not isinstance(cfg, dict) or "source" not in cfg:
        raise ValueError(f"dataset config needs a 'source' key, one of: {', '.join(SOURCES)} (got {cfg!r})")
    source = cfg["source"]
    if source not in SOURCES:
        raise ValueError(f"unknown dataset source {source!r}; allowed sources: {', '.join(SOURCES)}")
    allowed = SOURCES[source]
    params = {k: v for k, v in cfg.items() if k != "source"}
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(
            f"dataset source {source!r} has no parameter {', '.join(map(repr, unknown))}; "
            f"allowed parameters: {', '.join(allowed)}"
        )
    return {k: params.get(k, default) for k, default in allowed.items()}


def build_dataset(dataset_id: str, cfg: dict) -> Dataset:
    """Build (load or generate) the Dataset a config describes, in memory.

    Raises:
        ValueError: as :func:`resolve_dataset_params`, or a parameter value out of range.
    """
    params = resolve_dataset_params(cfg)
    return _BUILDERS[cfg["source"]](name=dataset_id, **params)


def prepare_dataset(dataset_id: str, cfg: dict, out_dir: str | os.PathLike) -> Path:
    """Build a dataset and write it with :func:`fedbench.data.store.write_dataset`.

    Args:
        dataset_id: the dataset's name in the experiment config (recorded as ``Dataset.name``).
        cfg: ``{"source": "digits" | "synthetic", **params}``; missing parameters take defaults.
        out_dir: the dataset directory, e.g. ``resources/datasets/<dataset_id>`` (replaced
            atomically if it exists).

    Returns:
        ``out_dir`` as a Path. meta.json records the source and the resolved parameters.

    Raises:
        ValueError: unknown source or parameter, or a value out of range (the message names the key).
    """
    params = resolve_dataset_params(cfg)
    ds = _BUILDERS[cfg["source"]](name=dataset_id, **params)
    return write_dataset(out_dir, ds, source=cfg["source"], params=params)
