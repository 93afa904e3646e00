"""The objective mismatch of Local SGDA on a two-client quadratic saddle problem (Fig. 1).

Sharma, Panda & Joshi, "Federated Minimax Optimization With Client Heterogeneity", TMLR 2023,
Fig. 1: two clients with τ = (2, 5) local steps; naive aggregation (Local SGDA) is pulled towards
the client that runs more steps. The paper gives no functions or numbers; this is our instance
(:func:`toy_problem`): x, y ∈ R, f_i(x, y) = ½a_i(x − c_i)² + b_i(x − c_i)(y − d_i) − ½e_i(y − d_i)²,
p = (½, ½).

Everything is computed twice, independently:

- the trajectories, by running the real algorithm modules (:mod:`fedbench.algorithms.local_sgda`,
  :mod:`fedbench.algorithms.fed_norm_sgda`) round by round with exact gradients
  (:func:`run_rounds`);
- the fixed points and saddles, from the closed forms of :mod:`fedbench.theory.minimax`: Local
  SGDA's fixed point is the zero of Σ p_i S_i H G_i, Fed-Norm-SGDA's of Σ (p_i/τ_i) S_i H G_i; as
  the lr → 0 they tend to the saddle of Σ p_i τ_i f_i (the mismatched objective) and of Σ p_i f_i
  (the true one), at distance O(lr) (:func:`distance_table`).

    python -m fedbench.analysis.minimax_toy --plot results/plots/paper/minimax_toy.png \\
        --table results/tables/paper/minimax_toy.md

writes the figure (both trajectories, both fixed points, both saddles, the clients' own saddles)
and the table of distances over a decreasing lr (also printed).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import torch

from fedbench.algorithms import get_algorithm
from fedbench.files import atomic_write
from fedbench.theory import minimax as theory

TAUS = (2, 5)
P = np.array([0.5, 0.5])
#: (a, b, e, c, d) of each client: f_i = ½a(x − c)² + b(x − c)(y − d) − ½e(y − d)².
CLIENTS = ((1.0, 0.5, 1.0, -2.0, 1.5), (1.5, -0.3, 0.8, 2.0, -1.0))


def toy_problem() -> list[theory.SaddleQuadratic]:
    """The two clients of :data:`CLIENTS` as 1 × 1 saddle quadratics."""
    return [theory.SaddleQuadratic(np.array([[a]]), np.array([[b]]), np.array([[e]]), np.array([c]), np.array([d]))
            for a, b, e, c, d in CLIENTS]


def _grad_fn(problems):
    def grad_fn(params, i, _labels):
        q = problems[int(i)]
        u = params["x"] - torch.from_numpy(q.c)
        w = params["y.y"] - torch.from_numpy(q.d)
        A, B, C = (torch.from_numpy(m) for m in (q.A, q.B, q.C))
        return {"x": A @ u + B @ w, "y.y": B.T @ u - C @ w}, 0.5 * u @ A @ u + u @ B @ w - 0.5 * w @ C @ w
    return grad_fn


def run_rounds(algorithm: str, problems, p, taus, lr: float, rounds: int, z0, hparams: dict | None = None
               ) -> np.ndarray:
    """Server iterates z^{(0..T)} (T + 1, d) of the real module ``algorithm`` with full participation,
    client i running ``taus[i]`` exact-gradient steps at lr ``lr`` (both players), weights n_i ∝ p_i."""
    alg = get_algorithm(algorithm)
    dx = problems[0].dims[0]
    hp = {"lr": lr, "weight_decay": 0.0, "clip_norm": None, "local_steps": None, **(hparams or {})}
    z0 = torch.as_tensor(np.asarray(z0, dtype=np.float64))
    n_i = torch.as_tensor(np.asarray(p, dtype=np.float64))
    server = alg.server_init({"x": z0[:dx].clone(), "y.y": z0[dx:].clone()}, hp, len(problems), client_weights=n_i)
    grad_fn = _grad_fn(problems)
    out = [z0.numpy().copy()]
    for _ in range(int(rounds)):
        msgs = []
        for i, tau in enumerate(taus):
            state = alg.client_init(server, None, hp)
            for _ in range(int(tau)):
                state = alg.client_step(state, (i, None), hp, grad_fn)
            msgs.append(alg.client_final(server, state, hp)[0])
        server = alg.server_update(server, msgs, n_i, hp)
        out.append(torch.cat([server["params"]["x"], server["params"]["y.y"]]).numpy().copy())
    return np.array(out)


def distance_table(etas, problems=None, p=P, taus=TAUS) -> list[dict]:
    """One row per lr: the fixed points' distances to the saddles (closed forms), and ‖∇Φ‖ at them.

    Columns: ``lr``; ``local_to_mismatch`` ‖z_LocalSGDA − saddle(Σ p_i τ_i f_i)‖;
    ``fednorm_to_true`` ‖z_FedNorm − saddle(Σ p_i f_i)‖; ``local_to_true`` ‖z_LocalSGDA −
    saddle(Σ p_i f_i)‖ (the mismatch, not shrinking); ``grad_phi_local``, ``grad_phi_fednorm``: ‖∇Φ‖ of
    the true objective at each fixed point's x."""
    problems = toy_problem() if problems is None else problems
    z_mis = theory.saddle(problems, p * np.asarray(taus, dtype=np.float64))
    z_true = theory.saddle(problems, p)
    dx = problems[0].dims[0]
    rows = []
    for eta in etas:
        zl = theory.fixed_point(problems, p, taus, eta, eta, normalized=False)
        zn = theory.fixed_point(problems, p, taus, eta, eta, normalized=True)
        rows.append({"lr": float(eta), "local_to_mismatch": float(np.linalg.norm(zl - z_mis)),
                     "fednorm_to_true": float(np.linalg.norm(zn - z_true)),
                     "local_to_true": float(np.linalg.norm(zl - z_true)),
                     "grad_phi_local": float(np.linalg.norm(theory.envelope_grad(problems, p, zl[:dx]))),
                     "grad_phi_fednorm": float(np.linalg.norm(theory.envelope_grad(problems, p, zn[:dx])))})
    return rows


