"""What the harness's commands take on their command lines, checked the same way wherever they are
checked: by the commands themselves (eval, package, submit, report) and by the noxfile before it
installs anything. Standard library only, for that reason: nox runs the checks in its own Python,
which has neither PyYAML nor torch.

A mistake is one line (Usage, or OneLineParser's message) and exit status EXIT_USAGE.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBLEM_NAMES = ("gemv", "gemm", "dual_gemm", "group_gemm")
MODES = ("test", "benchmark", "leaderboard")  # the evaluator's and popcorn-cli's
EXIT_USAGE = 2


class Usage(ValueError):
    """A mistake in a command's arguments; the message is the one line that says which, and what is
    expected."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, with its mistakes raised as Usage (one line) rather than printed as the whole usage
    and exited: each command prints the line its own way, and the noxfile can catch it."""

    def error(self, message: str):
        raise Usage(message)


def checked(command: str, check, argv):
    """check(argv)'s result (a command's parsed arguments), or None once its mistake is on stderr as one
    line, "COMMAND: what is wrong"."""
    try:
        return check(argv)
    except Usage as e:
        print(f"{command}: {e}", file=sys.stderr)
        return None


def problem_error(name: str) -> str | None:
    """None for a known problem; else the line that names the known ones (and the likeliest meant)."""
    if name in PROBLEM_NAMES:
        return None
    close = difflib.get_close_matches(name, PROBLEM_NAMES, n=1)
    hint = f"; the nearest is {close[0]}" if close else ""
    return f"unknown problem {name!r} (known: {', '.join(PROBLEM_NAMES)}){hint}"


def problem_name(name: str) -> str:
    """argparse `type` of a PROBLEM argument."""
    error = problem_error(name)
    if error:
        raise argparse.ArgumentTypeError(error)
    return name


def check_eval_arguments(argv: list[str]) -> None:
    """The evaluator's problem and --mode, before `nox -s bench` installs what the evaluator needs
    (the rest of its options are the evaluator's to check, once it runs). Usage on a mistake."""
    p = OneLineParser(prog="harness.eval", add_help=False)
    p.add_argument("problem", type=problem_name)
    p.add_argument("--mode", choices=MODES)
    p.parse_known_args(argv)


_TOP_LEVEL = re.compile(r"^(name|leaderboard|gpus|extra_leaderboards):[ \t]*(.*?)[ \t]*$", re.M)
_PLAIN = re.compile(r"^[A-Za-z0-9_.-]+$")


def manifest_targets(problem: str, repo: Path = REPO) -> dict | None:
    """The manifest's `name`, `leaderboard`, `gpus` and `extra_leaderboards`, read without PyYAML so
    that a --gpu or --leaderboard is checked before anything is installed (harness/package.py
    target()). Each must be a top-level line of a plain name or a flow list of plain names; None
    where the manifest is missing or writes one otherwise (the packager, with PyYAML, checks then)."""
    path = repo / "problems" / problem / "manifest.yaml"
    if not path.is_file():
        return None
    fields = {}
    for key, value in _TOP_LEVEL.findall(path.read_text()):
        if value.startswith("[") and value.endswith("]"):
            items = [item.strip() for item in value[1:-1].split(",") if item.strip()]
            if not all(_PLAIN.match(item) for item in items):
                return None
            fields[key] = items
        elif _PLAIN.match(value):
            fields[key] = value
        else:
            return None
    return fields if {"name", "leaderboard", "gpus"} <= fields.keys() else None
