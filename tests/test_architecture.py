"""The import rules of STYLE.md, checked from the AST against a table of what each layer may import.

Imports point one way: host -> api -> compose -> service -> provider contract; a provider sees the contract, its own
package and the shared services below it, never another provider; pure modules import only other pure modules and
libraries that do no I/O. Imports under `if TYPE_CHECKING:` are annotations, not dependencies, and are skipped.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "shared"

PURE = {
    "shared.errors",
    "shared.markdown",
    "shared.models",
    "shared.reading",
    "shared.preview",
    "shared.validation",
    "shared.providers.mkdocs.artifact",
    "shared.providers.mkdocs.convert",
    "shared.providers.mkdocs.index",
    "shared.providers.mkdocs.kinds",
    "shared.providers.mkdocs.markup",
    "shared.providers.mkdocs.missing",
    "shared.providers.mkdocs.ranking",
    "shared.providers.mkdocs.resolution",
    "shared.providers.mkdocs.suggest",
    "shared.providers.mkdocs.text",
    "shared.providers.mkdocs.vectors",
    "shared.providers.ai_search.mapping",
    "shared.providers.remote.mapping",
    "shared.forwarding",
    "shared.model_graph",
}
"""Modules that compute and never reach a network, a disk or a clock of their own."""

PURE_LIBRARIES = {"numpy", "onnx", "Stemmer", "bs4", "markdownify", "pydantic", "typing_extensions"}
IO_STDLIB = {
    "asyncio",
    "http",
    "io",
    "os",
    "pathlib",
    "shutil",
    "socket",
    "sqlite3",
    "ssl",
    "subprocess",
    "tempfile",
    "urllib.request",
}
PURE_EXCEPTIONS = {"shared.providers.mkdocs.resolution": {"asyncio"}}
"""The resolver awaits the site loader it is handed (gathering several sites at once); it opens nothing itself."""

BASE = {"shared", "shared.settings", "shared.telemetry", "shared.deadline", "shared.memory", *PURE}
"""What every layer may import: the settings, telemetry, and the pure modules."""
SERVICES = {"shared.fetch", "shared.embedding", "shared.identity", "shared.cache"}
"""Shared services with I/O that providers and the composition root use."""
CONTRACT = {"shared.providers", "shared.providers.base"}

LAYERS: list[tuple[str, set[str]]] = [
    # (module prefix, what it may import from shared; its own package is always allowed)
    ("shared.__main__", {"shared.cli"}),
    ("shared.cli", {"*"}),
    ("shared.api", {"shared.compose", "shared.service", "shared.embedding", "shared.entra", *CONTRACT, *BASE}),
    ("shared.compose", {"*"}),
    ("shared.service", {*CONTRACT, *BASE}),
    ("shared.providers.base", BASE),
    ("shared.providers.", {*CONTRACT, *SERVICES, *BASE}),  # each provider: never another provider
    ("shared.providers", BASE),
    ("shared.cache", {"shared.fetch", "shared.identity", *BASE}),
    ("shared.fetch", BASE),
    ("shared.entra", {"shared.fetch", *BASE}),  # the tenant's signing keys, fetched like everything else
    ("shared.embedding", BASE),
    ("shared.identity", BASE),
    ("shared.telemetry", {"shared.identity", *BASE}),  # the exporter authenticates as the app's identity
    ("shared.deadline", BASE),
    ("shared.memory", BASE),
    ("shared.settings", {"shared.errors", "shared.providers.mkdocs.kinds"}),  # PathWeights is parsed at start-up
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> set[str]:
    """Absolute import targets outside `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for child in block.body
        for node in ast.walk(child)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def covered(name: str, allowed: set[str]) -> bool:
    """`name` is one of `allowed` or inside one of them (the package `shared` itself covers only its own init)."""
    return "*" in allowed or any(
        name == entry or (entry != "shared" and name.startswith(entry + ".")) for entry in allowed
    )


def own_package(module: str) -> str:
    """The package a module belongs to for the rules: a provider's subpackage, or the module's top package."""
    parts = module.split(".")
    if parts[:2] == ["shared", "providers"] and len(parts) > 3:
        return ".".join(parts[:3])
    return ".".join(parts[:2]) if module not in PURE else module


def layer_of(module: str) -> set[str]:
    for prefix, allowed in LAYERS:
        if module == prefix or module.startswith(prefix if prefix.endswith(".") else prefix + "."):
            return allowed
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


@pytest.mark.parametrize("module", sorted(set(MODULES) - PURE - {"shared"}))
def test_each_module_imports_only_what_its_layer_allows(module: str) -> None:
    allowed = layer_of(module) | {own_package(module)}
    inside = {name for name in imports(MODULES[module]) if name == "shared" or name.startswith("shared.")}
    assert not {name for name in inside if not covered(name, allowed)}, f"{module} reaches above or across its layer"


@pytest.mark.parametrize("module", sorted(PURE))
def test_pure_modules_import_only_pure_modules_and_libraries_without_io(module: str) -> None:
    for name in imports(MODULES[module]):
        top = name.split(".")[0]
        if name.startswith("shared"):
            assert name in PURE, f"{module} imports {name}, which is not pure"
        elif top in sys.stdlib_module_names:
            if name in PURE_EXCEPTIONS.get(module, ()):
                continue
            assert not covered(name, IO_STDLIB), f"{module} imports {name}"
        else:
            assert top in PURE_LIBRARIES, f"{module} imports {name}, a library not known to be free of I/O"


def test_providers_never_import_each_other_nor_the_chain() -> None:
    for module, path in MODULES.items():
        if not module.startswith("shared.providers.") or module == "shared.providers.base":
            continue
        mine = own_package(module)
        for name in imports(path):
            if name.startswith("shared.providers.") and name != "shared.providers.base":
                assert name.startswith(mine), f"{module} imports another provider: {name}"
            assert not name.startswith(("shared.service", "shared.compose", "shared.api", "shared.cli")), module


def test_the_chain_names_no_provider() -> None:
    source = MODULES["shared.service"].read_text(encoding="utf-8")
    assert not any(
        name.startswith("shared.providers.") and name != "shared.providers.base"
        for name in imports(MODULES["shared.service"])
    )
    assert "mkdocs" not in source.lower() and "ai_search" not in source and "remote" not in source.split('"""', 2)[2]


def test_only_settings_and_the_hosts_read_the_environment() -> None:
    for module, path in MODULES.items():
        if module in ("shared.settings", "shared.cli"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "os.environ" not in text and "getenv" not in text, f"{module} reads the environment"


def test_nothing_under_shared_imports_azure_functions() -> None:
    for module, path in MODULES.items():
        names = imports(path)
        assert not any(name == "azure.functions" or name.startswith("azure.functions.") for name in names), module


def test_every_module_states_why_it_exists() -> None:
    for module, path in MODULES.items():
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert docstring and docstring.strip(), f"{module} has no module docstring"
