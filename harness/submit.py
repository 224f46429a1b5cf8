"""Submit a problem's packaged submission to the GPU MODE leaderboard with popcorn-cli, and turn the
reply into the same results JSON and table as the local evaluator.

    python -m harness.submit PROBLEM --mode test|benchmark|leaderboard [--gpu GPU] [--kernel NAME]
                            [--leaderboard NAME] [--output FILE] [--json OUT] [--timeout S]
    nox -s submit -- PROBLEM --mode ...

Steps: check the prerequisites (each missing one stops with one line saying what to do), package
(harness/package.py -> dist/PROBLEM/submission.py), run
`popcorn-cli submit --leaderboard L --gpu G --mode M --no-tui -o RAW dist/PROBLEM/submission.py`
(or `popcorn`, whichever is on PATH), then parse RAW. popcorn-cli's output has had three shapes,
all understood here:
- the runner's text reports (hackathon-era CLI; a JSON list of strings with its brackets removed
  and `\\n` turned into newlines): per case the spec line, ` ⏱ mean ± err unit`,
  ` ⚡ best 🐌 worst`; tests as `✅ spec` / `❌ spec` + `> error`;
- the full result JSON (`{"results": [{"runs": {"test": {"run": {"result": {"check": ...,
  "benchmark.0.mean": ...}}}}}]}`) when the server sent no reports: exact key: value lines;
- the background-job summary (CLI from mid-2026): `{"submission_id", "runs": [{"mode",
  "secret", "score", "passed", ...}]}`, optionally after `Geomean score ...` lines: scores only.
Times in reports are rounded by the server (format_time); the JSON shapes keep full precision.

Results go to results/local/PROBLEM-popcorn-MODE-GPU-STAMP.json (and RAW beside it as .txt), in the
evaluator's schema with "source": "popcorn-cli"; the B200 speed of light from the manifest is this
device's, so the table's "x SOL" column is filled for the leaderboard's own runners.
Exit status: 0 passed, 112 a check failed, 1 packaging refused, 2 a mistake in the arguments (one line;
checked before anything else), 3 a missing prerequisite, 4 the leaderboard is past its deadline
(harness/deadlines.py; --force sends anyway), 124 popcorn-cli timed out (--timeout), the CLI's status
when it fails.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from harness.arguments import EXIT_USAGE, MODES, OneLineParser, checked, problem_name
from harness.deadlines import closed_message
from harness.progress import run_with_progress

REPO = Path(__file__).resolve().parent.parent
EXIT_OK, EXIT_PACKAGE, EXIT_PREREQ, EXIT_CLOSED, EXIT_CHECK = 0, 1, 3, 4, 112
CLI_NAMES = ("popcorn-cli", "popcorn")
INSTALL_HINT = ("install it from https://github.com/gpu-mode/popcorn-cli/releases "
                "(or: curl -fsSL https://raw.githubusercontent.com/gpu-mode/popcorn-cli/main/install.sh | bash)")


class Prerequisite(Exception):
    """A missing prerequisite; the message is the one line that says what to do."""


def find_cli() -> str:
    for name in CLI_NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise Prerequisite(f"popcorn-cli is not on PATH: {INSTALL_HINT}")


def registration(home: Path | None = None) -> str:
    """The cli_id written by `popcorn-cli register`, from ~/.popcorn.yaml."""
    path = (home or Path.home()) / ".popcorn.yaml"
    cli_id = None
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == "cli_id":
                cli_id = value.strip().strip("'\"") or None
    if not cli_id:
        raise Prerequisite(f"not registered with the leaderboard ({path} has no cli_id): run "
                           "`popcorn-cli register github` (or `register discord`) once")
    return cli_id


def preflight(env: dict | None = None, home: Path | None = None) -> str:
    """The CLI's path, or Prerequisite naming the first thing missing."""
    env = os.environ if env is None else env
    cli = find_cli()
    if not env.get("POPCORN_API_URL"):
        raise Prerequisite("POPCORN_API_URL is not set: export POPCORN_API_URL=<the leaderboard API URL "
                           "announced by GPU MODE> (in CI: the POPCORN_API_URL secret)")
    registration(home)
    return cli


