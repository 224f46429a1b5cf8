"""Grouped NVFP4 block-scaled GEMM for Blackwell (sm_100a): every group's C_g = fp16(A_g . B_g^T) in
ONE persistent launch, tcgen05 block-scaled MMA.

Status: COMPILED for sm_100a in CI (tests/test_group_gemm_sm100.py, tests/test_packaged_compile.py,
CuTe DSL 4.8.1 and the runner's 4.3.5); never run here - no B200 was available while it was
written. Treat it as unverified until `python -m harness.eval group_gemm --mode test --impl
submission` passes on a B200.

Algorithm
  * Schedule: the output tiles (128 x tile_n) of all groups are numbered group by group, in the order
    of the metadata rows (the config's group order, problems/group_gemm/order.py: list order, or by
    descending M for the "msorted" variant; the binary is the same for every order), inside a group
    M-fastest then N (CTAs running at the same time share B tiles, the larger operand, in L2);
    CTA b of a grid of min(#tiles, #SMs) takes tiles b, b + grid, b + 2 grid, ... (static persistent
    schedule; problems/group_gemm/schedule_sm100.py is its host-side mirror). A tile finds its group
    by scanning the groups' first-tile numbers in the metadata table (G <= 8 loads, L1/L2-resident).
  * Metadata: one int64 row of META_COLS per group - addresses of a, b, sfa_reordered, sfb_reordered,
    c; M, N, K; M tiles, first tile, K blocks - built on the host once per distinct set of tensors
    (`GroupedLaunch`), copied to the GPU once and kept with the prepared launch, so a repeat call is
    one C call into the launcher (shared/cute/launch_binding.py PreparedLaunch).
  * TMA descriptors per group, rewritten on the device (the scheme of NVIDIA's CuTe DSL example
    blackwell/.../grouped_blockscaled_gemm.py): the kernel parameters carry descriptors for one group
    (the first non-empty one); the TMA warp copies them into shared memory once, and whenever its next
    tile belongs to another group it replaces global address, dims and strides there
    (`tensormap.replace`), copies the four descriptors to its CTA's 512-byte slot of a global
    workspace with a release fence (`tensormap.cp_fenceproxy`), and acquires them
    (`fence.proxy.tensormap::generic.acquire`) before its loads name them. M tails (M = 40, 72, 76
    ...) are the descriptor's bounds: TMA fills rows >= M with zeros and never reads them; the
    reordered scales have ceil(M/128) whole 128-row blocks (filler in the tail), so their loads stay
    inside the tensor.
  * Mainloop (shared with the GEMM and dual GEMM, shared/cute/sm100_blockscaled.py): a TMA warp loads
    256-wide K blocks of A, B and their reordered scales (the leaderboard's sfasfb_reordered_tensors
    are already the tcgen05 scale-factor atom's byte order) into a shared-memory ring; the MMA warp
    copies each stage's scales into tensor memory (tcgen05.cp 4x32dp128bit) and issues 4 x
    `tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16` (128 x tile_n x 64, E2M1 x E2M1,
    UE4M3 scales, one per 16 K values) into fp32 accumulators in tensor memory.
  * Epilogue: 4 warps, thread t owns accumulator row t of the tile; 32 columns at a time TMEM ->
    registers (tcgen05.ld 32x32b.x32, tcgen05.wait::ld), fp16 (round to nearest even), stored
    straight to the group's C, rows >= M skipped. Two accumulator buffers (tile_n <= 128) let the
    epilogue of one tile overlap the mainloop of the next.

Variant "cta2" (config.py `GroupGemmSm100Cta2Config`, chosen only through the B200 gates table): the
same kernel with A and B swapped on CTA pairs. The 2-CTA MMA's 256 rows are the problem's N (each CTA
128 rows of B), its N side the group's M (tile_n rows of A per tile, half per CTA, tails zero-filled);
the problem's SFA is fetched half by each CTA and multicast to both; the leader issues the MMAs; each
CTA stores its accumulator rows into C transposed, columns past M skipped (`epilogue_swapped`);
`PairGroupTileScheduler` walks schedule_sm100.pair_schedule. Requires every group's N % 256 == 0.

Warp roles: warps 0-3 epilogue (warp 0 allocates / frees the 512 TMEM columns), warp 4 MMA, warp 5
TMA and descriptor updates. 192 threads, one CTA per SM.

Constraints (the submission raises ValueError otherwise or takes the portable path): L = 1, K a
multiple of 256 (every group), N a multiple of 128, any M >= 0 (empty groups own no tiles), the
leaderboard layouts (K-major a / b, row-major c, reordered scales with their exact strides),
16-byte aligned tensors.

Expected B200 time: `python -m scripts.b200 --model` (an estimate; `nox -s b200` measures it on a B200).

How to run (on a B200): `python -m harness.eval group_gemm --mode benchmark --impl submission`.
Compile only (any machine): `python -c "from problems.group_gemm import kernel_sm100 as k; k.compile_for()"`.
"""

