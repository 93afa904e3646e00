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

Claims (:func:`claims`, decided by the scorecard, :mod:`fedbench.analysis.scorecard`;
:mod:`.paper_claims` lists them): the closed-form statements of Figs. 1–5, 7–10 and Appendix C.2
decided by running Algorithm 2 and the tuned server (:mod:`.simulation`), not by the closed forms that
draw the figures; the theory against the engine on the federated quadratic (``local_update_theory``:
fixed point, trajectory, rate, bias bounds, members, the K and γ trade-off, momentum and α); and the
neural-network findings of Figs. 6/11, 12, 13 on the paper's data sets.

Modules: :mod:`.frontiers` (1, 2), :mod:`.theory` (3), :mod:`.curves` (4), :mod:`.simulation` and
:mod:`.paper_claims` (the scorecard's claims); this package declares the tables and figures and
writes them. Headless (Agg canvas, no pyplot).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from fedbench.analysis.folder import read_metrics
from fedbench.files import atomic_write
from fedbench.papers.base import PaperFigure, Table
from fedbench.papers.local_update.curves import ACCURACY, GAMMA_LOSS, _over, _swept_nn, plot_curves
from fedbench.papers.local_update.frontiers import (
    FRONTIER_FIGURES,
    REFERENCE,
    SYMMETRY,
    plot_frontier,
    plot_symmetry,
    reference_frame,
)
from fedbench.papers.local_update.theory import THEORY, _problems, _quadratic, markdown_theory, theory_frame

__all__ = ["KEY", "NAME", "tables", "figures", "write_table", "write_figure", "claims"]

#: The registry key: the value of ``paper`` in the experiment files.
KEY = "local_update"
#: How the paper is named in reports.
NAME = "LocalUpdate (Charles & Konečný, AISTATS 2021)"
#: The paper's data sets (Appendix E, Table 3) and their rounds ({dataset source: rounds}), for
#: :func:`fedbench.papers.cell_scale`. The paper gives no number of rounds (only that its selection
#: window is the last 100); these are config/experiments/local_update.yaml's (Reddi et al.'s budgets).
PAPER_SCALE = {"fed_emnist": 1500, "fed_cifar100": 1500, "shakespeare": 1200}

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


def claims():
    """The paper's claims, as code (:class:`fedbench.analysis.scorecard.Claim`;
    :func:`fedbench.papers.local_update.paper_claims.declared`)."""
    from fedbench.papers.local_update.paper_claims import declared

    return declared()
