"""FedAc: Honglin Yuan, Tengyu Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020
(§5 and Appendix A: Figures 1–7, the rounds-to-target claims of §5).

Registry key ``fedac`` (``paper: fedac`` in an experiment file). The paper's experiments are
ℓ2-regularized logistic regression (model ``binary_logreg``, λ = ``local.weight_decay``), M
homogeneous workers sampling with replacement from the whole training set (partition ``shared``,
``local.replacement``), K local steps, T = K · rounds steps per worker; each point of a figure is
the *best suboptimality*: the minimum over the evaluations (t = 0 included: ``eval_initial``) of
F(w) − F* (metrics column ``suboptimality``), minimized over the learning-rate grid η. In fedbench
that is a sweep over ``local.lr`` with ``select: {metric: suboptimality, statistic: best,
direction: min, over: [local.lr]}`` (:mod:`fedbench.analysis.sweeps`): one choice of η per
(dataset, λ, algorithm, M, K), over the mean of the seeds' best suboptimality (the paper ran one
seed; we show mean ± sd). M is read from the metrics (``clients_sampled``: full participation).

Outputs (only for swept cells; the paper's numbers in ``reference/fedac_best_suboptimality.csv``,
derived from the authors' published runs, see ``reference/README.md``):

- table ``fedac_best``: per (dataset, λ, algorithm, M, K) our best suboptimality (mean ± sd over
  seeds) and chosen η (⚠ on the grid's edge) beside the authors' value and η on the paper's grid
  (⚠ on its edge) and the ratio ours / paper; the paper's numbers apply where our dataset id is
  ``a9a`` or ``epsilon`` with a λ the paper ran (1e-2, 1e-3, 1e-4 and 1e-4), else "—";
- table ``fedac_rounds``: the fewest rounds R = T/K (over the K run) at which an algorithm's best
  suboptimality reaches a target, at one M: the paper's two claims (§5: a9a λ = 1e-3, M = 8,192,
  target 1e-3: 32 / 128 / 1,024 / 4,096 rounds for FedAc / Mb-Ac-SGD / Mb-SGD / FedAvg; epsilon
  λ = 1e-4, M = 2,048, target 1e-4: 64 / 256 / 4,096 / 4,096) where those settings were run, and
  for any other (dataset, λ) the largest M run with the decade targets between the best and the
  worst chosen score there (at most three);
- table ``fedac_optimum``: F* per (dataset, λ), ours (train_objective − suboptimality of any
  row: rule optimum's value) beside the value the authors' plotting code uses;
- figure ``fedac_vs_m`` (Figs. 1, 2, 4, 6): best suboptimality vs M, log-log, one panel per K
  (the paper's K ∈ {1, 8, 32, 64, 128, 256} where run, else every K), one row per (dataset, λ),
  one line per algorithm (mean over seeds, band ± sd), the paper's numbers dashed;
- figure ``fedac_vs_k`` (Figs. 3, 5, 7): the same vs K, one panel per M (the paper's
  M ∈ {256, …, 8,192} where run, else every M).

Points where every η diverged are left out of the figures and reported in the tables.

Claims (:func:`claims`, decided by the scorecard, :mod:`fedbench.analysis.scorecard`, from the
``fedac_best`` and ``fedac_rounds`` tables): FedAc-I the best of the four algorithms at K ≥ 64 and
M ≥ 256 (§5, Figs. 1 and 3); the rounds to 1e-3 at M = 8,192 (§5); vanilla FedAc degrading with K
where FedAc-I does not (§5, Fig. 2); every cell within 2× of the authors' published run. Each is
about the paper's datasets (a9a, epsilon) and λ: on other data it is not decidable.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from fedbench.analysis import sweeps
from fedbench.analysis.folder import read_metrics
from fedbench.analysis.paper_figures import figure_grid, save_figure
from fedbench.files import atomic_write
from fedbench.papers.base import REFERENCE_DIR, PaperFigure, Table

__all__ = ["claims",
           "KEY", "NAME", "REFERENCE", "PAPER_CLAIMS", "tables", "figures", "write_table", "write_figure",
           "algorithm_key", "best_frame", "reference_frame", "rounds_to_target", "optimum_frame",
           "markdown_best", "markdown_rounds", "markdown_optimum", "plot_best"]

#: The registry key: the value of ``paper`` in the experiment files.
KEY = "fedac"
#: How the paper is named in reports.
NAME = "FedAc (Yuan & Ma, NeurIPS 2020)"
#: The authors' best suboptimality and η per (dataset, λ, algorithm, M, K).
REFERENCE = REFERENCE_DIR / "fedac_best_suboptimality.csv"
#: §5's rounds-to-target claims: (dataset, λ) -> (M, target, {algorithm key: rounds}).
PAPER_CLAIMS = {
    ("a9a", 1e-3): (8192, 1e-3, {"fedac": 32, "mb_ac_sgd": 128, "mb_sgd": 1024, "fedavg": 4096}),
    ("epsilon", 1e-4): (2048, 1e-4, {"fedac": 64, "mb_ac_sgd": 256, "mb_sgd": 4096, "fedavg": 4096}),
}
#: The panels of the paper's figures (the authors' plotting notebook).
PAPER_K_PANELS = (1, 8, 32, 64, 128, 256)
PAPER_M_PANELS = (256, 512, 1024, 2048, 4096, 8192)
#: How the algorithm keys read in tables and legends.
ALGORITHM_NAMES = {"fedac": "FedAc-I", "fedac_vanilla": "vanilla FedAc", "fedac_ii": "FedAc-II",
                   "fedac_ii_code": "FedAc-II (code β)", "fedavg": "FedAvg", "mb_sgd": "Mb-SGD",
                   "mb_ac_sgd": "Mb-Ac-SGD"}

BEST, ROUNDS, OPTIMUM = "fedac_best", "fedac_rounds", "fedac_optimum"
VS_M, VS_K = "fedac_vs_m", "fedac_vs_k"
_TITLES = {BEST: "FedAc Figs. 1–7: best suboptimality and chosen η per algorithm, M and K",
           ROUNDS: "FedAc §5: rounds to reach a target suboptimality",
           OPTIMUM: "FedAc: F* per dataset and λ"}
_CAPTIONS = {
    VS_M: "FedAc Figs. 1, 2, 4, 6: best suboptimality F(w) − F* (minimum over the evaluations, t = 0 included, "
          "and over the learning-rate grid; mean over seeds, band ± sd) against the number of workers M, log-log, "
          "one panel per local steps K, one row per (dataset, λ). Dashed: the authors' published runs (one seed), "
          "where the dataset and λ are the paper's. Linear speedup is a slope of −1. At K = 1 FedAvg is minibatch SGD "
          "and FedAc minibatch accelerated SGD: those curves coincide (the panel says so).",
    VS_K: "FedAc Figs. 3, 5, 7: best suboptimality against the local steps K (T = K · rounds fixed), one panel per "
          "number of workers M, one row per (dataset, λ); dashed: the authors' runs. At K = 1 FedAvg is minibatch SGD "
          "and FedAc minibatch accelerated SGD: those curves start from one point (the legend says so).",
}
_KEYS = ("experiment", "dataset", "partition", "algorithm", "seed")


def algorithm_key(cell: Mapping) -> str:
    """The paper's name of a cell's algorithm (the reference CSV's ``algorithm``): ``fedac`` (FedAc-I),
    ``fedac_vanilla``, ``fedac_ii`` (paper β) or ``fedac_ii_code`` (the code's β), ``fedavg``,
    ``mb_sgd``, ``mb_ac_sgd``; any other algorithm by its module name."""
    name, hp = cell["algorithm_name"], cell.get("hparams") or {}
    if name != "fedac":
        return name
    variant = hp.get("variant", "I")
    if variant == "vanilla":
        return "fedac_vanilla"
    if variant == "II":
        return "fedac_ii_code" if hp.get("beta_formula") == "code" else "fedac_ii"
    return "fedac"


# ----------------------------------------------------------------------------------------------
# What the paper declares


def _swept(cells: Sequence[Mapping]) -> list[dict]:
    keep = ("experiment", "dataset", "partition", "algorithm", "seed", "algorithm_name", "hparams", "sweep")
    return [{**{k: c[k] for k in keep}, "steps": c["local"].get("steps"), "lam": c["local"].get("weight_decay"),
             "lr": c["local"]["lr"], "rounds": c["rounds"]}
            for c in cells if c.get("sweep") is not None]


def tables(cells: Sequence[Mapping]) -> list[Table]:
    """The three tables, over the paper's swept cells (none without a sweep)."""
    rows = _swept(cells)
    return [Table(name, KEY, rows, REFERENCE, title) for name, title in _TITLES.items()] if rows else []


def figures(cells: Sequence[Mapping]) -> list[PaperFigure]:
    """The vs-M and vs-K figures, over the paper's swept cells."""
    rows = _swept(cells)
    if not rows:
        return []
    return [PaperFigure(VS_M, KEY, rows, "FedAc: best suboptimality vs M", _CAPTIONS[VS_M]),
            PaperFigure(VS_K, KEY, rows, "FedAc: best suboptimality vs K", _CAPTIONS[VS_K])]


def write_table(name: str, df: pl.DataFrame, reference: str | os.PathLike, cells: list[dict],
                md_path: str | os.PathLike, csv_path: str | os.PathLike) -> pl.DataFrame:
    """Write one of the tables (Markdown for reading, CSV with every number)."""
    ref = reference_frame(reference)
    best = best_frame(df, cells)
    if name == BEST:
        out, md = _with_reference(best, ref), None
        md = markdown_best(out)
    elif name == ROUNDS:
        out = rounds_to_target(best, ref)
        md = markdown_rounds(out)
    elif name == OPTIMUM:
        out = optimum_frame(df, cells, ref)
        md = markdown_optimum(out)
    else:
        raise KeyError(f"{name!r} is not a table of {KEY}")
    with atomic_write(md_path) as tmp:
        tmp.write_text(f"# {_TITLES[name]}\n\n{md}", encoding="utf-8")
    with atomic_write(csv_path) as tmp:
        out.write_csv(tmp)
    return out


def write_figure(name: str, cells: list[dict], path: str | os.PathLike,
                 metrics: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
                 files: Sequence[str | os.PathLike] = ()) -> Path:
    """Write the vs-M or vs-K figure."""
    if name not in (VS_M, VS_K):
        raise KeyError(f"{name!r} is not a figure of {KEY}")
    best = best_frame(read_metrics(metrics), cells)
    return plot_best(best, reference_frame(REFERENCE), path, x="M" if name == VS_M else "K")


# ----------------------------------------------------------------------------------------------
# Best suboptimality per (dataset, λ, algorithm, M, K)


def reference_frame(path: str | os.PathLike = REFERENCE) -> pl.DataFrame:
    """The authors' numbers (``reference/fedac_best_suboptimality.csv``)."""
    return pl.read_csv(path, schema_overrides={"lambda": pl.Float64, "eta": pl.Float64, "eta_all": pl.Float64})


def best_frame(metrics: pl.DataFrame, cells: Sequence[Mapping]) -> pl.DataFrame:
    """One row per sweep group of ``cells`` (:func:`fedbench.analysis.sweeps.select`; FedAc's:
    one per (dataset, λ, algorithm, M, K)), columns: experiment, dataset, lam (λ), algorithm (our
    label), key (:func:`algorithm_key`), M, K, T (steps per worker), eta (the chosen η, null when
    every η diverged), mean, sd, n_seeds (the selection score: best suboptimality over seeds),
    edge (the η grid's edge text, "" inside), points, diverged (η values with a diverged seed),
    status (``ok`` / ``all diverged``).

    Raises:
        ValueError: as :func:`fedbench.analysis.sweeps.select`.
    """
    schema = {"experiment": pl.String, "dataset": pl.String, "lam": pl.Float64, "algorithm": pl.String,
              "key": pl.String, "M": pl.Int64, "K": pl.Int64, "T": pl.Int64, "eta": pl.Float64, "mean": pl.Float64,
              "sd": pl.Float64, "n_seeds": pl.Int64, "edge": pl.String, "points": pl.Int64, "diverged": pl.Int64,
              "status": pl.String}
    cells = [c for c in cells if c.get("sweep") is not None]
    if not cells:
        return pl.DataFrame(schema=schema)
    sel = sweeps.select(metrics, cells)
    workers = {tuple(k): int(m) for *k, m in metrics.group_by(list(_KEYS)).agg(pl.col("clients_sampled").max()).rows()}
    by_group: dict[tuple, list[Mapping]] = {}
    for c in cells:
        by_group.setdefault(sweeps._group_key(c), []).append(c)
    rows = []
    for r in sel.iter_rows(named=True):
        key = (r["experiment"], r["dataset"], r["partition"], r["algorithm"],
               tuple((a, r[a]) for a in r["fixed"]))
        members = by_group[key]
        chosen = [c for c in members if sweeps.cell_name(c) in set(r["cells"])]
        one = (chosen or members)[0]
        m = max((workers.get(tuple(c[k] for k in _KEYS), 0) for c in members), default=0)
        k_steps = one["steps"]
        rows.append({"experiment": r["experiment"], "dataset": r["dataset"], "lam": float(one["lam"] or 0.0),
                     "algorithm": r["algorithm"], "key": algorithm_key(one), "M": m,
                     "K": None if k_steps is None else int(k_steps),
                     "T": None if k_steps is None else int(k_steps) * int(one["rounds"]),
                     "eta": float(chosen[0]["lr"]) if chosen else None, "mean": r["mean"], "sd": r["sd"],
                     "n_seeds": r["n_seeds"], "edge": r["edge"], "points": r["points"], "diverged": r["diverged"],
                     "status": r["status"]})
    out = pl.DataFrame(rows, schema=schema, orient="row")
    return out.sort(["dataset", "lam", "key", "M", "K"], maintain_order=True)


def _with_reference(best: pl.DataFrame, ref: pl.DataFrame) -> pl.DataFrame:
    """``best`` with the authors' value and η on the paper's grid (and its edge flag), and the ratio."""
    r = ref.select(pl.col("dataset"), pl.col("lambda").alias("lam"), pl.col("algorithm").alias("key"), "M", "K",
                   pl.col("best_suboptimality").alias("paper"), pl.col("eta").alias("paper_eta"),
                   pl.col("eta_edge").alias("paper_eta_edge"))
    out = best.join(r, on=["dataset", "lam", "key", "M", "K"], how="left", maintain_order="left")
    return out.with_columns((pl.col("mean") / pl.col("paper")).alias("ratio"))


# ----------------------------------------------------------------------------------------------
# Rounds to target


def _rounds(rows: list[tuple[int, int, float | None]], target: float) -> int | None:
    """The fewest rounds T/K among (K, T, score) rows whose score is ≤ target (None: none)."""
    hits = [t // k for k, t, s in rows if s is not None and s <= target]
    return min(hits) if hits else None


def rounds_to_target(best: pl.DataFrame, ref: pl.DataFrame) -> pl.DataFrame:
    """The fewest rounds R = T/K at which each algorithm's best suboptimality (mean over seeds, at
    its chosen η) is ≤ the target, per (dataset, λ, M, target) (see the module docstring for
    which M and targets). Columns: dataset, lam, M, target, algorithm (label), key, rounds (null:
    not reached at any K run), K_run (the K values run), paper_rounds (the same rule on the
    authors' numbers, null without them), paper_claim (§5's text, null elsewhere)."""
    schema = {"dataset": pl.String, "lam": pl.Float64, "M": pl.Int64, "target": pl.Float64, "algorithm": pl.String,
              "key": pl.String, "rounds": pl.Int64, "K_run": pl.String, "paper_rounds": pl.Int64,
              "paper_claim": pl.Int64}
    rows = []
    ok = best.filter(pl.col("K").is_not_null())
    for (ds, lam), part in ok.group_by(["dataset", "lam"], maintain_order=True):
        claim = PAPER_CLAIMS.get((ds, lam))
        m_values = sorted(set(part["M"].to_list()))
        if claim is not None and claim[0] in m_values:
            settings = [(claim[0], claim[1])]
        else:
            m = m_values[-1]
            scores = [s for s in part.filter(pl.col("M") == m)["mean"].to_list() if s is not None and s > 0]
            if not scores:
                continue
            lo, hi = math.ceil(math.log10(min(scores))), math.floor(math.log10(max(scores)))
            settings = [(m, 10.0 ** e) for e in range(lo, hi + 1)][:3] or [(m, 10.0 ** lo)]
        for m, target in settings:
            at_m = part.filter(pl.col("M") == m)
            pref = ref.filter((pl.col("dataset") == ds) & (pl.col("lambda") == lam) & (pl.col("M") == m))
            for (label, key), g in at_m.group_by(["algorithm", "key"], maintain_order=True):
                mine = list(zip(g["K"].to_list(), g["T"].to_list(), g["mean"].to_list()))
                theirs = pref.filter(pl.col("algorithm") == key)
                ran = set(g["K"].to_list())
                paper_rows = [(k, 4096, s) for k, s in zip(theirs["K"].to_list(),
                                                           theirs["best_suboptimality"].to_list()) if k in ran]
                rows.append({"dataset": ds, "lam": lam, "M": m, "target": target, "algorithm": label, "key": key,
                             "rounds": _rounds(mine, target),
                             "K_run": ", ".join(str(k) for k in sorted(set(g["K"].to_list()))),
                             "paper_rounds": _rounds(paper_rows, target) if paper_rows else None,
                             "paper_claim": (claim[2].get(key) if claim is not None and (m, target) == claim[:2]
                                             else None)})
    return pl.DataFrame(rows, schema=schema, orient="row")


# ----------------------------------------------------------------------------------------------
# F*


def optimum_frame(metrics: pl.DataFrame, cells: Sequence[Mapping], ref: pl.DataFrame) -> pl.DataFrame:
    """F* per (dataset, λ): ours, recovered from any evaluated row as train_objective −
    suboptimality (the value rule optimum wrote, to float rounding), beside the value of the
    authors' plotting code where the dataset and λ are the paper's. Columns: dataset, lam, fstar,
    paper_fstar, difference."""
    lam_of = {tuple(c[k] for k in _KEYS): float(c["lam"] or 0.0) for c in cells if c.get("sweep") is not None}
    key = pl.DataFrame([(*k, v) for k, v in lam_of.items()],
                       schema={"experiment": pl.String, "dataset": pl.String, "partition": pl.String,
                               "algorithm": pl.String, "seed": pl.Int64, "lam": pl.Float64}, orient="row")
    rows = (metrics.join(key, on=list(_KEYS), how="inner")
            .filter(pl.col("suboptimality").is_not_null() & pl.col("suboptimality").is_finite())
            .with_columns((pl.col("train_objective") - pl.col("suboptimality")).alias("fstar"))
            .group_by(["dataset", "lam"], maintain_order=True).agg(pl.col("fstar").median()))
    paper = ref.select("dataset", pl.col("lambda").alias("lam"), pl.col("fstar").alias("paper_fstar")).unique()
    out = rows.join(paper, on=["dataset", "lam"], how="left", maintain_order="left")
    return out.with_columns((pl.col("fstar") - pl.col("paper_fstar")).alias("difference")).sort(["dataset", "lam"])


# ----------------------------------------------------------------------------------------------
# Markdown


def _sci(v: float | None, digits: int = 2) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}e}"


def _eta(v: float | None, edge: bool) -> str:
    return "—" if v is None else f"{v:g}{' ⚠' if edge else ''}"


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in rows)]) + "\n"