from __future__ import annotations

from dataclasses import replace

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync

from problems.group_gemm.config import GroupGemmSm100Config, GroupGemmSm100Cta2Config
from problems.group_gemm.order import group_rank
from problems.group_gemm.schedule_sm100 import group_tiles, pair_group_tiles, tile_starts
from problems.group_gemm.schedule_sm100 import ordered as schedule_order
from shared.cute import launch_queue
from shared.cute import sm100_blockscaled as bs
from shared.cute.compile_cache import CompileCache
from shared.cute.sm100_gemm import Sm100BlockScaledGemm, staged_buffers

# CuTe DSL 4.8 moved the descriptor helper to cutlass.tensor_utils (the cutlass.utils name warns
# there); 4.3.5, the leaderboard runner's, only has cutlass.utils.
try:
    from cutlass.tensor_utils import TensorMapManager, TensorMapUpdateMode
except ImportError:
    from cutlass.utils import TensorMapManager, TensorMapUpdateMode

# The metadata table: one int64 row per group.
META_COLS = 16  # 128 bytes per row
PTR_A, PTR_B, PTR_SFA, PTR_SFB, PTR_C, COL_M, COL_N, COL_K, COL_TILES_M, COL_TILE_START, COL_K_TILES = range(11)

# Per CTA, in global memory: the TMA descriptors of A, B, SFA, SFB for its current group.
TENSORMAP_BYTES = 128
NUM_TENSORMAPS = 4


