"""The import rules of STYLE.md, checked from the AST: hosts on top, pure modules without I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "shared"
PURE = [
    "mkdocs/index.py",
    "mkdocs/resolution.py",
    "mkdocs/ranking.py",
    "mkdocs/text.py",
    "mkdocs/convert.py",
    "preview.py",
    "validation.py",
    "models.py",
    "errors.py",
]
IO_MODULES = {"aiohttp", "azure", "socket", "requests", "httpx", "urllib.request", "shared.fetch", "shared.blob_cache"}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_nothing_under_shared_imports_azure_functions() -> None:
    for path in PACKAGE.rglob("*.py"):
        assert not any(name == "azure.functions" or name.startswith("azure.functions.") for name in imports(path)), path


@pytest.mark.parametrize("module", PURE)
def test_pure_modules_do_no_io(module: str) -> None:
    path = PACKAGE / module
    if not path.exists():
        pytest.skip(f"{module} not present")
    bad = {name for name in imports(path) if any(name == io or name.startswith(io + ".") for io in IO_MODULES)}
    assert not bad, f"{module} imports {bad}"


def test_providers_never_import_the_api_or_the_service() -> None:
    for path in (PACKAGE / "mkdocs").rglob("*.py"):
        names = imports(path)
        assert not {name for name in names if name.startswith(("shared.api", "shared.service", "shared.cli"))}, path


def test_every_module_states_why_it_exists() -> None:
    for path in PACKAGE.rglob("*.py"):
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert docstring and docstring.strip(), f"{path} has no module docstring"
