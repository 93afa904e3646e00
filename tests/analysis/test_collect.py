"""fedbench.analysis.collect: explicit file list, schema check, duplicate cells."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fedbench.analysis.collect import POLARS_SCHEMA, collect
from fedbench.metrics.schema import METRICS_SCHEMA


@pytest.fixture
def write(mr):
    def _write(path, rows):
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(mr.table(rows), path)
        return path

    return _write


def test_collect_concatenates_in_order_and_checks_schema(tmp_path, write, mr):
    a = write(tmp_path / "a" / "metrics.parquet", mr.run_rows([0.1, 0.2], algorithm="fedavg", seed=0))
    b = write(tmp_path / "b" / "metrics.parquet", mr.run_rows([0.3, 0.4, 0.5], algorithm="fedprox", seed=1))
    stale = write(tmp_path / "stale" / "metrics.parquet", mr.run_rows([0.9], algorithm="old"))  # not listed
    out = tmp_path / "results" / "metrics.parquet"
    df = collect([a, b], out)
    assert out.exists()
    back = pl.read_parquet(out)
    assert back.equals(df)
    assert back.height == 5
    assert back.columns == [*METRICS_SCHEMA.names, "suboptimality"]
    assert dict(back.schema) == {**POLARS_SCHEMA, "suboptimality": pl.Float64}
    assert back.get_column("suboptimality").null_count() == 5  # no F* given
    assert back.get_column("algorithm").to_list() == ["fedavg"] * 2 + ["fedprox"] * 3
    assert "old" not in back.get_column("algorithm").to_list()
    assert stale.exists()


def test_collect_suboptimality_is_train_objective_minus_the_cells_optimum(tmp_path, write, mr):
    rows_a = mr.run_rows([0.1, 0.2, 0.3], algorithm="fedac", seed=0)
    rows_b = mr.run_rows([0.1, 0.2], algorithm="fedavg", seed=1)
    rows_c = mr.run_rows([0.5], algorithm="other", seed=0)
    for rows in (rows_a, rows_b, rows_c):
        for r in rows:
            r["train_objective"] = 0.5 + 1.0 / r["round"]
    paths = [write(tmp_path / f"{i}.parquet", rows) for i, rows in enumerate((rows_a, rows_b, rows_c))]
    optima = {("e", "d", "p", "fedac", 0): 0.25, ("e", "d", "p", "fedavg", 1): 0.5}
    df = collect(paths, tmp_path / "all.parquet", optima=optima)
    got = df.get_column("suboptimality").to_list()
    assert got == [0.5 + 1.0 / t - 0.25 for t in (1, 2, 3)] + [0.5 + 1.0 / t - 0.5 for t in (1, 2)] + [None]
    assert df.get_column("algorithm").to_list() == ["fedac"] * 3 + ["fedavg"] * 2 + ["other"]  # order kept


def test_collect_keeps_algorithm_extra_columns(tmp_path, write, mr):
    t = mr.table(mr.run_rows([0.1, 0.2], algorithm="ea"))
    t = t.append_column("ea_sensitivity", pa.array([0.5, 0.25], pa.float64()))
    pa_path = tmp_path / "x.parquet"
    pq.write_table(t, pa_path)
    b = write(tmp_path / "y.parquet", mr.run_rows([0.3], algorithm="fedavg"))
    df = collect([pa_path, b], tmp_path / "all.parquet")
    assert df.columns[-1] == "ea_sensitivity"
    assert df.get_column("ea_sensitivity").to_list() == [0.5, 0.25, None]


def test_collect_rejects_schema_drift_naming_the_file(tmp_path, write, mr):
    good = write(tmp_path / "good.parquet", mr.run_rows([0.1]))
    t = mr.table(mr.run_rows([0.2], algorithm="b")).drop(["test_accuracy"])
    bad = tmp_path / "bad.parquet"
    pq.write_table(t, bad)
    with pytest.raises(ValueError, match=r"bad\.parquet.*test_accuracy"):
        collect([good, bad], tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()


def test_collect_rejects_wrong_type_and_unknown_status(tmp_path, write, mr):
    t = mr.table(mr.run_rows([0.1]))
    t = t.set_column(t.schema.get_field_index("seed"), "seed", pa.array(["0"]))
    pq.write_table(t, tmp_path / "typed.parquet")
    with pytest.raises(ValueError, match="'seed' has type"):
        collect([tmp_path / "typed.parquet"], tmp_path / "out.parquet")
    rows = mr.run_rows([0.1])
    rows[0]["status"] = "exploded"
    write(tmp_path / "status.parquet", rows)
    with pytest.raises(ValueError, match="exploded"):
        collect([tmp_path / "status.parquet"], tmp_path / "out.parquet")


def test_collect_rejects_duplicate_cells_and_empty_input(tmp_path, write, mr):
    a = write(tmp_path / "a.parquet", mr.run_rows([0.1]))
    b = write(tmp_path / "b.parquet", mr.run_rows([0.2]))
    with pytest.raises(ValueError, match="appears in both"):
        collect([a, b], tmp_path / "out.parquet")
    with pytest.raises(ValueError, match="no metrics files"):
        collect([], tmp_path / "out.parquet")


def test_collect_fills_columns_added_later_with_nulls(tmp_path, write, mr):
    from fedbench.metrics.schema import ADDED_COLUMNS

    extra = {"boosted_pct": 12.5, "train_accuracy": 0.5, "uplink_entropy_bits_delta": 0.5}
    new = write(tmp_path / "new.parquet", [{**r, **extra} for r in mr.run_rows([0.1], algorithm="n")])
    old_table = mr.table(mr.run_rows([0.2, 0.3], algorithm="o")).drop(list(ADDED_COLUMNS))  # an older cell file
    old = tmp_path / "old.parquet"
    pq.write_table(old_table, old)
    df = collect([new, old], tmp_path / "all.parquet")
    assert df.columns == [*METRICS_SCHEMA.names, "suboptimality"]
    assert df.get_column("boosted_pct").to_list() == [12.5, None, None]
    assert df.get_column("uplink_entropy_bits_delta").to_list() == [0.5, None, None]


def test_collect_sets_unreadable_cells_aside_and_names_them(tmp_path, write, mr):
    from fedbench.data.errors import DamagedFileError

    cells = [tmp_path / "runs" / name for name in ("a", "b", "c")]
    paths = [write(c / "metrics.parquet", mr.run_rows([0.1, 0.2], algorithm=c.name)) for c in cells]
    for c in cells:
        (c / "summary.json").write_text("{}\n")
    good = paths[1].read_bytes()
    paths[0].write_bytes(paths[0].read_bytes()[:300])  # truncated: no PAR1 footer
    raw = bytearray(paths[2].read_bytes())
    raw[4:40] = b"\xff" * 36  # the first page header: same size, unreadable
    paths[2].write_bytes(bytes(raw))
    out = tmp_path / "metrics" / "e.parquet"
    with pytest.raises(DamagedFileError) as e:
        collect(paths, out)
    lines = str(e.value).splitlines()
    assert lines[0].startswith(f"{paths[0]}: cannot be read (ComputeError: ") and "PAR1" in lines[0]
    assert lines[1].startswith(f"{paths[2]}: cannot be read (")
    for line in lines[:2]:
        assert line.endswith("set this cell's outputs aside (metrics.parquet.damaged, summary.json.damaged)")
    assert lines[2] == "fix: rerun the same command: it retrains just these 2 cells and collects again"
    assert e.value.paths == [paths[0], paths[2]]
    for c in (cells[0], cells[2]):
        assert sorted(p.name for p in c.iterdir()) == ["metrics.parquet.damaged", "summary.json.damaged"]
    assert paths[1].read_bytes() == good and (cells[1] / "summary.json").exists()
    assert not out.exists()
