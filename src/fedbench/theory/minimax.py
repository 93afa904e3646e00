"""Exact fixed points of federated descent–ascent on quadratic saddle problems, as pure numpy.

Sharma, Panda & Joshi, "Federated Minimax Optimization With Client Heterogeneity", TMLR 2023:
Local SGDA converges to a stationary point of the *surrogate* F̃ = Σ_i w_i f_i with w_i ∝ p_i ‖a_i‖₁
(eq. 2: the objective mismatch of heterogeneous local work, their Fig. 1 with τ = (2, 5)),
Fed-Norm-SGDA's normalized aggregation (their Algorithm 1, eq. 3) to one of F = Σ_i p_i f_i.
On quadratics both statements can be made exact, at a fixed learning rate.

The problem. Client i has z = (x, y) ∈ R^{d_x} × R^{d_y} and

    f_i(x, y) = ½ (x − c_i)ᵀ A_i (x − c_i) + (x − c_i)ᵀ B_i (y − d_i) − ½ (y − d_i)ᵀ C_i (y − d_i)

with A_i (d_x, d_x) and C_i (d_y, d_y) symmetric positive definite, B_i (d_x, d_y): strongly convex
in x, strongly concave in y, saddle at z_i = (c_i, d_i). Its descent–ascent field is

    G_i(z) = (∇_x f_i, −∇_y f_i) = J_i (z − z_i),   J_i = [[A_i, B_i], [−B_iᵀ, C_i]].

The saddle of Σ_i w_i f_i is the zero of Σ_i w_i G_i (:func:`saddle`).

Local work. One simultaneous SGDA step with client rates η_x, η_y (H = diag(η_x I, η_y I)) and
local heavy-ball momentum ρ (buffer v = 0 at the start of every round, ``torch.optim.SGD`` form:
v ← ρ v + G, z ← z − H v) on the exact gradient; the "+" variants (Local SGDA+, Fed-Norm-SGDA+)
take the y-gradient at a snapshot x̂ instead of the local x. A client's τ_i steps are an affine map

    z_i^{(τ_i)} = P_i z + Q_i x̂ + r_i                                       (:func:`client_round_map`)

(without the snapshot Q_i = 0, and z_i^{(τ_i)} − z_i = M_i (z − z_i) with M_i = (I − H J_i)^{τ_i} for
ρ = 0: then z − z_i^{(τ_i)} = S_i H G_i(z), S_i = Σ_{j<τ_i} (I − H J_i)^j, the τ_i-step propagator).

Aggregation, full participation, p_i the client weights (Σ p_i = 1), ‖a_i‖₁ the sum of the local
solver's gradient coefficients (τ_i for SGDA; Σ_{j=1}^{τ} (1 − ρ^j)/(1 − ρ) for momentum ρ):

- Local SGDA (naive, iterates averaged):   z⁺ = Σ_i p_i z_i^{(τ_i)}
- Fed-Norm-SGDA (normalized, server lr γ):  z⁺ = z − γ τ_eff Σ_i p_i (z − z_i^{(τ_i)}) / ‖a_i‖₁,
  τ_eff = Σ_i p_i ‖a_i‖₁

(no projection: Y = R^{d_y}, or a set whose boundary the iterates never reach). Hence, without the
snapshot, the fixed points (:func:`fixed_point`) are the zeros of

    Local SGDA:      Σ_i p_i (I − M_i)(z − z_i) = 0        (ρ = 0: Σ_i p_i S_i H G_i(z) = 0)
    Fed-Norm-SGDA:   Σ_i (p_i / ‖a_i‖₁)(I − M_i)(z − z_i) = 0   (independent of γ and τ_eff)

and as the rates shrink (H = η H₀, η → 0) S_i → τ_i I, so they tend to the saddles of Σ_i p_i τ_i f_i
(Local SGDA: the objective mismatch) and of Σ_i p_i f_i (Fed-Norm-SGDA), at distance O(η): Fed-Norm
removes the mismatch, not the O(η) bias of a fixed client rate. With the snapshot refreshed to the
server's x, the fixed point solves z = P z + Q x + r (:func:`fixed_point` with ``plus=True``): the
snapshot equals x there, whatever the refresh period S.

Shapes: n clients; ``problems`` is a list of n :class:`SaddleQuadratic`; p (n,) non-negative, summing
to 1; taus (n,) ints ≥ 1. z is (d_x + d_y,), x first. Everything is float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["SaddleQuadratic", "a_norm", "client_round_map", "envelope_grad", "field", "fixed_point",
           "jacobian", "random_problem", "round_map", "saddle", "trajectory"]


class SaddleQuadratic(NamedTuple):
    """f(x, y) = ½(x−c)ᵀA(x−c) + (x−c)ᵀB(y−d) − ½(y−d)ᵀC(y−d): A (d_x, d_x), B (d_x, d_y),
    C (d_y, d_y), c (d_x,), d (d_y,)."""

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    c: np.ndarray
    d: np.ndarray

    @property
    def dims(self) -> tuple[int, int]:
        return self.A.shape[0], self.C.shape[0]

    @property
    def center(self) -> np.ndarray:
        """z_i = (c, d), the client's own saddle."""
        return np.concatenate([self.c, self.d])

    def value(self, z: np.ndarray) -> float:
        """f(x, y) at z = (x, y)."""
        dx = self.dims[0]
        u, w = z[:dx] - self.c, z[dx:] - self.d
        return float(0.5 * u @ self.A @ u + u @ self.B @ w - 0.5 * w @ self.C @ w)


