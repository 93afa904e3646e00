"""Elastic Aggregation (fedbench.papers.elastic_aggregation): Table 1 beside the paper's numbers
(test and train accuracy rows), Figure 1 (boosted %) computed from the right rows and written
headless, and the paper's claims (the scorecard's rules) on hand-built evidence and on the paper's
own numbers."""

from __future__ import annotations

import polars as pl
import pytest

from fedbench.analysis import scorecard as sc
from fedbench.papers import elastic_aggregation as ea
from fedbench.papers.base import REFERENCE_DIR as REF
from fedbench.papers.elastic_aggregation import (
    boosted_frame,
    load_reference,
    markdown_paper_table,
    paper_table,
    plot_boosted,
    write_paper_table,
)

from ..analysis.test_plots import png_size


def cells(experiment, dataset, partition, participation, algorithms):
    return [{"experiment": experiment, "dataset": dataset, "partition": partition, "algorithm": a,
             "participation": participation} for a in algorithms]


def test_elastic_table1_matches_any_partition_of_cifar10(tmp_path, mr):
    rows = []
    for alg, acc in (("fedavg", 0.6122), ("elastic_fedavg_average", 0.5), ("elastic_fedavg", 0.6145)):
        rows += mr.run_rows([0.1, acc], experiment="ea", dataset="cifar10", partition="dir0.3", algorithm=alg)
    c = cells("ea", "cifar10", "dir0.3", 0.1, ["fedavg", "elastic_fedavg_average", "elastic_fedavg"])
    long = write_paper_table(mr.frame(rows), REF / "elastic_aggregation_table1.csv", c,
                             "elastic_aggregation_table1", tmp_path / "t1.md", tmp_path / "t1.csv")
    acc = long.filter((pl.col("metric") == "test_accuracy") & (pl.col("experiment") == "ea"))
    got = {r["algorithm"]: (r["ours"], r["paper"], r["ratio"]) for r in acc.iter_rows(named=True)}
    assert got["fedavg"][0] == pytest.approx(61.22) and got["fedavg"][1] == 61.22
    assert got["fedavg"][2] == pytest.approx(1.0)
    assert got["elastic_fedavg_average"][2] == pytest.approx(50 / 61.11)
    assert long.filter(pl.col("experiment").is_null() & (pl.col("metric") == "test_accuracy")).height == 0
    md = (tmp_path / "t1.md").read_text()
    assert "61.22 / 61.22 (×1.000)" in md and "train acc" in md
    # train accuracy: its own row of the layout, ours beside the paper's (run_rows: no value -> n/m-free "—")
    train_line = next(x for x in md.splitlines() if "| ea " in x and "train acc" in x)
    assert "— / 55.39" in train_line
    assert pl.read_csv(tmp_path / "t1.csv").columns[:3] == ["table", "experiment", "dataset"]


def test_elastic_table1_shows_our_train_accuracy(tmp_path, mr):
    rows = []
    for alg, acc in (("fedavg", 0.5539), ("elastic_fedavg_average", 0.5), ("elastic_fedavg", 0.6)):
        rr = mr.run_rows([0.1, 0.6], experiment="ea", dataset="cifar10", partition="iid", algorithm=alg)
        for r in rr:
            r["train_accuracy"] = acc
        rows += rr
    c = cells("ea", "cifar10", "iid", 0.1, ["fedavg", "elastic_fedavg_average", "elastic_fedavg"])
    long = paper_table(mr.frame(rows), load_reference(REF / "elastic_aggregation_table1.csv"), c,
                       "elastic_aggregation_table1")
    tr = long.filter((pl.col("metric") == "train_accuracy") & (pl.col("experiment") == "ea"))
    got = {r["algorithm"]: (r["ours"], r["paper"], r["ratio"]) for r in tr.iter_rows(named=True)}
    assert got["fedavg"][0] == pytest.approx(55.39) and got["fedavg"][2] == pytest.approx(1.0)
    assert got["elastic_fedavg"] == (pytest.approx(60.0), 58.74, pytest.approx(60 / 58.74))
    md = markdown_paper_table(long, "elastic_aggregation_table1")
    line = next(x for x in md.splitlines() if "| ea " in x and "train acc" in x)
    assert "55.39 / 55.39 (×1.000)" in line and "60 / 58.74" in line


