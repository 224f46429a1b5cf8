"""What bounds each shape: one Nsight Compute profile line per benchmark case, on a GPU with ncu.

    python scripts/profile_sm90.py PROBLEM [--case "m: 128; n: 7168; k: 2048; l: 1; seed: 1111" ...]
        [--impl submission cublas-predecoded ...] [--json OUT] [--ncu PATH] [--warmup N] [--timeout S]

Per case (default: the manifest's benchmarks) and impl (default: submission), one process under ncu: it
makes the leaderboard's input, calls the impl `--warmup` times (compile, first-call checks), then once
between cudaProfilerStart and cudaProfilerStop; ncu profiles only the kernels of that one call
(`--profile-from-start off`), with caches flushed before each kernel (`--cache-control all`, as the
leaderboard flushes L2) and the clocks left alone (`--clock-control none`, as the evaluator runs). Its
report is read back as CSV (`ncu --import R --csv --page raw --print-units base`).

A line per case and impl: time (us), SM busy %, tensor pipe %, DRAM throughput %, ALU and FMA pipe %,
and the decode share, each defined in scripts/ncu_metrics.py (which metric, why, and what the decode
share does and does not count). The metric names are checked against `ncu --query-metrics` first, and
the first candidate that this ncu offers is used; the JSON (--json: device, versions, commit, ncu's
version and options, the metric per role, per case every kernel's raw values) records which.

Each case costs a fresh process (torch import, the kernel's compile, ncu's replay passes): about 20-40 s.
Without a CUDA device or ncu it says so in one line and exits 2; a case that ncu could not profile is
reported in one line and the exit status is 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # `python scripts/profile_sm90.py` as well as `python -m scripts.profile_sm90`
    sys.path.insert(0, str(REPO))

from scripts import ncu_metrics as N  # noqa: E402

NCU_OPTIONS = ["--target-processes", "all", "--profile-from-start", "off", "--cache-control", "all",
               "--clock-control", "none"]
COLUMNS = (("time us", "time_us", 9), ("SM busy %", "sm_busy_pct", 10), ("tensor %", "tensor_pct", 9),
           ("DRAM %", "dram_pct", 7), ("ALU %", "alu_pipe_pct", 6), ("FMA %", "fma_pipe_pct", 6),
           ("decode share %", "decode_share_pct", 15), ("kernels", "kernels", 8))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python scripts/profile_sm90.py", description=__doc__.split("\n\n")[0])
    p.add_argument("problem")
    p.add_argument("--case", action="append", default=None, help="a case line (default: the manifest's benchmarks)")
    p.add_argument("--impl", nargs="+", default=["submission"], help="names or .py files (default: submission)")
    p.add_argument("--json", default=None, help="write the profile JSON here")
    p.add_argument("--ncu", default="ncu", help="the ncu executable (default: ncu on PATH)")
    p.add_argument("--warmup", type=int, default=3, help="calls before the profiled one (default: 3)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per case under ncu (default: 300)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # the process ncu watches
    p.add_argument("--impl-path", default=None, help=argparse.SUPPRESS)
    p.add_argument("--case-json", default=None, help=argparse.SUPPRESS)
    return p


def child(problem_name: str, impl_name: str, impl_path: str, case: dict, warmup: int) -> int:
    """Runs under ncu: warm-up calls, then one call inside the profiler range."""
    import torch

    from harness import problem as P
    from harness.worker import load_impl

    data = P.load_problem(problem_name).reference.generate_input(**case, device="cuda")
    module = load_impl(impl_path, impl_name)
    if hasattr(module, "prepare"):
        module.prepare(data)
    for _ in range(warmup):
        module.custom_kernel(data)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    module.custom_kernel(data)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


def ncu_error(output: str) -> str:
    """The line that says why ncu failed: its last ==ERROR== line, else the last line at all."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("==ERROR==")]
    return (errors or lines or ["no output"])[-1][:300]


