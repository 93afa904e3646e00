"""The workflow on the papers' real dataset formats, served from a local mirror (no network).

Miniature raw files in the real formats (MNIST IDX gzip, the CIFAR-10 python tarball; written by
tests/data/rawfakes.py) go into a mirror directory with a SHA256SUMS file; the config points
``data.mirror`` at it and sets ``data.trust_mirror_checksums`` (the registry's checksums are those
of the real, full-size files). Then:

- the whole pipeline runs to the tables (MNIST: Dirichlet partition + logreg; CIFAR-10: a small
  CNN with the FedDyn training augmentation that CIFAR-10 prepares by default);
- without trust_mirror_checksums the same mirror is refused (the registry's checksums always
  apply by default), naming the file;
- a file corrupted after its checksum was recorded is refused, naming it, and nothing is left
  under resources/datasets/<name>-<digest>/;
- files missing from the mirror, or a dataset with no mirror and no network (proxies pointed at a
  closed port), end with one clear "dataset not available" message (which files, from where, how
  to set data.mirror) on Snakemake's stderr, not a traceback.

The other formats (EMNIST, CIFAR-100 + Pachinko, CINIC-10, the TFF HDF5 archives, Shakespeare,
LIBSVM) run end to end in tests/workflow/test_real_formats.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from rawfakes import make_cifar_tar, make_mnist  # noqa: E402
from test_snakemake import ok, partition_dir, prepared, snakemake  # noqa: E402

MNIST_FILES = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
               "t10k-labels-idx1-ubyte.gz"]


def _mirror(tmp_path: Path, cifar: bool = True) -> Path:
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_mnist(mirror, n_train=200, n_test=50)
    if cifar:
        make_cifar_tar(mirror, 10, n_per_batch=12)
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}" for p in sorted(mirror.iterdir())]
    (mirror / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return mirror


def _config(mirror: Path | None, trust: bool = True, cifar: bool = True) -> dict:
    exp = {
        "seeds": [0],
        "rounds": 2,
        "sampling": {"scheme": "uniform", "participation": 0.5},
        "local": {"epochs": 1, "batch_size": 16, "lr": 0.05},
        "datasets": {
            "mnist": {"model": {"name": "logreg"},
                      "partitions": {"dir0.5": {"scheme": "dirichlet", "alpha": 0.5, "num_clients": 4}}},
        },
        "algorithms": {"fedavg": {}},
    }
    datasets = {"mnist": {"source": "mnist"}}
    if cifar:
        datasets["cifar10"] = {"source": "cifar10"}
        exp["datasets"]["cifar10"] = {
            "model": {"name": "cnn", "channels": [4], "kernel_size": 3, "hidden": [8]},
            "partitions": {"iid": {"scheme": "iid", "num_clients": 3}},
        }
    cfg = {"datasets": datasets, "device": "cpu", "experiments": {"real": exp}}
    if mirror is not None:
        cfg["data"] = {"mirror": str(mirror), "trust_mirror_checksums": trust}
    return cfg


def _failed(proc, *fragments):
    assert proc.returncode != 0, proc.stderr[-3000:]
    for f in fragments:
        assert f in proc.stderr, f"{f!r} not in snakemake's stderr:\n{proc.stderr[-5000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-5000:]


def test_mnist_and_cifar10_from_a_mirror_end_to_end(tmp_path):
    mirror = _mirror(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    ok(snakemake(work, _config(mirror)))
    for f in ("results/metrics.parquet", "results/tables/real.md", "results/tables/real.csv",
              "results/plots/real_accuracy.png"):
        assert (work / f).is_file(), f
    metrics = pl.read_parquet(work / "results/metrics.parquet")
    assert set(metrics["dataset"]) == {"mnist", "cifar10"} and set(metrics["round"]) == {1, 2}
    assert metrics.filter(pl.col("status") == "ok").height == metrics.height
    meta = json.loads((prepared(work, "mnist") / "meta.json").read_text())
    assert meta["n_train"] == 200 and meta["feature_shape"] == [1, 28, 28]
    assert meta["raw_checksums"].startswith("mirror SHA256SUMS") and meta.get("augmentation") is None
    cmeta = json.loads((prepared(work, "cifar10") / "meta.json").read_text())
    assert cmeta["n_train"] == 60 and cmeta["augmentation"]["random_crop"]["padding"] == 4
    summary = json.loads((work / "results/runs/real/cifar10/iid/fedavg/seed=0/summary.json").read_text())
    assert summary["spec"]["augmentation"] == cmeta["augmentation"]  # the cell trained with augmentation
    msummary = json.loads((work / "results/runs/real/mnist/dir0.5/fedavg/seed=0/summary.json").read_text())
    assert "augmentation" not in msummary["spec"]
    assert (partition_dir(work, "mnist", "dir0.5") / "partition.parquet").is_file()
    assert "mnist" in (work / "results/tables/real.md").read_text()


def test_the_registry_checksums_apply_unless_the_config_trusts_the_mirror(tmp_path):
    mirror = _mirror(tmp_path, cifar=False)
    work = tmp_path / "work"
    work.mkdir()
    proc = snakemake(work, _config(mirror, trust=False, cifar=False))
    _failed(proc, "cannot prepare dataset 'mnist'", "checksum mismatch", "-idx",
            "the registry's size, fedbench.data.sources")
    assert not list((work / "resources/datasets").glob("mnist-*"))


def test_a_corrupted_mirror_file_is_refused_by_name_and_nothing_is_left(tmp_path):
    mirror = _mirror(tmp_path, cifar=False)
    bad = mirror / "train-labels-idx1-ubyte.gz"
    bad.write_bytes(bad.read_bytes()[:-7])  # truncated after SHA256SUMS was written
    work = tmp_path / "work"
    work.mkdir()
    proc = snakemake(work, _config(mirror, cifar=False))
    _failed(proc, "cannot prepare dataset 'mnist'", "train-labels-idx1-ubyte.gz")
    datasets = work / "resources/datasets"
    assert not list(datasets.glob("mnist-*")) and not list(datasets.glob(".mnist*"))  # no temporary sibling either


def test_files_missing_from_the_mirror_are_listed_with_how_to_fix_it(tmp_path):
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    cfg = _config(empty, trust=False, cifar=False)
    proc = snakemake(work, cfg)
    _failed(proc, "dataset not available", "4 file(s) could not be obtained", *MNIST_FILES, "data:",
            "mirror: /path/to/mirror")
    assert not list((work / "resources/datasets").glob("mnist-*"))


def test_no_mirror_and_no_network(tmp_path, monkeypatch):
    # the canonical hosts, unreachable: every proxy points at a closed local port
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
    for var in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    cfg = copy.deepcopy(_config(None, cifar=True))
    del cfg["datasets"]["mnist"], cfg["experiments"]["real"]["datasets"]["mnist"]  # cifar10: one file
    proc = snakemake(work, cfg)
    _failed(proc, "cannot prepare dataset 'cifar10' (dataset not available)", "cifar-10-python.tar.gz",
            "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "cannot connect to the proxy http://127.0.0.1:9",
            "mirror: /path/to/mirror")
    assert not list((work / "resources/datasets").glob("cifar10-*"))