def _ea_rows(mr, algorithm, seed, values, **kw):
    rows = mr.run_rows([0.5] * len(values), algorithm=algorithm, seed=seed, **kw)
    for r, v in zip(rows, values):
        r["boosted_pct"] = v
    return rows


def test_boosted_frame_means_over_seeds_and_skips_other_algorithms(mr):
    rows = (_ea_rows(mr, "ea_m", 0, [10.0, 20.0, 30.0]) + _ea_rows(mr, "ea_m", 1, [20.0, 30.0, 40.0])
            + _ea_rows(mr, "ea_a", 0, [50.0, 60.0, 70.0]) + mr.run_rows([0.5, 0.6, 0.7], algorithm="fedavg"))
    rows += _ea_rows(mr, "ea_m", 2, [99.0, 99.0], diverge_at=2)  # a diverged seed is left out
    cells = [{"experiment": "e", "dataset": "d", "partition": "p", "algorithm": "ea_m",
              "algorithm_name": "elastic_fedavg", "hparams": {"sensitivity": "momentum"}},
             {"experiment": "e", "dataset": "d", "partition": "p", "algorithm": "ea_a",
              "algorithm_name": "elastic_fedavg", "hparams": {"sensitivity": "average"}},
             {"experiment": "e", "dataset": "d", "partition": "p", "algorithm": "fedavg", "algorithm_name": "fedavg",
              "hparams": {}}]
    f = boosted_frame(mr.frame(rows), cells)
    got = {(r["algorithm"], r["round"]): r["boosted_pct"] for r in f.iter_rows(named=True)}
    assert got == {("ea_m", 1): 15.0, ("ea_m", 2): 25.0, ("ea_m", 3): 35.0,
                   ("ea_a", 1): 50.0, ("ea_a", 2): 60.0, ("ea_a", 3): 70.0}
    assert set(f.get_column("sensitivity")) == {"momentum", "average"}


def test_plot_boosted_writes_a_png(tmp_path, mr):
    rows = []
    cells = []
    for ds in ("d1", "d2"):
        for alg, sens, base in (("ea_m", "momentum", 20.0), ("ea_a", "average", 50.0)):
            rows += _ea_rows(mr, alg, 0, [base + t for t in range(10)], dataset=ds)
            cells.append({"experiment": "e", "dataset": ds, "partition": "p", "algorithm": alg,
                          "algorithm_name": "elastic_fedavg", "hparams": {"sensitivity": sens}})
    out = plot_boosted(mr.frame(rows), cells, tmp_path / "paper" / "elastic_aggregation_boosted.png")
    assert out.exists() and out.stat().st_size > 10_000
    w, h = png_size(out)
    assert w > 600 and h > 300
    empty = plot_boosted(mr.frame(mr.run_rows([0.5])), [], tmp_path / "empty.png")  # says "no run"
    assert empty.exists()


# ----------------------------------------------------------------------------------------------
# Claims


def claim(name):
    (c,) = [c for c in ea.claims() if c.id == f"elastic_aggregation.{name}"]
    return c


def runs(values, *, metric="test_accuracy", dataset="mnist5k", partition="iid", experiment="e", rounds=3,
         extra=None):
    """Metrics rows from {algorithm: [per-seed value]}: the value (a fraction for an accuracy) at every
    round 1..rounds of that seed's run; ``extra``: more columns for every row."""
    return [{"experiment": experiment, "dataset": dataset, "partition": partition, "algorithm": a, "seed": s,
             "round": t, metric: v, "status": "ok", **(extra or {})}
            for a, vals in values.items() for s, v in enumerate(vals) for t in range(1, rounds + 1)]


def evidence(rows, scale=sc.REDUCED_REAL, tables=None):
    return sc.Evidence(metrics=pl.DataFrame(rows), tables=tables or {}, scale=scale)


NAIVE = [0.80, 0.82, 0.81]
TABLE1 = {"fedavg": NAIVE, "elastic_fedavg_average": [0.805, 0.815, 0.81],
          "elastic_fedavg": [0.83, 0.845, 0.84]}


