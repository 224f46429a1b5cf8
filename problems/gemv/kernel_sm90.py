"""Batched NVFP4 GEMV for Hopper (sm_90a): c[:, 0, l] = fp16(sum_k A*SFA * b*SFB), CUDA cores only.

The problem is memory-bound (one pass over A: K/2 bytes of codes plus K/16 bytes of scales per
row), so the design goal is to read A and SFA once at full DRAM bandwidth and keep the arithmetic
per byte small enough to hide behind the loads.

Algorithm
    * Prologue (every CTA, once): the vector's row 0 of b and sfb for batch l are decoded into
      shared memory: int8 lanes holding 2*b (exact), and f32 SFB/4 per 16-value block. For the
      16-byte A chunk c (32 FP4 values, 2 scale blocks) the 32 int8 lanes live in two planes
      (values 0..15 at plane 0 + 16c, values 16..31 at plane 1 + 16c) so that the per-lane
      16-byte shared loads of a warp are consecutive (conflict-free); SFB/4 pairs at 8c.
    * Main loop: a warp owns `rows` row groups of a row tile; within a row, lane kl of the
      `lanes` lanes of its row reads chunk kl + lanes*(kw + k_warps*s) at k-step s, i.e. every
      warp-wide 16-byte load covers 512 consecutive bytes (fully coalesced), and SFA is read as
      2 bytes per lane (64 consecutive bytes per warp), both with ld.global.nc.L1::no_allocate.
      The loads of `k_unroll` k-steps x `rows` rows are issued before any is consumed
      (`pin_loads` makes the block's first word depend on all of them: ptxas otherwise places
      each load just before its first use, one memory round trip per load). Register-free L2
      prefetches keep the next `prefetch` k-blocks (crossing into the CTA's next tile) in flight,
      and the first ones are requested before the vector decode so that it overlaps with DRAM.
    * FP4 decode without FP4 hardware (shared/cute/fp4_decode.py): per 32-bit word of A (8 codes)
      4 prmt table lookups split the codes into |2a| of the positive and of the negative ones,
      and 4 dp4a accumulate them against the int8 2b lanes: an exact integer dot product per
      16-value block, 11 integer instructions per 8 values. Per block:
      acc += float(dot) * (SFA * SFB/4), exact in f32 for the leaderboard data.
    * Reduction: butterfly shuffles over the `lanes` lanes of a row; with k_warps > 1 the warps
      of a row group add their partial sums through shared memory. fp16 store (round to nearest).
    * Scheduling: grid = (CTAs per batch, L); a CTA loops over row tiles of its batch. With
      ctas_per_sm > 0 the grid is persistent (each CTA gets the same number of tiles and decodes
      the vector once); with 0 it is one CTA per tile.

On the H100 the kernel takes about the time of a plain read of the same bytes, and loads-only
variants of it take the same time as the full kernel: the decode and the dot products are hidden
behind memory (results/TUNING.md).

Warp roles: none; every warp loads and computes (no TMA: a GEMV has no reuse to stage).

Constraints (can_implement): K % 64 == 0, M a multiple of the row tile, the k-steps of a row
divisible by k_warps, tensors 16-byte aligned (checked by the caller, problems/gemv/submission.py).

Run and time: `python -m scripts.tune_sm90 gemv` on an H100 (correctness against the reference
and a timing table per config); `python -m harness.eval gemv --mode benchmark --impl submission`.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass import Float16, Float32, Int32, Int64, Uint32

from problems.gemv.config import CHUNK_BYTES, WARP, GemvConfig, fits, lanes_per_row, tile_rows
from shared.cute import launch_queue
from shared.cute.compile_cache import CompileCache, compile_arch
from shared.cute.fp4_decode import (
    E2M1X2_TABLE_HI,
    E2M1X2_TABLE_LO,
    dot_e2m1x8_s8,
    e2m1x8_to_s8x8,
    e4m3x2_to_f32x2,
)
from shared.cute.launch_binding import PreparedLaunch
from shared.cute.pointers import gmem_ptr, null_ptr
from shared.cute.ptx import (
    ld_global_nc_u16,
    ld_global_nc_v4,
    ld_shared_f32,
    ld_shared_v2_f32,
    ld_shared_v4,
    prefetch_l2,
    st_shared_f32,
    st_shared_v2_f32,
    st_shared_v4,
)
from shared.devices import H100_SM_COUNT


class GemvSm90:
    """One compiled GEMV for a static (M, K, L, config, grid)."""

    arch = "sm_90a"  # the compile target

    def __init__(self, cfg: GemvConfig, m: int, k: int, l: int, sms: int = H100_SM_COUNT, b_rows: int = 128):
        ok, why = self.can_implement(cfg, m, k, l)
        if not ok:
            raise ValueError(f"GemvSm90: {why}")
        self.cfg = cfg
        self.m, self.k, self.l = m, k, l
        self.b_rows = b_rows  # the leaderboard pads the vector to 128 rows; row 0 is the vector
        self.lanes = lanes_per_row(k)  # lanes sharing one row
        self.row_groups = WARP // self.lanes  # rows covered by one warp-wide load
        self.chunks = k // (2 * CHUNK_BYTES)  # 16-byte chunks per row of A
        self.steps = self.chunks // self.lanes // cfg.k_warps  # k-steps per warp
        self.tile_rows = tile_rows(cfg, k)
        self.n_tiles = m // self.tile_rows
        self.threads = cfg.warps * WARP
        if cfg.ctas_per_sm > 0:
            # Equal tile counts per CTA: ceil(tiles / target) tiles each, as few CTAs as that needs.
            target = max(1, -(-cfg.ctas_per_sm * sms // l))
            per_cta = -(-self.n_tiles // target)
            self.grid_x = -(-self.n_tiles // per_cta)
        else:
            self.grid_x = self.n_tiles

    @classmethod
    def can_implement(cls, cfg: GemvConfig, m: int, k: int, l: int) -> tuple[bool, str]:
        """(True, "") if this kernel computes the shape with this config, else (False, why)."""
        if k % 64:
            return False, f"K={k} is not a multiple of 64"
        if m < 1 or l < 1:
            return False, f"empty problem M={m}, L={l}"
        if not fits(cfg, m, k):
            return False, (
                f"M={m} is not a multiple of the row tile {tile_rows(cfg, k)} or the "
                f"k-steps do not split over k_warps={cfg.k_warps} (K={k})"
            )
        smem = cls.VEC_PLANES * k // 2 + k // 4 + 4 * tile_rows(cfg, k) * cfg.k_warps
        if smem > 200 * 1024:
            return False, f"K={k} needs more shared memory than an SM has"
        return True, ""

    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        sfa_ptr: cute.Pointer,
        sfb_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        queue: launch_queue.Queue,
    ):
        # c is [M, 1, L] with strides (1, 1, M): one fp16 per (row, batch), batch-major.
        mC = cute.make_tensor(c_ptr, cute.make_layout(self.m * self.l))
        if cutlass.const_expr(self.cfg.min_ctas_per_sm > 0):
            # A register budget for min_ctas_per_sm resident CTAs (ptxas would otherwise spend
            # registers on instruction-level parallelism that the memory-bound loop does not need).
            launch_queue.launch(
                self.kernel(a_ptr, b_ptr, sfa_ptr, sfb_ptr, mC), queue,
                grid=[self.grid_x, self.l, 1],
                block=[self.threads, 1, 1],
                min_blocks_per_mp=self.cfg.min_ctas_per_sm,
                preferred_smem_carveout=100,
            )
        else:
            launch_queue.launch(self.kernel(a_ptr, b_ptr, sfa_ptr, sfb_ptr, mC), queue,
                                grid=[self.grid_x, self.l, 1], block=[self.threads, 1, 1])

    @cute.kernel
    def kernel(
        self, a_ptr: cute.Pointer, b_ptr: cute.Pointer, sfa_ptr: cute.Pointer, sfb_ptr: cute.Pointer, mC: cute.Tensor
    ):
        cfg = self.cfg
        K, M = self.k, self.m
        half_k, sf_k = K // 2, K // 16
        lanes, kw_n, rows, unroll = self.lanes, cfg.k_warps, cfg.rows, cfg.k_unroll

        tid, _, _ = cute.arch.thread_idx()
        bx, l, _ = cute.arch.block_idx()
        warp = tid // WARP
        lane = tid % WARP
        kw = warp % kw_n  # which K slice of the row group this warp reads
        rg = warp // kw_n  # row group of the tile
        kl = lane % lanes  # chunk lane within a row
        sub = lane // lanes  # row within one warp-wide load

        # ---- shared memory: decoded vector, SFB, cross-warp partial sums ----
        plane = self.chunks * CHUNK_BYTES  # bytes of one plane of the decoded vector
        sB = cute.arch.alloc_smem(cutlass.Uint8, self.VEC_PLANES * plane, alignment=16).toint()
        sSF = cute.arch.alloc_smem(Float32, sf_k, alignment=16).toint()
        sRed = Int32(0)
        if cutlass.const_expr(kw_n > 1):
            sRed = cute.arch.alloc_smem(Float32, kw_n * self.tile_rows, alignment=16).toint()

        a_batch = a_ptr.toint() + Int64(l) * (M * half_k)
        sfa_batch = sfa_ptr.toint() + Int64(l) * (M * sf_k)
        chunk0 = kl + lanes * kw  # first chunk this lane reads
        step_chunks = lanes * kw_n  # chunk stride between k-steps
        row_in_tile = rg * (rows * self.row_groups) + sub
        # L2 prefetch distance in k-steps (at most one tile ahead), and how much of the first tile
        # to request before the vector decode, which it overlaps.
        pf_steps = min(cfg.prefetch * unroll, self.steps)
        first_steps = min(2 * pf_steps, self.steps)
        if cutlass.const_expr(pf_steps > 0):
            a_first, sfa_first = self.row_addresses(a_batch, sfa_batch, bx * self.tile_rows + row_in_tile, chunk0)
            for u in cutlass.range_constexpr(first_steps):
                self.prefetch_step(a_first, sfa_first, u, step_chunks)

        # ---- prologue: decode the vector of batch l once per CTA ----
        self.decode_vector(
            b_ptr.toint() + Int64(l) * (self.b_rows * half_k),
            sfb_ptr.toint() + Int64(l) * (self.b_rows * sf_k),
            sB,
            sSF,
            tid,
        )
        cute.arch.barrier()

        # ---- main loop over row tiles of batch l ----
        sb_lane = sB + chunk0 * CHUNK_BYTES
        ssf_lane = sSF + chunk0 * 8

        persistent = self.grid_x < self.n_tiles
        for tile in cutlass.range(bx, self.n_tiles, self.grid_x, unroll=1):
            a_rows, sfa_rows = self.row_addresses(a_batch, sfa_batch, tile * self.tile_rows + row_in_tile, chunk0)
            a_next, sfa_next = a_rows, sfa_rows
            has_next = tile < 0  # false
            if cutlass.const_expr(persistent and pf_steps > 0):
                nxt = tile + self.grid_x
                a_next, sfa_next = self.row_addresses(a_batch, sfa_batch, nxt * self.tile_rows + row_in_tile, chunk0)
                has_next = nxt < self.n_tiles
            acc = cute.make_rmem_tensor((rows,), Float32)
            for r in cutlass.range_constexpr(rows):
                acc[r] = Float32(0.0)

            # k-blocks of `unroll` k-steps: L2-prefetch the k-step pf_steps ahead (in this tile or
            # the head of the next one), issue this block's loads, then its arithmetic.
            n_blocks = self.steps // unroll
            for blk in cutlass.range(n_blocks, unroll=1):
                if cutlass.const_expr(pf_steps > 0):
                    for u in cutlass.range_constexpr(unroll):
                        ahead = blk * unroll + u + pf_steps
                        if ahead < self.steps:
                            self.prefetch_step(a_rows, sfa_rows, ahead, step_chunks)
                        if cutlass.const_expr(persistent):
                            if ahead >= self.steps:
                                if has_next:
                                    self.prefetch_step(a_next, sfa_next, ahead - self.steps, step_chunks)
                a_words, sfa_bits = self.load_a(a_rows, sfa_rows, blk * unroll, unroll, step_chunks)
                a_words = pin_loads(a_words, sfa_bits, lane)
                self.k_block(acc, a_words, sfa_bits, sb_lane, ssf_lane, blk * unroll, unroll, step_chunks)
            tail = self.steps % unroll
            if cutlass.const_expr(tail):
                if cutlass.const_expr(pf_steps > 0):
                    for u in cutlass.range_constexpr(tail):
                        ahead = n_blocks * unroll + u + pf_steps
                        if cutlass.const_expr(ahead < self.steps):
                            self.prefetch_step(a_rows, sfa_rows, ahead, step_chunks)
                        elif cutlass.const_expr(persistent):
                            if has_next:
                                self.prefetch_step(a_next, sfa_next, ahead - self.steps, step_chunks)
                a_words, sfa_bits = self.load_a(a_rows, sfa_rows, n_blocks * unroll, tail, step_chunks)
                a_words = pin_loads(a_words, sfa_bits, lane)
                self.k_block(acc, a_words, sfa_bits, sb_lane, ssf_lane, n_blocks * unroll, tail, step_chunks)

            # Butterfly over the lanes of one row: every lane ends with the row's sum.
            for r in cutlass.range_constexpr(rows):
                acc[r] = row_sum(acc[r], lanes)

            out_base = l * M + tile * self.tile_rows
            if cutlass.const_expr(kw_n == 1):
                if kl == 0:
                    for r in cutlass.range_constexpr(rows):
                        mC[out_base + row_in_tile + r * self.row_groups] = acc[r].to(Float16)
            else:
                if kl == 0:
                    for r in cutlass.range_constexpr(rows):
                        slot = kw * self.tile_rows + row_in_tile + r * self.row_groups
                        st_shared_f32(sRed + slot * 4, acc[r])
                cute.arch.barrier()
                for i in cutlass.range(tid, self.tile_rows, self.threads, unroll=1):
                    total = Float32(0.0)
                    for j in cutlass.range_constexpr(kw_n):
                        total = total + ld_shared_f32(sRed + (j * self.tile_rows + i) * 4)
                    mC[out_base + i] = total.to(Float16)
                cute.arch.barrier()

    # ---- device helpers: plain Python, run while the kernel is traced (their loops unroll) ----
    VEC_PLANES = 2  # the decoded vector: 2 planes of 16 bytes (int8 2b) per 16-byte chunk of A
    SFB_FACTOR = 0.25  # undoes the factor 2 in both int8 operands of the dot products (exact)

    @cute.jit
    def decode_vector(self, b_row: Int64, sfb_row: Int64, sB: Int32, sSF: Int32, tid: Int32):
        """Row 0 of b and sfb (this batch) -> shared memory, the CTA's threads striding over chunks.

        Every load first (one L2 round trip, not one per chunk); a thread past the last chunk
        redoes the last one, which stores the same bytes again.
        """
        plane = self.chunks * CHUNK_BYTES
        n_iter = -(-self.chunks // self.threads)
        cs, ws, ss = [], [], []
        for i in cutlass.range_constexpr(n_iter):
            c = tid + i * self.threads
            if cutlass.const_expr(self.chunks % self.threads):
                c = cutlass.min(c, self.chunks - 1)
            cs.append(c)
            ws.append(ld_global_nc_v4(b_row + Int64(c) * CHUNK_BYTES))
            ss.append(ld_global_nc_u16(sfb_row + Int64(c) * 2))
        for i in cutlass.range_constexpr(n_iter):
            self.store_vector_chunk(ws[i], sB + cs[i] * CHUNK_BYTES, plane)
            s0, s1 = e4m3x2_to_f32x2(ss[i])
            st_shared_v2_f32(sSF + cs[i] * 8, s0 * Float32(self.SFB_FACTOR), s1 * Float32(self.SFB_FACTOR))

    def store_vector_chunk(self, w, dst, plane: int):
        """16 bytes of the vector (32 codes) -> int8 2b: values 0..15 at dst, 16..31 at dst + plane."""
        tbl_lo, tbl_hi = Uint32(E2M1X2_TABLE_LO), Uint32(E2M1X2_TABLE_HI)
        b00, b01 = e2m1x8_to_s8x8(w[0], tbl_lo, tbl_hi)
        b10, b11 = e2m1x8_to_s8x8(w[1], tbl_lo, tbl_hi)
        b20, b21 = e2m1x8_to_s8x8(w[2], tbl_lo, tbl_hi)
        b30, b31 = e2m1x8_to_s8x8(w[3], tbl_lo, tbl_hi)
        st_shared_v4(dst, b00, b01, b10, b11)
        st_shared_v4(dst + plane, b20, b21, b30, b31)

    def row_addresses(self, a_batch, sfa_batch, first_row, chunk0):
        """The lane's address of its first chunk of A and of SFA in its first row group.

        The other row groups and k-steps are at compile-time offsets from these two (immediates
        in the load instructions), which keeps the address registers to two 64-bit values.
        """
        row = Int64(first_row)
        return (a_batch + row * (self.k // 2) + chunk0 * CHUNK_BYTES, sfa_batch + row * (self.k // 16) + chunk0 * 2)

    def offsets(self, r: int, u: int, step_chunks: int) -> tuple[int, int]:
        """Byte offsets of row group r, k-step u (relative to row_addresses) in A and in SFA."""
        row = r * self.row_groups
        return (row * (self.k // 2) + u * step_chunks * CHUNK_BYTES, row * (self.k // 16) + u * step_chunks * 2)

    def prefetch_step(self, a_lane, sfa_lane, step, step_chunks: int):
        """L2 prefetch of k-step `step` for every row group: fire and forget, no registers."""
        a_step = a_lane + Int64(step) * (step_chunks * CHUNK_BYTES)
        sfa_step = sfa_lane + Int64(step) * (step_chunks * 2)
        for r in range(self.cfg.rows):
            off_a, off_s = self.offsets(r, 0, step_chunks)
            prefetch_l2(a_step + off_a)
            prefetch_l2(sfa_step + off_s)

    def load_a(self, a_lane, sfa_lane, step0, n_steps: int, step_chunks: int):
        """Issue every global load of n_steps k-steps x all row groups (16 B of A + 2 B of SFA each).

        Returns the A words and SFA bits, k-step major, row group minor.
        """
        a_blk = a_lane + Int64(step0) * (step_chunks * CHUNK_BYTES)
        sfa_blk = sfa_lane + Int64(step0) * (step_chunks * 2)
        a_words, sfa_bits = [], []
        for u in range(n_steps):
            for r in range(self.cfg.rows):
                off_a, off_s = self.offsets(r, u, step_chunks)
                a_words.append(ld_global_nc_v4(a_blk + off_a))
                sfa_bits.append(ld_global_nc_u16(sfa_blk + off_s))
        return a_words, sfa_bits

    def k_block(self, acc, a_words, sfa_bits, sb_lane, ssf_lane, step0, n_steps: int, step_chunks: int):
        """The arithmetic of n_steps k-steps for all row groups of a warp.

        acc: rmem tensor of the row groups' f32 sums; a_words/sfa_bits: what load_a returned
        (k-step major, row group minor); sb_lane/ssf_lane: the lane's first chunk of the decoded
        vector / SFB in shared memory; step0: first k-step (dynamic).
        """
        rows = len(a_words) // n_steps
        plane = self.chunks * CHUNK_BYTES
        tbl_lo, tbl_hi = Uint32(E2M1X2_TABLE_LO), Uint32(E2M1X2_TABLE_HI)
        for u in range(n_steps):
            s = Int32(step0) + u
            b_lo = ld_shared_v4(sb_lane + s * (step_chunks * CHUNK_BYTES))  # 2b, values 0..15
            b_hi = ld_shared_v4(sb_lane + plane + s * (step_chunks * CHUNK_BYTES))  # values 16..31
            sfb = ld_shared_v2_f32(ssf_lane + s * (step_chunks * 8))
            for r in range(rows):
                w = a_words[u * rows + r]
                p, n = dot_e2m1x8_s8(w[0], b_lo[0], b_lo[1], Int32(0), Int32(0), tbl_lo, tbl_hi)
                p, n = dot_e2m1x8_s8(w[1], b_lo[2], b_lo[3], p, n, tbl_lo, tbl_hi)
                d0 = p - n
                p, n = dot_e2m1x8_s8(w[2], b_hi[0], b_hi[1], Int32(0), Int32(0), tbl_lo, tbl_hi)
                p, n = dot_e2m1x8_s8(w[3], b_hi[2], b_hi[3], p, n, tbl_lo, tbl_hi)
                d1 = p - n
                sa0, sa1 = e4m3x2_to_f32x2(sfa_bits[u * rows + r])
                acc[r] = acc[r] + d0.to(Float32) * (sa0 * sfb[0]) + d1.to(Float32) * (sa1 * sfb[1])


def pin_loads(a_words, sfa_bits, lane):
    """Make the first word of the block depend on every load of the block, at run time a no-op.

    ptxas otherwise places each load just ahead of its first use, so a warp waits for one memory
    round trip per load instead of one per k-block. XOR-ing all loaded values, passing the result
    through a shuffle from the lane itself (opaque to the compiler) and XOR-ing it with the
    unshuffled value gives 0 that the compiler cannot prove is 0.
    """
    x = sfa_bits[0]
    for bits in sfa_bits[1:]:
        x = x ^ bits
    for w in a_words:
        x = x ^ w[0]
    zero = Uint32(cute.arch.shuffle_sync(x, offset=lane)) ^ x
    first = list(a_words[0])
    first[0] = first[0] ^ zero
    return [first] + list(a_words[1:])


def row_sum(v, lanes: int):
    """Sum of v over the `lanes` consecutive lanes of a row (lanes a power of two), in every lane.

    Plain Python, run while tracing: the loop unrolls into log2(lanes) butterfly shuffles.
    """
    off = lanes // 2
    while off > 0:
        v = v + cute.arch.shuffle_sync_bfly(v, offset=off)
        off //= 2
    return v


# ------------------------------------------------------------------------------------------------
# host side: compile once per static key, bind to the tensors (shared with kernel_sm100.py)
# ------------------------------------------------------------------------------------------------

_COMPILED = CompileCache()  # static key -> compiled launcher


def compile_gemv(kernel_cls, cfg: GemvConfig, m: int, k: int, l: int, sms: int, b_rows: int = 128,
                 options: str = ""):
    """The compiled launcher of kernel_cls for this static key (M, K, L, config, SM count, vector
    rows), built once against null pointers (no GPU needed). Raises ValueError where the kernel does
    not take the shape (can_implement)."""

    def build():
        arch = kernel_cls.arch
        u8 = null_ptr(cutlass.Uint8)
        with compile_arch(arch):
            return cute.compile(kernel_cls(cfg, m, k, l, sms=sms, b_rows=b_rows), u8, u8, u8, u8,
                                null_ptr(Float16, align=2), launch_queue.placeholder(),
                                options=f"--gpu-arch {arch} {options}".strip())

    return _COMPILED.get((kernel_cls.__name__, m, k, l, b_rows, cfg, sms, options), build)


def batch_major(t) -> bool:
    """[rows, cols, L] stored as contiguous (L, rows, cols): the leaderboard's layout."""
    rows, cols, n_l = t.shape
    return t.stride() == (cols, 1, rows * cols) or (n_l == 1 and t.stride()[:2] == (cols, 1))


