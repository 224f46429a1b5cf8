"""Our packaged submissions through gpu-mode/reference-kernels' OWN eval files, on an H100.

    python -m scripts.official_eval --reference-kernels DIR [PROBLEM ...] [--modes test benchmark leaderboard]
                                    [--seed N] [--json OUT] [--timeout S] [--work DIR] [--their-reference]

(PROBLEMs before --modes, which takes every word after it.)

For each problem (default: all four) a scratch directory is set up as the leaderboard's runner sets up
its working directory: every file that their problems/nvidia/nvfp4_<problem>/task.yml lists under
`files`, copied from where it says (utils.py from `../utils.py` for gemv, gemm and dual_gemm, the
problem's own for group_gemm; eval.py from `../eval.py`, `../eval_better_bench.py` or
`../eval_better_bench_grouped_gemm.py`), with `submission.py` our packaged single file
(`python -m harness.package PROBLEM`), and the cases files built from task.yml's `tests` (test mode) and
`benchmarks` (benchmark and leaderboard modes) as `key: value; ...` lines. Then, per mode,
`python eval.py MODE CASES` runs there with POPCORN_FD a pipe (their key: value result lines) and
POPCORN_SEED the secret seed where --seed is given; the lines are parsed, a progress line is printed per
case, and a run that passes its time limit is killed (its whole process group) and reported as failed.
A table comes last (problem, mode, pass/fail, cases checked, each benchmark's mean in us), and --json
writes device, versions, our commit, their revision and file hashes, the seed, the eval file used and
every parsed line.

The one change to their files: ref_kernel. Theirs calls torch._scaled_mm on FP4 operands, which only a
B200 (sm_100) runs, so on an H100 their check could not run. The scratch reference.py is their file byte
for byte followed by an appended block that rebinds `ref_kernel` to ours (problems.<p>.reference: an
exact E2M1 x E4M3 decode, fp32 accumulation, the same function) and re-runs, verbatim, the statements of
their file that used ref_kernel at import (in all four: `check_implementation = make_match_reference(
ref_kernel, rtol=1e-03, atol=1e-03)`). Their generate_input, tolerances, checks, timing loops and L2
flush stay theirs. `--their-reference` keeps their ref_kernel (on a B200; the B200 session, harness/b200, does that).
One name is added outside their files: their evals import cutlass.cute.nvgpu.common.OpError, which CuTe
DSL 4.3 (the runner's) has and 4.8 (ours) no longer has; scripts/official_eval_site/sitecustomize.py,
first on the runs' PYTHONPATH, adds it where it is missing (its docstring says how and what it changes).

Default modes: test + benchmark. Test mode checks the 10 test cases; benchmark mode checks every input
of each benchmark case once, then times it with their loop (at most 200 samples, 100 for the grouped
GEMM; a sample of the GEMM evals is one 62.5 GiB L2 flush, about 25 ms, plus 50 calls, 15 grouped).
Together about 1-2 minutes per problem, 4-8 for all four (estimated from their loop, not measured;
CuTe DSL compiles included, with no file cache: their eval_better_bench files disable it). Their
leaderboard mode is much longer: it first warms up EVERY benchmark case (up to 1000 samples, 50
grouped), then times each with a recheck of every output after every sample (up to 1000 samples, 100
grouped), each loop ending only at 0.1 % relative error, the cap, or 120 s: an estimated 5-10 minutes
per problem. Ask for it with `--modes leaderboard` (its default timeout is
1200 s per run). In leaderboard mode their eval exits 0 even when a case fails; pass/fail is read from
its `check` line, as the runner does.

The GPU machine needs no network: carry their problems/nvidia tree in a folder. From a bare mirror
(or any clone) of gpu-mode/reference-kernels:

    mkdir -p .refk && git -C MIRROR archive HEAD problems/nvidia | tar -x -C .refk
    git -C MIRROR rev-parse HEAD > .refk/REVISION       # recorded in the JSON as their revision
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python -m scripts.official_eval --reference-kernels .refk

`.refk/` is git-ignored: their files are never committed here. DIR may be a checkout, the extracted
archive (a folder holding problems/nvidia) or problems/nvidia itself; relative paths are resolved
against the current directory. PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True is set for the runs
unless the environment sets that variable already: their 62.5 GiB flush tensor can otherwise fail to
allocate on an 80 GB H100 once the cache is fragmented. The scratch directories are kept (printed);
to rerun one by hand: `cd SCRATCH/gemm && PYTHONPATH=REPO/scripts/official_eval_site POPCORN_FD=1 python eval.py
test tests.txt` (the key: value lines then go to stdout).
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python scripts/official_eval.py` as well as `python -m scripts.official_eval`
    sys.path.insert(0, str(ROOT))
PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
MODES = ("test", "benchmark", "leaderboard")
DEFAULT_MODES = ("test", "benchmark")
TIMEOUT_S = {"test": 300, "benchmark": 300, "leaderboard": 1200}
CASES_FILE = {"test": "tests.txt", "benchmark": "benchmarks.txt", "leaderboard": "benchmarks.txt"}
SUBMISSION = "@SUBMISSION@"  # task.yml's placeholder for the uploaded file
ALLOC_CONF = "expandable_segments:True"
SITE_DIR = ROOT / "scripts" / "official_eval_site"  # its sitecustomize.py: CuTe DSL 4.3's OpError for their imports
TAIL_CHARS = 6000


# ------------------------------------------------------------------------------- the scratch dir
@dataclass
class Scratch:
    """One problem's working directory for their eval file."""

    problem: str
    dir: Path
    eval_source: str  # where task.yml takes eval.py from, e.g. "../eval_better_bench.py"
    files: dict[str, dict] = field(default_factory=dict)  # name -> {"source": task.yml's, "sha256": theirs}
    exact_reference: bool = True


