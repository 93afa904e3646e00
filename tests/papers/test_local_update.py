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

from fedbench.config import expand_cells
from fedbench.data.quadratic import client_quadratics, generate_quadratic, global_optimum
from fedbench.papers import local_update as lu
from fedbench.papers.local_update import curves as lu_curves
from fedbench.papers.local_update import frontiers as lu_frontiers
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