def markdown_best(best: pl.DataFrame) -> str:
    """The ``fedac_best`` table (one row per dataset, λ, algorithm, M, K) and its notes."""
    header = ["dataset", "λ", "algorithm", "M", "K", "best subopt. (ours)", "η (ours)", "paper", "η (paper)",
              "ours / paper", "diverged η"]
    rows = []
    for r in best.iter_rows(named=True):
        ours = (f"all {r['points']} η diverged" if r["status"] == "all diverged" else
                _sci(r["mean"]) + (f" ± {_sci(r['sd'], 1)}" if r["sd"] is not None else ""))
        rows.append([r["dataset"], f"{r['lam']:g}", ALGORITHM_NAMES.get(r["key"], r["algorithm"]), str(r["M"]),
                     str(r["K"]), ours, _eta(r["eta"], bool(r["edge"])), _sci(r["paper"]),
                     _eta(r["paper_eta"], bool(r["paper_eta_edge"])),
                     "—" if r["ratio"] is None else f"{r['ratio']:.2f}", f"{r['diverged']}/{r['points']}"])
    notes = ("\nBest suboptimality: min over the evaluations (t = 0 included) of F(w) − F*, at the η with the "
             "lowest mean over seeds (± sd over seeds, ddof = 1). Paper: the authors' published run (one seed) on "
             "the paper's η grid, same rule. ⚠: the chosen η is the smallest or largest value of its grid (widen "
             "the grid). Diverged η: grid values where a seed diverged (never chosen).\n")
    return _table(header, rows, {3, 4, 5, 7, 9, 10}) + notes


