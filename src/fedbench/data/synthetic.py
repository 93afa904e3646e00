"""The FedProx / LEAF Synthetic(α, β) federated dataset.

Source: Li et al. 2020, "Federated Optimization in Heterogeneous Networks" (FedProx), Section 5.1
"Synthetic data", and its reference generator (``litian96/FedProx``,
``data/synthetic_*/generate_synthetic.py`` and ``data/synthetic_iid/generate_iid.py``), which
LEAF's ``data/synthetic`` adopted. With d = 60 features and C = 10 classes, for each client k:

    u_k ~ N(0, α²),   W_k[i, c] ~ N(u_k, 1)   (d x C),   b_k[c] ~ N(u_k, 1)   (C,)
    B_k ~ N(0, β²),   v_k[j] ~ N(B_k, 1)      (d,)
    x ~ N(v_k, Σ),    Σ = diag(j^{-1.2}), j = 1..d
    y = argmax softmax(W_kᵀ x + b_k)       (= argmax of the logits)

α controls how much the local models differ, β how much the local inputs differ. The paper
writes N(0, α); the reference code draws ``np.random.normal(0, alpha)``, so α and β are
standard deviations, as here. ``iid=True`` follows ``generate_iid.py``: one W, b ~ N(0, 1) shared
by all clients and x ~ N(0, Σ) everywhere (α and β are then unused).

Client sizes (``size_distribution``):

* ``"lognormal"`` (FedProx/LEAF): n_k = int(LogNormal(size_mean, size_sigma)) + min_samples_per_client,
  defaults 4, 2 and 50, exactly ``np.random.lognormal(4, 2).astype(int) + 50``.
* ``"powerlaw"``: a Pareto (type I) law with minimum ``min_samples_per_client`` and tail exponent
  ``powerlaw_a``: n_k = floor(m · (1 + L)), L ~ Lomax(a) (numpy's ``pareto``), so
  P(n_k > t) = (m / t)^a for t >= m. Smaller a means heavier tails (a <= 1: infinite mean).

Departures from the reference generator, all configurable back to it:

* ``max_samples_per_client`` (default 1000) caps n_k after the draw. LogNormal(4, 2) has a heavy
  tail (single clients of 20,000+ samples); uncapped, the default dataset's size swings from about
  4k to 50k samples with the seed (seed 0: 24,793). Capped, seeds 0..4 give 9,240, 7,993, 7,788,
  5,589 and 4,596 samples (train + test), 0 to 5 of the 30 clients at the cap. ``None`` = no cap.
* ``test_fraction`` (default 0.1, the reference's 90/10 split): each client keeps its first
  int((1 - test_fraction)·n_k) samples for training and the rest for testing. The reference
  shuffles each client's samples first; the samples are i.i.d. draws, so we do not.
* Randomness is keyed by (seed, round, client, purpose) (:mod:`fedbench.rng`), so the data do
  not depend on the order clients are generated in: client-independent draws (sizes, u, B, the shared iid W, b)
  come from ``generator(seed, 0, -1, "dataset")`` and client k's draws (W_k, b_k, v_k, x) from
  ``generator(seed, 0, k, "dataset")``. The data are statistically the same as the reference's,
  not bitwise (it uses the global ``np.random`` state).
"""

from __future__ import annotations

import numpy as np

from fedbench.data.store import Dataset
from fedbench.rng import generator

NUM_FEATURES = 60
NUM_CLASSES = 10
SIZE_DISTRIBUTIONS = ("lognormal", "powerlaw")
SOURCE = "fedprox-synthetic"