def mismatch_table(etas, rho: float = 0.0, problems=None, p=P, taus=TAUS) -> list[dict]:
    """One row per lr with local heavy-ball momentum ρ (0: plain SGDA): the closed-form fixed points'
    distances to the saddles eq. (2) predicts as the lr → 0. Naive aggregation (Local SGDA(M)) weights
    client i by w_i ∝ p_i ‖a_i‖₁ (τ_i for SGDA; Σ_{j=1}^{τ_i} (1 − ρ^j)/(1 − ρ) with momentum, App.
    A.1); Fed-Norm-SGDA normalizes by ‖a_i‖₁, w_i = p_i.

    Columns: ``lr``; ``local_to_surrogate`` ‖z_Local − saddle(Σ p_i ‖a_i‖₁ f_i)‖; ``fednorm_to_true``
    ‖z_FedNorm − saddle(Σ p_i f_i)‖; ``local_to_true`` ‖z_Local − saddle(Σ p_i f_i)‖."""
    problems = toy_problem() if problems is None else problems
    norms = np.array([theory.a_norm(int(t), rho) for t in taus])
    z_sur = theory.saddle(problems, np.asarray(p) * norms)
    z_true = theory.saddle(problems, p)
    rows = []
    for eta in etas:
        zl = theory.fixed_point(problems, p, taus, eta, eta, normalized=False, rho=rho)
        zn = theory.fixed_point(problems, p, taus, eta, eta, normalized=True, rho=rho)
        rows.append({"lr": float(eta), "local_to_surrogate": float(np.linalg.norm(zl - z_sur)),
                     "fednorm_to_true": float(np.linalg.norm(zn - z_true)),
                     "local_to_true": float(np.linalg.norm(zl - z_true))})
    return rows


def module_gaps(lr: float, rounds: int, rho: float = 0.0, z0=(0.0, 3.0), problems=None, p=P, taus=TAUS) -> dict:
    """{algorithm: ‖z^(T) − closed-form fixed point‖}: the real modules (Local SGDA and
    Fed-Norm-SGDA, local momentum ``rho``) run ``rounds`` rounds (:func:`run_rounds`) against
    :func:`fedbench.theory.minimax.fixed_point`."""
    problems = toy_problem() if problems is None else problems
    out = {}
    for name, normalized in (("local_sgda", False), ("fed_norm_sgda", True)):
        traj = run_rounds(name, problems, p, taus, lr, rounds, z0, {"momentum": rho})
        fp = theory.fixed_point(problems, p, taus, lr, lr, normalized, rho=rho)
        out[name] = float(np.linalg.norm(traj[-1] - fp))
    return out


def skew(lr: float, problems=None, p=P, taus=TAUS) -> dict:
    """Fig. 1's picture in numbers: the distances of Local SGDA's and Fed-Norm-SGDA's fixed points
    (closed forms, lr ``lr``) and of the true saddle to the saddle of the client with the most local
    steps. Keys ``local``, ``fednorm``, ``true``, ``client`` (that client's index)."""
    problems = toy_problem() if problems is None else problems
    k = int(np.argmax(taus))
    zk = problems[k].center
    zl = theory.fixed_point(problems, p, taus, lr, lr, normalized=False)
    zn = theory.fixed_point(problems, p, taus, lr, lr, normalized=True)
    return {"local": float(np.linalg.norm(zl - zk)), "fednorm": float(np.linalg.norm(zn - zk)),
            "true": float(np.linalg.norm(theory.saddle(problems, p) - zk)), "client": k}


