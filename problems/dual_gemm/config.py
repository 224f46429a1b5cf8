"""Tuning choices of the dual GEMM kernels: frozen configs and the per-shape chooser.

Each sm90 config says what it is and, in one dated sentence, why it is chosen; the runs behind those
sentences, and the variants tried and dropped, are in results/TUNING.md. Check and time the candidates
on an H100 with `python -m scripts.tune_sm90 dual_gemm`.
"""

from __future__ import annotations

from dataclasses import replace

from shared.cute.sm90_config import K_TILE, Sm90Config
from shared.cute.sm90_deal_k import deal_k_pays
from shared.devices import H100_SM_COUNT

# One consumer warpgroup (64 rows of B1 and of B2, 128 fp32 accumulators per thread) x 128 rows of A;
# 7 decoder warps publish a whole 256-K stage of decoded A per proxy fence into an 8-slot ring. The pick
# for M % 128 == 0 where N % 128 != 0; level with wide_n on the benchmark shapes, 76.1 / 143.2 / 46.6 /
# 142.7 us against 74.3 / 142.0 / 45.8 / 140.2 (H100, 2026-11-22; results/TUNING.md).
SM90_DEFAULT = Sm90Config(smem_rows=128, n_cwg=1, n_dwg=2, stages=2, a_slots=8, consumer_regs=232,
                          producer_regs=56, a_batch=4)
# M a multiple of 64 only: the same with 64 rows of A. The last fallback (N % 128 != 0 too); no benchmark
# shape takes it, and results/TUNING.md records no timing of it up to 2026-11-24.
SM90_SMALL_M = Sm90Config(smem_rows=64, n_cwg=1, n_dwg=2, stages=4, a_slots=8, consumer_regs=232,
                          producer_regs=56, a_batch=4)
# Two consumer warpgroups (128 rows of B per CTA) x 64 rows of A: half the A decode per MMA. The pick for
# N % 128 == 0 where the 128-row configs' grids do not fit: 74.3 / 142.0 / 45.8 / 140.2 us on the
# benchmark shapes against default's 76.1 / 143.2 / 46.6 / 142.7 (H100, 2026-11-22; results/TUNING.md).
SM90_WIDE_N = Sm90Config(smem_rows=64, n_cwg=2, n_dwg=2, stages=3, a_slots=8, consumer_regs=200,
                         producer_regs=56, a_batch=4)
# Two consumer warpgroups x 128 rows of A: a quarter of SM90_DEFAULT's A decode per MMA; 7 decoder
# warps publishing two sub-tiles at a time into a 7-slot decoded-A ring (shared memory is full:
# 2 stages of A, B1, B2 + 112 KiB of fp16). Chosen for one-wave grids of 128 x 128 tiles whose N tiles do not
# pair up (SM90_WIDE_SHARED where they do): 112.6 us against wide_n's 141.5 on 512x4096x7168 (128 CTAs; 104-row
# tiles would take two waves) (H100, 2026-11-22; results/TUNING.md).
SM90_WIDE = Sm90Config(smem_rows=128, n_cwg=2, n_dwg=2, stages=2, a_slots=7, consumer_regs=200,
                       producer_regs=56, a_batch=2, a_unroll=2)

# SM90_WIDE with K split over a cluster of 2 CTAs (the second one's sums added through distributed
# shared memory): twice the CTAs for grids that would leave half the SMs idle. Chosen for 256x4096x7168
# and 256x3072x4096: 67.2 and 45.2 us against 74.5 and 45.9 for wide_n (H100, 2026-11-22;
# results/TUNING.md). Each decoder thread keeps one row of A (Sm90Config.owned_rows): 47.8 / 30.2 us against
# 50.1 / 31.5 in graph replay (H100, 2026-11-27; results/owned-rows/). Four decoded slots (the ring stepped once per K
# tile): 46.37 / 46.41 and 28.65 / 28.68 us against 47.23 / 47.22 and 29.35 / 29.30 with seven (graph replay; H200,
# 2026-11-28; results/TUNING.md). The shared memory the three slots freed holds two more packed stages of A: faster
# on 256x4096x7168, level on 256x3072x4096 (H200, 2026-11-28; the runs: results/TUNING.md, eighteenth session).
SM90_WIDE_SPLIT2 = replace(SM90_WIDE, splits=2, owned_rows=True, a_slots=4, a_stages=4)

# The roles swapped: A decoded by the consumers into registers (64 rows per warpgroup, each fragment
# used for both products), B1 and B2 decoded into shared memory, 96 rows each: a tile of 128 x 96,
# so that N = 3072 gives 32 tiles along N instead of 24. Tested, not chosen: 68.4 / 114.1 us on
# 256x3072 / 512x3072 against wide's 59.4 / 99.5 (H100, 2026-11-23; results/TUNING.md); with the B tiles
# decoded once per pair of CTAs (share_s, owned rows, a_batch 2, one decoder warpgroup) 79.3 against wide_104's
# 75.4 on 512x3072x7168 (graph replay; H100, 2026-11-27; results/TUNING.md).
SM90_WIDE_SWAP = Sm90Config(smem_rows=96, n_cwg=2, n_dwg=2, stages=2, a_slots=5, consumer_regs=200,
                            producer_regs=56, a_batch=4, a_unroll=2, swap_ab=True)

