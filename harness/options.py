"""Options pulled out of a command line that is otherwise someone else's (a session's arguments passed
through to the evaluator, the B200 session or pytest). Standard library only: noxfile.py reads it before
anything is installed."""

from __future__ import annotations


class MissingValue(ValueError):
    """`--name` came last, without its value."""


def take_option(args: list[str], name: str) -> tuple[list[str], list[str]]:
    """(the values of every `name VALUE` / `name=VALUE`, the other arguments)."""
    values, rest, i = [], [], 0
    while i < len(args):
        if args[i] == name:
            if i + 1 >= len(args):
                raise MissingValue(f"{name} needs a value")
            values.append(args[i + 1])
            i += 2
            continue
        if args[i].startswith(name + "="):
            values.append(args[i].split("=", 1)[1])
        else:
            rest.append(args[i])
        i += 1
    return values, rest
