"""The scorecard (fedbench.analysis.scorecard) and the papers' claims, on hand-built tables:

- a claim that holds, one that fails with its margin, one not decidable (with what is missing);
- a rule that raises is "not decidable" with the error, never a pass; a claim's status is one of three;
- the three files: the Markdown counts and rows, the HTML colours, the CSV's columns;
- every paper declares claims with unique ids, each citing where the paper says it.
"""

from __future__ import annotations

import polars as pl
import pytest

import fedbench.papers as papers
from fedbench.analysis import scorecard as sc
from fedbench.papers import elastic_aggregation, fedac, fedelasticnet, local_update


def _claim(papermod, cid):
    (c,) = [c for c in papermod.claims() if c.id == cid]
    return c


def _best(rows):
    """A fedac_best table (the columns the claims read) from (dataset, lam, key, M, K, mean, paper)."""
    return pl.DataFrame([{"experiment": "e", "dataset": d, "lam": lam, "algorithm": k, "key": k, "M": m, "K": kk,
                          "T": 4096, "eta": 0.1, "mean": mean, "sd": None, "n_seeds": 1, "edge": "", "points": 3,
                          "diverged": 0, "status": "ok", "paper": paper, "paper_eta": 0.1, "paper_eta_edge": False,
                          "ratio": None if paper is None else mean / paper}
                         for d, lam, k, m, kk, mean, paper in rows])


FOUR = {"fedac": 1e-3, "fedavg": 7e-3, "mb_sgd": 4e-2, "mb_ac_sgd": 5e-3}


def test_fedac_best_at_large_K_M_holds_with_its_margin():
    best = _best([("a9a", 1e-3, k, 256, 64, v, None) for k, v in FOUR.items()])
    v = _claim(fedac, "fedac.best_at_large_K_M").decide(sc.Evidence(tables={"fedac_best": best}))
    assert v.status == sc.HOLDS
    assert v.ours == "FedAc-I the best at 1 of 1 points"
    assert "smallest 5×" in v.margin  # Mb-Ac-SGD's 5e-3 over FedAc-I's 1e-3
    assert v.cells == ("e/a9a/shared/fedac (M = 256, K = 64)", "e/a9a/shared/fedavg (M = 256, K = 64)",
                       "e/a9a/shared/mb_sgd (M = 256, K = 64)", "e/a9a/shared/mb_ac_sgd (M = 256, K = 64)")


def test_fedac_best_at_large_K_M_fails_by_how_much():
    rows = [("a9a", 1e-3, k, 256, 64, v, None) for k, v in FOUR.items()]
    rows += [("a9a", 1e-3, k, 512, 128, {**FOUR, "mb_ac_sgd": 5e-4}[k], None) for k in FOUR]
    v = _claim(fedac, "fedac.best_at_large_K_M").decide(sc.Evidence(tables={"fedac_best": _best(rows)}))
    assert v.status == sc.FAILS
    assert v.ours == "FedAc-I not the best at 1 of 2 points"
    assert v.margin == "at a9a λ = 0.001, M = 512, K = 128 the best baseline is 2× below FedAc-I"


def test_fedac_best_at_large_K_M_from_K_128_at_lambda_1e2():
    """App. A.2 (Figs. 4 and 5, a9a λ = 1e-2): Mb-Ac-SGD "similar" to FedAc-I up to K = 64, beaten
    from K = 128. A point at K = 64 where Mb-Ac-SGD wins is outside the claim there, not at 1e-3."""
    rows = [("a9a", lam, k, 256, 64, {**FOUR, "mb_ac_sgd": 8e-4}[k], None) for lam in (1e-2, 1e-3) for k in FOUR]
    rows += [("a9a", 1e-2, k, 256, 128, v, None) for k, v in FOUR.items()]
    v = _claim(fedac, "fedac.best_at_large_K_M").decide(sc.Evidence(tables={"fedac_best": _best(rows)}))
    assert v.status == sc.FAILS and v.ours == "FedAc-I not the best at 1 of 2 points"
    assert v.margin == "at a9a λ = 0.001, M = 256, K = 64 the best baseline is 1.25× below FedAc-I"
    v = _claim(fedac, "fedac.best_at_large_K_M").decide(sc.Evidence(tables={"fedac_best": _best(
        [r for r in rows if r[1] == 1e-2])}))
    assert v.status == sc.HOLDS and v.ours == "FedAc-I the best at 1 of 1 points"
    only_64 = [r for r in rows if r[1] == 1e-2 and r[4] == 64]
    v = _claim(fedac, "fedac.best_at_large_K_M").decide(sc.Evidence(tables={"fedac_best": _best(only_64)}))
    assert v.status == sc.UNDECIDED and "≥ 128 at a9a λ = 1e-2" in v.note