def test_seed_gaps_lead_tolerance_is_two_standard_errors_and_exact_for_one_run():
    assert ea.seed_gaps_lead([0.23]) == (sc.HOLDS, 0.23, 0.0)
    assert ea.seed_gaps_lead([-0.1])[0] == sc.FAILS and ea.seed_gaps_lead([0.0])[0] == sc.UNDECIDED
    status, mean, tol = ea.seed_gaps_lead([1.0, 2.0, 3.0])  # sd 1, n 3
    assert (status, mean) == (sc.HOLDS, 2.0) and tol == pytest.approx(2 / 3 ** 0.5)
    assert ea.seed_gaps_lead([1.0, -1.0, 0.5])[0] == sc.UNDECIDED
    assert ea.seed_gaps_lead([-2.0, -3.0, -2.5])[0] == sc.FAILS


@pytest.mark.parametrize("metric", ["test_accuracy", "train_accuracy"])
def test_table1_holds_as_a_labelled_analogue_on_reduced_real_data(metric):
    v = claim(f"table1_{metric.split('_')[0]}").decide(evidence(runs(TABLE1, metric=metric)))
    assert v.status == sc.HOLDS and "ahead in 2 of 2 comparisons" in v.margin
    assert v.note == "analogue on reduced real data, not the paper's CIFAR-10"
    assert "mnist5k/iid: elastic(momentum) − naive: +2.83 pp (tolerance ±0.33, n = 3)" in v.ours and len(v.cells) == 3


def test_table1_fails_not_decidable_within_the_seed_spread_and_refuses_toy_or_other_data():
    decide = claim("table1_test").decide
    behind = {**TABLE1, "elastic_fedavg": [0.78, 0.80, 0.79]}
    v = decide(evidence(runs(behind)))
    assert v.status == sc.FAILS and v.margin.startswith("behind in 2 of 2 comparisons")
    noisy = {**TABLE1, "elastic_fedavg": [0.83, 0.80, 0.79]}  # +0.33 pp on average, sd 2 pp
    assert decide(evidence(runs(noisy))).status == sc.UNDECIDED
    two = {a: v[:2] for a, v in TABLE1.items()}
    v = decide(evidence(runs(two)))
    assert v.status == sc.UNDECIDED and "fewer than 3 seeds" in v.note
    v = decide(evidence(runs(TABLE1, dataset="digits"), scale=sc.TOY))
    assert v.status == sc.UNDECIDED and "toy data cannot speak to it" in v.note
    v = decide(evidence(runs(TABLE1, dataset="mnist"), scale=sc.PAPER_SCALE))
    assert v.status == sc.UNDECIDED and "no cifar10 cell" in v.note
    v = decide(evidence(runs(TABLE1, dataset="cifar10"), scale=sc.PAPER_SCALE))
    assert v.status == sc.HOLDS and v.note == ""


def test_fig1_average_boosts_more_and_refuses_coinciding_estimators():
    decide = claim("fig1_momentum_boosts_fewer").decide
    boosted = {"elastic_fedavg_average": [60.0, 62.0, 61.0], "elastic_fedavg": [40.0, 45.0, 41.0]}
    v = decide(evidence(runs(boosted, metric="boosted_pct")))
    assert v.status == sc.HOLDS and "elastic(average) − elastic(momentum): +19.00 pp" in v.ours
    v = decide(evidence(runs({"elastic_fedavg_average": [40.0, 45.0, 41.0], "elastic_fedavg": [60.0, 62.0, 61.0]},
                             metric="boosted_pct")))
    assert v.status == sc.FAILS
    same = {"elastic_fedavg_average": [50.0, 51.0, 52.0], "elastic_fedavg": [50.0, 51.0, 52.0 + 3e-4]}
    v = decide(evidence(runs(same, metric="boosted_pct")))
    assert v.status == sc.UNDECIDED and "one minibatch" in v.note and "tell the estimators apart" in v.note


