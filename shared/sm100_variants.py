"""The sm100 kernel variants of a problem and the gate that picks one per shape (no DSL).

Every problem's config.py keeps `choose_sm100(...)` as its conservative choice and registers its
variants in `SM100_VARIANTS: dict[str, Sm100Variant]`, "conservative" first. Nothing here can run an
sm100 kernel, so a variant is used only where a B200 run has found it correct and fastest for that
very shape: the gates table (results/b200/gates.json, written only by `nox -s b200`; a packaged
submission carries it as a literal). `gate(...)` is what a submission's sm100 branch calls; wherever
the table is absent, does not list the shape, names a variant this registry does not know, one it did
not find correct and fastest, one that does not apply to the shape, or (in a package for the
leaderboard runner) one that the runner's CuTe DSL cannot compile, it returns the conservative config.

A verdict holds for what was measured, so the table is keyed by it and the gate refuses (conservative
again) a table measured under another CuTe DSL than the one these kernels run under, another SM count,
or kernel code that has changed since: the problem's code fingerprint (shared/code_fingerprint.py) and,
per variant and shape, the kernel fingerprint of the code and the config it ran (`kernel_fingerprint`).

Table schema (what harness/b200/gates_table.py writes and `chosen_variant` reads):
    {"schema": 2, "device": ..., "capability": [10, 0], "sm_count": 148, "dsl": "4.3.5",
     "versions": {...}, "commit": ..., "date": ...,
     "problems": {PROBLEM: {"code": CODE_FINGERPRINT,
                            "cases": [{"key": case_key(shape), "case": {...}, "chosen": NAME,
                                       "variants": {NAME: {"correct": bool, "failure": str | None,
                                                           "mean_us": float | None,
                                                           "kernel": KERNEL_FINGERPRINT | None}}}]}}}
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

CONSERVATIVE = "conservative"
SCHEMA = 2


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


def kernel_fingerprint(code: str, config) -> str:
    """16 hex digits naming what runs for one variant on one shape: the problem's kernel code (its code
    fingerprint) and the config the variant chose, every field of it (host-only ones too: a grouped
    schedule's order changes what runs without changing the PTX)."""
    fields = {"class": type(config).__name__, **dataclasses.asdict(config)}
    text = json.dumps({"code": code, "config": fields}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class GateKeys:
    """What the kernels that would be served are: the CuTe DSL version they run under and the problem's
    code fingerprint. A table keyed otherwise is not about them."""

    dsl: str | None
    code: str | None


def refusal(table: dict, problem: str, entry: dict, args: tuple, variants: dict, keys: GateKeys) -> str | None:
    """Why the table's verdict on this shape is not about these kernels, or None: another DSL, other
    kernel code, or a config of a compared variant (the chosen one and each correct one it was faster
    than) that is not the one measured."""
    if table.get("dsl") != keys.dsl:
        return f"measured under CuTe DSL {table.get('dsl')}, these kernels run under {keys.dsl}"
    measured = ((table.get("problems") or {}).get(problem) or {}).get("code")
    if measured != keys.code:
        return f"{problem}'s kernel code changed since the B200 run (code {keys.code}, measured {measured})"
    for name, result in sorted((entry.get("variants") or {}).items()):
        if result.get("correct") is not True or name not in variants:
            continue
        config = variants[name].choose(*args)
        now = kernel_fingerprint(keys.code, config) if config is not None else None
        if now != result.get("kernel"):
            return f"{name}'s kernel for this shape changed since the B200 run (kernel {now}, measured " \
                   f"{result.get('kernel')})"
    return None


def chosen_variant(table: dict | None, problem: str, shape, sm_count: int, variants: dict, keys: GateKeys,
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
    why_not = refusal(table, problem, entry, chooser_args(problem, shape, sm_count), variants, keys)
    if why_not:
        return CONSERVATIVE, why_not
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
    if gates.TABLE is None:  # nothing to check the kernels against: no fingerprint computed
        return conservative(*args)
    keys = GateKeys(gates.DSL, gates.code_fingerprint(problem))
    name, _why = chosen_variant(gates.TABLE, problem, shape, args[-1], variants, keys, gates.RUNNER_DSL_ONLY)
    if name != CONSERVATIVE:
        cfg = variants[name].choose(*args)
        if cfg is not None:
            return cfg
    return conservative(*args)
