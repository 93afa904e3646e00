"""MNIST and EMNIST from IDX files, prepared end to end through a mirror."""

import gzip
import io
import json

import numpy as np
import pytest
from rawfakes import idx_bytes, make_emnist_zip, make_mnist, pin

from fedbench.data.errors import ChecksumError, CorruptFileError, DataUnavailableError
from fedbench.data.idx import read_idx
from fedbench.data.registry import prepare_dataset
from fedbench.data.store import load_dataset


def test_read_idx_roundtrip_and_truncation():
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    np.testing.assert_array_equal(read_idx(io.BytesIO(idx_bytes(a))), a)
    with pytest.raises(ValueError, match="truncated"):
        read_idx(io.BytesIO(idx_bytes(a)[:-3]))
    with pytest.raises(ValueError, match="not an IDX"):
        read_idx(io.BytesIO(b"PK\x03\x04rest"))


def test_mnist_end_to_end(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    truth = make_mnist(mirror, 50, 20)
    pin(monkeypatch, "mnist", mirror)
    out = prepare_dataset("mnist", {"source": "mnist"}, tmp_path / "datasets" / "mnist", mirror=mirror)
    ds = load_dataset(out, verify=True)
    assert ds.x_train.shape == (50, 1, 28, 28) and ds.x_test.shape == (20, 1, 28, 28) and ds.num_classes == 10
    np.testing.assert_array_equal(ds.y_train, truth["train"][1])
    want = (truth["t10k"][0][:, None] / 255.0 - 0.1307) / 0.3081
    np.testing.assert_allclose(ds.x_test, want, rtol=1e-5, atol=1e-5)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["source"] == "mnist" and meta["normalization"]["mean"] == [0.1307]
    assert "train-images-idx3-ubyte.gz" in meta["raw_files"] and meta["params"]["normalize"] == "fixed"
    assert not (tmp_path / "datasets" / "_downloads").exists()  # local mirror: read in place


def test_mnist_normalize_none_and_train(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    truth = make_mnist(mirror, 30, 10)
    pin(monkeypatch, "mnist", mirror)
    ds = load_dataset(prepare_dataset("m", {"source": "mnist", "normalize": "none"}, tmp_path / "m", mirror=mirror))
    np.testing.assert_allclose(ds.x_train[:, 0], truth["train"][0] / 255.0, atol=1e-6)
    ds = load_dataset(prepare_dataset("m", {"source": "mnist", "normalize": "train"}, tmp_path / "m", mirror=mirror))
    assert abs(float(np.mean(ds.x_train))) < 1e-4 and abs(float(np.std(ds.x_train)) - 1) < 1e-3


def test_corrupt_idx_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_mnist(mirror)
    pin(monkeypatch, "mnist", mirror)
    target = mirror / "t10k-labels-idx1-ubyte.gz"
    target.write_bytes(target.read_bytes()[:-5])  # truncated after the checksums were recorded
    with pytest.raises(ChecksumError, match="t10k-labels-idx1-ubyte.gz"):
        prepare_dataset("mnist", {"source": "mnist"}, tmp_path / "datasets" / "mnist", mirror=mirror)
    assert not (tmp_path / "datasets" / "mnist").exists()
    assert not [p for p in (tmp_path / "datasets").iterdir()] if (tmp_path / "datasets").exists() else True
    # a truncated gzip whose checksum is unknown still fails while it is read, naming the file
    pin(monkeypatch, "mnist", mirror)
    with pytest.raises(CorruptFileError, match="t10k-labels-idx1-ubyte.gz"):
        prepare_dataset("mnist", {"source": "mnist"}, tmp_path / "datasets" / "mnist", mirror=mirror)
    assert not (tmp_path / "datasets" / "mnist").exists()


def test_failed_preparation_keeps_the_previous_dataset(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_mnist(mirror)
    pin(monkeypatch, "mnist", mirror)
    out = prepare_dataset("mnist", {"source": "mnist"}, tmp_path / "mnist", mirror=mirror)
    before = (out / "meta.json").read_text()
    (mirror / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(b"garbage"))
    with pytest.raises(ChecksumError):
        prepare_dataset("mnist", {"source": "mnist"}, tmp_path / "mnist", mirror=mirror)
    assert (out / "meta.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mirror", "mnist"]


def test_missing_mnist_lists_all_four_files(tmp_path):
    with pytest.raises(DataUnavailableError) as e:
        prepare_dataset("mnist", {"source": "mnist"}, tmp_path / "mnist", mirror=tmp_path / "empty")
    msg = str(e.value)
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                 "t10k-labels-idx1-ubyte.gz"):
        assert name in msg
    assert "4 file(s)" in msg and "mirror:" in msg and not (tmp_path / "mnist").exists()


def test_bad_parameter_is_rejected_before_any_fetch(tmp_path):
    with pytest.raises(ValueError, match="std"):
        prepare_dataset("m", {"source": "mnist", "std": [0.0]}, tmp_path / "m", mirror=tmp_path / "empty")
    with pytest.raises(ValueError, match="num_classes"):
        prepare_dataset("e", {"source": "emnist", "num_classes": 27}, tmp_path / "e", mirror=tmp_path / "empty")


def test_emnist_letters_first_ten_classes(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    truth = make_emnist_zip(mirror)
    pin(monkeypatch, "emnist", mirror)
    ds = load_dataset(prepare_dataset("emnist_l", {"source": "emnist"}, tmp_path / "emnist_l", mirror=mirror))
    x, y = truth[("letters", "train")]
    keep = (y >= 1) & (y <= 10)
    np.testing.assert_array_equal(ds.y_train, y[keep].astype(np.int64) - 1)
    assert ds.num_classes == 10 and ds.x_train.shape == (int(keep.sum()), 1, 28, 28)
    assert set(np.unique(ds.y_test)) <= set(range(10))
    assert abs(float(np.mean(ds.x_train))) < 1e-4  # standardised with the train mean/std
    # transposed upright: compare the order of pixels of the first kept image
    raw0 = x[keep][0].astype(np.float64)
    got0 = np.asarray(ds.x_train[0, 0], dtype=np.float64)
    assert np.corrcoef(got0.ravel(), raw0.T.ravel())[0, 1] > 0.999
    all26 = load_dataset(prepare_dataset("e26", {"source": "emnist", "num_classes": None, "transpose": False},
                                         tmp_path / "e26", mirror=mirror))
    assert all26.num_classes == 26 and len(all26.y_train) == len(y)
