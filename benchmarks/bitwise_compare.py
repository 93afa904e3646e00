"""Bitwise before/after check of what the workflow computes: a refactor must not change one bit.

    python benchmarks/bitwise_compare.py record [--commit REV | --tree] --out DIR [--configs A.yaml ...]
    python benchmarks/bitwise_compare.py compare BEFORE AFTER
    python benchmarks/bitwise_compare.py run --before REV [--after REV | --tree] [--out DIR]

``record`` runs the default suite (config/config.yaml) and every shipped quick file
(config/experiments/*_quick.yaml) of one code version, each with ``snakemake --cores 2
--configfile <file>`` in a fresh working folder of its own. The code is commit REV (default HEAD),
checked out into a temporary ``git worktree`` so the live tree is untouched, or with ``--tree``
the live working tree, uncommitted edits included; PYTHONPATH points at that code's ``src`` so
every process imports its ``fedbench``, not the editable install (each log names the
``fedbench.__file__`` the run imports). It then reads every parquet file of every cell
(``results/runs/**/metrics.parquet``, and ``delta_histogram.parquet`` where an experiment keeps
them) and writes ``DIR/cells.parquet``: one row per file row, keyed by (config file, file name,
cell identity: experiment, dataset, partition, algorithm, seed, as written in the file itself,
row number), float columns as the int64 of their IEEE 754 bits (named ``<column>@bits``, null
kept null), every other column as is. ``DIR/record.json`` holds the code version and each
file's wall time; ``DIR/logs/`` the Snakemake logs.

``compare`` matches the cells of two records by that identity (never by directory names), and
compares every column bit for bit, ``hparams_id`` included. It prints the cells compared, the
cells on one side only (listed; reported, not failures by themselves), and per differing column
the values and cells that differ, the largest absolute and relative difference and a few
examples. Exit status 1 when a cell present on both sides differs anywhere, 0 otherwise.

Not compared (not recorded): :data:`IGNORED`, the wall-clock column ``wall_seconds``; two
records of one commit on one machine are otherwise bitwise equal (README.md: "Two runs on one
machine give bitwise the same metrics"). Records made on different CPUs may differ in the last
bits (torch's and MKL's vector kernels): compare records made on one machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
#: Columns not compared: wall-clock times, different on every run.
IGNORED = ("wall_seconds",)
IDENTITY = ["experiment", "dataset", "partition", "algorithm", "seed"]
KEY = ["config", "file", *IDENTITY]
BITS = "@bits"


def _bits(s: pl.Series) -> pl.Series:
    """The int64 (int32) bit patterns of a float64 (float32) column, null where it is null."""
    raw = s.fill_null(0).to_numpy().view(np.int64 if s.dtype == pl.Float64 else np.int32)
    return pl.Series(s.name + BITS, raw).set(s.is_null(), None)


def _floats(s: pl.Series) -> np.ndarray:
    """The floats of a ``@bits`` column (NaN where null)."""
    raw = s.fill_null(0).to_numpy()
    values = raw.view(np.float64 if raw.dtype.itemsize == 8 else np.float32).astype(np.float64)
    return np.where(s.is_null().to_numpy(), np.nan, values)


def read_cells(runs: Path, config: str) -> pl.DataFrame:
    """Every parquet file of every cell under ``runs`` (results/runs), floats as bits, keyed."""
    frames = []
    for path in sorted(runs.rglob("*.parquet")):
        df = pl.read_parquet(path).drop(IGNORED, strict=False)
        ident = df.select(IDENTITY).unique()
        if ident.height != 1:
            raise ValueError(f"{path}: not one cell's file ({ident.height} identities)")
        df = pl.DataFrame([_bits(df[c]) if df[c].dtype in (pl.Float64, pl.Float32) and c not in IDENTITY else df[c]
                           for c in df.columns])
        frames.append(df.with_columns(config=pl.lit(config), file=pl.lit(path.name),
                                      row=pl.int_range(pl.len(), dtype=pl.Int64)))
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def run_suite(code: Path, config: str, workdir: Path, log: Path) -> float:
    """``snakemake --cores 2 --configfile <config>`` of ``code`` in ``workdir``; its wall seconds."""
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env.update(PYTHONPATH=str(code / "src"), MPLBACKEND="Agg")
    workdir.mkdir(parents=True)
    with log.open("w") as f:
        imported = subprocess.run([sys.executable, "-c", "import fedbench; print(fedbench.__file__)"], env=env,
                                  capture_output=True, text=True, check=True).stdout.strip()
        f.write(f"PYTHONPATH={env['PYTHONPATH']}: fedbench.__file__ = {imported}\n")
        f.flush()
        if not Path(imported).is_relative_to(code / "src"):
            raise RuntimeError(f"{config}: fedbench imported from {imported}, not from {code / 'src'}")
        t = time.perf_counter()
        rc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(code / "Snakefile"),
                             "--directory", str(workdir), "--configfile", str(code / config), "--cores", "2"],
                            cwd=workdir, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise RuntimeError(f"{config}: snakemake exited {rc}; log: {log}")
    return time.perf_counter() - t


def record(out: Path, commit: str | None, configs: list[str] | None, keep: bool) -> None:
    """Run the suites of ``commit`` (None: the live tree) and write ``out/cells.parquet``."""
    tmp = Path(tempfile.mkdtemp(prefix="bitwise_"))
    code = REPO
    if commit is not None:
        code = tmp / "code"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(code), commit],
                       check=True)
    try:
        rev = subprocess.run(["git", "-C", str(code), "rev-parse", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        configs = configs or ["config/config.yaml"] + sorted(
            str(p.relative_to(code)) for p in (code / "config" / "experiments").glob("*_quick.yaml"))
        (out / "logs").mkdir(parents=True, exist_ok=True)
        meta = {"code": "live tree (uncommitted edits included) at " + rev if commit is None else rev,
                "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "wall_seconds": {}}
        frames = []
        for config in configs:
            workdir = tmp / "work" / Path(config).stem
            meta["wall_seconds"][config] = round(run_suite(code, config, workdir,
                                                           out / "logs" / f"{Path(config).stem}.log"), 1)
            frames.append(read_cells(workdir / "results" / "runs", config))
            print(f"{config}: {meta['wall_seconds'][config]} s, {frames[-1].select(KEY).n_unique()} cell files",
                  flush=True)
        pl.concat(frames, how="diagonal_relaxed").write_parquet(out / "cells.parquet")
        (out / "record.json").write_text(json.dumps(meta, indent=2) + "\n")
    finally:
        if commit is not None:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(code)], check=False)
        if keep:
            print(f"working folders kept: {tmp / 'work'}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _load(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path / "cells.parquet" if path.is_dir() else path).drop(IGNORED, strict=False)


def _name(row: dict) -> str:
    return f"{row['config']}:{row['file']} {'/'.join(str(row[c]) for c in IDENTITY[:-1])}/seed={row['seed']}"


def compare(before: Path, after: Path, examples: int = 3) -> int:
    """Print the differences of two records; 1 if a cell of both differs, else 0."""
    a, b = _load(before), _load(after)
    cells_a, cells_b = a.select(KEY).unique(), b.select(KEY).unique()
    common = cells_a.join(cells_b, on=KEY)
    print(f"before: {before} ({cells_a.height} cell files), after: {after} ({cells_b.height} cell files)")
    print(f"cell files compared: {common.height}")
    for side, x, y in (("before", cells_a, cells_b), ("after", cells_b, cells_a)):
        only = x.join(y, on=KEY, how="anti").sort(KEY)
        print(f"cells only {side}: {only.height}" + "".join(f"\n  {_name(r)}" for r in only.head(20).to_dicts())
              + ("\n  ..." if only.height > 20 else ""))
    a, b = a.join(common, on=KEY), b.join(common, on=KEY)
    rows_a, rows_b = a.select(*KEY, "row"), b.select(*KEY, "row")
    extra = pl.concat([rows_a.join(rows_b, on=[*KEY, "row"], how="anti"),
                       rows_b.join(rows_a, on=[*KEY, "row"], how="anti")])
    differ = {tuple(r) for r in extra.select(KEY).unique().iter_rows()}
    if extra.height:
        print(f"rows on one side only: {extra.height} in {len(differ)} cells, e.g. {_name(extra.row(0, named=True))}")
    joined = a.join(b.rename({c: c + "#after" for c in b.columns if c not in (*KEY, "row")}), on=[*KEY, "row"])
    for col in sorted((set(a.columns) | set(b.columns)) - {*KEY, "row"}):
        x = joined[col] if col in a.columns else pl.repeat(None, joined.height, eager=True)
        y = joined[col + "#after"] if col in b.columns else pl.repeat(None, joined.height, eager=True)
        if x.dtype != y.dtype:
            x, y = x.cast(pl.String), y.cast(pl.String)
        bad = x.ne_missing(y) | (col in a.columns and col in b.columns and a[col].dtype != b[col].dtype)
        if not bad.any():
            continue
        hits = joined.filter(bad)
        cells = hits.select(KEY).unique()
        differ |= {tuple(r) for r in cells.iter_rows()}
        line = f"column {col}: {int(bad.sum())} values in {cells.height} cells differ"
        if col in a.columns and col in b.columns and a[col].dtype != b[col].dtype:
            line += f" (type {a[col].dtype} before, {b[col].dtype} after)"
        xs, ys = x.filter(bad), y.filter(bad)
        if col.endswith(BITS) and xs.dtype != pl.String:
            xs, ys = _floats(xs), _floats(ys)
            with np.errstate(invalid="ignore", divide="ignore"):  # NaN on one side; 0.0 against -0.0
                d = np.abs(xs - ys)
                rel = d / np.maximum(np.abs(xs), np.abs(ys))
            xs, ys = xs.tolist(), ys.tolist()
            line += f"; max |diff| {np.nanmax(d, initial=0):.3g}, max rel. diff {np.nanmax(rel, initial=0):.3g}"
        print(line)
        for i, r in enumerate(hits.head(examples).to_dicts()):
            print(f"  {_name(r)} row {r['row']}: {xs[i]!r} -> {ys[i]!r}")
    print(f"cell files that differ: {len(differ)} of {common.height}")
    return int(bool(differ))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    rec = sub.add_parser("record", help="run the suites of one code version and record their cells")
    rec.add_argument("--commit", default="HEAD")
    rec.add_argument("--tree", action="store_true", help="the live working tree instead of a commit")
    rec.add_argument("--out", type=Path, required=True)
    cmp_ = sub.add_parser("compare", help="compare two records bit for bit")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    both = sub.add_parser("run", help="record --before, record --after (or the live tree), compare")
    both.add_argument("--before", required=True)
    both.add_argument("--after")
    both.add_argument("--tree", action="store_true")
    both.add_argument("--out", type=Path, help="where the two records go (default: a temporary folder)")
    for p in (rec, both):
        p.add_argument("--configs", nargs="+", help="config files relative to the repository (default: all)")
        p.add_argument("--keep", action="store_true", help="keep the working folders")
    args = ap.parse_args()
    if args.mode == "compare":
        return compare(args.before, args.after)
    if args.mode == "record":
        record(args.out, None if args.tree else args.commit, args.configs, args.keep)
        return 0
    if (args.after is None) == (not args.tree):
        ap.error("run: give exactly one of --after REV and --tree")
    out = args.out or Path(tempfile.mkdtemp(prefix="bitwise_run_"))
    print(f"records: {out}/before, {out}/after")
    record(out / "before", args.before, args.configs, args.keep)
    record(out / "after", args.after, args.configs, args.keep)
    return compare(out / "before", out / "after")


if __name__ == "__main__":
    sys.exit(main())
