"""Batched NVFP4 GEMV for Blackwell (sm_100a, B200): CUDA cores with hardware E2M1 conversion.

Compiled for sm_100a in CI; not run here (no B200). Same problem as kernel_sm90.py:
c[:, 0, l] = fp16(sum_k A*SFA * b*SFB), memory-bound: one pass over A and SFA.

Why not tcgen05: a GEMV has N = 1 (the leaderboard pads the vector to 128 rows only so that
cuBLAS can run); an MMA would spend 127/128 of its work on junk rows and needs the scales in the
permuted layout staged through TMEM. The CUDA cores have ample headroom for 0.56 bytes per value.

Design (shared with the Hopper kernel: the schedule, address arithmetic and reductions come from
GemvSm90; only the decode and the inner product differ)
    * Loads: 16-byte `ld.global.nc.L1::no_allocate` of A by all lanes (512 consecutive bytes per
      warp instruction) and 2-byte loads of the plain SFA (64 consecutive bytes per warp), no TMA
      and no shared-memory staging: A is read exactly once. SM100_DEFAULT (config.py) issues
      4 k-steps x 2 rows = 8 loads of 16 B per lane before using any (pinned together, see
      GemvSm90), plus register-free L2 prefetches of the next k-block; persistent CTAs (3 per SM).
    * Vector: b row 0 of batch l decoded once per CTA into shared memory as f16 pairs (4 planes of
      16 bytes per 16-byte chunk of A, so a warp's shared loads are consecutive), SFB as f32.
    * Decode + math: `cvt.rn.f16x2.e2m1x2` turns a byte of A (2 codes) into an f16 pair in one
      instruction, `fma.rn.f16x2` multiplies it with the vector's pair; the 8 products of one
      16-value scale block accumulate per half lane in f16, which is exact (products of two
      E2M1 values are multiples of 1/4 with |p| <= 36, so |sum| <= 288 fits f16's 11 bits).
      The two halves are added in f32 and scaled: acc += (lo + hi) * (SFA * SFB).
      Per 16 bytes of A: 16 cvt + 16 hfma2 + ~10 for scales: ~2.6 instructions per byte.
    * Split-K: warps of a CTA split K (k_warps, reduced through shared memory) when M*L is too
      small to give every SM work; row-tile CTAs per batch on grid.y = L otherwise.

Expected B200 time — an ESTIMATE (`python -m scripts.b200 --model`), not a measurement: DRAM-bound,
bytes = A (MK/2) + SFA (MK/16) + the vector + C (2M), per batch, at 8 TB/s, + 0.5 us launch and tail:
  (7168, 16384, 1):  66.1 MB ->  8.26 us; expected ~8.8 us  (SOL 8.622)
  (4096, 7168, 8):  132.2 MB -> 16.53 us; expected ~17.0 us (SOL 17.275)
  (7168, 2048, 4):   33.1 MB ->  4.14 us; expected ~4.6 us  (SOL 4.317)
The decode is ~2.6 instructions per byte of A: 66 MB x 2.6 / (148 SMs x 4 x 32 lanes x 1.9 GHz)
~ 4.7 us, below the DRAM time, so the kernel stays memory-bound if the loads keep ~8 x 16 bytes in
flight per lane (the sm90 twin reaches 0.97x a plain read of the same bytes on the H100). Not measured on a B200.

Run (on a B200): `python -m harness.eval gemv --mode benchmark --impl submission`.
"""

from __future__ import annotations

from cutlass import Int32

from problems.gemv.config import CHUNK_BYTES
from problems.gemv.kernel_sm90 import GemvSm90, prepare_gemv
from shared.cute.fp4_decode import (
    e2m1x8_to_f16x8,
    e4m3x2_to_f32x2,
    f16x2_sum_f32,
)
from shared.cute.ptx import (
    hfma2,
    ld_shared_v2_f32,
    ld_shared_v4,
    st_shared_v4,
)


class GemvSm100(GemvSm90):
    """The Hopper kernel's schedule with the sm_100a decode: E2M1 -> f16x2 in hardware, hfma2."""

    arch = "sm_100a"  # the compile target
    VEC_PLANES = 4  # the decoded vector: f16, 4 planes of 16 bytes (8 values) per chunk of A
    SFB_FACTOR = 1.0  # f16 operands carry the true E2M1 values

    def store_vector_chunk(self, w, dst, plane: int):
        """16 bytes of the vector -> f16 pairs: values 8q..8q+7 at dst + q * plane."""
        for q in range(4):
            h = e2m1x8_to_f16x8(w[q])
            st_shared_v4(dst + q * plane, h[0], h[1], h[2], h[3])

    def k_block(self, acc, a_words, sfa_bits, sb_lane, ssf_lane, step0, n_steps: int, step_chunks: int):
        """The arithmetic of n_steps k-steps for all row groups (loads issued by load_a)."""
        rows = len(a_words) // n_steps
        plane = self.chunks * CHUNK_BYTES
        zero = Int32(0)  # f16x2 (+0, +0)
        for u in range(n_steps):
            s = Int32(step0) + u
            vec = [ld_shared_v4(sb_lane + q * plane + s * (step_chunks * CHUNK_BYTES)) for q in range(4)]
            sfb = ld_shared_v2_f32(ssf_lane + s * (step_chunks * 8))
            for r in range(rows):
                w = a_words[u * rows + r]
                blocks = []
                for blk in range(2):  # words 2blk, 2blk+1 = one 16-value scale block
                    h = zero
                    for q in (2 * blk, 2 * blk + 1):
                        a_h = e2m1x8_to_f16x8(w[q])
                        for j in range(4):
                            h = hfma2(a_h[j], vec[q][j], h)
                    blocks.append(f16x2_sum_f32(h))
                sa0, sa1 = e4m3x2_to_f32x2(sfa_bits[u * rows + r])
                acc[r] = acc[r] + blocks[0] * (sa0 * sfb[0]) + blocks[1] * (sa1 * sfb[1])


def prepare(data, cfg, sms: int):
    """custom_kernel's sm_100 path: the sm90 kernel's host side (prepare_gemv) with this kernel."""
    return prepare_gemv(GemvSm100, data, cfg, sms)
