"""LIBSVM binary-classification datasets: a9a, epsilon, and any local file (``libsvm_file``).

Files (LIBSVM "binary" page): ``a9a`` (32,561 rows) and ``a9a.t`` (16,281), 123 binary features;
``epsilon_normalized.bz2`` (400,000) and ``epsilon_normalized.t.bz2`` (100,000), 2,000 features
(each feature standardised, then each row scaled to unit norm, by the LIBSVM maintainers).
Read with ``sklearn.datasets.load_svmlight_file`` (which decompresses ``.bz2``/``.gz`` on the fly
while parsing), with ``n_features`` fixed so train and test agree even when the last feature never
occurs in one file. The sparse matrix is densified in row chunks into a float32 array
(epsilon: 400,000 x 2,000 x 4 B = 3.2 GB; the FedAc reference code densifies too).

Verification: the LIBSVM page publishes no checksums, so these files are verified by the row
counts it states (``rows`` in :data:`fedbench.data.sources.REMOTE`), checked after parsing: a
file cut short exactly at a line end parses cleanly, and only its row count gives it away. The
feature count is an upper bound enforced while parsing (a9a.t's highest index is 122, not 123).
A mismatch raises :class:`~fedbench.data.errors.ChecksumError` naming every bad file with the
expected and the found counts. Files vouched for by a mirror's SHA256SUMS
(``trust_mirror_checksums``) or pinned by a checksum are not count-checked.

Labels {-1, +1} (or {0, 1}) become {0, 1}: class 1 = the positive label. FedAc (paper 001) uses
only the training file; the test file is kept as the test split.

Returns x (n, d) float32, y int64 in {0, 1}, no natural clients.

``libsvm_file`` (:func:`load_libsvm_file`): a user's own binary LIBSVM/svmlight file, read by the
same reader and densified the same way (x is stored dense, as a9a's is). Its two label values,
whatever they are ({-1, +1}, {0, 1}, {1, 2}, ...), map to 0 (the smaller) and 1 (the larger, the
"+1" class of the logistic loss); a file with more (or fewer) than two values is refused naming it
and its values. The test split is ``test_path``'s file, or ``test_fraction`` of the rows held out
(stratified, ``split_seed``), or none at all (``test_fraction`` 0, the default: FedAc (Yuan & Ma,
"Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, Section 5) reports the training
objective only; test metrics are then NaN). A malformed line is reported with its line number.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import math
from pathlib import Path

import numpy as np

from fedbench.data.errors import ChecksumError, CorruptFileError, DataUnavailableError, reading
from fedbench.data.sources import REMOTE
from fedbench.data.store import Dataset

NUM_FEATURES = {"a9a": 123, "epsilon": 2000}
CHUNK = 20000  # rows densified per step


def _dense(xs) -> np.ndarray:
    """A scipy sparse (n, d) matrix as a dense float32 array, densified CHUNK rows at a time."""
    x = np.empty(xs.shape, dtype=np.float32)
    for i in range(0, xs.shape[0], CHUNK):
        x[i:i + CHUNK] = xs[i:i + CHUNK].toarray()
    return x


def read_svmlight(path, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """(x (n, n_features) float32 dense, raw labels (n,) float64) of one svmlight file."""
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    with reading(path, "svmlight"):
        xs, y = load_svmlight_file(str(path), n_features=n_features, dtype=np.float32)
    return _dense(xs), y


def _binary(y: np.ndarray, path) -> np.ndarray:
    """Labels -1/+1 or 0/1 as int64 0/1.

    Raises:
        CorruptFileError: another label value; the message names ``file:line`` of its first row.
    """
    vals = set(np.unique(y).tolist())
    if not vals <= {-1.0, 1.0} and not vals <= {0.0, 1.0}:
        # the two classes: -1/+1 or 0/1, whichever holds more rows; the first row outside them is named
        allowed = max(({-1.0, 1.0}, {0.0, 1.0}), key=lambda a: int(np.isin(y, list(a)).sum()))
        row = int(np.flatnonzero(~np.isin(y, list(allowed)))[0])
        raise CorruptFileError(f"{_where(path, row)}: label {y[row]:g} is not binary (-1/+1 or 0/1); the file's "
                               f"labels are {_values(sorted(vals))}: fix or remove that line and prepare the dataset "
                               f"again")
    return (y > 0).astype(np.int64)


def data_line(path, row: int) -> int | None:
    """The 1-based line number of example ``row`` (0-based) of an svmlight file, counting as
    scikit-learn's reader does (blank and comment-only lines hold no example); None when the file
    cannot be read or has fewer examples."""
    try:
        with _open_text(Path(path)) as f:
            seen = -1
            for number, line in enumerate(f, start=1):
                if line.split("#", 1)[0].split():
                    seen += 1
                    if seen == row:
                        return number
    except (OSError, EOFError):
        return None
    return None


def _where(path, row: int) -> str:
    """``file:line`` of example ``row`` of an svmlight file (``file (example row+1)`` if not found)."""
    line = data_line(path, row)
    return f"{path}:{line}" if line is not None else f"{path} (example {row + 1})"


def check_rows(paths: dict, source: str, found: dict[str, int]) -> None:
    """Check each file's parsed row count against the registry's ``rows``.

    Args:
        paths: ``{role: path}``; when it is a :class:`~fedbench.data.download.FetchedFiles`, the
            counts of the entries it was verified against (``paths.remote``), else ``REMOTE[source]``.
        source: the registry source (``"a9a"`` or ``"epsilon"``).
        found: ``{role: rows parsed}``.

    Raises:
        ChecksumError: one message naming every file whose count differs, expected and found.
    """
    remote = getattr(paths, "remote", None) or REMOTE[source]
    bad = []
    for role, n in found.items():
        f = remote.files[role]
        if f.rows is not None and n != f.rows:
            bad.append(f"  - {f.name} ({paths[role]}): {n:,} rows, expected {f.rows:,} (LIBSVM's dataset page; "
                       f"{f.features} features)")
    if bad:
        raise ChecksumError(
            f"{source}: {len(bad)} file(s) failed verification by their known row counts (LIBSVM publishes no "
            f"checksums):\n" + "\n".join(bad) + "\nEach is truncated or not the file LIBSVM serves: delete it (or "
            f"replace it in the mirror) with a fresh download of {remote.files['train'].url.rsplit('/', 1)[0]}/"
            f"<name> and prepare the dataset again")


def load_libsvm(paths: dict, name: str, n_features: int, source: str | None = None) -> Dataset:
    """A LIBSVM binary dataset from ``paths["train"]`` and ``paths["test"]``.

    ``source`` (``"a9a"``/``"epsilon"``): check the files' row counts (:func:`check_rows`).
    """
    x_tr, y_tr = read_svmlight(paths["train"], n_features)
    x_te, y_te = read_svmlight(paths["test"], n_features)
    if source is not None:
        check_rows(paths, source, {"train": len(x_tr), "test": len(x_te)})
    return Dataset(name=name, x_train=x_tr, y_train=_binary(y_tr, paths["train"]), x_test=x_te,
                   y_test=_binary(y_te, paths["test"]), num_classes=2,
                   meta={"label_map": {"-1 or 0": 0, "+1": 1}})


def load_a9a(paths: dict, name: str = "a9a") -> Dataset:
    """a9a: x (n, 123) float32 in {0, 1}."""
    return load_libsvm(paths, name, NUM_FEATURES["a9a"], "a9a")


def load_epsilon(paths: dict, name: str = "epsilon") -> Dataset:
    """epsilon (normalized): x (n, 2000) float32, unit-norm rows."""
    return load_libsvm(paths, name, NUM_FEATURES["epsilon"], "epsilon")


# --------------------------------------------------------------------------------------------
# libsvm_file: a local binary LIBSVM file


class FileParamError(ValueError):
    """A ``libsvm_file`` parameter that cannot be used; ``key`` names it (for the config's key path)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def check_file_params(path, test_path=None, n_features=None, test_fraction=0.0, split_seed=0) -> None:
    """Check the parameters of a ``libsvm_file`` dataset before any job runs.

    Relative paths are taken relative to the current working directory (the directory Snakemake
    runs in).

    Raises:
        FileParamError: ``path`` missing, not a string or not an existing file; ``test_path`` the
            same (when given); ``n_features`` not an integer >= 1 (or null); ``test_fraction`` not
            in [0, 1), or > 0 together with a ``test_path``; ``split_seed`` not an integer >= 0.
            ``key`` names the parameter.
    """
    for key, p in (("path", path), ("test_path", test_path)):
        if p is None and key == "test_path":
            continue
        if p is None:
            raise FileParamError("path", "source 'libsvm_file' needs path: the local LIBSVM/svmlight file to read "
                                         "(relative to the directory Snakemake runs in)")
        if not isinstance(p, str) or not p:
            raise FileParamError(key, f"must be a file path (a string), got {p!r}")
        f = Path(p)
        if not f.exists():
            raise FileParamError(key, f"{p} does not exist (resolved against the working directory {Path.cwd()}); "
                                      f"give the path of an existing LIBSVM file")
        if not f.is_file():
            raise FileParamError(key, f"{p} is not a file; give the path of a LIBSVM file")
    if n_features is not None and (isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1):
        raise FileParamError("n_features", f"must be an integer >= 1, or null for the largest index in the files "
                                           f"(got {n_features!r})")
    if (isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float))
            or not 0 <= test_fraction < 1):
        raise FileParamError("test_fraction", f"must be a number in [0, 1) (got {test_fraction!r})")
    if test_path is not None and test_fraction > 0:
        raise FileParamError("test_fraction", f"give either test_path (a test file) or test_fraction (a share of "
                                              f"path held out), not both (got test_fraction={test_fraction!r})")
    if isinstance(split_seed, bool) or not isinstance(split_seed, int) or split_seed < 0:
        raise FileParamError("split_seed", f"must be an integer >= 0 (got {split_seed!r})")


