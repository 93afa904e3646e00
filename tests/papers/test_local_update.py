"""fedbench.papers.local_update: Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated
Learning and Meta-Learning", AISTATS 2021.

- every reference point of the frontier figures equals fedbench.theory at its printed precision
  (the simulated d = 100 points within the spread of one random draw), and lies on its panel's curve;
- the frontier, symmetry and neural-network figures are written (diverged runs marked, not drawn);
- the algorithm → LocalUpdate member map (Table 1, Appendix A, Theorem 2), the server recursion's
  rate at the tuned (η, β) is Table 2's ρ, the empirical rate recovers a known contraction;
- the analytic-vs-empirical table on hand-made metrics: exact surrogate-GD iterates give the
  theory's fixed point to float precision and its rate; a diverged run is no result.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from fedbench.analysis import scorecard as sc
from fedbench.config import expand_cells
from fedbench.data.quadratic import client_quadratics, generate_quadratic, global_optimum
from fedbench.papers import local_update as lu
from fedbench.papers.local_update import curves as lu_curves
from fedbench.papers.local_update import frontiers as lu_frontiers
from fedbench.papers.local_update import paper_claims as lu_claims
from fedbench.papers.local_update import simulation as lu_sim
from fedbench.papers.local_update import theory as lu_theory
from fedbench.theory import closed_forms as cf
from fedbench.theory import limits, rates
from fedbench.theory import quadratic as tq

EXP = Path(__file__).resolve().parents[2] / "config" / "experiments"


def _close(value, printed, digits):
    assert abs(float(value) - printed) <= 0.5 * 10.0**-digits + 1e-12, (value, printed)


def test_reference_points_are_the_theory_at_their_printed_precision():
    ref = lu_frontiers.reference_frame()
    assert ref.height == 76
    analytic = 0
    for r in ref.iter_rows(named=True):
        if r["family"] == "simulated":
            continue
        kappa, rho, delta = lu_frontiers.reference_point(r)
        if r["family"] == "last_cusp":  # the cusp's K, printed to 1 decimal
            _close(limits.last_cusp_steps(1.0, r["L"], r["alpha"], r["gamma"]), float(r["K"]), 1)
        if r["kappa"] is not None:
            _close(kappa, r["kappa"], r["digits"])
        if r["rho"] is not None:
            _close(rho, r["rho"], r["digits"])
        _close(delta, r["delta"], r["digits"])
        analytic += 1
    assert analytic == ref.filter(pl.col("family") != "simulated").height


def test_simulated_reference_points_are_one_random_draw_at_d_100():
    """Fig. 5's d = 100 points (one draw in our notes): a draw of ours agrees within 0.02."""
    ref = lu_frontiers.reference_frame().filter(pl.col("family") == "simulated")
    rng = np.random.default_rng(0)
    lam = cf.random_spectrum(rng, 100, 1.0, 10.0)
    for r in ref.iter_rows(named=True):
        kappa, delta = cf.last_spectrum_point(lam, r["alpha"], r["gamma"], float(r["K"]))
        assert abs(delta - r["delta"]) < 0.02
        assert abs(float(rates.rate(kappa, r["server"])) - r["rho"]) < 0.02


def _distance_to_polyline(px, py, xs, ys):
    ax, ay, bx, by = xs[:-1], ys[:-1], xs[1:], ys[1:]
    dx, dy = bx - ax, by - ay
    t = np.clip(((px - ax) * dx + (py - ay) * dy) / np.maximum(dx * dx + dy * dy, 1e-300), 0, 1)
    return float(np.min(np.hypot(ax + t * dx - px, ay + t * dy - py)))


@pytest.mark.parametrize("fig", ["fig1", "fig2", "fig3", "fig4"])
def test_reference_points_lie_on_their_panels_curves(fig):
    ref = lu_frontiers.reference_frame()
    for panel in lu_frontiers.frontier_panels(f"local_update_{fig}"):
        curves = [c for c in panel["curves"]]
        for c in curves:
            assert np.all((c["rho"] >= -1e-12) & (c["rho"] <= 1)) and np.all((c["delta"] >= -1e-12) & (c["delta"] <= 1))
        pts = lu_frontiers._reference_xy(ref, fig, panel["key"])
        assert pts, (fig, panel["key"])
        for rho, delta, _ in pts:
            d = min(_distance_to_polyline(rho, delta, c["rho"], c["delta"]) for c in curves)
            assert d < 2e-3, (fig, panel["title"], rho, delta, d)


def test_cusp_reference_points_lie_on_the_d_100_curves():
    """The dense-spectrum cusp (κ = ψ(λ*)/ψ(μ), Δ = (√κ₀ − 1)/(√κ₀ + 1)) is where the d = 100 simulated
    Θ_K frontier turns (Fig. 7's four L), and the Θ_{1:K} endpoints are on the analytic curves."""
    ref = lu_frontiers.reference_frame()
    for panel in lu_frontiers.frontier_panels("local_update_fig7"):
        d100 = next(c for c in panel["curves"] if c["label"] == "Θ_K simulated, d = 100")
        full = panel["curves"][-1]
        for rho, delta, K in lu_frontiers._reference_xy(ref, "fig7", panel["key"]):
            curve = full if K == "inf" else d100
            assert _distance_to_polyline(rho, delta, curve["rho"], curve["delta"]) < 0.02, (panel["key"], K)


