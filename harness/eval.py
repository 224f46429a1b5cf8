"""The evaluator: the leaderboard's test / benchmark / leaderboard modes, run locally.

    python -m harness.eval PROBLEM --mode test|benchmark|leaderboard
        [--impl NAME_OR_FILE ...] [--data leaderboard|stress] [--device cpu|cuda]
        [--case "m: 128; k: 256; l: 1; seed: 1111" ...] [--seed S] [--json OUT]

An impl is any Python file that defines `custom_kernel(data)`; a bare NAME means
problems/PROBLEM/NAME.py with '-' read as '_' (`reference`, `submission`, `bf16-predecoded`).
Several impls are run one after another in the same invocation and tabulated side by side.
Each impl and mode runs in a fresh worker process (harness/worker.py), spawned on a GPU as on the leaderboard.
`leaderboard` mode runs the tests first and, if they pass, the timed runs that recheck every sample.
The tests check each case as the leaderboard does, then run the guards (harness/guards.py: an in-place
change of A with the same tuple, outputs aliasing an input, writes outside C).

Output: a table (mean +- err per case, host us per call, this device's speed of light and the ratio;
rich on a terminal), a pass/fail line per impl, the leaderboard's `key: value` lines to the file
descriptor in POPCORN_FD (and to stdout with --popcorn), and with
--json a results file (device, versions, commit, per-case stats, score = geometric mean of the
per-case means in seconds). Exit status: 0 all passed, 112 a check failed, 113 a bad case line,
2 a usage error (unknown problem or impl, impl without custom_kernel).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from harness import problem as P
from harness.timing import Samples, Stats, TimingError, geometric_mean
from harness.worker_start import in_worker

EXIT_OK, EXIT_USAGE, EXIT_CHECK, EXIT_BAD_CASE = 0, 2, 112, 113
# Other processes only ever add time to a CPU sample: on a busy machine the mean (and err) swing with
# the load (10x between two runs). The worker times on one thread (two threads wait for the slower
# one, 200x on a busy core), and the median of a case's samples is the figure to compare.
CPU_TIMING_NOTE = ("CPU wall clock on one thread, no L2 flush: figures are not GPU timings; each case warmed up; "
                   "compare impls by median us, as the mean grows with whatever else the machine runs")
# On a CPU, a case whose samples spread wider than this (p90 - p10 over the median) is flagged as not
# comparable. An idle two-core machine gave up to 0.7 for a portable path (2026-11-26); another process
# on the core gives several times the median.
CPU_SPREAD_LIMIT = 1.0
REPO = Path(__file__).resolve().parent.parent


class UsageError(Exception):
    pass


class BadCase(Exception):
    pass


# ----- cases -----------------------------------------------------------------------------------

_KEY = re.compile(r"^[A-Za-z_]+$")


def parse_case_line(line: str) -> dict:
    """`m: 128; k: [256, 512]; seed: 1111` -> {"m": 128, "k": (256, 512), "seed": 1111}."""
    case = {}
    for part in line.split(";"):
        key, sep, value = part.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not _KEY.match(key) or not value:
            raise BadCase(f"invalid test case: {line!r}: {part.strip()!r} is not 'key: value'")
        if value[0] in "[(":
            if value[-1] not in "])":
                raise BadCase(f"invalid test case: {line!r}: unclosed list in {key}")
            try:
                case[key] = tuple(int(x) for x in value[1:-1].split(",") if x.strip())
            except ValueError:
                raise BadCase(f"invalid test case: {line!r}: {key} must be a list of integers") from None
        elif re.fullmatch(r"[+-]?\d+", value):
            case[key] = int(value)
        elif re.fullmatch(r"[A-Za-z_]+", value):
            case[key] = value
        else:
            raise BadCase(f"invalid test case: {line!r}: bad value for {key}: {value!r}")
    if "seed" not in case:
        raise BadCase(f"invalid test case: {line!r}: no seed")
    return case


def secret_seed(case: dict, s: int) -> dict:
    """POPCORN_SEED: the leaderboard's Cantor pairing of each case seed with the secret one."""
    a = case["seed"]
    return {**case, "seed": a + (a + s) * (a + s + 1) // 2}


def check_case_keys(problem: P.Problem, case: dict) -> None:
    """The case names exactly the generator's keys, and each value is of the kind the manifest's cases
    give it: the leaderboard's case parser also accepts words, which no problem's generator takes."""
    import inspect

    params = inspect.signature(problem.reference.generate_input).parameters
    wanted = {k for k, p in params.items() if p.default is inspect.Parameter.empty}
    missing, extra = wanted - set(case), set(case) - set(params)
    if missing or extra:
        raise BadCase(f"invalid test case for {problem.name}: {P.describe_case(case)} "
                      f"(missing {sorted(missing)}, unknown {sorted(extra)}; expected keys {sorted(wanted)})")
    problem_in_value = case_value_problem(case, manifest_value_kinds(problem)) or problem.reference.case_error(**case)
    if problem_in_value:
        raise BadCase(f"invalid test case for {problem.name}: {P.describe_case(case)}: {problem_in_value}")


def manifest_value_kinds(problem: P.Problem) -> dict[str, type]:
    """Each case key's kind in the manifest's cases: int, or tuple (a list of integers)."""
    kinds = {}
    for case in problem.tests + problem.benchmarks:
        for key, value in case.items():
            kinds.setdefault(key, tuple if isinstance(value, tuple) else int)
    return kinds


def case_value_problem(case: dict, kinds: dict[str, type]) -> str | None:
    """What is wrong with the case's values (None: nothing). Sizes are integers >= 0 (the seed may be
    any integer); lists of sizes all have one length, the number of groups `g` where the case has one."""
    for key, value in case.items():
        kind = kinds.get(key, int)
        if kind is int and not isinstance(value, int):
            return f"{key} must be an integer, got {value!r}"
        if kind is tuple and not isinstance(value, tuple):
            return f"{key} must be a list of integers like [128, 256], got {value!r}"
        if key != "seed" and min(value if isinstance(value, tuple) else (value,), default=0) < 0:
            return f"{key} must not be negative, got {value}"
    lengths = {key: len(value) for key, value in case.items() if isinstance(value, tuple)}
    if "g" in case and lengths:
        lengths["g"] = case["g"]
    if len(set(lengths.values())) > 1:
        return "the lists and g must agree on the number of groups, got " + ", ".join(
            f"{key}: {n}" for key, n in lengths.items())
    return None


def check_json_path(path: str | None) -> None:
    """--json names a file that can be written: checked before the run, not after it."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"--json {path}: is a directory; give a file name, e.g. {target / 'results.json'}")
    blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise UsageError(f"--json {path}: {blocker} is a file, not a directory")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--json {path}: cannot create its directory ({e.strerror}: {e.filename})") from None
    if not os.access(target.parent, os.W_OK):
        raise UsageError(f"--json {path}: cannot create it ({target.parent} is not writable)")


# ----- impls -----------------------------------------------------------------------------------


def resolve_impl(problem: P.Problem, spec: str) -> tuple[str, str]:
    """(display name, absolute file path) of an impl given as a name or a path."""
    path = Path(spec)
    if spec.endswith(".py") or os.sep in spec:
        if not path.is_file():
            raise UsageError(f"impl file not found: {spec}")
        board = popcorn_leaderboard(path)
        if board is not None and board not in (problem.leaderboard, *problem.extra_leaderboards):
            raise UsageError(f"{spec} is a submission to {board} (its #!POPCORN leaderboard line), not to "
                             f"{problem.name}'s {problem.leaderboard}")
        return spec, str(path.resolve())
    file = problem.directory / f"{spec.replace('-', '_')}.py"
    if not file.is_file():
        known = sorted(p.stem.replace("_", "-") for p in problem.directory.glob("*.py")
                       if p.stem in {"reference", "submission", "bf16_predecoded", "cublas_predecoded"})
        raise UsageError(f"unknown impl {spec!r} for {problem.name} (known: {', '.join(known)}; or give a .py file)")
    return spec, str(file)


def popcorn_leaderboard(path: Path) -> str | None:
    """The leaderboard a file's leading `#!POPCORN leaderboard NAME` line names (None: no such line), read
    from its leading comment block as the leaderboard's server reads it."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        if not line.startswith(("#", "//")):
            break
        words = line.split()
        if len(words) >= 3 and words[0] in ("#!POPCORN", "//!POPCORN") and words[1] == "leaderboard":
            return words[2]
    return None


# ----- running ---------------------------------------------------------------------------------


def run_impl(problem, impl_name, impl_path, mode, tests, benches, device, data_kind, graph=False) -> dict:
    from harness.worker import run_mode

    if mode == "leaderboard":  # as KernelBot: the timed run happens only after the tests pass
        t = in_worker(device, run_mode, problem.name, impl_path, impl_name, "test", tests, device, data_kind)
        if t["error"] or any(c["status"] != "pass" for c in t["cases"]):
            return {**t, "mode_run": "test"}
    cases = tests if mode == "test" else benches
    r = in_worker(device, run_mode, problem.name, impl_path, impl_name, mode, cases, device, data_kind, graph)
    judge_samples(r)
    return {**r, "mode_run": mode}


def judge_samples(result: dict) -> None:
    """Each timed case's statistics, computed here from the worker's raw samples: this process never
    imports the impl, so nothing the impl did to the worker's statistics reaches a score. The
    unfinished-work check is redone on the raw lags too. The raw samples are dropped after."""
    for c in result["cases"]:
        raw, lags = c.pop("samples_ns", None), c.pop("lags_ns", None)
        per_sample = c.pop("per_sample_inputs", 1)
        if raw is None:
            continue
        samples = Samples(per_sample, raw, lags or [])
        try:
            err, stats = samples.unfinished_error(), samples.stats()
        except TimingError as e:
            err, stats = f"timing check: {e}", None
        if err:
            c.update(status="fail", error=c["error"] or err, stats=None)
            continue
        ordered = sorted(raw)
        c["stats"] = stats.as_dict()
        c["spread_us"] = [ordered[len(ordered) // 10] / 1e3, ordered[(9 * len(ordered)) // 10] / 1e3]
        c["lag_us"] = samples.median_lag_us()


def popcorn_lines(result: dict) -> list[str]:
    """The leaderboard's key: value lines for one impl's run."""
    cases = result["cases"]
    kind = "test" if result["mode_run"] == "test" else "benchmark"
    lines = [f"{kind}-count: {len(cases)}"]
    for i, c in enumerate(cases):
        lines.append(f"{kind}.{i}.spec: {P.describe_case(c['case'])}")
        if c["status"] == "pass" and kind == "benchmark":
            lines += [f"{kind}.{i}.{k}: {c['stats'][k]}" for k in Stats.LEADERBOARD_KEYS if k in c["stats"]]
        else:
            lines.append(f"{kind}.{i}.status: {c['status']}")
            if c.get("error"):
                lines.append(f"{kind}.{i}.error: {c['error']}")
    lines.append(f"check: {'pass' if passed(result) else 'fail'}")
    return lines


def passed(result: dict) -> bool:
    return not result["error"] and bool(result["cases"]) and all(c["status"] == "pass" for c in result["cases"])


# ----- reporting -------------------------------------------------------------------------------


def environment(device: str) -> dict:
    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__, "device": "cpu",
           "host": platform.node()}
    try:
        from importlib.metadata import version

        env["nvidia-cutlass-dsl"] = version("nvidia-cutlass-dsl")
    except Exception:  # noqa: BLE001
        env["nvidia-cutlass-dsl"] = None
    if device == "cuda":
        env["device"] = torch.cuda.get_device_name()
        env["capability"] = "sm_%d%d" % torch.cuda.get_device_capability()
        env["cuda"] = torch.version.cuda
    else:
        env["device"] = f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} threads)"
    # NVFP4_COMMIT, when set, names the code: a copy of the tree on a remote GPU box may carry no
    # .git, or a stale one whose HEAD is not the code that runs.
    env["commit"], env["dirty"] = os.environ.get("NVFP4_COMMIT"), None
    if env["commit"]:
        return env
    try:
        env["commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                                       capture_output=True, text=True, timeout=10).stdout.strip() or None
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        env["dirty"] = bool(dirty)
    except (OSError, subprocess.SubprocessError):
        env["commit"] = None
    return env


def ceilings_text(ce: dict) -> str:
    return f"{ce['source']} ceilings {ce['bandwidth_Bps'] / 1e12:.2f} TB/s, {ce['flops'] / 1e12:.0f} TFLOP/s bf16"


def fmt_us(ns: float | None) -> str:
    """Microseconds with about four significant digits (15.63, 101.2, 11277)."""
    if ns is None:
        return "-"
    us = ns / 1e3
    return f"{us:.0f}" if us >= 1000 else f"{us:.1f}" if us >= 100 else f"{us:.2f}"


def fmt_host(c: dict) -> str:
    """Host us per call, one input repeated / rotating; '!' where it exceeds the GPU time per call."""
    same, rot = c.get("host_us"), c.get("host_rotating_us")
    if same is None:
        return "-"
    return f"{same:.1f} / {rot:.1f}" + (" !" if c.get("host_over_gpu") else "")


def fmt_host_idle(c: dict) -> str:
    """Host us per call with the GPU idle / an empty torch op's the same way; '!' past twice the op's."""
    idle, empty = c.get("host_idle_us"), c.get("host_idle_empty_us")
    if idle is None:
        return "-"
    return f"{idle:.1f} / {empty:.1f}" + (" !" if idle > 2 * empty else "")


def host_legend(results: dict) -> list[str]:
    """What the host columns mean, for those that have figures in `results`; which path the dispatcher
    took; which impls have an untimed prepare."""
    cases = [c for r in results.values() for c in r["cases"]]
    lines = []
    if any(c.get("host_us") is not None for c in cases):
        lines.append("host us: median host time per call, GPU kept busy: one input repeated / rotating over the "
                     "case's inputs; ! = more than the GPU time per call")
    if any(c.get("host_idle_us") is not None for c in cases):
        lines.append("host idle us: median host time per call with the GPU idle (a synchronize before each call), "
                     "one input repeated / an empty torch op's the same way; ! = more than twice the op's")
    paths = {}
    for name, r in results.items():
        taken = [c["path"] for c in r["cases"] if c.get("path")]
        if taken:
            counts = {p: taken.count(p) for p in dict.fromkeys(taken)}
            paths[name] = ", ".join(f"{p} on {n}/{len(r['cases'])} cases" for p, n in counts.items())
    if paths:
        lines.append("path taken (shared/dispatch.py): " + "; ".join(f"{n} {p}" for n, p in paths.items()))
    prepared = [name for name, r in results.items() if r.get("prepare") and r.get("mode_run") == "benchmark"]
    if prepared:
        lines.append(f"untimed prepare(data): {', '.join(prepared)} (run after every change of input values, outside "
                     "the timed region; leaderboard mode never calls it)")
    checks = {name: c["host_check"] for name, r in results.items() for c in r["cases"] if c.get("host_check")}
    if checks:
        lines.append("repeat-call check (shared/cute/host_check.py): "
                     + "; ".join(f"{name} {kind}" for name, kind in checks.items()))
    return lines


BENCH_HEAD = ["case", "impl", "mean us", "+-err", "best us", "median us", "host us", "host idle us", "graph us",
              "SOL us", "x SOL", "read-once us", "x read", "read loop us", "x loop"]


def table_rows(mode, results: dict, cases: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The table's head and rows; in timed modes, columns that are empty in every row are left out
    (on a CPU: the device figures)."""
    rows = []
    head = ["case", "impl", "status"] if mode == "test" else list(BENCH_HEAD)
    for i, case in enumerate(cases):
        spec = P.describe_case(case)
        for name, r in results.items():
            c = r["cases"][i] if i < len(r["cases"]) and r["mode_run"] == mode else None
            if mode == "test":
                rows.append([spec, name, c["status"] if c else "not run"])
                continue
            s = c["stats"] if c and c["status"] == "pass" else None
            if s is None:
                rows.append([spec, name, "fail" if c else "not run"] + ["-"] * (len(head) - 3))
                continue
            mean_us = s["mean"] / 1e3
            ratio = lambda x, mean_us=mean_us: f"{mean_us / x:.2f}" if x else "-"  # noqa: E731
            sol_us, read_us, loop_us = c.get("sol_us"), c.get("read_once_us"), c.get("read_once_loop_us")
            rows.append([spec, name, fmt_us(s["mean"]), fmt_us(s["err"]), fmt_us(s["best"]), fmt_us(s.get("median")),
                         fmt_host(c),
                         fmt_host_idle(c), fmt_us(c.get("graph_ns")), f"{sol_us:.2f}" if sol_us else "-", ratio(sol_us),
                         f"{read_us:.2f}" if read_us else "-", ratio(read_us),
                         f"{loop_us:.2f}" if loop_us else "-", ratio(loop_us)])
    if mode != "test":
        for name, r in results.items():
            if r.get("score_s"):
                rows.append(["geomean (score)", name, fmt_us(r["score_s"] * 1e9)] + ["-"] * (len(head) - 3))
        keep = [j for j in range(len(head)) if j < 3 or any(row[j] not in ("-", "") for row in rows)]
        head = [head[j] for j in keep]
        rows = [[row[j] for j in keep] for row in rows]
    return head, rows


def table(problem, mode, results: dict, device_info: dict | None, cases: list[dict]) -> str:
    """Plain-text table (for logs, pipes, files)."""
    head, rows = table_rows(mode, results, cases)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    return "\n".join(out)


def print_table(title: str, mode, results: dict, device_info, cases: list[dict]) -> None:
    """One table per run: rich on a terminal, plain text otherwise (or without rich)."""
    if sys.stdout.isatty():
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            Console = None
        if Console is not None:
            head, rows = table_rows(mode, results, cases)
            t = Table(title=title, title_justify="left")
            for j, h in enumerate(head):
                t.add_column(h, justify="left" if j < 2 else "right", no_wrap=j == 0)
            for row in rows:
                style = "bold" if row[0] == "geomean (score)" else ("red" if "fail" in row else None)
                t.add_row(*row, style=style)
            Console().print(t)
            return
    print(title)
    print(table(None, mode, results, device_info, cases))


def emit(lines: list[str], to_stdout: bool) -> None:
    """The leaderboard's key: value lines go where the leaderboard sends them, the file descriptor in
    POPCORN_FD; to stdout only when asked (--popcorn)."""
    fd = os.environ.get("POPCORN_FD")
    if fd:
        with os.fdopen(int(fd), "w", closefd=False) as f:
            f.write("\n".join(lines) + "\n")
            f.flush()
    if to_stdout:
        print("\n".join(lines))


# ----- main ------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness.eval", description=__doc__.split("\n\n")[0])
    p.add_argument("problem", help=f"one of {', '.join(P.PROBLEM_NAMES)}")
    p.add_argument("--mode", choices=("test", "benchmark", "leaderboard"), default="test",
                   help="test: check the manifest's tests; benchmark: time its benchmarks; leaderboard: the "
                        "tests, then timed runs that recheck every sample (default: test)")
    p.add_argument("--impl", nargs="+", default=["submission"], help="names or .py files (default: submission)")
    p.add_argument("--data", choices=("leaderboard", "stress"), default="leaderboard",
                   help="the leaderboard's inputs, or the stress inputs: all 16 FP4 codes in both nibbles, "
                        "wide-range scales (default: leaderboard)")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when present")
    p.add_argument("--case", action="append", default=None, help="a case line instead of the manifest's")
    p.add_argument("--seed", type=int, default=None, help="secret seed (as POPCORN_SEED)")
    p.add_argument("--json", default=None, help="write the results JSON here")
    p.add_argument("--full", action="store_true",
                   help="on a CPU, time the manifest's benchmark shapes (default there: its small cpu cases)")
    p.add_argument("--popcorn", action="store_true",
                   help="also print the leaderboard's key: value lines to stdout (they always go to POPCORN_FD)")
    p.add_argument("--graph", action="store_true",
                   help="also time CUDA-graph replays over rotating inputs (secondary metric, no flush)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BadCase as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_CASE


def run(args) -> int:
    import torch

    try:
        problem = P.load_problem(args.problem)
    except P.UnknownProblem as e:
        raise UsageError(str(e)) from None
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is visible to torch")
    if args.case:
        tests = benches = [parse_case_line(line) for line in args.case]
    else:
        tests, benches = [dict(c) for c in problem.tests], [dict(c) for c in problem.benchmarks]
    for c in tests + benches:  # before the secret seed does arithmetic on a seed that may be a word
        check_case_keys(problem, c)
    seed = args.seed if args.seed is not None else os.environ.pop("POPCORN_SEED", None)
    if seed is not None:
        tests = [secret_seed(c, int(seed)) for c in tests]
        benches = [secret_seed(c, int(seed)) for c in benches]
    if device == "cpu" and args.mode != "test" and not args.case and not args.full and problem.cpu_cases:
        benches = [dict(c) for c in problem.cpu_cases]
        if seed is not None:
            benches = [secret_seed(c, int(seed)) for c in benches]
        print(f"{problem.name}: on the CPU, timing the manifest's {len(benches)} small cpu cases "
              "(--full: the leaderboard's benchmark shapes)", file=sys.stderr)
    cases = tests if args.mode == "test" else benches
    impls = [resolve_impl(problem, s) for s in args.impl]
    check_json_path(args.json)
    if args.graph and device != "cuda":
        print("note: --graph times CUDA-graph replays: it needs a CUDA device and is ignored on the CPU",
              file=sys.stderr)

    timed = args.mode != "test"
    device_info = None
    if timed:
        print(f"{problem.name}: {args.mode} on {device}"
              + (f" ({CPU_TIMING_NOTE})" if device == "cpu" else ""),
              file=sys.stderr)
        if device == "cuda":
            from harness.worker import measure_device

            device_info = in_worker(device, measure_device, [problem.reference.cost(**c)[0] for c in cases],
                                    problem.timing["flush_bytes"])

    results, all_lines = {}, []
    for name, path in impls:
        r = run_impl(problem, name, path, args.mode, tests, benches, device, args.data, args.graph)
        if r.get("bad_case"):
            raise BadCase(r["error"])
        if r["error"]:
            print(f"error: {r['error']}", file=sys.stderr)
            if len(impls) == 1:
                return EXIT_USAGE
        annotate(problem, r, cases, device_info)
        results[name] = r
        all_lines += ([f"impl: {name}"] if len(impls) > 1 else []) + popcorn_lines(r)
        for c in r["cases"]:
            if c["status"] != "pass":
                print(f"FAIL {name} [{P.describe_case(c['case'])}]: {c['error']}", file=sys.stderr)
            elif c.get("graph_error"):
                print(f"note: {name} [{P.describe_case(c['case'])}]: CUDA graph {c['graph_error']}", file=sys.stderr)
        if device == "cpu":
            for line in spread_notes(name, r):
                print(line, file=sys.stderr)
    emit(all_lines, args.popcorn)
    head = f"{problem.name} --mode {args.mode} --data {args.data} on {device}"
    if device_info and device_info["ceilings"]:
        ce = device_info["ceilings"]
        head += f" ({ce['device']}; {ceilings_text(ce)})"
    print_table(head, args.mode, results, device_info, cases)
    for line in host_legend(results):
        print(line)
    for name, r in results.items():
        n_pass = sum(c["status"] == "pass" for c in r["cases"])
        print(f"{name}: {'pass' if passed(r) else 'FAIL'} ({n_pass}/{len(cases)} cases)"
              + (f"; {r['error']}" if r["error"] else ""))

    if args.json:
        write_json(args, problem, device, results, device_info)
    ok = all(passed(r) for r in results.values())
    return EXIT_OK if ok else EXIT_CHECK


def annotate(problem, result: dict, cases: list[dict], device_info: dict | None) -> None:
    """Add speed of light and read-once figures to each timed case, and the score."""
    from harness import sol

    if result["mode_run"] == "test":
        return
    ceil = sol.Ceilings(**device_info["ceilings"]) if device_info and device_info["ceilings"] else None
    for i, c in enumerate(result["cases"]):
        read, written, flops = problem.reference.cost(**cases[i])
        c["sol_us"] = sol.sol_us(read + written, flops, ceil) if ceil else None
        c["sol_b200_us"] = problem.sol_b200_us[i] if i < len(problem.sol_b200_us) and cases == list(
            map(dict, problem.benchmarks)) else None
        c["read_once_us"] = device_info["read_once_us"][i] if device_info else None
        c["read_once_loop_us"] = device_info.get("read_once_loop_us", [None] * len(cases))[i] if device_info else None
    if passed(result) and len(result["cases"]) == len(cases):
        result["score_s"] = geometric_mean([c["stats"]["mean"] / 1e9 for c in result["cases"]])


def spread_notes(name: str, result: dict) -> list[str]:
    """CPU runs: a line per case whose samples spread too wide to compare (p10..p90 over the median)."""
    notes = []
    for c in result["cases"]:
        spread, s = c.get("spread_us"), c.get("stats")
        if spread and s and s.get("median") and (spread[1] - spread[0]) * 1e3 > CPU_SPREAD_LIMIT * s["median"]:
            notes.append(f"note: {name} [{P.describe_case(c['case'])}]: samples spread {spread[0]:.0f}.."
                         f"{spread[1]:.0f} us (p10..p90) around a median of {s['median'] / 1e3:.0f} us: too wide to "
                         "compare (another process on the core?); rerun on an idle machine")
    return notes


# The unit of every figure in a results file, by key (the leaderboard's statistics are in ns).
# Per call where a figure is a time per call; stats' `runs` is a count.
RESULT_UNITS = {"stats": "ns", "graph_ns": "ns", "score_s": "s", "checks_s": "s", "*_us": "us",
                "ceilings.bandwidth_Bps": "B/s", "ceilings.flops": "FLOP/s"}


def write_json(args, problem, device, results, device_info) -> None:
    doc = {
        "problem": problem.name, "leaderboard": problem.leaderboard, "mode": args.mode, "data": args.data,
        "units": RESULT_UNITS,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "environment": environment(device),
        "ceilings": device_info["ceilings"] if device_info else None,
        "impls": {name: {"check": "pass" if passed(r) else "fail", "error": r["error"], "prepare": r.get("prepare"),
                         "score_s": r.get("score_s"), "cases": r["cases"]} for name, r in results.items()},
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"results written to {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
