"""MNIST and EMNIST from their IDX files (LeCun's format), gzip-compressed.

IDX: 2 zero bytes, a type byte (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
0x0E float64), the number of dimensions, then each dimension as a big-endian uint32, then the
data, big-endian, row-major. MNIST: ``train-images-idx3-ubyte.gz`` (60000, 28, 28) uint8 and
``train-labels-idx1-ubyte.gz`` (60000,) uint8, ``t10k-*`` for the 10,000 test images.

EMNIST (Cohen et al. 2017) ships all splits in one ``gzip.zip`` holding
``gzip/emnist-<split>-{train,test}-{images-idx3,labels-idx1}-ubyte.gz``; we read the members of one
split straight from the zip (no extraction). The EMNIST images are stored transposed relative to
MNIST; ``transpose=True`` (default) flips them upright. ``letters`` labels run 1..26 (a..z) and are
shifted to 0..25. ``num_classes=k`` keeps only the samples of the first k classes: EMNIST-L of
FedDyn / FedElasticNet is ``split="letters", num_classes=10`` (a..j: 48,000 train / 8,000 test),
standardised with the training mean and std (``normalize="train"``).

Both builders return images (n, 1, 28, 28) float32, labels int64, no natural clients.
"""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import numpy as np

from fedbench.data.errors import CorruptFileError, reading
from fedbench.data.images import check_normalize, normalize_images
from fedbench.data.store import Dataset

_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
EMNIST_SPLITS = {"letters": 26, "digits": 10, "mnist": 10, "balanced": 47, "byclass": 62, "bymerge": 47}


def read_idx(f) -> np.ndarray:
    """Read one IDX array from a binary stream (already decompressed).

    Returns:
        The array in native byte order with the dtype of the header.

    Raises:
        ValueError: bad magic, unknown type code, or fewer data bytes than the header promises.
    """
    head = f.read(4)
    if len(head) != 4 or head[0] != 0 or head[1] != 0 or head[2] not in _DTYPES:
        raise ValueError(f"not an IDX file (magic bytes {head!r})")
    ndim = head[3]
    dims = np.frombuffer(f.read(4 * ndim), dtype=">u4")
    if len(dims) != ndim:
        raise ValueError("IDX header truncated")
    dtype = np.dtype(_DTYPES[head[2]])
    count = int(np.prod(dims, dtype=np.int64))
    buf = f.read(count * dtype.itemsize)
    if len(buf) != count * dtype.itemsize:
        raise ValueError(f"IDX data truncated: {len(buf)} of {count * dtype.itemsize} bytes")
    return np.frombuffer(buf, dtype=dtype).reshape(tuple(int(d) for d in dims)).astype(dtype.newbyteorder("="))


def read_idx_to_end(f) -> np.ndarray:
    """:func:`read_idx`, then read the stream to its end, so gzip/zip check their CRC and length
    (a truncated archive fails here even when the array itself was complete).

    Raises:
        ValueError: as read_idx, or bytes left after the array.
        EOFError / gzip.BadGzipFile / zipfile.BadZipFile: a truncated or corrupt container.
    """
    arr = read_idx(f)
    extra = 0
    for chunk in iter(lambda: f.read(1 << 20), b""):
        extra += len(chunk)
    if extra:
        raise ValueError(f"{extra} bytes after the IDX array")
    return arr


def read_idx_file(path) -> np.ndarray:
    """Read an IDX file, gzip-compressed or not; errors name the file (CorruptFileError)."""
    path = Path(path)
    with reading(path, "IDX"):
        with open(path, "rb") as raw:
            magic = raw.read(2)
            raw.seek(0)
            f = gzip.GzipFile(fileobj=raw) if magic == b"\x1f\x8b" else raw
            return read_idx_to_end(f)