class ParamError(ValueError):
    """A Synthetic(α, β) parameter out of range; ``key`` names it (for the config's key path)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


#: Largest client size (train + test) a draw may give: beyond it the float draw no longer converts
#: to an exact int64 (LogNormal(size_mean, size_sigma) overflows for size_mean ~ 700).
MAX_CLIENT_SIZE = 2**53


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def client_sizes(
    num_clients: int,
    rng: np.random.Generator,
    size_distribution: str = "lognormal",
    size_mean: float = 4.0,
    size_sigma: float = 2.0,
    powerlaw_a: float = 1.5,
    min_samples_per_client: int = 50,
    max_samples_per_client: int | None = 1000,
) -> np.ndarray:
    """Draw the number of samples of each client (train + test together).

    Args: as in :func:`generate_synthetic`.

    Returns:
        (num_clients,) int64 sizes, each in [min_samples_per_client, max_samples_per_client].

    Raises:
        ParamError: an unknown ``size_distribution``; without ``max_samples_per_client``, a draw
            above :data:`MAX_CLIENT_SIZE` samples (or infinite).
    """
    if size_distribution == "lognormal":
        raw = rng.lognormal(size_mean, size_sigma, num_clients)
        offset = min_samples_per_client
    elif size_distribution == "powerlaw":
        raw = min_samples_per_client * (1.0 + rng.pareto(powerlaw_a, num_clients))
        offset = 0
    else:
        raise ParamError("size_distribution", f"synthetic: size_distribution must be one of "
                                              f"{', '.join(SIZE_DISTRIBUTIONS)}, got {size_distribution!r}")
    if max_samples_per_client is not None:  # capped as floats: an overflowing draw becomes the cap
        raw = np.minimum(raw, max_samples_per_client)
    elif num_clients and not (np.isfinite(raw).all() and raw.max() + offset < MAX_CLIENT_SIZE):
        raise ParamError("max_samples_per_client",
                         f"synthetic: without max_samples_per_client the {size_distribution} size law draws a client "
                         f"of more than 2^53 samples: set max_samples_per_client (e.g. 1000), or lower size_mean / "
                         f"size_sigma (raise powerlaw_a)")
    sizes = np.floor(raw).astype(np.int64) + offset
    if max_samples_per_client is not None:
        sizes = np.minimum(sizes, max_samples_per_client)
    return sizes.astype(np.int64)


def _validate(alpha, beta, num_clients, size_distribution, size_mean, size_sigma, powerlaw_a,
              min_samples_per_client, max_samples_per_client, test_fraction, seed) -> None:
    def bad(key, got, want):
        raise ParamError(key, f"synthetic: {key} must be {want}, got {got!r}")

    if not _is_num(alpha) or alpha < 0:
        bad("alpha", alpha, "a number >= 0 (standard deviation of u_k), e.g. 1.0")
    if not _is_num(beta) or beta < 0:
        bad("beta", beta, "a number >= 0 (standard deviation of B_k), e.g. 1.0")
    if not _is_int(num_clients) or num_clients < 1:
        bad("num_clients", num_clients, "an integer >= 1, e.g. 30")
    if size_distribution not in SIZE_DISTRIBUTIONS:
        bad("size_distribution", size_distribution, f"one of {', '.join(SIZE_DISTRIBUTIONS)}")
    if not _is_num(size_mean):
        bad("size_mean", size_mean, "a number (mean of the log of the size), e.g. 4.0")
    if not _is_num(size_sigma) or size_sigma < 0:
        bad("size_sigma", size_sigma, "a number >= 0, e.g. 2.0")
    if not _is_num(powerlaw_a) or powerlaw_a <= 0:
        bad("powerlaw_a", powerlaw_a, "a number > 0 (Pareto tail exponent), e.g. 1.5")
    if not _is_int(min_samples_per_client) or min_samples_per_client < 2:
        bad("min_samples_per_client", min_samples_per_client,
            "an integer >= 2 (each client needs train and test samples)")
    if max_samples_per_client is not None and (
        not _is_int(max_samples_per_client) or max_samples_per_client < min_samples_per_client
    ):
        bad("max_samples_per_client", max_samples_per_client,
            f"null or an integer >= min_samples_per_client ({min_samples_per_client})")
    if not _is_num(test_fraction) or not 0 < test_fraction < 1:
        bad("test_fraction", test_fraction, "a number in (0, 1), e.g. 0.1")
    n_train_min = int((1 - test_fraction) * min_samples_per_client)
    if n_train_min < 1 or n_train_min >= min_samples_per_client:
        bad("test_fraction", test_fraction,
            f"such that a client of min_samples_per_client={min_samples_per_client} samples "
            f"keeps >= 1 train and >= 1 test sample")
    if not _is_int(seed) or seed < 0:
        bad("seed", seed, "an integer >= 0")


def check_params(alpha=1.0, beta=1.0, num_clients=30, iid=False, size_distribution="lognormal", size_mean=4.0,
                 size_sigma=2.0, powerlaw_a=1.5, min_samples_per_client=50, max_samples_per_client=1000,
                 test_fraction=0.1, seed=0) -> None:
    """Check :func:`generate_synthetic`'s parameters without drawing anything.

    Raises:
        ParamError: the first parameter out of range (``key`` names it; the message the allowed values).
    """
    if not isinstance(iid, (bool, np.bool_)):
        raise ParamError("iid", f"synthetic: iid must be true or false, got {iid!r}")
    _validate(alpha, beta, num_clients, size_distribution, size_mean, size_sigma, powerlaw_a,
              min_samples_per_client, max_samples_per_client, test_fraction, seed)


def train_counts(
    alpha: float = 1.0,
    beta: float = 1.0,
    num_clients: int = 30,
    iid: bool = False,
    size_distribution: str = "lognormal",
    size_mean: float = 4.0,
    size_sigma: float = 2.0,
    powerlaw_a: float = 1.5,
    min_samples_per_client: int = 50,
    max_samples_per_client: int | None = 1000,
    test_fraction: float = 0.1,
    seed: int = 0,
) -> np.ndarray:
    """Each client's number of train samples in the dataset :func:`generate_synthetic` makes from
    the same parameters, without generating it: the client sizes are the first draws of its
    generator, so this repeats only those (``num_clients`` numbers).

    Returns:
        (num_clients,) int64 counts, each >= 1.

    Raises:
        ParamError: as :func:`check_params`, or client sizes beyond :data:`MAX_CLIENT_SIZE` without a cap.
    """
    check_params(alpha, beta, num_clients, iid, size_distribution, size_mean, size_sigma, powerlaw_a,
                 min_samples_per_client, max_samples_per_client, test_fraction, seed)
    sizes = client_sizes(num_clients, generator(int(seed), 0, -1, "dataset"), size_distribution, size_mean,
                         size_sigma, powerlaw_a, min_samples_per_client, max_samples_per_client)
    return ((1 - test_fraction) * sizes.astype(np.float64)).astype(np.int64)  # = int((1 - tf) * n), as generated


def generate_synthetic(
    alpha: float = 1.0,
    beta: float = 1.0,
    num_clients: int = 30,
    iid: bool = False,
    size_distribution: str = "lognormal",
    size_mean: float = 4.0,
    size_sigma: float = 2.0,
    powerlaw_a: float = 1.5,
    min_samples_per_client: int = 50,
    max_samples_per_client: int | None = 1000,
    test_fraction: float = 0.1,
    seed: int = 0,
    name: str = "synthetic",
) -> Dataset:
    """Generate Synthetic(α, β) (Li et al. 2020, Sec. 5.1) with natural clients.

    Args:
        alpha: std of u_k, the per-client mean of W_k and b_k (model heterogeneity). >= 0.
        beta: std of B_k, the per-client mean of v_k (input heterogeneity). >= 0.
        num_clients: K (FedProx: 30).
        iid: use the reference's IID variant (shared W, b; x ~ N(0, Σ)); alpha and beta are unused.
        size_distribution: ``"lognormal"`` or ``"powerlaw"`` (see the module docstring).
        size_mean, size_sigma: μ and σ of the lognormal size law (FedProx: 4, 2).
        powerlaw_a: tail exponent a of the Pareto size law.
        min_samples_per_client: the "+50" of the lognormal law; the minimum m of the Pareto law.
        max_samples_per_client: cap on a client's size (train + test), or None for no cap.
        test_fraction: per-client share of samples kept for the test split.
        seed: generator seed (keys of :func:`fedbench.rng.generator`, purpose "dataset").
        name: the dataset id recorded in the Dataset.

    Returns:
        A Dataset: ``x_train`` (n_train, 60) float32, ``y_train`` (n_train,) int64 in 0..9, the
        same for test, and natural clients ``client_train`` / ``client_test`` (int64, 0..K-1).
        Rows are grouped by client in increasing client id, train and test alike.

    Raises:
        ParamError (a ValueError): a parameter out of range (the message names it and the allowed
            values), or client sizes beyond :data:`MAX_CLIENT_SIZE` without a cap.
    """
    _validate(alpha, beta, num_clients, size_distribution, size_mean, size_sigma, powerlaw_a,
              min_samples_per_client, max_samples_per_client, test_fraction, seed)
    rng = generator(int(seed), 0, -1, "dataset")
    sizes = client_sizes(
        num_clients, rng, size_distribution, size_mean, size_sigma, powerlaw_a,
        min_samples_per_client, max_samples_per_client,
    )
    std_x = np.power(np.arange(1, NUM_FEATURES + 1, dtype=np.float64), -1.2) ** 0.5  # sqrt(Σ_jj)
    if iid:
        w_shared = rng.normal(0.0, 1.0, (NUM_FEATURES, NUM_CLASSES))
        b_shared = rng.normal(0.0, 1.0, NUM_CLASSES)
    else:
        u = rng.normal(0.0, alpha, num_clients)  # mean_W = mean_b in the reference code
        big_b = rng.normal(0.0, beta, num_clients)

    xs_tr, ys_tr, cs_tr, xs_te, ys_te, cs_te = [], [], [], [], [], []
    for k in range(num_clients):
        crng = generator(int(seed), 0, k, "dataset")
        if iid:
            w, b, v = w_shared, b_shared, np.zeros(NUM_FEATURES)
        else:
            w = crng.normal(u[k], 1.0, (NUM_FEATURES, NUM_CLASSES))
            b = crng.normal(u[k], 1.0, NUM_CLASSES)
            v = crng.normal(big_b[k], 1.0, NUM_FEATURES)
        n = int(sizes[k])
        x = v + crng.standard_normal((n, NUM_FEATURES)) * std_x
        y = np.argmax(x @ w + b, axis=1)  # softmax is monotone: argmax of the logits
        n_tr = int((1 - test_fraction) * n)
        xs_tr.append(x[:n_tr]), ys_tr.append(y[:n_tr]), cs_tr.append(np.full(n_tr, k))
        xs_te.append(x[n_tr:]), ys_te.append(y[n_tr:]), cs_te.append(np.full(n - n_tr, k))

    params = {
        "alpha": alpha, "beta": beta, "num_clients": num_clients, "iid": bool(iid),
        "size_distribution": size_distribution, "size_mean": size_mean, "size_sigma": size_sigma,
        "powerlaw_a": powerlaw_a, "min_samples_per_client": min_samples_per_client,
        "max_samples_per_client": max_samples_per_client, "test_fraction": test_fraction, "seed": seed,
    }
    return Dataset(
        name=name,
        x_train=np.concatenate(xs_tr).astype(np.float32),
        y_train=np.concatenate(ys_tr).astype(np.int64),
        x_test=np.concatenate(xs_te).astype(np.float32),
        y_test=np.concatenate(ys_te).astype(np.int64),
        num_classes=NUM_CLASSES,
        client_train=np.concatenate(cs_tr).astype(np.int64),
        client_test=np.concatenate(cs_te).astype(np.int64),
        meta={"source": SOURCE, "params": params},
    )
