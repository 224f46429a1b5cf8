"""scripts/tune_sm90.py runs only on a Hopper GPU; here, on the CPU, it must still import and parse
every problem's options, and refuse a wrong problem, config or variant in one line with exit 2."""

from __future__ import annotations

import pytest

from scripts import tune_sm90
from shared.cute.sm90_config import Sm90Config


def test_gemv_options():
    args = tune_sm90.parse_args("gemv", ["--quick", "--diagnose", "--samples", "7", "--no-check"])
    assert (args.quick, args.diagnose, args.samples, args.no_check, args.no_time) == (True, True, 7, True, False)
    assert tune_sm90.parse_args("gemv", []).samples == 40


@pytest.mark.parametrize("problem", ["gemm", "dual_gemm"])
def test_gemm_family_runs_every_candidate_by_default(problem):
    from scripts.tune.gemm_family import candidates

    args = tune_sm90.parse_args(problem, ["--no-time"])
    assert args.no_time and not args.no_check and args.samples == 30
    assert args.selected == candidates(problem)


def test_configs_and_extra_variants():
    from problems.gemm.config import SM90_M64_WIDE

    args = tune_sm90.parse_args("gemm", ["--configs", "m128,m64", "--extra", "s4=m64_wide:stages=4,swap_ab=1"])
    assert list(args.selected) == ["m128", "m64", "s4"]
    s4 = args.selected["s4"]
    assert isinstance(s4, Sm90Config) and s4.stages == 4 and s4.swap_ab is True
    assert s4.smem_rows == SM90_M64_WIDE.smem_rows  # the other fields are the base's
    only = tune_sm90.parse_args("dual_gemm", ["--only-extra", "--extra", "k1=default:debug_skip=1"])
    assert list(only.selected) == ["k1"] and only.selected["k1"].debug_skip == 1


@pytest.mark.parametrize("argv, says", [
    (["nope"], "unknown problem 'nope'"),
    (["group_gemm"], "scripts/group_order.py"),
    (["gemm", "--configs", "m128,wide"], "gemm has no config wide"),
    (["dual_gemm", "--extra", "x=nobase:stages=3"], "BASE one of default"),
    (["dual_gemm", "--extra", "x=wide:stages=three"], "got 'stages=three'"),
    (["dual_gemm", "--extra", "x=wide:stagez=3"], "got 'stagez=3'"),
    (["gemm", "--only-extra"], "no --extra variant given"),
    (["gemv", "--samples", "0"], "--samples must be at least 1"),
])
def test_a_wrong_name_is_one_line_and_exit_2(argv, says, capsys):
    assert tune_sm90.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and says in err, err


def test_no_problem_prints_the_usage_and_exits_2(capsys):
    assert tune_sm90.main([]) == 2
    assert "python -m scripts.tune_sm90 gemv" in capsys.readouterr().err


def test_the_check_passes_the_reference_and_catches_an_unwritten_output():
    """The tuners' check on the CPU, with the reference standing in for a kernel: it passes on both
    generators, and an impl that leaves the (NaN-poisoned) output unwritten fails on both."""
    from harness.problem import load_problem
    from scripts.tune.common import check_on_both_generators

    problem = load_problem("gemv")
    case = {"m": 128, "k": 256, "l": 1, "seed": 1111}

    def writes(data):
        data[-1].copy_(problem.reference.ref_kernel(data))
        return data[-1]

    good = check_on_both_generators(problem, case, writes, device="cpu")
    assert [(c.data, c.ok) for c in good] == [("leaderboard", True), ("stress", True)]
    bad = check_on_both_generators(problem, case, lambda data: data[-1], device="cpu")
    assert [(c.data, c.ok) for c in bad] == [("leaderboard", False), ("stress", False)]
    assert all(c.max_err == 1e9 and c.message for c in bad)
