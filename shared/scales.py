"""The three layouts of NVFP4 scale factors (LEADERBOARD.md 2.4-2.5).

plain     [rows, sf_k, L]          what the reference reads; row-major per batch, batch outermost
blocked   1-D per batch            cuBLAS "1D block scaling factors": 128x4 tiles of 512 bytes
permuted  [32, 4, rest_m, 4, rest_k, L]   the same bytes as a 6-D CuTe-friendly view, storage order
                                   (L, rest_m, rest_k, 32, 4, 4); what tcgen05 kernels consume

with rest_m = ceil(rows / 128), rest_k = ceil(sf_k / 4). Plain (i, j, b) lands at
perm[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, b], i.e. byte
((((b*rest_m + i//128)*rest_k + j//4)*32 + i%32)*4 + (i%128)//32)*4 + j%4 of the storage.
Positions past `rows` or `sf_k` are padding: zero in `to_blocked`, random filler in the permuted
tensors the leaderboard hands out (so kernels must not rely on them being zero).
"""

from __future__ import annotations

import torch

ATOM_ROWS = 128  # 32 x 4 rows per tile
ATOM_K = 4  # scales per tile row
TILE_BYTES = ATOM_ROWS * ATOM_K  # 512
PERMUTE_ORDER = (3, 4, 1, 5, 2, 0)  # storage (L, rm, rk, 32, 4, 4) -> logical (32, 4, rm, 4, rk, L)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def permuted_shape(rows: int, sf_k: int, n_l: int) -> tuple[int, ...]:
    return (32, 4, ceil_div(rows, ATOM_ROWS), ATOM_K, ceil_div(sf_k, ATOM_K), n_l)


def storage_shape(rows: int, sf_k: int, n_l: int) -> tuple[int, ...]:
    return (n_l, ceil_div(rows, ATOM_ROWS), ceil_div(sf_k, ATOM_K), 32, 4, ATOM_K)


def blocked_offset(i, j, b, rows: int, sf_k: int):
    """Byte offset of plain (i, j, b) in the permuted storage (works on ints and integer tensors)."""
    rest_m, rest_k = ceil_div(rows, ATOM_ROWS), ceil_div(sf_k, ATOM_K)
    tile = (b * rest_m + i // ATOM_ROWS) * rest_k + j // ATOM_K
    return tile * TILE_BYTES + 16 * (i % 32) + 4 * ((i % ATOM_ROWS) // 32) + j % ATOM_K


def _index_grids(rows: int, sf_k: int, n_l: int, device):
    i = torch.arange(rows, device=device).view(-1, 1, 1)
    j = torch.arange(sf_k, device=device).view(1, -1, 1)
    b = torch.arange(n_l, device=device).view(1, 1, -1)
    return torch.broadcast_tensors(i, j, b)


def to_permuted(plain: torch.Tensor, filler: torch.Tensor | None = None) -> torch.Tensor:
    """plain [rows, sf_k, L] -> permuted 6-D view (strides as the leaderboard's).

    `filler` is a tensor in storage order (L, rest_m, rest_k, 32, 4, 4) whose bytes stay in the
    padding positions; without one the padding is zero.
    """
    rows, sf_k, n_l = plain.shape
    shape = storage_shape(rows, sf_k, n_l)
    if filler is None:
        storage = torch.zeros(shape, dtype=plain.dtype, device=plain.device)
    else:
        if tuple(filler.shape) != shape:
            raise ValueError(f"to_permuted: filler shape {tuple(filler.shape)}, expected {shape}")
        storage = filler.to(plain.dtype) if filler.dtype != plain.dtype else filler
    perm = storage.permute(*PERMUTE_ORDER)
    i, j, b = _index_grids(rows, sf_k, n_l, plain.device)
    # Assign through uint8 views: advanced-index assignment is not implemented for fp8 everywhere.
    perm.view(torch.uint8)[i % 32, (i % ATOM_ROWS) // 32, i // ATOM_ROWS, j % ATOM_K, j // ATOM_K, b] = (
        plain.view(torch.uint8)[i, j, b]
    )
    return perm


def from_permuted(perm: torch.Tensor, rows: int, sf_k: int) -> torch.Tensor:
    """permuted 6-D view -> plain [rows, sf_k, L] (a contiguous-per-batch copy, leaderboard strides)."""
    n_l = perm.shape[5]
    if tuple(perm.shape) != permuted_shape(rows, sf_k, n_l):
        raise ValueError(f"from_permuted: shape {tuple(perm.shape)} does not fit rows={rows}, sf_k={sf_k}")
    i, j, b = _index_grids(rows, sf_k, n_l, perm.device)
    vals = perm.view(torch.uint8)[i % 32, (i % ATOM_ROWS) // 32, i // ATOM_ROWS, j % ATOM_K, j // ATOM_K, b]
    return vals.permute(2, 0, 1).contiguous().permute(1, 2, 0).view(perm.dtype)


def to_blocked(plain2d: torch.Tensor) -> torch.Tensor:
    """One batch [rows, sf_k] -> the cuBLAS blocked 1-D layout, zero-padded to 128 x 4 tiles."""
    rows, cols = plain2d.shape
    rb, cb = ceil_div(rows, ATOM_ROWS), ceil_div(cols, ATOM_K)
    padded = torch.zeros((rb * ATOM_ROWS, cb * ATOM_K), dtype=torch.uint8, device=plain2d.device)
    padded[:rows, :cols] = plain2d.view(torch.uint8)
    tiles = padded.view(rb, 4, 32, cb, ATOM_K).permute(0, 3, 2, 1, 4)  # (rb, cb, 32, 4, 4)
    return tiles.reshape(-1).view(plain2d.dtype)


def permuted_storage(perm: torch.Tensor) -> torch.Tensor:
    """The permuted view's underlying bytes in storage order, flat (one batch slab after another)."""
    return perm.permute(5, 2, 4, 0, 1, 3).reshape(-1)
