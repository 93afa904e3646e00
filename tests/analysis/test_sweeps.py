"""fedbench.analysis.sweeps: scores, selection, edge flag, diverged points, table and plot, on
hand-made swept cells (the ``sweep`` record of fedbench.config.expand_cells) and metrics rows."""

from __future__ import annotations

import itertools
import math

import polars as pl
import pytest
from PIL import Image

from fedbench.analysis import plots, sweeps

SELECT = {"metric": "test_accuracy", "statistic": "final", "last": 10, "direction": "max", "average_seeds": True}


def swept_cells(grid, *, label="fedprox", partition="iid", seeds=(0,), zipped=False, select=None,
                experiment="e", dataset="d"):
    """Cells of one sweep group: the Cartesian product of ``grid`` (or its values paired by
    position with ``zipped``) × seeds, labelled as the config helper does (partition axes suffix
    the partition id, the others the algorithm label)."""
    axes = list(grid)
    combos = zip(*grid.values()) if zipped else itertools.product(*grid.values())
    cells = []
    for combo in combos:
        point = dict(zip(axes, combo))
        suffix = {kind: "".join(f",{a.rsplit('.', 1)[-1]}={sweeps.format_value(v)}" for a, v in point.items()
                                if a.startswith("partition.") == (kind == "partition"))
                  for kind in ("partition", "algorithm")}
        for seed in seeds:
            cells.append({
                "experiment": experiment, "dataset": dataset, "partition": partition + suffix["partition"],
                "algorithm": label + suffix["algorithm"],
                "seed": seed,
                "sweep": {"label": label, "partition": partition, "point": point,
                          "grid": {a: list(v) for a, v in grid.items()}, "select": {**SELECT, **(select or {})}},
            })
    return cells


def rows_for(mr, cells, accs_of):
    """Metrics rows of ``cells``: ``accs_of(cell)`` -> (accuracies per round, diverge_at or None)."""
    rows = []
    for c in cells:
        accs, diverge_at = accs_of(c)
        rows += mr.run_rows(accs, experiment=c["experiment"], dataset=c["dataset"], partition=c["partition"],
                            algorithm=c["algorithm"], seed=c["seed"], diverge_at=diverge_at)
    return mr.frame(rows)


def by_point(table, default=(0.5,)):
    """accs_of for rows_for: curves by the cell's point (a tuple of its values); seed-specific
    entries ``(values..., seed)`` win. A value ``("diverge", accs, t)`` diverges at round t."""
    def accs_of(c):
        key = tuple(c["sweep"]["point"].values())
        entry = table.get((*key, c["seed"]), table.get(key, default))
        if isinstance(entry, tuple) and entry and entry[0] == "diverge":
            return list(entry[1]), entry[2]
        return list(entry), None
    return accs_of


# ----------------------------------------------------------------------------------------------
# Scores


@pytest.mark.parametrize(("statistic", "direction", "last", "expected"), [
    ("final", "max", 10, 0.6),
    ("best", "max", 10, 0.9),
    ("best", "min", 10, 0.2),
    ("mean_last", "max", 2, 0.5),   # (0.4 + 0.6) / 2
    ("mean_last", "max", 10, 0.525),  # fewer rows than `last`: all of them
])
def test_cell_scores_statistics(mr, statistic, direction, last, expected):
    cells = swept_cells({"local.lr": [0.1]}, select={"statistic": statistic, "direction": direction, "last": last})
    metrics = rows_for(mr, cells, lambda c: ([0.2, 0.9, 0.4, 0.6], None))
    s = sweeps.cell_scores(metrics, cells)
    assert s.height == 1 and s["status"][0] == "ok" and s["rounds"][0] == 4
    assert s["score"][0] == pytest.approx(expected)


def test_cell_scores_diverged_has_no_score_and_unswept_cells_are_skipped(mr):
    cells = swept_cells({"local.lr": [0.1]})
    metrics = rows_for(mr, cells, lambda c: ([0.9, 0.95, 0.2], 3))
    plain = {"experiment": "e", "dataset": "d", "partition": "iid", "algorithm": "fedavg", "seed": 0, "sweep": None}
    s = sweeps.cell_scores(metrics, [*cells, plain])
    assert s.height == 1 and s["status"][0] == "diverged" and s["score"][0] is None


