"""Character LSTM for Shakespeare (the FedDyn code's model, used by FedElasticNet; LEAF's
next-character task): Embedding(V → E) → LSTM(E → h_1) → … → LSTM(h_{L−1} → h_L) → Linear(h_L → C)
on the output of the last time step.

Defaults (:data:`fedbench.models.MODELS`): V = 80 symbols, E = 8, two LSTM layers of 100, C = 80,
133,520 parameters (summary-seed-003 §4.3-§4.4: 640 + 44,000 + 80,800 + 8,080).

The LSTM is written out as an explicit cell (PyTorch's equations and gate order i, f, g, o):

    i = σ(W_ii x + b_ii + W_hi h + b_hi)      f = σ(W_if x + b_if + W_hf h + b_hf)
    g = tanh(W_ig x + b_ig + W_hg h + b_hg)   o = σ(W_io x + b_io + W_ho h + b_ho)
    c' = f ⊙ c + i ⊙ g                         h' = o ⊙ tanh(c')

with zero initial (h, c), unrolled over time in Python (the sequence length is a shape, not a
value), so it is a pure function of the parameter dict and runs under ``torch.func.grad`` and
``torch.func.vmap`` (cuDNN's fused ``nn.LSTM`` does not take a batched weight).

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


def cell(x: torch.Tensor, h: torch.Tensor, c: torch.Tensor, w_ih, w_hh, b_ih, b_hh) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step: (h', c') from input x (B, in) and state h, c (B, H)."""
    gates = F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, dim=-1)
    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c_new), c_new


def apply(params: Tree, x: torch.Tensor) -> torch.Tensor:
    """Logits (B, C) from the last time step's top hidden state; x (B, T) character ids."""
    n_layers = sum(1 for k in params if k.startswith("lstm.weight_ih_l"))
    emb = params["embedding.weight"]
    seq = F.embedding(x.reshape(x.shape[0], -1).long(), emb)  # (B, T, E)
    for j in range(n_layers):
        w_ih, w_hh = params[f"lstm.weight_ih_l{j}"], params[f"lstm.weight_hh_l{j}"]
        b_ih, b_hh = params[f"lstm.bias_ih_l{j}"], params[f"lstm.bias_hh_l{j}"]
        hsize = w_hh.shape[1]
        h = seq.new_zeros((seq.shape[0], hsize))
        c = h
        outs = []
        for t in range(seq.shape[1]):
            h, c = cell(seq[:, t], h, c, w_ih, w_hh, b_ih, b_hh)
            outs.append(h)
        seq = torch.stack(outs, dim=1)
    return F.linear(seq[:, -1], params["fc.weight"], params["fc.bias"])
