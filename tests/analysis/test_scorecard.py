"""The scorecard machinery (fedbench.analysis.scorecard, fedbench.papers' scorecard inputs) on
hand-built claims and tables; each paper's own rules are tested in tests/papers/test_<paper>.py.

- a rule that raises is "not decidable" with the error, never a pass; a claim's status is one of three;
- a claim no run can decide is a row that says why; a claim must say where its thresholds come from;
- the paper-numbers mode: a rule the paper's own numbers break says "contradicted by the paper's own";
- the three files: the count line per scale, rows grouped by scale, the figure link, the CSV's columns;
- every paper declares claims with unique ids citing where the paper says it, and every rule holds on
  the paper's own numbers unless it declares the contradiction;
- the folder's tables and metrics are grouped by paper and scale.
"""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest

import fedbench.papers as papers
from fedbench.analysis import scorecard as sc


def _claim(cid, decide, **kw):
    return sc.Claim(cid, "p", "Table 1", "A beats B", "61.45 vs 61.22", "m", "r", decide,
                    **({"basis": "no threshold: exact ordering"} if decide is not None else {}) | kw)


def test_a_rule_that_raises_is_not_decidable_with_the_error():
    def broken(ev):
        raise KeyError("ours")

    (row,) = sc.evaluate([_claim("x.broken", broken)], sc.Evidence())
    assert row["verdict"] == sc.UNDECIDED and row["note"] == "the rule raised KeyError: 'ours'"
    with pytest.raises(ValueError, match="status must be one of"):
        sc.Verdict("passes")


def test_a_claim_is_a_rule_with_its_basis_or_says_why_no_run_decides_it():
    with pytest.raises(ValueError, match="exactly one of decide"):
        sc.Claim("p.a", "p", "§1", "s", "v", "m", "r", None)
    with pytest.raises(ValueError, match="basis is empty"):
        sc.Claim("p.a", "p", "§1", "s", "v", "m", "r", lambda ev: None)
    with pytest.raises(ValueError, match="needs paper_source"):
        _claim("p.a", lambda ev: None, on_paper=lambda: None)
    proof = _claim("p.proof", None, no_run="a statement about the authors' hardware")
    (row,) = sc.evaluate([proof], sc.Evidence(scale=sc.REDUCED_REAL))
    assert row["verdict"] == sc.UNDECIDED and row["scale"] == sc.REDUCED_REAL
    assert row["note"] == "no run can decide it: a statement about the authors' hardware"


def test_paper_numbers_contradiction_is_shown_not_hidden():
    ok = _claim("p.ok", lambda ev: None, on_paper=lambda: sc.Verdict.decide(True, "61.45 vs 61.22", "by 0.23 pp"),
                paper_source="Table 1")
    broken = _claim("p.bad", lambda ev: None, on_paper=lambda: sc.Verdict.decide(False, "40.60", "off by 0.02"),
                    paper_source="Table 2", contradicted="SCAFFOLD's column is not twice FedAvg's")
    silent = _claim("p.none", lambda ev: None)
    rows = sc.paper_number_rows([ok, broken, silent])
    assert [r["verdict"] for r in rows] == [sc.HOLDS, sc.FAILS, sc.UNDECIDED]
    assert {r["scale"] for r in rows} == {sc.PAPER_NUMBERS}
    assert rows[1]["margin"] == "contradicted by the paper's own Table 2: off by 0.02"
    assert rows[1]["note"] == "SCAFFOLD's column is not twice FedAvg's"
    assert rows[2]["note"] == "the paper reports no numbers this rule can be applied to"


