"""Check a results folder's files before any job, and repair what can be repaired.

A folder is kept for weeks; a full disk or a killed process can leave a file truncated, a byte
changed, or a file gone. :func:`verify_folder` runs on every workflow start and, for each file it
finds damaged, does what makes the next run redo only what depends on that file:

=================================  ===================================  ===========================================
file                               check (cheap: stat and a few bytes)  repair
=================================  ===================================  ===========================================
a prepared dataset's ``*.npy``     size against meta.json's ``sizes``   re-prepare the dataset into a temporary
                                   (older meta.json: the .npy header)   sibling; when every re-made file's sha256
                                                                        matches meta.json, replace only the damaged
                                                                        files (meta.json untouched, so Snakemake
                                                                        reruns nothing); else stop with the fix
``meta.json``                      parses                               none: stop with the fix (``rm -r`` the dir)
a partition's ``*.parquet``        PAR1 at both ends; size against      re-make the partition into a temporary
                                   ``partition.json``                   sibling, check it against partition.json
                                                                        (or the intact files), replace only the
                                                                        damaged files
``heatmap.png``                    PNG signature, IEND chunk last       drawn again from the re-made counts
a cell's ``metrics.parquet``,      PAR1 at both ends                    set the cell's outputs aside
``delta_histogram.parquet``                                             (``<name>.damaged``): Snakemake retrains it
a cell's ``summary.json``          parses                               as above
a cell's ``checkpoint.pt``         zip directory at its end             set aside: the cell trains from its start
=================================  ===================================  ===========================================

Repaired files get the modification time of their untouched siblings (meta.json's, or the
partition's oldest file's), so Snakemake sees no newer input and reruns nothing downstream.
A file set aside keeps its name plus ``.damaged`` (:mod:`fedbench.filecheck`), for inspection.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from fedbench.data.errors import DamagedFileError
from fedbench.filecheck import (
    CELL_OUTPUTS,
    aside_path,
    json_problem,
    parquet_problem,
    png_problem,
    set_aside,
    set_cell_aside,
    sha256_of,
    zip_problem,
)

__all__ = ["verify_folder", "cell_problems", "partition_problems", "set_cell_aside", "CELL_OUTPUTS"]

CHECKPOINT = "checkpoint.pt"
HEATMAP = "heatmap.png"
_CELL_CHECKS = (("metrics.parquet", parquet_problem), ("summary.json", json_problem),
                ("delta_histogram.parquet", parquet_problem), (CHECKPOINT, zip_problem))
RETRAIN = "Snakemake retrains this cell"


# --------------------------------------------------------------------------- cells


def cell_problems(cell_dir: str | os.PathLike) -> dict[str, str]:
    """The damaged files of one cell run directory, by a cheap check (absent files are not damage:
    the cell is not trained yet).

    Returns:
        ``{file name: what is wrong}``, empty when all present files look whole (or the directory
        does not exist).
    """
    try:
        names = set(os.listdir(cell_dir))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out = {}
    for name, check in _CELL_CHECKS:
        if name in names:
            problem = check(os.path.join(cell_dir, name))
            if problem is not None:
                out[name] = problem
    return out


def _cell_lines(cell_dir: Path, bad: dict[str, str], repair: bool) -> list[str]:
    lines = []
    outputs = [n for n in bad if n != CHECKPOINT]
    if outputs:
        if repair:
            moved = ", ".join(p.name for p in set_cell_aside(cell_dir))
            done = f"set the cell's outputs aside ({moved}): {RETRAIN}"
        else:
            done = "the next run sets the cell's outputs aside (<name>.damaged) and retrains the cell"
        lines += [f"{cell_dir / n}: {bad[n]}; {done}" for n in outputs]
    if CHECKPOINT in bad:
        if repair:
            done = f"set aside as {set_aside(cell_dir / CHECKPOINT).name}: the cell trains from its first round"
        else:
            done = f"the next run sets it aside ({CHECKPOINT}.damaged) and the cell trains from its first round"
        lines.append(f"{cell_dir / CHECKPOINT}: {bad[CHECKPOINT]}; {done}")
    return lines


# --------------------------------------------------------------------------- datasets


def _dataset_fix(directory: Path) -> str:
    from fedbench.data.store import remake_fix

    return f"fix: {remake_fix(directory)}"


def _read_meta(directory: Path) -> dict:
    problem = json_problem(directory / "meta.json")
    if problem is not None:
        raise DamagedFileError(f"{directory / 'meta.json'}: {problem}; it records the checksums the other files are "
                               f"repaired against, so nothing here can be repaired; {_dataset_fix(directory)}",
                               [directory / "meta.json"])
    return json.loads((directory / "meta.json").read_text())


def _remake_dataset(directory: Path, dataset_id: str, cfg: dict, meta: dict, bad: dict[str, str],
                    mirror, trust_mirror_checksums: bool) -> str:
    """Re-prepare ``directory`` beside it and put its re-made ``bad`` files in place; returns what
    was done. Raises DamagedFileError when the data cannot be obtained or differ."""
    from fedbench.data.registry import default_cache_dir, prepare_dataset

    tmp = directory.parent / f".{directory.name}.remake{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    head = "\n".join(f"{directory / f}: {p}" for f, p in bad.items())
    paths = [directory / f for f in bad]
    try:
        try:
            prepare_dataset(dataset_id, dict(cfg), tmp, mirror=mirror, cache_dir=default_cache_dir(directory),
                            progress=False, trust_mirror_checksums=trust_mirror_checksums)
        except Exception as e:  # any reason at all: the file cannot be re-made here
            raise DamagedFileError(f"{head}\nIt cannot be re-made: preparing dataset {dataset_id!r} again failed "
                                   f"({type(e).__name__}: {e}); {_dataset_fix(directory)}", paths) from e
        differ = [f for f, digest in meta["files"].items()
                  if not (tmp / f).exists() or sha256_of(tmp / f) != digest]
        if differ:
            raise DamagedFileError(
                f"{head}\nIt cannot be re-made: preparing dataset {dataset_id!r} again gives other data "
                f"({', '.join(differ)}: sha256 differs from meta.json's; the source or its reader changed), so the "
                f"cells trained on the old data would no longer match; {_dataset_fix(directory)}", paths)
        stamp = os.stat(directory / "meta.json")
        for f in bad:
            os.replace(tmp / f, directory / f)
            os.utime(directory / f, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return "re-made from the dataset's source (sha256 matches meta.json) and put in place; meta.json untouched"


def _dataset_lines(directory: Path, dataset_id: str, cfg: dict, repair: bool, mirror,
                   trust_mirror_checksums: bool) -> list[str]:
    from fedbench.data.store import file_problems

    meta = _read_meta(directory)
    bad = file_problems(directory, meta)
    if not bad:
        return []
    if repair:
        done = _remake_dataset(directory, dataset_id, cfg, meta, bad, mirror, trust_mirror_checksums)
    else:
        done = ("the next run re-makes it from the dataset's source (and stops, naming the fix, if the re-made "
                "file differs from meta.json's checksum)")
    return [f"{directory / f}: {p}; {done}" for f, p in bad.items()]


# --------------------------------------------------------------------------- partitions


def _sidecar(directory: Path) -> tuple[dict | None, str | None]:
    """(the partition.json record ``{name: {"size", "sha256"}}`` or None, what is wrong with it or None)."""
    from fedbench.data.partition import SIDECAR

    path = directory / SIDECAR
    if not path.exists():
        return None, None  # written before partitions had one: not damage
    problem = json_problem(path)
    if problem is not None:
        return None, problem
    try:
        return dict(json.loads(path.read_text())["files"]), None
    except (KeyError, TypeError, ValueError):
        return None, "lacks its 'files' record"


def partition_problems(directory: str | os.PathLike) -> dict[str, str]:
    """The damaged files of a partition directory, by a cheap check; ``{}`` when it holds none of
    its files (not made yet). A file missing beside present ones is damaged too."""
    from fedbench.data.partition import PARTITION_FILES, SIDECAR

    directory = Path(directory)
    record, sidecar_problem = _sidecar(directory)
    present = [n for n in (*PARTITION_FILES, HEATMAP) if (directory / n).exists() or aside_path(directory / n).exists()]
    if not present:
        return {}
    out = {}
    for name in PARTITION_FILES:
        entry = (record or {}).get(name, {})
        problem = parquet_problem(directory / name, entry.get("size"), SIDECAR)
        if problem is not None:
            out[name] = problem
    problem = png_problem(directory / HEATMAP)
    if problem is not None:
        out[HEATMAP] = problem
    if sidecar_problem is not None:
        out[SIDECAR] = sidecar_problem
    return out


def _remake_partition(directory: Path, dataset_dir: Path, cfg: dict, seed: int, bad: dict[str, str]) -> str:
    """Re-make the partition beside ``directory`` and put its re-made ``bad`` files in place; returns
    what was done. Raises DamagedFileError when the re-made files differ from the record."""
    from fedbench.data.partition import PARTITION_FILES, SIDECAR, class_counts, make_partition, write_partition
    from fedbench.data.store import load_dataset

    record, _ = _sidecar(directory)
    tmp = directory.parent / f".{directory.name}.remake{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    paths = [directory / f for f in bad]
    try:
        dataset = load_dataset(dataset_dir)
        table = make_partition(dataset, dict(cfg), int(seed))
        write_partition(table, dataset, tmp)
        made, _ = _sidecar(tmp)
        # Against the record; without one (or a damaged one), against the intact files here.
        want = {n: e["sha256"] for n, e in (record or {}).items() if n in PARTITION_FILES}
        if record is None:
            want = {n: sha256_of(directory / n) for n in PARTITION_FILES if n not in bad}
        differ = [n for n, digest in want.items() if made[n]["sha256"] != digest]
        if differ:
            head = "\n".join(f"{directory / f}: {p}" for f, p in bad.items())
            raise DamagedFileError(
                f"{head}\nIt cannot be re-made: making the partition again gives other files ({', '.join(differ)}: "
                f"sha256 differs from {SIDECAR if record else 'the intact file'}; the dataset or the partitioner "
                f"changed); fix: `rm -r {directory}`, then rerun the same snakemake command (it makes the partition "
                f"again and retrains the cells that use it)", paths)
        if HEATMAP in bad:
            from fedbench.analysis.partition_plots import plot_class_counts

            plot_class_counts(class_counts(table, dataset), tmp / HEATMAP)
        present = [directory / n for n in (*PARTITION_FILES, HEATMAP, SIDECAR) if (directory / n).exists()]
        stamp = min((os.stat(p) for p in present), key=lambda s: s.st_mtime_ns, default=None)
        for name in bad:
            os.replace(tmp / name, directory / name)
            if stamp is not None:
                os.utime(directory / name, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        if record is None and SIDECAR not in bad:  # an older partition: it has its record from now on
            os.replace(tmp / SIDECAR, directory / SIDECAR)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    how = ("sha256 matches partition.json" if record else
           f"sha256 of {', '.join(want)} matches the file here; no partition.json was kept" if want else
           "not checked: no partition.json was kept and no file here is intact")
    return f"re-made from the dataset ({how}) and put in place"


# --------------------------------------------------------------------------- the folder


def verify_folder(datasets: Mapping[Path, tuple[str, dict]],
                  partitions: Mapping[Path, tuple[Path, dict, int]],
                  cells: Sequence[str | os.PathLike], *, mirror: str | os.PathLike | None = None,
                  trust_mirror_checksums: bool = False, repair: bool = True) -> list[str]:
    """Check a results folder's files (cheaply) and repair the damaged ones; see the module docstring.

    Args:
        datasets: ``{prepared dataset directory: (dataset id, resolved dataset config as given to
            fedbench.data.registry.prepare_dataset)}``; directories without meta.json (not prepared
            yet) are skipped.
        partitions: ``{partition directory: (its dataset directory, resolved partition config,
            seed)}``; directories holding none of their files are skipped.
        cells: cell run directories (each may hold metrics.parquet, summary.json,
            delta_histogram.parquet, checkpoint.pt); absent ones are skipped.
        mirror, trust_mirror_checksums: as for :func:`fedbench.data.registry.prepare_dataset`,
            used to re-make a damaged dataset file.
        repair: False: change nothing (a dry run) and say what the next run will do.

    Returns:
        One line per damaged file: ``"<path>: <what is wrong>; <what was done>"`` (repair=False:
        what the next run will do). Empty when all is whole. Datasets are repaired first, since a
        partition is re-made from its dataset.

    Raises:
        fedbench.data.errors.DamagedFileError: what cannot be repaired (a dataset's meta.json that
            does not parse; a dataset or partition whose re-made files differ from the record, or
            whose source cannot be obtained); its message names every such file and the fix, and
            lists what was repaired before.
    """
    lines, errors = [], []
    broken_datasets = set()
    for directory, (dataset_id, cfg) in datasets.items():
        directory = Path(directory)
        if not (directory / "meta.json").exists():
            continue
        try:
            lines += _dataset_lines(directory, dataset_id, cfg, repair, mirror, trust_mirror_checksums)
        except DamagedFileError as e:
            errors.append(e)
            broken_datasets.add(directory.absolute())
    for directory, (dataset_dir, cfg, seed) in partitions.items():
        directory = Path(directory)
        bad = partition_problems(directory)
        if not bad:
            continue
        if not repair:
            lines += [f"{directory / n}: {p}; the next run re-makes it from the dataset" for n, p in bad.items()]
            continue
        if Path(dataset_dir).absolute() in broken_datasets:
            continue  # its dataset's error says what to do
        try:
            done = _remake_partition(directory, Path(dataset_dir), cfg, seed, bad)
            drawn = "drawn again from the re-made partition's class counts and put in place"
            lines += [f"{directory / n}: {p}; {drawn if n == HEATMAP else done}" for n, p in bad.items()]
        except DamagedFileError as e:
            errors.append(e)
    for cell_dir in cells:
        bad = cell_problems(cell_dir)
        if bad:
            lines += _cell_lines(Path(cell_dir), bad, repair)
    if errors:
        done = ("\nRepaired before stopping:\n" + "\n".join(lines)) if lines else ""
        raise DamagedFileError("\n".join(str(e) for e in errors) + done, [p for e in errors for p in e.paths])
    return lines