# ---------------------------------------------------------------------------------------- schedule
def metadata_rows(sizes, addresses, tile_n: int, order=None, pairs: bool = False) -> list[list[int]]:
    """The metadata table: per group [a, b, sfa, sfb, c addresses, M, N, K, M tiles, first tile,
    K blocks, 0...] (META_COLS int64), one row per group in `order` (group indices; default list
    order). The device numbers the tiles row by row, so the row order is the schedule's group order
    (schedule_sm100.schedule with the same order) and the binary does not depend on it. `pairs`: the
    swapped pair kernel's tiles (schedule_sm100 pair_group_tiles: the M tiles, tile_n rows of A each,
    are the fast index)."""
    order, ordered_sizes = schedule_order(sizes, order)
    starts = tile_starts(ordered_sizes, tile_n, pair_group_tiles if pairs else group_tiles)
    tiles = pair_group_tiles if pairs else group_tiles
    rows = []
    for i, g in enumerate(order):
        m, n, k, _l = sizes[g]
        row = [*addresses[g], m, n, k, tiles(m, n, tile_n)[0], starts[i], k // bs.K_TILE]
        rows.append(row + [0] * (META_COLS - len(row)))
    return rows


class GroupTileScheduler:
    """Device side of schedule_sm100.schedule: the TileScheduler interface (first, valid, coord, next,
    k_tiles) over the tiles of all groups; coord returns (M tile, N tile, group)."""

    def __init__(self, meta: cute.Tensor, num_groups, total_tiles):
        self.meta = meta
        self.num_groups = cutlass.Int32(num_groups)
        self.total_tiles = cutlass.Int32(total_tiles)

    def __extract_mlir_values__(self):
        return [*cutlass.extract_mlir_values(self.meta), self.num_groups.ir_value(), self.total_tiles.ir_value()]

    def __new_from_mlir_values__(self, values):
        meta = cutlass.new_from_mlir_values(self.meta, values[:-2])
        return GroupTileScheduler(meta, cutlass.Int32(values[-2]), cutlass.Int32(values[-1]))

    def field(self, g, col):
        return cutlass.Int32(self.meta[(g, col)])

    def first(self):
        bidx, _, _ = cute.arch.block_idx()
        return cutlass.Int32(bidx)

    def valid(self, tile):
        return tile < self.total_tiles

    def next(self, tile):
        gdim, _, _ = cute.arch.grid_dim()
        return tile + cutlass.Int32(gdim)

    @cute.jit
    def group_of(self, tile):
        g = cutlass.Int32(0)
        for i in cutlass.range(1, self.num_groups, unroll=1):
            if self.field(i, COL_TILE_START) <= tile:
                g = i
        return g

    @cute.jit
    def coord(self, tile):
        g = self.group_of(tile)
        local = tile - self.field(g, COL_TILE_START)
        tiles_m = self.field(g, COL_TILES_M)
        return local % tiles_m, local // tiles_m, g

    @cute.jit
    def k_tiles(self, tile, _k_tile_cnt):
        return self.field(self.group_of(tile), COL_K_TILES)


class PairGroupTileScheduler(bs.PairWalk, GroupTileScheduler):
    """The swapped pair kernel's schedule (schedule_sm100.pair_schedule), walked by CTA pairs
    (bs.PairWalk); inside a group the problem's M tiles are the fast index. `coord` returns
    the MMA's coordinates: (tile along the MMA's M = the problem's N / 256, tile along the MMA's N =
    the problem's M / tile_n, group)."""

    def __new_from_mlir_values__(self, values):
        meta = cutlass.new_from_mlir_values(self.meta, values[:-2])
        return PairGroupTileScheduler(meta, cutlass.Int32(values[-2]), cutlass.Int32(values[-1]))

    @cute.jit
    def coord(self, tile):
        g = self.group_of(tile)
        local = tile - self.field(g, COL_TILE_START)
        tiles_m = self.field(g, COL_TILES_M)
        return local // tiles_m, local % tiles_m, g


# ---------------------------------------------------------------------------------------- the kernel
def group_operands(a_ptr, b_ptr, sfa_ptr, sfb_ptr, m, n, k):
    """Global views of one group's A, B (packed E2M1, K-major, L = 1) and reordered scales; the same
    layouts on the host (the descriptors in the kernel parameters) and on the device (the ones
    rewritten per group), so `tensormap.replace` changes only address, dims and strides."""
    mA = bs.make_kmajor_operand(a_ptr, m, k, 1, whole_tiles=False)
    mB = bs.make_kmajor_operand(b_ptr, n, k, 1)
    return mA, mB, bs.make_scale_operand(sfa_ptr, mA), bs.make_scale_operand(sfb_ptr, mB)


def swapped_operands(a_ptr, b_ptr, sfa_ptr, sfb_ptr, m, n, k):
    """The swapped pair kernel's operands of one group, in the mainloop's roles: its "A" (the MMA's M
    side) is the problem's B, its "B" the problem's A (M tails zero-filled), with their scales."""
    mA, mB, mSFA, mSFB = group_operands(a_ptr, b_ptr, sfa_ptr, sfb_ptr, m, n, k)
    return mB, mA, mSFB, mSFA


def pair_shared_storage(ml, desc_buffer):
    """The swapped pair kernel's shared storage: the grouped kernel's fields, plus the mbarrier of the
    pair's tensor-memory dealloc handshake. Built in plain Python with evaluated annotations (this
    module's are strings, which only a @cute.jit frame resolves; a struct declared in a @cute.jit body
    cannot have a field under an `if`)."""
    fields = {
        "tensormaps": desc_buffer,
        "ab_mbar": cute.struct.MemRange[cutlass.Int64, ml.num_ab_stage * 2],
        "acc_mbar": cute.struct.MemRange[cutlass.Int64, ml.num_acc_stage * 2],
        "tmem_holding_buf": cute.struct.MemRange[cutlass.Int32, 1],
        "tmem_dealloc_mbar": cute.struct.MemRange[cutlass.Int64, 1],
    }
    return cute.struct(type("PairSharedStorage", (), {"__annotations__": fields}))


def _gmem(dtype, address):
    return cute.make_ptr(dtype, address, cute.AddressSpace.gmem, assumed_align=16)


class NvFp4GroupGemmSm100(Sm100BlockScaledGemm):
    """Host: `__call__(a, b, sfa, sfb pointers of the first non-empty group, metadata pointer,
    descriptor workspace pointer, (M, N, K) of that group, (G, total tiles))` builds the TMA atoms and
    launches; device: `kernel` (warp roles in the module docstring). From the GEMM family's base it
    takes the mainloop set-up and the operand partitions; schedule, descriptors and epilogue are its own."""

    num_b = 1
    operand_order = ("a", "b0", "sfa", "sfb0")

    @staticmethod
    def can_implement(sizes, config: GroupGemmSm100Config | GroupGemmSm100Cta2Config) -> bool:
        try:
            cta_group = config.mainloop().cta_group
        except ValueError:
            return False
        n_tile = 2 * bs.TILE_M if cta_group == 2 else config.tile_n  # cta2: N on the pair's 256 MMA rows
        return bool(sizes) and all(
            l == 1 and k > 0 and k % bs.K_TILE == 0 and n % bs.SF_ATOM_ROWS == 0 and n % n_tile == 0
            and m >= 0 for m, n, k, l in sizes
        )

    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        sfa_ptr: cute.Pointer,
        sfb_ptr: cute.Pointer,
        meta_ptr: cute.Pointer,
        tensormap_ptr: cute.Pointer,
        first: tuple,
        counts: tuple,
        queue: launch_queue.Queue,
    ):
        m, n, k = first
        num_groups, total_tiles = counts
        ml = self.ml
        tiled_mma = ml.setup()

        if cutlass.const_expr(ml.pair):
            mA, mB, mSFA, mSFB = swapped_operands(a_ptr, b_ptr, sfa_ptr, sfb_ptr, m, n, k)
        else:
            mA, mB, mSFA, mSFB = group_operands(a_ptr, b_ptr, sfa_ptr, sfb_ptr, m, n, k)
        tma_a, tma_sfa = ml.make_tma_a(mA, mSFA)
        tma_b, tma_sfb = ml.make_tma_b(mB, mSFB)
        mMeta = cute.make_tensor(meta_ptr, cute.make_layout((num_groups, META_COLS), stride=(META_COLS, 1)))
        words = TENSORMAP_BYTES // 8
        mTensormaps = cute.make_tensor(
            tensormap_ptr,
            cute.make_layout((self.config.sm_count, NUM_TENSORMAPS, words), stride=(NUM_TENSORMAPS * words, words, 1)),
        )
        if cutlass.const_expr(ml.pair):
            grid = (2 * cutlass.min(total_tiles, self.config.sm_count // 2), 1, 1)
        else:
            grid = (cutlass.min(total_tiles, self.config.sm_count), 1, 1)

        # Spelled as a local: the struct resolves its (string) annotations in this frame.
        desc_buffer = cute.struct.Align[cute.struct.MemRange[cutlass.Int64, NUM_TENSORMAPS * words], TENSORMAP_BYTES]

        @cute.struct
        class SharedStorage:
            tensormaps: desc_buffer
            ab_mbar: cute.struct.MemRange[cutlass.Int64, ml.num_ab_stage * 2]
            acc_mbar: cute.struct.MemRange[cutlass.Int64, ml.num_acc_stage * 2]
            tmem_holding_buf: cute.struct.MemRange[cutlass.Int32, 1]

        self.shared_storage = SharedStorage
        if cutlass.const_expr(ml.pair):
            self.shared_storage = pair_shared_storage(ml, desc_buffer)

        tma = {"a": tma_a, "b0": tma_b, "sfa": tma_sfa, "sfb0": tma_sfb}
        operands = tuple(x for name in self.operand_order for x in tma[name])  # atom, tensor, atom, ...
        launch_queue.launch(self.kernel(tiled_mma, operands, mMeta, mTensormaps, num_groups, total_tiles), queue,
                            grid=grid, block=[bs.THREADS_PER_CTA, 1, 1], cluster=(ml.cta_group, 1, 1))

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        operands,
        mMeta: cute.Tensor,
        mTensormaps: cute.Tensor,
        num_groups: cutlass.Int32,
        total_tiles: cutlass.Int32,
    ):
        self.ml.bind(tiled_mma)
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()

        smem = bs.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        (sA, sSFA, sB, sSFB), ab_pipeline, acc_pipeline, tmem, epilogue_barrier = self.ml.setup_cta(storage, smem)

        cta_rank = None  # a CTA pair: this CTA's rank in the cluster (0 = the leader)
        if cutlass.const_expr(self.ml.pair):
            cta_rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
            thr_mma = tiled_mma.get_slice(cta_rank)
        else:
            thr_mma = tiled_mma.get_slice(0)
        # Partitions of the kernel parameters' (first group's) TMA coordinate tensors. A TMA
        # coordinate is just (row, k) arithmetic, so the same partitions index every group: the
        # descriptor a load names decides which tensor and bounds the coordinates apply to.
        atoms = dict(zip(self.operand_order, operands[0::2]))
        tiled = self.tile_operands(thr_mma, dict(zip(self.operand_order, operands[1::2])))
        loads = self.partition_operands(atoms, tiled, staged_buffers(sA, sSFA, sB, sSFB), cta_rank)

        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = [tiled_mma.make_fragment_B(sB[0])]
        tCtAcc_fake = self.ml.make_acc_fragment()

        sfb_mask = None
        is_leader = None
        if cutlass.const_expr(self.ml.pair):
            sched = PairGroupTileScheduler(mMeta, num_groups, total_tiles)
            sfb_vmnk = self.ml.cluster_layout_sfb_vmnk
            sfb_mask = cpasync.create_tma_multicast_mask(sfb_vmnk, sfb_vmnk.get_flat_coord(cta_rank), mcast_mode=1)
            is_leader = cta_rank == 0
        else:
            sched = GroupTileScheduler(mMeta, num_groups, total_tiles)
        pipeline.pipeline_init_wait(cluster_shape_mn=(self.ml.cta_group, 1))

        desc_smem_base = storage.tensormaps.data_ptr()
        if warp_idx == bs.TMA_WARP:
            self.tma_warp(
                sched,
                ab_pipeline,
                [atoms[name] for name in self.operand_order],
                desc_smem_base,
                mTensormaps[(bidx, None, None)],
                [loads[name][1:] for name in ("a", "sfa")],
                [loads[name][1:] for name in ("b0", "sfb0")],
                sfb_mask,
            )

        if warp_idx == bs.MMA_WARP:
            # k_tile_cnt 0: the schedule gives each tile its group's K blocks
            self.mma_role(sched, 0, (ab_pipeline, acc_pipeline), tmem, tCtAcc_fake.layout, tCrA, tCrB, sSFA, sSFB,
                          is_leader)

        if warp_idx < bs.MMA_WARP:
            acc_tmem_ptr, tCtAcc = self.ml.acquire_accumulators(tmem, tCtAcc_fake.layout)
            # A tiled MMA of its own: the MMA warp's one carries the scale addresses it set per K block.
            if cutlass.const_expr(self.ml.pair):
                thr_mma_epi = bs.BlockScaledMainloop._make_tiled_mma(self.config.tile_n, 2).get_slice(cta_rank)
                self.epilogue_swapped(sched, tidx, thr_mma_epi, acc_pipeline, tCtAcc)
            else:
                thr_mma_epi = bs.BlockScaledMainloop._make_tiled_mma(self.config.tile_n).get_slice(0)
                self.epilogue(sched, tidx, thr_mma_epi, acc_pipeline, tCtAcc)
            self.ml.release_accumulators(tmem, epilogue_barrier, acc_tmem_ptr)

    @cute.jit
    def tma_warp(self, sched, ab_pipeline, atoms, desc_smem_base, mDesc, a_parts, b_parts, sfb_mask=None):
        """Producer role: per tile, the group's descriptors when the group changes, then every K block of
        A / SFA (by the tile's M coordinate) and B / SFB (by its N coordinate, SFB by its 128-row atom).

        The descriptors of A, B, SFA, SFB live in shared memory from `desc_smem_base` (where they are
        edited) and in this CTA's slot `mDesc` (NUM_TENSORMAPS, 16 words) of the global workspace
        (where the TMA unit reads them). `sfb_mask` (a CTA pair): the CTAs the B scales' multicast TMA
        writes to; the pair's operands are the swapped ones (`swapped_operands`)."""
        tensormaps = TensorMapManager(TensorMapUpdateMode.SMEM, TENSORMAP_BYTES)
        words = TENSORMAP_BYTES // 8
        desc_smem = [desc_smem_base + i * words for i in range(NUM_TENSORMAPS)]
        desc_gmem = [tensormaps.get_tensormap_ptr(mDesc[(i, None)].iterator) for i in range(NUM_TENSORMAPS)]
        for atom, dst in zip(atoms, desc_smem):
            tensormaps.init_tensormap_from_atom(atom, dst, bs.TMA_WARP)
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.ml.num_ab_stage)
        (tAgA, tAsA), (tAgSFA, tAsSFA) = a_parts
        (tBgB, tBsB), (tBgSFB, tBsSFB) = b_parts
        last_group = cutlass.Int32(-1)
        tile = sched.first()
        while sched.valid(tile):
            tm, tn, g = sched.coord(tile)
            if g != last_group:
                operands_of = swapped_operands if cutlass.const_expr(self.ml.pair) else group_operands
                mA, mB, mSFA, mSFB = operands_of(
                    _gmem(bs.AB_DTYPE, sched.meta[(g, PTR_A)]),
                    _gmem(bs.AB_DTYPE, sched.meta[(g, PTR_B)]),
                    _gmem(bs.SF_DTYPE, sched.meta[(g, PTR_SFA)]),
                    _gmem(bs.SF_DTYPE, sched.meta[(g, PTR_SFB)]),
                    sched.field(g, COL_M),
                    sched.field(g, COL_N),
                    sched.field(g, COL_K),
                )
                # tensormap.replace in shared memory, then a fenced copy to this CTA's global slot
                tensormaps.update_tensormap((mA, mB, mSFA, mSFB), tuple(atoms), tuple(desc_gmem), bs.TMA_WARP,
                                            tuple(desc_smem))
                # the TMA unit reads descriptors through the tensormap proxy: acquire the new ones
                for desc in desc_gmem:
                    tensormaps.fence_tensormap_update(desc)
                last_group = g
            descs = [tensormaps.get_tensormap_ptr(d, cute.AddressSpace.generic) for d in desc_gmem]
            tn_sf = tn // self.ml.sfb_tile_div
            copies = [
                (atoms[0], tAgA[(None, tm, None, 0)], tAsA, descs[0]),
                (atoms[1], tBgB[(None, tn, None, 0)], tBsB, descs[1]),
                (atoms[2], tAgSFA[(None, tm, None, 0)], tAsSFA, descs[2]),
                (atoms[3], tBgSFB[(None, tn_sf, None, 0)], tBsSFB, descs[3]),
            ]
            masks = None
            if cutlass.const_expr(sfb_mask is not None):
                masks = [None, None, None, sfb_mask]  # only the B scales (the problem's SFA) are multicast
            for k_tile in cutlass.range(sched.field(g, COL_K_TILES), unroll=1):
                ab_pipeline.producer_acquire(state)
                self.ml.load_k_tile(ab_pipeline, state, k_tile, copies, masks)
                state.advance()
            tile = sched.next(tile)
        # Do not exit while TMA writes into this CTA's shared memory are still in flight.
        ab_pipeline.producer_tail(state)

    @cute.jit
    def epilogue(self, sched, tidx, thr_mma, acc_pipeline, tCtAcc):
        """Epilogue warps: per tile, accumulator -> fp16 -> the group's C, rows >= M left alone."""
        c_tile = cute.slice_(self.ml.mma_tiler, (None, None, 0))
        store_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), bs.C_DTYPE)
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ml.num_acc_stage)
        tile = sched.first()
        while sched.valid(tile):
            tm, tn, g = sched.coord(tile)
            m = sched.field(g, COL_M)
            mC = bs.make_output(_gmem(bs.C_DTYPE, sched.meta[(g, PTR_C)]), m, sched.field(g, COL_N), 1,
                                whole_tiles=False)
            tCgC = thr_mma.partition_C(cute.local_tile(mC, c_tile, (None, None, None)))
            # the same partition of C's coordinates: which row this thread stores
            tCcC = thr_mma.partition_C(cute.local_tile(cute.make_identity_tensor(mC.shape), c_tile, (None, None, None)))
            tiled_t2r, tTR_tAcc, tTR_gC = self.ml.make_epilogue_copy(tidx, tCtAcc, tCgC)
            _, _, tTR_cC = self.ml.make_epilogue_copy(tidx, tCtAcc, tCcC)
            frag_shape = tTR_gC[(None, None, None, 0, 0, 0, 0, 0)].shape
            tTR_rAcc = cute.make_rmem_tensor(frag_shape, bs.ACC_DTYPE)
            tTR_rC = cute.make_rmem_tensor(frag_shape, bs.C_DTYPE)
            tTR_gC_tile = tTR_gC[(None, None, None, 0, None, tm, tn, 0)]
            row = tTR_cC[(None, None, None, 0, None, tm, tn, 0)][0][0]
            acc_pipeline.consumer_wait(acc_state)
            for sub in cutlass.range(cute.size(tTR_tAcc, mode=[4]), unroll_full=True):
                cute.copy(tiled_t2r, tTR_tAcc[(None, None, None, 0, sub, acc_state.index)], tTR_rAcc)
                # tcgen05.ld is asynchronous: its registers are valid after tcgen05.wait::ld.
                cute.arch.fence_view_async_tmem_load()
                tTR_rC.store(tTR_rAcc.load().to(bs.C_DTYPE))
                if row < m:
                    cute.copy(store_atom, tTR_rC, tTR_gC_tile[(None, None, None, sub)])
            # Every TMEM read of this buffer has completed (waited above): hand it back.
            acc_pipeline.consumer_release(acc_state)
            acc_state.advance()
            tile = sched.next(tile)


    @cute.jit
    def epilogue_swapped(self, sched, tidx, thr_mma, acc_pipeline, tCtAcc):
        """The swapped pair kernel's epilogue warps: accumulator lane = a row of the problem's N (this
        CTA's 128 of the pair's 256), columns = rows of its M; per tile, fp16 values stored into C
        transposed (a (N, M) view of the row-major C), columns >= M left alone."""
        c_tile = cute.slice_(self.ml.mma_tiler, (None, None, 0))
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ml.num_acc_stage)
        tile = sched.first()
        while sched.valid(tile):
            tn, tm, g = sched.coord(tile)  # tn: 256 rows of N, tm: tile_n rows of M
            m = sched.field(g, COL_M)
            n = sched.field(g, COL_N)
            c_ptr = _gmem(bs.C_DTYPE, sched.meta[(g, PTR_C)])
            mCt = cute.make_tensor(c_ptr, cute.make_layout((n, m, 1), stride=(1, n, m * n)))
            tCgC = thr_mma.partition_C(cute.local_tile(mCt, c_tile, (None, None, None)))
            iCt = cute.make_identity_tensor(mCt.shape)
            tCcC = thr_mma.partition_C(cute.local_tile(iCt, c_tile, (None, None, None)))
            tiled_t2r, tTR_tAcc, tTR_gC = self.ml.make_epilogue_copy(tidx, tCtAcc, tCgC)
            _, _, tTR_cC = self.ml.make_epilogue_copy(tidx, tCtAcc, tCcC)
            frag_shape = tTR_gC[(None, None, None, 0, 0, 0, 0, 0)].shape
            tTR_rAcc = cute.make_rmem_tensor(frag_shape, bs.ACC_DTYPE)
            tTR_rC = cute.make_rmem_tensor(frag_shape, bs.C_DTYPE)
            tTR_gC_tile = tTR_gC[(None, None, None, 0, None, tn, tm, 0)]
            tTR_cC_tile = tTR_cC[(None, None, None, 0, None, tn, tm, 0)]
            acc_pipeline.consumer_wait(acc_state)
            for sub in cutlass.range(cute.size(tTR_tAcc, mode=[4]), unroll_full=True):
                cute.copy(tiled_t2r, tTR_tAcc[(None, None, None, 0, sub, acc_state.index)], tTR_rAcc)
                # tcgen05.ld is asynchronous: its registers are valid after tcgen05.wait::ld.
                cute.arch.fence_view_async_tmem_load()
                tTR_rC.store(tTR_rAcc.load().to(bs.C_DTYPE))
                dst = tTR_gC_tile[(None, None, None, sub)]
                crd = tTR_cC_tile[(None, None, None, sub)]
                for i in cutlass.range_constexpr(cute.size(dst)):
                    if crd[i][1] < m:
                        dst[i] = tTR_rC[i]
            # Every TMEM read of this buffer has completed (waited above): hand it back.
            acc_pipeline.consumer_release(acc_state)
            acc_state.advance()
            tile = sched.next(tile)


