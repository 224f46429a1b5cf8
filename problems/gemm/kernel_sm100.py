"""NVFP4 block-scaled GEMM for Blackwell (sm_100a): C = fp16(A . B^T), tcgen05 block-scaled MMA.

Status: COMPILED for sm_100a in CI (tests/test_sm100_kernels.py); never run here — no B200 was
available while it was written. Treat it as unverified until it passes `python -m harness.eval gemm
--mode test --impl submission` on a B200.

Algorithm (one output tile of 128 x tile_n per step of a persistent, statically scheduled loop):
  * A [M, K/2, L] and B [N, K/2, L] are packed E2M1, K-major; the kernel uses the *permuted* scale
    tensors (sfa_permuted / sfb_permuted, [32, 4, rest, 4, K/64, L]) whose byte order is the
    tcgen05 scale-factor atom, so a 128-row x 256-K block of scales is one contiguous 512-byte
    chunk that TMA moves in one request.
  * Mainloop (shared with the dual GEMM, `shared/cute/sm100_blockscaled.py`): a TMA warp loads
    256-wide K blocks of A, B, SFA, SFB into an N-stage shared-memory ring (as many stages as fit
    in 227 KB); the MMA warp copies each stage's scales into tensor memory (tcgen05.cp) and issues
    4 x `tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16` (128 x tile_n x 64)
    into an fp32 accumulator in tensor memory. With tile_n = 64 the SFB block is still a whole
    128-row scale atom (shared by N tiles 2j, 2j+1) and the MMA reads it from a 2-column offset
    on odd tiles.
  * Tile choice (`choose_config`): 128 x 64 tiles while 128 x 128 tiles would leave more than
    half of the SMs idle — true for all three leaderboard shapes (56 / 32 / 56 tiles of 128 x 128
    on 148 SMs) — else 128 x 128.
  * Epilogue: 4 warps, thread t owns accumulator row t; 32 columns at a time TMEM -> registers
    (tcgen05.ld 32x32b.x32, then tcgen05.wait::ld), convert to fp16 (round to nearest even),
    store straight to global (64 contiguous bytes per thread per step). Two accumulator buffers:
    the epilogue of tile i overlaps the mainloop of tile i+1 when a CTA gets several tiles.

Warp roles: warps 0-3 epilogue (warp 0 also allocates/frees the 512 TMEM columns), warp 4 MMA,
warp 5 TMA. Grid = min(#tiles, SM count); CTA b takes tiles b, b + grid, ... (M fastest).

Constraints (ValueError otherwise): M % 128 == 0, N % 128 == 0, K % 256 == 0; the layouts of the
leaderboard tuple (spec/LEADERBOARD.md §2.4: batch-major, K-major a/b, row-major c, permuted
scales with their exact strides), 16-byte aligned.

Expected B200 time — an ESTIMATE from a model, not a measurement (`python -m scripts.b200 --model`;
`nox -s b200` compares it with the measured time). Assumed: HBM 8 TB/s; dense block-scaled FP4
9 PFLOP/s over 148 SMs = 60.8 TFLOP/s per SM, 128 x 64 MMAs at 2/3 of it (A re-read from shared
memory per 64 columns of N); +1 us of launch, pipeline fill (first stage's DRAM latency) and the last
epilogue. t = max(bytes / 8 TB/s, waves * K steps * step) + 1 us, bytes = A + SFA + B + SFB + 2MN.
128 x 64 tiles: 112 / 64 / 112 CTAs, one wave, one tile each; a 128 x 64 x 256 step is
2*128*64*256 = 4.19 MFLOP -> 0.103 us.
  (128, 7168, 16384): 69.1 MB -> 8.63 us; 64 steps -> 6.62 us;  expected ~9.6 us (SOL 8.994)
  (128, 4096, 7168):  18.1 MB -> 2.26 us; 28 steps -> 2.90 us;  expected ~3.9 us (SOL 2.354)
  (128, 7168, 2048):  10.2 MB -> 1.28 us;  8 steps -> 0.83 us;  expected ~2.3 us (SOL 1.333)
geomean ~4.4 us (1.45x the SOL geomean 3.045). Next steps: TMA multicast of A over an N cluster
(every CTA reads the same 128 rows of A: 117 MB of L2 traffic on the first shape), split-K for the
middle shape (64 CTAs on 148 SMs). docs/B200-READINESS.md compares the kernel with NVIDIA's example.

How to run (on a B200): `python -m harness.eval gemm --mode benchmark --impl submission`, where
problems/gemm/submission.py calls `kernel_sm100.run(data)`. Compile only (any machine):
`python -c "from problems.gemm import kernel_sm100 as k; k.compile_for(128, 7168, 16384, 1)"`.
"""

from __future__ import annotations

from dataclasses import dataclass

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync

from shared.cute import sm100_blockscaled as bs
from shared.cute.host import CompileCache

B200_SM_COUNT = 148