def test_frontier_and_symmetry_figures_are_written(tmp_path):
    for name in ("local_update_fig1", "local_update_fig5", "local_update_fig9"):
        assert lu.write_figure(name, [], tmp_path / f"{name}.png").stat().st_size > 10_000
    assert lu.write_figure(lu_frontiers.SYMMETRY, [], tmp_path / "s.png").stat().st_size > 10_000
    with pytest.raises(KeyError):
        lu.write_figure("nope", [], tmp_path / "n.png")


def test_heavy_ball_frontier_is_its_own_reflection_and_gd_is_not():
    for L in lu_frontiers.FIG2_L:
        assert lu_frontiers.symmetry_gap(L) < 2e-3
    K = lu_frontiers.k_grid(4000)
    rho, delta = lu_frontiers._full(10.0, 0.0, 0.05, K, "gd")  # no momentum: not symmetric
    order = np.argsort(rho)
    assert np.max(np.abs(np.interp(delta, rho[order], delta[order]) - rho)) > 0.1


def test_simulated_theta_k_matches_the_analytic_curve_below_lemma_4s_threshold():
    """For K < 1/(γL) the simulated Θ_K point is the analytic one (κ = ψ(L)/ψ(μ), b/a = κ₀/κ)."""
    K = np.array([1.0, 10.0, 50.0])
    rho, delta = lu_frontiers._simulated(10.0, 0.0, 1e-3, K, 5, 0)
    kappa = cf.kappa_last(1.0, 10.0, 0.0, 1e-3, K)
    np.testing.assert_allclose(rho, rates.rate(kappa, "gd"), rtol=1e-12)
    np.testing.assert_allclose(delta, rates.suboptimality(10.0, kappa), atol=1e-12)


def _cell(name, hp, lr=0.03, steps=10, **kw):
    return {"experiment": "e", "dataset": "q", "partition": "natural", "algorithm": name, "seed": 0,
            "algorithm_name": name, "hparams": hp, "model": {"name": "quadratic"},
            "local": {"steps": steps, "batch_size": 10, "lr": lr},
            "sampling": {"scheme": "uniform", "participation": 1.0}, "rounds": 50, **kw}


def test_members_of_the_family():
    m = lu_theory.member(_cell("fedavg", {}))
    assert m["eta"] == 0.03 and m["server"] == "gd" and np.all(m["theta"] == 1) and len(m["theta"]) == 10
    m = lu_theory.member(_cell("fedprox", {"mu": 0.5}))
    assert m["alpha"] == 0.5 and m["eta"] == 0.03
    assert lu_theory.member(_cell("reptile", {"epsilon": 1.5}))["eta"] == pytest.approx(0.045, rel=1e-15)
    m = lu_theory.member(_cell("fedavgm", {"server_lr": 2.0, "momentum": 0.5, "dampening": 0.5, "nesterov": False}))
    assert (m["server"], m["eta"], m["beta"]) == ("heavy_ball", 0.03, 0.5)
    m = lu_theory.member(_cell("maml", {"inner_steps": 2, "server_opt": "nesterov", "server_lr": 0.5, "momentum": 0.3},
                        steps=1))
    assert list(m["theta"]) == [0, 0, 0, 0, 1] and m["server"] == "nesterov" and m["beta"] == 0.3
    m = lu_theory.member(_cell("local_update", {"theta": "last", "alpha": 0.1, "server_opt": "gd", "server_lr": 1.0}))
    assert list(m["theta"]) == [0] * 9 + [1] and m["label"].startswith("Θ_10")
    with pytest.raises(ValueError, match="not a LocalUpdate member"):
        lu_theory.member(_cell("scaffold", {}))
    with pytest.raises(ValueError, match="weight decay"):
        lu_theory.member({**_cell("fedavg", {}),
                          "local": {"steps": 10, "batch_size": 10, "lr": 0.1, "weight_decay": 0.1}})


@pytest.mark.parametrize("server", ["gd", "nesterov", "heavy_ball"])
def test_server_rate_at_the_tuned_parameters_is_table_2(server):
    ev = np.linspace(2.0, 30.0, 7)
    eta, beta = rates.tuned_server_parameters(ev[-1], ev[0], server)
    assert lu_theory.server_rate(ev, server, eta, beta) == pytest.approx(float(rates.rate(15.0, server)), rel=1e-7)
    assert lu_theory.server_rate(ev, "adam", 0.1) is None


