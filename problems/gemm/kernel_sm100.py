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
  * Tile choice (problems/gemm/config.py `choose_sm100`): 128 x 64 tiles while 128 x 128 tiles
    would leave more than half of the SMs idle — true for all three leaderboard shapes (56 / 32 / 56
    tiles of 128 x 128 on 148 SMs) — else 128 x 128.
  * Epilogue: 4 warps, thread t owns accumulator row t; 32 columns at a time TMEM -> registers
    (tcgen05.ld 32x32b.x32, then tcgen05.wait::ld), convert to fp16 (round to nearest even),
    store straight to global (64 contiguous bytes per thread per step). Two accumulator buffers:
    the epilogue of tile i overlaps the mainloop of tile i+1 when a CTA gets several tiles.

Warp roles: warps 0-3 epilogue (warp 0 also allocates/frees the 512 TMEM columns), warp 4 MMA,
warp 5 TMA. Grid = min(#tiles, SM count); CTA b takes tiles b, b + grid, ... (M fastest).

Constraints (ValueError otherwise): M % 128 == 0, N % 128 == 0, K % 256 == 0; the layouts of the
leaderboard tuple (spec/LEADERBOARD.md §2.4: batch-major, K-major a/b, row-major c, permuted
scales with their exact strides), 16-byte aligned.

Expected B200 time: `python -m scripts.b200 --model` (an estimate; `nox -s b200` measures it on a B200).
docs/B200-READINESS.md compares the kernel with NVIDIA's example.

How to run (on a B200): `python -m harness.eval gemm --mode benchmark --impl submission`, where
problems/gemm/submission.py calls `kernel_sm100.prepare(data, cfg)`. Compile only (any machine):
`python -c "from problems.gemm import kernel_sm100 as k; k.compile_for(128, 7168, 16384, 1)"`.
"""

from __future__ import annotations

import cutlass.cute as cute

from problems.gemm.config import GemmSm100Config, GemmSm100SplitKConfig, choose_sm100
from shared.cute import launch_queue
from shared.cute.compile_cache import CompileCache
from shared.cute.sm100_gemm import Sm100BlockScaledGemm
from shared.cute.sm100_host import compile_sm100, launch_sm100, prepare_sm100
from shared.cute.sm100_splitk import Sm100SplitKSwapGemm


class NvFp4GemmSm100(Sm100BlockScaledGemm):
    """C = fp16(A . B^T) on sm_100a. Host: `__call__(a, b, sfa_permuted, sfb_permuted, c pointers,
    (m, n, k, l))` builds the TMA atoms and launches; device: the base class's `kernel`."""

    num_b = 1
    operand_order = ("a", "b0", "sfa", "sfb0")

    @cute.jit
    def epilogue_value(self, accs):
        return accs[0].load()

    @cute.jit
    def __call__(
        self,
        a_ptr: cute.Pointer,
        b_ptr: cute.Pointer,
        sfa_ptr: cute.Pointer,
        sfb_ptr: cute.Pointer,
        c_ptr: cute.Pointer,
        problem: tuple,
        queue: launch_queue.Queue,
    ):
        self.launch(a_ptr, [b_ptr], sfa_ptr, [sfb_ptr], c_ptr, problem, queue)


class NvFp4GemmSm100SplitK(Sm100SplitKSwapGemm, NvFp4GemmSm100):
    """The "splitk_swap" variant (config GemmSm100SplitKConfig): the same C = fp16(A . B^T) with A and
    B swapped and K split over a cluster, partials summed through distributed shared memory
    (shared/cute/sm100_splitk.py); the value stored and the host call are NvFp4GemmSm100's."""


def kernel_class(config):
    """The kernel class that serves `config`: the split-K variant for a GemmSm100SplitKConfig."""
    if isinstance(config, GemmSm100SplitKConfig):
        return NvFp4GemmSm100SplitK
    if isinstance(config, GemmSm100Config):
        return NvFp4GemmSm100
    raise TypeError(f"config: expected GemmSm100Config or GemmSm100SplitKConfig, got {type(config).__name__}")


# ---------------------------------------------------------------------------------------- host glue
_COMPILED = CompileCache()


def compile_for(m: int, n: int, k: int, l: int = 1, arch: str = "sm_100a",
                config: GemmSm100Config | GemmSm100SplitKConfig | None = None, options: str = ""):
    """Compile (once per config, arch and options) the kernel that serves this shape; no GPU needed.

    The problem size is a runtime argument, so all shapes with the same config share one binary.
    `options` are extra cute.compile flags (e.g. "--keep-ptx --keep-cubin --dump-dir DIR").
    Raises ValueError for shapes the kernel cannot take.
    """
    config = config or choose_sm100(m, n, k, l)
    cls = kernel_class(config)
    if cls is NvFp4GemmSm100SplitK:
        config.check_shape(m, n, k, l)
    return compile_sm100(_COMPILED, cls, config, 1, (m, n, k, l), arch, options)


def prepare(data, config: GemmSm100Config | GemmSm100SplitKConfig):
    """The tuple (a, b, sfa, sfb, sfa_p, sfb_p, c) checked and bound to the sm100 kernel of `config`
    (problems/gemm/config.py: choose_sm100, or a variant's chooser in SM100_VARIANTS); calling the
    result launches (c written in place)."""
    return prepare_sm100(data, 1, config, compile_for)


def run(data, config: GemmSm100Config):
    """Leaderboard entry on sm100: data = (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c) -> c."""
    return launch_sm100(data, 1, config, compile_for)