# ---------------------------------------------------------------------------------------- host glue
_COMPILED = CompileCache()


def compile_for(config: GroupGemmSm100Config | GroupGemmSm100Cta2Config | None = None, arch: str = "sm_100a",
                options: str = ""):
    """Compile (once per config, arch and options) the kernel; no GPU needed. Problem sizes, group
    count and addresses are runtime values, so one binary serves every problem of a config.
    `options` are extra cute.compile flags (e.g. "--keep-ptx --keep-cubin --dump-dir DIR")."""
    from shared.cute.compile_cache import compile_arch
    from shared.cute.pointers import null_ptr

    config = config or GroupGemmSm100Config()
    config.mainloop()  # ValueError for a config that does not fit

    def build():
        ab, sf, i64 = null_ptr(bs.AB_DTYPE, 16), null_ptr(bs.SF_DTYPE, 16), null_ptr(cutlass.Int64, 16)
        with compile_arch(arch):
            return cute.compile(NvFp4GroupGemmSm100(config), ab, ab, sf, sf, i64, i64,
                                (bs.TILE_M, bs.SF_ATOM_ROWS, bs.K_TILE), (1, 1), launch_queue.placeholder(),
                                options=f"--gpu-arch {arch} {options}".strip())

    return _COMPILED.get((config, arch, options), build)


