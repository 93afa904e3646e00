"""FedElasticNet (fedbench.papers.fedelasticnet): Tables 2-4 from hand-made metrics frames -> our
value, the paper's value and the ratio (a missing paper value is "—"); the dense non-zeros of
Table 2 follow from the sampler alone (d × Σ_t |P_t|); the λ1 sweep (Figures 3-5) and the Δ
histograms (Figure 2) are computed from the right rows and written headless; each claim's rule
holds, fails and is not decidable on hand-built evidence, and on the paper's own numbers it holds
exactly where no contradiction is declared."""

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
    # SCAFFOLD sends Δ and Δc: 2 × 199,210 × 1,019 = 40.599e7, 40.60 at the paper's precision; the paper
    # prints 40.58 (claim table2_dense declares that contradiction, test_the_rules_on_the_papers_own_numbers)
    assert round(2 * d * sampled / 1e7, 2) == 40.60
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


# ----------------------------------------------------------------------------------------------
# Claims (fedbench.analysis.scorecard)

from fedbench.analysis import scorecard as sc  # noqa: E402
from fedbench.papers import fedelasticnet as fen  # noqa: E402


def _claim(name):
    (c,) = [c for c in fen.claims() if c.id == f"fedelasticnet.{name}"]
    return c


def _decide(name, **evidence):
    return _claim(name).decide(sc.Evidence(**evidence))


def _metrics(runs, rounds=2, sampled=3, experiment="q", dataset="mnist5k"):
    """Metrics of runs {(partition, algorithm): [(final accuracy, non-zeros per round, values per round), per seed]}:
    every round evaluated, ``sampled`` clients per round."""
    rows = []
    for (part, alg), seeds in runs.items():
        for seed, (acc, nz, floats) in enumerate(seeds):
            for t in range(1, rounds + 1):
                rows.append({"experiment": experiment, "dataset": dataset, "partition": part, "algorithm": alg,
                             "seed": seed, "round": t, "clients_sampled": sampled, "test_accuracy": acc,
                             "uplink_nonzeros": nz * t, "uplink_floats": floats * t, "status": "ok"})
    return pl.DataFrame(rows)


def _table(n, rows, experiment="q"):
    """A paper table's long CSV (our rows only) from (partition, algorithm, metric, ours)."""
    return pl.DataFrame([{"table": n, "experiment": experiment, "dataset": "mnist5k", "partition": p,
                          "participation": 0.1 if n < 4 else 1.0, "rounds": 20, "algorithm": a, "metric": m,
                          "ours": v, "paper": None} for p, a, m, v in rows],
                        schema_overrides={"paper": pl.Float64})


def _t2(values, partition="iid"):
    return {"fedelasticnet_table2": _table(2, [(partition, a, "uplink_nonzeros", v) for a, v in values.items()])}


DENSE = {"fedprox": 2.0, "fedelasticnet_prox": 1.0, "scaffold": 4.0, "fedelasticnet_scaffold": 3.0, "feddyn": 2.0,
         "fedelasticnet_feddyn": 0.5}


def test_claims_cover_the_paper_each_with_where_says_and_a_basis():
    cs = fen.claims()
    assert len(cs) >= 25 and len({c.id for c in cs}) == len(cs)
    assert all(c.where and c.says and c.paper_value for c in cs)
    rules = [c for c in cs if c.decide is not None]
    assert len(rules) >= 20 and all(c.basis for c in rules)
    assert all(c.no_run for c in cs if c.decide is None)
    assert {c.figure for c in cs} >= {"fedelasticnet_lambda1_sweep", "fedelasticnet_cifar10_p10_delta_histogram"}