def max_rows(path) -> int | None:
    """At most how many examples a plain svmlight file holds: its number of lines (blank and
    comment-only lines count too), read as bytes at about disk speed; None for a ``.gz``/``.bz2``
    file (it is not decompressed just to count) or a file that cannot be read."""
    path = Path(path)
    if path.suffix in (".gz", ".bz2"):
        return None
    lines, last = 0, b"\n"
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 24), b""):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        return None
    return lines + (last != b"\n")


def _open_text(path: Path):
    """A text reader of ``path``, decompressing ``.gz``/``.bz2`` as scikit-learn's reader does."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    if path.suffix == ".bz2":
        return bz2.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _line_problem(line: str) -> str | None:
    """Why one svmlight line cannot be parsed (``label [qid:q] idx:value ...``), or None."""
    tokens = line.split("#", 1)[0].split()
    if not tokens:
        return None
    try:
        float(tokens[0])
    except ValueError:
        return f"label {tokens[0]!r} is not a number"
    last = -1
    for tok in tokens[1:]:
        idx, sep, val = tok.partition(":")
        if idx == "qid" and sep:
            continue
        if not sep or not idx.isdigit():
            return f"{tok!r} is not index:value"
        try:
            float(val)
        except ValueError:
            return f"value {val!r} of feature {idx} is not a number"
        if int(idx) <= last:
            return f"feature indices must increase (index {idx} after {last})"
        last = int(idx)
    return None


def find_bad_line(path) -> tuple[int, str, str] | None:
    """The first line of an svmlight file that cannot be parsed: (1-based line number, the line,
    why), or None. Used only to name the line after scikit-learn's reader refused the file."""
    with _open_text(Path(path)) as f:
        for number, line in enumerate(f, start=1):
            why = _line_problem(line)
            if why is not None:
                return number, line.rstrip("\n")[:80], why
    return None


