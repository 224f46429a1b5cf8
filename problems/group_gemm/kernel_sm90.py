"""Hopper (sm_90a) grouped NVFP4 GEMM: every group through the GEMM kernel (problems/gemm/kernel_sm90.py,
exact FP4 x E4M3 -> fp16 decode, fp16 wgmma), one launch per group, in group order.

Not yet a grouped kernel: G launches one after the other, each sized by its own group (config.py).
A single persistent launch over the tiles of all groups would overlap the groups' pipeline fill and
tail and keep the SMs full between them; it needs per-group TMA descriptors in device memory.

Scales. This problem's plain scales live on the CPU, and copying them over each call would cost more
than the GEMMs (benchmark 1 has ~15 MB of them). The reordered copies are on the GPU already
([32, 4, ceil(rows/128), 4, K/64, 1], LEADERBOARD.md 2.5): one strided copy per tensor turns them
back into the plain [rows, K/16, 1] layout the kernel's TMA reads, and drops the M-tail filler.

Run: `python -m shared.eval group_gemm --mode test --data stress --impl submission` on an H100.
"""

from __future__ import annotations

import torch


def plain_scales(reordered: torch.Tensor, rows: int, k: int) -> torch.Tensor:
    """[32, 4, rest_m, 4, K/64, 1] (L = 1, K % 64 == 0) -> plain [rows, K/16, 1], contiguous, same device.

    Plain (i, j) sits at reordered[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, 0]
    (shared/scales.py), so the view permuted to (i // 128, (i % 128) // 32, i % 32, j // 4, j % 4)
    is the plain layout with the rows padded to a multiple of 128.
    """
    rest_m = reordered.shape[2]
    plain = reordered.permute(2, 1, 0, 4, 3, 5).reshape(rest_m * 128, k // 16, 1)
    return plain[:rows]


def run(data, sizes) -> list[torch.Tensor] | None:
    """The groups' C (written in place), or None, launching nothing, where some group is not on an
    sm_90 device or no config takes its shape (the caller then takes the portable path)."""
    from problems.gemm.kernel_sm90 import GemmSm90
    from problems.group_gemm.config import choose_sm90
    from shared.cute.sm90_blockscaled_mainloop import launch_sm90

    abc, _, reordered, _ = data
    configs = [choose_sm90(m, n, k) if l == 1 else None for m, n, k, l in sizes]
    if any(c is None for c in configs) or not all(t.is_cuda for a, b, c in abc for t in (a, b, c)):
        return None
    for (a, b, c), (sfa_r, sfb_r), (m, n, k, _), cfg in zip(abc, reordered, sizes, configs):
        launch_sm90(GemmSm90, cfg, a, (b,), plain_scales(sfa_r, m, k), (plain_scales(sfb_r, n, k),), c)
    return [c for _, _, c in abc]
