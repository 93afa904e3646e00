"""fedbench.files.atomic_write: all or nothing, no temporary left behind."""

import pytest

from fedbench.files import atomic_write, temporary_sibling


def test_writes_and_replaces(tmp_path):
    dest = tmp_path / "sub" / "x.json"
    with atomic_write(dest) as tmp:
        assert tmp.parent == dest.parent and tmp.name.startswith(".") and tmp.suffix == ".json"
        tmp.write_text("1")
    with atomic_write(dest) as tmp:
        tmp.write_text("2")
    assert dest.read_text() == "2"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["x.json"]


def test_failed_writer_leaves_destination_and_no_temporary(tmp_path):
    dest = tmp_path / "x.txt"
    dest.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_write(dest) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert dest.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]


def test_writer_that_writes_nothing_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="did not create"):
        with atomic_write(tmp_path / "x.txt"):
            pass
    assert list(tmp_path.iterdir()) == []


def test_directory_replaces_directory(tmp_path):
    dest = tmp_path / "ds"
    for content in ("a", "b"):
        with atomic_write(dest) as tmp:
            tmp.mkdir()
            (tmp / "meta.json").write_text(content)
    assert (dest / "meta.json").read_text() == "b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_stale_temporary_of_same_pid_is_cleared(tmp_path):
    dest = tmp_path / "x.txt"
    temporary_sibling(dest).mkdir()  # left by a killed process that had this pid
    with atomic_write(dest) as tmp:
        tmp.write_text("ok")
    assert dest.read_text() == "ok"
