"""What a `--runner modal` command will run, before anything starts: the jobs (one container and one GPU
each, run in parallel up to --max-gpus), their estimated GPU-minutes and what that costs.

    bench  one job per benchmark case of the problem (or per --case given), the evaluator in each
    b200   one job per problem (the B200 session, --problem P --tier skip) and one for the sm100 test tier
    test   one job per test file that has GPU tests (pytest -m "gpu or sm90 or sm100" FILE)

Reads the manifests and test files with PyYAML and the standard library only: no torch, no Modal.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness import options
from harness.runner.errors import EXIT_USAGE, RunnerError

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")


@dataclass(frozen=True)
class Gpu:
    modal_name: str  # Modal's gpu= string; "H100!" keeps Modal from upgrading the job to an H200
    usd_per_hour: float
    quoted: str  # when that price was quoted


# Modal's list prices per GPU-hour (base region, billed per second of a running container), as quoted by
# third-party pricing guides: the H100's $3.9492/h ($0.001097/s) verified on 2026-05-07, the B200's
# $6.25/h and the H200's $4.54/h in 2026 guides without a day. Not checked against modal.com/pricing
# from here (no network to Modal); region and non-preemptible multipliers raise them.
GPUS = {
    "B200": Gpu("B200", 6.25, "2026"),
    "H200": Gpu("H200", 4.54, "2026"),
    "H100": Gpu("H100!", 3.9492, "2026-05-07"),
}

# Estimated minutes per job, container start included (image pull from Modal's cache, unpacking the tree,
# CuTe DSL compiling the kernels: ~1 min). A guess to size the bill before it runs, not a measurement:
# no job has run on Modal from this repository yet. The results JSON records each job's real seconds.
# Modal's limit on a function's timeout, and what the runner adds to the job's own --timeout for the
# container to unpack the tree and probe the GPU first (Modal's timeout is the backstop, the job's own
# kill is what normally ends a job that runs too long).
MODAL_MAX_TIMEOUT_S = 24 * 3600
MODAL_TIMEOUT_MARGIN_S = 120
START_MINUTES = 1.0
WORK_MINUTES = {"bench case": 2.0, "b200 problem": 12.0, "b200 tier": 7.0, "test file": 4.0}
GPU_MARKERS = re.compile(r"pytest\.mark\.(gpu|sm90|sm100)\b")


@dataclass(frozen=True)
class Job:
    """One container. argv runs in the unpacked tree; `{python}` is the container's interpreter and
    `{out}` the path of the results JSON the command writes (none for pytest jobs)."""

    name: str
    argv: tuple[str, ...]
    kind: str  # a key of WORK_MINUTES

    @property
    def minutes(self) -> float:
        return START_MINUTES + WORK_MINUTES[self.kind]


@dataclass
class Plan:
    command: str  # bench, b200 or test
    gpu: str
    jobs: list[Job]
    timeout_s: int
    max_gpus: int
    problem: str | None = None  # bench only
    extra: list[str] = field(default_factory=list)  # the session's own arguments, as given

    @property
    def gpu_minutes(self) -> float:
        return sum(j.minutes for j in self.jobs)

    @property
    def cost_usd(self) -> float:
        return self.gpu_minutes / 60 * GPUS[self.gpu].usd_per_hour

    @property
    def wall_minutes(self) -> float:
        """Waves of at most max_gpus jobs, each as long as its longest job (a rough upper bound)."""
        jobs = sorted((j.minutes for j in self.jobs), reverse=True)
        return sum(jobs[i] for i in range(0, len(jobs), self.max_gpus))


def case_line(case: dict) -> str:
    """The leaderboard's case-line format (as harness.problem.describe_case), without importing torch."""
    fmt = lambda v: "[" + ", ".join(map(str, v)) + "]" if isinstance(v, list | tuple) else str(v)  # noqa: E731
    return "; ".join(f"{k}: {fmt(v)}" for k, v in case.items())


def manifest(problem: str) -> dict:
    if problem not in PROBLEMS:
        raise RunnerError(f"unknown problem {problem!r}: expected one of {', '.join(PROBLEMS)}", EXIT_USAGE)
    return yaml.safe_load((REPO / "problems" / problem / "manifest.yaml").read_text())


def take_option(args: list[str], name: str) -> tuple[list[str], list[str]]:
    """(the values of every `name VALUE` / `name=VALUE`, the other arguments); a missing value is a usage error."""
    try:
        return options.take_option(args, name)
    except options.MissingValue as e:
        raise RunnerError(str(e), EXIT_USAGE) from None


def bench_jobs(args: list[str]) -> tuple[str, list[Job]]:
    """`PROBLEM [eval options]`: one evaluator run per case, on the GPU, each writing its results JSON."""
    if not args or args[0].startswith("-"):
        raise RunnerError("usage: nox -s bench -- PROBLEM [eval options] --runner modal [runner options]", EXIT_USAGE)
    problem, rest = args[0], args[1:]
    spec = manifest(problem)
    cases, rest = take_option(rest, "--case")
    for option in ("--json", "--device"):  # the runner chooses these: the job's file, the job's GPU
        given, rest = take_option(rest, option)
        if given:
            raise RunnerError(f"{option} is set by --runner modal (results land in results/, on the GPU)", EXIT_USAGE)
    modes, rest = take_option(rest, "--mode")
    mode = modes[-1] if modes else "benchmark"
    if mode == "test":  # the test cases are quick: one job checks them all
        return problem, [Job(f"{problem} test cases", ("{python}", "-m", "harness.eval", problem, "--mode", "test",
                                                        "--device", "cuda", *rest, "--json", "{out}"), "bench case")]
    lines = cases or [case_line(c) for c in spec["benchmarks"]]
    return problem, [Job(f"{problem} [{line}]", ("{python}", "-m", "harness.eval", problem, "--mode", mode,
                                                 "--device", "cuda", "--case", line, *rest, "--json", "{out}"),
                         "bench case") for line in lines]


