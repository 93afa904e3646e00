import json

import numpy as np
import pytest

from fedbench.data.errors import DamagedFileError
from fedbench.data.store import Dataset, load_dataset, write_dataset


def _ds(natural=False):
    rng = np.random.default_rng(0)
    return Dataset(
        name="toy",
        x_train=rng.normal(size=(30, 1, 2, 2)),
        y_train=rng.integers(0, 3, 30),
        x_test=rng.normal(size=(10, 1, 2, 2)),
        y_test=rng.integers(0, 3, 10),
        num_classes=3,
        client_train=np.repeat(np.arange(3), 10) if natural else None,
        client_test=np.arange(10) % 3 if natural else None,
    )


@pytest.mark.parametrize("natural", [False, True])
def test_roundtrip_memory_mapped(tmp_path, natural):
    ds = _ds(natural)
    write_dataset(tmp_path / "toy", ds, source="test", params={"a": 1})
    back = load_dataset(tmp_path / "toy", verify=True)
    assert isinstance(back.x_train, np.memmap)
    assert back.x_train.dtype == np.float32 and back.y_train.dtype == np.int64
    np.testing.assert_allclose(back.x_train, ds.x_train.astype(np.float32))
    np.testing.assert_array_equal(back.y_test, ds.y_test)
    assert back.feature_shape == (1, 2, 2) and back.num_classes == 3
    assert back.has_natural_clients == natural
    meta = json.loads((tmp_path / "toy" / "meta.json").read_text())
    assert meta["params"] == {"a": 1} and meta["n_train"] == 30 and set(meta["files"]) >= {"x_train.npy"}


def test_corrupt_file_is_refused_with_its_name(tmp_path):
    write_dataset(tmp_path / "toy", _ds())
    path = tmp_path / "toy" / "y_test.npy"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="y_test.npy"):
        load_dataset(tmp_path / "toy", verify=True)


def test_missing_dataset_says_how_to_prepare(tmp_path):
    with pytest.raises(FileNotFoundError, match="not prepared"):
        load_dataset(tmp_path / "nope")


def test_bad_labels_rejected_and_nothing_left_behind(tmp_path):
    ds = _ds()
    bad = Dataset(**{**ds.__dict__, "y_train": np.full(30, 7)})
    with pytest.raises(ValueError, match="labels"):
        write_dataset(tmp_path / "toy", bad)
    assert list(tmp_path.iterdir()) == []


def test_coarse_labels_and_integer_inputs_roundtrip(tmp_path):
    ds = Dataset(name="tok", x_train=np.arange(12).reshape(4, 3), y_train=np.array([0, 1, 2, 3]),
                 x_test=np.arange(6).reshape(2, 3), y_test=np.array([1, 1]), num_classes=4,
                 y_coarse_train=np.array([0, 0, 1, 1]), y_coarse_test=np.array([0, 0]))
    write_dataset(tmp_path / "tok", ds, x_dtype="uint8")
    back = load_dataset(tmp_path / "tok", verify=True)
    assert back.x_train.dtype == np.uint8 and back.meta["x_dtype"] == "uint8"
    np.testing.assert_array_equal(back.y_coarse_train, [0, 0, 1, 1])
    assert load_dataset(tmp_path / "tok").y_coarse_test.tolist() == [0, 0]
    with pytest.raises(ValueError, match="x_dtype"):
        write_dataset(tmp_path / "bad", ds, x_dtype="float16")
    with pytest.raises(ValueError, match="y_coarse_train"):
        write_dataset(tmp_path / "bad", Dataset(**{**ds.__dict__, "y_coarse_train": np.array([0])}))


# ------------------------------------------------------------------ damaged files


def _written(tmp_path):
    write_dataset(tmp_path / "toy", _ds())
    return tmp_path / "toy"


def test_meta_json_records_every_files_size(tmp_path):
    d = _written(tmp_path)
    meta = json.loads((d / "meta.json").read_text())
    assert meta["sizes"] == {f: (d / f).stat().st_size for f in meta["files"]}


def test_a_truncated_file_is_named_with_its_sizes_and_the_fix(tmp_path):
    d = _written(tmp_path)
    size = (d / "x_train.npy").stat().st_size
    (d / "x_train.npy").write_bytes((d / "x_train.npy").read_bytes()[:100])
    with pytest.raises(DamagedFileError) as e:
        load_dataset(d)
    msg = str(e.value)
    assert msg.startswith(f"{d / 'x_train.npy'}: is 100 bytes, meta.json records {size:,} (truncated)\nfix: ")
    assert "rerun the same snakemake command" in msg and f"`rm -r {d}`" in msg
    assert isinstance(e.value, ValueError) and e.value.paths == [d / "x_train.npy"]
    assert (d / "x_train.npy").exists()  # a size mismatch is seen by the next run's check as it is


def test_an_old_meta_json_without_sizes_checks_the_npy_header(tmp_path):
    d = _written(tmp_path)
    meta = json.loads((d / "meta.json").read_text())
    del meta["sizes"]
    (d / "meta.json").write_text(json.dumps(meta))
    load_dataset(d)
    (d / "y_train.npy").write_bytes((d / "y_train.npy").read_bytes()[:-8])
    with pytest.raises(DamagedFileError, match=r"y_train.npy: is \d+ bytes, its .npy header implies \d+ \(truncated\)"):
        load_dataset(d)


def test_a_changed_byte_that_breaks_the_read_sets_the_file_aside(tmp_path):
    d = _written(tmp_path)
    raw = bytearray((d / "y_test.npy").read_bytes())
    raw[15] ^= 0x55  # inside the header: same size, unreadable
    (d / "y_test.npy").write_bytes(bytes(raw))
    with pytest.raises(DamagedFileError, match=r"y_test.npy: cannot be read \(ValueError.*sha256 .* differs from "
                                               r"meta.json's .*set aside as y_test.npy.damaged"):
        load_dataset(d)
    assert (d / "y_test.npy.damaged").read_bytes() == bytes(raw) and not (d / "y_test.npy").exists()
    with pytest.raises(DamagedFileError, match=r"y_test.npy: is missing \(its damaged copy was set aside as "
                                               r"y_test.npy.damaged\)"):
        load_dataset(d)


def test_verify_sets_a_changed_file_aside(tmp_path):
    d = _written(tmp_path)
    raw = bytearray((d / "x_test.npy").read_bytes())
    raw[-3] ^= 0x01  # inside the data: it loads, only the checksum sees it
    (d / "x_test.npy").write_bytes(bytes(raw))
    load_dataset(d)
    with pytest.raises(DamagedFileError, match="x_test.npy: its sha256"):
        load_dataset(d, verify=True)
    assert (d / "x_test.npy.damaged").exists()


def test_a_missing_file_and_a_damaged_meta_json(tmp_path):
    d = _written(tmp_path)
    (d / "y_train.npy").unlink()
    with pytest.raises(DamagedFileError, match=r"y_train.npy: is missing\nfix"):
        load_dataset(d)
    (d / "meta.json").write_text('{"name": "to')
    with pytest.raises(DamagedFileError, match=rf"meta.json: is not valid JSON .*fix: `rm -r {d}`"):
        load_dataset(d)