# SM90_WIDE with 104-row tiles of A (the last one partial): M = 512 in five tiles, so that N = 3072
# gives 120 CTAs of 104 x 128 instead of 96 of 128 x 128; the smaller decoded slots leave room for 9.
# Its smaller accumulators leave the registers for 64-K consumer rounds (SM90_WIDE would serialize).
# Chosen for 512x3072x7168 (120 CTAs where wide has 96): 88.8 us against wide's 99.6 (H100, 2026-11-23;
# results/TUNING.md). Not with owned_rows: 78.1 / 78.4 us against 76.8 / 77.1 (graph replay; H100, 2026-11-27;
# results/owned-rows/). The decoders' loop unrolled 4 times (a thread's 3-4 units of a stage in one body): 76.07-76.36
# us against 76.45-76.64 with 2 (graph replay; H100, 2026-11-28; results/TUNING.md).
SM90_WIDE_104 = replace(SM90_WIDE, smem_rows=104, a_slots=9, a_batch=4, chunk_k=64, a_unroll=4)

# SM90_WIDE with its K tiles dealt (sm90_deal_k.py): one CTA per SM, the tiles' K tiles dealt evenly, partial
# sums handed over through device memory. Chosen where wide's tiles would leave a last wave mostly idle
# (deal_k_pays): 107.4 us against 174.4 on 768x3072x7168 (144 tiles), 141.4 against 175.8 on 1024x3072x7168
# (192); on one wave it loses (99.5 against 89.6 on 512x4096x7168; wide_104 dealt 81.7 against 75.6 on
# 512x3072x7168) (H100, 2026-11-27; results/dealt-k/).
SM90_WIDE_DK = replace(SM90_WIDE, deal_k=True)

# SM90_WIDE with the A tile decoded once per pair of CTAs along N (Sm90Config.share_s, sm90_decoded_ring.py:
# each decodes half of its rows and copies them into the other's ring), its decoded A published a sub-tile at
# a time. Chosen where wide would be and the N tiles pair up: 85.2 / 85.3 us against wide's 88.8 / 88.7 on
# 512x4096x7168 (graph replay; H100, 2026-11-27; results/shared-decode/). Each decoder thread keeps one row of
# its half (Sm90Config.owned_rows): 82.4 / 82.3 us against 83.8 / 84.1 (graph replay; H100, 2026-11-27;
# results/owned-rows/). Four decoded slots (the ring stepped once per K tile): 79.41 / 79.07 us against 79.83 / 79.70
# with seven (graph replay; H200, 2026-11-28; results/TUNING.md). The freed shared memory holds two more packed
# stages of A, faster again (H200, 2026-11-28; the runs: results/TUNING.md, eighteenth session).
SM90_WIDE_SHARED = replace(SM90_WIDE, share_s=True, a_batch=1, owned_rows=True, a_slots=4, a_stages=4)
# The same for SM90_WIDE_104 (its decoders' loop unrolled twice; 4 is level with it). Chosen where wide_104 would be
# and the N tiles pair up: 73.08 / 72.81 us against wide_104's 77.07 / 76.39 on 512x3072x7168 (graph replay; H100,
# 2026-11-28; results/TUNING.md); level until the TMA descriptors were prefetched before the dependent launch's wait.
# Eight decoded slots published two sub-tiles at a time (the ring stepped once per K tile): 70.44 / 70.51 us against
# 72.21 / 72.07 with nine and whole stages (graph replay; H200, 2026-11-28; results/TUNING.md).
SM90_WIDE_104_SHARED = replace(SM90_WIDE_104, share_s=True, a_unroll=2, a_slots=8, a_batch=2)

SM90_CANDIDATES = {"default": SM90_DEFAULT, "small_m": SM90_SMALL_M, "wide_n": SM90_WIDE_N, "wide": SM90_WIDE,
                   "wide_split2": SM90_WIDE_SPLIT2, "wide_swap": SM90_WIDE_SWAP, "wide_104": SM90_WIDE_104,
                   "wide_dk": SM90_WIDE_DK, "wide_104_shared": SM90_WIDE_104_SHARED,
                   "wide_shared": SM90_WIDE_SHARED}


