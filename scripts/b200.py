"""One command for a B200 owner: `nox -s b200` (or `python -m scripts.b200`).

On a machine with a B200 (compute capability 10.0) it runs, in order, and writes ONE results JSON
(results/local/b200-<utc stamp>.json) with a verdict per kernel:
  1. the sm100 test tier (`pytest -m sm100`: every manifest test case of gemm, dual_gemm and group_gemm,
     leaderboard and stress generators, output poisoned with NaN) and the CPU readiness checks of the binaries;
  2. the evaluator in test mode with the stress data, then in leaderboard mode (rechecked timed runs),
     for gemv, gemm, dual_gemm, group_gemm, with the submission each problem ships;
  3. optionally (`-- --reference-kernels DIR`, DIR a gpu-mode/reference-kernels checkout) the
     leaderboard's own eval files from DIR/problems/nvidia/<problem>, copied as their task.yml lists them
     into a scratch directory (never into this repository) with our packaged submission, benchmark mode
     (scripts/official_eval.py's setup, their ref_kernel kept);
  4. each benchmark case's mean against the expected B200 time of `expected_us` (the model in the
     kernels' docstrings): verdict `ok` (<= 1.25x expected), `slow`, or `fail` (a test or check failed);
  5. the variants stage (`--variants run`, the default; `skip`, `only`): per problem, every registered sm100
     variant (config.py SM100_VARIANTS) forced through the gate (shared/sm100_gates.FORCE_ENV in the
     evaluator's environment) on the benchmark cases it applies to: the evaluator in test mode with the
     stress data, then in leaderboard mode (leaderboard data, poisoned outputs and guards, then the timed
     loop that rechecks every sample). Per case each variant's verdict and mean, and the chosen one (correct
     and fastest), go into the gates table results/b200/gates.json (`write_gates`, which refuses anything
     but a compute capability 10.0 device); `nox -s package` bakes that table into the bundles.
Where no B200 is present it says so, writes nothing and exits 0.

The expected times are a model, not a measurement (no B200 was available where they were written):
scripts/b200_model.py (calibrated on the B200 figures a top entrant published, docs/b200-entries.yaml,
and on the launch floor of results/launch-floor/*.json where one is committed); `--model` prints it per
case, with the range the calibration's spread gives, for the conservative kernel and every variant.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python scripts/b200.py` as well as `python -m scripts.b200`
    sys.path.insert(0, str(ROOT))
from scripts import b200_model as M  # noqa: E402
from shared.devices import B200_SM_COUNT  # noqa: E402

PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
SMS = B200_SM_COUNT
SLOW_FACTOR = 1.25


def expected_us(problem: str, case: dict) -> dict:
    """The model's estimate of the conservative kernel on one benchmark case (scripts/b200_model.py)."""
    return M.expected(problem, case, M.CONSERVATIVE)


def yaml_of(problem: str) -> dict:
    import yaml

    return yaml.safe_load((ROOT / "problems" / problem / "manifest.yaml").read_text())


def benchmark_cases(problem: str) -> list[dict]:
    return yaml_of(problem)["benchmarks"]


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values))


def tiling_line(e: dict) -> str:
    """How a GEMM-family estimate comes about: tiles, waves, the K steps of the busiest CTA and what
    one step costs, the bytes by operand, the FLOPs."""
    parts = " + ".join(f"{name} {b / 1e6:.1f}" for name, b in e["parts"].items())
    waves = f"{e['waves']} wave" + ("s" if e["waves"] > 1 else "")
    return (f"    128 x {e['tile_n']} tiles: {e['tiles']} ({waves}), busiest CTA {e['k_steps']} K steps x "
            f"{e['step_us']:.3f} us; bytes {parts} MB; {e['flops'] / 1e9:.1f} GFLOP")


def model_table() -> str:
    """The calibration; one line per benchmark case (bytes, DRAM and MMA time, expected time and range,
    SOL), the GEMM family's tiling under it, per problem the geomean against the SOL's; then per problem
    the conservative kernel and each variant next to the entries (`variant_tables`)."""
    lines = [*M.calibration_lines(), ""]
    for problem in PROBLEMS:
        sol = yaml_of(problem)["speed_of_light_b200_us"]
        expected = []
        for case, s in zip(benchmark_cases(problem), sol):
            e = expected_us(problem, case)
            expected.append(e["expected_us"])
            shape = " ".join(f"{k}={v}" for k, v in case.items() if k != "seed")
            lo, hi = e["range_us"]
            lines.append(f"{problem:9} {shape:28} {e['bytes'] / 1e6:7.1f} MB  dram {e['dram_us']:6.2f} us  "
                         f"mma {e.get('mma_us', 0):6.2f} us  expected {e['expected_us']:6.2f} us "
                         f"[{lo:.1f}, {hi:.1f}]  SOL {s:6.3f} us")
            if "tiles" in e:
                lines.append(tiling_line(e))
        mean, mean_sol = geomean(expected), geomean(sol[: len(expected)])
        lines.append(f"{problem:9} geomean: expected {mean:.2f} us, SOL {mean_sol:.3f} us ({mean / mean_sol:.2f}x)")
    lines += ["", *variant_tables()]
    return "\n".join(lines)