@pytest.mark.parametrize("rows, missing", [
    ([("a9a", 1e-3, k, 64, 64, v, None) for k, v in FOUR.items()], "M ≥ 256"),  # too few workers
    ([("breast_cancer", 1e-2, k, 256, 64, v, None) for k, v in FOUR.items()], "this run: breast_cancer"),
    ([("a9a", 1e-3, k, 256, 64, v, None) for k, v in FOUR.items() if k != "mb_sgd"], "the four algorithms"),
])
def test_fedac_best_at_large_K_M_not_decidable_says_what_is_missing(rows, missing):
    v = _claim(fedac, "fedac.best_at_large_K_M").decide(sc.Evidence(tables={"fedac_best": _best(rows)}))
    assert v.status == sc.UNDECIDED and missing in v.note and v.margin == ""


def test_fedac_claims_without_a_sweep_are_not_decidable():
    for c in fedac.claims():
        v = c.decide(sc.Evidence())
        assert v.status == sc.UNDECIDED and "no FedAc sweep ran" in v.note, c.id


def test_fedac_within_2x_holds_and_fails_with_the_farthest_cell():
    ok = _best([("a9a", 1e-3, "fedac", 256, 64, 1.2e-3, 1e-3), ("a9a", 1e-3, "fedavg", 256, 64, 6e-3, 7e-3)])
    v = _claim(fedac, "fedac.within_2x_of_authors").decide(sc.Evidence(tables={"fedac_best": ok}))
    assert v.status == sc.HOLDS and v.ours.startswith("2 of 2 within 2×") and "1.2×" in v.margin
    bad = _best([("a9a", 1e-3, "fedac", 256, 64, 2.5e-3, 1e-3), ("a9a", 1e-3, "fedavg", 256, 64, 6e-3, 7e-3)])
    v = _claim(fedac, "fedac.within_2x_of_authors").decide(sc.Evidence(tables={"fedac_best": bad}))
    assert v.status == sc.FAILS and v.margin == "1 cell(s) outside 2×, the farthest 2.5×"
    assert v.cells == ("e/a9a/shared/fedac (M = 256, K = 64)",)
    none = _best([("breast_cancer", 1e-2, "fedac", 4, 1, 1e-3, None)])
    v = _claim(fedac, "fedac.within_2x_of_authors").decide(sc.Evidence(tables={"fedac_best": none}))
    assert v.status == sc.UNDECIDED and "breast_cancer" in v.note


def test_fedac_vanilla_degrades_with_K():
    rows = []
    for m in (16, 256):
        rows += [("a9a", 1e-4, "fedac", m, 2, 1e-3, None), ("a9a", 1e-4, "fedac_vanilla", m, 2, 1.2e-3, None),
                 ("a9a", 1e-4, "fedac", m, 128, 1e-3, None), ("a9a", 1e-4, "fedac_vanilla", m, 128, 3e-3, None)]
    v = _claim(fedac, "fedac.vanilla_degrades_with_K").decide(sc.Evidence(tables={"fedac_best": _best(rows)}))
    assert v.status == sc.HOLDS and v.ours == "a9a λ = 0.0001: K = 2: 1.2×, K = 128: 3×"
    flat = [r[:5] + (1e-3, None) for r in rows]  # vanilla = FedAc-I at every K: no degradation
    v = _claim(fedac, "fedac.vanilla_degrades_with_K").decide(sc.Evidence(tables={"fedac_best": _best(flat)}))
    assert v.status == sc.FAILS


def _table1(values):
    """An elastic_aggregation_table1 long CSV from {(metric, algorithm): ours (%)}."""
    return pl.DataFrame([{"table": 1, "experiment": "ea", "dataset": "digits", "partition": "dir0.3",
                          "participation": 0.1, "rounds": 20, "algorithm": a, "paper_algorithm": a, "metric": m,
                          "unit": "%", "ours": v, "n_seeds": 1, "paper": None, "ratio": None}
                         for (m, a), v in values.items()])