def _images_labels(images: np.ndarray, labels: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise CorruptFileError(f"{what}: images {images.shape} and labels {labels.shape} do not pair up")
    return images[:, None, :, :].astype(np.uint8), labels.astype(np.int64)


def load_mnist(paths: dict, name: str = "mnist", normalize: str = "fixed",
               mean=(0.1307,), std=(0.3081,)) -> Dataset:
    """MNIST from the four IDX gz files.

    Args:
        paths: ``{"train_images", "train_labels", "test_images", "test_labels": path}``.
        normalize, mean, std: see :mod:`fedbench.data.images` (default FedDyn's (0.1307, 0.3081)).

    Returns:
        x (n, 1, 28, 28) float32, y int64 in 0..9; 60,000 / 10,000 for the real files.
    """
    check_normalize("mnist", normalize, mean, std, 1)
    x_tr, y_tr = _images_labels(
        read_idx_file(paths["train_images"]), read_idx_file(paths["train_labels"]), "mnist train"
    )
    x_te, y_te = _images_labels(read_idx_file(paths["test_images"]), read_idx_file(paths["test_labels"]), "mnist test")
    x_tr, x_te, norm = normalize_images(x_tr, x_te, normalize, mean, std)
    return Dataset(name=name, x_train=x_tr, y_train=y_tr, x_test=x_te, y_test=y_te, num_classes=10,
                   meta={"normalization": norm})


def _zip_member(zf: zipfile.ZipFile, suffix: str) -> str:
    for n in zf.namelist():
        if n.endswith(suffix):
            return n
    raise KeyError(f"no member ending in {suffix!r}")


def load_emnist(paths: dict, name: str = "emnist", split: str = "letters", num_classes: int | None = 10,
                transpose: bool = True, normalize: str = "train", mean=None, std=None) -> Dataset:
    """One EMNIST split from NIST's ``gzip.zip``.

    Args:
        paths: ``{"archive": path of gzip.zip}``.
        split: one of :data:`EMNIST_SPLITS`.
        num_classes: keep the first k classes (labels 0..k-1 after the letters shift), or None for
            all of the split's classes.
        transpose: flip the images upright (EMNIST stores them transposed).
        normalize, mean, std: see :mod:`fedbench.data.images` (default: train mean/std, FedDyn).

    Returns:
        x (n, 1, 28, 28) float32, y int64 in 0..k-1.
    """
    check_emnist_params(split, num_classes)
    check_normalize("emnist", normalize, mean, std, 1)
    archive = Path(paths["archive"])
    out = {}
    with reading(archive, "EMNIST gzip.zip"):
        with zipfile.ZipFile(archive) as zf:
            for part in ("train", "test"):
                arrays = []
                for kind in ("images-idx3", "labels-idx1"):
                    member = _zip_member(zf, f"emnist-{split}-{part}-{kind}-ubyte.gz")
                    with zf.open(member) as m, gzip.GzipFile(fileobj=io.BufferedReader(m)) as g:
                        arrays.append(read_idx_to_end(g))
                out[part] = _images_labels(*arrays, f"emnist-{split}-{part}")
    k = num_classes if num_classes is not None else EMNIST_SPLITS[split]
    splits = {}
    for part, (x, y) in out.items():
        if split == "letters":
            y = y - 1
        keep = (y >= 0) & (y < k)
        x, y = x[keep], y[keep]
        if transpose:
            x = np.ascontiguousarray(x.transpose(0, 1, 3, 2))
        splits[part] = (x, y)
    x_tr, x_te, norm = normalize_images(splits["train"][0], splits["test"][0], normalize, mean, std)
    return Dataset(name=name, x_train=x_tr, y_train=splits["train"][1], x_test=x_te, y_test=splits["test"][1],
                   num_classes=int(k), meta={"normalization": norm})


def check_emnist_params(split, num_classes) -> None:
    """Raises ValueError for an unknown split or num_classes outside 1..(classes of the split)."""
    if split not in EMNIST_SPLITS:
        raise ValueError(f"emnist: split must be one of {', '.join(EMNIST_SPLITS)}, got {split!r}")
    top = EMNIST_SPLITS[split]
    if num_classes is not None and (not isinstance(num_classes, int) or isinstance(num_classes, bool)
                                    or not 1 <= num_classes <= top):
        raise ValueError(f"emnist: num_classes must be null or an integer in 1..{top} for split {split!r}, "
                         f"got {num_classes!r} (EMNIST-L: 10)")