def prepare_gemv(kernel_cls, data, cfg: GemvConfig, sms: int):
    """The leaderboard tuple (checked by the caller: shared.inputs.check_block_scaled) bound to the
    compiled kernel, or None where the kernel does not take it (K % 64, M not a multiple of the row
    tile, a layout other than the leaderboard's, misaligned views): the caller's portable path then
    runs. A c in another layout than batch-major is written through a scratch tensor."""
    import torch

    a, b, sfa, sfb, _, _, c = data
    m, half_k, l = a.shape
    k = 2 * half_k
    if not kernel_cls.can_implement(cfg, m, k, l)[0]:
        return None
    if not all(t.data_ptr() % 16 == 0 and batch_major(t) for t in (a, b, sfa, sfb)):
        return None
    fn = compile_gemv(kernel_cls, cfg, m, k, l, sms, b_rows=b.shape[0])
    u8 = cutlass.Uint8
    ins = [gmem_ptr(a, u8), gmem_ptr(b, u8), gmem_ptr(sfa, u8), gmem_ptr(sfb, u8)]
    c_batch_major = c.stride()[0] == 1 and (l == 1 or c.stride()[2] == m)
    if c_batch_major and c.data_ptr() % 2 == 0:
        return PreparedLaunch(fn, [*ins, gmem_ptr(c, Float16, align=2)], c.device)
    out = torch.empty((l, m, 1), dtype=torch.float16, device=c.device).permute(1, 2, 0)
    launch = PreparedLaunch(fn, [*ins, gmem_ptr(out, Float16, align=2)], c.device, hold=out)

    def through_scratch():
        launch()
        c.copy_(out)

    return through_scratch


def prepare(data, cfg: GemvConfig, sms: int):
    """custom_kernel's sm_90 path: see prepare_gemv."""
    return prepare_gemv(GemvSm90, data, cfg, sms)