def test_elastic_aggregation_ordering_holds_fails_and_is_not_decidable():
    claim = _claim(elastic_aggregation, "elastic_aggregation.table1_ordering")
    good = {(m, a): v for m in ("test_accuracy", "train_accuracy")
            for a, v in (("fedavg", 88.6), ("elastic_fedavg_average", 89.0), ("elastic_fedavg", 91.1))}
    v = claim.decide(sc.Evidence(tables={"elastic_aggregation_table1": _table1(good)}))
    assert v.status == sc.HOLDS and v.margin == "elastic(momentum) first in 2 of 2 rows"
    assert "one seed" not in v.note and "over 1 seed" in v.note and "CIFAR-10" in v.note
    bad = {**good, ("test_accuracy", "fedavg"): 92.0}
    v = claim.decide(sc.Evidence(tables={"elastic_aggregation_table1": _table1(bad)}))
    assert v.status == sc.FAILS
    assert v.margin == "elastic(momentum) not first in 1 of 2 rows, 0.90 pp behind at worst"
    two = {k: v for k, v in good.items() if k[1] != "elastic_fedavg_average"}
    v = claim.decide(sc.Evidence(tables={"elastic_aggregation_table1": _table1(two)}))
    assert v.status == sc.UNDECIDED and "the three estimators" in v.note


def _metrics(runs):
    """Collected metrics (the last round only) from {algorithm: (test_accuracy, uplink_nonzeros)}."""
    return pl.DataFrame([{"experiment": "en", "dataset": "digits", "partition": "iid", "algorithm": a, "seed": 0,
                          "round": 20, "test_accuracy": acc, "uplink_nonzeros": nz, "status": "ok"}
                         for a, (acc, nz) in runs.items()])


def test_fedelasticnet_less_communication_at_comparable_accuracy():
    claim = _claim(fedelasticnet, "fedelasticnet.less_comm_comparable_acc")
    v = claim.decide(sc.Evidence(metrics=_metrics({"feddyn": (0.697, 1.4e7), "fedelasticnet_feddyn": (0.69, 1e5)})))
    assert v.status == sc.HOLDS and "140× fewer non-zeros" in v.ours
    v = claim.decide(sc.Evidence(metrics=_metrics({"feddyn": (0.697, 1.4e7), "fedelasticnet_feddyn": (0.236, 1e5)})))
    assert v.status == sc.FAILS and v.margin.startswith("1 of 1 pairs not comparable: worst 46.1 pp below its base")
    v = claim.decide(sc.Evidence(metrics=_metrics({"feddyn": (0.697, 1.4e7), "fedprox": (0.7, 1e7)})))
    assert v.status == sc.UNDECIDED


def test_local_update_fixed_point_needs_converged_deterministic_cells():
    claim = _claim(local_update, "local_update.fixed_point_is_surrogate")
    row = {"experiment": "lu", "dataset": "quadratic", "algorithm": "fedavg", "algorithm_name": "fedavg",
           "member": "Θ_{1:5}", "setting": "deterministic", "seeds": 1, "rounds": 200, "status": "ok",
           "dist_theory": 0.2, "dist_engine": 0.2, "dist_rel_error": 3e-15, "residual": 1e-30,
           "trajectory_error": 1e-12}
    v = claim.decide(sc.Evidence(tables={"local_update_theory": pl.DataFrame([row])}))
    assert v.status == sc.HOLDS and "3.0e-15" in v.margin and "not 0" in v.ours
    v = claim.decide(sc.Evidence(tables={"local_update_theory": pl.DataFrame([{**row, "dist_rel_error": 2e-3}])}))
    assert v.status == sc.FAILS and "2.0e-03" in v.margin
    v = claim.decide(sc.Evidence(tables={"local_update_theory": pl.DataFrame([{**row, "residual": 0.5}])}))
    assert v.status == sc.UNDECIDED and "converged" in v.note


def test_a_rule_that_raises_is_not_decidable_with_the_error():
    def broken(ev):
        raise KeyError("ours")

    claim = sc.Claim("x.broken", "x", "§1", "says", "1", "measure", "rule", broken)
    (row,) = sc.evaluate([claim], sc.Evidence())
    assert row["verdict"] == sc.UNDECIDED and row["note"] == "the rule raised KeyError: 'ours'"
    with pytest.raises(ValueError, match="status must be one of"):
        sc.Verdict("passes")