def _check_problems(problems: Sequence[SaddleQuadratic]) -> tuple[int, int]:
    if len(problems) == 0:
        raise ValueError("need at least one client problem")
    dims = problems[0].dims
    for i, q in enumerate(problems):
        dx, dy = q.dims
        if q.dims != dims or q.B.shape != (dx, dy) or q.c.shape != (dx,) or q.d.shape != (dy,) \
                or q.A.shape != (dx, dx) or q.C.shape != (dy, dy):
            raise ValueError(f"client {i}: shapes A {q.A.shape}, B {q.B.shape}, C {q.C.shape}, c {q.c.shape}, "
                             f"d {q.d.shape} do not fit d_x = {dims[0]}, d_y = {dims[1]}")
    return dims


def _check_weights(p, n: int) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.shape != (n,) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-12:
        raise ValueError(f"weights must be {n} non-negative numbers summing to 1 (got {p})")
    return p


def jacobian(q: SaddleQuadratic) -> np.ndarray:
    """J = [[A, B], [−Bᵀ, C]] (d, d), d = d_x + d_y: the descent–ascent field is G(z) = J (z − z_i)."""
    return np.block([[q.A, q.B], [-q.B.T, q.C]])


def field(q: SaddleQuadratic, z: np.ndarray) -> np.ndarray:
    """G(z) = (∇_x f, −∇_y f) (d,)."""
    return jacobian(q) @ (np.asarray(z, dtype=np.float64) - q.center)


def saddle(problems: Sequence[SaddleQuadratic], weights) -> np.ndarray:
    """The saddle point z* of Σ_i w_i f_i (any non-negative weights, not all zero): the zero of
    Σ_i w_i J_i (z − z_i), i.e. z* = (Σ w_i J_i)⁻¹ Σ w_i J_i z_i. Shape (d,).

    Raises:
        ValueError: mismatched shapes or weights; numpy.linalg.LinAlgError if Σ w_i J_i is singular.
    """
    _check_problems(problems)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(problems),) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be {len(problems)} non-negative numbers, not all zero (got {w})")
    lhs = sum(wi * jacobian(q) for wi, q in zip(w, problems))
    rhs = sum(wi * jacobian(q) @ q.center for wi, q in zip(w, problems))
    return np.linalg.solve(lhs, rhs)


