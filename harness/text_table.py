"""A plain-text table (for logs, pipes and files): columns as wide as their widest cell, a rule of
dashes under the head."""

from __future__ import annotations


def plain_table(head: list[str], rows: list[list[str]]) -> list[str]:
    """The table's lines: the head, its rule, one line per row (trailing spaces dropped)."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]

    def line(cells) -> str:
        return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

    return [line(head), line(["-" * w for w in widths]), *map(line, rows)]
