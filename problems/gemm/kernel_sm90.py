"""Hopper (sm_90a) block-scaled NVFP4 GEMM: C = fp16(A . B^T).

FP4 values and E4M3 scales are decoded exactly to fp16 inside the kernel (B straight into wgmma
register fragments, A once per CTA into a swizzled shared-memory ring) and multiplied with fp16
wgmma into fp32 accumulators; the epilogue rounds once to fp16. The mainloop is shared with
`dual_gemm` and described in shared/cute/sm90_gemm.py.

Constraints (can_implement): L = 1, K % 256 == 0, N % tile_n == 0 (M any: its last tile may be
partial), the leaderboard layouts. Run and time: `python -m scripts.tune_sm90 gemm` on an H100.
"""

from __future__ import annotations

import cutlass.cute as cute

from shared.cute.sm90_config import Sm90Config
from shared.cute.sm90_gemm import Sm90BlockScaledGemm
from shared.cute.sm90_host import launch_sm90, prepare_sm90


class GemmSm90(Sm90BlockScaledGemm):
    """One B operand; epilogue = the fp32 accumulator."""

    num_b = 1

    @cute.jit
    def epilogue_value(self, accs, i):
        return self.acc(accs, 0, i)


def prepare(data, config: Sm90Config):
    """The leaderboard tuple (checked by the caller: shared.inputs.check_block_scaled) bound to the
    compiled kernel, or None where the config does not take the shape; calling the result launches
    (c written in place)."""
    a, b, sfa, sfb, _, _, c = data
    m, n, k, l = a.shape[0], b.shape[0], 2 * a.shape[1], a.shape[2]
    if config.shape_error(m, n, k, l) is not None:
        return None
    return prepare_sm90(GemmSm90, config, a, (b,), sfa, (sfb,), c)


def run(data, config: Sm90Config | None = None):
    """One launch for direct callers and tests (config: the chooser's when None): the leaderboard
    tuple -> c, written in place. Raises ValueError where the config does not take the shape."""
    from problems.gemm.config import choose_sm90

    a, b, sfa, sfb, _, _, c = data
    config = config or choose_sm90(a.shape[0], b.shape[0], 2 * a.shape[1])
    return launch_sm90(GemmSm90, config, a, (b,), sfa, (sfb,), c)