def test_scorecard_files(tmp_path):
    holds = sc.Claim("p.a", "p", "Table 1", "A beats B", "61.45 vs 61.22", "m", "r",
                     lambda ev: sc.Verdict.decide(True, "91.1 vs 88.6", "by 2.5 pp", ["e/d/p/a", "e/d/p/b"]))
    fails = sc.Claim("p.b", "p", "§5", "C | D", "32", "m", "r",
                     lambda ev: sc.Verdict.decide(False, "64", "2× the paper's"))
    undecided = sc.Claim("p.c", "p", "Fig. 9", "E", "1/n", "m", "r",
                         lambda ev: sc.Verdict.undecidable("no sweep over n"))
    frame = sc.scorecard_frame(sc.evaluate([holds, fails, undecided], sc.Evidence()))
    paths = [tmp_path / f"scorecard.{e}" for e in ("md", "html", "csv")]
    sc.write_scorecard(frame, *paths, names={"p": "Paper (2020)"}, command="snakemake --cores 2")
    md = paths[0].read_text()
    assert "3 claims: 1 hold, 1 fail, 1 not decidable at this run's scale." in md
    assert ("| Paper (2020) | Table 1 | A beats B | 61.45 vs 61.22 | 91.1 vs 88.6 | ✅ holds: by 2.5 pp "
            "| e/d/p/a, e/d/p/b |") in md
    assert "| C \\| D | 32 | 64 | ❌ fails: 2× the paper's |" in md
    assert "| — not decidable: no sweep over n |" in md and "Command: `snakemake --cores 2`" in md
    page = paths[1].read_text()
    assert page.count("<tr title=") == 3 and '<td style="color:#b3261e;font-weight:bold">❌ fails' in page
    assert "<td>C | D</td>" in page and "measure: m\nrule: r" in page
    csv = pl.read_csv(paths[2])
    assert tuple(csv.columns) == sc.COLUMNS and csv["verdict"].to_list() == [sc.HOLDS, sc.FAILS, sc.UNDECIDED]
    empty = sc.markdown_scorecard(sc.scorecard_frame([]))
    assert "no claim to decide" in empty


def test_every_paper_declares_claims_that_cite_the_paper():
    ids = []
    for p in papers.PAPERS:
        cs = p.claims()
        assert cs, p.KEY
        for c in cs:
            assert c.paper == p.KEY and c.id.startswith(p.KEY + ".")
            assert c.where and c.says and c.paper_value and c.measure and c.rule
            ids.append(c.id)
    assert len(ids) == len(set(ids))
    assert [papers.paper_of_table(n) for n in ("fedac_best", "fed_minimax_summary", "fedelasticnet_table2",
                                                "local_update_theory", "baselines")] == [
        "fedac", "fed_minimax", "fedelasticnet", "local_update", None]


def test_scorecard_inputs_group_the_folders_tables_and_metrics_by_paper(tmp_path):
    _table1({("test_accuracy", "fedavg"): 88.6}).write_csv(tmp_path / "elastic_aggregation_table1.csv")
    _best([("a9a", 1e-3, "fedac", 256, 64, 1e-3, None)]).write_csv(tmp_path / "fedac_best.csv")
    metrics = pl.DataFrame({"experiment": ["ea", "e", "other"], "round": [1, 1, 1]})
    by_paper, tables = papers.scorecard_inputs(metrics, [str(tmp_path / "fedac_best.csv"),
                                                         str(tmp_path / "elastic_aggregation_table1.csv")])
    assert list(tables) == ["elastic_aggregation", "fedac"]  # PAPERS order
    assert by_paper["fedac"]["experiment"].to_list() == ["e"] and by_paper["elastic_aggregation"].height == 1
    rows = papers.scorecard_rows(list(tables), by_paper, tables)
    assert [r["claim"] for r in rows][:2] == ["elastic_aggregation.table1_ordering", "fedac.best_at_large_K_M"]


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


def _summary(rows):
    """A fed_minimax_summary table from (label, work, num_clients, final_mean, rounds_mean)."""
    return pl.DataFrame([{"experiment": "mm", "dataset": "digits", "partition": f"p{n or ''}",
                          "algorithm": f"{label}[{work}]", "label": label, "work": work, "num_clients": n,
                          "base_partition": "p", "final_mean": acc, "n_seeds": 3, "rounds_mean": r}
                         for label, work, n, acc, r in rows], schema_overrides={"num_clients": pl.Int64})


