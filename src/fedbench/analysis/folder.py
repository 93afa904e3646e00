"""The results folder's cross-experiment view: every experiment's collected metrics in one table.

Each experiment's cells are collected into ``results/metrics/<experiment>.parquet``
(:func:`fedbench.analysis.collect.collect`, one file per experiment, so that running another
config file in the same folder never drops them). ``results/metrics.parquet`` and the comparison
plot are built from every experiment file present in the folder, whichever config collected it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from fedbench.files import atomic_write


def _frames(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[tuple[Path, pl.DataFrame]]:
    """(path, its rows) of each collected metrics file; raises as :func:`read_metrics`."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not paths:
        raise ValueError("no collected metrics files given")
    frames = []
    for p in map(Path, paths):
        try:
            frames.append((p, pl.read_parquet(p)))
        except Exception as e:  # noqa: BLE001 (polars raises several kinds for a damaged file)
            raise ValueError(f"{p}: not a readable Parquet file ({type(e).__name__}: {e}); it is an experiment's "
                             f"collected metrics: delete it and rerun the config file of that experiment "
                             f"(snakemake --cores 2 --configfile <its file>), which collects it again") from None
    return frames


def read_metrics(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> pl.DataFrame:
    """The collected metrics of several experiments, one after another (rows in ``paths`` order).

    Args:
        paths: ``results/metrics/<experiment>.parquet`` files, or one such file.

    Returns:
        Their rows; columns are the union (an algorithm's extra column is null in the other
        experiments' rows).

    Raises:
        ValueError: no paths, or a file that is not readable Parquet (named, with the fix).
    """
    return pl.concat([df for _, df in _frames(paths)], how="diagonal_relaxed")


def combine_experiments(paths: Sequence[str | os.PathLike], out_path: str | os.PathLike) -> pl.DataFrame:
    """Write the folder's view, ``results/metrics.parquet``: :func:`read_metrics` of ``paths``.

    Raises:
        ValueError: as :func:`read_metrics`, or two files holding the same experiment.
    """
    frames = _frames(paths)
    owners: dict[str, Path] = {}
    for p, df in frames:
        for exp in df.get_column("experiment").unique().to_list():
            if exp in owners:
                raise ValueError(f"experiment {exp!r} is in both {owners[exp]} and {p}")
            owners[exp] = p
    df = pl.concat([df for _, df in frames], how="diagonal_relaxed")
    with atomic_write(out_path) as tmp:
        df.write_parquet(tmp)
    return df
