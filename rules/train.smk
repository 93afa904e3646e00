# Train one cell = experiment x dataset x partition x algorithm x seed.
#
# params holds what changes the cell's result and nothing else: its training spec (cell_spec:
# fedbench.config.training_spec of the cell) and the code version of its algorithm
# (fedbench.algorithms.code_version). A changed hyperparameter reruns
# exactly the cells whose spec changed; a new seed or algorithm only adds cells; editing an
# algorithm module reruns the cells that use it. The device (config `device`), engine, threads,
# resources, W&B and logging are read at run time and are deliberately not params.
# A diverged run is not a failure: run_cell records status "diverged" and returns normally.
#
# Resources come from the config per experiment and dataset (`resources:`, config/README.md):
# runtime and mem_mb grow with the attempt number (--retries), cpus become threads locally and
# --cpus-per-task on Slurm, gpus become the `gpu` resource (--gpus=N on Slurm; locally a
# limit with --resources gpu=N), gres/slurm_partition are passed to Slurm as they are.

import re as _re


def _one_of(names):
    """A wildcard regex matching exactly ``names`` (none: a regex that matches nothing)."""
    return "|".join(_re.escape(n) for n in names) if names else "(?!)"


UNSTACKED_EXPERIMENTS = _one_of([e for e in EXPERIMENTS if e not in STACKED_SEEDS]) if STACKED_SEEDS else ID_PATTERN


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
# more declared output, restricted to those experiments, and preferred over `train` there.
HISTOGRAM_EXPERIMENTS = list(dict.fromkeys(c["experiment"] for c in CELLS if c.get("delta_histogram")))

if HISTOGRAM_EXPERIMENTS:

    use rule train as train_delta_histogram with:
        output:
            metrics=f"{RUN_DIR}/metrics.parquet",
            summary=f"{RUN_DIR}/summary.json",
            delta_histogram=f"{RUN_DIR}/delta_histogram.parquet",
        wildcard_constraints:
            experiment=_one_of([e for e in HISTOGRAM_EXPERIMENTS if e not in STACKED_SEEDS]),

    ruleorder: train_delta_histogram > train


# Seed stacking (experiments with `stack_seeds: true`, config/README.md): one job per cell without
# its seed trains every seed of the experiment in lockstep (fedbench.engine.loop.run_cells) and
# writes each seed's outputs, exactly where rule train would. One rule per such experiment, since
# its outputs list that experiment's seeds. params = the specs of all its seeds: a changed
# hyperparameter or an added seed reruns all seeds of the cell (the price of one job for all).


from types import SimpleNamespace as _Namespace


def _seed_cell(wildcards, seed):
    """Rule train's wildcards for one seed of a train_seeds_* job's cell."""
    return _Namespace(**dict(wildcards.items()), seed=str(seed))


def _stacked_params(seeds):
    """The params functions of a train_seeds_* rule: every seed's spec, and the algorithm's code
    version (the same for all seeds of a cell)."""

    def specs(wildcards):
        return [cell_spec(_seed_cell(wildcards, s)) for s in seeds]

    def code(wildcards):
        return cell_code_version(_seed_cell(wildcards, seeds[0]))

    return specs, code


for _exp, _seeds in STACKED_SEEDS.items():
    _outputs = {
        "metrics": expand(f"{RUN_DIR}/metrics.parquet", seed=_seeds, allow_missing=True),
        "summary": expand(f"{RUN_DIR}/summary.json", seed=_seeds, allow_missing=True),
    }
    if _exp in HISTOGRAM_EXPERIMENTS:
        _outputs["delta_histogram"] = expand(f"{RUN_DIR}/delta_histogram.parquet", seed=_seeds, allow_missing=True)
    _specs, _code = _stacked_params(_seeds)

    rule:
        name:
            "train_seeds_" + _re.sub(r"\W", "_", _exp)
        wildcard_constraints:
            experiment=_re.escape(_exp),
        input:
            meta="resources/datasets/{dataset}/meta.json",
            partitions=expand(f"{PARTITION_DIR}/partition.parquet", seed=_seeds, allow_missing=True),
        output:
            **_outputs,
        params:
            specs=_specs,
            code=_code,
        log:
            "results/logs/train/{experiment}/{dataset}/{partition}/{algorithm}/seeds=" + "-".join(map(str, _seeds)) + ".log",
        threads: train_threads
        resources:
            **train_rule_resources(),
        script:
            "../workflow/scripts/train.py"
