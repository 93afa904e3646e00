"""Code versions (fedbench.codeversion): what changes them."""

from __future__ import annotations

import sys
import textwrap

import pytest

from fedbench.algorithms import ALGORITHMS
from fedbench.codeversion import code_version as cv
from fedbench.codeversion import module_closure, train_version


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
    versions = {a: train_version(a, "logreg") for a in ALGORITHMS}
    assert len(set(versions.values())) == len(ALGORITHMS)
    assert all(len(v) == 16 for v in versions.values())
    assert train_version("fedprox", "logreg") == train_version("fedprox", "logreg")


def test_computing_versions_imports_no_algorithm_module():
    import subprocess

    code = ("import sys; from fedbench.algorithms import ALGORITHMS; "
            "from fedbench.codeversion import train_version; "
            "[train_version(a, 'logreg') for a in ALGORITHMS]; "
            "print(sorted(m for m in sys.modules if m.startswith('fedbench.algorithms.')), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] False"


def test_docstring_and_formatting_edits_change_no_version(pkg):
    before = cv("cvpkg.a", "cvpkg")
    a = pkg / "a.py"
    a.write_text(a.read_text().replace("'''Module a.'''", "'''Module a, documented\n\nat length.'''")
                 .replace("def f(x):\n", "def f(x):\n    \"\"\"Doc.\"\"\"\n")
                 .replace("return helper(x) + 1", "return (helper(x)\n            + 1)"))
    assert cv("cvpkg.a", "cvpkg") == before
    a.write_text(a.read_text().replace("+ 1", "+ 2"))
    assert cv("cvpkg.a", "cvpkg") != before


def test_registry_edges_are_cut(pkg):
    (pkg / "reg.py").write_text("from cvpkg import a, c\n")
    assert module_closure("cvpkg.reg", "cvpkg") == ["cvpkg.a", "cvpkg.b", "cvpkg.c", "cvpkg.reg"]
    assert module_closure(["cvpkg.reg", "cvpkg.c"], "cvpkg", {"cvpkg.reg": ["cvpkg.a", "cvpkg.c"]}) == [
        "cvpkg.c", "cvpkg.reg"]
    assert module_closure("cvpkg.a", "cvpkg", ignored=["cvpkg.b"]) == ["cvpkg.a", "cvpkg.c"]


def _train_closure(algorithm, model):
    from fedbench.codeversion import IGNORED, REGISTRIES, _submodules

    roots = ["fedbench.engine", *_submodules("fedbench.engine"), f"fedbench.algorithms.{algorithm}",
             "fedbench.models", f"fedbench.models.{model}"]
    return module_closure(roots, "fedbench", REGISTRIES, IGNORED)


def test_a_cells_version_covers_engine_rng_metrics_algorithm_and_its_model_only():
    closure = _train_closure("fedprox", "mlp")
    for m in ("fedbench.engine.rounds.loop", "fedbench.engine.clients.local", "fedbench.rng",
              "fedbench.metrics.communication",
              "fedbench.metrics.histogram", "fedbench.data.store", "fedbench.data.partition", "fedbench.models",
              "fedbench.models.mlp", "fedbench.algorithms.fedprox", "fedbench.algorithms.fedavg",
              "fedbench.algorithms.local"):
        assert m in closure, m
    for m in ("fedbench.models.cnn", "fedbench.models.lstm", "fedbench.algorithms.scaffold", "fedbench.algorithms",
              "fedbench.data.registry", "fedbench.data.idx", "fedbench.analysis.tables", "fedbench.config"):
        assert m not in closure, m
    assert "fedbench.models.mlp" not in _train_closure("fedavg", "cnn")


def test_versions_of_cells_datasets_and_partitions():
    from fedbench.codeversion import dataset_version, partition_version, train_version

    assert train_version("fedavg", "mlp") != train_version("fedavg", "cnn") != train_version("fedprox", "cnn")
    assert train_version("fedavg", "mlp") == train_version("fedavg", "mlp")
    assert dataset_version("mnist") == dataset_version("emnist") != dataset_version("digits")
    assert len(partition_version()) == 16
    with pytest.raises(KeyError, match="unknown dataset source"):
        dataset_version("nope")


def test_source_readers_match_the_registry():
    from fedbench.codeversion import REGISTRIES, SOURCE_READERS
    from fedbench.data import registry

    assert set(SOURCE_READERS) == set(registry.SOURCES)
    assert {s: f"fedbench.data.{m}" for s, m in SOURCE_READERS.items()} == {
        s: f.__module__ for s, f in registry._BUILDERS.items()}
    imported = {m for m in module_closure("fedbench.data.registry", "fedbench") if m != "fedbench.data.registry"}
    # every reader the registry imports is cut (so editing one re-prepares its datasets only)
    readers = set(REGISTRIES["fedbench.data.registry"])
    assert readers <= imported
    assert not readers & set(module_closure("fedbench.data.registry", "fedbench", REGISTRIES))


def test_model_registry_cut_lists_every_model():
    from fedbench.codeversion import REGISTRIES, _submodules

    assert set(REGISTRIES["fedbench.models"]) == set(_submodules("fedbench.models"))


def test_computing_cell_versions_imports_no_torch():
    import subprocess

    code = ("import sys; from fedbench.codeversion import train_version, dataset_version, partition_version; "
            "train_version('fedavg', 'mlp'); dataset_version('mnist'); partition_version(); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