def test_the_rules_on_the_papers_own_numbers():
    """Every rule with on_paper holds on the paper's numbers unless a contradiction is declared, and
    then fails with a margin that says so."""
    rows = {r["claim"]: r for r in sc.paper_number_rows(fen.claims())}
    for c in fen.claims():
        if c.on_paper is None:
            continue
        r = rows[c.id]
        if c.contradicted:
            assert r["verdict"] == sc.FAILS and r["margin"].startswith("contradicted by the paper's own"), c.id
        else:
            assert r["verdict"] == sc.HOLDS, (c.id, r["margin"], r["note"])
    dense = rows["fedelasticnet.table2_dense"]["margin"]
    assert "MNIST IID SCAFFOLD: 40.58 vs Σ|P_t|·d = 40.599" in dense and "CIFAR-10 " not in dense
    assert "Shakespeare Non-IID" not in dense  # 133,520 × 1,019 = 13.61e7 as printed
    assert "Shakespeare Non-IID: 27.21 vs 27.21" in rows["fedelasticnet.alg2_fewer_nonzeros"]["margin"]
    assert "Table 4 Shakespeare Non-IID: 897.67 vs 684.79" in rows["fedelasticnet.alg2_lower_entropy"]["margin"]


def test_paper_models_and_sampler_give_table2_dense_arithmetic():
    assert fen.PAPER_MODEL_PARAMS == {"MNIST": 199_210, "EMNIST-L": 89_610, "CIFAR-10": 797_962,
                                      "CIFAR-100": 815_332, "Shakespeare": 133_520}
    rows = {(s, a): (v, x) for s, a, v, x, _ in fen.paper_dense_rows()}
    assert rows[("CIFAR-10 IID", "fedprox")] == pytest.approx((163.82, 163.822), abs=1e-3)
    assert rows[("MNIST Dir(.3)", "scaffold")] == pytest.approx((40.58, 40.599), abs=1e-3)


def test_table2_dense_holds_when_every_sent_value_counts_and_fails_on_a_zero():
    ok = _metrics({("iid", "fedprox"): [(0.9, 100, 100)] * 2, ("iid", "scaffold"): [(0.9, 200, 200)] * 2})
    v = _decide("table2_dense", metrics=ok)
    assert v.status == sc.HOLDS and v.ours.startswith("4 of 4 dense counts equal Σ_t |P_t| · d at the printed")
    # Table 2 prints two decimals of 1e7: 20,000 zeros in 4e7 values are below it, 200,000 are not
    few = _metrics({("iid", "fedprox"): [(0.9, 19_990_000, 20_000_000)]})
    v = _decide("table2_dense", metrics=few)
    assert v.status == sc.HOLDS and "largest |count − arithmetic| 20000 (q/mnist5k/iid (seed 0) FedProx)" in v.ours
    many = _metrics({("iid", "fedprox"): [(0.9, 19_900_000, 20_000_000)]})
    v = _decide("table2_dense", metrics=many)
    assert v.status == sc.FAILS and "q/mnist5k/iid (seed 0) FedProx: 3.98e+07 vs Σ|P_t|·d = 4e+07" in v.margin
    gaps = ok.filter(pl.col("round") == 2)  # round 1 not evaluated: Σ_t |P_t| unknown
    assert _decide("table2_dense", metrics=gaps).status == sc.UNDECIDED
    assert _decide("table2_dense", metrics=pl.DataFrame()).status == sc.UNDECIDED


def test_dense_same_cost_holds_fails_and_needs_fedprox():
    assert _decide("dense_same_cost", tables=_t2(DENSE)).status == sc.HOLDS
    v = _decide("dense_same_cost", tables=_t2({**DENSE, "scaffold": 3.9}))
    assert v.status == sc.FAILS and "SCAFFOLD 3.9 vs 2 × 2 = 4" in v.margin
    assert _decide("dense_same_cost", tables=_t2({"feddyn": 2.0})).status == sc.UNDECIDED
    # the paper's printed rounding: 40.58 is 2 × 20.3 within 0.005 + 2 × 0.05
    grid = {"MNIST IID": {"fedprox": 20.3, "scaffold": 40.58}}
    tol = {("MNIST IID", "fedprox"): 0.05, ("MNIST IID", "scaffold"): 0.005}
    assert fen.dense_identities(grid, tol).status == sc.HOLDS
    assert fen.dense_identities(grid).status == sc.FAILS


