# Weights & Biases (opt-in: config `wandb.enabled`). All runtime only: no training reruns when
# W&B is turned on or its settings change.
#
#   wandb_log     one W&B run per cell, from its metrics.parquet + summary.json (part of `all`
#                 when enabled); offline by default, under results/wandb/wandb/offline-run-*
#   wandb_sync    target: upload the offline runs of the current cells (`wandb sync`)
#   wandb_report  target: a W&B Report comparing the algorithms, one section per experiment
#
# A cell that retrains is logged again as a new W&B run. To re-log every cell (e.g. into
# another project): snakemake --forcerun wandb_log.


rule wandb_log:
    localrule: True  # seconds per cell; offline writing needs no compute node
    input:
        wandb_enabled,
        metrics=f"{RUN_DIR}/metrics.parquet",
        summary=f"{RUN_DIR}/summary.json",
    output:
        record=f"{WANDB_RUN_DIR}/wandb.json",
    params:
        paper=wandb_paper,
    log:
        "results/logs/wandb_log/{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}.log",
    script:
        "../workflow/scripts/wandb_log.py"


rule wandb_sync:
    localrule: True  # needs the internet: the submitting node
    input:
        wandb_enabled,
        records=wandb_records,
    output:
        "results/wandb/synced.json",
    log:
        "results/logs/wandb_sync.log",
    script:
        "../workflow/scripts/wandb_sync.py"


rule wandb_report:
    localrule: True
    input:
        wandb_enabled,
        synced="results/wandb/synced.json",
        tables=expand("results/tables/{experiment}.md", experiment=EXPERIMENTS),
    output:
        "results/wandb/report.json",
    params:
        cells=wandb_report_cells,
    log:
        "results/logs/wandb_report.log",
    script:
        "../workflow/scripts/wandb_report.py"
