"""nvfp4_gemv submission: `custom_kernel(data)` for the leaderboard tuple (LEADERBOARD.md 3).

Dispatch by the device of `a` (shared.dispatch):
    sm_100 (B200)  -> problems/gemv/kernel_sm100.py (CUDA cores, hardware E2M1 conversion)
    sm_90 (H100)   -> problems/gemv/kernel_sm90.py  (CUDA cores, prmt + dp4a exact decode)
    anything else  -> the portable path: exact decode and an fp32 matmul in torch; also for inputs
                      a kernel does not take (non-standard strides, M not a multiple of the row
                      tile, misaligned views).
Wrong dtypes or inconsistent shapes raise TypeError / ValueError naming the tensor.
"""

from __future__ import annotations

from problems.gemv.reference import ref_kernel as portable  # exact decode, fp32, into c
from shared.dispatch import Dispatch
from shared.inputs import check_block_scaled


def sm100_config(m: int, k: int, l: int, sms: int):
    """The sm100 config of a shape: the gates table's variant where a B200 run found one correct and
    fastest for it, else choose_sm100 (shared/sm100_variants.gate)."""
    from problems.gemv.config import SM100_VARIANTS
    from shared.sm100_variants import gate

    return gate("gemv", SM100_VARIANTS, (m, k, l), m, k, l, sms)


def kernel(arch: str, data, shape, sms: int):
    """The bound launch of the architecture's kernel, or None (no kernel takes the call)."""
    m, _, k, l = shape
    if arch == "sm90":
        from problems.gemv import kernel_sm90
        from problems.gemv.config import choose_sm90

        return kernel_sm90.prepare(data, choose_sm90(m, k, l, sms), sms)
    from problems.gemv import kernel_sm100

    return kernel_sm100.prepare(data, sm100_config(m, k, l, sms), sms)


custom_kernel = Dispatch(
    check=lambda data: check_block_scaled("gemv", data, n_b=1, c_cols=1),
    kernel=kernel,
    portable=portable,
    # positions in (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c) each kernel reads or writes
    reads={"sm90": (0, 1, 2, 3, 6), "sm100": (0, 1, 2, 3, 6)},
)
