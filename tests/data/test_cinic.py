"""CINIC-10 from a tar.gz of PNG image folders."""

import numpy as np
import pytest
from rawfakes import make_cinic_tar, pin

from fedbench.data.cinic import CLASSES
from fedbench.data.errors import CorruptFileError
from fedbench.data.registry import prepare_dataset
from fedbench.data.store import load_dataset


def test_cinic_end_to_end(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    truth = make_cinic_tar(mirror, per_class=2)
    pin(monkeypatch, "cinic10", mirror)
    ds = load_dataset(prepare_dataset("cinic", {"source": "cinic10", "normalize": "none"}, tmp_path / "cinic",
                                      mirror=mirror))
    assert ds.x_train.shape == (20, 3, 32, 32) and ds.x_test.shape == (20, 3, 32, 32)
    np.testing.assert_array_equal(ds.y_train, np.repeat(np.arange(10), 2))
    # sorted by class then file name; grayscale images were expanded to RGB
    np.testing.assert_allclose(ds.x_train[6], truth[("train", CLASSES[3], 0)].transpose(2, 0, 1) / 255.0, atol=1e-6)
    np.testing.assert_allclose(ds.x_test[19], truth[("test", "truck", 1)].transpose(2, 0, 1) / 255.0, atol=1e-6)
    both = load_dataset(prepare_dataset("cinic2", {"source": "cinic10", "train_splits": ["train", "valid"]},
                                        tmp_path / "cinic2", mirror=mirror))
    assert both.x_train.shape[0] == 40 and both.meta["augmentation"]["horizontal_flip"]["p"] == 0.5


def test_cinic_bad_splits_and_corrupt_archive(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="overlap"):
        prepare_dataset("c", {"source": "cinic10", "test_splits": ["train"]}, tmp_path / "c", mirror=tmp_path)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_cinic_tar(mirror, per_class=1)
    p = mirror / "CINIC-10.tar.gz"
    p.write_bytes(p.read_bytes()[:-200])
    monkeypatch.setattr("fedbench.data.download.log.warning", lambda *a, **k: None)
    with pytest.raises(CorruptFileError, match="CINIC-10.tar.gz"):  # no checksum known: caught while reading
        prepare_dataset("c", {"source": "cinic10"}, tmp_path / "c", mirror=mirror)
    assert not (tmp_path / "c").exists()
