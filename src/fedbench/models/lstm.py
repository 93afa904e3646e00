"""Character LSTM for Shakespeare (the FedDyn code's model, used by FedElasticNet; LEAF's
next-character task): Embedding(V → E) → LSTM(E → h_1) → … → LSTM(h_{L−1} → h_L) → Linear(h_L → C)
on the output of the last time step.

Defaults (:data:`fedbench.models.MODELS`): V = 80 symbols, E = 8, two LSTM layers of 100, C = 80,
133,520 parameters (640 + 44,000 + 80,800 + 8,080): the FedDyn code's model
(github.com/alpemreacar/FedDyn; Acar et al., "Federated Learning Based on Dynamic Regularization",
ICLR 2021). Kim et al., "Communication-Efficient and Drift-Robust Federated Learning via Elastic
Net" (arXiv 2022), §4, use "a stacked LSTM as in Acar et al.", and the Shakespeare dense counts of
their Table 2 (13.61e7 over 100 rounds) are 133,520 × Σ_t |P_t|.

The LSTM is written out as an explicit cell (PyTorch's equations and gate order i, f, g, o):

    i = σ(W_ii x + b_ii + W_hi h + b_hi)      f = σ(W_if x + b_if + W_hf h + b_hf)
    g = tanh(W_ig x + b_ig + W_hg h + b_hg)   o = σ(W_io x + b_io + W_ho h + b_ho)
    c' = f ⊙ c + i ⊙ g                         h' = o ⊙ tanh(c')

with zero initial (h, c). Two implementations of the same layer, chosen per call:

- inside a ``torch.func`` transform (``vmap`` over clients, ``grad``): an explicit cell unrolled
  over time in Python (the sequence length is a shape, not a value), with a hand-written
  backward (:class:`_Recurrence`) and the input projections of all time steps as one matmul.
  The fused kernels (oneDNN's, cuDNN's) have no batching rule for a stacked weight;
- on plain tensors (evaluation, the sequential reference, one-client chunks): PyTorch's fused
  ``torch.lstm`` (the kernel ``nn.LSTM`` calls). On this project's 2-core CPU one client-step
  (B = 20, T = 80, 2 × 100) took 30–35 ms fused against 78–93 ms for the explicit cell, and
  54 ms per client for the explicit cell vmapped over 10 clients (W4's model),
  hence :data:`BATCH_CLIENTS_ON_CPU` = False.

The two agree to float rounding (forward and every gradient: tests/models/test_lstm.py).

Shapes:
    params (``nn.Embedding`` / ``nn.LSTM`` / ``nn.Linear`` ``state_dict`` names):
        ``embedding.weight`` (V, E);
        ``lstm.weight_ih_l{j}`` (4 h_j, in_j), ``lstm.weight_hh_l{j}`` (4 h_j, h_j),
        ``lstm.bias_ih_l{j}`` (4 h_j,), ``lstm.bias_hh_l{j}`` (4 h_j,);
        ``fc.weight`` (C, h_L), ``fc.bias`` (C,).
    x: (B, T) integer character ids (int64 or uint8; floats holding integers are accepted)
       → logits (B, C).

Initialised like PyTorch: embedding N(0, 1), LSTM and linear weights U(±1/√fan), with fan = h_j
for the LSTM (``nn.LSTM``) and fan_in for the linear layer (``nn.Linear``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.models.logreg import linear_init, uniform
from fedbench.tree import Tree

DEFAULT_VOCAB = 80
DEFAULT_EMBED = 8
DEFAULT_HIDDEN = (100, 100)

#: On CPU the vectorized engine trains one client per chunk (the fused kernel above beats the
#: explicit cell vmapped over clients, measured); on CUDA it stacks clients.
BATCH_CLIENTS_ON_CPU = False


def init(
    rng: np.random.Generator,
    input_shape: tuple,
    num_classes: int,
    dtype: torch.dtype = torch.float32,
    vocab_size: int = DEFAULT_VOCAB,
    embed_dim: int = DEFAULT_EMBED,
    hidden: Sequence[int] = DEFAULT_HIDDEN,
) -> Tree:
    """Parameters in forward order: embedding, each LSTM layer (ih, hh weights, then biases), fc."""
    if not hidden:
        raise ValueError("lstm: 'hidden' needs at least one LSTM layer")
    params: Tree = {"embedding.weight": torch.from_numpy(rng.normal(size=(int(vocab_size), int(embed_dim)))).to(dtype)}
    n_in = int(embed_dim)
    for j, h in enumerate(int(v) for v in hidden):
        bound = 1.0 / math.sqrt(h)
        params[f"lstm.weight_ih_l{j}"] = uniform(rng, bound, (4 * h, n_in), dtype)
        params[f"lstm.weight_hh_l{j}"] = uniform(rng, bound, (4 * h, h), dtype)
        params[f"lstm.bias_ih_l{j}"] = uniform(rng, bound, (4 * h,), dtype)
        params[f"lstm.bias_hh_l{j}"] = uniform(rng, bound, (4 * h,), dtype)
        n_in = h
    params["fc.weight"], params["fc.bias"] = linear_init(rng, n_in, int(num_classes), dtype)
    return params


class _Recurrence(torch.autograd.Function):
    """The recurrent part of one LSTM layer, with a hand-written backward (BPTT).

    Forward: from the input projections P (B, T, 4H) (W_ih x_t + b_ih + b_hh, computed outside by
    ordinary autograd in one matmul over all t) and W_hh (4H, H), with h_0 = c_0 = 0:

        a_t = P_t + W_hh h_{t−1};  i, f, g, o = σ(a_i), σ(a_f), tanh(a_g), σ(a_o)
        c_t = f ⊙ c_{t−1} + i ⊙ g;  h_t = o ⊙ tanh(c_t)

    returning H = (h_1 … h_T) (B, T, H) and, as non-differentiable extra outputs saved for the
    backward, the gate sigmoids (B, T, 4H), g, C = (c_1 … c_T) and tanh(C) (each (B, T, H)).

    Backward: the usual BPTT recursion for ∂L/∂a_t (t = T … 1), with every factor that does not
    depend on the incoming gradient computed for all t at once before the loop; then
    ∂L/∂W_hh = Σ_t ∂a_tᵀ h_{t−1} as ONE matmul over all B·T rows, and ∂L/∂P = ∂L/∂a. Autograd on
    the unrolled loop did the weight gradient as T small (K = B) matmuls plus T accumulations, and
    indexing ``seq[:, t]`` built a full-size gradient per step (O(T²)). Together with the sigmoid
    form of tanh below, this took W4 (benchmarks/run.py, 10 clients) from 21.2 s to 8.3 s a round.

    ``generate_vmap_rule``: forward and backward are plain tensor code, so ``torch.func.vmap``
    batches them over clients like the rest of the model; ``torch.func.grad`` uses the backward.
    Checked against ``nn.LSTM`` (forward and every gradient) in tests/models/test_lstm.py.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(proj: torch.Tensor, w_hh: torch.Tensor):
        hid = w_hh.shape[1]
        h = proj.new_zeros((proj.shape[0], hid))
        c = h
        hs, sigs, gs, cs, tcs = [], [], [], [], []
        # tanh(x) = 2σ(2x) − 1: on CPU torch's tanh costs ~4× its sigmoid per element (measured),
        # and the time loop is elementwise-bound. The g-gate rows of P and W_hh are pre-scaled by 2,
        # so one sigmoid over all four gates gives σ(a_i), σ(a_f), σ(2a_g), σ(a_o).
        scale = torch.ones(4 * hid, dtype=proj.dtype, device=proj.device)
        scale[2 * hid:3 * hid] = 2.0
        proj, w_hh = proj * scale, w_hh * scale[:, None]
        for p_t in proj.unbind(1):
            sig = torch.sigmoid(torch.addmm(p_t, h, w_hh.t()))  # σ(a_i), σ(a_f), σ(2a_g), σ(a_o)
            g = 2.0 * sig[:, 2 * hid:3 * hid] - 1.0
            c = torch.addcmul(sig[:, hid:2 * hid] * c, sig[:, :hid], g)
            tc = 2.0 * torch.sigmoid(2.0 * c) - 1.0
            h = sig[:, 3 * hid:] * tc
            hs.append(h), sigs.append(sig), gs.append(g), cs.append(c), tcs.append(tc)
        stack = lambda v: torch.stack(v, 1)  # noqa: E731
        return stack(hs), stack(sigs), stack(gs), stack(cs), stack(tcs)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, w_hh = inputs
        _, sig, g, c, tc = output
        ctx.mark_non_differentiable(sig, g, c, tc)
        ctx.save_for_backward(w_hh, output[0], sig, g, c, tc)

    @staticmethod
    def backward(ctx, d_hs, *_):
        w_hh, hs, sig, g, c, tc = ctx.saved_tensors
        hid = w_hh.shape[1]
        i, f, o = sig[..., :hid], sig[..., hid:2 * hid], sig[..., 3 * hid:]
        c_prev = torch.cat([torch.zeros_like(c[:, :1]), c[:, :-1]], 1)
        # ∂a_t = [dc·g·σ'(a_i), dc·c_{t−1}·σ'(a_f), dc·i·tanh'(a_g), dh·tanh(c_t)·σ'(a_o)], with
        # everything but dc and dh known from the forward pass: those factors for all t at once.
        k = torch.cat([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g), tc * o * (1 - o)], -1)
        k_c = o * (1 - tc * tc)  # ∂c_t/∂h_t through h_t = o ⊙ tanh(c_t)
        dh_next = torch.zeros_like(hs[:, 0])
        dc_next = dh_next
        d_a = [None] * hs.shape[1]
        for t in range(hs.shape[1] - 1, -1, -1):
            dh = d_hs[:, t] + dh_next
            dc = torch.addcmul(dc_next, dh, k_c[:, t])
            d_a[t] = torch.cat([dc, dc, dc, dh], -1) * k[:, t]
            dc_next = dc * f[:, t]
            dh_next = d_a[t] @ w_hh
        d_proj = torch.stack(d_a, 1)  # (B, T, 4H)
        h_prev = torch.cat([torch.zeros_like(hs[:, :1]), hs[:, :-1]], 1)  # (B, T, H)
        d_w_hh = d_proj.reshape(-1, d_proj.shape[-1]).t() @ h_prev.reshape(-1, hid)
        return d_proj, d_w_hh


