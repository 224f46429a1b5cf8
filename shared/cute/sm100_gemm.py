"""Blackwell (sm_100a) NVFP4 GEMM family: the kernel gemm and dual_gemm share, all but the stored value.

`Sm100BlockScaledGemm` owns the host function's body (operand views, TMA atoms, shared storage,
persistent launch) and the whole kernel on the mainloop of shared/cute/sm100_blockscaled.py: the
CTA setup, the operand partitions, the TMA and MMA warps, and the epilogue warps' tile loop, which
reads a tile's `num_b` accumulators 32 columns at a time and stores fp16(`epilogue_value`).

A subclass writes only what differs (problems/gemm/kernel_sm100.py, problems/dual_gemm/kernel_sm100.py):
  * `num_b`, the B operands that share A, and `operand_order`, the order of the (TMA atom, tensor)
    pairs in the kernel's parameters (part of the compiled kernel: each kernel keeps its own);
  * `epilogue_value(accs)`: the values to store, from the accumulator registers of the B operands;
  * a `@cute.jit __call__` that names its pointers and hands them to `launch` (the host function's
    signature is the launch's calling convention, so it stays explicit).
A config whose mainloop has `cta_group = 2` gets the CTA-pair kernel from the same code: clusters of
(2, 1, 1), `PairTileScheduler`, each CTA's MMA slice by its rank in the cluster, the B scales' TMA
split over the pair and multicast, the MMA role on the leader only (sm100_blockscaled's docstring).
A variant with other operand roles, schedule or epilogue overrides the kernel's hooks instead of
copying it: `operand_views` and `launch_shape` (host), `scheduler`, `setup_epilogue`,
`producer_warps_tail` and `epilogue` (device); shared/cute/sm100_splitk.py (A/B swapped, split-K over
a cluster) is one.
The grouped GEMM (problems/group_gemm/kernel_sm100.py) has its own host function, schedule, TMA
descriptors and epilogue; from here it takes the mainloop set-up, the operand partitions
(`tile_operands`, `partition_operands`) and the MMA warp (`mma_role`).
"""

# No `from __future__ import annotations`: `launch` is plain Python (not preprocessed by the DSL), and
# the shared-storage struct it declares reads its fields from evaluated annotations.
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync

from shared.cute import launch_queue
from shared.cute import sm100_blockscaled as bs


def staged_buffers(sA, sSFA, sB, sSFB) -> dict:
    """The shared-memory stage buffers by operand name: a, sfa, b0, sfb0, b1, sfb1, ..."""
    named = {"a": sA, "sfa": sSFA}
    for i, (b, sfb) in enumerate(zip(sB, sSFB)):
        named[f"b{i}"], named[f"sfb{i}"] = b, sfb
    return named