def test_cell_scores_errors(mr):
    cells = swept_cells({"local.lr": [0.1, 1.0]})
    metrics = rows_for(mr, cells[:1], lambda c: ([0.5], None))
    with pytest.raises(ValueError, match=r"no metrics rows for swept cell e/d/iid/fedprox,lr=1.0/seed=0"):
        sweeps.cell_scores(metrics, cells)
    bad = swept_cells({"local.lr": [0.1]}, select={"metric": "accuracy"})
    with pytest.raises(ValueError, match=r"sweep.select.metric 'accuracy' is not a metrics column"):
        sweeps.cell_scores(metrics, bad)
    bad = swept_cells({"local.lr": [0.1]}, select={"statistic": "median"})
    with pytest.raises(ValueError, match=r"sweep.select.statistic must be one of final, best, mean_last"):
        sweeps.cell_scores(metrics, bad)


# ----------------------------------------------------------------------------------------------
# Selection


def test_select_max_with_averaged_seeds(mr):
    cells = swept_cells({"local.lr": [0.01, 0.1, 1.0]}, seeds=(0, 1))
    table = {(0.01,): [0.5], (0.1, 0): [0.8], (0.1, 1): [0.6], (1.0, 0): [0.9], (1.0, 1): [0.4]}
    sel = sweeps.select(rows_for(mr, cells, by_point(table)), cells)
    r = sel.row(0, named=True)
    # means: 0.01 -> 0.5, 0.1 -> 0.7, 1.0 -> 0.65: 0.1 wins although seed 0 alone prefers 1.0
    assert (r["experiment"], r["dataset"], r["partition"], r["algorithm"]) == ("e", "d", "iid", "fedprox")
    assert r["local.lr"] == "0.1" and r["status"] == "ok" and r["edge"] == ""
    assert r["mean"] == pytest.approx(0.7) and r["sd"] == pytest.approx(math.sqrt(0.02)) and r["n_seeds"] == 2
    assert r["ci95"] == pytest.approx(12.7062047 * math.sqrt(0.02) / math.sqrt(2), rel=1e-6)
    assert r["points"] == 3 and r["diverged"] == 0 and r["axes"] == ["local.lr"]
    assert r["cells"] == ["e/d/iid/fedprox,lr=0.1/seed=0", "e/d/iid/fedprox,lr=0.1/seed=1"]


def test_select_min_direction_on_a_loss(mr):
    cells = swept_cells({"local.lr": [0.01, 0.1, 1.0]}, select={"metric": "test_loss", "direction": "min"})
    # run_rows writes test_loss = 1 / round: the longest run has the lowest final loss
    lengths = {(0.01,): [0.5] * 2, (0.1,): [0.5] * 5, (1.0,): [0.5] * 3}
    r = sweeps.select(rows_for(mr, cells, by_point(lengths)), cells).row(0, named=True)
    assert r["local.lr"] == "0.1" and r["mean"] == pytest.approx(0.2) and r["direction"] == "min"


def test_select_per_seed_choices(mr):
    cells = swept_cells({"local.lr": [0.01, 0.1, 1.0]}, seeds=(0, 1, 2), select={"average_seeds": False})
    table = {(0.01,): [0.1], (0.1, 0): [0.8], (0.1, 2): [0.7], (1.0, 1): [0.9], (0.1, 1): [0.3], (1.0,): [0.2]}
    r = sweeps.select(rows_for(mr, cells, by_point(table)), cells).row(0, named=True)
    assert r["local.lr"] == "0.1 (seeds 0, 2); 1.0 (seed 1)"
    assert r["mean"] == pytest.approx(0.8) and r["sd"] == pytest.approx(0.1) and r["n_seeds"] == 3
    assert r["cells"] == ["e/d/iid/fedprox,lr=0.1/seed=0", "e/d/iid/fedprox,lr=1.0/seed=1",
                          "e/d/iid/fedprox,lr=0.1/seed=2"]
    assert r["edge"] == "local.lr: upper edge (1.0)"  # seed 1 chose the largest value
    assert r["average_seeds"] is False


