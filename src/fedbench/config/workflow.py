"""The workflow's entry: every check it makes on a config at parse time, before any job."""

from __future__ import annotations

from fedbench.config.cells import _expand
from fedbench.config.checks import _datasets
from fedbench.config.runtime import stacked_experiments, table_settings, train_resources, wandb_settings
from fedbench.config.structure import load_yaml_strict, typed_overrides, validated


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