def equal_work_gap(lr: float, rounds: int, tau: int = 3, z0=(0.0, 3.0), problems=None, p=P) -> float:
    """max_t ‖z_FedNorm^(t) − z_Local^(t)‖ of the real modules when every client runs ``tau`` steps
    (full participation, server lr 1): Local SGDA as the special case of the framework, eq. (2)."""
    problems = toy_problem() if problems is None else problems
    taus = (tau,) * len(problems)
    a = run_rounds("local_sgda", problems, p, taus, lr, rounds, z0)
    b = run_rounds("fed_norm_sgda", problems, p, taus, lr, rounds, z0)
    return float(np.max(np.linalg.norm(a - b, axis=1)))


def table_markdown(rows: list[dict]) -> str:
    """The distance table as markdown, with each distance divided by the lr (→ a constant: O(lr))."""
    lines = ["| lr | ‖Local SGDA − saddle Σp τ f‖ | /lr | ‖Fed-Norm − saddle Σp f‖ | /lr | "
             "‖Local SGDA − saddle Σp f‖ | ‖∇Φ‖ Local SGDA | ‖∇Φ‖ Fed-Norm |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['lr']:.5g} | {r['local_to_mismatch']:.3e} | {r['local_to_mismatch'] / r['lr']:.4f} | "
                     f"{r['fednorm_to_true']:.3e} | {r['fednorm_to_true'] / r['lr']:.4f} | {r['local_to_true']:.4f} | "
                     f"{r['grad_phi_local']:.3e} | {r['grad_phi_fednorm']:.3e} |")
    return "\n".join(lines) + "\n"


def plot(path: str | os.PathLike, lr: float = 0.1, rounds: int = 60, z0=(0.0, 3.0)) -> Path:
    """Draw Fig. 1: both trajectories (real modules), both fixed points, both saddles, the clients'
    saddles; save to ``path`` (format from the suffix; parents created)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    problems = toy_problem()
    z_mis = theory.saddle(problems, P * np.asarray(TAUS, dtype=np.float64))
    z_true = theory.saddle(problems, P)
    from fedbench.analysis.style import algorithm_colors

    algo = algorithm_colors(["local_sgda", "fed_norm_sgda"])  # their colours in every other figure
    fig = Figure(figsize=(6.4, 5.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for name, label, normalized in (("local_sgda", "Local SGDA", False), ("fed_norm_sgda", "Fed-Norm-SGDA", True)):
        color = algo[name]
        traj = run_rounds(name, problems, P, TAUS, lr, rounds, z0)
        ax.plot(traj[:, 0], traj[:, 1], "-o", ms=2.5, lw=1.0, color=color, label=f"{label} (server iterates)")
        fp = theory.fixed_point(problems, P, TAUS, lr, lr, normalized)
        ax.plot(*fp, marker="X", ms=11, color=color, ls="none", mec="k", label=f"{label} fixed point (closed form)")
    ax.plot(*z_mis, marker="*", ms=15, color="#e6ab02", ls="none", mec="k", label="saddle of Σ p_i τ_i f_i (mismatch)")
    ax.plot(*z_true, marker="*", ms=15, color="white", ls="none", mec="k", label="saddle of Σ p_i f_i (true)")
    for i, (q, tau) in enumerate(zip(problems, TAUS)):
        ax.plot(q.c[0], q.d[0], marker="^", ms=10, ls="none", color=("#9467bd", "#8c564b")[i],
                label=f"client {i + 1} saddle (τ = {tau})")
    ax.plot(*z0, marker="s", ms=7, color="0.3", ls="none", label="start")
    ax.set_xlabel("x (descent)")
    ax.set_ylabel("y (ascent)")
    ax.set_title(f"Heterogeneous local steps τ = {TAUS}, client lr {lr}")
    ax.legend(fontsize=7, loc="lower left")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=130, format=path.suffix.lstrip(".") or "png")
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description="Fig. 1 of Sharma, Panda & Joshi (TMLR 2023) on our quadratic instance")
    ap.add_argument("--plot", default="results/plots/paper/minimax_toy.png")
    ap.add_argument("--table", default="results/tables/paper/minimax_toy.md")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args(argv)
    plot(args.plot, lr=args.lr, rounds=args.rounds)
    text = table_markdown(distance_table(0.2 / 2.0 ** np.arange(9)))
    table = Path(args.table)
    table.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(table) as tmp:
        Path(tmp).write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
