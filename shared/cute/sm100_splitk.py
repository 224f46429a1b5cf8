"""Blackwell (sm_100a) block-scaled GEMM with A and B swapped and K split over a thread-block cluster.

For a GEMM whose M is small (the leaderboard's M = 128) the persistent kernel of sm100_gemm.py makes
too few output tiles to fill the SMs. This variant of it, built on the same mainloop and kernel body:
  * swaps the operands: the MMA's A (its 128 rows) is the problem's B, so N fills the MMA's M side,
    and the MMA's B (`tile_n` = 64 or 128 columns) is the problem's A; the accumulator is
    D[n, m] = C[m, n], stored through a transposed (N, M, L) view of the row-major C (thread t of the
    epilogue holds accumulator row n = t, so a warp's store of one m is 32 consecutive n: 64 bytes);
  * splits the K blocks of each output tile over a cluster of `splits` CTAs (grid = splits x tiles,
    cluster = splits x 1 x 1, one output tile per cluster): rank r accumulates K blocks
    splitk_k_range(r, splits, K / 256) in its own tensor memory;
  * reduces the fp32 partials through distributed shared memory (shared/cute/cluster_reduce.py, the
    exchange the sm90 split-K uses too): accumulator subtile `sub` (32 columns) belongs to rank
    splitk_owner(sub); every other rank reads that subtile from tensor memory (tcgen05.ld) and stores
    it into the owner's exchange buffer (mapa + st.shared::cluster) at slot splitk_slot(...); the
    owner keeps its own subtiles in registers. One cluster barrier later the owner adds the received
    partials and stores fp16 to C.

Why one barrier and a buffer of its own (where the sm90 kernel uses two barriers and reuses its
operand rings): the stage ring of a CTA may still be filled by TMA or read by MMAs when another CTA
of its cluster is done, so a partial cannot land there without a first barrier; and the TMA and MMA
warps reach a barrier only after their roles, the MMA warp only once the epilogue has handed the
accumulator back. With a dedicated exchange buffer (sm100_config.splitk_exchange_bytes, taken from
the stage ring's budget) the epilogue reads all of its tensor memory, sends, hands the accumulator
back, and meets the TMA and MMA warps at the single barrier that publishes the partials. Before it,
one relaxed barrier phase (arrive at set-up, wait before the first send) makes sure every CTA of the
cluster runs before its shared memory is written.

The configs (problems/gemm/config.py GemmSm100SplitKConfig, chooser `choose_sm100_splitk`) and the
slot arithmetic (sm100_config: splitk_owner, splitk_slot, splitk_k_range) are plain Python; the host
emulation in tests/movement_emulator.py walks the same functions.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from shared.cute import sm100_blockscaled as bs
from shared.cute.cluster_reduce import add_partial, cluster_handshake, send_partial
from shared.cute.sm100_config import (
    EPI_SUBTILE,
    SF_ATOM_ROWS,
    splitk_exchange_bytes,
    splitk_owner,
    splitk_slot,
)
from shared.cute.sm100_gemm import Sm100BlockScaledGemm


def make_output_transposed(ptr: cute.Pointer, m, n, l) -> cute.Tensor:
    """(N, M, L) view of the row-major fp16 output C [L][M][N]: element (n, m, b) is C[b, m, n]."""
    n_div = cute.assume(n, divby=SF_ATOM_ROWS)
    m_div = cute.assume(m, divby=SF_ATOM_ROWS)
    batch_stride = cute.assume(m * n, divby=SF_ATOM_ROWS * SF_ATOM_ROWS)
    return cute.make_tensor(ptr, cute.make_layout((n_div, m_div, l), stride=(1, n_div, batch_stride)))


class SplitKScheduler(bs.TileScheduler):
    """One output tile per cluster: cluster y of the grid (splits, tiles, 1) takes tile y (M-fastest
    numbering, as TileScheduler); its CTA of rank `split` accumulates K blocks
    [split * K / splits, (split + 1) * K / splits) (K = the problem's K blocks, integer division), the
    formula of sm100_config.splitk_k_range."""

    def __init__(self, tiles_m, tiles_n, tiles_l, splits: int, k_tile_cnt, split=None):
        super().__init__(tiles_m, tiles_n, tiles_l)
        self.splits = splits
        self.k_tile_cnt = cutlass.Int32(k_tile_cnt)
        self.split = cutlass.Int32(cute.arch.block_idx_in_cluster() if split is None else split)

    def __extract_mlir_values__(self):
        return super().__extract_mlir_values__() + [v.ir_value() for v in (self.k_tile_cnt, self.split)]

    def __new_from_mlir_values__(self, values):
        tm, tn, tl, kc, sp = (cutlass.Int32(v) for v in values)
        return SplitKScheduler(tm, tn, tl, self.splits, kc, sp)

    def first(self):
        _, tile, _ = cute.arch.block_idx()
        return cutlass.Int32(tile)

    def next(self, tile):
        _, clusters, _ = cute.arch.grid_dim()
        return tile + cutlass.Int32(clusters)  # the grid has one cluster per tile: past the last tile

    def k_tiles(self, tile, k_tile_cnt):
        return (self.split + 1) * k_tile_cnt // self.splits - self.split * k_tile_cnt // self.splits

    def k_block(self, tile, k_step):
        return self.split * self.k_tile_cnt // self.splits + k_step


class Sm100SplitKSwapGemm(Sm100BlockScaledGemm):
    """C = fp16(epilogue_value(A . B^T)) with A and B swapped and K split over a cluster (module
    docstring). A subclass adds `epilogue_value` and the host `__call__`, as for the base class."""

    num_b = 1

    def __init__(self, config):
        super().__init__(config)
        self.splits = config.splits
        self.subtiles = config.tile_n // EPI_SUBTILE
        self.vectors = EPI_SUBTILE // 4  # 16-byte vectors per thread and subtile
        self.exchange_bytes = splitk_exchange_bytes(config.tile_n, config.splits)

    @staticmethod
    def can_implement(m: int, n: int, k: int, l: int, config) -> bool:
        try:
            bs.check_problem(n, m, k, l, config.tile_n)  # the swapped roles
            config.check_shape(m, n, k, l)
            config.mainloop()
        except ValueError:
            return False
        return True

    # ------------------------------------------------------------------ host side (inside @cute.jit)
    def operand_views(self, a_ptr, b_ptrs, sfa_ptr, sfb_ptrs, c_ptr, problem):
        """The swap: the MMA's A is B (N rows), its B is A (M rows), its output C transposed."""
        m, n, k, l = problem
        (b_ptr,), (sfb_ptr,) = b_ptrs, sfb_ptrs
        mA = bs.make_kmajor_operand(b_ptr, n, k, l)
        mB = bs.make_kmajor_operand(a_ptr, m, k, l)
        mSFA = bs.make_scale_operand(sfb_ptr, mA)
        mSFB = bs.make_scale_operand(sfa_ptr, mB)
        return mA, [mB], mSFA, [mSFB], make_output_transposed(c_ptr, m, n, l)

    def launch_shape(self, mC):
        """grid = splits x output tiles, clusters of `splits` CTAs along x."""
        tiles_m, tiles_n, tiles_l = bs.tile_counts(mC, self.config.tile_n)
        return (self.splits, tiles_m * tiles_n * tiles_l, 1), (self.splits, 1, 1)

    # ------------------------------------------------------------------ device side: the base kernel's hooks
    def scheduler(self, mC, k_tile_cnt):
        return SplitKScheduler(*bs.tile_counts(mC, self.config.tile_n), self.splits, k_tile_cnt)

    def setup_epilogue(self, smem):
        """The exchange buffer the other ranks' partials land in (fp32, 128-byte aligned), and this
        thread's arrival on the cluster barrier that says the CTA runs: a CTA may write another's
        shared memory only once that CTA has started, so every thread waits on this phase before the
        first send (the epilogue warps) or before the handshake (the TMA and MMA warps)."""
        buf = smem.allocate_tensor(bs.ACC_DTYPE, cute.make_layout(self.exchange_bytes // 4), byte_alignment=128)
        cute.arch.cluster_arrive_relaxed()
        return buf.iterator

    @cute.jit
    def producer_warps_tail(self, warp_idx):
        """The TMA and MMA warps, done with their roles, complete the start phase and take part in the
        epilogue's cluster barrier (every thread of the cluster must arrive at both)."""
        if warp_idx >= bs.MMA_WARP:
            cute.arch.cluster_wait()
            cluster_handshake()

    @cute.jit
    def epilogue(self, tidx, sched, acc_pipeline, tmem, epilogue_barrier, acc_layout, tCgC, epilogue_smem):
        """The epilogue warps of rank `sched.split`: send the partials of the subtiles other ranks own,
        keep their own in registers, hand the accumulator back, meet the cluster at its barrier, add
        the received partials and store fp16 to C (module docstring)."""
        splits, subtiles, vectors = self.splits, self.subtiles, self.vectors
        threads = 32 * len(bs.EPILOGUE_WARPS)
        acc_tmem_ptr, tCtAcc = self.ml.acquire_accumulators(tmem, acc_layout)
        tiled_t2r, tTR_tAcc, tTR_gC = self.ml.make_epilogue_copy(tidx, tCtAcc, tCgC)
        frag_shape = tTR_gC[(None, None, None, 0, 0, 0, 0, 0)].shape
        sent = cute.make_rmem_tensor(frag_shape, bs.ACC_DTYPE)
        kept = [cute.make_rmem_tensor(frag_shape, bs.ACC_DTYPE) for _ in range(subtiles // splits)]
        tTR_rC = cute.make_rmem_tensor(frag_shape, bs.C_DTYPE)
        store_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), bs.C_DTYPE)
        buf = epilogue_smem.toint()
        rank = sched.split

        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ml.num_acc_stage)
        tile = sched.first()
        tm, tn, tl = sched.coord(tile)
        acc_pipeline.consumer_wait(acc_state)
        cute.arch.cluster_wait()  # every CTA of the cluster runs (setup_epilogue's arrival)
        for sender in cutlass.range_constexpr(splits):
            if rank == sender:
                for sub in cutlass.range_constexpr(subtiles):
                    owner = splitk_owner(sub, splits)
                    if cutlass.const_expr(owner == sender):
                        cute.copy(tiled_t2r, tTR_tAcc[(None, None, None, 0, sub, 0)], kept[sub // splits])
                    else:
                        cute.copy(tiled_t2r, tTR_tAcc[(None, None, None, 0, sub, 0)], sent)
                        # tcgen05.ld is asynchronous: its registers are valid after tcgen05.wait::ld.
                        cute.arch.fence_view_async_tmem_load()
                        slot = splitk_slot(sender, owner, sub, splits, subtiles) * vectors
                        send_partial(sent, range(vectors), buf, slot, tidx, threads, owner)
        cute.arch.fence_view_async_tmem_load()
        # Every TMEM read of the accumulator has completed: hand it back (the MMA warp's tail waits).
        acc_pipeline.consumer_release(acc_state)
        cluster_handshake()

        tTR_gC_tile = tTR_gC[(None, None, None, 0, None, tm, tn, tl)]
        for sub in cutlass.range_constexpr(subtiles):
            owner = splitk_owner(sub, splits)
            if rank == owner:
                for sender in cutlass.range_constexpr(splits):
                    if cutlass.const_expr(sender != owner):
                        slot = splitk_slot(sender, owner, sub, splits, subtiles) * vectors
                        add_partial(kept[sub // splits], range(vectors), buf, slot, tidx, threads)
                tTR_rC.store(self.epilogue_value([kept[sub // splits]]).to(bs.C_DTYPE))
                cute.copy(store_atom, tTR_rC, tTR_gC_tile[(None, None, None, sub)])

        self.ml.release_accumulators(tmem, epilogue_barrier, acc_tmem_ptr)