def registered(problem: str) -> dict:
    try:
        return variant_registry(problem)
    except (ImportError, AttributeError):
        return {}


def variant_tables() -> list[str]:
    """Per problem: each case's modelled time of the conservative kernel and of every variant (registered
    in config.py SM100_VARIANTS or modelled from its technique), next to the entry with the same technique
    and the write-up's fastest; then every case where the model is faster than the same-technique entry,
    with the reason. Every time of ours is labelled "model"."""
    from shared.sm100_variants import case_shape, chooser_args

    lines, faster = [], []
    for problem in PROBLEMS:
        reg = registered(problem)
        names = list(dict.fromkeys([*reg, *M.MODELLED[problem]]))
        best, same = M.best_entries(problem)
        lines.append(f"{problem}: model us per case [range]; entries measured on a B200 by their author")
        header = ["case"] + [f"{n} (model)" + ("" if n in reg else " [not registered]") for n in names]
        header += [f"{e['name']} (entry, = {v})" for v, e in same.items()]
        if best is not None:
            header.append(f"{best['name']} (best entry)")
        lines.append(" | ".join(header))
        for i, case in enumerate(benchmark_cases(problem)):
            shape = case_shape(problem, case)
            row = [f"{i}"]
            for name in names:
                variant = reg.get(name)
                if variant is not None and variant.choose(*chooser_args(problem, shape, SMS)) is None:
                    row.append("n/a (does not apply)")
                    continue
                e = M.expected(problem, case, name)
                if e is None:
                    row.append("no estimate")
                    continue
                lo, hi = e["range_us"]
                row.append(f"{e['expected_us']:.2f} [{lo:.1f}, {hi:.1f}] {e['bound']}")
                if name in same:
                    why = M.faster_than_entry(problem, name, i, e, same[name])
                    if why:
                        faster.append(why)
            row += [f"{e['us'][i]}" for e in same.values()]
            if best is not None:
                row.append(f"{best['us'][i]}")
            lines.append(" | ".join(row))
        lines.append("")
    lines.append("model faster than the entry with the same technique:" + ("" if faster else " none"))
    lines += [f"  {w}" for w in faster]
    return lines


# ------------------------------------------------------------------------------------ running
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


def run(cmd: list[str], cwd: Path = ROOT, env: dict | None = None, timeout: int = 1800) -> dict:
    print("+", " ".join(cmd), f"(in {cwd})" if cwd != ROOT else "", flush=True)
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = 124, f"timeout after {timeout} s\n{e.stdout or ''}"
    print(out[-3000:], flush=True)
    return {"cmd": cmd, "rc": rc, "tail": out[-6000:]}


def evaluator(problem: str, mode: str, data: str, out: Path, extra: list[str] = (), env: dict | None = None) -> dict:
    """One evaluator run (`extra`: more arguments, e.g. --case lines) and the results JSON it wrote."""
    step = run([sys.executable, "-m", "harness.eval", problem, "--mode", mode, "--data", data, "--json", str(out),
                *extra], env=env)
    step["json"] = json.loads(out.read_text()) if out.exists() else None
    return step


def reference_eval(problem: str, refdir: Path, work: Path) -> dict:
    """The leaderboard's eval file on our packaged submission, benchmark mode, with THEIR reference (a B200
    runs their torch._scaled_mm): the scratch dir and the run are scripts/official_eval.py's."""
    from scripts import official_eval

    try:
        scratch = official_eval.prepare_scratch(problem, refdir, work, exact_reference=False)
    except Exception as e:  # noqa: BLE001 - a missing file or a refused package is this step's failure
        return {"rc": 2, "tail": f"{type(e).__name__}: {e}"}
    result = official_eval.run_eval(scratch, "benchmark", timeout=1800)
    return {"rc": result["rc"] or int(not result["passed"]), "tail": result["tail"], "popcorn": result["popcorn"]}


def verdicts(report: dict) -> dict:
    out = {}
    for problem in report["steps"]:
        steps = report["steps"][problem]
        failed = [name for name, s in steps.items() if s.get("rc")]
        cases = []
        lb = (steps.get("leaderboard") or {}).get("json") or {}
        impl = next(iter(lb.get("impls", {}).values()), {})
        for case, c in zip(benchmark_cases(problem), impl.get("cases", [])):
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


