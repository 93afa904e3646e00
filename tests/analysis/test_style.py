"""fedbench.analysis.style: one colour per algorithm in every figure, axes chosen from the metric,
numbers with their significant digits, the seeds said as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fedbench.analysis import style

REPO = Path(__file__).resolve().parents[2]


def test_an_algorithm_has_one_colour_whatever_else_the_figure_draws():
    # e.g. Mb-SGD in the FedAc figures (keys) and in the sweep plot (labels): the same colour
    alone = style.algorithm_colors(["mb_sgd"])["mb_sgd"]
    for others in (["fedac", "fedavg", "mb_ac_sgd"], ["fedavg"], ["mb_ac_sgd", "fedac_vanilla"], ["x", "y"]):
        assert style.algorithm_colors([*others, "mb_sgd"])["mb_sgd"] == alone
        assert style.algorithm_colors(["mb_sgd", *others])["mb_sgd"] == alone
    # a name without a fixed colour: the same in every figure where no other name claims it
    assert style.algorithm_colors(["my_algo"])["my_algo"] == style.algorithm_colors(["fedavg", "my_algo"])["my_algo"]


def test_names_of_one_figure_get_distinct_colours():
    names = [f"algo_{i}" for i in range(20)] + ["fedavg", "fedprox"]
    colors = style.algorithm_colors(names)
    assert len(set(colors.values())) == len(names)


def _labels_per_experiment():
    for path in sorted([REPO / "config" / "config.yaml", *(REPO / "config" / "experiments").glob("*.yaml")]):
        cfg = yaml.safe_load(path.read_text())
        for name, exp in (cfg.get("experiments") or {}).items():
            yield f"{path.name}:{name}", list(exp.get("algorithms") or {})


@pytest.mark.parametrize("where,labels", list(_labels_per_experiment()))
def test_every_shipped_experiment_has_one_colour_per_algorithm(where, labels):
    # the fixed colours of the algorithms that one experiment draws together differ from each other
    fixed = [style.ALGORITHM_COLORS[a] for a in labels if a in style.ALGORITHM_COLORS]
    assert len(set(fixed)) == len(fixed), where
    colors = style.algorithm_colors(labels)
    assert len(set(colors.values())) == len(labels), where


def test_the_points_of_a_sweep_share_their_labels_hue():
    import colorsys

    names = ["theta_all,lr=0.001", "theta_all,lr=0.01", "theta_all,lr=0.09"]
    colors = style.algorithm_colors(names)
    assert len(set(colors.values())) == 3
    hues = {round(colorsys.rgb_to_hls(*(int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)))[0], 2)
            for c in colors.values()}
    assert len(hues) == 1


@pytest.mark.parametrize("metric,kind,log,scale", [
    ("suboptimality", "gap", True, 1.0),
    ("test_accuracy", "accuracy", False, 100.0),
    ("test_worst_class_accuracy", "accuracy", False, 100.0),
    ("train_accuracy", "accuracy", False, 100.0),
    ("uplink_nonzeros", "count", True, 1.0),
    ("train_loss", "loss", None, 1.0),
])
def test_the_axis_follows_the_metric(metric, kind, log, scale):
    axis = style.metric_axis(metric)
    assert (axis.kind, axis.log, axis.scale) == (kind, log, scale)
    assert axis.label.endswith("(%)") == (kind == "accuracy")


def test_a_loss_goes_log_only_over_decades():
    axis = style.metric_axis("train_loss")
    assert not axis.is_log([2.09, 2.17])  # the quadratic's loss near a positive optimum
    assert axis.is_log([2.3, 0.01])
    assert not axis.is_log([0.0, 1.0])


def test_a_percentage_axis_never_runs_past_100():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    style.apply_metric_axis(ax, style.metric_axis("test_accuracy"), [97.0, 99.8, 100.0])
    lo, hi = ax.get_ylim()
    assert hi <= 100.0 and lo < 97.0
    style.apply_metric_axis(ax, style.metric_axis("boosted_pct"), [99.0, 100.0])
    assert ax.get_ylim()[1] <= 100.0
    style.apply_metric_axis(ax, style.metric_axis("suboptimality"), [1e-4, 2.4])
    assert ax.get_yscale() == "log"


@pytest.mark.parametrize("mean,sd,text", [
    (4.1234e-4, 1.2345e-4, "4.1e-04 ± 1.2e-04"),
    (0.0004, 0.0001, "4.0e-04 ± 1.0e-04"),
    (2.227033, 0.001526, "2.2270 ± 0.0015"),
    (2.092217, None, "2.0922"),
    (93.456, 1.234, "93.5 ± 1.2"),
    (None, None, "—"),
])
def test_significant_digits(mean, sd, text):
    assert style.format_mean_sd(mean, sd) == text


def test_format_sig():
    assert style.format_sig(4.1e-4) == "4.1e-04"
    assert style.format_sig(0.0041) == "0.0041"
    assert style.format_sig(2.5) == "2.5"
    assert style.format_sig(0.0) == "0"


def test_seeds_phrase():
    assert style.seeds_phrase(1) == "one seed"
    assert style.seeds_phrase([1, 1]) == "one seed"
    assert style.seeds_phrase([3, 3]) == "mean ± sd over 3 seeds"


def test_wrap_title_fits_the_figure():
    text = "lr_sweep_quick: sensitivity to the swept hyperparameters, the others at the chosen point (mean ± sd)"
    lines = style.wrap_title(text, 6.0).splitlines()
    assert len(lines) > 1 and max(len(line) for line in lines) <= int(6.0 * 72 / (0.55 * 11))
