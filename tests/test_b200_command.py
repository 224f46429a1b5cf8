"""The B200 session (`nox -s b200`, harness/b200) on a machine without a B200: it says so and exits 0,
through its command-line entry `python -m scripts.b200` too, and its expected-time model covers every
benchmark case of every problem it runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.b200 import PROBLEMS
from harness.b200 import model as M
from harness.b200.model_table import expected_us, geomean
from harness.b200.session import b200_present, main

ROOT = Path(__file__).resolve().parent.parent


def test_without_a_b200_it_says_so_and_exits_0_through_the_script_entry():
    if b200_present()[0]:
        pytest.skip("a B200 is present: the command would run the whole tier")
    run = subprocess.run([sys.executable, "-m", "scripts.b200"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "nothing to run here" in run.stdout


def test_the_model_covers_every_benchmark_case(capsys):
    assert main(["--model"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    case_lines = [ln for ln in lines if " expected " in ln and "geomean" not in ln]
    assert len(case_lines) == sum(len(M.benchmark_cases(p)) for p in PROBLEMS)
    for problem in PROBLEMS:
        for case in M.benchmark_cases(problem):
            e = expected_us(problem, case)
            assert 0 < e["dram_us"] < e["expected_us"], (problem, case, e)


def test_the_model_prints_each_problems_geomean_against_the_sol(capsys):
    """The figures the kernels' docstrings used to carry: per problem the geomean of the expected
    times against the SOL's, and under each GEMM-family case its tiling."""
    assert main(["--model"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    for problem in PROBLEMS:
        cases = M.benchmark_cases(problem)
        mean = geomean(expected_us(problem, c)["expected_us"] for c in cases)
        sol = geomean(M.manifest(problem)["speed_of_light_b200_us"][: len(cases)])
        want = f"{problem:9} geomean: expected {mean:.2f} us, SOL {sol:.3f} us ({mean / sol:.2f}x)"
        assert lines.count(want) == 1, want
    tilings = [ln for ln in lines if ln.startswith("    128 x ")]
    assert len(tilings) == sum(len(M.benchmark_cases(p)) for p in ("gemm", "dual_gemm", "group_gemm"))
    # the first gemm shape: 128 x 64 tiles, one wave, 64 K blocks of 0.161 us (2/3 of the measured FP4 rate)
    assert "    128 x 64 tiles: 112 (1 wave), busiest CTA 64 K steps x 0.161 us;" in lines[lines.index(
        next(ln for ln in lines if ln.startswith("gemm ") and "k=16384" in ln)) + 1]


def test_the_gemm_splitk_estimate_models_what_its_chooser_picks():
    """The splitk_swap model runs the split and tile the variant's chooser gives each gemm case."""
    from problems.gemm.config import choose_sm100_splitk

    for case in M.benchmark_cases("gemm"):
        shape = tuple(case[x] for x in ("m", "n", "k", "l"))
        cfg, e = choose_sm100_splitk(*shape, M.SMS), M.core("gemm", "splitk_swap", case)
        assert (e["splits"], e["tile_n"]) == (cfg.splits, cfg.tile_n), case
        assert e["k_steps"] == -(-(shape[2] // 256) // cfg.splits)
    first = M.core("gemm", "splitk_swap", M.benchmark_cases("gemm")[0])  # 56 tiles x 2 splits
    assert (first["tiles"], first["k_steps"]) == (112, 32)


def test_the_harness_and_the_kit_import_nothing_from_scripts():
    """scripts/ holds command-line entries and tools; the session logic they run lives in harness/."""
    import ast

    found = []
    for path in sorted([*ROOT.glob("harness/**/*.py"), *ROOT.glob("shared/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] == "scripts"]
    assert found == []
