"""The checker reproduces the leaderboard's verdicts and messages."""

import torch

from harness import check as C

H = torch.float16


def test_pass_and_tolerance_edge():
    want = torch.tensor([1.0, 100.0, -2.0], dtype=H)
    assert C.check_tensor(want.clone(), want, 1e-3, 1e-3) == (True, "")
    one_ulp = torch.tensor([1.0009765625, 100.0625, -2.001953125], dtype=H)  # one fp16 ulp each
    assert C.check_tensor(one_ulp, want, 1e-3, 1e-3)[0]
    off = torch.tensor([1.0, 100.25, -2.0], dtype=H)
    ok, msg = C.check_tensor(off, want, 1e-3, 1e-3)
    assert not ok and msg == (C.PREFIX + "Number of mismatched elements: 1 ERROR AT (1,): 100.25 100.0")


def test_size_nan_inf_and_print_limit():
    want = torch.zeros(4, 4, dtype=H)
    assert C.check_tensor(torch.zeros(4, 3, dtype=H), want, 1e-3, 1e-3)[1].endswith(
        f"SIZE MISMATCH: got (4, 3), expected {tuple(want.shape)}")
    got = want.clone()
    got[0, 0] = float("nan")
    assert "ERROR AT (0, 0): nan 0.0" in C.check_tensor(got, want, 1e-3, 1e-3)[1]
    both_inf = torch.full((2,), float("inf"), dtype=H)
    assert C.check_tensor(both_inf, both_inf.clone(), 1e-3, 1e-3)[0]  # inf == inf passes
    assert not C.check_tensor(-both_inf, both_inf, 1e-3, 1e-3)[0]
    ok, msg = C.check_tensor(torch.ones(4, 4, dtype=H), want, 1e-3, 1e-3)
    assert "Number of mismatched elements: 16" in msg and msg.count("ERROR AT") == 5
    assert msg.endswith("... and 11 more mismatched elements.")


def test_groups_length_first_then_first_failing_group():
    a, b = torch.zeros(2, 2, 1, dtype=H), torch.ones(3, 2, 1, dtype=H)
    assert C.check_groups([], [a, b], 1e-3, 1e-3) == (False, "output length mismatch: got 0, expected 2")
    assert C.check_groups((a.clone(), b.clone()), [a, b], 1e-3, 1e-3) == (True, "")
    ok, msg = C.check_groups([a.clone(), b * 2], [a, b], 1e-3, 1e-3)
    assert not ok and msg.startswith(C.PREFIX + "1 ['Number of mismatched elements: 6'")
    assert not C.check_groups(a, [a], 1e-3, 1e-3)[0]


def test_non_tensor_output_is_a_clear_failure():
    ok, msg = C.check_tensor(None, torch.zeros(1, dtype=H), 1e-3, 1e-3)
    assert not ok and "NoneType" in msg