def test_empirical_rate_recovers_a_contraction():
    t = np.arange(80)
    rate, n = lu_theory.empirical_rate(0.7 + 0.3 * 0.6**t, 0.7)
    assert rate == pytest.approx(0.6, rel=1e-5) and n >= 4
    rate, _ = lu_theory.empirical_rate(1.0 + 0.5**t * np.cos(1.3 * t), 1.0)  # oscillating (momentum)
    assert rate == pytest.approx(0.5, rel=0.05)
    assert lu_theory.empirical_rate([1.0, 1.0, 1.0], 1.0) == (None, 0)
    every3 = np.arange(0, 90, 3)  # evaluations every 3 rounds: the rate is per round
    rate, _ = lu_theory.empirical_rate(0.7 + 0.3 * 0.6**every3, 0.7, rounds=every3)
    assert rate == pytest.approx(0.6, rel=1e-5)


@pytest.fixture(scope="module")
def quad():
    ds = generate_quadratic(num_clients=4, dim=3, mu=1.0, L=10.0, seed=2)
    A, c, p = client_quadratics(ds.x_train, ds.client_train)
    x_star, f_star = global_optimum(ds.x_train, ds.client_train)
    return ds, (A, c, p, x_star, f_star, 3)


def _gd_rows(mr, quad, cell, rounds, eta, diverge_at=None):
    """The exact iterates of server GD on the surrogate of ``cell``'s member, as metrics rows."""
    ds, (A, c, p, x_star, f_star, _) = quad
    m = lu_theory.member(cell)
    QA = tq.distorted_hessian(A, m["alpha"], m["gamma"], m["theta"])
    H, b = np.einsum("i,ijk->jk", p, QA), np.einsum("i,ijk,ik->j", p, QA, c)
    x, losses = np.zeros(3), []
    for _ in range(rounds):
        x = x - eta * (H @ x - b)
        losses.append(tq.global_loss(x, A, c, p))
    rows = mr.run_rows([0.5] * rounds, experiment=cell["experiment"], dataset=cell["dataset"],
                       partition=cell["partition"], algorithm=cell["algorithm"], diverge_at=diverge_at)
    for r, loss in zip(rows, losses):
        r["train_loss"] = loss
    return rows


def test_theory_table_on_hand_made_metrics(mr, quad, tmp_path):
    cells = [_cell("fedavg", {}, lr=0.05), {**_cell("local_update", {"theta": "last", "server_lr": 0.4,
                                                                        "server_opt": "gd"}, lr=0.01),
                                           "algorithm": "lu_last"},
             {**_cell("fedprox", {"mu": 0.5}, lr=0.05), "algorithm": "fedprox_div"},
             {**_cell("fedavg", {}, lr=0.05), "algorithm": "fedavg_sto",
              "local": {"steps": 10, "batch_size": 1, "lr": 0.05}}]
    rows = (_gd_rows(mr, quad, cells[0], 120, 0.05) + _gd_rows(mr, quad, cells[1], 120, 0.4)
            + _gd_rows(mr, quad, cells[2], 10, 0.05, diverge_at=10) + _gd_rows(mr, quad, cells[3], 120, 0.05))
    frame = lu_theory.theory_frame(mr.frame(rows), cells + [{**_cell("scaffold", {}), "algorithm": "scaffold"}],
                            {"q": quad[1]})
    assert frame.height == 5
    other = frame.row(4, named=True)
    assert other["status"] == "no theory" and "not a LocalUpdate member" in other["member"]
    for r in frame.head(2).iter_rows(named=True):
        assert r["setting"] == "deterministic" and r["status"] == "ok"
        assert r["dist_rel_error"] < 1e-8  # the fixed point x*(α, γ, Θ), to float precision
        assert r["rate_rel_error"] < 0.03 and r["residual"] < 1e-10
        assert r["trajectory_error"] < 1e-9  # Theorem 1 round by round
        assert r["dist_theory"] > 1e-3  # x*(α, γ, Θ) ≠ x*: the check can fail
    div = frame.row(2, named=True)
    assert div["status"] == "diverged" and div["dist_engine"] is None and div["rate_engine"] is None
    sto = frame.row(3, named=True)
    assert sto["setting"] == "stochastic" and sto["rate_engine"] is None and sto["dist_rel_error"] is None
    md = lu_theory.markdown_theory(frame)
    assert "diverged (not a result)" in md and "— (stochastic)" in md and "Θ_{1:10}" in md
    # the checks can fail: a run at another η (or of another member) is off the predicted trajectory
    wrong = lu_theory.theory_frame(mr.frame(_gd_rows(mr, quad, cells[0], 120, 0.05 * 1.01)), cells[:1], {"q": quad[1]})
    assert wrong.row(0, named=True)["trajectory_error"] > 1e-3
    assert frame.row(0, named=True)["dist_engine"] > 1e-3  # and x*(α, γ, Θ) is not x*


