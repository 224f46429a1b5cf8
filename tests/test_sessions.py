"""What a newcomer reads first about the nox sessions: `nox -l` (each session's docstring, first line
only) and the README's session table."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def sessions() -> dict[str, str]:
    """The noxfile's sessions: name -> docstring (the functions decorated with @nox.session)."""
    tree = ast.parse((REPO / "noxfile.py").read_text())
    return {f.name: ast.get_docstring(f, clean=False) or "" for f in tree.body if isinstance(f, ast.FunctionDef)
            and any("nox.session" in ast.unparse(d) for d in f.decorator_list)}


def test_nox_lists_each_session_with_a_whole_sentence():
    """`nox -l` shows `doc.strip().split("\\n")[0]`: that line must be a short sentence of its own."""
    assert {"test", "lint", "bench", "report", "b200", "package", "submit", "runner_dsl"} <= set(sessions())
    for name, doc in sessions().items():
        first = doc.strip().split("\n")[0]
        assert first.endswith(".") and len(first) <= 100, f"{name}: {first!r}"
        for pair in ("()", "[]"):
            assert first.count(pair[0]) == first.count(pair[1]), f"{name}: {first!r}"
        assert first.count("`") % 2 == 0, f"{name}: {first!r}"


def test_the_readme_session_table_names_every_session():
    readme = (REPO / "README.md").read_text()
    table = readme[readme.index("| session | what it does |"):].split("\n\n")[0]
    listed = set(re.findall(r"^\| `nox -s (\w+)", table, flags=re.M))
    assert listed == set(sessions())
