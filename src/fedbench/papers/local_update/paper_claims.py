"""LocalUpdate's claims, as code, for the scorecard (:mod:`fedbench.analysis.scorecard`): the
frontier points of Figs. 1–4 and the heavy-ball symmetry (closed forms, no cell), and from the
``local_update_theory`` table the surrogate fixed point (Lemma 11) and trajectory (Theorem 1)."""

from __future__ import annotations

import numpy as np
import polars as pl

from fedbench.papers.local_update import KEY
from fedbench.papers.local_update.frontiers import FIG2_L, MU, k_grid, reference_frame, reference_point, symmetry_gap
from fedbench.papers.local_update.theory import THEORY
from fedbench.theory import closed_forms as cf
from fedbench.theory import rates

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


def declared():
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
