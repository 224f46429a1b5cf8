"""nvfp4_gemv reference: batched block-scaled GEMV (LEADERBOARD.md 3).

Tuple: (a [M, K/2, L] fp4x2, b [128, K/2, L] fp4x2, sfa [M, K/16, L] e4m3, sfb [128, K/16, L] e4m3,
sfa_permuted, sfb_permuted, c [M, 1, L] fp16). b and sfb carry 127 junk rows so that the leaderboard's
`_scaled_mm` can run; only row 0 is the vector.
"""

from __future__ import annotations

import torch

from shared import generators as G
from shared.refmath import block_scaled_products

N_PADDED = 128  # b / sfb rows


def generate_input(m: int, k: int, l: int, seed: int, device: str = "cuda"):
    """The leaderboard's tuple, drawn in its RNG order (a, b, c, sfa + filler, sfb + filler)."""
    torch.manual_seed(seed)
    a = G.fp4_randint(0, 4, l, m, k, device)  # bytes 0..3: odd-K nibbles are always 0
    b = G.fp4_randint(0, 4, l, N_PADDED, k, device)
    c = G.fresh_c(l, m, 1, device)
    sfa = G.scales_randint(0, 3, l, m, G.sf_k_of(k), device)
    sfa_perm = G.permuted_with_filler(sfa, (0, 3))
    sfb = G.scales_randint(0, 3, l, N_PADDED, G.sf_k_of(k), device)
    sfb_perm = G.permuted_with_filler(sfb, (0, 3))
    return (a, b, G.plain_round_trip(sfa), G.plain_round_trip(sfb), sfa_perm, sfb_perm, c)


def generate_stress_input(m: int, k: int, l: int, seed: int, device: str = "cuda"):
    """Same tuple; all 16 codes in both nibbles, scales over 2^-9..0.47 with subnormals and zeros,
    c poisoned with NaN."""
    torch.manual_seed(seed)
    a = G.fp4_stress(l, m, k, device)
    b = G.fp4_stress(l, N_PADDED, k, device)
    c = G.poisoned_c(l, m, 1, device)
    sfa = G.scales_stress(l, m, G.sf_k_of(k), device)
    sfb = G.scales_stress(l, N_PADDED, G.sf_k_of(k), device)
    return (a, b, sfa, sfb, G.permuted_with_filler(sfa, (0, 3)), G.permuted_with_filler(sfb, (0, 3)), c)


def ref_kernel(data):
    """Exact decode, fp32 dot products (TF32 off), one rounding to fp16; writes into c."""
    a, b, sfa, sfb, _, _, c = data
    for l in range(c.shape[2]):
        (prod,) = block_scaled_products(a, sfa, [(b[:1], sfb[:1])], l)
        c[:, 0, l] = prod[:, 0].to(torch.float16)
    return c


custom_kernel = ref_kernel


def output_of(data):
    return data[-1]


def case_error(m: int, k: int, l: int, **_) -> str | None:
    """The problem's rule a case line must keep (the task file: "K divisible by 64"), or None."""
    if k <= 0 or k % 64:
        return f"k must be a positive multiple of 64 (the task's rule), got {k}"
    return None


def cost(m: int, k: int, l: int, **_):
    """(bytes read, bytes written, FLOPs): A + SFA + the vector and its scales in, c out."""
    return l * (m * k // 2 + m * k // 16 + k // 2 + k // 16), 2 * m * l, 2 * m * k * l
