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
  * Tile choice (problems/dual_gemm/config.py `choose_sm100`): 128 x 64 tiles (two accumulator
    stages) while 128 x 128 tiles would leave more than half of the SMs idle — (256, 4096) and
    (256, 3072): 64 / 48 tiles on 148 SMs — else 128 x 128 (one accumulator stage: 2 x 128 columns
    + scales) for (512, 4096) / (512, 3072), where 64-wide tiles would need a second wave.
  * Epilogue (warps 0-3, thread t = output row t of the tile): 32 columns at a time, tcgen05.ld
    both accumulators (then tcgen05.wait::ld), h = g * rcp(1 + 2^(-g log2 e)) * u in fp32
    (MUFU.EX2 + MUFU.RCP), one conversion to fp16, 64 bytes stored per thread per step. The
    fp32 products never leave the SM.
  * Persistent: grid = min(#tiles, SMs); CTA b takes tiles b, b + grid, ... (M fastest).

Variant "cta2" (config.py `DualGemmSm100Cta2Config`, registered in SM100_VARIANTS, chosen only through
the B200 gates table): the same kernel on CTA pairs with 2-CTA MMAs, 256 x tile_n tiles; each CTA
loads half of B1 and of B2 and keeps its rows' gate and up accumulators in its own tensor memory
(docs/B200-READINESS.md, "dual_gemm variant cta2"). Requires M % 256 == 0.

Warp roles: warps 0-3 epilogue (warp 0 allocates/frees tensor memory), warp 4 MMA, warp 5 TMA.

Constraints (ValueError otherwise): M % 128 == 0, N % 128 == 0, K % 256 == 0, the layouts of the
leaderboard tuple (spec/LEADERBOARD.md §2.4: batch-major, K-major a/b1/b2, row-major c, permuted
scales with their exact strides), 16-byte aligned.

Expected B200 time: `python -m scripts.b200 --model` (an estimate; `nox -s b200` measures it on a B200).
docs/B200-READINESS.md compares the kernel with NVIDIA's example.

How to run (on a B200): `python -m harness.eval dual_gemm --mode benchmark --impl submission`,
where problems/dual_gemm/submission.py calls `kernel_sm100.prepare(data, cfg)`. Compile only (any machine):
`python -c "from problems.dual_gemm import kernel_sm100 as k; k.compile_for(256, 4096, 7168, 1)"`.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute

from problems.dual_gemm.config import DualGemmSm100Config, DualGemmSm100Cta2Config, choose_sm100
from shared.cute import launch_queue
from shared.cute.compile_cache import CompileCache
from shared.cute.sm100_gemm import Sm100BlockScaledGemm
from shared.cute.sm100_host import compile_sm100, launch_sm100, prepare_sm100

LOG2_E = math.log2(math.e)


class NvFp4DualGemmSm100(Sm100BlockScaledGemm):
    """C = fp16(silu(A . B1^T) * (A . B2^T)) on sm_100a, one fused kernel. Host: `__call__(a, b1, b2,
    sfa_permuted, sfb1_permuted, sfb2_permuted, c pointers, (m, n, k, l))` builds the TMA atoms and
    launches; device: the base class's `kernel`, accumulator buffer stage * 2 + {0: gate, 1: up}."""

    num_b = 2
    operand_order = ("a", "sfa", "b0", "sfb0", "b1", "sfb1")

    @cute.jit
    def epilogue_value(self, accs):
        """silu(gate) * up, written over the gate registers.

        silu(g) = g * 1/(1 + e^-g), e^-g as 2^(-g log2 e) (MUFU.EX2) and an approximate reciprocal
        (MUFU.RCP): both ~1 ulp, far inside rtol 1e-3. For g << 0 the power is +inf, its reciprocal 0
        and the product a signed zero, which is silu's limit. Element-wise scalars: the portable form
        (CuTe DSL 4.3 has no vector reciprocal)."""
        gate, up = accs
        for i in cutlass.range_constexpr(cute.size(gate)):
            g = gate[i]
            neg_pow = cute.math.exp2(g * (-LOG2_E), fastmath=True)
            gate[i] = g * cute.arch.rcp_approx(neg_pow + 1.0) * up[i]
        return gate.load()

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
        queue: launch_queue.Queue,
    ):
        self.launch(a_ptr, [b1_ptr, b2_ptr], sfa_ptr, [sfb1_ptr, sfb2_ptr], c_ptr, problem, queue)


# ---------------------------------------------------------------------------------------- host glue
_COMPILED = CompileCache()


def compile_for(m: int, n: int, k: int, l: int = 1, arch: str = "sm_100a",
                config: DualGemmSm100Config | DualGemmSm100Cta2Config | None = None, options: str = ""):
    """Compile (once per config, arch and options) the kernel that serves this shape; no GPU needed.

    The problem size is a runtime argument, so all shapes with the same config share one binary.
    `options` are extra cute.compile flags (e.g. "--keep-ptx --keep-cubin --dump-dir DIR").
    Raises ValueError for shapes the kernel cannot take.
    """
    config = config or choose_sm100(m, n, k, l)
    return compile_sm100(_COMPILED, NvFp4DualGemmSm100, config, 2, (m, n, k, l), arch, options)


def prepare(data, config: DualGemmSm100Config | DualGemmSm100Cta2Config):
    """The tuple (a, b1, b2, sfa, sfb1, sfb2, sfa_p, sfb1_p, sfb2_p, c) checked and bound to the sm100
    kernel of `config` (problems/dual_gemm/config.py: choose_sm100, or a variant's chooser in
    SM100_VARIANTS: the config's mainloop says one CTA or a CTA pair); calling the result launches (c
    written in place)."""
    return prepare_sm100(data, 2, config, compile_for)


def run(data, config: DualGemmSm100Config):
    """Leaderboard entry on sm100: data = (a, b1, b2, sfa, sfb1, sfb2, sfa_p, sfb1_p, sfb2_p, c) -> c."""
    return launch_sm100(data, 2, config, compile_for)