def test_fewer_nonzeros_than_the_base():
    v = _decide("alg3_fewer_nonzeros", tables=_t2(DENSE))
    assert v.status == sc.HOLDS and "0.25–0.25×" in v.ours
    v = _decide("alg2_fewer_nonzeros", tables=_t2({**DENSE, "fedelasticnet_scaffold": 4.0}))
    assert v.status == sc.FAILS and "q/mnist5k/iid: 4 vs 4" in v.margin
    assert _decide("alg1_fewer_nonzeros", tables=_t2({"fedprox": 2.0})).status == sc.UNDECIDED


def test_alg3_fewest_and_table1_order():
    assert _decide("alg3_fewest_nonzeros", tables=_t2(DENSE)).status == sc.HOLDS
    v = _decide("alg3_fewest_nonzeros", tables=_t2({**DENSE, "fedelasticnet_prox": 0.4}))
    assert v.status == sc.FAILS and "vs Alg. 1 0.4" in v.margin
    assert _decide("table1_communication", tables=_t2(DENSE)).status == sc.HOLDS
    assert _decide("table1_communication", tables=_t2({**DENSE, "scaffold": 1.5})).status == sc.FAILS
    assert _decide("table1_communication", tables=_t2({"fedprox": 2.0})).status == sc.UNDECIDED


def _entropy(values, delta=None, n=3):
    rows = [("iid", a, "uplink_entropy_bits", v) for a, v in values.items()]
    if delta is not None:
        rows.append(("iid", "feddyn", "uplink_entropy_bits_delta", delta))
    return {f"fedelasticnet_table{n}": _table(n, rows)}


ENTROPY = {"fedprox": 300.0, "fedelasticnet_prox": 50.0, "scaffold": 290.0, "fedelasticnet_scaffold": 80.0,
           "feddyn": 310.0, "fedelasticnet_feddyn": 20.0}


def test_entropy_rules_read_tables_3_and_4():
    assert _decide("alg2_lower_entropy", tables=_entropy(ENTROPY, n=4)).status == sc.HOLDS
    v = _decide("alg2_lower_entropy", tables={**_entropy(ENTROPY), **_entropy({**ENTROPY, "fedelasticnet_scaffold":
                                                                                300.0}, n=4)})
    assert v.status == sc.FAILS and v.margin.startswith("not below SCAFFOLD in 1 of 2: Table 4 q/mnist5k/iid")
    assert _decide("alg3_lowest_entropy", tables=_entropy(ENTROPY)).status == sc.HOLDS
    assert _decide("alg3_lowest_entropy", tables=_entropy({**ENTROPY, "fedelasticnet_prox": 10.0})).status == sc.FAILS
    assert _decide("feddyn_delta_below_theta", tables=_entropy(ENTROPY, delta=30.0)).status == sc.HOLDS
    assert _decide("feddyn_delta_below_theta", tables=_entropy(ENTROPY, delta=310.0)).status == sc.FAILS
    assert _decide("feddyn_delta_below_theta", tables=_entropy(ENTROPY)).status == sc.UNDECIDED  # Δ not measured
    assert _decide("alg3_below_feddyn_delta", tables=_entropy(ENTROPY, delta=30.0)).status == sc.HOLDS
    assert _decide("alg3_below_feddyn_delta", tables=_entropy(ENTROPY, delta=15.0)).status == sc.FAILS
    assert _decide("alg1_lower_entropy", tables={}).status == sc.UNDECIDED


def test_alg3_sparser_than_feddyn_and_alg2s_delta():
    base = {("iid", "feddyn"): [(0.9, 100, 100)], ("iid", "fedelasticnet_scaffold"): [(0.9, 190, 200)]}
    v = _decide("alg3_sparser_fig2", metrics=_metrics({**base, ("iid", "fedelasticnet_feddyn"): [(0.9, 20, 100)]}))
    assert v.status == sc.HOLDS and "Alg. 2's Δ 0.9–1" in v.ours
    v = _decide("alg3_sparser_fig2", metrics=_metrics({**base, ("iid", "fedelasticnet_feddyn"): [(0.9, 100, 100)]}))
    assert v.status == sc.FAILS
    # Alg. 2's Δ share only bounded (0.2 to 1): Alg. 3 at 0.5 lies inside
    loose = {**base, ("iid", "fedelasticnet_scaffold"): [(0.9, 120, 200)], ("iid", "fedelasticnet_feddyn"):
             [(0.9, 50, 100)]}
    assert _decide("alg3_sparser_fig2", metrics=_metrics(loose)).status == sc.UNDECIDED


