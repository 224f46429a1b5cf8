"""nvfp4_group_gemm reference: G independent block-scaled GEMMs (LEADERBOARD.md 6).

Tuple: (abc_tensors [(a, b, c)] * G, sfasfb_tensors [(sfa, sfb)] * G with the plain scales ON THE
CPU, sfasfb_reordered_tensors [(sfa_perm, sfb_perm)] * G on the GPU, problem_sizes [(M, N, K, 1)]).
M_g need not be a multiple of 128: the permuted scales' M-tail holds random {1, 2} filler.
"""

from __future__ import annotations

import torch

from shared import generators as G
from shared.refmath import block_scaled_products

L = 1


def _generate(m, n, k, g, seed, device, values, scale_draw, c_draw=G.fresh_c):
    if not (len(m) == len(n) == len(k) == g):
        raise ValueError(f"group_gemm: m, n, k must each have g={g} entries, got {len(m)}, {len(n)}, {len(k)}")
    torch.manual_seed(seed)
    abc, sf, sf_perm, sizes = [], [], [], []
    for mi, ni, ki in zip(m, n, k):
        a, b = values(L, mi, ki, device), values(L, ni, ki, device)
        c = c_draw(L, mi, ni, device)
        sfa, sfb = scale_draw(mi, ki), scale_draw(ni, ki)  # on the CPU generator
        perms = tuple(G.permuted_with_filler(s.to(device), (1, 3)) for s in (sfa, sfb))
        abc.append((a, b, c))
        sf.append((sfa, sfb))
        sf_perm.append(perms)
        sizes.append((mi, ni, ki, L))
    return abc, sf, sf_perm, sizes


def generate_input(m, n, k, g: int, seed: int, device: str = "cuda"):
    """The leaderboard's tuple in its RNG order (per group: a, b, c on the device; sfa, sfb on the CPU
    as {1, 2}; then the two permuted fillers on the device)."""
    return _generate(m, n, k, g, seed, device, G.fp4_masked,
                     lambda rows, ki: G.scales_randint(1, 3, L, rows, G.sf_k_of(ki), "cpu"))


def generate_stress_input(m, n, k, g: int, seed: int, device: str = "cuda"):
    """All 16 codes in both nibbles, wide-range scales, c poisoned with NaN; use M values that are not
    multiples of 128 (the tests do)."""
    return _generate(m, n, k, g, seed, device, G.fp4_stress,
                     lambda rows, ki: G.scales_stress(L, rows, G.sf_k_of(ki), "cpu"), G.poisoned_c)


def ref_kernel(data):
    abc, sf, _, sizes = data
    out = []
    for (a, b, c), (sfa, sfb), (_, _, _, n_l) in zip(abc, sf, sizes):
        for l in range(n_l):
            (prod,) = block_scaled_products(a, sfa, [(b, sfb)], l)
            c[:, :, l] = prod.to(torch.float16)
        out.append(c)
    return out


custom_kernel = ref_kernel


def output_of(data):
    return [c for _, _, c in data[0]]


def case_error(m, n, k, g: int, **_) -> str | None:
    """The problem's rule a case line must keep (the task file: every group's "K divisible by 256"), or
    None."""
    bad = [x for x in k if x <= 0 or x % 256]
    if bad:
        return f"every k must be a positive multiple of 256 (the task's rule), got {bad[0]} in {list(k)}"
    return None


def cost(m, n, k, g: int, **_):
    """(bytes read, bytes written, FLOPs) summed over the groups."""
    groups = list(zip(m, n, k))
    return (sum((mi + ni) * (ki // 2 + ki // 16) for mi, ni, ki in groups),
            sum(2 * mi * ni for mi, ni, _ in groups), sum(2 * mi * ni * ki for mi, ni, ki in groups))
