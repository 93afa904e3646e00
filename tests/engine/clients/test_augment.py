"""Training-time augmentation (random crop with padding + horizontal flip) in both engines.

- crop and flip semantics checked by hand on a tiny image;
- draws are keyed by (seed, round, client, "augment") and depend on nothing else;
- vectorized == sequential with augmentation on (float64, 1e-10 relative), bitwise the same
  augmented inputs;
- augmentation off (spec ``augmentation: None``, or a dataset without the record) is bitwise the
  run from before augmentation existed (the same code path: nothing is drawn or applied).
"""

import numpy as np
import pytest
import torch
from test_vectorized import _compare, _spec

from fedbench.data.partition import make_partition
from fedbench.data.store import Dataset
from fedbench.engine.clients import augment
from fedbench.engine.rounds.cell import spec_id
from fedbench.engine.rounds.loop import train
from fedbench.engine.spec import CellSpec
from fedbench.rng import PURPOSES

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU visible")),
]
RECORD = {"horizontal_flip": {"p": 0.5}, "random_crop": {"size": 6, "padding": 2, "fill": 0.0, "p": 0.5},
          "splits": ["train"]}



def test_crop_and_flip_by_hand():
    img = torch.arange(1, 10, dtype=torch.float64).reshape(1, 1, 3, 3)  # [[1,2,3],[4,5,6],[7,8,9]]
    x = img.repeat(4, 1, 1, 1)
    flip = torch.tensor([False, True, False, True])
    dy = torch.tensor([1, 1, 0, 2])
    dx = torch.tensor([1, 1, 0, 0])
    out = augment.apply(x, flip, dy, dx, padding=1, fill=-1.0)
    # identity window (padding, padding), no flip
    assert torch.equal(out[0, 0], img[0, 0])
    # flip only
    assert torch.equal(out[1, 0], torch.tensor([[3., 2, 1], [6, 5, 4], [9, 8, 7]], dtype=torch.float64))
    # window at the top-left corner of the padded image: shifted down-right, fill on top and left
    assert torch.equal(out[2, 0], torch.tensor([[-1., -1, -1], [-1, 1, 2], [-1, 4, 5]], dtype=torch.float64))
    # flip first, then the bottom-left window of the padded flipped image
    assert torch.equal(out[3, 0], torch.tensor([[-1., 6, 5], [-1, 9, 8], [-1, -1, -1]], dtype=torch.float64))
    # channels move together
    rgb = torch.stack([img[0, 0], 10 * img[0, 0], 100 * img[0, 0]])[None]
    o = augment.apply(rgb, torch.tensor([True]), torch.tensor([0]), torch.tensor([2]), padding=1)
    assert torch.equal(o[0, 1], 10 * o[0, 0]) and torch.equal(o[0, 2], 100 * o[0, 0])


def test_draws_are_keyed_and_match_the_probabilities():
    assert "augment" in PURPOSES
    aug = augment.check_record(RECORD, (3, 6, 6))
    assert aug == {"flip_p": 0.5, "crop_p": 0.5, "padding": 2, "fill": 0.0}
    a = augment.draw(aug, 3, 2, 5, [7, 7, 3])
    b = augment.draw(aug, 3, 2, 5, [7, 7, 3])
    assert [len(f) for f, _, _ in a] == [7, 7, 3]
    for (f1, y1, x1), (f2, y2, x2) in zip(a, b):
        assert np.array_equal(f1, f2) and np.array_equal(y1, y2) and np.array_equal(x1, x2)
    other = augment.draw(aug, 3, 2, 6, [7, 7, 3])  # another client: another stream
    assert not all(np.array_equal(p[1], q[1]) for p, q in zip(a, other))
    flip, dy, dx = (np.concatenate(z) for z in zip(*augment.draw(aug, 0, 1, 0, [20000])))
    assert abs(flip.mean() - 0.5) < 0.02
    cropped = (dy != 2) | (dx != 2)
    assert abs(cropped.mean() - 0.5 * (1 - 1 / 25)) < 0.02  # the centre window is also a crop outcome
    assert dy.min() == 0 and dy.max() == 4 and dx.min() == 0 and dx.max() == 4