def test_diverged_point_is_never_chosen_even_with_the_best_partial_metric(mr):
    cells = swept_cells({"local.lr": [0.01, 0.1, 1.0]}, seeds=(0, 1), select={"statistic": "best"})
    # lr=1.0 reaches 0.99 before seed 1 diverges; seed 0 of lr=1.0 is fine and great
    table = {(0.01,): [0.5, 0.6], (0.1,): [0.6, 0.7], (1.0, 0): [0.95, 0.99], (1.0, 1): ("diverge", [0.99, 0.0], 2)}
    r = sweeps.select(rows_for(mr, cells, by_point(table)), cells).row(0, named=True)
    assert r["local.lr"] == "0.1" and r["mean"] == pytest.approx(0.7)
    assert r["diverged"] == 1 and r["diverged_cells"] == 1 and r["points"] == 3
    md = sweeps.markdown_selection(sweeps.select(rows_for(mr, cells, by_point(table)), cells))
    assert " 1/3 |" in md and "Diverged points" in md

    # per seed: seed 0 may still choose lr=1.0 (its own run did not diverge), seed 1 may not
    cells = swept_cells({"local.lr": [0.01, 0.1, 1.0]}, seeds=(0, 1),
                        select={"statistic": "best", "average_seeds": False})
    r = sweeps.select(rows_for(mr, cells, by_point(table)), cells).row(0, named=True)
    assert r["local.lr"] == "1.0 (seed 0); 0.1 (seed 1)"
    assert r["cells"] == ["e/d/iid/fedprox,lr=1.0/seed=0", "e/d/iid/fedprox,lr=0.1/seed=1"]


def test_all_diverged_group(mr):
    cells = swept_cells({"local.lr": [1.0, 10.0]}, seeds=(0, 1))
    metrics = rows_for(mr, cells, lambda c: ([0.9, 0.1], 2))
    sel = sweeps.select(metrics, cells)
    r = sel.row(0, named=True)
    assert r["status"] == "all diverged" and r["local.lr"] is None and r["mean"] is None and r["cells"] == []
    assert r["diverged"] == 2 and r["diverged_cells"] == 4 and r["edge"] == ""
    assert sweeps.selected_cells(sel, cells) == []
    md = sweeps.markdown_selection(sel)
    score_cell = next(line for line in md.splitlines() if "| fedprox " in line)
    assert "all 2 points diverged" in score_cell and "nan" not in score_cell.lower() and " 2/2 |" in score_cell


@pytest.mark.parametrize(("winner", "edge"), [
    (0.001, "local.lr: lower edge (0.001)"),
    (3.0, "local.lr: upper edge (3.0)"),
    (0.1, ""),
])
def test_edge_flag_one_axis(mr, winner, edge):
    cells = swept_cells({"local.lr": [0.1, 0.001, 3.0]})  # config order is not numeric order
    r = sweeps.select(rows_for(mr, cells, by_point({(winner,): [0.9]})), cells).row(0, named=True)
    assert r["local.lr"] == repr(winner) and r["edge"] == edge
    md = sweeps.markdown_selection(sweeps.select(rows_for(mr, cells, by_point({(winner,): [0.9]})), cells))
    assert (f"{winner!r} ⚠" in md and "widen the grid" in md) == bool(edge)


def test_edge_flag_multi_axis_and_one_value_axis(mr):
    cells = swept_cells({"local.lr": [0.01, 0.1, 1.0], "mu": [0.0, 0.01, 0.1], "local.weight_decay": [0.0001]})
    table = {(1.0, 0.01, 0.0001): [0.9]}
    r = sweeps.select(rows_for(mr, cells, by_point(table)), cells).row(0, named=True)
    assert (r["local.lr"], r["mu"], r["local.weight_decay"]) == ("1.0", "0.01", "0.0001")
    assert r["edge"] == "local.lr: upper edge (1.0)"  # mu interior; a one-value axis is no edge
    table = {(0.01, 0.1, 0.0001): [0.9]}
    r = sweeps.select(rows_for(mr, cells, by_point(table)), cells).row(0, named=True)
    assert r["edge"] == "local.lr: lower edge (0.01); mu: upper edge (0.1)"
    assert r["points"] == 9


