"""How far the sm90 GEMM kernels land from the products taken in fp64, at the benchmarks' longest K on stress data.

GPU tier (an sm_90 GPU); the CPU tier checks the yardstick itself. The manifest tests compare with the fp32
reference at the 1e-3 tolerance; this keeps the margin under it: rounding the fp64 result to fp16 alone costs up to
~0.49 of the tolerance, so an output past 0.6 means the kernel's sums lost ~1e-4 relative on their way. At K 14336
the dual GEMM's tensor-core sums do lose that much on a few stress outputs (as cuBLAS's fp16 GEMM does);
results/README.md, 2026-11-27, tenth session, and `lab/long_k_accuracy.py`.
"""

from __future__ import annotations

import pytest
import torch

from harness.problem import load_problem
from shared.refmath import block_scaled_products
from tests import sm90_common as C

MARGIN = 0.6  # of the tolerance atol + rtol * |result|


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("problem,m,n,k", [("dual_gemm", 512, 3072, 7168), ("gemm", 128, 7168, 16384)])
def test_sm90_outputs_stay_within_the_margin_at_the_benchmarks_longest_k(problem, m, n, k):
    prob = load_problem(problem)
    kernel = __import__(f"problems.{problem}.kernel_sm90", fromlist=["prepare"])
    config = __import__(f"problems.{problem}.config", fromlist=["choose_sm90"]).choose_sm90(m, n, k)
    data = prob.reference.generate_stress_input(m=m, n=n, k=k, l=1, seed=49, device="cuda")
    out = prob.reference.output_of(data)
    out.fill_(float("nan"))
    kernel.prepare(data, config)()
    torch.cuda.synchronize()
    want = C.fp64_products(problem, data)[0]
    err = (out[:, :, 0].double() - want).abs() / (prob.atol + prob.rtol * want.abs())
    worst = err.nan_to_num(float("inf")).max().item()
    assert worst <= MARGIN, (f"{problem} {m}x{n}x{k} ({config}): worst error {worst:.3f} of the tolerance, "
                             f"{int((err > MARGIN).sum())} outputs past {MARGIN}")


def test_the_fp64_products_are_the_fp32_references_in_more_bits():
    """CPU tier: the yardstick above is the references' own products (same decode, same operand order), in fp64,
    and fp64_products gives each problem's output within the leaderboard's tolerance of ref_kernel's."""
    prob = load_problem("dual_gemm")
    data = prob.reference.generate_stress_input(m=64, n=128, k=512, l=1, seed=3, device="cpu")
    a, b1, b2, sfa, sfb1, sfb2 = data[:6]
    ops = [(b1, sfb1), (b2, sfb2)]
    for p32, p64 in zip(block_scaled_products(a, sfa, ops, 0), block_scaled_products(a, sfa, ops, 0, fp64=True)):
        assert p64.dtype == torch.float64 and p64.shape == p32.shape == (64, 128)
        torch.testing.assert_close(p32.double(), p64, rtol=1e-5, atol=1e-5)
    for problem in ("gemm", "dual_gemm"):
        prob = load_problem(problem)
        data = prob.reference.generate_stress_input(m=64, n=128, k=512, l=1, seed=5, device="cpu")
        out, h1, h2 = C.fp64_products(problem, data)
        assert out.dtype == h1.dtype == h2.dtype == torch.float64 and out.shape == (64, 128)
        fp16 = prob.reference.ref_kernel(data)[:, :, 0].double()
        torch.testing.assert_close(fp16, out, rtol=prob.rtol, atol=prob.atol)
