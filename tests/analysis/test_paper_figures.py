"""fedbench.analysis.paper_figures: Elastic Aggregation's Figure 1 (boosted %) and FedElasticNet's
Figure 2 (Δ histograms) are computed from the right rows and written headless."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from fedbench.analysis.paper_figures import (
    boosted_frame,
    histogram_panels,
    plot_boosted,
    plot_delta_histograms,
    read_histograms,
)
from fedbench.metrics.communication import flatten
from fedbench.metrics.histogram import DeltaHistogram

from .test_plots import png_size


def _ea_rows(mr, algorithm, seed, values, **kw):
    rows = mr.run_rows([0.5] * len(values), algorithm=algorithm, seed=seed, **kw)
    for r, v in zip(rows, values):
        r["boosted_pct"] = v
    return rows


def test_boosted_frame_means_over_seeds_and_skips_other_algorithms(mr):
    rows = (_ea_rows(mr, "ea_m", 0, [10.0, 20.0, 30.0]) + _ea_rows(mr, "ea_m", 1, [20.0, 30.0, 40.0])
            + _ea_rows(mr, "ea_a", 0, [50.0, 60.0, 70.0]) + mr.run_rows([0.5, 0.6, 0.7], algorithm="fedavg"))
    rows += _ea_rows(mr, "ea_m", 2, [99.0, 99.0], diverge_at=2)  # a diverged seed is left out
    cells = [{"experiment": "e", "dataset": "d", "partition": "p", "algorithm": "ea_m", "algorithm_name": "elastic_fedavg",
              "hparams": {"sensitivity": "momentum"}},
             {"experiment": "e", "dataset": "d", "partition": "p", "algorithm": "ea_a", "algorithm_name": "elastic_fedavg",
              "hparams": {"sensitivity": "average"}},
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


def _hist_file(path, algorithm, scale, seed=0, dist="normal"):
    rng = np.random.default_rng(seed)
    h = DeltaHistogram([1])
    n_values = 0
    for t in (1, 2):
        draw = getattr(rng, dist)
        msgs = [{"delta": {"w": torch.as_tensor(draw(scale=scale, size=500))}} for _ in range(3)]
        n_values += 1500
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
    assert set(panels) == {("d", "p", "feddyn"), ("d", "p", "fedelasticnet_scaffold"), ("d", "p", "fedelasticnet_feddyn")}
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
