# Config validation, the cell list, wildcard constraints and helpers. No rules here.
#
# The config is checked twice before any job is scheduled: its structure by the JSON schema
# (which also fills defaults), then its meaning by fedbench.config.check_config (registries,
# hyperparameters, ranges, cross-references). Both raise with the offending key path.
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from fedbench.config import (
    ID_PATTERN,
    ConfigError,
    check_config,
    datasets as config_datasets,
    expand_cells,
    partitions as config_partitions,
)

try:
    validate(config, schema="../workflow/schemas/config.schema.yaml")
except WorkflowError as schema_error:
    # Prefer check_config's message (full key path + the fix) when it sees the problem too.
    try:
        check_config(config)
    except ConfigError as e:
        raise WorkflowError(f"Invalid config: {e}") from None
    raise schema_error
try:
    check_config(config)
    CELLS = expand_cells(config)
    DATASETS = config_datasets(config)
    PARTITIONS = config_partitions(config)
except ConfigError as e:
    raise WorkflowError(f"Invalid config: {e}") from None

# One spec per cell, keyed by the wildcard values (strings) of its output path.
CELL_INDEX = {
    (c["experiment"], c["dataset"], c["partition"], c["algorithm"], str(c["seed"])): c for c in CELLS
}
EXPERIMENTS = list(dict.fromkeys(c["experiment"] for c in CELLS))

RUN_DIR = "results/runs/{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}"
PARTITION_DIR = "results/partitions/{dataset}/{partition}/seed={seed}"


wildcard_constraints:
    experiment=ID_PATTERN,
    dataset=ID_PATTERN,
    partition=ID_PATTERN,
    algorithm=ID_PATTERN,
    seed=r"\d+",


def dataset_params(wildcards):
    """The resolved dataset config ({source, **params}) of one dataset id."""
    try:
        return DATASETS[wildcards.dataset]
    except KeyError:
        raise WorkflowError(f"dataset {wildcards.dataset!r} is not defined under `datasets:` in the config")


def partition_params(wildcards):
    """The resolved partition config ({scheme, **params}) of one (dataset, partition id)."""
    try:
        return PARTITIONS[(wildcards.dataset, wildcards.partition)]
    except KeyError:
        raise WorkflowError(
            f"partition {wildcards.partition!r} of dataset {wildcards.dataset!r} is not defined in any experiment"
        )


def cell_spec(wildcards):
    """The resolved spec of one training cell: everything that changes its result, nothing else.

    target_accuracy is left out: only the tables use it (aggregate's params), so changing it
    re-aggregates without retraining."""
    key = (wildcards.experiment, wildcards.dataset, wildcards.partition, wildcards.algorithm, wildcards.seed)
    try:
        spec = CELL_INDEX[key]
    except KeyError:
        raise WorkflowError(f"no cell {'/'.join(key)} in the config")
    return {k: v for k, v in spec.items() if k != "target_accuracy"}


def cell_paths(filename, experiment=None):
    """The paths of ``filename`` (e.g. metrics.parquet) of every cell, in config order."""
    return [
        f"{RUN_DIR}/{filename}".format(**{k: c[k] for k in ("experiment", "dataset", "partition", "algorithm", "seed")})
        for c in CELLS
        if experiment is None or c["experiment"] == experiment
    ]


def experiment_targets(wildcards):
    """{dataset id: target test accuracy or None} of one experiment (a dataset may override it)."""
    return {c["dataset"]: c["target_accuracy"] for c in CELLS if c["experiment"] == wildcards.experiment}
