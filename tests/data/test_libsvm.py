"""LIBSVM a9a / epsilon from svmlight files (plain and bz2)."""

import numpy as np
import pytest
from rawfakes import make_svmlight, pin

from fedbench.data.errors import ChecksumError, CorruptFileError
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


# ------------------------------------------------------------------ verification by row counts


def _counted(monkeypatch, source, **rows):
    """The registry's entry for ``source`` with small known row counts and, as in the real one, no checksum."""
    import dataclasses

    from fedbench.data.sources import REMOTE

    remote = REMOTE[source]
    files = {r: dataclasses.replace(f, rows=rows[r]) for r, f in remote.files.items()}
    monkeypatch.setitem(REMOTE, source, dataclasses.replace(remote, files=files))


def test_registry_verifies_libsvm_files_by_their_known_counts():
    from fedbench.data.sources import REMOTE

    got = {(n, r): (f.rows, f.features, f.sha256) for n in ("a9a", "epsilon") for r, f in REMOTE[n].files.items()}
    assert got == {("a9a", "train"): (32561, 123, None), ("a9a", "test"): (16281, 123, None),
                   ("epsilon", "train"): (400000, 2000, None), ("epsilon", "test"): (100000, 2000, None)}


def test_a9a_cut_at_a_line_end_is_refused(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_svmlight(mirror, "a9a", 200, 123)
    make_svmlight(mirror, "a9a.t", 50, 123, seed=1)
    _counted(monkeypatch, "a9a", train=200, test=50)
    assert load_dataset(prepare_dataset("a9a", {"source": "a9a"}, tmp_path / "ok", mirror=mirror)).x_train.shape \
        == (200, 123)
    lines = (mirror / "a9a").read_text().splitlines(keepends=True)
    (mirror / "a9a").write_text("".join(lines[:100]))  # truncated exactly at a line end: parses cleanly
    with pytest.raises(ChecksumError, match=r"a9a \(.*\): 100 rows, expected 200") as e:
        prepare_dataset("a9a", {"source": "a9a"}, tmp_path / "a9a", mirror=mirror)
    assert "a9a.t" not in str(e.value) and "1 file(s)" in str(e.value)
    assert not (tmp_path / "a9a").exists()
    lines = (mirror / "a9a.t").read_text().splitlines(keepends=True)
    (mirror / "a9a.t").write_text("".join(lines[:49]))
    with pytest.raises(ChecksumError, match="2 file") as e:  # every bad file is named
        prepare_dataset("a9a", {"source": "a9a"}, tmp_path / "a9a", mirror=mirror)
    assert "a9a.t (" in str(e.value) and "49 rows, expected 50" in str(e.value)


def test_the_real_counts_refuse_a_miniature_file(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_svmlight(mirror, "epsilon_normalized.bz2", 25, 2000, bz2_compress=True)
    make_svmlight(mirror, "epsilon_normalized.t.bz2", 5, 2000, seed=2, bz2_compress=True)
    with pytest.raises(ChecksumError, match=r"epsilon_normalized.bz2 .*: 25 rows, expected 400,000"):
        prepare_dataset("eps", {"source": "epsilon"}, tmp_path / "eps", mirror=mirror)


def test_a_trusted_mirror_sha256sums_replaces_the_counts(tmp_path):
    import hashlib
    import json

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_svmlight(mirror, "a9a", 30, 123)
    make_svmlight(mirror, "a9a.t", 10, 123, seed=1)
    (mirror / "SHA256SUMS").write_text("".join(f"{hashlib.sha256((mirror / n).read_bytes()).hexdigest()}  {n}\n"
                                               for n in ("a9a", "a9a.t")))
    out = prepare_dataset("a9a", {"source": "a9a"}, tmp_path / "a9a", mirror=mirror, trust_mirror_checksums=True)
    assert json.loads((out / "meta.json").read_text())["raw_checksums"] == "mirror SHA256SUMS for a9a, a9a.t"