def _seeds(*accs, nz=10, floats=100):
    return [(a, nz, floats) for a in accs]


def test_less_comm_at_comparable_accuracy():
    good = {("iid", "feddyn"): _seeds(0.90, 0.91, 0.92, nz=100),
            ("iid", "fedelasticnet_feddyn"): _seeds(0.905, 0.90, 0.915, nz=20)}
    v = _decide("less_comm_comparable_acc", metrics=_metrics(good))
    assert v.status == sc.HOLDS and "Alg. 3 non-zeros: 40 vs FedDyn 200 (0.2×)" in v.ours
    worse = {**good, ("iid", "fedelasticnet_feddyn"): _seeds(0.80, 0.81, 0.79, nz=20)}
    v = _decide("less_comm_comparable_acc", metrics=_metrics(worse))
    assert v.status == sc.FAILS and "Alg. 3 accuracy: 11.00 pp below FedDyn (SE 0.82 pp)" in v.margin
    more = {**good, ("iid", "fedelasticnet_feddyn"): _seeds(0.905, 0.90, 0.915, nz=100)}
    assert _decide("less_comm_comparable_acc", metrics=_metrics(more)).status == sc.FAILS
    one_seed = {k: v[:1] for k, v in good.items()}
    v = _decide("less_comm_comparable_acc", metrics=_metrics(one_seed))
    assert v.status == sc.UNDECIDED and "needs ≥ 2 seeds" in v.note
    assert _decide("less_comm_comparable_acc", metrics=_metrics({("iid", "feddyn"): _seeds(0.9)})).status == \
        sc.UNDECIDED
    # the paper concedes Alg. 1's gap on CIFAR: only its non-zeros count there
    cifar = {("iid", "fedprox"): _seeds(0.70, 0.71, nz=100), ("iid", "fedelasticnet_prox"): _seeds(0.60, 0.61, nz=50)}
    assert _decide("less_comm_comparable_acc", metrics=_metrics(cifar, dataset="cifar10")).status == sc.HOLDS
    assert _decide("less_comm_comparable_acc", metrics=_metrics(cifar)).status == sc.FAILS


def test_alg3_accuracy_matches_feddyn_and_alg1s_gap_on_cifar():
    same = {("dir0.3", "feddyn"): _seeds(0.90, 0.91, 0.92),
            ("dir0.3", "fedelasticnet_feddyn"): _seeds(0.91, 0.90, 0.92)}
    assert _decide("alg3_accuracy_matches_feddyn", metrics=_metrics(same)).status == sc.HOLDS
    better = {**same, ("dir0.3", "fedelasticnet_feddyn"): _seeds(0.95, 0.96, 0.955)}
    assert _decide("alg3_accuracy_matches_feddyn", metrics=_metrics(better)).status == sc.FAILS  # identical: both ways
    assert _decide("alg3_accuracy_matches_feddyn", metrics=_metrics({("iid", "feddyn"): _seeds(0.9)})).status == \
        sc.UNDECIDED
    gap = {("iid", "fedprox"): _seeds(0.70, 0.71, 0.72), ("iid", "fedelasticnet_prox"): _seeds(0.60, 0.61, 0.62)}
    v = _decide("alg1_gap_on_cifar", metrics=_metrics(gap))
    assert v.status == sc.UNDECIDED and "about CIFAR-10 and CIFAR-100" in v.note
    assert _decide("alg1_gap_on_cifar", metrics=_metrics(gap, dataset="cifar100")).status == sc.HOLDS
    none = {**gap, ("iid", "fedelasticnet_prox"): _seeds(0.70, 0.71, 0.72)}
    assert _decide("alg1_gap_on_cifar", metrics=_metrics(none, dataset="cifar10")).status == sc.FAILS


