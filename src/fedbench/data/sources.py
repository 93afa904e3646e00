"""Where the papers' real datasets come from: canonical URLs, file names, sizes and checksums.

One :class:`RemoteDataset` per downloadable dataset, in :data:`REMOTE`. The downloader
(:mod:`fedbench.data.download`) verifies each file with the strongest digest recorded: sha256
when known, else md5, else its size in bytes; a file with none of the three is accepted unverified
(a warning is logged). A file with known ``rows``/``features`` (the LIBSVM files, which have no
published checksum) is verified after parsing by those counts instead: its reader raises
:class:`~fedbench.data.errors.ChecksumError` naming the file, the expected and the found counts.
A mirror (``data.mirror``) is looked up by :attr:`RemoteFile.name`.

What is verified, and where each value comes from (never guessed; ``None`` = not known for sure):

==============  ===========================================================================
dataset         checksums
==============  ===========================================================================
mnist           sha256 + size: TFDS ``url_checksums/mnist.txt`` (the cvdf-datasets copy) and
                independent download scripts for the ossci-datasets mirror agree; md5: torchvision
                ``datasets/mnist.py`` (verified against the same mirror). The canonical host
                yann.lecun.com no longer serves the files; we use the ossci-datasets S3 mirror, as
                torchvision does.
emnist          md5: torchvision ``EMNIST`` (the same md5 for the itl.nist.gov URL and, in later
                releases, the biometrics.nist.gov URL used here); sha256 + size: TFDS
                ``url_checksums/emnist.txt`` (recorded for the itl.nist.gov URL).
cifar10/100     sha256: Keras ``datasets/cifar10.py`` / ``cifar100.py``; md5: torchvision; sizes
                170,498,071 and 169,001,437 bytes (independent provenance records agreeing with
                the sha256).
cinic10         unknown: no published checksum or size; the file is accepted unverified
                (a truncated archive still fails while it is read: gzip/tar report it).
fed_emnist,     sha256: TensorFlow Federated ``simulation/datasets/emnist.py`` /
fed_cifar100    ``cifar100.py`` (``tf.keras.utils.get_file(file_hash=...)``); sizes unknown.
shakespeare     unknown: Project Gutenberg re-releases pg100.txt from time to time, so no fixed
                digest exists. LEAF's script names md5 036d0f9cf7296f41165c2e6da1e52a0e for the
                edition it used; that edition is no longer served, so it is not enforced.
a9a, epsilon    no checksum or size: the LIBSVM page publishes none, and we cannot download the
                files to compute one without risking a wrong value. Verified instead by the
                row and feature counts the LIBSVM page states for each file (a9a: 32,561 train
                / 16,281 test rows, 123 features; epsilon: 400,000 / 100,000 rows, 2,000
                features), checked after parsing: a file cut short at a line end parses
                cleanly but has too few rows. Feature counts are upper bounds (no index above
                them): a9a.t's highest index is 122, one below the page's 123.
==============  ===========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RemoteFile:
    """One file to download.

    Attributes:
        name: the file name, used in the download cache and looked up under a mirror.
        url: the canonical URL.
        size: size in bytes, or None when not known for certain.
        sha256: hex digest, or None when not known for certain.
        md5: hex digest (used only when sha256 is None, and checked too when both are known).
        rows: number of examples (rows), or None; checked by the file's reader after parsing.
            Used for files without a published checksum (a9a, epsilon).
        features: the highest feature index the file may use (svmlight), or None; checked with
            ``rows``.
        checksum_from: where ``sha256``/``md5``/``size`` come from, for messages: ``"registry"``
            (this module) or the path of a mirror's SHA256SUMS file (trusted-mirror mode).
    """

    name: str
    url: str
    size: int | None = None
    sha256: str | None = None
    md5: str | None = None
    rows: int | None = None
    features: int | None = None
    checksum_from: str = "registry"


@dataclass(frozen=True)
class RemoteDataset:
    """A dataset's downloadable files and provenance.

    Attributes:
        name: the source name (the ``source`` key of a dataset config).
        files: the files to fetch, by role (e.g. ``"train_images"``).
        homepage: where the dataset is described.
        licence: the licence or terms of use, in a sentence.
        papers: the seed papers (``papers/`` file ids) whose experiments use it.
    """

    name: str
    files: dict[str, RemoteFile]
    homepage: str
    licence: str
    papers: tuple[str, ...] = field(default_factory=tuple)


_MNIST = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_TFF = "https://storage.googleapis.com/tff-datasets-public/"
_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"

REMOTE: dict[str, RemoteDataset] = {
    "mnist": RemoteDataset(
        name="mnist",
        files={
            "train_images": RemoteFile(
                "train-images-idx3-ubyte.gz", _MNIST + "train-images-idx3-ubyte.gz", 9912422,
                "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
            "train_labels": RemoteFile(
                "train-labels-idx1-ubyte.gz", _MNIST + "train-labels-idx1-ubyte.gz", 28881,
                "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", "d53e105ee54ea40749a09fcbcd1e9432"),
            "test_images": RemoteFile(
                "t10k-images-idx3-ubyte.gz", _MNIST + "t10k-images-idx3-ubyte.gz", 1648877,
                "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", "9fb629c4189551a2d022fa330f9573f3"),
            "test_labels": RemoteFile(
                "t10k-labels-idx1-ubyte.gz", _MNIST + "t10k-labels-idx1-ubyte.gz", 4542,
                "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", "ec29112dd5afa0611ce80d1b7f02629c"),
        },
        homepage="http://yann.lecun.com/exdb/mnist/",
        licence="CC BY-SA 3.0 (Y. LeCun and C. Cortes); redistributed by the PyTorch ossci-datasets mirror",
        papers=("000", "003"),
    ),
    "emnist": RemoteDataset(
        name="emnist",
        files={
            "archive": RemoteFile(
                "gzip.zip", "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip", 561753746,
                "fb9bb67e33772a9cc0b895e4ecf36d2cf35be8b709693c3564cea2a019fcda8e", "58c8d27c78d21e728a6bc7b3cc06412e"),
        },
        homepage="https://www.nist.gov/itl/products-and-services/emnist-dataset",
        licence="NIST: public domain in the U.S. (Cohen et al. 2017, EMNIST); cite the EMNIST paper",
        papers=("003",),
    ),
    "cifar10": RemoteDataset(
        name="cifar10",
        files={
            "archive": RemoteFile(
                "cifar-10-python.tar.gz", "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", 170498071,
                "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce", "c58f30108f718f92721af3b95e74349a"),
        },
        homepage="https://www.cs.toronto.edu/~kriz/cifar.html",
        licence=(
            "no formal licence; free for research, "
            "cite Krizhevsky 2009 (Learning Multiple Layers of Features from Tiny Images)"
        ),
        papers=("000", "003"),
    ),
    "cifar100": RemoteDataset(
        name="cifar100",
        files={
            "archive": RemoteFile(
                "cifar-100-python.tar.gz", "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz", 169001437,
                "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7", "eb9058c3a382ffc7106e4002c42a8d85"),
        },
        homepage="https://www.cs.toronto.edu/~kriz/cifar.html",
        licence="no formal licence; free for research, cite Krizhevsky 2009",
        papers=("003",),
    ),
    "cinic10": RemoteDataset(
        name="cinic10",
        files={
            "archive": RemoteFile(
                "CINIC-10.tar.gz", "https://datashare.ed.ac.uk/bitstream/handle/10283/3192/CINIC-10.tar.gz"),
        },
        homepage="https://github.com/BayesWatch/cinic-10",
        licence="MIT (Darlow et al. 2018); the ImageNet-derived images keep ImageNet's terms of use",
        papers=("000",),
    ),
    "fed_emnist": RemoteDataset(
        name="fed_emnist",
        files={
            "archive": RemoteFile(
                "fed_emnist.tar.bz2", _TFF + "fed_emnist.tar.bz2",
                sha256="fe1ed5a502cea3a952eb105920bff8cffb32836b5173cb18a57a32c3606f3ea0"),
        },
        homepage="https://www.tensorflow.org/federated/api_docs/python/tff/simulation/datasets/emnist/load_data",
        licence="derived from NIST EMNIST via LEAF (BSD-2-Clause); distributed by TensorFlow Federated (Apache-2.0)",
        papers=("000",),
    ),
    "fed_cifar100": RemoteDataset(
        name="fed_cifar100",
        files={
            "archive": RemoteFile(
                "fed_cifar100.tar.bz2", _TFF + "fed_cifar100.tar.bz2",
                sha256="e8575e22c038ecef1ce6c7d492d7abee7da13b1e1ba9b70a7fc18531ba7590de"),
        },
        homepage="https://www.tensorflow.org/federated/api_docs/python/tff/simulation/datasets/cifar100/load_data",
        licence="derived from CIFAR-100 (Krizhevsky 2009); distributed by TensorFlow Federated (Apache-2.0)",
        papers=("000",),
    ),
    "shakespeare": RemoteDataset(
        name="shakespeare",
        files={"text": RemoteFile("pg100.txt", "https://www.gutenberg.org/cache/epub/100/pg100.txt")},
        homepage="https://www.gutenberg.org/ebooks/100",
        licence="public domain in the U.S.; the Project Gutenberg License applies to the e-text",
        papers=("003",),
    ),
    "a9a": RemoteDataset(
        name="a9a",
        files={  # no published checksum: verified by the LIBSVM page's row/feature counts (module docstring)
            "train": RemoteFile("a9a", _LIBSVM + "a9a", rows=32561, features=123),
            "test": RemoteFile("a9a.t", _LIBSVM + "a9a.t", rows=16281, features=123),
        },
        homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#a9a",
        licence="UCI Adult (CC BY 4.0), preprocessed by Platt 1998; LIBSVM page: cite Chang & Lin",
        papers=("001",),
    ),
    "epsilon": RemoteDataset(
        name="epsilon",
        files={  # no published checksum: verified by the LIBSVM page's row/feature counts (module docstring)
            "train": RemoteFile("epsilon_normalized.bz2", _LIBSVM + "epsilon_normalized.bz2", rows=400000,
                                features=2000),
            "test": RemoteFile("epsilon_normalized.t.bz2", _LIBSVM + "epsilon_normalized.t.bz2", rows=100000,
                               features=2000),
        },
        homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#epsilon",
        licence="PASCAL Large Scale Learning Challenge 2008 data; LIBSVM page: cite Chang & Lin",
        papers=("001",),
    ),
}