# ------------------------------------------------------------------------------------ variants and gates
GATES_PATH = ROOT / "results" / "b200" / "gates.json"


def variant_registry(problem: str) -> dict:
    import importlib

    return importlib.import_module(f"problems.{problem}.config").SM100_VARIANTS


def case_line(case: dict) -> str:
    from harness.problem import describe_case

    return describe_case(case)


def applicable(problem: str, variant, case: dict, sm_count: int = SMS) -> bool:
    from shared.sm100_variants import CONSERVATIVE, case_shape, chooser_args

    if variant.name == CONSERVATIVE:
        return True
    return variant.choose(*chooser_args(problem, case_shape(problem, case), sm_count)) is not None


def variant_runs(problem: str, work: Path, sm_count: int) -> dict:
    """Every registered variant forced through the gate on the benchmark cases it applies to: stress data
    (test mode), then leaderboard mode. Returns {"cases": [...], "steps": {variant: {...}}} in the gates
    table's per-case form (`verdicts_of`)."""
    import os

    from shared.sm100_gates import FORCE_ENV

    cases = benchmark_cases(problem)
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
    return {"cases": verdicts_of(problem, cases, steps), "steps": steps}


def _case_results(step: dict | None) -> dict:
    """({case line: evaluator case result}, the impl's error) of one evaluator step."""
    doc = (step or {}).get("json") or {}
    impl = next(iter((doc.get("impls") or {}).values()), {})
    return {case_line(c["case"]): c for c in impl.get("cases", []) if c.get("case")}, impl.get("error")


def verdicts_of(problem: str, cases: list[dict], steps: dict) -> list[dict]:
    """Per benchmark case: each variant's verdict (correct, or the failure) and mean us, and the chosen one:
    the fastest correct variant, conservative on ties and where none is correct."""
    from shared.sm100_variants import CONSERVATIVE, case_key, case_shape

    out = []
    for case in cases:
        line = case_line(case)
        variants = {}
        for name, step in steps.items():
            if line not in step.get("applies", []):
                variants[name] = {"correct": None, "failure": "not applicable to this shape", "mean_us": None}
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
                              "mean_us": round(mean / 1e3, 4) if failure is None and mean else None}
        correct = [(v["mean_us"], name != CONSERVATIVE, name) for name, v in variants.items() if v["correct"]]
        chosen = min(correct)[2] if correct else CONSERVATIVE
        out.append({"key": case_key(case_shape(problem, case)), "case": case, "chosen": chosen,
                    "variants": variants})
    return out


def device_record() -> dict:
    """The device and versions a table is measured with (harness.eval's environment record)."""
    import torch

    from harness.eval import environment

    env = environment("cuda")
    cap = list(torch.cuda.get_device_capability(0))
    return {"device": env.get("device"), "capability": cap,
            "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
            "versions": {k: env.get(k) for k in ("python", "torch", "nvidia-cutlass-dsl", "cuda")},
            "commit": env.get("commit"), "dirty": env.get("dirty")}


class NotB200(Exception):
    """A gates table may only come from a B200 (compute capability 10.0)."""


def write_gates(problems: dict, record: dict, path: Path | None = None, date: str | None = None) -> dict:
    """Write (or update, problem by problem) the gates table. `problems`: {problem: {"cases": [...]}} from
    variant_runs; `record`: device_record() of the device that ran them. Refuses any device but a B200."""
    from shared.sm100_variants import SCHEMA

    if list(record.get("capability") or []) != [10, 0]:
        raise NotB200(f"the gates table is written only from a B200 (compute capability 10.0); this run's device "
                      f"is {record.get('device')!r} with capability {record.get('capability')!r}")
    path = path or GATES_PATH
    date = date or dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    old = json.loads(path.read_text()) if path.is_file() else {}
    if old.get("sm_count") not in (None, record["sm_count"]) or old.get("schema") not in (None, SCHEMA):
        old = {}  # another device or schema: its cases are not comparable with these
    table = {"schema": SCHEMA, **{k: record.get(k) for k in ("device", "capability", "sm_count", "versions",
                                                              "commit", "dirty")}, "date": date,
             "problems": dict(old.get("problems") or {})}
    for problem, part in problems.items():
        table["problems"][problem] = {"commit": record.get("commit"), "date": date, "cases": part["cases"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table, indent=1, sort_keys=True, default=str) + "\n")
    return table


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
    args = ap.parse_args(argv)
    if args.model:
        print(model_table())
        return 0
    ok, what = b200_present()
    if not ok:
        print(f"b200: {what}; nothing to run here (the CPU tier is `nox -s test`). Exit 0.")
        return 0
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
        write_gates({p: {"cases": v["cases"]} for p, v in report["variants"].items()}, report["gpu"], args.gates)
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


if __name__ == "__main__":
    sys.exit(main())