# ----- parsing popcorn-cli output ---------------------------------------------------------------

_UNITS = {"ns": 1.0, "µs": 1e3, "us": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}
_NUM = r"([0-9.]+(?:[eE][-+]?\d+)?)"
_MEAN = re.compile(rf"⏱\s*{_NUM}\s*(?:±\s*{_NUM}\s*)?(ns|µs|μs|us|ms|s)\b")
_BEST = re.compile(rf"⚡\s*{_NUM}\s*(ns|µs|μs|us|ms|s)\s*🐌\s*{_NUM}\s*(ns|µs|μs|us|ms|s)")
_SPEC = re.compile(r"^(?:[A-Za-z_]+: [^;]+; )*seed: -?\d+$")


def _report_strings(text: str) -> list[str] | None:
    """The report list the CLI printed without its brackets, with `\\n` expanded; None if not that."""
    body = text.strip()
    if not body.startswith('"'):
        return None
    try:
        items = json.loads("[" + body.replace("\r", "").replace("\n", "\\n") + "]")
    except json.JSONDecodeError:
        return None
    return [s for s in items if isinstance(s, str)] or None


def _json_documents(text: str) -> list:
    """JSON values found in the text (the CLI may put summary lines before the JSON)."""
    docs, dec, i = [], json.JSONDecoder(strict=False), 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return docs
        try:
            doc, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        docs.append(doc)
        i = end


def parse_reports(reports: list[str]) -> dict:
    """Runs from the runner's text reports: {mode: {"result": {key: value}}} plus system info."""
    text = "\n".join(reports)
    runs: dict[str, dict] = {}
    system = {}
    for key in ("GPU", "CPU", "Runtime", "Platform", "Torch", "Hostname"):
        m = re.search(rf"\* {key}: `([^`]*)`", text)
        if m:
            system[key.lower()] = m.group(1)
    # sections: "## <header>:\n```\n...```"
    for header, body in re.findall(r"## ([^\n]*?):\n```\n(.*?)```", text, flags=re.S):
        if "tests" in header and ("Passed" in header or "✅" in header):
            runs["test"] = {"result": _tests_from_log(body, passed=True)}
        elif header.strip() == "Benchmarks":
            runs["benchmark"] = {"result": _benchmarks_from_log(body)}
        elif header.strip() == "Ranked Benchmark":
            runs["leaderboard"] = {"result": _benchmarks_from_log(body)}
    if "did not pass all tests" in text:
        runs["test"] = {"result": _tests_from_log(text, passed=False)}
    crash = re.search(r"(exited with error code \*\*\d+\*\*[^\n]*|\*\*timed out\*\*[^\n]*)", text)
    return {"runs": runs, "system": system, "error": crash.group(1).replace("**", "") if crash else None}


def _tests_from_log(body: str, passed: bool) -> dict:
    result: dict[str, str] = {}
    i = 0
    lines = body.splitlines()
    for j, line in enumerate(lines):
        m = re.match(r"^(✅|❌) (.*seed: -?\d+)\s*$", line.strip())
        if not m:
            continue
        result[f"test.{i}.spec"] = m.group(2)
        result[f"test.{i}.status"] = "pass" if m.group(1) == "✅" else "fail"
        if m.group(1) == "❌" and j + 1 < len(lines) and lines[j + 1].startswith(">"):
            result[f"test.{i}.error"] = lines[j + 1][1:].strip()
        i += 1
    result["test-count"] = str(i)
    ok = passed and i > 0 and all(result[f"test.{k}.status"] == "pass" for k in range(i))
    result["check"] = "pass" if ok else "fail"
    return result


