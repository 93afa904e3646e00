"""fedbench.analysis.tables: known means and sds, rounds to target, diverged seeds."""

from __future__ import annotations

import math
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import polars as pl
import pytest

from fedbench.analysis import tables as T
from fedbench.analysis.tables import CSV_COLUMNS, markdown_table, run_stats, summarize, write_tables


@pytest.fixture
def df(mr):
    # Algorithm "a": three seeds; final accuracies 0.80, 0.85, 0.90; best 0.82, 0.85, 0.95;
    # target 0.8 first reached at rounds 3, 2, 2.
    A = [
        mr.run_rows([0.5, 0.7, 0.82, 0.80], algorithm="a", seed=0),
        mr.run_rows([0.6, 0.8, 0.85, 0.85], algorithm="a", seed=1),
        mr.run_rows([0.4, 0.95, 0.9, 0.90], algorithm="a", seed=2),
    ]
    # Algorithm "b": seed 0 reaches 0.6, seed 1 never reaches 0.8, seed 2 diverges at round 3 after
    # having reached 0.9 at round 2 (which must not count anywhere).
    B = [
        mr.run_rows([0.3, 0.5, 0.6, 0.6], algorithm="b", seed=0),
        mr.run_rows([0.3, 0.5, 0.7, 0.7], algorithm="b", seed=1),
        mr.run_rows([0.3, 0.9, 0.99], algorithm="b", seed=2, diverge_at=3),
    ]
    # Algorithm "c": every seed diverges.
    C = [mr.run_rows([0.2, 0.3], algorithm="c", seed=s, diverge_at=2) for s in (0, 1)]
    return mr.frame([r for run in A + B + C for r in run])


def row(summary: pl.DataFrame, algorithm: str) -> dict:
    return summary.filter(pl.col("algorithm") == algorithm).row(0, named=True)


def test_run_stats(df):
    runs = run_stats(df, 0.8)
    assert runs.height == 8
    r = runs.filter((pl.col("algorithm") == "b") & (pl.col("seed") == 2)).row(0, named=True)
    assert r["diverged"] and math.isnan(r["final_accuracy"])
    assert r["rounds_to_target"] == 2  # per-run raw value; summarize leaves the diverged run out
    r = runs.filter((pl.col("algorithm") == "a") & (pl.col("seed") == 0)).row(0, named=True)
    assert (r["final_accuracy"], r["best_accuracy"], r["rounds_to_target"], r["uplink_floats"]) == (0.80, 0.82, 3, 40)


def test_mean_and_sd_over_seeds(df):
    s = summarize(df, {"d": 0.8})
    assert s.columns == CSV_COLUMNS
    assert s.get_column("algorithm").to_list() == ["a", "b", "c"]  # order of appearance
    a = row(s, "a")
    assert a["n_seeds"] == 3 and a["n_diverged"] == 0
    assert a["final_accuracy_mean"] == pytest.approx(0.85)
    assert a["final_accuracy_std"] == pytest.approx(statistics.stdev([0.80, 0.85, 0.90]))
    assert a["best_accuracy_mean"] == pytest.approx((0.82 + 0.85 + 0.95) / 3)
    assert a["best_accuracy_std"] == pytest.approx(statistics.stdev([0.82, 0.85, 0.95]))
    assert a["rounds_to_target_mean"] == pytest.approx(7 / 3) and a["n_reached_target"] == 3
    assert a["uplink_floats_mean"] == 40 and a["rounds"] == 4 and a["target_accuracy"] == 0.8


def test_diverged_seed_is_never_averaged_in(df):
    b = row(summarize(df, 0.8), "b")
    assert b["n_seeds"] == 3 and b["n_diverged"] == 1
    assert b["final_accuracy_mean"] == pytest.approx(0.65)  # seeds 0 and 1 only
    assert b["final_accuracy_std"] == pytest.approx(statistics.stdev([0.6, 0.7]))
    assert b["best_accuracy_mean"] == pytest.approx(0.65)  # not 0.9 / 0.99 of the diverged seed
    assert b["n_reached_target"] == 0 and b["rounds_to_target_mean"] is None
    c = row(summarize(df, 0.8), "c")
    assert c["n_diverged"] == 2 and c["final_accuracy_mean"] is None


def test_markdown(df):
    md = markdown_table(summarize(df, 0.8), title="e")
    lines = md.splitlines()
    assert lines[0] == "# e"
    table = [l for l in lines if l.startswith("|")]
    assert len({len(l) for l in table}) == 1, "columns are aligned"
    header, a, b, c = table[0], table[2], table[3], table[4]
    assert "rounds to 80%" in header
    assert "85.00 ± 5.00" in a and "2.3 (3/3)" in a and "| 3 " in a
    assert "65.00 ± 7.07" in b and "not reached (0/2)" in b and "diverged (1/3 seeds)" in b
    assert c.count("diverged (2/2 seeds)") >= 3
    assert not any("nan" in l.lower() or "None" in l for l in table)


