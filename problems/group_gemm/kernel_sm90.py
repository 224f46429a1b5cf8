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

from shared.cute.runtime import PreparedCalls
from shared.scales import permuted_shape

_prepared = PreparedCalls()  # one launch per group, by its tensors


def plain_scales(reordered: torch.Tensor, rows: int, k: int) -> torch.Tensor:
    """[32, 4, rest_m, 4, K/64, 1] (L = 1, K % 64 == 0) -> plain [rows, K/16, 1], contiguous, same device.

    Plain (i, j) sits at reordered[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, 0]
    (shared/scales.py), so the view permuted to (i // 128, (i % 128) // 32, i % 32, j // 4, j % 4)
    is the plain layout with the rows padded to a multiple of 128.
    """
    rest_m = reordered.shape[2]
    plain = reordered.permute(2, 1, 0, 4, 3, 5).reshape(rest_m * 128, k // 16, 1)
    return plain[:rows]


def check_reordered(group: int, name: str, t, rows: int, k: int) -> None:
    """The reordered scales this path reads (the portable path does not): a CUDA fp8 / uint8 tensor of
    the leaderboard's shape [32, 4, ceil(rows/128), 4, K/64, 1]; a ValueError / TypeError otherwise."""
    want = permuted_shape(rows, k // 16, 1)
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"group_gemm: group {group} {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in (torch.float8_e4m3fn, torch.uint8):
        raise TypeError(f"group_gemm: group {group} {name} must have dtype torch.float8_e4m3fn, got {t.dtype}")
    if tuple(t.shape) != want or not t.is_cuda:
        raise ValueError(f"group_gemm: group {group} {name} must be a CUDA tensor of shape {want}, "
                         f"got {tuple(t.shape)} on {t.device}")


def run(data, sizes) -> list[torch.Tensor] | None:
    """The groups' C (written in place), or None, launching nothing, where some group is not on an
    sm_90 device or no config takes its shape (the caller then takes the portable path). Reordered
    scales that do not fit their group raise before anything is launched."""
    from problems.gemm.kernel_sm90 import GemmSm90
    from problems.group_gemm.config import choose_sm90
    from shared.cute.runtime import tensor_key
    from shared.cute.sm90_blockscaled_mainloop import prepare_sm90

    abc, _, reordered, _ = data
    configs = [choose_sm90(m, n, k) if l == 1 else None for m, n, k, l in sizes]
    if any(c is None for c in configs) or not all(t.is_cuda for a, b, c in abc for t in (a, b, c)):
        return None
    if len(reordered) != len(sizes):
        raise ValueError(f"group_gemm: sfasfb_reordered_tensors needs one entry per group, got {len(reordered)} "
                         f"for {len(sizes)} groups")
    for g, (pair, (m, n, k, _)) in enumerate(zip(reordered, sizes)):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"group_gemm: group {g} sfasfb_reordered entry must be a pair (sfa, sfb)")
        check_reordered(g, "sfa_reordered", pair[0], m, k)
        check_reordered(g, "sfb_reordered", pair[1], n, k)
    for (a, b, c), (sfa_r, sfb_r), (m, n, k, _), cfg in zip(abc, reordered, sizes, configs):
        sfa, sfb = plain_scales(sfa_r, m, k), plain_scales(sfb_r, n, k)
        key = tensor_key((a, b, sfa, sfb, c))
        launch = _prepared.get(key) or _prepared.put(key, prepare_sm90(GemmSm90, cfg, a, (b,), sfa, (sfb,), c))
        launch()
    return [c for _, _, c in abc]
