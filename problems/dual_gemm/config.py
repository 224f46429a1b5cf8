"""Tuning choices of the dual GEMM kernels: frozen configs and the per-shape chooser.

sm90 numbers (H100, tune_sm90.py, L2 flushed, median; run 27 of the 2026-11-22 session) for the
benchmark shapes (256,4096,7168) (512,4096,7168) (256,3072,4096) (512,3072,7168), in us:
    SM90_DEFAULT   92.6  169.1  61.5  171.1
    SM90_WIDE_N    98.8  172.4  61.3  167.8
    cuBLAS bf16 on pre-decoded operands, same run: 58.7  79.9  32.1  62.3
"""

from __future__ import annotations

from shared.cute.sm90_blockscaled_mainloop import Sm90Config

# One consumer warpgroup (64 rows of B1 and of B2, 128 fp32 accumulators per thread) x 128 rows of A;
# 7 decoder warps publish a whole 256-K stage of decoded A per proxy fence into an 8-slot ring.
SM90_DEFAULT = Sm90Config(tile_m=128, n_cwg=1, n_dwg=2, stages=2, a_slots=8, consumer_regs=232,
                          producer_regs=56, single_mul=True, a_batch=True)
# M a multiple of 64 only: the same with 64 rows of A.
SM90_SMALL_M = Sm90Config(tile_m=64, n_cwg=1, n_dwg=2, stages=4, a_slots=8, consumer_regs=232,
                          producer_regs=56, single_mul=True, a_batch=True)
# Two consumer warpgroups (128 rows of B per CTA) x 64 rows of A: half the A decode per MMA.
SM90_WIDE_N = Sm90Config(tile_m=64, n_cwg=2, n_dwg=2, stages=3, a_slots=8, consumer_regs=200,
                         producer_regs=56, single_mul=True, a_batch=True)

SM90_CANDIDATES = {"default": SM90_DEFAULT, "small_m": SM90_SMALL_M, "wide_n": SM90_WIDE_N}


def choose_sm90(m: int, n: int, k: int) -> Sm90Config:
    """The config for one shape (all leaderboard shapes have M % 128 == 0)."""
    if m % 128 == 0:
        return SM90_DEFAULT
    return SM90_SMALL_M