def check_k(sizes) -> None:
    """ValueError naming the first group whose K the kernel cannot take (a positive multiple of 256:
    the problem's stated constraint, one pipeline stage per 256 K values)."""
    for g, (_m, _n, k, _l) in enumerate(sizes):
        if k <= 0 or k % bs.K_TILE:
            raise ValueError(f"group_gemm: group {g} has K = {k}; K must be a positive multiple of {bs.K_TILE}")


def takes(sizes) -> bool:
    """Whether the kernel takes these groups' shapes: L = 1 and N a multiple of 128 in every group
    (elsewhere the caller takes the portable path)."""
    return all(l == 1 and n % bs.SF_ATOM_ROWS == 0 for _m, n, _k, l in sizes)


def prepare(data, config: GroupGemmSm100Config | GroupGemmSm100Cta2Config, sizes):
    """The leaderboard tuple bound to the kernel of `config` (problems/group_gemm/config.py
    choose_sm100, for the device's SM count): every tensor checked by group and name, the kernel
    compiled (or fetched), the metadata table and descriptor workspace made on the GPU. Returns a
    PreparedLaunch (calling it launches; C written in place), a no-op where no group has a tile, or
    None where the kernel does not take the problem (`takes`: the caller takes the portable path).
    `sizes` come from shared.inputs.check_grouped."""
    import torch

    from shared.cute.launch_binding import PreparedLaunch
    from shared.cute.operand_checks import check_group, check_groups_cuda
    from shared.cute.pointers import gmem_ptr

    check_k(sizes)
    if not takes(sizes):
        return None
    abc, _, reordered, _ = data
    scales = [check_group(g, *abc[g], reordered[g], sizes[g]) for g in range(len(sizes))]
    check_groups_cuda(abc, scales)
    device = abc[0][0].device
    pairs = isinstance(config, GroupGemmSm100Cta2Config)
    if pairs and any(n % 256 for _m, n, _k, _l in sizes):
        raise ValueError("group_gemm cta2: every group's N must be a multiple of 256, got "
                         f"{[n for _m, n, _k, _l in sizes]}")
    order = list(range(len(sizes))) if pairs else group_rank(sizes, config.order)  # cta2: list order
    ordered_sizes = [sizes[g] for g in order]
    starts = tile_starts(ordered_sizes, config.tile_n, pair_group_tiles if pairs else group_tiles)
    if starts[-1] == 0:
        return lambda: None  # every C is empty
    # The order is in the rows, not in the binary (a cta2 config has none: its groups in list order).
    compiled = compile_for(config if pairs else replace(config, order="group"))
    addresses = [(a.data_ptr(), b.data_ptr(), sfa.data_ptr(), sfb.data_ptr(), c.data_ptr())
                 for (a, b, c), (sfa, sfb) in zip(abc, scales)]
    meta = torch.tensor(metadata_rows(sizes, addresses, config.tile_n, order, pairs), dtype=torch.int64).to(device)
    workspace = torch.empty((config.sm_count, NUM_TENSORMAPS, TENSORMAP_BYTES // 8), dtype=torch.int64, device=device)
    first = order[next(i for i in range(len(sizes)) if starts[i + 1] > starts[i])]
    (a, b, _), (sfa, sfb) = abc[first], scales[first]
    m, n, k, _ = sizes[first]
    args = [gmem_ptr(a, bs.AB_DTYPE), gmem_ptr(b, bs.AB_DTYPE), gmem_ptr(sfa, bs.SF_DTYPE), gmem_ptr(sfb, bs.SF_DTYPE),
            gmem_ptr(meta, cutlass.Int64), gmem_ptr(workspace, cutlass.Int64), (m, n, k), (len(sizes), starts[-1])]
    return PreparedLaunch(compiled, args, device, hold=(meta, workspace))
