"""The committed results files, which tests may read: never whatever else sits in the working tree's
results/ (a user's own `nox -s bench` output, a file written with --json results/x.json)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def committed_results(repo: Path = REPO, pattern: str = "results/*.json") -> list[str]:
    """Absolute paths of the files matching `pattern` that git tracks, sorted. Outside a git checkout
    (an unpacked archive) a committed file cannot be told from a user's, so the calling test is skipped."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--", f":(glob){pattern}"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        pytest.skip(f"git is not usable here ({e}): the committed results cannot be told from a user's")
    if out.returncode != 0:
        pytest.skip("not a git checkout: the committed results cannot be told from a user's")
    return sorted(str(repo / name) for name in out.stdout.split("\0") if name)
