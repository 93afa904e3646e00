"""Shared fixtures of the fedbench.theory tests: a random federated quadratic (Charles & Konečný, AISTATS 2021, §2)."""

from __future__ import annotations

import numpy as np
import pytest

MU, L = 1.0, 10.0


def random_instance(seed: int, n: int = 4, d: int = 5, mu: float = MU, ell: float = L, C: float = 1.0):
    """n clients with spectra in [μ, L] (both attained), their own eigenbases, ‖c_i‖ ≤ C, random p."""
    rng = np.random.default_rng(seed)
    A = np.empty((n, d, d))
    for i in range(n):
        U, _ = np.linalg.qr(rng.standard_normal((d, d)))
        lam = np.concatenate([[mu, ell], rng.uniform(mu, ell, d - 2)])
        A[i] = (U * lam) @ U.T
        A[i] = 0.5 * (A[i] + A[i].T)
    c = rng.standard_normal((n, d))
    c *= C * rng.uniform(0.2, 1.0, (n, 1)) / np.linalg.norm(c, axis=1, keepdims=True)
    p = rng.uniform(0.5, 1.5, n)
    return A, c, p / p.sum()


@pytest.fixture
def make_instance():
    """The factory :func:`random_instance` (seed, n, d, μ, L, C) -> (A (n, d, d), c (n, d), p (n,))."""
    return random_instance
