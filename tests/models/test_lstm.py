"""Shakespeare character LSTM: exact size and equality with torch.nn.LSTM."""

import numpy as np
import pytest
import torch

from fedbench.models import build_model, make_grad_fn, make_loss_fn, num_parameters


def test_parameter_count_is_the_papers():
    model = build_model({"name": "lstm"}, (80,), 80)
    p = model.init(np.random.default_rng(0))
    # Implied by the Shakespeare dense counts of Kim et al., "Communication-Efficient and Drift-Robust
    # Federated Learning via Elastic Net" (arXiv 2022), Table 2: the FedDyn code's LSTM.
    assert num_parameters(p) == 133_520
    x = torch.randint(0, 80, (3, 80), dtype=torch.uint8)
    assert model.apply(p, x).shape == (3, 80)


def _reference(p, vocab, embed, hidden, classes):
    emb = torch.nn.Embedding(vocab, embed).double()
    lstm = torch.nn.LSTM(embed, hidden, num_layers=2, batch_first=True).double()
    fc = torch.nn.Linear(hidden, classes).double()
    with torch.no_grad():
        emb.weight.copy_(p["embedding.weight"])
        for name, v in lstm.named_parameters():
            v.copy_(p[f"lstm.{name}"])
        fc.weight.copy_(p["fc.weight"])
        fc.bias.copy_(p["fc.bias"])

    def forward(x):
        out, _ = lstm(emb(x.long()))
        return fc(out[:, -1])

    return forward, [emb.weight, *[v for _, v in lstm.named_parameters()], fc.weight, fc.bias], \
        ["embedding.weight", *[f"lstm.{n}" for n, _ in lstm.named_parameters()], "fc.weight", "fc.bias"]


def _through_cell(model):
    """The explicit-cell path (taken inside torch.func transforms): forward via a vmap over a
    batch of one client, gradient via torch.func.grad_and_value."""
    forward = lambda p, x: torch.func.vmap(model.apply, in_dims=(None, 0))(p, x[None])[0]  # noqa: E731
    return forward, torch.func.grad_and_value(make_loss_fn(model))


def _through_fused(model):
    """The fused torch.lstm path (plain tensors): what evaluation and one-client chunks use."""
    return model.apply, make_grad_fn(model)


@pytest.mark.parametrize("path", [_through_cell, _through_fused], ids=["explicit-cell", "fused"])
@pytest.mark.parametrize("xdtype", [torch.int64, torch.uint8])
def test_matches_torch_nn_lstm_forward_and_gradient(xdtype, path):
    vocab, embed, hidden, classes, T = 11, 4, 6, 11, 7
    model = build_model({"name": "lstm", "vocab_size": vocab, "embed_dim": embed, "hidden": [hidden, hidden]},
                        (T,), classes)
    p = model.init(np.random.default_rng(1), dtype=torch.float64)
    forward, ref_params, names = _reference(p, vocab, embed, hidden, classes)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, vocab, (5, T), generator=g).to(xdtype)
    y = torch.randint(0, classes, (5,), generator=g)
    apply, grad_fn = path(model)
    torch.testing.assert_close(apply(p, x), forward(x), rtol=1e-12, atol=1e-12)
    grads, loss = grad_fn(p, x, y)
    ref_loss = torch.nn.functional.cross_entropy(forward(x), y)
    ref_grads = torch.autograd.grad(ref_loss, ref_params)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-12, atol=1e-12)
    for n, rg in zip(names, ref_grads):
        torch.testing.assert_close(grads[n], rg, rtol=1e-10, atol=1e-12, msg=n)


def test_runs_under_vmap_over_clients():
    model = build_model({"name": "lstm", "vocab_size": 9, "embed_dim": 3, "hidden": [5, 4]}, (6,), 9)
    ps = [model.init(np.random.default_rng(s), dtype=torch.float64) for s in range(3)]
    stacked = {k: torch.stack([p[k] for p in ps]) for k in ps[0]}
    x = torch.randint(0, 9, (3, 2, 6))
    y = torch.randint(0, 9, (3, 2))
    grads, loss = torch.func.vmap(make_grad_fn(model))(stacked, x, y)
    for i, p in enumerate(ps):
        gi, li = make_grad_fn(model)(p, x[i], y[i])
        torch.testing.assert_close(loss[i], li)
        for k in gi:
            torch.testing.assert_close(grads[k][i], gi[k], msg=k)


def test_one_gradient_whichever_path_in_float32():
    """The fused kernel (oneDNN on CPU) and the explicit cell agree in float32 too."""
    model = build_model({"name": "lstm"}, (80,), 80)
    p = model.init(np.random.default_rng(2))
    g = torch.Generator().manual_seed(1)
    x, y = torch.randint(0, 80, (20, 80), generator=g), torch.randint(0, 80, (20,), generator=g)
    (gc, lc), (gf, lf) = _through_cell(model)[1](p, x, y), _through_fused(model)[1](p, x, y)
    torch.testing.assert_close(lf, lc, rtol=1e-5, atol=1e-6)
    for k in gc:
        torch.testing.assert_close(gf[k], gc[k], rtol=1e-4, atol=1e-6, msg=k)


def test_bad_options_are_rejected():
    with pytest.raises(ValueError, match="hidden"):
        build_model({"name": "lstm", "hidden": []}, (80,), 80)
    with pytest.raises(ValueError, match="embed_dim"):
        build_model({"name": "lstm", "embed_dim": 0}, (80,), 80)