def _benchmarks_from_log(body: str) -> dict:
    result: dict[str, str] = {}
    i, fail = -1, False
    lines = body.splitlines()
    for j, line in enumerate(lines):
        s = line.strip()
        failed = re.match(r"^❌ (.*) failed testing:?$", s)
        if failed:
            i += 1
            fail = True
            result[f"benchmark.{i}.spec"] = failed.group(1)
            result[f"benchmark.{i}.status"] = "fail"
            rest = [x.strip() for x in lines[j + 1:] if x.strip()]
            result[f"benchmark.{i}.error"] = rest[0] if rest else "failed testing"
        elif _SPEC.match(s):
            i += 1
            result[f"benchmark.{i}.spec"] = s
        elif (m := _MEAN.search(s)) and i >= 0:
            scale = _UNITS[m.group(3)]
            result[f"benchmark.{i}.mean"] = repr(float(m.group(1)) * scale)
            if m.group(2):
                result[f"benchmark.{i}.err"] = repr(float(m.group(2)) * scale)
        elif (m := _BEST.search(s)) and i >= 0:
            result[f"benchmark.{i}.best"] = repr(float(m.group(1)) * _UNITS[m.group(2)])
            result[f"benchmark.{i}.worst"] = repr(float(m.group(3)) * _UNITS[m.group(4)])
    result["benchmark-count"] = str(i + 1)
    result["check"] = "fail" if fail or i < 0 else "pass"
    return result


def parse_output(text: str) -> dict:
    """{"runs": {mode: {"result": {key: value}, "passed"?, "score"?}}, "system", "error", "shape",
    "submission_id"} from whatever popcorn-cli wrote."""
    reports = _report_strings(text)
    if reports is not None:
        return {**parse_reports(reports), "shape": "reports", "submission_id": None}
    for doc in _json_documents(text):
        if isinstance(doc, dict) and isinstance(doc.get("results"), list):
            return _from_full_json(doc["results"])
        if isinstance(doc, dict) and isinstance(doc.get("runs"), dict):  # one FullResult, brackets stripped
            return _from_full_json([doc])
        if isinstance(doc, dict) and isinstance(doc.get("runs"), list) and "submission_id" in doc:
            runs = {}
            for r in doc["runs"]:
                if r.get("secret"):
                    continue
                runs[r.get("mode", "?")] = {"result": {}, "passed": r.get("passed"), "score": r.get("score"),
                                            "runner": r.get("runner")}
            return {"runs": runs, "system": {}, "error": None, "shape": "summary",
                    "submission_id": doc.get("submission_id")}
    return {"runs": {}, "system": {}, "error": f"unrecognised popcorn-cli output: {text.strip()[:200]!r}",
            "shape": "unknown", "submission_id": None}


def _from_full_json(results: list) -> dict:
    runs, system, error = {}, {}, None
    for full in results:
        if not isinstance(full, dict):
            continue
        system = {k: str(v) for k, v in (full.get("system") or {}).items()}
        error = full.get("error") or error
        for mode, ev in (full.get("runs") or {}).items():
            run = (ev or {}).get("run") or {}
            result = {k: str(v) for k, v in (run.get("result") or {}).items()}
            runs[mode] = {"result": result, "passed": run.get("passed"), "stderr": run.get("stderr")}
            comp = (ev or {}).get("compilation") or {}
            if comp and not comp.get("success", True):
                error = error or f"compilation failed: {comp.get('stderr', '')[:300]}"
            if run and not run.get("success", True):
                error = error or f"{mode} run exited with code {run.get('exit_code')}"
    return {"runs": runs, "system": system, "error": error, "shape": "json", "submission_id": None}


# ----- results in the evaluator's schema --------------------------------------------------------


def _case(spec: str) -> dict:
    from harness.eval import BadCase, parse_case_line

    try:
        return parse_case_line(spec)
    except BadCase:
        return {"spec": spec}


