"""FedElasticNet (fedbench.papers.fedelasticnet): Tables 2-4 from hand-made metrics frames -> our
value, the paper's value and the ratio (a missing paper value is "—"); the dense non-zeros of
Table 2 follow from the sampler alone (d × Σ_t |P_t|); the λ1 sweep (Figures 3-5) and the Δ
histograms (Figure 2) are computed from the right rows and written headless."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
import torch

from fedbench.analysis.paper_figures import read_histograms
from fedbench.engine.clients.sampling import sample_clients
from fedbench.metrics.communication import flatten
from fedbench.metrics.histogram import DeltaHistogram
from fedbench.papers.base import REFERENCE_DIR as REF
from fedbench.papers.fedelasticnet import (
    histogram_panels,
    load_reference,
    markdown_paper_table,
    paper_table,
    plot_delta_histograms,
    plot_lambda1_sweep,
    sweep_cells,
    sweep_frame,
)

from ..analysis.test_plots import png_size


def cells(experiment, dataset, partition, participation, algorithms):
    return [{"experiment": experiment, "dataset": dataset, "partition": partition, "algorithm": a,
             "participation": participation} for a in algorithms]


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
    d = long.filter((pl.col("experiment") == "x") & (pl.col("metric") == "uplink_entropy_bits_delta")
                    ).row(0, named=True)
    assert d["ours"] == 0.75 and d["paper"] == 26.71 and d["ratio"] == pytest.approx(0.75 / 26.71)
    md = markdown_paper_table(long, "fedelasticnet_table3")
    line = next(x for x in md.splitlines() if "| dir0.3" in x and "| x " in x)
    assert "3 (0.75) / 300.76 (26.71) (×0.010; Δ ×0.028)" in line and "n/m" not in line


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


def test_lambda1_sweep_points_and_plot(tmp_path, mr):
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


def _hist_file(path, algorithm, scale, seed=0, dist="normal", zeros=0):
    """A cell's histogram file of 2 rounds × 3 clients × (500 drawn values + ``zeros`` exact zeros,
    half of them −0.0); returns the number of values."""
    rng = np.random.default_rng(seed)
    h = DeltaHistogram([1])
    n_values = 0
    exact = torch.tensor([0.0, -0.0] * (zeros // 2) + [0.0] * (zeros % 2), dtype=torch.float64)
    for t in (1, 2):
        draw = getattr(rng, dist)
        msgs = [{"delta": {"w": torch.cat([torch.as_tensor(draw(scale=scale, size=500)), exact])}} for _ in range(3)]
        n_values += 3 * (500 + zeros)
        h.add_round(t, msgs, flatten)
    ident = {"experiment": "e", "dataset": "d", "partition": "p", "algorithm": algorithm, "seed": seed}
    pq.write_table(h.to_table(ident), path)
    return n_values


def test_delta_histogram_figure_sums_seeds_and_writes_a_png(tmp_path):
    paths, n = [], {}
    for alg, scale, dist in (("dyn", 0.05, "normal"), ("alg2", 0.02, "laplace"), ("alg3", 0.01, "laplace"),
                             ("prox", 0.05, "normal")):
        for seed in (0, 1):
            p = tmp_path / f"{alg}_{seed}.parquet"
            n[alg] = n.get(alg, 0) + _hist_file(p, alg, scale, seed, dist)
            paths.append(p)
    cells = [{"experiment": "e", "dataset": "d", "partition": "p", "algorithm": a, "algorithm_name": m}
             for a, m in (("dyn", "feddyn"), ("alg2", "fedelasticnet_scaffold"), ("alg3", "fedelasticnet_feddyn"),
                          ("prox", "fedprox"))]
    panels = histogram_panels(read_histograms(paths), cells)
    assert set(panels) == {("d", "p", "feddyn"), ("d", "p", "fedelasticnet_scaffold"),
                           ("d", "p", "fedelasticnet_feddyn")}
    assert panels[("d", "p", "feddyn")][1].sum() == n["dyn"]  # cumulative, both seeds: every value
    out = plot_delta_histograms(paths, cells, tmp_path / "plots" / "e_delta_histogram.png", title="e")
    assert out.exists() and out.stat().st_size > 10_000
    w, h = png_size(out)
    assert w > 900  # three method columns


def test_read_histograms_checks_the_schema(tmp_path):
    import polars as pl

    pl.DataFrame({"round": [0], "bin": [1.5]}).write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="DELTA_HISTOGRAM_SCHEMA"):
        read_histograms([tmp_path / "bad.parquet"])


def test_a_histogram_file_without_zero_counts_is_an_error_naming_it_and_the_fix(tmp_path):
    """A file of the layout without ``zeros`` cannot tell the exact zeros from bin [0, 0.01)'s
    other values: reading it (and so drawing Figure 2) stops, naming the file and the fix."""
    _hist_file(tmp_path / "new.parquet", "dyn", 0.05, zeros=4)
    old = tmp_path / "run" / "delta_histogram.parquet"
    old.parent.mkdir()
    pl.read_parquet(tmp_path / "new.parquet").drop("zeros").write_parquet(old)
    whole = read_histograms([tmp_path / "new.parquet"])
    assert whole.filter(pl.col("round") == 0)["zeros"].sum() == 2 * 3 * 4  # cumulative: 2 rounds × 3 clients
    for call in (lambda: read_histograms([tmp_path / "new.parquet", old]),
                 lambda: plot_delta_histograms([old], [{"experiment": "e", "dataset": "d", "partition": "p",
                                                        "algorithm": "dyn", "algorithm_name": "feddyn"}],
                                               tmp_path / "h.png")):
        with pytest.raises(ValueError) as err:
            call()
        msg = str(err.value)
        assert str(old) in msg and "no column 'zeros'" in msg and "retrain its cell" in msg and "snakemake" in msg
    assert not (tmp_path / "h.png").exists()
    pl.read_parquet(tmp_path / "new.parquet").with_columns(pl.col("zeros").cast(pl.Float64)).write_parquet(old)
    with pytest.raises(ValueError, match="'zeros' of type Float64, not Int64"):
        read_histograms([old])


def _drawn(monkeypatch):
    """The figures plot_delta_histograms saves (its save_figure spied on; it still writes)."""
    from fedbench.papers import fedelasticnet

    got = []
    real = fedelasticnet.save_figure

    def spy(fig, path, dpi):
        got.append(fig)
        return real(fig, path, dpi)

    monkeypatch.setattr(fedelasticnet, "save_figure", spy)
    return got


def test_delta_histogram_figure_draws_the_exact_zeros_as_their_own_bar(tmp_path, monkeypatch):
    """Figure 2 (Kim et al., arXiv 2022): the exact zeros are a black bar at 0 with their share;
    bin [0, 0.01) shows only its non-zero values; a panel without exact zeros has no bar."""
    from matplotlib.patches import Rectangle, StepPatch

    got = _drawn(monkeypatch)
    paths = []
    for alg, dist, zeros in (("dyn", "normal", 0), ("alg3", "laplace", 250)):
        for seed in (0, 1):
            paths.append(tmp_path / f"{alg}_{seed}.parquet")
            _hist_file(paths[-1], alg, 0.05, seed, dist, zeros=zeros)
    cells = [{"experiment": "e", "dataset": "d", "partition": "p", "algorithm": a, "algorithm_name": m}
             for a, m in (("dyn", "feddyn"), ("alg3", "fedelasticnet_feddyn"))]
    panels = histogram_panels(read_histograms(paths), cells)
    bins, counts, zeros = panels[("d", "p", "fedelasticnet_feddyn")]
    assert zeros.sum() == 2 * 2 * 3 * 250 and zeros[bins != 0].sum() == 0  # 2 seeds × 2 rounds × 3 clients
    assert not panels[("d", "p", "feddyn")][2].any()
    out = plot_delta_histograms(paths, cells, tmp_path / "h.png", title="e")
    assert out.stat().st_size > 10_000
    fig = got[-1]
    by_title = {ax.get_title().split(":")[0]: ax for ax in fig.axes}
    dyn, alg3 = by_title["FedDyn"], by_title["Alg. 3 (FedDyn + EN)"]
    share = zeros.sum() / counts.sum()
    notes = [t.get_text() for t in alg3.texts]
    assert f"exact 0: {100 * share:.3g} %" in notes
    assert "exact 0: 0 %" in [t.get_text() for t in dyn.texts]
    (bar,) = [p for p in alg3.patches if isinstance(p, Rectangle)]
    assert bar.get_height() == pytest.approx(share) and bar.get_facecolor()[:3] == (0.0, 0.0, 0.0)
    assert bar.get_x() < 0 < bar.get_x() + bar.get_width() < 0.01  # at x = 0, narrower than a bin
    assert not [p for p in dyn.patches if isinstance(p, Rectangle)]
    # the step of [0, 0.01) is bin 0's non-zero values only
    (steps,) = [p for p in alg3.patches if isinstance(p, StepPatch)]
    values, edges, _ = steps.get_data()
    at0 = values[np.flatnonzero(np.isclose(edges[:-1], 0.0))[0]]
    assert at0 == pytest.approx((counts[bins == 0][0] - zeros.sum()) / counts.sum())
    assert at0 < share
    # every value is drawn once: the steps (gaps of empty bins included, at 0) and the bar sum to 1
    assert values.sum() + share == pytest.approx(1.0)
    assert all(not p.get_hatch() for ax in fig.axes for p in ax.patches)
    suptitle = " ".join(fig._suptitle.get_text().split())
    assert "included" not in suptitle and "black bar at 0: the values exactly 0" in suptitle
    # the entropy stays that of the 0.01 bins, the exact zeros counted in bin 0
    from fedbench.metrics.communication import entropy_from_counts

    assert any(f"H = {entropy_from_counts(counts):.2f} bits/value" in t for t in notes)


def test_delta_histogram_steps_leave_empty_bins_empty():
    from fedbench.papers.fedelasticnet import _steps

    values, edges = _steps(np.array([-3, 0, 1, 5]), np.array([0.1, 0.2, 0.3, 0.4]))
    assert edges.tolist() == [-3, -2, 0, 1, 2, 5, 6] and values.tolist() == [0.1, 0.0, 0.2, 0.3, 0.0, 0.4]
    values, edges = _steps(np.array([7]), np.array([1.0]))
    assert edges.tolist() == [7, 8] and values.tolist() == [1.0]