def markdown_rounds(rounds: pl.DataFrame) -> str:
    """The ``fedac_rounds`` table: one row per (dataset, λ, M, target), one column per algorithm."""
    if rounds.height == 0:
        return "No (dataset, λ) with the local steps K and a selected η: nothing to show.\n"
    keys = list(dict.fromkeys(rounds["key"].to_list()))
    header = ["dataset", "λ", "M", "target", *(ALGORITHM_NAMES.get(k, k) for k in keys), "K run"]
    rows = []
    for (ds, lam, m, target), g in rounds.group_by(["dataset", "lam", "M", "target"], maintain_order=True):
        cells = []
        for k in keys:
            r = g.filter(pl.col("key") == k)
            if r.height == 0:
                cells.append("—")
                continue
            r = r.row(0, named=True)
            ours = "not reached" if r["rounds"] is None else str(r["rounds"])
            paper = r["paper_claim"] if r["paper_claim"] is not None else r["paper_rounds"]
            cells.append(ours if paper is None else f"{ours} (paper {paper})")
        rows.append([ds, f"{lam:g}", str(m), f"{target:g}", *cells, g["K_run"][0]])
    notes = ("\nRounds R = T/K: the fewest rounds, over the K values run, at which the best suboptimality (mean over "
             "seeds at the chosen η) is ≤ the target. Paper: §5's stated counts where the setting is the paper's "
             "claim, else the same rule on the authors' published runs. The paper's 32 rounds for FedAc on a9a "
             "(λ = 1e-3, M = 8,192) count its 1.04e-3 at K = 128 as reaching 1e-3; by this rule its runs give 64.\n")
    return _table(header, rows, set(range(2, len(header) - 1))) + notes


