"""Check and time the sm90 kernels' configs on a Hopper GPU, one problem per run.

    python -m scripts.tune_sm90 gemv      [--quick] [--samples N] [--no-check] [--no-time] [--diagnose]
    python -m scripts.tune_sm90 gemm      [--quick] [--samples N] [--no-check] [--no-time]
                                          [--configs NAME,...] [--extra NEW=BASE:field=value,...] [--only-extra]
    python -m scripts.tune_sm90 dual_gemm (the options of gemm)

Every config is first checked against the reference on the leaderboard and the stress generators,
its output poisoned with NaN, then timed on the benchmark shapes (L2 flushed before each sample,
the configs and the bf16-predecoded peer interleaved; scripts/tune/common.py). gemv tries the chosen
config and a set of variants per shape (scripts/tune/gemv.py); gemm and dual_gemm the candidates of
SM90_CANDIDATES in problems/<p>/config.py (scripts/tune/gemm_family.py). Exit status 1 if a check
failed, 2 for bad arguments. The runs' figures go to results/TUNING.md.

group_gemm's tile orders and configs are timed by scripts/group_order.py.
"""

from __future__ import annotations

import argparse
import sys

from scripts.tune import gemm_family, gemv

PROBLEMS = ("gemv", "gemm", "dual_gemm")
DEFAULT_SAMPLES = {"gemv": 40, "gemm": 30, "dual_gemm": 30}
QUICK = {
    "gemv": "the chosen config only",
    "gemm": "the first two test cases and the benchmarks only",
    "dual_gemm": "the first two test cases and the benchmarks only",
}
GROUP_GEMM = ("tune_sm90: group_gemm has its own tuner, scripts/group_order.py: "
              "python scripts/group_order.py [--configs] [--only NAME ...]")


def build_parser(problem: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m scripts.tune_sm90 {problem}",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=QUICK[problem])
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES[problem],
                        help="timed samples per config and shape (default: %(default)s)")
    parser.add_argument("--no-check", action="store_true", help="time only (the configs were checked in another run)")
    parser.add_argument("--no-time", action="store_true", help="check only (with --no-check: compile only)")
    if problem == "gemv":
        gemv.add_arguments(parser)
    else:
        gemm_family.add_arguments(parser)
    return parser


def parse_args(problem: str, argv: list[str]) -> argparse.Namespace:
    """The options of one problem's run; ValueError (one line) for a problem or config that does not
    exist. gemm and dual_gemm get `selected`: the configs to run, by name."""
    if problem == "group_gemm":
        raise ValueError(GROUP_GEMM)
    if problem not in PROBLEMS:
        raise ValueError(f"tune_sm90: unknown problem {problem!r}; expected one of {', '.join(PROBLEMS)} "
                         f"(group_gemm: scripts/group_order.py)")
    args = build_parser(problem).parse_args(argv)
    if args.samples < 1:
        raise ValueError(f"tune_sm90: --samples must be at least 1, got {args.samples}")
    if problem != "gemv":
        try:
            args.selected = gemm_family.select_configs(problem, args.configs, args.extra, args.only_extra)
        except ValueError as e:
            raise ValueError(f"tune_sm90: {e}") from None
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    try:
        args = parse_args(argv[0], argv[1:])
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    return gemv.run(args) if argv[0] == "gemv" else gemm_family.run(argv[0], args)


if __name__ == "__main__":
    sys.exit(main())
