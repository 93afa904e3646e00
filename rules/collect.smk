# Gather every cell's metrics.parquet (the explicit list from the config, never a glob, so
# cells of removed configs are not picked up) into one schema-checked table.


rule collect:
    localrule: True
    input:
        cell_paths("metrics.parquet"),
    output:
        "results/metrics.parquet",
    log:
        "results/logs/collect.log",
    script:
        "../workflow/scripts/collect.py"
