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
        # experiments with `stack: true` are trained by the stacked rules below
        experiment=UNSTACKED_EXPERIMENTS,
    input:
        unpack(cell_inputs),  # meta: the prepared dataset's meta.json; partition: its partition.parquet
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
            experiment=one_of([e for e in HISTOGRAM_EXPERIMENTS if e not in STACKED]),

    ruleorder: train_delta_histogram > train


# Stacking (experiments with `stack: true`, config/README.md): the cells still to train are
# grouped by fedbench.engine.rounds.stacking.stack_key (cells that differ only in their seed and
# continuous hyperparameters: a grid of learning rates x seeds); a group trains its cells in
# lockstep as one set of clients (fedbench.engine.rounds.loop.run_cells) and writes each cell's outputs
# exactly where rule train would. A job is one group, or up to the experiment's
# stack_groups_per_job groups one after another in one process. One rule per job, with explicit
# outputs (stack_groups in rules/common.smk): finished cells are in no group (their summary.json
# records the fingerprint of what made them), so an added grid value or seed trains only the new cells.
for _group in STACK_GROUPS:

    rule:
        name:
            _group.name
        input:
            meta=f"{_group.cells[0]['dataset_dir']}/meta.json",
            # each partition file once (the 486 cells of a FedAc a9a job share 3): when a job ends,
            # Snakemake hashes every input once per output, so repeats cost outputs × cells reads
            partitions=list(dict.fromkeys(_group.partitions)),
        output:
            **stack_outputs(_group),
        params:
            partitions=_group.partitions,  # each cell's, in member order
            specs=[training_spec(c) for c in _group.cells],
            fingerprints=_group.fingerprints,
            sizes=_group.sizes,
            code=[train_version(c["algorithm_name"], c["model"]["name"]) for c in _group.cells],
        log:
            _group.log,
        threads: TRAIN_RESOURCES[(_group.cells[0]["experiment"], _group.cells[0]["dataset"])]["cpus"]
        resources:
            **train_rule_resources(_group.cells[0], len(_group.sizes), _group.name),
        script:
            "../workflow/scripts/train.py"