def markdown_optimum(opt: pl.DataFrame) -> str:
    """The ``fedac_optimum`` table."""
    rows = [[r["dataset"], f"{r['lam']:g}", f"{r['fstar']:.15g}",
             "—" if r["paper_fstar"] is None else f"{r['paper_fstar']:.15g}",
             "—" if r["difference"] is None else f"{r['difference']:.2e}"] for r in opt.iter_rows(named=True)]
    notes = ("\nOurs: rule optimum (scipy trust-ncg + Newton polish to ‖∇F‖ ≤ 1e-12, float64; so F(w) − F* ≤ "
             "‖∇F‖²/(2λ) ≤ 5e-21). Paper: the value hard-coded in the authors' plotting code for a9a and epsilon. "
             "Any inexact solution lies above F*, so a negative difference is how far the authors' solver stopped "
             "short (on the real a9a: −8.6e-10 at λ = 1e-4, −9.4e-10 at 1e-3, −1.5e-8 at 1e-2; scikit-learn's "
             "Newton-Cholesky agrees with ours to 6e-17).\n")
    return _table(["dataset", "λ", "F* (ours)", "F* (paper)", "difference"], rows, {2, 3, 4}) + notes


# ----------------------------------------------------------------------------------------------
# Figures


def _panels(values: list[int], paper: tuple[int, ...]) -> list[int]:
    chosen = [v for v in paper if v in values]
    return chosen if len(chosen) >= 2 else values


