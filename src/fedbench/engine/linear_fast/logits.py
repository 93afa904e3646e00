"""The model's side of the compiled kernels: the logits of a linear model and the gradient of its
cross-entropy in them, for one row and across lanes.

The models: ``binary_logreg`` (logits [0, xᵀw], no bias) and ``logreg`` (logits Wx + b), both with
the mean softmax cross-entropy of :func:`fedbench.models.make_loss_fn`; the gradient in the logits is
softmax − one-hot, over the rows of the batch, written out (no autograd): :func:`_loss_and_logit_grads`
for one row, :func:`_grads_lanes` for the L lanes (cells) of the whole-round kernels, the same numbers.
Every kernel of the fast path (:mod:`~.step_kernels`, :mod:`~.round_items`, :mod:`~.evaluation`)
takes its gradient from here, so a new model's gradient in its logits is written here (the package
docstring, "How to add a model").

The kernels' compile options are set here too: :data:`_FLAGS` for the loops of one client,
:data:`_LANE_FLAGS` for the loops across lanes.
"""

from __future__ import annotations

import math

import numba

from fedbench.engine.linear_fast.lane_math import div, exp_nonpos, log1p_unit
from fedbench.engine.linear_fast.lane_vectors import dot2_into, fma_into

#: LLVM may reassociate sums (so a dot product over d inputs vectorizes instead of adding one term
#: at a time) and fuse multiply-adds: float rounding only. No "nnan"/"ninf": a diverging run's
#: NaN and inf propagate as in the generic path.
_FLAGS = {"reassoc", "contract"}


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _binary_loss_and_grad(zz, lab, inv_b, with_loss):
    """(σ(z) − [y = 1]) / B and the cross-entropy log(1 + e^z) − [y = 1] z of the logits [0, z],
    from one e^{−|z|} (:mod:`fedbench.engine.linear_fast.lane_math`: the same bits in a vectorized lane loop as
    one at a time); without ``with_loss``, z in place of the loss (finite exactly when it is)."""
    ez = exp_nonpos(-abs(zz))
    sig = div(1.0 if zz >= 0 else ez, 1.0 + ez)
    g = ((sig - 1.0) if lab == 1 else sig) * inv_b
    if not with_loss:
        return g, zz
    sp = max(zz, 0.0) + log1p_unit(ez)
    return g, (sp - zz if lab == 1 else sp)


@numba.njit(cache=True, inline="always", fastmath=_FLAGS)
def _loss_and_logit_grads(z, lab, binary, n_lin, inv_b, dz_row, with_loss=True):
    """Cross-entropy of the logits (binary: [0, z[0]]; else z[:n_lin]) for class ``lab``; writes
    (softmax − one-hot) / B into dz_row; returns the loss (binary with ``with_loss`` False: z[0],
    finite exactly when the loss is, without the log)."""
    if binary:
        zz = z[0]
        dz_row[0], loss = _binary_loss_and_grad(zz, lab, inv_b, with_loss)
        return loss
    m = z[0]
    for c in range(1, n_lin):
        m = max(m, z[c])
    tot = 0.0
    for c in range(n_lin):
        tot += math.exp(z[c] - m)
    lse = m + math.log(tot)
    for c in range(n_lin):
        dz_row[c] = (math.exp(z[c] - lse) - (1.0 if c == lab else 0.0)) * inv_b
    return lse - z[lab]


#: The lane kernels vectorize across lanes (cells), never along a sum, so they do not reassociate:
#: a lane's numbers are the same with 1 lane or 13, in the vector body or its scalar remainder.
_LANE_FLAGS = {"contract"}


@numba.njit(cache=True, inline="always", fastmath=_LANE_FLAGS)
def _grads_lanes(z, lab, binary, n_lin, inv_b, dz, loss, with_loss, zl, dzl):
    """Per lane l: the cross-entropy of the logits z[:, l] for class ``lab`` added to loss[l]
    (:func:`_loss_and_logit_grads`, the same numbers), its logit gradients in dz[:, l]."""
    lanes = z.shape[1]
    if binary:  # one pass over the lanes, which vectorizes
        z0, d0 = z[0], dz[0]
        for ln in range(lanes):
            g, lv = _binary_loss_and_grad(z0[ln], lab, inv_b, with_loss)
            d0[ln] = g
            loss[ln] += lv
        return
    for ln in range(lanes):
        for cl in range(n_lin):
            zl[cl] = z[cl, ln]
        loss[ln] += _loss_and_logit_grads(zl, lab, binary, n_lin, inv_b, dzl, with_loss)
        for cl in range(n_lin):
            dz[cl, ln] = dzl[cl]


@numba.njit(cache=True, inline="always", fastmath=_LANE_FLAGS)
def _logits_lanes(z, w, indices, values, start, m, n_lin, d, has_bias, lanes):
    """z[c, l] = the logit c of lane l's linear model at the CSR row of non-zeros start..start+m−1:
    Σ_u x_u w[(c·d + k_u)·L + l] (+ the bias w[(C·d + c)·L + l]); ``w`` [P·L] coordinate-major."""
    bias_at = n_lin * d
    for cl in range(n_lin):
        off = cl * d
        zc = z[cl]
        for ln in range(lanes):
            zc[ln] = 0.0
        u = 0
        while u + 1 < m:  # two non-zeros a pass: half the loads and stores of z
            dot2_into(zc, w, (off + indices[start + u]) * lanes, float(values[start + u]),
                      (off + indices[start + u + 1]) * lanes, float(values[start + u + 1]), lanes)
            u += 2
        if u < m:
            fma_into(zc, 0, w, (off + indices[start + u]) * lanes, float(values[start + u]), lanes)
        if has_bias:
            i0 = (bias_at + cl) * lanes
            wk = w[i0:i0 + lanes]
            for ln in range(lanes):
                zc[ln] += wk[ln]
