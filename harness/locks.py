"""The hash-pinned locks under locks/ (written by ci/lock.sh), read: their pins, and the CuTe DSL version
each package target runs under. One source of truth for versions: nothing else writes them down."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The CuTe DSL a package runs under, by `nox -s package -- --dsl TARGET`: the leaderboard runner's, or
# the one development uses.
DSL_LOCKS = {"runner": "locks/leaderboard.txt", "dev": "locks/dev.txt"}


def lock_pins(lock: str, repo: Path = REPO) -> dict[str, str]:
    """{distribution: version} of a hash-pinned lock (names normalised: lower case, runs of -_. as -)."""
    pins = {}
    for m in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)", (repo / lock).read_text(), flags=re.M):
        pins[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return pins


def dsl_version(target: str, repo: Path = REPO) -> str:
    """The nvidia-cutlass-dsl version of a package target ("runner" or "dev")."""
    return lock_pins(DSL_LOCKS[target], repo)["nvidia-cutlass-dsl"]
