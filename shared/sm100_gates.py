"""The gates table as the repository sees it (shared/sm100_variants.gate reads it).

TABLE: results/b200/gates.json if a B200 run (`nox -s b200`) has written it, else None (every shape
gets its conservative kernel). What the kernels here are, which the gate compares with what the table
was measured with: DSL, the installed CuTe DSL's version, and code_fingerprint(problem), the problem's
code as it is now (shared/code_fingerprint.py). forced(): the variant a b200 variants stage forces on
the evaluator it starts (the NVFP4_SM100_VARIANT environment variable; never set otherwise).

A packaged submission never carries this file: harness/package.py writes a module of the same name in its
place with the table as a literal, the package's target DSL and code fingerprint, nothing forced and
RUNNER_DSL_ONLY set for the leaderboard runner's CuTe DSL.
"""

from __future__ import annotations

import functools
import json
import os
from importlib import metadata
from pathlib import Path

TABLE_PATH = Path(__file__).resolve().parent.parent / "results" / "b200" / "gates.json"
FORCE_ENV = "NVFP4_SM100_VARIANT"
RUNNER_DSL_ONLY = False  # the repository runs under whichever DSL is installed


def load(path: Path = TABLE_PATH) -> dict | None:
    """The table at `path`, or None where no B200 run has written one."""
    return json.loads(path.read_text()) if path.is_file() else None


def installed_dsl() -> str | None:
    try:
        return metadata.version("nvidia-cutlass-dsl")
    except metadata.PackageNotFoundError:
        return None


TABLE = load()
SOURCE = f"{TABLE_PATH.name} (commit {TABLE.get('commit')}, {TABLE.get('date')})" if TABLE else "no B200 gates table"
DSL = installed_dsl()


@functools.cache
def code_fingerprint(problem: str) -> str:
    from shared.code_fingerprint import code_fingerprint as of_the_tree

    return of_the_tree(problem)


def forced() -> str | None:
    return os.environ.get(FORCE_ENV) or None
