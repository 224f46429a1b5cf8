"""Tuning choices of the GEMM kernels: frozen configs and the per-shape chooser.

sm90 numbers (H100, `python problems/dual_gemm/tune_sm90.py gemm`, L2 flushed, median of one call
per sample; run of 2026-11-22 ~12:20 UTC with the E4M3-route decode) for the benchmark shapes
(128,7168,16384) (128,4096,7168) (128,7168,2048), in us:
    SM90_M128       124.1   58.8  21.7
    SM90_M64        164.7   41.1  28.7
    SM90_M64_WIDE   106.0   50.6  20.3
    cuBLAS bf16 on pre-decoded operands, same run: 102.9  34.1  19.0
SM90_M64_WIDE_SPLIT2 (K split over a 2-CTA cluster), next run (~11:58 UTC; same shapes):
    SM90_M64 168.6  42.4  30.4 | SM90_M64_WIDE 108.3  51.0  20.9 | SM90_M64_WIDE_SPLIT2 117.5  32.6  54.2
    cuBLAS bf16 103.3  34.2  19.5
it wins where SM90_M64_WIDE's grid is at most half the SMs (the middle shape).
SM90_M128_WIDE_SPLIT2 (two consumer warpgroups x 128 rows of A, K split over a 2-CTA cluster: 2/3 of
SM90_M64_WIDE's decode per CTA for the same MMA work and grid), run of ~12:15 UTC (second of two
repetitions; the first ran while the clocks were still ramping and is discarded):
    SM90_M64_WIDE 107.1  50.6  21.3 | SM90_M64_WIDE_SPLIT2 116.4  33.2  28.2 | SM90_M128_WIDE_SPLIT2 88.6  44.9  22.4
    cuBLAS bf16 103.3  34.0  19.2
it wins on the long-K shape only (with K=2048 each CTA has 4 K tiles, too few to pay for the split);
the K >= 8192 threshold below rests on these two shapes.
In the evaluator (results/2026-11-22-h100-gemm-5fa8393-run2.json) the chosen configs gave
86.4 / 31.0 / 19.0 us against bf16-predecoded 101.9 / 30.0 / 19.3.
With separate packed-A/B rings and the decoders' loop unrolled by 2 (interleaved timing, same shapes):
    ~16:40 UTC  SM90_M128_WIDE_SPLIT2 96.1 42.1 20.1 -> unrolled 84.0 39.6 19.6 | cuBLAS bf16 103.7 34.2 19.5
    ~16:44 UTC  SM90_M64_WIDE 115.9 51.5 20.4 -> 108.4 47.9 19.4
                SM90_M64_WIDE_SPLIT2 125.4 33.2 27.4 -> 118.1 31.2 26.3 | cuBLAS bf16 104.4 34.1 19.6
A deeper packed-A ring (a_stages=3) changed nothing; 6 decoded slots instead of 8 (for a 4-stage A
ring) was slower. In the evaluator (results/2026-11-22-h100-gemm-0424a65.json) the chosen configs
give 74.4 / 28.2 / 16.8 us against bf16-predecoded 101.2 / 30.1 / 19.2.
Tried and dropped (~16:57 UTC; the code was not kept): SM90_M128_WIDE_SPLIT2 over a cluster
of 4 CTAs (a quarter of K each; three CTAs hand their sums to the first through distributed shared
memory) for 128x4096x7168, 128 CTAs: correct, memcheck and racecheck clean, but 47.1 us against
SM90_M64_WIDE_SPLIT2's 30.3 in the tune run and 45.0 against 28.2 in the evaluator (7 K tiles per
CTA are too few to fill the pipeline, and the first CTA adds three sums alone). Unrolling the
decoders by 4 instead of 2 was slower on every chosen config (~17:00 UTC).
Decoders handing over 2 sub-tiles at a time instead of a whole stage (a_batch=2; 2026-11-23): ~06:56 UTC
SM90_M128_WIDE_SPLIT2 93.0 39.1 19.3 -> 89.3 41.2 19.6, SM90_M64_WIDE 119.4 46.7 18.9 -> 133.1 51.2 19.9,
SM90_M64_WIDE_SPLIT2 130.4 30.5 25.7 -> 129.1 32.0 26.7 (cuBLAS bf16 104.6 34.1 19.6); ~07:16 UTC
SM90_M128_WIDE_SPLIT2 78.7 39.0 19.3 -> 83.5 41.0 19.6: no gain that holds, every gemm config keeps 4.
With the consumers' scales loaded per half stage (~08:34 UTC): m128 121.9 53.7 21.1, m64 168.9 40.6 27.3,
m64_wide 101.4 45.3 18.8, m64_wide_split2 109.4 29.6 25.2, m128_wide_split2 80.3 38.4 20.1 (cuBLAS bf16
104.3 34.3 19.5): the same choices. In the evaluator (results/2026-11-23-h100-gemm-7e22916.json, host time
per call cut by LaunchCache) the chosen configs give 71.9 / 26.4 / 16.4 us against 100.7 / 29.9 / 18.9.
Decoder units indexed by adds (~09:16 UTC, the previous commit -> this one, same session): m128 114.4 53.3
20.9 -> 99.5 46.3 19.2, m64_wide 95.7 44.8 19.0 -> 93.6 43.7 18.8, m64_wide_split2 103.6 29.5 25.2 -> 101.8
29.1 25.0, m128_wide_split2 75.2 37.9 19.8 -> 71.8 36.2 19.5. In the evaluator
(results/2026-11-23-h100-gemm-b11a093.json): 67.9 / 26.3 / 16.3 us against 100.9 / 30.0 / 19.2.
A third register set of B fragments (two wgmma groups in flight; ~10:16 UTC, against the two-set code):
m64_wide 100.9 44.3 18.7 -> 101.1 44.2 18.4; not kept (see problems/dual_gemm/config.py; that run's split
configs had a bug of the experiment, their figures are not used). The consumers' next packed words
loaded before the current chunk's wgmma (~10:26 UTC, new / old / new / old): m64_wide 18.8 19.2 18.8 19.2
on 128x7168x2048, m64_wide_split2 28.1 28.2 28.2 28.9 on 128x4096x7168, m128_wide_split2 78.2 76.6 (87.8,
a slow stretch for every config) 77.3 on 128x7168x16384: kept. In the evaluator
(results/2026-11-23-h100-gemm-cbcdc34.json): 68.4 / 25.2 / 15.5 us.
Split-K with each CTA of the pair finishing half of the tile (~10:46 UTC, new / old / new / old):
m64_wide_split2 26.9 27.8 27.6 28.3 on 128x4096x7168; m128_wide_split2 86.5 80.9 92.6 94.8 on
128x7168x16384 (noisy). In the evaluator (results/2026-11-23-h100-gemm-092fec1.json): 66.9 / 24.3 /
15.5 us against bf16-predecoded 100.8 / 29.8 / 18.8.
Decoder threads keeping one chunk column each (~11:08, not kept; problems/dual_gemm/config.py):
m64_wide 19.6 / 19.7 against 18.8 / 18.9 on 128x7168x2048, m64_wide_split2 29.2 / 29.2 against 27.4 / 27.8
on 128x4096x7168, m128_wide_split2 78.2 / 81.0 against 78.6 / 85.3 (noisy).
The roles swapped with B tiles of 112 rows (SM90_M128_SWAP_SPLIT2: 128 CTAs on 128x7168x16384 where
SM90_M128_WIDE_SPLIT2 has 112), three tune runs of ~11:50-12:02 UTC: 75.7 / 70.5 / 68.5 against 78.1 /
73.7 / 70.8 on 128x7168x16384 (its 64-K rounds or 3 stages: level); chosen for long K. On the two
shorter shapes it is no faster than the chosen configs (35.9 against 27.2 for m64_wide_split2 on
128x4096x7168; swapped tiles of 56 rows, 128 CTAs on 128x7168x2048: 19.9 against 17.9 for m64_wide).
64-K consumer rounds (chunk_k=64, ~11:57): m64_wide 102.6 43.0 17.9 -> 102.6 42.9 17.7,
m64_wide_split2 108.8 27.2 23.1 -> 106.9 26.8 22.9, m128_wide_split2 79.6 35.0 17.3 -> 79.1 35.1 17.4:
level, not used. In the evaluator (results/2026-11-23-h100-gemm-923eea6.json): 64.8 / 24.5 / 15.9 us against
bf16-predecoded 100.9 / 29.8 / 19.0 (the last two with the kernels of 092fec1).
K split over a cluster of 4 with wider swapped B tiles (~12:55-13:00 UTC, two tune --quick runs; the code
was not kept: the split hand-over generalized to 4 CTAs, and B tiles above 192 rows issued as two wgmmas
of half the N, because ptxas rejects one m64n224 wgmma, 112 accumulators, at the 128 registers per thread
of the launch, "Insufficient registers (128)", whatever setmaxnreg grants later). Every variant passed
the checks on both generators:
    128x7168x16384: m128_swap_split2 71.4 / 70.7 | 224-row tiles 128.2, 256 rows 87.2, 240 rows 85.5,
                    128 rows 83.8
    128x4096x7168:  m64_wide_split2 27.2 / 27.5 | 144-row tiles 28.7, 160 rows 30.5
Two causes. Only 30 clusters of 4 fit at once with one CTA per SM (120 CTAs; clusters of 2: 66, all 132
SMs; scripts/cluster_occupancy.py on the H100), so the 32 clusters of 224-row tiles ran in two waves, as
did the cluster-of-4 split of 2026-11-22 above (128 CTAs). Within one wave, a wider B tile halves the
consumers' A decode per MMA but not the decoders' B decode: 256 rows x K/4 (28 clusters) took ~22%
longer than 112 rows x K/2, for 14% more MMA work and B decode per CTA and half the A decode.
Nor do more decoder warps help the chosen tile (~13:02 UTC): SM90_M128_SWAP_SPLIT2 with 11 instead of 7
(n_dwg=3, consumer registers 152 or 160) 73.2 / 72.5 against 71.2 us on 128x7168x16384. Decoders and
consumers share the schedulers' issue and ALU-pipe slots, which is what the CTA runs short of.
"""

