"""One command for a B200 owner: `nox -s b200` (or `python -m scripts.b200`).

On a machine with a B200 (compute capability 10.0) it runs, in order, and writes ONE results JSON
(results/b200-<utc stamp>.json) with a verdict per kernel:
  1. the sm100 test tier (`pytest -m sm100`: every manifest test case of gemm, dual_gemm and group_gemm,
     leaderboard and stress generators, output poisoned with NaN) and the CPU readiness checks of the binaries;
  2. the evaluator in test mode with the stress data, then in leaderboard mode (rechecked timed runs),
     for gemv, gemm, dual_gemm, group_gemm, with the submission each problem ships;
  3. optionally (`-- --reference-kernels DIR`, DIR a gpu-mode/reference-kernels checkout) the
     leaderboard's own eval files from DIR/problems/nvidia/<problem>, run in a scratch directory that
     links to them (nothing is copied into this repository) with our packaged submission, benchmark mode;
  4. each benchmark case's mean against the expected B200 time of `expected_us` (the model in the
     kernels' docstrings): verdict `ok` (<= 1.25x expected), `slow`, or `fail` (a test or check failed).
Where no B200 is present it says so, writes nothing and exits 0.

The expected times are an estimate, not a measurement (no B200 was available where they were written):
    t = max(bytes / HBM, waves * k_steps * step) + FIXED
with HBM = 8 TB/s, a dense block-scaled FP4 rate of 9 PFLOP/s over 148 SMs (60.8 TFLOP/s per SM), a
128 x 64 MMA tile at 2/3 of it (A is re-read from shared memory for every 64-wide N), and FIXED = 1 us
of launch, pipeline fill (the first stage's DRAM latency) and the last tile's epilogue.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python scripts/b200.py` as well as `python -m scripts.b200`
    sys.path.insert(0, str(ROOT))
PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
HBM_BYTES_PER_S = 8.0e12
FP4_FLOPS = 9.0e15
SMS = 148
SM_FLOPS = FP4_FLOPS / SMS
NARROW_EFFICIENCY = 2 / 3  # 128 x 64 MMAs: A (4 KB per 64 K) re-read for half the N of a 128-wide tile
FIXED_US = 1.0
SLOW_FACTOR = 1.25


def gemm_like_estimate(m: int, n: int, k: int, l: int, num_b: int, tile_n: int) -> dict:
    """The model for the sm100 GEMM (num_b = 1) and dual GEMM (num_b = 2) kernels."""
    read = m * k // 2 + m * k // 16 + num_b * (n * k // 2 + n * k // 16)
    written = 2 * m * n
    bytes_ = (read + written) * l
    tiles = (m // 128) * (n // tile_n) * l
    waves = math.ceil(tiles / SMS)
    k_steps = k // 256
    step_flops = 2 * 128 * tile_n * 256 * num_b
    step_us = step_flops / (SM_FLOPS * (NARROW_EFFICIENCY if tile_n < 128 else 1.0)) * 1e6
    dram_us = bytes_ / HBM_BYTES_PER_S * 1e6
    mma_us = waves * k_steps * step_us
    return {"bytes": bytes_, "flops": 2 * m * n * k * l * num_b, "tiles": tiles, "waves": waves, "k_steps": k_steps,
            "step_us": step_us, "dram_us": dram_us, "mma_us": mma_us,
            "expected_us": max(dram_us, mma_us) + FIXED_US}


def gemv_estimate(m: int, k: int, l: int) -> dict:
    """The sm100 GEMV streams A and SFA once (CUDA cores, hardware E2M1 conversion): DRAM-bound."""
    bytes_ = (m * k // 2 + m * k // 16 + k // 2 + k // 16 + 2 * m) * l
    dram_us = bytes_ / HBM_BYTES_PER_S * 1e6
    return {"bytes": bytes_, "flops": 2 * m * k * l, "dram_us": dram_us, "expected_us": dram_us + FIXED_US / 2}


def group_estimate(ms, ns, ks) -> dict:
    """The sm100 grouped kernel (one persistent launch over every group's 128 x tile_n tiles): the bytes
    of all groups against the busiest CTA's K steps (problems/group_gemm/kernel_sm100.py, schedule)."""
    from problems.group_gemm import kernel_sm100 as G

    sizes = [(m, n, k, 1) for m, n, k in zip(ms, ns, ks)]
    tile_n = G.choose_config(sizes, SMS).tile_n
    bytes_ = sum(m * k // 2 + m * k // 16 + n * k // 2 + n * k // 16 + 2 * m * n for m, n, k, _ in sizes)
    work = G.schedule(sizes, tile_n, SMS)
    busiest = max((sum(sizes[g][2] // 256 for g, _, _ in tiles) for tiles in work), default=0)
    step_us = 2 * 128 * tile_n * 256 / (SM_FLOPS * (NARROW_EFFICIENCY if tile_n < 128 else 1.0)) * 1e6
    dram_us = bytes_ / HBM_BYTES_PER_S * 1e6
    mma_us = busiest * step_us
    return {"bytes": bytes_, "flops": sum(2 * m * n * k for m, n, k, _ in sizes), "tiles": sum(map(len, work)),
            "k_steps": busiest, "step_us": step_us, "dram_us": dram_us, "mma_us": mma_us,
            "expected_us": max(dram_us, mma_us) + FIXED_US}


def expected_us(problem: str, case: dict) -> dict:
    if problem == "gemv":
        return gemv_estimate(case["m"], case["k"], case["l"])
    if problem == "group_gemm":
        return group_estimate(case["m"], case["n"], case["k"])
    m, n, k, l = (case[x] for x in ("m", "n", "k", "l"))
    if problem == "gemm":
        from problems.gemm.kernel_sm100 import choose_config
    else:
        from problems.dual_gemm.kernel_sm100 import choose_config
    return gemm_like_estimate(m, n, k, l, 1 if problem == "gemm" else 2, choose_config(m, n, k, l, SMS).tile_n)


def yaml_of(problem: str) -> dict:
    import yaml

    return yaml.safe_load((ROOT / "problems" / problem / "manifest.yaml").read_text())


def benchmark_cases(problem: str) -> list[dict]:
    return yaml_of(problem)["benchmarks"]


def model_table() -> str:
    lines = []
    for problem in PROBLEMS:
        sol = yaml_of(problem)["speed_of_light_b200_us"]
        for case, s in zip(benchmark_cases(problem), sol):
            e = expected_us(problem, case)
            shape = " ".join(f"{k}={v}" for k, v in case.items() if k != "seed")
            lines.append(f"{problem:9} {shape:28} {e['bytes'] / 1e6:7.1f} MB  dram {e['dram_us']:6.2f} us  "
                         f"mma {e.get('mma_us', 0):6.2f} us  expected {e['expected_us']:6.2f} us  SOL {s:6.3f} us")
    return "\n".join(lines)


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


def run(cmd: list[str], cwd: Path = ROOT, env: dict | None = None, timeout: int = 1800) -> dict:
    print("+", " ".join(cmd), f"(in {cwd})" if cwd != ROOT else "", flush=True)
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = 124, f"timeout after {timeout} s\n{e.stdout or ''}"
    print(out[-3000:], flush=True)
    return {"cmd": cmd, "rc": rc, "tail": out[-6000:]}


def evaluator(problem: str, mode: str, data: str, out: Path) -> dict:
    step = run([sys.executable, "-m", "shared.eval", problem, "--mode", mode, "--data", data, "--json", str(out)])
    step["json"] = json.loads(out.read_text()) if out.exists() else None
    return step


def reference_eval(problem: str, refdir: Path, work: Path) -> dict:
    """The leaderboard's eval file on our packaged submission, in a scratch dir that links to DIR's files."""
    src = refdir / "problems" / "nvidia" / f"nvfp4_{problem}"
    if not src.is_dir():
        return {"rc": 2, "tail": f"{src} not found"}
    sub = work / problem
    sub.mkdir(parents=True)
    pkg = run([sys.executable, "-m", "shared.package", problem, "-o", str(sub / "submission.py")])
    if pkg["rc"]:
        return pkg
    for f in ["reference.py", "task.py", "utils.py", "task.yml"]:
        if (src / f).exists():
            (sub / f).symlink_to(src / f)
    evalfile = yaml_of(problem)["eval_variant"]  # the eval file the leaderboard runs for this problem
    (sub / "eval.py").symlink_to(src.parent / evalfile)
    if not (sub / "utils.py").exists() and (src.parent / "utils.py").exists():
        (sub / "utils.py").symlink_to(src.parent / "utils.py")
    cases = "\n".join("; ".join(f"{k}: {v}" for k, v in c.items()) for c in benchmark_cases(problem))
    (sub / "cases.txt").write_text(cases + "\n")
    r, w = os.pipe()
    env = dict(os.environ, POPCORN_FD=str(w))
    proc = subprocess.Popen([sys.executable, "eval.py", "benchmark", "cases.txt"], cwd=sub, env=env,
                            pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.close(w)
    with os.fdopen(r) as f:
        lines = f.read()
    out, _ = proc.communicate()
    result = dict(line.split(":", 1) for line in lines.splitlines() if ":" in line)
    return {"rc": proc.returncode, "tail": out[-4000:], "popcorn": {k.strip(): v.strip() for k, v in result.items()}}


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference-kernels", type=Path, help="a gpu-mode/reference-kernels checkout")
    ap.add_argument("--model", action="store_true", help="print the expected-time model per case and exit")
    ap.add_argument("--out", type=Path, help="results JSON (default results/b200-<stamp>.json)")
    # How `--runner modal` splits the command over containers (harness/runner/plan.py): one job runs the
    # test tier only, one job per problem the evaluator steps only; the local side merges the JSONs.
    ap.add_argument("--problem", action="append", choices=PROBLEMS, help="only this problem (repeatable)")
    ap.add_argument("--tier", choices=("run", "skip", "only"), default="run",
                    help="the sm100 test tier: run it (default), skip it, or run only it (no evaluator steps)")
    args = ap.parse_args(argv)
    if args.model:
        print(model_table())
        return 0
    ok, what = b200_present()
    if not ok:
        print(f"b200: {what}; nothing to run here (the CPU tier is `nox -s test`). Exit 0.")
        return 0
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or ROOT / "results" / f"b200-{stamp}.json"
    problems = args.problem or list(PROBLEMS)
    report = {"device": what, "date": stamp, "steps": {p: {} for p in problems}}
    skipped = {"rc": 0, "skipped": "--tier skip"}
    tier = skipped if args.tier == "skip" else run(
        [sys.executable, "-m", "pytest", "-q", "-ra", "-m", "sm100", "tests/test_sm100_kernels.py",
         "tests/test_group_gemm_sm100.py"])
    ready = skipped if args.tier == "skip" else run(
        [sys.executable, "-m", "pytest", "-q", "tests/test_sm100_readiness.py", "tests/test_gemv_kernels.py"])
    if args.tier == "only":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"device": what, "date": stamp, "tier": tier, "readiness": ready}, indent=1) + "\n")
        print(f"sm100 tier exit {tier['rc']}, readiness exit {ready['rc']}\nresults: {out}")
        return 1 if tier["rc"] or ready["rc"] else 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for problem in problems:
            steps = report["steps"][problem]
            if args.tier != "skip":
                steps["sm100_tier"] = tier if problem != "gemv" else ready
                steps["readiness"] = ready
            steps["stress"] = evaluator(problem, "test", "stress", work / f"{problem}-stress.json")
            steps["leaderboard"] = evaluator(problem, "leaderboard", "leaderboard", work / f"{problem}-lb.json")
            if args.reference_kernels:
                steps["reference_eval"] = reference_eval(problem, args.reference_kernels.resolve(), work / "ref")
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