def envelope_grad(problems: Sequence[SaddleQuadratic], weights, x: np.ndarray) -> np.ndarray:
    """∇Φ(x) for Φ(x) = max_y Σ_i w_i f_i(x, y) (Danskin: ∇_x F at y*(x), y*(x) solving ∇_y F = 0:
    Σ w_i (B_iᵀ(x − c_i) − C_i(y − d_i)) = 0). Shape (d_x,). ‖∇Φ‖ is the paper's NC-SC metric."""
    _check_problems(problems)
    w = np.asarray(weights, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    cbar = sum(wi * q.C for wi, q in zip(w, problems))
    y = np.linalg.solve(cbar, sum(wi * (q.B.T @ (x - q.c) + q.C @ q.d) for wi, q in zip(w, problems)))
    return sum(wi * (q.A @ (x - q.c) + q.B @ (y - q.d)) for wi, q in zip(w, problems))


def a_norm(tau: int, rho: float = 0.0) -> float:
    """‖a‖₁ of τ heavy-ball steps with momentum ρ ∈ [0, 1), buffer 0 at the start:
    Σ_{j=1}^{τ} (1 − ρ^j)/(1 − ρ) (τ for ρ = 0). Sharma et al. 2023, Appendix A.1 (Wang et al. 2020).

    Raises:
        ValueError: τ < 0 or ρ outside [0, 1).
    """
    if tau < 0 or not 0.0 <= rho < 1.0:
        raise ValueError(f"a_norm: need tau >= 0 and 0 <= rho < 1 (got {tau}, {rho})")
    return float(sum((1.0 - rho**j) / (1.0 - rho) for j in range(1, int(tau) + 1)))


def _step_matrix(q: SaddleQuadratic, eta_x: float, eta_y: float, rho: float, plus: bool) -> np.ndarray:
    """One local step as a matrix on the augmented state s = (z, v, x̂, 1) of size 2d + d_x + 1:
    g = J(z − z_i) (its y-part at (x̂, y) when ``plus``), v ← ρ v + g, z ← z − H v."""
    dx, dy = q.dims
    d = dx + dy
    size = 2 * d + dx + 1
    J = jacobian(q)
    # g = Gz z + Gs x̂ + g0
    Gz = J.copy()
    Gs = np.zeros((d, dx))
    if plus:  # y-gradient −∇_y f at (x̂, y): replace the x-dependence of the y-rows by x̂
        Gs[dx:, :] = Gz[dx:, :dx]
        Gz[dx:, :dx] = 0.0
    g0 = -J @ q.center
    H = np.diag(np.concatenate([np.full(dx, eta_x), np.full(dy, eta_y)]))
    T = np.zeros((size, size))
    zs, vs, ss, one = slice(0, d), slice(d, 2 * d), slice(2 * d, 2 * d + dx), 2 * d + dx
    # v' = ρ v + g
    T[vs, zs] = Gz
    T[vs, vs] = rho * np.eye(d)
    T[vs, ss] = Gs
    T[vs, one] = g0
    # z' = z − H v'
    T[zs, zs] = np.eye(d) - H @ Gz
    T[zs, vs] = -rho * H
    T[zs, ss] = -H @ Gs
    T[zs, one] = -H @ g0
    T[ss, ss] = np.eye(dx)
    T[one, one] = 1.0
    return T


def client_round_map(q: SaddleQuadratic, tau: int, eta_x: float, eta_y: float, rho: float = 0.0,
                     plus: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P, Q, r) with z^{(τ)} = P z + Q x̂ + r after τ local SGDA steps from z (buffer 0): P (d, d),
    Q (d, d_x) (zero unless ``plus``), r (d,).

    Raises:
        ValueError: τ < 0, a negative rate, or ρ outside [0, 1).
    """
    if tau < 0 or eta_x < 0 or eta_y < 0 or not 0.0 <= rho < 1.0:
        raise ValueError(f"client_round_map: need tau >= 0, rates >= 0, 0 <= rho < 1 "
                         f"(got {tau}, {eta_x}, {eta_y}, {rho})")
    dx, dy = q.dims
    d = dx + dy
    T = np.linalg.matrix_power(_step_matrix(q, eta_x, eta_y, rho, plus), int(tau))
    return T[:d, :d], T[:d, 2 * d:2 * d + dx], T[:d, 2 * d + dx]


def round_map(problems: Sequence[SaddleQuadratic], p, taus: Sequence[int], eta_x: float, eta_y: float,
              normalized: bool, rho: float = 0.0, plus: bool = False, server_lr: float = 1.0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P, Q, r) of one full-participation round, z⁺ = P z + Q x̂ + r.

    ``normalized=False``: Local SGDA(+)(M), z⁺ = Σ p_i z_i^{(τ_i)}.
    ``normalized=True``: Fed-Norm-SGDA(+), z⁺ = z − γ τ_eff Σ p_i (z − z_i^{(τ_i)})/‖a_i‖₁,
    τ_eff = Σ p_i ‖a_i‖₁, γ = ``server_lr``.

    Raises:
        ValueError: mismatched shapes, weights or counts (see :func:`client_round_map`).
    """
    dx, dy = _check_problems(problems)
    d = dx + dy
    p = _check_weights(p, len(problems))
    if len(taus) != len(problems) or any(int(t) < 1 for t in taus):
        raise ValueError(f"taus must be {len(problems)} integers >= 1 (got {list(taus)})")
    norms = np.array([a_norm(int(t), rho) for t in taus])
    tau_eff = float(p @ norms)
    P, Q, r = np.zeros((d, d)), np.zeros((d, dx)), np.zeros(d)
    for q, pi, t, a in zip(problems, p, taus, norms):
        Pi, Qi, ri = client_round_map(q, int(t), eta_x, eta_y, rho, plus)
        w = pi if not normalized else server_lr * tau_eff * pi / a
        P, Q, r = P + w * Pi, Q + w * Qi, r + w * ri
    if normalized:  # z⁺ = z − Σ w_i (z − z_i^{(τ_i)}) = (1 − Σ w_i) z + Σ w_i z_i^{(τ_i)}
        P = P + (1.0 - server_lr * tau_eff * float(p @ (1.0 / norms))) * np.eye(d)
    return P, Q, r


def fixed_point(problems: Sequence[SaddleQuadratic], p, taus: Sequence[int], eta_x: float, eta_y: float,
                normalized: bool, rho: float = 0.0, plus: bool = False, server_lr: float = 1.0) -> np.ndarray:
    """The fixed point z of :func:`round_map` (with x̂ = x when ``plus``): the solution of
    (I − P − Q E_x) z = r, E_x = [I_{d_x} 0]. Without the snapshot this is the zero of
    Σ_i w_i (I − M_i)(z − z_i), w_i = p_i (Local SGDA) or p_i/‖a_i‖₁ (Fed-Norm-SGDA); see the module
    docstring. Shape (d,).

    Raises:
        ValueError: as :func:`round_map`; numpy.linalg.LinAlgError when there is no unique fixed point.
    """
    P, Q, r = round_map(problems, p, taus, eta_x, eta_y, normalized, rho, plus, server_lr)
    d = P.shape[0]
    dx = Q.shape[1]
    E = np.zeros((dx, d))
    E[:, :dx] = np.eye(dx)
    return np.linalg.solve(np.eye(d) - P - Q @ E, r)


def trajectory(problems: Sequence[SaddleQuadratic], p, taus: Sequence[int], eta_x: float, eta_y: float,
               normalized: bool, z0: np.ndarray, rounds: int, rho: float = 0.0, plus: bool = False,
               snapshot_period: int = 1, server_lr: float = 1.0) -> np.ndarray:
    """The server iterates z^{(0..T)} of :func:`round_map` from z0, the snapshot x̂ refreshed to x at
    rounds t ≡ 0 (mod S) (Algorithm 1, line 4). Shape (T + 1, d)."""
    P, Q, r = round_map(problems, p, taus, eta_x, eta_y, normalized, rho, plus, server_lr)
    dx = Q.shape[1]
    z = np.asarray(z0, dtype=np.float64).copy()
    out, snap = [z.copy()], z[:dx].copy()
    for t in range(int(rounds)):
        if t % int(snapshot_period) == 0:
            snap = z[:dx].copy()
        z = P @ z + Q @ snap + r
        out.append(z.copy())
    return np.array(out)


def random_problem(rng: np.random.Generator, dx: int, dy: int, spread: float = 2.0,
                   coupling: float = 0.5) -> SaddleQuadratic:
    """A random strongly-convex–strongly-concave client: A, C with eigenvalues in [0.5, 2], B with
    N(0, coupling²) entries, c, d ~ N(0, spread²)."""
    def spd(n):
        q = np.linalg.qr(rng.normal(size=(n, n)))[0]
        return q @ np.diag(rng.uniform(0.5, 2.0, size=n)) @ q.T
    return SaddleQuadratic(spd(dx), coupling * rng.normal(size=(dx, dy)), spd(dy),
                           spread * rng.normal(size=dx), spread * rng.normal(size=dy))
