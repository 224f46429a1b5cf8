"""Tuning choices of the GEMM kernels: frozen configs and the per-shape chooser.

Each sm90 config says what it is and, in one dated sentence, why it is chosen; the runs behind those
sentences, and the variants tried and dropped, are in results/TUNING.md. Check and time the candidates
on an H100 with `python -m scripts.tune_sm90 gemm`.
"""

from __future__ import annotations

from dataclasses import replace

from shared.cute.sm90_config import K_TILE, Sm90Config
from shared.cute.sm90_deal_k import deal_k_pays
from shared.devices import H100_SM_COUNT

_COMMON = dict(n_dwg=2, producer_regs=56, a_batch=4, a_slots=8)
# 64 rows of B per consumer warpgroup x 128 rows of A per CTA. Chosen where M % 128 == 0 and its tiles fill
# the GPU but the m64_wide configs' do not; on the benchmark shapes it trails m64_wide, 99.5 / 46.3 / 19.2
# us against 93.6 / 43.7 / 18.8 (H100, 2026-11-23; results/TUNING.md).
SM90_M128 = Sm90Config(smem_rows=128, n_cwg=1, stages=2, consumer_regs=232, **_COMMON)
# 64 x 64 tiles: twice the CTAs for narrow problems. The fallback for the other M % 64 shapes: 40.6 us
# against m128's 53.7 on 128x4096x7168 (H100, 2026-11-23; results/TUNING.md).
SM90_M64 = Sm90Config(smem_rows=64, n_cwg=1, stages=4, consumer_regs=232, **_COMMON)
# two consumer warpgroups (128 rows of B) x 64 rows of A: A decoded once for twice the MMA work.
# Chosen for 128x7168x2048 (112 CTAs): 18.8 us against 19.2 for m128 and 19.5 for m128_wide_split2
# (H100, 2026-11-23; results/TUNING.md). Its epilogue goes through shared memory (Sm90Config.staged_epilogue):
# 13.22 / 13.22 us against 13.58 / 13.65 in graph replay, with the split 22.11 / 22.13 against 22.36 / 22.32
# on 128x4096x7168 (H100, 2026-11-28; results/TUNING.md). The decoders' loop unrolled 4 times (a thread's 2-3
# units of a stage in one body): 12.72-12.76 us against 12.90-12.91 with 2, and with the split 21.01-21.09 against
# 21.32-21.35 (graph replay; H100, 2026-11-28; results/TUNING.md). Six packed stages of B (three of A) and the first K
# tile fetched into L2 before the dependent launch's wait (Sm90Config.l2_early), each faster on 128x7168x2048 (H200,
# 2026-11-28; the runs: results/TUNING.md, seventeenth session).
SM90_M64_WIDE = Sm90Config(smem_rows=64, n_cwg=2, stages=6, a_stages=3, consumer_regs=200, a_unroll=4,
                           staged_epilogue=True, l2_early=1, **_COMMON)

# SM90_M64_WIDE with K split over a cluster of 2 CTAs (sums added through distributed shared memory).
# Chosen where its CTAs leave a quarter of the GPU or more idle (and for M % 128 != 0); it was chosen for
# 128x4096x7168 until m128_split2 (128 CTAs where m64_wide has 64): 29.1 us against 36.2 for m128_wide_split2
# and 43.7 for m64_wide (H100, 2026-11-23; results/TUNING.md). The sums handed over with st.async into a
# buffer of their own (Sm90Config.async_handover): 21.88 / 21.92 us against 22.57 / 22.48 in graph replay
# (H100, 2026-11-28; results/TUNING.md). m64_wide's six packed stages of B are faster here too; its early L2 fetch is
# level, and left out (H200, 2026-11-28; the runs: results/TUNING.md, seventeenth session).
SM90_M64_WIDE_SPLIT2 = replace(SM90_M64_WIDE, splits=2, async_handover=True, l2_early=0)