def profile_case(ncu: str, chosen: dict, problem: str, case: dict, impl: tuple[str, str], args, report: Path):
    """(kernels, None) for one call of one impl on one case, or (None, the reason ncu gave); ncu's report
    goes to `report`.ncu-rep."""
    name, path = impl
    metrics = ",".join(dict.fromkeys(m for m in chosen.values() if m))
    command = [ncu, *NCU_OPTIONS, "--metrics", metrics, "--export", str(report), "--force-overwrite",
               sys.executable, str(Path(__file__).resolve()), problem, "--child", "--impl", name,
               "--impl-path", path, "--case-json", json.dumps(case), "--warmup", str(args.warmup)]
    # its own process group, so that a timeout ends ncu and the process it profiles together
    run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        said, _ = run.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate()
        return None, f"ncu took more than {args.timeout:g} s (--timeout)"
    if run.returncode != 0:
        return None, f"ncu exited {run.returncode}: {ncu_error(said)}"
    read = subprocess.run([ncu, "--import", f"{report}.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"],
                          capture_output=True, text=True, timeout=120)
    if read.returncode != 0:  # no report: the profiled process may have failed before its range
        return None, f"ncu --import exited {read.returncode}: {ncu_error(read.stdout + read.stderr)}; " \
                     f"the profiled run said: {ncu_error(said)}"
    try:
        return N.parse_raw_csv(read.stdout), None
    except ValueError as e:
        return None, f"{e}; the profiled run said: {ncu_error(said)}"


def format_cell(value, width: int) -> str:
    if value is None:
        return f"{'-':>{width}}"
    return f"{value:>{width}}" if isinstance(value, int) else f"{value:>{width}.1f}"


def header_line(case_width: int) -> str:
    return f"{'case':<{case_width}}  {'impl':<20}" + "".join(f"{title:>{w + 1}}" for title, _, w in COLUMNS)


def profile_line(case_text: str, impl: str, summary: dict | None, error: str | None, case_width: int) -> str:
    """One case and impl: the summary's figures in COLUMNS' order, or the error."""
    head = f"{case_text:<{case_width}}  {impl[-20:]:<20}"
    if error:
        return f"{head} FAILED: {error}"
    return head + "".join(" " + format_cell(summary[key], w) for _, key, w in COLUMNS)


def ncu_version(ncu: str) -> str | None:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return lines[-1] if lines else None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.child:
        return child(args.problem, args.impl[0], args.impl_path, json.loads(args.case_json), args.warmup)
    import torch

    from harness import eval as E
    from harness import problem as P

    try:
        problem = P.load_problem(args.problem)
        cases = [E.parse_case_line(c) for c in args.case] if args.case else [dict(c) for c in problem.benchmarks]
        for case in cases:
            E.check_case_keys(problem, case)
        impls = [E.resolve_impl(problem, spec) for spec in args.impl]
    except (P.UnknownProblem, E.UsageError, E.BadCase) as e:
        print(f"profile_sm90: {e}", file=sys.stderr)
        return 2
    ncu = shutil.which(args.ncu)
    if ncu is None or not torch.cuda.is_available():
        missing = [what for what, gone in (("a CUDA device", not torch.cuda.is_available()),
                                           (f"ncu ({args.ncu})", ncu is None)) if gone]
        print(f"profile_sm90: needs a CUDA GPU and Nsight Compute's ncu; not found here: {', '.join(missing)}",
              file=sys.stderr)
        return 2
    query = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    chosen = N.choose(N.offered_metrics(query.stdout))
    if chosen["time"] is None:
        print(f"profile_sm90: ncu --query-metrics does not offer {N.ROLES['time'][0]}: "
              f"{ncu_error(query.stdout + query.stderr)}", file=sys.stderr)
        return 2
    print(f"{problem.name}: ncu {ncu_version(ncu)}; metrics: "
          + ", ".join(f"{role} {metric or '(none offered)'}" for role, metric in chosen.items()), flush=True)

    texts = [P.describe_case(c) for c in cases]
    width = max(len(t) for t in texts)
    print(header_line(width), flush=True)
    results, failed = [], False
    with tempfile.TemporaryDirectory(prefix="profile_sm90-") as tmp:
        for i, (case, text) in enumerate(zip(cases, texts)):
            for j, impl in enumerate(impls):
                report = Path(tmp) / f"case{i}-impl{j}"
                kernels, error = profile_case(ncu, chosen, problem.name, case, impl, args, report)
                summary = None
                if kernels is not None:
                    try:
                        summary = N.summarize(kernels, chosen)
                    except ValueError as e:
                        error = str(e)
                failed = failed or error is not None
                print(profile_line(text, impl[0], summary, error, width), flush=True)
                results.append({"case": case, "impl": impl[0], "summary": summary, "error": error,
                                "kernels": kernels})
    if args.json:
        doc = {"tool": "scripts/profile_sm90.py", "problem": problem.name,
               "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
               "environment": E.environment("cuda"), "ncu": ncu_version(ncu), "ncu_options": NCU_OPTIONS,
               "warmup_calls": args.warmup, "metrics": chosen, "definitions": N.__doc__, "cases": results}
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"profile written to {path}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
