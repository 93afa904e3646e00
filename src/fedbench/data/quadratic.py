"""A federated quadratic problem as a dataset: client i's loss is f_i(x) = ½(x − c_i)ᵀA_i(x − c_i).

Source: the quadratic model of Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated
Learning and Meta-Learning", AISTATS 2021, Section 2 (Assumptions 1 and 2): examples z with loss
f(x; z) = ½‖B_z^{1/2}(x − c_z)‖², client losses f_i = E_{z∼D_i} f(·; z), so that (up to a constant)
f_i(x) = ½(x − c_i)ᵀA_i(x − c_i) with A_i = E[B_z], c_i = A_i⁻¹E[B_z c_z], μI ⪯ A_i ⪯ LI and ‖c_i‖ ≤ C.
The closed forms of :mod:`fedbench.theory` (the surrogate minimizer x*(α, γ, Θ), κ, the rates) are
stated for exactly this problem; this module makes it something the engine trains like any dataset.

How a quadratic fits fedbench's (x, y) rows. Every example is rank one, B_z = a_z a_zᵀ, with
c_z any point with a_zᵀc_z = t_z, so f(x; z) = ½(a_zᵀx − t_z)²: least-squares regression. A row of
``x_train`` is ``[a_z, t_z]`` (d + 1 float64 values, the target in the last column); ``y`` is a
dummy label 0 (one class). The model :mod:`fedbench.models.quadratic` computes the residual
a_zᵀx − t_z and declares the loss ½ r² (mean over a minibatch's rows). Client i's n examples are
its natural client (partition ``natural``), and the empirical distribution over them is D_i:

    A_i = (1/n) Σ_z a_z a_zᵀ,     c_i = A_i⁻¹ (1/n) Σ_z a_z t_z.

Construction (so that these empirical moments are *exactly* the generated A_i and c_i, up to
float64 rounding of the rows):

- spectrum λ_1..λ_d of A_i in [μ, L]: ``spectrum: uniform`` draws d − 2 values U(μ, L) and adds
  both endpoints (every client spans exactly [μ, L], so κ₀ = L/μ); ``linspace`` takes d equally
  spaced values from μ to L (the same for every client); d = 1 takes μ (and L must equal μ);
- eigenbasis U_i: a Haar-random orthogonal matrix per client (``shared_basis: false``, the default:
  client Hessians differ, which is what makes x*(α, γ, Θ) ≠ x*), or the identity for every client
  (``shared_basis: true``);
- c_i uniform in the ball of radius ``c_radius`` C (Assumption 2);
- the design: Q (n × d) with orthonormal columns (the QR of a Gaussian n × d matrix; n = d gives a
  random orthogonal matrix) and rows a_z = √n · (Q Λ^{1/2} U_iᵀ)_z, so (1/n) Σ a aᵀ = U_i Λ U_iᵀ = A_i;
- targets t_z = a_zᵀc_i + ε_z with ε = ``noise`` · √n · (a unit vector orthogonal to the columns of
  Q), so Σ_z a_z ε_z = 0 (c_i stays the minimizer) and f_i has the additive constant ½ noise².
  ``noise`` > 0 needs n > d.

Deterministic (full-batch) use: ``local.batch_size`` ≥ n, so every local step sees all n rows and
the client gradient is exactly A_i(x − c_i) (Theorem 3's deterministic setting). Stochastic use:
a smaller batch; minibatch gradients (1/B) Σ_{z∈S} a_z(a_zᵀx − t_z) are unbiased for A_i(x − c_i),
and independent across steps with ``local.replacement: true`` (Theorem 1's assumptions).

The test split holds the same rows as the train split (the problem has no held-out data): test
loss = train loss = the mean of the clients' losses weighted by n (equal here), f(x) plus the
noise constant. :func:`client_quadratics` recovers (A, c, p) from a prepared dataset's rows, in
float64: the exact problem the engine trains, for the closed forms of :mod:`fedbench.theory`;
:func:`global_optimum` gives x* and f*, so ``train_loss − f*`` = ½‖x_t − x*‖²_{E[A_i]}.

Randomness is keyed (:mod:`fedbench.rng`): client i's draws (spectrum, U_i, c_i, Q, ε) come
from ``generator(seed, 0, i, "dataset")``, so a client does not depend on how many others there are.
"""

from __future__ import annotations

import math

import numpy as np

from fedbench.data.store import Dataset
from fedbench.rng import generator

SOURCE = "charles-konecny-quadratic"
SPECTRA = ("uniform", "linspace")
DEFAULTS = {"num_clients": 10, "dim": 10, "mu": 1.0, "L": 10.0, "spectrum": "uniform", "shared_basis": False,
            "c_radius": 1.0, "examples_per_client": None, "noise": 0.0, "seed": 0}