@dataclass(frozen=True)
class GemmSm100Config:
    tile_n: int = 128
    num_acc_stage: int = 2  # 2 x 128 accumulator columns + 32 scale columns fit in 512
    num_ab_stage: int = 0  # 0 = fill shared memory
    sm_count: int = B200_SM_COUNT  # persistent grid size cap (compile-time)

    def mainloop(self) -> bs.MainloopConfig:
        return bs.MainloopConfig(
            tile_n=self.tile_n,
            num_b=1,
            num_acc_stage=self.num_acc_stage,
            num_ab_stage=self.num_ab_stage,
        )


def choose_config(m: int, n: int, k: int, l: int, sm_count: int = B200_SM_COUNT) -> GemmSm100Config:
    """128 x 64 tiles while 128 x 128 tiles would leave over half the SMs idle (all three
    leaderboard shapes: 56 / 32 / 56 tiles of 128 x 128 on 148 SMs), else 128 x 128."""
    if bs.narrow_tiles_fill_better(m, n, l, sm_count):
        return GemmSm100Config(tile_n=64, num_acc_stage=2, sm_count=sm_count)
    return GemmSm100Config(tile_n=128, num_acc_stage=2, sm_count=sm_count)


class NvFp4GemmSm100:
    """C = fp16(A . B^T) on sm_100a. Host: `__call__(a, b, sfa_permuted, sfb_permuted, c pointers,
    (m, n, k, l))` builds the TMA atoms and launches; device: `kernel` (warp roles above)."""

    def __init__(self, config: GemmSm100Config = GemmSm100Config()):
        self.config = config
        self.ml = bs.BlockScaledMainloop(config.mainloop())

    @staticmethod
    def can_implement(m: int, n: int, k: int, l: int, config: GemmSm100Config = GemmSm100Config()) -> bool:
        try:
            bs.check_problem(m, n, k, l, config.tile_n)
            config.mainloop()
        except ValueError:
            return False
        return True

    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        sfa_ptr: cute.Pointer,
        sfb_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        problem: tuple,
    ):
        m, n, k, l = problem
        ml = self.ml
        tiled_mma = ml.setup()

        mA = bs.make_kmajor_operand(a_ptr, m, k, l)
        mB = bs.make_kmajor_operand(b_ptr, n, k, l)
        mSFA = bs.make_scale_operand(sfa_ptr, mA)
        mSFB = bs.make_scale_operand(sfb_ptr, mB)
        mC = bs.make_output(c_ptr, m, n, l)

        tma_a, tma_sfa = ml.make_tma_a(mA, mSFA)
        tma_b, tma_sfb = ml.make_tma_b(mB, mSFB)

        grid = bs.TileScheduler.grid(*bs.tile_counts(mC, self.config.tile_n), self.config.sm_count)

        @cute.struct
        class SharedStorage:
            ab_mbar: cute.struct.MemRange[cutlass.Int64, ml.num_ab_stage * 2]
            acc_mbar: cute.struct.MemRange[cutlass.Int64, ml.num_acc_stage * 2]
            tmem_holding_buf: cute.struct.MemRange[cutlass.Int32, 1]

        self.shared_storage = SharedStorage

        self.kernel(
            tiled_mma,
            tma_a[0],
            tma_a[1],
            tma_b[0],
            tma_b[1],
            tma_sfa[0],
            tma_sfa[1],
            tma_sfb[0],
            tma_sfb[1],
            mC,
        ).launch(grid=grid, block=[bs.THREADS_PER_CTA, 1, 1], cluster=(1, 1, 1))

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_atom_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_atom_b: cute.CopyAtom,
        mB: cute.Tensor,
        tma_atom_sfa: cute.CopyAtom,
        mSFA: cute.Tensor,
        tma_atom_sfb: cute.CopyAtom,
        mSFB: cute.Tensor,
        mC: cute.Tensor,
    ):
        self.ml.bind(tiled_mma)
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()

        if warp_idx == bs.TMA_WARP:
            cpasync.prefetch_descriptor(tma_atom_a)
            cpasync.prefetch_descriptor(tma_atom_b)
            cpasync.prefetch_descriptor(tma_atom_sfa)
            cpasync.prefetch_descriptor(tma_atom_sfb)

        smem = bs.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        (sA, sSFA, sB, sSFB), ab_pipeline, acc_pipeline, tmem, epilogue_barrier = self.ml.setup_cta(storage, smem)

        thr_mma = tiled_mma.get_slice(0)
        # (MMA, MMA_MN, MMA_K, RestMN, RestK, L)
        tCgA = self.ml.tile_global(thr_mma, mA, operand_a=True)
        tCgB = self.ml.tile_global(thr_mma, mB, operand_a=False)
        tCgSFA = self.ml.tile_global(thr_mma, mSFA, operand_a=True)
        tCgSFB = self.ml.tile_global_sfb(mSFB)
        gC = cute.local_tile(mC, cute.slice_(self.ml.mma_tiler, (None, None, 0)), (None, None, None))
        tCgC = thr_mma.partition_C(gC)

        # ((atom_v, rest_v), STAGE) and ((atom_v, rest_v), RestMN, RestK, L)
        tAsA, tAgA = self.ml.partition_tma(tma_atom_a, tCgA, sA, scales=False)
        tBsB, tBgB = self.ml.partition_tma(tma_atom_b, tCgB, sB[0], scales=False)
        tAsSFA, tAgSFA = self.ml.partition_tma(tma_atom_sfa, tCgSFA, sSFA, scales=True)
        tBsSFB, tBgSFB = self.ml.partition_tma(tma_atom_sfb, tCgSFB, sSFB[0], scales=True)
        k_tile_cnt = cute.size(tAgA, mode=[2])

        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = [tiled_mma.make_fragment_B(sB[0])]
        tCtAcc_fake = self.ml.make_acc_fragment()

        sched = bs.TileScheduler(*bs.tile_counts(mC, self.config.tile_n))
        pipeline.pipeline_init_wait(cluster_shape_mn=(1, 1))

        if warp_idx == bs.TMA_WARP:
            self.ml.tma_warp(
                sched,
                k_tile_cnt,
                ab_pipeline,
                [(tma_atom_a, tAgA, tAsA), (tma_atom_sfa, tAgSFA, tAsSFA)],
                [(tma_atom_b, tBgB, tBsB)],
                [(tma_atom_sfb, tBgSFB, tBsSFB)],
            )

        if warp_idx == bs.MMA_WARP:
            tmem.wait_for_alloc()
            self.ml.mma_warp(
                sched,
                k_tile_cnt,
                ab_pipeline,
                acc_pipeline,
                tmem.retrieve_ptr(bs.ACC_DTYPE),
                tCtAcc_fake.layout,
                tCrA,
                tCrB,
                sSFA,
                sSFB,
            )

        if warp_idx < bs.MMA_WARP:
            acc_tmem_ptr, tCtAcc = self.ml.acquire_accumulators(tmem, tCtAcc_fake.layout)
            tiled_t2r, tTR_tAcc, tTR_gC = self.ml.make_epilogue_copy(tidx, tCtAcc, tCgC)
            frag_shape = tTR_gC[(None, None, None, 0, 0, 0, 0, 0)].shape
            tTR_rAcc = cute.make_rmem_tensor(frag_shape, bs.ACC_DTYPE)
            tTR_rC = cute.make_rmem_tensor(frag_shape, bs.C_DTYPE)
            store_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), bs.C_DTYPE)
            subtiles = cute.size(tTR_tAcc, mode=[4])

            acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ml.num_acc_stage)
            tile = sched.first()
            while sched.valid(tile):
                tm, tn, tl = sched.coord(tile)
                tTR_gC_tile = tTR_gC[(None, None, None, 0, None, tm, tn, tl)]
                acc_pipeline.consumer_wait(acc_state)
                for sub in cutlass.range(subtiles, unroll_full=True):
                    cute.copy(tiled_t2r, tTR_tAcc[(None, None, None, 0, sub, acc_state.index)], tTR_rAcc)
                    # tcgen05.ld is asynchronous: its registers are valid after tcgen05.wait::ld.
                    cute.arch.fence_view_async_tmem_load()
                    tTR_rC.store(tTR_rAcc.load().to(bs.C_DTYPE))
                    cute.copy(store_atom, tTR_rC, tTR_gC_tile[(None, None, None, sub)])
                # Every TMEM read of this buffer has completed (waited above): hand it back.
                acc_pipeline.consumer_release(acc_state)
                acc_state.advance()
                tile = sched.next(tile)

            self.ml.release_accumulators(tmem, epilogue_barrier, acc_tmem_ptr)


# ---------------------------------------------------------------------------------------- host glue
_COMPILED = CompileCache()


def compile_for(m: int, n: int, k: int, l: int = 1, arch: str = "sm_100a",
                config: GemmSm100Config | None = None, options: str = ""):
    """Compile (once per config, arch and options) the kernel that serves this shape; no GPU needed.

    The problem size is a runtime argument, so all shapes with the same config share one binary.
    `options` are extra cute.compile flags (e.g. "--keep-ptx --keep-cubin --dump-dir DIR").
    Raises ValueError for shapes the kernel cannot take.
    """
    config = config or choose_config(m, n, k, l)
    return bs.compile_kernel(_COMPILED, NvFp4GemmSm100, config, 1, (m, n, k, l), arch, options)


def prepare(data):
    """The tuple (a, b, sfa, sfb, sfa_p, sfb_p, c) checked and bound to the sm100 kernel; calling
    the result launches (c written in place)."""
    return bs.prepare(data, 1, choose_config, compile_for)


def run(data):
    """Leaderboard entry on sm100: data = (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c) -> c."""
    return bs.launch(data, 1, choose_config, compile_for)
