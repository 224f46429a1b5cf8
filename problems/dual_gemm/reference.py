"""nvfp4_dual_gemm reference: c = fp16(silu(A . B1^T) * (A . B2^T)) (LEADERBOARD.md 5).

Tuple: (a, b1, b2 fp4x2, sfa, sfb1, sfb2 e4m3 (plain), sfa_permuted, sfb1_permuted, sfb2_permuted,
c [M, N, L] fp16). Both products stay fp32 until the single cast.
"""

from __future__ import annotations

import torch

from shared import generators as G
from shared.refmath import block_scaled_products


def generate_input(m: int, n: int, k: int, l: int, seed: int, device: str = "cuda"):
    """The leaderboard's tuple in its RNG order; values {0, +-0.5, +-1, +-1.5}, scales rand() in E4M3,
    permuted padding uninitialised (torch.empty, no RNG drawn)."""
    torch.manual_seed(seed)
    a = G.fp4_masked(l, m, k, device)
    b1 = G.fp4_masked(l, n, k, device)
    b2 = G.fp4_masked(l, n, k, device)
    c = G.fresh_c(l, m, n, device)
    sf_k = G.sf_k_of(k)
    plains, perms = [], []
    for rows in (m, n, n):
        s = G.scales_rand(l, rows, sf_k, device)
        plains.append(G.plain_round_trip(s))
        perms.append(G.permuted_with_filler(s, "empty"))
    return (a, b1, b2, *plains, *perms, c)


def generate_stress_input(m: int, n: int, k: int, l: int, seed: int, device: str = "cuda"):
    """All 16 codes in both nibbles; scales over 2^-9..0.47 (see shared.generators.scales_stress)."""
    torch.manual_seed(seed)
    a, b1, b2 = (G.fp4_stress(l, rows, k, device) for rows in (m, n, n))
    c = G.poisoned_c(l, m, n, device)
    sf_k = G.sf_k_of(k)
    plains = [G.scales_stress(l, rows, sf_k, device) for rows in (m, n, n)]
    perms = [G.permuted_with_filler(s, (0, 4)) for s in plains]
    return (a, b1, b2, *plains, *perms, c)


def ref_kernel(data):
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    out = torch.empty_like(c)
    for l in range(c.shape[2]):
        p1, p2 = block_scaled_products(a, sfa, [(b1, sfb1), (b2, sfb2)], l)
        out[:, :, l] = (torch.nn.functional.silu(p1) * p2).to(torch.float16)
    return out


custom_kernel = ref_kernel


def output_of(data):
    return data[-1]


def case_error(m: int, n: int, k: int, l: int, **_) -> str | None:
    """The problem's rule a case line must keep (the task file: "K divisible by 256"), or None."""
    if k <= 0 or k % 256:
        return f"k must be a positive multiple of 256 (the task's rule), got {k}"
    return None


def cost(m: int, n: int, k: int, l: int, **_):
    """(bytes read, bytes written, FLOPs): two products."""
    return l * (m + 2 * n) * (k // 2 + k // 16), 2 * m * n * l, 4 * m * n * k * l
