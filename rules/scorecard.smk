# The reproduction scorecard: the claims of every paper whose tables are in this folder (each paper's
# claims() in its module, fedbench.papers), decided on the folder's collected metrics
# (results/metrics.parquet) and on the papers' table CSVs (results/tables/paper/*.csv): holds, fails
# (by how much) or not decidable at this run's scale. results/tables/scorecard.{md,html,csv}.
# Like results/metrics.parquet and the comparison plot it is the folder's view: the current config's
# paper tables (made first) and those earlier config files wrote here, so that switching between
# config files in one folder reruns nothing (a config without paper experiments, in a fresh folder,
# gets a scorecard that says so). Part of rule all for every config; the first thing in the report
# (category "0. Scorecard", and the top of its landing page); printed at the end of a run
# (print_scorecard, Snakefile onsuccess).
# params: the code version of the scorecard and of every paper module: editing a claim re-decides
# and retrains nothing.


def scorecard_tables(wildcards=None):
    """The paper tables' CSVs the scorecard reads: this config's (rule paper_table) and those already
    in the folder (results/tables/paper/*.csv, left as they are), in one order whichever config runs."""
    present = [str(p) for p in Path("results/tables/paper").glob("*.csv") if not p.name.startswith(".")]
    return sorted(set(present) | {f"results/tables/paper/{n}.csv" for n in PAPER_TABLES})


def scorecard_code_version(wildcards=None):
    """The code version of the claims: the scorecard, each paper's module (its claims() and the
    functions they call there) and the minimax toy the minimax claims run; not what those import
    (editing the table formatting re-decides nothing)."""
    import hashlib

    from fedbench.codeversion import module_closure, source_digest

    own = [p.__name__ for p in papers.PAPERS]  # a paper package's submodules (e.g. its paper_claims) included
    names = ["fedbench.analysis.scorecard", "fedbench.analysis.minimax_toy",
             *(m for m in module_closure(own, "fedbench") if m.startswith("fedbench.papers."))]
    h = hashlib.sha256("".join(f"{n}={source_digest(n, 'fedbench')}\n" for n in names).encode())
    return h.hexdigest()[:16]


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


#: Rows of the scorecard printed at the end of a run (the files hold them all).
SCORECARD_ROWS = 40


def print_scorecard():
    """After a successful run, on stderr: the scorecard (results/tables/scorecard.md), cut to its
    first SCORECARD_ROWS rows."""
    from fedbench.analysis.tables import head_rows

    path = "results/tables/scorecard.md"
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            print(f"\n{path}:\n{head_rows(f.read(), SCORECARD_ROWS, path)}", file=sys.stderr)
