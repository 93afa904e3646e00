"""LocalUpdate's claims, as code, for the scorecard (:mod:`fedbench.analysis.scorecard`): Charles &
Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning", AISTATS 2021.

Three kinds of rule:

- **closed forms against a simulation** (no cell): the paper's frontier points, symmetry, subset and
  cusp statements (Figs. 1–5, 7–10, Appendix C.2) are decided by running Algorithm 2's K local steps
  and the tuned server's iteration (:mod:`.simulation`), never by the closed forms that drew them;
- **the theory against the engine** on the federated quadratic (table ``local_update_theory``, toy
  data): fixed point (Lemma 11), trajectory (Theorem 1), rate (Theorem 3), bias bounds (Lemma 5), the
  members' equivalences (Table 1, Appendix A, Theorem 2), the K and γ trade-off (Corollary 1), what
  server momentum and the proximal α change (Table 2, §5);
- **the neural-network findings** (Figs. 6/11, 12, 13) on the collected metrics of the paper's
  experiments (config/experiments/local_update.yaml), decidable only on the paper's data sets.

The paper prints no number for any result (its figures carry none; its one numeric table, Table 3,
lists data-set sizes): no claim has ``on_paper``. The frontier reference points
(``reference/local_update_frontier_points.csv``) are values we derived from the paper's formulas.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from fedbench.papers.local_update import KEY
from fedbench.papers.local_update import simulation as sim
from fedbench.papers.local_update.frontiers import FIG2_L, MU, k_grid, reference_frame
from fedbench.papers.local_update.theory import DIST_FLOOR, THEORY
from fedbench.theory import closed_forms as cf
from fedbench.theory import rates

#: A deterministic cell counts as converged when the theory's ρ^T is below this.
CONVERGED = 1e-8
#: Tolerances of the exact checks (float64).
FIXED_POINT_TOL, TRAJECTORY_TOL = 1e-6, 1e-6
#: Relative tolerance of the engine's fitted rate against the spectral radius of the server's iteration.
RATE_TOL = 0.05
#: Tolerance of a tuned server's computed spectral radius against Table 2's formula: the tuned heavy-ball
#: and Nesterov iterations have a double root, computed to about √ε ≈ 1e-8 in float64.
TABLE2_TOL = 1e-6
#: The neural-network experiments of config/experiments/local_update.yaml (Figs. 6/11, 12, 13).
FIG6_MOMENTUM, FIG6_ALPHA = "local_update_femnist_momentum", "local_update_femnist_alpha"
FIG12, FIG13 = "local_update_gamma_fixed_eta", "local_update_gamma_tuned_eta"
#: The selection window of Figs. 6/11 and 13: the last 100 rounds, 10 evaluations at eval_every 10.
LAST = 10
#: The frontier families decided by simulation (the cusp and the random-draw points have their own claims).
ANALYTIC = ("full", "full_gamma_limit", "last_scaled", "last")
CLOSED = ["simulation of Algorithm 2 and the tuned server (no cell)"]


def _verdict():
    from fedbench.analysis.scorecard import Verdict

    return Verdict


# ---------------------------------------------------------------- closed forms against a simulation


def simulated_reference(row: Mapping) -> tuple[float, float, float]:
    """(κ, ρ, Δ) of one reference point (a row of the frontier CSV) by simulation
    (:func:`.simulation.simulated_point` on diag(L, μ)): K → ∞ as :data:`.simulation.K_INF` steps;
    Fig. 1's γ → 1/L limit at γ = 1/L; the MAML branch of Fig. 4 at γ = 1/(2LK)."""
    L, alpha, fam = float(row["L"]), float(row["alpha"]), row["family"]
    K = sim.K_INF if row["K"] == "inf" else int(float(row["K"]))
    if fam == "full_gamma_limit":
        gamma = 1 / L
    elif fam == "last_scaled":
        gamma = 1 / (2 * L * K)
    else:
        gamma = float(row["gamma"])
    theta = "all" if fam.startswith("full") else "last"
    return sim.simulated_point(MU, L, alpha, gamma, K, theta, row["server"])


def underflows(row: Mapping) -> bool:
    """Whether a step-by-step run of the point underflows float64: Θ_K's message shrinks as
    (1 − γ(μ + α))^{K−1}, below 1e-300 for Fig. 9's α ≥ 5·10⁶ (only the closed form, in logs, reaches them)."""
    if row["family"] != "last" or row["K"] == "inf":
        return False
    shrink = (float(row["K"]) - 1) * math.log1p(-float(row["gamma"]) * (MU + float(row["alpha"])))
    return shrink < math.log(1e-300)


def frontier_point_misses(ref: pl.DataFrame) -> tuple[float, int, list[str]]:
    """Each printed κ, ρ, Δ of the analytic reference points against the simulation, in units of
    half its last printed digit: (the largest, the number of values, the points beyond 1). Points
    whose run underflows (:func:`underflows`) are left out."""
    worst, n, bad = 0.0, 0, []
    for r in ref.filter(pl.col("family").is_in(ANALYTIC)).iter_rows(named=True):
        if underflows(r):
            continue
        tol = 0.5 * 10.0 ** -int(r["digits"]) + 1e-12
        for ours, printed in zip(simulated_reference(r), (r["kappa"], r["rho"], r["delta"])):
            if printed is None:
                continue
            miss = abs(ours - float(printed)) / tol
            worst, n = max(worst, miss), n + 1
            if miss > 1:
                bad.append(f"{r['figure']} {r['panel'] or ''} K = {r['K']} {r['server']}".replace("  ", " "))
    return worst, n, bad


def _decide_frontier_points(ev):
    worst, n, bad = frontier_point_misses(reference_frame())
    return _verdict().decide(not bad, f"{n} printed values of κ, ρ, Δ against Algorithm 2 run K steps on diag(L, μ) "
                             "and the tuned server's spectral radius",
                             f"largest difference {worst:.2f} of half a printed digit"
                             + (f"; off: {', '.join(bad[:4])}" if bad else ""), CLOSED)


def heavy_ball_frontier(L: float, server: str = "heavy_ball", K=None) -> tuple[np.ndarray, np.ndarray]:
    """The simulated frontier of Fig. 2's setting (Θ_{1:K}, α = 0, γ = 1/(2L), μ = 1) for ``server``:
    (ρ, Δ) per K of ``K`` (default 400 log-spaced K over [1, 10⁶])."""
    K = k_grid(400) if K is None else K
    pts = np.array([sim.simulated_point(MU, L, 0.0, 1 / (2 * L), int(k), "all", server)[1:] for k in K])
    return pts[:, 0], pts[:, 1]


def _decide_symmetry(ev):
    gaps, ctrl = {}, {}
    for L in FIG2_L:
        gaps[L] = sim.mirror_gap(*heavy_ball_frontier(L))
        ctrl[L] = sim.mirror_gap(*heavy_ball_frontier(L, "gd"))[0]
    ok = all(g <= seg for g, seg in gaps.values())
    return _verdict().decide(ok, "mirror gap (heavy ball; no momentum as control): " + ", ".join(
        f"L = {L:g}: {gaps[L][0]:.1e} ({ctrl[L]:.2f})" for L in FIG2_L),
        "; ".join(f"L = {L:g}: gap {g:.1e} vs longest segment {seg:.1e}" for L, (g, seg) in gaps.items()), CLOSED)


def _decide_prox_subset(ev):
    """FedProx (α > 0) cannot recover one-shot averaging: its smallest reachable ρ (K → ∞) is > 0 and
    grows with α, where α = 0 reaches ρ = 0 (Fig. 3)."""
    alphas = (0.0, 0.5, 1.0, 5.0)
    low = [sim.simulated_point(MU, 10.0, a, 0.5 / (10.0 + a), sim.K_INF)[1] for a in alphas]
    ok = low[0] < 1e-6 and all(b > a for a, b in zip(low, low[1:]))
    return _verdict().decide(ok, "smallest ρ reachable (K → ∞): " + ", ".join(
        f"α = {a:g}: {r:.4f}" for a, r in zip(alphas, low)),
        "α = 0 reaches ρ = 0; every α > 0 stops above it, higher for larger α" if ok else
        "the α > 0 endpoints are not above α = 0's, increasing in α", CLOSED)


def _decide_maml_subset(ev):
    """The Θ_K branch at γ = 1/(2LK) stops at a ρ FedAvg passes (Fig. 4), for each server."""
    out, ok = [], True
    for s in rates.SERVER_OPTIMIZERS:
        maml = min(sim.simulated_point(MU, 10.0, 0.0, 1 / (20.0 * k), k, "last", s)[1]
                   for k in (1, 10, 10**3, sim.K_INF))
        fedavg = sim.simulated_point(MU, 10.0, 0.0, 1e-3, sim.K_INF, "all", s)[1]
        ok &= maml > fedavg
        out.append(f"{s}: Θ_K ρ ≥ {maml:.4f}, Θ_{{1:K}} reaches {fedavg:.1e}")
    return _verdict().decide(ok, "; ".join(out), "Θ_K's reachable ρ is a strict part of FedAvg's for every server"
                             if ok else "Θ_K reaches as low a ρ as FedAvg", CLOSED)


def maml_frontier(lam, alpha: float = 0.0, gamma: float = 1e-3, server: str = "gd", K=None):
    """The simulated Θ_K frontier of Figs. 5, 7, 8, 10 on the spectrum ``lam``: K (1..2000 by 1,
    integers) and the (κ, ρ, Δ) of each (:func:`.simulation.spectrum_point`)."""
    K = np.arange(1, 2001) if K is None else np.asarray(K)
    pts = np.array([sim.spectrum_point(lam, alpha, gamma, int(k), "last", server) for k in K])
    return K, pts