class Sm100BlockScaledGemm:
    """C = fp16(epilogue_value(A . B_i^T for each B_i)) on sm_100a; warp roles in sm100_blockscaled."""

    num_b: int = 1
    operand_order: tuple[str, ...] = ("a", "sfa", "b0", "sfb0")

    def __init__(self, config):
        self.config = config
        self.ml = bs.BlockScaledMainloop(config.mainloop())

    @staticmethod
    def can_implement(m: int, n: int, k: int, l: int, config) -> bool:
        try:
            bs.check_problem(m, n, k, l, config.tile_n, config.mainloop().cta_group)
        except ValueError:
            return False
        return True

    def epilogue_value(self, accs):
        """The tile's values to store (a TensorSSA), from `accs`: one fp32 register fragment per B."""
        raise NotImplementedError

    # ------------------------------------------------------------------ host side (inside @cute.jit)
    def launch(self, a_ptr, b_ptrs, sfa_ptr, sfb_ptrs, c_ptr, problem, queue):
        """The host function: K-major views of A and each B, their scale views and C's, one TMA atom
        per operand, and the kernel launched over min(#tiles, sm_count) CTAs on `queue`."""
        ml = self.ml
        tiled_mma = ml.setup()
        mA, mBs, mSFA, mSFBs, mC = self.operand_views(a_ptr, b_ptrs, sfa_ptr, sfb_ptrs, c_ptr, problem)

        tma = {}
        tma["a"], tma["sfa"] = ml.make_tma_a(mA, mSFA)
        for i, (mB, mSFB) in enumerate(zip(mBs, mSFBs)):
            tma[f"b{i}"], tma[f"sfb{i}"] = ml.make_tma_b(mB, mSFB)

        grid, cluster = self.launch_shape(mC)

        @cute.struct
        class SharedStorage:
            ab_mbar: cute.struct.MemRange[cutlass.Int64, ml.num_ab_stage * 2]
            acc_mbar: cute.struct.MemRange[cutlass.Int64, ml.num_acc_stage * 2]
            tmem_holding_buf: cute.struct.MemRange[cutlass.Int32, 1]
            if ml.pair:
                tmem_dealloc_mbar: cute.struct.MemRange[cutlass.Int64, 1]  # the pair's dealloc handshake

        self.shared_storage = SharedStorage

        operands = tuple(x for name in self.operand_order for x in tma[name])  # atom, tensor, atom, ...
        launch_queue.launch(self.kernel(tiled_mma, operands, mC), queue,
                            grid=grid, block=[bs.THREADS_PER_CTA, 1, 1], cluster=cluster)

    def operand_views(self, a_ptr, b_ptrs, sfa_ptr, sfb_ptrs, c_ptr, problem):
        """(mA, [mB_i], mSFA, [mSFB_i], mC): the MMA's A and B operands, their scales and the (rows,
        cols, L) output the accumulator tiles map onto; here A, the B_i and C as given."""
        m, n, k, l = problem
        mA = bs.make_kmajor_operand(a_ptr, m, k, l)
        mBs = [bs.make_kmajor_operand(p, n, k, l) for p in b_ptrs]
        mSFA = bs.make_scale_operand(sfa_ptr, mA)
        mSFBs = [bs.make_scale_operand(p, mB) for p, mB in zip(sfb_ptrs, mBs)]
        mC = bs.make_output(c_ptr, m, n, l)
        return mA, mBs, mSFA, mSFBs, mC

    def launch_shape(self, mC):
        """(grid, cluster): one CTA per SM at most, each its own cluster (the persistent schedule); a
        CTA pair: one pair per two SMs at most, clusters of (2, 1, 1)."""
        if self.ml.pair:
            grid = bs.PairTileScheduler.grid(*self.tile_counts(mC), self.config.sm_count)
            return grid, (self.ml.cta_group, 1, 1)
        grid = bs.TileScheduler.grid(*bs.tile_counts(mC, self.config.tile_n), self.config.sm_count)
        return grid, (1, 1, 1)

    def tile_counts(self, mC):
        """(tiles_m, tiles_n, L) of the MMA tiles (mma_m x tile_n: 256 rows for a CTA pair)."""
        return mC.shape[0] // self.ml.mma_tiler[0], mC.shape[1] // self.config.tile_n, mC.shape[2]

    # ------------------------------------------------------------------ device side
    def tile_operands(self, thr_mma, tensors: dict) -> dict:
        """(MMA, MMA_MN, MMA_K, RestMN, RestK, L) views of the operands tiled by the CTA tile, by name,
        built in `operand_order`."""
        tiled = {}
        for name in self.operand_order:
            if name.startswith("sfb"):
                tiled[name] = self.ml.tile_global_sfb(tensors[name])
            else:
                tiled[name] = self.ml.tile_global(thr_mma, tensors[name], operand_a=name in ("a", "sfa"))
        return tiled

    def partition_operands(self, atoms: dict, tiled: dict, staged: dict, cta_rank=None) -> dict:
        """name -> (TMA atom, tXgX ((atom_v, rest_v), RestMN, RestK, L), tXsX ((atom_v, rest_v), STAGE)),
        built in `operand_order`. `cta_rank` (a CTA pair): this CTA's rank in the cluster, its share
        of the B scales' multicast TMA."""
        loads = {}
        for name in self.operand_order:
            if cta_rank is not None and name.startswith("sfb"):
                tXsX, tXgX = self.ml.partition_tma(atoms[name], tiled[name], staged[name], scales=True,
                                                   cta_coord=cta_rank, cta_count=self.ml.cta_group)
            else:
                tXsX, tXgX = self.ml.partition_tma(atoms[name], tiled[name], staged[name], scales=name.startswith("sf"))
            loads[name] = (atoms[name], tXgX, tXsX)
        return loads

    def mma_role(self, sched, k_tile_cnt, pipelines, tmem, acc_layout, tCrA, tCrB, sSFA, sSFB, is_leader=None):
        """The MMA warp: wait for the epilogue warps' tensor-memory allocation, then the mainloop's MMA
        role over the CTA's tiles (`pipelines`: the stage and accumulator pipelines). A CTA pair's MMAs,
        scale copies and commits are the leader's (`is_leader`); the peer's MMA warp only waits."""
        ab_pipeline, acc_pipeline = pipelines
        tmem.wait_for_alloc()
        if cutlass.const_expr(is_leader is not None):
            self.leader_mma_warp(is_leader, sched, k_tile_cnt, ab_pipeline, acc_pipeline,
                                 tmem.retrieve_ptr(bs.ACC_DTYPE), acc_layout, tCrA, tCrB, sSFA, sSFB)
            return
        self.ml.mma_warp(
            sched,
            k_tile_cnt,
            ab_pipeline,
            acc_pipeline,
            tmem.retrieve_ptr(bs.ACC_DTYPE),
            acc_layout,
            tCrA,
            tCrB,
            sSFA,
            sSFB,
        )

    @cute.jit
    def leader_mma_warp(self, is_leader, sched, k_tile_cnt, ab_pipeline, acc_pipeline, acc_tmem_ptr, acc_layout,
                        tCrA, tCrB, sSFA, sSFB):
        """A CTA pair's MMA role: the mainloop's MMA warp on the leader only."""
        if is_leader:
            self.ml.mma_warp(sched, k_tile_cnt, ab_pipeline, acc_pipeline, acc_tmem_ptr, acc_layout,
                             tCrA, tCrB, sSFA, sSFB)

    def acc_buffers(self, acc_state) -> list:
        """The accumulator buffers of accumulator stage `acc_state`: stage * num_b + i for B operand i."""
        if self.num_b == 1:
            return [acc_state.index]
        first = acc_state.index * self.num_b
        return [first] + [first + i for i in range(1, self.num_b)]

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, operands, mC: cute.Tensor):
        """`operands`: (TMA atom, tensor) of each operand, flat, in `operand_order`."""
        self.ml.bind(tiled_mma)
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        names = self.operand_order
        atoms = dict(zip(names, operands[0::2]))
        tensors = dict(zip(names, operands[1::2]))

        if warp_idx == bs.TMA_WARP:
            for name in names:
                cpasync.prefetch_descriptor(atoms[name])

        smem = bs.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        (sA, sSFA, sB, sSFB), ab_pipeline, acc_pipeline, tmem, epilogue_barrier = self.ml.setup_cta(storage, smem)
        epilogue_smem = self.setup_epilogue(smem)

        cta_rank = None  # a CTA pair: this CTA's rank in the cluster (0 = the leader)
        if cutlass.const_expr(self.ml.pair):
            cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
            thr_mma = tiled_mma.get_slice(cta_rank)  # this CTA's 128 rows of A and C, half of each B
        else:
            thr_mma = tiled_mma.get_slice(0)
        tiled = self.tile_operands(thr_mma, tensors)
        gC = cute.local_tile(mC, cute.slice_(self.ml.mma_tiler, (None, None, 0)), (None, None, None))
        tCgC = thr_mma.partition_C(gC)
        loads = self.partition_operands(atoms, tiled, staged_buffers(sA, sSFA, sB, sSFB), cta_rank)
        k_tile_cnt = cute.size(loads["a"][1], mode=[2])

        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = [tiled_mma.make_fragment_B(sB[i]) for i in range(self.num_b)]
        # (MMA, MMA_M, MMA_N, BUF): BUF = acc_stage * num_b + B operand
        tCtAcc_fake = self.ml.make_acc_fragment()

        sfb_mask = None
        is_leader = None
        if cutlass.const_expr(self.ml.pair):
            sfb_vmnk = self.ml.cluster_layout_sfb_vmnk
            sfb_mask = cpasync.create_tma_multicast_mask(sfb_vmnk, sfb_vmnk.get_flat_coord(cta_rank), mcast_mode=1)
            is_leader = cta_rank == 0
        sched = self.scheduler(mC, k_tile_cnt)
        pipeline.pipeline_init_wait(cluster_shape_mn=(self.ml.cta_group, 1))

        if warp_idx == bs.TMA_WARP:
            self.ml.tma_warp(
                sched,
                k_tile_cnt,
                ab_pipeline,
                [loads["a"], loads["sfa"]],
                [loads[f"b{i}"] for i in range(self.num_b)],
                [loads[f"sfb{i}"] for i in range(self.num_b)],
                sfb_mask,
            )

        if warp_idx == bs.MMA_WARP:
            self.mma_role(
                sched, k_tile_cnt, (ab_pipeline, acc_pipeline), tmem, tCtAcc_fake.layout, tCrA, tCrB, sSFA, sSFB,
                is_leader,
            )

        self.producer_warps_tail(warp_idx)

        if warp_idx < bs.MMA_WARP:
            self.epilogue(
                tidx, sched, acc_pipeline, tmem, epilogue_barrier, tCtAcc_fake.layout, tCgC, epilogue_smem
            )

    # ------------------------------------------------------------------ device side: the kernel's hooks
    def scheduler(self, mC, k_tile_cnt):
        """The tile schedule all three roles walk: the static persistent one (of CTA pairs for a pair)."""
        if self.ml.pair:
            return bs.PairTileScheduler(*self.tile_counts(mC))
        return bs.TileScheduler(*bs.tile_counts(mC, self.config.tile_n))

    def setup_epilogue(self, smem):
        """Every thread, after the mainloop's set-up: the shared memory the epilogue needs beyond the
        mainloop's (allocated after it) and any cluster-wide set-up; none here."""
        return None

    def producer_warps_tail(self, warp_idx):
        """What the TMA and MMA warps do after their roles: nothing here (an epilogue that reduces
        across a cluster needs them at its cluster barrier)."""

    @cute.jit
    def epilogue(self, tidx, sched, acc_pipeline, tmem, epilogue_barrier, acc_layout, tCgC, epilogue_smem):
        """The epilogue warps: allocate the tensor memory; per tile, wait for its accumulators, read
        them EPI_COLS columns at a time, store fp16(`epilogue_value`) to C and hand the buffers back;
        free the tensor memory. `epilogue_smem` (setup_epilogue's) is unused here."""
        acc_tmem_ptr, tCtAcc = self.ml.acquire_accumulators(tmem, acc_layout)
        tiled_t2r, tTR_tAcc, tTR_gC = self.ml.make_epilogue_copy(tidx, tCtAcc, tCgC)
        frag_shape = tTR_gC[(None, None, None, 0, 0, 0, 0, 0)].shape
        tTR_rAcc = [cute.make_rmem_tensor(frag_shape, bs.ACC_DTYPE) for _ in range(self.num_b)]
        tTR_rC = cute.make_rmem_tensor(frag_shape, bs.C_DTYPE)
        store_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), bs.C_DTYPE)
        subtiles = cute.size(tTR_tAcc, mode=[4])

        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ml.num_acc_stage)
        tile = sched.first()
        while sched.valid(tile):
            tm, tn, tl = sched.coord(tile)
            tTR_gC_tile = tTR_gC[(None, None, None, 0, None, tm, tn, tl)]
            bufs = self.acc_buffers(acc_state)
            acc_pipeline.consumer_wait(acc_state)
            for sub in cutlass.range(subtiles, unroll_full=True):
                for i in cutlass.range_constexpr(self.num_b):
                    cute.copy(tiled_t2r, tTR_tAcc[(None, None, None, 0, sub, bufs[i])], tTR_rAcc[i])
                # tcgen05.ld is asynchronous: its registers are valid after tcgen05.wait::ld.
                cute.arch.fence_view_async_tmem_load()
                tTR_rC.store(self.epilogue_value(tTR_rAcc).to(bs.C_DTYPE))
                cute.copy(store_atom, tTR_rC, tTR_gC_tile[(None, None, None, sub)])
            # Every TMEM read of these buffers has completed (waited above): hand them back.
            acc_pipeline.consumer_release(acc_state)
            acc_state.advance()
            tile = sched.next(tile)

        self.ml.release_accumulators(tmem, epilogue_barrier, acc_tmem_ptr)