def b200_jobs(args: list[str]) -> list[Job]:
    """The B200 session (harness/b200) split: the sm100 test tier once, and each problem's evaluator steps
    in its own job."""
    refs, rest = take_option(args, "--reference-kernels")
    if refs:
        raise RunnerError("--reference-kernels names a local checkout, which --runner modal does not send; "
                          "run it on a B200 box, or without it", EXIT_USAGE)
    problems, rest = take_option(rest, "--problem")
    for p in problems:
        manifest(p)
    targets, rest = take_option(rest, "--dsl")
    if any(t != "runner" for t in targets):
        raise RunnerError("b200 --runner modal measures under the image's CuTe DSL, the leaderboard runner's "
                          "(locks/leaderboard.txt): --dsl runner only; for another, run `nox -s b200 -- --dsl dev` "
                          "on a machine with a B200", EXIT_USAGE)
    if rest:
        raise RunnerError(f"b200 --runner modal: unexpected arguments {' '.join(rest)}", EXIT_USAGE)
    jobs = [Job("sm100 test tier", ("{python}", "-m", "harness.b200", "--tier", "only", "--out", "{out}"), "b200 tier")]
    for p in problems or PROBLEMS:
        jobs.append(Job(f"b200 {p}", ("{python}", "-m", "harness.b200", "--problem", p, "--tier", "skip",
                                      "--out", "{out}"), "b200 problem"))
    return jobs


def gpu_test_files(repo: Path = REPO) -> list[str]:
    """The test files with a gpu, sm90 or sm100 test: each is one job."""
    return sorted(str(p.relative_to(repo)) for p in (repo / "tests").glob("test_*.py")
                  if GPU_MARKERS.search(p.read_text(encoding="utf-8")))


def test_jobs(args: list[str]) -> list[Job]:
    files = [a for a in args if a.startswith("tests/")]
    options = [a for a in args if not a.startswith("tests/")]
    return [Job(f"pytest {f}", ("{python}", "-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider",
                                "-m", "gpu or sm90 or sm100", f, *options), "test file")
            for f in (files or gpu_test_files())]


def make_plan(command: str, args: list[str], gpu: str, timeout_s: int, max_gpus: int) -> Plan:
    if gpu not in GPUS:
        raise RunnerError(f"GPU type {gpu!r} is not available: --gpu takes {', '.join(GPUS)}", EXIT_USAGE)
    if timeout_s <= 0 or max_gpus <= 0:
        raise RunnerError("--timeout and --max-gpus must be positive", EXIT_USAGE)
    if timeout_s + MODAL_TIMEOUT_MARGIN_S > MODAL_MAX_TIMEOUT_S:
        raise RunnerError(f"--timeout: at most {MODAL_MAX_TIMEOUT_S - MODAL_TIMEOUT_MARGIN_S} s (Modal's limit of 24 h "
                          f"less the {MODAL_TIMEOUT_MARGIN_S} s a job needs to start), got {timeout_s}", EXIT_USAGE)
    problem = None
    if command == "bench":
        problem, jobs = bench_jobs(args)
    elif command == "b200":
        if gpu != "B200":
            raise RunnerError(f"nox -s b200 runs the sm100 kernels: it needs --gpu B200, not {gpu}", EXIT_USAGE)
        jobs = b200_jobs(args)
    elif command == "test":
        jobs = test_jobs(args)
    else:
        raise RunnerError(f"unknown command {command!r}: bench, b200 or test", EXIT_USAGE)
    return Plan(command, gpu, jobs, timeout_s, max_gpus, problem, list(args))


def command_line(job: Job) -> str:
    """The job's command as a shell line (`python`: the container's interpreter; OUT.json: its results file)."""
    return shlex.join({"{python}": "python", "{out}": "OUT.json"}.get(a, a) for a in job.argv)


def describe(plan: Plan) -> str:
    """The plan as printed before anything starts (and by --dry-run)."""
    gpu = GPUS[plan.gpu]
    lines = [f"plan: {plan.command} on Modal, {len(plan.jobs)} job(s), one {plan.gpu} GPU each "
             f"(Modal gpu={gpu.modal_name!r}), at most {plan.max_gpus} at a time, timeout {plan.timeout_s} s per job"]
    width = max(len(j.name) for j in plan.jobs)
    for i, job in enumerate(plan.jobs, 1):
        lines.append(f"  job {i}/{len(plan.jobs)}  {job.name:<{width}}  ~{job.minutes:.0f} min  $ {command_line(job)}")
    lines.append(f"estimate: {plan.gpu_minutes:.0f} GPU-minutes x ${gpu.usd_per_hour:.2f}/GPU-hour "
                 f"(Modal's {plan.gpu} list price, as quoted in {gpu.quoted}) = ${plan.cost_usd:.2f}; "
                 f"~{math.ceil(plan.wall_minutes)} min wall clock")
    return "\n".join(lines)