def plot_best(best: pl.DataFrame, ref: pl.DataFrame, path: str | os.PathLike, x: str = "M", dpi: int = 110) -> Path:
    """Best suboptimality against ``x`` ("M" or "K"), log-log, one panel per value of the other,
    one row of panels per (dataset, λ); lines per algorithm (ours: solid with a ± sd band; the
    authors': dashed, same color). See the module docstring.

    Raises:
        ValueError: ``x`` not "M" or "K".
    """
    from fedbench.analysis.style import algorithm_colors, wrap_title

    if x not in ("M", "K"):
        raise ValueError(f"plot_best: x must be 'M' or 'K', got {x!r}")
    other = "K" if x == "M" else "M"
    ok = best.filter(pl.col("K").is_not_null())
    settings = ok.select("dataset", "lam").unique(maintain_order=True).rows()
    panel_values = {s: _panels(sorted(set(ok.filter((pl.col("dataset") == s[0]) & (pl.col("lam") == s[1]))
                                          [other].to_list())), PAPER_K_PANELS if other == "K" else PAPER_M_PANELS)
                    for s in settings}
    ncols = max([len(v) for v in panel_values.values()] or [1])
    fig, axes = figure_grid(max(1, len(settings)) * ncols, ncols, 3.3, 2.9)
    keys = list(dict.fromkeys(ok["key"].to_list()))
    palette = algorithm_colors(keys)
    paper_drawn, coincide = False, []
    for ax in axes.ravel():
        ax.set_visible(False)
    if not settings:
        axes[0][0].set_visible(True)
        axes[0][0].text(0.5, 0.5, "no FedAc sweep with local steps", ha="center", va="center")
    for ri, (ds, lam) in enumerate(settings):
        part = ok.filter((pl.col("dataset") == ds) & (pl.col("lam") == lam))
        pref = ref.filter((pl.col("dataset") == ds) & (pl.col("lambda") == lam))
        for ci, v in enumerate(panel_values[(ds, lam)]):
            ax = axes[ri][ci]
            ax.set_visible(True)
            for key in keys:
                g = part.filter((pl.col("key") == key) & (pl.col(other) == v) & pl.col("mean").is_not_null()).sort(x)
                color = palette[key]
                if g.height:
                    xs, ms = g[x].to_list(), g["mean"].to_list()
                    sds = [s or 0.0 for s in g["sd"].to_list()]
                    ax.plot(xs, ms, color=color, marker="o", ms=3.5, lw=1.5, label=ALGORITHM_NAMES.get(key, key))
                    ax.fill_between(xs, [max(m - s, m * 0.05) for m, s in zip(ms, sds)],
                                    [m + s for m, s in zip(ms, sds)], color=color, alpha=0.18, lw=0)
                p = pref.filter((pl.col("algorithm") == key) & (pl.col(other) == v)
                                & pl.col(x).is_in(part[x].unique().to_list())).sort(x)
                if p.height:
                    ax.plot(p[x].to_list(), p["best_suboptimality"].to_list(), color=color, ls="--", lw=1.0,
                            marker="o", ms=3, mfc="none", alpha=0.8)
                    paper_drawn = True
            same = _coincide(keys, v if other == "K" else None, part, x)
            if same and x == "K":  # said once, in the legend: the pairs meet at K = 1 in every panel
                coincide = same
            elif same:
                ax.text(0.02, 0.02, "\n".join(same), transform=ax.transAxes, ha="left", va="bottom", fontsize=6.5,
                        color="0.25", bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "0.8", "alpha": 0.85})
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{ds}, λ = {lam:g}: {other} = {v}", fontsize=9)
            ax.set_xlabel("workers M" if x == "M" else "local steps K")
            if ci == 0:
                ax.set_ylabel("best suboptimality F(w) − F*")
            ax.grid(alpha=0.3, which="both")
    handles, labels = [], []
    for ax in axes.ravel():
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    if handles:
        from matplotlib.lines import Line2D

        if paper_drawn:  # only when some panel shows the authors' numbers
            handles.append(Line2D([], [], color="0.3", ls="--", marker="o", mfc="none"))
            labels.append("paper (authors' runs)")
        for text in coincide:
            handles.append(Line2D([], [], ls="none"))
            labels.append(text.replace(" (same algorithm)", ": the curves meet there (same algorithm)"))
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 6), fontsize=8)
    seeds = sorted({int(n) for n in ok["n_seeds"].drop_nulls().to_list()} - {0})
    spread = "one seed" if seeds == [1] else "mean ± sd over seeds"
    figs = "M (Figs. 1, 2, 4, 6)" if x == "M" else "K (Figs. 3, 5, 7)"
    paper = "dashed: the authors' runs" if paper_drawn else "no paper numbers for these datasets"
    fig.suptitle(wrap_title(f"FedAc: best suboptimality vs {figs} ({spread}; {paper})", fig.get_figwidth()),
                 fontsize=11)
    return save_figure(fig, path, dpi)


