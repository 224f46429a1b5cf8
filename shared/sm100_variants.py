"""The sm100 kernel variants a problem registers (no DSL): each problem's config.py maps a name to an
`Sm100Variant` in `SM100_VARIANTS`, "conservative" being its choose_sm100."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Sm100Variant:
    name: str  # "conservative", "splitk_swap", "cta2", "msorted", ...
    # same arguments as the problem's choose_sm100; None = not applicable to this shape
    choose: Callable[..., object | None]
    runner_dsl: bool = True  # compiles under the leaderboard runner's CuTe DSL 4.3.5
    summary: str = ""  # one line: the technique
