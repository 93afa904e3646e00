# Train one cell = experiment x dataset x partition x algorithm x seed.
#
# params holds what changes the cell's result and nothing else: its resolved spec and the code
# version of its algorithm (fedbench.algorithms.code_version). A changed hyperparameter reruns
# exactly the cells whose spec changed; a new seed or algorithm only adds cells; editing an
# algorithm module reruns the cells that use it. The device (config `device`), engine, threads,
# resources, W&B and logging are read at run time and are deliberately not params.
# A diverged run is not a failure: run_cell records status "diverged" and returns normally.
#
# Resources come from the config per experiment and dataset (`resources:`, config/README.md):
# runtime and mem_mb grow with the attempt number (--retries), cpus become threads locally and
# --cpus-per-task on Slurm, gpus become the `gpu` resource (--gpus=N on Slurm; locally a
# limit with --resources gpu=N), gres/slurm_partition are passed to Slurm as they are.


rule train:
    input:
        meta="resources/datasets/{dataset}/meta.json",
        partition=f"{PARTITION_DIR}/partition.parquet",
    output:
        metrics=f"{RUN_DIR}/metrics.parquet",
        summary=f"{RUN_DIR}/summary.json",
    params:
        spec=cell_spec,
        code=cell_code_version,
    log:
        "results/logs/train/{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}.log",
    threads: train_threads
    resources:
        **train_rule_resources(),
    script:
        "../workflow/scripts/train.py"


# Cells of experiments with `delta_histogram` (config/README.md) also write the histograms of
# their transmitted Δ (fedbench.metrics.histogram) beside metrics.parquet. Snakemake outputs
# cannot depend on a wildcard's value, so those cells get their own rule: the same job with one
# more declared output, restricted to those experiments, and preferred over `train` there.
import re as _re

HISTOGRAM_EXPERIMENTS = list(dict.fromkeys(c["experiment"] for c in CELLS if c.get("delta_histogram")))

if HISTOGRAM_EXPERIMENTS:

    use rule train as train_delta_histogram with:
        output:
            metrics=f"{RUN_DIR}/metrics.parquet",
            summary=f"{RUN_DIR}/summary.json",
            delta_histogram=f"{RUN_DIR}/delta_histogram.parquet",
        wildcard_constraints:
            experiment="|".join(_re.escape(e) for e in HISTOGRAM_EXPERIMENTS),

    ruleorder: train_delta_histogram > train
