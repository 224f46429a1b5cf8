"""The evaluator end to end, on the CPU: the reference passes, wrong impls fail clearly, bad input
gives one line and the leaderboard's exit codes, benchmark mode writes the results JSON."""

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import eval as E
from tests.committed_results import committed_results

REPO = Path(__file__).resolve().parent.parent
IMPLS = REPO / "tests" / "impls"
SMALL = {"gemv": "m: 128; k: 256; l: 1; seed: 7", "gemm": "m: 128; n: 128; k: 256; l: 1; seed: 7",
         "dual_gemm": "m: 128; n: 128; k: 256; l: 1; seed: 7",
         "group_gemm": "m: [40, 128]; n: [128, 256]; k: [256, 512]; g: 2; seed: 7"}


def run_eval(*args, env=None, fresh=False) -> subprocess.CompletedProcess:
    """`python -m harness.eval ARGS`: its exit status, stdout and stderr. By default its main runs in this
    process with stdout and stderr captured (the impl still runs in a fresh worker process, as always),
    which spares a new interpreter importing torch; with `env` (or fresh=True) a new process, as a user
    runs it."""
    if env is not None or fresh:
        return subprocess.run([sys.executable, "-m", "harness.eval", *args], cwd=REPO, capture_output=True,
                              text=True, timeout=600, env={**os.environ, **(env or {})})
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = E.main(list(args))
        except SystemExit as e:  # argparse's usage errors
            code = e.code
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


# The CPU runs the manifest's test cases up to this many FLOPs (2*M*N*K summed over groups, x2 for the dual
# GEMM): the larger ones (gemm 2304x4608x7168: 152 GFLOP, three times with the guards) cost minutes of the
# CPU tier and test the same code; the GPU tier runs them all.
CPU_TEST_FLOPS = 8e9


def manifest_test_args(problem: str, device: str) -> list[str]:
    """--case lines of the manifest's tests (those within CPU_TEST_FLOPS on the CPU)."""
    p = E.P.load_problem(problem)
    cases = [c for c in p.tests if device != "cpu" or p.reference.cost(**c)[2] <= CPU_TEST_FLOPS]
    return [arg for c in cases for arg in ("--case", E.P.describe_case(c))]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("problem", ["gemv", "gemm", "dual_gemm", "group_gemm"])
def test_reference_and_peer_pass_the_manifest_tests(problem, device):
    cases = manifest_test_args(problem, device)
    assert len(cases) >= 2 * 3, cases  # at least three of the ten on the CPU too
    r = run_eval(problem, "--mode", "test", "--impl", "reference", "bf16-predecoded", "--device", device, "--popcorn",
                 *cases)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("check: pass") == 2 and f"test-count: {len(cases) // 2}" in r.stdout
    assert "test.0.status: pass" in r.stdout


@pytest.mark.parametrize("impl,needle", [
    ("gemv_low_nibble_only.py", "Number of mismatched elements"),
    ("gemv_last_row_unwritten.py", "Number of mismatched elements: 1 ERROR AT (127, 0, 0): nan"),
    ("raises.py", "custom_kernel raised RuntimeError: kernel exploded on purpose (at raises.py:"),
    ("wrong_dtype.py", "output dtype is torch.float32, expected torch.float16"),
    ("wrong_shape.py", "SIZE MISMATCH: got (128, 1), expected (128, 1, 1)"),
])
def test_wrong_impls_fail_stress_data_with_a_clear_line(impl, needle):
    r = run_eval("gemv", "--mode", "test", "--data", "stress", "--device", "cpu", "--impl", str(IMPLS / impl),
                 "--case", SMALL["gemv"], "--popcorn")
    assert r.returncode == E.EXIT_CHECK
    assert "check: fail" in r.stdout and needle in r.stderr
    assert "Traceback" not in r.stderr


def test_low_nibble_bug_passes_leaderboard_data_but_not_stress():
    ok = run_eval("gemv", "--device", "cpu", "--impl", str(IMPLS / "gemv_low_nibble_only.py"), "--case", SMALL["gemv"])
    assert ok.returncode == 0  # the leaderboard's GEMV data cannot see this bug...
    bad = run_eval("gemv", "--device", "cpu", "--data", "stress", "--impl", str(IMPLS / "gemv_low_nibble_only.py"),
                   "--case", SMALL["gemv"])
    assert bad.returncode == E.EXIT_CHECK  # ...the stress data can