def nvidia_dir(refdir: Path) -> Path:
    """Their problems/nvidia folder inside DIR (a checkout or the extracted archive), or DIR itself."""
    for candidate in (refdir / "problems" / "nvidia", refdir):
        if (candidate / "eval.py").is_file() and any(candidate.glob("nvfp4_*/task.yml")):
            return candidate
    raise FileNotFoundError(f"--reference-kernels: expected a directory holding problems/nvidia (a "
                            f"gpu-mode/reference-kernels checkout or `git archive HEAD problems/nvidia` "
                            f"extracted), got {refdir}")


def manifest_of(problem: str) -> dict:
    if problem not in PROBLEMS:
        raise ValueError(f"problem: expected one of {', '.join(PROBLEMS)}, got {problem!r}")
    return yaml.safe_load((ROOT / "problems" / problem / "manifest.yaml").read_text())


def task_of(refdir: Path, problem: str) -> tuple[Path, dict]:
    """Their problem folder and its parsed task.yml."""
    src = nvidia_dir(refdir) / manifest_of(problem)["leaderboard"]
    if not (src / "task.yml").is_file():
        raise FileNotFoundError(f"{src / 'task.yml'} not found")
    return src, yaml.safe_load((src / "task.yml").read_text())


def cases_text(cases: list[dict]) -> str:
    """task.yml cases as the runner writes them: `key: value` joined by '; ', one case per line."""
    return "".join("; ".join(f"{k}: {v}" for k, v in case.items()) + "\n" for case in cases)


def derived_statements(reference_text: str) -> list[tuple[int, str]]:
    """(line, source) of each module-level statement of their reference.py that uses ref_kernel when
    the module is imported (check_implementation = make_match_reference(ref_kernel, ...)). Function
    bodies are left out: they look ref_kernel up by name when called, so they find the rebound one."""
    tree = ast.parse(reference_text)
    if not any(isinstance(s, ast.FunctionDef) and s.name == "ref_kernel" for s in tree.body):
        raise ValueError("their reference.py defines no top-level ref_kernel: nothing to replace")
    out = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if any(isinstance(n, ast.Name) and n.id == "ref_kernel" for n in ast.walk(stmt)):
            out.append((stmt.lineno, ast.get_source_segment(reference_text, stmt)))
    return out


