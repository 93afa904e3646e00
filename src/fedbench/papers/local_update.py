"""LocalUpdate: Zachary Charles, Jakub Konečný, "Convergence and Accuracy Trade-Offs in Federated
Learning and Meta-Learning", AISTATS 2021 (§4–§5, Appendices D–F: Figures 1–13).

Registry key ``local_update`` (``paper: local_update`` in an experiment file). Three kinds of output:

1. **(ρ, Δ) Pareto frontiers** (Figs. 1–5, 7–10), pure theory (:mod:`fedbench.theory`): x-axis the
   server's linear rate ρ(κ) of Table 2, y-axis the suboptimality Δ of eq. (17) (Lemma-5 form for the
   simulated frontiers, Appendix D.1), μ = 1, K on a log grid of :data:`K_POINTS` integers over
   [1, 10⁶]. Analytic: Figs. 1 (γ = 0.01, K varied; K = 100, γ varied up to 1/L; L ∈ {5, 50}), 2
   (γ = 1/(2L), three server momenta, one panel per L ∈ :data:`FIG2_L`: the paper leaves L open),
   3 (L = 10, γ = 1/(2(L + α)), α ∈ {0, 0.5, 1, 5}), 4 (FedAvg Θ_{1:K} at γ = 10⁻³ against the
   "MAML" Θ_K at γ = 1/(2LK), one panel per server momentum), 9 (Θ_K at γ = 10⁻⁷, only
   γ < 1/(KL + α), α ∈ :data:`FIG9_ALPHAS`: the paper leaves α open; at γ = 10⁻⁷ only α of order
   1/γ restricts K, and the curves still coincide, ending at κ ≈ κ₀e^{−(L−μ)/L} for every α).
   Simulated (one random A = β₁BᵀB + β₂I per K point, Appendix D.1,
   :func:`fedbench.theory.closed_forms.random_spectrum`; d = 5: one thin line per seed of
   :data:`SIM_SEEDS`, d = 100: one seed; against the analytic Θ_{1:K} curve): Figs. 5
   (L = 10), 7 (L ∈ {2, 5, 10, 100}), 8 (one panel per server momentum), 10 (α ∈ {0, 0.5, 1, 5, 10}:
   the caption's and the panels' values). Every figure overlays the closed-form reference points of
   ``reference/local_update_frontier_points.csv`` (black open circles) and marks K → ∞ limits.
   Declared whenever the paper has cells (they read no training output).
2. **Heavy-ball symmetry** (§2.10(e) of our notes; the paper's conjecture after Fig. 2): the heavy-ball
   frontier of Θ_{1:K}, α = 0, against its reflection in ρ = Δ, one panel per L, the largest gap in
   the panel title (0 to float precision: Δ(κ) = ρ_HB(κ₀/κ)).
3. **Analytic vs empirical** (table ``local_update_theory``), over the cells that train the federated
   quadratic (model ``quadratic``): per cell the theory's fixed point x*(α, γ, Θ) (Lemma 11) and the
   linear rate of the server's recursion on the surrogate at the cell's (η, β) (the spectral radius;
   Table 2's ρ(κ) is its value at the tuned (η, β)) beside the engine's: the final distance
   ‖x_T − x*‖_H = √(2(train_loss_T − f*)) (H = E[A_i]; the identity of
   :func:`fedbench.data.quadratic.global_optimum`) against ‖x*(α, γ, Θ) − x*‖_H, and the contraction
   rate of |train_loss_t − f(x*(α, γ, Θ))| (its tail maximum, fitted log-linearly where it lies
   between :data:`RATE_WINDOW` of its initial value and the float64 floor), with relative errors;
   and round by round the engine's train_loss_t − f* against f(x_t) − f(x*) along the server's
   recursion on the surrogate's exact gradient from x_0 = 0 (:func:`surrogate_losses`: Theorem 1 at
   every round, the sharpest of the checks: float precision whether or not the run has converged).
   The problem (A_i, c_i, p_i) is read from the prepared dataset (``resources/datasets/<id>-<digest>``, an
   input of the table). Each algorithm is mapped to its LocalUpdate member (Table 1, Appendix A):
   ``local_update`` as configured; ``fedavg`` Θ_{1:K}, η = γ; ``fedprox`` α = μ, η = γ; ``reptile``
   η = εγ; ``fedavgm`` heavy ball (Nesterov with ``nesterov: true``) with η = η_s γ(1 − dampening);
   ``maml`` Θ_{2K+1}, K = ``inner_steps`` (Theorem 2; ``inner_batches: shared``). Exact oracles only
   for deterministic cells (full participation, full-batch clients); stochastic cells get the fixed
   point in expectation (mean over seeds) and no rate. Server Adam has no linear rate ("—").
4. **Neural-network figures** (Figs. 6/11, 12, 13), from ``results/metrics.parquet`` and the sweep
   selection (:mod:`fedbench.analysis.sweeps`), for the paper's swept cells of other models:
   ``local_update_accuracy``: test accuracy vs round, one line per algorithm label at its selected
   (γ, η) (``select.over`` the two axes), one panel per (dataset, experiment) (Fig. 6 left: server
   momenta; right: α); ``local_update_gamma_loss``: train loss vs round, one line per γ, one panel
   per (experiment, dataset): at fixed η (Fig. 12, cells without a selection over η) or at the η
   selected per γ (Fig. 13, ``select.over: [hparams.server_lr]``). Diverged runs are not drawn as
   curves: an ✕ marks the round they diverged, and the legend says "diverged".

Claims (:func:`claims`, decided by the scorecard, :mod:`fedbench.analysis.scorecard`): the frontier
points of Figs. 1–4 and the heavy-ball symmetry (closed forms, no cell), and from the
``local_update_theory`` table: the engine's fixed point is the surrogate minimizer x*(α, γ, Θ), not
x* (Lemma 11), and its loss follows the surrogate recursion round by round (Theorem 1).

Headless (Agg canvas, no pyplot).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import polars as pl

from fedbench.analysis.folder import read_metrics
from fedbench.analysis.paper_figures import figure_grid, save_figure
from fedbench.files import atomic_write
from fedbench.papers.base import REFERENCE_DIR, PaperFigure, Table
from fedbench.theory import closed_forms as cf
from fedbench.theory import limits, rates
from fedbench.theory import quadratic as tq

__all__ = ["claims",
           "KEY", "NAME", "REFERENCE", "FRONTIER_FIGURES", "tables", "figures", "write_table", "write_figure",
           "k_grid", "frontier_panels", "plot_frontier", "symmetry_gap", "plot_symmetry", "reference_frame",
           "reference_point", "member", "server_rate", "empirical_rate", "theory_frame", "markdown_theory",
           "plot_curves"]

#: The registry key: the value of ``paper`` in the experiment files.
KEY = "local_update"
#: How the paper is named in reports.
NAME = "LocalUpdate (Charles & Konečný, AISTATS 2021)"
#: The closed-form reference points of Figs. 1–5 (derived from the paper's formulas; README.md there).
REFERENCE = REFERENCE_DIR / "local_update_frontier_points.csv"

MU = 1.0
#: Points of the K grid over [1, 10⁶] (log-spaced integers, duplicates removed).
K_POINTS = 240
#: Seeds of the d = 5 noise band of the simulated frontiers (d = 100 uses the first).
SIM_SEEDS = tuple(range(8))
#: L of Fig. 2's panels (the paper: "varying L", values unspecified) and of the symmetry check.
FIG2_L = (2.0, 10.0, 100.0)
#: α of Fig. 9 (unspecified in the paper): at γ = 10⁻⁷, γ < 1/(KL + α) admits K < (1/γ − α)/L, i.e.
#: K up to 10⁶, 5·10⁵, 10⁵ and 10⁴ for these α (an α of order 1/γ is needed to cut the K range at all).
FIG9_ALPHAS = (0.0, 5e6, 9e6, 9.9e6)
#: The window of the empirical rate: from this fraction of the initial residual down to the float floor.
RATE_WINDOW = 1e-2
SERVERS = rates.SERVER_OPTIMIZERS
SERVER_NAMES = {"gd": "no momentum", "nesterov": "Nesterov", "heavy_ball": "heavy ball"}

THEORY = "local_update_theory"
SYMMETRY = "local_update_heavy_ball_symmetry"
ACCURACY, GAMMA_LOSS = "local_update_accuracy", "local_update_gamma_loss"
#: The frontier figures: name -> (label, caption).
FRONTIER_FIGURES = {
    "local_update_fig1": ("Fig. 1: FedAvg frontier, K or γ varied",
                          "Fig. 1 (analytic): (ρ, Δ) of Θ_{1:K}, α = 0, server GD, μ = 1, L ∈ {5, 50}. Left: γ = 0.01, "
                          "K ∈ [1, 10⁶]; right: K = 100, γ ∈ (0, 1/L). Circles: closed-form reference points."),
    "local_update_fig2": ("Fig. 2: server momentum",
                          "Fig. 2 (analytic): Θ_{1:K}, γ = 1/(2L), K ∈ [1, 10⁶], no momentum / Nesterov / heavy ball, "
                          "one panel per L. Circles: reference points (L = 10 and the K → ∞ limits)."),
    "local_update_fig3": ("Fig. 3: proximal α (FedProx)",
                          "Fig. 3 (analytic): Θ_{1:K}, L = 10, γ = 1/(2(L + α)), α ∈ {0, 0.5, 1, 5}, server GD; the "
                          "α > 0 curves are shrinking pieces of the α = 0 curve. Circles: K → ∞ endpoints."),
    "local_update_fig4": ("Fig. 4: FedAvg vs MAML-type Θ_K",
                          "Fig. 4 (analytic): FedAvg Θ_{1:K} (γ = 10⁻³) against Θ_K with γ = 1/(2LK), L = 10, one "
                          "panel per server momentum. Circles: reference points (Θ_K's K → ∞ limit included)."),
    "local_update_fig5": ("Fig. 5: simulated Θ_K frontier",
                          "Fig. 5 (simulated, Appendix D.1): Θ_K, L = 10, γ = 10⁻³, α = 0, server GD, one random A per "
                          "K; d = 5: one thin line per seed (the noise band); d = 100: one seed; dashed: analytic "
                          "Θ_{1:K}. "
                          "Circles: the cusp (K = 255.4) and the paper-scale d = 100 points (approximate)."),
    "local_update_fig7": ("Fig. 7: simulated Θ_K, L varied",
                          "Fig. 7 (simulated): as Fig. 5 with L ∈ {2, 5, 10, 100}, one panel each."),
    "local_update_fig8": ("Fig. 8: simulated Θ_K, server momentum",
                          "Fig. 8 (simulated): as Fig. 5 (L = 10), one panel per server momentum."),
    "local_update_fig9": ("Fig. 9: analytic Θ_K, α varied",
                          "Fig. 9 (analytic): Θ_K, L = 10, γ = 10⁻⁷, server GD, K ∈ [1, 10⁶] with γ < 1/(KL + α) only; "
                          "α ∈ {0, 5e6, 9e6, 9.9e6} (unspecified in the paper; K < 10⁶, 5·10⁵, 10⁵, 10⁴). The "
                          "curves coincide and end at the same point, κ ≈ κ₀e^{−(L−μ)/L}: a larger α admits fewer "
                          "K, but each local step contracts κ more. Circles: the ends at the largest admissible K."),
    "local_update_fig10": ("Fig. 10: simulated Θ_K, α varied",
                           "Fig. 10 (simulated): as Fig. 5 with α ∈ {0, 0.5, 1, 5, 10} (caption and panel labels), "
                           "one panel each; dashed: the analytic Θ_{1:K} curve at the same α."),
}
_KEYS = ("experiment", "dataset", "partition", "algorithm", "seed")
#: The paper's symbols of the swept axes (legends).
_SYMBOLS = {"local.lr": "γ", "server_lr": "η", "alpha": "α", "momentum": "β"}


# ----------------------------------------------------------------------------------------------
# What the paper declares


def _quadratic(cells: Sequence[Mapping]) -> list[dict]:
    keep = ("experiment", "dataset", "partition", "algorithm", "seed", "algorithm_name", "hparams", "local",
            "sampling", "rounds", "model", "dataset_dir")
    return [{k: c[k] for k in keep} for c in cells if (c.get("model") or {}).get("name") == "quadratic"]


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


def tables(cells: Sequence[Mapping]) -> list[Table]:
    """The analytic-vs-empirical table over the paper's quadratic-problem cells (none without them)."""
    rows = _quadratic(cells)
    if not rows:
        return []
    inputs = [f"{d}/meta.json" for d in dict.fromkeys(r["dataset_dir"] for r in rows)]
    return [Table(THEORY, KEY, rows, REFERENCE, "LocalUpdate: analytic vs empirical fixed point and rate",
                  inputs=inputs)]


