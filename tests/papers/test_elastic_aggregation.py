"""Elastic Aggregation (fedbench.papers.elastic_aggregation): Table 1 beside the paper's numbers
(test and train accuracy rows) and Figure 1 (boosted %) computed from the right rows and written
headless."""

from __future__ import annotations

import polars as pl
import pytest

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