def exact_reference_block(problem: str, reference_text: str, root: Path = ROOT) -> str:
    """The block appended to their reference.py: ref_kernel rebound to ours, their derived statements re-run."""
    module = f"problems.{problem}.reference"
    rerun = "\n".join(f"# their line {line}, re-run:\n{source}" for line, source in derived_statements(reference_text))
    return f'''

# ==== Appended by nvfp4-kernels scripts/official_eval.py. Everything above is their reference.py, byte
# for byte (gpu-mode/reference-kernels problems/nvidia/{manifest_of(problem)["leaderboard"]}/reference.py).
# Replaced: ref_kernel, and nothing else. Theirs calls torch._scaled_mm on FP4 operands, which only a
# B200 (sm_100) runs, so on this GPU their check could not run at all. Ours, {module}.ref_kernel
# from the nvfp4-kernels checkout at {root}, computes the same function: an exact E2M1 x E4M3 decode
# and fp32 accumulation (TF32 off), rounded once to fp16. Their generate_input, tolerances and check
# stay theirs: the statements above that used ref_kernel at import are re-run below, verbatim, so that
# they bind ours; their functions that call ref_kernel by name find ours.
import os.path as _official_eval_path
import sys as _official_eval_sys

if {str(root)!r} not in _official_eval_sys.path:
    _official_eval_sys.path.insert(1, {str(root)!r})
from {module} import ref_kernel  # noqa: E402

_official_eval_file = _official_eval_path.realpath(_official_eval_sys.modules[{module!r}].__file__)
if not _official_eval_file.startswith({str(root) + os.sep!r}):  # another copy of the project came first
    raise ImportError("official_eval: {module} was imported from " + _official_eval_file + ", not from {root}")
{rerun}
'''


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def package_submission(problem: str, out: Path) -> None:
    """Our packaged single file (harness/package.py), as uploaded to the leaderboard."""
    from harness import package

    package.write(problem, out)


def prepare_scratch(problem: str, refdir: Path, work: Path, *, exact_reference: bool) -> Scratch:
    """work/problem holding the files their task.yml lists (copied; our packaged submission for
    @SUBMISSION@), tests.txt and benchmarks.txt; with exact_reference, their reference.py followed by
    the block that rebinds ref_kernel to our exact decode. Raises FileNotFoundError / ValueError /
    harness.package.PackageError naming what is missing or refused."""
    src, task = task_of(refdir, problem)
    files = {entry["name"]: entry["source"] for entry in task.get("files", [])}
    missing = {"eval.py", "reference.py", "submission.py"} - set(files)
    if missing:
        raise ValueError(f"{src / 'task.yml'}: expected files eval.py, reference.py and submission.py, "
                         f"missing {', '.join(sorted(missing))}")
    dest = work / problem
    dest.mkdir(parents=True, exist_ok=True)
    scratch = Scratch(problem, dest, files["eval.py"], exact_reference=exact_reference)
    for name, source in files.items():
        if source == SUBMISSION:
            package_submission(problem, dest / name)
            scratch.files[name] = {"source": "harness.package " + problem, "sha256": file_sha256(dest / name)}
            continue
        origin = (src / source).resolve()
        if not origin.is_file():
            raise FileNotFoundError(f"{src / 'task.yml'} lists {source} for {name}: {origin} not found")
        shutil.copyfile(origin, dest / name)
        scratch.files[name] = {"source": source, "sha256": file_sha256(origin)}
    if exact_reference:
        theirs = (dest / "reference.py").read_text()
        (dest / "reference.py").write_text(theirs + exact_reference_block(problem, theirs))
    (dest / CASES_FILE["test"]).write_text(cases_text(task.get("tests", [])))
    (dest / CASES_FILE["benchmark"]).write_text(cases_text(task.get("benchmarks", [])))
    return scratch


# ------------------------------------------------------------------------------------ one run
def parse_popcorn(text: str) -> dict[str, str]:
    """Their POPCORN_FD lines as the runner reads them: split at the first ':', key and value stripped."""
    out = {}
    for line in text.splitlines():
        if ":" in line:
            key, value = line.split(":", 1)
            out[key.strip()] = value.strip()
    return out


def summarize(mode: str, popcorn: dict[str, str], rc: int | None, timed_out: bool, cases: int = 0) -> dict:
    """pass/fail, cases checked of all, each benchmark's mean in us, the error lines.

    A test case counts as checked when its status is pass; a benchmark case when it has a mean (their
    loop checked each of its inputs first). The number of cases is their count line, or `cases` (the
    cases file's) where the run ended before writing it. Pass needs exit 0, `check: pass` and every
    case checked."""
    kind = "test" if mode == "test" else "benchmark"
    total = int(popcorn.get(f"{kind}-count", cases))
    if kind == "test":
        checked = sum(popcorn.get(f"test.{i}.status") == "pass" for i in range(total))
        means = []
    else:
        means = [float(popcorn[f"benchmark.{i}.mean"]) / 1e3 if f"benchmark.{i}.mean" in popcorn else None
                 for i in range(total)]
        checked = sum(m is not None for m in means)
    errors = [f"{key}: {value}" for key, value in popcorn.items() if key.endswith(".error")]
    passed = rc == 0 and not timed_out and popcorn.get("check") == "pass" and 0 < total == checked
    return {"passed": passed, "checked": checked, "total": total, "means_us": means, "errors": errors}


