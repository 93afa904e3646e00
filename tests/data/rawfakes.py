"""Miniature raw files in the real distribution formats, for the reader tests.

Each writer puts files under the registry's file names into a directory (used as ``mirror``) and
returns the arrays it wrote, so tests can compare what the reader prepared with the truth.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import pickle
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from fedbench.data.sources import REMOTE


def pin(monkeypatch, source: str, mirror: Path) -> None:
    """Point the registry's checksums for ``source`` at the miniature files in ``mirror`` (the pinned
    checksum replaces the LIBSVM row/feature counts, as a mirror's SHA256SUMS does)."""
    remote = REMOTE[source]
    files = {}
    for role, f in remote.files.items():
        p = mirror / f.name
        if p.exists():
            data = p.read_bytes()
            f = dataclasses.replace(f, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                                    md5=hashlib.md5(data).hexdigest(), rows=None, features=None)
        files[role] = f
    monkeypatch.setitem(REMOTE, source, dataclasses.replace(remote, files=files))


def idx_bytes(arr: np.ndarray) -> bytes:
    code = {np.uint8: 0x08, np.int32: 0x0C}[arr.dtype.type]
    head = bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return head + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def make_mnist(d: Path, n_train=50, n_test=20, seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        y = rng.integers(0, 10, n).astype(np.uint8)
        (d / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(x)))
        (d / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(y)))
        out[prefix] = (x, y)
    return out


