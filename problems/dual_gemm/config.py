"""Tuning choices of the dual GEMM kernels: frozen configs and the per-shape chooser.

sm90 numbers (H100, `python problems/dual_gemm/tune_sm90.py`, L2 flushed, median of one call per
sample; run of 2026-11-22 ~12:20 UTC with the E4M3-route decode) for the benchmark shapes
(256,4096,7168) (512,4096,7168) (256,3072,4096) (512,3072,7168), in us:
    SM90_DEFAULT   76.1  143.2  46.6  142.7
    SM90_WIDE_N    74.3  142.0  45.8  140.2
    SM90_WIDE     116.5  117.7  69.9  116.3   (3 decoder warps; 7 in the next run: 112.4 112.0 68.0 113.1)
    cuBLAS bf16 on pre-decoded operands, same run: 58.4  80.4  31.9  61.8
SM90_WIDE decodes A once for 128 rows of B1 and of B2 but has a quarter of the CTAs of
SM90_WIDE_N: it wins once the grid still covers ~0.7 of the SMs.
SM90_WIDE_SPLIT2 (SM90_WIDE, K split over a 2-CTA cluster), next run (~11:58 UTC; same shapes):
    SM90_WIDE_N 74.5  141.5  45.9  142.4 | SM90_WIDE 112.0  112.6  68.0  112.8
    SM90_WIDE_SPLIT2 67.2  128.1  45.2  127.1 | cuBLAS bf16 58.3  79.9  31.4  62.2
it wins where SM90_WIDE's grid is at most half the SMs.
In the evaluator (results/2026-11-22-h100-dual_gemm-3449d72.json) the chosen configs gave
64.2 / 108.9 / 42.2 / 109.0 us against bf16-predecoded 70.2 / 103.1 / 41.3 / 80.5.

Decoded-A ring (afternoon of 2026-11-22; configs timed interleaved from here on, see tune_sm90.py).
ncu on SM90_WIDE with its 4-slot ring: the consumers waited on full slots and the decoders on
empty ones, both most of the time. With separate packed-A/B rings (~16:36 UTC, same shapes):
    SM90_WIDE, 4 slots 118.6 114.6 66.8 112.3 | 7 slots 115.6 112.4 65.6 110.1
    7 slots, whole stage per hand-off 112.6 110.1 64.0 107.6 | cuBLAS bf16 59.2 83.0 32.3 63.6
and the decoders' loop unrolled by 2 (~16:40): 119.6 113.7 64.4 107.3 -> 112.7 107.6 61.4 101.6;
for SM90_WIDE_SPLIT2 (~16:44): 81.6 130.0 42.0 122.5 -> 78.5 123.5 41.8 115.7.
Where the time goes now (~16:50, debug_skip): SM90_WIDE 104.4 105.5 60.3 101.2, without the A
decode 85.3 83.9 50.2 81.3, without the B decode 85.1 85.7 50.0 82.5, without both 76.4 75.4 45.6 73.6.
In the evaluator (results/2026-11-22-h100-dual_gemm-0424a65.json) the chosen configs give
58.2 / 97.0 / 38.4 / 96.5 us against bf16-predecoded 70.6 / 102.7 / 41.9 / 80.8: the last shape's
96 tiles still leave 36 SMs idle.
No gain from more (~17:00 UTC, same shapes; SM90_WIDE 122.4 103.6 60.1 101.7): decoders unrolled by 4
126.8 107.5 62.2 105.4; 64 registers for the decoder warpgroups and 192 for the consumers 121.9 103.4
59.9 101.2.

2026-11-23, tune runs (interleaved as above; same four shapes unless noted):
Decoders handing over 2 sub-tiles at a time instead of a whole stage (a_batch=2), ~06:52 UTC:
SM90_WIDE 99.1 104.5 60.2 102.1 -> 97.3 102.0 60.0 100.1; ~06:56 UTC: SM90_WIDE 114.3 102.5 58.9 99.8
-> 111.9 100.9 58.0 98.2 (6 slots instead of 7: 111.8 100.7 58.0 98.1), SM90_WIDE_SPLIT2 69.9 117.2
41.0 113.5 -> 68.4 115.1 40.3 111.7; ~07:17 UTC: SM90_WIDE 101.1 104.7 60.6 101.7 -> 99.3 103.2 59.7 100.4,
SM90_WIDE_SPLIT2 62.1 119.8 41.6 115.6 -> 61.2 118.0 40.7 113.9. Both now use a_batch=2.
In the evaluator (results/2026-11-23-h100-dual_gemm-fba6aee.json) the chosen configs give 56.6 / 95.6 /
37.5 / 95.0 us against bf16-predecoded 70.1 / 102.4 / 41.4 / 89.5 (best 80.5).
The roles swapped (SM90_WIDE_SWAP: 128 x 96 tiles, so 512x3072 gets 128 CTAs instead of 96; the N=3072
shapes only), ~06:47 UTC: SM90_WIDE 59.4 99.5 | SM90_WIDE_SWAP 68.4 114.1, without the B1/B2 decode
(debug_skip=1) 44.3 70.7, without the A decode 65.4 108.9. ncu on 512x3072 (~06:54): its decoders waited for
free decoded slots in 39% of their samples and its consumers for full ones in 38%: five 24-KiB slots
(two 96-row operands) hold 1.25 stages, all that fits beside the packed rings. 11 decoder warps
(n_dwg=3, ~06:50) gave 113.7, two sub-tiles per hand-off (~06:52) 116.9. Kept as a candidate (tested, not chosen).
104-row tiles of A (SM90_WIDE_104; the mainloop now takes a partial last S tile), 512x3072 in 120 CTAs
instead of 96, ~08:24 UTC: SM90_WIDE 101.2 104.4 59.8 101.0 | 104 rows, 9 slots, 2 sub-tiles per hand-off
93.9 178.2 56.3 94.6 (112 rows: 97.5 on 512x3072) | the same with whole-stage hand-offs (~08:26) 90.9 175.8
53.7 90.9; on 512x3072 8 slots 90.8, 11 decoder warps 90.3, decoder loop not unrolled 96.9 or unrolled 4x
93.7, 216 consumer registers 93.5. The 104-row CTA has 81% of the MMA
work but takes ~90% of the time: its consumers decode the same 256 rows of B1/B2 per K as before. ncu
(~08:26): 52% of the consumers' stall samples sit on decode instructions, 18% on HGMMA, 7% on barriers.
Consumer scales by one 64-bit load per half stage and one conversion per two rows (~08:34; 10% fewer
consumer instructions): SM90_WIDE 99.6, SM90_WIDE_104 88.8 on 512x3072. Building the fp16 bits of the
codes with integer ops instead of the E4M3 conversion (no F2FP, the same instruction count) was within
1% (~08:38) and is not used. SM90_WIDE_104 variants on 512x3072 (~09:06; 88.8 itself): 3 decoder warps
99.6, no wgmma left in flight during the decode 92.6, 8 slots 88.0.
In the evaluator (results/2026-11-23-h100-dual_gemm-7e22916.json) the chosen configs give
57.0 / 94.2 / 37.9 / 83.8 us against bf16-predecoded 69.9 / 102.6 / 41.4 / 79.8.
Decoder units indexed by adds instead of a division per unit (110 -> 97 instructions per unit, then 92
with the thread-constant swizzle offsets); the previous commit and this one run alternately in one
session: ~09:10 UTC (97 per unit) SM90_WIDE_104 90.2, 89.3 -> 83.7, 83.5 on 512x3072, SM90_WIDE 99.7,
100.4 -> 93.2, 95.0; ~09:15 UTC (92 per unit) SM90_WIDE_104 90.2, 89.0 -> 86.0, 84.9. The decoders'
instructions take issue slots from the consumers on the same schedulers. A unit of a whole 64-K row
(one scale load and one index update per 64 K; ~09:29, against the 32-K unit alternately) was not faster:
SM90_WIDE_104 84.4, 83.6 against 82.8, 84.4, SM90_WIDE 99.7, 100.8 against 91.6, 95.0; not kept. In the evaluator
(results/2026-11-23-h100-dual_gemm-b11a093.json): 53.4 / 89.8 / 35.8 / 79.6 us against
bf16-predecoded 70.3 / 102.4 / 41.7 / 80.2.
A third register set of B fragments, so that two wgmma groups stay in flight while the next chunk
decodes (~10:16 UTC, tune --quick against the two-set code in one run): SM90_WIDE_104 84.7 -> 84.6 on
512x3072; SM90_WIDE 97.0 -> 98.9 on 512x4096 (it needs 208 consumer registers: at 200 ptxas drained
every wgmma group at once, which tests/sm90_common.py now rejects; two sets with the same 208 gave 98.2).
The consumers are not waiting on the wgmma latency; not kept. Of their ~770 instructions per K tile
(SM90_WIDE_104 SASS), ~545 are the decode and ~90 uniform, 64 of these the per-HGMMA descriptors,
which constant ring slots would not remove.
The consumers' next packed words loaded before the current chunk's wgmma (~10:26 UTC, new / old / new /
old in one session): SM90_WIDE_104 81.5 84.5 83.6 84.5 on 512x3072, SM90_WIDE_SPLIT2 37.8 38.9 38.8 39.1
on 256x3072 and 60.5 56.9 56.7 56.8 on 256x4096, SM90_WIDE 97.3 97.0 98.3 97.2 on 512x4096: kept.
ncu on SM90_WIDE_104, 512x3072 (~10:29, at ncu's locked 1.42 GHz): issue slots 43% busy, 7.9 cycles per
issued instruction. The consumers' loop stall samples: dispatch 29%, selected 19%, not selected 17%,
wait 15%, math pipe throttle 14% (mostly on LOP3), barriers 1.4%. The decoders' loop: 27% waiting
on their barriers (try-wait loop): the decoders have slack, the consumers' decode is the critical path.
In the evaluator (results/2026-11-23-h100-dual_gemm-cbcdc34.json): 54.2 / 90.8 / 35.5 / 77.6 us.
Split-K with each CTA of the pair finishing half of the tile (half the hand-over of fp32 sums through
distributed shared memory and half the SiLU epilogue per CTA, instead of CTA 0 doing all of it; ~10:46
UTC, new / old / new / old): SM90_WIDE_SPLIT2 53.1 56.6 53.6 56.4 on 256x4096 and 35.1 38.4 34.9 38.2 on
256x3072. In the evaluator (results/2026-11-23-h100-dual_gemm-092fec1-run1.json, -run2) 50.2 / 90.4 /
32.6 (run 2) / 77.8 us against bf16-predecoded 69.9 / 103.0 / 42.0 / 80.2.
Tried and not kept (~11:08 UTC, the code of 092fec1 alternately): decoder threads that keep one chunk
column each and take rows 28 apart, so that a unit's addresses are per-batch registers plus compile-time
offsets (~74 instructions per unit instead of ~92): SM90_WIDE_104 81.6 / 81.2 against 80.9 / 80.8,
SM90_WIDE 93.2 / 92.9 against 94.0 / 93.7, SM90_WIDE_SPLIT2 54.2 / 53.9 against 53.7 / 53.8; the gemm's
m64 configs 4-6% slower. With consecutive threads on consecutive columns of one row instead (4-way
conflicting stores) SM90_WIDE_104 was 12% slower. Fewer decoder instructions no longer buy time now
that the decoders wait on their barriers (ncu above).
The decode's right shift as a multiply-high (IMAD.HI on the FMA pipe instead of SHF on the ALU pipe,
where the consumers' math-throttle stalls are; ~11:22 UTC, new / old / new / old): SM90_WIDE_104 94.9
83.5 94.8 83.4, SM90_WIDE 108.4 95.6 108.5 95.6 on 512x3072, the gemm configs 5-16% slower: not kept.
64-K consumer rounds (chunk_k=64: decode 8 words per thread, then 8 wgmmas per group; two tune runs
~11:57 UTC against 32-K rounds): SM90_WIDE_104 93.3 166.0 50.0 82.8 -> 92.3 164.0 49.5 81.9 and
79.5 155.4 48.3 80.7 -> 78.6 154.1 47.9 79.8 on the four shapes: ~1%, every shape, both runs; kept
for SM90_WIDE_104. SM90_WIDE cannot take them (at 200 registers ptxas serializes its wgmma groups).
Twice the independent decode per round buys only 1%, which points at issue and ALU-pipe slots
rather than latency (the ncu profile above). In the evaluator (results/2026-11-23-h100-dual_gemm-a4268b1.json):
50.6 / 91.0 / 32.6 / 76.5 us against bf16-predecoded 75.1 (best 69.5) / 101.8 / 41.2 / 80.1.
The roles swapped with a K split (SM90_WIDE_SWAP, splits=2: 128 CTAs of 128 x 96 on 256x3072 where
SM90_WIDE_SPLIT2 has 96), ~11:50 UTC: 37.8 against 35.5 us; B1/B2 tiles of 48 rows unsplit (128 CTAs):
40.6. Not kept: the swapped decoders (two S operands) cost more than the grid gains.
"""

