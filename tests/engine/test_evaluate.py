"""fedbench.engine.evaluate: loss, accuracy and the worst-class accuracy of fair classification."""

import math

import torch

from fedbench.engine.evaluate import evaluate


def _apply(params, x):
    return x @ params["w"]


def test_worst_class_accuracy_is_the_minimum_over_present_classes():
    # 3 classes, class 2 absent from y; predictions: argmax of the one-hot rows
    preds = torch.tensor([0, 0, 1, 1, 1, 0, 1])
    y = torch.tensor([0, 0, 0, 1, 1, 1, 1])  # class 0: 2/3 right, class 1: 3/4 right
    x = torch.nn.functional.one_hot(preds, 3).double()
    params = {"w": torch.eye(3, dtype=torch.float64)}
    for batch_size in (2, 4096):  # chunked or not: the same counts
        loss, acc, worst = evaluate(_apply, params, x, y, batch_size=batch_size, worst_class=True)
        assert acc == 5 / 7 and worst == 2 / 3
        assert (loss, acc) == evaluate(_apply, params, x, y, batch_size=batch_size)
    nan = evaluate(_apply, params, x[:0], y[:0], worst_class=True)
    assert len(nan) == 3 and all(math.isnan(v) for v in nan)