def make_emnist_zip(d: Path, n_train=120, n_test=40, seed=0):
    """gzip.zip with the letters split (labels 1..26) and, as a distractor, the digits split."""
    rng = np.random.default_rng(seed)
    out = {}
    with zipfile.ZipFile(d / "gzip.zip", "w", compression=zipfile.ZIP_STORED) as zf:
        for split, lo, hi in (("letters", 1, 27), ("digits", 0, 10)):
            for part, n in (("train", n_train), ("test", n_test)):
                x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
                y = rng.integers(lo, hi, n).astype(np.uint8)
                zf.writestr(f"gzip/emnist-{split}-{part}-images-idx3-ubyte.gz", gzip.compress(idx_bytes(x)))
                zf.writestr(f"gzip/emnist-{split}-{part}-labels-idx1-ubyte.gz", gzip.compress(idx_bytes(y)))
                out[(split, part)] = (x, y)
    return out


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def make_cifar_tar(d: Path, variant: int, n_per_batch=8, seed=0):
    """The python tarball: dicts pickled with protocol 2, bytes keys decoded latin1 on read."""
    rng = np.random.default_rng(seed)
    fname = f"cifar-{variant}-python.tar.gz"
    top = "cifar-10-batches-py" if variant == 10 else "cifar-100-python"
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"] if variant == 10 else ["train", "test"]
    out = {}
    with tarfile.open(d / fname, "w:gz") as tar:
        _add(tar, f"{top}/batches.meta" if variant == 10 else f"{top}/meta", pickle.dumps({"label_names": []}, 2))
        for name in names:
            n = n_per_batch * (5 if variant == 100 and name == "train" else 1)
            data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
            if variant == 10:
                batch = {"batch_label": "x", "labels": rng.integers(0, 10, n).tolist(), "data": data}
            else:
                fine = rng.integers(0, 100, n)
                batch = {"fine_labels": fine.tolist(), "coarse_labels": (fine // 5).tolist(), "data": data}
            _add(tar, f"{top}/{name}", pickle.dumps(batch, protocol=2))
            out[name] = batch
    return out


def make_cinic_tar(d: Path, per_class=2, seed=0):
    from PIL import Image

    from fedbench.data.cinic import CLASSES

    rng = np.random.default_rng(seed)
    out = {}
    with tarfile.open(d / "CINIC-10.tar.gz", "w:gz") as tar:
        _add(tar, "README.md", b"CINIC-10\n")
        for split in ("test", "train", "valid"):  # not alphabetical order of the reader's output
            for c, cls in enumerate(CLASSES):
                for i in range(per_class):
                    arr = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
                    mode = "L" if (c == 3 and i == 0) else "RGB"  # a grayscale image, as CINIC has some
                    im = Image.fromarray(arr[:, :, 0] if mode == "L" else arr, mode)
                    buf = io.BytesIO()
                    im.save(buf, format="PNG")
                    _add(tar, f"{split}/{cls}/img-{i}.png", buf.getvalue())
                    out[(split, cls, i)] = np.asarray(im.convert("RGB"))
    return out


def make_tff(d: Path, kind: str, seed=0):
    """fed_emnist / fed_cifar100 tar.bz2 holding <kind>_train.h5 and <kind>_test.h5."""
    import h5py

    rng = np.random.default_rng(seed)
    out = {}
    with tarfile.open(d / f"{kind}.tar.bz2", "w:bz2") as tar:
        for split in ("train", "test"):
            buf = io.BytesIO()
            with h5py.File(buf, "w") as f:
                ex = f.create_group("examples")
                if kind == "fed_emnist":
                    clients = ["f0002_01", "f0000_14", "f0001_33"]
                else:
                    clients = [str(i) for i in range(12 if split == "train" else 3)]
                for cid in clients:
                    n = int(rng.integers(2, 5))
                    g = ex.create_group(cid)
                    if kind == "fed_emnist":
                        g["pixels"] = rng.random((n, 28, 28)).astype(np.float32)
                        g["label"] = rng.integers(0, 62, n).astype(np.int32)
                    else:
                        fine = rng.integers(0, 100, n)
                        g["image"] = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
                        g["label"] = fine.astype(np.int64)
                        g["coarse_label"] = (fine // 5).astype(np.int64)
                    out[(split, cid)] = {k: g[k][()] for k in g}
            _add(tar, f"{kind}_{split}.h5", buf.getvalue())
    return out


MODERN_PLAYS = """\ufeffThe Project Gutenberg eBook of The Complete Works of William Shakespeare

*** START OF THE PROJECT GUTENBERG EBOOK THE COMPLETE WORKS OF WILLIAM SHAKESPEARE ***
The Complete Works of William Shakespeare

by William Shakespeare

                    Contents

    THE SONNETS
    THE TRAGEDY OF ELSINORE
    THE COMEDY OF ILLYRIA



THE SONNETS

                    1

From fairest creatures we desire increase,
That thereby beauty’s rose might never die,



THE TRAGEDY OF ELSINORE



Contents

 ACT I
 Scene I. Elsinore. A platform before the Castle.
 Scene II. Elsinore. A room of state in the Castle.


Dramatis Personæ

HAMLET, Prince of Denmark.
THE GHOST.
BARNARDO.
FRANCISCO, a Soldier.

SCENE: Elsinore.



ACT I

SCENE I. Elsinore. A platform before the Castle.

 Enter Francisco and Barnardo, two sentinels.

BARNARDO.
Who’s there?

FRANCISCO.
Nay, answer me. Stand and unfold yourself.

BARNARDO.
Long live the King!

 [_Exit Francisco._]

SCENE II. Elsinore. A room of state in the Castle.

HAMLET.
[_Aside._] A little more than kin, and less than kind.
O that this too too solid flesh would melt,

LADY MACBETH.
Out, damned spot!

HAMLET. To be, or not to be.

 [_Exeunt._]



THE COMEDY OF ILLYRIA

Dramatis Personæ

ORSINO, Duke of Illyria.
SIR TOBY BELCH, Uncle to Olivia.

ACT I

SCENE I. An Apartment in the Duke’s Palace.

ORSINO.
If music be the food of love, play on;
[_Music._]
Give me excess of it,   that, surfeiting,

SIR TOBY.
What a plague means my niece?

 Exit.

THE END

*** END OF THE PROJECT GUTENBERG EBOOK THE COMPLETE WORKS OF WILLIAM SHAKESPEARE ***
Footer text that must be ignored.
"""

LEAF_PLAYS = """Header line skipped by LEAF

1603

THE TRAGEDY OF ELSINORE

by William Shakespeare

Dramatis Personae

  HAMLET, Prince of Denmark.

ACT I. SCENE I.
Elsinore. A platform before the Castle.

  Ber. Who's there?
  Fran. Nay, answer me. Stand and unfold
    yourself.
  Ber. Long live the King!
"""


def make_svmlight(d: Path, name: str, n: int, n_features: int, seed=0, bz2_compress=False):
    import bz2

    rng = np.random.default_rng(seed)
    x = np.where(rng.random((n, n_features)) < 0.3, rng.random((n, n_features)).round(3), 0.0)
    y = rng.choice([-1, 1], n)
    lines = []
    for i in range(n):
        feats = " ".join(f"{j + 1}:{x[i, j]:g}" for j in np.flatnonzero(x[i]))
        lines.append(f"{y[i]:+d} {feats}".rstrip())
    data = ("\n".join(lines) + "\n").encode()
    (d / name).write_bytes(bz2.compress(data) if bz2_compress else data)
    return x, y