def choose_sm90(m: int, n: int, k: int) -> Sm90Config:
    """The config for one shape: the most MMA work per decoded A tile that still fills the GPU."""
    if m % 128 == 0 and n % 128 == 0:
        tiles = (m // 128) * (n // 128)
        if tiles >= 0.7 * H100_SM_COUNT:
            # one wave either way: the 104-row tiles have less work per CTA
            if -(-m // 104) * (n // 128) <= H100_SM_COUNT:
                return SM90_WIDE_104_SHARED if (n // 128) % 2 == 0 else SM90_WIDE_104  # share_s: pairs along N
            if deal_k_pays(tiles, H100_SM_COUNT):
                return SM90_WIDE_DK
            return SM90_WIDE_SHARED if (n // 128) % 2 == 0 else SM90_WIDE  # share_s: the CTAs along N pair up
        if 2 * tiles <= H100_SM_COUNT and (k // K_TILE) % 2 == 0:
            return SM90_WIDE_SPLIT2
    if m % 64 == 0 and n % 128 == 0:
        return SM90_WIDE_N
    if m % 128 == 0:
        return SM90_DEFAULT
    return SM90_SMALL_M


# ---------------------------------------------------------------------------------------- sm100 (B200)
from dataclasses import dataclass  # noqa: E402

from shared.cute.sm100_config import MainloopConfig, narrow_tiles_fill_better  # noqa: E402
from shared.devices import B200_SM_COUNT  # noqa: E402
from shared.sm100_variants import Sm100Variant  # noqa: E402


@dataclass(frozen=True)
class DualGemmSm100Config:
    tile_n: int = 128
    num_acc_stage: int = 1  # 2 x 128 accumulator columns per stage: only one fits (tile_n = 64: two)
    num_ab_stage: int = 0  # 0 = fill shared memory
    sm_count: int = B200_SM_COUNT  # persistent grid size cap (compile-time)

    def mainloop(self) -> MainloopConfig:
        return MainloopConfig(
            tile_n=self.tile_n,
            num_b=2,
            num_acc_stage=self.num_acc_stage,
            num_ab_stage=self.num_ab_stage,
        )


def choose_sm100(m: int, n: int, k: int, l: int, sm_count: int = B200_SM_COUNT) -> DualGemmSm100Config:
    """128 x 64 tiles while 128 x 128 tiles would leave over half the SMs idle ((256, 4096) and
    (256, 3072): 64 / 48 tiles of 128 x 128), else 128 x 128 ((512, 4096), (512, 3072): 128 / 96
    tiles; 64-wide tiles would need a second wave)."""
    if narrow_tiles_fill_better(m, n, l, sm_count):
        return DualGemmSm100Config(tile_n=64, num_acc_stage=2, sm_count=sm_count)
    return DualGemmSm100Config(tile_n=128, num_acc_stage=1, sm_count=sm_count)


@dataclass(frozen=True)
class DualGemmSm100Cta2Config:
    """The "cta2" variant: 2-CTA MMAs (tcgen05 cta_group::2, 256 x tile_n per instruction) on clusters of
    (2, 1, 1). Each CTA of a pair loads its 128 rows of A and SFA, half of the tile's rows of B1 and of
    B2 and half of each scale block (multicast to both); the leader issues the MMAs for both; each CTA
    keeps its rows' gate and up accumulators in its own tensor memory and stores its 128 rows of C
    directly from registers (no TMA store of C: see docs/B200-READINESS.md)."""

    tile_n: int = 128
    num_acc_stage: int = 1  # as DualGemmSm100Config: 2 x 128 accumulator columns per stage (tile_n = 64: two)
    num_ab_stage: int = 0  # 0 = fill shared memory
    sm_count: int = B200_SM_COUNT  # persistent grid size cap (compile-time): sm_count // 2 pairs

    def mainloop(self) -> MainloopConfig:
        return MainloopConfig(
            tile_n=self.tile_n,
            num_b=2,
            num_acc_stage=self.num_acc_stage,
            num_ab_stage=self.num_ab_stage,
            cta_group=2,
        )


CTA2_TILE_M = 256  # rows of one 2-CTA MMA tile


def choose_sm100_cta2(m: int, n: int, k: int, l: int, sm_count: int = B200_SM_COUNT) -> DualGemmSm100Cta2Config | None:
    """The 2-CTA config of a shape, None where it does not apply (M not a multiple of 256, N not a
    multiple of 128, K not a multiple of 256). 256 x 64 tiles while their CTAs (2 per tile) fit in one
    wave ((256, 4096): 128 CTAs, (256, 3072): 96), else 256 x 128 ((512, 4096): 128, (512, 3072): 96)."""
    if m <= 0 or n <= 0 or k <= 0 or l <= 0 or m % CTA2_TILE_M or n % 128 or k % 256:
        return None
    pair_tiles_64 = (m // CTA2_TILE_M) * (n // 64) * l
    if 2 * pair_tiles_64 <= sm_count:
        return DualGemmSm100Cta2Config(tile_n=64, num_acc_stage=2, sm_count=sm_count)
    return DualGemmSm100Cta2Config(tile_n=128, num_acc_stage=1, sm_count=sm_count)


# The sm100 variants (shared/sm100_variants.py): the submission's gate serves a variant only where the
# B200 gates table found it correct and fastest for the shape; "conservative" is choose_sm100.
SM100_VARIANTS = {
    "conservative": Sm100Variant(
        "conservative", choose_sm100, runner_dsl=True,
        summary="both B operands on one A stage, 128 x 64 / 128 x 128 tiles, one-CTA clusters"),
    "cta2": Sm100Variant("cta2", choose_sm100_cta2, runner_dsl=True,
                         summary="2-CTA MMAs (cta_group::2, 256-row tiles on (2,1,1) clusters), B halves per CTA, "
                                 "B scales multicast over the pair"),
}