def _spectrum(d: int = 100, seed: int = 0, L: float = 10.0):
    return cf.random_spectrum(np.random.default_rng(seed), d, MU, L)


def cusp_check(lam, L: float = 10.0, gamma: float = 1e-3) -> tuple[int, float, float, float]:
    """The simulated Θ_K frontier's cusp (its smallest ρ over integer K up to 3/(γL), past which ρ only
    grows): (K, Δ there, the one-shot Δ (√κ₀ − 1)/(√κ₀ + 1), the change of Δ over one step of K there)."""
    K, pts = maml_frontier(lam, gamma=gamma, K=np.arange(1, int(3 / (gamma * L)) + 1))
    i = int(np.argmin(pts[:, 1]))
    one_shot = (math.sqrt(L) - 1) / (math.sqrt(L) + 1)
    step = max(abs(pts[min(i + 1, len(K) - 1), 2] - pts[i, 2]), abs(pts[i, 2] - pts[max(i - 1, 0), 2]))
    return int(K[i]), float(pts[i, 2]), one_shot, float(step)


def _decide_cusp(ev):
    k, delta, one_shot, step = cusp_check(_spectrum())
    return _verdict().decide(abs(delta - one_shot) <= step, f"cusp at K = {k}: Δ = {delta:.4f}; one-shot averaging "
                             f"Δ = {one_shot:.4f}", f"|difference| {abs(delta - one_shot):.1e} (one step of K "
                             f"moves Δ by {step:.1e})", ["simulation, one random A, d = 100, seed 0 (no cell)"])


def split_check(lam, L: float = 10.0, gamma: float = 1e-3) -> tuple[float, float]:
    """Θ_K's simulated Δ (Lemma 5's form) against Θ_{1:K}'s curve at the same κ (eq. (17)): the
    largest difference for K < 1/(γL) (the admissible range, γ < 1/(KL)), and the difference at K = 2/(γL)."""
    K, pts = maml_frontier(lam, gamma=gamma, K=np.arange(1, int(2 / (gamma * L)) + 1))
    same = np.array([rates.suboptimality(L / MU, k) for k in pts[:, 0]])
    below = K < 1 / (gamma * L)
    return float(np.max(np.abs(pts[below, 2] - same[below]))), float(abs(pts[-1, 2] - same[-1]))


def _decide_split(ev):
    inside, beyond = split_check(_spectrum())
    return _verdict().decide(inside <= 1e-9 < beyond, f"Θ_K vs Θ_{{1:K}} at equal κ: K < 100: {inside:.1e}; "
                             f"K = 200: {beyond:.3f}", f"identical (≤ 1e-9) below the threshold, apart by {beyond:.3f} "
                             "beyond it", ["simulation, one random A, d = 100, seed 0 (no cell)"])


def discrepancy_by_L(Ls=(2.0, 5.0, 10.0, 100.0), gamma: float = 1e-3) -> dict[float, float]:
    """Per L: the share of FedAvg's Δ range (0 to the one-shot Δ) the simulated Θ_K curve (d = 100,
    seed 0) covers before it leaves FedAvg's curve (at its smallest ρ, the cusp)."""
    out = {}
    for L in Ls:
        lam = _spectrum(L=L)
        K, pts = maml_frontier(lam, gamma=gamma, K=np.arange(1, int(1.5 / (gamma * L)) + 2))
        i = int(np.argmin(pts[:, 1]))
        inside = K[: i + 1] < 1 / (gamma * L)
        delta_split = float(pts[: i + 1][inside, 2].max()) if inside.any() else 0.0
        out[L] = delta_split / ((math.sqrt(L) - 1) / (math.sqrt(L) + 1))
    return out


def _decide_discrepancy(ev):
    share = discrepancy_by_L()
    vals = list(share.values())
    ok = all(b < a for a, b in zip(vals, vals[1:]))
    return _verdict().decide(ok, "share of FedAvg's Δ range recovered by Θ_K before it splits: " + ", ".join(
        f"L = {L:g}: {s:.0%}" for L, s in share.items()), "decreasing in L/μ" if ok else "not decreasing in L/μ",
        ["simulation, one random A per L, d = 100, seed 0 (no cell)"])


def _decide_momentum_maml(ev):
    lam = _spectrum()
    K = np.array([1, 10, 50, 100, 200, 255, 300, 500, 1000])
    by = {s: maml_frontier(lam, server=s, K=K)[1][:, 1] for s in ("gd", "nesterov", "heavy_ball")}
    full = {s: np.array([sim.simulated_point(MU, 10.0, 0.0, 1e-3, int(k), "all", s)[1] for k in K])
            for s in ("gd", "nesterov", "heavy_ball")}
    ok = all(np.all(f["heavy_ball"] < f["nesterov"]) and np.all(f["nesterov"] < f["gd"]) for f in (by, full))
    gain = float(np.min(by["gd"] - by["heavy_ball"]))
    return _verdict().decide(ok, f"ρ at equal Δ, K ∈ {{{', '.join(map(str, K))}}}: heavy ball < Nesterov < none for "
                             "Θ_K (d = 100) and Θ_{1:K}", f"smallest gain of heavy ball over none on Θ_K {gain:.3f}",
                             ["simulation, one random A, d = 100, seed 0 (no cell)"])


def _decide_alpha_maml(ev):
    """Fig. 10: α shrinks FedAvg's curve (its K → ∞ endpoint ρ moves), not Θ_K's (its cusp moves less)."""
    lam = _spectrum()
    alphas = (0.0, 0.5, 1.0, 5.0, 10.0)
    fedavg = [sim.simulated_point(MU, 10.0, a, 1e-3, sim.K_INF)[1] for a in alphas]
    maml = [float(maml_frontier(lam, a, K=np.arange(150, 400))[1][:, 1].min()) for a in alphas]
    moves = (max(fedavg) - min(fedavg), max(maml) - min(maml))
    return _verdict().decide(moves[1] < moves[0], f"over α ∈ {{0, 0.5, 1, 5, 10}}: FedAvg's smallest ρ moves by "
                             f"{moves[0]:.3f}, Θ_K's (its cusp) by {moves[1]:.3f}",
                             f"Θ_K moves {moves[1] / moves[0]:.2g}× as much as FedAvg" if moves[0] else "FedAvg does "
                             "not move", ["simulation, one random A, d = 100, seed 0 (no cell)"])


def noise_by_d(draws: int = 20, K: int = 300) -> dict[int, float]:
    """The standard deviation of the simulated Θ_K ρ at K (past the threshold 1/(γL) = 100) over
    ``draws`` random A, for d = 5 and d = 100 (Fig. 5, γ = 10⁻³, L = 10). Δ in Lemma 5's form depends on
    the extreme eigenvalues only, which Appendix D.1 fixes at μ and L; ρ depends on all of them."""
    return {d: float(np.std([sim.spectrum_point(_spectrum(d, s), 0.0, 1e-3, K)[1] for s in range(draws)]))
            for d in (5, 100)}


def _decide_noise(ev):
    sd = noise_by_d()
    return _verdict().decide(sd[5] > sd[100], f"std of ρ at K = 300 over 20 draws: d = 5: {sd[5]:.3g}, d = 100: "
                             f"{sd[100]:.3g}", f"d = 5 {sd[5] / sd[100]:.3g}× as noisy as d = 100" if sd[100] else
                             "d = 100 has no spread", ["simulation, 20 random A per d (no cell)"])


def _decide_c2(ev):
    dist, limit = sim.c2_distance(0.9, 60)
    return _verdict().decide(abs(dist - limit) <= 1e-9, f"|x_T − x*| = {dist:.6f} after the run (p = 0.9, K = 60); "
                             f"8p/(3p + 1) = {limit:.6f}", f"difference {abs(dist - limit):.1e} (tolerance 1e-9)",
                             ["simulation of Appendix C.2's two clients (no cell)"])


def momentum_gain_by_L(Ls=(2.0, 10.0, 100.0)) -> dict[float, tuple[float, float, float]]:
    """Per L, on Fig. 2's simulated frontier: heavy ball's speed-up over no momentum at K = 1 in rounds,
    ln ρ_HB / ln ρ_none (rounds to a given accuracy scale as 1/ln(1/ρ)); the gain in ρ at K = 1 and at K = 10⁶."""
    out = {}
    for L in Ls:
        gd, hb = ([sim.simulated_point(MU, L, 0.0, 1 / (2 * L), k, "all", s)[1] for k in (1, 10**6)]
                  for s in ("gd", "heavy_ball"))
        out[L] = (math.log(hb[0]) / math.log(gd[0]), gd[0] - hb[0], gd[1] - hb[1])
    return out


def _decide_momentum_by_L(ev):
    g = momentum_gain_by_L()
    speed = [v[0] for v in g.values()]
    ok = ordered(speed, increasing=True) and all(abs(v[2]) < 1e-3 * v[1] for v in g.values())
    text = ", ".join(f"L = {L:g}: {a:.2f}× ({b:.3f} / {c:.0e})" for L, (a, b, c) in g.items())
    return _verdict().decide(ok, f"heavy ball's speed-up in rounds at K = 1 (ρ_none − ρ_HB at K = 1 / K = 10⁶): {text}",
        "grows with L/μ and the gain in ρ vanishes (below 1e-3 of it) as K → ∞" if ok
        else "not growing with L/μ, or not vanishing", CLOSED)