def test_ties_go_to_the_first_point_in_grid_order(mr):
    cells = swept_cells({"local.lr": [0.3, 0.1], "mu": [1.0, 0.5]})
    r = sweeps.select(rows_for(mr, cells, lambda c: ([0.7], None)), cells).row(0, named=True)
    assert (r["local.lr"], r["mu"]) == ("0.3", "1.0")


def test_zipped_axes(mr):
    cells = swept_cells({"local.lr": [0.01, 0.1, 1.0], "mu": [1.0, 0.1, 0.01]}, zipped=True)
    assert len(cells) == 3
    r = sweeps.select(rows_for(mr, cells, by_point({(0.1, 0.1): [0.8]})), cells).row(0, named=True)
    assert (r["local.lr"], r["mu"], r["points"], r["edge"]) == ("0.1", "0.1", 3, "")
    r = sweeps.select(rows_for(mr, cells, by_point({(1.0, 0.01): [0.8]})), cells).row(0, named=True)
    assert r["edge"] == "local.lr: upper edge (1.0); mu: lower edge (0.01)"


def test_groups_and_selected_cells(mr):
    a = swept_cells({"local.lr": [0.1, 1.0]}, label="fedavg", seeds=(0, 1))
    b = swept_cells({"local.lr": [0.1, 1.0], "mu": [0.01, 0.1]}, label="fedprox", seeds=(0, 1))
    c = swept_cells({"local.lr": [0.1, 1.0]}, label="fedavg", dataset="d2", seeds=(0, 1))
    cells = a + b + c
    table = {(1.0,): [0.9], (0.1, 0.1): [0.9]}
    sel = sweeps.select(rows_for(mr, cells, by_point(table)), cells)
    assert sel.select("dataset", "algorithm").rows() == [("d", "fedavg"), ("d", "fedprox"), ("d2", "fedavg")]
    assert sel["local.lr"].to_list() == ["1.0", "0.1", "1.0"] and sel["mu"].to_list() == [None, "0.1", None]
    chosen = sweeps.selected_cells(sel, cells)
    assert [sweeps.cell_name(x) for x in chosen] == [
        "e/d/iid/fedavg,lr=1.0/seed=0", "e/d/iid/fedavg,lr=1.0/seed=1",
        "e/d/iid/fedprox,lr=0.1,mu=0.1/seed=0", "e/d/iid/fedprox,lr=0.1,mu=0.1/seed=1",
        "e/d2/iid/fedavg,lr=1.0/seed=0", "e/d2/iid/fedavg,lr=1.0/seed=1",
    ]
    md = sweeps.markdown_selection(sel)
    fedavg_line = next(line for line in md.splitlines() if "| fedavg " in line)
    assert "—" in fedavg_line  # fedavg does not sweep mu


def test_partition_axis_groups_by_the_configured_partition(mr):
    cells = swept_cells({"partition.num_clients": [10, 100]})
    r = sweeps.select(rows_for(mr, cells, by_point({(100,): [0.9]})), cells).row(0, named=True)
    assert r["partition"] == "iid" and r["partition.num_clients"] == "100" and r["points"] == 2
    assert r["cells"] == ["e/d/iid,num_clients=100/fedprox/seed=0"]


def test_sweep_cells_keeps_identity_and_sweep():
    cells = swept_cells({"local.lr": [0.1]}, experiment="x")
    full = [{**c, "rounds": 5, "hparams": {}} for c in cells]
    full.append({**full[0], "experiment": "y"})
    full.append({**full[0], "algorithm": "plain", "sweep": None})
    assert sweeps.sweep_cells(full, "x") == cells
    assert len(sweeps.sweep_cells(full)) == 2


# ----------------------------------------------------------------------------------------------
# Table and plot


