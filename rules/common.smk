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


# Input, params and resource functions of the rules.
import os
import re
import sys
from types import SimpleNamespace

from fedbench.codeversion import dataset_version, partition_version, train_version


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
    """The code version of everything the cell's result depends on (fedbench.codeversion.
    train_version): the engine, the cell's algorithm and model, and what they import. Editing
    the MLP reruns the MLP cells, the engine every cell; a comment or docstring reruns nothing."""
    spec = cell_spec(wildcards)
    return train_version(spec["algorithm_name"], spec["model"]["name"])


def dataset_code_version(wildcards):
    """The code version of the dataset's reader or generator (fedbench.codeversion.dataset_version)."""
    return dataset_version(dataset_params(wildcards)["source"])


def partition_code_version(wildcards):
    """The code version of the partitioners (fedbench.codeversion.partition_version)."""
    return partition_version()


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


def wandb_report_cells(wildcards=None):
    """What the W&B report shows of the cells: one (experiment, dataset, partition, paper) each."""
    keys = ("experiment", "dataset", "partition", "paper")
    return [dict(zip(keys, row)) for row in dict.fromkeys(tuple(c.get(k) for k in keys) for c in CELLS)]


def wandb_paper(wildcards):
    """The paper of a cell (a W&B tag), from the resolved cell, not the raw config."""
    return cell_of(wildcards)["paper"]


# Training rules (rules/train.smk) ----------------------------------------------------------


def one_of(names):
    """A wildcard regex matching exactly ``names`` (none: a regex that matches nothing)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


UNSTACKED_EXPERIMENTS = one_of([e for e in EXPERIMENTS if e not in STACKED_SEEDS]) if STACKED_SEEDS else ID_PATTERN
# Experiments with `delta_histogram` (rules/train.smk).
HISTOGRAM_EXPERIMENTS = list(dict.fromkeys(c["experiment"] for c in CELLS if c.get("delta_histogram")))


def _seed_cell(wildcards, seed):
    """Rule train's wildcards for one seed of a train_seeds_* job's cell."""
    return SimpleNamespace(**dict(wildcards.items()), seed=str(seed))


def stacked_params(seeds):
    """The params functions of a train_seeds_* rule: every seed's spec, and the cell's code
    version (the same for all seeds of a cell)."""

    def specs(wildcards):
        return [cell_spec(_seed_cell(wildcards, s)) for s in seeds]

    def code(wildcards):
        return cell_code_version(_seed_cell(wildcards, seeds[0]))

    return specs, code


def stacked_rule(experiment, seeds):
    """Name, outputs and log of the train_seeds_* rule of a `stack_seeds` experiment."""
    outputs = {
        "metrics": expand(f"{RUN_DIR}/metrics.parquet", seed=seeds, allow_missing=True),
        "summary": expand(f"{RUN_DIR}/summary.json", seed=seeds, allow_missing=True),
    }
    if experiment in HISTOGRAM_EXPERIMENTS:
        outputs["delta_histogram"] = expand(f"{RUN_DIR}/delta_histogram.parquet", seed=seeds, allow_missing=True)
    name = "train_seeds_{}".format(re.sub(r"\W", "_", experiment))
    log = "results/logs/train/{{experiment}}/{{dataset}}/{{partition}}/{{algorithm}}/seeds={}.log".format(
        "-".join(map(str, seeds))
    )
    return name, outputs, log


# Console (Snakefile onsuccess) -------------------------------------------------------------


def print_results(wandb_enabled):
    """After a successful run: each experiment's table (results/tables/<experiment>.md, as
    written) and where the rest is, on stderr (where Snakemake's own messages go)."""
    for experiment in EXPERIMENTS:
        path = f"results/tables/{experiment}.md"
        if os.path.exists(path):
            with open(path) as f:
                print(f"\n{path}:\n{f.read().rstrip()}", file=sys.stderr)
    wandb = ", W&B runs: results/wandb/ (upload: snakemake wandb_sync)" if wandb_enabled else ""
    print(
        "\nfedbench: done. tables: results/tables/<experiment>.md|.csv, plots: results/plots/, "
        f"all metrics: results/metrics.parquet, per-cell runs: results/runs/, logs: results/logs/{wandb}\n"
        "report: snakemake --report results/report.html  (then open results/report.html)",
        file=sys.stderr,
    )
