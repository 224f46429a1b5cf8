"""Operand checks of both architectures' kernels, run once before a launch is bound: a TypeError or
ValueError naming the tensor, what was expected and what came. Dtypes are given by name ("float16");
strides of extent-1 dimensions are free."""

from __future__ import annotations

import torch

FP4 = ("float4_e2m1fn_x2", "uint8")
E4M3 = ("float8_e4m3fn",)


def _dims_match(got, want, shape) -> bool:
    """Strides agree wherever they matter (a dimension of extent 1 is never stepped over, and an
    empty tensor is never read)."""
    return 0 in shape or all(g == w or d == 1 for g, w, d in zip(got, want, shape))


def check_operand(name: str, t, shape, dtypes, strides) -> None:
    """A tensor of one of `dtypes` with this shape and these strides (where it lives: check_cuda)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if str(t.dtype).replace("torch.", "") not in dtypes:
        raise TypeError(f"{name}: expected dtype in {dtypes}, got {t.dtype}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")
    if not _dims_match(tuple(t.stride()), tuple(strides), tuple(shape)):
        raise ValueError(f"{name}: expected strides {tuple(strides)}, got {tuple(t.stride())}")


def check_kmajor(name: str, t, rows: int, cols: int, l: int, dtypes) -> None:
    """[rows, cols, L], each row contiguous, batch-major: the leaderboard's values and plain scales."""
    check_operand(name, t, (rows, cols, l), dtypes, (cols, 1, rows * cols))


def check_scales(name: str, t, rows: int, k: int, l: int, dtypes=E4M3) -> None:
    """The permuted (reordered) scales of a rows x K operand: [32, 4, rows/128, 4, K/64, L] of
    contiguous 512-byte atoms, as the leaderboard makes them."""
    rest_mn, rest_k = -(-rows // 128), -(-k // 64)
    check_operand(name, t, (32, 4, rest_mn, 4, rest_k, l), dtypes,
                  (16, 4, rest_k * 512, 1, 512, rest_mn * rest_k * 512))


def check_cuda(align: int = 16, **tensors) -> None:
    """ValueError naming the first tensor that is not on the CUDA device of the first one, or not
    `align`-byte aligned (the kernels' vector loads and TMA boxes assume it)."""
    device = None
    for name, t in tensors.items():
        if not t.is_cuda:
            raise ValueError(f"{name}: expected a CUDA tensor, got device {t.device}")
        device = device or t.device
        if t.device != device:
            raise ValueError(f"{name}: expected device {device} like the other operands, got {t.device}")
        if t.data_ptr() % align:
            raise ValueError(f"{name}: expected a {align}-byte aligned address, got 0x{t.data_ptr():x}")


def check_group(g: int, a, b, c, reordered, size, scale_dtypes=E4M3) -> tuple:
    """Group g of a grouped GEMM as both grouped kernels read it: a [M, K/2, 1], b [N, K/2, 1] K-major,
    c [M, N, 1] fp16 row-major, the pair of reordered scales; returns (sfa_reordered, sfb_reordered).
    The device comes after every group's layout: check_groups_cuda."""
    m, n, k, _ = size
    if not isinstance(reordered, tuple | list) or len(reordered) != 2:
        raise TypeError(f"group_gemm: group {g} sfasfb_reordered entry must be a pair (sfa, sfb), "
                        f"got {type(reordered).__name__}")
    sfa_r, sfb_r = reordered
    check_kmajor(f"group {g} a", a, m, k // 2, 1, FP4)
    check_kmajor(f"group {g} b", b, n, k // 2, 1, FP4)
    check_kmajor(f"group {g} c", c, m, n, 1, ("float16",))
    check_scales(f"group {g} sfa_reordered", sfa_r, m, k, 1, scale_dtypes)
    check_scales(f"group {g} sfb_reordered", sfb_r, n, k, 1, scale_dtypes)
    return sfa_r, sfb_r


def check_groups_cuda(abc, scales) -> None:
    """Every group's tensors on one CUDA device, 16-byte aligned (after check_group of each)."""
    check_cuda(**{f"group {g} {x}": t for g in range(len(abc))
                  for x, t in zip(("a", "b", "c", "sfa_reordered", "sfb_reordered"), (*abc[g], *scales[g]))})