def test_fed_minimax_fed_norm_ahead_and_rounds_against_clients():
    from fedbench.papers import fed_minimax

    ahead = _claim(fed_minimax, "fed_minimax.fed_norm_ahead")
    rows = [("local_sgda", "E5", None, 0.60, None), ("fed_norm_sgda", "E5", None, 0.64, None),
            ("local_sgda_m", "E5", None, 0.90, None)]  # momentum: not one of the compared pair
    v = ahead.decide(sc.Evidence(tables={"fed_minimax_summary": _summary(rows)}))
    assert v.status == sc.HOLDS and v.margin == "ahead in all 1 settings by more than the seeds' sd, by ≥ 4.00 pp"
    rows += [("local_sgda", "E7", None, 0.62, None), ("fed_norm_sgda", "E7", None, 0.55, None)]
    v = ahead.decide(sc.Evidence(tables={"fed_minimax_summary": _summary(rows)}))
    assert v.status == sc.FAILS and v.margin == "behind by 7.00 pp (more than the seeds' sd) in mm E7"
    noisy = _summary(rows).with_columns(pl.lit(0.08).alias("final_sd"))  # every gap within the seeds' sd
    v = ahead.decide(sc.Evidence(tables={"fed_minimax_summary": noisy}))
    assert v.status == sc.UNDECIDED and v.note.startswith("2 of 2 settings differ by less than the seeds' sd")
    clients = _claim(fed_minimax, "fed_minimax.rounds_vs_clients")
    v = clients.decide(sc.Evidence(tables={"fed_minimax_summary": _summary(rows)}))
    assert v.status == sc.UNDECIDED and "num_clients" in v.note
    sweep = [("fed_norm_sgda_plus", "E5", n, 0.7, 120 * 5 / n) for n in (5, 10, 20)]  # rounds ∝ 1/n
    v = clients.decide(sc.Evidence(tables={"fed_minimax_summary": _summary(sweep)}))
    assert v.status == sc.HOLDS and v.ours == "mm fed_norm_sgda_plus: rounds ∝ n^−1.00"
    flat = [("fed_norm_sgda_plus", "E5", n, 0.7, 100.0) for n in (5, 10, 20)]
    assert clients.decide(sc.Evidence(tables={"fed_minimax_summary": _summary(flat)})).status == sc.FAILS


def test_fedelasticnet_dense_columns_and_the_lowest_entropy():
    def table(name, rows):
        return pl.DataFrame([{"table": 2, "experiment": "en", "dataset": d, "partition": "iid", "participation": 0.1,
                              "rounds": 200, "algorithm": a, "metric": m, "ours": ours, "paper": paper}
                             for d, a, m, ours, paper in rows])

    dense = _claim(fedelasticnet, "fedelasticnet.table2_dense")
    t2 = table(2, [("cifar10", "fedprox", "uplink_nonzeros", 163.82, 163.82),
                   ("cifar10", "scaffold", "uplink_nonzeros", 327.64, 327.64)])
    assert dense.decide(sc.Evidence(tables={"fedelasticnet_table2": t2})).status == sc.HOLDS
    off = table(2, [("cifar10", "fedprox", "uplink_nonzeros", 163.90, 163.82)])
    v = dense.decide(sc.Evidence(tables={"fedelasticnet_table2": off}))
    assert v.status == sc.FAILS and v.margin.startswith("largest |ours − paper| 0.08 (×1e7) at fedprox")
    digits = table(2, [("digits", "fedprox", "uplink_nonzeros", 1.3, None)])
    v = dense.decide(sc.Evidence(tables={"fedelasticnet_table2": digits}))
    assert v.status == sc.UNDECIDED and "this run: digits" in v.note
    lowest = _claim(fedelasticnet, "fedelasticnet.alg3_lowest_entropy")
    t3 = table(3, [("digits", "feddyn", "uplink_entropy_bits", 96.7, None),
                   ("digits", "fedelasticnet_feddyn", "uplink_entropy_bits", 0.76, None),
                   ("digits", "fedprox", "uplink_entropy_bits", 20.58, None)])
    v = lowest.decide(sc.Evidence(tables={"fedelasticnet_table3": t3}))
    assert v.status == sc.HOLDS and v.ours == "Alg. 3 the lowest in 1 of 1 rows"
    t4 = t3.with_columns(pl.when(pl.col("algorithm") == "fedprox").then(0.5).otherwise(pl.col("ours")).alias("ours"))
    v = lowest.decide(sc.Evidence(tables={"fedelasticnet_table4": t4}))
    assert v.status == sc.FAILS and "vs fedprox" in v.margin
