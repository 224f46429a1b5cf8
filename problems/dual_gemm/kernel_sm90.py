"""Hopper (sm_90a) fused dual GEMM: C = fp16(silu(A . B1^T) * (A . B2^T)), block-scaled NVFP4.

One launch, no intermediate tensor: each CTA loads A (and its scales) once per K tile and uses it for
both products; the two fp32 accumulators of a thread cover the same output positions, so
silu(acc1) * acc2 is formed in registers and stored once as fp16.

Mainloop (TMA producer warp, A-decoder warps, consumer warpgroups with B1/B2 decoded straight into
wgmma register fragments, or with `swap_ab` the roles swapped; exact FP4 x E4M3 -> fp16, fp16 wgmma
with fp32 accumulation) is shared with `gemm` and described in shared/cute/sm90_gemm.py.

Constraints (can_implement): L = 1, K % 256 == 0, N % tile_n == 0 (M % tile_m == 0 with swap_ab; the
other side may end in a partial tile), the leaderboard layouts. Run and time:
`python -m scripts.tune_sm90 dual_gemm` on an H100 (prints a table).
"""

from __future__ import annotations

import cutlass.cute as cute

from shared.cute.ptx import fast_silu_mul
from shared.cute.sm90_config import Sm90Config
from shared.cute.sm90_gemm import Sm90BlockScaledGemm
from shared.cute.sm90_host import launch_sm90, prepare_sm90


class DualGemmSm90(Sm90BlockScaledGemm):
    """Two B operands sharing A; epilogue silu(P1) * P2 in fp32."""

    num_b = 2

    @cute.jit
    def epilogue_value(self, accs, i):
        return fast_silu_mul(self.acc(accs, 0, i), self.acc(accs, 1, i))


def prepare(data, config: Sm90Config):
    """The leaderboard tuple (checked by the caller: shared.inputs.check_block_scaled) bound to the
    compiled kernel, or None where the config does not take the shape; calling the result launches
    (c written in place)."""
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    m, n, k, l = a.shape[0], b1.shape[0], 2 * a.shape[1], a.shape[2]
    if config.shape_error(m, n, k, l) is not None:
        return None
    return prepare_sm90(DualGemmSm90, config, a, (b1, b2), sfa, (sfb1, sfb2), c)


def run(data, config: Sm90Config | None = None):
    """One launch for direct callers and tests (config: the chooser's when None): the leaderboard
    tuple -> c, written in place. Raises ValueError where the config does not take the shape."""
    from problems.dual_gemm.config import choose_sm90

    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    config = config or choose_sm90(a.shape[0], b1.shape[0], 2 * a.shape[1])
    return launch_sm90(DualGemmSm90, config, a, (b1, b2), sfa, (sfb1, sfb2), c)