def test_table1_robustness_and_the_conclusion():
    runs = {("iid", "fedprox"): _seeds(0.90, 0.90, nz=100), ("dir0.3", "fedprox"): _seeds(0.80, 0.80, nz=100),
            ("iid", "feddyn"): _seeds(0.92, 0.92, nz=100), ("dir0.3", "feddyn"): _seeds(0.90, 0.91, nz=100),
            ("iid", "fedelasticnet_feddyn"): _seeds(0.92, 0.92, nz=20),
            ("dir0.3", "fedelasticnet_feddyn"): _seeds(0.905, 0.90, nz=20)}
    v = _decide("table1_robustness", metrics=_metrics(runs))
    assert v.status == sc.HOLDS and "FedProx 10.00 pp" in v.ours
    fragile = {**runs, ("dir0.3", "feddyn"): _seeds(0.70, 0.70, nz=100)}
    assert _decide("table1_robustness", metrics=_metrics(fragile)).status == sc.FAILS
    assert _decide("table1_robustness", metrics=_metrics({("iid", "fedprox"): _seeds(0.9)})).status == sc.UNDECIDED
    assert _decide("conclusion_alg3_best", metrics=_metrics(runs)).status == sc.HOLDS
    v = _decide("conclusion_alg3_best", metrics=_metrics(fragile))  # Alg. 3 above FedDyn: fine; fewest: yes
    assert v.status == sc.HOLDS
    costly = {**runs, ("dir0.3", "fedelasticnet_feddyn"): _seeds(0.905, 0.90, nz=200)}
    assert _decide("conclusion_alg3_best", metrics=_metrics(costly)).status == sc.FAILS
    assert _decide("conclusion_alg3_best", metrics=_metrics({("iid", "feddyn"): _seeds(0.9)})).status == sc.UNDECIDED


def _sweep(points, dataset="cifar10", alg="fedelasticnet_feddyn"):
    """Table fedelasticnet_sweep from [(λ1, mean accuracy, sd, non-zeros 1e7)] (3 seeds each)."""
    return {fen.SWEEP_TABLE: pl.DataFrame([{"experiment": "s", "dataset": dataset, "partition": "dir0.3",
                                            "algorithm_name": alg, "lambda1": l1, "final_accuracy": a,
                                            "accuracy_sd": sd, "nonzeros_1e7": nz, "n_seeds": 3}
                                           for l1, a, sd, nz in points])}


def test_lambda1_sweep_rules():
    pts = [(1e-8, 0.70, 0.01, 10.0), (1e-6, 0.70, 0.01, 8.0), (1e-4, 0.695, 0.01, 5.0), (1e-2, 0.40, 0.01, 1.0)]
    assert _decide("lambda1_sparsity", tables=_sweep(pts)).status == sc.HOLDS
    flat = [p[:3] + (5.0,) for p in pts]
    assert _decide("lambda1_sparsity", tables=_sweep(flat)).status == sc.FAILS
    assert _decide("lambda1_sparsity", tables={}).status == sc.UNDECIDED
    assert _decide("lambda1_selected", tables=_sweep(pts)).status == sc.HOLDS
    kept = pts[:3] + [(1e-2, 0.69, 0.01, 1.0)]  # λ1 = 1e-2 keeps the accuracy: 1e-4 was not the largest
    v = _decide("lambda1_selected", tables=_sweep(kept))
    assert v.status == sc.FAILS and "λ1 = 0.01" in v.margin
    v = _decide("lambda1_selected", tables=_sweep(pts, dataset="mnist5k"))
    assert v.status == sc.UNDECIDED and "CIFAR-10" in v.note


