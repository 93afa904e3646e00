"""Code versions: short digests of library source, for Snakemake's params rerun trigger.

Snakemake reruns a ``script:`` job when the script file changes, but not when a library module
the script imports changes. The workflow therefore puts a code version into a rule's params
where the rule's result depends on a specific part of the library:

- ``train``: :func:`fedbench.algorithms.code_version` of the cell's algorithm (its module plus
  the modules of ``fedbench.algorithms`` it imports, e.g. FedProx -> fedavg, local), so editing
  ``fedprox.py`` reruns the FedProx cells and nothing else, while editing ``local.py`` (shared
  by every algorithm) reruns every cell;
- ``aggregate``: the version of ``fedbench.analysis.tables`` and ``fedbench.analysis.plots``.

The digest is of the module's *tokens* without comments and blank lines, so editing a comment
or re-indenting a blank line reruns nothing, while any change to code or docstrings does.
Sources are read from disk without importing the modules (the parent packages are imported to
locate them), so computing versions is cheap: a few small files per workflow invocation.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import io
import tokenize
from functools import cache
from pathlib import Path

__all__ = ["source_digest", "module_closure", "code_version"]

_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}


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


@cache
def _normalized_digest(src: bytes) -> str:
    parts = []
    for tok in tokenize.tokenize(io.BytesIO(src).readline):
        if tok.type in _SKIP:
            continue
        # INDENT strings are whitespace; keep the structure, not the width.
        parts.append(f"{tok.type}:{'' if tok.type == tokenize.INDENT else tok.string}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def source_digest(module: str, within: str | None = None) -> str:
    """sha256 (hex) of ``module``'s source tokens, comments and blank lines left out.
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


def module_closure(module: str, within: str) -> list[str]:
    """``module`` and every module of package ``within`` it imports, transitively (sorted).

    The package's own ``__init__`` is left out: it holds the registry, not algorithm code."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for dep in _imports(name, _source_path(name, within)):
            if dep.startswith(within + ".") and dep not in seen:
                try:
                    _source_path(dep, within)
                except ModuleNotFoundError:
                    continue  # `from pkg import function`: not a module
                todo.append(dep)
    return sorted(seen - {within})


def code_version(modules: str | list[str] | tuple[str, ...], within: str) -> str:
    """A 16-hex-digit version of ``modules`` and what they import from package ``within``."""
    if isinstance(modules, str):
        modules = [modules]
    names = sorted({m for mod in modules for m in module_closure(mod, within)})
    h = hashlib.sha256()
    for name in names:
        h.update(f"{name}={source_digest(name, within)}\n".encode())
    return h.hexdigest()[:16]