def eval_env(seed: int | None, fd: int) -> dict:
    """This environment plus POPCORN_FD, POPCORN_SEED only where --seed is given, the allocator setting
    and SITE_DIR first on PYTHONPATH (inherited by their spawned workers)."""
    env = dict(os.environ, POPCORN_FD=str(fd))
    env["PYTHONPATH"] = os.pathsep.join([str(SITE_DIR)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.pop("POPCORN_SEED", None)
    if seed is not None:
        env["POPCORN_SEED"] = str(seed)
    env.setdefault("PYTORCH_CUDA_ALLOC_CONF", ALLOC_CONF)
    return env


def _progress(prefix: str, key: str, value: str) -> None:
    """One line per case result as it arrives."""
    if key.endswith((".status", ".mean", ".error")) or key == "check":
        shown = value if len(value) <= 160 else value[:157] + "..."
        print(f"  {prefix} {key}: {shown}", flush=True)


def _read_popcorn(fd: int, lines: list[str], prefix: str) -> None:
    with os.fdopen(fd) as pipe:
        for line in pipe:
            lines.append(line)
            if ":" in line:
                key, value = line.split(":", 1)
                _progress(prefix, key.strip(), value.strip())


def run_eval(scratch: Scratch, mode: str, *, timeout: float, seed: int | None = None) -> dict:
    """`python eval.py MODE CASES` in the scratch dir; its stdout and stderr go to MODE.log there.

    Past `timeout` seconds its process group (the eval and its worker pool) is killed. Returns rc,
    timed_out, seconds, the parsed POPCORN_FD lines, the log's tail and summarize()'s fields."""
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
    prefix = f"{scratch.problem} {mode}"
    print(f"{prefix}: their {Path(scratch.eval_source).name} in {scratch.dir} (timeout {timeout:.0f} s)", flush=True)
    read_fd, write_fd = os.pipe()
    log_path = scratch.dir / f"{mode}.log"
    start = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "eval.py", mode, CASES_FILE[mode]], cwd=scratch.dir,
                                env=eval_env(seed, write_fd), pass_fds=(write_fd,), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    os.close(write_fd)
    lines: list[str] = []
    reader = threading.Thread(target=_read_popcorn, args=(read_fd, lines, prefix), daemon=True)
    reader.start()
    timed_out = False
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)  # the eval's own group (start_new_session): it and its pool
        rc = proc.wait()
    reader.join(timeout=30)
    seconds = time.monotonic() - start
    popcorn = parse_popcorn("".join(lines))
    tail = log_path.read_text(errors="replace")[-TAIL_CHARS:]
    if timed_out:
        tail += f"\nofficial_eval: killed after {timeout:.0f} s\n"
    result = {"rc": rc, "timed_out": timed_out, "seconds": round(seconds, 1), "popcorn": popcorn, "tail": tail}
    cases = len((scratch.dir / CASES_FILE[mode]).read_text().splitlines())
    result.update(summarize(mode, popcorn, rc, timed_out, cases))
    verdict = "pass" if result["passed"] else "TIMEOUT" if timed_out else "FAIL"
    print(f"{prefix}: {verdict}, {result['checked']}/{result['total']} cases, rc {rc}, {seconds:.0f} s", flush=True)
    return result


# ------------------------------------------------------------------------------------ the report
def revision_of(refdir: Path) -> str | None:
    """Their commit: `git rev-parse HEAD` in a checkout, else the REVISION file written beside the
    extracted archive (see the module docstring), else None."""
    if (refdir / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(refdir), "rev-parse", "HEAD"], capture_output=True,
                                 text=True, timeout=10)
            return out.stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            return None
    for path in (refdir / "REVISION", refdir.parent.parent / "REVISION"):
        if path.is_file():
            return path.read_text().strip() or None
    return None


