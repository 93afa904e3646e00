# fedbench: the single entry point of the workflow (README.md; config keys: config/README.md).
#
#   snakemake --cores 2                       run the default suite (config/config.yaml)
#   snakemake --cores 2 --configfile X.yaml   run another suite instead (replaces the default)
#   snakemake --report results/report.html    build the report after a run
#   snakemake --profile profiles/slurm        one Slurm job per training cell (docs/cluster.md, "Slurm")
#   snakemake wandb_sync / wandb_report       upload W&B runs / build the W&B report (docs/wandb.md)
#
# Data flow: prepare_dataset -> partition -> train (one job per cell; with `stack: true`, one job per
#            group of cells that differ only in seed and continuous hyperparameters) -> collect
#            -> aggregate, sweep_select (experiments with a `sweep`), paper tables and figures
#            -> scorecard (the papers' claims decided, the folder's view: results/tables/scorecard.md,
#               printed last)
#            (-> wandb_log per cell, when config `wandb.enabled`).
#
# `snakemake --lint`: clean but for one explained exception, "Specify a conda environment or
# container for each rule". The workflow's software is one Python package, installed with pip
# (pyproject.toml, pinned torch CPU wheel; docs/running.md), the same for every rule: no rule
# has software of its own, and conda channels are not reachable from the machines it runs on.
# tests/workflow/test_lint.py checks that no other lint appears.
import os
import sys

from snakemake.utils import min_version

min_version("9.0")


# The default suite. A `--configfile` on the command line replaces it instead of being merged
# into it (Snakemake would otherwise extend the default experiments with the given ones);
# `--config key=value` still overrides single keys of whichever file is in use.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/partition.smk"
include: "rules/train.smk"
include: "rules/optimum.smk"
include: "rules/collect.smk"
include: "rules/aggregate.smk"
include: "rules/sweep.smk"
include: "rules/scorecard.smk"
include: "rules/wandb.smk"


rule all:
    default_target: True
    localrule: True
    input:
        "results/metrics.parquet",
        expand("results/tables/{experiment}.md", experiment=EXPERIMENTS),
        expand("results/tables/{experiment}.csv", experiment=EXPERIMENTS),
        expand("results/plots/{experiment}_accuracy.png", experiment=EXPERIMENTS),
        "results/plots/comparison.png",
        PAPER_OUTPUTS,
        SWEEP_OUTPUTS,
        "results/tables/scorecard.md",
        "results/tables/scorecard.csv",
        wandb_records() if WANDB["enabled"] else [],


# Where things are: printed by the main Snakemake process (not by cluster jobs, not in dry runs).
onstart:
    print(
        f"fedbench: {len(CELLS)} cells in {len(EXPERIMENTS)} experiment(s) ({', '.join(EXPERIMENTS)}); "
        f"results in {os.path.abspath('results')}/; job logs in results/logs/<rule>/, a training cell's in "
        f"results/logs/train/<experiment>/<dataset>/<partition>/<algorithm>/seed=<s>.log (a stacked job's: "
        f".../<partition>/stack-<id>.log)",
        file=sys.stderr,
    )


onsuccess:
    print_results(WANDB["enabled"])
    print_scorecard()


onerror:
    print(
        "fedbench: failed. Each job's log is under results/logs/<rule>/ (Slurm's own job logs: "
        "results/logs/slurm/); rerun the same command to continue where it stopped.",
        file=sys.stderr,
    )