def _read_files(paths: list[Path], n_features: int | None) -> list:
    """[X (sparse, n_i x d), y (n_i,) float64, ...] of svmlight files read together (one column
    count d: ``n_features``, or the largest index of all files; indices one-based unless an index 0
    occurs in one of them: scikit-learn's ``zero_based="auto"``).

    Raises:
        CorruptFileError: a file cannot be parsed (the message names the file and, when found, the
            line number and why) or has an index above ``n_features``.
    """
    from sklearn.datasets import load_svmlight_files

    try:
        return load_svmlight_files([str(p) for p in paths], n_features=n_features, dtype=np.float32)
    except (ValueError, OSError, EOFError) as e:
        for p in paths:
            bad = find_bad_line(p)
            if bad is not None:
                number, line, why = bad
                raise CorruptFileError(f"{p}: line {number} is not a LIBSVM line ({why}): {line!r}; fix or remove "
                                       f"that line and prepare the dataset again") from e
        names = " / ".join(str(p) for p in paths)
        hint = (" (n_features is smaller than the largest feature index: raise it, or set it to null)"
                if n_features is not None and "n_features" in str(e) else "")
        raise CorruptFileError(f"{names}: cannot be read as LIBSVM/svmlight ({type(e).__name__}: {e}){hint}") from e