def layer(seq: torch.Tensor, w_ih, w_hh, b_ih, b_hh) -> torch.Tensor:
    """One LSTM layer over a sequence: (B, T, in) → hidden states (B, T, H)."""
    proj = F.linear(seq, w_ih, b_ih + b_hh)  # (B, T, 4H): one matmul for every time step
    return _Recurrence.apply(proj, w_hh)[0]


def fused_layer(seq: torch.Tensor, w_ih, w_hh, b_ih, b_hh) -> torch.Tensor:
    """:func:`layer` through PyTorch's fused ``torch.lstm`` (plain tensors only: no vmap rule)."""
    h0 = seq.new_zeros((1, seq.shape[0], w_hh.shape[1]))
    # torch.lstm(input, (h0, c0), weights, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    return torch.lstm(seq, (h0, h0), [w_ih, w_hh, b_ih, b_hh], True, 1, 0.0, True, False, True)[0]


def apply(params: Tree, x: torch.Tensor) -> torch.Tensor:
    """Logits (B, C) from the last time step's top hidden state; x (B, T) character ids.

    Under a ``torch.func`` transform each layer is :func:`layer`, otherwise :func:`fused_layer`.
    """
    n_layers = sum(1 for k in params if k.startswith("lstm.weight_ih_l"))
    seq = F.embedding(x.reshape(x.shape[0], -1).long(), params["embedding.weight"])  # (B, T, E)
    one_layer = layer if torch._C._are_functorch_transforms_active() else fused_layer
    for j in range(n_layers):
        seq = one_layer(seq, params[f"lstm.weight_ih_l{j}"], params[f"lstm.weight_hh_l{j}"],
                        params[f"lstm.bias_ih_l{j}"], params[f"lstm.bias_hh_l{j}"])
    return F.linear(seq[:, -1], params["fc.weight"], params["fc.bias"])
