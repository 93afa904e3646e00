"""fedbench.filecheck: the cheap whole-file checks and setting a damaged file aside."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from fedbench.filecheck import (
    json_problem,
    npy_problem,
    npy_size,
    parquet_problem,
    png_problem,
    set_aside,
    size_problem,
    zip_problem,
)


def _png(path):
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1, 1))
    fig.savefig(path)
    plt.close(fig)


WRITERS = {
    "parquet": (lambda p: pq.write_table(pa.table({"a": list(range(100))}), p), parquet_problem),
    "npy": (lambda p: np.save(p, np.arange(60.0).reshape(3, 20)), npy_problem),
    "png": (_png, png_problem),
    "zip": (lambda p: torch.save({"x": torch.ones(50)}, p), zip_problem),
    "json": (lambda p: p.write_text('{"a": [1, 2, {"b": "c"}]}'), json_problem),
}


@pytest.mark.parametrize("kind", WRITERS)
def test_a_whole_file_passes_and_every_truncation_is_caught(tmp_path, kind):
    write, check = WRITERS[kind]
    path = tmp_path / f"f.{kind}"
    write(path)
    assert check(path) is None
    raw = path.read_bytes()
    cuts = sorted({0, 1, 3, 8, 12, len(raw) // 2, len(raw) - 2, len(raw) - 1})
    for n in cuts:
        path.write_bytes(raw[:n])
        assert check(path) is not None, n
    path.unlink()
    assert check(path) == "is missing"


def test_npy_size_is_what_the_header_implies(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((7, 3), dtype=np.int16))
    assert npy_size(tmp_path / "a.npy") == (tmp_path / "a.npy").stat().st_size
    assert npy_problem(tmp_path / "a.npy", expected=10) == "is 170 bytes, meta.json records 10 (grown)"
    with open(tmp_path / "a.npy", "ab") as f:
        f.write(b"xx")
    assert "its .npy header implies 170 (grown)" in npy_problem(tmp_path / "a.npy")


def test_parquet_and_size_messages(tmp_path):
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path)
    size = path.stat().st_size
    want = f"is {size:,} bytes, partition.json records {size + 1:,}"
    assert parquet_problem(path, size + 1, "partition.json") == want
    path.write_bytes(path.read_bytes()[:-1])
    assert parquet_problem(path) == f"does not end with Parquet's PAR1 footer (truncated: {size - 1:,} bytes)"
    assert size_problem(path, size) == f"is {size - 1:,} bytes, meta.json records {size:,} (truncated)"


def test_set_aside_renames_and_missing_names_the_copy(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text("{")
    assert json_problem(path).startswith("is not valid JSON")
    assert set_aside(path) == tmp_path / "summary.json.damaged"
    assert not path.exists() and (tmp_path / "summary.json.damaged").read_text() == "{"
    assert json_problem(path) == "is missing (its damaged copy was set aside as summary.json.damaged)"
    assert set_aside(path) is None
