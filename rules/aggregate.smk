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


# The papers' tables (fedbench.analysis.paper_tables): built for every paper that some experiment
# names in its `paper` key (FedElasticNet: Tables 2-4; Elastic Aggregation: Table 1), over all the
# experiments of that paper, with the paper's numbers (config/reference/*.csv) beside ours.
from fedbench.analysis.paper_tables import TABLES as PAPER_TABLE_SPECS, paper_key, tables_for


def _experiment_paper(experiment):
    return (config["experiments"].get(experiment) or {}).get("paper")


PAPER_TABLES = tables_for([_experiment_paper(e) for e in EXPERIMENTS])


def paper_table_cells(wildcards):
    """(experiment, dataset, partition, algorithm, participation) of the cells of the experiments
    whose `paper` is this table's paper."""
    key = next(k for k in ("fedelasticnet", "elastic_aggregation") if wildcards.table.startswith(k))
    seen, out = set(), []
    for c in CELLS:
        if paper_key(_experiment_paper(c["experiment"])) != key:
            continue
        row = (c["experiment"], c["dataset"], c["partition"], c["algorithm"], c["sampling"]["participation"])
        if row not in seen:
            seen.add(row)
            out.append(dict(zip(("experiment", "dataset", "partition", "algorithm", "participation"), row)))
    return out


def paper_table_code_version(wildcards):
    return code_version(["fedbench.analysis.paper_tables"], within="fedbench.analysis")


rule paper_table:
    localrule: True
    input:
        metrics="results/metrics.parquet",
        reference=lambda wc: os.path.join(workflow.basedir, "config", "reference",
                                          PAPER_TABLE_SPECS[wc.table]["reference"]),
    output:
        md="results/tables/paper/{table}.md",
        csv=report(
            "results/tables/paper/{table}.csv",
            caption="../workflow/report/paper_table.rst",
            category="Paper tables",
            labels={"table": "{table}"},
        ),
    wildcard_constraints:
        table="|".join(PAPER_TABLE_SPECS) or "no_paper_table",
    params:
        cells=paper_table_cells,
        code=paper_table_code_version,
    log:
        "results/logs/paper_table/{table}.log",
    script:
        "../workflow/scripts/paper_table.py"


# FedElasticNet's λ1 sweep (Figures 3-5: final accuracy and non-zeros vs λ1), built when some
# experiment runs a FedElasticNet algorithm at two or more values of lambda1.
from fedbench.analysis.sweep_plots import sweep_cells

SWEEP_CELLS = sweep_cells(CELLS)
SWEEP_PLOTS = ["results/plots/paper/fedelasticnet_lambda1_sweep.png"] if SWEEP_CELLS else []


rule lambda1_sweep_plot:
    localrule: True
    input:
        metrics="results/metrics.parquet",
    output:
        plot=report(
            "results/plots/paper/fedelasticnet_lambda1_sweep.png",
            caption="../workflow/report/lambda1_sweep.rst",
            category="Paper figures",
            labels={"figure": "FedElasticNet λ1 sweep"},
        ),
    params:
        cells=SWEEP_CELLS,
        code=lambda wc: code_version(["fedbench.analysis.sweep_plots"], within="fedbench.analysis"),
    log:
        "results/logs/lambda1_sweep_plot.log",
    script:
        "../workflow/scripts/lambda1_sweep_plot.py"


# Elastic Aggregation's Figure 1 (percentage of parameters boosted vs round, momentum vs average),
# built when an experiment whose `paper` is Elastic Aggregation runs an Elastic Aggregation
# algorithm (fedbench.analysis.paper_figures.plot_boosted, from the boosted_pct column).
from fedbench.analysis.paper_figures import ELASTIC_ALGORITHMS


def _cell_row(c, *extra):
    return {k: c[k] for k in ("experiment", "dataset", "partition", "algorithm", "algorithm_name", *extra)}


BOOSTED_CELLS = list({(c["experiment"], c["dataset"], c["partition"], c["algorithm"]): _cell_row(c, "hparams")
                      for c in CELLS
                      if paper_key(_experiment_paper(c["experiment"])) == "elastic_aggregation"
                      and c["algorithm_name"] in ELASTIC_ALGORITHMS}.values())
BOOSTED_PLOTS = ["results/plots/paper/elastic_aggregation_boosted.png"] if BOOSTED_CELLS else []


def paper_figures_code_version(wildcards=None):
    return code_version(["fedbench.analysis.paper_figures"], within="fedbench.analysis")


rule boosted_plot:
    localrule: True
    input:
        metrics="results/metrics.parquet",
    output:
        plot=report(
            "results/plots/paper/elastic_aggregation_boosted.png",
            caption="../workflow/report/boosted.rst",
            category="Paper figures",
            labels={"figure": "Elastic Aggregation: boosted parameters"},
        ),
    params:
        cells=BOOSTED_CELLS,
        code=paper_figures_code_version,
    log:
        "results/logs/boosted_plot.log",
    script:
        "../workflow/scripts/boosted_plot.py"


# FedElasticNet's Figure 2 (histograms of the transmitted Δ of FedDyn, Alg. 2, Alg. 3), one per
# experiment with `delta_histogram` (its cells write delta_histogram.parquet: rules/train.smk).
HISTOGRAM_PLOTS = [f"results/plots/paper/{e}_delta_histogram.png" for e in HISTOGRAM_EXPERIMENTS]


def histogram_cells(wildcards):
    return list({(c["dataset"], c["partition"], c["algorithm"]): _cell_row(c)
                 for c in CELLS if c["experiment"] == wildcards.experiment}.values())


rule delta_histogram_plot:
    localrule: True
    input:
        lambda wc: cell_paths("delta_histogram.parquet", experiment=wc.experiment),
    output:
        plot=report(
            "results/plots/paper/{experiment}_delta_histogram.png",
            caption="../workflow/report/delta_histogram.rst",
            category="Paper figures",
            labels={"figure": "FedElasticNet: Δ histograms", "experiment": "{experiment}"},
        ),
    wildcard_constraints:
        experiment="|".join(_re.escape(e) for e in HISTOGRAM_EXPERIMENTS) or "no_histogram_experiment",
    params:
        cells=histogram_cells,
        code=paper_figures_code_version,
    log:
        "results/logs/delta_histogram_plot/{experiment}.log",
    script:
        "../workflow/scripts/delta_histogram_plot.py"


# Every paper figure the config asks for (rule all).
PAPER_FIGURES = SWEEP_PLOTS + BOOSTED_PLOTS + HISTOGRAM_PLOTS
