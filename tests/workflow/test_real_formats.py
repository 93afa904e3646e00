"""Every other real dataset format, end to end through Snakemake from ``data.mirror`` (no network).

test_real_datasets.py runs MNIST and CIFAR-10; this file runs all the other downloaded sources in
ONE snakemake invocation (one config, one experiment, 2 rounds, tiny models), so a user's first
real-data run is exercised for every reader, partitioner and model that goes with it:

==============  ==========================================  ==========================  ============
dataset         mirror file (real layout, rawfakes.py)      partition                   model
==============  ==========================================  ==========================  ============
emnist          gzip.zip (NIST's EMNIST archive, letters)   iid, 3 clients              logreg
cifar100        cifar-100-python.tar.gz                     pachinko 5 x 20 (= n_train) cnn
cinic10         CINIC-10.tar.gz (PNG image folders)         dirichlet, 3 clients        logreg
fed_emnist      fed_emnist.tar.bz2 (TFF HDF5)               natural                     logreg
fed_cifar100    fed_cifar100.tar.bz2 (TFF HDF5)             natural                     logreg
shakespeare     pg100.txt (current Gutenberg layout)        natural                     lstm
a9a             a9a, a9a.t (svmlight)                       iid, 4 clients              logreg
epsilon         epsilon_normalized(.t).bz2 (svmlight bz2)   iid, 4 clients              logreg
==============  ==========================================  ==========================  ============

A user's own LIBSVM file (source ``libsvm_file``) runs in its own small invocation: 2 rounds of
logreg, no test split, re-prepared when the file changes.

Then a corrupted archive (a truncated CIFAR-100 tar.gz, a TFF tar.bz2 with a flipped byte) is
refused naming the file, with nothing left under resources/datasets/.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from gutenberg import PG100_EXCERPT, PG100_EXPECTED  # noqa: E402
from rawfakes import make_cifar_tar, make_cinic_tar, make_emnist_zip, make_svmlight, make_tff  # noqa: E402
from test_real_datasets import _failed  # noqa: E402
from test_snakemake import ok, partition_dir, prepared, snakemake  # noqa: E402

from fedbench.data.shakespeare import client_name  # noqa: E402

pytestmark = pytest.mark.slow  # ~2 min: one snakemake run over 8 datasets, one over 3 corrupt ones


def _sha256sums(mirror: Path) -> None:
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}" for p in sorted(mirror.iterdir())
             if p.name != "SHA256SUMS"]
    (mirror / "SHA256SUMS").write_text("\n".join(lines) + "\n")


def _mirror(root: Path) -> tuple[Path, dict]:
    """All the formats in one mirror directory; returns (mirror, what was written)."""
    mirror = root / "mirror"
    mirror.mkdir()
    truth = {
        "emnist": make_emnist_zip(mirror, n_train=120, n_test=40),
        "cifar100": make_cifar_tar(mirror, 100, n_per_batch=20),  # 100 train, 20 test
        "cinic10": make_cinic_tar(mirror, per_class=2),
        "fed_emnist": make_tff(mirror, "fed_emnist"),
        "fed_cifar100": make_tff(mirror, "fed_cifar100"),
        "a9a": (make_svmlight(mirror, "a9a", 60, 123, seed=1), make_svmlight(mirror, "a9a.t", 20, 120, seed=2)),
        "epsilon": (make_svmlight(mirror, "epsilon_normalized.bz2", 40, 2000, seed=3, bz2_compress=True),
                    make_svmlight(mirror, "epsilon_normalized.t.bz2", 16, 2000, seed=4, bz2_compress=True)),
    }
    (mirror / "pg100.txt").write_text(PG100_EXCERPT, encoding="utf-8")
    _sha256sums(mirror)
    return mirror, truth


LOGREG = {"name": "logreg"}
EXPERIMENT = {
    "seeds": [0],
    "rounds": 2,
    "sampling": {"scheme": "uniform", "participation": 0.5},
    "local": {"epochs": 1, "batch_size": 16, "lr": 0.05},
    "datasets": {
        "emnist_l": {"model": LOGREG, "partitions": {"iid": {"scheme": "iid", "num_clients": 3}}},
        "cifar100": {"model": {"name": "cnn", "channels": [2], "kernel_size": 3, "hidden": [8]},
                     "partitions": {"pachinko": {"scheme": "pachinko", "num_clients": 5, "samples_per_client": 20}}},
        "cinic10": {"model": LOGREG, "partitions": {"dir": {"scheme": "dirichlet", "alpha": 0.5, "num_clients": 3}}},
        "fed_emnist": {"model": LOGREG, "partitions": {"natural": {"scheme": "natural"}}},
        "fed_cifar100": {"model": LOGREG, "partitions": {"natural": {"scheme": "natural"}}},
        "shakespeare": {"model": {"name": "lstm", "embed_dim": 4, "hidden": [8]},
                        "local": {"batch_size": 32, "lr": 0.5},
                        "partitions": {"natural": {"scheme": "natural", "num_clients": 4}}},
        "a9a": {"model": LOGREG, "partitions": {"iid": {"scheme": "iid", "num_clients": 4}}},
        "epsilon": {"model": LOGREG, "partitions": {"iid": {"scheme": "iid", "num_clients": 4}}},
    },
    "algorithms": {"fedavg": {}},
}
DATASETS = {
    "emnist_l": {"source": "emnist"},  # letters split, first 10 classes: EMNIST-L of FedDyn / FedElasticNet
    "cifar100": {"source": "cifar100"},
    "cinic10": {"source": "cinic10"},
    "fed_emnist": {"source": "fed_emnist"},
    "fed_cifar100": {"source": "fed_cifar100"},
    # LEAF's 80-character windows; crops keep the LSTM's work small
    "shakespeare": {"source": "shakespeare", "seq_length": 80, "max_train_samples": 48, "max_test_samples": 16},
    "a9a": {"source": "a9a"},
    "epsilon": {"source": "epsilon"},
}


def _config(mirror: Path, datasets=DATASETS, experiment=EXPERIMENT) -> dict:
    exp = dict(experiment, datasets={k: v for k, v in experiment["datasets"].items() if k in datasets})
    return {"datasets": dict(datasets), "device": "cpu",
            "data": {"mirror": str(mirror), "trust_mirror_checksums": True},
            "experiments": {"formats": exp}}


def _meta(work: Path, name: str) -> dict:
    return json.loads((prepared(work, name) / "meta.json").read_text())


def _partition(work: Path, name: str, part: str) -> pl.DataFrame:
    return pl.from_arrow(pq.read_table(partition_dir(work, name, part) / "partition.parquet"))


@pytest.fixture(scope="module")
def formats_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("formats")
    mirror, truth = _mirror(root)
    work = root / "work"
    work.mkdir()
    t0 = time.perf_counter()
    proc = snakemake(work, _config(mirror))
    print(f"snakemake on all formats: {time.perf_counter() - t0:.1f} s")
    ok(proc)
    return work, truth


def test_every_format_runs_to_the_tables(formats_run):
    work, _ = formats_run
    for f in ("results/metrics.parquet", "results/tables/formats.md", "results/tables/formats.csv",
              "results/plots/formats_accuracy.png"):
        assert (work / f).is_file(), f
    metrics = pl.read_parquet(work / "results/metrics.parquet")
    assert set(metrics["dataset"]) == set(DATASETS)
    for name in DATASETS:
        rows = metrics.filter(pl.col("dataset") == name)
        assert sorted(rows["round"]) == [1, 2], name
        assert (rows["status"] == "ok").all(), (name, rows["status"].to_list())
        assert rows["test_loss"].is_finite().all() and rows["test_accuracy"].is_between(0, 1).all(), name
    md = (work / "results/tables/formats.md").read_text()
    assert all(name in md for name in DATASETS)


def test_image_formats_prepared(formats_run):
    work, truth = formats_run
    emnist = _meta(work, "emnist_l")
    x_tr, y_tr = truth["emnist"][("letters", "train")]
    assert emnist["num_classes"] == 10 and emnist["feature_shape"] == [1, 28, 28]
    assert emnist["n_train"] == int(np.sum((y_tr >= 1) & (y_tr <= 10)))  # letters a..j only
    y = np.load(prepared(work, "emnist_l") / "y_train.npy")
    np.testing.assert_array_equal(y, y_tr[(y_tr >= 1) & (y_tr <= 10)] - 1)

    c100 = _meta(work, "cifar100")
    assert (c100["n_train"], c100["n_test"], c100["num_classes"], c100["feature_shape"]) == (100, 20, 100, [3, 32, 32])
    assert c100["augmentation"]["random_crop"]["padding"] == 4
    np.testing.assert_array_equal(np.load(prepared(work, "cifar100") / "y_coarse_train.npy"),
                                  np.asarray(truth["cifar100"]["train"]["coarse_labels"]))

    cinic = _meta(work, "cinic10")
    assert (cinic["n_train"], cinic["n_test"], cinic["num_classes"]) == (20, 20, 10)  # 2 per class and split
    assert cinic["feature_shape"] == [3, 32, 32] and cinic["augmentation"]["random_crop"]["padding"] == 4


def test_pachinko_partition_uses_every_sample_once(formats_run):
    work, _ = formats_run
    part = _partition(work, "cifar100", "pachinko")
    train = part.filter(pl.col("split") == "train")
    assert sorted(train["sample_index"]) == list(range(100))  # every sample exactly once
    sizes = train.group_by("client_id").len().sort("client_id")
    assert sizes["client_id"].to_list() == list(range(5)) and sizes["len"].to_list() == [20] * 5


def test_natural_partitions_have_the_files_clients(formats_run):
    work, truth = formats_run
    fe = _meta(work, "fed_emnist")
    writers = sorted({cid for (_, cid) in truth["fed_emnist"]})
    n_train = sum(len(v["label"]) for (s, _), v in truth["fed_emnist"].items() if s == "train")
    assert fe["n_train"] == n_train and fe["feature_shape"] == [1, 28, 28] and fe["num_classes"] == 62
    part = _partition(work, "fed_emnist", "natural")
    assert part.filter(pl.col("split") == "train")["client_id"].n_unique() == len(writers)
    assert part.filter(pl.col("split") == "test").height == fe["n_test"]  # writers keep their test samples

    fc = _meta(work, "fed_cifar100")
    n_train_clients = sum(1 for (s, _) in truth["fed_cifar100"] if s == "train")
    part = _partition(work, "fed_cifar100", "natural")
    assert part.filter(pl.col("split") == "train")["client_id"].n_unique() == n_train_clients == 12
    assert part.filter(pl.col("split") == "train").height == fc["n_train"]
    assert part.filter(pl.col("split") == "test").height == 0  # test clients are others: global test split

    sh = _meta(work, "shakespeare")
    assert sh["feature_shape"] == [80] and sh["num_classes"] == 80 and sh["x_dtype"] == "uint8"
    expected = [client_name(play, role) for play, roles in PG100_EXPECTED for role in roles]
    assert sorted(sh["client_names"]) == sorted(expected)  # every role of the 5 plays; no sonnet, no poem
    client_train = np.load(prepared(work, "shakespeare") / "client_train.npy")
    assert np.bincount(client_train).max() == 48  # max_train_samples crops the long roles
    part = _partition(work, "shakespeare", "natural")
    assert part.filter(pl.col("split") == "train")["client_id"].n_unique() == 4  # num_clients: 4 of them
    summary = json.loads((work / "results/runs/formats/shakespeare/natural/fedavg/seed=0/summary.json").read_text())
    assert summary["spec"]["model"]["name"] == "lstm"


def test_libsvm_formats_prepared(formats_run):
    work, truth = formats_run
    for name, d in (("a9a", 123), ("epsilon", 2000)):
        meta = _meta(work, name)
        (x_tr, y_tr), (_, y_te) = truth[name]
        assert (meta["n_train"], meta["n_test"], meta["feature_shape"], meta["num_classes"]) == (
            len(y_tr), len(y_te), [d], 2)
        x = np.load(prepared(work, name) / "x_train.npy")
        np.testing.assert_allclose(x, x_tr.astype(np.float32), rtol=1e-6)
        np.testing.assert_array_equal(np.load(prepared(work, name) / "y_train.npy"), (y_tr > 0).astype(int))


def test_corrupted_archives_are_refused_by_name_and_nothing_is_left(tmp_path):
    """Three ways a real download goes wrong, in one run (--keep-going: every prepare job runs):

    - cifar-100-python.tar.gz cut short, SHA256SUMS written after (the checksum vouches for the
      short file, as for a source the registry has no checksum for): the gzip/tar reader refuses it;
    - CINIC-10.tar.gz (no checksum is published for it) cut short the same way;
    - fed_emnist.tar.bz2 with one byte flipped after SHA256SUMS was written: the checksum refuses it.
    """
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_cifar_tar(mirror, 100, n_per_batch=20)
    make_cinic_tar(mirror, per_class=2)
    make_tff(mirror, "fed_emnist")
    for name in ("cifar-100-python.tar.gz", "CINIC-10.tar.gz"):
        p = mirror / name
        p.write_bytes(p.read_bytes()[: p.stat().st_size * 2 // 3])
    _sha256sums(mirror)
    p = mirror / "fed_emnist.tar.bz2"
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))
    work = tmp_path / "work"
    work.mkdir()
    names = ("cifar100", "cinic10", "fed_emnist")
    proc = snakemake(work, _config(mirror, datasets={k: DATASETS[k] for k in names}), "--keep-going")
    _failed(proc, "cannot prepare dataset 'cifar100' (corrupt file)", "cifar-100-python.tar.gz: cannot be read",
            "cannot prepare dataset 'cinic10' (corrupt file)", "CINIC-10.tar.gz: cannot be read",
            "cannot prepare dataset 'fed_emnist' (checksum mismatch)", "fed_emnist.tar.bz2")
    datasets = work / "resources/datasets"
    for name in names:
        assert not list(datasets.glob(f"{name}-*")) and not list(datasets.glob(f".{name}*")), name
    assert not (work / "results/metrics.parquet").exists()


def test_a_local_libsvm_file_runs_and_a_changed_file_re_prepares(tmp_path):
    """Source ``libsvm_file``: a user's own LIBSVM file (labels 1/2, given by a path relative to the
    directory Snakemake runs in) trains a logreg for 2 rounds with no test split (FedAc's protocol:
    the training objective only); rewriting the file re-prepares the dataset (the file is the prepare
    job's input); a missing file fails before any job, naming ``datasets.mine.path``."""
    from test_snakemake import planned_jobs

    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    x, y = make_svmlight(work / "data", "mine.svm", 48, 6, seed=5)  # labels -1/+1 ...
    svm = work / "data/mine.svm"
    svm.write_text(re.sub(r"^\+1", "2", re.sub(r"^-1", "1", svm.read_text(), flags=re.M), flags=re.M))  # as 1/2
    exp = dict(EXPERIMENT, local={"epochs": 1, "batch_size": 8, "lr": 0.1},
               datasets={"mine": {"model": LOGREG, "partitions": {"iid": {"scheme": "iid", "num_clients": 3}}}})
    config = {"datasets": {"mine": {"source": "libsvm_file", "path": "data/mine.svm"}}, "device": "cpu",
              "experiments": {"mine": exp}}
    ok(snakemake(work, config))
    meta = _meta(work, "mine")
    assert (meta["n_train"], meta["n_test"], meta["feature_shape"], meta["label_map"]) == (48, 0, [6], {"1": 0, "2": 1})
    np.testing.assert_allclose(np.load(prepared(work, "mine") / "x_train.npy"), x.astype(np.float32), rtol=1e-6)
    np.testing.assert_array_equal(np.load(prepared(work, "mine") / "y_train.npy"), (y > 0).astype(int))
    assert meta["raw_files"]["train"]["sha256"] == hashlib.sha256(svm.read_bytes()).hexdigest()
    rows = pl.read_parquet(work / "results/metrics.parquet")
    assert sorted(rows["round"]) == [1, 2] and (rows["status"] == "ok").all()
    assert rows["train_loss"].is_finite().all()

    time.sleep(1.1)  # a newer mtime than meta.json's, on file systems with 1 s resolution
    svm.write_text(svm.read_text() + "2 1:0.5\n")
    dry = ok(snakemake(work, config, "-n"))
    assert ("prepare_dataset", {"data": prepared(work, "mine").name}) in planned_jobs(dry.stdout)

    svm.unlink()
    proc = snakemake(work, config, "-n")
    assert proc.returncode != 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr  # a dry run prints the config error on stdout
    assert "Invalid config" in out and "datasets.mine.path: data/mine.svm does not exist" in out, out[-3000:]
