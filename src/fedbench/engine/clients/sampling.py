"""Client sampling: which clients P_t ⊆ [m] train in round t.

Two schemes:

``uniform``
    |P_t| = max(1, round(p·m)) clients drawn uniformly without replacement (McMahan et al.,
    "Communication-Efficient Learning of Deep Networks from Decentralized Data", AISTATS 2017,
    Algorithm 1; the sampling most FL theory assumes). Keyed by (seed, round, "sample").
``bernoulli``
    The FedDyn reference code's sampler (Acar et al., "Federated Learning Based on Dynamic
    Regularization", ICLR 2021; its code, github.com/alpemreacar/FedDyn):
    each client participates independently with probability p; if no client is drawn, the draw is
    repeated with the next seed. Implemented exactly as that code does it,
    ``np.random.seed(t + seed + inc); np.random.uniform(size=m) <= p`` with t the 0-based round,
    so seed 0, m = 100, p = 0.1 reproduces the client counts behind Table 2 of FedElasticNet
    (Kim, Woo, Seo and Kim, "Communication-Efficient and Drift-Robust Federated Learning via
    Elastic Net", arXiv preprint, 2022): Σ_{t<100} |P_t| = 1019 times the model size gives its
    dense FedProx/FedDyn counts. |P_t| varies from round to round.
"""

from __future__ import annotations

import numpy as np

from fedbench.rng import generator

SCHEMES = ("uniform", "bernoulli")


def sample_clients(scheme: str, num_clients: int, participation: float, seed: int, round: int) -> np.ndarray:
    """The sorted ids of the clients that participate in round ``round`` (1-based).

    Args:
        scheme: "uniform" or "bernoulli" (see module docstring).
        num_clients: m ≥ 1.
        participation: p in (0, 1].
        seed: the cell's seed.
        round: t ≥ 1.

    Returns:
        (|P_t|,) int64 array of client ids in ascending order, never empty.

    Raises:
        ValueError: unknown scheme, m < 1, p outside (0, 1], or t < 1.
    """
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1 (got {num_clients})")
    if not 0.0 < participation <= 1.0:
        raise ValueError(f"sampling.participation must lie in (0, 1] (got {participation})")
    if round < 1:
        raise ValueError(f"round is 1-based (got {round})")
    if scheme == "uniform":
        size = max(1, int(round_half_up(participation * num_clients)))
        rng = generator(seed, round, -1, "sample")
        return np.sort(rng.choice(num_clients, size=size, replace=False)).astype(np.int64)
    if scheme == "bernoulli":
        inc = 0
        while True:
            rs = np.random.RandomState(round - 1 + seed + inc)
            chosen = np.flatnonzero(rs.uniform(size=num_clients) <= participation)
            inc += 1
            if chosen.size:
                return chosen.astype(np.int64)
    raise ValueError(f"unknown sampling.scheme {scheme!r}; known: {', '.join(SCHEMES)}")


def round_half_up(x: float) -> int:
    """round() without banker's rounding: 2.5 → 3 (so p·m = 2.5 clients gives 3)."""
    return int(np.floor(x + 0.5))