# SM90_M128 with K split over a cluster of 2 CTAs (as m64_wide_split2: the sums handed over with st.async), two decoder
# threads owning each A row (Sm90Config.owned_rows) over three decoder warpgroups: wgmmas of N = 128
# where m64_wide_split2's are 64, for the same number of CTAs. Chosen for 128x4096x7168, faster there than
# m64_wide_split2 (H200, 2026-11-28; the runs: results/TUNING.md, nineteenth session).
SM90_M128_SPLIT2 = replace(SM90_M128, splits=2, owned_rows=True, async_handover=True, n_dwg=3)

# Two consumer warpgroups (128 rows of B) x 128 rows of A, K split over a cluster of 2 CTAs.
# Chosen for long K (K >= 8192) where the swapped tiles do not fill one wave: 71.8 us against
# m64_wide's 93.6 on 128x7168x16384 (H100, 2026-11-23; results/TUNING.md).
SM90_M128_WIDE_SPLIT2 = replace(SM90_M128, n_cwg=2, consumer_regs=200, splits=2, a_unroll=2)

# The roles swapped (A's 128 rows decoded into registers by the two consumer warpgroups, 112 rows of
# B into shared memory), K split over a cluster of 2 CTAs: N = 7168 in 64 tiles, 128 CTAs where
# SM90_M128_WIDE_SPLIT2 has 112 (the last B tile may be partial). Chosen for 128x7168x16384: 75.7 / 70.5 /
# 68.5 us against 78.1 / 73.7 / 70.8 for m128_wide_split2 in three tune runs (H100, 2026-11-23;
# results/TUNING.md). Each decoder thread keeps one row of B (Sm90Config.owned_rows): 61.8 / 62.0 us against
# 63.2 / 63.0 in graph replay; the 64-row configs were slower with it (m64_wide 14.1 against 13.2 on
# 128x7168x2048) (H100, 2026-11-27; results/owned-rows/). With async_handover 61.49 / 61.62 us against 61.98 /
# 61.90 (H100, 2026-11-28; results/TUNING.md). Its decoders' B through fp16 bit patterns too (decode_bits 3), faster
# (H200, 2026-11-28; the runs: results/TUNING.md, nineteenth session).
SM90_M128_SWAP_SPLIT2 = replace(SM90_M128_WIDE_SPLIT2, swap_ab=True, smem_rows=112, owned_rows=True,
                                async_handover=True, decode_bits=3)

# SM90_M128_SWAP_SPLIT2 with the first K tile fetched into L2 before the dependent launch's wait (Sm90Config.l2_early).
# Chosen for K in 2048..8191 where its CTAs fill the GPU and outnumber m64_wide's: faster than m64_wide on
# 128x7168x2048, and faster with the early fetch than without (H200, 2026-11-28; the runs: results/TUNING.md, nineteenth
# session); the early fetch was slower at K 16384 (seventeenth session).
SM90_M128_SWAP_SPLIT2_EARLY = replace(SM90_M128_SWAP_SPLIT2, l2_early=1)

# SM90_M64_WIDE with its K tiles dealt (sm90_deal_k.py): one CTA per SM, the tiles' K tiles dealt evenly,
# partial sums handed over through device memory. Chosen where m64_wide's tiles would leave a last wave
# mostly idle (deal_k_pays): 46.5 us against 75.7 on 256x4608x7168 (144 tiles), 38.0 against 42.1 on
# 384x7168x2304 (336 tiles); not on one wave (16.3 against 13.5 on 128x7168x2048) or nearly full waves
# (47.2 against 45.9 on 512x4096x4096) (H100, 2026-11-27; results/dealt-k/).
# Its decoders' loop stays unrolled twice and its rings as deep as they were timed (a_unroll 4, six packed stages
# and the early L2 fetch were timed on one tile per CTA only).
SM90_M64_WIDE_DK = replace(SM90_M64_WIDE, deal_k=True, staged_epilogue=False,  # its rings run on into the next tile
                           a_unroll=2, stages=3, a_stages=None, l2_early=0)

