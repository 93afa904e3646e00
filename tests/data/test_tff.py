"""Fed-EMNIST and Fed-CIFAR100 from TFF's HDF5 files (natural clients), and the natural partitioner."""

import numpy as np
import pytest
from rawfakes import make_tff, pin

from fedbench.data.errors import ChecksumError
from fedbench.data.partition import client_indices, make_partition
from fedbench.data.registry import prepare_dataset
from fedbench.data.store import load_dataset


def test_fed_emnist_end_to_end(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    truth = make_tff(mirror, "fed_emnist")
    pin(monkeypatch, "fed_emnist", mirror)
    ds = load_dataset(prepare_dataset("femnist", {"source": "fed_emnist"}, tmp_path / "femnist", mirror=mirror))
    names = ds.meta["client_names"]
    assert names == ["f0000_14", "f0001_33", "f0002_01"] and ds.num_classes == 62
    assert ds.x_train.shape[1:] == (1, 28, 28) and ds.has_natural_clients
    for k, n in enumerate(names):
        tr = np.flatnonzero(np.asarray(ds.client_train) == k)
        np.testing.assert_allclose(ds.x_train[tr][:, 0], truth[("train", n)]["pixels"])
        np.testing.assert_array_equal(ds.y_train[tr], truth[("train", n)]["label"])
        te = np.flatnonzero(np.asarray(ds.client_test) == k)
        np.testing.assert_array_equal(ds.y_test[te], truth[("test", n)]["label"])
    t = make_partition(ds, {"scheme": "natural"}, 0)
    assert [len(i) for i in client_indices(t, "test")] == [len(truth[("test", n)]["label"]) for n in names]
    inv = load_dataset(prepare_dataset("fe", {"source": "fed_emnist", "invert": True}, tmp_path / "fe", mirror=mirror))
    np.testing.assert_allclose(inv.x_train, 1.0 - np.asarray(ds.x_train), atol=1e-6)


def test_fed_cifar100_clients_and_coarse_labels(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    truth = make_tff(mirror, "fed_cifar100")
    pin(monkeypatch, "fed_cifar100", mirror)
    ds = load_dataset(prepare_dataset("fc100", {"source": "fed_cifar100", "normalize": "none"}, tmp_path / "fc",
                                      mirror=mirror))
    assert ds.meta["client_names"] == [str(i) for i in range(12)] and ds.meta["test_client_offset"] == 12
    assert set(np.unique(ds.client_train)) == set(range(12)) and set(np.unique(ds.client_test)) == {12, 13, 14}
    tr = np.flatnonzero(np.asarray(ds.client_train) == 10)  # numeric order: "10" after "9"
    np.testing.assert_allclose(ds.x_train[tr], truth[("train", "10")]["image"].transpose(0, 3, 1, 2) / 255.0, atol=1e-6)
    np.testing.assert_array_equal(ds.y_coarse_train[tr], truth[("train", "10")]["coarse_label"])
    t = make_partition(ds, {"scheme": "natural"}, 0)
    assert len(client_indices(t, "train")) == 12 and sum(len(i) for i in client_indices(t, "test")) == 0
    sub = make_partition(ds, {"scheme": "natural", "num_clients": 5}, 3)
    assert len(client_indices(sub)) == 5


def test_corrupt_hdf5_archive_refused(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_tff(mirror, "fed_emnist")
    pin(monkeypatch, "fed_emnist", mirror)
    p = mirror / "fed_emnist.tar.bz2"
    raw = bytearray(p.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    p.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match="fed_emnist.tar.bz2"):
        prepare_dataset("fe", {"source": "fed_emnist"}, tmp_path / "fe", mirror=mirror)
    assert not (tmp_path / "fe").exists()
