"""The docstrings of src/iclfs are numpydoc (``Parameters`` over a dashed line), never Google style."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "iclfs"

#: Google-style section headers; numpydoc writes the name alone, underlined with dashes.
GOOGLE_HEADERS = {"Args:", "Returns:", "Raises:", "Yields:", "Attributes:"}


def _docstrings(tree: ast.Module):
    """Yield (qualified name, docstring) of the module and every class and function in it."""
    doc = ast.get_docstring(tree, clean=False)
    if doc is not None:
        yield "<module>", doc

    def walk(node: ast.AST, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                doc = ast.get_docstring(child, clean=False)
                if doc is not None:
                    yield name, doc
                yield from walk(child, f"{name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def test_no_google_style_sections():
    files = sorted(SRC.rglob("*.py"))
    assert files, f"no Python files under {SRC}"
    offenders = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, doc in _docstrings(tree):
            headers = sorted({line.strip() for line in doc.splitlines()} & GOOGLE_HEADERS)
            if headers:
                offenders.append(f"{path.relative_to(SRC.parent)}: {name} has {', '.join(headers)}")
    assert not offenders, "Google-style docstring sections (use numpydoc):\n" + "\n".join(offenders)
