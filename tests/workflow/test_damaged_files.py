"""Damaged files in a results folder, one kind at a time, through the real workflow.

Each test damages one file of a finished tiny run (truncated as by a full disk or a killed process,
or not its format), then runs the same command: the message names the file, what is wrong and
what is done; only what depends on the file reruns; the results equal the undamaged run's.
A dry run first says what the next run will do and changes nothing.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_snakemake import ok, partition_dir, planned_jobs, prepared, snakemake  # noqa: E402

CONFIG = {
    "datasets": {"digits": {"source": "digits"}},
    "device": "cpu",
    "checkpoint_every": 1,
    "experiments": {
        "e": {
            "seeds": [0, 1],
            "rounds": 3,
            "sampling": {"scheme": "uniform", "participation": 0.5},
            "local": {"epochs": 1, "batch_size": 32, "lr": 0.1},
            "datasets": {"digits": {"model": {"name": "logreg"},
                                    "partitions": {"iid": {"scheme": "iid", "num_clients": 4}}}},
            "algorithms": {"fedavg": {}, "fedprox": {"mu": 0.01}},
        }
    },
}
CELL = "results/runs/e/digits/iid/fedprox/seed=1"


def jobs_of(proc) -> list[str]:
    return sorted(re.findall(r"^(?:local)?rule (\w+):", proc.stdout + proc.stderr, re.M))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def truncate(path: Path, keep: float = 0.5) -> None:
    path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])


def metrics(w: Path) -> pl.DataFrame:
    return pl.read_parquet(w / "results/metrics/e.parquet").drop("wall_seconds")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    w = tmp_path_factory.mktemp("damaged")
    ok(snakemake(w, CONFIG))
    return w, metrics(w)


def dry_then_run(w: Path) -> tuple[str, object]:
    """A dry run (its stderr), then the real run (checked ok)."""
    dry = ok(snakemake(w, CONFIG, "-n"))
    return dry.stderr, ok(snakemake(w, CONFIG))


@pytest.mark.slow
def test_a_truncated_dataset_file_is_re_made_and_nothing_reruns(run):
    w, before = run
    x = prepared(w, "digits") / "x_train.npy"
    good, meta_mtime = sha(x), (x.parent / "meta.json").stat().st_mtime_ns
    truncate(x)
    dry, proc = dry_then_run(w)
    assert f"{x.relative_to(w)}: is " in dry and "the next run re-makes it" in dry
    assert f"{x.relative_to(w)}: is " in proc.stderr and "re-made from the dataset's source" in proc.stderr
    assert sha(x) == good and (x.parent / "meta.json").stat().st_mtime_ns == meta_mtime
    assert jobs_of(proc) == [] and metrics(w).equals(before)


@pytest.mark.slow
def test_a_truncated_partition_is_re_made_and_nothing_reruns(run):
    w, before = run
    p = partition_dir(w, "digits", "iid", 1) / "partition.parquet"
    good = sha(p)
    truncate(p)
    dry, proc = dry_then_run(w)
    assert sha(p) == good and "partition.parquet" in proc.stderr and "re-made" in proc.stderr
    assert jobs_of(proc) == [] and metrics(w).equals(before)


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated metrics", "summary not json"])
def test_a_damaged_cell_output_retrains_that_cell_only(run, damage):
    w, before = run
    target = w / CELL / ("metrics.parquet" if damage == "truncated metrics" else "summary.json")
    if damage == "truncated metrics":
        truncate(target)
    else:
        target.write_text('{"status": "o')
    dry, proc = dry_then_run(w)
    assert f"{target.relative_to(w)}: " in dry and "retrains the cell" in dry
    assert f"{target.relative_to(w)}: " in proc.stderr and ".damaged" in proc.stderr
    assert jobs_of(proc) == ["aggregate", "all", "collect", "collect_folder", "compare", "scorecard", "train"]
    trained = [w_ for r, w_ in planned_jobs(proc.stdout + proc.stderr) if r == "train"]
    assert [(t["algorithm"], t["seed"]) for t in trained] == [("fedprox", "1")]
    assert (w / CELL / f"{target.name}.damaged").exists()
    assert metrics(w).equals(before)


@pytest.mark.slow
def test_a_damaged_checkpoint_is_set_aside_and_the_cell_trains_from_its_start(run):
    """A seed added after a run that was killed while training it left a torch.save zip cut short."""
    w, before = run
    more = copy.deepcopy(CONFIG)
    more["experiments"]["e"]["seeds"] = [0, 1, 2]
    cell = w / "results/runs/e/digits/iid/fedavg/seed=2"
    cell.mkdir(parents=True)
    (cell / "checkpoint.pt").write_bytes(b"PK\x03\x04" + bytes(300))
    proc = ok(snakemake(w, more))
    assert "results/runs/e/digits/iid/fedavg/seed=2/checkpoint.pt: " in proc.stderr
    assert "trains from its first round" in proc.stderr and (cell / "checkpoint.pt.damaged").exists()
    trained = [w_ for r, w_ in planned_jobs(proc.stdout + proc.stderr) if r == "train"]
    assert sorted((t["algorithm"], t["seed"]) for t in trained) == [("fedavg", "2"), ("fedprox", "2")]
    new = metrics(w).filter(pl.col("seed") == 2)
    assert new.height == 6 and set(new.get_column("status")) == {"ok"}  # 2 algorithms × 3 rounds
    ok(snakemake(w, CONFIG))  # back to two seeds: collected again without seed 2
    assert metrics(w).equals(before)


@pytest.mark.slow
def test_a_damaged_collected_file_is_collected_again(run):
    w, before = run
    f = w / "results/metrics/e.parquet"
    truncate(f)
    proc = ok(snakemake(w, CONFIG))
    assert "results/metrics/e.parquet: " in proc.stderr and "this run makes it again" in proc.stderr
    assert jobs_of(proc) == ["aggregate", "all", "collect", "collect_folder", "compare", "scorecard"]
    assert metrics(w).equals(before)


@pytest.mark.slow
def test_a_dataset_that_re_makes_differently_stops_before_any_job_with_the_fix(run, tmp_path):
    """meta.json records other data than its source now gives (as after a changed reader): the
    damaged file cannot be re-made, and the workflow stops naming it and the `rm -r` fix."""
    w, _ = run
    x = prepared(w, "digits") / "x_test.npy"
    saved = x.read_bytes()
    meta = x.parent / "meta.json"
    saved_meta, stat = meta.read_text(), meta.stat()
    meta.write_text(re.sub(r'"x_train.npy": "[0-9a-f]{64}"', '"x_train.npy": "' + "0" * 64 + '"', saved_meta))
    truncate(x)
    try:
        proc = snakemake(w, CONFIG)
        assert proc.returncode != 0
        assert f"{x.relative_to(w)}: is " in proc.stderr and f"rm -r {x.parent.relative_to(w)}" in proc.stderr
        assert "Traceback" not in proc.stderr and not re.findall(r"^(?:local)?rule (\w+):", proc.stdout, re.M)
    finally:
        x.write_bytes(saved)
        meta.write_text(saved_meta)
        os.utime(meta, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as it was: nothing downstream is newer



@pytest.mark.slow
def test_directories_of_the_old_layout_are_named_and_left_alone(run):
    """resources/datasets/<id>/ and results/partitions/<id>/ from before the directories were named
    by their parameters: said, with the command that deletes them, and not touched."""
    w, _ = run
    old = [w / "resources/datasets/digits", w / "results/partitions/digits/iid/seed=0"]
    for d in old:
        d.mkdir(parents=True)
    try:
        proc = ok(snakemake(w, CONFIG, "-n"))
        assert "resources/datasets/ holds digits in the layout before" in proc.stderr
        assert "rm -r resources/datasets/digits" in proc.stderr and "rm -r results/partitions/digits" in proc.stderr
        assert all(d.is_dir() for d in old)
    finally:
        for d in (w / "resources/datasets/digits", w / "results/partitions/digits"):
            for p in sorted(d.rglob("*"), reverse=True):
                p.rmdir()
            d.rmdir()
