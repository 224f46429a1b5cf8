"""Fused NVFP4 gated dual GEMM for Blackwell (sm_100a): C = fp16(silu(A . B1^T) * (A . B2^T)).

Status: COMPILED for sm_100a in CI (tests/test_sm100_kernels.py); never run here — no B200 was
available while it was written. Treat it as unverified until it passes `python -m harness.eval
dual_gemm --mode test --impl submission` on a B200.

Design — ONE kernel, both products per output tile, nothing round-trips through global memory:
  * Operands: A [M, K/2, L], B1, B2 [N, K/2, L] packed E2M1, K-major; scales from the *permuted*
    tensors (sfa_permuted, sfb1_permuted, sfb2_permuted: [32, 4, rest, 4, K/64, L]), which are
    byte-for-byte the tcgen05 scale-factor atom, so each 128-row x 256-K scale block is one
    contiguous 512-byte TMA request.
  * Mainloop (`shared/cute/sm100_blockscaled.py`, num_b = 2): per 256-wide K block one pipeline
    stage holds A, SFA, B1, SFB1, B2, SFB2 (54 KB with 128-wide tiles, 4 stages; 38 KB with
    64-wide tiles, 5 stages). The TMA warp loads A and SFA ONCE per K block; the MMA warp copies
    the three scale blocks into tensor memory (tcgen05.cp) and issues 4 block-scaled MMAs
    (tcgen05.mma.kind::mxf4nvf4.block_scale, K = 64 each) with B1 into accumulator 1 and 4 with
    B2 into accumulator 2, both reading the same A stage. Tensor memory: accumulators first
    (buffer = stage * 2 + {0: gate, 1: up}), then SFA, SFB1, SFB2 (16 columns each).
  * Tile choice (`choose_config`): 128 x 64 tiles (two accumulator stages) while 128 x 128
    tiles would leave more than half of the SMs idle — (256, 4096) and (256, 3072): 64 / 48 tiles
    on 148 SMs — else 128 x 128 (one accumulator stage: 2 x 128 columns + scales) for
    (512, 4096) / (512, 3072), where 64-wide tiles would need a second wave.
  * Epilogue (warps 0-3, thread t = output row t of the tile): 32 columns at a time, tcgen05.ld
    both accumulators (then tcgen05.wait::ld), h = g * rcp(1 + 2^(-g log2 e)) * u in fp32
    (MUFU.EX2 + MUFU.RCP), one conversion to fp16, 64 bytes stored per thread per step. The
    fp32 products never leave the SM.
  * Persistent: grid = min(#tiles, SMs); CTA b takes tiles b, b + grid, ... (M fastest).

Warp roles: warps 0-3 epilogue (warp 0 allocates/frees tensor memory), warp 4 MMA, warp 5 TMA.

Constraints (ValueError otherwise): M % 128 == 0, N % 128 == 0, K % 256 == 0, the layouts of the
leaderboard tuple (spec/LEADERBOARD.md §2.4: batch-major, K-major a/b1/b2, row-major c, permuted
scales with their exact strides), 16-byte aligned.

Expected B200 time — an ESTIMATE from a model, not a measurement (`python -m scripts.b200 --model`;
`nox -s b200` compares it with the measured time). Assumed: HBM 8 TB/s; dense block-scaled FP4
9 PFLOP/s over 148 SMs = 60.8 TFLOP/s per SM, 128 x 64 MMAs at 2/3 of it; +1 us of launch, pipeline
fill and the last epilogue. t = max(bytes / 8 TB/s, waves * K steps * step) + 1 us, bytes =
A + SFA + 2 (B + SFB) + 2MN, a step = both products of one 256-wide K block:
2*2*128*64*256 = 8.4 MFLOP -> 0.207 us (128 x 64), 16.8 MFLOP -> 0.276 us (128 x 128). One wave each.
  (256, 4096, 7168): 128 CTAs of 128 x 64,  36.2 MB -> 4.52 us; 28 steps -> 5.79 us; expected ~6.8 us (SOL 4.708)
  (512, 4096, 7168): 128 CTAs of 128 x 128, 39.3 MB -> 4.91 us; 28 steps -> 7.72 us; expected ~8.7 us (SOL 8.714)
  (256, 3072, 4096):  96 CTAs of 128 x 64,  16.3 MB -> 2.04 us; 16 steps -> 3.31 us; expected ~4.3 us (SOL 2.125)
  (512, 3072, 7168):  96 CTAs of 128 x 128, 30.0 MB -> 3.75 us; 28 steps -> 7.72 us; expected ~8.7 us (SOL 6.535)
geomean ~6.9 us (1.4x the SOL geomean 4.886). Next steps: split-K or 2-CTA (cta_group::2, 256-row)
MMAs so that all 148 SMs work and B is read once per CTA pair; keeping A in the MMA collector
between the B1 and B2 instructions (not exposed for sm_100 in CuTe DSL 4.8.1).
docs/B200-READINESS.md compares the kernel with NVIDIA's example.

How to run (on a B200): `python -m harness.eval dual_gemm --mode benchmark --impl submission`,
where problems/dual_gemm/submission.py calls `kernel_sm100.run(data)`. Compile only (any machine):
`python -c "from problems.dual_gemm import kernel_sm100 as k; k.compile_for(256, 4096, 7168, 1)"`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
from cutlass.cute.nvgpu import cpasync

from shared.cute import sm100_blockscaled as bs
from shared.cute.host import CompileCache

B200_SM_COUNT = 148
LOG2_E = math.log2(math.e)


@dataclass(frozen=True)
class DualGemmSm100Config:
    tile_n: int = 128
    num_acc_stage: int = 1  # 2 x 128 accumulator columns per stage: only one fits (tile_n = 64: two)
    num_ab_stage: int = 0  # 0 = fill shared memory
    sm_count: int = B200_SM_COUNT  # persistent grid size cap (compile-time)

    def mainloop(self) -> bs.MainloopConfig:
        return bs.MainloopConfig(
            tile_n=self.tile_n,
            num_b=2,
            num_acc_stage=self.num_acc_stage,
            num_ab_stage=self.num_ab_stage,
        )


def choose_config(m: int, n: int, k: int, l: int, sm_count: int = B200_SM_COUNT) -> DualGemmSm100Config:
    """128 x 64 tiles while 128 x 128 tiles would leave over half the SMs idle ((256, 4096) and
    (256, 3072): 64 / 48 tiles of 128 x 128), else 128 x 128 ((512, 4096), (512, 3072): 128 / 96
    tiles; 64-wide tiles would need a second wave)."""
    if bs.narrow_tiles_fill_better(m, n, l, sm_count):
        return DualGemmSm100Config(tile_n=64, num_acc_stage=2, sm_count=sm_count)
    return DualGemmSm100Config(tile_n=128, num_acc_stage=1, sm_count=sm_count)


class NvFp4DualGemmSm100:
    """C = fp16(silu(A . B1^T) * (A . B2^T)) on sm_100a, one fused kernel. Host: `__call__(a, b1, b2,
    sfa_permuted, sfb1_permuted, sfb2_permuted, c pointers, (m, n, k, l))` builds the TMA atoms and
    launches; device: `kernel` (warp roles above)."""

    def __init__(self, config: DualGemmSm100Config = DualGemmSm100Config()):
        self.config = config
        self.ml = bs.BlockScaledMainloop(config.mainloop())

    @staticmethod
    def can_implement(m: int, n: int, k: int, l: int, config: DualGemmSm100Config = DualGemmSm100Config()) -> bool:
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
        b1_ptr: cute.Pointer,
        b2_ptr: cute.Pointer,
        sfa_ptr: cute.Pointer,
        sfb1_ptr: cute.Pointer,
        sfb2_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        problem: tuple,
    ):
        m, n, k, l = problem
        ml = self.ml
        tiled_mma = ml.setup()

        mA = bs.make_kmajor_operand(a_ptr, m, k, l)
        mB1 = bs.make_kmajor_operand(b1_ptr, n, k, l)
        mB2 = bs.make_kmajor_operand(b2_ptr, n, k, l)
        mSFA = bs.make_scale_operand(sfa_ptr, mA)
        mSFB1 = bs.make_scale_operand(sfb1_ptr, mB1)
        mSFB2 = bs.make_scale_operand(sfb2_ptr, mB2)
        mC = bs.make_output(c_ptr, m, n, l)

        tma_a, tma_sfa = ml.make_tma_a(mA, mSFA)
        tma_b1, tma_sfb1 = ml.make_tma_b(mB1, mSFB1)
        tma_b2, tma_sfb2 = ml.make_tma_b(mB2, mSFB2)

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
            tma_sfa[0],
            tma_sfa[1],
            tma_b1[0],
            tma_b1[1],
            tma_sfb1[0],
            tma_sfb1[1],
            tma_b2[0],
            tma_b2[1],
            tma_sfb2[0],
            tma_sfb2[1],
            mC,
        ).launch(grid=grid, block=[bs.THREADS_PER_CTA, 1, 1], cluster=(1, 1, 1))

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_atom_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_atom_sfa: cute.CopyAtom,
        mSFA: cute.Tensor,
        tma_atom_b1: cute.CopyAtom,
        mB1: cute.Tensor,
        tma_atom_sfb1: cute.CopyAtom,
        mSFB1: cute.Tensor,
        tma_atom_b2: cute.CopyAtom,
        mB2: cute.Tensor,
        tma_atom_sfb2: cute.CopyAtom,
        mSFB2: cute.Tensor,
        mC: cute.Tensor,
    ):
        self.ml.bind(tiled_mma)
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()

        if warp_idx == bs.TMA_WARP:
            for atom in (tma_atom_a, tma_atom_sfa, tma_atom_b1, tma_atom_sfb1, tma_atom_b2, tma_atom_sfb2):
                cpasync.prefetch_descriptor(atom)

        smem = bs.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        (sA, sSFA, sB, sSFB), ab_pipeline, acc_pipeline, tmem, epilogue_barrier = self.ml.setup_cta(storage, smem)

        thr_mma = tiled_mma.get_slice(0)
        # (MMA, MMA_MN, MMA_K, RestMN, RestK, L)
        tCgA = self.ml.tile_global(thr_mma, mA, operand_a=True)
        tCgSFA = self.ml.tile_global(thr_mma, mSFA, operand_a=True)
        tCgB1 = self.ml.tile_global(thr_mma, mB1, operand_a=False)
        tCgSFB1 = self.ml.tile_global_sfb(mSFB1)
        tCgB2 = self.ml.tile_global(thr_mma, mB2, operand_a=False)
        tCgSFB2 = self.ml.tile_global_sfb(mSFB2)
        gC = cute.local_tile(mC, cute.slice_(self.ml.mma_tiler, (None, None, 0)), (None, None, None))
        tCgC = thr_mma.partition_C(gC)

        # ((atom_v, rest_v), STAGE) and ((atom_v, rest_v), RestMN, RestK, L)
        tAsA, tAgA = self.ml.partition_tma(tma_atom_a, tCgA, sA, scales=False)
        tAsSFA, tAgSFA = self.ml.partition_tma(tma_atom_sfa, tCgSFA, sSFA, scales=True)
        tBsB1, tBgB1 = self.ml.partition_tma(tma_atom_b1, tCgB1, sB[0], scales=False)
        tBsSFB1, tBgSFB1 = self.ml.partition_tma(tma_atom_sfb1, tCgSFB1, sSFB[0], scales=True)
        tBsB2, tBgB2 = self.ml.partition_tma(tma_atom_b2, tCgB2, sB[1], scales=False)
        tBsSFB2, tBgSFB2 = self.ml.partition_tma(tma_atom_sfb2, tCgSFB2, sSFB[1], scales=True)
        k_tile_cnt = cute.size(tAgA, mode=[2])

        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = [tiled_mma.make_fragment_B(sB[0]), tiled_mma.make_fragment_B(sB[1])]
        # (MMA, MMA_M, MMA_N, BUF): BUF = acc_stage * 2 + {0: gate (B1), 1: up (B2)}
        tCtAcc_fake = self.ml.make_acc_fragment()

        sched = bs.TileScheduler(*bs.tile_counts(mC, self.config.tile_n))
        pipeline.pipeline_init_wait(cluster_shape_mn=(1, 1))

        if warp_idx == bs.TMA_WARP:
            self.ml.tma_warp(
                sched,
                k_tile_cnt,
                ab_pipeline,
                [(tma_atom_a, tAgA, tAsA), (tma_atom_sfa, tAgSFA, tAsSFA)],
                [(tma_atom_b1, tBgB1, tBsB1), (tma_atom_b2, tBgB2, tBsB2)],
                [(tma_atom_sfb1, tBgSFB1, tBsSFB1), (tma_atom_sfb2, tBgSFB2, tBsSFB2)],
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
            tTR_rGate = cute.make_rmem_tensor(frag_shape, bs.ACC_DTYPE)
            tTR_rUp = cute.make_rmem_tensor(frag_shape, bs.ACC_DTYPE)
            tTR_rC = cute.make_rmem_tensor(frag_shape, bs.C_DTYPE)
            store_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), bs.C_DTYPE)
            subtiles = cute.size(tTR_tAcc, mode=[4])

            acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.ml.num_acc_stage)
            tile = sched.first()
            while sched.valid(tile):
                tm, tn, tl = sched.coord(tile)
                tTR_gC_tile = tTR_gC[(None, None, None, 0, None, tm, tn, tl)]
                gate_buf = acc_state.index * 2
                acc_pipeline.consumer_wait(acc_state)
                for sub in cutlass.range(subtiles, unroll_full=True):
                    cute.copy(tiled_t2r, tTR_tAcc[(None, None, None, 0, sub, gate_buf)], tTR_rGate)
                    cute.copy(tiled_t2r, tTR_tAcc[(None, None, None, 0, sub, gate_buf + 1)], tTR_rUp)
                    # tcgen05.ld is asynchronous: its registers are valid after tcgen05.wait::ld.
                    cute.arch.fence_view_async_tmem_load()
                    # silu(g) = g * 1/(1 + e^-g), e^-g as 2^(-g log2 e) (MUFU.EX2) and an
                    # approximate reciprocal (MUFU.RCP): both ~1 ulp, far inside rtol 1e-3. For
                    # g << 0 the power is +inf, its reciprocal 0 and the product a signed zero,
                    # which is silu's limit. Element-wise scalars: the portable form (CuTe DSL
                    # 4.3 has no vector reciprocal); the result overwrites the gate registers.
                    for i in cutlass.range_constexpr(cute.size(tTR_rGate)):
                        gate = tTR_rGate[i]
                        neg_pow = cute.math.exp2(gate * (-LOG2_E), fastmath=True)
                        tTR_rGate[i] = gate * cute.arch.rcp_approx(neg_pow + 1.0) * tTR_rUp[i]
                    tTR_rC.store(tTR_rGate.load().to(bs.C_DTYPE))
                    cute.copy(store_atom, tTR_rC, tTR_gC_tile[(None, None, None, sub)])
                # Every TMEM read of these buffers has completed (waited above): hand them back.
                acc_pipeline.consumer_release(acc_state)
                acc_state.advance()
                tile = sched.next(tile)

            self.ml.release_accumulators(tmem, epilogue_barrier, acc_tmem_ptr)


# ---------------------------------------------------------------------------------------- host glue
_COMPILED = CompileCache()


def compile_for(m: int, n: int, k: int, l: int = 1, arch: str = "sm_100a",
                config: DualGemmSm100Config | None = None, options: str = ""):
    """Compile (once per config, arch and options) the kernel that serves this shape; no GPU needed.

    The problem size is a runtime argument, so all shapes with the same config share one binary.
    `options` are extra cute.compile flags (e.g. "--keep-ptx --keep-cubin --dump-dir DIR").
    Raises ValueError for shapes the kernel cannot take.
    """
    config = config or choose_config(m, n, k, l)
    return bs.compile_kernel(_COMPILED, NvFp4DualGemmSm100, config, 2, (m, n, k, l), arch, options)


def prepare(data):
    """The tuple (a, b1, b2, sfa, sfb1, sfb2, sfa_p, sfb1_p, sfb2_p, c) checked and bound to the sm100 kernel; calling
    the result launches (c written in place)."""
    return bs.prepare(data, 2, choose_config, compile_for)


def run(data):
    """Leaderboard entry on sm100: data = (a, b1, b2, sfa, sfb1, sfb2, sfa_p, sfb1_p, sfb2_p, c) -> c."""
    return bs.launch(data, 2, choose_config, compile_for)
