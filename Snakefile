# fedbench: the single entry point of the workflow (see /work/shared/DESIGN.md, config/README.md).
#
#   snakemake --cores 2                       run the default suite (config/config.yaml)
#   snakemake --cores 2 --configfile X.yaml   run another suite instead (replaces the default)
#   snakemake --report results/report.html    build the report after a run
#
# Data flow: prepare_dataset -> partition -> train (one job per cell) -> collect -> aggregate.
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
include: "rules/collect.smk"
include: "rules/aggregate.smk"


rule all:
    default_target: True
    localrule: True
    input:
        "results/metrics.parquet",
        expand("results/tables/{experiment}.md", experiment=EXPERIMENTS),
        expand("results/tables/{experiment}.csv", experiment=EXPERIMENTS),
        expand("results/plots/{experiment}_accuracy.png", experiment=EXPERIMENTS),
