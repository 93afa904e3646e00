"""Fed-EMNIST and Fed-CIFAR100 from TensorFlow Federated's HDF5 files (natural clients).

The archives ``fed_emnist.tar.bz2`` and ``fed_cifar100.tar.bz2`` each hold two HDF5 files,
``<name>_train.h5`` and ``<name>_test.h5``, laid out as ``examples/<client_id>/<feature>``:

* Fed-EMNIST (LEAF's by-writer EMNIST, Caldas et al. 2018): ``pixels`` (n, 28, 28) float32 with
  **1.0 = background, 0.0 = ink** (inverted relative to MNIST), ``label`` (n,) int32 in 0..61
  (digits, upper case, lower case). 3,400 writers; each writer has train and test examples, so
  test samples keep their writer's client id (671,585 train / 77,483 test examples).
* Fed-CIFAR100 (Reddi et al. 2021, Pachinko allocation of CIFAR-100): ``image`` (n, 32, 32, 3)
  uint8, ``label`` (n,) int64 fine label, ``coarse_label`` (n,) int64. 500 train clients and 100
  *different* test clients of 100 images each. Train clients get ids 0..499; test clients get ids
  500..599, so the ``natural`` partitioner (which drops clients without train data) evaluates on the
  global test split, as the paper does.

Each HDF5 file is extracted from the bz2 tar stream to a temporary file (h5py needs a seekable
file), read client by client, and deleted. Clients are numbered in sorted order of their TFF id
(numerically when all ids are integers); ``meta["client_names"]`` maps id -> TFF name (train
clients), ``meta["test_client_names"]`` the test clients of Fed-CIFAR100.

Returns Fed-EMNIST x (n, 1, 28, 28) float32 as stored (``invert=True`` gives 1 - x, ink = 1),
y int64 in 0..61; Fed-CIFAR100 x (n, 3, 32, 32) float32 normalised as CIFAR-100, y in 0..99,
``y_coarse_*`` in 0..19.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from fedbench.data.cifar import CIFAR100_MEAN, CIFAR100_STD
from fedbench.data.errors import CorruptFileError, reading
from fedbench.data.images import augmentation_record, check_normalize, normalize_images
from fedbench.data.store import Dataset


def _extract_h5(archive: Path, stems: tuple[str, ...], tmpdir: Path) -> dict[str, Path]:
    """Stream the archive and copy members named ``<stem>.h5`` into tmpdir."""
    out = {}
    with tarfile.open(archive, mode="r|*") as tar:
        for member in tar:
            base = member.name.rsplit("/", 1)[-1]
            if member.isfile() and base.endswith(".h5") and base[:-3] in stems:
                dest = tmpdir / base
                with tar.extractfile(member) as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                out[base[:-3]] = dest
    missing = [s for s in stems if s not in out]
    if missing:
        raise KeyError(f"archive has no member {', '.join(s + '.h5' for s in missing)}")
    return out


def _sorted_ids(names) -> list[str]:
    names = list(names)
    return sorted(names, key=int) if all(n.isdigit() for n in names) else sorted(names)


def read_tff_h5(path, features: tuple[str, ...]) -> tuple[list[str], dict[str, list[np.ndarray]]]:
    """Read ``examples/<client>/<feature>`` for every client of one TFF HDF5 file.

    Returns:
        (client names in sorted order, {feature: [array per client, same order]}).

    Raises:
        KeyError/OSError (wrapped by the caller): no ``examples`` group or a missing feature.
    """
    import h5py

    with h5py.File(path, "r") as f:
        if "examples" not in f:
            raise KeyError(f"{Path(path).name} has no 'examples' group")
        ex = f["examples"]
        names = _sorted_ids(ex.keys())
        cols: dict[str, list[np.ndarray]] = {k: [] for k in features}
        for n in names:
            for k in features:
                cols[k].append(np.asarray(ex[n][k][()]))
    return names, cols


def _read_pair(archive, prefix: str, features: tuple[str, ...]):
    archive = Path(archive)
    with reading(archive, "TFF HDF5 tar.bz2"), tempfile.TemporaryDirectory(prefix="fedbench-tff-") as tmp:
        files = _extract_h5(archive, (f"{prefix}_train", f"{prefix}_test"), Path(tmp))
        return {split: read_tff_h5(files[f"{prefix}_{split}"], features) for split in ("train", "test")}


def _client_column(names: list[str], counts: list[int], ids: dict[str, int]) -> np.ndarray:
    return np.repeat(np.array([ids[n] for n in names], dtype=np.int64), counts)


def load_fed_emnist(paths: dict, name: str = "fed_emnist", invert: bool = False) -> Dataset:
    """Fed-EMNIST with its 3,400 writers as natural clients (see the module docstring)."""
    if not isinstance(invert, bool):
        raise ValueError(f"fed_emnist: invert must be true or false, got {invert!r}")
    data = _read_pair(paths["archive"], "fed_emnist", ("pixels", "label"))
    all_names = _sorted_ids(set(data["train"][0]) | set(data["test"][0]))
    ids = {n: i for i, n in enumerate(all_names)}
    out = {}
    for split, (names, cols) in data.items():
        if not names:
            raise CorruptFileError(f"fed_emnist_{split}.h5: no clients")
        x = np.concatenate(cols["pixels"]).astype(np.float32)[:, None, :, :]
        if x.shape[1:] != (1, 28, 28):
            raise CorruptFileError(f"fed_emnist_{split}.h5: pixels of shape {x.shape[1:]}, expected 28x28")
        out[split] = (1.0 - x if invert else x, np.concatenate(cols["label"]).astype(np.int64),
                      _client_column(names, [len(a) for a in cols["label"]], ids))
    return Dataset(
        name=name, x_train=out["train"][0], y_train=out["train"][1], x_test=out["test"][0], y_test=out["test"][1],
        num_classes=62, client_train=out["train"][2], client_test=out["test"][2],
        meta={"client_names": all_names, "normalization": {"mode": "none", "inverted": invert,
                                                             "background": 0.0 if invert else 1.0}},
    )


def load_fed_cifar100(paths: dict, name: str = "fed_cifar100", normalize: str = "fixed", mean=CIFAR100_MEAN,
                      std=CIFAR100_STD, augment: bool = True) -> Dataset:
    """Fed-CIFAR100: 500 train clients (ids 0..499), 100 test clients (ids 500..599)."""
    check_normalize("fed_cifar100", normalize, mean, std, 3)
    data = _read_pair(paths["archive"], "fed_cifar100", ("image", "label", "coarse_label"))
    arrays, names_by_split = {}, {}
    offset = 0
    for split, (names, cols) in data.items():
        if not names:
            raise CorruptFileError(f"fed_cifar100_{split}.h5: no clients")
        x = np.concatenate(cols["image"]).astype(np.uint8)
        if x.shape[1:] != (32, 32, 3):
            raise CorruptFileError(f"fed_cifar100_{split}.h5: images of shape {x.shape[1:]}, expected 32x32x3")
        ids = {n: offset + i for i, n in enumerate(names)}
        arrays[split] = (np.ascontiguousarray(x.transpose(0, 3, 1, 2)), np.concatenate(cols["label"]).astype(np.int64),
                         np.concatenate(cols["coarse_label"]).astype(np.int64),
                         _client_column(names, [len(a) for a in cols["label"]], ids))
        names_by_split[split] = names
        offset += len(names)
    x_tr, x_te, norm = normalize_images(arrays["train"][0], arrays["test"][0], normalize, mean, std)
    return Dataset(
        name=name, x_train=x_tr, y_train=arrays["train"][1], x_test=x_te, y_test=arrays["test"][1],
        num_classes=100, client_train=arrays["train"][3], client_test=arrays["test"][3],
        y_coarse_train=arrays["train"][2], y_coarse_test=arrays["test"][2],
        meta={"client_names": names_by_split["train"], "test_client_names": names_by_split["test"],
              "test_client_offset": len(names_by_split["train"]), "num_coarse_classes": 20,
              "normalization": norm, "augmentation": augmentation_record(augment)},
    )
