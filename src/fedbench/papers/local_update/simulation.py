"""LocalUpdate simulated on a diagonal quadratic, step by step: the independent side of the scorecard's
closed-form claims (Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and
Meta-Learning", AISTATS 2021).

The paper's frontiers (Figs. 1–5, 7–10) are drawn from closed forms: the surrogate's condition bound
κ = ϕ(L)/ϕ(μ) (Lemma 3, eq. (10)) or ψ(L)/ψ(μ) (Lemma 4, eq. (12)), Table 2's ρ(κ) and Δ of eq. (17).
Here the same quantities come from running the algorithm instead:

- the client's message is produced by Algorithm 2 itself, K gradient steps x_{k+1} = x_k − γg_k on
  f(x) + (α/2)‖x − x_bcast‖², g_k = λx_k + α(x_k − x_bcast), returned as Σ_k θ_k g_k, one eigen-direction
  λ of A at a time (A diagonal, c = 0, x_bcast = 1: the message is the eigenvalue q(λ)λ of Q A,
  Theorem 1). The K steps are the K-th power of the one-step map (binary powering: K up to 10⁸ in
  log₂K products), never the geometric-sum formula of ϕ or ψ;
- the rate ρ is the spectral radius of the server's iteration on the resulting surrogate Hessian at
  the tuned (η, β) of Lessard et al. (2016) (:func:`fedbench.papers.local_update.theory.server_rate`),
  never Table 2's formula.
"""

from __future__ import annotations

import math

import numpy as np

from fedbench.papers.local_update.theory import server_rate
from fedbench.theory import rates

#: K standing in for K → ∞ (the remaining (1 − γ(μ + α))^K is below 1e-40 for every γ ≥ 10⁻⁶ here).
K_INF = 10**8


def _step_maps(lam, alpha: float, gamma: float) -> np.ndarray:
    """One client step of Algorithm 2 per eigenvalue λ, on the state (x_k, S_k, x_bcast):
    g = λx + α(x − x_bcast), x ← x − γg, S ← S + g. Shape (n, 3, 3)."""
    lam = np.atleast_1d(np.asarray(lam, dtype=np.float64))
    g = np.stack([lam + alpha, np.zeros_like(lam), np.full_like(lam, -alpha)], axis=-1)  # g as a row of the state
    T = np.zeros((lam.size, 3, 3))
    T[:, 0, :] = np.array([1.0, 0.0, 0.0]) - gamma * g
    T[:, 1, :] = np.array([0.0, 1.0, 0.0]) + g
    T[:, 2, 2] = 1.0
    return T


def client_messages(lam, alpha: float, gamma: float, K: int, theta: str = "all") -> np.ndarray:
    """The message of Algorithm 2 from x_bcast = 1 with c = 0, per eigenvalue λ of A: Σ_{k ≤ K} g_k
    (``theta="all"``, Θ_{1:K}) or g_K (``"last"``, Θ_K), obtained by applying the one-step map K
    (resp. K − 1) times. By Theorem 1 it is q(λ)λ, the eigenvalue of Q A. Returns (n,)."""
    K = int(K)
    if K < 1 or theta not in ("all", "last"):
        raise ValueError(f"need K ≥ 1 and theta in ('all', 'last'), got K = {K}, theta = {theta!r}")
    T = _step_maps(lam, alpha, gamma)
    start = np.array([1.0, 0.0, 1.0])
    if theta == "all":
        return (np.linalg.matrix_power(T, K) @ start)[:, 1]
    state = np.linalg.matrix_power(T, K - 1) @ start
    lam = np.atleast_1d(np.asarray(lam, dtype=np.float64))
    return (lam + alpha) * state[:, 0] - alpha * state[:, 2]


def tuned_rate(eigenvalues, server: str) -> float:
    """The spectral radius of ``server``'s iteration on a quadratic with Hessian eigenvalues
    ``eigenvalues``, at its tuned (η, β) for the extreme eigenvalues (Lessard et al. 2016, Prop. 1)."""
    ev = np.asarray(eigenvalues, dtype=np.float64)
    eta, beta = rates.tuned_server_parameters(float(ev.max()), float(ev.min()), server)
    return float(server_rate(ev, server, eta, beta))


