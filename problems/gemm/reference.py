"""nvfp4_gemm reference: block-scaled GEMM c = fp16(A . B^T) (LEADERBOARD.md 4).

Tuple: (a [M, K/2, L], b [N, K/2, L] fp4x2, sfa [M, K/16, L], sfb [N, K/16, L] e4m3,
sfa_permuted, sfb_permuted, c [M, N, L] fp16).
"""

from __future__ import annotations

import torch

from shared import generators as G
from shared.refmath import block_scaled_products


def generate_input(m: int, n: int, k: int, l: int, seed: int, device: str = "cuda"):
    """The leaderboard's tuple in its RNG order: every byte pattern of a and b (all 16 codes)."""
    torch.manual_seed(seed)
    a = G.fp4_randint(-128, 128, l, m, k, device, dtype=torch.int8)
    b = G.fp4_randint(-128, 128, l, n, k, device, dtype=torch.int8)
    c = G.fresh_c(l, m, n, device)
    sfa = G.scales_randint(0, 4, l, m, G.sf_k_of(k), device)
    sfa_perm = G.permuted_with_filler(sfa, (0, 4))
    sfb = G.scales_randint(0, 4, l, n, G.sf_k_of(k), device)
    sfb_perm = G.permuted_with_filler(sfb, (0, 4))
    return (a, b, G.plain_round_trip(sfa), G.plain_round_trip(sfb), sfa_perm, sfb_perm, c)


def generate_stress_input(m: int, n: int, k: int, l: int, seed: int, device: str = "cuda"):
    """Same tuple with all 16 codes in both nibbles, scales over 2^-9..0.47 (subnormals, zeros),
    c poisoned with NaN."""
    torch.manual_seed(seed)
    a = G.fp4_stress(l, m, k, device)
    b = G.fp4_stress(l, n, k, device)
    c = G.poisoned_c(l, m, n, device)
    sfa = G.scales_stress(l, m, G.sf_k_of(k), device)
    sfb = G.scales_stress(l, n, G.sf_k_of(k), device)
    return (a, b, sfa, sfb, G.permuted_with_filler(sfa, (0, 4)), G.permuted_with_filler(sfb, (0, 4)), c)


def ref_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    for l in range(c.shape[2]):
        (prod,) = block_scaled_products(a, sfa, [(b, sfb)], l)
        c[:, :, l] = prod.to(torch.float16)
    return c


custom_kernel = ref_kernel


def output_of(data):
    return data[-1]


def case_error(m: int, n: int, k: int, l: int, **_) -> str | None:
    """The problem's rule a case line must keep (the task file: "K divisible by 256"), or None."""
    if k <= 0 or k % 256:
        return f"k must be a positive multiple of 256 (the task's rule), got {k}"
    return None


def cost(m: int, n: int, k: int, l: int, **_):
    """(bytes read, bytes written, FLOPs)."""
    return l * (m + n) * (k // 2 + k // 16), 2 * m * n * l, 2 * m * n * k * l
