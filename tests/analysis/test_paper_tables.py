"""The papers' tables (fedbench.analysis.paper_tables): hand-made metrics frames -> our value, the
paper's value and the ratio; a missing paper value is "—"; the reference CSVs hold the papers'
numbers; the dense non-zeros of Table 2 follow from the sampler alone (d × Σ_t |P_t|)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from fedbench.analysis.paper_tables import (
    PAPERS,
    TABLES,
    load_reference,
    markdown_paper_table,
    paper_key,
    paper_table,
    tables_for,
    write_paper_table,
)
from fedbench.engine.sampling import sample_clients

REF = Path(__file__).resolve().parents[2] / "config" / "reference"


def cells(experiment, dataset, partition, participation, algorithms):
    return [{"experiment": experiment, "dataset": dataset, "partition": partition, "algorithm": a,
             "participation": participation} for a in algorithms]


def test_paper_key_and_tables():
    assert paper_key("FedElasticNet (Kim et al.)") == "fedelasticnet"
    assert paper_key("Elastic Aggregation (Chen et al.)") == "elastic_aggregation"
    assert paper_key("FedProx (Li et al. 2020)") is None and paper_key(None) is None
    assert tables_for(["FedElasticNet (Kim et al.)", None]) == [
        "fedelasticnet_table2", "fedelasticnet_table3", "fedelasticnet_table4"]
    assert tables_for(["Elastic Aggregation (Chen et al.)"]) == ["elastic_aggregation_table1"]


def test_reference_csvs_hold_the_papers_numbers():
    t2 = load_reference(REF / "fedelasticnet_table2.csv")
    assert t2.height == 14 * 6
    one = t2.filter((pl.col("dataset") == "mnist") & (pl.col("partition") == "iid") & (pl.col("algorithm") == "fedprox"))
    assert one.get_column("value").to_list() == [20.3]
    assert set(t2.get_column("unit")) == {"1e7"} and set(t2.get_column("participation")) == {"0.1"}
    t3 = load_reference(REF / "fedelasticnet_table3.csv")
    dyn = t3.filter((pl.col("dataset") == "cifar10") & (pl.col("partition") == "iid") & (pl.col("algorithm") == "feddyn"))
    assert dict(zip(dyn["metric"], dyn["value"])) == {"uplink_entropy_bits": 639.59, "uplink_entropy_bits_delta": 221.64}
    t4 = load_reference(REF / "fedelasticnet_table4.csv")
    assert set(t4.get_column("participation")) == {"1.0"}
    sc = t4.filter((pl.col("dataset") == "mnist") & (pl.col("partition") == "dir0.6") & (pl.col("algorithm") == "scaffold"))
    assert sc.get_column("value").to_list() == [530.72]
    t1 = load_reference(REF / "elastic_aggregation_table1.csv")
    acc = t1.filter(pl.col("metric") == "test_accuracy")
    assert dict(zip(acc["algorithm"], acc["value"])) == {"fedavg": 61.22, "elastic_fedavg_average": 61.11,
                                                          "elastic_fedavg": 61.45}


def test_table2_ours_beside_the_paper_with_ratio(mr):
    # MNIST IID at 10 %: FedProx sends 2.03e8 non-zeros in total (the paper: 20.3e7), Alg. 1 half of it.
    rows = (mr.run_rows([0.5, 0.6], experiment="x", dataset="mnist", partition="iid", algorithm="fedprox",
                        uplink_per_round=101_500_000)
            + mr.run_rows([0.5, 0.6], experiment="x", dataset="mnist", partition="iid",
                          algorithm="fedelasticnet_prox", uplink_per_round=37_550_000))
    df = mr.frame(rows)
    ref = load_reference(REF / "fedelasticnet_table2.csv")
    long = paper_table(df, ref, cells("x", "mnist", "iid", 0.1, ["fedprox", "fedelasticnet_prox"]),
                       "fedelasticnet_table2")
    r = long.filter((pl.col("experiment") == "x") & (pl.col("algorithm") == "fedprox")).row(0, named=True)
    assert r["ours"] == pytest.approx(20.3) and r["paper"] == 20.3 and r["ratio"] == pytest.approx(1.0)
    assert r["rounds"] == 2 and r["n_seeds"] == 1 and r["paper_algorithm"] == "FedProx"
    r1 = long.filter((pl.col("experiment") == "x") & (pl.col("algorithm") == "fedelasticnet_prox")).row(0, named=True)
    assert r1["ours"] == pytest.approx(7.51) and r1["paper"] == 7.51 and r1["ratio"] == pytest.approx(1.0)
    # the paper's rows we did not run stay, with ours missing
    paper_only = long.filter(pl.col("experiment").is_null())
    assert paper_only.height == 14 * 6 - 2
    assert paper_only.get_column("ours").null_count() == paper_only.height
    md = markdown_paper_table(long, "fedelasticnet_table2")
    line = next(x for x in md.splitlines() if "| iid" in x and "| x " in x)
    assert "20.3 / 20.3 (×1.000)" in line and "7.51 / 7.51 (×1.000)" in line
    assert "— / 163.82" in md  # CIFAR-10 not run here


def test_missing_paper_value_is_a_dash(mr):
    rows = mr.run_rows([0.5, 0.7], experiment="q", dataset="digits", partition="iid", algorithm="scaffold",
                       uplink_per_round=1000)
    long = paper_table(mr.frame(rows), load_reference(REF / "fedelasticnet_table2.csv"),
                       cells("q", "digits", "iid", 0.1, ["scaffold"]), "fedelasticnet_table2")
    r = long.filter(pl.col("experiment") == "q").row(0, named=True)
    assert r["ours"] == pytest.approx(2000 / 1e7) and r["paper"] is None and r["ratio"] is None
    md = markdown_paper_table(long, "fedelasticnet_table2")
    line = next(x for x in md.splitlines() if "| digits" in x)
    assert "0.0002 / —" in line
    assert "(×" not in line


def test_participation_selects_the_table(mr):
    rows = mr.run_rows([0.5], experiment="full", dataset="mnist", partition="iid", algorithm="fedprox")
    df = mr.frame(rows)
    c = cells("full", "mnist", "iid", 1.0, ["fedprox"])
    t3 = paper_table(df, load_reference(REF / "fedelasticnet_table3.csv"), c, "fedelasticnet_table3")
    t4 = paper_table(df, load_reference(REF / "fedelasticnet_table4.csv"), c, "fedelasticnet_table4")
    assert t3.filter(pl.col("experiment") == "full").height == 0
    r = t4.filter((pl.col("experiment") == "full") & (pl.col("metric") == "uplink_entropy_bits")).row(0, named=True)
    assert r["ours"] == 1.0 and r["paper"] == 325.86 and r["ratio"] == pytest.approx(1.0 / 325.86)


def test_feddyn_entropy_shows_theta_and_delta_not_measured(mr):
    rows = mr.run_rows([0.5, 0.6, 0.7], experiment="x", dataset="mnist", partition="dir0.3", algorithm="feddyn")
    long = paper_table(mr.frame(rows), load_reference(REF / "fedelasticnet_table3.csv"),
                       cells("x", "mnist", "dir0.3", 0.1, ["feddyn"]), "fedelasticnet_table3")
    mine = long.filter(pl.col("experiment") == "x")
    theta = mine.filter(pl.col("metric") == "uplink_entropy_bits").row(0, named=True)
    assert theta["ours"] == 3.0 and theta["paper"] == 300.76
    md = markdown_paper_table(long, "fedelasticnet_table3")
    line = next(x for x in md.splitlines() if "| dir0.3" in x and "| x " in x)
    assert "3 (n/m) / 300.76 (26.71)" in line  # a run written before the Δ column existed
    assert "n/m" in md.split("\n\n")[-1]  # explained under the table


def test_feddyn_entropy_shows_theta_and_measured_delta_with_the_ratio(mr):
    rows = mr.run_rows([0.5, 0.6, 0.7], experiment="x", dataset="mnist", partition="dir0.3", algorithm="feddyn")
    for r in rows:
        r["uplink_entropy_bits_delta"] = r["uplink_entropy_bits"] / 4  # Δ: a quarter of θ's entropy
    long = paper_table(mr.frame(rows), load_reference(REF / "fedelasticnet_table3.csv"),
                       cells("x", "mnist", "dir0.3", 0.1, ["feddyn"]), "fedelasticnet_table3")
    d = long.filter((pl.col("experiment") == "x") & (pl.col("metric") == "uplink_entropy_bits_delta")).row(0, named=True)
    assert d["ours"] == 0.75 and d["paper"] == 26.71 and d["ratio"] == pytest.approx(0.75 / 26.71)
    md = markdown_paper_table(long, "fedelasticnet_table3")
    line = next(x for x in md.splitlines() if "| dir0.3" in x and "| x " in x)
    assert "3 (0.75) / 300.76 (26.71) (×0.010; Δ ×0.028)" in line and "n/m" not in line


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


def test_dense_nonzeros_equal_d_times_sampled_clients_table2():
    """Table 2's dense columns depend only on the model size and the sampler: MNIST 2NN
    (d = 199,210), 100 clients, Bernoulli(0.1) sampling with the FedDyn code's seeding, seed 0,
    T = 100 rounds -> Σ_t |P_t| = 1019 and d × 1019 = 20.299e7, the paper's 20.3 to its
    printed precision; SCAFFOLD sends twice as much (40.58 in the paper)."""
    d = 199_210
    sampled = sum(len(sample_clients("bernoulli", 100, 0.1, 0, t)) for t in range(1, 101))
    assert sampled == 1019
    assert d * sampled / 1e7 == pytest.approx(20.299, abs=5e-4)
    assert round(d * sampled / 1e7, 1) == 20.3
    assert round(2 * d * sampled / 1e7, 2) == pytest.approx(40.60, abs=0.03)  # paper: 40.58
    # the other datasets of Table 2 (summary §4.4): EMNIST-L, CIFAR-10, CIFAR-100 at 200/200/500 rounds
    for dd, T, paper in ((89_610, 200, 18.4), (797_962, 200, 163.82), (815_332, 500, 413.37)):
        n = sum(len(sample_clients("bernoulli", 100, 0.1, 0, t)) for t in range(1, T + 1))
        decimals = len(str(paper).split(".")[1])
        assert round(dd * n / 1e7, decimals) == paper


def test_every_table_has_a_reference_file():
    for name, spec in TABLES.items():
        assert (REF / spec["reference"]).is_file(), name
    assert set(PAPERS) == {"fedelasticnet", "elastic_aggregation"}


def test_lambda1_sweep_points_and_plot(tmp_path, mr):
    from fedbench.analysis.sweep_plots import plot_lambda1_sweep, sweep_cells, sweep_frame

    cells, rows = [], []
    for i, l1 in enumerate((1e-2, 1e-4, 1e-6)):
        label = f"alg3_{l1:g}"
        cells.append({"experiment": "s", "dataset": "cifar10", "partition": "dir0.3", "algorithm": label,
                      "algorithm_name": "fedelasticnet_feddyn", "hparams": {"lambda1": l1}})
        rows += mr.run_rows([0.2, 0.3 + 0.1 * i], experiment="s", dataset="cifar10", partition="dir0.3",
                            algorithm=label, uplink_per_round=10_000_000 * (i + 1))
    # a single λ1 is no sweep
    cells.append({"experiment": "s", "dataset": "cifar10", "partition": "dir0.3", "algorithm": "fedelasticnet_prox",
                  "algorithm_name": "fedelasticnet_prox", "hparams": {"lambda1": 1e-6}})
    assert len(sweep_cells(cells)) == 3
    data = sweep_frame(mr.frame(rows), cells)
    assert data.get_column("lambda1").to_list() == [1e-6, 1e-4, 1e-2]
    assert data.get_column("final_accuracy").to_list() == pytest.approx([0.5, 0.4, 0.3])
    assert data.get_column("nonzeros_1e7").to_list() == pytest.approx([6.0, 4.0, 2.0])
    out = plot_lambda1_sweep(mr.frame(rows), cells, tmp_path / "sweep.png")
    assert out.stat().st_size > 1000
