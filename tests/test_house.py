"""The shape of the house, checked on the tree: modules of one concept and a readable size, short module docstrings,
a README that is a front door, one definition of each shared constant, and tests that pass fakes rather than
patching internals (issue 45). A limit here is a prompt to split by concept, not to squeeze lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted((ROOT / "shared").rglob("*.py"))
MAX_MODULE_LINES = 450
MAX_DOCSTRING_LINES = 25
MAX_README_LINES = 220
MAX_PATCHES = 5
"""`monkeypatch.setattr` calls in all the tests: what is left when a seam cannot be injected (the process-wide
temporary directory the telemetry exporter writes to, a spy on the constant-time comparison, a signal inside the
lexical half of a search that must run while its query is embedded)."""
ONCE = ("MCP_PATH", "LOOPBACK_HOSTS")


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_outgrows_one_concept(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{_name(path)} has {lines} lines: split it by concept"


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_module_docstrings_say_why_not_everything(path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or ""
    lines = len(docstring.splitlines())
    assert lines <= MAX_DOCSTRING_LINES, f"{_name(path)}'s docstring has {lines} lines: the rest belongs in docs/"


def test_the_readme_is_a_front_door() -> None:
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines: measurements and how-it-works live in docs/"


@pytest.mark.parametrize("constant", ONCE)
def test_shared_constants_are_defined_once(constant: str) -> None:
    defined = [
        _name(path)
        for path in MODULES
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and any(isinstance(target, ast.Name) and target.id == constant for target in _targets(node))
    ]
    assert len(defined) == 1, f"{constant} is defined in {defined}"


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return list(node.targets) if isinstance(node, ast.Assign) else [node.target]


def test_tests_pass_fakes_rather_than_patch_internals() -> None:
    patches = [
        f"{_name(path)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.name != Path(__file__).name
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bmonkeypatch\.setattr\(", line)
    ]
    assert len(patches) <= MAX_PATCHES, f"{len(patches)} patches of internals: {patches}"


MAX_MODULES_PER_FOLDER = 15


def test_no_folder_holds_more_modules_than_a_reader_can_take_in() -> None:
    """A folder under `shared/` (the package's own top level aside) holds at most 15 modules directly: past that,
    its concepts go into sub-packages a reader can find them by (`providers/mkdocs/scoring/`, `api/mcp/`)."""
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder in (ROOT / "shared").rglob("*")
        if folder.is_dir() and folder.name != "__pycache__"
        if (count := len(list(folder.glob("*.py")))) > MAX_MODULES_PER_FOLDER
    }
    assert crowded == {}


def test_no_provider_class_takes_the_whole_settings() -> None:
    """A provider's classes take the few values they read (keyword-only); `shared/compose.py` (and a runner's own
    function, such as the warm-up's) is where the settings turn into them."""
    taking = []
    for path in (ROOT / "shared" / "providers").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                for argument in [*node.args.args, *node.args.kwonlyargs]:
                    if argument.annotation is not None and "DocumentationSettings" in ast.unparse(argument.annotation):
                        taking.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert taking == []