class ParamError(ValueError):
    """A quadratic-problem parameter out of range; ``key`` names it (for the config's key path)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)


def check_params(num_clients=10, dim=10, mu=1.0, L=10.0, spectrum="uniform", shared_basis=False, c_radius=1.0,
                 examples_per_client=None, noise=0.0, seed=0) -> None:
    """Check :func:`generate_quadratic`'s parameters without drawing anything.

    Raises:
        ParamError: the first parameter out of range (``key`` names it, the message the allowed values).
    """
    def bad(key, got, want):
        raise ParamError(key, f"quadratic: {key} must be {want}, got {got!r}")

    if not _is_int(num_clients) or num_clients < 1:
        bad("num_clients", num_clients, "an integer >= 1, e.g. 10")
    if not _is_int(dim) or dim < 1:
        bad("dim", dim, "an integer >= 1 (the model dimension d), e.g. 10")
    if not _is_num(mu) or mu <= 0:
        bad("mu", mu, "a number > 0 (the smallest eigenvalue of every A_i, Assumption 1)")
    if not _is_num(L) or L < mu:
        bad("L", L, f"a number >= mu ({mu}) (the largest eigenvalue of every A_i, Assumption 1)")
    if dim == 1 and L != mu:
        bad("L", L, f"equal to mu ({mu}) when dim is 1 (one eigenvalue cannot span [mu, L])")
    if spectrum not in SPECTRA:
        bad("spectrum", spectrum, f"one of {', '.join(SPECTRA)}")
    if not isinstance(shared_basis, (bool, np.bool_)):
        bad("shared_basis", shared_basis, "true or false")
    if not _is_num(c_radius) or c_radius < 0:
        bad("c_radius", c_radius, "a number >= 0 (the radius C of the ball holding the c_i, Assumption 2)")
    if examples_per_client is not None and (not _is_int(examples_per_client) or examples_per_client < dim):
        bad("examples_per_client", examples_per_client, f"null (= dim) or an integer >= dim ({dim})")
    n = dim if examples_per_client is None else examples_per_client
    if not _is_num(noise) or noise < 0:
        bad("noise", noise, "a number >= 0 (the RMS target noise)")
    if noise > 0 and n <= dim:
        bad("noise", noise, f"0 unless examples_per_client > dim ({dim}): the noise lives in the n − d directions "
                            f"orthogonal to the design; set examples_per_client above {dim}")
    if not _is_int(seed) or seed < 0:
        bad("seed", seed, "an integer >= 0")


def client_size(params: dict) -> int:
    """n, each client's number of examples (``examples_per_client``, or ``dim`` when null)."""
    n = params.get("examples_per_client")
    return int(params.get("dim", DEFAULTS["dim"]) if n is None else n)


