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


# The papers' tables and figures: whatever the papers of fedbench.papers.PAPERS declare for the
# cells of their experiments (an experiment's `paper` key names its paper); no paper is named here.
# params: the cells an output reads + the code version of its paper's module, so editing one paper
# re-makes that paper's outputs only. A paper's reference CSV is an input of its tables.
import re as _re

import fedbench.papers as papers

PAPER_TABLES = papers.tables(CELLS)  # {name: fedbench.papers.base.Table}
PAPER_FIGURES = papers.figures(CELLS)  # {name: fedbench.papers.base.PaperFigure}


def _one_of_names(names, none):
    return "|".join(_re.escape(n) for n in names) or none


def paper_figure_input(wildcards):
    """The metrics, or the per-cell files (e.g. delta_histogram.parquet) the figure reads."""
    fig = PAPER_FIGURES[wildcards.figure]
    if fig.cell_file is None:
        return {"metrics": "results/metrics.parquet"}
    return {"files": [f"{RUN_DIR}/{fig.cell_file}".format(**c) for c in fig.file_cells]}


rule paper_table:
    localrule: True
    input:
        metrics="results/metrics.parquet",
        reference=lambda wc: str(PAPER_TABLES[wc.table].reference),
    output:
        md="results/tables/paper/{table}.md",
        csv=report(
            "results/tables/paper/{table}.csv",
            caption="../workflow/report/paper_table.rst",
            category="Paper tables",
            labels=lambda wc: {"table": wc.table, "paper": PAPER_TABLES[wc.table].paper},
        ),
    wildcard_constraints:
        table=_one_of_names(PAPER_TABLES, "no_paper_table"),
    params:
        paper=lambda wc: PAPER_TABLES[wc.table].paper,
        cells=lambda wc: PAPER_TABLES[wc.table].cells,
        code=lambda wc: papers.code_version(PAPER_TABLES[wc.table].paper),
    log:
        "results/logs/paper_table/{table}.log",
    script:
        "../workflow/scripts/paper_table.py"


rule paper_figure:
    localrule: True
    input:
        unpack(paper_figure_input),
    output:
        plot=report(
            "results/plots/paper/{figure}.png",
            caption="../workflow/report/paper_figure.rst",
            category="Paper figures",
            labels=lambda wc: {"figure": PAPER_FIGURES[wc.figure].label, "paper": PAPER_FIGURES[wc.figure].paper},
        ),
    wildcard_constraints:
        figure=_one_of_names(PAPER_FIGURES, "no_paper_figure"),
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
PAPER_OUTPUTS = [f"results/tables/paper/{t}.{ext}" for t in PAPER_TABLES for ext in ("md", "csv")] + [
    f"results/plots/paper/{f}.png" for f in PAPER_FIGURES
]