def test_table1_is_not_decidable_where_the_estimators_coincide():
    rows = runs(TABLE1)
    for r in rows:
        r["boosted_pct"] = 40.0 + r["seed"]  # the same for elastic(average) and elastic(momentum)
    v = claim("table1_test").decide(evidence(rows))
    assert v.status == sc.UNDECIDED and "tell the estimators apart" in v.note and "+2.83 pp" in v.ours
    behind = [{**r, "test_accuracy": r["test_accuracy"] - 0.05} if r["algorithm"] == "elastic_fedavg" else r
              for r in rows]
    assert claim("table1_test").decide(evidence(behind)).status == sc.FAILS  # behind naive: fails all the same


@pytest.mark.parametrize("ea_label,base", list(ea.BASE_OF.items()))
def test_fig2_each_elastic_optimizer_ahead_of_its_base(ea_label, base):
    decide = claim(f"fig2_{base}").decide
    v = decide(evidence(runs({base: NAIVE, ea_label: [0.83, 0.845, 0.84]})))
    assert v.status == sc.HOLDS and base in v.cells[0]
    assert decide(evidence(runs({base: NAIVE, ea_label: [0.78, 0.80, 0.79]}))).status == sc.FAILS
    v = decide(evidence(runs({base: NAIVE, "other": NAIVE})))
    assert v.status == sc.UNDECIDED and "at least 3 seeds" in v.note


def test_across_the_board_fails_when_one_optimizer_gains_nothing():
    good = {"fedavg": NAIVE, "elastic_fedavg": [0.83, 0.845, 0.84], "fedprox": NAIVE,
            "elastic_fedprox": [0.83, 0.845, 0.84]}
    assert claim("across_the_board").decide(evidence(runs(good))).status == sc.HOLDS
    v = claim("across_the_board").decide(evidence(runs({**good, "elastic_fedprox": [0.78, 0.80, 0.79]})))
    assert v.status == sc.FAILS and "behind in 1 of 2" in v.margin


def test_faster_counts_the_rounds_to_naives_final_accuracy():
    rows = []
    for s in range(3):
        for t in range(1, 6):
            rows += [{"experiment": "e", "dataset": "mnist5k", "partition": "iid", "algorithm": a, "seed": s,
                      "round": t, "test_accuracy": acc, "status": "ok"}
                     for a, acc in (("fedavg", 0.1 * t), ("elastic_fedavg", min(0.5, 0.1 * t + 0.1 + 0.05 * s)))]
    v = claim("table2_faster_than_fedavg").decide(evidence(rows))
    assert v.status == sc.HOLDS and "rounds saved" in v.ours
    slow = [{**r, "test_accuracy": r["test_accuracy"] * 0.5} if r["algorithm"] == "elastic_fedavg" else r for r in rows]
    v = claim("table2_faster_than_fedavg").decide(evidence(slow))
    assert v.status == sc.FAILS  # never reaches naive's final: T + 1 rounds


def test_heterogeneity_compares_elastics_lead_at_iid_and_the_most_skewed_split():
    iid = runs({"fedavg": NAIVE, "elastic_fedavg": NAIVE})
    skew = runs({"fedavg": [0.60, 0.62, 0.61], "elastic_fedavg": [0.66, 0.69, 0.67]}, partition="dir0.3")
    mild = runs({"fedavg": NAIVE, "elastic_fedavg": [0.70, 0.70, 0.70]}, partition="dir0.6")
    v = claim("agnostic_to_heterogeneity").decide(evidence(iid + skew + mild))
    assert v.status == sc.HOLDS and "at dir0.3 − at iid" in v.ours
    worse = runs({"fedavg": [0.60, 0.62, 0.61], "elastic_fedavg": [0.55, 0.56, 0.56]}, partition="dir0.3")
    assert claim("agnostic_to_heterogeneity").decide(evidence(iid + worse)).status == sc.FAILS
    assert claim("agnostic_to_heterogeneity").decide(evidence(iid)).status == sc.UNDECIDED


