"""The errors raised while obtaining and reading raw dataset files.

==========================  =================  =========================================================
error                       base class         raised when
==========================  =================  =========================================================
``DataUnavailableError``    FileNotFoundError  raw files cannot be obtained (no network, not in the mirror);
                                               an unreachable host fails at once, without retries
``ChecksumError``           ValueError         a raw file's size or digest differs from the registry (or
                                               from a trusted mirror's SHA256SUMS), or a LIBSVM file's
                                               row count differs from LIBSVM's page; one message names
                                               every bad file of the dataset
``CorruptFileError``        ValueError         a verified (or unverifiable) file cannot be read: truncated
                                               archive, bad gzip/bz2/zip/tar/HDF5/pickle, wrong layout
``DamagedFileError``        CorruptFileError   a file fedbench wrote (prepared dataset, partition, cell
                                               output) has since been damaged (truncated, changed, gone)
                                               and cannot be repaired by itself; the message names each
                                               such file, what is wrong with it and the command that fixes it
==========================  =================  =========================================================

Every message names the file. None of them leaves a prepared dataset behind: preparation writes
through :func:`fedbench.data.store.write_dataset`, which renames a complete directory into place.
"""

from __future__ import annotations

import contextlib
import pickle
import tarfile
import zipfile
import zlib
from pathlib import Path


class DataUnavailableError(FileNotFoundError):
    """Raw files of a dataset could not be obtained (no network, host down, not in the mirror)."""


class ChecksumError(ValueError):
    """A raw file's size, digest or known row count differs (corrupt, truncated or wrong file)."""


class CorruptFileError(ValueError):
    """A raw file cannot be read in its expected format (truncated or corrupt archive, bad layout)."""


class DamagedFileError(CorruptFileError):
    """A file fedbench wrote has been damaged since (truncated by a full disk, changed, removed).

    ``str(error)`` is the whole message: one line per damaged file, ``<file>: <what is wrong>;
    <what was done and the fix>``. ``paths`` lists the damaged files.
    """

    def __init__(self, message: str, paths=()):
        super().__init__(message)
        self.paths = [Path(p) for p in paths]

    def __reduce__(self):  # picklable (the default would call cls(message) without paths)
        return type(self), (str(self), self.paths)


def damaged(path, problem: str, fix: str) -> DamagedFileError:
    """A :class:`DamagedFileError` for one file: ``"<path>: <problem>; <fix>"``."""
    return DamagedFileError(f"{path}: {problem}; {fix}", [path])


_READ_ERRORS = (EOFError, OSError, zlib.error, tarfile.TarError, zipfile.BadZipFile, pickle.UnpicklingError,
                ValueError, KeyError, IndexError, TypeError)


@contextlib.contextmanager
def reading(path, what: str = ""):
    """Turn any error raised while reading ``path`` into a :class:`CorruptFileError` naming it.

    Args:
        path: the raw file being read.
        what: the format, for the message (e.g. ``"CIFAR python tarball"``).
    """
    try:
        yield
    except (CorruptFileError, ChecksumError, DataUnavailableError):
        raise
    except _READ_ERRORS as e:
        name = Path(path).name
        fmt = f" as {what}" if what else ""
        raise CorruptFileError(
            f"{name}: cannot be read{fmt} ({type(e).__name__}: {e}); the file at {path} is truncated, corrupt or "
            f"not the expected file: delete it (or replace it in the mirror) and prepare the dataset again"
        ) from e