def figures(cells: Sequence[Mapping]) -> list[PaperFigure]:
    """The frontier and symmetry figures (whenever the paper has cells), and the neural-network
    figures over its swept cells: accuracy vs round where a group is selected over two axes (γ and η),
    train loss vs round per γ where ``local.lr`` is swept and not selected over."""
    if not cells:
        return []
    out = [PaperFigure(name, KEY, [], label, caption) for name, (label, caption) in FRONTIER_FIGURES.items()]
    out.append(PaperFigure(SYMMETRY, KEY, [], "Heavy-ball symmetry check",
                           "Heavy-ball frontier (Θ_{1:K}, α = 0, γ = 1/(2L), K ∈ [1, 10⁶]) and its reflection in "
                           "ρ = Δ, one panel per L: Δ(κ) = ρ_HB(κ₀/κ), so the curve is its own mirror image (the "
                           "paper's conjecture after Fig. 2). The titles give the largest distance between the "
                           "reflected points and the curve (linear interpolation on 4,000 K values) and the "
                           "largest absolute difference between Δ(κ) and ρ_HB(κ₀/κ) over the grid (float precision)."))
    nn = _swept_nn(cells)
    joint = [("local.lr" in _over(c) and len(_over(c)) >= 2) for c in nn]  # (γ, η) chosen together
    acc = [c for c, j in zip(nn, joint) if j]
    loss = [c for c, j in zip(nn, joint) if not j and "local.lr" in c["sweep"]["grid"]]
    if acc:
        out.append(PaperFigure(ACCURACY, KEY, acc, "Figs. 6/11: test accuracy vs round at tuned (γ, η)",
                               "Figs. 6/11: test accuracy against the round, each algorithm at the (γ, η) of its 9×9 "
                               "grid with the best mean test accuracy over the last 100 rounds (mean over seeds). "
                               "Diverged runs are marked ✕ at the round they diverged, never drawn."))
    if loss:
        out.append(PaperFigure(GAMMA_LOSS, KEY, loss, "Figs. 12/13: train loss vs round per γ",
                               "Figs. 12/13: training loss against the round for the client learning rates γ, at "
                               "fixed η (Fig. 12) or at the η selected per γ by the mean training loss of the last "
                               "100 rounds (Fig. 13). Diverged runs are marked ✕ at the round they diverged."))
    return out