#: Algorithms that are one algorithm at K = 1 (one local step): FedAvg is minibatch SGD and
#: FedAc (every variant) is minibatch accelerated SGD (Yuan & Ma, NeurIPS 2020, §3: FedAc with K = 1
#: reduces to accelerated minibatch SGD).
SAME_AT_K1 = (("fedavg", "mb_sgd"), ("fedac", "mb_ac_sgd"), ("fedac_vanilla", "mb_ac_sgd"),
              ("fedac_ii", "mb_ac_sgd"), ("fedac_ii_code", "mb_ac_sgd"))


def _coincide(keys: Sequence[str], k_panel: int | None, part: pl.DataFrame, x: str) -> list[str]:
    """The lines of the panel's note: "K = 1: FedAvg ≡ Mb-SGD (same algorithm)" for each pair of
    :data:`SAME_AT_K1` drawn in a panel of K = 1 (vs M) or, vs K, at the point K = 1."""
    if x == "M" and k_panel != 1:
        return []
    if x == "K" and 1 not in set(part["K"].to_list()):
        return []
    out = []
    for a, b in SAME_AT_K1:
        if a in keys and b in keys:
            out.append(f"K = 1: {ALGORITHM_NAMES.get(a, a)} ≡ {ALGORITHM_NAMES.get(b, b)} (same algorithm)")
    return out

# ----------------------------------------------------------------------------------------------
# Claims (the scorecard: fedbench.analysis.scorecard)

#: The datasets (ids) the paper's claims are about.
PAPER_DATASETS = ("a9a", "epsilon")
_FOUR = ("fedac", "fedavg", "mb_sgd", "mb_ac_sgd")
#: The smallest K at which the paper has FedAc-I beat the three baselines "by a margin", per
#: (dataset, λ): K ≥ 64 in §5 (Figs. 1 and 3, a9a λ = 1e-3; Figs. 6 and 7 on epsilon are
#: "qualitatively similar"); K ≥ 128 in App. A.2 (Figs. 4 and 5, a9a λ = 1e-2: "for K ≤ 64, the
#: performance of FedAc and Mb-Ac-Sgd are similar ... for K ≥ 128 ... FedAc outperforms the other
#: baselines by a margin"). Any other (dataset, λ): 64.
LARGE_K = {("a9a", 1e-2): 128}
LARGE_M = 256


def _best_table(ev) -> pl.DataFrame | None:
    t = ev.tables.get(BEST)
    return None if t is None else t.filter(pl.col("status") == "ok")


def _group_cells(rows: pl.DataFrame) -> list[str]:
    from fedbench.analysis.scorecard import cell_name

    return list(dict.fromkeys(f"{cell_name(r['experiment'], r['dataset'], 'shared', r['algorithm'])} "
                              f"(M = {r['M']}, K = {r['K']})" for r in rows.iter_rows(named=True)))


