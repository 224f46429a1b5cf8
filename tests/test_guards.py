"""The evaluator's guards (harness/guards.py, run by test and leaderboard mode): their pieces on small
tensors, a deliberately cheating impl per guard rejected by that guard, and the real impls passing."""

import pytest
import torch

from harness import guards as G
from harness import problem as P
from shared import generators as gen
from tests.test_eval import IMPLS, run_eval

# Cases whose A storage can hold C's fp16 bytes (the aliasing cheat needs it: K >= 4 N).
CHEAT_CASES = {"gemv": "m: 128; k: 256; l: 2; seed: 7",
               "group_gemm": "m: [40, 128]; n: [64, 64]; k: [256, 512]; g: 2; seed: 7"}


def test_guarded_c_keeps_shape_strides_and_values_and_sees_writes_on_both_sides():
    c = gen.fresh_c(3, 8, 4, "cpu")  # the leaderboard's (L, M, N) -> (M, N, L) view
    g = G.GuardedOutput(c)
    assert g.view.shape == c.shape and g.view.stride() == c.stride() and torch.equal(g.view, c)
    assert g.view.untyped_storage().nbytes() == c.untyped_storage().nbytes() + 2 * G.GUARD_BYTES
    assert g.damage() is None
    g.view.fill_(1.0)  # writing all of C is what a kernel must do
    assert g.damage() is None
    g.buffer[g.end + 2] = 0.0
    assert g.damage() == "1 element(s) outside C written, the first 3 past C's last element"
    g.buffer[g.before - 1] = 0.0
    assert g.damage() == "2 element(s) outside C written, the first 1 before C's first element"


def test_guarded_c_with_gaps_between_its_elements():
    c = torch.zeros(4, 6)[:, ::2]  # strides (6, 2): every other element is not C's
    g = G.GuardedOutput(c)
    assert g.view.stride() == (6, 2) and g.damage() is None
    g.buffer[g.before + 1] = 5.0
    assert g.damage() == "1 element(s) outside C written, the first in a gap between C's elements, 1 after its first"


def test_aliasing_sees_any_view_of_an_input_storage_and_nothing_else():
    a, b = torch.zeros(64, dtype=torch.uint8), torch.zeros(8)
    inputs = list(G.tensors_in((a, [b])))
    assert [p for p, _ in inputs] == ["data[0]", "data[1][0]"]
    assert G.aliasing_error(torch.zeros(8), inputs) is None
    assert G.aliasing_error(b[4:].clone(), inputs) is None
    assert G.aliasing_error(a[32:].view(torch.float16), inputs).startswith(
        "aliasing guard: output 0 shares memory with the input data[0] ((64,) torch.uint8)")
    assert "output 1 shares memory with the input data[1][0]" in G.aliasing_error([torch.zeros(1), b[7:]], inputs)


def test_guarded_outputs_replace_only_the_cs_and_a_is_found_per_group():
    data = P.load_problem("group_gemm").reference.generate_input((40, 128), (64, 64), (256, 512), 2, 7, "cpu")
    cs = [c for _, _, c in data[0]]
    guarded, guards = G.guarded_outputs(data, cs)
    assert all(c is g.view for (_, _, c), g in zip(guarded[0], guards, strict=True))
    rest = [(x, y) for (_, x), (_, y) in zip(G.tensors_in(guarded[1:]), G.tensors_in(data[1:]), strict=True)]
    assert len(rest) == 8 and all(x is y for x, y in rest)  # the scales: the same objects
    assert all(x is y for x, (y, _, _) in zip(G.a_tensors(guarded), data[0], strict=True))


@pytest.mark.parametrize("problem", sorted(CHEAT_CASES))
@pytest.mark.parametrize("cheat,guard", [("cheat_cache_by_tuple_id.py", G.IN_PLACE),
                                         ("cheat_output_aliases_input.py", G.ALIASING),
                                         ("cheat_writes_past_c.py", G.OUT_OF_BOUNDS)])
def test_each_cheat_is_rejected_by_its_guard(problem, cheat, guard):
    r = run_eval(problem, "--mode", "test", "--device", "cpu", "--impl", str(IMPLS / cheat),
                 "--case", CHEAT_CASES[problem], "--popcorn")
    assert r.returncode == 112, r.stderr
    fail = [line for line in r.stderr.splitlines() if line.startswith("FAIL")]
    assert len(fail) == 1 and f"[{CHEAT_CASES[problem]}]: {guard}: " in fail[0], r.stderr
    assert "check: fail" in r.stdout and "Traceback" not in r.stderr


def test_leaderboard_mode_runs_the_guards():
    r = run_eval("gemv", "--mode", "leaderboard", "--device", "cpu", "--impl",
                 str(IMPLS / "cheat_cache_by_tuple_id.py"), "--case", CHEAT_CASES["gemv"])
    assert r.returncode == 112 and f"{G.IN_PLACE}: " in r.stderr


@pytest.mark.parametrize("problem", P.PROBLEM_NAMES)
def test_reference_and_submission_pass_every_guard_on_the_small_cases(problem):
    """On the CPU the submissions take their portable torch path; on a GPU, the same command checks
    the kernels."""
    cases = [P.describe_case(c) for c in P.load_problem(problem).cpu_cases]
    r = run_eval(problem, "--mode", "test", "--device", "cpu", "--impl", "reference", "submission",
                 *[arg for case in cases for arg in ("--case", case)])
    assert r.returncode == 0, r.stderr
    assert f"reference: pass ({len(cases)}/{len(cases)} cases)" in r.stdout
    assert f"submission: pass ({len(cases)}/{len(cases)} cases)" in r.stdout
