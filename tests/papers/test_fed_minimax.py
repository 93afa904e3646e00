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
    assert sorted(tabs) == ["fed_minimax_summary"] and len(tabs["fed_minimax_summary"].cells) == 12
    assert tabs["fed_minimax_summary"].reference == fed_minimax.REFERENCE and fed_minimax.target_accuracy() == 0.7
    figs = papers.figures(cells)
    assert sorted(figs) == ["fed_minimax_curves", "fed_minimax_toy"]  # no n sweep: no Fig. 9
    rows = figs["fed_minimax_curves"].cells
    assert len(rows) == 12  # one per (experiment, ..., algorithm): not per seed
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
    assert data.height == 12 * 3
    fair = data.filter(data["problem"] == "fair")
    robust = data.filter(data["problem"] == "robust")
    assert set(fair["metric"]) == {"test_worst_class_accuracy"} and set(robust["metric"]) == {"test_accuracy"}
    one = fair.filter((fair["label"] == "fed_norm_sgda") & (fair["round"] == 2))
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
