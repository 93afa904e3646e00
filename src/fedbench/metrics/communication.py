"""Communication accounting, counted from what is actually sent, never estimated.

What a client sends is an explicit message (the algorithm protocol, :mod:`fedbench.algorithms`),
so floats, non-zeros and entropy are computed from the tensors themselves.

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


def as_delta(message: dict, global_params) -> dict:
    """``message`` in the Δ convention: an entry ``"params"`` (a client's model θ_k, FedDyn) is
    replaced by ``"delta"`` = θ_k − θ^{t−1}; every other entry is kept as sent. A message without
    ``"params"`` is returned as it is (the same object).

    Args:
        message: one client's ClientMessage (dict of pytrees).
        global_params: θ^{t−1}, the model the server broadcast this round (same keys as θ_k).

    Raises:
        ValueError: the message has both ``"params"`` and ``"delta"``.
    """
    if "params" not in message:
        return message
    if "delta" in message:
        raise ValueError("as_delta: a message with both 'params' and 'delta' entries is ambiguous")
    theta = message["params"]
    out = {k: v for k, v in message.items() if k != "params"}
    out["delta"] = {n: theta[n] - global_params[n] for n in theta}
    return out


#: Bin indices beyond ±2^62 cannot be stored as int64 (values beyond ~±4.6e16 at width 0.01):
#: :func:`histogram` counts such values in the overflow bins ±2^62.
MAX_BIN = 2**62


def histogram(values: np.ndarray, bin_width: float = ENTROPY_BIN_WIDTH
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bins, counts, zeros) of ``values`` quantised to bins of width ``bin_width``: bin b holds
    the values v with ⌊v / bin_width⌋ = b, i.e. v ∈ [b·w, (b+1)·w). Only non-empty bins, in
    increasing order; all three int64 arrays of one length; ``counts.sum() == values.size``.
    ``zeros[i]`` is how many of bin ``bins[i]``'s values are exactly 0.0 (−0.0 included): non-zero
    only where ``bins[i] == 0``, and included in ``counts[i]``, so the bins stay those of the entropy
    (FedElasticNet's Figure 2 shows the exact zeros apart: Kim, Woo, Seo & Kim,
    "Communication-Efficient and Drift-Robust Federated Learning via Elastic Net", arXiv 2022, §4).
    Values whose bin index lies beyond ±2^62 (:data:`MAX_BIN`; |v| > ~4.6e16 at width 0.01, an
    update that has blown up but is still finite) are counted in the overflow bins ±2^62, so the
    counts stay exact and a run on its way to divergence is recorded rather than stopped by its
    histogram.

    Raises:
        ValueError: values contain NaN or inf, or bin_width <= 0.
    """
    bins, counts = _bin_counts(values, bin_width)
    if bins.size and max(-bins[0], bins[-1]) > MAX_BIN:
        clipped = np.clip(bins, -MAX_BIN, MAX_BIN)
        bins, inverse = np.unique(clipped, return_inverse=True)
        counts = np.bincount(inverse, weights=counts, minlength=len(bins)).astype(np.int64)
    bins = bins.astype(np.int64)
    zeros = np.zeros(len(bins), dtype=np.int64)
    n_zero = np.count_nonzero(np.asarray(values).reshape(-1) == 0)
    if n_zero:
        zeros[np.searchsorted(bins, 0)] = n_zero  # 0.0 and -0.0 fall in bin 0, which therefore exists
    return bins, counts, zeros


def _bin_counts(values: np.ndarray, bin_width: float) -> tuple[np.ndarray, np.ndarray]:
    """(float bin indices ⌊v / w⌋, int64 counts) of the non-empty bins, increasing."""
    if bin_width <= 0:
        raise ValueError(f"bin_width must be > 0 (got {bin_width})")
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    if not np.all(np.isfinite(v)):
        raise ValueError("entropy_bits: values contain NaN or inf")
    q = np.floor(v / bin_width)
    lo, hi = q.min(), q.max()
    if hi - lo < 50_000_000:  # dense histogram: O(n)
        counts = np.bincount((q - lo).astype(np.int64))
        bins = np.flatnonzero(counts)
        return bins + lo, counts[bins].astype(np.int64)
    # values spread over very many bins (or beyond int64): sort-based count on the float bins
    bins, counts = np.unique(q, return_counts=True)
    return bins, counts.astype(np.int64)


def entropy_from_counts(counts: np.ndarray) -> float:
    """H = −Σ_b p_b log2 p_b (bits) with p_b = counts_b / Σ counts; 0 for no values."""
    counts = np.asarray(counts, dtype=np.int64)
    counts = counts[counts > 0]
    if counts.size == 0:
        return 0.0
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def entropy_bits(values: np.ndarray, bin_width: float = ENTROPY_BIN_WIDTH) -> float:
    """Shannon entropy, in bits per value, of ``values`` quantised to bins of width ``bin_width``.

    H = −Σ_b p_b log2 p_b with p_b the fraction of values in bin b = ⌊v / bin_width⌋
    (FedElasticNet's entropy measure: Kim, Woo, Seo & Kim, "Communication-Efficient and
    Drift-Robust Federated Learning via Elastic Net", arXiv 2022, §4, "entropy of discretized
    values with the bin size of 0.01"; Tables 3-4):
    :func:`entropy_from_counts` of the bin counts (any finite values, even beyond the int64 bins
    of :func:`histogram`). Non-finite values are an error rather than a silent bin.

    Raises:
        ValueError: values contain NaN or inf, or bin_width <= 0.
    """
    return entropy_from_counts(_bin_counts(values, bin_width)[1])
