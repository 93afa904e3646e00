"""fedbench.tree: pytree helpers."""

from __future__ import annotations

import pytest
import torch

from fedbench.tree import tree_weighted_mean


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_weighted_mean_of_many_trees_is_bitwise_the_sequential_sum(dtype):
    """From 64 float64 trees on the mean is one scan over the stacked leaves: the same sum, in the
    same order, to the last bit (so engines and resumed runs keep their bitwise results)."""
    g = torch.Generator().manual_seed(0)
    big = torch.randn(300, 5, 3, generator=g, dtype=dtype)
    trees = [{"a": v, "b": v[0] * 3} for v in big.unbind(0)]
    w = torch.rand(300, generator=g, dtype=torch.float64) * 10
    got = tree_weighted_mean(trees, w)
    total = float(w.sum())
    for k in ("a", "b"):
        acc = torch.zeros_like(trees[0][k])
        for t, wi in zip(trees, w.tolist()):
            acc = acc + t[k] * (wi / total)
        assert torch.equal(got[k], acc) and got[k].dtype == dtype
