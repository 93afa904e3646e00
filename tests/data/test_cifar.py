"""CIFAR-10/100 from the python pickle tarballs, end to end through a mirror."""

import json
import pickle
import tarfile

import numpy as np
import pytest
from rawfakes import _add, make_cifar_tar, pin

from fedbench.data.cifar import CIFAR10_MEAN, CIFAR10_STD, read_cifar_tar
from fedbench.data.errors import CorruptFileError
from fedbench.data.registry import prepare_dataset
from fedbench.data.store import load_dataset


def test_cifar10_end_to_end(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    truth = make_cifar_tar(mirror, 10, n_per_batch=6)
    pin(monkeypatch, "cifar10", mirror)
    out = prepare_dataset("cifar10", {"source": "cifar10"}, tmp_path / "cifar10", mirror=f"file://{mirror}")
    ds = load_dataset(out, verify=True)
    assert ds.x_train.shape == (30, 3, 32, 32) and ds.x_test.shape == (6, 3, 32, 32) and ds.num_classes == 10
    want_y = np.concatenate([truth[f"data_batch_{i}"]["labels"] for i in range(1, 6)])
    np.testing.assert_array_equal(ds.y_train, want_y)
    raw = truth["test_batch"]["data"].reshape(-1, 3, 32, 32) / 255.0
    want = (raw - np.array(CIFAR10_MEAN)[None, :, None, None]) / np.array(CIFAR10_STD)[None, :, None, None]
    np.testing.assert_allclose(ds.x_test, want, rtol=1e-5, atol=1e-5)
    meta = json.loads((out / "meta.json").read_text())
    aug = meta["augmentation"]
    assert aug["random_crop"] == {"size": 32, "padding": 4, "fill": 0.0, "p": 0.5}
    assert aug["horizontal_flip"] == {"p": 0.5}
    assert ds.y_coarse_train is None


def test_cifar100_keeps_coarse_labels(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    truth = make_cifar_tar(mirror, 100, n_per_batch=4)
    pin(monkeypatch, "cifar100", mirror)
    out = prepare_dataset("c100", {"source": "cifar100", "augment": False}, tmp_path / "c100", mirror=mirror)
    ds = load_dataset(out)
    assert ds.x_train.shape == (20, 3, 32, 32) and ds.num_classes == 100
    np.testing.assert_array_equal(ds.y_train, truth["train"]["fine_labels"])
    np.testing.assert_array_equal(ds.y_coarse_train, truth["train"]["coarse_labels"])
    np.testing.assert_array_equal(ds.y_coarse_test, truth["test"]["coarse_labels"])
    assert json.loads((out / "meta.json").read_text())["augmentation"] is None


def test_truncated_tarball_is_refused_naming_it(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_cifar_tar(mirror, 10)
    path = mirror / "cifar-10-python.tar.gz"
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    pin(monkeypatch, "cifar10", mirror)  # checksums of the truncated file: reading must still fail
    with pytest.raises(CorruptFileError, match="cifar-10-python.tar.gz"):
        prepare_dataset("cifar10", {"source": "cifar10"}, tmp_path / "datasets" / "cifar10", mirror=mirror)
    assert not (tmp_path / "datasets").exists() or not any((tmp_path / "datasets").iterdir())


def test_missing_batch_and_malicious_pickle(tmp_path):
    with tarfile.open(tmp_path / "a.tar.gz", "w:gz") as tar:
        _add(tar, "cifar-10-batches-py/test_batch", pickle.dumps({"data": np.zeros((1, 3072), np.uint8),
                                                                  "labels": [0]}, 2))
    with pytest.raises(CorruptFileError, match="a.tar.gz.*data_batch_1"):
        read_cifar_tar(tmp_path / "a.tar.gz", 10)

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    with tarfile.open(tmp_path / "b.tar.gz", "w:gz") as tar:
        _add(tar, "cifar-10-batches-py/test_batch", pickle.dumps({"data": Evil()}, 2))
    with pytest.raises(CorruptFileError, match="b.tar.gz.*refusing"):
        read_cifar_tar(tmp_path / "b.tar.gz", 10)
