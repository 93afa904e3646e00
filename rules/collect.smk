# Per experiment, gather its cells' metrics.parquet (the explicit list from the config, never a
# glob) into one schema-checked table, results/metrics/<experiment>.parquet, with the column
# suboptimality = train_objective − F* for the cells with an F* (rules/optimum.smk). Each experiment
# keeps its own file: running another config file in the same folder leaves it as it is.
# Then results/metrics.parquet, the folder's view: every experiment collected here, by this config
# file or an earlier one (folder_metrics), one after another.


rule collect:
    localrule: True
    input:
        metrics=experiment_cell_metrics,
        optima=optimum_paths,
    params:
        optima=cell_optima,
    output:
        layout.EXPERIMENT_METRICS,
    wildcard_constraints:
        experiment=one_of(EXPERIMENTS),
    log:
        "results/logs/collect/{experiment}.log",
    script:
        "../workflow/scripts/collect.py"


rule collect_folder:
    localrule: True
    input:
        folder_metrics(),
    output:
        layout.FOLDER_METRICS,
    log:
        "results/logs/collect_folder.log",
    script:
        "../workflow/scripts/collect_folder.py"