def to_results(problem, mode: str, gpu: str, parsed: dict) -> dict:
    """The evaluator's per-impl result dict ({"cases", "mode_run", "error", "score_s"})."""
    runs = parsed["runs"]
    mode_run = mode if mode in runs else ("test" if "test" in runs else mode)
    run = runs.get(mode_run, {})
    result = run.get("result", {})
    kind = "test" if mode_run == "test" else "benchmark"
    cases = []
    for i in range(int(result.get(f"{kind}-count", 0) or 0)):
        spec = result.get(f"{kind}.{i}.spec", "")
        status = result.get(f"{kind}.{i}.status") or ("pass" if kind == "benchmark" else "fail")
        c = {"case": _case(spec), "status": status, "error": result.get(f"{kind}.{i}.error"), "stats": None}
        if kind == "benchmark" and f"{kind}.{i}.mean" in result:
            c["stats"] = {k: float(result[f"{kind}.{i}.{k}"]) if f"{kind}.{i}.{k}" in result else None
                          for k in ("runs", "mean", "std", "err", "best", "worst")}
            c["status"] = "pass" if status != "fail" else "fail"
        cases.append(c)
    error = parsed.get("error")
    if not runs and not error:
        error = "popcorn-cli returned no runs"
    check = result.get("check")
    passed = (check == "pass") if check else bool(run.get("passed"))
    if mode_run != mode and not error:
        error = f"the {mode} run did not happen (stopped after {mode_run})"
        passed = False
    score = run.get("score")
    means = [c["stats"]["mean"] for c in cases if c["stats"]]
    if score is None and kind == "benchmark" and passed and means and len(means) == len(cases):
        score = math.exp(sum(math.log(m / 1e9) for m in means) / len(means))
    # The leaderboard's runners are B200s: the manifest's B200 speed of light is this device's.
    bench_cases = [dict(c) for c in problem.benchmarks]
    for i, c in enumerate(cases):
        same = i < len(bench_cases) and c["case"] == bench_cases[i]
        c["sol_us"] = c["sol_b200_us"] = problem.sol_b200_us[i] if same and i < len(problem.sol_b200_us) else None
        c["read_once_us"] = None
    return {"cases": cases, "mode_run": mode_run, "error": error, "score_s": float(score) if score else None,
            "passed": bool(passed) and not error}


def results_document(problem, mode: str, board: str, gpu: str, parsed: dict, result: dict, raw: Path) -> dict:
    from harness.eval import environment

    env = environment("cpu")  # commit and python of the submitting checkout
    system = parsed.get("system") or {}
    env.update({"device": system.get("gpu") or f"{gpu} (leaderboard runner)", "runner_gpu": gpu,
                "torch": system.get("torch"), "runtime": system.get("runtime"), "host": system.get("hostname"),
                "nvidia-cutlass-dsl": None})
    return {
        "problem": problem.name, "leaderboard": board, "mode": mode, "data": "leaderboard",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "source": "popcorn-cli", "environment": env, "ceilings": None,
        "popcorn": {"output_shape": parsed.get("shape"), "submission_id": parsed.get("submission_id"),
                    "raw_output": str(raw), "runs": {m: {k: v for k, v in r.items() if k != "result"}
                                                      for m, r in parsed["runs"].items()}},
        "impls": {"submission": {"check": "pass" if result["passed"] else "fail", "error": result["error"],
                                 "score_s": result["score_s"], "cases": result["cases"]}},
    }


def report(problem, mode: str, board: str, gpu: str, result: dict) -> str:
    from harness import eval as ev

    result = {**result}
    if result["mode_run"] != mode:  # show what did run
        mode = result["mode_run"]
    cases = [c["case"] for c in result["cases"]]
    known = [{**c, "stats": {k: v for k, v in c["stats"].items() if v is not None} if c["stats"] else None}
             for c in result["cases"]]  # the text reports carry no runs/std
    lines = ev.popcorn_lines({**result, "cases": known,
                              "error": result["error"] or (None if result["passed"] else "failed")})
    head = f"{problem.name} --mode {mode} on the leaderboard ({board}, {gpu})"
    tbl = ev.table(problem, mode, {"submission": result}, None, cases) if cases else "(no cases reported)"
    score = f"\nscore (geomean of means): {result['score_s'] * 1e6:.3f} us" if result.get("score_s") else ""
    return "\n".join(lines) + "\n\n" + head + "\n" + tbl + score