from __future__ import annotations

from dataclasses import replace

from shared.cute.sm90_blockscaled_mainloop import K_TILE, Sm90Config

SMS = 132  # H100 SXM

# One consumer warpgroup (64 rows of B1 and of B2, 128 fp32 accumulators per thread) x 128 rows of A;
# 7 decoder warps publish a whole 256-K stage of decoded A per proxy fence into an 8-slot ring.
SM90_DEFAULT = Sm90Config(smem_rows=128, n_cwg=1, n_dwg=2, stages=2, a_slots=8, consumer_regs=232,
                          producer_regs=56, a_batch=4)
# M a multiple of 64 only: the same with 64 rows of A.
SM90_SMALL_M = Sm90Config(smem_rows=64, n_cwg=1, n_dwg=2, stages=4, a_slots=8, consumer_regs=232,
                          producer_regs=56, a_batch=4)
# Two consumer warpgroups (128 rows of B per CTA) x 64 rows of A: half the A decode per MMA.
SM90_WIDE_N = Sm90Config(smem_rows=64, n_cwg=2, n_dwg=2, stages=3, a_slots=8, consumer_regs=200,
                         producer_regs=56, a_batch=4)
# Two consumer warpgroups x 128 rows of A: a quarter of SM90_DEFAULT's A decode per MMA; 7 decoder
# warps publishing two sub-tiles at a time into a 7-slot decoded-A ring (shared memory is full:
# 2 stages of A, B1, B2 + 112 KiB of fp16).
SM90_WIDE = Sm90Config(smem_rows=128, n_cwg=2, n_dwg=2, stages=2, a_slots=7, consumer_regs=200,
                       producer_regs=56, a_batch=2, a_unroll=2)

