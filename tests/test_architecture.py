"""The import rules of STYLE.md, checked from the AST against a table of what each layer may import.

Imports point one way: host -> api -> compose -> service -> provider contract; a provider sees the contract, its own
package and the shared services below it, never another provider; pure modules import only other pure modules and
libraries that do no I/O. A provider's modules are its own: everything else reaches it through its package
(`shared.providers.mkdocs`), even the composition root and the hosts. Imports under `if TYPE_CHECKING:` are
annotations, not dependencies, and are skipped.

What an import names is what it brings in: `from shared import compose` is `shared.compose`, a relative import is
resolved against the module it is in, and one inside a function counts like any other. The checker is tested on
injected sources too (`INJECTED`), so a way around it fails here first.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from tools.house import imports as read_imports
from tools.house import module_names

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "shared"
HOSTS = {"function_app": ROOT / "function_app.py"}
"""The Functions host beside the package (the CLI host is `shared.cli`)."""

PURE = {
    "shared.encoders",
    "shared.errors",
    "shared.markdown",
    "shared.models",
    "shared.reading",
    "shared.requests",
    "shared.site_key",
    "shared.preview",
    "shared.validation",
    "shared.code_samples",
    "shared.providers.mkdocs.scoring.artifact",
    "shared.providers.mkdocs.scoring.blend",
    "shared.providers.mkdocs.codeblocks.code",
    "shared.providers.mkdocs.codeblocks.coderank",
    "shared.providers.mkdocs.codeblocks.prebuilt",
    "shared.providers.mkdocs.fetching.convert",
    "shared.providers.mkdocs.scoring.framing",
    "shared.providers.mkdocs.indexes.index",
    "shared.providers.mkdocs.indexes.columns",
    "shared.providers.mkdocs.indexes.kinds",
    "shared.providers.mkdocs.fetching.markup",
    "shared.providers.mkdocs.fetching.unserved",
    "shared.providers.mkdocs.scoring.postings",
    "shared.providers.mkdocs.scoring.ranking",
    "shared.providers.mkdocs.scoring.semantics",
    "shared.providers.mkdocs.indexes.resolution",
    "shared.providers.mkdocs.scoring.parameters",
    "shared.providers.mkdocs.scoring.pieces",
    "shared.providers.mkdocs.scoring.quantized",
    "shared.providers.mkdocs.fetching.near_pages",
    "shared.providers.mkdocs.scoring.text",
    "shared.providers.mkdocs.scoring.vectors",
    "shared.providers.ai_search.mapping",
    "shared.providers.remote.mapping",
    "shared.forwarding",
    "shared.model_graph",
    "shared.error_body",
    "shared.paths",
    "shared.scrubbing",
    "shared.safe_content",
    "shared.client_config",
    "shared.usage",
    "shared.insights.events",
    "shared.insights.report",
    "shared.insights.text",
}
"""Modules that compute and never reach a network, a disk or a clock of their own."""

PURE_LIBRARIES = {"numpy", "onnx", "onnxruntime", "Stemmer", "bs4", "markdownify", "pydantic", "typing_extensions"}
"""onnxruntime reads a file only when given a path; the pure modules hand it model bytes and arrays."""
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
PURE_EXCEPTIONS = {"shared.providers.mkdocs.indexes.resolution": {"asyncio"}}
"""The resolver awaits the site loader it is handed (gathering several sites at once); it opens nothing itself."""


def provider_of(name: str) -> str | None:
    """The provider package `name` is or is inside (`shared.providers.mkdocs`), or None outside every provider."""
    parts = name.split(".")
    if len(parts) >= 3 and parts[:2] == ["shared", "providers"] and parts[2] != "base":
        return ".".join(parts[:3])
    return None


BASE = {
    "shared",
    "shared.settings",
    "shared.telemetry",
    "shared.deadline",
    "shared.memory",
    *(module for module in PURE if provider_of(module) is None),
}
"""What every layer may import: the settings, telemetry, and the pure modules outside the providers."""
SERVICES = {"shared.fetch", "shared.embedding", "shared.graph_sharing", "shared.identity", "shared.cache"}
"""Shared services with I/O that providers and the composition root use."""
CONTRACT = {"shared.providers", "shared.providers.base"}
NAMESPACES = {"shared", "shared.providers"}
"""Packages that, as an entry of what a layer may import, stand for their own `__init__` only, not what is in them."""

LAYERS: list[tuple[str, set[str]]] = [
    # (module prefix, what it may import from shared; its own package is always allowed)
    ("function_app", {"*"}),
    ("shared.__main__", {"shared.cli"}),
    ("shared.cli", {"*"}),
    (
        "shared.api",
        {"shared.compose", "shared.service", "shared.embedding", "shared.entra", "shared.insights", *CONTRACT, *BASE},
    ),
    ("shared.compose", {"*"}),
    ("shared.service", {*CONTRACT, *BASE}),
    ("shared.providers.base", BASE),
    ("shared.providers.", {*CONTRACT, *SERVICES, *BASE}),  # each provider: never another provider
    ("shared.providers", BASE),
    ("shared.cache", {"shared.fetch", "shared.identity", *BASE}),
    ("shared.insights", {"shared.cache", "shared.identity", *CONTRACT, *BASE}),  # kept beside the index cache
    ("shared.fetch", BASE),
    ("shared.entra", {"shared.fetch", *BASE}),  # the tenant's signing keys, fetched like everything else
    ("shared.embedding", {"shared.graphs", "shared.model_record", *BASE}),
    ("shared.model_record", BASE),  # the model's files and their SHA-256, read once
    ("shared.graphs", {"shared.model_record", *BASE}),  # the encoder's rewritten graph on local disk
    ("shared.graph_sharing", {"shared.cache", "shared.embedding", "shared.graphs", "shared.model_record", *BASE}),
    ("shared.identity", BASE),
    ("shared.telemetry", {"shared.identity", *BASE}),  # the exporter authenticates as the app's identity
    ("shared.deadline", BASE),
    ("shared.memory", BASE),
    ("shared.settings", {"shared.errors", "shared.site_key"}),
]


MODULES = module_names(ROOT, "shared")
PACKAGES = {module for module, path in MODULES.items() if path.name == "__init__.py"}


def imports(module: str, source: str, *, package: bool = False) -> set[str]:
    """The modules `source` (the text of `module`; `package` when it is a package's `__init__`) imports, outside
    `if TYPE_CHECKING:` blocks: `from package import name` is the module `package.name` when there is one, and a
    relative import is resolved against `module` (`tools.house.imports`, the one reader)."""
    return read_imports(module, source, MODULES, package=package)


def imports_of(module: str) -> set[str]:
    """What a module of this repository imports."""
    path = MODULES.get(module) or HOSTS[module]
    return imports(module, path.read_text(encoding="utf-8"), package=module in PACKAGES)


def covered(name: str, allowed: set[str]) -> bool:
    """`name` is one of `allowed` or inside one of them (a namespace like `shared` covers only its own init)."""
    return "*" in allowed or any(
        name == entry or (entry not in NAMESPACES and name.startswith(entry + ".")) for entry in allowed
    )


def own_package(module: str) -> str:
    """The package a module belongs to for the rules: its provider, or the module's top package."""
    provider = provider_of(module)
    if provider is not None:
        return provider
    return ".".join(module.split(".")[:2]) if module not in PURE else module


def trespasses(module: str, name: str) -> bool:
    """`name` is one of a provider's own modules and `module` is not in that provider."""
    owner = provider_of(name)
    return owner is not None and name != owner and provider_of(module) != owner


def violations(module: str, names: Iterable[str]) -> set[str]:
    """What of `names` (imported by `module`) reaches above or across its layer, or into a provider it is not in."""
    allowed = layer_of(module) | {own_package(module)}
    inside = {name for name in names if name == "shared" or name.startswith("shared.")}
    return {name for name in inside if not covered(name, allowed) or trespasses(module, name)}


def check(module: str, source: str, *, package: bool = False) -> set[str]:
    """What `source`, as the text of `module`, imports that its layer does not allow."""
    return violations(module, imports(module, source, package=package))


def layer_of(module: str) -> set[str]:
    for prefix, allowed in LAYERS:
        if module == prefix or module.startswith(prefix if prefix.endswith(".") else prefix + "."):
            return allowed
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


@pytest.mark.parametrize("module", sorted({*MODULES, *HOSTS} - PURE - {"shared"}))
def test_each_module_imports_only_what_its_layer_allows(module: str) -> None:
    reached = violations(module, imports_of(module))
    assert not reached, f"{module} reaches above or across its layer: {', '.join(sorted(reached))}"


@pytest.mark.parametrize("module", sorted(PURE))
def test_pure_modules_import_only_pure_modules_and_libraries_without_io(module: str) -> None:
    for name in imports_of(module):
        top = name.split(".")[0]
        if name.startswith("shared"):
            assert name in PURE, f"{module} imports {name}, which is not pure"
            assert not trespasses(module, name), f"{module} imports {name}, another provider's own module"
        elif top in sys.stdlib_module_names:
            if name in PURE_EXCEPTIONS.get(module, ()):
                continue
            assert not covered(name, IO_STDLIB), f"{module} imports {name}"
        else:
            assert top in PURE_LIBRARIES, f"{module} imports {name}, a library not known to be free of I/O"


def test_providers_never_import_each_other_nor_the_chain() -> None:
    for module in MODULES:
        mine = provider_of(module)
        if mine is None:
            continue
        for name in imports_of(module):
            assert provider_of(name) in (None, mine), f"{module} imports another provider: {name}"
            assert not name.startswith(("shared.service", "shared.compose", "shared.api", "shared.cli")), module


def test_the_chain_names_no_provider() -> None:
    source = MODULES["shared.service"].read_text(encoding="utf-8")
    assert not any(provider_of(name) for name in imports_of("shared.service"))
    assert "mkdocs" not in source.lower() and "ai_search" not in source and "remote" not in source.split('"""', 2)[2]


def test_only_settings_and_the_hosts_read_the_environment() -> None:
    for module, path in MODULES.items():
        if module in ("shared.settings.source", "shared.cli"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "os.environ" not in text and "getenv" not in text, f"{module} reads the environment"


def test_nothing_under_shared_imports_azure_functions() -> None:
    for module in MODULES:
        names = imports_of(module)
        assert not any(name == "azure.functions" or name.startswith("azure.functions.") for name in names), module


def test_every_module_states_why_it_exists() -> None:
    for module, path in MODULES.items():
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert docstring and docstring.strip(), f"{module} has no module docstring"


INJECTED = [
    ("shared.service", "from shared import compose", "shared.compose"),
    ("shared.service", "from . import compose", "shared.compose"),
    (
        "shared.api.rest",
        "from shared.providers.mkdocs.scoring import ranking",
        "shared.providers.mkdocs.scoring.ranking",
    ),
    (
        "shared.api.rest",
        "from shared.providers.mkdocs.scoring.ranking import Ranker",
        "shared.providers.mkdocs.scoring.ranking",
    ),
    ("shared.api.rest", "import shared.providers.mkdocs.scoring.ranking", "shared.providers.mkdocs.scoring.ranking"),
    (
        "shared.api.rest",
        "from ..providers.mkdocs.scoring.ranking import Ranker",
        "shared.providers.mkdocs.scoring.ranking",
    ),
    ("shared.api.rest", "from shared.providers import mkdocs", "shared.providers.mkdocs"),
    (
        "shared.compose",
        "from shared.providers.mkdocs.lifecycle.sites import SiteRegistry",
        "shared.providers.mkdocs.lifecycle.sites",
    ),
    (
        "function_app",
        "from shared.providers.mkdocs.lifecycle.warm import run_warmup",
        "shared.providers.mkdocs.lifecycle.warm",
    ),
    (
        "shared.providers.base",
        "from shared.providers.mkdocs.indexes.index import SiteIndex",
        "shared.providers.mkdocs.indexes.index",
    ),
    ("shared.providers.remote.provider", "from shared.providers import mkdocs", "shared.providers.mkdocs"),
    ("shared.providers.remote", "from ..mkdocs.scoring.text import analyze", "shared.providers.mkdocs.scoring.text"),
    (
        "shared.providers.ai_search.mapping",
        "from shared.providers.mkdocs.scoring import text",
        "shared.providers.mkdocs.scoring.text",
    ),
    ("shared.service", "def later() -> None:\n    from shared import compose", "shared.compose"),
    ("shared.service", "if not TYPE_CHECKING:\n    from shared import compose", "shared.compose"),
    ("shared.service", "if TYPE_CHECKING:\n    pass\nelse:\n    from shared import compose", "shared.compose"),
]
"""Ways around the rules, each injected into a real module's source: the first, second and third are issue 27's
(`from shared import X` read as `shared`, relative imports skipped, a provider's pure modules open to every layer)."""


@pytest.mark.parametrize(("module", "line", "reached"), INJECTED, ids=[f"{m}: {line}" for m, line, _ in INJECTED])
def test_the_checker_refuses_each_way_around_it(module: str, line: str, reached: str) -> None:
    path = MODULES.get(module) or HOSTS[module]
    source, package = path.read_text(encoding="utf-8"), module in PACKAGES

    assert not check(module, source, package=package)
    assert reached in check(module, f"{source}\n{line}\n", package=package)


@pytest.mark.parametrize(
    ("module", "line", "package"),
    [
        ("shared.providers.mkdocs.provider", "from shared.providers.mkdocs.scoring import ranking", False),
        ("shared.providers.mkdocs.lifecycle.loading", "from . import ranking", False),
        ("shared.providers.mkdocs", "from shared.providers.mkdocs.provider import MkDocsProvider", True),
        ("shared.providers.mkdocs", "from .sites import SiteRegistry", True),
        ("shared.compose", "from shared.providers import ai_search, mkdocs, remote", False),
        ("shared.compose", "from shared.providers.mkdocs import MkDocsProvider", False),
        ("shared.service", "from shared import __version__, reading", False),
        ("shared.service", "if TYPE_CHECKING:\n    from shared.compose import Composition", False),
        (
            "shared.api.rest",
            "import typing\nif typing.TYPE_CHECKING:\n    from shared.compose import Composition",
            False,
        ),
    ],
)
def test_the_checker_still_allows_what_the_rules_do(module: str, line: str, package: bool) -> None:
    assert not check(module, line, package=package)


def test_imports_are_named_by_the_module_they_bring_in() -> None:
    assert imports("shared.service", "from shared import reading, __version__") == {"shared.reading", "shared"}
    assert imports("shared.providers.mkdocs", "from .scoring import ranking", package=True) == {
        "shared.providers.mkdocs.scoring.ranking"
    }
    assert imports("shared.providers.mkdocs.provider", "from .. import base") == {"shared.providers.base"}
    assert imports("shared.providers.mkdocs.provider", "from ..base import DocumentationProvider") == {
        "shared.providers.base"
    }
    assert imports("shared.x", "from azure import functions") == {"azure", "azure.functions"}
    with pytest.raises(AssertionError):
        imports("shared.service", "from ... import x")


def closure(module: str) -> set[str]:
    """Every module of this repository `module` imports, directly or through others (annotations aside)."""
    seen: set[str] = set()
    pending = [module]
    while pending:
        for name in imports_of(pending.pop()):
            if name in MODULES and name not in seen:
                seen.add(name)
                pending.append(name)
    return seen


KEPT_APART = [
    ("shared.providers.mkdocs.fetching.unserved_check", "shared.providers.mkdocs.provider"),
    ("shared.providers.mkdocs.lifecycle.warm", "shared.providers.mkdocs.provider"),
    ("shared.providers.mkdocs.lifecycle.refresh", "shared.providers.mkdocs.provider"),
    ("shared.providers.mkdocs.lifecycle.health", "shared.providers.mkdocs.scoring.embeddings"),
    ("shared.providers.mkdocs.lifecycle.health", "shared.providers.mkdocs.scoring.stored_vectors"),
]
"""Arrows that once lifted a whole pipeline above what it serves (the warm-up and the publish refresh importing the
serving provider for one helper; health importing the embedding jobs for one enum), refused even through other
modules."""


@pytest.mark.parametrize(("module", "apart"), KEPT_APART, ids=[f"{m} -/-> {a}" for m, a in KEPT_APART])
def test_pipelines_do_not_reach_up_into_what_they_serve(module: str, apart: str) -> None:
    assert apart not in closure(module), f"{module} imports {apart}, directly or through other modules"