@pytest.mark.parametrize("server", ["gd", "heavy_ball", "nesterov"])
def test_surrogate_losses_contract_at_the_server_rate(quad, server):
    """The recursion of :func:`surrogate_losses` (the engine's server forms; the engine's iterates are
    compared with it round by round in the quick experiment's table) converges to f(x*(α, γ, Θ)) at
    the spectral radius :func:`server_rate` (untuned (η, β): distinct roots, no polynomial prefactor)."""
    _, (A, c, p, x_star, f_star, _) = quad
    m = lu_theory.member(_cell("local_update",
                               {"theta": "all", "server_opt": server, "server_lr": 0.0, "momentum": 0.0}, lr=0.05))
    QA = tq.distorted_hessian(A, 0.0, 0.05, m["theta"])
    ev = np.linalg.eigvalsh(np.einsum("i,ijk->jk", p, QA))
    eta, beta = rates.tuned_server_parameters(ev[-1], ev[0], server)
    m["eta"], m["beta"] = 0.7 * eta, 0.5 * beta
    losses = lu_theory.surrogate_losses(A, c, p, m, 300)
    x_sur = tq.surrogate_minimizer(A, c, p, 0.0, 0.05, m["theta"])
    rate, _ = lu_theory.empirical_rate(losses, tq.global_loss(x_sur, A, c, p), window=1e-4)
    assert rate == pytest.approx(lu_theory.server_rate(ev, server, m["eta"], m["beta"]), rel=0.03)
    with pytest.raises(ValueError, match="adam"):
        lu_theory.surrogate_losses(A, c, p, {**m, "server": "adam"}, 3)


def test_declarations(quad):
    quick = expand_cells(yaml.safe_load((EXP / "local_update_quick.yaml").read_text()))
    cells = [dict(c, paper="local_update") for c in quick]
    (table,) = lu.tables(cells)
    dirs = {c["dataset"]: c["dataset_dir"] for c in quick}
    assert table.name == lu_theory.THEORY and table.inputs == [f"{dirs['quad']}/meta.json",
                                                               f"{dirs['quad_noisy']}/meta.json"]
    assert dirs["quad"].startswith("resources/datasets/quad-")
    names = [f.name for f in lu.figures(cells)]
    assert names == [*lu_frontiers.FRONTIER_FIGURES, lu_frontiers.SYMMETRY]  # no neural-network cells
    assert lu.tables([]) == [] and lu.figures([]) == []
    full = expand_cells(yaml.safe_load((EXP / "local_update.yaml").read_text()))
    figs = {f.name: f for f in lu.figures(full)}
    assert lu.tables(full) == []
    assert {c["experiment"] for c in figs[lu_curves.ACCURACY].cells} == {"local_update_femnist_momentum",
                                                                  "local_update_femnist_alpha"}
    assert {c["experiment"] for c in figs[lu_curves.GAMMA_LOSS].cells} == {"local_update_gamma_fixed_eta",
                                                                    "local_update_gamma_tuned_eta"}


def _nn_rows(mr, cells, score):
    rows = []
    for c in cells:
        s = score(c)
        diverged = s is None
        r = mr.run_rows([0.1, 0.2, 0.3] if diverged else [s / 2, s, s], experiment=c["experiment"],
                        dataset=c["dataset"], partition=c["partition"], algorithm=c["algorithm"],
                        diverge_at=2 if diverged else None)
        for row in r:
            row["train_loss"] = math.nan if row["status"] == "diverged" else (1.0 - (s or 0)) / row["round"]
        rows += r
    return rows


def test_neural_network_figures_select_and_mark_diverged_runs(mr, tmp_path):
    full = expand_cells(yaml.safe_load((EXP / "local_update.yaml").read_text()))
    figs = {f.name: f for f in lu.figures(full)}
    acc_cells = [c for c in figs[lu_curves.ACCURACY].cells if c["experiment"] == "local_update_femnist_momentum"]

    def acc(c):  # best at γ = 0.1, η = 1; γ = 10 diverges
        g, e = c["lr"], c["hparams"]["server_lr"]
        return None if g == 10.0 else 0.8 - 0.05 * abs(math.log10(g) + 1) - 0.05 * abs(math.log10(e))

    metrics = mr.frame(_nn_rows(mr, acc_cells, acc))
    chosen = lu_curves._chosen(metrics, acc_cells)
    assert {(c["lr"], c["hparams"]["server_lr"]) for c in chosen} == {(0.1, 1.0)}
    assert lu_curves.plot_curves(lu_curves.ACCURACY, metrics, acc_cells, tmp_path / "a.png").stat().st_size > 10_000
    loss_cells = figs[lu_curves.GAMMA_LOSS].cells

    def loss_score(c):
        return None if c["lr"] == 10.0 else 0.5 - 0.01 * abs(math.log10(c["hparams"]["server_lr"]) + 2)

    metrics = mr.frame(_nn_rows(mr, loss_cells, loss_score))
    tuned = [c for c in loss_cells if lu_curves._tuned(c)]
    chosen = lu_curves._chosen(metrics, tuned)
    assert len(chosen) == 3 * 4 and {c["hparams"]["server_lr"] for c in chosen} == {0.01}  # 3 data × 4 γ (10 diverged)
    out = lu_curves.plot_curves(lu_curves.GAMMA_LOSS, metrics, loss_cells, tmp_path / "g.png")
    assert out.stat().st_size > 10_000