def write_table(name: str, df: pl.DataFrame, reference: str | os.PathLike, cells: list[dict],
                md_path: str | os.PathLike, csv_path: str | os.PathLike,
                root: str | os.PathLike = ".") -> pl.DataFrame:
    """Write the analytic-vs-empirical table (Markdown for reading, CSV with every number).

    ``root``: the workflow's directory; each cell's problem is read from its prepared dataset there
    (its ``dataset_dir``, fedbench.layout).
    """
    if name != THEORY:
        raise KeyError(f"{name!r} is not a table of {KEY}")
    out = theory_frame(df, cells, _problems(cells, root))
    with atomic_write(md_path) as tmp:
        tmp.write_text("# LocalUpdate (Charles & Konečný, AISTATS 2021): analytic vs empirical fixed point "
                       "and rate on the federated quadratic\n\n" + markdown_theory(out), encoding="utf-8")
    with atomic_write(csv_path) as tmp:
        out.write_csv(tmp)
    return out


def write_figure(name: str, cells: list[dict], path: str | os.PathLike,
                 metrics: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
                 files: Sequence[str | os.PathLike] = ()) -> Path:
    """Write one of the figures (the frontier and symmetry figures read nothing)."""
    if name in FRONTIER_FIGURES:
        return plot_frontier(name, path, reference_frame(REFERENCE))
    if name == SYMMETRY:
        return plot_symmetry(path)
    if name in (ACCURACY, GAMMA_LOSS):
        return plot_curves(name, read_metrics(metrics), cells, path)
    raise KeyError(f"{name!r} is not a figure of {KEY}")


# ----------------------------------------------------------------------------------------------
# Frontiers


def k_grid(n: int = K_POINTS, top: float = 1e6) -> np.ndarray:
    """n log-spaced integers over [1, top], duplicates removed (float64, ascending)."""
    return np.unique(np.round(np.logspace(0, math.log10(top), n)))


def _curve(label, rho, delta, style="-", color=None, thin=False, marker_end=False, width=1.4):
    return {"label": label, "rho": np.asarray(rho, dtype=np.float64), "delta": np.asarray(delta, dtype=np.float64),
            "style": style, "color": color, "thin": thin, "end": marker_end, "width": width}


def _full(L, alpha, gamma, K, server="gd", mu=MU):
    kappa = cf.kappa_full(mu, L, alpha, gamma, K)
    return rates.frontier_point(L / mu, kappa, server)


def _simulated(L, alpha, gamma, K, d, seed, server="gd", mu=MU):
    """ρ, Δ of Θ_K on a fresh random spectrum per K point (a generator keyed by (seed, K index, d, L, α))."""
    rho, delta = np.empty(len(K)), np.empty(len(K))
    for j, k in enumerate(K):
        key = [int(seed), j, int(d), round(L * 1000), round(alpha * 1000)]
        lam = cf.random_spectrum(np.random.default_rng(np.random.SeedSequence(key)), d, mu, L)
        kappa, delta[j] = cf.last_spectrum_point(lam, alpha, gamma, k)
        with np.errstate(over="ignore"):
            rho[j] = rates.rate(kappa, server)
    return rho, delta


def _simulated_curves(L, alpha, server, gamma=1e-3, K=None):
    """Curves of a simulated panel: d = 5 (one thin line per seed: the noise band), d = 100 (one seed),
    and the analytic Θ_{1:K} curve at the same (L, α, γ, server)."""
    K = k_grid() if K is None else K
    out = [_curve("Θ_K simulated, d = 5 (one line per seed)" if i == 0 else None,
                  *_simulated(L, alpha, gamma, K, 5, s, server), color="C1", thin=True)
           for i, s in enumerate(SIM_SEEDS)]
    out.append(_curve("Θ_K simulated, d = 100", *_simulated(L, alpha, gamma, K, 100, SIM_SEEDS[0], server),
                      color="C3"))
    out.append(_curve("Θ_{1:K} analytic", *_full(L, alpha, gamma, K, server), style="--", color="C0"))
    return out


def frontier_panels(name: str) -> list[dict]:
    """The panels of frontier figure ``name``: dicts with ``title``, ``key`` (the reference CSV's
    ``panel``, None for every row of the figure) and ``curves`` (label, ρ, Δ arrays, style)."""
    K = k_grid()
    fig = name.removeprefix("local_update_")
    if fig == "fig1":
        left, right = [], []
        for i, L in enumerate((5.0, 50.0)):
            left.append(_curve(f"L = {L:g}", *_full(L, 0.0, 0.01, K), color=f"C{i}"))
            g = np.concatenate([np.logspace(-5, -0.05, 150), 1 - np.logspace(-1, -9, 60)]) / L
            right.append(_curve(f"L = {L:g}", *_full(L, 0.0, g, 100), color=f"C{i}"))
        return [{"title": "γ = 0.01, K ∈ [1, 10⁶]", "key": "K", "curves": left},
                {"title": "K = 100, γ ∈ (0, 1/L)", "key": "gamma", "curves": right}]
    if fig == "fig2":
        return [{"title": f"L = {L:g}, γ = 1/(2L)", "key": f"L={L:g}",
                 "curves": [_curve(SERVER_NAMES[s], *_full(L, 0.0, 1 / (2 * L), K, s), color=f"C{i}")
                            for i, s in enumerate(SERVERS)]} for L in FIG2_L]
    if fig == "fig3":
        return [{"title": "L = 10, γ = 1/(2(L + α))", "key": None,
                 "curves": [_curve(f"α = {a:g}", *_full(10.0, a, 1 / (2 * (10 + a)), K), color=f"C{i}")
                            for i, a in enumerate((0.0, 0.5, 1.0, 5.0))]}]
    if fig == "fig4":
        panels = []
        for s in SERVERS:
            kappa_last = cf.kappa_last(MU, 10.0, 0.0, 1 / (20 * K), K)
            panels.append({"title": f"L = 10, {SERVER_NAMES[s]}", "key": s, "curves": [
                _curve("FedAvg Θ_{1:K}, γ = 10⁻³", *_full(10.0, 0.0, 1e-3, K, s), color="C0"),
                _curve("MAML-type Θ_K, γ = 1/(2LK)", *rates.frontier_point(10.0, kappa_last, s), color="C3",
                       style="--")]})
        return panels
    if fig == "fig9":
        curves = []
        for i, a in enumerate(FIG9_ALPHAS):
            x = (1 - 1e-7 * a) / (1e-7 * 10.0)  # γ < 1/(KL + α) ⇔ K < (1 − γα)/(γL)
            k_max = max(k for k in (math.floor(x) - 1, math.floor(x), math.floor(x) + 1) if 1e-7 * (k * 10.0 + a) < 1)
            ok = np.unique(np.append(K[K < k_max], k_max))
            kappa = cf.kappa_last(MU, 10.0, a, 1e-7, ok)
            curves.append(_curve(f"α = {a:g}", *rates.frontier_point(10.0, kappa, "gd"), color=f"C{i}",
                                 marker_end=True, width=7.0 - 2.0 * i))  # the paper's widths: they overlap
        return [{"title": "Θ_K, L = 10, γ = 10⁻⁷ (squares: the largest admissible K)", "key": None,
                 "curves": curves}]
    if fig == "fig5":
        return [{"title": "Θ_K, L = 10, γ = 10⁻³, α = 0", "key": None, "curves": _simulated_curves(10.0, 0.0, "gd")}]
    if fig == "fig7":
        return [{"title": f"L = {L:g}", "key": f"L={L:g}", "curves": _simulated_curves(L, 0.0, "gd")}
                for L in (2.0, 5.0, 10.0, 100.0)]
    if fig == "fig8":
        return [{"title": f"L = 10, {SERVER_NAMES[s]}", "key": s, "curves": _simulated_curves(10.0, 0.0, s)}
                for s in SERVERS]
    if fig == "fig10":
        return [{"title": f"L = 10, α = {a:g}", "key": f"alpha={a:g}", "curves": _simulated_curves(10.0, a, "gd")}
                for a in (0.0, 0.5, 1.0, 5.0, 10.0)]
    raise KeyError(f"{name!r} is not a frontier figure of {KEY}")