def test_scorecard_files_group_rows_by_scale(tmp_path):
    holds = _claim("p.a", lambda ev: sc.Verdict.decide(True, "91.1 vs 88.6", "by 2.5 pp", ["e/d/p/a", "e/d/p/b"]),
                   figure="p_fig2")
    fails = sc.Claim("p.b", "p", "§5", "C | D", "32", "m", "r", lambda ev: sc.Verdict.decide(False, "64", "2× it"),
                     basis="the paper's sentence")
    undecided = _claim("p.c", lambda ev: sc.Verdict.undecidable("no sweep over n"))
    rows = sc.evaluate([holds, fails, undecided], sc.Evidence(scale=sc.REDUCED_REAL))
    rows += sc.evaluate([holds], sc.Evidence(scale=sc.TOY))
    frame = sc.scorecard_frame(rows)
    paths = [tmp_path / f"scorecard.{e}" for e in ("md", "html", "csv")]
    sc.write_scorecard(frame, *paths, names={"p": "Paper (2020)"}, command="snakemake --cores 2")
    md = paths[0].read_text()
    assert ("4 claim rows: 0 reproduced at paper scale, 1 hold on reduced real data, 1 hold on toy data only "
            "(not counted as reproduced), 1 fail, 1 not decidable.") in md
    assert "## Paper (2020)\n\n4 claim rows:" in md
    assert md.index("| reduced real data |") < md.index("| toy data |")
    assert ("| Paper (2020) | Table 1 | A beats B | 61.45 vs 61.22 | 91.1 vs 88.6 | ✅ holds: by 2.5 pp "
            "| reduced real data | e/d/p/a, e/d/p/b | [p_fig2](../plots/paper/p_fig2.png) |") in md
    assert "| C \\| D | 32 | 64 | ❌ fails: 2× it | reduced real data |" in md
    assert "| — not decidable: no sweep over n |" in md and "Command: `snakemake --cores 2`" in md
    page = paths[1].read_text()
    assert page.count("<tr title=") == 4 and '<td style="color:#b3261e;font-weight:bold">❌ fails' in page
    assert "<td>C | D</td>" in page and "measure: m\nrule: r\nbasis: the paper&#x27;s sentence" in page
    assert '<a href="../plots/paper/p_fig2.png">p_fig2</a>' in page
    csv = pl.read_csv(paths[2])
    assert tuple(csv.columns) == sc.COLUMNS and csv["scale"].to_list() == [sc.REDUCED_REAL] * 3 + [sc.TOY]
    assert "no claim to decide" in sc.markdown_scorecard(sc.scorecard_frame([]))


def test_every_paper_declares_claims_that_cite_the_paper_and_hold_on_its_numbers():
    ids = []
    for p in papers.PAPERS:
        cs = p.claims()
        assert cs, p.KEY
        for c in cs:
            assert c.paper == p.KEY and c.id.startswith(p.KEY + ".")
            assert c.where and c.says and c.paper_value and c.measure and c.rule
            ids.append(c.id)
        for c, row in zip(cs, sc.paper_number_rows(cs)):
            assert row["verdict"] == (sc.FAILS if c.contradicted else sc.HOLDS if c.on_paper else sc.UNDECIDED), \
                (c.id, row["margin"], row["note"])
    assert len(ids) == len(set(ids))
    assert [papers.paper_of_table(n) for n in ("fedac_best", "fed_minimax_summary", "fedelasticnet_table2",
                                                "local_update_theory", "baselines")] == [
        "fedac", "fed_minimax", "fedelasticnet", "local_update", None]


def test_paper_numbers_command_prints_every_claim_of_the_five_papers(tmp_path):
    out = subprocess.run([sys.executable, "-m", "fedbench.analysis.scorecard", "--paper-numbers",
                          "--csv", str(tmp_path / "rows.csv")], capture_output=True, text=True, check=True).stdout
    frame = pl.read_csv(tmp_path / "rows.csv")
    assert frame.height == sum(len(p.claims()) for p in papers.PAPERS) and set(frame["paper"]) == set(papers.keys())
    assert out.startswith("# Reproduction scorecard: the papers' claims, decided on the papers' own numbers")
    assert out.count("\n| ") - out.count("\n| paper |") == frame.height
    assert frame.height >= 60
    failing = frame.filter(pl.col("verdict") == sc.FAILS)
    assert all(m.startswith("contradicted by the paper's own") for m in failing["margin"])


def test_cell_scale_from_the_source_and_the_papers_rounds():
    assert papers.cell_scale("fedac", {"source": "digits"}, 10_000) == sc.TOY
    assert papers.cell_scale(None, {"source": "breast_cancer"}, 10) == sc.REDUCED_REAL
    key, full = next((p.KEY, p.PAPER_SCALE) for p in papers.PAPERS if getattr(p, "PAPER_SCALE", None))
    source, rounds = next(iter(full.items()))
    assert papers.cell_scale(key, {"source": source}, rounds) == sc.PAPER_SCALE
    assert papers.cell_scale(key, {"source": source}, rounds - 1) == sc.REDUCED_REAL


