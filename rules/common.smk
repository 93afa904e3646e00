# Config validation, the cell list, wildcard constraints and helpers. No rules here.
#
# fedbench.config checks the config before any job is scheduled: its structure against the JSON
# schema workflow/schemas/config.schema.yaml (whose defaults it fills in, once, here), then its
# meaning (registries, hyperparameters, cross-references). Errors name the offending key path.
# Before that: each config file is re-read refusing duplicate keys (Snakemake's YAML loader keeps
# the last), and nested `--config` values, which Snakemake hands over as strings, are typed as the
# schema says (fedbench.config.typed_overrides).
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config

from fedbench.algorithms import code_version as algorithm_code_version
from fedbench.codeversion import code_version
from fedbench.config import (
    ID_PATTERN,
    ConfigError,
    datasets as config_datasets,
    expand_cells,
    job_resources,
    load_yaml_strict,
    partitions as config_partitions,
    stacked_seeds,
    table_settings,
    train_resources,
    training_spec,
    typed_overrides,
    validated,
    wandb_settings,
)

try:
    for _configfile in workflow.configfiles:
        load_yaml_strict(_configfile)  # a key given twice is an error, not "the last one wins"
    update_config(config, typed_overrides(workflow.config_settings.overwrite_config or {}))
    config.update(validated(config))  # the schema's defaults, for the scripts that read the config
    CELLS = expand_cells(config)  # every check (fedbench.config.check_config)
    DATASETS = config_datasets(config)
    PARTITIONS = config_partitions(config)
    TRAIN_RESOURCES = train_resources(config)
    WANDB = wandb_settings(config)
    TABLES = table_settings(config)
    STACKED_SEEDS = stacked_seeds(config)  # {experiment: seeds} trained in one job per cell
except ConfigError as e:
    raise WorkflowError(f"Invalid config: {e}") from None

# One spec per cell, keyed by the wildcard values (strings) of its output path.
CELL_INDEX = {
    (c["experiment"], c["dataset"], c["partition"], c["algorithm"], str(c["seed"])): c for c in CELLS
}
EXPERIMENTS = list(dict.fromkeys(c["experiment"] for c in CELLS))

RUN_DIR = "results/runs/{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}"
WANDB_RUN_DIR = "results/wandb/runs/{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}"
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


def cell_of(wildcards):
    """The resolved cell (fedbench.config.expand_cells) of a run directory's wildcards."""
    key = (wildcards.experiment, wildcards.dataset, wildcards.partition, wildcards.algorithm, wildcards.seed)
    try:
        return CELL_INDEX[key]
    except KeyError:
        raise WorkflowError(f"no cell {'/'.join(key)} in the config")


def cell_spec(wildcards):
    """The training spec of one cell (fedbench.config.training_spec): everything that changes its
    result, nothing else (not the target accuracy or paper: changing them re-aggregates only)."""
    return training_spec(cell_of(wildcards))


def cell_code_version(wildcards):
    """The code version of the cell's algorithm (fedbench.algorithms.code_version): editing an
    algorithm module reruns the cells that use it and no others."""
    return algorithm_code_version(cell_spec(wildcards)["algorithm_name"])


def aggregate_code_version(wildcards):
    """The code version of the table and plot modules: editing them re-aggregates only."""
    return code_version(["fedbench.analysis.tables", "fedbench.analysis.plots"], within="fedbench.analysis")


def _train_resource(key):
    """A resource function of the train rule: fedbench.config.job_resources of the config's
    resources for the cell's (experiment, dataset), at this attempt (runtime and mem_mb grow
    with it, so a retry after a time-out or out-of-memory kill asks for more)."""

    def get(wildcards, attempt):
        return job_resources(TRAIN_RESOURCES[(wildcards.experiment, wildcards.dataset)], attempt)[key]

    get.__name__ = f"train_{key}"
    return get


def train_rule_resources():
    """The resources of the train rule. gpu/gres/slurm_partition are only declared when some
    experiment sets them, so that otherwise the profile's defaults apply to them untouched
    (a declared resource whose value is None is dropped by Snakemake)."""
    res = {key: _train_resource(key) for key in ("runtime", "mem_mb", "cpus_per_task")}
    values = list(TRAIN_RESOURCES.values())
    if any(r["gpus"] for r in values):
        res["gpu"] = _train_resource("gpu")  # Slurm: --gpus=N (none when 0); locally: --resources gpu=N
    for key in ("gres", "slurm_partition"):
        if any(r[key] is not None for r in values):
            res[key] = _train_resource(key)
    return res


def train_threads(wildcards):
    """Threads of a train job: the config's cpus (locally capped by --cores)."""
    return TRAIN_RESOURCES[(wildcards.experiment, wildcards.dataset)]["cpus"]


def cell_paths(filename, experiment=None, root=RUN_DIR):
    """The paths of ``filename`` (e.g. metrics.parquet) of every cell, in config order."""
    return [
        f"{root}/{filename}".format(**{k: c[k] for k in ("experiment", "dataset", "partition", "algorithm", "seed")})
        for c in CELLS
        if experiment is None or c["experiment"] == experiment
    ]


def experiment_targets(wildcards):
    """{dataset id: target test accuracy or None} of one experiment (a dataset may override it)."""
    return {c["dataset"]: c["target_accuracy"] for c in CELLS if c["experiment"] == wildcards.experiment}


def wandb_enabled(wildcards=None):
    """Input function of the W&B rules: no inputs, but a clear error when W&B is off."""
    if not WANDB["enabled"]:
        raise WorkflowError(
            "W&B is off in the config: set `wandb: {enabled: true}` in the config file to log, "
            "sync or report W&B runs (README.md, \"Weights & Biases\")"
        )
    return []


def wandb_records(wildcards=None):
    """The per-cell W&B records of the current config (the outputs of wandb_log)."""
    return cell_paths("wandb.json", root=WANDB_RUN_DIR)