def simulated_point(mu: float, L: float, alpha: float, gamma: float, K: int, theta: str = "all",
                    server: str = "gd") -> tuple[float, float, float]:
    """(κ, ρ, Δ) of LocalUpdate on the worst-case instance A = diag(L, μ) of Appendix B.3, simulated:
    κ = the ratio of the two messages' eigenvalues (:func:`client_messages`), ρ the tuned server's
    spectral radius on them (:func:`tuned_rate`), Δ = (√κ₀ − √κ)/(√κ₀ + √κ) (eq. (17), κ₀ = L/μ)."""
    m = client_messages([mu, L], alpha, gamma, K, theta)
    kappa = float(m.max() / m.min())
    k0 = L / mu
    return kappa, tuned_rate(m, server), (math.sqrt(k0) - math.sqrt(kappa)) / (math.sqrt(k0) + math.sqrt(kappa))


def spectrum_point(lam, alpha: float, gamma: float, K: int, theta: str = "last",
                   server: str = "gd") -> tuple[float, float, float]:
    """(κ, ρ, Δ) of the simulated frontiers (Figs. 5, 7, 8, 10; Appendix D.1) on the spectrum ``lam``
    of one random A, simulated: κ of eq. (9) from the messages, ρ the tuned server's spectral radius,
    Δ in Lemma 5's form (√b − √a)/(√b + √a), b, a the extreme eigenvalues of Q = message / λ."""
    lam = np.asarray(lam, dtype=np.float64)
    m = client_messages(lam, alpha, gamma, K, theta)
    q = m / lam
    b, a = float(q.max()), float(q.min())
    delta = (math.sqrt(b) - math.sqrt(a)) / (math.sqrt(b) + math.sqrt(a))
    return float(m.max() / m.min()), tuned_rate(m, server), delta


def mirror_gap(rho, delta) -> tuple[float, float]:
    """How far the reflection (Δ, ρ) of each sampled point of a frontier lies from the frontier (the
    polyline through the samples, ordered by ρ), and the longest segment of that polyline: a curve
    symmetric about ρ = Δ has every reflected sample within one segment of the polyline.
    Returns (largest distance, longest segment)."""
    rho, delta = np.asarray(rho, dtype=np.float64), np.asarray(delta, dtype=np.float64)
    order = np.argsort(rho)
    xs, ys = rho[order], delta[order]
    ax, ay, dx, dy = xs[:-1], ys[:-1], np.diff(xs), np.diff(ys)
    seg = np.maximum(dx * dx + dy * dy, 1e-300)
    worst = 0.0
    for px, py in zip(delta, rho):
        t = np.clip(((px - ax) * dx + (py - ay) * dy) / seg, 0, 1)
        worst = max(worst, float(np.min(np.hypot(ax + t * dx - px, ay + t * dy - py))))
    return worst, float(np.sqrt(seg.max()))


def c2_distance(p: float, K: int, rounds: int = 3) -> tuple[float, float]:
    """Appendix C.2's one-dimensional instance (A₁ = 4, A₂ = 1, c₁ = 1, c₂ = −1, P(i = 1) = p, α = 0,
    γ = 1/8, Θ_K), run: each round both clients execute Algorithm 2 (K − 1 steps, message g_K) and the
    server takes the exact Newton-scaled step η = 1/H̃ (H̃ measured as the messages' slope). Returns
    (|x_T − x*|, the paper's limit 8p/(3p + 1)), x* = (5p − 1)/(3p + 1) the true minimizer."""
    A, c, w, gamma = np.array([4.0, 1.0]), np.array([1.0, -1.0]), np.array([p, 1 - p]), 1 / 8

    def message(x):
        out = np.empty(2)
        for i in range(2):
            y = x
            for _ in range(K - 1):
                y = y - gamma * A[i] * (y - c[i])
            out[i] = A[i] * (y - c[i])
        return float(w @ out)

    H = message(1.0) - message(0.0)
    x = 0.0
    for _ in range(rounds):
        x = x - message(x) / H
    x_star = (5 * p - 1) / (3 * p + 1)
    return abs(x - x_star), 8 * p / (3 * p + 1)