def test_check_record_rejects_bad_records():
    assert augment.check_record(None, (3, 6, 6)) is None
    assert augment.check_record({**RECORD, "splits": []}, (3, 6, 6)) is None
    with pytest.raises(ValueError, match="image inputs"):
        augment.check_record(RECORD, (36,))
    with pytest.raises(ValueError, match="size"):
        augment.check_record(RECORD, (3, 8, 8))
    with pytest.raises(ValueError, match="unknown"):
        augment.check_record({**RECORD, "rotate": 1}, (3, 6, 6))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        augment.check_record({**RECORD, "horizontal_flip": {"p": 2}}, (3, 6, 6))


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(1)
    n = 90
    x = rng.normal(size=(n + 20, 2, 6, 6)).astype(np.float32)
    y = (x[:, 0, :3, :3].reshape(n + 20, -1)[:, :3]).argmax(1)
    ds = Dataset("img", x[:n], y[:n], x[n:], y[n:], num_classes=3, meta={"augmentation": RECORD})
    part = make_partition(ds, {"scheme": "iid", "num_clients": 5, "sigma": 0.5, "min_size": 3}, seed=0)
    return ds, part


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("chunk_size", [None, 2])
@pytest.mark.parametrize("algorithm", ["fedavg", "scaffold"])
def test_vectorized_equals_sequential_with_augmentation(images, algorithm, chunk_size, device):
    ds, part = images
    spec = _spec(algorithm, model={"name": "cnn", "channels": [2], "hidden": [4], "kernel_size": 3}, rounds=3,
                 dataset="img", augmentation=RECORD)
    info_s, _ = _compare(spec, ds, part, device, rtol=1e-10, chunk_size=chunk_size)
    # augmentation changed the result (so the comparison above compared augmented runs)
    _, off = train({**spec, "augmentation": None}, ds, part, device=device, engine="sequential")
    assert any(not torch.equal(off["params"][k], info_s["params"][k]) for k in off["params"])


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_augmentation_off_is_bitwise_the_unaugmented_path(images, engine, monkeypatch):
    ds, part = images
    spec = _spec("fedavg", model={"name": "cnn", "channels": [2], "hidden": [4], "kernel_size": 3}, rounds=2,
                 dataset="img")
    plain = Dataset("img", ds.x_train, ds.y_train, ds.x_test, ds.y_test, num_classes=3)  # no record at all
    rows_a, info_a = train(spec, plain, part, device="cpu", engine=engine)

    def boom(*a, **k):
        raise AssertionError("augmentation must not be drawn or applied when it is off")

    monkeypatch.setattr(augment, "draw", boom)
    monkeypatch.setattr(augment, "apply", boom)
    rows_b, info_b = train({**spec, "augmentation": None}, ds, part, device="cpu", engine=engine)
    for k in info_a["params"]:
        assert torch.equal(info_a["params"][k], info_b["params"][k])
    drop = ("wall_seconds", "hparams_id")
    assert [{k: v for k, v in r.items() if k not in drop} for r in rows_a] == \
        [{k: v for k, v in r.items() if k not in drop} for r in rows_b]


def augmentation_of(keys: dict, ds) -> dict | None:
    """The record a cell of these spec keys trains with on dataset ``ds``."""
    return CellSpec.of(_spec("fedavg", **keys)).augmentation_for(ds.meta)


def test_the_spec_decides_else_the_dataset_meta(images):
    ds, _ = images
    assert augmentation_of({}, ds) == RECORD
    assert augmentation_of({"augmentation": None}, ds) is None
    assert augmentation_of({}, Dataset("d", ds.x_train, ds.y_train, ds.x_test, ds.y_test, 3)) is None
    # augmentation is part of a cell's identity hash
    assert spec_id({"a": 1, "augmentation": RECORD}) != spec_id({"a": 1, "augmentation": None})