def fig1_gamma_limit(Ls=(5.0, 50.0)) -> dict[float, tuple[float, float]]:
    """Fig. 1 right's end (K = 100, γ → 1/L) and left's end (γ = 0.01, K → ∞), simulated: ρ of each per L."""
    return {L: (sim.simulated_point(MU, L, 0.0, 1 / L, 100)[1], sim.simulated_point(MU, L, 0.0, 0.01, sim.K_INF)[1])
            for L in Ls}


def _decide_fig1_gamma(ev):
    ends = fig1_gamma_limit()
    ok = ends[50.0][0] > 1e-2 and all(k < 1e-6 for _, k in ends.values()) and ends[5.0][0] < 1e-6
    return _verdict().decide(ok, "smallest ρ, γ → 1/L at K = 100 / K → ∞ at γ = 0.01: " + ", ".join(
        f"L = {L:g}: {g:.4f} / {k:.0e}" for L, (g, k) in ends.items()),
        "at L = 50 the γ branch stops at ρ > 0.01 while K reaches 0; at L = 5 both reach 0" if ok
        else "the γ and K branches do not end as stated", CLOSED)


def chord_deviation(L: float, gamma: float = 0.01, K=None) -> float:
    """How far Fig. 1 left's simulated frontier (Θ_{1:K}, γ = 0.01, server GD) bows away from the straight
    line between its ends (K = 1 and K → ∞): the largest distance of a point to that chord, over the
    chord's length."""
    K = k_grid(200) if K is None else K
    pts = np.array([sim.simulated_point(MU, L, 0.0, gamma, int(k))[1:] for k in K])
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    length = math.hypot(x1 - x0, y1 - y0)
    return float(np.max(np.abs((x1 - x0) * (y0 - pts[:, 1]) - (x0 - pts[:, 0]) * (y1 - y0))) / length**2)


def _decide_fig1_linear(ev):
    dev = {L: chord_deviation(L) for L in (5.0, 50.0)}
    return _verdict().decide(dev[5.0] < dev[50.0], "largest distance from the chord over its length: " + ", ".join(
        f"L = {L:g}: {d:.3f}" for L, d in dev.items()), f"L = 5 bows {dev[5.0] / dev[50.0]:.2g}× as much as L = 50",
        CLOSED)


