# Train one cell = experiment x dataset x partition x algorithm x seed.
#
# params holds what changes the cell's result and nothing else: its training spec (cell_spec:
# fedbench.config.training_spec of the cell) and the code version of the library code that
# computes it (cell_code_version: fedbench.codeversion.train_version of the engine, the cell's
# algorithm and model, and what they import). A changed hyperparameter reruns exactly the cells
# whose spec changed; a new seed or algorithm only adds cells; editing an algorithm or model
# module reruns the cells that use it, editing the engine every cell. The device (config `device`), engine, threads,
# resources, W&B and logging are read at run time and are deliberately not params.
# A diverged run is not a failure: run_cell records status "diverged" and returns normally.
#
# Resources come from the config per experiment and dataset (`resources:`, config/README.md):
# runtime and mem_mb grow with the attempt number (--retries), cpus become threads locally and
# --cpus-per-task on Slurm, gpus become the `gpu` resource (--gpus=N on Slurm; locally a
# limit with --resources gpu=N), gres/slurm_partition are passed to Slurm as they are.

rule train:
    wildcard_constraints:
        # experiments with stack_seeds are trained by their train_seeds_* rule below
        experiment=UNSTACKED_EXPERIMENTS,
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
# more declared output, restricted to those experiments (HISTOGRAM_EXPERIMENTS, rules/common.smk),
# and preferred over `train` there.

if HISTOGRAM_EXPERIMENTS:

    use rule train as train_delta_histogram with:
        output:
            metrics=f"{RUN_DIR}/metrics.parquet",
            summary=f"{RUN_DIR}/summary.json",
            delta_histogram=f"{RUN_DIR}/delta_histogram.parquet",
        wildcard_constraints:
            experiment=one_of([e for e in HISTOGRAM_EXPERIMENTS if e not in STACKED_SEEDS]),

    ruleorder: train_delta_histogram > train


# Seed stacking (experiments with `stack_seeds: true`, config/README.md): one job per cell without
# its seed trains every seed of the experiment in lockstep (fedbench.engine.loop.run_cells) and
# writes each seed's outputs, exactly where rule train would. One rule per such experiment, since
# its outputs list that experiment's seeds. params = the specs of all its seeds: a changed
# hyperparameter or an added seed reruns all seeds of the cell (the price of one job for all).
# Names, outputs, log and params: stacked_rule and stacked_params in rules/common.smk.
for _exp, _seeds in STACKED_SEEDS.items():
    _name, _outputs, _log = stacked_rule(_exp, _seeds)
    _specs, _code = stacked_params(_seeds)

    rule:
        name:
            _name
        wildcard_constraints:
            experiment=re.escape(_exp),
        input:
            meta="resources/datasets/{dataset}/meta.json",
            partitions=expand(f"{PARTITION_DIR}/partition.parquet", seed=_seeds, allow_missing=True),
        output:
            **_outputs,
        params:
            specs=_specs,
            code=_code,
        log:
            _log,
        threads: train_threads
        resources:
            **train_rule_resources(),
        script:
            "../workflow/scripts/train.py"
