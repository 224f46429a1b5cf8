"""One command for a B200 owner: `nox -s b200` (or `python -m scripts.b200`).

On a machine with a B200 (compute capability 10.0) it runs, in order, and writes ONE results JSON
(results/b200-<utc stamp>.json) with a verdict per kernel:
  1. the sm100 test tier (`pytest -m sm100`: every manifest test case of gemm, dual_gemm and group_gemm,
     leaderboard and stress generators, output poisoned with NaN) and the CPU readiness checks of the binaries;
  2. the evaluator in test mode with the stress data, then in leaderboard mode (rechecked timed runs),
     for gemv, gemm, dual_gemm, group_gemm, with the submission each problem ships;
  3. optionally (`-- --reference-kernels DIR`, DIR a gpu-mode/reference-kernels checkout) the
     leaderboard's own eval files from DIR/problems/nvidia/<problem>, copied as their task.yml lists them
     into a scratch directory (never into this repository) with our packaged submission, benchmark mode
     (scripts/official_eval.py's setup, their ref_kernel kept);
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
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python scripts/b200.py` as well as `python -m scripts.b200`
    sys.path.insert(0, str(ROOT))
from shared.devices import B200_SM_COUNT  # noqa: E402

PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
HBM_BYTES_PER_S = 8.0e12
FP4_FLOPS = 9.0e15
SMS = B200_SM_COUNT
SM_FLOPS = FP4_FLOPS / SMS
NARROW_EFFICIENCY = 2 / 3  # 128 x 64 MMAs: A (4 KB per 64 K) re-read for half the N of a 128-wide tile
FIXED_US = 1.0
SLOW_FACTOR = 1.25


def operand_bytes(m: int, n: int, k: int, num_b: int = 1) -> dict:
    """Bytes of one (batch of a) problem by operand: packed FP4 A and B, their E4M3 scales, fp16 C."""
    return {"A": m * k // 2, "SFA": m * k // 16, "B": num_b * n * k // 2, "SFB": num_b * n * k // 16, "C": 2 * m * n}


def gemm_like_estimate(m: int, n: int, k: int, l: int, num_b: int, tile_n: int) -> dict:
    """The model for the sm100 GEMM (num_b = 1) and dual GEMM (num_b = 2) kernels."""
    parts = {name: b * l for name, b in operand_bytes(m, n, k, num_b).items()}
    bytes_ = sum(parts.values())
    tiles = (m // 128) * (n // tile_n) * l
    waves = math.ceil(tiles / SMS)
    k_steps = k // 256
    step_flops = 2 * 128 * tile_n * 256 * num_b
    step_us = step_flops / (SM_FLOPS * (NARROW_EFFICIENCY if tile_n < 128 else 1.0)) * 1e6
    dram_us = bytes_ / HBM_BYTES_PER_S * 1e6
    mma_us = waves * k_steps * step_us
    return {"bytes": bytes_, "parts": parts, "flops": 2 * m * n * k * l * num_b, "tile_n": tile_n, "tiles": tiles,
            "waves": waves, "k_steps": k_steps, "step_us": step_us, "dram_us": dram_us, "mma_us": mma_us,
            "expected_us": max(dram_us, mma_us) + FIXED_US}


def gemv_estimate(m: int, k: int, l: int) -> dict:
    """The sm100 GEMV streams A and SFA once (CUDA cores, hardware E2M1 conversion): DRAM-bound."""
    bytes_ = (m * k // 2 + m * k // 16 + k // 2 + k // 16 + 2 * m) * l
    dram_us = bytes_ / HBM_BYTES_PER_S * 1e6
    return {"bytes": bytes_, "flops": 2 * m * k * l, "dram_us": dram_us, "expected_us": dram_us + FIXED_US / 2}


def group_estimate(ms, ns, ks) -> dict:
    """The sm100 grouped kernel (one persistent launch over every group's 128 x tile_n tiles): the bytes
    of all groups against the busiest CTA's K steps (problems/group_gemm/schedule_sm100.py)."""
    from problems.group_gemm.config import choose_sm100
    from problems.group_gemm.schedule_sm100 import schedule

    sizes = [(m, n, k, 1) for m, n, k in zip(ms, ns, ks)]
    tile_n = choose_sm100(sizes, SMS).tile_n
    parts = {name: sum(operand_bytes(m, n, k)[name] for m, n, k, _ in sizes) for name in ("A", "SFA", "B", "SFB", "C")}
    bytes_ = sum(parts.values())
    work = schedule(sizes, tile_n, SMS)
    busiest = max((sum(sizes[g][2] // 256 for g, _, _ in tiles) for tiles in work), default=0)
    step_us = 2 * 128 * tile_n * 256 / (SM_FLOPS * (NARROW_EFFICIENCY if tile_n < 128 else 1.0)) * 1e6
    dram_us = bytes_ / HBM_BYTES_PER_S * 1e6
    mma_us = busiest * step_us
    tiles = sum(map(len, work))
    return {"bytes": bytes_, "parts": parts, "flops": sum(2 * m * n * k for m, n, k, _ in sizes), "tile_n": tile_n,
            "tiles": tiles, "waves": math.ceil(tiles / SMS), "k_steps": busiest, "step_us": step_us,
            "dram_us": dram_us, "mma_us": mma_us, "expected_us": max(dram_us, mma_us) + FIXED_US}


def smem_efficiency(tile_n: int, cta_group: int = 1) -> float:
    """The MMA rate a tile reaches against the shared-memory reads its instructions make, per SM and K
    block: A's 128 rows plus the B rows this SM holds (tile_n, or tile_n / 2 with a CTA pair), per output
    element of the SM's 128 x tile_n. 128 x 128 on one CTA (2 bytes per element per 128 K) is taken as
    the balance point; the same assumption gives NARROW_EFFICIENCY = 2/3 for 128 x 64."""
    per_element = (128 + tile_n / cta_group) / (128 * tile_n)
    balance = (128 + 128) / (128 * 128)
    return min(1.0, balance / per_element)


def pair_estimate(m: int, n: int, k: int, l: int, num_b: int, tile_n: int) -> dict:
    """The model for a 2-CTA (cta_group::2) config: 256 x tile_n tiles over CTA pairs, each SM computing
    its 128 rows x tile_n at smem_efficiency(tile_n, 2); DRAM bytes as the one-CTA kernel's (every
    operand read once)."""
    e = gemm_like_estimate(m, n, k, l, num_b, tile_n)
    tiles = (m // 256) * (n // tile_n) * l
    waves = math.ceil(2 * tiles / SMS)
    step_us = 2 * 128 * tile_n * 256 * num_b / (SM_FLOPS * smem_efficiency(tile_n, 2)) * 1e6
    mma_us = waves * e["k_steps"] * step_us
    return {**e, "tiles": tiles, "ctas": 2 * tiles, "waves": waves, "step_us": step_us, "mma_us": mma_us,
            "expected_us": max(e["dram_us"], mma_us) + FIXED_US}


def group_pair_estimate(ms, ns, ks) -> dict:
    """The model for the grouped "cta2" variant (A and B swapped, 2-CTA MMAs): the bytes of all groups
    against the busiest pair's K steps (schedule_sm100.pair_schedule), each SM computing 128 rows of N x
    tile_n rows of M (padded past M) at smem_efficiency(tile_n, 2)."""
    from problems.group_gemm.config import choose_sm100_cta2
    from problems.group_gemm.schedule_sm100 import pair_schedule

    sizes = [(m, n, k, 1) for m, n, k in zip(ms, ns, ks)]
    e = group_estimate(ms, ns, ks)
    tile_n = choose_sm100_cta2(sizes, SMS).tile_n
    work = pair_schedule(sizes, tile_n, SMS)
    busiest = max((sum(sizes[g][2] // 256 for g, _, _ in tiles) for tiles in work), default=0)
    step_us = 2 * 128 * tile_n * 256 / (SM_FLOPS * smem_efficiency(tile_n, 2)) * 1e6
    mma_us = busiest * step_us
    return {**e, "tile_n": tile_n, "ctas": 2 * len(work), "k_steps": busiest, "step_us": step_us, "mma_us": mma_us,
            "expected_us": max(e["dram_us"], mma_us) + FIXED_US}


# The best published B200 time per group_gemm benchmark case (us; issue 25's table of the top entries).
GROUP_BEST_ENTRY_US = (27.9, 19.4, 8.48, 6.43)

# The best published B200 time per dual_gemm benchmark case (us; gau-nernst's gpu-mode-kernels write-up,
# issue 25), for the variant table.
DUAL_BEST_ENTRY_US = (12.4, 16.4, 9.43, 16.3)


def variant_table() -> str:
    """The "cta2" variants of the dual GEMM and the grouped GEMM next to the conservative kernels, per
    benchmark case (a model)."""
    from problems.dual_gemm.config import choose_sm100_cta2

    lines = ["dual_gemm variants (MODEL, not measured): conservative | cta2 | best entry"]
    for case, best in zip(benchmark_cases("dual_gemm"), DUAL_BEST_ENTRY_US):
        m, n, k, l = (case[x] for x in ("m", "n", "k", "l"))
        cons = expected_us("dual_gemm", case)
        cfg = choose_sm100_cta2(m, n, k, l, SMS)
        pair = pair_estimate(m, n, k, l, 2, cfg.tile_n)
        lines.append(f"  m={m} n={n} k={k} l={l}: {cons['expected_us']:5.2f} us (128 x {cons['tile_n']}) | "
                     f"{pair['expected_us']:5.2f} us (256 x {cfg.tile_n}, {pair['ctas']} CTAs) | {best} us")
    lines.append("group_gemm variants (MODEL, not measured): conservative | cta2 | best entry")
    for case, best in zip(benchmark_cases("group_gemm"), GROUP_BEST_ENTRY_US):
        cons = expected_us("group_gemm", case)
        pair = group_pair_estimate(case["m"], case["n"], case["k"])
        lines.append(f"  g={case['g']} m={case['m']}: {cons['expected_us']:5.2f} us (128 x {cons['tile_n']}) | "
                     f"{pair['expected_us']:5.2f} us (N 256 x M {pair['tile_n']}, {pair['ctas']} CTAs) | {best} us")
    return "\n".join(lines)


def expected_us(problem: str, case: dict) -> dict:
    if problem == "gemv":
        return gemv_estimate(case["m"], case["k"], case["l"])
    if problem == "group_gemm":
        return group_estimate(case["m"], case["n"], case["k"])
    m, n, k, l = (case[x] for x in ("m", "n", "k", "l"))
    if problem == "gemm":
        from problems.gemm.config import choose_sm100
    else:
        from problems.dual_gemm.config import choose_sm100
    return gemm_like_estimate(m, n, k, l, 1 if problem == "gemm" else 2, choose_sm100(m, n, k, l, SMS).tile_n)


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
    """One line per benchmark case (bytes, DRAM and MMA time, expected time, SOL), the GEMM family's
    tiling under it, and per problem the geomean of the expected times against the SOL's."""
    lines = []
    for problem in PROBLEMS:
        sol = yaml_of(problem)["speed_of_light_b200_us"]
        expected = []
        for case, s in zip(benchmark_cases(problem), sol):
            e = expected_us(problem, case)
            expected.append(e["expected_us"])
            shape = " ".join(f"{k}={v}" for k, v in case.items() if k != "seed")
            lines.append(f"{problem:9} {shape:28} {e['bytes'] / 1e6:7.1f} MB  dram {e['dram_us']:6.2f} us  "
                         f"mma {e.get('mma_us', 0):6.2f} us  expected {e['expected_us']:6.2f} us  SOL {s:6.3f} us")
            if "tiles" in e:
                lines.append(tiling_line(e))
        mean, mean_sol = geomean(expected), geomean(sol[: len(expected)])
        lines.append(f"{problem:9} geomean: expected {mean:.2f} us, SOL {mean_sol:.3f} us ({mean / mean_sol:.2f}x)")
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
    step = run([sys.executable, "-m", "harness.eval", problem, "--mode", mode, "--data", data, "--json", str(out)])
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
        print(variant_table())
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
