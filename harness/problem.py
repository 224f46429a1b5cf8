"""Problems: manifest loading (the harness side; the generators' pieces are the kit's shared/generators.py).

A problem is a subpackage `problems/<name>/` with a `manifest.yaml` (leaderboard names, GPUs, test
and benchmark cases, B200 speed of light, tolerance, timing parameters) and a `reference.py` that
defines

    generate_input(**case, device="cuda")         the leaderboard's input tuple, in its RNG order
    generate_stress_input(**case, device="cuda")  same tuple, all 16 FP4 codes in both nibbles,
                                                  a wide range of E4M3 scales
    ref_kernel(data)                              exact decode + fp32 accumulation, any device
    custom_kernel(data)                           = ref_kernel, so the reference is an impl too
    output_of(data)                               the tensor(s) a submission writes into (c)
    case_error(**case) -> str | None              the task's rule a case line breaks (K's multiple), if any
    cost(**case) -> (read, written, flops)        the least bytes moved and the FLOPs, for sol.py

Impls (`--impl NAME`) are files that define `custom_kernel(data)` and, optionally, `prepare(data)`
(untimed work done once per input, e.g. pre-decoding for the bf16 peer).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

# PROBLEM_NAMES is read here by the evaluator and the report (P.PROBLEM_NAMES)
from harness.arguments import PROBLEM_NAMES, problem_error  # noqa: F401

PROBLEMS_DIR = Path(__file__).resolve().parent.parent / "problems"


@dataclass(frozen=True)
class Problem:
    name: str
    leaderboard: str
    gpus: tuple[str, ...]
    description: str
    tests: tuple[dict, ...]
    benchmarks: tuple[dict, ...]
    sol_b200_us: tuple[float, ...]
    rtol: float
    atol: float
    inputs_per_sample: int  # 1 for gemv (eval.py), 50 for gemm/dual, 15 for group
    timing: dict = field(default_factory=dict)
    cpu_cases: tuple[dict, ...] = ()  # small shapes that `bench` times on a CPU unless --full
    extra_leaderboards: tuple[str, ...] = ()

    @property
    def reference(self) -> ModuleType:
        return importlib.import_module(f"problems.{self.name}.reference")

    @property
    def directory(self) -> Path:
        return PROBLEMS_DIR / self.name


class UnknownProblem(ValueError):
    pass


@functools.cache
def load_problem(name: str) -> Problem:
    path = PROBLEMS_DIR / name / "manifest.yaml"
    if not path.is_file():
        raise UnknownProblem(problem_error(name) or f"problem {name!r} has no manifest ({path})")
    m = yaml.safe_load(path.read_text())
    return Problem(
        name=m["name"],
        leaderboard=m["leaderboard"],
        gpus=tuple(m["gpus"]),
        description=m.get("description", ""),
        tests=tuple(_freeze_case(c) for c in m["tests"]),
        benchmarks=tuple(_freeze_case(c) for c in m["benchmarks"]),
        sol_b200_us=tuple(float(x) for x in m["speed_of_light_b200_us"]),
        rtol=float(m["tolerance"]["rtol"]),
        atol=float(m["tolerance"]["atol"]),
        inputs_per_sample=int(m["timing"]["inputs_per_sample"]),
        timing=dict(m["timing"]),
        cpu_cases=tuple(_freeze_case(c) for c in m.get("cpu", ())),
        extra_leaderboards=tuple(m.get("extra_leaderboards", ())),
    )


def _freeze_case(case: dict) -> dict:
    # YAML lists -> tuples, as the leaderboard's case parser produces for group GEMM.
    return {k: tuple(v) if isinstance(v, list) else v for k, v in case.items()}


def describe_case(case: dict[str, Any]) -> str:
    """The leaderboard's case-line format: `k: v; k: v` (lists as [a, b])."""
    def fmt(v):
        return "[" + ", ".join(str(x) for x in v) + "]" if isinstance(v, tuple | list) else str(v)

    return "; ".join(f"{k}: {fmt(v)}" for k, v in case.items())