def binary_labels(labels: dict[Path, np.ndarray]) -> tuple[float, float]:
    """The two label values of a binary dataset's files, (smaller, larger): the smaller becomes
    class 0, the larger class 1 (the positive class, y = +1 of the logistic loss).

    Args:
        labels: ``{file: raw labels (n,) float64}`` (train and test files).

    Raises:
        CorruptFileError: more than two label values, in one file or in the files together: the
            message names ``file:line`` of the first row whose label is not one of the two most
            frequent values (ties: the first seen), and the values; or fewer than two values
            together (the files and values named).
    """
    seen: set[float] = set()
    for p, y in labels.items():
        vals = sorted(set(np.unique(y).tolist()))
        if len(vals) > 2:
            raise _third_label(labels, p, f"the file has {len(vals)} label values {_values(vals)}")
        seen |= set(vals)
    vals = sorted(seen)
    if len(vals) > 2:
        names = " and ".join(str(p) for p in labels)
        raise _third_label(labels, None, f"{names} have label values {_values(vals)} together")
    if len(vals) != 2:
        names = ", ".join(str(p) for p in labels)
        raise CorruptFileError(f"{names}: label values {_values(vals)} together; a binary dataset needs exactly two "
                               f"(e.g. -1/+1, 0/1, 1/2)")
    return vals[0], vals[1]


def _third_label(labels: dict[Path, np.ndarray], only: Path | None, what: str) -> CorruptFileError:
    """The error for a label beyond the two classes (the two most frequent values of the files,
    or of file ``only``), naming ``file:line`` of its first row."""
    files = [only] if only is not None else list(labels)
    y = np.concatenate([labels[p] for p in files])
    vals, first, counts = np.unique(y, return_index=True, return_counts=True)
    classes = vals[np.lexsort((first, -counts))[:2]]
    for p in files:
        rows = np.flatnonzero(~np.isin(labels[p], classes))
        if len(rows):
            row = int(rows[0])
            return CorruptFileError(
                f"{_where(p, row)}: label {labels[p][row]:g} is neither of the two classes "
                f"{_values(sorted(classes.tolist()))} ({what}; a binary dataset needs exactly two, e.g. -1/+1, 0/1, "
                f"1/2): fix or remove that line and prepare the dataset again")
    return CorruptFileError(f"{what}; a binary dataset needs exactly two (e.g. -1/+1, 0/1, 1/2)")


def _values(vals: list[float]) -> str:
    shown = ", ".join(f"{v:g}" for v in vals[:10])
    return "{" + shown + (", ..." if len(vals) > 10 else "") + "}"