def _haar_orthogonal(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-distributed d × d orthogonal matrix (QR of a Gaussian, column signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def _spectrum(rng: np.random.Generator, d: int, mu: float, L: float, spectrum: str) -> np.ndarray:
    if d == 1:
        return np.array([float(mu)])
    if spectrum == "linspace":
        return np.linspace(mu, L, d)
    return np.sort(np.concatenate([[mu, L], rng.uniform(mu, L, d - 2)]))


def client_problem(i: int, num_clients=10, dim=10, mu=1.0, L=10.0, spectrum="uniform", shared_basis=False,
                   c_radius=1.0, examples_per_client=None, noise=0.0, seed=0) -> dict:
    """Client i's generated problem and rows, in float64.

    Returns:
        ``{"A": (d, d), "c": (d,), "eigenvalues": (d,), "basis": (d, d) U_i, "rows": (n, d + 1)
        [a_z, t_z]}``.
    """
    d = int(dim)
    n = d if examples_per_client is None else int(examples_per_client)
    rng = generator(int(seed), 0, int(i), "dataset")
    lam = _spectrum(rng, d, float(mu), float(L), spectrum)
    u = np.eye(d) if shared_basis else _haar_orthogonal(rng, d)
    direction = rng.standard_normal(d)
    norm = np.linalg.norm(direction)
    radius = float(c_radius) * rng.uniform() ** (1.0 / d)  # uniform in the ball of radius C
    c = direction / norm * radius if norm > 0 else np.zeros(d)
    q, r = np.linalg.qr(rng.standard_normal((n, d)))  # n × d, orthonormal columns
    q = q * np.sign(np.diag(r))
    a = math.sqrt(n) * (q * np.sqrt(lam)) @ u.T
    t = a @ c
    if noise > 0:
        e = rng.standard_normal(n)
        e -= q @ (q.T @ e)  # orthogonal to the design's columns: Σ a_z ε_z = 0
        e -= q @ (q.T @ e)  # twice: to rounding
        t = t + float(noise) * math.sqrt(n) * e / np.linalg.norm(e)
    return {"A": (u * lam) @ u.T, "c": c, "eigenvalues": lam, "basis": u, "rows": np.column_stack([a, t])}


def generate_quadratic(num_clients: int = 10, dim: int = 10, mu: float = 1.0, L: float = 10.0,
                       spectrum: str = "uniform", shared_basis: bool = False, c_radius: float = 1.0,
                       examples_per_client: int | None = None, noise: float = 0.0, seed: int = 0,
                       name: str = "quadratic") -> Dataset:
    """Generate the federated quadratic problem (module docstring) with natural clients.

    Args:
        num_clients: number of clients (natural clients 0..num_clients − 1).
        dim: d, the model dimension.
        mu, L: the spectral bounds of every A_i (μ > 0, L ≥ μ).
        spectrum: ``"uniform"`` (endpoints μ, L plus d − 2 uniform draws) or ``"linspace"``.
        shared_basis: every A_i diagonal (True) or with its own random eigenbasis (False).
        c_radius: C, the radius of the ball the c_i are drawn uniformly from.
        examples_per_client: n ≥ d examples per client (None: d).
        noise: RMS target noise (> 0 needs n > d).
        seed: generator seed.
        name: the dataset id recorded in the Dataset.

    Returns:
        A Dataset: ``x_train`` (num_clients·n, d + 1) float64 rows [a_z, t_z], ``y_train`` zeros
        (one class), the test split equal to the train split, natural clients ``client_train`` /
        ``client_test``; ``meta["params"]`` the parameters.

    Raises:
        ParamError (a ValueError): a parameter out of range (the message names it).
    """
    params = {"num_clients": num_clients, "dim": dim, "mu": mu, "L": L, "spectrum": spectrum,
              "shared_basis": shared_basis, "c_radius": c_radius, "examples_per_client": examples_per_client,
              "noise": noise, "seed": seed}
    check_params(**params)
    rows = [client_problem(i, **params)["rows"] for i in range(num_clients)]
    n = client_size(params)
    x = np.concatenate(rows)
    y = np.zeros(len(x), dtype=np.int64)
    clients = np.repeat(np.arange(num_clients, dtype=np.int64), n)
    return Dataset(name=name, x_train=x, y_train=y, x_test=x.copy(), y_test=y.copy(), num_classes=1,
                   client_train=clients, client_test=clients.copy(),
                   meta={"source": SOURCE, "params": {**params, "shared_basis": bool(shared_basis)}})


def client_quadratics(x: np.ndarray, clients: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, c, p) of the quadratic problem the rows ``x`` define, in float64.

    Args:
        x: (N, d + 1) rows [a_z, t_z] (a prepared dataset's ``x_train``).
        clients: (N,) the client of each row, ids 0..n − 1 (``client_train``).

    Returns:
        A (n, d, d) with A_i = (1/n_i) Σ a aᵀ, c (n, d) with c_i = A_i⁻¹ (1/n_i) Σ a t, and p (n,)
        with p_i = n_i / N: the weights fedbench's aggregation gives client i under full
        participation. The arguments of :mod:`fedbench.theory.quadratic`.

    Raises:
        ValueError: a client without rows, or a singular A_i.
    """
    x = np.asarray(x, dtype=np.float64)
    clients = np.asarray(clients)
    ids = np.unique(clients)
    if not np.array_equal(ids, np.arange(len(ids))):
        raise ValueError(f"client_quadratics: client ids must be 0..n-1, got {ids[:10]}...")
    a, t = x[:, :-1], x[:, -1]
    A, c, p = [], [], []
    for i in ids:
        rows = clients == i
        ai, ti = a[rows], t[rows]
        Ai = ai.T @ ai / len(ti)
        A.append(Ai)
        c.append(np.linalg.solve(Ai, ai.T @ ti / len(ti)))
        p.append(len(ti))
    p = np.asarray(p, dtype=np.float64)
    return np.stack(A), np.stack(c), p / p.sum()


def global_optimum(x: np.ndarray, clients: np.ndarray) -> tuple[np.ndarray, float]:
    """(x*, f*) of the problem the rows ``x`` define: x* = E[A_i]⁻¹E[A_i c_i] (the true minimizer of
    Σ p_i f_i, p_i = n_i/N) and f* the mean row loss ½(aᵀx* − t)² over all rows, which is what the
    engine's ``train_loss`` (and ``test_loss``) report, so that ``train_loss − f*`` =
    ½(x − x*)ᵀE[A_i](x − x*) = ½‖x − x*‖²_H exactly (H = E[A_i]), in float64.

    Args: as :func:`client_quadratics`.
    """
    A, c, p = client_quadratics(x, clients)
    hessian = np.einsum("i,ijk->jk", p, A)
    x_star = np.linalg.solve(hessian, np.einsum("i,ijk,ik->j", p, A, c))
    rows = np.asarray(x, dtype=np.float64)
    residual = rows[:, :-1] @ x_star - rows[:, -1]
    return x_star, float(0.5 * np.mean(residual**2))


def train_size(params: dict) -> int:
    """The number of train rows the resolved ``params`` give (num_clients · n), after checking them.

    Raises:
        ParamError: as :func:`check_params`.
    """
    check_params(**params)
    return int(params["num_clients"]) * client_size(params)