def test_write_selection_markdown_and_csv(mr, tmp_path):
    cells = swept_cells({"local.lr": [0.01, 0.1, 1.0]}, seeds=(0, 1))
    table = {(0.1, 0): [0.81234], (0.1, 1): [0.80234], (1.0, 1): ("diverge", [0.5, 0.1], 2)}
    metrics = rows_for(mr, cells, by_point(table, default=[0.4]))
    md_path, csv_path = tmp_path / "s.md", tmp_path / "s.csv"
    sel = sweeps.write_selection(metrics, cells, md_path, csv_path, title="exp", decimals=1)
    md = md_path.read_text(encoding="utf-8")
    assert md.startswith("# exp\n")
    assert "80.7 ± 0.7" in md and "final test accuracy (%), max" in md and "| 0.1 " in md and "1/3" in md
    csv = pl.read_csv(csv_path)
    assert csv["mean"][0] == pytest.approx(0.80734) and csv["local.lr"].cast(pl.String)[0] == "0.1"
    assert csv["cells"][0] == "; ".join(sel["cells"][0]) and "lr=0.1/seed=1" in csv["cells"][0]
    md_ci = sweeps.markdown_selection(sel, decimals=2, interval="ci95")
    assert f"{100 * sel['ci95'][0]:.2f}" in md_ci and "t-interval" in md_ci
    with pytest.raises(ValueError, match="tables.interval"):
        sweeps.markdown_selection(sel, interval="iqr")
    with pytest.raises(ValueError, match="no swept cells"):
        sweeps.write_selection(metrics, [], md_path, csv_path)


