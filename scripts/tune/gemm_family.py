"""The sm90 GEMM kernel's candidate configs (SM90_CANDIDATES in problems/<p>/config.py), for gemm and
dual_gemm.

For every manifest case (tests and benchmarks; --quick: the first two tests and the benchmarks) and
every candidate that takes it: a run on both generators, the output poisoned with NaN first,
compared with ref_kernel. Then the benchmark shapes timed: every candidate and the bf16-predecoded
peer interleaved, next to the speed of light at the H100's measured ceilings. --extra derives a
variant of a candidate (e.g. `--extra k1=default:debug_skip=1` times the kernel without the A
decode; a variant with debug_skip computes wrong results on purpose and is not checked).
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from functools import partial

import torch

from harness.problem import load_problem
from harness.progress import Progress
from harness.sol import Ceilings, sol_us
from scripts.tune.common import check_on_both_generators, describe_device, peer_calls, time_us, warm_gpu
from shared.cute.sm90_config import Sm90Config

KERNELS = {"gemm": "GemmSm90", "dual_gemm": "DualGemmSm90"}  # problems/<p>/kernel_sm90.py
H100 = Ceilings("H100", 3.0e12, 790e12, "docs/spec/H100-MEASURED.md")  # copy bandwidth, bf16 matmul rate
CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(Sm90Config))


def add_arguments(parser) -> None:
    parser.add_argument("--configs", default="", metavar="NAME,...",
                        help="candidates to check and time (default: every one of SM90_CANDIDATES)")
    parser.add_argument("--extra", action="append", default=[], metavar="NEW=BASE:field=value,...",
                        help="a variant of candidate BASE, e.g. s4=m64_wide:stages=4 (repeatable)")
    parser.add_argument("--only-extra", action="store_true", help="check and time only the --extra variants")


def candidates(problem: str) -> dict[str, Sm90Config]:
    return dict(importlib.import_module(f"problems.{problem}.config").SM90_CANDIDATES)


def derive_variant(spec: str, known: dict[str, Sm90Config]) -> tuple[str, Sm90Config]:
    """`NEW=BASE:field=value,...` -> (NEW, BASE's config with those fields replaced by integers)."""
    name, has_name, rest = spec.partition("=")
    base, _, assignments = rest.partition(":")
    if not has_name or not name or base not in known:
        raise ValueError(f"--extra {spec!r}: expected NEW=BASE:field=value,... with BASE one of {', '.join(known)}")
    changes = {}
    for assignment in filter(None, assignments.split(",")):
        field, has_value, value = assignment.partition("=")
        if field not in CONFIG_FIELDS or not has_value or not value.lstrip("-").isdigit():
            raise ValueError(f"--extra {spec!r}: expected field=integer with field one of {', '.join(CONFIG_FIELDS)}, "
                             f"got {assignment!r}")
        current = getattr(known[base], field)
        changes[field] = int(value) if current is None else type(current)(int(value))
    return name, dataclasses.replace(known[base], **changes)


def select_configs(problem: str, configs: str, extras: list[str], only_extra: bool) -> dict[str, Sm90Config]:
    """The configs to run, by name: the named candidates (all by default) and the --extra variants."""
    known = candidates(problem)
    names = [c for c in configs.split(",") if c] or list(known)
    unknown = [c for c in names if c not in known]
    if unknown:
        raise ValueError(f"--configs: {problem} has no config {', '.join(unknown)} (known: {', '.join(known)})")
    selected = {} if only_extra else {c: known[c] for c in names}
    selected.update(derive_variant(spec, known) for spec in extras)
    if not selected:
        raise ValueError("--only-extra: no --extra variant given")
    return selected


def compile_all(problem: str, kernel, configs: dict[str, Sm90Config]) -> None:
    from shared.cute.sm90_host import compile_sm90

    for name, cfg in configs.items():
        t0 = time.time()
        compile_sm90(kernel, cfg)
        print(f"[{problem}] compiled {name} {cfg} in {time.time() - t0:.1f}s", flush=True)


def check_all(problem, kernel, run, configs: dict[str, Sm90Config], quick: bool) -> int:
    """Every case x every config that takes it, on both generators; returns the number of failures."""
    failures = 0
    tests = problem.tests[:2] if quick else problem.tests
    for case in (*tests, *problem.benchmarks):
        m, n, k, l = case["m"], case["n"], case["k"], case["l"]
        for name, cfg in configs.items():
            if not kernel.can_implement(m, n, k, l, cfg) or cfg.debug_skip:
                continue
            for check in check_on_both_generators(problem, case, partial(run, config=cfg)):
                failures += not check.ok
                print(f"[{problem.name}] {name:7s} {check.data:11s} m={m:5d} n={n:5d} k={k:6d}: "
                      f"{'PASS' if check.ok else 'FAIL'} maxerr={check.max_err:.3g} {check.message[:160]}", flush=True)
    return failures


def time_benchmarks(problem, kernel, run, configs: dict[str, Sm90Config], samples: int) -> None:
    """One table row per benchmark shape: speed of light, the peer, each config's median us."""
    warm_gpu()
    print(f"\n[{problem.name}] timing (us, median, L2 flushed)")
    print(f"{'m':>5} {'n':>5} {'k':>6} | {'SOL':>6} {'bf16-peer':>11} | " + " ".join(f"{x:>8}" for x in configs))
    progress = Progress(f"[{problem.name}] timing", len(problem.benchmarks))
    for i, case in enumerate(problem.benchmarks):
        m, n, k, l = case["m"], case["n"], case["k"], case["l"]
        progress.step(i + 1, f"m={m} n={n} k={k}")
        data = problem.reference.generate_input(**case, device="cuda")
        takes = {name: kernel.can_implement(m, n, k, l, cfg) for name, cfg in configs.items()}
        subjects = [peer_calls(problem, [data])]
        subjects += [[partial(run, data, cfg)] for name, cfg in configs.items() if takes[name]]
        times = iter(time_us(subjects, samples))
        peer = next(times)
        row = [f"{next(times).median_us:.1f}" if takes[name] else "-" for name in configs]
        read, written, flops = problem.reference.cost(**case)
        print(f"{m:5d} {n:5d} {k:6d} | {sol_us(read + written, flops, H100):6.1f} {peer.median_us:11.1f} | "
              + " ".join(f"{x:>8}" for x in row), flush=True)
    progress.done()


def run(problem_name: str, args) -> int:
    """Check, then time; exit status 1 if any check failed."""
    problem = load_problem(problem_name)
    kmod = importlib.import_module(f"problems.{problem_name}.kernel_sm90")
    kernel = getattr(kmod, KERNELS[problem_name])
    torch.backends.cuda.matmul.allow_tf32 = False
    print(describe_device(), flush=True)
    compile_all(problem_name, kernel, args.selected)
    failures = 0 if args.no_check else check_all(problem, kernel, kmod.run, args.selected, args.quick)
    if not args.no_time:
        time_benchmarks(problem, kernel, kmod.run, args.selected, args.samples)
    return 1 if failures else 0
