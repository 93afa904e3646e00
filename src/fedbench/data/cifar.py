"""CIFAR-10 and CIFAR-100 from the python pickle tarballs (Krizhevsky 2009).

``cifar-10-python.tar.gz`` holds ``cifar-10-batches-py/data_batch_1..5`` and ``test_batch``;
``cifar-100-python.tar.gz`` holds ``cifar-100-python/train`` and ``test``. Each is a pickled dict
(protocol 2, Python 2 strings, read with ``encoding="latin1"``) with ``data`` (n, 3072) uint8 —
the 1024 red, then green, then blue values of a 32x32 image, row-major — and ``labels``
(CIFAR-10) or ``fine_labels`` and ``coarse_labels`` (CIFAR-100, 100 and 20 classes).

The tarball is read as a stream (``tarfile`` mode ``r|gz``): one pass, no extraction, one batch
in memory at a time besides the result. Pickles are loaded with an allow-list unpickler (dicts,
lists, numpy arrays only), so a tampered archive cannot run code.

Returns x (n, 3, 32, 32) float32 (channels first), y int64; CIFAR-100 also ``y_coarse_*``.
50,000 train / 10,000 test images for the real files.
"""

from __future__ import annotations

import pickle
import tarfile
from pathlib import Path

import numpy as np

from fedbench.data.errors import CorruptFileError, reading
from fedbench.data.images import augmentation_record, check_normalize, normalize_images
from fedbench.data.store import Dataset

# FedDyn reference code (utils_dataset.py) per-channel statistics, in pixel/255 units.
CIFAR10_MEAN, CIFAR10_STD = [0.491, 0.482, 0.447], [0.247, 0.243, 0.262]
CIFAR100_MEAN, CIFAR100_STD = [0.507, 0.487, 0.441], [0.267, 0.256, 0.276]

_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("copy_reg", "_reconstructor"), ("copyreg", "_reconstructor"),
    ("__builtin__", "object"), ("builtins", "object"), ("_codecs", "encode"),
}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name} (not a plain CIFAR batch)")
        if module == "numpy.core.multiarray":
            module = "numpy._core.multiarray" if hasattr(np, "_core") else module
        return super().find_class(module, name)


def _unpickle(f) -> dict:
    d = _SafeUnpickler(f, encoding="latin1").load()
    if not isinstance(d, dict) or "data" not in d:
        raise ValueError("a CIFAR batch must be a dict with a 'data' entry")
    return d


def read_cifar_tar(path, variant: int) -> dict[str, dict[str, np.ndarray]]:
    """Stream a CIFAR python tarball.

    Args:
        path: ``cifar-10-python.tar.gz`` or ``cifar-100-python.tar.gz``.
        variant: 10 or 100.

    Returns:
        ``{"train": {...}, "test": {...}}``, each with ``x`` (n, 3, 32, 32) uint8, ``y`` (n,) int64
        and, for CIFAR-100, ``y_coarse`` (n,) int64. Train batches are concatenated in the order
        data_batch_1..5.

    Raises:
        CorruptFileError: truncated or corrupt archive, a missing batch, or a malformed batch.
    """
    path = Path(path)
    wanted = ({f"data_batch_{i}": ("train", i) for i in range(1, 6)} | {"test_batch": ("test", 0)}
              if variant == 10 else {"train": ("train", 0), "test": ("test", 0)})
    batches: dict[str, dict] = {}
    with reading(path, f"CIFAR-{variant} python tarball"):
        with tarfile.open(path, mode="r|*") as tar:
            for member in tar:
                base = member.name.rsplit("/", 1)[-1]
                if not member.isfile() or base not in wanted:
                    continue
                d = _unpickle(tar.extractfile(member))
                data = np.asarray(d["data"], dtype=np.uint8)
                if data.ndim != 2 or data.shape[1] != 3072:
                    raise ValueError(f"{member.name}: data has shape {data.shape}, expected (n, 3072)")
                entry = {"x": data.reshape(-1, 3, 32, 32)}
                if variant == 10:
                    entry["y"] = np.asarray(d["labels"], dtype=np.int64)
                else:
                    entry["y"] = np.asarray(d["fine_labels"], dtype=np.int64)
                    entry["y_coarse"] = np.asarray(d["coarse_labels"], dtype=np.int64)
                if any(len(v) != len(data) for v in entry.values()):
                    raise ValueError(f"{member.name}: labels and data differ in length")
                batches[base] = entry
    missing = sorted(set(wanted) - set(batches))
    if missing:
        raise CorruptFileError(f"{path.name}: missing batch(es) {', '.join(missing)}; the archive is truncated or "
                               f"not the CIFAR-{variant} python version: delete it and prepare again")
    out = {}
    for split in ("train", "test"):
        names = sorted((k for k, (s, _) in wanted.items() if s == split), key=lambda k: wanted[k][1])
        out[split] = {key: np.concatenate([batches[n][key] for n in names]) for key in batches[names[0]]}
    return out


def _load(paths, name, variant, normalize, mean, std, augment) -> Dataset:
    check_normalize(f"cifar{variant}", normalize, mean, std, 3)
    raw = read_cifar_tar(paths["archive"], variant)
    x_tr, x_te, norm = normalize_images(raw["train"]["x"], raw["test"]["x"], normalize, mean, std)
    return Dataset(
        name=name, x_train=x_tr, y_train=raw["train"]["y"], x_test=x_te, y_test=raw["test"]["y"],
        num_classes=variant,
        y_coarse_train=raw["train"].get("y_coarse"), y_coarse_test=raw["test"].get("y_coarse"),
        meta={"normalization": norm, "augmentation": augmentation_record(augment),
              **({"num_coarse_classes": 20} if variant == 100 else {})},
    )


def load_cifar10(paths: dict, name: str = "cifar10", normalize: str = "fixed", mean=CIFAR10_MEAN,
                 std=CIFAR10_STD, augment: bool = True) -> Dataset:
    """CIFAR-10 (``paths["archive"]``): x (n, 3, 32, 32) float32, y int64 in 0..9.

    ``augment`` records crop + flip in meta for the engine (see :mod:`fedbench.data.images`).
    """
    return _load(paths, name, 10, normalize, mean, std, augment)


def load_cifar100(paths: dict, name: str = "cifar100", normalize: str = "fixed", mean=CIFAR100_MEAN,
                  std=CIFAR100_STD, augment: bool = True) -> Dataset:
    """CIFAR-100: y = fine labels 0..99, ``y_coarse_*`` = the 20 super-classes (for Pachinko)."""
    return _load(paths, name, 100, normalize, mean, std, augment)
