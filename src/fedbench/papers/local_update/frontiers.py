"""LocalUpdate's (ρ, Δ) Pareto frontiers (Figs. 1–5, 7–10) and the heavy-ball symmetry check: pure
theory (:mod:`fedbench.theory`), against the closed-form reference points; the package docstring
(:mod:`fedbench.papers.local_update`, items 1 and 2) says what each figure draws."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import polars as pl

from fedbench.analysis.paper_figures import figure_grid, save_figure
from fedbench.papers.base import REFERENCE_DIR
from fedbench.theory import closed_forms as cf
from fedbench.theory import limits, rates

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

SERVERS = rates.SERVER_OPTIMIZERS
SERVER_NAMES = {"gd": "no momentum", "nesterov": "Nesterov", "heavy_ball": "heavy ball"}


SYMMETRY = "local_update_heavy_ball_symmetry"
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
    raise KeyError(f"{name!r} is not a frontier figure of local_update")


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
