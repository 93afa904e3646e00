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


def test_a_label_outside_the_two_classes_names_file_and_line(tmp_path):
    from fedbench.data.libsvm import data_line, load_libsvm

    train = tmp_path / "a9a"
    # line 5 holds example 3 (0-based): a comment-only and a blank line hold none
    train.write_text("+1 1:1\n# a comment\n-1 2:1\n\n+2 1:1  # a stray label\n-1 3:1\n")
    make_svmlight(tmp_path, "a9a.t", 4, 3)
    test = tmp_path / "a9a.t"
    assert [data_line(train, r) for r in range(4)] == [1, 3, 5, 6] and data_line(train, 4) is None
    with pytest.raises(CorruptFileError, match=r"a9a:5: label 2 is not binary \(-1/\+1 or 0/1\); the file's labels "
                                               r"are \{-1, 1, 2\}"):
        load_libsvm({"train": train, "test": test}, "a9a", 3)
    train.write_text("0 1:1\n1 2:1\n-1 1:1\n0 3:1\n")  # 0/1 hold more rows than -1/+1: -1 is the stray one
    with pytest.raises(CorruptFileError, match=r"a9a:3: label -1 is not binary"):
        load_libsvm({"train": train, "test": test}, "a9a", 3)


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


# --------------------------------------------------------------------------------------------
# libsvm_file: a user's local binary LIBSVM file

from fedbench.data.errors import DataUnavailableError  # noqa: E402
from fedbench.data.libsvm import load_libsvm_file  # noqa: E402

ROWS = [  # (label as the file writes it: class 0 / class 1, {1-based index: value})
    (0, {1: 0.5, 3: 1.0}), (1, {2: 1.0}), (0, {1: 1.0}), (1, {3: 2.0, 4: -0.25}),
    (0, {2: 3.0}), (1, {1: 1.5}), (1, {}), (0, {4: 1.0}),
]
DENSE = np.array([[r.get(j, 0.0) for j in range(1, 5)] for _, r in ROWS], dtype=np.float32)
CLASS = np.array([c for c, _ in ROWS])


def _write(path, labels=(-1, 1), rows=ROWS, comment=True):
    lines = []
    for c, feats in rows:
        lab = labels[c]
        lines.append(f"{lab:g} " + " ".join(f"{j}:{v:g}" for j, v in sorted(feats.items())))
    if comment:
        lines[0] += "  # a comment"
    path.write_text("\n".join(s.rstrip() for s in lines) + "\n")
    return path


@pytest.mark.parametrize("labels", [(-1, 1), (0, 1), (1, 2), (2, -3)])
def test_libsvm_file_any_two_labels_larger_is_class_1(tmp_path, labels):
    p = _write(tmp_path / "d.svm", labels)
    ds = load_libsvm_file(str(p))
    hi = max(labels)
    expected = np.array([labels[c] == hi for c in CLASS], dtype=np.int64)
    np.testing.assert_array_equal(ds.y_train, expected)
    np.testing.assert_array_equal(ds.x_train, DENSE)  # exact: the values are binary fractions
    assert ds.x_train.dtype == np.float32 and ds.num_classes == 2
    assert ds.x_test.shape == (0, 4) and ds.y_test.shape == (0,)  # test_fraction 0: no test split
    assert ds.meta["label_map"] == {f"{min(labels):g}": 0, f"{hi:g}": 1}


def test_libsvm_file_with_test_path_and_inferred_or_fixed_features(tmp_path):
    train = _write(tmp_path / "tr", rows=[(c, {j: v for j, v in r.items() if j < 4}) for c, r in ROWS])  # max index 3
    test = _write(tmp_path / "te", rows=ROWS[:3] + [(1, {4: 7.0})])  # max index 4
    ds = load_libsvm_file(str(train), test_path=str(test))
    assert ds.x_train.shape == (8, 4) and ds.x_test.shape == (4, 4)  # d = the largest index of both files
    np.testing.assert_array_equal(ds.x_test[3], [0, 0, 0, 7])
    np.testing.assert_array_equal(ds.y_test, [0, 1, 0, 1])
    ds = load_libsvm_file(str(train), test_path=str(test), n_features=6)
    assert ds.x_train.shape == (8, 6) and ds.x_test.shape == (4, 6) and not ds.x_train[:, 4:].any()
    files = ds.meta["raw_files"]
    assert set(files) == {"train", "test"} and files["test"]["size"] == test.stat().st_size


def test_libsvm_file_holdout_is_stratified_and_seeded(tmp_path):
    p = _write(tmp_path / "d.svm")
    ds = load_libsvm_file(str(p), test_fraction=0.5, split_seed=3)
    assert len(ds.y_train) == len(ds.y_test) == 4 and ds.y_test.sum() == 2  # stratified: 2 of each class
    again = load_libsvm_file(str(p), test_fraction=0.5, split_seed=3)
    np.testing.assert_array_equal(ds.x_test, again.x_test)
    rows = {tuple(r) for r in np.concatenate([ds.x_train, ds.x_test])}
    assert rows == {tuple(r) for r in DENSE}  # every row once


