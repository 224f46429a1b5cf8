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
    assert len(lines) == sum(len(b200.benchmark_cases(p)) for p in b200.PROBLEMS)
    for problem in b200.PROBLEMS:
        for case in b200.benchmark_cases(problem):
            e = b200.expected_us(problem, case)
            assert 0 < e["dram_us"] < e["expected_us"], (problem, case, e)