def test_partial_participation_reads_the_participation_of_table1():
    def table(p):
        return {"elastic_aggregation_table1": pl.DataFrame({"experiment": ["e"], "participation": [p]})}

    rows = runs({"fedavg": NAIVE, "elastic_fedavg": [0.83, 0.845, 0.84]})
    assert claim("partial_participation").decide(evidence(rows, tables=table(0.1))).status == sc.HOLDS
    assert claim("partial_participation").decide(evidence(rows, tables=table(1.0))).status == sc.UNDECIDED
    assert claim("partial_participation").decide(evidence(rows)).status == sc.UNDECIDED


def traffic(algorithms, seeds=(0, 1)):
    """Final-round rows with fedbench's float counts for a model of n = 100 floats, 7 client-rounds."""
    up = {"fedavg": 1, "fedavgm": 1, "fedprox": 1, "elastic_fedavg": 2, "elastic_fedavg_average": 2,
          "elastic_fedprox": 2, "scaffold": 2, "fedadam": 1}
    down = {"scaffold": 2}
    return [{"experiment": "e", "dataset": "mnist5k", "partition": "iid", "algorithm": a, "seed": s, "round": 3,
             "uplink_floats": 700 * up[a], "downlink_floats": 700 * down.get(a, 1), "status": "ok"}
            for a in algorithms for s in seeds]


def test_communication_is_exactly_3x_for_elastic_and_2x_for_its_base():
    decide = claim("communication_3x").decide
    v = decide(evidence(traffic(["fedavg", "elastic_fedavg", "elastic_fedavg_average", "fedprox", "elastic_fedprox"])))
    assert v.status == sc.HOLDS and v.margin == "exactly 3× vs 2× in 3 of 3"
    assert "mnist5k/iid/elastic_fedprox: 3× vs 2×" in v.ours
    rows = traffic(["fedavg", "elastic_fedavg"])
    rows[-1]["uplink_floats"] += 1  # one float too many in seed 1
    v = decide(evidence(rows))
    assert v.status == sc.FAILS and "1 of 2 not 3× vs 2×" in v.margin
    assert decide(evidence(traffic(["elastic_fedavg", "fedprox"]))).status == sc.UNDECIDED  # no unit


def test_communication_table_checks_every_method_that_ran():
    decide = claim("communication_table").decide
    v = decide(evidence(traffic(["fedavg", "scaffold", "fedadam", "elastic_fedavg"])))
    assert v.status == sc.HOLDS and "SCAFFOLD 4× (table 4×)" in v.ours
    rows = [{**r, "downlink_floats": 700} if r["algorithm"] == "scaffold" else r
            for r in traffic(["fedavg", "scaffold"])]
    v = decide(evidence(rows))
    assert v.status == sc.FAILS and v.margin == "SCAFFOLD 3× instead of 4×"


def test_overhead_formula_gives_the_stated_half_percent():
    assert ea.overhead_formula(0.1, 10) == pytest.approx(0.005)
    assert claim("computation_overhead").decide is None and claim("computation_overhead").no_run


def test_every_rule_on_the_papers_own_numbers_holds_unless_declared_contradicted():
    cs = ea.claims()
    rows = sc.paper_number_rows(cs)
    for c, row in zip(cs, rows):
        expected = sc.FAILS if c.contradicted else sc.HOLDS if c.on_paper else sc.UNDECIDED
        assert row["verdict"] == expected, (c.id, row["margin"], row["note"])
    got = {r["claim"].split(".")[1]: r for r in rows}
    assert got["table1_test"]["ours"] == ("CIFAR-10: elastic(momentum) − naive: +0.23 pp; CIFAR-10: "
                                          "elastic(momentum) − elastic(average): +0.34 pp")
    assert got["communication_3x"]["margin"] == "exactly 3× vs 2× in 3 of 3"


def test_every_claim_cites_the_paper_and_every_rule_its_basis():
    cs = ea.claims()
    assert len(cs) >= 15 and len({c.id for c in cs}) == len(cs)
    for c in cs:
        assert c.paper == ea.KEY and c.where and c.says and c.paper_value and c.measure and c.rule
        assert (c.decide is not None and c.basis) or (c.decide is None and c.no_run)
    assert claim("fig1_momentum_boosts_fewer").figure == ea.BOOSTED_FIGURE
    assert set(ea.PAPER_SCALE) == {"mnist", "cifar10", "cinic10", "fed_emnist", "fed_cifar100"}
