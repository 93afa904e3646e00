"""fedbench.papers.fed_minimax (Sharma, Panda & Joshi, TMLR 2023): the figures it declares from the
quick experiment file's cells, the curves' data (the problem's metric, mean over non-diverged
seeds, one line per algorithm × local-work setting) and both figures written."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

from fedbench import papers
from fedbench.config import expand_cells
from fedbench.papers import fed_minimax

QUICK = Path(__file__).resolve().parents[2] / "config" / "experiments" / "fed_minimax_quick.yaml"


@pytest.fixture(scope="module")
def cells():
    return expand_cells(yaml.safe_load(QUICK.read_text()))


def test_declares_the_summary_the_curves_and_the_toy(cells):
    assert all(c["paper"] == "fed_minimax" for c in cells)
    tabs = papers.tables(cells)
    assert sorted(tabs) == ["fed_minimax_summary"] and len(tabs["fed_minimax_summary"].cells) == 21
    assert tabs["fed_minimax_summary"].reference == fed_minimax.REFERENCE and fed_minimax.target_accuracy() == 0.7
    figs = papers.figures(cells)
    assert sorted(figs) == ["fed_minimax_curves", "fed_minimax_toy"]  # no n sweep: no Fig. 9
    rows = figs["fed_minimax_curves"].cells
    assert len(rows) == 21  # one per (experiment, ..., algorithm): not per seed
    assert {(r["label"], r["work"], r["problem"]) for r in rows if r["label"] == "fed_norm_sgda"} == {
        ("fed_norm_sgda", "epochs=uniform2-5", "fair"), ("fed_norm_sgda", "epochs=uniform2-7", "fair")}
    assert figs["fed_minimax_toy"].cells == [] and figs["fed_minimax_toy"].cell_file is None
    assert fed_minimax.figures([]) == []


def _rows(mr, cells, worst):
    rows = []
    for c in cells:
        for seed in (0, 1):
            diverge = 2 if (c["label"] == "local_sgda" and seed == 1) else None
            run = mr.run_rows([0.5, 0.6, 0.7], experiment=c["experiment"], dataset=c["dataset"],
                              partition=c["partition"], algorithm=c["algorithm"], seed=seed, diverge_at=diverge)
            for r in run:
                r["test_worst_class_accuracy"] = worst * r["round"] + 0.01 * seed
            rows += run
    return mr.frame(rows)


def test_curves_frame_uses_each_problems_metric_and_drops_diverged_seeds(mr, cells):
    decl = papers.figures(cells)["fed_minimax_curves"].cells
    df = _rows(mr, decl, worst=0.1)
    data = fed_minimax.curves_frame(df, decl)
    assert data.height == 21 * 3
    fair = data.filter(data["problem"] == "fair")
    robust = data.filter(data["problem"] == "robust")
    assert set(fair["metric"]) == {"test_worst_class_accuracy"} and set(robust["metric"]) == {"test_accuracy"}
    one = fair.filter((fair["label"] == "fed_norm_sgda") & (fair["round"] == 2)
                      & (fair["experiment"] == "fed_minimax_fair_quick"))
    assert one["value"].to_list() == pytest.approx([0.205, 0.205])  # mean of 0.2 and 0.21 over seeds
    alone = fair.filter((fair["label"] == "local_sgda") & (fair["round"] == 2))
    assert alone["value"].to_list() == pytest.approx([0.2, 0.2])  # seed 1 diverged: only seed 0
    assert set(robust["value"].round(6).to_list()) == {0.5, 0.6, 0.7}


def test_both_figures_are_written(mr, cells, tmp_path):
    decl = papers.figures(cells)["fed_minimax_curves"].cells
    metrics = tmp_path / "metrics.parquet"
    _rows(mr, decl, worst=0.1).write_parquet(metrics)
    out = fed_minimax.write_figure("fed_minimax_curves", decl, tmp_path / "c.png", metrics=metrics)
    assert out.stat().st_size > 20_000
    assert fed_minimax.write_figure("fed_minimax_toy", [], tmp_path / "t.png").stat().st_size > 20_000
    with pytest.raises(KeyError, match="not a figure of fed_minimax"):
        fed_minimax.write_figure("fed_minimax_table", [], tmp_path / "x.png")


# -- the summary table and Fig. 9 ----------------------------------------------------------------


def _cell(experiment, algorithm, problem, n=None):
    sweep = {"label": algorithm, "partition": "dir0.1", "point": {"partition.num_clients": n}} if n else None
    return {"experiment": experiment, "dataset": "cifar10", "partition": f"dir0.1,num_clients={n}" if n else "dir0.1",
            "algorithm": algorithm, "sweep": sweep, "local": {"epochs": 2},
            "model": {"name": "vgg11", "minimax": {"problem": problem}}}


def _run(mr, c, seed, accs, *, worst=None, pgd=None, diverge_at=None):
    rows = mr.run_rows(accs, experiment=c["experiment"], dataset=c["dataset"], partition=c["partition"],
                       algorithm=c["algorithm"], seed=seed, diverge_at=diverge_at)
    for i, r in enumerate(rows):
        if worst is not None and r["status"] == "ok":
            r["test_worst_class_accuracy"] = worst[i]
        if pgd is not None and r["status"] == "ok":
            r["test_pgd_accuracy"] = pgd[i]
    return rows


def test_summary_table_on_hand_made_metrics(mr, tmp_path):
    robust, fair = _cell("r", "fed_norm_sgda_plus", "robust"), _cell("f", "local_sgda", "fair")
    decl = papers.tables([{**robust, "paper": "fed_minimax"}, {**fair, "paper": "fed_minimax"}])
    rows = decl["fed_minimax_summary"].cells
    df = mr.frame(
        _run(mr, robust, 1, [0.5, 0.72, 0.71], pgd=[0.2, 0.3, 0.4])
        + _run(mr, robust, 2, [0.6, 0.65, 0.75], pgd=[0.2, 0.3, 0.2])
        + _run(mr, robust, 3, [0.6, 0.8], diverge_at=2)  # dropped
        + _run(mr, fair, 1, [0.9, 0.9, 0.9], worst=[0.1, 0.5, 0.3])
        + _run(mr, fair, 2, [0.5, 0.6, 0.6], worst=[0.2, 0.2, 0.1]))
    runs = fed_minimax.run_frame(df, rows, 0.7)
    assert runs.height == 5
    r1 = runs.filter((pl.col("experiment") == "r") & (pl.col("seed") == 1)).row(0, named=True)
    assert (r1["metric"], r1["final"], r1["best"], r1["pgd_final"], r1["rounds_to_target"]) == (
        "test_accuracy", 0.71, 0.72, 0.4, 2)
    s = fed_minimax.summary_frame(df, rows, 0.7)
    r = s.filter(pl.col("experiment") == "r").row(0, named=True)
    assert (r["n_seeds"], r["n_diverged"]) == (3, 1)
    assert r["final_mean"] == pytest.approx(0.73) and r["final_sd"] == pytest.approx(0.02 * 2 ** 0.5)
    assert r["best_mean"] == pytest.approx(0.735) and r["pgd_final_mean"] == pytest.approx(0.3)
    assert (r["rounds_mean"], r["n_reached"]) == (2.5, 2) and r["rounds_sd"] == pytest.approx(0.5 ** 0.5)
    f = s.filter(pl.col("experiment") == "f").row(0, named=True)
    assert f["metric"] == "test_worst_class_accuracy" and f["pgd_final_mean"] is None
    assert f["final_mean"] == pytest.approx(0.2) and f["best_mean"] == pytest.approx(0.35)
    assert (f["rounds_mean"], f["n_reached"]) == (1.0, 1)  # seed 1 from round 1, seed 2 never
    metrics = tmp_path / "m.parquet"
    df.write_parquet(metrics)
    out = fed_minimax.write_table("fed_minimax_summary", df, fed_minimax.REFERENCE, rows, tmp_path / "s.md",
                                  tmp_path / "s.csv")
    assert out.height == 2 and pl.read_csv(tmp_path / "s.csv").height == 2
    md = (tmp_path / "s.md").read_text()
    assert "73.00 ± 2.83" in md and "30.00 ± 14.14" in md and "2.5 ± 0.7 (2)" in md and "worst-class" in md
    with pytest.raises(KeyError, match="not a table of fed_minimax"):
        fed_minimax.write_table("x", df, fed_minimax.REFERENCE, rows, tmp_path / "x.md", tmp_path / "x.csv")
    old = df.drop("test_pgd_accuracy")  # a metrics file written before the column
    assert fed_minimax.summary_frame(old, rows, 0.7)["pgd_final_mean"].null_count() == 2


def test_rounds_to_target_vs_n_is_declared_for_an_n_sweep_and_plotted(mr, tmp_path):
    cells = [{**_cell("n", "fed_norm_sgda_plus", "robust", n), "paper": "fed_minimax"} for n in (5, 10, 20)]
    figs = papers.figures(cells)
    assert sorted(figs) == ["fed_minimax_clients", "fed_minimax_curves", "fed_minimax_toy"]
    decl = figs["fed_minimax_clients"].cells
    assert [r["num_clients"] for r in decl] == [5, 10, 20]
    accs = {5: [0.3, 0.5, 0.6, 0.71], 10: [0.5, 0.72, 0.8, 0.8], 20: [0.4, 0.5, 0.6, 0.65]}
    df = mr.frame([row for c in cells for seed in (1, 2)
                   for row in _run(mr, c, seed, accs[c["sweep"]["point"]["partition.num_clients"]])])
    data = fed_minimax.clients_frame(df, decl, 0.7)
    assert data["num_clients"].to_list() == [5, 10, 20]
    assert data["rounds_mean"].to_list() == [4.0, 2.0, None] and data["n_reached"].to_list() == [2, 2, 0]
    metrics = tmp_path / "m.parquet"
    df.write_parquet(metrics)
    out = fed_minimax.write_figure("fed_minimax_clients", decl, tmp_path / "n.png", metrics=metrics)
    assert out.stat().st_size > 10_000


# -- the claims (fedbench.analysis.scorecard) ------------------------------------------------------


def _claim(cid):
    (c,) = [c for c in fed_minimax.claims() if c.id == f"fed_minimax.{cid}"]
    return c


def _decide(cid, rows):
    from fedbench.analysis import scorecard as sc

    return _claim(cid).decide(sc.Evidence(tables={"fed_minimax_summary": _summary(rows)}))


def _summary(rows):
    """A fed_minimax_summary table from dicts with method, momentum, problem, work, participation,
    alpha, num_clients, final_mean, final_sd, rounds_mean, rounds_sd, n_reached (defaults below)."""
    out = []
    for i, r in enumerate(rows):
        r = {"experiment": "mm", "dataset": "digits", "work": "E5", "problem": "robust", "momentum": 0.0,
             "participation": 1.0, "alpha": 0.1, "num_clients": None, "final_sd": None, "rounds_mean": None,
             "rounds_sd": None, "n_reached": 3, "final_mean": None, **r}
        out.append({"partition": "p", **r, "base_partition": "p", "algorithm": f"{r['method']}{i}",
                    "label": r["method"], "n_seeds": 3})
    return pl.DataFrame(out, schema_overrides={"num_clients": pl.Int64, "final_sd": pl.Float64,
                                               "rounds_mean": pl.Float64, "rounds_sd": pl.Float64,
                                               "final_mean": pl.Float64, "alpha": pl.Float64})


def test_every_claim_cites_the_paper_and_every_rule_its_basis():
    cs = fed_minimax.claims()
    assert len({c.id for c in cs}) == len(cs) == 17
    assert all(c.paper == "fed_minimax" and c.id.startswith("fed_minimax.") and c.where and c.says
               and c.paper_value and c.measure and c.rule for c in cs)
    rules = [c for c in cs if c.decide is not None]
    assert len(rules) == 13 and all(c.basis for c in rules)
    assert all(c.no_run for c in cs if c.decide is None)
    swept = {"experiment": "e", "dataset": "d", "partition": "p", "algorithm": "a",
             "sweep": {"point": {"partition.num_clients": 5}}}
    figs = {f.name for f in fed_minimax.figures([swept])}
    assert {c.figure for c in cs if c.figure} <= figs


def test_the_rules_on_the_papers_own_numbers_hold_unless_contradicted():
    from fedbench.analysis import scorecard as sc

    cs = fed_minimax.claims()
    rows = {r["claim"]: r for r in sc.paper_number_rows(cs)}
    with_numbers = [c for c in cs if c.on_paper is not None]
    assert len(with_numbers) == 3
    for c in with_numbers:
        want = sc.FAILS if c.contradicted else sc.HOLDS
        assert rows[c.id]["verdict"] == want, (c.id, rows[c.id])
    assert rows["fed_minimax.computation_improved"]["margin"].startswith("contradicted by the paper's own Table 1")
    assert "Sharma et al. (2022) O(1/(nε^4)) = ours" in rows["fed_minimax.computation_improved"]["margin"]


def test_table1_rules_fail_on_numbers_that_break_them():
    t = pl.read_csv(fed_minimax.TABLE1)
    worse = t.with_columns(pl.when(pl.col("work").str.starts_with("Ours") & (pl.col("class") == "NC-C"))
                           .then(7).otherwise(pl.col("rounds_eps_power")).alias("rounds_eps_power"))
    assert fed_minimax.table1_rounds_rule(t).status == "holds"
    assert fed_minimax.table1_rounds_rule(worse).status == "fails"
    no_speedup = t.with_columns(pl.when(pl.col("work").str.starts_with("Ours") & (pl.col("class") == "NC-C"))
                                .then(0).otherwise(pl.col("complexity_n_power")).alias("complexity_n_power"))
    v = fed_minimax.table1_speedup_rule(no_speedup)
    assert v.status == "fails" and v.margin == "not 1/n in NC-C"
    strict = t.filter(pl.col("work").str.starts_with("Ours") | pl.col("work").str.starts_with("Lin"))
    assert fed_minimax.table1_computation_rule(strict.filter(pl.col("class") != "NC-1PC")).status == "holds"


def test_ordering_verdict_holds_fails_and_stays_undecided_within_the_seeds_sd():
    v = fed_minimax.ordering_verdict([(0.05, 0.01, "a"), (0.03, 0.02, "b")], "x ahead")
    assert v.status == "holds" and v.margin == "x ahead in all 2 comparisons beyond the seeds' sd, by ≥ 3.00 pp"
    v = fed_minimax.ordering_verdict([(0.05, 0.01, "a"), (-0.04, 0.02, "b")], "x ahead")
    assert v.status == "fails" and v.margin.startswith("x ahead reversed by 4.00 pp (beyond the seeds' sd) at b")
    v = fed_minimax.ordering_verdict([(0.05, 0.01, "a"), (0.01, 0.02, "b")], "x ahead")
    assert v.status == "not decidable" and v.note.startswith("1 of 2 comparisons differ by less than the seeds' sd")


FIG3 = [{"method": "fed_norm_sgda_plus", "final_mean": 0.64, "final_sd": 0.01},
        {"method": "local_sgda_plus", "final_mean": 0.60, "final_sd": 0.01},
        {"method": "local_sgda_plus", "momentum": 0.9, "final_mean": 0.58, "final_sd": 0.01}]


def test_fed_norm_ahead_needs_both_baselines_the_paper_compares_with():
    v = _decide("fed_norm_ahead_robust", FIG3)
    assert v.status == "holds" and "by ≥ 4.00 pp" in v.margin and len(v.cells) == 3
    behind_momentum = [*FIG3[:2], {**FIG3[2], "final_mean": 0.70}]
    v = _decide("fed_norm_ahead_robust", behind_momentum)
    assert v.status == "fails" and "vs Local SGDA+ with momentum" in v.margin
    v = _decide("fed_norm_ahead_robust", FIG3[:2])  # the momentum baseline did not run
    assert v.status == "not decidable" and "Local SGDA+ with momentum" in v.note
    assert _decide("fed_norm_ahead_fair", FIG3).status == "not decidable"  # robust cells only
    fair = [{**r, "problem": "fair", "method": r["method"].replace("_plus", "")} for r in FIG3]
    assert _decide("fed_norm_ahead_fair", fair).status == "holds"


def _sweep(axis, values, accs, sd=0.01, **kw):
    return [{"method": "fed_norm_sgda_plus", axis: x, "final_mean": a, "final_sd": sd, **kw}
            for x, a in zip(values, accs)]


def test_participation_and_alpha_trends():
    ps = (1 / 3, 2 / 3, 1.0)
    assert _decide("participation_robust", _sweep("participation", ps, [0.5, 0.6, 0.7])).status == "holds"
    v = _decide("participation_robust", _sweep("participation", ps, [0.5, 0.7, 0.6]))
    assert v.status == "fails" and "participation 0.667 → 1" in v.margin
    assert _decide("participation_robust", _sweep("participation", ps, [0.5, 0.51, 0.7], sd=0.02)).status == \
        "not decidable"
    assert _decide("participation_robust", FIG3).status == "not decidable"  # no P sweep
    fair = [{**r, "problem": "fair", "method": "fed_norm_sgda"} for r in _sweep("participation", ps, [0.2, 0.3, 0.4])]
    assert _decide("participation_fair", fair).status == "holds"
    two = _sweep("alpha", (0.1, 1.0), [0.5, 0.6])
    assert _decide("heterogeneity_robust", two).status == "holds"
    assert _decide("alpha_sweep", two).status == "not decidable"  # Fig. 8 is a sweep of ≥ 3 α
    v = _decide("alpha_sweep", _sweep("alpha", (0.05, 0.1, 1.0), [0.5, 0.45, 0.6]))
    assert v.status == "fails" and "alpha 0.05 → 0.1" in v.margin


def _clients(rounds, sd, reached=3):
    return [{"method": "fed_norm_sgda_plus", "num_clients": n, "rounds_mean": r, "rounds_sd": sd,
             "n_reached": reached} for n, r in zip((5, 10, 20), rounds)]


def test_rounds_vs_clients_is_decided_against_1_over_n_with_the_seeds_spread():
    e, se = fed_minimax.speedup_exponent([(5, 120.0, 2.0), (10, 60.0, 2.0), (20, 30.0, 2.0)])
    assert e == pytest.approx(1.0) and 0 < se < 0.1
    v = _decide("rounds_vs_clients", _clients([120, 60, 30], 2.0))
    assert v.status == "holds" and v.ours.startswith("mm fed_norm_sgda_plus: rounds ∝ n^−1.00 ±")
    v = _decide("rounds_vs_clients", _clients([120, 85, 60], 2.0))  # ∝ 1/√n: the old [0.5, 1.5] rule passed it
    assert v.status == "fails" and "beyond 1 ± 2 se" in v.margin
    v = _decide("rounds_vs_clients", _clients([120, 85, 60], 60.0))  # seeds too spread to tell
    assert v.status == "not decidable" and "1/n and 1/√n not told apart" in v.note
    assert _decide("rounds_vs_clients", _clients([120, 60, 30], None, reached=1)).status == "not decidable"
    assert "num_clients" in _decide("rounds_vs_clients", FIG3).note


def test_o_lr_rule_on_hand_made_distances():
    assert fed_minimax.is_o_lr([0.04, 0.02, 0.01]) and not fed_minimax.is_o_lr([1.0, 0.9, 0.85])
    assert fed_minimax.halving_ratios([0.04, 0.02]) == [0.5]


def test_the_toy_claims_hold_on_the_closed_forms_and_the_real_modules():
    from fedbench.analysis import scorecard as sc

    ev = sc.Evidence()
    for cid in ("local_sgda_mismatch", "momentum_mismatch", "fed_norm_fixes_mismatch", "modules_on_closed_forms",
                "skewed_to_more_steps", "subsumes_local_sgda"):
        v = _claim(cid).decide(ev)
        assert v.status == "holds", (cid, v)


def test_paper_scale_is_cifar10_at_300_rounds():
    assert papers.cell_scale("fed_minimax", {"source": "cifar10"}, 300) == "paper scale"
    assert papers.cell_scale("fed_minimax", {"source": "cifar10"}, 100) == "reduced real data"
    assert papers.cell_scale("fed_minimax", {"source": "digits"}, 300) == "toy data"
