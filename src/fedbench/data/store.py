"""The one on-disk format every prepared dataset shares.

``resources/datasets/<id>-<digest>/`` (fedbench.layout) holds plain NumPy arrays and a JSON manifest:

====================  ==========================================  =========================
file                  shape / dtype                               meaning
====================  ==========================================  =========================
x_train.npy           (n_train, *feature_shape) float32           inputs (already scaled)
y_train.npy           (n_train,) int64                            class labels 0..C-1
x_test.npy            (n_test, *feature_shape) float32
y_test.npy            (n_test,) int64
client_train.npy      (n_train,) int64, optional                  natural client id per sample
client_test.npy       (n_test,) int64, optional
y_coarse_train.npy    (n_train,) int64, optional                  coarse (super-class) labels,
y_coarse_test.npy     (n_test,) int64, optional                   e.g. CIFAR-100's 20 classes
meta.json             {name, num_classes, feature_shape, n_train, n_test, source, params,
                       files: {file: sha256}, sizes: {file: bytes}}
====================  ==========================================  =========================

Images are stored channels-first, (n, C, H, W). ``x`` is float32 unless the dataset asks for an
integer dtype (``write_dataset(..., x_dtype="uint8")``, e.g. Shakespeare's character ids 0..79,
which would take 4x the disk as float32); meta.json then records ``x_dtype``. Arrays are loaded
memory-mapped, so a large dataset costs no RAM until it is indexed. ``write_dataset`` writes into a temporary sibling
directory and renames it into place, so a half-written dataset never looks prepared.

Damage found later (a file truncated by a full disk, changed or removed): :func:`load_dataset`
checks every file's size before loading it (a stat; for a meta.json written before sizes were
recorded, the size the file's own .npy header implies), and, when a read fails all the same, its
sha256 against meta.json. A damaged file raises :class:`~fedbench.data.errors.DamagedFileError`
naming it, what is wrong and the fix; a file whose sha256 differs is renamed to ``<file>.damaged``,
so that the next run's size check (:func:`fedbench.integrity.verify_folder`, before any job) finds
it missing and re-makes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fedbench.data.errors import DamagedFileError, damaged
from fedbench.filecheck import npy_problem, set_aside, sha256_of
from fedbench.files import atomic_write

ARRAYS = ("x_train", "y_train", "x_test", "y_test")
OPTIONAL_ARRAYS = ("client_train", "client_test", "y_coarse_train", "y_coarse_test")
X_DTYPES = ("float32", "float64", "uint8", "int16", "int32", "int64")


@dataclass(frozen=True)
class Dataset:
    """A prepared, labelled dataset with a fixed train/test split.

    Attributes:
        name: dataset id, e.g. ``"digits"``.
        x_train: (n_train, *feature_shape) float32 inputs.
        y_train: (n_train,) int64 labels in [0, num_classes).
        x_test: (n_test, *feature_shape) float32.
        y_test: (n_test,) int64.
        num_classes: C.
        client_train: (n_train,) int64 natural client ids, or None when the dataset has none.
        client_test: (n_test,) int64 natural client ids of the test samples, or None.
        meta: the manifest (source, generator parameters, checksums).
        y_coarse_train: (n_train,) int64 coarse labels (CIFAR-100's 20 super-classes), or None.
        y_coarse_test: (n_test,) int64 coarse labels of the test samples, or None.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    client_train: np.ndarray | None = None
    client_test: np.ndarray | None = None
    meta: dict = field(default_factory=dict)
    y_coarse_train: np.ndarray | None = None
    y_coarse_test: np.ndarray | None = None

    @property
    def feature_shape(self) -> tuple[int, ...]:
        """Shape of one input, e.g. (64,) for flattened digits or (1, 8, 8) as images."""
        return tuple(self.x_train.shape[1:])

    @property
    def has_natural_clients(self) -> bool:
        return self.client_train is not None


_sha256 = sha256_of

#: What a message about a damaged dataset file advises: the workflow re-makes the file before any job.
RERUN_FIX = ("rerun the same snakemake command: before any job it re-makes the file from the dataset's source "
             "(fedbench.integrity.verify_folder)")


def remake_fix(directory: str | os.PathLike) -> str:
    """The fix when a dataset file cannot be re-made alone: prepare the whole directory again."""
    return (f"`rm -r {directory}`, then rerun the same snakemake command (it prepares the dataset again and "
            f"retrains the cells that use it)")


def file_problems(directory: str | os.PathLike, meta: dict) -> dict[str, str]:
    """The files of a prepared dataset that are damaged, by a cheap check (a stat, .npy headers).

    Args:
        directory: the dataset directory.
        meta: its meta.json. Each file of ``meta["files"]`` must have the size ``meta["sizes"]``
            records; for a meta.json written before sizes were recorded, the size the file's .npy
            header implies.

    Returns:
        ``{file name: what is wrong}``, e.g. ``{"x_train.npy": "is 1,000 bytes, meta.json records
        46,080 (truncated)"}``; empty when every file looks whole.
    """
    directory, sizes = Path(directory), meta.get("sizes", {})
    out = {}
    for fname in meta.get("files", {}):
        problem = npy_problem(directory / fname, sizes.get(fname))
        if problem is not None:
            out[fname] = problem
    return out


def _check(ds: Dataset) -> None:
    for split in ("train", "test"):
        x, y = getattr(ds, f"x_{split}"), getattr(ds, f"y_{split}")
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"dataset {ds.name!r}: x_{split} has {x.shape[0]} rows but y_{split} has {y.shape[0]}")
        if y.size and (y.min() < 0 or y.max() >= ds.num_classes):
            raise ValueError(f"dataset {ds.name!r}: y_{split} labels must lie in [0, {ds.num_classes})")
        for key in (f"client_{split}", f"y_coarse_{split}"):
            c = getattr(ds, key)
            if c is not None and c.shape[0] != y.shape[0]:
                raise ValueError(f"dataset {ds.name!r}: {key} has {c.shape[0]} rows, expected {y.shape[0]}")


