"""The Pachinko Allocation partitioner (Reddi et al. 2021 / TFF Fed-CIFAR100)."""

import numpy as np
import pytest

from fedbench.data.partition import class_counts, client_indices, make_partition
from fedbench.data.store import Dataset


def _cifar100_like(per_fine=10, seed=0):
    """20 coarse x 5 fine labels, per_fine samples each (fine f belongs to coarse f // 5)."""
    y = np.repeat(np.arange(100), per_fine)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    y = y[perm]
    return Dataset(name="c100", x_train=np.zeros((len(y), 1), np.float32), y_train=y,
                   x_test=np.zeros((2, 1), np.float32), y_test=np.array([0, 1]), num_classes=100,
                   y_coarse_train=y // 5, y_coarse_test=np.array([0, 0]))


def test_every_sample_exactly_once_with_stated_sizes():
    ds = _cifar100_like(per_fine=10)  # 1000 samples = 10 clients x 100
    t = make_partition(ds, {"scheme": "pachinko", "num_clients": 10}, seed=0)
    idx = client_indices(t)
    assert [len(i) for i in idx] == [100] * 10
    allidx = np.concatenate(idx)
    assert np.array_equal(np.sort(allidx), np.arange(1000))
    assert t.equals(make_partition(ds, {"scheme": "pachinko", "num_clients": 10}, seed=0))
    assert not t.equals(make_partition(ds, {"scheme": "pachinko", "num_clients": 10}, seed=1))


def test_at_most_once_when_fewer_slots_than_samples_and_skew():
    ds = _cifar100_like(per_fine=30)  # 3000 samples, 10 x 100 drawn
    t = make_partition(ds, {"scheme": "pachinko", "num_clients": 10, "samples_per_client": 100}, seed=3)
    allidx = np.concatenate(client_indices(t))
    assert len(allidx) == 1000 and len(np.unique(allidx)) == 1000
    # Dir(0.1) over coarse labels: a typical client concentrates on few super-classes
    coarse = np.asarray(ds.y_coarse_train)
    top_share = [np.bincount(coarse[i], minlength=20).max() / 100 for i in client_indices(t)]
    assert np.median(top_share) > 0.3
    counts = class_counts(t, ds)
    assert counts.column("num_samples").to_pylist() == [100] * 10


def test_errors():
    ds = _cifar100_like(per_fine=1)
    with pytest.raises(ValueError, match="exceeds the 100 train samples"):
        make_partition(ds, {"scheme": "pachinko", "num_clients": 2}, 0)
    flat = Dataset(name="flat", x_train=ds.x_train, y_train=ds.y_train, x_test=ds.x_test, y_test=ds.y_test,
                   num_classes=100)
    with pytest.raises(ValueError, match="coarse labels.*cifar100"):
        make_partition(flat, {"scheme": "pachinko", "num_clients": 1}, 0)
    bad = Dataset(name="bad", x_train=np.zeros((4, 1)), y_train=np.array([0, 0, 1, 1]), x_test=ds.x_test,
                  y_test=ds.y_test, num_classes=2, y_coarse_train=np.array([0, 1, 1, 1]))
    with pytest.raises(ValueError, match="exactly one coarse label"):
        make_partition(bad, {"scheme": "pachinko", "num_clients": 1, "samples_per_client": 2}, 0)
    for key, v in (("coarse_alpha", 0), ("fine_alpha", -1.0), ("samples_per_client", 0)):
        with pytest.raises(ValueError, match=key):
            make_partition(ds, {"scheme": "pachinko", key: v}, 0)


def test_tiny_alpha_still_completes():
    ds = _cifar100_like(per_fine=2)
    t = make_partition(ds, {"scheme": "pachinko", "num_clients": 4, "samples_per_client": 50,
                            "coarse_alpha": 1e-4, "fine_alpha": 1e-4}, 0)
    assert np.array_equal(np.sort(np.concatenate(client_indices(t))), np.arange(200))


def test_pachinko_on_a_prepared_cifar100(tmp_path, monkeypatch):
    from rawfakes import make_cifar_tar, pin

    from fedbench.data.registry import prepare_dataset
    from fedbench.data.store import load_dataset

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_cifar_tar(mirror, 100, n_per_batch=4)  # 20 train images
    pin(monkeypatch, "cifar100", mirror)
    ds = load_dataset(prepare_dataset("c100", {"source": "cifar100"}, tmp_path / "c100", mirror=mirror))
    t = make_partition(ds, {"scheme": "pachinko", "num_clients": 5, "samples_per_client": 4}, 0)
    assert [len(i) for i in client_indices(t)] == [4] * 5
    assert np.array_equal(np.sort(np.concatenate(client_indices(t))), np.arange(20))
