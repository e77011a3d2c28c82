"""Each folder of src/iclfs is one layer, and imports only point down (README, "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "iclfs"

#: Lower layers never import higher ones. Top-level modules are Kedro's entry points and sit
#: with the pipelines and the project's infrastructure; the package's __init__ only re-exports (lazily) and is not a layer.
LAYERS = {
    "_threads": 0,  # the OpenMP policy: standard library only, loaded before torch
    "method": 0,
    "baselines": 1,
    "io": 1,
    "_selectors": 2,
    "chain": 2,
    "evaluation": 2,
    "pipelines": 3,
    "project": 3,  # the run's lifecycle, tracking, conf loader, sources, DAG writer, logs, figures
    "settings": 3,
    "pipeline_registry": 3,
    "cli": 3,
    "runner": 3,
    "_distributed": 3,
    "__main__": 3,
}


def _module(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "iclfs" else None


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every iclfs module ``path`` imports (absolute, or relative resolved), with its line."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return [(line, module) for line, module in found if module.split(".")[0] == "iclfs"]


MODULES = sorted(p for p in SRC.rglob("*.py") if p != SRC / "__init__.py")


def test_every_module_belongs_to_a_layer():
    assert not [str(p) for p in MODULES if _layer_of(_module(p)) not in LAYERS]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_only_point_down(path):
    own = LAYERS[_layer_of(_module(path))]
    upward = [f"line {line}: {module}" for line, module in _imports(path)
              if _layer_of(module) is not None and LAYERS.get(_layer_of(module), 99) > own]
    assert not upward, f"{path.relative_to(SRC)} imports from a layer above it: {upward}"


def test_the_method_needs_no_kedro_mlflow_or_matplotlib():
    """The method is framework-free: numpy, scipy, scikit-learn, pandas, torch."""
    banned = ("kedro", "kedro_datasets", "mlflow", "matplotlib", "dask")
    for path in sorted((SRC / "method").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.split(".")[0] in banned], path
