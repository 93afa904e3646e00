# Train one cell = experiment x dataset x partition x algorithm x seed.
#
# params holds the cell's resolved spec and nothing else: a changed hyperparameter reruns exactly
# the cells whose spec changed; a new seed or algorithm only adds cells. The device (config
# `device`), threads and logging are read at run time and are deliberately not params.
# A diverged run is not a failure: run_cell records status "diverged" and returns normally.


rule train:
    input:
        meta="resources/datasets/{dataset}/meta.json",
        partition=f"{PARTITION_DIR}/partition.parquet",
    output:
        metrics=f"{RUN_DIR}/metrics.parquet",
        summary=f"{RUN_DIR}/summary.json",
    params:
        spec=cell_spec,
    log:
        "results/logs/train/{experiment}/{dataset}/{partition}/{algorithm}/seed={seed}.log",
    threads: 1
    script:
        "../workflow/scripts/train.py"