def test_scorecard_inputs_group_the_folders_tables_and_metrics_by_paper_and_scale(tmp_path):
    def table(rows):
        return pl.DataFrame([{"experiment": e, "dataset": d, "scale": s, "value": 1.0} for e, d, s in rows])

    table([("ea", "mnist5k", sc.REDUCED_REAL), ("ea_toy", "digits", sc.TOY), (None, "cifar10", None)]).write_csv(
        tmp_path / "elastic_aggregation_table1.csv")  # the last: a row of the paper's alone
    pl.DataFrame({"experiment": ["e"], "dataset": ["a9a"], "value": [1.0]}).write_csv(tmp_path / "fedac_best.csv")
    metrics = pl.DataFrame({"experiment": ["ea", "ea_toy", "e", "other"], "dataset": ["mnist5k", "digits", "a9a", "x"],
                            "round": [1, 1, 1, 1]})
    inputs = papers.scorecard_inputs(metrics, [str(tmp_path / "fedac_best.csv"),
                                               str(tmp_path / "elastic_aggregation_table1.csv")])
    assert [(k, s) for k, s, *_ in inputs] == [("elastic_aggregation", sc.REDUCED_REAL),
                                               ("elastic_aggregation", sc.TOY), ("fedac", sc.TOY)]
    assert [m["experiment"].to_list() for _, _, m, _ in inputs] == [["ea"], ["ea_toy"], ["e"]]
    assert inputs[0][3]["elastic_aggregation_table1"]["dataset"].to_list() == ["mnist5k", "cifar10"]
    rows = papers.scorecard_rows(inputs)
    assert {r["scale"] for r in rows} == {sc.REDUCED_REAL, sc.TOY}


def test_the_scorecard_is_the_reports_first_category_and_part_of_rule_all():
    """Snakemake's report sorts its categories by name: "0. Scorecard" comes before every other."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    smk = (root / "rules" / "scorecard.smk").read_text()
    assert re.search(r'"results/tables/scorecard\.html",\s*caption="[^"]+",\s*category="0\. Scorecard"', smk)
    others = {c for f in (root / "rules").glob("*.smk") for c in re.findall(r'category="([^"]+)"', f.read_text())}
    assert sorted(others)[0] == "0. Scorecard"
    snakefile = (root / "Snakefile").read_text()
    rule_all = snakefile[snakefile.index("rule all:"):snakefile.index("onstart:")]
    assert '"results/tables/scorecard.md"' in rule_all and "print_scorecard()" in snakefile


def test_docs_list_every_claim_as_the_inventory_prints_it():
    """docs/papers.md's claims section is `python -m fedbench.analysis.scorecard --inventory`."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "papers.md").read_text(encoding="utf-8")
    begin, end = "<!-- claims: begin -->\n", "<!-- claims: end -->"
    assert doc[doc.index(begin) + len(begin):doc.index(end)] == sc.inventory_markdown(), (
        "docs/papers.md's claims section is stale: replace it with "
        "`python -m fedbench.analysis.scorecard --inventory`")


def test_paper_tables_carry_the_scale_of_their_cells(tmp_path, monkeypatch):
    """papers.write_table adds to a paper table's long CSV the scale of each row's (experiment, dataset)."""
    from fedbench.papers import elastic_aggregation as ea

    def written(name, df, reference, cells, md, csv):
        pl.DataFrame({"experiment": ["q", "q", "z", None], "dataset": ["mnist5k", "digits", "x", "cifar10"],
                      "value": [1.0, 2.0, 3.0, 4.0]}).write_csv(csv)

    monkeypatch.setattr(ea, "write_table", written)
    papers.write_table(ea.KEY, "elastic_aggregation_table1", None, None, [], tmp_path / "t.md", tmp_path / "t.csv",
                       [["q", "mnist5k", sc.REDUCED_REAL], ["q", "digits", sc.TOY]])
    assert pl.read_csv(tmp_path / "t.csv")["scale"].to_list() == [sc.REDUCED_REAL, sc.TOY, sc.TOY, None]
