"""fedbench.papers.fed_minimax (Sharma, Panda & Joshi, TMLR 2023): the figures it declares from the
quick experiment file's cells, the curves' data (the problem's metric, mean over non-diverged
seeds, one line per algorithm × local-work setting) and both figures written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fedbench import papers
from fedbench.config import expand_cells
from fedbench.papers import fed_minimax

QUICK = Path(__file__).resolve().parents[2] / "config" / "experiments" / "fed_minimax_quick.yaml"


@pytest.fixture(scope="module")
def cells():
    return expand_cells(yaml.safe_load(QUICK.read_text()))


def test_declares_the_curves_and_the_toy_and_no_table(cells):
    assert all(c["paper"] == "fed_minimax" for c in cells)
    assert papers.tables(cells) == {}
    figs = papers.figures(cells)
    assert sorted(figs) == ["fed_minimax_curves", "fed_minimax_toy"]
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
