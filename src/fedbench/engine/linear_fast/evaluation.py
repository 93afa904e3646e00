"""Evaluation of many linear models in one pass over the rows (CPU): the loss, accuracy and
per-class hits of every stacked cell's server model at once, as the lanes of one loop
(:meth:`~.linear_steps.LinearSteps.evaluate`).
"""

from __future__ import annotations

import numba
import numpy as np

from fedbench.engine.linear_fast.logits import _LANE_FLAGS, _grads_lanes, _logits_lanes


@numba.njit(cache=True, nogil=True, fastmath=_LANE_FLAGS)
def _evaluate_lanes(indptr, indices, values, y, w, binary, n_lin, d, has_bias, num_classes):
    """The mean cross-entropy, accuracy and per-class hits of L linear models at once over the CSR
    rows (``indptr``, ``indices``, ``values``) with labels ``y`` [N]: ``w`` [P·L], the models'
    parameters coordinate-major (coordinate k of lane l at k·L + l; binary: logits [0, xᵀw]; else
    Wx + b). Each lane's numbers are those of its model alone (rows summed in order, nothing summed
    across lanes). Returns (loss_sum [L], hits [C, L] of rows predicted right per class, counts [C])."""
    lanes = w.shape[0] // (n_lin * d + (n_lin if has_bias else 0))
    loss = np.zeros(lanes)
    hits = np.zeros((num_classes, lanes))
    counts = np.zeros(num_classes)
    _evaluate_rows(indptr, indices, values, y, w, binary, n_lin, d, has_bias, np.empty((n_lin, lanes)),
                   np.empty((n_lin, lanes)), np.empty(n_lin), np.empty(n_lin), loss, hits, counts)
    return loss, hits, counts


@numba.njit(cache=True, nogil=True, fastmath=_LANE_FLAGS, _nrt=False)
def _evaluate_rows(indptr, indices, values, y, w, binary, n_lin, d, has_bias, z, dz, zl, dzl, loss, hits, counts):
    """The loop of :func:`_evaluate_lanes` over its scratch arrays (``z``, ``dz`` [C, L], ``zl``,
    ``dzl`` [C]), adding into ``loss``, ``hits`` and ``counts``; compiled without reference
    counting, as :func:`~.round_items._one_step_clients`."""
    lanes = z.shape[1]
    for r in range(len(y)):
        start = indptr[r]
        _logits_lanes(z, w, indices, values, start, indptr[r + 1] - start, n_lin, d, has_bias, lanes)
        lab = y[r]
        _grads_lanes(z, lab, binary, n_lin, 1.0, dz, loss, True, zl, dzl)
        counts[lab] += 1.0
        hl = hits[lab]
        for ln in range(lanes):
            if binary:  # logits [0, z]: class 1 where z > 0 (the first of equal logits wins, as argmax)
                pred = 1 if z[0, ln] > 0.0 else 0
            else:
                pred = 0
                for cl in range(1, n_lin):
                    if z[cl, ln] > z[pred, ln]:
                        pred = cl
            hl[ln] += 1.0 if pred == lab else 0.0
