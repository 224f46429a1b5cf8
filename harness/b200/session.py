"""One command for a B200 owner: `nox -s b200` (or `python -m scripts.b200`, `python -m harness.b200`).

On a machine with a B200 (compute capability 10.0) it runs, in order, and writes ONE results JSON
(results/local/b200-<utc stamp>.json) with a verdict per kernel:
  1. the sm100 test tier (`pytest -m sm100`: every manifest test case of gemm, dual_gemm and group_gemm,
     leaderboard and stress generators, output poisoned with NaN) and the CPU readiness checks of the binaries;
  2. the evaluator in test mode with the stress data, then in leaderboard mode (rechecked timed runs),
     for gemv, gemm, dual_gemm, group_gemm, with the submission each problem ships;
  3. optionally (`-- --reference-kernels DIR`, DIR a gpu-mode/reference-kernels checkout) the
     leaderboard's own eval files from DIR/problems/nvidia/<problem>, copied as their task.yml lists them
     into a scratch directory (never into this repository) with our packaged submission, benchmark mode
     (`python -m scripts.official_eval`, their ref_kernel kept);
  4. each benchmark case's mean against the expected B200 time of `expected_us` (the model in the
     kernels' docstrings): verdict `ok` (<= 1.25x expected), `slow`, or `fail` (a test or check failed);
  5. the variants stage (`--variants run`, the default; `skip`, `only`): per problem, every registered sm100
     variant (config.py SM100_VARIANTS) forced through the gate (shared/sm100_gates.FORCE_ENV in the
     evaluator's environment) on the benchmark cases it applies to: the evaluator in test mode with the
     stress data, then in leaderboard mode (leaderboard data, poisoned outputs and guards, then the timed
     loop that rechecks every sample). Per case each variant's verdict, mean and kernel fingerprint, and the
     chosen one (correct and fastest), go into the gates table results/b200/gates.json (`write_gates`,
     which refuses anything but a compute capability 10.0 device), keyed by the CuTe DSL it ran under;
     `nox -s package` bakes that table into the bundles and refuses verdicts not about what it packages.
     The table is measured for a package target (`--dsl runner`, the default: the leaderboard's CuTe DSL
     4.3.5, which `nox -s b200` installs from locks/b200.txt; `--dsl dev`: the development DSL of
     locks/gpu.txt, for packages made with `nox -s package -- --dsl dev`); the installed DSL must be the
     target's, or the session says so and exits 2.
Where no B200 is present it says so, writes nothing and exits 0.

The expected times are a model, not a measurement (no B200 was available where they were written):
harness/b200/model.py (calibrated on the B200 figures a top entrant published, docs/b200-entries.yaml,
and on the launch floor of results/launch-floor/*.json where one is committed); `--model` prints it per
case, with the range the calibration's spread gives, for the conservative kernel and every variant.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

from harness.b200 import PROBLEMS
from harness.b200 import model as M
from harness.b200.gates_table import GATES_PATH, device_record, write_gates
from harness.b200.model_table import expected_us, model_table
from harness.b200.steps import evaluator, reference_eval, run
from harness.b200.variants import variant_runs
from harness.locks import DSL_LOCKS, dsl_version
from shared.sm100_gates import installed_dsl

ROOT = Path(__file__).resolve().parents[2]
SLOW_FACTOR = 1.25
DSL_TARGETS = tuple(DSL_LOCKS)


def b200_present() -> tuple[bool, str]:
    try:
        import torch
    except ImportError:
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA device"
    cap = torch.cuda.get_device_capability(0)
    name = torch.cuda.get_device_name(0)
    if cap != (10, 0):
        return False, f"the GPU is {name} (sm_{cap[0]}{cap[1]}), not a B200 (sm_100)"
    return True, name


def device_sm_count() -> int:
    import torch

    return torch.cuda.get_device_properties(0).multi_processor_count


def dsl_mismatch(target: str) -> str | None:
    """Why the installed CuTe DSL cannot measure the gates table of a package target, or None. A verdict is
    about the compiler it was measured under, and the gate refuses it under any other."""
    want, have = dsl_version(target), installed_dsl()
    if have == want:
        return None
    return (f"the gates table for --dsl {target} is measured under CuTe DSL {want}, but {have or 'none'} is "
            f"installed: `nox -s b200 -- --dsl {target}` installs it (locks/{'b200' if target == 'runner' else 'gpu'}"
            ".txt)")


def verdicts(report: dict) -> dict:
    out = {}
    for problem in report["steps"]:
        steps = report["steps"][problem]
        failed = [name for name, s in steps.items() if s.get("rc")]
        cases = []
        lb = (steps.get("leaderboard") or {}).get("json") or {}
        impl = next(iter(lb.get("impls", {}).values()), {})
        for case, c in zip(M.benchmark_cases(problem), impl.get("cases", [])):
            mean = c.get("stats", {}).get("mean")
            exp = expected_us(problem, case)["expected_us"]
            cases.append({"case": case, "mean_us": mean / 1e3 if mean else None, "expected_us": round(exp, 3),
                          "ratio": round(mean / 1e3 / exp, 3) if mean else None})
        if failed or impl.get("check") != "pass":
            verdict = "fail"
        elif all(c["ratio"] is not None and c["ratio"] <= SLOW_FACTOR for c in cases):
            verdict = "ok"
        else:
            verdict = "slow"
        out[problem] = {"verdict": verdict, "failed_steps": failed, "cases": cases}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference-kernels", type=Path, help="a gpu-mode/reference-kernels checkout")
    ap.add_argument("--model", action="store_true", help="print the expected-time model per case and exit")
    ap.add_argument("--out", type=Path, help="results JSON (default results/local/b200-<stamp>.json)")
    # How `--runner modal` splits the command over containers (harness/runner/plan.py): one job runs the
    # test tier only, one job per problem the evaluator steps only; the local side merges the JSONs.
    ap.add_argument("--problem", action="append", choices=PROBLEMS, help="only this problem (repeatable)")
    ap.add_argument("--tier", choices=("run", "skip", "only"), default="run",
                    help="the sm100 test tier: run it (default), skip it, or run only it (no evaluator steps)")
    ap.add_argument("--variants", choices=("run", "skip", "only"), default="run",
                    help="the variants stage and the gates table: run it (default), skip it, or run only it")
    ap.add_argument("--gates", type=Path, default=None, help="the gates table to write (results/b200/gates.json)")
    ap.add_argument("--dsl", choices=DSL_TARGETS, default="runner",
                    help="the package target the gates table is measured for: runner (the leaderboard's CuTe DSL, "
                         "the default) or dev; the installed CuTe DSL must be that target's")
    args = ap.parse_args(argv)
    if args.model:
        print(model_table())
        return 0
    ok, what = b200_present()
    if not ok:
        print(f"b200: {what}; nothing to run here (the CPU tier is `nox -s test`). Exit 0.")
        return 0
    wrong_dsl = args.variants != "skip" and dsl_mismatch(args.dsl)
    if wrong_dsl:
        print(f"b200: {wrong_dsl}", file=sys.stderr)
        return 2
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or ROOT / "results" / "local" / f"b200-{stamp}.json"
    problems = args.problem or list(PROBLEMS)
    report = {"device": what, "date": stamp, "steps": {p: {} for p in problems}}
    skipped = {"rc": 0, "skipped": "--tier skip"}
    tier = skipped if args.tier == "skip" else run(
        [sys.executable, "-m", "pytest", "-q", "-ra", "-m", "sm100", "tests/test_sm100_kernels.py",
         "tests/test_group_gemm_sm100.py"])
    ready = skipped if args.tier == "skip" else run(
        [sys.executable, "-m", "pytest", "-q", "tests/test_sm100_ptx_structure.py", "tests/test_sm100_layouts.py",
         "tests/test_sm100_data_movement.py", "tests/test_sm100_cta2.py", "tests/test_gemv_kernels.py"])
    if args.tier == "only":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"device": what, "date": stamp, "tier": tier, "readiness": ready}, indent=1) + "\n")
        print(f"sm100 tier exit {tier['rc']}, readiness exit {ready['rc']}\nresults: {out}")
        return 1 if tier["rc"] or ready["rc"] else 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for problem in problems:
            steps = report["steps"][problem]
            if args.variants != "skip":
                report.setdefault("variants", {})[problem] = variant_runs(problem, work, device_sm_count())
            if args.variants == "only":
                continue
            if args.tier != "skip":
                steps["sm100_tier"] = tier if problem != "gemv" else ready
                steps["readiness"] = ready
            steps["stress"] = evaluator(problem, "test", "stress", work / f"{problem}-stress.json")
            steps["leaderboard"] = evaluator(problem, "leaderboard", "leaderboard", work / f"{problem}-lb.json")
            if args.reference_kernels:
                steps["reference_eval"] = reference_eval(problem, args.reference_kernels.resolve(), work / "ref")
    if args.variants != "skip":
        report["gpu"] = device_record()
        write_gates(report["variants"], report["gpu"], args.gates)
        for problem, v in report["variants"].items():
            for c in v["cases"]:
                print(f"{problem:9} {c['key']:40} gate: {c['chosen']}")
        print(f"gates table: {args.gates or GATES_PATH}")
    if args.variants == "only":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1, default=str) + "\n")
        return 0
    report["verdicts"] = verdicts(report)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    for problem, v in report["verdicts"].items():
        ratios = ", ".join(f"{c['mean_us']:.2f}/{c['expected_us']:.2f} us" if c["mean_us"] else "-" for c in v["cases"])
        failed = f"  failed: {v['failed_steps']}" if v["failed_steps"] else ""
        print(f"{problem:9} {v['verdict']:5} {ratios}{failed}")
    print(f"results: {out}")
    return 0 if all(v["verdict"] != "fail" for v in report["verdicts"].values()) else 1