def test_markdown_without_target(df):
    md = markdown_table(summarize(df, None))
    assert "rounds to" not in md
    assert "85.00 ± 5.00" in md


def test_single_seed_has_no_sd(mr):
    md = markdown_table(summarize(mr.frame(mr.run_rows([0.5, 0.75], algorithm="solo")), 0.7))
    body = [l for l in md.splitlines() if l.startswith("| d ")]
    assert len(body) == 1 and " 75.00 |" in body[0] and "±" not in body[0] and "2.0 (1/1)" in body[0]


def test_write_tables(tmp_path, df):
    s = write_tables(df, tmp_path / "t" / "e.md", tmp_path / "t" / "e.csv", targets={"d": 0.8}, title="e")
    assert (tmp_path / "t" / "e.md").read_text().startswith("# e")
    back = pl.read_csv(tmp_path / "t" / "e.csv")
    assert back.columns == CSV_COLUMNS
    assert back.height == 3
    assert back.get_column("final_accuracy_mean")[0] == pytest.approx(0.85)
    assert back.schema["final_accuracy_mean"] == pl.Float64 and back.schema["n_seeds"] == pl.Int64
    assert s.height == 3
    with pytest.raises(ValueError, match="no metrics rows"):
        write_tables(df.head(0), tmp_path / "x.md", tmp_path / "x.csv")


def test_per_dataset_targets_and_grouping(mr):
    rows = mr.run_rows([0.5, 0.9], dataset="d1", algorithm="a") + mr.run_rows([0.5, 0.6], dataset="d2", algorithm="a")
    s = summarize(mr.frame(rows), {"d1": 0.9, "d2": 0.55})
    assert s.get_column("target_accuracy").to_list() == [0.9, 0.55]
    assert s.get_column("rounds_to_target_mean").to_list() == [2.0, 2.0]


def test_markdown_decimals(df, tmp_path):
    assert "85.0 ± 5.0 " in markdown_table(summarize(df, 0.8), decimals=1)
    assert "85.000 ± 5.000" in markdown_table(summarize(df, 0.8), decimals=3)
    write_tables(df, tmp_path / "t.md", tmp_path / "t.csv", targets=0.8, decimals=0)
    assert "85 ± 5 " in (tmp_path / "t.md").read_text()


# ---- tables.interval, HTML and LaTeX ----



def test_ci95_is_the_t_interval_halfwidth(mr):
    from scipy.stats import t

    rows = []
    for seed, acc in enumerate((0.5, 0.6, 0.7)):
        rows += mr.run_rows([acc], seed=seed)
    rows += mr.run_rows([0.1, 0.2], seed=9, diverge_at=2)  # never counted
    df = mr.frame(rows)
    sd_summary = T.summarize(df)
    assert sd_summary.columns == T.CSV_COLUMNS  # the default CSV is unchanged
    s = T.summarize(df, interval="ci95").row(0, named=True)
    assert s["final_accuracy_ci95"] == pytest.approx(t.ppf(0.975, 2) * 0.1 / 3 ** 0.5)
    md = T.markdown_table(T.summarize(df, interval="ci95"), interval="ci95")
    assert f"60.00 ± {100 * s['final_accuracy_ci95']:.2f}" in md and "95% t-interval" in md
    assert "60.00 ± 10.00" in T.markdown_table(sd_summary)
    assert T.ci95_halfwidth(0.1, 1) is None
    with pytest.raises(ValueError, match="interval"):
        T.summarize(df, interval="iqr")


def test_write_tables_html_and_latex(tmp_path, mr):
    rows = []
    for seed in range(3):
        rows += mr.run_rows([0.5, 0.6], dataset="my_data", algorithm="fed_avg", seed=seed,
                            diverge_at=2 if seed == 2 else None)
    paths = {k: tmp_path / f"e_x.{k}" for k in ("md", "csv", "html", "tex")}
    T.write_tables(mr.frame(rows), paths["md"], paths["csv"], targets=0.55, title="e_x",
                   html_path=paths["html"], tex_path=paths["tex"])
    page = paths["html"].read_text()
    assert "<th class=\"r\">final acc. (%)</th>" in page and "±" not in page.split("<tbody>")[0]
    assert "diverged (1/3 seeds)" in page and "<h1>e_x</h1>" in page
    assert "0.5" not in page.split("<tbody>")[1].split("</tbody>")[0].replace("50.00", "")  # % not fractions
    tex = paths["tex"].read_text()
    check_latex(tex, ncols=8)
    assert r"60.00 $\pm$ 0.00" in tex and r"(\%)" in tex


