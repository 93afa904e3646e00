"""fedbench.integrity.verify_folder: damaged dataset, partition and cell files found and repaired."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from fedbench.data.errors import DamagedFileError, DataUnavailableError
from fedbench.data.partition import class_counts, make_partition, write_partition
from fedbench.data.registry import prepare_dataset
from fedbench.data.store import load_dataset
from fedbench.integrity import cell_problems, partition_problems, verify_folder

DIGITS = {"source": "digits", "test_fraction": 0.2, "split_seed": 0}
PART = {"scheme": "dirichlet", "alpha": 0.5, "num_clients": 5}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A prepared digits dataset, one partition of it (with its heat map) and two trained cells."""
    from fedbench.analysis.partition_plots import plot_class_counts

    root = tmp_path_factory.mktemp("pristine")
    data = prepare_dataset("digits", DIGITS, root / "resources" / "datasets" / "digits-abc", progress=False)
    ds = load_dataset(data)
    part = root / "results" / "partitions" / "digits-abc" / "dir-def" / "seed=0"
    table = make_partition(ds, PART, 0)
    write_partition(table, ds, part)
    plot_class_counts(class_counts(table, ds), part / "heatmap.png")
    for i in range(2):
        cell = root / "results" / "runs" / f"cell{i}"
        cell.mkdir(parents=True)
        pq.write_table(pa.table({"round": list(range(20)), "acc": [0.5] * 20}), cell / "metrics.parquet")
        (cell / "summary.json").write_text(json.dumps({"status": "ok", "cell": i}) + "\n")
    pq.write_table(pa.table({"bin": [1, 2, 3]}), root / "results" / "runs" / "cell0" / "delta_histogram.parquet")
    return root


@pytest.fixture
def folder(pristine, tmp_path):
    """A fresh copy of :func:`pristine` (mtimes kept) and verify_folder's arguments for it."""
    root = tmp_path / "f"
    shutil.copytree(pristine, root)
    data = root / "resources" / "datasets" / "digits-abc"
    part = root / "results" / "partitions" / "digits-abc" / "dir-def" / "seed=0"
    cells = [root / "results" / "runs" / f"cell{i}" for i in range(2)] + [root / "results" / "runs" / "untrained"]
    args = ({data: ("digits", DIGITS), root / "resources" / "datasets" / "unprepared": ("x", DIGITS)},
            {part: (data, PART, 0)}, cells)
    return root, data, part, cells, args


