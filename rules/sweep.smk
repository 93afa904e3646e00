# Hyperparameter sweeps (docs/sweeps.md): per experiment with swept cells (a cell's `sweep` record,
# fedbench.config.expand_cells), the best point of each sweep group (experiment, dataset, configured
# partition and algorithm label; a condition, an axis that select.over leaves out, forms groups) as
# a table (Markdown + CSV + an HTML page, which the report's landing page shows instead of the
# experiment's grid of every point) and the sensitivity plot (score vs each swept hyperparameter, the
# others at the chosen point).
# params: the experiment's swept cells (identity keys + sweep, which holds the selection rule), the
# table formatting (config `tables`) and the code version of fedbench.analysis.sweeps (and what it
# imports): changing any of them re-selects, and retrains nothing.
import fedbench.analysis.sweeps as sweeps

SWEEP_EXPERIMENTS = list(dict.fromkeys(c["experiment"] for c in sweeps.sweep_cells(CELLS)))


rule sweep_select:
    localrule: True
    input:
        metrics=layout.EXPERIMENT_METRICS,
    output:
        md=report(
            "results/tables/sweeps/{experiment}.md",
            caption="../workflow/report/sweep_table.rst",
            category="5. Sweeps",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "output": "1. selection table"},
        ),
        csv="results/tables/sweeps/{experiment}.csv",
        html=report(
            "results/tables/sweeps/{experiment}.html",
            caption="../workflow/report/sweep_table.rst",
            category="1. Tables",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "table": "sweep"},
        ),
        plot=report(
            "results/plots/sweeps/{experiment}.png",
            caption="../workflow/report/sweep_plot.rst",
            category="5. Sweeps",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "output": "2. sensitivity plot"},
        ),
    wildcard_constraints:
        experiment=one_of(SWEEP_EXPERIMENTS),
    params:
        cells=lambda wc: sweeps.sweep_cells(CELLS, wc.experiment),
        tables=TABLES,
        code=code_version(["fedbench.analysis.sweeps"], within="fedbench.analysis"),
    log:
        "results/logs/sweep_select/{experiment}.log",
    script:
        "../workflow/scripts/sweep.py"


# Every sweep output of the config (rule all).
SWEEP_OUTPUTS = expand(
    ["results/tables/sweeps/{experiment}.md", "results/tables/sweeps/{experiment}.csv",
     "results/tables/sweeps/{experiment}.html", "results/plots/sweeps/{experiment}.png"],
    experiment=SWEEP_EXPERIMENTS,
)
