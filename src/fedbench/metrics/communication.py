"""Communication accounting, counted from what is actually sent (DESIGN.md).

A message is a dict whose values are pytrees (``dict[str, Tensor]``) or tensors, e.g.
``{"delta": Δ_k}`` or SCAFFOLD's ``{"delta": Δ_k, "delta_c": Δc_k}``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch

ENTROPY_BIN_WIDTH = 0.01


def leaves(message) -> list[torch.Tensor]:
    """All tensors in a (nested) message, in key order."""
    if torch.is_tensor(message):
        return [message]
    out = []
    for key in sorted(message):
        out.extend(leaves(message[key]))
    return out


def count_floats(message) -> int:
    """Dense number of scalars in the message."""
    return sum(t.numel() for t in leaves(message))


def count_nonzeros(message) -> int:
    """Number of non-zero scalars in the message."""
    return sum(int(torch.count_nonzero(t)) for t in leaves(message))


def flatten(messages: Iterable) -> np.ndarray:
    """All scalars of several messages as one float64 vector (for entropy)."""
    parts = [t.detach().reshape(-1).double().cpu().numpy() for m in messages for t in leaves(m)]
    return np.concatenate(parts) if parts else np.zeros(0)


def entropy_bits(values: np.ndarray, bin_width: float = ENTROPY_BIN_WIDTH) -> float:
    """Shannon entropy, in bits per value, of ``values`` quantised to bins of width ``bin_width``.

    H = −Σ_b p_b log2 p_b with p_b the fraction of values in bin b = ⌊v / bin_width⌋
    (FedElasticNet's entropy measure, Kim et al., bin width 0.01; summary-seed-003.md §3).
    Non-finite values are an error rather than a silent bin.

    Raises:
        ValueError: values contain NaN or inf, or bin_width <= 0.
    """
    if bin_width <= 0:
        raise ValueError(f"bin_width must be > 0 (got {bin_width})")
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return 0.0
    if not np.all(np.isfinite(v)):
        raise ValueError("entropy_bits: values contain NaN or inf")
    q = np.floor(v / bin_width)
    lo, hi = q.min(), q.max()
    if hi - lo < 50_000_000:  # dense histogram: O(n)
        counts = np.bincount((q - lo).astype(np.int64))
        counts = counts[counts > 0]
    else:  # values spread over very many bins (or beyond int64): sort-based count on the float bins
        _, counts = np.unique(q, return_counts=True)
    p = counts / v.size
    return float(-(p * np.log2(p)).sum())
