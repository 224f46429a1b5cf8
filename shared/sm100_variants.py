"""The sm100 kernel variants of a problem and the gate that picks one per shape (no DSL).

Every problem's config.py keeps `choose_sm100(...)` as its conservative choice and registers its
variants in `SM100_VARIANTS: dict[str, Sm100Variant]`, "conservative" first. Nothing here can run an
sm100 kernel, so a variant is used only where a B200 run has found it correct and fastest for that
very shape: the gates table (results/b200/gates.json, written only by `nox -s b200`; a packaged
submission carries it as a literal). `gate(...)` is what a submission's sm100 branch calls; wherever
the table is absent, does not list the shape, names a variant this registry does not know, one it did
not find correct and fastest, one that does not apply to the shape, or (in a package for the
leaderboard runner) one that the runner's CuTe DSL cannot compile, it returns the conservative config.

Table schema (what harness/b200/gates_table.py writes and `chosen_variant` reads):
    {"schema": 1, "device": ..., "capability": [10, 0], "sm_count": 148, "versions": {...},
     "commit": ..., "date": ...,
     "problems": {PROBLEM: {"cases": [{"key": case_key(shape), "case": {...}, "chosen": NAME,
                                       "variants": {NAME: {"correct": bool, "failure": str | None,
                                                           "mean_us": float | None}}}]}}}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

CONSERVATIVE = "conservative"
SCHEMA = 1


@dataclass(frozen=True)
class Sm100Variant:
    name: str  # "conservative", "splitk_swap", "cta2", "msorted", ...
    # same arguments as the problem's choose_sm100; None = not applicable to this shape
    choose: Callable[..., object | None]
    runner_dsl: bool = True  # compiles under the leaderboard runner's CuTe DSL 4.3.5
    summary: str = ""  # one line: the technique


def case_key(shape) -> str:
    """The table's name for a shape: "128x7168x16384x1" for (M, N, K, L); groups joined by ";"."""
    if shape and isinstance(shape[0], tuple | list):
        return ";".join(case_key(s) for s in shape)
    return "x".join(str(int(v)) for v in shape)


def case_shape(problem: str, case: dict):
    """The shape a submission passes to the gate for a manifest case (gemv (M, K, L); gemm and dual_gemm
    (M, N, K, L); group_gemm one (M, N, K, 1) per group)."""
    if problem == "gemv":
        return (case["m"], case["k"], case["l"])
    if problem == "group_gemm":
        return tuple((m, n, k, 1) for m, n, k in zip(case["m"], case["n"], case["k"]))
    return (case["m"], case["n"], case["k"], case["l"])


def chooser_args(problem: str, shape, sm_count: int) -> tuple:
    """choose_sm100's arguments for a shape (what each submission's sm100_config passes)."""
    return (list(shape), sm_count) if problem == "group_gemm" else (*shape, sm_count)


def chosen_variant(table: dict | None, problem: str, shape, sm_count: int, variants: dict,
                   runner_dsl_only: bool = False) -> tuple[str, str]:
    """(variant name, why) the table allows for this shape; CONSERVATIVE wherever it allows nothing."""
    if not table:
        return CONSERVATIVE, "no B200 gates table"
    if table.get("schema") != SCHEMA:
        return CONSERVATIVE, f"gates table schema {table.get('schema')!r}, expected {SCHEMA}"
    if table.get("sm_count") != sm_count:
        return CONSERVATIVE, f"table measured with {table.get('sm_count')} SMs, this device has {sm_count}"
    key = case_key(shape)
    cases = ((table.get("problems") or {}).get(problem) or {}).get("cases") or []
    entry = next((c for c in cases if c.get("key") == key), None)
    if entry is None:
        return CONSERVATIVE, f"{problem} {key} is not in the table"
    name = entry.get("chosen") or CONSERVATIVE
    if name == CONSERVATIVE:
        return CONSERVATIVE, "the table chose conservative"
    if name not in variants:
        return CONSERVATIVE, f"the table names {name!r}, which {problem} does not register"
    results = entry.get("variants") or {}
    mine = results.get(name) or {}
    if mine.get("correct") is not True or mine.get("mean_us") is None:
        failure = f" ({mine['failure']})" if mine.get("failure") else ""
        return CONSERVATIVE, f"{name} was not found correct on the B200{failure}"
    correct = [r["mean_us"] for r in results.values() if r.get("correct") is True and r.get("mean_us") is not None]
    if mine["mean_us"] > min(correct):
        return CONSERVATIVE, f"{name} is not the fastest correct variant in the table"
    if runner_dsl_only and not variants[name].runner_dsl:
        return CONSERVATIVE, f"{name} does not compile under the runner's CuTe DSL (runner_dsl=False)"
    return name, f"B200 table: correct, {mine['mean_us']:.2f} us"


def gate(problem: str, variants: dict, shape, *args):
    """The sm100 config for one call: `args` are exactly choose_sm100's (the SM count last), `shape` the
    case's shape as case_key takes it. A forced variant (only ever set by the b200 variants stage in the
    repository; a package carries none) is served wherever it applies; else the table's choice."""
    from shared import sm100_gates as gates

    conservative = variants[CONSERVATIVE].choose
    forced = gates.forced()
    if forced:
        if forced not in variants:
            raise ValueError(f"{problem}: forced sm100 variant {forced!r} is not registered "
                             f"(expected one of {sorted(variants)})")
        cfg = variants[forced].choose(*args)
        return conservative(*args) if cfg is None else cfg
    name, _why = chosen_variant(gates.TABLE, problem, shape, args[-1], variants, gates.RUNNER_DSL_ONLY)
    if name != CONSERVATIVE:
        cfg = variants[name].choose(*args)
        if cfg is not None:
            return cfg
    return conservative(*args)
