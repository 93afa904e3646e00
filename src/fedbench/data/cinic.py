"""CINIC-10 (Darlow et al. 2018) from ``CINIC-10.tar.gz``: image folders of 32x32 PNGs.

Layout: ``{train,valid,test}/<class>/<file>.png``, optionally under a top directory, 90,000
images per split, the 10 CIFAR-10 classes (airplane, automobile, bird, cat, deer, dog, frog,
horse, ship, truck; label = index in that alphabetical order). The archive is streamed
(``tarfile`` mode ``r|*``) and each PNG decoded with Pillow as it passes (grayscale images are
converted to RGB). Images are sorted by (split, class, file name), so the arrays do not depend on
the archive's member order.

``train_splits`` / ``test_splits`` choose which folders form the train and test sets (default
train = ``["train"]``, test = ``["test"]``; ``["train", "valid"]`` gives the 180,000-image training
set some papers use). Normalisation defaults to the CINIC-10 statistics published with the dataset
(mean (0.47889522, 0.47227842, 0.43047404), std (0.24205776, 0.23828046, 0.25874835)).

Returns x (n, 3, 32, 32) float32, y int64 in 0..9, no natural clients.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np

from fedbench.data.errors import CorruptFileError, reading
from fedbench.data.images import augmentation_record, check_normalize, normalize_images
from fedbench.data.store import Dataset

CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
SPLITS = ("train", "valid", "test")
CINIC_MEAN = [0.47889522, 0.47227842, 0.43047404]
CINIC_STD = [0.24205776, 0.23828046, 0.25874835]


def read_cinic_tar(path, splits=SPLITS) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Decode the PNGs of ``splits`` from the archive.

    Returns:
        ``{split: (x (n, 3, 32, 32) uint8, y (n,) int64)}`` for each requested split.

    Raises:
        CorruptFileError: unreadable archive or image, an image that is not 32x32, or a requested
            split with no images.
    """
    from PIL import Image

    path = Path(path)
    found: dict[str, list] = {s: [] for s in splits}
    with reading(path, "CINIC-10 tar.gz of PNG folders"):
        with tarfile.open(path, mode="r|*") as tar:
            for member in tar:
                if not member.isfile() or not member.name.lower().endswith(".png"):
                    continue
                parts = member.name.split("/")
                if len(parts) < 3 or parts[-3] not in found or parts[-2] not in CLASSES:
                    continue
                with Image.open(io.BytesIO(tar.extractfile(member).read())) as im:
                    arr = np.asarray(im.convert("RGB"), dtype=np.uint8)
                if arr.shape != (32, 32, 3):
                    raise ValueError(f"{member.name}: image of shape {arr.shape}, expected 32x32 RGB")
                found[parts[-3]].append((CLASSES.index(parts[-2]), parts[-1], arr.transpose(2, 0, 1)))
    out = {}
    for split, items in found.items():
        if not items:
            raise CorruptFileError(f"{path.name}: no images under {split}/<class>/*.png; the archive is truncated "
                                   f"or not CINIC-10: delete it and prepare again")
        items.sort(key=lambda t: (t[0], t[1]))
        out[split] = (np.stack([t[2] for t in items]), np.array([t[0] for t in items], dtype=np.int64))
    return out


def check_cinic_splits(train_splits, test_splits) -> None:
    """Raises ValueError unless both are non-empty, disjoint lists of ``train``/``valid``/``test``."""
    for key, v in (("train_splits", train_splits), ("test_splits", test_splits)):
        if not isinstance(v, (list, tuple)) or not v or any(s not in SPLITS for s in v):
            raise ValueError(f"cinic10: {key} must be a non-empty list of {', '.join(SPLITS)}, got {v!r}")
    if set(train_splits) & set(test_splits):
        raise ValueError(f"cinic10: train_splits {train_splits} and test_splits {test_splits} overlap")


def load_cinic10(paths: dict, name: str = "cinic10", train_splits=("train",), test_splits=("test",),
                 normalize: str = "fixed", mean=CINIC_MEAN, std=CINIC_STD, augment: bool = True) -> Dataset:
    """CINIC-10 from ``paths["archive"]``; see the module docstring."""
    check_cinic_splits(train_splits, test_splits)
    check_normalize("cinic10", normalize, mean, std, 3)
    raw = read_cinic_tar(paths["archive"], tuple(train_splits) + tuple(test_splits))

    def cat(splits):
        return (np.concatenate([raw[s][0] for s in splits]), np.concatenate([raw[s][1] for s in splits]))

    (x_tr, y_tr), (x_te, y_te) = cat(train_splits), cat(test_splits)
    x_tr, x_te, norm = normalize_images(x_tr, x_te, normalize, mean, std)
    return Dataset(name=name, x_train=x_tr, y_train=y_tr, x_test=x_te, y_test=y_te, num_classes=10,
                   meta={"normalization": norm, "augmentation": augmentation_record(augment)})