def reference_frame(path: str | os.PathLike = REFERENCE) -> pl.DataFrame:
    """The reference points (``reference/local_update_frontier_points.csv``; README.md there)."""
    return pl.read_csv(path, schema_overrides={"K": pl.String, "gamma": pl.Float64, "kappa": pl.Float64,
                                               "rho": pl.Float64, "delta": pl.Float64, "alpha": pl.Float64,
                                               "L": pl.Float64, "d": pl.Int64, "panel": pl.String})


def reference_point(row: Mapping) -> tuple[float | None, float | None, float | None]:
    """(κ, ρ, Δ) of one reference row recomputed from :mod:`fedbench.theory` (the row's family,
    L, α, γ, K, server; μ = 1); None where the family has no such value (simulated rows: one random
    draw, recomputed by the tests on a draw of their own).

    Families: ``full`` (Θ_{1:K}, eq. (11); K = inf: the limit κ₀(μ+α)/(L+α)), ``last`` (Θ_K, eq. (13)),
    ``full_gamma_limit``
    (Θ_{1:K} as γ → 1/(L + α)), ``last_scaled`` (Θ_K with γ = 1/(2LK); K = inf: κ₀e^{−(L−μ)/(2L)}),
    ``last_cusp`` (the cusp of the simulated Θ_K frontier in the dense-spectrum limit: K_cusp of
    :func:`fedbench.theory.limits.last_cusp_steps`, where ψ(L) = ψ(μ), so κ = ψ(λ*)/ψ(μ) with
    λ* = (1 − γα)/(Kγ) the interior maximum of ψ, and Δ = (√κ₀ − 1)/(√κ₀ + 1)).
    """
    L, alpha, server, fam = float(row["L"]), float(row["alpha"]), row["server"], row["family"]
    K = math.inf if row["K"] == "inf" else float(row["K"])
    if fam == "full":
        kappa = (limits.kappa_full_limit_steps(MU, L, alpha) if math.isinf(K)
                 else cf.kappa_full(MU, L, alpha, row["gamma"], K))
    elif fam == "last":
        kappa = cf.kappa_last(MU, L, alpha, row["gamma"], K)
    elif fam == "full_gamma_limit":
        kappa = limits.kappa_full_limit_step_size(MU, L, alpha, K)
    elif fam == "last_scaled":
        kappa = (limits.kappa_last_limit_scaled_step(MU, L, 0.5) if math.isinf(K)
                 else cf.kappa_last(MU, L, alpha, 1 / (2 * L * K), K))
    elif fam == "last_cusp":
        gamma = float(row["gamma"])
        k = float(limits.last_cusp_steps(MU, L, alpha, gamma))
        lam_star = (1 - gamma * alpha) / (k * gamma)  # ψ'(λ*) = 0: the interior maximum of ψ
        kappa = float(cf.psi(lam_star, alpha, gamma, k) / cf.psi(MU, alpha, gamma, k))
        return kappa, float(rates.rate(kappa, server)), float(rates.suboptimality(L / MU, 1.0))
    else:
        return None, None, None
    kappa = float(kappa)
    return kappa, float(rates.rate(kappa, server)), float(rates.suboptimality(L / MU, kappa))


def _reference_xy(ref: pl.DataFrame, fig: str, panel: str | None) -> list[tuple[float, float, str]]:
    part = ref.filter(pl.col("figure") == fig)
    if panel is not None:
        part = part.filter(pl.col("panel") == panel)
    pts = []
    for r in part.iter_rows(named=True):
        rho = r["rho"]
        if rho is None and r["kappa"] is not None:
            rho = float(rates.rate(r["kappa"], r["server"]))  # Table 2 at the printed κ
        if rho is not None and r["delta"] is not None:
            pts.append((float(rho), float(r["delta"]), r["K"]))
    return pts


def plot_frontier(name: str, path: str | os.PathLike, ref: pl.DataFrame | None = None, dpi: int = 110) -> Path:
    """Frontier figure ``name`` (:data:`FRONTIER_FIGURES`): one panel per :func:`frontier_panels` entry,
    ρ on x, Δ on y, both in [0, 1]; the reference points of the figure as black open circles."""
    panels = frontier_panels(name)
    ref = reference_frame(REFERENCE) if ref is None else ref
    fig_key = name.removeprefix("local_update_")
    fig, axes = figure_grid(len(panels), min(len(panels), 3), 3.6, 3.3)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.ravel(), panels):
        for c in panel["curves"]:
            ax.plot(c["rho"], c["delta"], c["style"], color=c["color"], lw=0.6 if c["thin"] else c["width"],
                    alpha=0.45 if c["thin"] else 1.0, label=c["label"])
            if c["end"] and len(c["rho"]):
                ax.plot(c["rho"][-1], c["delta"][-1], "s", color=c["color"], ms=4)
        pts = _reference_xy(ref, fig_key, panel["key"])
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", mfc="none", mec="black", ms=6, mew=1.1,
                    label="reference (closed form)", zorder=5)
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("convergence rate ρ")
        ax.set_ylabel("suboptimality Δ")
        ax.set_title(panel["title"], fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, loc="best")
    fig.suptitle(f"Charles & Konečný (AISTATS 2021) {FRONTIER_FIGURES[name][0]}", fontsize=10)
    return save_figure(fig, path, dpi)


def symmetry_gap(L: float, K=None) -> float:
    """The largest distance between the reflection (Δ, ρ) of a point of the heavy-ball frontier of
    Θ_{1:K} (α = 0, γ = 1/(2L), μ = 1, K over the grid ``K``, default 4,000 points) and the frontier
    itself (Δ as a function of ρ, interpolated linearly): 0 up to the interpolation error when the
    curve is its own mirror image in ρ = Δ (Δ(κ) = ρ_HB(κ₀/κ) and κ spans [1, κ₀])."""
    K = k_grid(4000) if K is None else K
    rho, delta = _full(L, 0.0, 1 / (2 * L), K, "heavy_ball")
    order = np.argsort(rho)
    return float(np.max(np.abs(np.interp(delta, rho[order], delta[order]) - rho)))