def snapshot(root):
    """Every file under ``root``: (bytes, mtime in ns)."""
    return {p.relative_to(root): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def truncate(path, keep=1000):
    path.write_bytes(path.read_bytes()[:keep])


def flip(path, offset):
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_a_whole_folder_passes_and_nothing_changes(folder):
    root, _, _, _, args = folder
    before = snapshot(root)
    assert verify_folder(*args) == []
    assert snapshot(root) == before


# ------------------------------------------------------------------ datasets


@pytest.mark.parametrize("damage", ["truncate", "remove", "flip_then_load"])
def test_a_damaged_dataset_file_is_re_made_bitwise_and_meta_json_untouched(folder, damage):
    root, data, _, _, args = folder
    path = data / "x_train.npy"
    original, meta_stat = path.read_bytes(), (data / "meta.json").stat()
    if damage == "truncate":
        truncate(path)
    elif damage == "remove":
        path.unlink()
    else:  # a changed header byte, same size: the train job's read fails, the file is set aside
        flip(path, 20)
        with pytest.raises(DamagedFileError, match="set aside as x_train.npy.damaged"):
            load_dataset(data)
    lines = verify_folder(*args)
    assert len(lines) == 1 and lines[0].startswith(f"{path}: ")
    expected = {"truncate": "is 1,000 bytes, meta.json records", "remove": "is missing;",
                "flip_then_load": "is missing (its damaged copy was set aside as x_train.npy.damaged)"}[damage]
    assert expected in lines[0] and "re-made from the dataset's source" in lines[0]
    assert path.read_bytes() == original
    assert (data / "meta.json").stat().st_mtime_ns == meta_stat.st_mtime_ns
    assert path.stat().st_mtime_ns == meta_stat.st_mtime_ns  # no newer than meta.json
    assert not [p for p in data.parent.iterdir() if p.name.startswith(".")]  # the temporary is gone
    assert verify_folder(*args) == []
    load_dataset(data, verify=True)


def test_dry_run_reports_and_changes_nothing(folder):
    root, data, part, cells, args = folder
    truncate(data / "y_test.npy", 100)
    truncate(part / "partition.parquet")
    (cells[1] / "summary.json").write_text('{"status": "o')
    before = snapshot(root)
    lines = verify_folder(*args, repair=False)
    assert snapshot(root) == before
    assert [line.split(": ")[0] for line in lines] == [str(data / "y_test.npy"), str(part / "partition.parquet"),
                                                      str(cells[1] / "summary.json")]
    assert "the next run re-makes it" in lines[0] and "and retrains the cell" in lines[2]


def test_re_made_data_that_differ_stop_with_the_fix_and_replace_nothing(folder):
    root, data, part, cells, args = folder
    truncate(data / "x_test.npy")
    before = snapshot(root)
    other = ({data: ("digits", {**DIGITS, "split_seed": 1})}, args[1], args[2])  # the source "changed"
    with pytest.raises(DamagedFileError) as e:
        verify_folder(*other)
    msg = str(e.value)
    assert msg.startswith(f"{data / 'x_test.npy'}: is 1,000 bytes, meta.json records")
    assert "gives other data" in msg and f"fix: `rm -r {data}`, then rerun the same snakemake command" in msg
    assert e.value.paths == [data / "x_test.npy"]
    assert snapshot(root) == before  # the partition (whose dataset is broken) is not touched either


def test_a_source_that_cannot_be_obtained_stops_with_the_fix(folder, monkeypatch):
    import fedbench.data.registry as registry

    _, data, _, _, args = folder
    (data / "y_train.npy").unlink()

    def offline(*a, **k):
        raise DataUnavailableError("no network and no mirror")

    monkeypatch.setattr(registry, "prepare_dataset", offline)
    with pytest.raises(DamagedFileError, match=r"(?s)y_train.npy: is missing.*cannot be re-made.*no network.*rm -r"):
        verify_folder(*args)


def test_damaged_meta_json_cannot_be_repaired(folder):
    _, data, _, _, args = folder
    truncate(data / "meta.json", 50)
    for repair in (True, False):
        with pytest.raises(DamagedFileError, match=rf"meta.json: is not valid JSON.*fix: `rm -r {data}`"):
            verify_folder(*args, repair=repair)


def test_an_old_meta_json_without_sizes_still_catches_truncation(folder):
    _, data, _, _, args = folder
    meta = json.loads((data / "meta.json").read_text())
    del meta["sizes"]
    (data / "meta.json").write_text(json.dumps(meta))
    original = (data / "x_train.npy").read_bytes()
    truncate(data / "x_train.npy", 5000)
    lines = verify_folder(*args)
    assert "is 5,000 bytes, its .npy header implies" in lines[0]
    assert (data / "x_train.npy").read_bytes() == original


# ------------------------------------------------------------------ partitions


def test_damaged_partition_files_are_re_made_in_place(folder):
    _, _, part, _, args = folder
    originals = {n: (part / n).read_bytes() for n in ("partition.parquet", "class_counts.parquet")}
    job_end = max(f.stat().st_mtime_ns for f in part.iterdir())  # when the partition job wrote its last file
    truncate(part / "partition.parquet")
    (part / "class_counts.parquet").unlink()
    truncate(part / "heatmap.png", 3000)
    lines = verify_folder(*args)
    assert len(lines) == 3 and all("re-made from the dataset (sha256 matches partition.json)" in x for x in lines[:2])
    assert lines[2].endswith("heatmap.png: does not end with PNG's IEND chunk (truncated: 3,000 bytes); drawn again "
                             "from the re-made partition's class counts and put in place")
    assert (part / "heatmap.png").read_bytes()[-12:] == b"\x00\x00\x00\x00IEND\xaeB`\x82"
    assert "partition.parquet: is 1,000 bytes, partition.json records" in lines[1]
    for n, raw in originals.items():
        assert (part / n).read_bytes() == raw
        assert (part / n).stat().st_mtime_ns <= job_end  # not newer than the cells trained after: none reruns
    assert partition_problems(part) == {}


def test_a_partition_without_a_record_is_checked_against_its_intact_files(folder):
    _, _, part, _, args = folder
    (part / "partition.json").unlink()
    original = (part / "partition.parquet").read_bytes()
    flip(part / "partition.parquet", -2)  # the footer magic: PAR1 no longer ends the file
    lines = verify_folder(*args)
    assert "does not end with Parquet's PAR1 footer" in lines[0]
    assert "(sha256 of class_counts.parquet matches the file here; no partition.json was kept)" in lines[0]
    assert (part / "partition.parquet").read_bytes() == original
    assert (part / "partition.json").exists()  # kept from now on


def test_a_partition_that_re_makes_differently_stops_with_the_fix(folder):
    root, data, part, _, args = folder
    truncate(part / "class_counts.parquet")
    before = snapshot(root)
    with pytest.raises(DamagedFileError, match=rf"(?s)class_counts.parquet: .*gives other files.*`rm -r {part}`"):
        verify_folder(args[0], {part: (data, {**PART, "alpha": 0.1}, 0)}, [])
    assert snapshot(root) == before


# ------------------------------------------------------------------ cells


@pytest.mark.parametrize("name,damage", [("metrics.parquet", "truncate"), ("summary.json", "truncate"),
                                         ("delta_histogram.parquet", "flip_tail"), ("metrics.parquet", "empty")])
def test_a_damaged_cell_output_sets_the_cells_outputs_aside(folder, name, damage):
    _, _, _, cells, args = folder
    path = cells[0] / name
    if damage == "truncate":
        truncate(path, 10)
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        flip(path, -1)
    lines = verify_folder(*args)
    assert len(lines) == 1 and lines[0].startswith(f"{path}: ")
    assert "Snakemake retrains this cell" in lines[0]
    assert sorted(p.name for p in cells[0].iterdir()) == ["delta_histogram.parquet.damaged",
                                                          "metrics.parquet.damaged", "summary.json.damaged"]
    assert sorted(p.name for p in cells[1].iterdir()) == ["metrics.parquet", "summary.json"]  # untouched
    assert verify_folder(*args) == []


def test_a_truncated_checkpoint_is_set_aside_alone(folder):
    _, _, _, cells, args = folder
    ckpt = cells[1] / "checkpoint.pt"
    torch.save({"format": 2, "x": torch.zeros(100)}, ckpt)
    assert cell_problems(cells[1]) == {}
    truncate(ckpt, 300)
    lines = verify_folder(*args)
    assert len(lines) == 1 and "does not end with a zip directory" in lines[0]
    assert "set aside as checkpoint.pt.damaged: the cell trains from its first round" in lines[0]
    assert sorted(p.name for p in cells[1].iterdir()) == ["checkpoint.pt.damaged", "metrics.parquet",
                                                          "summary.json"]


def test_cell_problems_of_an_absent_directory_is_empty(tmp_path):
    assert cell_problems(tmp_path / "nope") == {}
    os.mkdir(tmp_path / "empty")
    assert cell_problems(tmp_path / "empty") == {}
