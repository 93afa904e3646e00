# The reproduction scorecard: the claims of every paper whose tables are in this folder (each paper's
# claims() in its module, fedbench.papers), decided on the folder's collected metrics
# (results/metrics.parquet) and on the papers' table CSVs (results/tables/paper/*.csv): holds, fails
# (by how much) or not decidable at this run's scale. results/tables/scorecard.{md,html,csv}.
# Like results/metrics.parquet and the comparison plot it is the folder's view: the current config's
# paper tables (made first) and those earlier config files wrote here, so that switching between
# config files in one folder reruns nothing (a config without paper experiments, in a fresh folder,
# gets a scorecard that says so). Part of rule all for every config; the first thing in the report
# (category "0. Scorecard", and the top of its landing page); printed at the end of a run
# (print_scorecard, Snakefile onsuccess). Its functions are in rules/common.smk.
# params: the code version of the scorecard and of every paper module: editing a claim re-decides
# and retrains nothing.


rule scorecard:
    localrule: True
    input:
        metrics=layout.FOLDER_METRICS,
        tables=scorecard_tables(),
    output:
        md="results/tables/scorecard.md",
        csv=report(
            "results/tables/scorecard.csv",
            caption="../workflow/report/scorecard.rst",
            category="4. Downloads",
            subcategory="scorecard",
            labels={"file": "scorecard (CSV)"},
        ),
        html=report(
            "results/tables/scorecard.html",
            caption="../workflow/report/scorecard.rst",
            category="0. Scorecard",
            labels={"table": "the papers' claims, decided"},
        ),
    params:
        code=scorecard_code_version(),
    log:
        "results/logs/scorecard.log",
    script:
        "../workflow/scripts/scorecard.py"