def check_latex(tex: str, ncols: int) -> None:
    """A booktabs table with ``ncols`` columns, checked by parsing (balanced braces, one ``&`` fewer
    than columns in every row, special characters escaped); compiling is :func:`compile_latex`."""
    for cmd in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}", r"\end{table}"):
        assert cmd in tex
    depth = 0
    for ch in re.sub(r"\\[{}]", "", tex):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    body = tex.split(r"\toprule")[1].split(r"\bottomrule")[0]
    rows = [r for r in body.splitlines() if r.strip() and r.strip() != r"\midrule"]
    assert rows and all(r.endswith(r"\\") for r in rows)
    assert all(len(re.findall(r"(?<!\\)&", r)) == ncols - 1 for r in rows)
    text = "\n".join(x for x in tex.splitlines()[1:] if not x.startswith("\\label"))  # line 1: a comment
    assert not re.search(r"(?<!\\)[%_#]", text)  # escaped
    assert "±" not in tex


def compile_latex(tex_file: Path, preamble: str = "") -> str:
    r"""Compile ``tex_file`` with pdflatex, ``\input`` into a minimal article with booktabs (and
    ``preamble``); assert it succeeds and return the log. The caller skips when pdflatex is absent."""
    doc = ("\\documentclass{article}\n\\usepackage{booktabs}\n" + preamble + "\\begin{document}\n"
           f"\\input{{{tex_file.name}}}\n\\end{{document}}\n")
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(tex_file, Path(d) / tex_file.name)
        (Path(d) / "doc.tex").write_text(doc)
        r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=d,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout[-3000:]
        assert (Path(d) / "doc.pdf").stat().st_size > 0
        return (Path(d) / "doc.log").read_text(errors="replace")


PDFLATEX = shutil.which("pdflatex")
NO_PDFLATEX = ("pdflatex is not installed (Debian/Ubuntu: apt-get install texlive-latex-base "
               "texlive-latex-recommended; .ci/run installs them): the LaTeX tables are checked by parsing only")


@pytest.mark.skipif(PDFLATEX is None, reason=NO_PDFLATEX)
def test_the_aggregate_rules_latex_table_compiles(tmp_path, mr):
    """The .tex file rule aggregate writes (write_tables, as workflow/scripts/aggregate.py calls it:
    a title with '_', targets, a diverged seed, the 95 % interval) compiles with pdflatex in a minimal
    document, with no character missing from the font."""
    rows = []
    for alg, accs in (("fed_avg", [0.5, 0.6]), ("scaffold", [0.4, 0.7])):
        for seed in range(3):
            rows += mr.run_rows(accs, dataset="my_data", partition="dir0.3", algorithm=alg, seed=seed,
                                diverge_at=2 if (alg, seed) == ("fed_avg", 2) else None)
    out = {k: tmp_path / f"my_exp.{k}" for k in ("md", "csv", "html", "tex")}
    T.write_tables(mr.frame(rows), out["md"], out["csv"], targets={"my_data": 0.55}, title="my_exp", decimals=2,
                   interval="ci95", html_path=out["html"], tex_path=out["tex"])
    tex = out["tex"].read_text()
    check_latex(tex, ncols=8)
    assert "diverged" in tex and "my\\_exp" in tex
    for preamble in ("", "\\usepackage[T1]{fontenc}\n"):
        log = compile_latex(out["tex"], preamble)
        assert "Missing character" not in log and "Undefined control sequence" not in log


def test_markdown_to_latex_and_html_of_a_paper_like_table(tmp_path):
    md = ("# Paper T2: entropy (bits) & more_stuff\n\n| split | FedDyn | Alg. 1 |\n|---|---:|---:|\n"
          "| iid | 96.7 (21.25) / — (—) | 50% / θ_k |\n\nnote: ratio ×ours/paper; Δ_k = θ_k − θ^{t−1}\n")
    tex = T.markdown_to_latex(md, label="tab:t2")
    check_latex(tex, ncols=3)
    assert r"\caption{Paper T2: entropy (bits) \& more\_stuff}" in tex and r"\label{tab:t2}" in tex
    assert r"$\Delta$\_k" in tex and r"\textasciicircum{}\{t$-$1\}" in tex
    page = T.markdown_to_html(md)
    assert "<td class=\"r\">50% / θ_k</td>" in page and "&amp; more_stuff" in page
    with pytest.raises(ValueError):
        T.parse_markdown("no table here")


