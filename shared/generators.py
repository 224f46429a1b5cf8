"""The pieces every problem's input generator is built from (problems/*/reference.py).

Every draw happens in the leaderboard's order and on the leaderboard's device (CUDA unless said
otherwise); with device="cpu" the same calls run on the CPU generator. Part of the kit: a packaged
submission may import it, and it knows nothing of manifests or the evaluator.
"""

from __future__ import annotations

import torch

from shared import scales as sc
from shared.nvfp4 import FP4_DTYPE, SF_DTYPE, SF_VEC


def lmk_to_mkl(t: torch.Tensor) -> torch.Tensor:
    """Tensors are drawn contiguous as (L, rows, cols) and handed out as the (rows, cols, L) view."""
    return t.permute(1, 2, 0)


def fp4_randint(low: int, high: int, l: int, rows: int, k: int, device, dtype=torch.uint8) -> torch.Tensor:
    """Packed FP4 [rows, K/2, L] from `randint(low, high)` bytes (gemv: uint8 0..3, gemm: int8 all)."""
    raw = torch.randint(low, high, (l, rows, k // 2), dtype=dtype, device=device)
    return lmk_to_mkl(raw).view(FP4_DTYPE)


def fp4_masked(l: int, rows: int, k: int, device) -> torch.Tensor:
    """Dual / group GEMM values: `randint(255) & 0xBB` keeps sign and the two low bits of each nibble."""
    raw = torch.randint(255, size=(l, rows, k // 2), dtype=torch.uint8, device=device) & 0xBB
    return lmk_to_mkl(raw).view(FP4_DTYPE)


def fp4_stress(l: int, rows: int, k: int, device) -> torch.Tensor:
    """Every byte value equally likely: all 16 codes in the low AND the high nibble."""
    raw = torch.randint(0, 256, (l, rows, k // 2), dtype=torch.uint8, device=device)
    return lmk_to_mkl(raw).view(FP4_DTYPE)


def fresh_c(l: int, m: int, n: int, device) -> torch.Tensor:
    return lmk_to_mkl(torch.randn((l, m, n), dtype=torch.float16, device=device))


def poisoned_c(l: int, m: int, n: int, device) -> torch.Tensor:
    """Stress outputs start as NaN, so that any element a kernel leaves unwritten fails the check."""
    return lmk_to_mkl(torch.full((l, m, n), float("nan"), dtype=torch.float16, device=device))


def scales_randint(low: int, high: int, l: int, rows: int, sf_k: int, device) -> torch.Tensor:
    """Integer-valued scales by numeric conversion (0 -> 0x00, 1 -> 0x38, ...), as [rows, sf_k, L]."""
    raw = torch.randint(low, high, (l, rows, sf_k), dtype=torch.int8, device=device)
    return lmk_to_mkl(raw.to(SF_DTYPE))


def scales_rand(l: int, rows: int, sf_k: int, device) -> torch.Tensor:
    """Dual GEMM scales: fp32 rand in [0, 1) rounded to E4M3."""
    return lmk_to_mkl(torch.rand((l, rows, sf_k), dtype=torch.float32, device=device).to(SF_DTYPE))


def scales_stress(l: int, rows: int, sf_k: int, device, max_exp_field: int = 5) -> torch.Tensor:
    """E4M3 bit patterns with exponent field 0..max_exp_field (subnormals included), any mantissa,
    and one in 16 exactly zero: 2^-9 .. 0.47 by default, eight binades.

    The top of the range is chosen so that legitimate differences in fp32 accumulation (sequential
    sums, blocked sums, tensor-core adder trees) stay far inside the 1e-3 tolerance of a GEMM up to
    K = 16384, while a decode error (a wrong nibble, scale or block) still moves results by O(1). With
    scales up to 1.875 (exponent field 7) the terms grow 16x and an sm_90 wgmma GEMM with fp32
    accumulators was seen 1.2e-3 off an fp32 reference near zero on 15 of 10.6M outputs (H100,
    2026-11-22). The dual GEMM's output multiplies two such sums, and there tensor-core accumulation
    (ours and cuBLAS's fp16 GEMM alike) leaves the tolerance on a few outputs from K ~10k: the sm90
    kernel missed the fp32 reference on 3 and 7 of 1.57M outputs at 512x3072x14336 (two seeds); at the
    benchmarks' K <= 7168 it keeps a margin of two (H100, 2026-11-27; results/README.md, "tenth
    session")."""
    exp = torch.randint(0, max_exp_field + 1, (l, rows, sf_k), dtype=torch.uint8, device=device)
    man = torch.randint(0, 8, (l, rows, sf_k), dtype=torch.uint8, device=device)
    zero = torch.randint(0, 16, (l, rows, sf_k), dtype=torch.uint8, device=device) == 0
    bits = torch.where(zero, torch.zeros_like(exp), (exp << 3) | man)
    return lmk_to_mkl(bits.view(SF_DTYPE))


def permuted_with_filler(plain: torch.Tensor, filler: str | tuple[int, int] | None) -> torch.Tensor:
    """The permuted scale tensor of `plain` [rows, sf_k, L]. Padding holds `filler`:
    (low, high) -> `randint(low, high)` int8 drawn now (consumes RNG, as the leaderboard does),
    "empty" -> uninitialised memory (dual GEMM), None -> zeros."""
    rows, sf_k, n_l = plain.shape
    shape = sc.storage_shape(rows, sf_k, n_l)
    if filler is None:
        fill = None
    elif filler == "empty":
        fill = torch.empty(shape, dtype=torch.int8, device=plain.device).to(SF_DTYPE)
    else:
        fill = torch.randint(filler[0], filler[1], shape, dtype=torch.int8, device=plain.device).to(SF_DTYPE)
    return sc.to_permuted(plain, fill)


def plain_round_trip(plain: torch.Tensor) -> torch.Tensor:
    """The leaderboard moves plain scales to the CPU and back (strides preserved)."""
    return plain.cpu().to(plain.device) if plain.device.type != "cpu" else plain.clone()


def sf_k_of(k: int) -> int:
    return sc.ceil_div(k, SF_VEC)


def scaled_mm_reference(name: str, data):
    """The leaderboard's own reference math, torch._scaled_mm on NVFP4 (needs sm_100 and CUDA >= 12.8):
    used only to cross-check ref_kernel on Blackwell."""
    def mm(a, b, sfa, sfb, l, out_dtype):
        return torch._scaled_mm(a[:, :, l], b[:, :, l].transpose(0, 1), sc.to_blocked(sfa[:, :, l]).cuda(),
                                sc.to_blocked(sfb[:, :, l]).cuda(), bias=None, out_dtype=out_dtype)

    if name == "group_gemm":
        return [mm(a, b, sfa, sfb, 0, torch.float16).unsqueeze(-1) for (a, b, _), (sfa, sfb) in zip(data[0], data[1])]
    if name == "dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2, *_, c = data
        return torch.stack([(torch.nn.functional.silu(mm(a, b1, sfa, sfb1, l, torch.float32))
                             * mm(a, b2, sfa, sfb2, l, torch.float32)).half() for l in range(c.shape[2])], -1)
    a, b, sfa, sfb, *_, c = data
    out = torch.stack([mm(a, b, sfa, sfb, l, torch.float16) for l in range(c.shape[2])], -1)
    return out[:, :1] if name == "gemv" else out
