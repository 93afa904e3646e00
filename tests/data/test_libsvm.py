"""LIBSVM a9a / epsilon from svmlight files (plain and bz2)."""

import numpy as np
import pytest
from rawfakes import make_svmlight, pin

from fedbench.data.errors import CorruptFileError
from fedbench.data.registry import prepare_dataset
from fedbench.data.store import load_dataset


def test_a9a_end_to_end(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    x, y = make_svmlight(mirror, "a9a", 40, 120)  # the last 3 of the 123 features never occur
    make_svmlight(mirror, "a9a.t", 15, 123, seed=1)
    pin(monkeypatch, "a9a", mirror)
    ds = load_dataset(prepare_dataset("a9a", {"source": "a9a"}, tmp_path / "a9a", mirror=mirror))
    assert ds.x_train.shape == (40, 123) and ds.x_test.shape == (15, 123) and ds.num_classes == 2
    np.testing.assert_allclose(ds.x_train[:, :120], x, atol=1e-6)
    np.testing.assert_array_equal(ds.y_train, (y > 0).astype(np.int64))


def test_epsilon_bz2(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    x, y = make_svmlight(mirror, "epsilon_normalized.bz2", 25, 2000, bz2_compress=True)
    make_svmlight(mirror, "epsilon_normalized.t.bz2", 5, 2000, seed=2, bz2_compress=True)
    pin(monkeypatch, "epsilon", mirror)
    ds = load_dataset(prepare_dataset("eps", {"source": "epsilon"}, tmp_path / "eps", mirror=mirror))
    assert ds.x_train.shape == (25, 2000) and ds.x_train.dtype == np.float32
    np.testing.assert_allclose(ds.x_train, x, atol=1e-6)


def test_bad_svmlight_names_the_file(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_svmlight(mirror, "a9a", 10, 20)
    (mirror / "a9a.t").write_text("+1 5:1 999:1\n")  # feature index beyond 123
    pin(monkeypatch, "a9a", mirror)
    with pytest.raises(CorruptFileError, match="a9a.t"):
        prepare_dataset("a9a", {"source": "a9a"}, tmp_path / "a9a", mirror=mirror)
    assert not (tmp_path / "a9a").exists()