def mad_check(draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Theorem 5 and Corollary 2 on random discrete X over [0, 1] (2 to 6 atoms, random weights): the
    largest D(X) − 2(b − EX)(EX − a)/(b − a) (≤ 0 by the theorem) and the largest gap from equality over
    two-point X on {a, b}."""
    from fedbench.theory import bounds

    rng = np.random.default_rng(seed)
    worst, equal = -math.inf, 0.0
    for _ in range(draws):
        x = rng.uniform(0, 1, rng.integers(2, 7))
        w = rng.dirichlet(np.ones(x.size))
        a, b = float(x.min()), float(x.max())
        worst = max(worst, bounds.mean_absolute_deviation(x, w) - float(bounds.mad_bound_theorem5(a, b, w @ x)))
        two = np.array([a, b])
        pw = np.array([w[0], 1 - w[0]])
        bound = float(bounds.mad_bound_theorem5(a, b, pw @ two))
        equal = max(equal, abs(bounds.mean_absolute_deviation(two, pw) - bound))
    return worst, equal


def _decide_mad(ev):
    worst, equal = mad_check()
    ok = worst <= 1e-12 and equal <= 1e-12
    return _verdict().decide(ok, f"2,000 random discrete X on [0, 1]: largest D(X) − bound {worst:.1e}; two-point X: "
                             f"largest |D(X) − bound| {equal:.1e}", "below the bound, equal on {a, b} (tolerance "
                             "1e-12)" if ok else "above the bound, or not equal on {a, b}",
                             ["random discrete distributions (no cell)"])


# ---------------------------------------------------------------- the theory against the engine (quadratic)


def _theory_rows(ev, deterministic: bool = True) -> pl.DataFrame | None:
    t = ev.tables.get(THEORY)
    if t is None:
        return None
    t = t.filter(pl.col("status") == "ok")
    return t.filter(pl.col("setting") == "deterministic") if deterministic else t


def _cells_of(rows: pl.DataFrame) -> list[str]:
    return [f"{r['experiment']}/{r['dataset']}/{r['algorithm']}" for r in rows.iter_rows(named=True)]


_NO_TABLE = "no cell trains the federated quadratic (model quadratic): no local_update_theory table"


def _converged(rows: pl.DataFrame) -> pl.DataFrame:
    return rows.filter(pl.col("residual").is_not_null() & (pl.col("residual") <= CONVERGED)
                       & pl.col("dist_engine").is_not_null())


def _decide_fixed_point(ev, names: Sequence[str] | None = None, what: str = "converged deterministic cells"):
    V = _verdict()
    rows = _theory_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    if names is not None:
        rows = rows.filter(pl.col("algorithm_name").is_in(list(names)))
    conv = _converged(rows).filter(pl.col("dist_rel_error").is_not_null())
    if conv.height == 0:
        return V.undecidable(f"no {what} (theory's ρ^T ≤ {CONVERGED:g}) in its rounds")
    off = conv.filter(pl.col("dist_theory") > DIST_FLOOR)
    at_x = conv.filter(pl.col("dist_theory") <= DIST_FLOOR)  # x*(α, γ, Θ) = x*: checked absolutely
    err = float(off["dist_rel_error"].max()) if off.height else 0.0
    ok = err <= FIXED_POINT_TOL and off.height > 0 and bool((at_x["dist_engine"] <= DIST_FLOOR).all())
    lo, hi = (float(off["dist_theory"].min()), float(off["dist_theory"].max())) if off.height else (0.0, 0.0)
    same = (f"; {at_x.height} with x*(α, γ, Θ) = x*: engine within {float(at_x['dist_engine'].max()):.1e} of x*"
            if at_x.height else "")
    return V.decide(ok, f"{off.height} {what}: ‖x_T − x*‖_H = the theory's ‖x*(α, γ, Θ) − x*‖_H "
                    f"({lo:.3g}–{hi:.3g}, not 0){same}",
                    f"largest relative error {err:.1e} (tolerance {FIXED_POINT_TOL:g})", _cells_of(conv))


def _decide_trajectory(ev, names: Sequence[str] | None = None):
    V = _verdict()
    rows = _theory_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    if names is not None:
        rows = rows.filter(pl.col("algorithm_name").is_in(list(names)))
    have = rows.filter(pl.col("trajectory_error").is_not_null())
    if have.height == 0:
        return V.undecidable("no deterministic cell with init zeros and a GD / heavy-ball / Nesterov server"
                             + (f" among {', '.join(names)}" if names else ""))
    err = float(have["trajectory_error"].max())
    which = f" ({', '.join(sorted(set(have['algorithm_name'])))})" if names else ""
    return V.decide(err <= TRAJECTORY_TOL, f"{have.height} deterministic cells{which}, every evaluated round",
                    f"largest relative difference {err:.1e} (tolerance {TRAJECTORY_TOL:g})", _cells_of(have))


def _decide_members(ev):
    """Table 1 / Appendix A: FedAvg, FedProx, Reptile, FedAvgM are LocalUpdate members (their trajectories
    are the member's surrogate recursion); Theorem 2: MAML with K inner steps is Θ_{2K+1}."""
    return _decide_trajectory(ev, ("fedavg", "fedprox", "reptile", "fedavgm"))


def _decide_maml(ev):
    return _decide_trajectory(ev, ("maml",))


def _decide_rate(ev):
    V = _verdict()
    rows = _theory_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    # at the tuned (η, β) every mode contracts at the same modulus (GD: ±ρ; heavy ball, Nesterov: a double
    # root, t·ρ^t): the log-linear fit over the few evaluations above the float floor is biased there
    have = rows.filter(pl.col("rate_rel_error").is_not_null() & ~pl.col("tuned").fill_null(False))
    if have.height == 0:
        return V.undecidable("no deterministic cell at untuned (η, β) with a fitted rate (at least 4 evaluations "
                             "between 1e-2 of the start and the float floor)")
    err = float(have["rate_rel_error"].max())
    return V.decide(err <= RATE_TOL, f"{have.height} deterministic cells: fitted rate "
                    f"{float(have['rate_engine'].min()):.3g}–{float(have['rate_engine'].max()):.3g}",
                    f"largest relative difference to the spectral radius {err:.1e} (tolerance {RATE_TOL:g})",
                    _cells_of(have))


def _tuned_rows(ev):
    rows = _theory_rows(ev, deterministic=False)
    if rows is None:
        return None
    return rows.filter(pl.col("rate_tuned_gd").is_not_null() & pl.col("rate_table2").is_not_null())


def _decide_table2(ev):
    """Theorem 3 with Table 2: on each cell's surrogate H̃, the tuned server's spectral radius is Table 2's
    ρ at cond(H̃), and at most Table 2's ρ at κ of eq. (9) (Lemma 2: cond(H̃) ≤ κ)."""
    V = _verdict()
    rows = _tuned_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    if rows.height == 0:
        return V.undecidable("no quadratic cell with a positive definite surrogate inside Lemma 1 (γ < 1/(L + α))")
    worst, above = 0.0, []
    for r in rows.iter_rows(named=True):
        for s in ("gd", "nesterov", "heavy_ball"):
            worst = max(worst, abs(r[f"rate_tuned_{s}"] - float(rates.rate(r["cond"], s))))
            if r[f"rate_tuned_{s}"] > float(rates.rate(r["kappa_bound"], s)) + TABLE2_TOL:
                above.append(f"{r['algorithm']} ({s})")
    ok = worst <= TABLE2_TOL and not above
    return V.decide(ok, f"{rows.height} cells × 3 servers: tuned spectral radius vs (κ − 1)/(κ + 1), "
                    "1 − 2/√(3κ + 1), (√κ − 1)/(√κ + 1) at κ = cond H̃; all ≤ Table 2's ρ at κ of eq. (9)",
                    f"largest difference {worst:.1e} (tolerance {TABLE2_TOL:g})"
                    + (f"; above the eq. (9) rate: {', '.join(above[:4])}" if above else ""), _cells_of(rows))


def _decide_momentum_ordering(ev):
    V = _verdict()
    rows = _tuned_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    rows = rows.filter(pl.col("cond") > 1 + 1e-9)
    if rows.height == 0:
        return V.undecidable("no quadratic cell with cond(H̃) > 1")
    bad = rows.filter(~((pl.col("rate_tuned_heavy_ball") < pl.col("rate_tuned_nesterov"))
                        & (pl.col("rate_tuned_nesterov") < pl.col("rate_tuned_gd"))))
    r = rows.row(0, named=True)
    return V.decide(bad.height == 0, f"{rows.height} cells; e.g. {r['algorithm']}: heavy ball "
                    f"{r['rate_tuned_heavy_ball']:.3f} < Nesterov {r['rate_tuned_nesterov']:.3f} < none "
                    f"{r['rate_tuned_gd']:.3f}",
                    "strict at every cell" if bad.height == 0 else f"{bad.height} cells out of order", _cells_of(rows))


def _same_surrogate(rows: pl.DataFrame) -> list[pl.DataFrame]:
    """Groups of rows of one experiment training the same surrogate (Θ, γ, α) with different servers."""
    keys = ["experiment", "dataset", "theta", "gamma", "alpha"]
    return [g for _, g in rows.group_by(keys, maintain_order=True) if g["server"].n_unique() > 1]


def _decide_momentum_same_point(ev):
    V = _verdict()
    rows = _theory_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    groups = [_converged(g) for g in _same_surrogate(rows)]
    groups = [g for g in groups if g["server"].n_unique() > 1]
    if not groups:
        return V.undecidable("no converged deterministic cells that train one surrogate with two servers")
    worst = max(float((g["dist_engine"].max() - g["dist_engine"].min()) / g["dist_engine"].max()) for g in groups)
    cells = [c for g in groups for c in _cells_of(g)]
    return V.decide(worst <= FIXED_POINT_TOL, f"{len(groups)} surrogate(s), servers "
                    f"{', '.join(sorted({s for g in groups for s in g['server']}))}: one final distance each",
                    f"largest relative spread {worst:.1e} (tolerance {FIXED_POINT_TOL:g})", cells)


def _decide_momentum_faster(ev):
    """Table 2 in the engine: at each server's tuned (η, β) for one surrogate, heavy ball and Nesterov
    converge faster than server GD (the engine's fitted rates)."""
    V = _verdict()
    rows = _theory_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    found, bad, cells = [], [], []
    tuned = rows.filter(pl.col("rate_engine").is_not_null() & pl.col("tuned").fill_null(False))
    for g in _same_surrogate(tuned):
        for base in g.filter(pl.col("server") == "gd").iter_rows(named=True):
            for r in g.filter(pl.col("server").is_in(["heavy_ball", "nesterov"])).iter_rows(named=True):
                found.append(f"{r['server']} {r['rate_engine']:.3f} vs none {base['rate_engine']:.3f} "
                             f"(Table 2: {r['rate_tuned_' + r['server']]:.3f} vs {base['rate_tuned_gd']:.3f})")
                cells += [r["algorithm"], base["algorithm"]]
                if not r["rate_engine"] < base["rate_engine"]:
                    bad.append(found[-1])
    if not found:
        return V.undecidable("no deterministic cells of one surrogate at their servers' tuned (η, β), with and "
                             "without momentum (fitted rates)")
    return V.decide(not bad, "; ".join(found), "momentum converges faster in every pair" if not bad else
                    f"{len(bad)} of {len(found)} pairs not faster", sorted(set(cells)))


def _decide_prox_tradeoff(ev):
    """At the same Θ, γ, η and server, α > 0 gives a closer fixed point and a slower rate (Fig. 3)."""
    V = _verdict()
    rows = _theory_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    rows = _converged(rows).filter(pl.col("rate_engine").is_not_null())
    pairs, bad = [], []
    for _, g in rows.group_by(["experiment", "dataset", "theta", "gamma", "server", "eta", "beta"]):
        base = g.filter(pl.col("alpha") == 0)
        for r in g.filter(pl.col("alpha") > 0).iter_rows(named=True):
            for b in base.iter_rows(named=True):
                pairs.append(f"α = {r['alpha']:g} vs 0: distance {r['dist_engine']:.4f} vs {b['dist_engine']:.4f}, "
                             f"rate {r['rate_engine']:.4f} vs {b['rate_engine']:.4f}")
                if not (r["dist_engine"] < b["dist_engine"] and r["rate_engine"] > b["rate_engine"]):
                    bad.append(pairs[-1])
    if not pairs:
        return V.undecidable("no converged deterministic cells differing only in α (one with α = 0)")
    return V.decide(not bad, "; ".join(pairs[:3]), "closer and slower in every pair" if not bad else
                    f"{len(bad)} of {len(pairs)} pairs not closer-and-slower", [])


def ordered(values: Sequence[float], increasing: bool) -> bool:
    """Whether ``values`` are strictly increasing (``increasing``) or strictly decreasing."""
    return all((b > a) if increasing else (b < a) for a, b in zip(values, values[1:]))


def _sweeps(rows: pl.DataFrame, axis: str) -> list[pl.DataFrame]:
    """Groups of rows of one experiment that differ only in ``axis`` ("gamma" or "steps"), 3 values or more."""
    fixed = [k for k in ("experiment", "dataset", "theta_kind", "gamma", "steps", "alpha", "server", "eta", "beta")
             if k != axis]
    rows = rows.with_columns(pl.col("theta").str.extract(r"Θ_(\{1:)?", 1).fill_null("last").alias("theta_kind"),
                             pl.col("theta").str.extract(r"(\d+)\}?$", 1).cast(pl.Float64).alias("steps"))
    return [g.sort(axis) for _, g in rows.group_by(fixed, maintain_order=True) if g[axis].n_unique() >= 3]


def _tradeoff(groups, axis: str, symbol: str, rate: str, rate_word: str, undecidable: str):
    """Corollary 1's trade-off over the sweeps ``groups`` of ``axis`` (shown as ``symbol``): the rate in
    column ``rate`` falls along the sweep (faster) and the engine's converged distance to x* grows
    (a worse point), in every group."""
    V = _verdict()
    if not groups:
        return V.undecidable(undecidable)
    out, ok, cells = [], True, []
    for g in groups:
        conv = _converged(g)
        faster = ordered(g[rate].to_list(), increasing=False)
        worse = conv.height >= 2 and ordered(conv["dist_engine"].to_list(), increasing=True)
        ok &= faster and worse
        out.append(f"{symbol} = {', '.join(f'{x:g}' for x in g[axis])}: {rate_word} "
                   f"{', '.join(f'{r:.3f}' for r in g[rate])}; converged distance ({symbol} = "
                   f"{', '.join(f'{x:g}' for x in conv[axis])}) "
                   f"{', '.join(f'{d:.4f}' for d in conv['dist_engine'])}")
        cells += _cells_of(g)
    return V.decide(ok, "; ".join(out), f"{rate_word} falls and distance grows with {symbol}" if ok else
                    f"{rate_word} not falling or converged distance not growing with {symbol} (or fewer than 2 "
                    "converged)", cells)


def _decide_steps_tradeoff(ev):
    """Corollary 1, K varied at fixed γ, η: the engine's rate falls with K (faster) and its converged
    distance to x* grows with K (a worse point)."""
    rows = _theory_rows(ev)
    if rows is None:
        return _verdict().undecidable(_NO_TABLE)
    groups = list(_sweeps(rows.filter(pl.col("rate_engine").is_not_null()), "steps"))
    return _tradeoff(groups, "steps", "K", "rate_engine", "rate",
                     "no deterministic sweep of local steps K (3 values or more, fitted rates) at fixed γ, η")


def _decide_gamma_tradeoff(ev):
    """Corollary 1, γ varied at fixed K: the tuned server's rate on the cell's surrogate falls with γ
    (Table 2 at tuned η), and the engine's converged distance to x* grows with γ."""
    rows = _theory_rows(ev)
    if rows is None:
        return _verdict().undecidable(_NO_TABLE)
    groups = [g for g in _sweeps(rows.filter(pl.col("rate_tuned_gd").is_not_null()), "gamma")
              if g["theta"].str.starts_with("Θ_{1:").all()]
    return _tradeoff(groups, "gamma", "γ", "rate_tuned_gd", "tuned rate",
                     "no deterministic Θ_{1:K} sweep of γ (3 values or more) at fixed K")


def _decide_bias_bound(ev, column: str = "bound_lemma5"):
    """‖x*(α, γ, Θ) − x*‖ ≤ the bound, from the engine's converged ‖x_T − x*‖_H: holds when
    ‖x_T − x*‖_H/√λ_min(H) (an upper bound of the Euclidean distance) is below it, fails when
    ‖x_T − x*‖_H/√λ_max(H) (a lower bound) is above it."""
    V = _verdict()
    rows = _theory_rows(ev)
    if rows is None:
        return V.undecidable(_NO_TABLE)
    # cells at x*(α, γ, Θ) = x* (K = 1: bound 0) are below what the engine's distance resolves
    conv = _converged(rows).filter(pl.col(column).is_not_null() & (pl.col("dist_engine") > DIST_FLOOR))
    if conv.height == 0:
        return V.undecidable(f"no converged deterministic cell (ρ^T ≤ {CONVERGED:g}) inside Lemma 1 with "
                             f"‖x_T − x*‖_H > {DIST_FLOOR:g}")
    up = conv["dist_engine"] / conv["lam_min_h"].sqrt()
    low = conv["dist_engine"] / conv["lam_max_h"].sqrt()
    ratio_up, ratio_low = (up / conv[column]).max(), (low / conv[column]).max()
    if ratio_low > 1:
        return V.decide(False, f"{conv.height} cells", f"distance at least {ratio_low:.3g}× the bound", _cells_of(conv))
    if ratio_up <= 1:
        return V.decide(True, f"{conv.height} converged cells: ‖x_T − x*‖ ≤ {float(up.max()):.3g}",
                        f"at most {ratio_up:.2g}× the bound", _cells_of(conv))
    return V.undecidable(f"the H-norm distance brackets ‖x_T − x*‖ between {ratio_low:.2g}× and {ratio_up:.2g}× the "
                         "bound", _cells_of(conv))


def _decide_bias_2c(ev):
    return _decide_bias_bound(ev, "bound_2c")


# ---------------------------------------------------------------- neural-network findings (Figs. 6/11, 12, 13)


def label_values(label: str) -> tuple[str, dict[str, float]]:
    """A swept cell's label ("gd,lr=0.01,server_lr=0.1") as (base label, {axis: value})."""
    base, *parts = str(label).split(",")
    vals = {}
    for p in parts:
        k, _, v = p.partition("=")
        try:
            vals[k] = float(v)
        except ValueError:
            vals[k] = math.nan
    return base, vals


def run_scores(metrics: pl.DataFrame, experiment: str, metric: str, last: int = LAST) -> pl.DataFrame:
    """Per run (dataset, algorithm label) of ``experiment``: base label, lr (γ), server_lr (η), the mean of
    ``metric`` over the last ``last`` evaluations (the paper's selection window), its value at the first
    evaluation after round 0, and whether it diverged. Mean over seeds."""
    m = metrics.filter(pl.col("experiment") == experiment) if metrics.height else metrics
    rows = []
    for (ds, alg), g in (m.group_by(["dataset", "algorithm"]) if m.height else []):
        g = g.sort("round")
        base, vals = label_values(alg)
        diverged = bool((g["status"] != "ok").any())
        per_seed = [s.sort("round") for _, s in g.group_by("seed")]
        tail = float(np.mean([s[metric].tail(last).mean() for s in per_seed]))
        first = float(np.mean([s.filter(pl.col("round") >= 1)[metric][0] for s in per_seed]))
        rows.append({"dataset": ds, "base": base, "lr": vals.get("lr", math.nan),
                     "server_lr": vals.get("server_lr", math.nan), "score": tail, "first": first, "diverged": diverged})
    schema = {"dataset": pl.String, "base": pl.String, "lr": pl.Float64, "server_lr": pl.Float64,
              "score": pl.Float64, "first": pl.Float64, "diverged": pl.Boolean}
    return pl.DataFrame(rows, schema=schema, orient="row")


def best_by(scores: pl.DataFrame, by: Sequence[str], maximize: bool) -> pl.DataFrame:
    """The best non-diverged run per ``by`` group (the paper's tuning: best over the grid)."""
    ok = scores.filter(~pl.col("diverged") & pl.col("score").is_finite())
    order = ok.sort("score", descending=maximize)
    return order.group_by(by, maintain_order=True).first().sort(by)


def _paper_data(ev, experiment: str) -> str | None:
    """Why the run cannot speak to a claim about the paper's data sets (None when it can)."""
    if ev.scale == "toy data":
        return "a claim about the paper's data sets (FEMNIST, CIFAR-100, Shakespeare): toy data cannot decide it"
    if not ev.metrics.height or experiment not in set(ev.metrics["experiment"].unique()):
        return f"the run has no cells of experiment {experiment} (config/experiments/local_update.yaml)"
    return None


def momentum_verdict(best: Mapping[str, float]):
    """Fig. 6 left: heavy ball and Nesterov (β = 0.9) above plain server GD at tuned (γ, η)."""
    V = _verdict()
    if "gd" not in best or not ({"heavy_ball", "nesterov"} & set(best)):
        return V.undecidable("needs the tuned accuracy of gd and of heavy_ball or nesterov")
    gains = {k: best[k] - best["gd"] for k in ("heavy_ball", "nesterov") if k in best}
    return V.decide(all(g > 0 for g in gains.values()), ", ".join(f"{k} {100 * v:.2f}%" for k, v in best.items()),
                    ", ".join(f"{k} {100 * g:+.2f} pp over gd" for k, g in gains.items()))


def _decide_fig6_momentum(ev):
    why = _paper_data(ev, FIG6_MOMENTUM)
    if why:
        return _verdict().undecidable(why)
    best = best_by(run_scores(ev.metrics, FIG6_MOMENTUM, "test_accuracy"), ["base"], maximize=True)
    return momentum_verdict(dict(zip(best["base"], best["score"])))


def alpha_verdict(best_alpha: Mapping[str, float], best_momentum: Mapping[str, float]):
    """Fig. 6 right: the spread of the tuned accuracy over α below momentum's gain over gd (Fig. 6 left)."""
    V = _verdict()
    if len(best_alpha) < 2 or "gd" not in best_momentum or len(best_momentum) < 2:
        return V.undecidable("needs the tuned accuracy of two α values and of Fig. 6 left's servers")
    spread = max(best_alpha.values()) - min(best_alpha.values())
    gain = max(v for k, v in best_momentum.items() if k != "gd") - best_momentum["gd"]
    return V.decide(spread < gain, ", ".join(f"{k} {100 * v:.2f}%" for k, v in best_alpha.items()),
                    f"spread over α {100 * spread:.2f} pp vs momentum's gain {100 * gain:.2f} pp")


def _decide_fig6_alpha(ev):
    why = _paper_data(ev, FIG6_ALPHA) or _paper_data(ev, FIG6_MOMENTUM)
    if why:
        return _verdict().undecidable(why)
    a = best_by(run_scores(ev.metrics, FIG6_ALPHA, "test_accuracy"), ["base"], maximize=True)
    m = best_by(run_scores(ev.metrics, FIG6_MOMENTUM, "test_accuracy"), ["base"], maximize=True)
    return alpha_verdict(dict(zip(a["base"], a["score"])), dict(zip(m["base"], m["score"])))


def smaller_gamma_lower_verdict(final: Mapping[str, Mapping[float, float]]):
    """Fig. 12 (FEMNIST, CIFAR-100): {dataset: {γ: final train loss}} over non-diverged γ: the final loss
    increases with γ (smaller client learning rates end lower)."""
    V = _verdict()
    if not final or any(len(v) < 2 for v in final.values()):
        return V.undecidable("needs the final training loss of two non-diverged γ per data set")
    bad = [d for d, v in final.items() if not ordered([v[g] for g in sorted(v)], increasing=True)]
    return V.decide(not bad, "; ".join(f"{d}: " + ", ".join(f"γ = {g:g}: {v[g]:.3f}" for g in sorted(v))
                                       for d, v in final.items()),
                    "final loss increases with γ on every data set" if not bad
                    else f"not increasing on {', '.join(bad)}")


def _fig12_final(ev, datasets=("fed_emnist", "fed_cifar100")) -> dict:
    s = run_scores(ev.metrics, FIG12, "train_loss").filter(~pl.col("diverged") & pl.col("dataset").is_in(datasets))
    return {d: dict(zip(g["lr"], g["score"])) for (d,), g in s.group_by(["dataset"])}


def _decide_fig12(ev):
    why = _paper_data(ev, FIG12)
    return _verdict().undecidable(why) if why else smaller_gamma_lower_verdict(_fig12_final(ev))


def cifar_crossover_verdict(curves: Mapping[float, Sequence[float]]):
    """Fig. 12, CIFAR-100: {γ: training loss per evaluation}: γ = 10⁻² is the lowest of all γ at some
    early evaluation, and γ = 10⁻³ ends below it."""
    V = _verdict()
    if 0.01 not in curves or 0.001 not in curves:
        return V.undecidable("needs CIFAR-100's curves at γ = 10⁻² and 10⁻³ (not diverged)")
    n = min(len(c) for c in curves.values())
    lead = [i for i in range(n) if curves[0.01][i] <= min(c[i] for c in curves.values())]
    end = curves[0.001][n - 1] < curves[0.01][n - 1]
    return V.decide(bool(lead) and end, f"γ = 10⁻² lowest at {len(lead)} of {n} evaluations; final loss γ = 10⁻³ "
                    f"{curves[0.001][n - 1]:.3f} vs γ = 10⁻² {curves[0.01][n - 1]:.3f}",
                    "10⁻² leads early, 10⁻³ ends lower" if lead and end
                    else "no early lead of 10⁻², or 10⁻³ not lower at the end")


def _decide_cifar(ev):
    why = _paper_data(ev, FIG12)
    if why:
        return _verdict().undecidable(why)
    m = ev.metrics.filter((pl.col("experiment") == FIG12) & (pl.col("dataset") == "fed_cifar100"))
    curves = {}
    for (alg,), g in m.group_by(["algorithm"]):
        if (g["status"] != "ok").any():
            continue
        lr = label_values(alg)[1].get("lr")
        curves[lr] = g.filter(pl.col("round") >= 1).group_by("round").agg(pl.col("train_loss").mean()).sort("round")[
            "train_loss"].to_list()
    return cifar_crossover_verdict(curves)


def tuned_eta_verdict(per_gamma: Mapping[str, Mapping[float, tuple[float, float]]]):
    """Fig. 13: {dataset: {γ: (first-evaluation loss, final loss) at the η selected for γ}}: the γ lowest at
    the first evaluation is larger than the smallest γ (a larger γ does better initially)."""
    V = _verdict()
    if not per_gamma or any(len(v) < 2 for v in per_gamma.values()):
        return V.undecidable("needs two non-diverged γ per data set at their selected η")
    out, bad = [], []
    for d, v in per_gamma.items():
        early = min(v, key=lambda g: v[g][0])
        out.append(f"{d}: lowest first loss at γ = {early:g}")
        if not early > min(v):
            bad.append(d)
    return V.decide(not bad, "; ".join(out), "a larger γ leads initially on every data set" if not bad else
                    f"the smallest γ leads initially on {', '.join(bad)}")


def _decide_fig13(ev):
    why = _paper_data(ev, FIG13)
    if why:
        return _verdict().undecidable(why)
    s = run_scores(ev.metrics, FIG13, "train_loss")
    best = best_by(s, ["dataset", "lr"], maximize=False)
    per = {}
    for r in best.iter_rows(named=True):
        per.setdefault(r["dataset"], {})[r["lr"]] = (r["first"], r["score"])
    return tuned_eta_verdict(per)


# ---------------------------------------------------------------- the claims


def declared():
    """The paper's claims, as code (:class:`fedbench.analysis.scorecard.Claim`)."""
    from fedbench.analysis.scorecard import Claim

    def c(id_, where, says, paper_value, measure, rule, decide=None, basis="", no_run="", figure=""):
        return Claim(f"local_update.{id_}", KEY, where, says, paper_value, measure, rule, decide, basis=basis,
                     no_run=no_run, figure=figure)

    exact = "no threshold: exact ordering"
    sim_note = ("Algorithm 2 run K steps per eigen-direction (the one-step map to the K-th power) and the tuned "
                "server's spectral radius (Lessard et al. 2016, Prop. 1), not the closed forms")
    return [
        # ---- closed forms against a simulation
        c("frontier_points", "Figs. 1–4, 9 (Lemmas 3–4, Table 2, eq. (17))",
          "the (ρ, Δ) trade-off of LocalUpdate methods: more local work (K, γ) converges faster (smaller ρ) to a worse "
          "point (larger Δ); its formulas give e.g. FedAvg, L = 5, γ = 0.01: K = 10 at (0.6151, 0.0438), K → ∞ at "
          "(0, 0.3820)",
          "the frontiers' closed forms (the paper prints no value; reference/local_update_frontier_points.csv: our "
          "values of its formulas, 4 decimals)",
          f"κ, ρ, Δ of every analytic reference point by simulation: {sim_note}; K → ∞ as K = 10⁸",
          "every printed value within half a unit of its last digit", _decide_frontier_points,
          basis="half a unit of the 4th decimal: the precision the reference values are printed to; the simulation "
                "itself is exact to float64", figure="local_update_fig2"),
        c("fig1_gamma_cannot_reach_zero", "§5 (Fig. 1)",
          "for L = 50, fixing K = 100 and varying γ does not reach ρ ≈ 0: K → ∞ recovers one-shot averaging while "
          "γ → 1/L does not (for L = 5 the curves are nearly identical)", "γ branch stops above ρ = 0 at L = 50",
          f"smallest ρ of Fig. 1's two branches, simulated: K = 100 at γ = 1/L, and γ = 0.01 at K → ∞ ({sim_note})",
          "L = 50: γ branch > 0.01, K branch < 1e-6; L = 5: both < 1e-6", _decide_fig1_gamma,
          basis="'ρ ≈ 0': below 1e-6, met to float precision by the K → ∞ limit; 0.01: far below the L = 50 γ "
                "branch's end (0.071 by the closed form) and far above float precision", figure="local_update_fig1"),
        c("fig1_closer_to_linear_for_small_L", "§5 (Fig. 1)",
          "the convergence-accuracy trade-off becomes closer to a linear trade-off as L/μ decreases",
          "more linear at L = 5 than at L = 50",
          f"the largest distance of Fig. 1 left's simulated frontier (γ = 0.01, 200 K over [1, 10⁶]) from the chord "
          f"between its ends, over the chord's length ({sim_note})", "smaller at L = 5 than at L = 50",
          _decide_fig1_linear, basis=exact, figure="local_update_fig1"),
        c("heavy_ball_symmetry", "§5 (after Fig. 2)",
          "the Pareto frontier for heavy-ball momentum appears symmetric about the line ρ = Δ (conjectured for any "
          "μ, L)",
          "symmetric (a conjecture from the figure)",
          f"the simulated heavy-ball frontier of Fig. 2 (Θ_{{1:K}}, α = 0, γ = 1/(2L), 400 K over [1, 10⁶], "
          f"L ∈ {{2, 10, 100}}; {sim_note}): the largest distance from each point's reflection (Δ, ρ) to the "
          "polyline through the points; no momentum's gap alongside as a control",
          "every reflected point within the polyline's longest segment, at every L", _decide_symmetry,
          basis="no threshold from the paper: a reflected point of a symmetric curve lies on the curve, hence within "
                "one segment of the polyline through its samples (the no-momentum frontier's gap, 0.1 or more, shows "
                "what asymmetry looks like)", figure="local_update_heavy_ball_symmetry"),
        c("momentum_gain_grows_with_L", "§5 (Figs. 2, 4)",
          "the benefit of momentum is more pronounced as L/μ increases; it diminishes for large K, where all momenta "
          "reach a similar suboptimality (one-shot averaging converges in one round)",
          "gain grows with L/μ; vanishes as K → ∞",
          "on Fig. 2's simulated frontier, L ∈ {2, 10, 100}: heavy ball's speed-up over no momentum in rounds, "
          f"ln ρ_HB / ln ρ_none, at K = 1, and ρ_none − ρ_HB at K = 10⁶ ({sim_note})",
          "the speed-up increases with L, and the K = 10⁶ gain in ρ is below 1e-3 of the K = 1 gain",
          _decide_momentum_by_L,
          basis="ordering: no threshold; benefit measured in rounds (T ∝ 1/ln(1/ρ)): the gain in ρ itself is not "
                "monotone in L (0.16, 0.30, 0.16 at L = 2, 10, 100); 'diminishes': below 1e-3 of the K = 1 gain, met "
                "to float precision by the K → ∞ limit, gain 0", figure="local_update_fig2"),
        c("prox_cannot_reach_one_shot", "§5 (Fig. 3)",
          "as α increases the frontier becomes a smaller subset of the α = 0 frontier; FedAvg can attain every (ρ, Δ) "
          "of FedProx, but FedProx cannot recover one-shot averaging",
          "α > 0 stops short of ρ = 0, more so for larger α",
          f"the smallest ρ reachable (K → ∞, γ = 1/(2(L + α)), L = 10) for α ∈ {{0, 0.5, 1, 5}} ({sim_note})",
          "α = 0 reaches ρ < 1e-6; the α > 0 endpoints are above it and increase with α", _decide_prox_subset,
          basis="ordering: no threshold; 'reaches ρ = 0': below 1e-6 at K = 10⁸ (the remaining term is (1 − γμ)^K ≈ 0)",
          figure="local_update_fig3"),
        c("maml_subset_of_fedavg", "§5 (Fig. 4)",
          "for each ServerOpt the MAML (Θ_K) frontier is a subset of the FedAvg (Θ_{1:K}) frontier, because Θ_K needs "
          "γ < 1/(KL + α)", "subset",
          f"the smallest ρ of Θ_K at γ = 1/(2LK) (K up to 10⁸) against FedAvg's at γ = 10⁻³, L = 10, per server "
          f"({sim_note})",
          "Θ_K's smallest ρ above FedAvg's for every server", _decide_maml_subset, basis=exact,
          figure="local_update_fig4"),
        c("maml_split_threshold", "§5 (Fig. 5)",
          "the Θ_K (MAML) and Θ_{1:K} (FedAvg) frontiers are identical for small K and diverge when γ ≥ 1/(KL + α)",
          "identical below K = 1/(γL) = 100, apart beyond",
          "on one random A (d = 100, Appendix D.1, seed 0; L = 10, γ = 10⁻³): Θ_K's simulated Δ (Lemma 5's form) "
          "against FedAvg's curve at the same κ, eq. (17), K = 1..200",
          "|difference| ≤ 1e-9 for K < 100, > 1e-9 at K = 200", _decide_split,
          basis="1e-9: float64 agreement of two evaluations of one quantity (below the threshold b/a = κ₀/κ exactly)",
          figure="local_update_fig5"),
        c("maml_cusp_at_one_shot", "§5 (Fig. 5; printed as 'Figure 4')",
          "the d = 100 MAML curve has a clear cusp at the same suboptimality as the intersection of the FedAvg curve "
          "with the y-axis (one-shot averaging)", "cusp Δ = FedAvg's K → ∞ Δ",
          "the simulated Θ_K frontier on one random A (d = 100, seed 0; L = 10, γ = 10⁻³), integer K = 1..300: Δ at "
          "its smallest ρ against (√κ₀ − 1)/(√κ₀ + 1)",
          "|difference| ≤ the change of Δ over one step of K at the cusp", _decide_cusp,
          basis="K is an integer: the cusp lies between two K, so Δ there is known to one step of K",
          figure="local_update_fig5"),
        c("maml_noise_by_dimension", "§5 (Fig. 5)",
          "the MAML frontier is noisy for d = 5 (ρ, Δ depend on random eigenvalues of A) but stabilizes for d = 100",
          "noisy at d = 5, stable at d = 100",
          "the standard deviation of the simulated Θ_K ρ at K = 300 (past the split) over 20 random A (Appendix D.1), "
          "d = 5 against d = 100 (Δ in Lemma 5's form depends only on the extreme eigenvalues, fixed at μ and L)",
          "larger at d = 5", _decide_noise, basis=exact, figure="local_update_fig5"),
        c("maml_discrepancy_grows_with_L", "Appendix D.1 (Fig. 7)",
          "as L increases with respect to μ, the discrepancy between the MAML and FedAvg curves grows: for small L/μ "
          "MAML recovers most of the FedAvg curve before diverging, for large L/μ they diverge almost immediately",
          "discrepancy grows with L/μ",
          "the share of FedAvg's Δ range that the simulated Θ_K curve (one random A, d = 100) covers while it is on "
          "FedAvg's curve (K < 1/(γL)), L ∈ {2, 5, 10, 100}, γ = 10⁻³",
          "decreasing in L", _decide_discrepancy, basis=exact, figure="local_update_fig7"),
        c("momentum_helps_maml", "Appendix D.1 (Fig. 8)",
          "momentum helps convergence in all cases, FedAvg or MAML (the differences are not huge)",
          "heavy ball, Nesterov below none in ρ at equal Δ",
          "ρ at 9 K ∈ [1, 1000] (equal Δ across servers) of the simulated Θ_K (one random A, d = 100) and Θ_{1:K} "
          f"frontiers, L = 10, γ = 10⁻³ ({sim_note})",
          "heavy ball < Nesterov < none at every K, both families", _decide_momentum_maml, basis=exact,
          figure="local_update_fig8"),
        c("maml_concavity_with_momentum", "Appendix D.1 (Fig. 8)",
          "with momentum the region to the right of the d = 100 MAML curve becomes more convex, more rounded for "
          "heavy ball than for Nesterov", "a shape", "—", "—",
          no_run="a description of a curve's shape in a figure, with no measure of convexity the paper defines or a "
                 "run could compare", figure="local_update_fig8"),
        c("alpha_changes_fedavg_not_maml", "Appendix D.1 (Fig. 10)",
          "increasing α shrinks the space of the Pareto curve of FedAvg, but does not change the MAML curves by a "
          "meaningful amount", "FedAvg shrinks, MAML barely moves",
          "over α ∈ {0, 0.5, 1, 5, 10} (L = 10, γ = 10⁻³): the range of FedAvg's smallest ρ (K → ∞) against the range "
          "of the simulated Θ_K curve's smallest ρ (its cusp; one random A, d = 100)",
          "Θ_K's range smaller than FedAvg's", _decide_alpha_maml,
          basis="no threshold from the paper ('meaningful'): the comparison the sentence makes, MAML's change against "
                "FedAvg's", figure="local_update_fig10"),
        c("fig9_alpha_shape", "Appendix D.1 (Fig. 9)",
          "for Θ_K (γ < 1/(KL + α)) adding a proximal term only alters how much of the frontier is traversed, not its "
          "shape: the only restriction comes from larger α admitting fewer γ", "same shape, shorter",
          "—", "—",
          no_run="the paper gives no α for Fig. 9, and at its γ = 10⁻⁷ only an α of order 1/γ restricts K, where a "
                 "step-by-step run of Algorithm 2 underflows float64 ((1 − γ(L + α))^K ≈ 2^−K); the figure draws "
                 "the closed forms", figure="local_update_fig9"),
        c("mad_bhatia_davis", "Theorem 5, Corollary 2 (Appendix C)",
          "for a discrete X on [a, b], E|X − EX| ≤ 2(b − EX)(EX − a)/(b − a), with equality iff X is supported on "
          "{a, b} (a Bhatia–Davis analogue); hence ≤ (b − a)/2", "an inequality, tight on {a, b}",
          "D(X) against the bound on 2,000 random discrete X on [0, 1] (2–6 atoms, Dirichlet weights), and on the "
          "two-point X over their {a, b}", "D(X) ≤ bound + 1e-12 always, |D(X) − bound| ≤ 1e-12 on two points",
          _decide_mad, basis="1e-12: float64 rounding of sums of at most 6 terms in [0, 1]"),
        c("c2_tight_example", "Appendix C.2 (Lemma 12)",
          "on the one-dimensional two-client instance the limit distance is lim_K |x*(α, γ, Θ_K) − x*| = 8p/(3p + 1), "
          "so the d = 1 bound 2C(√b − √a)/(√b + √a) is tight as p → 1", "8p/(3p + 1) (1.9459 at p = 0.9)",
          "|x_T − x*| after running LocalUpdate (Algorithm 2 per client, K = 60, server step 1/H̃) on A = (4, 1), "
          "c = (1, −1), γ = 1/8, p = 0.9",
          "within 1e-9 of 8p/(3p + 1)", _decide_c2,
          basis="1e-9: at K = 60 the limit is reached to (Q₁/Q₂) = (4/7)^59 ≈ 5e-15; the rest is float64 rounding"),
        # ---- the theory against the engine (federated quadratic)
        c("fixed_point_is_surrogate", "Theorem 1, Lemma 11",
          "LocalUpdate (FedAvg, FedProx, Reptile, MAML, …) converges to x*(α, γ, Θ), the minimizer of a surrogate "
          "loss, not to the minimizer x* of the true loss", "x_T → x*(α, γ, Θ) ≠ x*",
          "the engine's ‖x_T − x*‖_H = √(2(train_loss_T − f*)) beside the theory's ‖x*(α, γ, Θ) − x*‖_H: table "
          "local_update_theory",
          f"every converged deterministic cell (ρ^T ≤ {CONVERGED:g}) within relative {FIXED_POINT_TOL:g}, and the "
          f"distance > 0 (where x*(α, γ, Θ) = x*, K = 1: the engine within {DIST_FLOOR:g} of x*)", _decide_fixed_point,
          basis=f"{FIXED_POINT_TOL:g}: float64 agreement of an exact identity (the deterministic engine computes the "
                f"surrogate's gradient exactly); converged: ρ^T ≤ {CONVERGED:g} leaves a transient below it; "
                f"{DIST_FLOOR:g}: above the float floor √(2ε|f*|) ≈ 1e-8 of the engine's √(2(train_loss − f*))"),
        c("surrogate_trajectory", "Theorem 1",
          "each round of LocalUpdate is a step of the server optimizer on the surrogate loss",
          "exact (deterministic clients)",
          "the engine's train_loss_t − f* beside f(x_t) − f(x*) along the server's recursion on the surrogate's "
          "exact gradient from x_0 = 0, every evaluated round: table local_update_theory",
          f"largest relative difference ≤ {TRAJECTORY_TOL:g}", _decide_trajectory,
          basis=f"{TRAJECTORY_TOL:g}: float64 agreement of an exact identity"),
        c("members_are_local_update", "Table 1, Appendix A",
          "FedAvg is LocalUpdate with Θ_{1:K} and η = γ, FedProx the same with α > 0, Reptile η = εγ, FedAvgM a "
          "momentum server", "exact",
          "the surrogate-trajectory check of the fedavg, fedprox, reptile and fedavgm cells (their own "
          "implementations, mapped to the member)",
          f"largest relative difference ≤ {TRAJECTORY_TOL:g}", _decide_members,
          basis=f"{TRAJECTORY_TOL:g}: float64 agreement of an exact identity"),
        c("maml_is_theta_2k_plus_1", "Theorem 2",
          "MAML with K inner full-batch gradient steps is LocalUpdate with Θ_{2K+1} on quadratics", "exact",
          "the surrogate-trajectory check of the maml cells (second-order MAML, autograd through the inner steps) "
          "against Θ_{2K+1}", f"largest relative difference ≤ {TRAJECTORY_TOL:g}", _decide_maml,
          basis=f"{TRAJECTORY_TOL:g}: float64 agreement of an exact identity"),
        c("rate_is_server_rate", "Theorem 3",
          "LocalUpdate converges linearly to x*(α, γ, Θ) at the rate of ServerOpt on the surrogate",
          "‖x_T − x*(α, γ, Θ)‖ ≤ ρ^T‖x_0 − x*(α, γ, Θ)‖",
          "the engine's per-round contraction of |train_loss_t − f(x*(α, γ, Θ))| (log-linear fit of its tail maximum) "
          "against the spectral radius of the server's iteration on H̃ at the cell's (η, β): table local_update_theory",
          f"relative difference ≤ {RATE_TOL:g} at every deterministic cell with a fit, its (η, β) not the tuned ones "
          "(there all modes contract at one modulus, with a t·ρ^t envelope for the double root of heavy ball and "
          "Nesterov, which biases the fit: momentum_converges_faster lists them beside Table 2)", _decide_rate,
          basis=f"{RATE_TOL:g}: the fit's own error on exact surrogate iterates (about 1e-2, a few 1e-2 with momentum, "
                "whose oscillating modes make the envelope uneven; tests/papers/test_local_update.py measures it on "
                "a known contraction)"),
        c("table2_rates", "Theorem 3, Table 2, Lemma 2",
          "with tuned ServerOpt the rate is ρ = (κ − 1)/(κ + 1) (no momentum), 1 − 2/√(3κ + 1) (Nesterov), "
          "(√κ − 1)/(√κ + 1) (heavy ball), κ = κ(α, γ, Θ) of eq. (9) ≥ cond(f̃)", "Table 2",
          "per quadratic cell, the spectral radius of each server's iteration on the run's surrogate H̃ at its tuned "
          "(η, β) (Lessard et al. 2016, Prop. 1) against Table 2's formula at cond(H̃), and against Table 2 at κ of (9)",
          f"equal within {TABLE2_TOL:g}, and ≤ the eq. (9) rate", _decide_table2,
          basis=f"{TABLE2_TOL:g}: the tuned heavy-ball and Nesterov iterations have a double root, computed to about "
                "√ε ≈ 1e-8 in float64"),
        c("momentum_ordering", "§5 (Fig. 2), Table 2",
          "a strict ordering of the server optimizers: heavy-ball momentum is better than Nesterov momentum, which is "
          "better than no momentum", "heavy ball < Nesterov < none",
          "the tuned servers' spectral radii on each quadratic cell's surrogate H̃ (table local_update_theory)",
          "strict ordering at every cell with cond(H̃) > 1", _decide_momentum_ordering, basis=exact,
          figure="local_update_fig2"),
        c("momentum_same_fixed_point", "§4 (after Table 2)",
          "ServerOpt does not change the surrogate: momentum speeds up convergence without changing the point "
          "LocalUpdate converges to", "the same x*(α, γ, Θ) with any server",
          "the engine's converged ‖x_T − x*‖_H of deterministic cells that train one surrogate (Θ, γ, α) with "
          "different servers",
          f"relative spread ≤ {FIXED_POINT_TOL:g}", _decide_momentum_same_point,
          basis=f"{FIXED_POINT_TOL:g}: float64 agreement of an exact identity"),
        c("momentum_converges_faster", "§5, Table 2 (Fig. 6 left)",
          "server momentum can improve convergence", "faster with momentum",
          "the engine's fitted rate of heavy-ball and Nesterov cells against the server-GD cell of the same surrogate, "
          "each at its server's tuned (η, β) for that surrogate (Table 2's setting; quick file: lu_all_*_tuned); at "
          "one untuned η momentum can be slower (table local_update_theory)",
          "smaller rate with momentum in every pair", _decide_momentum_faster, basis=exact),
        c("prox_closer_and_slower", "§5 (Fig. 3)",
          "proximal client updates may not enable faster convergence; they reduce FedAvg's objective inconsistency "
          "at the expense of convergence time (consistent with Wang et al. 2020)",
          "α > 0: closer fixed point, slower",
          "the engine's converged ‖x_T − x*‖_H and fitted rate of deterministic cells differing only in α",
          "α > 0 closer and slower than α = 0 in every pair", _decide_prox_tradeoff, basis=exact),
        c("local_steps_tradeoff", "Corollary 1, §4–5, abstract",
          "the number of local steps governs a trade-off: more local steps converge faster to a point farther from x*",
          "faster to a worse point as K grows",
          "a deterministic sweep of K at fixed γ, η (quick file: local_update_quick_steps): the engine's fitted rate "
          "and its converged ‖x_T − x*‖_H per K",
          "rate strictly decreasing and converged distance strictly increasing in K", _decide_steps_tradeoff,
          basis=exact, figure=""),
        c("gamma_tradeoff", "Corollary 1, abstract, Appendix F",
          "the client learning rate γ governs a trade-off between the surrogate's condition number (speed) and its "
          "alignment with the true loss (accuracy)", "faster to a worse point as γ grows",
          "a deterministic Θ_{1:K} sweep of γ at fixed K (quick file: local_update_quick): the tuned server's rate on "
          "each cell's surrogate (Table 2 at tuned η: a fixed η does not trade, Appendix F) and the engine's converged "
          "‖x_T − x*‖_H per γ",
          "tuned rate strictly decreasing and converged distance strictly increasing in γ", _decide_gamma_tradeoff,
          basis=exact),
        c("lemma5_bias_bound", "Lemma 5, Theorem 4",
          "‖x*(α, γ, Θ) − x*‖ ≤ 8C(√b − √a)/(√b + √a) (a, b the extreme eigenvalues of the Q_i; C = max ‖c_i‖)",
          "a bound",
          "the engine's converged ‖x_T − x*‖ bracketed from ‖x_T − x*‖_H by √λ_min(H), √λ_max(H), against the bound "
          "on the run's problem (table local_update_theory)",
          "holds when the upper bracket is below the bound, fails when the lower one is above (cells with "
          f"‖x_T − x*‖_H ≤ {DIST_FLOOR:g}, x*(α, γ, Θ) = x*, left out)", _decide_bias_bound,
          basis="no threshold: the theorem's inequality; a bracket that straddles the bound is not decidable"),
        c("bias_bound_2c_conjecture", "§4 (after Lemma 5), Lemma 12",
          "we conjecture the bound holds with the constant 2C for all d (proved for d = 1)",
          "‖x*(α, γ, Θ) − x*‖ ≤ 2C(√b − √a)/(√b + √a)",
          "as lemma5_bias_bound, against 2C(√b − √a)/(√b + √a)",
          "holds when the upper bracket is below the bound, fails when the lower one is above", _decide_bias_2c,
          basis="no threshold: the conjectured inequality"),
        # ---- the neural-network findings
        c("fig6_momentum_helps", "§6, Fig. 6/11 left (Appendix E)",
          "on FEMNIST (Θ_{1:50}, tuned γ and η) server momentum improves convergence", "momentum above no momentum",
          f"mean test accuracy over the last 100 rounds ({LAST} evaluations) at each server's best (γ, η) of the 9×9 "
          f"grid (experiment {FIG6_MOMENTUM})", "heavy ball and Nesterov above server GD", _decide_fig6_momentum,
          basis="no threshold from the paper (no number given): ordering of the tuned accuracies",
          figure="local_update_accuracy"),
        c("fig6_alpha_little_effect", "§6, Fig. 6/11 right (Appendix E)",
          "α has little to no effect, provided we tune learning rates", "little to no effect",
          f"the spread of the tuned accuracy (as fig6_momentum_helps) over α ∈ {{0, 0.01, 0.1, 1}} (experiment "
          f"{FIG6_ALPHA})", "spread smaller than momentum's gain over server GD in the same run", _decide_fig6_alpha,
          basis="no threshold from the paper: the contrast the section draws between Fig. 6's two panels (momentum "
                "improves, α has little effect)", figure="local_update_accuracy"),
        c("fig12_smaller_gamma_lower_loss", "Appendix F, Fig. 12",
          "for both FEMNIST and CIFAR-100, smaller client learning rates eventually reach lower training losses",
          "final loss increases with γ",
          f"training loss averaged over the last 100 rounds per γ at η = 0.01, non-diverged runs (experiment {FIG12})",
          "strictly increasing in γ on FEMNIST and CIFAR-100", _decide_fig12, basis=exact,
          figure="local_update_gamma_loss"),
        c("fig12_cifar_crossover", "Appendix F, Fig. 12 (CIFAR-100)",
          "γ = 10⁻² initially performs better than all other γ but is eventually surpassed by γ = 10⁻³",
          "10⁻² leads early, 10⁻³ ends lower",
          f"CIFAR-100's training loss per evaluation and γ at η = 0.01 (experiment {FIG12})",
          "γ = 10⁻² lowest at some evaluation, and γ = 10⁻³ below it at the last", _decide_cifar, basis=exact,
          figure="local_update_gamma_loss"),
        c("fig12_fedsgd_comparable", "Appendix F, Fig. 12 (CIFAR-100)",
          "γ = 0 (FedSGD) ends up obtaining a comparable accuracy", "comparable", "—", "—",
          no_run="fedbench's local.lr must be > 0, so the γ = 0 run is left out of the experiments "
                 "(config/experiments/local_update.yaml)"),
        c("fig13_tuned_eta_larger_gamma_early", "Appendix F, Fig. 13",
          "when the server learning rate is tuned, larger client learning rates may do much better initially",
          "a larger γ leads early",
          f"per γ at the η selected by the mean training loss of the last 100 rounds (experiment {FIG13}): the "
          "training loss at the first evaluation",
          "the γ lowest at the first evaluation is not the smallest γ, on every data set", _decide_fig13, basis=exact,
          figure="local_update_gamma_loss"),
        c("communication_limited_advice", "Appendix F, §5",
          "in communication-limited settings use larger γ (or K); with many rounds use smaller γ (or K)",
          "advice", "—", "—",
          no_run="a recommendation drawn from the trade-off, not a measurement; its evidence is the K and γ trade-off "
                 "rows (local_steps_tradeoff, gamma_tradeoff, fig12_smaller_gamma_lower_loss)"),
    ]