def test_sweep_table_is_written_with_the_seed_spread(tmp_path, mr):
    cells, rows = [], []
    for l1 in (1e-4, 1e-2):
        label = f"a3_{l1:g}"
        cells.append({"experiment": "s", "dataset": "d", "partition": "p", "algorithm": label,
                      "algorithm_name": "fedelasticnet_feddyn", "hparams": {"lambda1": l1}})
        for seed, acc in enumerate((0.5, 0.7)):
            rows += mr.run_rows([0.1, acc], experiment="s", dataset="d", partition="p", algorithm=label, seed=seed)
    flat = fen.sweep_cells(cells)
    assert [t.name for t in fen.tables([{**c, "sampling": {"participation": 0.1}, "lambda1": 0} for c in cells])
            if t.name == fen.SWEEP_TABLE] == [fen.SWEEP_TABLE]
    data = fen.write_table(fen.SWEEP_TABLE, mr.frame(rows), "", flat, tmp_path / "t.md", tmp_path / "t.csv")
    assert data["accuracy_sd"].to_list() == pytest.approx([0.1414, 0.1414], abs=1e-4)
    assert data["n_seeds"].to_list() == [2, 2]
    back = pl.read_csv(tmp_path / "t.csv")
    points = fen.sweep_points(sc.Evidence(tables={fen.SWEEP_TABLE: back}))
    assert points[("s/d/p", "fedelasticnet_feddyn")][0][:2] == (1e-4, pytest.approx(0.6))
    assert "| s | d | p | Alg. 3 (FedDyn + EN) | 0.0001 | 60.00 ± 14.14 |" in (tmp_path / "t.md").read_text()


def test_paper_scale_of_the_papers_datasets():
    from fedbench.papers import cell_scale

    assert cell_scale(fen.KEY, {"source": "mnist"}, 100) == sc.PAPER_SCALE
    assert cell_scale(fen.KEY, {"source": "mnist"}, 20) == sc.REDUCED_REAL
    assert cell_scale(fen.KEY, {"source": "mnist5k"}, 100) == sc.REDUCED_REAL
    assert cell_scale(fen.KEY, {"source": "cifar100"}, 500) == sc.PAPER_SCALE
    assert cell_scale(fen.KEY, {"source": "digits"}, 500) == sc.TOY


def test_accuracy_figure_draws_each_method_per_setting(tmp_path, mr, monkeypatch):
    """Figures 1, 6-9: a panel per setting, a line per method (mean over seeds), the base dashed."""
    got = _drawn(monkeypatch)
    cells, rows = [], []
    for alg in ("feddyn", "fedelasticnet_feddyn", "fedprox"):
        cells.append({"experiment": "e", "dataset": "d", "partition": "iid", "algorithm": alg, "algorithm_name": alg})
        for seed, acc in enumerate((0.4, 0.6)):
            rows += mr.run_rows([0.1, acc], experiment="e", dataset="d", partition="iid", algorithm=alg, seed=seed)
    assert [f.name for f in fen.figures([{**c, "seed": 0, "hparams": {"lambda1": 1e-4}} for c in cells])] == [
        fen.ACCURACY_FIGURE]
    swept = [{**cells[1], "experiment": "s", "algorithm": f"a3_{x}", "seed": 0, "hparams": {"lambda1": x}}
             for x in (1e-4, 1e-2)]
    (acc, _sweep) = fen.figures([{**c, "seed": 0, "hparams": {"lambda1": 1e-4}} for c in cells] + swept)
    assert {c["algorithm"] for c in acc.cells} == {"feddyn", "fedelasticnet_feddyn", "fedprox"}  # the sweep apart
    curves = fen.accuracy_curves(mr.frame(rows), cells)
    assert curves.filter(pl.col("round") == 2)["test_accuracy"].to_list() == pytest.approx([0.5, 0.5, 0.5])
    out = fen.plot_accuracy(mr.frame(rows), cells, tmp_path / "acc.png")
    assert out.stat().st_size > 5_000
    (ax,) = [a for a in got[-1].axes if a.get_visible()]
    assert {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines()} == {"FedDyn": "--", "Alg. 3": "-",
                                                                             "FedProx": "--"}