SM90_CANDIDATES = {"m128": SM90_M128, "m64": SM90_M64, "m64_wide": SM90_M64_WIDE,
                   "m64_wide_split2": SM90_M64_WIDE_SPLIT2, "m128_split2": SM90_M128_SPLIT2,
                   "m128_wide_split2": SM90_M128_WIDE_SPLIT2,
                   "m128_swap_split2": SM90_M128_SWAP_SPLIT2, "m128_swap_split2_early": SM90_M128_SWAP_SPLIT2_EARLY,
                   "m64_wide_dk": SM90_M64_WIDE_DK}


def choose_sm90(m: int, n: int, k: int) -> Sm90Config:
    """Prefer the config that still fills the GPU with the most MMA work per decoded A tile."""
    even_k = (k // K_TILE) % 2 == 0
    if m % 128 == 0 and even_k:
        swap = 2 * (m // 128) * -(-n // SM90_M128_SWAP_SPLIT2.smem_rows)  # CTAs of each config
        swap_fills = 0.75 * H100_SM_COUNT <= swap <= H100_SM_COUNT
        if k >= 8192:
            wide = 2 * (m // 128) * (n // 128) if n % 128 == 0 else 0
            if wide < swap and swap_fills:
                return SM90_M128_SWAP_SPLIT2
            if 0.75 * H100_SM_COUNT <= wide <= H100_SM_COUNT:
                return SM90_M128_WIDE_SPLIT2
        elif k >= 2048 and swap_fills and n % 128 == 0 and 0.75 * H100_SM_COUNT <= (m // 64) * (n // 128) < swap:
            # where m64_wide's tiles fill the GPU too, but with fewer CTAs (timed at K 2048)
            return SM90_M128_SWAP_SPLIT2_EARLY
    if m % 64 == 0 and n % 128 == 0:
        tiles = (m // 64) * (n // 128)
        if tiles >= 0.75 * H100_SM_COUNT:
            return SM90_M64_WIDE_DK if deal_k_pays(tiles, H100_SM_COUNT) else SM90_M64_WIDE
        if 2 * tiles <= H100_SM_COUNT and even_k:
            # the 128-row A tiles make as many CTAs ((m / 128) x (n / 64) tiles); timed where they fill the GPU
            if m % 128 == 0 and 2 * tiles >= 0.75 * H100_SM_COUNT:
                return SM90_M128_SPLIT2
            return SM90_M64_WIDE_SPLIT2
    if m % 128 == 0 and (m // 128) * (n // 64) >= 0.75 * H100_SM_COUNT:
        return SM90_M128
    return SM90_M64


# ---------------------------------------------------------------------------------------- sm100 (B200)
from dataclasses import dataclass  # noqa: E402

from shared.cute.sm100_config import (  # noqa: E402
    CLUSTER_MAX,
    EPI_SUBTILE,
    SF_ATOM_ROWS,
    SPLITK_SPLITS,
    TILE_M,
    MainloopConfig,
    check_splitk,
    narrow_tiles_fill_better,
    splitk_stages,
)
from shared.cute.sm100_config import K_TILE as SM100_K_TILE  # noqa: E402
from shared.devices import B200_SM_COUNT  # noqa: E402
from shared.sm100_variants import Sm100Variant  # noqa: E402


@dataclass(frozen=True)
class GemmSm100Config:
    tile_n: int = 128
    num_acc_stage: int = 2  # 2 x 128 accumulator columns + 32 scale columns fit in 512
    num_ab_stage: int = 0  # 0 = fill shared memory
    sm_count: int = B200_SM_COUNT  # persistent grid size cap (compile-time)

    def mainloop(self) -> MainloopConfig:
        return MainloopConfig(
            tile_n=self.tile_n,
            num_b=1,
            num_acc_stage=self.num_acc_stage,
            num_ab_stage=self.num_ab_stage,
        )


def choose_sm100(m: int, n: int, k: int, l: int, sm_count: int = B200_SM_COUNT) -> GemmSm100Config:
    """128 x 64 tiles while 128 x 128 tiles would leave over half the SMs idle (all three
    leaderboard shapes: 56 / 32 / 56 tiles of 128 x 128 on 148 SMs), else 128 x 128."""
    if narrow_tiles_fill_better(m, n, l, sm_count):
        return GemmSm100Config(tile_n=64, num_acc_stage=2, sm_count=sm_count)
    return GemmSm100Config(tile_n=128, num_acc_stage=2, sm_count=sm_count)


@dataclass(frozen=True)
class GemmSm100SplitKConfig:
    """The "splitk_swap" variant (shared/cute/sm100_splitk.py): A and B swapped, so the MMA's 128 rows
    are N and its `tile_n` columns are M; the K blocks of each output tile split over a cluster of
    `splits` CTAs, whose fp32 partials are summed through distributed shared memory. One output tile
    per cluster (grid = splits x tiles)."""

    tile_n: int = 128  # the M side of the swapped MMA: 64 or 128
    splits: int = 2  # CTAs per cluster sharing one output tile
    sm_count: int = B200_SM_COUNT  # the SMs the chooser filled (the launch is one cluster per tile regardless)

    def __post_init__(self):
        check_splitk(self.tile_n, self.splits)
        if self.splits > CLUSTER_MAX:
            raise ValueError(f"splits = {self.splits}: a portable cluster holds at most {CLUSTER_MAX} CTAs")

    def mainloop(self) -> MainloopConfig:
        return MainloopConfig(tile_n=self.tile_n, num_b=1, num_acc_stage=1,
                              num_ab_stage=splitk_stages(self.tile_n, self.splits))

    def check_shape(self, m: int, n: int, k: int, l: int) -> None:
        """ValueError naming the dimension this variant cannot take (beyond check_problem's)."""
        if k // SM100_K_TILE < self.splits:
            raise ValueError(f"k = {k}: {self.splits} splits need at least {self.splits} K blocks of {SM100_K_TILE}")


def choose_sm100_splitk(m: int, n: int, k: int, l: int, sm_count: int = B200_SM_COUNT):
    """The split-K config whose clusters fill the most SMs in one wave (ties: the wider tile, which
    reads each B row once); None where no split of at least 2 fits in one wave or the shape does not
    divide into whole tiles. Benchmark shapes on 148 SMs: 128x7168x16384 -> 56 tiles x 2 = 112 CTAs,
    128x4096x7168 -> 32 x 4 = 128, 128x7168x2048 -> 56 x 2 = 112."""
    if min(m, n, k, l) <= 0 or n % TILE_M or m % SF_ATOM_ROWS or k % SM100_K_TILE:
        return None
    best = None
    for tile_n in (128, 64):
        tiles = (n // TILE_M) * (m // tile_n) * l
        for splits in SPLITK_SPLITS:
            if (tile_n // EPI_SUBTILE) % splits or tiles * splits > sm_count or k // SM100_K_TILE < splits:
                continue
            key = (tiles * splits, tile_n)
            if best is None or key > best[0]:
                best = (key, GemmSm100SplitKConfig(tile_n=tile_n, splits=splits, sm_count=sm_count))
    return None if best is None else best[1]


# The sm100 variants (shared/sm100_variants.py): the submission's gate serves a variant only where the
# B200 gates table found it correct and fastest for the shape; "conservative" is choose_sm100.
SM100_VARIANTS = {
    "conservative": Sm100Variant(
        "conservative", choose_sm100, runner_dsl=True,
        summary="128 x 64 / 128 x 128 tiles, one-CTA clusters, no split-K (NVIDIA's persistent example's mainloop)"),
    "splitk_swap": Sm100Variant(
        "splitk_swap", choose_sm100_splitk,
        summary="A/B swapped (N fills the MMA's 128 rows), K split over a cluster, fp32 partials summed through DSMEM"),
}

