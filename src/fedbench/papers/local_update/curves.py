"""LocalUpdate's neural-network figures (Figs. 6/11, 12, 13): accuracy and training loss against
the round over the paper's swept cells; the package docstring (:mod:`fedbench.papers.local_update`,
item 4) says which cells each draws."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from fedbench.analysis.paper_figures import figure_grid, save_figure
from fedbench.papers.local_update.theory import CELL_KEYS as _KEYS

ACCURACY, GAMMA_LOSS = "local_update_accuracy", "local_update_gamma_loss"
#: The paper's symbols of the swept axes (legends).
_SYMBOLS = {"local.lr": "γ", "server_lr": "η", "alpha": "α", "momentum": "β"}


def _swept_nn(cells: Sequence[Mapping]) -> list[dict]:
    keep = ("experiment", "dataset", "partition", "algorithm", "seed", "algorithm_name", "hparams", "sweep")
    return [{**{k: c[k] for k in keep}, "lr": c["local"]["lr"], "rounds": c["rounds"]}
            for c in cells if c.get("sweep") is not None and (c.get("model") or {}).get("name") != "quadratic"]


def _over(cell: Mapping) -> tuple[str, ...]:
    sel = cell["sweep"].get("select") or {}
    over = sel.get("over")
    return tuple(over) if over else tuple(cell["sweep"]["grid"])


def _tuned(cell: Mapping) -> bool:
    """Whether a swept cell's group is selected over an axis other than γ (``local.lr``): Figs. 6/11
    (γ and η) and 13 (η per γ); Fig. 12's γ sweep at fixed η is drawn in full, without a selection."""
    return bool(set(_over(cell)) - {"local.lr"})


def _rows_of(metrics: pl.DataFrame, cells: Sequence[Mapping]) -> pl.DataFrame:
    key = pl.DataFrame([{k: c[k] for k in _KEYS} for c in cells],
                       schema={"experiment": pl.String, "dataset": pl.String, "partition": pl.String,
                               "algorithm": pl.String, "seed": pl.Int64})
    return metrics.join(key.unique(), on=list(_KEYS), how="inner")


def _chosen(metrics: pl.DataFrame, cells: Sequence[Mapping]) -> list[Mapping]:
    from fedbench.analysis import sweeps

    return sweeps.selected_cells(sweeps.select(metrics, cells), cells)


def _draw(ax, rows: pl.DataFrame, metric: str, label: str, color, scale: float = 1.0) -> bool:
    """One line: the mean over seeds of ``metric`` per round; a diverged run is marked ✕ at the round
    it diverged and not drawn. Returns True when it was drawn."""
    diverged = rows.filter(pl.col("status") == "diverged")
    if diverged.height:
        ax.plot(diverged["round"].to_list(), [0.02] * diverged.height, marker="x", color=color, ms=7, mew=2,
                ls="none", transform=ax.get_xaxis_transform(), label=f"{label} (diverged)")
        return False
    g = rows.group_by("round").agg(pl.col(metric).mean()).sort("round")
    ax.plot(g["round"].to_list(), [v * scale for v in g[metric].to_list()], color=color, lw=1.3, label=label)
    return True


def plot_curves(name: str, metrics: pl.DataFrame, cells: Sequence[Mapping], path: str | os.PathLike,
                dpi: int = 110) -> Path:
    """Fig. 6/11 (``local_update_accuracy``: test accuracy vs round at each algorithm's selected
    (γ, η)) or Figs. 12/13 (``local_update_gamma_loss``: train loss vs round per γ, at fixed η or the
    η selected per γ). One panel per (experiment, dataset)."""
    from fedbench.analysis.plots import _palette

    if name not in (ACCURACY, GAMMA_LOSS):
        raise KeyError(f"{name!r} is not a curve figure of local_update")
    cells = list(cells)
    tuned_cells = [c for c in cells if _tuned(c)]
    chosen_names = ({tuple(c[k] for k in _KEYS) for c in _chosen(metrics, tuned_cells)} if tuned_cells else set())
    panels = list(dict.fromkeys((c["experiment"], c["dataset"]) for c in cells))
    fig, axes = figure_grid(len(panels), min(len(panels), 3), 4.2, 3.3)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    for ax, (exp, ds) in zip(axes.ravel(), panels):
        mine = [c for c in cells if c["experiment"] == exp and c["dataset"] == ds]
        if name == ACCURACY:
            keep = [c for c in mine if tuple(c[k] for k in _KEYS) in chosen_names]
            labels = list(dict.fromkeys(c["sweep"]["label"] for c in mine))
            palette = _palette(labels)
            for lab in labels:
                part = [c for c in keep if c["sweep"]["label"] == lab]
                if not part:
                    ax.plot([], [], "x", color=palette[lab], label=f"{lab}: every point diverged")
                    continue
                pt = part[0]["sweep"]["point"]
                desc = ", ".join(f"{_SYMBOLS.get(a, a)} = {v:g}" for a, v in pt.items() if isinstance(v, (int, float)))
                _draw(ax, _rows_of(metrics, part), "test_accuracy", f"{lab} ({desc})", palette[lab], 100.0)
            ax.set_ylabel("test accuracy (%)")
        else:
            tuned = any(_tuned(c) for c in mine)
            keep = [c for c in mine if tuple(c[k] for k in _KEYS) in chosen_names] if tuned else mine
            gammas = sorted({float(c["lr"]) for c in mine})
            palette = _palette([f"{g:g}" for g in gammas])
            for lab in dict.fromkeys(c["sweep"]["label"] for c in mine):
                for g in gammas:
                    part = [c for c in keep if c["sweep"]["label"] == lab and float(c["lr"]) == g]
                    tag = f"γ = {g:g}" + (f" ({lab})" if len({c['sweep']['label'] for c in mine}) > 1 else "")
                    if not part:
                        ax.plot([], [], "x", color=palette[f"{g:g}"], label=f"{tag}: every η diverged")
                        continue
                    eta = part[0]["hparams"].get("server_lr")
                    _draw(ax, _rows_of(metrics, part), "train_loss",
                          tag + (f", η = {eta:g}" if eta is not None else ""), palette[f"{g:g}"])
            ax.set_ylabel("training loss")
            ax.set_yscale("log")
            ax.set_title(f"{ds}: {'η tuned per γ (Fig. 13)' if tuned else 'fixed η (Fig. 12)'}\n{exp}", fontsize=8)
        if name == ACCURACY:
            ax.set_title(f"{ds}\n{exp}", fontsize=8)
        ax.set_xlabel("round")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5)
    fig.suptitle("Figs. 6/11: test accuracy at tuned (γ, η)" if name == ACCURACY
                 else "Figs. 12/13: training loss per client learning rate γ", fontsize=10)
    return save_figure(fig, path, dpi)
