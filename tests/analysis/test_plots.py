"""fedbench.analysis.plots: the accuracy figure is written headless."""

from __future__ import annotations

import struct

import pytest

from fedbench.analysis.plots import plot_accuracy


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_plot_accuracy_writes_a_png(tmp_path, mr):
    rows = []
    for dataset, partition in (("d", "iid"), ("d", "dir0.3"), ("s", "natural"), ("s", "other")):
        for algorithm in ("fedavg", "scaffold"):
            for seed in (0, 1, 2):
                rows += mr.run_rows([0.1 * seed + 0.2 * t for t in range(1, 5)], dataset=dataset,
                                 partition=partition, algorithm=algorithm, seed=seed)
    rows += mr.run_rows([0.2, 0.3], dataset="d", partition="iid", algorithm="fedavg", seed=3, diverge_at=2)
    out = plot_accuracy(mr.frame(rows), tmp_path / "plots" / "e_accuracy.png", targets={"d": 0.5}, title="e")
    assert out.exists() and out.stat().st_size > 20_000
    w, h = png_size(out)
    assert w > 800 and h > 500  # 3 columns × 2 rows of panels


def test_plot_accuracy_all_diverged_panel_and_empty_input(tmp_path, mr):
    rows = mr.run_rows([0.2, 0.3], algorithm="x", diverge_at=2) + mr.run_rows([0.2, 0.3], partition="q", algorithm="y")
    out = plot_accuracy(mr.frame(rows), tmp_path / "p.png", targets=0.9)
    assert out.stat().st_size > 5_000
    with pytest.raises(ValueError):
        plot_accuracy(mr.frame(rows).head(0), tmp_path / "q.png")


def _captured(monkeypatch):
    """Replace plots._save so the test gets the Figure (and still writes the file)."""
    import fedbench.analysis.plots as plots

    figs = []
    real = plots._save

    def save(fig, path, dpi):
        figs.append(fig)
        return real(fig, path, dpi)

    monkeypatch.setattr(plots, "_save", save)
    return figs


def _diverging_rows(mr):
    rows = []
    for algorithm in ("fedavg", "scaffold", "a_long_algorithm_name", "another_long_algorithm_name"):
        for seed in (0, 1, 2):
            rows += mr.run_rows([0.2, 0.4, 0.6], algorithm=algorithm, seed=seed, diverge_at=3 if seed else None)
    return rows


def test_accuracy_plot_in_percent_with_labelled_target_and_visible_diverged_note(tmp_path, mr, monkeypatch):
    figs = _captured(monkeypatch)
    plot_accuracy(mr.frame(_diverging_rows(mr)), tmp_path / "a.png", targets=0.5, title="e")
    fig = figs[0]
    ax = fig.axes[0]
    assert ax.get_ylabel() == "test accuracy (%)"
    assert ax.get_ylim()[1] > 50  # percent, not a fraction
    texts = [t.get_text() for t in ax.texts]
    assert "target 50%" in texts
    note = next(t for t in ax.texts if t.get_text().startswith("diverged:"))
    assert "another_long_algorithm_name (2/3)" in note.get_text().replace("\n", " ")
    fig.canvas.draw()
    box, figbox = note.get_window_extent(), fig.bbox
    assert figbox.x0 <= box.x0 and box.x1 <= figbox.x1 and figbox.y0 <= box.y0 and box.y1 <= figbox.y1
    # the note is under the axes, not over the curves
    assert box.y1 <= ax.get_window_extent().y0


def test_uplink_loss_and_comparison_plots(tmp_path, mr, monkeypatch):
    from fedbench.analysis.plots import plot_accuracy_vs_uplink, plot_comparison, plot_train_loss

    figs = _captured(monkeypatch)
    rows = _diverging_rows(mr) + mr.run_rows([0.3, 0.5], experiment="f", dataset="d2", algorithm="fedavg")
    rows += mr.run_rows([0.3, 0.5], experiment="f", dataset="d2", algorithm="x", diverge_at=2)
    df = mr.frame(rows)
    e = df.filter(df["experiment"] == "e")
    plot_accuracy_vs_uplink(e, tmp_path / "u.png", targets=0.5, title="e")
    ax = figs[-1].axes[0]
    assert ax.get_xlabel().startswith("cumulative uplink floats")
    assert ax.lines[0].get_xdata().tolist() == [10.0, 20.0, 30.0]  # fedavg: 10 floats per round, seed 0 only at 3
    plot_train_loss(e, tmp_path / "l.png", title="e")
    assert figs[-1].axes[0].get_ylabel() == "train loss"
    plot_comparison(df, tmp_path / "c.png")
    fig = figs[-1]
    assert [a.get_title() for a in fig.axes[:2]] == ["e", "f"]
    assert any(t.get_text() == "×" for t in fig.axes[1].texts)  # x diverged on every seed
    for p in ("u.png", "l.png", "c.png"):
        assert png_size(tmp_path / p)[0] > 400
    with pytest.raises(ValueError):
        plot_comparison(df.head(0), tmp_path / "z.png")


