"""nvfp4_dual_gemm submission: `custom_kernel(data)` -> c = fp16(silu(A . B1^T) * (A . B2^T)).

Dispatch by the device of `a` (shared.dispatch):
    sm_90 (H100/H200) -> problems/dual_gemm/kernel_sm90.py: one fused launch, A decoded once for
                         both B operands, exact FP4 x E4M3 -> fp16 decode, fp16 wgmma.
    sm_100 (B200)     -> problems/dual_gemm/kernel_sm100.py (tcgen05 block-scaled MMA, both
                         accumulators in tensor memory).
    anything else     -> the portable path: exact decode, fp32 products, silu in fp32, on any
                         device; also for shapes a kernel does not tile.
Wrong dtypes or inconsistent shapes raise TypeError / ValueError naming the tensor.
"""

from __future__ import annotations

from problems.dual_gemm.reference import ref_kernel
from shared.dispatch import Dispatch
from shared.inputs import check_block_scaled


def portable(data):
    """The reference's exact math, written into c."""
    return data[-1].copy_(ref_kernel(data))


def sm100_config(m: int, n: int, k: int, l: int, sms: int):
    """The sm100 config of a shape: the gates table's variant where a B200 run found one correct and
    fastest for it, else choose_sm100 (shared/sm100_variants.gate)."""
    from problems.dual_gemm.config import SM100_VARIANTS
    from shared.sm100_variants import gate

    return gate("dual_gemm", SM100_VARIANTS, (m, n, k, l), m, n, k, l, sms)


def kernel(arch: str, data, shape, sms: int):
    """The bound launch of the architecture's kernel, or None (no kernel takes the call)."""
    m, n, k, l = shape
    if arch == "sm90":
        from problems.dual_gemm import kernel_sm90
        from problems.dual_gemm.config import choose_sm90

        return kernel_sm90.prepare(data, choose_sm90(m, n, k))
    from problems.dual_gemm import kernel_sm100

    cfg = sm100_config(m, n, k, l, sms)
    if not kernel_sm100.NvFp4DualGemmSm100.can_implement(m, n, k, l, cfg):
        return None
    return kernel_sm100.prepare(data, cfg)


custom_kernel = Dispatch(
    check=lambda data: check_block_scaled("dual_gemm", data, n_b=2),
    kernel=kernel,
    portable=portable,
    # positions in (a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted, sfb2_permuted, c)
    reads={"sm90": (0, 1, 2, 3, 4, 5, 9), "sm100": (0, 1, 2, 6, 7, 8, 9)},
)