def test_fig9_curves_end_at_the_same_point_for_every_alpha():
    """At γ = 10⁻⁷ the largest admissible K of Θ_K shrinks with α exactly as each step's contraction
    grows: every curve ends near κ₀e^{−(L−μ)/L} (our derivation; the reference ends agree)."""
    (panel,) = lu_frontiers.frontier_panels("local_update_fig9")
    end = float(rates.rate(10.0 * np.exp(-0.9), "gd"))
    for c in panel["curves"]:
        assert c["rho"][-1] == pytest.approx(end, abs=2e-3)
    ref = lu_frontiers.reference_frame().filter(pl.col("figure") == "fig9")
    assert ref.height == 4 and np.allclose(ref["kappa"].to_numpy(), 10.0 * np.exp(-0.9), rtol=2e-4)


# ---------------------------------------------------------------- the scorecard's claims


def _claims():
    return {c.id: c for c in lu.claims()}


def test_every_claim_says_where_and_every_rule_has_a_basis():
    claims = lu.claims()
    assert len(claims) >= 35 and len({c.id for c in claims}) == len(claims)
    for c in claims:
        assert c.id.startswith("local_update.") and c.paper == lu.KEY and c.where and c.says and c.paper_value
        assert (c.decide is None) == bool(c.no_run)
        if c.decide is not None:
            assert c.basis and c.measure and c.rule
        assert c.on_paper is None  # the paper prints no number for any result


def test_paper_number_rows_say_the_paper_gives_no_numbers():
    rows = sc.paper_number_rows(lu.claims())
    assert {r["verdict"] for r in rows} == {sc.UNDECIDED}
    for r, c in zip(rows, lu.claims()):
        assert ("no run can decide it" in r["note"]) == (c.decide is None)
        assert c.decide is None or r["note"] == "the paper reports no numbers this rule can be applied to"


def test_paper_scale_names_the_papers_data_sets():
    from fedbench.papers import cell_scale

    assert cell_scale("local_update", {"source": "fed_emnist"}, 1500) == sc.PAPER_SCALE
    assert cell_scale("local_update", {"source": "fed_emnist"}, 100) == sc.REDUCED_REAL
    assert cell_scale("local_update", {"source": "quadratic"}, 10**6) == sc.TOY


def test_simulation_is_algorithm_2_step_by_step():
    """The message of K literal client steps is Theorem 1's q(λ)λ (the closed forms ϕ, ψ), α included."""
    lam = np.array([1.0, 3.0, 10.0])
    for alpha in (0.0, 0.7):
        x, s_all = np.ones(3), np.zeros(3)
        for _ in range(7):
            g = lam * x + alpha * (x - 1.0)
            s_all, x = s_all + g, x - 0.02 * g
        np.testing.assert_allclose(lu_sim.client_messages(lam, alpha, 0.02, 7), s_all, rtol=1e-13)
        np.testing.assert_allclose(lu_sim.client_messages(lam, alpha, 0.02, 7), cf.phi(lam, alpha, 0.02, 7), rtol=1e-12)
        np.testing.assert_allclose(lu_sim.client_messages(lam, alpha, 0.02, 7, "last"), cf.psi(lam, alpha, 0.02, 7),
                                   rtol=1e-12)
    with pytest.raises(ValueError):
        lu_sim.client_messages(lam, 0.0, 0.02, 0)


def test_frontier_points_rule_holds_and_catches_a_wrong_printed_value():
    ref = lu_frontiers.reference_frame()
    worst, n, bad = lu_claims.frontier_point_misses(ref)
    assert not bad and n > 100 and worst <= 1
    moved = ref.with_columns(pl.when((pl.col("figure") == "fig1") & (pl.col("K") == "10") & (pl.col("L") == 5))
                             .then(pl.col("delta") + 1e-4).otherwise(pl.col("delta")).alias("delta"))
    assert lu_claims.frontier_point_misses(moved)[2] == ["fig1 K K = 10 gd"]
    assert lu_claims.underflows({"family": "last", "K": "499999", "gamma": 1e-7, "alpha": 5e6})
    assert not lu_claims.underflows({"family": "last", "K": "999999", "gamma": 1e-7, "alpha": 0.0})


def test_mirror_gap_tells_a_symmetric_frontier_from_an_asymmetric_one():
    K = lu_frontiers.k_grid(80)
    gap, seg = lu_sim.mirror_gap(*lu_claims.heavy_ball_frontier(10.0, K=K))
    assert gap <= seg
    gap, seg = lu_sim.mirror_gap(*lu_claims.heavy_ball_frontier(10.0, "gd", K=K))
    assert gap > seg


