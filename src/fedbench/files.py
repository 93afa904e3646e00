"""Atomic file output: a reader (or a rerun after a kill) never sees a half-written file.

Every file fedbench writes (datasets, partitions, metrics, checkpoints, tables, plots, W&B
records) goes through :func:`atomic_write`: the writer fills a temporary sibling, which is
flushed to disk and renamed onto the destination (``os.replace``, atomic on POSIX within one
file system). If the writer raises, the temporary is removed and the destination is untouched.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def temporary_sibling(path: Path) -> Path:
    """The temporary name :func:`atomic_write` uses for ``path``: hidden, unique to this process,
    and ending in the destination's suffix (so writers that pick the format from the name, such as
    matplotlib's ``savefig``, write the right one)."""
    return path.with_name(f".{path.name}.tmp{os.getpid()}{path.suffix}")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[Path]:
    """Write ``path`` atomically: yields a temporary path to write (a file, or a directory the
    caller creates), then renames it onto ``path``.

    Usage::

        with atomic_write("results/x.parquet") as tmp:
            table.write_parquet(tmp)

    The parent directory is created. A file is fsynced before the rename. A directory replaces
    an existing directory of the same name (removed first: that step alone is not atomic, so a
    reader of a directory must check a completeness marker, as ``fedbench.data.store`` does).

    Raises:
        FileNotFoundError: the block ended without creating the temporary path.
        Whatever the block raises, after removing the temporary.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(path)
    _remove(tmp)  # left over by an earlier process with the same pid
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"atomic_write({path}): the writer did not create {tmp}")
        if tmp.is_dir():
            if path.is_dir():
                shutil.rmtree(path)
        else:
            _fsync(tmp)
        os.replace(tmp, path)
    finally:
        _remove(tmp)


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove every temporary sibling of ``path`` that :func:`atomic_write` may have left (a file
    or directory named ``.NAME.tmp*``, whatever process wrote it): a writer killed by SIGKILL
    never reaches the clean-up, and a checkpoint's temporary can be hundreds of MB.

    Only call this while owning ``path`` (for a training cell: holding its
    :class:`fedbench.engine.rounds.lifetime.CellLock`), since a live writer's temporary is removed too.
    Returns the removed paths.
    """
    path = Path(path)
    if not path.parent.is_dir():
        return []
    prefix = f".{path.name}.tmp"
    stale = sorted(p for p in path.parent.iterdir() if p.name.startswith(prefix))
    for p in stale:
        _remove(p)
    return stale
