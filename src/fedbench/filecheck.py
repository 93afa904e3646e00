"""Cheap checks that a file fedbench wrote is still whole, and setting a damaged file aside.

Each ``*_problem`` function reads only a stat and a few bytes (a file's two ends, or an ``.npy``
header), except :func:`json_problem`, which parses the (small) file. Each returns what is wrong,
as a phrase that follows the file's name (``"is 1,000 bytes, meta.json records 46,080"``,
``"does not end with Parquet's PAR1 footer"``), or None when the file looks whole. They catch a
truncated file, a missing one and one of the wrong kind; a changed byte inside a file of the right
size is caught only by a checksum (:func:`sha256_of`) or by a read that fails.

:func:`set_aside` renames a damaged file to ``<name>.damaged`` (:data:`DAMAGED_SUFFIX`), kept for
inspection: the file is then missing, which every later check (and Snakemake) sees at once;
:func:`set_cell_aside` does so for all of a training cell's outputs, so that Snakemake retrains it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

#: Suffix of a damaged file set aside (``metrics.parquet`` -> ``metrics.parquet.damaged``).
DAMAGED_SUFFIX = ".damaged"
PARQUET_MAGIC = b"PAR1"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"  # the IEND chunk: length 0, type, CRC
ZIP_END = b"PK\x05\x06"  # end-of-central-directory record (torch.save's zip format)


def sha256_of(path: str | os.PathLike) -> str:
    """The hex sha256 of a file's bytes, read in 1 MiB chunks.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def missing(path: str | os.PathLike) -> str:
    """The phrase for a missing file, naming the damaged copy when one was set aside."""
    aside = aside_path(path)
    return f"is missing (its damaged copy was set aside as {aside.name})" if aside.exists() else "is missing"


def size_problem(path: str | os.PathLike, expected: int, record: str = "meta.json") -> str | None:
    """Whether ``path`` has ``expected`` bytes (as ``record`` records), as a problem phrase or None."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return missing(path)
    if size != expected:
        return f"is {size:,} bytes, {record} records {expected:,} ({'truncated' if size < expected else 'grown'})"
    return None


def npy_size(path: str | os.PathLike) -> int:
    """The size in bytes that an ``.npy`` file's header implies: header length + prod(shape)·itemsize.

    Raises:
        ValueError: the header cannot be read (truncated or not an .npy file).
        OSError: the file cannot be opened.
    """
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            shape, _, dtype = np.lib.format._read_array_header(f, version)
        if dtype.hasobject:
            raise ValueError("holds Python objects, not a plain array")
        return f.tell() + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


def npy_problem(path: str | os.PathLike, expected: int | None = None) -> str | None:
    """What is wrong with an ``.npy`` file, or None: against ``expected`` bytes (meta.json's record)
    when given, else against the size its own header implies (catches truncation without a record)."""
    if expected is not None:
        return size_problem(path, expected)
    try:
        implied = npy_size(path)
    except FileNotFoundError:
        return missing(path)
    except (ValueError, OSError, EOFError, SyntaxError) as e:
        return f"has no readable .npy header ({type(e).__name__}: {e})"
    size = os.stat(path).st_size
    if size != implied:
        return f"is {size:,} bytes, its .npy header implies {implied:,} ({'truncated' if size < implied else 'grown'})"
    return None


def _ends(path: str | os.PathLike, head: int, tail: int) -> tuple[int, bytes, bytes]:
    """(size, first ``head`` bytes, last ``tail`` bytes) of a file, in one open."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        return size, os.pread(fd, head, 0), os.pread(fd, tail, max(size - tail, 0))
    finally:
        os.close(fd)


def parquet_problem(path: str | os.PathLike, expected: int | None = None, record: str = "") -> str | None:
    """What is wrong with a Parquet file, or None: ``PAR1`` at both ends, a footer length that fits
    the file, and ``expected`` bytes when given (as ``record`` records)."""
    try:
        size, head, tail = _ends(path, 4, 8)
    except FileNotFoundError:
        return missing(path)
    if expected is not None and size != expected:
        return f"is {size:,} bytes, {record or 'its record'} records {expected:,}"
    if size < 12:
        return f"is {size:,} bytes, too short for a Parquet file (at least 12)"
    if head != PARQUET_MAGIC:
        return "does not start with Parquet's PAR1 magic"
    if tail[4:] != PARQUET_MAGIC:
        return f"does not end with Parquet's PAR1 footer (truncated: {size:,} bytes)"
    if int.from_bytes(tail[:4], "little") > size - 12:
        return "has a Parquet footer longer than the file"
    return None


def json_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a JSON file, or None: it must parse."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return missing(path)
    try:  # os-level reads: this runs on every cell's summary.json at each workflow start
        chunks = [os.read(fd, max(os.fstat(fd).st_size, 1))]
        while chunks[-1]:
            chunks.append(os.read(fd, 1 << 16))
    finally:
        os.close(fd)
    text = b"".join(chunks)
    try:
        json.loads(text)
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError
        return f"is not valid JSON ({e}; {len(text):,} bytes)"
    return None


def png_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a PNG file, or None: the PNG signature first, the IEND chunk last."""
    try:
        size, head, tail = _ends(path, 8, 12)
    except FileNotFoundError:
        return missing(path)
    if head != PNG_SIGNATURE:
        return "does not start with the PNG signature"
    if tail != PNG_END:
        return f"does not end with PNG's IEND chunk (truncated: {size:,} bytes)"
    return None


def zip_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a zip file without an archive comment (``torch.save``'s format), or None:
    ``PK\\x03\\x04`` first and the end-of-central-directory record as its last 22 bytes."""
    try:
        size, head, tail = _ends(path, 4, 22)
    except FileNotFoundError:
        return missing(path)
    if head != b"PK\x03\x04":
        return "does not start with a zip header (not a torch.save file)"
    if len(tail) < 22 or not tail.startswith(ZIP_END):
        return f"does not end with a zip directory (truncated: {size:,} bytes)"
    return None


def aside_path(path: str | os.PathLike) -> Path:
    """Where :func:`set_aside` puts ``path``: ``<path>.damaged``."""
    path = Path(path)
    return path.with_name(path.name + DAMAGED_SUFFIX)


def set_aside(path: str | os.PathLike) -> Path | None:
    """Rename a damaged file to ``<name>.damaged`` (replacing an older one), kept for inspection.

    Returns:
        The new path, or None when ``path`` did not exist (nothing to do).
    """
    target = aside_path(path)
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return None
    return target


#: A cell's outputs (rule train), set aside together so that Snakemake retrains the cell.
CELL_OUTPUTS = ("metrics.parquet", "summary.json", "delta_histogram.parquet")


def set_cell_aside(cell_dir: str | os.PathLike) -> list[Path]:
    """Rename a cell's outputs (:data:`CELL_OUTPUTS`) to ``<name>.damaged``, so that Snakemake finds
    them missing and retrains the cell. A checkpoint is left: it resumes the retraining (a damaged
    one is set aside when loaded). Returns the new paths of the files that existed."""
    return [p for name in CELL_OUTPUTS if (p := set_aside(Path(cell_dir) / name)) is not None]
