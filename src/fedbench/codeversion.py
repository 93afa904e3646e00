"""Code versions: short digests of library source, for Snakemake's params rerun trigger.

Snakemake reruns a ``script:`` job when the script file changes, but not when a library module
the script imports changes. The workflow therefore puts a code version into the params of every
rule whose result is computed by library code: the digest of the modules that compute it and of
every ``fedbench`` module they import, transitively (:func:`module_closure`, found by reading
the import statements of the sources, not by importing them):

- ``prepare_dataset``: :func:`dataset_version` of the dataset's source (the registry and the
  source's reader or generator, e.g. ``fedbench.data.idx`` for MNIST);
- ``partition``: :func:`partition_version` (``fedbench.data.partition`` and what it imports);
- ``train``: :func:`train_version` of the cell's algorithm and model: the whole engine
  (``fedbench.engine.*``), and with it ``fedbench.rng``, ``fedbench.metrics.*``, the dataset
  store, the algorithm's modules (e.g. FedProx -> fedprox, fedavg, local) and the model's module;
- ``aggregate``: the version of ``fedbench.analysis.tables`` and ``fedbench.analysis.plots``.

Registries import every plugin they register (``fedbench.models`` imports cnn, logreg, lstm,
mlp and minimax; the minimax algorithms import ``fedbench.models.minimax`` themselves, so their
cells' versions include it; ``fedbench.data.registry`` every reader): those edges are cut (:data:`REGISTRIES`) and the
plugin a job uses is added by name instead, so editing ``mlp.py`` reruns the MLP cells only and
editing ``idx.py`` re-prepares MNIST and EMNIST only (and, through their newer files, their
partitions and cells). The registry of the algorithms, ``fedbench.algorithms/__init__.py``, is
left out altogether (:data:`IGNORED`): it names the algorithms and imports none of them, so
adding an algorithm only adds cells.

The digest is of the module's syntax tree with docstrings removed (``ast.dump`` without line
numbers), so editing a comment, a docstring, blank lines or line breaks inside brackets reruns
nothing, while any change to code does. Sources are read from disk without importing the
modules (the parent packages are imported to locate them), so computing versions is cheap.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

__all__ = [
    "source_digest", "module_closure", "code_version", "modules_digest", "train_version", "dataset_version",
    "partition_version",
]

# Registry module -> the modules it registers: imports along these edges are not followed (the
# job's own plugin is one of the closure's roots instead).
REGISTRIES: dict[str, tuple[str, ...]] = {
    "fedbench.models": tuple(f"fedbench.models.{m}" for m in ("binary_logreg", "cnn", "logreg", "lstm", "minimax",
                                                              "mlp", "quadratic", "resnet18_gn", "vgg11")),
}
# Dataset source -> the module that reads or generates it (fedbench.data.registry's builders;
# tests/test_codeversion.py checks that the two agree).
SOURCE_READERS: dict[str, str] = {
    "digits": "digits", "synthetic": "synthetic", "mnist": "idx", "emnist": "idx", "cifar10": "cifar",
    "cifar100": "cifar", "cinic10": "cinic", "fed_emnist": "tff", "fed_cifar100": "tff",
    "shakespeare": "shakespeare", "a9a": "libsvm", "epsilon": "libsvm", "libsvm_file": "libsvm",
    "breast_cancer": "breast_cancer",
    "quadratic": "quadratic", "mnist5k": "mnist5k",
}
REGISTRIES["fedbench.data.registry"] = tuple(sorted({f"fedbench.data.{m}" for m in SOURCE_READERS.values()}))
# Modules that compute no result: the algorithm registry (names; get_algorithm imports by name),
# and the checks that a written file is still whole (fedbench.filecheck, fedbench.integrity: they
# decide whether a file is damaged, never what a file holds).
IGNORED: frozenset[str] = frozenset({"fedbench", "fedbench.algorithms", "fedbench.filecheck", "fedbench.integrity"})


def _package_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)  # imports the package itself, not its submodules
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{package!r} is not a package")
    return Path(list(spec.submodule_search_locations)[0])


def _source_path(module: str, within: str) -> Path:
    """The source file of ``module`` (inside package ``within``), found without importing it."""
    if module != within and not module.startswith(within + "."):
        raise ModuleNotFoundError(f"{module!r} is not inside {within!r}")
    base = _package_dir(within).joinpath(*module.split(".")[within.count(".") + 1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    raise ModuleNotFoundError(f"no Python source for module {module!r}")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:]
    return tree


@cache
def _normalized_digest(src: bytes) -> str:
    """sha256 of the syntax tree without docstrings, comments, formatting or line numbers."""
    tree = _strip_docstrings(ast.parse(src))
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def source_digest(module: str, within: str | None = None) -> str:
    """sha256 (hex) of ``module``'s syntax tree, comments, docstrings and formatting left out.
    ``within``: the package to look it up in (default: its parent package)."""
    path = _source_path(module, within or module.rpartition(".")[0] or module)
    return _normalized_digest(path.read_bytes())


def _imports(module: str, path: Path) -> set[str]:
    """Absolute names of the modules ``module`` imports (relative imports resolved)."""
    return _imports_of(path.read_bytes(), module if path.name == "__init__.py" else module.rpartition(".")[0])


@cache
def _imports_of(src: bytes, package: str) -> frozenset[str]:
    tree = ast.parse(src)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                parent = ".".join(base + ([node.module] if node.module else []))
            else:
                parent = node.module or ""
            names.add(parent)
            names.update(f"{parent}.{a.name}" for a in node.names)  # `from pkg import submodule`
    return frozenset(names)


def module_closure(
    modules: str | Iterable[str], within: str, registries: Mapping[str, Iterable[str]] | None = None,
    ignored: Iterable[str] = (),
) -> list[str]:
    """``modules`` and every module of package ``within`` they import, transitively (sorted).

    ``registries``: {module: modules it registers}; those imports are not followed.
    ``ignored``: modules left out of the result and not followed. The package's own
    ``__init__`` (``within``) is always left out: it holds the registry, not the code."""
    if isinstance(modules, str):
        modules = [modules]
    cut = {k: set(v) for k, v in (registries or {}).items()}
    skip = set(ignored) | {within}
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for dep in _imports(name, _source_path(name, within)):
            if dep.startswith(within + ".") and dep not in seen and dep not in cut.get(name, ()) and dep not in skip:
                try:
                    _source_path(dep, within)
                except ModuleNotFoundError:
                    continue  # `from pkg import function`: not a module
                todo.append(dep)
    return sorted(seen - skip)


def code_version(
    modules: str | Iterable[str], within: str, registries: Mapping[str, Iterable[str]] | None = None,
    ignored: Iterable[str] = (),
) -> str:
    """A 16-hex-digit version of ``modules`` and what they import from package ``within``
    (:func:`module_closure`)."""
    return modules_digest(module_closure(modules, within, registries, ignored), within)


def modules_digest(names: Iterable[str], within: str) -> str:
    """A 16-hex-digit digest of exactly the modules ``names`` (no closure), in the given order."""
    h = hashlib.sha256()
    for name in names:
        h.update(f"{name}={source_digest(name, within)}\n".encode())
    return h.hexdigest()[:16]


def _fedbench_version(modules: list[str]) -> str:
    return code_version(modules, "fedbench", REGISTRIES, IGNORED)


def _submodules(package: str) -> list[str]:
    """Every module and subpackage below ``package`` (recursively), by dotted name."""
    root = _package_dir(package)
    names = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts and "__pycache__" not in parts:
            names.add(".".join((package, *parts)))
    return sorted(names)


def train_version(algorithm: str, model: str) -> str:
    """The code version of a training cell: the engine (every ``fedbench.engine`` module), the
    algorithm's module and the model's module, with everything of ``fedbench`` they import."""
    return _fedbench_version(
        ["fedbench.engine", *_submodules("fedbench.engine"), f"fedbench.algorithms.{algorithm}",
         "fedbench.models", f"fedbench.models.{model}"]
    )


def dataset_version(source: str) -> str:
    """The code version of preparing a dataset of ``source`` (e.g. ``mnist``): the registry, the
    store and the source's reader or generator (:data:`SOURCE_READERS`), with everything of
    ``fedbench`` they import.

    Raises:
        KeyError: unknown source."""
    if source not in SOURCE_READERS:
        raise KeyError(f"unknown dataset source {source!r}; known: {', '.join(SOURCE_READERS)}")
    return _fedbench_version(
        ["fedbench.data.registry", "fedbench.data.store", f"fedbench.data.{SOURCE_READERS[source]}"]
    )


def partition_version() -> str:
    """The code version of the partitioners (``fedbench.data.partition`` and what it imports)."""
    return _fedbench_version(["fedbench.data.partition", "fedbench.data.store"])