def test_sensitivity_plot_writes_a_png_with_log_x_for_rates(mr, tmp_path, monkeypatch):
    a = swept_cells({"local.lr": [0.01, 0.1, 1.0], "mu": [0.0, 0.5]}, seeds=(0, 1))
    b = swept_cells({"local.lr": [0.01, 0.1, 1.0]}, label="fedavg", seeds=(0, 1))
    c = swept_cells({"local.lr": [0.01, 0.1, 1.0]}, label="fedavg", partition="dir", seeds=(0, 1))
    cells = a + b + c
    table = {(1.0, 0.5): ("diverge", [0.3, 0.1], 2), (0.1, 0.0): [0.8], (0.1,): [0.7], (1.0,): ("diverge", [0.2], 1)}
    metrics = rows_for(mr, cells, by_point(table, default=[0.5]))

    drawn = {}
    save = plots._save

    def spy(fig, path, dpi):
        drawn["axes"] = [(ax.get_title(), ax.get_xscale(), ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes
                         if ax.axison]
        drawn["off"] = [" ".join(t.get_text() for t in ax.texts) for ax in fig.axes if not ax.axison]
        drawn["legend"] = [t.get_text() for t in fig.legends[0].get_texts()]
        return save(fig, path, dpi)

    monkeypatch.setattr(plots, "_save", spy)
    out = sweeps.sensitivity_plot(metrics, cells, tmp_path / "p.png", title="exp")
    assert out.exists() and Image.open(out).size[0] > 100
    axes = {t: (s, x, y) for t, s, x, y in drawn["axes"]}
    # rows: (d, iid), (d, dir); columns: local.lr, mu
    assert axes["d / iid: local learning rate"] == ("log", "local learning rate (local.lr)", "final test accuracy (%)")
    assert axes["d / iid: hyperparameter mu"][0] == "linear"  # 0.0 in the grid: no log axis
    assert set(axes) == {"d / iid: local learning rate", "d / iid: hyperparameter mu", "d / dir: local learning rate"}
    assert drawn["off"] == ["hyperparameter mu\nnot swept for d / dir"]
    assert drawn["legend"] == ["fedprox", "fedavg", "chosen", "diverged"]


def test_sensitivity_plot_linear_x_for_a_narrow_range(mr, tmp_path, monkeypatch):
    cells = swept_cells({"local.lr": [0.2, 0.5, 1.0]})
    metrics = rows_for(mr, cells, by_point({(0.5,): [0.9]}))
    scales = {}
    save = plots._save

    def spy(fig, path, dpi):
        scales["x"] = [ax.get_xscale() for ax in fig.axes]
        scales["legend"] = [t.get_text() for t in fig.legends[0].get_texts()]
        return save(fig, path, dpi)

    monkeypatch.setattr(plots, "_save", spy)
    assert sweeps.sensitivity_plot(metrics, cells, tmp_path / "p.png").exists()
    assert scales["x"] == ["linear"] and "diverged" not in scales["legend"]


def test_per_seed_selection_skips_a_seed_that_diverged_everywhere(mr):
    cells = swept_cells({"local.lr": [0.1, 1.0]}, seeds=(0, 1, 2), select={"average_seeds": False})
    table = {(0.1, 0): [0.6], (1.0, 0): [0.7], (0.1, 1): [0.8], (1.0, 1): [0.5],
             (0.1, 2): ("diverge", [0.5], 1), (1.0, 2): ("diverge", [0.5], 1)}
    r = sweeps.select(rows_for(mr, cells, by_point(table)), cells).row(0, named=True)
    assert r["n_seeds"] == 2 and r["mean"] == pytest.approx(0.75) and r["status"] == "ok"
    assert r["diverged"] == 2 and r["diverged_cells"] == 2
    assert r["local.lr"] == "1.0 (seed 0); 0.1 (seed 1)"
    assert r["edge"] == "local.lr: lower edge (0.1); local.lr: upper edge (1.0)"


def test_a_metric_without_value_in_a_finished_run_is_an_error(mr):
    cells = swept_cells({"local.lr": [0.1]}, select={"metric": "train_accuracy"})
    metrics = rows_for(mr, cells, lambda c: ([0.5, 0.6], None))  # run_rows leaves train_accuracy null
    with pytest.raises(ValueError, match=r"metric 'train_accuracy' has no finite value .* rerun the cell"):
        sweeps.select(metrics, cells)


def test_sensitivity_plot_categorical_axis(mr, tmp_path, monkeypatch):
    cells = swept_cells({"local.clip_norm": [None, 1.0, 10.0]}, seeds=(0, 1))
    metrics = rows_for(mr, cells, by_point({(1.0,): [0.9]}))
    ticks = {}
    save = plots._save

    def spy(fig, path, dpi):
        ax = fig.axes[0]
        ticks["labels"] = [t.get_text() for t in ax.get_xticklabels()]
        ticks["scale"] = ax.get_xscale()
        return save(fig, path, dpi)

    monkeypatch.setattr(plots, "_save", spy)
    assert sweeps.sensitivity_plot(metrics, cells, tmp_path / "p.png").exists()
    assert ticks == {"labels": ["null", "1.0", "10.0"], "scale": "linear"}


@pytest.mark.parametrize(("statistic", "last", "expected"), [
    ("final", 10, 0.6),
    ("best", 10, 0.95),       # θ⁰'s row counts for best over time
    ("mean_last", 4, 0.525),  # the last 4 evaluations: rounds 1-4
    ("mean_last", 5, 0.61),   # θ⁰'s row is an evaluation: (0.95 + 0.2 + 0.9 + 0.4 + 0.6) / 5
])
def test_cell_scores_count_the_round_0_row(mr, statistic, last, expected):
    cells = swept_cells({"local.lr": [0.1]}, select={"statistic": statistic, "last": last})
    c = cells[0]
    metrics = mr.frame(mr.run_rows([0.2, 0.9, 0.4, 0.6], experiment=c["experiment"], dataset=c["dataset"],
                                   partition=c["partition"], algorithm=c["algorithm"], seed=c["seed"],
                                   initial=0.95))
    s = sweeps.cell_scores(metrics.sample(fraction=1.0, shuffle=True, seed=1), cells)  # row order does not matter
    assert s["status"][0] == "ok" and s["rounds"][0] == 4
    assert s["score"][0] == pytest.approx(expected)


def test_select_over_some_axes_groups_by_the_others(mr):
    """``select.over: [local.lr]``: the best lr per value of the other axes (FedAc: per M and K),
    each such group with its own row, edge flag and chosen cells."""
    grid = {"local.lr": [0.01, 0.1, 1.0], "partition.num_clients": [4, 16], "local.steps": [1, 8]}
    cells = swept_cells(grid, seeds=(0, 1), select={"over": ["local.lr"]})
    table = {(0.1, 4, 1): [0.9], (1.0, 4, 8): [0.9], (0.01, 16, 1): [0.9], (0.1, 16, 8): [0.9]}
    metrics = rows_for(mr, cells, by_point(table, default=(0.5, 0.6)))
    sel = sweeps.select(metrics, cells)
    assert sel.height == 4
    got = {(r["partition.num_clients"], r["local.steps"]): (r["local.lr"], r["edge"], r["points"], r["fixed"])
           for r in sel.iter_rows(named=True)}
    assert got == {("4", "1"): ("0.1", "", 3, ["partition.num_clients", "local.steps"]),
                   ("4", "8"): ("1.0", "local.lr: upper edge (1.0)", 3, ["partition.num_clients", "local.steps"]),
                   ("16", "1"): ("0.01", "local.lr: lower edge (0.01)", 3, ["partition.num_clients", "local.steps"]),
                   ("16", "8"): ("0.1", "", 3, ["partition.num_clients", "local.steps"])}
    assert all(r["axes"] == ["local.lr"] for r in sel.iter_rows(named=True))
    chosen = {sweeps.cell_name(c) for c in sweeps.selected_cells(sel, cells)}
    assert "e/d/iid,num_clients=16/fedprox,lr=0.01,steps=1/seed=1" in chosen and len(chosen) == 8
    md = sweeps.markdown_selection(sel)
    assert "| 16 " in md and "1.0 ⚠" in md  # the fixed values are shown, the edge of the lr flagged


def test_select_over_plot_draws_one_line_per_group(mr, tmp_path, monkeypatch):
    grid = {"local.lr": [0.01, 0.1, 1.0], "local.steps": [1, 8]}
    cells = swept_cells(grid, select={"over": ["local.lr"]})
    metrics = rows_for(mr, cells, by_point({(0.1, 1): [0.9]}))
    out = sweeps.sensitivity_plot(metrics, cells, tmp_path / "s.png")
    assert Image.open(out).size[0] > 100


def test_format_value_of_a_local_work_distribution_is_the_cell_label():
    from fedbench.config import _label_value

    for v in ({"distribution": "uniform", "low": 2, "high": 5, "per": "round"},
              {"distribution": "uniform", "low": 2, "high": 7, "per": "client"}):
        assert sweeps.format_value(v) == _label_value(v)
    assert sweeps.format_value({"distribution": "uniform", "low": 2, "high": 7, "per": "client"}) == \
        "uniform2-7.client"


def test_format_value_of_an_lr_schedule_is_the_cell_label():
    from fedbench.config import _label_value

    for v in ({"milestones": [100, 200], "factor": 0.1}, {"milestones": [5], "factor": 0.5}):
        assert sweeps.format_value(v) == _label_value(v)
    assert sweeps.format_value({"milestones": [100, 200], "factor": 0.1}) == "step100-200x0.1"


def test_sensitivity_plot_of_a_local_work_axis(mr, tmp_path, monkeypatch):
    """local.epochs swept over distributions (unhashable dict values): categorical ticks by label."""
    work = [{"distribution": "uniform", "low": 2, "high": e, "per": "round"} for e in (5, 7)]
    cells = swept_cells({"local.epochs": work}, seeds=(0, 1))
    metrics = rows_for(mr, cells, lambda c: ([0.5 + c["sweep"]["point"]["local.epochs"]["high"] / 100], None))
    ticks = {}
    save = plots._save

    def spy(fig, path, dpi):
        ticks["labels"] = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        return save(fig, path, dpi)

    monkeypatch.setattr(plots, "_save", spy)
    assert sweeps.sensitivity_plot(metrics, cells, tmp_path / "p.png").exists()
    assert ticks["labels"] == ["uniform2-5", "uniform2-7"]
    table = sweeps.select(metrics, cells)
    assert table.height == 1


# ----------------------------------------------------------------------------------------------
# Conditions, significant digits, the look of the sensitivity plot


def test_a_condition_is_compared_never_selected_nor_flagged(mr):
    """``select.over: []``: every axis is an experimental condition (the minimax quick file's local-work
    distribution E, LocalUpdate's γ of Corollary 1): one row per value, no ⚠, no "selected by"."""
    grid = {"local.lr": [0.001, 0.01, 0.09]}
    cells = swept_cells(grid, seeds=(0,), select={"over": [], "metric": "train_loss", "direction": "min"})
    table = {(0.001,): [3.0, 2.0922], (0.01,): [3.0, 2.1], (0.09,): [3.0, 2.2]}
    metrics = rows_for(mr, cells, by_point(table))
    metrics = metrics.with_columns(train_loss=pl.col("test_accuracy"))
    sel = sweeps.select(metrics, cells)
    assert sel.height == 3 and set(sel["edge"].to_list()) == {""}
    assert sweeps.conditions(cells[0]) == ["local.lr"]
    md = sweeps.markdown_selection(sel)
    assert "⚠" not in md and "selected by" not in md and "widen" not in md
    assert "local.lr (condition)" in md and "2.0922" in md
    assert "one seed" in md and "mean ±" not in md


def test_selection_scores_keep_their_significant_digits(mr):
    grid = {"local.lr": [0.1, 1.0]}
    cells = swept_cells(grid, seeds=(0, 1), select={"metric": "suboptimality", "direction": "min"})
    vals = {(0.1, 0): [4.0e-4], (0.1, 1): [5.5e-4], (1.0, 0): [0.5], (1.0, 1): [0.6]}
    metrics = rows_for(mr, cells, by_point(vals)).with_columns(suboptimality=pl.col("test_accuracy"))
    md = sweeps.markdown_selection(sweeps.select(metrics, cells))
    assert "4.8e-04 ± 1.1e-04" in md  # not "0.0005 ± 0.0001"
    assert "mean ± sd over seeds" in md


def test_the_sensitivity_plot_of_a_suboptimality_is_log_and_tells_conditions_apart(mr, tmp_path, monkeypatch):
    grid = {"local.lr": [0.01, 0.1, 1.0], "partition.num_clients": [4, 16, 64], "local.steps": [1, 4, 16]}
    cells = swept_cells(grid, select={"over": ["local.lr"], "metric": "suboptimality", "direction": "min"})
    cells += swept_cells(grid, label="mb_sgd", select={"over": ["local.lr"], "metric": "suboptimality",
                                                       "direction": "min"})
    metrics = rows_for(mr, cells, lambda c: ([10.0 ** -(1 + c["sweep"]["point"]["local.lr"])], None))
    metrics = metrics.with_columns(suboptimality=pl.col("test_accuracy"))
    drawn = {}
    save = plots._save

    def spy(fig, path, dpi):
        axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
        drawn["scales"] = {ax.get_yscale() for ax in axes}
        drawn["styles"] = [{(ln.get_color(), ln.get_marker(), ln.get_linestyle()) for ln in ax.lines
                            if len(ln.get_xdata()) > 1 and ln.get_marker() != "_"} for ax in axes]  # no caps
        drawn["title"] = fig._suptitle.get_text()
        fig.canvas.draw()
        drawn["title_fits"] = fig.bbox.contains(*fig._suptitle.get_window_extent().p0) and \
            fig.bbox.contains(*fig._suptitle.get_window_extent().p1)
        return save(fig, path, dpi)

    monkeypatch.setattr(plots, "_save", spy)
    sweeps.sensitivity_plot(metrics, cells, tmp_path / "s.png", title="fedac_quick")
    assert drawn["scales"] == {"log"}
    assert len(drawn["styles"]) == 2  # one panel per algorithm label
    assert all(len(s) == 9 for s in drawn["styles"])  # 9 (M, K) curves, each its own look
    assert drawn["title_fits"] and "over 1 seed" not in drawn["title"] and "one seed" in drawn["title"]


def test_one_algorithm_has_one_colour_in_the_sweep_plot_and_the_curves(mr, tmp_path, monkeypatch):
    from fedbench.analysis.style import algorithm_colors

    grid = {"local.lr": [0.01, 0.1]}
    cells = swept_cells(grid, label="mb_sgd") + swept_cells(grid, label="fedac")
    metrics = rows_for(mr, cells, by_point({(0.1,): [0.9]}))
    got = {}
    save = plots._save

    def spy(fig, path, dpi):
        got["colors"] = {ln.get_color() for ax in fig.axes for ln in ax.lines if len(ln.get_xdata()) > 1}
        return save(fig, path, dpi)

    monkeypatch.setattr(plots, "_save", spy)
    sweeps.sensitivity_plot(metrics, cells, tmp_path / "s.png")
    assert algorithm_colors(["mb_sgd"])["mb_sgd"] in got["colors"]
    assert algorithm_colors(["fedac"])["fedac"] in got["colors"]
