"""scripts/b200.py (`nox -s b200`) on a machine without a B200: it says so and exits 0, and its
expected-time model covers every benchmark case of every problem it runs."""

from __future__ import annotations

import pytest

from scripts import b200


def test_without_a_b200_it_says_so_and_exits_0(capsys):
    present, _ = b200.b200_present()
    if present:
        pytest.skip("a B200 is present: the command would run the whole tier")
    assert b200.main([]) == 0
    assert "nothing to run here" in capsys.readouterr().out


def test_the_model_covers_every_benchmark_case(capsys):
    assert b200.main(["--model"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    case_lines = [ln for ln in lines if " expected " in ln and "geomean" not in ln]
    assert len(case_lines) == sum(len(b200.benchmark_cases(p)) for p in b200.PROBLEMS)
    for problem in b200.PROBLEMS:
        for case in b200.benchmark_cases(problem):
            e = b200.expected_us(problem, case)
            assert 0 < e["dram_us"] < e["expected_us"], (problem, case, e)


def test_the_model_prints_each_problems_geomean_against_the_sol(capsys):
    """The figures the kernels' docstrings used to carry: per problem the geomean of the expected
    times against the SOL's, and under each GEMM-family case its tiling."""
    assert b200.main(["--model"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    for problem in b200.PROBLEMS:
        cases = b200.benchmark_cases(problem)
        mean = b200.geomean(b200.expected_us(problem, c)["expected_us"] for c in cases)
        sol = b200.geomean(b200.yaml_of(problem)["speed_of_light_b200_us"][: len(cases)])
        want = f"{problem:9} geomean: expected {mean:.2f} us, SOL {sol:.3f} us ({mean / sol:.2f}x)"
        assert lines.count(want) == 1, want
    tilings = [ln for ln in lines if ln.startswith("    128 x ")]
    assert len(tilings) == sum(len(b200.benchmark_cases(p)) for p in ("gemm", "dual_gemm", "group_gemm"))
    # the first gemm shape: 128 x 64 tiles, one wave, 64 K blocks of 0.161 us (2/3 of the measured FP4 rate)
    assert "    128 x 64 tiles: 112 (1 wave), busiest CTA 64 K steps x 0.161 us;" in lines[lines.index(
        next(ln for ln in lines if ln.startswith("gemm ") and "k=16384" in ln)) + 1]


def test_the_gemm_splitk_estimate_models_what_its_chooser_picks():
    """The splitk_swap model runs the split and tile the variant's chooser gives each gemm case."""
    from problems.gemm.config import choose_sm100_splitk
    from scripts import b200_model as M

    for case in b200.benchmark_cases("gemm"):
        shape = tuple(case[x] for x in ("m", "n", "k", "l"))
        cfg, e = choose_sm100_splitk(*shape, M.SMS), M.core("gemm", "splitk_swap", case)
        assert (e["splits"], e["tile_n"]) == (cfg.splits, cfg.tile_n), case
        assert e["k_steps"] == -(-(shape[2] // 256) // cfg.splits)
    first = M.core("gemm", "splitk_swap", b200.benchmark_cases("gemm")[0])  # 56 tiles x 2 splits
    assert (first["tiles"], first["k_steps"]) == (112, 32)
