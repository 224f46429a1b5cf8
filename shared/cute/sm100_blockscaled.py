"""Blackwell (sm_100a) NVFP4 block-scaled mainloop pieces shared by the GEMM and dual-GEMM kernels.

What lives here (written once, used by `problems/gemm/kernel_sm100.py`,
`problems/dual_gemm/kernel_sm100.py` and `problems/group_gemm/kernel_sm100.py`, whose schedule
gives each tile its group's K and whose TMA loads name per-group descriptors in global memory):

* the operand views: packed FP4 `[rows, K, L]` K-major tensors over raw pointers, and the scale
  factors viewed through the tcgen05 scale-factor atom, which is byte-for-byte the leaderboard's
  "permuted" layout `[32, 4, rest_mn, 4, rest_k, L]` (strides `(16, 4, rest_k*512, 1, 512,
  rest_mn*rest_k*512)`): row `i`, scale column `j` sits at `16*(i%32) + 4*((i%128)//32) + j%4`
  inside a 512-byte chunk, chunks K-block-major inside a 128-row block, batches outermost;
* `BlockScaledMainloop`: one A operand (and SFA) shared by `num_b` B operands (and SFBs). It owns
  the tiled MMA (`tcgen05.mma.kind::mxf4nvf4.block_scale`, E2M1 x E2M1, UE4M3 scales, one scale
  per 16 K values, fp32 accumulators in tensor memory), the shared-memory stage layouts, the TMA
  atoms, the tensor-memory column plan and the device-side steps of the three warp roles:
    - TMA warp:  `tma_warp` walks this CTA's tiles; `load_k_tile` puts A, SFA and every B/SFB
      of one 256-wide K block into one pipeline stage (one mbarrier, one transaction count);
    - MMA warp:  `mma_warp` walks the same tiles; `mma_k_tile` copies the stage's scales
      shared -> tensor memory (`tcgen05.cp` 4x32dp128bit) and issues 4 MMAs (K = 64 each) per B
      operand into that B's accumulator, then `tcgen05.commit` frees the stage;
    - epilogue warps: `make_epilogue_copy` gives the TMEM -> register load (`tcgen05.ld` 32x32b,
      one accumulator row per thread) and the matching partition of C; the epilogue loop is
      shared/cute/sm100_gemm.py's, the value it stores (plain fp16 or the gated silu product)
      each kernel file's.
  A and SFA are fetched from global memory and copied into tensor memory once per K block and
  used by all `num_b` MMAs (each MMA still reads A from shared memory); that is what makes the
  fused dual GEMM cheaper than two GEMMs.
* `TileScheduler`: static persistent schedule shared by the three roles; `PairTileScheduler` the same
  over CTA pairs.

CTA pairs (`MainloopConfig.cta_group = 2`, clusters of (2, 1, 1)): the MMA is
`tcgen05.mma.cta_group::2`, 256 x tile_n x 64. Each CTA loads its 128 rows of A and SFA and half of each
B tile with the 2-SM TMA (which signals the leader's stage barrier; the leader's expect-tx counts both
CTAs' bytes), and half of each B scale block, multicast to both CTAs. The leader (rank 0) alone waits
on the stage barriers, copies the scales into both CTAs' tensor memory (`tcgen05.cp.cta_group::2`),
issues the MMAs and commits them to both CTAs' barriers (multicast mask 0b11). Both CTAs allocate and
free their tensor memory with `cta_group::2` (the free after a handshake with the peer) and run the
epilogue of their own 128 rows; their 256 epilogue threads release the leader's accumulator barrier.

Warp layout used by both kernels: warps 0-3 epilogue (warp w reads TMEM lanes 32w..32w+31, which
is what `tcgen05.ld` allows a warp to touch), warp 4 MMA (a single thread issues tcgen05 ops),
warp 5 TMA producer. 192 threads, one CTA per SM (the stage count fills shared memory).

Constraints: M and N multiples of the tile (128 x tile_n), K multiple of 256, batches L >= 1,
tile_n in {64, 128, 256}. The scale-factor atom covers 128 rows, so with tile_n = 64 the SFB TMA
still moves the whole 128-row block (shared by N tiles 2j and 2j+1) and the MMA's SFB tensor-memory
address is shifted by 2 columns (= 64 rows: one 32-bit column holds one 32-row group's 4 scales
per lane) on odd N tiles.

Nothing here runs on the build machine: it is traced and compiled for sm_100a without a GPU.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.blockscaled_layout as blockscaled_utils
from cutlass.cute.nvgpu import cpasync, tcgen05

# The sizes and the config live DSL-free in sm100_config (the configs' choosers import them); the
# kernels reach them through this module too.
from shared.cute.sm100_config import (  # noqa: F401
    K_TILE,
    MMA_INST_K,
    SF_ATOM_ROWS,
    SF_TMEM_COLS_PER_ATOM,
    SF_VEC_SIZE,
    SMEM_BYTES,
    SMEM_RESERVED,
    TILE_M,
    TMEM_COLS,
    MainloopConfig,
    max_ab_stages,
    narrow_tiles_fill_better,
    stage_bytes,
    tmem_columns,
)

# Re-exported for the kernels. CuTe DSL 4.8 moved the allocators to cutlass.memory (the
# cutlass.utils names warn there); 4.3.5, the leaderboard runner's, only has cutlass.utils.
try:
    from cutlass.memory import SmemAllocator, TmemAllocator  # noqa: F401
except ImportError:
    from cutlass.utils import SmemAllocator, TmemAllocator  # noqa: F401

AB_DTYPE = cutlass.Float4E2M1FN
SF_DTYPE = cutlass.Float8E4M3FN
ACC_DTYPE = cutlass.Float32
C_DTYPE = cutlass.Float16
EPI_COLS = 32  # accumulator columns an epilogue thread holds at once (32 fp32 registers)

# Warp roles (see the module docstring).
EPILOGUE_WARPS = (0, 1, 2, 3)
MMA_WARP = 4
TMA_WARP = 5
THREADS_PER_CTA = 32 * 6


def check_problem(m: int, n: int, k: int, l: int, tile_n: int, cta_group: int = 1) -> None:
    """ValueError naming the first dimension the sm100 kernels cannot take (a CTA pair's MMA tiles,
    cta_group = 2, have 256 rows)."""
    if m <= 0 or n <= 0 or k <= 0 or l <= 0:
        raise ValueError(f"problem (m, n, k, l) = {(m, n, k, l)}: every dimension must be positive")
    if m % (TILE_M * cta_group):
        raise ValueError(f"m = {m}: the sm100 kernel (cta_group = {cta_group}) needs m % {TILE_M * cta_group} == 0")
    if n % tile_n or n % SF_ATOM_ROWS:
        need = max(tile_n, SF_ATOM_ROWS)
        raise ValueError(f"n = {n}: the sm100 kernel (tile_n = {tile_n}, 128-row scale atoms) needs n % {need} == 0")
    if k % K_TILE:
        raise ValueError(f"k = {k}: the sm100 kernel needs k % {K_TILE} == 0")











def make_kmajor_operand(ptr: cute.Pointer, rows, k, l, whole_tiles: bool = True) -> cute.Tensor:
    """(rows, K, L) view of a packed FP4 operand stored batch-major, row-major rows x K/2 bytes.

    `whole_tiles=False` promises nothing about `rows` (the grouped GEMM's M tails: TMA fills the
    rows past the end with zeros and never reads them)."""
    k_div = cute.assume(k, divby=K_TILE)
    if whole_tiles:
        rows, batch_stride = cute.assume(rows, divby=TILE_M), cute.assume(rows * k, divby=TILE_M * K_TILE)
    else:
        batch_stride = cute.assume(rows * k, divby=K_TILE)
    layout = cute.make_layout((rows, k_div, l), stride=(k_div, 1, batch_stride))
    return cute.make_tensor(ptr, layout)


def make_output(ptr: cute.Pointer, m, n, l, whole_tiles: bool = True) -> cute.Tensor:
    """(M, N, L) view of the fp16 output, batch-major, row-major M x N (N a multiple of 128; M too
    unless `whole_tiles=False`, where the epilogue predicates the rows past M)."""
    n_div = cute.assume(n, divby=SF_ATOM_ROWS)
    if whole_tiles:
        m, batch_stride = cute.assume(m, divby=TILE_M), cute.assume(m * n, divby=TILE_M * SF_ATOM_ROWS)
    else:
        batch_stride = cute.assume(m * n, divby=SF_ATOM_ROWS)
    layout = cute.make_layout((m, n_div, l), stride=(n_div, 1, batch_stride))
    return cute.make_tensor(ptr, layout)


def make_scale_operand(ptr: cute.Pointer, operand: cute.Tensor) -> cute.Tensor:
    """The permuted scales as a ((32,4),rest_mn),((16,4),rest_k),L tensor over the operand's index space.

    `tile_atom_to_shape_SF` repeats the tcgen05 scale atom K-block-first, then over 128-row blocks,
    then over L, which is exactly the leaderboard's permuted storage order.
    """
    return cute.make_tensor(ptr, blockscaled_utils.tile_atom_to_shape_SF(operand.shape, SF_VEC_SIZE))


class TileScheduler:
    """Static persistent schedule: CTA b takes output tiles b, b + grid, b + 2*grid, ...

    Tiles are numbered M-fastest, then N, then L, so CTAs running at the same time share B tiles
    (the larger operand for these problems) through L2. Usage in a role loop:

        tile = sched.first(); while sched.valid(tile): tm, tn, tl = sched.coord(tile); ...; tile = sched.next(tile)

    Holds three Int32 tile counts and exposes them to the DSL, so it can be used in dynamic loops.
    """

    def __init__(self, tiles_m, tiles_n, tiles_l):
        self.tiles_m = cutlass.Int32(tiles_m)
        self.tiles_n = cutlass.Int32(tiles_n)
        self.tiles_l = cutlass.Int32(tiles_l)

    def __extract_mlir_values__(self):
        return [v.ir_value() for v in (self.tiles_m, self.tiles_n, self.tiles_l)]

    def __new_from_mlir_values__(self, values):
        return TileScheduler(*(cutlass.Int32(v) for v in values))

    @staticmethod
    def grid(tiles_m, tiles_n, tiles_l, sm_count: int):
        return (cutlass.min(tiles_m * tiles_n * tiles_l, sm_count), 1, 1)

    def first(self):
        bidx, _, _ = cute.arch.block_idx()
        return cutlass.Int32(bidx)

    def valid(self, tile):
        return tile < self.tiles_m * self.tiles_n * self.tiles_l

    def coord(self, tile):
        mn = self.tiles_m * self.tiles_n
        rem = tile % mn
        return rem % self.tiles_m, rem // self.tiles_m, tile // mn

    def next(self, tile):
        gdim, _, _ = cute.arch.grid_dim()
        return tile + cutlass.Int32(gdim)

    def k_tiles(self, tile, k_tile_cnt):
        """K blocks of `tile`: the same for every tile of one GEMM (a grouped schedule differs)."""
        return k_tile_cnt

    def k_block(self, tile, k_step):
        """The K block that step `k_step` of `tile` loads: the step itself here (a split-K schedule
        starts each CTA at its own first K block)."""
        return k_step


class PairWalk:
    """How CTA pairs (clusters of 2 along x) walk a persistent schedule: pair p = blockIdx.x // 2 takes
    tiles p, p + pairs, p + 2 * pairs, ..., both CTAs of a pair the same tiles. Put first in the bases
    of a schedule (PairTileScheduler here, the grouped kernel's PairGroupTileScheduler)."""

    def first(self):
        bidx, _, _ = cute.arch.block_idx()
        return cutlass.Int32(bidx // 2)

    def next(self, tile):
        gdim, _, _ = cute.arch.grid_dim()
        return tile + cutlass.Int32(gdim // 2)


class PairTileScheduler(PairWalk, TileScheduler):
    """The static persistent schedule of CTA pairs over 256-row tiles (M fastest); `coord` gives the
    tile's (256-row M index, N index, L)."""

    def __new_from_mlir_values__(self, values):
        return PairTileScheduler(*(cutlass.Int32(v) for v in values))

    @staticmethod
    def grid(tiles_m, tiles_n, tiles_l, sm_count: int):
        return (2 * cutlass.min(tiles_m * tiles_n * tiles_l, sm_count // 2), 1, 1)


def tile_counts(mC: cute.Tensor, tile_n: int):
    """(tiles_m, tiles_n, L) of a (M, N, L) output for 128 x tile_n tiles (exact multiples)."""
    return mC.shape[0] // TILE_M, mC.shape[1] // tile_n, mC.shape[2]


class BlockScaledMainloop:
    """Host-side setup (call `setup()` inside the @cute.jit host function) and device-side steps."""

    def __init__(self, config: MainloopConfig):
        self.cfg = config
        self.num_b = config.num_b
        self.tile_n = config.tile_n
        self.num_ab_stage = config.stages
        self.num_acc_stage = config.num_acc_stage
        self.cta_group = config.cta_group  # 2: CTA pairs, see `pair` below
        self.mma_tiler = (config.mma_m, config.tile_n, K_TILE)
        self.num_k_blocks = K_TILE // MMA_INST_K
        self.acc_cols = config.num_acc_stage * config.num_b * config.tile_n
        self.sfb_cols = -(-config.tile_n // SF_ATOM_ROWS) * SF_TMEM_COLS_PER_ATOM
        # Scales of B are tiled in whole 128-row atoms: N tile j reads SF atom j // sfb_tile_div.
        self.sfb_tile_n = -(-config.tile_n // SF_ATOM_ROWS) * SF_ATOM_ROWS
        self.sfb_tile_div = self.sfb_tile_n // config.tile_n if config.tile_n < SF_ATOM_ROWS else 1
        self.mma_tiler_sfb = (TILE_M, self.sfb_tile_n, K_TILE)

    # ------------------------------------------------------------------ host side (inside @cute.jit)
    @staticmethod
    def _make_tiled_mma(tile_n: int, cta_group: int = 1):
        # E2M1 x E2M1 operands from shared memory (both K-major, the only layout kind::mxf4nvf4
        # takes), UE4M3 scales. One CTA: the instruction is 128 x tile_n x 64; a CTA pair
        # (cta_group::2): 256 x tile_n x 64, each CTA holding 128 rows of A and tile_n / 2 rows of B.
        group = tcgen05.CtaGroup.TWO if cta_group == 2 else tcgen05.CtaGroup.ONE
        op = tcgen05.MmaMXF4NVF4Op(
            SF_DTYPE, (TILE_M * cta_group, tile_n, MMA_INST_K), group, tcgen05.OperandSource.SMEM
        )
        return cute.make_tiled_mma(op)

    @property
    def pair(self) -> bool:
        """2-CTA MMAs: a cluster of 2 CTAs shares each 256-row tile. The leader CTA (rank 0) issues the
        scale copies, the MMAs and the commits for both; both CTAs load their halves by TMA (signalling
        the leader's stage barrier), allocate tensor memory and run the epilogue of their own 128 rows."""
        return self.cta_group == 2

    def setup(self):
        """Tiled MMA and staged shared-memory layouts; needs an MLIR context (call under @cute.jit)."""
        self.bind(self._make_tiled_mma(self.tile_n, self.cta_group))
        return self.tiled_mma

    def bind(self, tiled_mma):
        """(Re)build the layouts from `tiled_mma` in the current region.

        Layout values made in the host function cannot be used inside the kernel body, so the
        kernel calls this once with its tiled_mma argument.
        """
        self.tiled_mma = tiled_mma
        # The SFB TMA is partitioned as if the MMA were 128 wide (whole scale atoms).
        # With a CTA pair it is a one-CTA MMA too: each CTA's tensor memory holds every column's scales.
        self.tiled_mma_sfb = (
            tiled_mma if self.sfb_tile_div == 1 and not self.pair else self._make_tiled_mma(self.sfb_tile_n)
        )
        self.cluster_layout_vmnk = cute.tiled_divide(
            cute.make_layout((self.cta_group, 1, 1)), (self.tiled_mma.thr_id.shape,)
        )
        if self.pair:
            # (V=1, M=2, N=1, K=1): the SFB TMA splits the scale block over the pair and multicasts.
            self.cluster_layout_sfb_vmnk = cute.tiled_divide(
                cute.make_layout((self.cta_group, 1, 1)), (self.tiled_mma_sfb.thr_id.shape,)
            )
        self.a_smem_layout = sm100_utils.make_smem_layout_a(self.tiled_mma, self.mma_tiler, AB_DTYPE, self.num_ab_stage)
        self.b_smem_layout = sm100_utils.make_smem_layout_b(self.tiled_mma, self.mma_tiler, AB_DTYPE, self.num_ab_stage)
        self.sfa_smem_layout = blockscaled_utils.make_smem_layout_sfa(
            self.tiled_mma, self.mma_tiler, SF_VEC_SIZE, self.num_ab_stage
        )
        self.sfb_smem_layout = blockscaled_utils.make_smem_layout_sfb(
            self.tiled_mma, self.mma_tiler, SF_VEC_SIZE, self.num_ab_stage
        )
        one = (None, None, None, 0)
        self.tma_bytes = cute.size_in_bytes(AB_DTYPE, cute.slice_(self.a_smem_layout, one)) + cute.size_in_bytes(
            SF_DTYPE, cute.slice_(self.sfa_smem_layout, one)
        )
        self.tma_bytes += self.num_b * (
            cute.size_in_bytes(AB_DTYPE, cute.slice_(self.b_smem_layout, one))
            + cute.size_in_bytes(SF_DTYPE, cute.slice_(self.sfb_smem_layout, one))
        )
        if self.pair:
            # The leader's stage barrier counts the bytes landing in both CTAs (sm100_config.pair_tx_bytes).
            self.tma_bytes *= self.cta_group

    def _tma_op(self):
        """Global -> shared TMA op of A, SFA and B: the 2-SM form for a pair (it signals the leader's barrier)."""
        return cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.TWO if self.pair else tcgen05.CtaGroup.ONE)

    def make_tma_a(self, mA: cute.Tensor, mSFA: cute.Tensor):
        """TMA atoms (and coordinate tensors) for A and its scales."""
        one = (None, None, None, 0)
        op = self._tma_op()
        tma_a = cute.nvgpu.make_tiled_tma_atom_A(
            op,
            mA,
            cute.slice_(self.a_smem_layout, one),
            self.mma_tiler,
            self.tiled_mma,
            self.cluster_layout_vmnk.shape,
        )
        # Scales move as 16-bit elements: the TMA box inner extent must be >= 16 bytes and the
        # 512-byte chunks are contiguous, so the element type is immaterial to the bytes moved.
        tma_sfa = cute.nvgpu.make_tiled_tma_atom_A(
            op,
            mSFA,
            cute.slice_(self.sfa_smem_layout, one),
            self.mma_tiler,
            self.tiled_mma,
            self.cluster_layout_vmnk.shape,
            internal_type=cutlass.Int16,
        )
        return tma_a, tma_sfa

    def make_tma_b(self, mB: cute.Tensor, mSFB: cute.Tensor):
        """TMA atoms (and coordinate tensors) for one B operand and its scales."""
        one = (None, None, None, 0)
        op = self._tma_op()
        tma_b = cute.nvgpu.make_tiled_tma_atom_B(
            op,
            mB,
            cute.slice_(self.b_smem_layout, one),
            self.mma_tiler,
            self.tiled_mma,
            self.cluster_layout_vmnk.shape,
        )
        sfb_op, sfb_cluster = op, self.cluster_layout_vmnk.shape
        if self.pair:
            # Each CTA of the pair fetches half of the scale block and multicasts it to both.
            sfb_op = cpasync.CopyBulkTensorTileG2SMulticastOp(tcgen05.CtaGroup.TWO)
            sfb_cluster = self.cluster_layout_sfb_vmnk.shape
        tma_sfb = cute.nvgpu.make_tiled_tma_atom_B(
            sfb_op,
            mSFB,
            cute.slice_(self.sfb_smem_layout, one),
            self.mma_tiler_sfb,
            self.tiled_mma_sfb,
            sfb_cluster,
            internal_type=cutlass.Int16,
        )
        return tma_b, tma_sfb

    # ------------------------------------------------------------------ device side (inside @cute.kernel)
    def allocate_smem(self, smem):
        """Stage buffers: sA, sSFA and lists sB[i], sSFB[i] (1024-byte aligned for the 128B swizzle)."""
        sA = smem.allocate_tensor(
            AB_DTYPE, self.a_smem_layout.outer, byte_alignment=1024, swizzle=self.a_smem_layout.inner
        )
        sSFA = smem.allocate_tensor(SF_DTYPE, self.sfa_smem_layout, byte_alignment=128)
        sB = []
        sSFB = []
        for _ in range(self.num_b):
            sB.append(
                smem.allocate_tensor(
                    AB_DTYPE,
                    self.b_smem_layout.outer,
                    byte_alignment=1024,
                    swizzle=self.b_smem_layout.inner,
                )
            )
            sSFB.append(smem.allocate_tensor(SF_DTYPE, self.sfb_smem_layout, byte_alignment=128))
        return sA, sSFA, sB, sSFB

    def setup_cta(self, storage, smem):
        """The CTA's shared state, the same in every kernel on this mainloop: stage buffers (sA, sSFA,
        sB[i], sSFB[i]), the load and accumulator pipelines, the TMEM allocator (the epilogue warps
        plus the MMA warp read the base address it writes) and the epilogue warps' barrier; then the
        pipelines' init arrive (the matching wait comes after the partitions are built)."""
        sA, sSFA, sB, sSFB = self.allocate_smem(smem)
        ab_pipeline = self.make_ab_pipeline(storage.ab_mbar.data_ptr())
        acc_pipeline = self.make_acc_pipeline(storage.acc_mbar.data_ptr())
        retrieve = pipeline.NamedBarrier(barrier_id=2, num_threads=32 * (len(EPILOGUE_WARPS) + 1))
        if self.pair:
            # tcgen05.alloc/dealloc.cta_group::2 on both CTAs; before freeing, each allocator warp waits
            # for the peer's arrival on this mbarrier (the peer's epilogue is done with its half).
            tmem = TmemAllocator(
                storage.tmem_holding_buf.data_ptr(),
                barrier_for_retrieve=retrieve,
                allocator_warp_id=EPILOGUE_WARPS[0],
                is_two_cta=True,
                two_cta_tmem_dealloc_mbar_ptr=storage.tmem_dealloc_mbar.data_ptr(),
            )
        else:
            tmem = TmemAllocator(
                storage.tmem_holding_buf.data_ptr(),
                barrier_for_retrieve=retrieve,
                allocator_warp_id=EPILOGUE_WARPS[0],
            )
        epilogue_barrier = pipeline.NamedBarrier(barrier_id=1, num_threads=32 * len(EPILOGUE_WARPS))
        pipeline.pipeline_init_arrive(cluster_shape_mn=(self.cta_group, 1), is_relaxed=True)
        return (sA, sSFA, sB, sSFB), ab_pipeline, acc_pipeline, tmem, epilogue_barrier

    @staticmethod
    def acquire_accumulators(tmem, acc_layout):
        """Epilogue warps: allocate the tensor memory (all TMEM_COLS), wait for the allocation and view
        the accumulators there; returns (the TMEM base address, the accumulator tensor)."""
        tmem.allocate(TMEM_COLS)
        tmem.wait_for_alloc()
        acc_tmem_ptr = tmem.retrieve_ptr(ACC_DTYPE)
        return acc_tmem_ptr, cute.make_tensor(acc_tmem_ptr, acc_layout)

    @staticmethod
    def release_accumulators(tmem, epilogue_barrier, acc_tmem_ptr):
        """Epilogue warps, after their last tile: give up the allocation permit, wait for every epilogue
        warp to be done with the accumulators, free the tensor memory."""
        tmem.relinquish_alloc_permit()
        epilogue_barrier.arrive_and_wait()
        tmem.free(acc_tmem_ptr)

    def make_ab_pipeline(self, barrier_ptr):
        """Full/empty mbarriers per stage: TMA transaction bytes fill it, a tcgen05.commit empties it."""
        return pipeline.PipelineTmaUmma.create(
            barrier_storage=barrier_ptr,
            num_stages=self.num_ab_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            tx_count=self.tma_bytes,
            cta_layout_vmnk=self.cluster_layout_vmnk,
            defer_sync=True,
        )

    def make_acc_pipeline(self, barrier_ptr):
        """Accumulator hand-off MMA warp -> epilogue warps (128 consumer threads; a pair's leader waits for
        both CTAs' 256 before it overwrites the accumulators)."""
        return pipeline.PipelineUmmaAsync.create(
            barrier_storage=barrier_ptr,
            num_stages=self.num_acc_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * len(EPILOGUE_WARPS) * self.cta_group),
            cta_layout_vmnk=self.cluster_layout_vmnk,
            defer_sync=True,
        )

    def partition_tma(self, tma_atom, gX, sX, scales: bool, cta_coord=0, cta_count: int = 1):
        """Split a (tile, tile, RestMN, RestK, L)-tiled global tensor and its staged smem for one TMA atom.

        Returns (tXsX: ((atom_v, rest_v), STAGE), tXgX: ((atom_v, rest_v), RestMN, RestK, L)).
        A multicast TMA splits the box over `cta_count` CTAs; this CTA's share is `cta_coord`.
        Scale tensors carry stride-0 modes (one scale per 16 K values); the TMA works on the
        compacted (stride-0-free) views.
        """
        tXsX, tXgX = cpasync.tma_partition(
            tma_atom, cta_coord, cute.make_layout(cta_count), cute.group_modes(sX, 0, 3), cute.group_modes(gX, 0, 3)
        )
        if scales:
            tXsX = cute.filter_zeros(tXsX)
            tXgX = cute.filter_zeros(tXgX)
        return tXsX, tXgX

    def tile_global(self, thr_mma, mX: cute.Tensor, operand_a: bool):
        """(MMA, MMA_MN, MMA_K, RestMN, RestK, L) MMA-partitioned view of an operand tiled by the CTA tile."""
        if operand_a:
            gX = cute.local_tile(mX, cute.slice_(self.mma_tiler, (None, 0, None)), (None, None, None))
            return thr_mma.partition_A(gX)
        gX = cute.local_tile(mX, cute.slice_(self.mma_tiler, (0, None, None)), (None, None, None))
        return thr_mma.partition_B(gX)

    def tile_global_sfb(self, mSFB: cute.Tensor):
        """(MMA, MMA_N, MMA_K, RestSF, RestK, L) view of B's scales tiled by whole 128-row atoms."""
        gX = cute.local_tile(mSFB, cute.slice_(self.mma_tiler_sfb, (0, None, None)), (None, None, None))
        return self.tiled_mma_sfb.get_slice(0).partition_B(gX)

    def load_k_tile(self, ab_pipeline, state, k_tile, copies, masks=None):
        """TMA for one K block of every operand into the producer stage `state`.

        `copies` is a list of (tma_atom, tXgX sliced to ((atom_v, rest_v), RestK), tXsX) or of
        (tma_atom, tXgX, tXsX, descriptor pointer): the last form loads through a TMA descriptor
        in global memory (the grouped GEMM's, rewritten on the device per group) instead of the
        atom's own (a kernel parameter). `masks` (a CTA pair): per copy None or the CTA mask a
        multicast TMA writes to.
        """
        bar = ab_pipeline.producer_get_barrier(state)
        if cutlass.const_expr(masks is not None):
            for (atom, tXgX, tXsX, *desc), mask in zip(copies, masks):
                extra = {} if mask is None else {"mcast_mask": mask}
                if cutlass.const_expr(len(desc) == 1):
                    extra["tma_desc_ptr"] = desc[0]
                cute.copy(atom, tXgX[(None, k_tile)], tXsX[(None, state.index)], tma_bar_ptr=bar, **extra)
            return
        for atom, tXgX, tXsX, *desc in copies:
            if cutlass.const_expr(len(desc) == 0):
                cute.copy(atom, tXgX[(None, k_tile)], tXsX[(None, state.index)], tma_bar_ptr=bar)
            else:
                cute.copy(
                    atom, tXgX[(None, k_tile)], tXsX[(None, state.index)], tma_bar_ptr=bar, tma_desc_ptr=desc[0]
                )

    def make_acc_fragment(self):
        """Accumulator TMEM layout: (MMA, MMA_M, MMA_N, num_acc_stage * num_b), buffer = stage*num_b + b."""
        acc_shape = self.tiled_mma.partition_shape_C(self.mma_tiler[:2])
        return self.tiled_mma.make_fragment_C(cute.append(acc_shape, self.num_acc_stage * self.num_b))

    def make_sf_tmem(self, acc_tmem_ptr, sfb_shift=0):
        """SFA and per-B SFB tensors in the TMEM columns after the accumulators.

        `sfb_shift` (32-bit columns, may be dynamic) moves the SFB views inside their 128-row atom:
        the MMA of a 64-wide N tile reads rows 64..127 of the atom from 2 columns further on.
        """
        one = (None, None, None, 0)
        sfa_col, sfb_cols = self.sf_tmem_columns(sfb_shift)
        sfa_ptr = cute.recast_ptr(acc_tmem_ptr + sfa_col, dtype=SF_DTYPE)
        tCtSFA = cute.make_tensor(
            sfa_ptr,
            blockscaled_utils.make_tmem_layout_sfa(
                self.tiled_mma, self.mma_tiler, SF_VEC_SIZE, cute.slice_(self.sfa_smem_layout, one)
            ),
        )
        sfb_layout = blockscaled_utils.make_tmem_layout_sfb(
            self.tiled_mma, self.mma_tiler, SF_VEC_SIZE, cute.slice_(self.sfb_smem_layout, one)
        )
        tCtSFB = []
        for col in sfb_cols:
            tCtSFB.append(cute.make_tensor(cute.recast_ptr(acc_tmem_ptr + col, dtype=SF_DTYPE), sfb_layout))
        return tCtSFA, tCtSFB

    def sf_tmem_columns(self, sfb_shift=0):
        """(SFA column, [SFB column per B]): 32-bit TMEM columns after the accumulators where the
        scale blocks start (the MMA of K step kb reads 4 * kb columns further on)."""
        sfb_base = self.acc_cols + SF_TMEM_COLS_PER_ATOM
        return self.acc_cols, [sfb_base + i * self.sfb_cols + sfb_shift for i in range(self.num_b)]

    def sfb_shift(self, tn):
        """TMEM column shift of the SFB view for N tile `tn` (int or Int32): a 64-wide tile reads
        rows 64..127 of its 128-row scale atom on odd tiles, 2 columns (= 64 rows) further on."""
        return (tn % self.sfb_tile_div) * (self.tile_n // 32)

    def make_s2t(self, sSF: cute.Tensor, tSF: cute.Tensor):
        """tcgen05.cp (4 warps x 32 lanes x 128 bit) from the staged smem scales to their TMEM home."""
        sSF_compact = cute.filter_zeros(sSF)
        tSF_compact = cute.filter_zeros(tSF)
        group = tcgen05.CtaGroup.TWO if self.pair else tcgen05.CtaGroup.ONE  # the pair: into both CTAs
        atom = cute.make_copy_atom(tcgen05.Cp4x32x128bOp(group), SF_DTYPE)
        tiled = tcgen05.make_s2t_copy(atom, tSF_compact)
        thr = tiled.get_slice(0)
        src = tcgen05.get_s2t_smem_desc_tensor(tiled, thr.partition_S(sSF_compact))
        dst = thr.partition_D(tSF_compact)
        return tiled, src, dst

    def mma_k_tile(self, stage, accumulate, accs, tCrA, tCrB, tCtSFA, tCtSFB, s2t_a, s2t_b):
        """Scales of stage -> TMEM, then K_TILE/64 MMAs per B operand into accs[i].

        tcgen05.cp and tcgen05.mma issued by one thread execute in order, so the single TMEM copy
        of the scales can be overwritten by the next K block without a wait.
        `accumulate` (dynamic Boolean) is False on a tile's first K block: the first MMA then
        overwrites whatever the previous tile left in the accumulator.
        """
        tiled_mma = self.tiled_mma
        s2t_coord = (None, None, None, None, stage)
        cute.copy(s2t_a[0], s2t_a[1][s2t_coord], s2t_a[2])
        for i in range(self.num_b):
            cute.copy(s2t_b[i][0], s2t_b[i][1][s2t_coord], s2t_b[i][2])
        for i in range(self.num_b):
            for kb in range(self.num_k_blocks):
                tiled_mma.set(tcgen05.Field.ACCUMULATE, accumulate if kb == 0 else True)
                tiled_mma.set(tcgen05.Field.SFA, tCtSFA[(None, None, kb)].iterator)
                tiled_mma.set(tcgen05.Field.SFB, tCtSFB[i][(None, None, kb)].iterator)
                cute.gemm(
                    tiled_mma,
                    accs[i],
                    tCrA[(None, None, kb, stage)],
                    tCrB[i][(None, None, kb, stage)],
                    accs[i],
                )

    @cute.jit
    def tma_warp(self, sched: TileScheduler, k_tile_cnt, ab_pipeline, a_loads, b_loads, sfb_loads, sfb_mask=None):
        """Producer role: for every tile of this CTA, every K block of A/SFA and each B/SFB.

        a_loads / b_loads / sfb_loads: lists of (tma_atom, tXgX ((atom_v, rest_v), RestMN, RestK, L),
        tXsX); A-side tensors are indexed by the tile's M coordinate, B-side ones by its N coordinate,
        B scales by the 128-row scale atom that holds the N tile. `sfb_mask` (a CTA pair): the CTA
        mask the B scales' multicast TMA writes to.
        """
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_ab_stage)
        tile = sched.first()
        while sched.valid(tile):
            tm, tn, tl = sched.coord(tile)
            copies = [(atom, g[(None, tm, None, tl)], s) for atom, g, s in a_loads]
            copies += [(atom, g[(None, tn, None, tl)], s) for atom, g, s in b_loads]
            tn_sf = tn // self.sfb_tile_div
            copies += [(atom, g[(None, tn_sf, None, tl)], s) for atom, g, s in sfb_loads]
            masks = None
            if cutlass.const_expr(sfb_mask is not None):
                masks = [None] * (len(a_loads) + len(b_loads)) + [sfb_mask] * len(sfb_loads)
            for k_tile in cutlass.range(sched.k_tiles(tile, k_tile_cnt), unroll=1):
                ab_pipeline.producer_acquire(state)
                self.load_k_tile(ab_pipeline, state, sched.k_block(tile, k_tile), copies, masks)
                state.advance()
            tile = sched.next(tile)
        # Do not exit while TMA writes into this CTA's shared memory are still in flight.
        ab_pipeline.producer_tail(state)

    @cute.jit
    def mma_warp(
        self,
        sched: TileScheduler,
        k_tile_cnt,
        ab_pipeline,
        acc_pipeline,
        acc_tmem_ptr,
        acc_layout,
        tCrA,
        tCrB,
        sSFA,
        sSFB,
    ):
        """MMA role: per tile, wait for an empty accumulator buffer, run the K loop, hand it over.

        `sched` is a TileScheduler or any object with its interface (first, valid, coord, next,
        k_tiles): the grouped GEMM's schedule gives each tile its group's K."""
        tCtAcc = cute.make_tensor(acc_tmem_ptr, acc_layout)
        tCtSFA, tCtSFB = self.make_sf_tmem(acc_tmem_ptr)
        s2t_a = self.make_s2t(sSFA, tCtSFA)
        s2t_b = [self.make_s2t(sSFB[i], tCtSFB[i]) for i in range(self.num_b)]

        ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_ab_stage)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_acc_stage)
        tile = sched.first()
        while sched.valid(tile):
            acc_pipeline.producer_acquire(acc_state)
            accs = [tCtAcc[(None, None, None, acc_state.index * self.num_b + i)] for i in range(self.num_b)]
            tCtSFB_mma = tCtSFB
            if cutlass.const_expr(self.sfb_tile_div > 1):
                # Narrow N tile: point the MMA at this tile's rows inside the 128-row scale atom.
                _, tn, _ = sched.coord(tile)
                _, tCtSFB_mma = self.make_sf_tmem(acc_tmem_ptr, self.sfb_shift(tn))
            for k_tile in cutlass.range(sched.k_tiles(tile, k_tile_cnt), unroll=1):
                ab_pipeline.consumer_wait(ab_state)
                self.mma_k_tile(ab_state.index, k_tile != 0, accs, tCrA, tCrB, tCtSFA, tCtSFB_mma, s2t_a, s2t_b)
                # tcgen05.commit: the stage is freed when these MMAs have read it.
                ab_pipeline.consumer_release(ab_state)
                ab_state.advance()
            # tcgen05.commit: the epilogue may read the accumulators once the MMAs completed.
            acc_pipeline.producer_commit(acc_state)
            acc_state.advance()
            tile = sched.next(tile)
        acc_pipeline.producer_tail(acc_state)

    def make_epilogue_copy(self, tidx, tAcc, tCgC):
        """TMEM -> register copy of EPI_COLS accumulator columns per thread, and C partitioned to match.

        Returns (tiled_copy_t2r, tTR_tAcc: (T2R, T2R_M, T2R_N, EPI_M, EPI_N, BUF),
        tTR_gC: (T2R, T2R_M, T2R_N, EPI_M, EPI_N, RestM, RestN, L)).
        """
        epi_tile = (TILE_M, EPI_COLS)
        atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x32), ACC_DTYPE)
        tAcc_epi = cute.flat_divide(tAcc[((None, None), 0, 0, None)], epi_tile)
        tiled_t2r = tcgen05.make_tmem_copy(atom, tAcc_epi[(None, None, 0, 0, 0)])
        thr_t2r = tiled_t2r.get_slice(tidx)
        tTR_tAcc = thr_t2r.partition_S(tAcc_epi)
        gC_epi = cute.flat_divide(tCgC[((None, None), 0, 0, None, None, None)], epi_tile)
        tTR_gC = thr_t2r.partition_D(gC_epi)
        return tiled_t2r, tTR_tAcc, tTR_gC