def test_libsvm_file_errors_name_the_file_line_and_values(tmp_path):
    with pytest.raises(DataUnavailableError, match="missing.svm"):
        load_libsvm_file(str(tmp_path / "missing.svm"))
    three = tmp_path / "three.svm"
    three.write_text("1 1:1\n2 2:1\n3 1:2\n")
    with pytest.raises(CorruptFileError, match=r"three\.svm:3: label 3 is neither of the two classes \{1, 2\} "
                                               r"\(the file has 3 label values \{1, 2, 3\}"):
        load_libsvm_file(str(three))
    a, b = tmp_path / "a.svm", tmp_path / "b.svm"
    a.write_text("1 1:1\n2 2:1\n2 1:1\n")
    b.write_text("# header\n\n1 1:1\n5 2:1\n")  # two values each, three together
    with pytest.raises(CorruptFileError, match=r"b\.svm:4: label 5 is neither of the two classes \{1, 2\} "
                                               r"\(.*label values \{1, 2, 5\} together"):
        load_libsvm_file(str(a), test_path=str(b))
    one = tmp_path / "one.svm"
    one.write_text("1 1:1\n1 2:1\n")
    with pytest.raises(CorruptFileError, match=r"one\.svm: label values \{1\}"):
        load_libsvm_file(str(one))
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\n\n2 2:1 3:x\n1 1:1\n")
    with pytest.raises(CorruptFileError, match=r"bad\.svm: line 3 is not a LIBSVM line \(value 'x' of feature 3"):
        load_libsvm_file(str(bad))
    unsorted = tmp_path / "unsorted.svm"
    unsorted.write_text("1 1:1\n2 3:1 2:1\n")
    with pytest.raises(CorruptFileError, match=r"unsorted\.svm: line 2 .*indices must increase"):
        load_libsvm_file(str(unsorted))
    with pytest.raises(CorruptFileError, match="n_features is smaller than the largest feature index"):
        load_libsvm_file(str(_write(tmp_path / "d.svm")), n_features=3)


def test_libsvm_file_prepared_records_the_file(tmp_path):
    p = _write(tmp_path / "d.svm", (0, 1))
    ds = load_dataset(prepare_dataset("mine", {"source": "libsvm_file", "path": str(p)}, tmp_path / "mine"))
    np.testing.assert_array_equal(np.asarray(ds.x_train), DENSE)
    assert ds.meta["params"] == {"path": str(p), "test_path": None, "n_features": None, "test_fraction": 0.0,
                                 "split_seed": 0}
    import hashlib

    rec = ds.meta["raw_files"]["train"]
    assert rec["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest() and rec["size"] == p.stat().st_size


def _config_datasets(dcfg):
    from fedbench.config import datasets

    part = {"iid": {"scheme": "iid", "num_clients": 2}}
    exp = {"seeds": [0], "rounds": 1, "local": {"epochs": 1, "batch_size": 4, "lr": 0.1},
           "datasets": {"mine": {"model": "logreg", "partitions": part}}, "algorithms": {"fedavg": {}}}
    return datasets({"datasets": {"mine": dcfg}, "experiments": {"e": exp}})


def test_config_checks_libsvm_file_before_any_job(tmp_path, monkeypatch):
    from fedbench.config import ConfigError

    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "d.svm")
    (tmp_path / "dir").mkdir()
    got = _config_datasets({"source": "libsvm_file", "path": "d.svm"})["mine"]  # relative: against the cwd
    assert got == {"source": "libsvm_file", "path": "d.svm", "test_path": None, "n_features": None,
                   "test_fraction": 0.0, "split_seed": 0}
    for cfg, key, msg in [
        ({}, "path", "needs path"),
        ({"path": "nope.svm"}, "path", "nope.svm does not exist"),
        ({"path": "dir"}, "path", "is not a file"),
        ({"path": "d.svm", "test_path": "gone.svm"}, "test_path", "gone.svm does not exist"),
        ({"path": "d.svm", "n_features": 0}, "n_features", ">= 1"),
        ({"path": "d.svm", "test_fraction": 1.0}, "test_fraction", "< 1"),
        ({"path": "d.svm", "test_path": "d.svm", "test_fraction": 0.2}, "test_fraction", "not both"),
        ({"path": 3}, "path", "must be a file path"),
    ]:
        with pytest.raises(ConfigError, match=rf"^datasets\.mine\.{key}: .*{msg}"):
            _config_datasets({"source": "libsvm_file", **cfg})
