"""How long :func:`fedbench.integrity.verify_folder` takes on a folder of many trained cells.

It runs on every workflow start, so its cell check must stay well under a second or two for the
~25,000 cells of a large folder. This writes N fake cell directories (a real-sized metrics.parquet
and summary.json each, a few with a Δ histogram), plus M directories of cells not trained yet,
then times verify_folder (best of a few runs; the first run also shows the cold-cache time only
when the page cache was dropped beforehand, which this script does not do).

    python benchmarks/verify_folder.py [--cells 20000] [--untrained 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from fedbench.integrity import verify_folder


def make_cells(root: Path, n: int, untrained: int) -> list[Path]:
    """N cell dirs with metrics.parquet (51 rows) and summary.json, and ``untrained`` absent dirs."""
    table = pa.table({"round": list(range(51)), "test_accuracy": [0.5] * 51, "status": ["ok"] * 51})
    sample = root / "sample.parquet"
    pq.write_table(table, sample)
    metrics = sample.read_bytes()
    summary = json.dumps({"spec": {"algorithm": "fedavg", "hparams": {"lr": 0.1} | {f"k{i}": i for i in range(40)}},
                          "status": "ok", "final_test_accuracy": 0.5}, indent=2) + "\n"
    cells = []
    for i in range(n):
        d = root / "runs" / f"exp{i % 7}" / f"part{i % 13}" / f"cell{i}" / "seed=0"
        d.mkdir(parents=True)
        (d / "metrics.parquet").write_bytes(metrics)
        (d / "summary.json").write_text(summary)
        if i % 50 == 0:
            (d / "delta_histogram.parquet").write_bytes(metrics)
        cells.append(d)
    cells += [root / "runs" / "new" / f"cell{i}" / "seed=0" for i in range(untrained)]
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=20000)
    ap.add_argument("--untrained", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="verify_folder_"))
    try:
        t = time.perf_counter()
        cells = make_cells(root, args.cells, args.untrained)
        print(f"wrote {args.cells} cells (+{args.untrained} untrained) in {time.perf_counter() - t:.1f} s")
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            lines = verify_folder({}, {}, cells, repair=False)
            times.append(time.perf_counter() - t)
            assert lines == [], lines
        print(f"verify_folder on {len(cells)} cell dirs: best {min(times):.3f} s, runs "
              + ", ".join(f"{x:.3f}" for x in times))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
