"""The house's picture: how tall a package's import graph stands, and which modules sit at each height.

    python tools/house.py [--root .] [--package shared.providers.mkdocs]

A module's height is the longest chain of imports below it inside the package (a module importing nothing of the
package stands at 1); imports under `if TYPE_CHECKING:` are annotations and do not count. A pipeline that imports
what it serves stands above it: the picture shows where each module sits, the tallest and the widest level, and
the largest module. Run it on two checkouts (`git worktree add`) to compare a redesign before and after.
"""

from __future__ import annotations

import argparse
import ast
import functools
import sys
from collections.abc import Collection
from pathlib import Path


def module_name(path: Path, root: Path) -> str:
    """A module's dotted name from its path under `root` (a package's `__init__` is the package)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_names(root: Path, top: str) -> dict[str, Path]:
    """Every module under the top-level package `top` of `root`, by dotted name."""
    return {module_name(path, root): path for path in sorted((root / top).rglob("*.py"))}


def imports(module: str, source: str, known: Collection[str], *, package: bool = False) -> set[str]:
    """What `source` (the text of `module`; `package` when it is a package's `__init__`) imports, outside
    `if TYPE_CHECKING:` blocks: `from package import name` is the module `package.name` when `known` holds it, and
    a relative import is resolved against `module`. Names outside the top-level packages of `known` are libraries:
    `from azure import functions` counts both `azure` and `azure.functions`. (`tests/test_architecture.py` checks
    the import rules with it, and tests its holes.)"""
    tree = ast.parse(source)
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and _type_checking(block.test)
        for child in block.body
        for node in ast.walk(child)
    }
    tops = {name.split(".")[0] for name in known}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node, package=package)
            for alias in node.names:
                name = f"{base}.{alias.name}"
                if base.split(".")[0] in tops:
                    found.add(name if name in known else base)
                else:
                    found |= {base} if alias.name == "*" else {base, name}
    return found


def _type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:` exactly (not `if not TYPE_CHECKING:`)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: str, node: ast.ImportFrom, *, package: bool) -> str:
    """The absolute name of what `from ... import` in `module` imports from; AssertionError beyond the top-level
    package (no module can run with such an import)."""
    if node.level == 0:
        return node.module or ""
    parts = module.split(".") if package else module.split(".")[:-1]
    if node.level - 1 >= len(parts):
        raise AssertionError(f"{module} imports beyond the top-level package")
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def heights(package: str, known: dict[str, Path]) -> dict[str, int]:
    """Each module of `package` (its `__init__` aside) and its height inside it."""
    inside = {name for name in known if name.startswith(package + ".")}
    below = {
        name: imports(name, known[name].read_text(encoding="utf-8"), known, package=known[name].name == "__init__.py")
        & (inside - {name})
        for name in inside
    }

    @functools.cache
    def height(name: str) -> int:
        return 1 + max((height(other) for other in below[name]), default=0)

    return {name: height(name) for name in sorted(inside)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--package", default="shared.providers.mkdocs")
    args = parser.parse_args(argv)
    known = module_names(args.root, args.package.split(".")[0])
    measured = heights(args.package, known)
    lines = {name: len(known[name].read_text(encoding="utf-8").splitlines()) for name in measured}
    levels: dict[int, list[str]] = {}
    for name, height in measured.items():
        levels.setdefault(height, []).append(name.rsplit(".", 1)[1])
    print(
        f"{args.package}: {len(measured)} modules, {sum(lines.values()):,} lines, largest {max(lines.values())} "
        f"({max(lines, key=lines.__getitem__).rsplit('.', 1)[1]}), height {max(levels)}, "
        f"widest level {max(len(names) for names in levels.values())}"
    )
    for height in sorted(levels):
        print(f"{height:3} {' '.join(sorted(levels[height]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