def _file_record(path: Path) -> dict:
    """The identity of a local raw file for meta.json: its absolute path, size and sha256."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return {"path": str(path.absolute()), "size": path.stat().st_size, "sha256": h.hexdigest()}


def load_libsvm_file(path, test_path=None, n_features=None, test_fraction=0.0, split_seed=0,
                     name: str = "libsvm_file") -> Dataset:
    """A binary-classification dataset from a local LIBSVM/svmlight file (source ``libsvm_file``).

    Args:
        path: the training file (``.gz``/``.bz2`` decompressed while reading); relative to the
            working directory.
        test_path: a test file read with the same columns and label map, or None.
        n_features: the number of features d (a file with a larger index is refused), or None
            for the largest index seen in ``path`` and ``test_path``.
        test_fraction: without ``test_path``, the share of ``path``'s rows held out as the test
            split (stratified ``sklearn.model_selection.train_test_split``, ``split_seed``); 0 =
            no test split (x_test has shape (0, d); test metrics are NaN).
        split_seed: ``random_state`` of that split.
        name: the dataset id recorded in the Dataset.

    Returns:
        A Dataset with x (n, d) float32 (dense), y int64 in {0, 1} (the larger label value = 1),
        num_classes 2, no natural clients; meta records the label map and each file's path, size
        and sha256.

    Raises:
        DataUnavailableError: a file does not exist.
        FileParamError: as :func:`check_file_params`.
        CorruptFileError: a malformed line (file and line number named), an index above
            ``n_features``, not exactly two label values (file and values named), or a holdout
            split that cannot keep both classes in the train split.
    """
    _check_exist(path, test_path)
    check_file_params(path, test_path, n_features, test_fraction, split_seed)
    files = [Path(path)] + ([Path(test_path)] if test_path is not None else [])
    parts = _read_files(files, n_features)
    xs, ys = parts[0::2], parts[1::2]
    lo, hi = binary_labels(dict(zip(files, ys)))
    y_all = [(y == hi).astype(np.int64) for y in ys]
    x_tr, y_tr = _dense(xs[0]), y_all[0]
    if test_path is not None:
        x_te, y_te = _dense(xs[1]), y_all[1]
    elif test_fraction > 0:
        from sklearn.model_selection import train_test_split

        n_test = math.ceil(len(y_tr) * test_fraction)
        if min(np.bincount(y_tr, minlength=2)) < 2 or n_test < 2 or len(y_tr) - n_test < 2:
            raise CorruptFileError(f"{path}: {len(y_tr)} rows ({np.bincount(y_tr, minlength=2).tolist()} per class) "
                                   f"are too few to hold out test_fraction={test_fraction:g} stratified; lower it "
                                   f"to 0 or give a test_path")
        x_tr, x_te, y_tr, y_te = train_test_split(x_tr, y_tr, test_size=float(test_fraction),
                                                  random_state=int(split_seed), stratify=y_tr)
    else:
        x_te, y_te = np.zeros((0, x_tr.shape[1]), dtype=np.float32), np.zeros(0, dtype=np.int64)
    return Dataset(name=name, x_train=np.ascontiguousarray(x_tr), y_train=np.ascontiguousarray(y_tr),
                   x_test=np.ascontiguousarray(x_te), y_test=np.ascontiguousarray(y_te), num_classes=2,
                   meta={"label_map": {f"{lo:g}": 0, f"{hi:g}": 1},
                         "raw_files": {role: _file_record(p) for role, p in zip(("train", "test"), files)}})


def _check_exist(path, test_path) -> None:
    """Raise DataUnavailableError naming the first of the files that does not exist."""
    for key, p in (("path", path), ("test_path", test_path)):
        if p is not None and isinstance(p, str) and not Path(p).is_file():
            raise DataUnavailableError(f"{p} ({key} of source 'libsvm_file') does not exist or is not a file "
                                       f"(working directory {Path.cwd()}); give the path of a LIBSVM file")