from __future__ import annotations

from dataclasses import replace

from shared.cute.sm90_blockscaled_mainloop import K_TILE, Sm90Config

_COMMON = dict(n_dwg=2, producer_regs=56, a_batch=4, a_slots=8)
# 64 rows of B per consumer warpgroup x 128 rows of A per CTA.
SM90_M128 = Sm90Config(smem_rows=128, n_cwg=1, stages=2, consumer_regs=232, **_COMMON)
# 64 x 64 tiles: twice the CTAs for narrow problems.
SM90_M64 = Sm90Config(smem_rows=64, n_cwg=1, stages=4, consumer_regs=232, **_COMMON)
# two consumer warpgroups (128 rows of B) x 64 rows of A: A decoded once for twice the MMA work.
SM90_M64_WIDE = Sm90Config(smem_rows=64, n_cwg=2, stages=3, consumer_regs=200, a_unroll=2, **_COMMON)

# SM90_M64_WIDE with K split over a cluster of 2 CTAs (sums added through distributed shared memory).
SM90_M64_WIDE_SPLIT2 = replace(SM90_M64_WIDE, splits=2)

# Two consumer warpgroups (128 rows of B) x 128 rows of A, K split over a cluster of 2 CTAs.
SM90_M128_WIDE_SPLIT2 = replace(SM90_M128, n_cwg=2, consumer_regs=200, splits=2, a_unroll=2)

