"""Benchmark: prepare CIFAR-10 from a python tarball of the real size (50,000 + 10,000 images).

Writes a synthetic ``cifar-10-python.tar.gz`` in the real layout (6 pickled batches of 10,000
random images, ~180 MB uncompressed; gzip level 1 since random pixels do not compress), serves it
as a local mirror with its own checksum, and times ``prepare_dataset`` (stream the tarball,
unpickle, normalise to float32, write the .npy files with their sha256) and a memory-mapped load.

Usage: ``python benchmarks/prepare_cifar10.py [workdir]`` (default: a temporary directory).
Prints one JSON line: seconds for each step and the peak RSS in MiB.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import pickle
import resource
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from fedbench.data.registry import prepare_dataset
from fedbench.data.sources import REMOTE
from fedbench.data.store import load_dataset


def write_archive(path: Path) -> None:
    rng = np.random.default_rng(0)
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
            batch = {"batch_label": name, "labels": rng.integers(0, 10, 10000).tolist(),
                     "data": rng.integers(0, 256, (10000, 3072), dtype=np.uint8),
                     "filenames": [f"img_{i}.png" for i in range(10000)]}
            data = pickle.dumps(batch, protocol=2)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def main(work: Path) -> dict:
    mirror = work / "mirror"
    mirror.mkdir(parents=True, exist_ok=True)
    archive = mirror / "cifar-10-python.tar.gz"
    t0 = time.perf_counter()
    write_archive(archive)
    t_gen = time.perf_counter() - t0
    blob = archive.read_bytes()
    f = REMOTE["cifar10"].files["archive"]
    REMOTE["cifar10"] = dataclasses.replace(REMOTE["cifar10"], files={"archive": dataclasses.replace(
        f, size=len(blob), sha256=hashlib.sha256(blob).hexdigest(), md5=None)})
    del blob
    t0 = time.perf_counter()
    out = prepare_dataset("cifar10", {"source": "cifar10"}, work / "datasets" / "cifar10", mirror=mirror,
                          progress=False)
    t_prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    ds = load_dataset(out)
    _ = float(ds.x_train[-1].sum())
    t_load = time.perf_counter() - t0
    return {"archive_bytes": archive.stat().st_size, "generate_s": round(t_gen, 1), "prepare_s": round(t_prep, 1),
            "mmap_load_s": round(t_load, 3), "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "x_train_shape": list(ds.x_train.shape)}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(json.dumps(main(Path(sys.argv[1]))))
    else:
        with tempfile.TemporaryDirectory() as d:
            print(json.dumps(main(Path(d))))