def test_closed_form_rules_that_can_fail():
    dist, limit = lu_sim.c2_distance(0.9, 60)
    assert abs(dist - limit) < 1e-9 and limit == pytest.approx(72 / 37)
    assert abs(lu_sim.c2_distance(0.9, 3)[0] - limit) > 0.1  # too few steps: not the limit
    inside, beyond = lu_claims.split_check(lu_claims._spectrum())
    assert inside <= 1e-9 < 1e-3 < beyond
    k, delta, one_shot, step = lu_claims.cusp_check(lu_claims._spectrum())
    assert 250 <= k <= 260 and abs(delta - one_shot) <= step
    sd = lu_claims.noise_by_d(draws=5)
    assert sd[5] > 100 * sd[100]
    speed = [v[0] for v in lu_claims.momentum_gain_by_L().values()]
    assert lu_claims.ordered(speed, increasing=True) and not lu_claims.ordered(speed[::-1], increasing=True)
    for fn in (lu_claims._decide_prox_subset, lu_claims._decide_maml_subset, lu_claims._decide_momentum_maml):
        assert fn(sc.Evidence()).status == sc.HOLDS


def _trow(**kw):
    row = {"experiment": "lu", "dataset": "quadratic", "algorithm": "a", "algorithm_name": "local_update",
           "member": "Θ_{1:10}", "setting": "deterministic", "seeds": 1, "rounds": 200, "status": "ok",
           "dist_theory": 0.2, "dist_engine": 0.2, "dist_rel_error": 3e-15, "rate_theory": 0.5, "rate_engine": 0.5,
           "rate_rel_error": 1e-3, "residual": 1e-30, "trajectory_error": 1e-12, "cond": 4.0, "rate_table2": 0.7,
           "theta": "Θ_{1:10}", "gamma": 0.03, "alpha": 0.0, "server": "gd", "eta": 0.04, "beta": 0.0,
           "rate_tuned_gd": 0.6, "rate_tuned_nesterov": 1 - 2 / math.sqrt(13), "rate_tuned_heavy_ball": 1 / 3,
           "kappa_bound": 5.0, "lam_min_h": 1.0, "lam_max_h": 4.0, "bound_lemma5": 1.0, "bound_2c": 0.25,
           "tuned": False}
    return {**row, **kw}


def _ev(*rows, scale=sc.TOY):
    return sc.Evidence(tables={lu_theory.THEORY: pl.DataFrame(list(rows))}, scale=scale)


def test_fixed_point_needs_converged_deterministic_cells():
    claim = _claims()["local_update.fixed_point_is_surrogate"]
    v = claim.decide(_ev(_trow()))
    assert v.status == sc.HOLDS and "3.0e-15" in v.margin and "not 0" in v.ours
    assert claim.decide(_ev(_trow(dist_rel_error=2e-3))).status == sc.FAILS
    v = claim.decide(_ev(_trow(residual=0.5)))
    assert v.status == sc.UNDECIDED and "converged" in v.note
    assert claim.decide(sc.Evidence()).status == sc.UNDECIDED
    at_x = _trow(algorithm="K1", dist_theory=1e-16, dist_engine=2e-8, dist_rel_error=1.0)  # K = 1: x*(α, γ, Θ) = x*
    v = claim.decide(_ev(_trow(), at_x))
    assert v.status == sc.HOLDS and "1 with x*(α, γ, Θ) = x*" in v.ours
    assert claim.decide(_ev(_trow(), {**at_x, "dist_engine": 1e-3})).status == sc.FAILS
    assert claim.decide(_ev(at_x)).status == sc.FAILS  # no cell where x*(α, γ, Θ) ≠ x*: the claim is not shown


def test_trajectory_rules_per_member():
    c = _claims()
    assert c["local_update.surrogate_trajectory"].decide(_ev(_trow())).status == sc.HOLDS
    assert c["local_update.surrogate_trajectory"].decide(_ev(_trow(trajectory_error=1e-3))).status == sc.FAILS
    members, maml = c["local_update.members_are_local_update"], c["local_update.maml_is_theta_2k_plus_1"]
    assert members.decide(_ev(_trow())).status == sc.UNDECIDED  # no fedavg / fedprox / reptile / fedavgm cell
    assert members.decide(_ev(_trow(algorithm_name="fedavg"))).status == sc.HOLDS
    assert maml.decide(_ev(_trow(algorithm_name="maml", trajectory_error=0.2))).status == sc.FAILS


def test_rate_and_table2_rules():
    c = _claims()
    assert c["local_update.rate_is_server_rate"].decide(_ev(_trow())).status == sc.HOLDS
    assert c["local_update.rate_is_server_rate"].decide(_ev(_trow(rate_rel_error=0.2))).status == sc.FAILS
    assert c["local_update.rate_is_server_rate"].decide(_ev(_trow(rate_rel_error=None))).status == sc.UNDECIDED
    rate = c["local_update.rate_is_server_rate"]
    assert rate.decide(_ev(_trow(rate_rel_error=0.2, tuned=True))).status == sc.UNDECIDED  # a biased fit there
    t2 = c["local_update.table2_rates"]
    assert t2.decide(_ev(_trow())).status == sc.HOLDS  # ρ at cond 4: 0.6, 1 − 2/√13, 1/3
    assert t2.decide(_ev(_trow(rate_tuned_gd=0.61))).status == sc.FAILS
    assert t2.decide(_ev(_trow(kappa_bound=3.0))).status == sc.FAILS  # above Table 2 at κ of (9)
    order = c["local_update.momentum_ordering"]
    assert order.decide(_ev(_trow())).status == sc.HOLDS
    assert order.decide(_ev(_trow(rate_tuned_nesterov=0.2))).status == sc.FAILS
    assert order.decide(_ev(_trow(cond=1.0))).status == sc.UNDECIDED


