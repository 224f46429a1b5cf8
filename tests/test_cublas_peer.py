"""The `cublas-predecoded` peers (problems/*/cublas_predecoded.py): they pass the evaluator's test mode and
guards (the portable path on the CPU), their GEMMs run with fp32 sums only and leave the caller's cuBLAS
flags as they were, and on a GPU their call is captured in a CUDA graph under --graph."""

from __future__ import annotations

import importlib
import json

import pytest
import torch

from harness import eval as E
from harness.worker import run_mode
from tests.test_eval import run_eval

PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
# small shapes, L = 2 where the problem has L (the batched GEMM and its [L, M, N] view of C)
CASES = {"gemv": "m: 128; k: 256; l: 2; seed: 7", "gemm": "m: 128; n: 128; k: 256; l: 2; seed: 7",
         "dual_gemm": "m: 128; n: 128; k: 256; l: 2; seed: 7",
         "group_gemm": "m: [40, 128]; n: [128, 256]; k: [256, 512]; g: 2; seed: 7"}

@pytest.mark.parametrize("problem", PROBLEMS)
@pytest.mark.parametrize("data", ["leaderboard", "stress"])
def test_the_peer_passes_test_mode_and_the_guards_on_the_cpu(problem, data):
    """The worker's test mode in this process: the leaderboard's check, then the in-place, aliasing and
    out-of-bounds guards. Stress data starts C as NaN, so an element the peer leaves unwritten fails."""
    _, path = E.resolve_impl(E.P.load_problem(problem), "cublas-predecoded")
    result = run_mode(problem, path, "cublas-predecoded", "test", [E.parse_case_line(CASES[problem])], "cpu", data)
    assert result["error"] is None
    assert [c["status"] for c in result["cases"]] == ["pass"], result["cases"][0]["error"]


def test_the_evaluator_knows_the_peer_by_name():
    with pytest.raises(E.UsageError, match=r"known: bf16-predecoded, cublas-predecoded, reference, submission"):
        E.resolve_impl(E.P.load_problem("gemm"), "cublas-peer")


@pytest.mark.parametrize("problem", PROBLEMS)
def test_the_gemms_sum_in_fp32_and_the_callers_flags_come_back(problem, monkeypatch):
    """Every GEMM of the call (on the CPU path, torch.matmul) sees fp16 reductions and fp16 accumulation
    off; after the call, and after a call whose GEMM raised, the flags are the caller's again, here on."""
    flags, matmul, seen = torch.backends.cuda.matmul, torch.matmul, []

    def spy(*args, **kwargs):
        seen.append((flags.allow_fp16_reduced_precision_reduction, flags.allow_fp16_accumulation))
        return matmul(*args, **kwargs)

    peer = importlib.import_module(f"problems.{problem}.cublas_predecoded")
    prob = E.P.load_problem(problem)
    data = prob.reference.generate_input(**E.parse_case_line(CASES[problem]), device="cpu")
    peer.prepare(data)  # the decode outside the window
    saved = (flags.allow_fp16_reduced_precision_reduction, flags.allow_fp16_accumulation)
    try:
        flags.allow_fp16_reduced_precision_reduction, flags.allow_fp16_accumulation = True, True
        monkeypatch.setattr(torch, "matmul", spy)
        peer.custom_kernel(data)
        assert seen and set(seen) == {(False, False)}
        assert (flags.allow_fp16_reduced_precision_reduction, flags.allow_fp16_accumulation) == (True, True)

        def raising(*args, **kwargs):
            raise RuntimeError("a GEMM failed on purpose")

        monkeypatch.setattr(torch, "matmul", raising)
        with pytest.raises(RuntimeError, match="on purpose"):
            peer.custom_kernel(data)
        assert (flags.allow_fp16_reduced_precision_reduction, flags.allow_fp16_accumulation) == (True, True)
    finally:
        monkeypatch.undo()
        flags.allow_fp16_reduced_precision_reduction, flags.allow_fp16_accumulation = saved


@pytest.mark.gpu
@pytest.mark.parametrize("problem", ["gemm", "dual_gemm", "group_gemm"])
def test_the_peer_is_captured_and_checked_under_graph(problem, tmp_path):
    """--graph replays the peer over rotating inputs, its outputs poisoned first and each checked
    against the reference; a peer that synchronized with the host (torch._grouped_mm's fp16 fallback
    does) would report `not capturable` instead of a time."""
    out = tmp_path / "r.json"
    r = run_eval(problem, "--mode", "benchmark", "--graph", "--impl", "cublas-predecoded", "--case", CASES[problem],
                 "--json", str(out))
    assert r.returncode == 0, r.stderr
    case = json.loads(out.read_text())["impls"]["cublas-predecoded"]["cases"][0]
    assert case["graph_error"] is None and case["graph_ns"] > 0