def write_dataset(
    directory: str | os.PathLike, ds: Dataset, source: str = "", params: dict | None = None, x_dtype: str = "float32"
) -> Path:
    """Write ``ds`` to ``directory`` atomically (temporary sibling, then rename).

    Args:
        directory: target, e.g. ``resources/datasets/digits``. Replaced if it exists.
        ds: the dataset; arrays are cast to float32 (x) and int64 (y, client ids).
        source: where the data came from (URL, generator name), recorded in meta.json.
        params: generator or preparation parameters, recorded in meta.json.
        x_dtype: dtype of the stored inputs, one of :data:`X_DTYPES`; ``"float32"`` (default) for
            scaled features, an integer dtype for token ids. Integer inputs must fit the dtype.

    Returns:
        The directory path.

    Raises:
        ValueError: if array lengths disagree, labels fall outside [0, num_classes), or x_dtype is
            not one of :data:`X_DTYPES`.
    """
    _check(ds)
    if x_dtype not in X_DTYPES:
        raise ValueError(f"write_dataset: x_dtype must be one of {', '.join(X_DTYPES)}, got {x_dtype!r}")
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(directory) as tmp:
        tmp.mkdir()
        arrays = {
            "x_train": np.asarray(ds.x_train, dtype=x_dtype),
            "y_train": np.asarray(ds.y_train, dtype=np.int64),
            "x_test": np.asarray(ds.x_test, dtype=x_dtype),
            "y_test": np.asarray(ds.y_test, dtype=np.int64),
        }
        if ds.client_train is not None:
            arrays["client_train"] = np.asarray(ds.client_train, dtype=np.int64)
        if ds.client_test is not None:
            arrays["client_test"] = np.asarray(ds.client_test, dtype=np.int64)
        for key in ("y_coarse_train", "y_coarse_test"):
            if getattr(ds, key) is not None:
                arrays[key] = np.asarray(getattr(ds, key), dtype=np.int64)
        files, sizes = {}, {}
        for key, arr in arrays.items():
            np.save(tmp / f"{key}.npy", arr)
            files[f"{key}.npy"] = _sha256(tmp / f"{key}.npy")
            sizes[f"{key}.npy"] = (tmp / f"{key}.npy").stat().st_size
        meta = {
            **ds.meta,
            "name": ds.name,
            "num_classes": int(ds.num_classes),
            "feature_shape": list(arrays["x_train"].shape[1:]),
            "n_train": int(arrays["x_train"].shape[0]),
            "n_test": int(arrays["x_test"].shape[0]),
            "natural_clients": ds.client_train is not None,
            "x_dtype": x_dtype,
            "source": source or ds.meta.get("source", ""),
            "params": params if params is not None else ds.meta.get("params", {}),
            "files": files,
            "sizes": sizes,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return directory


def load_dataset(directory: str | os.PathLike, mmap: bool = True, verify: bool = False) -> Dataset:
    """Load a dataset written by :func:`write_dataset`.

    Every file's size is checked first (:func:`file_problems`: a stat, or for an old meta.json
    without sizes the .npy header). A file that still cannot be read has its sha256 compared with
    meta.json; when it differs, the file is renamed to ``<file>.damaged`` (kept for inspection),
    and the next run re-makes it.

    Args:
        directory: e.g. ``resources/datasets/digits``.
        mmap: memory-map the arrays (read-only) instead of reading them into RAM.
        verify: recompute every file's sha256 and compare it with meta.json (a mismatch is set
            aside as above).

    Raises:
        FileNotFoundError: the directory or its meta.json is missing (prepare the dataset first).
        fedbench.data.errors.DamagedFileError (a ValueError): meta.json is not valid JSON, or a
            file is missing, has another size than meta.json records or another sha256. One
            message names every damaged file, what is wrong and the fix.
    """
    directory = Path(directory)
    meta_path = directory / "meta.json"
    if not meta_path.exists():
        raise FileNotFoundError(
            f"{meta_path} not found: dataset {directory.name!r} is not prepared; "
            f"run `snakemake --cores 1 {meta_path}` to prepare it"
        )
    try:
        meta = json.loads(meta_path.read_text())
    except ValueError as e:
        raise damaged(meta_path, f"is not valid JSON ({e})", f"fix: {remake_fix(directory)}") from None
    bad = file_problems(directory, meta)
    if verify:
        for fname in meta.get("files", {}):
            if fname not in bad:
                problem = _checksum_problem(directory / fname, meta)
                if problem is not None:
                    bad[fname] = problem
    if bad:
        raise _damaged_files(directory, bad)
    mode = "r" if mmap else None
    arrays = {}
    for key in ARRAYS + OPTIONAL_ARRAYS:
        path = directory / f"{key}.npy"
        if not path.exists():
            if key in ARRAYS:
                raise FileNotFoundError(f"{path} is missing: delete {directory} and prepare the dataset again")
            arrays[key] = None
            continue
        try:
            arrays[key] = np.load(path, mmap_mode=mode)
        except (ValueError, OSError, EOFError) as e:
            problem = _checksum_problem(path, meta)
            if problem is None:  # the file is as written: not damage
                raise
            raise _damaged_files(directory, {path.name: f"cannot be read ({type(e).__name__}: {e}) and {problem}"}
                                 ) from None
    return Dataset(name=meta["name"], num_classes=int(meta["num_classes"]), meta=meta, **arrays)


def _checksum_problem(path: Path, meta: dict) -> str | None:
    """Compare ``path``'s sha256 with meta.json's; on a mismatch set the file aside and say so."""
    digest = meta.get("files", {}).get(path.name)
    if digest is None:
        return None
    got = sha256_of(path)
    if got == digest:
        return None
    aside = set_aside(path)
    return (f"its sha256 {got[:12]}… differs from meta.json's {digest[:12]}… (changed bytes); set aside as "
            f"{aside.name}")


def _damaged_files(directory: Path, bad: dict[str, str]) -> DamagedFileError:
    """One error for the damaged files ``{name: problem}`` of a dataset directory."""
    lines = [f"{directory / f}: {problem}" for f, problem in bad.items()]
    return DamagedFileError(
        "\n".join(lines) + f"\nfix: {RERUN_FIX}; where it cannot, {remake_fix(directory)}",
        [directory / f for f in bad])