def test_momentum_and_alpha_rules_on_pairs():
    c = _claims()
    gd = _trow(algorithm="gd", tuned=True)
    hb = _trow(algorithm="hb", server="heavy_ball", beta=0.3, rate_engine=0.3, tuned=True)
    assert c["local_update.momentum_same_fixed_point"].decide(_ev(gd, hb)).status == sc.HOLDS
    assert c["local_update.momentum_same_fixed_point"].decide(_ev(gd, {**hb, "dist_engine": 0.21})).status == sc.FAILS
    assert c["local_update.momentum_same_fixed_point"].decide(_ev(gd)).status == sc.UNDECIDED
    assert c["local_update.momentum_converges_faster"].decide(_ev(gd, hb)).status == sc.HOLDS
    assert c["local_update.momentum_converges_faster"].decide(_ev(gd, {**hb, "rate_engine": 0.6})).status == sc.FAILS
    assert c["local_update.momentum_converges_faster"].decide(_ev(gd, {**hb, "tuned": False})).status == sc.UNDECIDED
    prox = _trow(algorithm="prox", alpha=0.5, dist_engine=0.1, rate_engine=0.6)
    assert c["local_update.prox_closer_and_slower"].decide(_ev(gd, prox)).status == sc.HOLDS
    assert c["local_update.prox_closer_and_slower"].decide(_ev(gd, {**prox, "rate_engine": 0.4})).status == sc.FAILS
    assert c["local_update.prox_closer_and_slower"].decide(_ev(gd)).status == sc.UNDECIDED


def test_tradeoff_rules_on_sweeps():
    c = _claims()
    steps = [_trow(algorithm=f"K{k}", theta=f"Θ_{{1:{k}}}", rate_engine=r, dist_engine=d)
             for k, r, d in ((1, 0.9, 1e-8), (2, 0.8, 0.05), (5, 0.6, 0.1))]
    assert c["local_update.local_steps_tradeoff"].decide(_ev(*steps)).status == sc.HOLDS
    steps[2]["dist_engine"] = 0.01
    assert c["local_update.local_steps_tradeoff"].decide(_ev(*steps)).status == sc.FAILS
    assert c["local_update.local_steps_tradeoff"].decide(_ev(*steps[:2])).status == sc.UNDECIDED
    gammas = [_trow(algorithm=f"g{g}", gamma=g, rate_tuned_gd=r, dist_engine=d)
              for g, r, d in ((0.001, 0.8, 0.01), (0.01, 0.7, 0.05), (0.03, 0.5, 0.1))]
    assert c["local_update.gamma_tradeoff"].decide(_ev(*gammas)).status == sc.HOLDS
    gammas[0]["rate_tuned_gd"] = 0.6
    assert c["local_update.gamma_tradeoff"].decide(_ev(*gammas)).status == sc.FAILS


def test_bias_bounds_decide_only_when_the_h_norm_brackets_agree():
    c = _claims()["local_update.lemma5_bias_bound"]
    assert c.decide(_ev(_trow(dist_engine=0.5))).status == sc.HOLDS  # ‖e‖ ≤ 0.5/√1 ≤ 1
    assert c.decide(_ev(_trow(dist_engine=3.0))).status == sc.FAILS  # ‖e‖ ≥ 3/√4 > 1
    assert c.decide(_ev(_trow(dist_engine=1.5))).status == sc.UNDECIDED  # 0.75 ≤ ‖e‖ ≤ 1.5
    assert c.decide(_ev(_trow(dist_engine=3e-8, bound_lemma5=0.0))).status == sc.UNDECIDED  # x*(α, γ, Θ) = x*
    assert _claims()["local_update.bias_bound_2c_conjecture"].decide(_ev(_trow(dist_engine=0.6))).status == sc.FAILS


