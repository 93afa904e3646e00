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