@pytest.mark.parametrize("args,code,needle", [
    (["gemx"], E.EXIT_USAGE, "error: unknown problem 'gemx' (known: gemv, gemm, dual_gemm, group_gemm)"),
    (["gemv", "--impl", "nope"], E.EXIT_USAGE, "error: unknown impl 'nope' for gemv"),
    (["gemv", "--impl", "missing.py"], E.EXIT_USAGE, "error: impl file not found: missing.py"),
    (["gemv", "--impl", str(IMPLS / "no_kernel.py"), "--device", "cpu", "--case", SMALL["gemv"]], E.EXIT_USAGE,
     "defines no custom_kernel(data) function"),
    (["gemv", "--case", "m=1"], E.EXIT_BAD_CASE, "error: invalid test case: 'm=1'"),
    (["gemv", "--case", "m: 128; seed: 1"], E.EXIT_BAD_CASE, "missing ['k', 'l']"),
    # the leaderboard's case parser takes words; no generator does
    (["gemv", "--case", "m: abc; k: 256; l: 1; seed: 1"], E.EXIT_BAD_CASE, "m must be an integer, got 'abc'"),
    (["gemv", "--case", "m: 128; k: 256; l: 1; seed: abc", "--seed", "5"], E.EXIT_BAD_CASE,
     "seed must be an integer, got 'abc'"),
    (["gemv", "--case", "m: -4; k: 256; l: 1; seed: 1"], E.EXIT_BAD_CASE, "m must not be negative, got -4"),
    (["group_gemm", "--case", "m: 128; n: [128, 256]; k: [256, 256]; g: 2; seed: 1"], E.EXIT_BAD_CASE,
     "m must be a list of integers like [128, 256], got 128"),
    (["group_gemm", "--case", "m: [128]; n: [128, 256]; k: [256, 256]; g: 2; seed: 1"], E.EXIT_BAD_CASE,
     "the lists and g must agree on the number of groups, got m: 1, n: 2, k: 2, g: 2"),
    # the task's own rules are case-line errors (113), not an impl's failure (112)
    (["gemv", "--case", "m: 128; k: 100; l: 1; seed: 1"], E.EXIT_BAD_CASE,
     "k must be a positive multiple of 64 (the task's rule), got 100"),
    (["group_gemm", "--case", "m: [128]; n: [128]; k: [384]; g: 1; seed: 1"], E.EXIT_BAD_CASE,
     "every k must be a positive multiple of 256 (the task's rule), got 384 in [384]"),
    # a case whose inputs cannot fit: one line before anything is generated
    (["gemm", "--mode", "benchmark", "--device", "cpu", "--case", "m: 65536; n: 65536; k: 65536; l: 8; seed: 1"],
     E.EXIT_BAD_CASE, "GiB of cpu memory (50 inputs and their value sets)"),
    (["gemv", "--device", "cpu", "--case", SMALL["gemv"], "--json", "/tmp"], E.EXIT_USAGE,
     "error: --json /tmp: is a directory; give a file name"),
    (["gemv", "--device", "cpu", "--case", SMALL["gemv"], "--json", "README.md/r.json"], E.EXIT_USAGE,
     "error: --json README.md/r.json: README.md is a file, not a directory"),
])
def test_bad_input_gives_one_line(args, code, needle):
    r = run_eval(*args)
    assert r.returncode == code, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2


def test_benchmark_mode_on_cpu_writes_json_and_popcorn_lines(tmp_path):
    out = tmp_path / "r.json"
    read_fd, write_fd = os.pipe()
    r = subprocess.run([sys.executable, "-m", "harness.eval", "group_gemm", "--mode", "benchmark", "--device", "cpu",
                        "--impl", "reference", "--case", SMALL["group_gemm"], "--json", str(out)],
                       cwd=REPO, capture_output=True, text=True, timeout=600, pass_fds=(write_fd,),
                       env={**os.environ, "POPCORN_FD": str(write_fd)})
    os.close(write_fd)
    lines = os.read(read_fd, 1 << 20).decode().splitlines()
    assert r.returncode == 0, r.stderr
    assert "CPU wall clock" in r.stderr
    keys = dict(line.split(": ", 1) for line in lines)
    assert keys["benchmark-count"] == "1" and keys["check"] == "pass"
    assert float(keys["benchmark.0.mean"]) > 0 and int(keys["benchmark.0.runs"]) >= 3
    doc = json.loads(out.read_text())
    assert doc["environment"]["torch"] and "commit" in doc["environment"] and doc["date"]
    case = doc["impls"]["reference"]["cases"][0]
    assert case["stats"]["mean"] == pytest.approx(float(keys["benchmark.0.mean"]))
    assert doc["impls"]["reference"]["score_s"] == pytest.approx(case["stats"]["mean"] / 1e9)


def test_leaderboard_mode_runs_tests_then_rechecked_timing():
    r = run_eval("gemv", "--mode", "leaderboard", "--device", "cpu", "--impl", "reference", "--case", SMALL["gemv"],
                 "--popcorn")
    assert r.returncode == 0, r.stderr
    assert "benchmark.0.mean" in r.stdout and "check: pass" in r.stdout