def test_neural_network_verdicts():
    assert lu_claims.momentum_verdict({"gd": 0.80, "heavy_ball": 0.83, "nesterov": 0.82}).status == sc.HOLDS
    assert lu_claims.momentum_verdict({"gd": 0.80, "heavy_ball": 0.79}).status == sc.FAILS
    assert lu_claims.momentum_verdict({"gd": 0.80}).status == sc.UNDECIDED
    mom = {"gd": 0.80, "heavy_ball": 0.83}
    assert lu_claims.alpha_verdict({"alpha0": 0.80, "alpha1": 0.805}, mom).status == sc.HOLDS
    assert lu_claims.alpha_verdict({"alpha0": 0.80, "alpha1": 0.75}, mom).status == sc.FAILS
    v = lu_claims.smaller_gamma_lower_verdict({"fed_emnist": {0.001: 0.2, 0.01: 0.3}, "fed_cifar100": {0.001: 1.0,
                                                                                                        0.01: 1.2}})
    assert v.status == sc.HOLDS
    assert lu_claims.smaller_gamma_lower_verdict({"fed_emnist": {0.001: 0.4, 0.01: 0.3}}).status == sc.FAILS
    assert lu_claims.cifar_crossover_verdict({0.01: [2.0, 1.0], 0.001: [3.0, 0.9], 0.1: [2.5, 1.5]}).status == sc.HOLDS
    assert lu_claims.cifar_crossover_verdict({0.01: [2.0, 1.0], 0.001: [1.0, 1.1]}).status == sc.FAILS
    assert lu_claims.tuned_eta_verdict({"fed_emnist": {0.001: (2.0, 0.1), 0.1: (1.0, 0.3)}}).status == sc.HOLDS
    assert lu_claims.tuned_eta_verdict({"fed_emnist": {0.001: (0.5, 0.1), 0.1: (1.0, 0.3)}}).status == sc.FAILS


def test_neural_network_rules_need_the_papers_data(mr):
    c = _claims()["local_update.fig6_momentum_helps"]
    rows = []
    for label, acc in (("gd,lr=0.01,server_lr=1.0", 0.80), ("gd,lr=0.1,server_lr=1.0", 0.82),
                       ("heavy_ball,lr=0.01,server_lr=0.1", 0.85), ("nesterov,lr=0.01,server_lr=0.1", 0.84)):
        rows += mr.run_rows([acc] * 12, experiment=lu_claims.FIG6_MOMENTUM, dataset="fed_emnist", algorithm=label)
    metrics = mr.frame(rows)
    v = c.decide(sc.Evidence(metrics=metrics, scale=sc.PAPER_SCALE))
    assert v.status == sc.HOLDS and "gd 82.00%" in v.ours
    assert c.decide(sc.Evidence(metrics=metrics, scale=sc.TOY)).status == sc.UNDECIDED
    assert c.decide(sc.Evidence(metrics=metrics.head(0), scale=sc.PAPER_SCALE)).status == sc.UNDECIDED
    assert lu_claims.label_values("gd,lr=0.01,server_lr=1.0") == ("gd", {"lr": 0.01, "server_lr": 1.0})


def test_quick_files_tuned_servers_are_the_tuned_parameters_of_its_problem():
    """The lu_all_*_tuned cells of the quick file carry Lessard et al.'s (η, β) for their surrogate."""
    cfg = yaml.safe_load((EXP / "local_update_quick.yaml").read_text())
    params = {k: v for k, v in cfg["datasets"]["quad"].items() if k != "source"}
    ds = generate_quadratic(**params)
    A, c, p = client_quadratics(ds.x_train, ds.client_train)
    algs = cfg["experiments"]["local_update_quick_members"]["algorithms"]
    gamma = cfg["experiments"]["local_update_quick_members"]["local"]["lr"]
    ev = np.linalg.eigvalsh(tq.surrogate_hessian(A, p, 0.0, gamma, tq.theta_full(10)))
    for server in ("gd", "nesterov", "heavy_ball"):
        eta, beta = rates.tuned_server_parameters(ev[-1], ev[0], server)
        hp = algs[f"lu_all_{server}_tuned"]
        assert hp["server_lr"] == pytest.approx(eta, rel=lu_theory.TUNED_RTOL)
        assert hp.get("momentum", 0.0) == pytest.approx(beta, rel=lu_theory.TUNED_RTOL)


def test_theory_table_rate_where_the_surrogate_minimizer_is_x_star(mr, quad):
    """K = 1: x*(α, γ, Θ) = x*, the loss gap contracts at ρ², the table reports ρ."""
    cell = _cell("fedavg", {}, lr=0.05, steps=1)
    frame = lu_theory.theory_frame(mr.frame(_gd_rows(mr, quad, cell, 200, 0.05)), [cell], {"q": quad[1]})
    r = frame.row(0, named=True)
    assert r["dist_theory"] < lu_theory.DIST_FLOOR and r["rate_rel_error"] < 0.03 and r["tuned"] is False


def test_fig1_and_appendix_c_rules():
    ends = lu_claims.fig1_gamma_limit()
    assert ends[50.0][0] == pytest.approx(0.0710, abs=5e-5) and ends[5.0][0] < 1e-6
    K = lu_frontiers.k_grid(40)
    assert lu_claims.chord_deviation(5.0, K=K) < lu_claims.chord_deviation(50.0, K=K)
    worst, equal = lu_claims.mad_check(draws=200)
    assert worst <= 1e-12 and equal <= 1e-12
    from fedbench.theory import bounds

    x, w = np.array([0.0, 0.5, 1.0]), np.array([0.25, 0.5, 0.25])  # an inner atom: strictly below the bound
    assert bounds.mean_absolute_deviation(x, w) < float(bounds.mad_bound_theorem5(0.0, 1.0, 0.5)) - 0.1
