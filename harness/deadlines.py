"""The leaderboards' deadlines, from the upstream task files the project keeps (docs/spec/upstream/nvidia.yaml:
each problem's `name` and `deadline`, "YYYY-MM-DD H:MM" in UTC, the competition's own `deadline` for a
problem without one). The leaderboard rejects a submission past its deadline (docs/spec/LEADERBOARD.md
section 9), so `nox -s submit` refuses it first, sends nothing, and says what to run instead.

Standard library only: nox calls this before it installs anything.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

from harness.arguments import manifest_targets

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = REPO / "docs" / "spec" / "upstream" / "nvidia.yaml"


def _parse_time(text: str) -> dt.datetime:
    text = text.strip().strip("'\"")
    for fmt in ("%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC)
        except ValueError:
            pass
    raise ValueError(f"unreadable date {text!r}: expected YYYY-MM-DD or YYYY-MM-DD HH:MM (UTC)")


def deadlines(path: Path = UPSTREAM) -> dict[str, dt.datetime]:
    """{leaderboard name: deadline (UTC)}. The file's layout is fixed upstream: a top-level `deadline`,
    then `problems:` items of `- directory`, `name`, `deadline`, `gpus`; read line by line (no PyYAML)."""
    overall, out, name = None, {}, None
    for line in path.read_text().splitlines():
        if m := re.match(r"^deadline:\s*(.+)$", line):
            overall = _parse_time(m.group(1))
        elif m := re.match(r"^\s+name:\s*(\S+)\s*$", line):
            name = m.group(1)
            out[name] = overall
        elif (m := re.match(r"^\s+deadline:\s*(.+)$", line)) and name:
            out[name] = _parse_time(m.group(1))
    return out


def now_utc() -> dt.datetime:
    """The clock: NVFP4_NOW ("YYYY-MM-DD HH:MM", UTC) when set, for the tests and to ask "on that day,
    would it be sent?"; else the system's."""
    fixed = os.environ.get("NVFP4_NOW")
    return _parse_time(fixed) if fixed else dt.datetime.now(dt.UTC)


def manifest_leaderboard(problem: str, repo: Path = REPO) -> str | None:
    """The `leaderboard:` of problems/PROBLEM/manifest.yaml (the packager's default)."""
    fields = manifest_targets(problem, repo)
    return fields["leaderboard"] if fields else None


def closed_message(problem: str, leaderboard: str | None = None, now: dt.datetime | None = None,
                   path: Path = UPSTREAM) -> str | None:
    """One line when the leaderboard is past its deadline, else None (open, or no deadline known)."""
    board = leaderboard or manifest_leaderboard(problem)
    deadline = deadlines(path).get(board or "")
    now = now or now_utc()
    if deadline is None or now <= deadline:
        return None
    return (f"the {board} leaderboard closed on {deadline:%Y-%m-%d %H:%M} UTC and refuses submissions; "
            f"time the kernel on a B200 instead: nox -s bench -- {problem} --runner modal "
            "(--force sends anyway, for a leaderboard that has reopened)")