def test_people_get_a_table_and_the_protocol_stays_off_stdout():
    """Without --popcorn (and no POPCORN_FD) stdout holds the table and one verdict line per impl;
    a CPU benchmark times the manifest's small cpu cases and says so."""
    r = run_eval("gemv", "--mode", "benchmark", "--device", "cpu", "--impl", "bf16-predecoded")
    assert r.returncode == 0, r.stderr
    assert "check:" not in r.stdout and "benchmark.0.mean" not in r.stdout
    assert "mean us" in r.stdout and "geomean (score)" in r.stdout and "bf16-predecoded: pass (2/2 cases)" in r.stdout
    assert "small cpu cases" in r.stderr
    assert "compare impls by median us" in r.stderr  # which figure to trust on a CPU
    for case in E.P.load_problem("gemv").cpu_cases:
        assert E.P.describe_case(case) in r.stdout


def test_a_packaged_file_for_another_problem_is_named_by_its_header(tmp_path):
    """`--impl dist/gemm/submission.py` against gemv: its #!POPCORN line says which leaderboard it is for."""
    packaged = tmp_path / "submission.py"
    packaged.write_text("#!POPCORN leaderboard nvfp4_gemm\n#!POPCORN gpu NVIDIA\n\n"
                        "def custom_kernel(data):\n    return data\n")
    r = run_eval("gemv", "--device", "cpu", "--impl", str(packaged), "--case", SMALL["gemv"])
    assert r.returncode == E.EXIT_USAGE
    assert r.stderr.strip() == (f"error: {packaged} is a submission to nvfp4_gemm (its #!POPCORN leaderboard line), "
                                "not to gemv's nvfp4_gemv")


def test_graph_on_the_cpu_says_it_is_ignored():
    r = run_eval("gemv", "--mode", "benchmark", "--device", "cpu", "--impl", "reference", "--case", SMALL["gemv"],
                 "--graph")
    assert r.returncode == 0, r.stderr
    assert "note: --graph times CUDA-graph replays: it needs a CUDA device and is ignored on the CPU" in r.stderr


def test_every_submission_imports_alone():
    """Real callers import a submission by itself: no leaderboard `task` module beside it."""
    code = "; ".join(f"import problems.{p}.submission" for p in E.P.PROBLEM_NAMES)
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def test_case_parser_and_secret_seed():
    case = E.parse_case_line("g: 2; k: [4096, 4096]; m: (192, 320); n: [3072, 3072]; seed: 1111")
    assert case == {"g": 2, "k": (4096, 4096), "m": (192, 320), "n": (3072, 3072), "seed": 1111}
    assert E.secret_seed({"seed": 1}, 2)["seed"] == 1 + 3 * 4 // 2
    with pytest.raises(E.BadCase):
        E.parse_case_line("m: 1.5; seed: 1")


@pytest.mark.gpu
def test_gpu_benchmark_with_graph_metric_and_ceilings(tmp_path):
    out = tmp_path / "r.json"
    r = run_eval("gemv", "--mode", "benchmark", "--impl", "bf16-predecoded",
                 "--case", "m: 1024; k: 4096; l: 2; seed: 3", "--graph", "--json", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    case = doc["impls"]["bf16-predecoded"]["cases"][0]
    assert doc["ceilings"]["source"] == "measured" and case["sol_us"] > 0 and case["read_once_us"] > 0
    assert case["graph_ns"] and case["graph_ns"] > 0


def test_report_renders_committed_results():
    from harness import report

    for path in committed_results():
        text = report.render(str(path))
        assert "geomean (score)" in text and "mean us" in text, path


def test_report_draws_the_newest_results_per_problem(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the report's picture needs it)")
    from harness import report

    paths = committed_results()
    docs = report.newest_per_problem(report.timed_results(paths))
    assert [d["problem"] for d in docs] == [p for p in E.P.PROBLEM_NAMES if any(f"-{p}-" in x for x in paths)]
    for d in docs:  # newest: no file of the same problem has a later date
        assert all(json.load(open(p))["date"] <= d["date"] for p in paths if f"-{d['problem']}-" in p)
    out = tmp_path / "summary.png"
    assert report.main(["--plot", str(out), *paths]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000


def test_help_gives_every_default():
    """`--help` names the default of each option that has one (--mode test, --data leaderboard, ...)."""
    for action in E.build_parser()._actions:
        if action.default in (None, False, argparse.SUPPRESS):
            continue
        shown = " ".join(action.default) if isinstance(action.default, list) else str(action.default)
        assert action.help and f"default: {shown}" in action.help, action.option_strings