# SM90_WIDE with K split over a cluster of 2 CTAs (the second one's sums added through distributed
# shared memory): twice the CTAs for grids that would leave half the SMs idle.
SM90_WIDE_SPLIT2 = replace(SM90_WIDE, splits=2)

# The roles swapped: A decoded by the consumers into registers (64 rows per warpgroup, each fragment
# used for both products), B1 and B2 decoded into shared memory, 96 rows each: a tile of 128 x 96,
# so that N = 3072 gives 32 tiles along N instead of 24.
SM90_WIDE_SWAP = Sm90Config(smem_rows=96, n_cwg=2, n_dwg=2, stages=2, a_slots=5, consumer_regs=200,
                            producer_regs=56, a_batch=4, a_unroll=2, swap_ab=True)

# SM90_WIDE with 104-row tiles of A (the last one partial): M = 512 in five tiles, so that N = 3072
# gives 120 CTAs of 104 x 128 instead of 96 of 128 x 128; the smaller decoded slots leave room for 9.
# Its smaller accumulators leave the registers for 64-K consumer rounds (SM90_WIDE would serialize).
SM90_WIDE_104 = replace(SM90_WIDE, smem_rows=104, a_slots=9, a_batch=4, chunk_k=64)

SM90_CANDIDATES = {"default": SM90_DEFAULT, "small_m": SM90_SMALL_M, "wide_n": SM90_WIDE_N, "wide": SM90_WIDE,
                   "wide_split2": SM90_WIDE_SPLIT2, "wide_swap": SM90_WIDE_SWAP, "wide_104": SM90_WIDE_104}


def choose_sm90(m: int, n: int, k: int) -> Sm90Config:
    """The config for one shape: the most MMA work per decoded A tile that still fills the GPU."""
    if m % 128 == 0 and n % 128 == 0:
        tiles = (m // 128) * (n // 128)
        if tiles >= 0.7 * SMS:
            # one wave either way: the 104-row tiles have less work per CTA
            return SM90_WIDE_104 if -(-m // 104) * (n // 128) <= SMS else SM90_WIDE
        if 2 * tiles <= SMS and (k // K_TILE) % 2 == 0:
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
