"""Code versions (fedbench.codeversion, fedbench.algorithms.code_version): what changes them."""

from __future__ import annotations

import sys
import textwrap

import pytest

from fedbench.algorithms import ALGORITHMS, code_version
from fedbench.codeversion import code_version as cv
from fedbench.codeversion import module_closure


@pytest.fixture
def pkg(tmp_path, monkeypatch):
    """A throwaway package `cvpkg` with a.py -> b.py (relative import), c.py standalone."""
    root = tmp_path / "cvpkg"
    root.mkdir()
    (root / "__init__.py").write_text("REGISTRY = ('a', 'b', 'c')\n")
    (root / "a.py").write_text(textwrap.dedent("""\
        '''Module a.'''
        import math
        from .b import helper
        from cvpkg import c as _c_module  # a submodule imported by name


        def f(x):
            return helper(x) + 1  # comment
        """))
    (root / "b.py").write_text("def helper(x):\n    return 2 * x\n")
    (root / "c.py").write_text("Y = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "cvpkg" or m.startswith("cvpkg.")]:
        monkeypatch.delitem(sys.modules, name)
    return root


def test_closure_follows_imports_inside_the_package_only(pkg):
    assert module_closure("cvpkg.a", "cvpkg") == ["cvpkg.a", "cvpkg.b", "cvpkg.c"]
    assert module_closure("cvpkg.b", "cvpkg") == ["cvpkg.b"]


def test_code_edits_change_the_version_comments_do_not(pkg):
    before = {m: cv(f"cvpkg.{m}", "cvpkg") for m in "abc"}
    a = pkg / "a.py"
    a.write_text(a.read_text() + "\n\n# a new comment\n   \n")
    assert {m: cv(f"cvpkg.{m}", "cvpkg") for m in "abc"} == before
    b = pkg / "b.py"
    b.write_text("def helper(x):\n    return 3 * x\n")
    after = {m: cv(f"cvpkg.{m}", "cvpkg") for m in "abc"}
    assert after["b"] != before["b"] and after["a"] != before["a"]  # a imports b
    assert after["c"] == before["c"]


def test_algorithm_versions_follow_the_algorithms_imports():
    closure = {a: module_closure(f"fedbench.algorithms.{a}", "fedbench.algorithms") for a in ALGORITHMS}
    assert "fedbench.algorithms.fedavg" in closure["fedprox"]
    assert "fedbench.algorithms.local" in closure["scaffold"]
    assert "fedbench.algorithms.fedprox" not in closure["fedavg"]
    versions = {a: code_version(a) for a in ALGORITHMS}
    assert len(set(versions.values())) == len(ALGORITHMS)
    assert all(len(v) == 16 for v in versions.values())
    assert code_version("fedprox") == code_version("fedprox")
    with pytest.raises(KeyError, match="unknown algorithm"):
        code_version("nope")


def test_computing_versions_imports_no_algorithm_module():
    import subprocess

    code = ("import sys; from fedbench.algorithms import code_version, ALGORITHMS; "
            "[code_version(a) for a in ALGORITHMS]; "
            "print(sorted(m for m in sys.modules if m.startswith('fedbench.algorithms.')), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] False"
