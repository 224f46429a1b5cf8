"""The cheat suite (tests/impls/cheat_*.py): one impl per way of looking faster than it is, each rejected
with one `FAIL impl [case]: <check>: ...` line and exit 112, on the CPU where the trick exists there and
in the GPU tier otherwise. The guards of tests/test_guards.py (in-place, aliasing, out-of-bounds) have
their own cheats there."""

import pytest

from harness import eval as E
from harness.fresh_values import FRESH, OWN_CALL
from harness.integrity import REBINDING
from harness.timing import PERSISTING_L2, UNFINISHED
from tests.test_eval import IMPLS, run_eval

GEMV = "m: 128; k: 256; l: 1; seed: 7"
GROUP = "m: [40, 128]; n: [64, 64]; k: [256, 512]; g: 2; seed: 7"  # 15 inputs per sample: a cheap batch

CPU_CHEATS = [
    ("cheat_cache_by_version.py", "gemv", GEMV, FRESH),
    ("cheat_compute_ahead.py", "group_gemm", GROUP, OWN_CALL),
    ("cheat_patches_clock.py", "gemv", GEMV, REBINDING),
    ("cheat_patches_stats.py", "gemv", GEMV, REBINDING),
]
GPU_CHEATS = [
    ("cheat_side_queue.py", "gemv", "m: 4096; k: 7168; l: 2; seed: 7", UNFINISHED),
    ("cheat_persisting_l2.py", "gemv", GEMV, PERSISTING_L2),
]


def fail_lines(stderr: str, impl: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"FAIL {impl} [")]


def assert_rejected(r, impl: str, case: str, check: str) -> None:
    """One FAIL line for the impl, naming the case and the check; no traceback; exit 112."""
    assert r.returncode == E.EXIT_CHECK, r.stdout[-2000:] + r.stderr[-2000:]
    fail = fail_lines(r.stderr, impl)
    assert len(fail) == 1 and fail[0].startswith(f"FAIL {impl} [{case}]: {check}: "), r.stderr[-3000:]
    assert "Traceback" not in r.stderr


def test_the_gemv_cheats_are_rejected_in_leaderboard_mode():
    """Three cheats in one run (each in its own worker, as always): a cache keyed by version counter,
    a rebound clock, rewritten statistics."""
    cheats = [(str(IMPLS / cheat), check) for cheat, problem, _, check in CPU_CHEATS if problem == "gemv"]
    r = run_eval("gemv", "--mode", "leaderboard", "--device", "cpu", "--case", GEMV, "--popcorn",
                 "--impl", *[impl for impl, _ in cheats])
    for impl, check in cheats:
        assert_rejected(r, impl, GEMV, check)
    assert r.stdout.count("check: fail") == len(cheats)


def test_computing_ahead_is_rejected_and_honest_impls_pass_leaderboard_mode_over_a_batch():
    cheat = str(IMPLS / "cheat_compute_ahead.py")
    r = run_eval("group_gemm", "--mode", "leaderboard", "--device", "cpu", "--case", GROUP,
                 "--impl", "reference", "submission", cheat)
    assert_rejected(r, cheat, GROUP, OWN_CALL)
    assert "reference: pass (1/1 cases)" in r.stdout and "submission: pass (1/1 cases)" in r.stdout


def test_an_output_cache_is_rejected_in_benchmark_mode_too():
    """Benchmark mode gives fresh values every sample as well and rechecks random samples, at least one
    of the first three."""
    cheat = str(IMPLS / "cheat_cache_by_version.py")
    r = run_eval("gemv", "--mode", "benchmark", "--device", "cpu", "--impl", cheat, "--case", GEMV)
    assert_rejected(r, cheat, GEMV, FRESH)


@pytest.mark.gpu
@pytest.mark.parametrize("cheat,problem,case,check", CPU_CHEATS + GPU_CHEATS,
                         ids=[c[0][:-3] for c in CPU_CHEATS + GPU_CHEATS])
def test_each_cheat_is_rejected_on_the_gpu(cheat, problem, case, check):
    r = run_eval(problem, "--mode", "leaderboard", "--impl", str(IMPLS / cheat), "--case", case)
    assert_rejected(r, str(IMPLS / cheat), case, check)