def _on_paper_data(best: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """The rows on the paper's datasets, and the other datasets run (for a note)."""
    others = sorted(set(best["dataset"].to_list()) - set(PAPER_DATASETS))
    return best.filter(pl.col("dataset").is_in(list(PAPER_DATASETS))), ", ".join(others)


def _no_sweep():
    from fedbench.analysis.scorecard import Verdict

    return Verdict.undecidable("no FedAc sweep ran (the table fedac_best is made from swept cells only)")


def _large_k(ds: str, lam: float) -> int:
    """:data:`LARGE_K` of (``ds``, ``lam``): the smallest K of the claim there."""
    return next((k for (d, at), k in LARGE_K.items() if d == ds and math.isclose(at, lam)), 64)


def _decide_best_at_large(ev):
    """FedAc-I below each of FedAvg, Mb-SGD and Mb-Ac-SGD at every point with M ≥ 256 and K at or
    above its figure's :data:`LARGE_K` (64; 128 at a9a λ = 1e-2)."""
    from fedbench.analysis.scorecard import Verdict, ratio_text

    best = _best_table(ev)
    if best is None:
        return _no_sweep()
    paper, others = _on_paper_data(best)
    big = paper.filter((pl.col("M") >= LARGE_M) & pl.col("key").is_in(list(_FOUR)))
    big = big.filter(pl.Series([k >= _large_k(d, lam) for d, lam, k in big.select("dataset", "lam", "K").rows()],
                               dtype=pl.Boolean))
    points, gaps, losses, rows = 0, [], [], []
    for (ds, lam, m, k), g in big.group_by(["dataset", "lam", "M", "K"], maintain_order=True):
        score = dict(zip(g["key"].to_list(), g["mean"].to_list()))
        if set(score) != set(_FOUR):
            continue
        points += 1
        rows.append(g)
        base = min(score[a] for a in _FOUR[1:])
        ratio = base / score["fedac"]
        gaps.append((ratio, f"{ds} λ = {lam:g}, M = {m}, K = {k}"))
        if ratio <= 1:
            losses.append(gaps[-1])
    if not points:
        where = f" (this run: {others})" if others and paper.height == 0 else ""
        return Verdict.undecidable("needs the four algorithms at some K ≥ 64 (≥ 128 at a9a λ = 1e-2) and M ≥ 256 "
                                   f"on a9a or epsilon; none ran{where}")
    cells = _group_cells(pl.concat(rows))
    worst = min(gaps)
    if losses:
        return Verdict.decide(False, f"FedAc-I not the best at {len(losses)} of {points} points",
                              f"at {worst[1]} the best baseline is {ratio_text(1 / worst[0])} below FedAc-I", cells)
    med = sorted(r for r, _ in gaps)[len(gaps) // 2]
    return Verdict.decide(True, f"FedAc-I the best at {points} of {points} points",
                          f"the best baseline over FedAc-I: smallest {ratio_text(worst[0])} ({worst[1]}), "
                          f"median {ratio_text(med)}", cells)


def _decide_rounds(ev):
    """§5's rounds to 1e-3 at M = 8,192 on a9a, λ = 1e-3: FedAc-I the fewest of the four, every
    count within 2× of the paper's."""
    from fedbench.analysis.scorecard import Verdict

    rounds = ev.tables.get(ROUNDS)
    if rounds is None:
        return _no_sweep()
    m, target, claim = PAPER_CLAIMS[("a9a", 1e-3)]
    part = rounds.filter((pl.col("dataset") == "a9a") & (pl.col("lam") == 1e-3) & (pl.col("M") == m)
                         & (pl.col("target") == target) & pl.col("key").is_in(list(_FOUR)))
    have = dict(zip(part["key"].to_list(), part["rounds"].to_list()))
    if set(have) != set(_FOUR):
        return Verdict.undecidable(f"needs the four algorithms at M = {m:,} on a9a, λ = 1e-3 (fedac_rounds has "
                                   f"{', '.join(sorted(have)) or 'none'} there)")
    ours = " / ".join("not reached" if have[a] is None else str(have[a])
                      for a in ("fedac", "mb_ac_sgd", "mb_sgd", "fedavg"))
    if have["fedac"] is None:
        return Verdict.decide(False, ours, "FedAc-I does not reach 1e-3 at any K run")
    fewest = all(have[a] is None or have["fedac"] <= have[a] for a in _FOUR[1:])
    far = {a: have[a] / claim[a] for a in _FOUR if have[a] is not None}
    off = {a: f for a, f in far.items() if not 0.5 <= f <= 2.0}
    missing = [a for a in _FOUR if have[a] is None]
    ok = fewest and not off and not missing
    margin = ("FedAc-I the fewest; " if fewest else "FedAc-I not the fewest; ") + ", ".join(
        f"{ALGORITHM_NAMES[a]} {far[a]:.3g}× the paper's" for a in far) + (
        f"; not reached: {', '.join(ALGORITHM_NAMES[a] for a in missing)}" if missing else "")
    return Verdict.decide(ok, ours, margin, [f"a9a λ = 1e-3, M = {m:,}, K = {part['K_run'][0]}"],
                          "the paper's 32 for FedAc-I counts its 1.04e-3 as reaching 1e-3; the same rule on its "
                          "published runs gives 64")


def _decide_vanilla(ev):
    """Fig. 2: vanilla FedAc over FedAc-I (median over M) > 1 at the largest K ≥ 32 run, and larger
    than at the smallest K run."""
    from fedbench.analysis.scorecard import Verdict, ratio_text

    best = _best_table(ev)
    if best is None:
        return _no_sweep()
    paper, _ = _on_paper_data(best)
    both = paper.filter(pl.col("key").is_in(["fedac", "fedac_vanilla"]))
    results = []
    for (ds, lam), g in both.group_by(["dataset", "lam"], maintain_order=True):
        wide = g.pivot(on="key", index=["M", "K"], values="mean", aggregate_function="first")
        if not {"fedac", "fedac_vanilla"} <= set(wide.columns):
            continue
        ratio = (wide.drop_nulls(["fedac", "fedac_vanilla"])
                 .with_columns((pl.col("fedac_vanilla") / pl.col("fedac")).alias("r"))
                 .group_by("K").agg(pl.col("r").median()).sort("K"))
        if ratio.height < 2 or ratio["K"].max() < 32:
            continue
        lo, hi = ratio["r"][0], ratio["r"][-1]
        results.append((ds, lam, ratio, hi > 1 and hi > lo, g))
    if not results:
        return Verdict.undecidable("needs FedAc-I and vanilla FedAc at two or more K, one ≥ 32, on a9a or "
                                   "epsilon; not run")
    ok = all(r[3] for r in results)
    ours = "; ".join(f"{ds} λ = {lam:g}: " + ", ".join(f"K = {k}: {ratio_text(v)}" for k, v in r.iter_rows())
                     for ds, lam, r, _, _ in results)
    return Verdict.decide(ok, ours, "vanilla FedAc / FedAc-I (median over M) " +
                          ("grows above 1 with K" if ok else "does not grow above 1 with K"),
                          _group_cells(pl.concat([r[4] for r in results])))


def _decide_within_2x(ev):
    """Every (dataset, λ, algorithm, M, K) with an authors' number: ours / theirs in [1/2, 2]."""
    from fedbench.analysis.scorecard import Verdict, ratio_text

    best = _best_table(ev)
    if best is None:
        return _no_sweep()
    have = best.filter(pl.col("paper").is_not_null() & pl.col("ratio").is_not_null())
    if have.height == 0:
        _, others = _on_paper_data(best)
        return Verdict.undecidable("no cell has an authors' number (their runs: a9a at λ = 1e-2, 1e-3, 1e-4 and "
                                   f"epsilon at 1e-4, T = 4,096){f'; this run: {others}' if others else ''}")
    r = have["ratio"]
    out = have.filter((pl.col("ratio") > 2) | (pl.col("ratio") < 0.5))
    ours = (f"{have.height - out.height} of {have.height} within 2× (ours / theirs: median {r.median():.3g}, "
            f"range {r.min():.3g}–{r.max():.3g})")
    if out.height:
        worst = max(r.max(), 1 / r.min())
        return Verdict.decide(False, ours, f"{out.height} cell(s) outside 2×, the farthest {ratio_text(worst)}",
                              _group_cells(out))
    return Verdict.decide(True, ours, f"the farthest {ratio_text(max(r.max(), 1 / r.min()))} of 2×",
                          _group_cells(have))


def claims():
    """The paper's claims, as code (:class:`fedbench.analysis.scorecard.Claim`)."""
    from fedbench.analysis.scorecard import Claim

    return [
        Claim("fedac.best_at_large_K_M", KEY, "§5, Figs. 1 and 3; App. A.2, Figs. 4 and 5",
              "FedAc-I is the most robust at large K and M: at K ≥ 64 (at λ = 1e-2, K ≥ 128, where Mb-Ac-SGD is "
              "\"similar\" up to K = 64) and M ≥ 256 it has the lowest best suboptimality of FedAc-I, FedAvg, "
              "Mb-SGD and Mb-Ac-SGD",
              "FedAc-I lowest at every such point (a9a, λ = 1e-3: the best baseline 4.3–7.6× above it in the "
              "authors' runs)",
              "best suboptimality (min over evaluations of F(w) − F*, mean over seeds at the chosen η) per "
              "(dataset, λ, algorithm, M, K): table fedac_best",
              "at every (a9a or epsilon, λ, M ≥ 256, K ≥ 64; K ≥ 128 at a9a λ = 1e-2) where all four ran, FedAc-I's "
              "is below each other's",
              _decide_best_at_large),
        Claim("fedac.rounds_to_1e-3", KEY, "§5",
              "on a9a (λ = 1e-3, M = 8,192) FedAc needs 32 rounds to reach suboptimality 1e-3, Mb-Ac-SGD 128, "
              "Mb-SGD 1,024, FedAvg 4,096",
              "32 / 128 / 1,024 / 4,096",
              "the fewest rounds T/K, over the K run, at which the best suboptimality is ≤ 1e-3 at M = 8,192: "
              "table fedac_rounds",
              "FedAc-I needs the fewest rounds of the four, and every count is within 2× of the paper's",
              _decide_rounds),
        Claim("fedac.vanilla_degrades_with_K", KEY, "§5, Fig. 2",
              "vanilla FedAc (no trade-off in K) degrades as K grows, where FedAc-I does not",
              "vanilla / FedAc-I above 1 and growing with K (authors' runs, a9a λ = 1e-4: 1.25× at K = 2, "
              "3.13× at K = 128)",
              "vanilla FedAc's best suboptimality over FedAc-I's, median over M, per K",
              "on a9a or epsilon, at the largest K run (≥ 32) the ratio is > 1 and above its value at the "
              "smallest K run",
              _decide_vanilla),
        Claim("fedac.within_2x_of_authors", KEY, "Figs. 1–7 (the authors' published runs)",
              "the best suboptimality of each (dataset, λ, algorithm, M, K) as the authors' published runs "
              "have it",
              "their number per cell (reference/fedac_best_suboptimality.csv)",
              "ours / the authors' best suboptimality per cell (ours: mean over seeds; theirs: seed 1)",
              "every cell with an authors' number within a factor 2",
              _decide_within_2x),
    ]
