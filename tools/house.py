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
from pathlib import Path


def module_names(root: Path, top: str) -> dict[str, Path]:
    """Every module under the top-level package `top` of `root`, by dotted name."""
    found = {}
    for path in sorted((root / top).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that `module` imports, outside `if TYPE_CHECKING:` blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and getattr(block.test, "id", getattr(block.test, "attr", "")) == "TYPE_CHECKING"
        for child in block.body
        for node in ast.walk(child)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                kept = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*kept, node.module] if node.module else kept)
            else:
                base = node.module or ""
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    return {name for name in found if name in known and name != module}


def heights(package: str, known: dict[str, Path]) -> dict[str, int]:
    """Each module of `package` (its `__init__` aside) and its height inside it."""
    inside = {name for name in known if name.startswith(package + ".")}
    below = {name: imports(name, known[name], known) & inside for name in inside}

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
