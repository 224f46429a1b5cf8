"""Exact NVFP4 reference math, free of I/O (no manifests, no YAML), so that submissions may import it
and the packager can inline it: exact decode (shared.nvfp4) and true fp32 matrix products."""

from __future__ import annotations

import torch

from shared.nvfp4 import dequantize


def fp32_matmul(a: torch.Tensor, b_t: torch.Tensor) -> torch.Tensor:
    """a [M, K] @ b_t [K, N] in true fp32 (TF32 off, restored afterwards)."""
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return a @ b_t
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def block_scaled_products(a, sfa, bs_and_sfbs, batch: int, fp64: bool = False) -> list[torch.Tensor]:
    """fp32 [M, N] = dequant(a)[:, :, l] @ dequant(b)[:, :, l]^T for each (b, sfb), one batch l.
    A is decoded once and shared by every B. fp64: the products in fp64 instead, the yardstick that
    tensor-core and fp32 sums are measured against (tests/test_sm90_accuracy.py)."""
    a_l = dequantize(a[:, :, batch : batch + 1], sfa[:, :, batch : batch + 1])[:, :, 0]
    out = []
    for b, sfb in bs_and_sfbs:
        b_l = dequantize(b[:, :, batch : batch + 1], sfb[:, :, batch : batch + 1])[:, :, 0]
        out.append(a_l.double() @ b_l.double().t() if fp64 else fp32_matmul(a_l, b_l.t()))
    return out
