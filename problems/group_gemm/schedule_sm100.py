"""The sm100 grouped kernel's tile schedule on the host, without the DSL.

The output tiles (128 x tile_n) of all groups are numbered group by group, in the group order the
config names (problems/group_gemm/order.py: list order, or M-sorted), inside a group M-fastest then N;
CTA b of a grid of min(#tiles, #SMs) takes tiles b, b + grid, b + 2 grid, ... The kernel
(problems/group_gemm/kernel_sm100.py, GroupTileScheduler) walks the same numbering on the device: its
metadata rows are written in that group order, so one binary serves every order; the chooser
(problems/group_gemm/config.py) and the B200 model (scripts/b200.py) read it here.
"""

from __future__ import annotations

from problems.group_gemm.order import check_permutation
from shared.cute.sm100_config import K_TILE, TILE_M
from shared.devices import B200_SM_COUNT


def group_tiles(m: int, n: int, tile_n: int) -> tuple[int, int]:
    """(M tiles, N tiles) of one group: partial M tiles count, N is a multiple of tile_n."""
    return -(-m // TILE_M), n // tile_n


def tile_starts(sizes, tile_n: int, tiles_of=None) -> list[int]:
    """First tile number of each group (groups in order, G + 1 entries: the last is the total);
    `tiles_of(m, n, tile_n)` counts a group's tiles (group_tiles, or pair_group_tiles for the pair kernel)."""
    tiles_of = tiles_of or group_tiles
    starts = [0]
    for m, n, _k, _l in sizes:
        tm, tn = tiles_of(m, n, tile_n)
        starts.append(starts[-1] + tm * tn)
    return starts


def locate(tile: int, starts, tiles_m) -> tuple[int, int, int]:
    """(group, M tile, N tile) of a tile number; what the kernel's GroupTileScheduler.coord computes:
    the last group whose first tile is <= tile (skips empty groups), then M-fastest inside it."""
    g = 0
    for i in range(1, len(tiles_m)):
        if starts[i] <= tile:
            g = i
    local = tile - starts[g]
    return g, local % tiles_m[g], local // tiles_m[g]


def grid_size(total_tiles: int, sm_count: int) -> int:
    return min(total_tiles, sm_count)


def ordered(sizes, order=None) -> tuple[list[int], list]:
    """(group indices in schedule order, their sizes in that order); `order` None = list order."""
    order = list(range(len(sizes))) if order is None else check_permutation(order, len(sizes))
    return order, [sizes[g] for g in order]


def schedule(sizes, tile_n: int, sm_count: int = B200_SM_COUNT, order=None) -> list[list[tuple[int, int, int]]]:
    """The work of every CTA of the launch, in its order: [(group, M tile, N tile), ...] per CTA, groups
    taken in `order` (their indices in `sizes`; default list order)."""
    order, sizes = ordered(sizes, order)
    starts = tile_starts(sizes, tile_n)
    tiles_m = [group_tiles(m, n, tile_n)[0] for m, n, _, _ in sizes]
    total, grid = starts[-1], grid_size(starts[-1], sm_count)
    work = [[locate(t, starts, tiles_m) for t in range(b, total, grid)] for b in range(grid)]
    return [[(order[g], tm, tn) for g, tm, tn in tiles] for tiles in work]


def estimated_cost(sizes, tile_n: int, sm_count: int = B200_SM_COUNT, order=None) -> float:
    """Relative time of the busiest CTA with the groups taken in `order`: per K block ~ the rows it
    brings in (128 of A + tile_n of B), per tile 2 K blocks' worth of fill and epilogue."""
    k_blocks = [k // K_TILE for _, _, k, _ in sizes]
    per_cta = [sum((k_blocks[g] + 2) * (TILE_M + tile_n) for g, _, _ in work)
               for work in schedule(sizes, tile_n, sm_count, order)]
    return max(per_cta, default=0)


# ------------------------------------------------------------------------------ CTA pairs, A and B swapped
PAIR_M = 2 * TILE_M  # rows of a 2-CTA MMA: here 256 rows of the problem's N


def pair_group_tiles(m: int, n: int, tile_n: int) -> tuple[int, int]:
    """(tiles along the problem's M, tiles along its N) of one group for the swapped pair kernel: the
    MMA's M side is the problem's N (256 per tile, N a multiple of 256), its N side the problem's M
    (tile_n per tile, partial tiles count)."""
    return -(-m // tile_n), n // PAIR_M


def pair_schedule(sizes, tile_n: int, sm_count: int = B200_SM_COUNT) -> list[list[tuple[int, int, int]]]:
    """The work of every CTA pair, in its order: [(group, N tile of 256, M tile of tile_n), ...]; pair p
    of min(#tiles, sm_count // 2) takes tiles p, p + pairs, ...; inside a group the M tiles are
    fastest, so pairs running at once share the problem's B tiles (the large operand)."""
    starts = tile_starts(sizes, tile_n, pair_group_tiles)
    fast = [pair_group_tiles(m, n, tile_n)[0] for m, n, _, _ in sizes]
    total, pairs = starts[-1], min(starts[-1], sm_count // 2)
    out = []
    for p in range(pairs):
        work = []
        for t in range(p, total, pairs):
            g, tm, tn = locate(t, starts, fast)  # tm: the fast (problem M) index, tn: the slow one
            work.append((g, tn, tm))
        out.append(work)
    return out


def pair_estimated_cost(sizes, tile_n: int, sm_count: int = B200_SM_COUNT) -> float:
    """Relative time of the busiest pair: per K block each CTA brings in 128 rows of B and tile_n / 2
    rows of A; per tile 2 K blocks' worth of fill and epilogue."""
    k_blocks = [k // K_TILE for _, _, k, _ in sizes]
    per_pair = [sum((k_blocks[g] + 2) * (TILE_M + tile_n // 2) for g, _, _ in work)
                for work in pair_schedule(sizes, tile_n, sm_count)]
    return max(per_pair, default=0)