def plot_symmetry(path: str | os.PathLike, dpi: int = 110) -> Path:
    """The heavy-ball symmetry figure: per L of :data:`FIG2_L`, the frontier, its mirror image and ρ = Δ."""
    K = k_grid()
    fig, axes = figure_grid(len(FIG2_L), len(FIG2_L), 3.6, 3.4)
    for ax, L in zip(axes.ravel(), FIG2_L):
        rho, delta = _full(L, 0.0, 1 / (2 * L), K, "heavy_ball")
        ax.plot(rho, delta, "-", color="C2", lw=2.2, label="heavy-ball frontier (ρ, Δ)")
        ax.plot(delta, rho, "--", color="black", lw=1.0, label="reflection (Δ, ρ)")
        ax.plot([0, 1], [0, 1], ":", color="0.5", lw=0.8, label="ρ = Δ")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("convergence rate ρ")
        ax.set_ylabel("suboptimality Δ")
        kappa = cf.kappa_full(MU, L, 0.0, 1 / (2 * L), K)
        identity = np.max(np.abs(rates.rate(np.maximum(L / kappa, 1.0), "heavy_ball") - rates.suboptimality(L, kappa)))
        ax.set_title(f"L = {L:g}: mirror gap {symmetry_gap(L):.0e} (interpolated),\n"
                     f"|Δ(κ) − ρ_HB(κ₀/κ)| ≤ {identity:.0e}", fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Heavy-ball frontier is symmetric about ρ = Δ (Δ(κ) = ρ_HB(κ₀/κ))", fontsize=10)
    return save_figure(fig, path, dpi)


# ----------------------------------------------------------------------------------------------
# Analytic vs empirical on the federated quadratic


def member(cell: Mapping) -> dict:
    """The LocalUpdate member a cell trains (Table 1, Appendix A, Theorem 2): ``theta`` (the Θ vector),
    ``alpha``, ``gamma``, ``server`` (gd / heavy_ball / nesterov / adam), ``eta``, ``beta`` and a
    ``label`` such as "Θ_{1:10}, α = 0, GD η = 0.01".

    Raises:
        ValueError: an algorithm outside the family, local work given in epochs, a decaying γ or
            weight decay (the theory's problem has neither).
    """
    name, hp, local = cell["algorithm_name"], cell.get("hparams") or {}, cell["local"]
    gamma, K = float(local["lr"]), local.get("steps")
    if K is None:
        raise ValueError(f"{cell['algorithm']}: the analytic check needs local.steps (not epochs)")
    if float(local.get("lr_decay", 1.0)) != 1.0 or float(local.get("weight_decay", 0.0)) != 0.0:
        raise ValueError(f"{cell['algorithm']}: the analytic check needs a constant γ and no weight decay "
                         "(local.lr_decay: 1, local.weight_decay: 0)")
    K = int(K)
    theta, alpha, server, beta = tq.theta_full(K), 0.0, "gd", 0.0
    if name == "local_update":
        t = hp.get("theta") or "all"
        theta = {"all": tq.theta_full(K), "last": tq.theta_last(K), "first": np.ones(1)}.get(t) if isinstance(
            t, str) else np.asarray(t, dtype=np.float64)
        alpha, server, eta = float(hp.get("alpha", 0.0)), hp.get("server_opt", "gd"), float(hp["server_lr"])
        beta = float(hp.get("momentum", 0.0)) if server in ("heavy_ball", "nesterov") else 0.0
    elif name == "fedavg":
        eta = gamma
    elif name == "fedprox":
        alpha, eta = float(hp["mu"]), gamma
    elif name == "reptile":
        eta = float(hp["epsilon"]) * gamma
    elif name == "fedavgm":
        server = "nesterov" if hp.get("nesterov") else "heavy_ball"
        if server == "nesterov" and float(hp.get("dampening", 0.0)):
            raise ValueError(f"{cell['algorithm']}: FedAvgM's Nesterov step with dampening is not a LocalUpdate "
                             "server (the dampening scales the buffer only)")
        eta, beta = float(hp["server_lr"]) * gamma * (1 - float(hp.get("dampening", 0.0))), float(hp["momentum"])
    elif name == "maml":
        inner = int(hp["inner_steps"])
        theta = tq.theta_last(2 * inner + 1)
        server, eta = hp.get("server_opt", "gd"), float(hp["server_lr"])
        beta = float(hp.get("momentum", 0.0)) if server in ("heavy_ball", "nesterov") else 0.0
    else:
        raise ValueError(f"{cell['algorithm']}: algorithm {name!r} is not a LocalUpdate member on quadratics")
    theta = tq.check_theta(theta)
    k = len(theta)
    if np.all(theta == 1):
        tname = f"Θ_{{1:{k}}}"
    elif np.all(theta[:-1] == 0) and theta[-1] == 1:
        tname = f"Θ_{k}"
    else:
        tname = "Θ = (" + ", ".join(f"{v:g}" for v in theta) + ")"
    sname = {"gd": "GD", "heavy_ball": "heavy ball", "nesterov": "Nesterov", "adam": "Adam"}[server]
    label = f"{tname}, γ = {gamma:g}, α = {alpha:g}, {sname} η = {eta:g}" + (f" β = {beta:g}" if beta else "")
    return {"theta": theta, "alpha": alpha, "gamma": gamma, "server": server, "eta": eta, "beta": beta,
            "label": label}


def surrogate_losses(A, c, p, m: Mapping, rounds: int, x0=None) -> np.ndarray:
    """f(x_t), t = 0..rounds, along the deterministic LocalUpdate iterates of member ``m``
    (:func:`member`): ServerOpt on the surrogate's exact gradient q(x) = H̃x − E[Q_i A_i c_i]
    (Theorem 1), in the engine's forms (gd: x ← x − ηq; heavy_ball: v ← βv + q, x ← x − ηv;
    nesterov: v ← βv + q, x ← x − η(q + βv)); x_0 = ``x0`` (default 0, the model's ``init: zeros``).
    f is :func:`fedbench.theory.quadratic.global_loss` (the engine's train_loss up to the problem's
    constant). A: (n, d, d); c: (n, d); p: (n,). Returns (rounds + 1,). Raises ValueError for adam."""
    if m["server"] not in ("gd", "heavy_ball", "nesterov"):
        raise ValueError(f"surrogate_losses: no closed recursion for server {m['server']!r}")
    QA = tq.distorted_hessian(A, m["alpha"], m["gamma"], m["theta"])
    Ht, b = np.einsum("i,ijk->jk", p, QA), np.einsum("i,ijk,ik->j", p, QA, c)
    x = np.zeros(A.shape[1]) if x0 is None else np.asarray(x0, dtype=np.float64).copy()
    v = np.zeros_like(x)
    out = [tq.global_loss(x, A, c, p)]
    for _ in range(int(rounds)):
        q = Ht @ x - b
        if m["server"] == "gd":
            x = x - m["eta"] * q
        else:
            v = m["beta"] * v + q
            x = x - m["eta"] * (v if m["server"] == "heavy_ball" else q + m["beta"] * v)
        out.append(tq.global_loss(x, A, c, p))
    return np.asarray(out)


def server_rate(eigenvalues, server: str, eta: float, beta: float = 0.0) -> float | None:
    """The linear rate of ServerOpt on a quadratic with Hessian eigenvalues ``eigenvalues``: the
    spectral radius of its iteration (GD: max |1 − ηλ|; heavy ball x⁺ = x − ηq + β(x − x⁻) and
    Nesterov y = x + β(x − x⁻), x⁺ = y − ηq(y): the largest root modulus of z² − (1 + β − ηλ)z + β,
    resp. z² − (1 + β)(1 − ηλ)z + β(1 − ηλ), over λ). At the tuned (η, β) of
    :func:`fedbench.theory.rates.tuned_server_parameters` it is Table 2's ρ. None for ``adam``."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    if server == "gd":
        return float(np.max(np.abs(1 - eta * lam)))
    if server == "adam":
        return None
    if server == "heavy_ball":
        b, c = 1 + beta - eta * lam, np.full_like(lam, beta)
    elif server == "nesterov":
        b, c = (1 + beta) * (1 - eta * lam), beta * (1 - eta * lam)
    else:
        raise ValueError(f"unknown server optimizer {server!r}")
    disc = (b * b - 4 * c).astype(complex)
    roots = np.abs(np.stack([(b + np.sqrt(disc)) / 2, (b - np.sqrt(disc)) / 2]))
    return float(roots.max())


def empirical_rate(losses: Sequence[float], limit: float, window: float = RATE_WINDOW,
                   rounds: Sequence[int] | None = None) -> tuple[float | None, int]:
    """The contraction rate per round of r_t = |loss_t − limit| (the train losses of a deterministic
    run at its evaluated rounds and the analytic f(x*(α, γ, Θ))): exp of the least-squares slope of
    log m_t against the round t, m_t = max_{s ≥ t} r_s (the tail maximum, so that momentum's
    oscillations do not bias it), over the evaluations where m_t ≤ ``window`` · m_0 and m_t is above
    the float64 floor 1e-13 · max(|limit|, 1). ``rounds``: the round of each loss (default 0, 1, 2, …;
    evaluations every few rounds are fitted against their rounds). Returns (rate, number of
    evaluations fitted); (None, n) with fewer than 4 evaluations in the window."""
    r = np.abs(np.asarray(losses, dtype=np.float64) - limit)
    if r.size < 4 or not np.all(np.isfinite(r)):
        return None, 0
    rounds = np.arange(r.size, dtype=np.float64) if rounds is None else np.asarray(rounds, dtype=np.float64)
    if rounds.shape != r.shape:
        raise ValueError(f"empirical_rate: {rounds.size} rounds for {r.size} losses")
    m = np.maximum.accumulate(r[::-1])[::-1]
    floor = 1e-13 * max(abs(limit), 1.0)
    keep = np.flatnonzero((m <= window * m[0]) & (m > floor))
    if keep.size < 4 or m[0] <= floor:
        return None, int(keep.size)
    slope = np.polyfit(rounds[keep], np.log(m[keep]), 1)[0]
    return float(np.exp(slope)), int(keep.size)


def _problems(cells: Sequence[Mapping], root: str | os.PathLike) -> dict[str, tuple]:
    """{dataset id: (A, c, p, x*, f*, the largest client's size)} read from the prepared datasets."""
    from fedbench.data.quadratic import client_quadratics, global_optimum
    from fedbench.data.store import load_dataset

    out = {}
    for d, path in dict.fromkeys((c["dataset"], c["dataset_dir"]) for c in cells):
        ds = load_dataset(Path(root) / path)
        x = np.asarray(ds.x_train, dtype=np.float64)
        A, c, p = client_quadratics(x, ds.client_train)
        x_star, f_star = global_optimum(x, ds.client_train)
        out[d] = (A, c, p, x_star, f_star, int(np.bincount(ds.client_train).max()))
    return out


def theory_frame(metrics: pl.DataFrame, cells: Sequence[Mapping], problems: Mapping[str, tuple]) -> pl.DataFrame:
    """One row per configured cell group (experiment, dataset, partition, algorithm; seeds pooled):
    columns experiment, dataset, algorithm (label), algorithm_name, member (the LocalUpdate member),
    setting (``deterministic`` or ``stochastic``), seeds, rounds, status, dist_theory
    (‖x*(α, γ, Θ) − x*‖_H), dist_engine (√(2(train_loss_T − f*)), mean over seeds), dist_rel_error
    (deterministic cells only),
    rate_theory (the server recursion's spectral radius on H̃, :func:`server_rate`), rate_table2
    (Table 2's ρ at κ(α, γ, Θ) of eq. (9)), rate_engine (:func:`empirical_rate`, deterministic
    only), rate_rel_error, rate_rounds (rounds fitted), residual (rate_theory^T: how far from the fixed point
    the run may still be after its T rounds, relative to the start), cond (cond H̃), dist_euclid
    (‖x*(α, γ, Θ) − x*‖), trajectory_error (deterministic cells with x_0 = 0 and a gd / heavy-ball /
    Nesterov server: max over the evaluated rounds of |(train_loss_t − f*) − (f(x_t) − f(x*))| /
    (f(x_t) − f(x*)), x_t the iterates of :func:`surrogate_losses`: Theorem 1 round by round).

    ``problems``: {dataset: (A, c, p, x*, f*, largest client size)} (:func:`_problems`). Deterministic:
    full participation (``uniform``, 1.0) and every client's whole data in each local step
    (``local.batch_size`` ≥ the largest client, no ``replacement``).
    """
    schema = {"experiment": pl.String, "dataset": pl.String, "algorithm": pl.String, "algorithm_name": pl.String,
              "member": pl.String, "setting": pl.String, "seeds": pl.Int64, "rounds": pl.Int64, "status": pl.String,
              "dist_theory": pl.Float64, "dist_engine": pl.Float64, "dist_rel_error": pl.Float64,
              "rate_theory": pl.Float64, "rate_table2": pl.Float64, "rate_engine": pl.Float64,
              "rate_rel_error": pl.Float64, "rate_rounds": pl.Int64, "residual": pl.Float64,
              "trajectory_error": pl.Float64, "cond": pl.Float64,
              "dist_euclid": pl.Float64}
    groups: dict[tuple, list[Mapping]] = {}
    for c in cells:
        groups.setdefault((c["experiment"], c["dataset"], c["partition"], c["algorithm"]), []).append(c)
    rows = []
    for (exp, ds, _part, alg), members in groups.items():
        c0 = members[0]
        A, c, p, x_star, f_star, n_max = problems[ds]
        try:
            m = member(c0)
        except ValueError as err:  # outside the family (or local work in epochs): listed, not checked
            rows.append({"experiment": exp, "dataset": ds, "algorithm": alg, "algorithm_name": c0["algorithm_name"],
                         "member": str(err), "setting": "—", "seeds": len(members), "rounds": None,
                         "status": "no theory"})
            continue
        H = np.einsum("i,ijk->jk", p, A)
        QA = tq.distorted_hessian(A, m["alpha"], m["gamma"], m["theta"])
        Ht = np.einsum("i,ijk->jk", p, QA)
        ev = np.linalg.eigvalsh(Ht)
        x_sur = np.linalg.solve(Ht, np.einsum("i,ijk,ik->j", p, QA, c))
        e = x_sur - x_star
        dist_theory = float(math.sqrt(e @ H @ e))
        limit = f_star + 0.5 * float(e @ H @ e)
        try:
            kappa = tq.condition_bound(A, p, m["alpha"], m["gamma"], m["theta"])
            table2 = float(rates.rate(kappa, m["server"])) if m["server"] != "adam" else None
        except ValueError:
            table2 = None
        rate_theory = server_rate(ev, m["server"], m["eta"], m["beta"]) if ev[0] > 0 else None
        local, sampling = c0["local"], c0["sampling"]
        deterministic = (float(sampling.get("participation", 1.0)) == 1.0 and sampling.get("scheme") == "uniform"
                         and int(local["batch_size"]) >= int(n_max) and not local.get("replacement"))
        dists, rates_, fitted, status, n_rounds, traj = [], [], [], "ok", 0, []
        predicts = deterministic and m["server"] != "adam" and (c0.get("model") or {}).get("init", "zeros") == "zeros"
        predicted = np.zeros(0)
        for cell in members:
            key = {k: cell[k] for k in _KEYS}
            run = metrics.filter(pl.all_horizontal(pl.col(k) == v for k, v in key.items())).sort("round")
            if run.height == 0:
                status = "missing"
                continue
            if run["status"][-1] != "ok":
                status = "diverged"
                continue
            n_rounds = int(run["round"].max())
            loss = run.filter(pl.col("round") >= 1)["train_loss"].to_numpy()
            dists.append(math.sqrt(max(2 * (float(loss[-1]) - f_star), 0.0)))
            if deterministic:
                r, n = empirical_rate(run["train_loss"].to_numpy(), limit, rounds=run["round"].to_numpy())
                if predicts:
                    at = run["round"].to_numpy()
                    if predicted.size <= at.max():
                        predicted = surrogate_losses(A, c, p, m, int(at.max())) - tq.global_loss(x_star, A, c, p)
                    gap = run["train_loss"].to_numpy() - f_star  # = f(x_t) − f(x*) on the engine's iterates
                    want = predicted[at]
                    traj.append(float(np.max(np.abs(gap - want) / np.abs(want))))
                fitted.append(n)
                if r is not None:
                    rates_.append(r)
        dist_engine = float(np.mean(dists)) if dists and status == "ok" else None
        exact = deterministic and dist_engine is not None
        rate_engine = float(np.mean(rates_)) if rates_ and status == "ok" and len(rates_) == len(members) else None
        rows.append({"experiment": exp, "dataset": ds, "algorithm": alg, "algorithm_name": c0["algorithm_name"],
                     "member": m["label"], "setting": "deterministic" if deterministic else "stochastic",
                     "seeds": len(members), "rounds": n_rounds, "status": status, "dist_theory": dist_theory,
                     "dist_engine": dist_engine,
                     "dist_rel_error": abs(dist_engine - dist_theory) / dist_theory if exact and dist_theory else None,
                     "rate_theory": rate_theory, "rate_table2": table2, "rate_engine": rate_engine,
                     "rate_rel_error": (None if rate_engine is None or not rate_theory
                                        else abs(rate_engine - rate_theory) / rate_theory),
                     "rate_rounds": min(fitted) if fitted else None,
                     "residual": None if rate_theory is None else float(rate_theory ** max(n_rounds, 1)),
                     "trajectory_error": max(traj) if traj and status == "ok" else None,
                     "cond": float(ev[-1] / ev[0]),
                     "dist_euclid": float(np.linalg.norm(e))})
    return pl.DataFrame(rows, schema=schema, orient="row")


def _f(v, spec=".4g") -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def markdown_theory(frame: pl.DataFrame) -> str:
    """The ``local_update_theory`` table (one row per configured algorithm group) and its notes."""
    header = ["experiment", "algorithm", "LocalUpdate member", "setting", "‖x*(α,γ,Θ) − x*‖_H theory",
              "engine", "rel. error", "rate theory", "engine", "rel. error", "ρ^T", "Table 2 ρ(κ)",
              "loss trajectory rel. error"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 4 + ["---:"] * 9) + "|"]
    for r in frame.iter_rows(named=True):
        if r["status"] == "no theory":
            vals = ["—"] * 9
        elif r["status"] != "ok":
            eng = f"{r['status']} (not a result)"
            vals = [_f(r["dist_theory"]), eng, "—", _f(r["rate_theory"]), "—", "—", "—", _f(r["rate_table2"]), "—"]
        else:
            det = r["setting"] == "deterministic"
            vals = [_f(r["dist_theory"]), _f(r["dist_engine"]), _f(r["dist_rel_error"], ".1e") if det else "— (noise)",
                    _f(r["rate_theory"]), _f(r["rate_engine"]) if det else "— (stochastic)",
                    _f(r["rate_rel_error"], ".1e"), _f(r["residual"], ".0e"), _f(r["rate_table2"]),
                    _f(r["trajectory_error"], ".1e")]
        setting = r["setting"] + (f", {r['seeds']} seeds" if r["seeds"] > 1 else "")
        lines.append("| " + " | ".join([r["experiment"], r["algorithm"], r["member"], setting, *vals]) + " |")
    notes = (
        "\nTheory: x*(α, γ, Θ) = E[Q_i A_i]⁻¹E[Q_i A_i c_i] (Lemma 11) on the exact problem trained (A_i, c_i, "
        "p_i from the prepared rows), its distance to the true minimizer x* in the norm of H = E[A_i]; rate: the "
        "spectral radius of the server's recursion on H̃ = E[Q_i A_i] at the cell's (η, β) (GD: max|1 − ηλ|); "
        "Table 2 ρ(κ): the rate at the tuned (η, β) for κ of eq. (9), the paper's bound. Engine: √(2(train_loss_T "
        "− f*)) = ‖x_T − x*‖_H after the last round (mean over seeds), and the contraction per round of "
        "|train_loss_t − f(x*(α, γ, Θ))| (tail maximum, log-linear fit from 1e-2 of its start to the float64 floor). "
        "Deterministic cells (full participation, full-batch clients) are exact oracles: the engine's distance "
        "matches to float precision once x_T has converged (ρ^T, the theory's rate to the power of the rounds run, "
        "is how far from the fixed point a run may still be: a large ρ^T explains a large error), the rate to the "
        "fit's precision (about 1e-2; a few 1e-2 with momentum, whose oscillating modes make the envelope "
        "uneven). Loss trajectory: the largest relative difference, over the evaluated rounds, between the engine's "
        "train_loss_t − f* and f(x_t) − f(x*) along the server's recursion on the surrogate's exact gradient "
        "(Theorem 1) from x_0 = 0: the round-by-round oracle (deterministic cells, model init zeros, server "
        "GD / heavy ball / Nesterov). Stochastic cells follow the surrogate in expectation only (Theorem 1): "
        "their iterates fluctuate around x*(α, γ, Θ), so the engine's distance includes the minibatch noise and "
        "is no oracle; no rate is fitted. Diverged runs are not results.\n")
    return "\n".join(lines) + "\n" + notes


# ----------------------------------------------------------------------------------------------
# Neural-network figures (Figs. 6/11, 12, 13)


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
        raise KeyError(f"{name!r} is not a curve figure of {KEY}")
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

# ----------------------------------------------------------------------------------------------
# Claims (the scorecard: fedbench.analysis.scorecard)

#: A deterministic cell counts as converged when the theory's ρ^T is below this.
CONVERGED = 1e-8
#: Tolerances of the exact checks (float64).
FIXED_POINT_TOL, TRAJECTORY_TOL = 1e-6, 1e-6


def _decide_frontier_points(ev):
    from fedbench.analysis.scorecard import Verdict

    ref = reference_frame()
    worst, n = 0.0, 0
    for r in ref.filter(pl.col("family") != "simulated").iter_rows(named=True):
        kappa, rho, delta = reference_point(r)
        tol = 0.5 * 10.0 ** -int(r["digits"]) + 1e-12
        for ours, printed in ((kappa, r["kappa"]), (rho, r["rho"]), (delta, r["delta"])):
            if ours is not None and printed is not None:
                worst = max(worst, abs(float(ours) - float(printed)) / tol)
                n += 1
    return Verdict.decide(worst <= 1.0, f"{n} values of {ref.filter(pl.col('family') != 'simulated').height} "
                          "analytic points recomputed", f"largest difference {worst:.2f} of half a printed digit",
                          ["closed forms (fedbench.theory; no cell)"])


def _decide_symmetry(ev):
    from fedbench.analysis.scorecard import Verdict

    K = k_grid()
    exact, gaps = {}, {}
    for L in FIG2_L:  # the frontier is its own mirror image iff Δ(κ) = ρ_HB(κ₀/κ) along it (κ₀ = L/μ)
        kappa = cf.kappa_full(MU, L, 0.0, 1 / (2 * L), K)
        exact[L] = float(np.max(np.abs(rates.rate(np.maximum(L / kappa, 1.0), "heavy_ball")
                                       - rates.suboptimality(L, kappa))))
        gaps[L] = symmetry_gap(L)
    worst = max(exact.values())
    return Verdict.decide(worst <= 1e-12, ", ".join(f"L = {L:g}: {e:.1e}" for L, e in exact.items()),
                          f"largest |Δ(κ) − ρ_HB(κ₀/κ)| {worst:.1e} (tolerance 1e-12); the mirror image drawn "
                          f"lies within {max(gaps.values()):.1e} of the curve (linear interpolation)",
                          ["closed forms (fedbench.theory; no cell)"])


def _theory_rows(ev) -> pl.DataFrame | None:
    t = ev.tables.get(THEORY)
    if t is None:
        return None
    return t.filter((pl.col("status") == "ok") & (pl.col("setting") == "deterministic"))


def _cells_of(rows: pl.DataFrame) -> list[str]:
    return [f"{r['experiment']}/{r['dataset']}/{r['algorithm']}" for r in rows.iter_rows(named=True)]


def _decide_fixed_point(ev):
    from fedbench.analysis.scorecard import Verdict

    rows = _theory_rows(ev)
    if rows is None:
        return Verdict.undecidable("no cell trains the federated quadratic (model quadratic): no local_update_theory "
                                   "table")
    conv = rows.filter(pl.col("residual").is_not_null() & (pl.col("residual") <= CONVERGED)
                       & pl.col("dist_rel_error").is_not_null())
    if conv.height == 0:
        return Verdict.undecidable(f"no deterministic cell has converged (theory's ρ^T ≤ {CONVERGED:g}) in its rounds")
    off = conv.filter(pl.col("dist_theory") > 0)
    err = float(conv["dist_rel_error"].max())
    ok = err <= FIXED_POINT_TOL and off.height > 0
    lo, hi = (float(off["dist_theory"].min()), float(off["dist_theory"].max())) if off.height else (0.0, 0.0)
    return Verdict.decide(ok, f"{conv.height} converged deterministic cells: ‖x_T − x*‖_H = the theory's "
                          f"‖x*(α, γ, Θ) − x*‖_H ({lo:.3g}–{hi:.3g}, not 0)",
                          f"largest relative error {err:.1e} (tolerance {FIXED_POINT_TOL:g})", _cells_of(conv))


def _decide_trajectory(ev):
    from fedbench.analysis.scorecard import Verdict

    rows = _theory_rows(ev)
    if rows is None:
        return Verdict.undecidable("no cell trains the federated quadratic (model quadratic)")
    have = rows.filter(pl.col("trajectory_error").is_not_null())
    if have.height == 0:
        return Verdict.undecidable("no deterministic cell with init zeros and a GD / heavy-ball / Nesterov server")
    err = float(have["trajectory_error"].max())
    return Verdict.decide(err <= TRAJECTORY_TOL, f"{have.height} deterministic cells, every evaluated round",
                          f"largest relative difference {err:.1e} (tolerance {TRAJECTORY_TOL:g})", _cells_of(have))


def claims():
    """The paper's claims, as code (:class:`fedbench.analysis.scorecard.Claim`)."""
    from fedbench.analysis.scorecard import Claim

    return [
        Claim("local_update.frontier_points", KEY, "Figs. 1–4 (Lemmas 3–4, Table 2, eq. (17))",
              "the (ρ, Δ) trade-off of LocalUpdate methods: more local work (K, γ) converges faster (smaller ρ) to "
              "a worse point (larger Δ); e.g. FedAvg, L = 5, γ = 0.01: K = 10 gives (0.6151, 0.0438), K → ∞ "
              "(0, 0.3820)",
              "76 frontier points (reference/local_update_frontier_points.csv, 4 decimals)",
              "κ, ρ and Δ of each analytic reference point recomputed by fedbench.theory",
              "every value within half a unit of its last printed digit", _decide_frontier_points),
        Claim("local_update.heavy_ball_symmetry", KEY, "§5 (after Fig. 2)",
              "with heavy-ball server momentum the frontier is symmetric about ρ = Δ",
              "symmetric (a conjecture from the figure)",
              "along the heavy-ball frontier (Θ_{1:K}, α = 0, γ = 1/(2L), K over [1, 10⁶], L ∈ {2, 10, 100}) "
              "|Δ(κ) − ρ_HB(κ₀/κ)|: zero exactly when the curve is its own reflection in ρ = Δ",
              "≤ 1e-12 (float precision) at every L", _decide_symmetry),
        Claim("local_update.fixed_point_is_surrogate", KEY, "Theorem 1, Lemma 11",
              "LocalUpdate (FedAvg, FedProx, Reptile, MAML, …) converges to x*(α, γ, Θ), the minimizer of a "
              "surrogate loss, not to the minimizer x* of the true loss",
              "x_T → x*(α, γ, Θ) ≠ x*",
              "the engine's ‖x_T − x*‖_H = √(2(train_loss_T − f*)) beside the theory's ‖x*(α, γ, Θ) − x*‖_H: table "
              "local_update_theory",
              f"every converged deterministic cell (ρ^T ≤ {CONVERGED:g}) within relative {FIXED_POINT_TOL:g}, "
              "and the distance > 0", _decide_fixed_point),
        Claim("local_update.surrogate_trajectory", KEY, "Theorem 1",
              "each round of LocalUpdate is a step of the server optimizer on the surrogate loss",
              "exact (deterministic clients)",
              "the engine's train_loss_t − f* beside f(x_t) − f(x*) along the server's recursion on the surrogate's "
              "exact gradient from x_0 = 0, every evaluated round: table local_update_theory",
              f"largest relative difference ≤ {TRAJECTORY_TOL:g}", _decide_trajectory),
    ]
