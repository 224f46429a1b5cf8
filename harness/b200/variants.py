"""The variants stage of the B200 session: per problem, every registered sm100 variant (config.py
SM100_VARIANTS) forced through the gate (shared/sm100_gates.FORCE_ENV in the evaluator's environment) on
the benchmark cases it applies to: the evaluator in test mode with the stress data, then in leaderboard
mode (leaderboard data, poisoned outputs and guards, then the timed loop that rechecks every sample). Per
case each variant's verdict and mean, the kernel fingerprint of what ran (the problem's code and the
variant's config for the shape), and the chosen one (correct and fastest): the gates table's cases."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from harness.b200 import model as M
from harness.b200.steps import evaluator
from harness.problem import describe_case as case_line
from shared.devices import B200_SM_COUNT


def variant_registry(problem: str) -> dict:
    return importlib.import_module(f"problems.{problem}.config").SM100_VARIANTS


def applicable(problem: str, variant, case: dict, sm_count: int = B200_SM_COUNT) -> bool:
    from shared.sm100_variants import CONSERVATIVE, case_shape, chooser_args

    if variant.name == CONSERVATIVE:
        return True
    return variant.choose(*chooser_args(problem, case_shape(problem, case), sm_count)) is not None


def variant_runs(problem: str, work: Path, sm_count: int) -> dict:
    """Every registered variant forced through the gate on the benchmark cases it applies to: stress data
    (test mode), then leaderboard mode. Returns {"code": the problem's code fingerprint, "cases": [...],
    "steps": {variant: {...}}}, the cases in the gates table's per-case form (`verdicts_of`)."""
    from shared.code_fingerprint import code_fingerprint
    from shared.sm100_gates import FORCE_ENV

    cases = M.benchmark_cases(problem)
    steps = {}
    for name, variant in variant_registry(problem).items():
        which = [c for c in cases if applicable(problem, variant, c, sm_count)]
        if not which:
            steps[name] = {"applies": []}
            continue
        env = {**os.environ, FORCE_ENV: name}
        lines = [a for c in which for a in ("--case", case_line(c))]
        steps[name] = {"applies": [case_line(c) for c in which]}
        for mode, data in (("test", "stress"), ("leaderboard", "leaderboard")):
            step = evaluator(problem, mode, data, work / f"{problem}-{name}-{data}.json", lines, env)
            steps[name]["stress" if data == "stress" else "leaderboard"] = step
    code = code_fingerprint(problem)
    return {"code": code, "cases": verdicts_of(problem, cases, steps, code, sm_count), "steps": steps}


def _case_results(step: dict | None) -> dict:
    """({case line: evaluator case result}, the impl's error) of one evaluator step."""
    doc = (step or {}).get("json") or {}
    impl = next(iter((doc.get("impls") or {}).values()), {})
    return {case_line(c["case"]): c for c in impl.get("cases", []) if c.get("case")}, impl.get("error")


def kernels_of(problem: str, case: dict, code: str, sm_count: int) -> dict[str, str]:
    """{variant: its kernel fingerprint} on one case, for each registered variant that applies to it."""
    from shared.sm100_variants import case_shape, chooser_args, kernel_fingerprint

    args = chooser_args(problem, case_shape(problem, case), sm_count)
    configs = {name: variant.choose(*args) for name, variant in variant_registry(problem).items()}
    return {name: kernel_fingerprint(code, cfg) for name, cfg in configs.items() if cfg is not None}


def verdicts_of(problem: str, cases: list[dict], steps: dict, code: str, sm_count: int = B200_SM_COUNT) -> list[dict]:
    """Per benchmark case: each variant's verdict (correct, or the failure), mean us and kernel fingerprint,
    and the chosen one: the fastest correct variant, conservative on ties and where none is correct."""
    from shared.sm100_variants import CONSERVATIVE, case_key, case_shape

    out = []
    for case in cases:
        line = case_line(case)
        kernels = kernels_of(problem, case, code, sm_count)
        variants = {}
        for name, step in steps.items():
            if line not in step.get("applies", []):
                variants[name] = {"correct": None, "failure": "not applicable to this shape", "mean_us": None,
                                  "kernel": None}
                continue
            stress, stress_error = _case_results(step.get("stress"))
            lb, lb_error = _case_results(step.get("leaderboard"))
            s, r = stress.get(line), lb.get(line)
            failure = None
            if s is None or s.get("status") != "pass":
                failure = f"stress data: {(s or {}).get('error') or stress_error or 'no result'}"
            elif r is None or r.get("status") != "pass":
                failure = f"leaderboard mode: {(r or {}).get('error') or lb_error or 'no result'}"
            mean = ((r or {}).get("stats") or {}).get("mean")
            variants[name] = {"correct": failure is None and mean is not None, "failure": failure,
                              "mean_us": round(mean / 1e3, 4) if failure is None and mean else None,
                              "kernel": kernels.get(name)}
        correct = [(v["mean_us"], name != CONSERVATIVE, name) for name, v in variants.items() if v["correct"]]
        chosen = min(correct)[2] if correct else CONSERVATIVE
        out.append({"key": case_key(case_shape(problem, case)), "case": case, "chosen": chosen,
                    "variants": variants})
    return out
