"""nvfp4_dual_gemm submission: `custom_kernel(data)` -> c = fp16(silu(A . B1^T) * (A . B2^T)).

Dispatch by the device of `a`:
    sm_90 (H100/H200) -> problems/dual_gemm/kernel_sm90.py: one fused launch (A read once per tile for
                         both products, exact FP4 x E4M3 -> fp16 decode, fp16 wgmma, fp32 silu * mul).
    sm_100 (B200)     -> problems/dual_gemm/kernel_sm100.py `prepare(data, cfg)`, imported only there.
    anything else     -> the portable path: exact decode (shared.nvfp4.dequantize), two fp32 matmuls
                         with TF32 off, silu * mul in fp32, one cast. Works on the CPU.
A CUDA shape the kernel cannot tile (L != 1, K % 256, N % 64) takes the portable path: it is
exact up to fp32 summation order, i.e. it meets the leaderboard tolerance like the reference does.
Wrong dtypes or inconsistent shapes raise TypeError / ValueError naming the tensor.
Kernels compile on first use per config and are cached for the life of the process; the checks and
the launch's marshalled arguments are kept per distinct tensors (shared.cute.runtime.call_prepared), so a
repeat call costs little more than the launch.
"""

from __future__ import annotations

import torch

from shared.cute.runtime import PreparedCalls, call_prepared, device_arch
from shared.inputs import check_block_scaled
from shared.refmath import block_scaled_products


def _portable(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    for i in range(c.shape[2]):
        p1, p2 = block_scaled_products(a, sfa, [(b1, sfb1), (b2, sfb2)], i)
        c[:, :, i] = (torch.nn.functional.silu(p1) * p2).to(torch.float16)
    return c


_prepared = PreparedCalls()
# positions in (a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted, sfb2_permuted, c) each kernel reads/writes
_READS = {"sm90": (0, 1, 2, 3, 4, 5, 9), "sm100": (0, 1, 2, 6, 7, 8, 9)}


def _prepare(data):
    m, n, k, l = check_block_scaled("dual_gemm", data, n_b=2)
    arch = device_arch(data[0].device)
    if arch == "sm90":
        from problems.dual_gemm import kernel_sm90
        from problems.dual_gemm.config import choose_sm90

        cfg = choose_sm90(m, n, k)
        if kernel_sm90.DualGemmSm90.can_implement(m, n, k, l, cfg):
            return kernel_sm90.prepare(data, cfg)
    elif arch == "sm100":
        try:
            from problems.dual_gemm import kernel_sm100
        except ImportError:
            kernel_sm100 = None
        if kernel_sm100 is not None and hasattr(kernel_sm100, "prepare"):
            from problems.dual_gemm.config import choose_sm100

            return kernel_sm100.prepare(data, choose_sm100(m, n, k, l, kernel_sm100.bs.device_sm_count(data[0])))
    return lambda: _portable(data)


def custom_kernel(data):
    return call_prepared(_prepared, data, _READS, _prepare)
