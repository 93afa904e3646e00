# Per experiment: the comparison table (Markdown + CSV + an HTML page for the report + LaTeX) and
# its plots (test accuracy vs round, test accuracy vs cumulative uplink floats, train loss vs round);
# across experiments: final accuracy per algorithm (rule compare), over every experiment collected in
# this folder (results/metrics.parquet), whichever config file ran it; its caption says so.
# params: the targets, the table formatting (config `tables`: decimals, interval) and the code
# version of fedbench.analysis.tables/plots: changing any of them re-aggregates, and retrains nothing.
# The report's categories are numbered so that it opens on the tables ("1. Tables"), then plots.


rule aggregate:
    localrule: True
    input:
        metrics=layout.EXPERIMENT_METRICS,
    output:
        md="results/tables/{experiment}.md",
        csv=report(
            "results/tables/{experiment}.csv",
            caption="../workflow/report/table.rst",
            category="4. Downloads",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "file": "numbers (CSV)"},
        ),
        html=report(
            "results/tables/{experiment}.html",
            caption="../workflow/report/table_html.rst",
            category="1. Tables",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "table": "summary"},
        ),
        tex=report(
            "results/tables/{experiment}.tex",
            caption="../workflow/report/table_tex.rst",
            category="4. Downloads",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "file": "table (LaTeX)"},
        ),
        plot=report(
            "results/plots/{experiment}_accuracy.png",
            caption="../workflow/report/accuracy.rst",
            category="2. Plots",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "figure": "1. test accuracy vs round"},
        ),
        uplink=report(
            "results/plots/{experiment}_accuracy_vs_uplink.png",
            caption="../workflow/report/accuracy_uplink.rst",
            category="2. Plots",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "figure": "2. test accuracy vs uplink floats"},
        ),
        loss=report(
            "results/plots/{experiment}_train_loss.png",
            caption="../workflow/report/train_loss.rst",
            category="2. Plots",
            subcategory="{experiment}",
            labels={"experiment": "{experiment}", "figure": "3. train loss vs round"},
        ),
    params:
        targets=experiment_targets,
        tables=TABLES,
        code=aggregate_code_version,
    log:
        "results/logs/aggregate/{experiment}.log",
    script:
        "../workflow/scripts/aggregate.py"


# Final test accuracy per algorithm, every experiment of the folder side by side.
rule compare:
    localrule: True
    input:
        metrics="results/metrics.parquet",
    output:
        plot=report(
            "results/plots/comparison.png",
            caption="../workflow/report/comparison.rst",
            category="2. Plots",
            subcategory="all experiments",
            labels={"experiment": "all", "figure": "final accuracy per algorithm"},
        ),
    params:
        code=aggregate_code_version,
    log:
        "results/logs/compare.log",
    script:
        "../workflow/scripts/compare.py"


# The papers' tables and figures: whatever the papers of fedbench.papers.PAPERS declare for the
# cells of their experiments (an experiment's `paper` key names its paper); no paper is named here.
# params: the cells an output reads + the code version of its paper's module, so editing one paper
# re-makes that paper's outputs only. A paper's reference CSV is an input of its tables.
import fedbench.papers as papers

PAPER_TABLES = papers.tables(CELLS)  # {name: fedbench.papers.base.Table}
PAPER_FIGURES = papers.figures(CELLS)  # {name: fedbench.papers.base.PaperFigure}


rule paper_table:
    localrule: True
    input:
        metrics=lambda wc: papers.metrics_inputs(PAPER_TABLES[wc.table].cells),
        reference=lambda wc: str(PAPER_TABLES[wc.table].reference),
        files=lambda wc: PAPER_TABLES[wc.table].inputs,
    output:
        md="results/tables/paper/{table}.md",
        csv=report(
            "results/tables/paper/{table}.csv",
            caption="../workflow/report/paper_table.rst",
            category="4. Downloads",
            subcategory="paper tables",
            labels=lambda wc: {"table": wc.table, "paper": PAPER_TABLES[wc.table].paper, "file": "numbers (CSV)"},
        ),
        html=report(
            "results/tables/paper/{table}.html",
            caption="../workflow/report/paper_table.rst",
            category="3. Paper tables and figures",
            subcategory="tables",
            labels=lambda wc: {"table": wc.table, "paper": PAPER_TABLES[wc.table].paper},
        ),
        tex="results/tables/paper/{table}.tex",
    wildcard_constraints:
        table=papers.name_pattern(PAPER_TABLES, "no_paper_table"),
    params:
        paper=lambda wc: PAPER_TABLES[wc.table].paper,
        cells=lambda wc: PAPER_TABLES[wc.table].cells,
        scales=lambda wc: PAPER_TABLES[wc.table].scales,
        code=lambda wc: papers.code_version(PAPER_TABLES[wc.table].paper),
    log:
        "results/logs/paper_table/{table}.log",
    script:
        "../workflow/scripts/paper_table.py"


rule paper_figure:
    localrule: True
    input:
        unpack(lambda wc: papers.figure_inputs(PAPER_FIGURES[wc.figure], RUN_DIR)),
    output:
        plot=report(
            "results/plots/paper/{figure}.png",
            caption="../workflow/report/paper_figure.rst",
            category="3. Paper tables and figures",
            subcategory="figures",
            labels=lambda wc: {"figure": PAPER_FIGURES[wc.figure].label, "paper": PAPER_FIGURES[wc.figure].paper},
        ),
    wildcard_constraints:
        figure=papers.name_pattern(PAPER_FIGURES, "no_paper_figure"),
    params:
        paper=lambda wc: PAPER_FIGURES[wc.figure].paper,
        cells=lambda wc: PAPER_FIGURES[wc.figure].cells,
        caption=lambda wc: PAPER_FIGURES[wc.figure].caption,
        code=lambda wc: papers.code_version(PAPER_FIGURES[wc.figure].paper),
    log:
        "results/logs/paper_figure/{figure}.log",
    script:
        "../workflow/scripts/paper_figure.py"


# Every paper output the config asks for (rule all).
PAPER_OUTPUTS = expand("results/tables/paper/{table}.{ext}", table=list(PAPER_TABLES), ext=["md", "csv"]) + expand(
    "results/plots/paper/{figure}.png", figure=list(PAPER_FIGURES)
)