def test_the_round_0_row_of_eval_initial(mr):
    # eval_initial: each run starts with θ⁰'s row. It counts for best over time (the FedAc paper's
    # statistic includes t = 0) and is round 0 of rounds to target only when θ⁰ meets the target.
    rows = (mr.run_rows([0.5, 0.85, 0.8], algorithm="a", seed=0, initial=0.1)    # target at round 2
            + mr.run_rows([0.5, 0.6, 0.7], algorithm="a", seed=1, initial=0.9)   # θ⁰ beats every later round
            + mr.run_rows([0.2, 0.3], algorithm="b", seed=0, initial=0.95, diverge_at=2))
    runs = run_stats(mr.frame(rows), 0.8)
    stats = {(r["algorithm"], r["seed"]): r for r in runs.iter_rows(named=True)}
    assert (stats["a", 0]["best_accuracy"], stats["a", 0]["rounds_to_target"], stats["a", 0]["final_accuracy"]) == (
        0.85, 2, 0.8)
    assert (stats["a", 1]["best_accuracy"], stats["a", 1]["rounds_to_target"], stats["a", 1]["final_accuracy"]) == (
        0.9, 0, 0.7)  # 0 rounds: θ⁰ already meets the target, which is right
    assert stats["a", 0]["rounds"] == stats["a", 1]["rounds"] == 3 and stats["a", 0]["uplink_floats"] == 30
    # without the round-0 rows the statistics of seed 0 are the same (θ⁰ below its best and the target)
    plain = run_stats(mr.frame(mr.run_rows([0.5, 0.85, 0.8], algorithm="a", seed=0)), 0.8).row(0, named=True)
    assert {k: plain[k] for k in ("best_accuracy", "rounds_to_target", "final_accuracy", "rounds")} == {
        k: stats["a", 0][k] for k in ("best_accuracy", "rounds_to_target", "final_accuracy", "rounds")}
    s = summarize(mr.frame(rows), 0.8)
    a, b = row(s, "a"), row(s, "b")
    assert a["rounds_to_target_mean"] == 1.0 and a["n_reached_target"] == 2  # (2 + 0) / 2
    assert a["best_accuracy_mean"] == pytest.approx(0.875)
    assert b["n_diverged"] == 1 and b["best_accuracy_mean"] is None  # θ⁰'s 0.95 never counts for a diverged run
    assert re.search(r"\| +1\.0 \(2/2\) \|", markdown_table(s))


def test_head_rows_keeps_the_heading_and_notes_and_counts_what_it_cut():
    from fedbench.analysis.tables import head_rows

    md = "# e\n\n| a | b |\n|---|--:|\n" + "".join(f"| r{i} | {i} |\n" for i in range(5)) + "\nA note.\n"
    short = head_rows(md, 2, "results/tables/e.md")
    assert short.splitlines() == ["# e", "", "| a | b |", "|---|--:|", "| r0 | 0 |", "| r1 | 1 |",
                                  "… 3 more rows in results/tables/e.md", "", "A note."]
    assert head_rows(md, 5, "x") == md.rstrip()  # nothing cut, nothing added
    with pytest.raises(ValueError, match="max_rows"):
        head_rows(md, 0, "x")


def test_a_one_seed_table_says_one_seed(mr):
    md = markdown_table(summarize(mr.frame(mr.run_rows([0.5, 0.8], algorithm="a")
                                          + mr.run_rows([0.5, 0.7], algorithm="b"))))
    assert "one seed" in md and "over seeds" not in md


def test_an_experiment_without_accuracy_shows_its_loss(mr):
    # the quadratic model: no accuracy; the table shows the final train loss the reader needs
    rows = mr.run_rows([math.nan] * 4, algorithm="theta_all") + mr.run_rows([math.nan] * 4, algorithm="theta_last")
    md = markdown_table(summarize(mr.frame(rows)))
    assert "final acc." not in md and "final train loss" in md
    assert "| 0.25 " in md or "0.25000" in md  # train loss 1/t at t = 4, to its significant digits
    assert "records no accuracy" in md


def test_suboptimality_keeps_its_significant_digits(mr):
    rows = []
    for seed in (0, 1):
        rows += mr.run_rows([math.nan, math.nan], algorithm="fedac", seed=seed)
    df = mr.frame(rows).with_columns(suboptimality=pl.when(pl.col("seed") == 0).then(4.0e-4).otherwise(5.5e-4))
    md = markdown_table(summarize(df))
    assert "final suboptimality" in md and "4.8e-04 ± 1.1e-04" in md and "0.0005" not in md
