"""benchmarks/bitwise_compare.py compare: one flipped bit of one float is a difference (exit 1);
equal bits, a NaN and a null included, and a different wall_seconds are not (exit 0)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bitwise_compare.py"


def _record(folder: Path, loss: list[float], wall: float) -> Path:
    """A record of one cell (two rows) whose train_loss is ``loss``."""
    spec = importlib.util.spec_from_file_location("bitwise_compare", SCRIPT)
    bc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bc)
    cell = folder / "runs" / "e" / "digits" / "iid" / "fedavg" / "seed=0"
    cell.mkdir(parents=True)
    pl.DataFrame({"experiment": "e", "dataset": "digits", "partition": "iid", "algorithm": "fedavg", "seed": 0,
                  "round": [1, 2], "train_loss": loss, "test_pgd_accuracy": pl.Series([None, None], dtype=pl.Float64),
                  "wall_seconds": wall, "status": "ok"}).write_parquet(cell / "metrics.parquet")
    bc.read_cells(folder / "runs", "config/config.yaml").write_parquet(folder / "cells.parquet")
    return folder


def _compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "compare", str(a), str(b)], capture_output=True, text=True,
                          timeout=60)


def test_one_flipped_bit_differs_and_equal_bits_do_not(tmp_path):
    before = _record(tmp_path / "before", [0.25, float("nan")], wall=1.0)
    same = _record(tmp_path / "same", [0.25, float("nan")], wall=2.0)
    flipped = _record(tmp_path / "flipped", [float(np.nextafter(0.25, 1)), float("nan")], wall=1.0)
    r = _compare(before, same)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cell files compared: 1" in r.stdout and "cell files that differ: 0 of 1" in r.stdout
    r = _compare(before, flipped)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "column train_loss@bits: 1 values in 1 cells differ" in r.stdout
