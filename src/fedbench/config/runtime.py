"""Runtime-only blocks of a config: what jobs ask the scheduler for, W&B logging, table format,
stacking. They never enter a cell spec, so changing them reruns no training.

:func:`train_resources` (per experiment and dataset ``resources``: what a train job asks the
scheduler for; :func:`job_resources` turns them into Snakemake resources per attempt),
:func:`wandb_settings` (``wandb``), :func:`table_settings` (``tables``, aggregation only) and
:func:`stacked_experiments` (``stack``).
"""

from __future__ import annotations

from fedbench.config.structure import _PROPS, validated

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
