"""The leaderboard's correctness check (LEADERBOARD.md 7), reproduced message for message.

Shape first ("SIZE MISMATCH"), then |got - want| > atol + rtol*|want| in the tensors' own dtype, plus
NaN and +-inf mismatches (xor), at most five offending elements printed. Group GEMM checks the list
length first, then group by group and reports the first failing group only.
"""

from __future__ import annotations

import torch

PREFIX = "mismatch found! custom implementation doesn't match reference: "


@torch.no_grad()
def verbose_allclose(received: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float,
                     max_print: int = 5) -> list[str]:
    """Reasons the two differ (empty when they match), in the leaderboard's wording."""
    if not isinstance(received, torch.Tensor):
        return [f"output is a {type(received).__name__}, expected a torch.Tensor"]
    if received.shape != expected.shape:  # the leaderboard's words, then the sizes it leaves out
        return [f"SIZE MISMATCH: got {tuple(received.shape)}, expected {tuple(expected.shape)}"]
    if received.device != expected.device:
        received = received.to(expected.device)
    diff = torch.abs(received - expected)
    bad = diff > atol + rtol * torch.abs(expected)
    bad |= torch.isnan(received) ^ torch.isnan(expected)
    bad |= torch.isposinf(received) ^ torch.isposinf(expected)
    bad |= torch.isneginf(received) ^ torch.isneginf(expected)
    count = int(bad.count_nonzero().item())
    if count == 0:
        return []
    reasons = [f"Number of mismatched elements: {count}"]
    for index in torch.nonzero(bad)[:max_print]:
        i = tuple(index.tolist())
        reasons.append(f"ERROR AT {i}: {received[i]} {expected[i]}")
    if count > max_print:
        reasons.append(f"... and {count - max_print} more mismatched elements.")
    return reasons


def check_tensor(received, expected, rtol: float, atol: float) -> tuple[bool, str]:
    reasons = verbose_allclose(received, expected, rtol, atol)
    return (False, PREFIX + " ".join(reasons)) if reasons else (True, "")


def check_groups(received, expected: list[torch.Tensor], rtol: float, atol: float) -> tuple[bool, str]:
    if not isinstance(received, list | tuple):
        return False, f"output is a {type(received).__name__}, expected a list of {len(expected)} tensors"
    if len(received) != len(expected):
        return False, f"output length mismatch: got {len(received)}, expected {len(expected)}"
    for i, (got, want) in enumerate(zip(received, expected)):
        reasons = verbose_allclose(got, want, rtol, atol)
        if reasons:
            return False, f"{PREFIX}{i} {reasons}"
    return True, ""


def check(problem, data_copy, output) -> tuple[bool, str]:
    """Run the reference on `data_copy` (an untouched clone of the input) and compare with `output`."""
    expected = problem.reference.ref_kernel(data_copy)
    if isinstance(expected, list | tuple):
        return check_groups(output, list(expected), problem.rtol, problem.atol)
    return check_tensor(output, expected, problem.rtol, problem.atol)
