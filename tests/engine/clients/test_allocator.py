"""keep_freed_memory: sets glibc's thresholds where mallopt exists, changes nothing elsewhere."""

import platform
import types

import pytest

from fedbench.engine.clients import allocator


def _fake_libc(calls, result=1):
    def mallopt(param, value):
        calls.append((param, value))
        return result
    return types.SimpleNamespace(mallopt=mallopt)


def test_sets_trim_and_mmap_thresholds(monkeypatch):
    calls = []
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda name: _fake_libc(calls))
    assert allocator.keep_freed_memory() is True
    assert calls == [(allocator.M_TRIM_THRESHOLD, 1 << 30), (allocator.M_MMAP_THRESHOLD, 32 << 20)]


def test_a_refused_value_is_reported(monkeypatch):
    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda name: _fake_libc([], result=0))
    assert allocator.keep_freed_memory() is False


def test_no_mallopt_is_a_quiet_no_op(monkeypatch):
    class NoMallopt:  # macOS's libSystem, musl: no mallopt symbol
        def __getattr__(self, name):
            raise AttributeError(name)

    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda name: NoMallopt())
    assert allocator.keep_freed_memory() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_real_glibc_accepts_the_values():
    assert allocator.keep_freed_memory() is True