# The roles swapped (A's 128 rows decoded into registers by the two consumer warpgroups, 112 rows of
# B into shared memory), K split over a cluster of 2 CTAs: N = 7168 in 64 tiles, 128 CTAs where
# SM90_M128_WIDE_SPLIT2 has 112 (the last B tile may be partial).
SM90_M128_SWAP_SPLIT2 = replace(SM90_M128_WIDE_SPLIT2, swap_ab=True, smem_rows=112)

SM90_CANDIDATES = {"m128": SM90_M128, "m64": SM90_M64, "m64_wide": SM90_M64_WIDE,
                   "m64_wide_split2": SM90_M64_WIDE_SPLIT2, "m128_wide_split2": SM90_M128_WIDE_SPLIT2,
                   "m128_swap_split2": SM90_M128_SWAP_SPLIT2}

SMS = 132  # H100 SXM


def choose_sm90(m: int, n: int, k: int) -> Sm90Config:
    """Prefer the config that still fills the GPU with the most MMA work per decoded A tile."""
    even_k = (k // K_TILE) % 2 == 0
    if m % 128 == 0 and k >= 8192 and even_k:
        swap = 2 * (m // 128) * -(-n // SM90_M128_SWAP_SPLIT2.smem_rows)  # CTAs of each config
        wide = 2 * (m // 128) * (n // 128) if n % 128 == 0 else 0
        if wide < swap and 0.75 * SMS <= swap <= SMS:
            return SM90_M128_SWAP_SPLIT2
        if 0.75 * SMS <= wide <= SMS:
            return SM90_M128_WIDE_SPLIT2
    if m % 64 == 0 and n % 128 == 0:
        tiles = (m // 64) * (n // 128)
        if tiles >= 0.75 * SMS:
            return SM90_M64_WIDE
        if 2 * tiles <= SMS and even_k:
            return SM90_M64_WIDE_SPLIT2
    if m % 128 == 0 and (m // 128) * (n // 64) >= 0.75 * SMS:
        return SM90_M128
    return SM90_M64


# ---------------------------------------------------------------------------------------- sm100 (B200)
from dataclasses import dataclass  # noqa: E402

from shared.cute.sm100_config import MainloopConfig, narrow_tiles_fill_better  # noqa: E402
from shared.devices import B200_SM_COUNT  # noqa: E402


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
