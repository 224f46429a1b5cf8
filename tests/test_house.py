"""The house: which top-level folder may import which, read from the import statements (at module level
and inside functions; nothing is executed).

The kit (shared/) imports only itself; the problems import the kit; the harness judges both; scripts/
are the user's tools over all of them; lab/ holds the probes of past investigations. No arrow runs up:
nothing a submission or the harness is made of imports a script or a probe, and the problems (whose
files are packaged) import no harness.

    python tests/test_house.py        prints the listing: per folder, the folders it imports, file:line
"""

from __future__ import annotations

import ast
import functools
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("shared", "problems", "harness", "scripts", "lab")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


@functools.cache
def arrows() -> dict[tuple[str, str], list[str]]:
    """{(importing folder, imported folder): ["file:line module", ...]} between different folders."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            for line, module in imported_modules(path):
                target = module.split(".")[0]
                if target in FOLDERS and target != folder:
                    out[(folder, target)].append(f"{path.relative_to(REPO)}:{line} {module}")
    return out


FORBIDDEN = [("shared", "harness"), ("shared", "problems"), ("shared", "scripts"), ("shared", "lab"),
             ("problems", "harness"), ("problems", "scripts"), ("problems", "lab"),
             ("harness", "scripts"), ("harness", "lab"), ("scripts", "lab")]


@pytest.mark.parametrize("importer, imported", FORBIDDEN)
def test_no_arrow_runs_up(importer, imported):
    found = arrows().get((importer, imported), [])
    assert not found, f"{importer}/ imports {imported}/:\n  " + "\n  ".join(found)


def test_the_listing_sees_function_level_imports(tmp_path):
    """A lazy import inside a function is an arrow too (the packager follows those as well)."""
    path = tmp_path / "m.py"
    path.write_text("import os\n\ndef f():\n    from scripts.b200 import main\n    return main\n")
    assert imported_modules(path) == [(1, "os"), (4, "scripts.b200")]


def main() -> int:
    found = arrows()
    for importer in FOLDERS:
        targets = [t for t in FOLDERS if (importer, t) in found]
        print(f"{importer}/ imports: {', '.join(f'{t}/ ({len(found[importer, t])})' for t in targets) or 'nothing'}")
        for target in targets:
            if (importer, target) in FORBIDDEN:
                print("    up: " + "\n    up: ".join(found[importer, target]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
