"""A user's mistake on the command line of report, package and submit is one line and exit status 2,
and `nox -s bench | package | submit` says it before installing anything (harness/arguments.py: the
same checks, standard library only, run in nox's own Python)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import arguments as A
from harness import package as pk
from harness import report
from harness import submit as sm

REPO = Path(__file__).resolve().parent.parent
UNKNOWN = "unknown problem 'gemmv' (known: gemv, gemm, dual_gemm, group_gemm); the nearest is gemv"
GEMM = "results/h100-gemm.json"
GEMV = "results/h100-gemv.json"


def a_results_file(path: Path, problem: str) -> None:
    """The smallest results document the report reads: these tests must not need the committed results/
    (the container image leaves it out)."""
    doc = {"problem": problem, "leaderboard": f"nvfp4_{problem}", "mode": "benchmark", "data": "leaderboard",
           "date": "2026-11-25T02:07:55+00:00", "environment": {"device": "NVIDIA H100 80GB HBM3"},
           "ceilings": {}, "impls": {}}
    path.write_text(json.dumps(doc), encoding="utf-8")


def one_line(capsys) -> str:
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("argv, says", [
    (["results/nope.json"], "report: results/nope.json: no such file"),
    (["README.md"], "report: README.md: not a results JSON file (not JSON"),
    (["results"], "report: results: a directory, not a results JSON file"),
    (["pyproject.toml", GEMM], "report: pyproject.toml: not a results JSON file"),
    (["tests/fixtures/sm100_gates.json"], "not a results JSON file of the evaluator (no problem, mode"),
    ([], "report: no results files given"),
    (["--problem", "gemmv"], f"report: argument --problem: {UNKNOWN}"),
    (["--compare", GEMM, GEMV], f"report: {GEMM} is gemm, {GEMV} is gemv: nothing to compare"),
    (["--compare", GEMM], "argument --compare: expected 2 arguments"),
    (["--device", "B200", GEMM], "report: --device 'B200' matches 0 of the results' devices"),
])
def test_a_report_mistake_is_one_line_and_exit_2(argv, says, capsys, monkeypatch, tmp_path):
    (tmp_path / "results").mkdir()
    a_results_file(tmp_path / GEMM, "gemm")
    a_results_file(tmp_path / GEMV, "gemv")
    for name in ("README.md", "pyproject.toml", "tests/fixtures/sm100_gates.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((REPO / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    assert report.main(argv) == A.EXIT_USAGE
    line = one_line(capsys)
    assert says in line, line


@pytest.mark.parametrize("argv, says", [
    (["gemmv"], f"package: argument problem: {UNKNOWN}"),
    (["gemv", "--gpu", "H100"], "package: GPU 'H100' is not offered by nvfp4_gemv (one of ['NVIDIA'])"),
    (["dual_gemm", "--leaderboard", "nvfp4_dual"], "package: leaderboard 'nvfp4_dual' is not one of"),
    (["gemv", "--dsl", "new"], "package: argument --dsl: invalid choice: 'new'"),
    (["gemv", "--colour"], "package: unrecognized arguments: --colour"),
])
def test_a_package_mistake_is_one_line_and_exit_2(argv, says, capsys):
    assert pk.main(argv) == A.EXIT_USAGE
    assert one_line(capsys).startswith(says)


@pytest.mark.parametrize("argv, says", [
    (["gemmv", "--mode", "test"], f"submit: argument problem: {UNKNOWN}"),
    (["gemv", "--mode", "tset"], "submit: argument --mode: invalid choice: 'tset' (choose from 'test', 'benchmark'"),
    (["gemv"], "submit: the following arguments are required: --mode"),
    (["gemv", "--mode", "test", "--gpu", "H100"], "submit: GPU 'H100' is not offered by nvfp4_gemv"),
    (["gemv", "--mode", "test", "--timeout", "soon"], "submit: argument --timeout: expected a number of seconds"),
])
def test_a_submit_mistake_is_one_line_and_exit_2_before_the_prerequisites(argv, says, capsys, monkeypatch):
    """Without popcorn-cli, POPCORN_API_URL or a registration (each exit 3 if it came first), and past
    every deadline (exit 4): the arguments are checked first."""
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("POPCORN_API_URL", raising=False)
    monkeypatch.setenv("NVFP4_NOW", "2099-01-01 00:00")
    assert sm.main(argv) == A.EXIT_USAGE
    assert one_line(capsys).startswith(says)


def test_the_checks_nox_runs_first_need_neither_pyyaml_nor_torch():
    """nox's own Python has neither: the modules it imports before installing must not need them."""
    code = ("import sys; sys.modules['yaml'] = sys.modules['torch'] = None\n"
            "import harness.arguments, harness.package, harness.submit, harness.deadlines\n"
            "harness.submit.check_arguments(['gemv', '--mode', 'test', '--gpu', 'NVIDIA'])\n"
            "harness.package.check_arguments(['group_gemm', '--gpu', 'B200'])\n"
            "harness.arguments.check_eval_arguments(['gemm', '--impl', 'a.py', '--mode', 'leaderboard'])\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_the_manifest_read_without_pyyaml_agrees_with_pyyaml():
    import yaml

    for problem in A.PROBLEM_NAMES:
        full = yaml.safe_load((REPO / "problems" / problem / "manifest.yaml").read_text())
        want = {k: full[k] for k in ("name", "leaderboard", "gpus", "extra_leaderboards") if k in full}
        assert A.manifest_targets(problem) == want, problem


def test_the_early_check_takes_the_evaluators_modes():
    """`nox -s bench` checks --mode against arguments.MODES before the evaluator is installed."""
    from harness import eval as E

    (mode,) = [a for a in E.build_parser()._actions if a.dest == "mode"]
    assert tuple(mode.choices) == A.MODES


def nox(*args: str) -> subprocess.CompletedProcess:
    pytest.importorskip("nox", reason="nox is not installed in this environment")
    env = {k: v for k, v in os.environ.items() if k != "NVFP4_LOCK"}
    return subprocess.run([sys.executable, "-m", "nox", "--no-venv", "-f", str(REPO / "noxfile.py"), *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv, says", [
    (["-s", "submit", "--", "gemmv", "--mode", "test"], "Session submit aborted: submit: argument problem: unknown"),
    (["-s", "submit", "--", "gemv", "--mode", "tset"], "Session submit aborted: submit: argument --mode: invalid"),
    (["-s", "package", "--", "gemmv"], "Session package aborted: package: argument problem: unknown problem"),
    (["-s", "package", "--", "--gpu", "H100"], "Session package aborted: package: GPU 'H100' is not offered"),
    (["-s", "bench", "--", "gemmv"], "Session bench aborted: bench: argument problem: unknown problem 'gemmv'"),
    (["-s", "bench", "--", "gemv", "--runner", "modal", "--mode", "tset"], "bench: argument --mode: invalid"),
])
def test_nox_says_the_mistake_before_installing_anything(argv, says):
    run = nox(*argv)
    assert run.returncode == 1, run.stdout + run.stderr
    said = run.stdout + run.stderr
    assert says in said, said
    assert "install" not in said and "popcorn" not in said, said