def environment() -> dict:
    """Device, versions and our commit (harness/eval.py's record), read after the runs so that this
    process holds no CUDA context while their evals allocate."""
    import torch

    from harness.eval import environment as eval_environment

    return eval_environment("cuda" if torch.cuda.is_available() else "cpu")


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table(report: dict) -> str:
    rows = [("problem", "mode", "result", "cases", "mean us per benchmark case", "geomean us")]
    for problem, entry in report["problems"].items():
        if entry.get("setup_error"):
            rows.append((problem, "-", "FAIL", "-", "setup: " + entry["setup_error"].splitlines()[0][:80], "-"))
            continue
        for mode, r in entry["runs"].items():
            means = r["means_us"]
            shown = " ".join("-" if m is None else f"{m:.2f}" for m in means) or "-"
            gm = f"{geomean(means):.2f}" if means and None not in means else "-"
            result = "pass" if r["passed"] else "TIMEOUT" if r["timed_out"] else "FAIL"
            rows.append((problem, mode, result, f"{r['checked']}/{r['total']}", shown, gm))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def evaluate(problems: list[str], modes: list[str], refdir: Path, work: Path, *, seed: int | None,
             timeout: float | None, exact_reference: bool) -> dict:
    """Set up and run every (problem, mode); the report's problems part."""
    out = {}
    for problem in problems:
        try:
            scratch = prepare_scratch(problem, refdir, work, exact_reference=exact_reference)
        except Exception as e:  # noqa: BLE001 - reported per problem (missing file, packaging refused)
            print(f"{problem}: setup failed: {type(e).__name__}: {e}", flush=True)
            out[problem] = {"setup_error": f"{type(e).__name__}: {e}", "runs": {}}
            continue
        variant = manifest_of(problem).get("eval_variant")
        if Path(scratch.eval_source).name != variant:
            print(f"{problem}: note: their task.yml runs {scratch.eval_source}, our manifest says {variant}")
        entry = out[problem] = {"eval_file": scratch.eval_source, "manifest_eval_variant": variant,
                                "scratch": str(scratch.dir), "files": scratch.files,
                                "reference": "ours (exact decode)" if exact_reference else "theirs", "runs": {}}
        for mode in modes:
            entry["runs"][mode] = run_eval(scratch, mode, timeout=timeout or TIMEOUT_S[mode], seed=seed)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problems", nargs="*", metavar="PROBLEM", help=f"default: {' '.join(PROBLEMS)}")
    ap.add_argument("--reference-kernels", type=Path, required=True, metavar="DIR",
                    help="a folder holding their problems/nvidia (checkout or extracted git archive)")
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(DEFAULT_MODES),
                    help="default: test benchmark (leaderboard: ~5-10 min per problem)")
    ap.add_argument("--seed", type=int, help="POPCORN_SEED, the secret seed (default: task.yml's seeds as they are)")
    ap.add_argument("--json", type=Path, metavar="OUT", help="write the report here")
    ap.add_argument("--timeout", type=float,
                    help="seconds per run (default: test 300, benchmark 300, leaderboard 1200)")
    ap.add_argument("--work", type=Path, help="where the scratch dirs go (default: a new temporary folder, kept)")
    ap.add_argument("--their-reference", action="store_true",
                    help="keep their ref_kernel (torch._scaled_mm on FP4: a B200 only)")
    args = ap.parse_args(argv)
    problems = args.problems or list(PROBLEMS)
    unknown = [p for p in problems if p not in PROBLEMS]
    if unknown:
        ap.error(f"PROBLEM: expected some of {', '.join(PROBLEMS)}, got {', '.join(unknown)}")
    refdir = args.reference_kernels.resolve()
    try:
        nvidia_dir(refdir)
    except FileNotFoundError as e:
        ap.error(str(e))
    modes = list(dict.fromkeys(args.modes))
    work = (args.work.resolve() if args.work else Path(tempfile.mkdtemp(prefix="official-eval-")))
    print(f"official_eval: {' '.join(problems)}; modes {' '.join(modes)}; their files from {refdir}; "
          f"scratch dirs in {work} (kept)", flush=True)
    report = {
        "tool": "scripts/official_eval.py",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "reference_kernels": {"dir": str(refdir), "revision": revision_of(refdir)},
        "seed": args.seed,
        "modes": modes,
        "pytorch_cuda_alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ALLOC_CONF),
        "problems": evaluate(problems, modes, refdir, work, seed=args.seed, timeout=args.timeout,
                             exact_reference=not args.their_reference),
    }
    report["environment"] = environment()
    print()
    print(table(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
        print(f"report: {args.json}")
    ok = all(not e.get("setup_error") and all(r["passed"] for r in e["runs"].values())
             for e in report["problems"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
