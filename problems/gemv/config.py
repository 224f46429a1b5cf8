"""Tuning knobs of the GEMV kernels and the per-shape choice.

A config is a frozen dataclass, so it can be part of a compile-cache key. `choose_sm90` and
`choose_sm100` look only at the problem shape and the SM count. The sm90 configs come from H100
timing runs (`python -m scripts.tune_sm90 gemv`; their figures are in results/TUNING.md), the sm100
config from a bytes-in-flight estimate (B200).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from shared.devices import B200_SM_COUNT, H100_SM_COUNT
from shared.sm100_variants import Sm100Variant

WARP = 32
CHUNK_BYTES = 16  # one 16-byte load per lane = 32 FP4 values = 2 scale blocks


@dataclass(frozen=True)
class GemvConfig:
    """How the work of one batched GEMV is cut.

    warps:        warps per CTA.
    k_warps:      warps of a CTA that share one row range and split K between them (intra-CTA
                  split-K, reduced through shared memory); warps // k_warps row groups per CTA.
    rows:         row groups each warp carries at once (independent loads in flight per k-step).
    k_unroll:     k-steps whose loads are issued together before any of them is used.
    ctas_per_sm:  persistent grid size target per batch slice: grid.x = ceil(ctas_per_sm*SMs/L)
                  capped by the number of row tiles; 0 = one CTA per row tile.
    prefetch:     k-blocks of A and SFA kept in flight ahead of the loads through L2 prefetches
                  (fire and forget: no registers); 0 = none.
    min_ctas_per_sm: CTAs per SM the register allocation must allow (launch bound); 0 = no bound.
                  Not used by the choosers: bounds of 3-4 made ptxas spill (compiled only).
    """

    warps: int = 8
    k_warps: int = 1
    rows: int = 4
    k_unroll: int = 2
    ctas_per_sm: int = 0
    prefetch: int = 1
    min_ctas_per_sm: int = 0

    def __post_init__(self):
        for name in ("warps", "k_warps", "rows", "k_unroll"):
            if getattr(self, name) < 1:
                raise ValueError(f"GemvConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.warps % self.k_warps:
            raise ValueError(f"GemvConfig: k_warps={self.k_warps} must divide warps={self.warps}")
        if self.warps * WARP > 1024:
            raise ValueError(f"GemvConfig: {self.warps} warps exceed 1024 threads per CTA")
        if self.min_ctas_per_sm < 0 or self.min_ctas_per_sm * self.warps * WARP > 2048:
            raise ValueError(f"GemvConfig.min_ctas_per_sm={self.min_ctas_per_sm} does not fit 2048 threads/SM")
        if self.prefetch < 0:
            raise ValueError(f"GemvConfig.prefetch must be >= 0, got {self.prefetch}")
        if self.ctas_per_sm < 0:
            raise ValueError(f"GemvConfig.ctas_per_sm must be >= 0, got {self.ctas_per_sm}")


def lanes_per_row(k: int) -> int:
    """Lanes of a warp that share one row: the largest power of two <= 32 dividing K/32 chunks."""
    chunks = k // (2 * CHUNK_BYTES)
    lanes = WARP
    while lanes > 1 and chunks % lanes:
        lanes //= 2
    return lanes


def tile_rows(cfg: GemvConfig, k: int) -> int:
    """Rows of A one CTA finishes per tile."""
    return (cfg.warps // cfg.k_warps) * cfg.rows * (WARP // lanes_per_row(k))


def fits(cfg: GemvConfig, m: int, k: int) -> bool:
    """The kernels need whole row tiles and the same number of k-steps in every warp."""
    if k % 64 or m < 1:
        return False
    lanes = lanes_per_row(k)
    steps_total = k // (2 * CHUNK_BYTES) // lanes
    return m % tile_rows(cfg, k) == 0 and steps_total % cfg.k_warps == 0


def _choose(m: int, k: int, l: int, sms: int, base: GemvConfig, fallback_ctas: int) -> GemvConfig:
    rows_total = m * l
    # Enough warps along K that even a short, wide matrix gives every SM ~8 warps of work.
    k_warps = 1
    while (k_warps < base.warps and rows_total * k_warps < 8 * sms * base.rows
           and fits(replace(base, k_warps=2 * k_warps), m, k)):
        k_warps *= 2
    # Split-K CTAs are one tile each: persistence with k_warps > 1 is implemented but was not
    # run on a GPU yet, and short-wide shapes have few tiles anyway.
    cfg = replace(base, k_warps=k_warps, ctas_per_sm=base.ctas_per_sm if k_warps == 1 else 0)
    rows = cfg.rows
    while rows > 1 and not fits(cfg, m, k):
        rows //= 2
        cfg = replace(cfg, rows=rows)
    warps = cfg.warps
    while warps > cfg.k_warps and not fits(cfg, m, k):
        warps //= 2
        cfg = replace(cfg, warps=warps)
    if not fits(cfg, m, k):
        cfg = GemvConfig(1, 1, 1, 1, fallback_ctas, base.prefetch)
    return cfg


# Chosen for K >= 8192: 27.3 us per call (8 back to back) on 7168x16384x1, x1.08 of reading its input
# once (H100, 2026-11-22; results/TUNING.md).
SM90_LONG_K = GemvConfig(warps=16, k_warps=1, rows=2, k_unroll=2, ctas_per_sm=1, prefetch=1)
# Chosen for shorter K: 49.1 us on 4096x7168x8 and 15.8 on 7168x2048x4, x1.06 and x1.19 of reading the
# input once (H100, 2026-11-22; results/TUNING.md).
SM90_DEFAULT = GemvConfig(warps=8, k_warps=1, rows=1, k_unroll=4, ctas_per_sm=3, prefetch=1)
# B200 (148 SMs, ~8 TB/s): about 2.7x the H100's bandwidth-delay product per SM, so twice the loads
# per warp in registers (2 rows x 4 k-steps) with the H100's persistence. Not measured (no B200).
SM100_DEFAULT = GemvConfig(warps=8, k_warps=1, rows=2, k_unroll=4, ctas_per_sm=3, prefetch=1)


def choose_sm90(m: int, k: int, l: int, sms: int = H100_SM_COUNT) -> GemvConfig:
    return _choose(m, k, l, sms, SM90_LONG_K if k >= 8192 else SM90_DEFAULT, 0)


def choose_sm100(m: int, k: int, l: int, sms: int = B200_SM_COUNT) -> GemvConfig:
    return _choose(m, k, l, sms, SM100_DEFAULT, 0)


# The sm100 variants (shared/sm100_variants.py): the submission's gate serves a variant only where the
# B200 gates table found it correct and fastest for the shape; "conservative" is choose_sm100.
SM100_VARIANTS = {
    "conservative": Sm100Variant(
        "conservative", choose_sm100, runner_dsl=True,
        summary="CUDA cores, cvt.rn.f16x2.e2m1x2 and f16x2 FMA, persistent CTAs"),
}
