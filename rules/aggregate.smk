# Per experiment: the comparison table (Markdown + CSV) and test-accuracy curves.
# params: the targets, the table formatting (config `tables`) and the code version of
# fedbench.analysis.tables/plots: changing any of them re-aggregates, and retrains nothing.


rule aggregate:
    localrule: True
    input:
        metrics="results/metrics.parquet",
    output:
        md="results/tables/{experiment}.md",
        csv=report(
            "results/tables/{experiment}.csv",
            caption="../workflow/report/table.rst",
            category="Tables",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "figure": "summary table"},
        ),
        plot=report(
            "results/plots/{experiment}_accuracy.png",
            caption="../workflow/report/accuracy.rst",
            category="Accuracy curves",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "figure": "test accuracy vs round"},
        ),
    params:
        targets=experiment_targets,
        tables=TABLES,
        code=aggregate_code_version,
    log:
        "results/logs/aggregate/{experiment}.log",
    script:
        "../workflow/scripts/aggregate.py"
