"""The fingerprint of a problem's kernel code: its submission and every project module the submission
imports (directly or through other project modules, at module level or inside functions), read from
the source files, comments and docstrings left out. Standard library only: `nox -s package` installs
PyYAML and nothing else, and computes it there.

What the B200 gates table is keyed to, with the CuTe DSL version and, per variant, the config it ran
(shared/sm100_variants.kernel_fingerprint): a verdict holds for exactly the code that was measured. Why
the source and not the PTX: the PTX needs the target DSL and minutes of compiling, and it misses what
runs on the host (a chooser, a grouped schedule's order, the launch), which decides as much as the
device code what a variant does. The cost: any code edit in those modules re-keys the problem's verdicts,
so the gate serves the conservative kernel until the next B200 run.

Never part of a package (it reads files); the repository's gates (shared/sm100_gates.py) and the harness
use it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ("shared", "problems")
# The gates table itself: data the kernels are gated by, not code of theirs (a package carries it as a literal).
NOT_KERNEL_CODE = frozenset({"shared.sm100_gates"})
# A string literal (kept as it is) or a comment (dropped). This repository's Python (3.11 syntax, no
# quotes nested in f-strings) lexes so; the same text gives the same result under any interpreter.
STRING_OR_COMMENT = re.compile(
    r"(?P<string>[rRbBuUfF]{0,2}(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))"
    r"|(?P<comment>#[^\n]*)")
BLOCKS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@functools.cache
def module_file(name: str, root: Path) -> Path | None:
    base = root.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def statements(body: list[ast.stmt]):
    """Every statement, nested ones (in functions, classes, branches, loops, handlers) included: imports
    and docstrings are statements, so no expression needs visiting."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from statements(getattr(node, field, None) or [])


@functools.cache
def _read(path: Path, mtime_ns: int, size: int) -> tuple[frozenset[str], str]:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    return frozenset(imported_names(tree)), code_without_comments(tree, text)


def read(path: Path) -> tuple[frozenset[str], str]:
    """(the dotted names its imports name, its code without comments), once per version of the file."""
    stat = path.stat()
    return _read(path, stat.st_mtime_ns, stat.st_size)


def imported_names(tree: ast.Module) -> set[str]:
    """The dotted names of the project this module imports (`from pkg import mod` gives pkg and pkg.mod)."""
    found = set()
    for node in statements(tree.body):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        found |= {name for name in names if name.split(".")[0] in PROJECT_PACKAGES}
    return found


def kernel_modules(entry: str, root: Path = ROOT) -> dict[str, Path]:
    """{module: file} of the entry module (a problem's submission) and every project module it needs (a
    package's __init__ with its modules)."""
    todo, found = [entry], {}
    while todo:
        name = todo.pop()
        if name in found or name in NOT_KERNEL_CODE:
            continue
        path = module_file(name, root)
        if path is None:
            raise FileNotFoundError(f"{name}: no {name.replace('.', '/')}.py under {root}")
        found[name] = path
        for imported in read(path)[0]:
            parts = imported.split(".")
            todo += [m for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1)) if module_file(m, root)]
    return found


def docstring_lines(tree: ast.Module) -> set[int]:
    """The lines of the module's, its classes' and its functions' docstrings (ruff keeps code off them)."""
    lines = set()
    for node in [tree, *statements(tree.body)]:
        if isinstance(node, BLOCKS) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines |= set(range(first.lineno, first.end_lineno + 1))
    return lines


def code_without_comments(tree: ast.Module, text: str) -> str:
    """The source without comments, docstrings and blank lines: what an edit of the words leaves alone."""
    docstrings = docstring_lines(tree)
    kept = "\n".join(line for i, line in enumerate(text.splitlines(), 1) if i not in docstrings)
    code = STRING_OR_COMMENT.sub(lambda m: m.group("string") or "", kept)
    return "\n".join(line.rstrip() for line in code.splitlines() if line.strip())


def code_fingerprint(problem: str, root: Path = ROOT, entry: str | None = None) -> str:
    """16 hex digits of the SHA-256 of the problem's kernel code (module names and code, sorted): its
    submission's, or that of another entry module (`nox -s package -- P --kernel NAME`)."""
    h = hashlib.sha256()
    for name, path in sorted(kernel_modules(entry or f"problems.{problem}.submission", root).items()):
        h.update(f"\0{name}\0".encode() + read(path)[1].encode())
    return h.hexdigest()[:16]