# ----- main -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m harness.submit", description=__doc__.split("\n\n")[0])
    p.add_argument("problem", type=problem_name)
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--gpu", default=None, help="GPU (default: the manifest's first)")
    p.add_argument("--kernel", default=None, help="entry module (as for nox -s package)")
    p.add_argument("--leaderboard", default=None, help="leaderboard name (default: the manifest's)")
    p.add_argument("--output", default=None, help="packaged file (default: dist/PROBLEM/submission.py)")
    p.add_argument("--json", default=None,
                   help="results JSON (default: results/local/PROBLEM-popcorn-MODE-GPU-STAMP.json)")
    p.add_argument("--timeout", type=positive_seconds, default=None,
                   help="seconds to wait for popcorn-cli (default: no limit)")
    p.add_argument("--force", action="store_true", help="send even past the leaderboard's deadline (if it reopened)")
    return p


def positive_seconds(text: str) -> float:
    """argparse `type` of --timeout."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return seconds


def check_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line, checked before the deadline, the prerequisites and any install (the noxfile
    calls this first): the problem, --mode, --timeout, and --gpu / --leaderboard against the manifest
    (as the packager checks them). Usage (one line) on a mistake."""
    from harness import package as pk

    return pk.check_arguments(argv, build_parser())


def main(argv: list[str] | None = None) -> int:
    from harness import package as pk
    from harness import problem as P

    args = checked("submit", check_arguments, argv)
    if args is None:
        return EXIT_USAGE
    closed = None if args.force else closed_message(args.problem, args.leaderboard)
    if closed:  # the leaderboard would reject it: send nothing (docs/spec/upstream/nvidia.yaml)
        print(f"submit: {closed}", file=sys.stderr)
        return EXIT_CLOSED
    try:
        cli = preflight()
    except Prerequisite as e:
        print(f"submit: {e}", file=sys.stderr)
        return EXIT_PREREQ
    try:
        path, packaged = pk.write(args.problem, Path(args.output) if args.output else None,
                                  kernel=args.kernel, gpu=args.gpu, leaderboard=args.leaderboard)
    except pk.PackageError as e:
        print(f"submit: packaging {args.problem} refused:", file=sys.stderr)
        for f in e.findings:
            print(f"  {f}", file=sys.stderr)
        return EXIT_PACKAGE
    problem = P.load_problem(args.problem)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.json) if args.json else REPO / "results" / "local" / (
        f"{args.problem}-popcorn-{args.mode}-{packaged.gpu}-{stamp}.json")
    raw = out.with_suffix(".txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [cli, "submit", "--leaderboard", packaged.leaderboard, "--gpu", packaged.gpu, "--mode", args.mode,
           "--no-tui", "-o", str(raw), str(path)]
    print("$ " + " ".join(cmd), file=sys.stderr)
    try:
        proc = run_with_progress(cmd, f"submit {args.problem} {args.mode}", "popcorn-cli running", args.timeout)
    except subprocess.TimeoutExpired:
        print(f"submit: popcorn-cli did not finish within {args.timeout:.0f} s", file=sys.stderr)
        return 124
    if proc.returncode != 0:
        print(f"submit: popcorn-cli exited with status {proc.returncode} (its messages are above)", file=sys.stderr)
        return proc.returncode
    text = raw.read_text(encoding="utf-8", errors="replace") if raw.is_file() else proc.stdout
    if not raw.is_file():
        raw.write_text(text, encoding="utf-8")
    parsed = parse_output(text)
    result = to_results(problem, args.mode, packaged.gpu, parsed)
    doc = results_document(problem, args.mode, packaged.leaderboard, packaged.gpu, parsed, result, raw)
    out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(report(problem, args.mode, packaged.leaderboard, packaged.gpu, result))
    print(f"results written to {out} (popcorn-cli output: {raw})", file=sys.stderr)
    return EXIT_OK if result["passed"] else EXIT_CHECK


if __name__ == "__main__":
    sys.exit(main())
