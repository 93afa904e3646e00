"""The papers' figures follow the class rules of fedbench.analysis.style: legends list what is
drawn, curves that coincide by construction say so, percentages stay within [0, 100], panels in
the tables' order, one colour per algorithm."""

from __future__ import annotations

import matplotlib.figure
import pytest

from fedbench.analysis.style import algorithm_colors
from fedbench.papers import elastic_aggregation, fedac

from .test_elastic_aggregation import _ea_rows
from .test_fedac import cells_and_metrics


@pytest.fixture
def figures(monkeypatch):
    """The figures the paper modules save (their save_figure is replaced by a spy that still writes)."""
    got = []
    for module in (fedac, elastic_aggregation):
        real = module.save_figure

        def spy(fig, path, dpi, real=real):
            got.append(fig)
            return real(fig, path, dpi)

        monkeypatch.setattr(module, "save_figure", spy)
    return got


def _texts(fig: matplotlib.figure.Figure) -> list[str]:
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    return legend + [t.get_text() for ax in fig.axes for t in ax.texts]


def test_fedac_legend_has_no_paper_entry_without_paper_numbers_and_says_when_curves_coincide(mr, tmp_path,
                                                                                          figures):
    cells, metrics = [], None
    for alg in ("fedac", "mb_ac_sgd", "fedavg", "mb_sgd"):
        c, m = cells_and_metrics(mr, [0.1, 1.0], [4, 16], [1, 4], lambda m, k, lr, s: 1e-3 / m * k,
                                 dataset="breast_cancer", lam=1e-2, algorithm=alg)
        cells += c
        metrics = m if metrics is None else metrics.vstack(m)
    best = fedac.best_frame(metrics, cells)
    fedac.plot_best(best, fedac.reference_frame(), tmp_path / "m.png", x="M")
    texts = "\n".join(_texts(figures[-1]))
    assert "authors" not in texts  # no dashed paper curve drawn, no legend entry for one
    assert "K = 1: FedAvg ≡ Mb-SGD (same algorithm)" in texts
    assert "K = 1: FedAc-I ≡ Mb-Ac-SGD (same algorithm)" in texts
    fedac.plot_best(best, fedac.reference_frame(), tmp_path / "k.png", x="K")
    assert "K = 1: FedAvg ≡ Mb-SGD" in "\n".join(_texts(figures[-1]))
    colours = {ln.get_label(): ln.get_color() for ax in figures[-1].axes for ln in ax.lines}
    assert colours["Mb-SGD"] == algorithm_colors(["mb_sgd"])["mb_sgd"]
    assert {ax.get_yscale() for ax in figures[-1].axes if ax.get_visible()} == {"log"}


def test_ea_boosted_panels_follow_the_cells_order_and_stay_within_100(mr, tmp_path, figures):
    rows, cells = [], []
    for ds in ("zeta", "alpha"):  # the config's order, not the alphabet's
        rows += _ea_rows(mr, "ea_m", 0, [99.0 + 0.1 * t for t in range(10)], dataset=ds)
        cells.append({"experiment": "e", "dataset": ds, "partition": "p", "algorithm": "ea_m",
                      "algorithm_name": "elastic_fedavg", "hparams": {"sensitivity": "momentum"}})
    elastic_aggregation.plot_boosted(mr.frame(rows), cells, tmp_path / "b.png")
    axes = [ax for ax in figures[-1].axes if ax.get_visible()]
    assert [ax.get_title().split(" / ")[0] for ax in axes] == ["zeta", "alpha"]
    assert all(ax.get_ylim()[1] <= 100.0 for ax in axes)


def test_fedelasticnet_histograms_set_the_bin_of_exact_zeros_apart(tmp_path, monkeypatch):
    from fedbench.papers import fedelasticnet

    from .test_fedelasticnet import _drawn, _hist_file

    got = _drawn(monkeypatch)
    paths = []
    for alg, scale, dist in (("dyn", 0.05, "normal"), ("alg3", 0.01, "laplace")):
        p = tmp_path / f"{alg}.parquet"
        _hist_file(p, alg, scale, 0, dist)
        paths.append(p)
    cells = [{"experiment": "e", "dataset": "d", "partition": "p", "algorithm": a, "algorithm_name": m}
             for a, m in (("dyn", "feddyn"), ("alg3", "fedelasticnet_feddyn"))]
    fedelasticnet.plot_delta_histograms(paths, cells, tmp_path / "h.png", title="e")
    fig = got[-1]
    notes = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert sum(t.startswith("exact 0: ") for t in notes) == 2  # one per panel
    suptitle = " ".join(fig._suptitle.get_text().split())
    assert "values exactly 0" in suptitle and "[0, 0.01)" in suptitle and "included" not in suptitle
    colours = {ax.get_title().split(":")[0]: ax.patches[0].get_facecolor() for ax in fig.axes if ax.patches}
    assert colours["FedDyn"] != colours["Alg. 3 (FedDyn + EN)"]
