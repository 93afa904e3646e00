# Gather every cell's metrics.parquet (the explicit list from the config, never a glob, so
# cells of removed configs are not picked up) into one schema-checked table, with the column
# suboptimality = train_objective − F* for the cells with an F* (rules/optimum.smk).


rule collect:
    localrule: True
    input:
        metrics=cell_paths("metrics.parquet"),
        optima=optimum_paths(),
    params:
        optima=cell_optima(),
    output:
        "results/metrics.parquet",
    log:
        "results/logs/collect.log",
    script:
        "../workflow/scripts/collect.py"
