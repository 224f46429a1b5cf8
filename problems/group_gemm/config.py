"""Tuning choices of the grouped GEMM on sm90: each group runs the GEMM kernel (problems/gemm), so a
group's config is the GEMM's choice for its shape.

The GEMM's unswapped configs take a partial last tile of A (M is their S side, whose missing rows
TMA fills with zeros), so a group with M = 80 runs as the GEMM would run M = 128: the chooser sees M
rounded up to 64. Its swapped config (A's rows whole 128-row tiles in registers) takes only M that
are multiples of 128; where the GEMM's choice cannot take the shape, SM90_M64 can (any M, N % 64,
K % 256, which the problem guarantees).
"""

from __future__ import annotations

from problems.gemm import config as gemm_config
from shared.cute.sm90_blockscaled_mainloop import Sm90BlockScaledGemm, Sm90Config


def choose_sm90(m: int, n: int, k: int) -> Sm90Config | None:
    """The config for one group (M, N, K), or None where no sm90 config takes it."""
    cfg = gemm_config.choose_sm90(-(-m // 64) * 64, n, k)
    for candidate in (cfg, gemm_config.SM90_M64):
        if Sm90BlockScaledGemm.can_implement(m, n, k, 1, candidate):
            return candidate
    return None