def test_curves_start_at_round_0_with_eval_initial(tmp_path, mr, monkeypatch):
    from fedbench.analysis.plots import plot_accuracy_vs_uplink, plot_train_loss

    figs = _captured(monkeypatch)
    df = mr.frame(mr.run_rows([0.3, 0.5], algorithm="fedavg", seed=0, initial=0.1)
                  + mr.run_rows([0.4, 0.6], algorithm="fedavg", seed=1, initial=0.2))
    plot_accuracy(df, tmp_path / "a.png", title="e")
    line = figs[-1].axes[0].lines[0]
    assert line.get_xdata().tolist() == [0.0, 1.0, 2.0]
    assert line.get_ydata().tolist() == pytest.approx([15.0, 35.0, 55.0])  # θ⁰: mean of 10 % and 20 %
    plot_accuracy_vs_uplink(df, tmp_path / "u.png")
    assert figs[-1].axes[0].lines[0].get_xdata().tolist() == [0.0, 10.0, 20.0]  # nothing sent before round 1
    plot_train_loss(df, tmp_path / "l.png")
    assert figs[-1].axes[0].lines[0].get_ydata().tolist()[0] == 2.0


def _no_accuracy_rows(mr):
    rows = []
    for algorithm in ("theta_all", "theta_last"):
        rows += mr.run_rows([float("nan")] * 3, algorithm=algorithm)
    return rows


def test_an_experiment_without_accuracy_says_so_instead_of_no_run_finished(tmp_path, mr, monkeypatch):
    figs = _captured(monkeypatch)
    plot_accuracy(mr.frame(_no_accuracy_rows(mr)), tmp_path / "a.png", title="local_update_quick")
    texts = " ".join(t.get_text() for ax in figs[-1].axes for t in ax.texts)
    assert "No test accuracy metric" in texts and "no run finished" not in texts
    # every run finished: the comparison says "no accuracy metric", not "× every seed diverged"
    from fedbench.analysis.plots import plot_comparison

    plot_comparison(mr.frame(_no_accuracy_rows(mr)), tmp_path / "c.png")
    ax = figs[-1].axes[0]
    assert "no accuracy metric" in " ".join(t.get_text() for t in ax.texts)
    assert not any(t.get_text() == "×" for t in ax.texts)


def test_an_accuracy_axis_is_percent_within_0_and_100(tmp_path, mr, monkeypatch):
    figs = _captured(monkeypatch)
    rows = mr.run_rows([0.9, 0.99, 1.0], algorithm="fedavg") + mr.run_rows([0.95, 1.0, 1.0], algorithm="fedprox")
    plot_accuracy(mr.frame(rows), tmp_path / "a.png", title="e")
    ax = figs[-1].axes[0]
    lo, hi = ax.get_ylim()
    assert ax.get_ylabel() == "test accuracy (%)" and 80 < lo and hi <= 100.0


def test_the_legend_lists_what_is_drawn(tmp_path, mr, monkeypatch):
    figs = _captured(monkeypatch)
    rows = mr.run_rows([0.3, 0.5], algorithm="fedavg") + mr.run_rows([0.2, 0.3], algorithm="gone", diverge_at=2)
    plot_accuracy(mr.frame(rows), tmp_path / "a.png", title="e")
    names = [t.get_text() for t in figs[-1].legends[0].get_texts()]
    assert names == ["fedavg"]  # "gone" diverged on every seed: no curve, no legend entry (the note names it)


def test_one_colour_per_algorithm_across_figures(tmp_path, mr, monkeypatch):
    from fedbench.analysis.style import algorithm_colors

    figs = _captured(monkeypatch)
    a = mr.run_rows([0.3, 0.5], algorithm="mb_sgd") + mr.run_rows([0.3, 0.4], algorithm="fedac")
    b = mr.run_rows([0.3, 0.5], algorithm="fedavg") + mr.run_rows([0.3, 0.4], algorithm="mb_sgd")
    plot_accuracy(mr.frame(a), tmp_path / "a.png")
    plot_accuracy(mr.frame(b), tmp_path / "b.png")
    colours = [{ln.get_color() for ln in fig.axes[0].lines} for fig in figs]
    want = algorithm_colors(["mb_sgd"])["mb_sgd"]
    assert all(want in c for c in colours)


def test_a_one_seed_title_says_one_seed_and_fits(tmp_path, mr, monkeypatch):
    figs = _captured(monkeypatch)
    plot_accuracy(mr.frame(mr.run_rows([0.3, 0.5], algorithm="fedavg")), tmp_path / "a.png",
                  title="a_rather_long_experiment_name_for_a_quick_file")
    fig = figs[-1]
    title = fig._suptitle
    assert "one seed" in title.get_text() and "over seeds" not in title.get_text()
    fig.canvas.draw()
    box = title.get_window_extent()
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1


def test_the_diverged_note_sits_under_the_x_label(tmp_path, mr, monkeypatch):
    figs = _captured(monkeypatch)
    plot_accuracy(mr.frame(_diverging_rows(mr)), tmp_path / "a.png", targets=0.5, title="e")
    fig = figs[0]
    ax = fig.axes[0]
    fig.canvas.draw()
    note = next(t for t in ax.texts if t.get_text().startswith("diverged:"))
    assert note.get_window_extent().y1 <= ax.xaxis.label.get_window_extent().y0 + 0.5
