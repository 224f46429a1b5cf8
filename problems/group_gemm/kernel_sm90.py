"""Hopper (sm_90a) grouped NVFP4 GEMM in one launch: every group's output tiles in one grid.

The mainloop is the GEMM's (shared/cute/sm90_gemm.py: exact FP4 x E4M3 -> fp16
decode, fp16 wgmma, split roles), with 128 x 128 tiles (128 rows of A decoded into shared memory,
two consumer warpgroups of 64 rows of B each). Where the shape set has several waves of tiles, a
second kernel (config.SM90_PAIRS) takes tiles of one A tile and a pair of B tiles, so that the A tile
the decoders decode, the costlier side, serves 256 rows of B (`paired_table` mixes pairs and single
tiles, `choose_config` picks the kernel); where every tile a pair fits one wave of 2-CTA clusters, a third
(config.SM90_PAIRS_SPLIT) splits each pair tile's K tiles over a cluster. What is grouped:

- Tiles. A table of (group, A tile, B tile) rows in an order chosen on the host (`tile_table`;
  longest K first by default, a tile's time growing with K), dealt out to one CTA per SM
  (`cta_schedule`): each tile in table order goes to the CTA whose tiles so far cost least, the way
  the hardware would hand a grid of one CTA per tile to the SMs that free up first. Each CTA then
  runs its list with the rings running on from one tile into the next (Sm90BlockScaledGemm._tiles):
  the next tile's first stages load and decode while the consumers finish the last one, where a CTA
  per tile filled its pipeline anew each time (H100 timings of both: results/README.md).
- TMA descriptors. Each group has its own A, B and scale tensors, so its own four descriptors. A
  one-block-per-group descriptor kernel writes them into a device buffer (a copy of the compiled
  template, then base address, shape and strides replaced: tensormap.replace) once per distinct
  set of tensors; the GEMM kernel loads through them (cp.async.bulk.tensor with a descriptor
  address) after a tensormap-proxy acquire fence.
- Scales. The leaderboard's reordered copies are read where they are, with no copy: for 128 rows
  and 256 K they hold one contiguous 2048-byte block (LEADERBOARD.md 2.5), which one TMA box loads
  per stage (Sm90BlockScaledGemm.blocked_sf). In the last 128-row block of A the rows past M hold
  random filler; TMA zero-fills the A rows past M, the decoders skip them (skip_rows_past_extent:
  a group of M = 40 leaves 88 of its tile's 128 rows undecoded), their slots keep stale values that
  reach only accumulator columns past M, and the epilogue stores no column past M.
- Per-group metadata (C address, M, N, K tiles) is a small int64 tensor on the device, built with
  the descriptors; the CTAs' tile lists one int32 tensor (`schedule`, cached per shape set).

One call = one launch (plus the descriptor kernel the first time a set of tensors is seen). Host
work per repeat call is the check that the call's tuple and tensors are unchanged, and one C call (the
submission's PreparedCalls, shared/call_cache.py).

Constraints: L = 1, K % 256 == 0, N % 128 == 0 per group (M any), the leaderboard layouts.
Run: `python -m harness.eval group_gemm --mode test --data stress --impl submission` on an H100.
"""

import functools
import heapq
import itertools

import torch

from problems.group_gemm.config import SM90, SM90_PAIRS, SM90_PAIRS_SPLIT, SPLIT_MIN_K_TILES
from problems.group_gemm.order import group_rank
from shared.cute.compile_cache import CompileCache
from shared.cute.launch_binding import PreparedLaunch

TILE = 128  # rows of A and of B per CTA
DESC_BYTES = 128  # one TMA descriptor (CUtensorMap)
DESCS_PER_GROUP = 4  # A values, A scales, B values, B scales
META_FIELDS = 4  # per group, int64: C address, M, N, K tiles
# per tile, int32: group, A tile, B tile, the CTA's tile count (in its first row; schedule), the group's
# K tiles (the producer's loop needs no load of the group's metadata before its first TMA), the tile's
# 128-row tiles of B (config.r_tiles or fewer), unused x 2
TILE_FIELDS = 8
ALL_PAIRS = 1 << 30  # a `pairs` count that keeps every pair tile whole

_COMPILED = CompileCache()


# ------------------------------------------------------------------------------------------------
# Tile schedule (host)
# ------------------------------------------------------------------------------------------------

ORDERS = ("long_first", "group", "round_robin", "full_first")


def tile_table(sizes, order: str = "long_first", span: int = 1) -> list[tuple[int, int, int, int]]:
    """Every output tile of every group as (group, A tile, first B tile, B tiles held), in launch order.
    Tiles count 128 rows; an output tile holds `span` B tiles (the config's r_tiles), or fewer at the
    end of its group's N.

    long_first: tiles of larger K first (a tile's time grows with K), groups of equal K by size,
    largest first, so the short ones fill the last wave; group: group by group, in list order;
    round_robin: one tile of each group in turn; full_first: long_first's tiles of equal K reordered
    by the A rows they hold, most first (a tile past its group's M decodes only its rows, so the
    cheaper tiles fill the last wave). Groups with M = 0 have no tiles.
    """
    per_group = [[(g, i, j, min(span, n // TILE - j)) for j in range(0, n // TILE, span) for i in range(-(-m // TILE))]
                 for g, (m, n, k, _) in enumerate(sizes)]
    if order == "group":
        return [t for tiles in per_group for t in tiles]
    if order == "round_robin":
        out, longest = [], max((len(t) for t in per_group), default=0)
        for r in range(longest):
            out += [tiles[r] for tiles in per_group if r < len(tiles)]
        return out
    if order == "long_first":
        rank = group_rank(sizes, "long_first", [len(t) for t in per_group])
        return [t for g in rank for t in per_group[g]]
    if order == "full_first":
        def a_rows(tile):
            g, i = tile[:2]
            return min(TILE, sizes[g][0] - i * TILE)
        # a stable sort: long_first's order among tiles of equal K and rows
        return sorted(tile_table(sizes, "long_first", span), key=lambda t: (-sizes[t[0]][2], -a_rows(t)))
    raise ValueError(f"tile order must be one of {ORDERS}, got {order!r}")


# Share of a full 128 x 128 tile's time that scales with its rows of A (the decoders' work; the
# consumers' B decode and the MMA do not shrink with them): skipping the A rows past M, 38 % of the
# tiles' rows on the n 7168, k 2048 case, took 7 % off it (H100, 2026-11-26; results/README.md), so about 0.18.
A_ROWS_SHARE = 0.18
# What a second 128-row B tile adds to an output tile (its decode, MMA and epilogue; the A tile is
# decoded once for both), as a share of a full single tile's time: one wave of pairs took 1.43-1.48x
# one wave of single tiles on the two one-wave cases (H100, 2026-11-27; results/README.md).
SECOND_B_TILE_SHARE = 0.45
# What the pair kernel's half-width wgmmas (config.SM90_PAIRS: half_s_tiles) take off a pair tile with at most
# 64 rows of A: the 5 such tiles of 13 A tiles took 5.3 % off the n 7168, k 2048 case with the schedule
# unaware of them, about 14 % of each. Pricing them so was level with not (H100, 2026-11-27; results/TUNING.md);
# it stays because it is what the kernel does.
HALF_WIDTH_SAVING = 0.14


def tile_cost(sizes, tile) -> float:
    """An output tile's estimated time, in full 128 x 128 tile K tiles."""
    g, i, _, held = tile
    m, _, k, _ = sizes[g]
    rows = min(TILE, m - i * TILE)
    cost = (k // 256) * (1 - A_ROWS_SHARE + A_ROWS_SHARE * rows / TILE + SECOND_B_TILE_SHARE * (held - 1))
    return cost * (1 - HALF_WIDTH_SAVING) if held == 2 and 2 * rows <= TILE else cost


def cta_schedule(sizes, table, ctas: int) -> list[list[tuple[int, int, int, int]]]:
    """The tiles of `table` dealt out to `ctas` CTAs in table order, each tile to the CTA whose tiles
    so far cost least (tile_cost; ties: the lowest index), as a grid of one CTA per tile is handed
    to the SMs that free up first. Returns each CTA's tiles; with ctas = len(table), CTA c gets tile c."""
    if not 1 <= ctas <= len(table):
        raise ValueError(f"cta_schedule: ctas must be in 1..{len(table)} (the tiles), got {ctas}")
    loads = [(0.0, c) for c in range(ctas)]  # a heap of (cost so far, CTA)
    lists = [[] for _ in range(ctas)]
    costs = {}  # per (group, A tile, B tiles held): the tiles of a group row cost the same
    for tile in table:
        key = (tile[0], tile[1], tile[3])
        cost = costs.get(key)
        if cost is None:
            cost = costs[key] = tile_cost(sizes, tile)
        load, c = loads[0]
        lists[c].append(tile)
        heapq.heapreplace(loads, (load + cost, c))
    return lists


def busiest(sizes, lists) -> float:
    """The estimated cost (tile_cost) of the busiest CTA's tiles."""
    return max(sum(tile_cost(sizes, t) for t in tiles) for tiles in lists)


def split_pairs(table, keep: int):
    """`table` with its first `keep` tiles as they are and every later one as tiles of one B tile each."""
    out = list(table[:keep])
    for g, i, j, held in table[keep:]:
        out += [(g, i, j + b, 1) for b in range(held)]
    return out


def paired_table(sizes, order: str, ctas: int, pairs: int | None = None):
    """The tile table of pairs of B tiles (tile_table, span 2) with its first `pairs` tiles kept whole and
    the rest split into single B tiles, which fill the last wave: a pair costs less than its two tiles
    apart (the A tile is decoded once) but one wave of pairs is 1.45x one wave of single tiles. pairs
    None: pairs_to_keep's count."""
    table = tile_table(sizes, order, 2)
    return split_pairs(table, pairs_to_keep(tuple(map(tuple, sizes)), order, ctas) if pairs is None else pairs)


@functools.lru_cache(maxsize=64)
def pairs_to_keep(sizes: tuple, order: str, ctas: int) -> int:
    """The count of pair tiles (paired_table) whose deal to `ctas` CTAs has the cheapest busiest CTA (ties:
    more pairs), searched on a grid of 24 counts and then between the best one's neighbours; cached per
    shape set (tens of ms of Python on the benchmark cases)."""
    table = tile_table(sizes, order, 2)

    def cost(keep):
        split = split_pairs(table, keep)
        return busiest(sizes, cta_schedule(sizes, split, min(len(split), ctas))), -keep

    step = max(1, len(table) // 24)
    best = min(range(0, len(table) + step, step), key=lambda x: cost(min(x, len(table))))
    return min(range(max(0, best - step + 1), min(len(table), best + step - 1) + 1), key=cost)


@functools.lru_cache(maxsize=64)
def choose_config(sizes: tuple, order: str, ctas: int):
    """SM90_PAIRS where paired_table keeps some pairs of B tiles for the shape set; else SM90_PAIRS_SPLIT
    where every tile a pair fits one wave of 2-CTA clusters and every K has SPLIT_MIN_K_TILES K tiles or
    more (an even count); else SM90: the single-tile kernel runs single tiles 3-9 % faster than the pair
    kernel does (H100, 2026-11-27; results/README.md). Cached per shape set, as schedule is."""
    table = paired_table(sizes, order, ctas)
    if any(held == 2 for *_, held in table):
        return SM90_PAIRS
    k_tiles = [k // 256 for _, _, k, _ in sizes]
    if (min(k_tiles) >= SPLIT_MIN_K_TILES and all(kt % SM90_PAIRS_SPLIT.splits == 0 for kt in k_tiles)
            and len(tile_table(sizes, order, 2)) <= ctas // SM90_PAIRS_SPLIT.splits):
        return SM90_PAIRS_SPLIT
    return SM90


def cta_tiles(sizes, order: str, ctas: int, span: int = 1, pairs: int | None = None):
    """Each CTA's tiles: the tile table in `order` (span 2: paired_table's mix of pairs of B tiles and
    single ones, `pairs` as there) dealt to at most `ctas` CTAs (cta_schedule); [] without tiles."""
    table = tile_table(sizes, order) if span == 1 else paired_table(sizes, order, ctas, pairs)
    return cta_schedule(sizes, table, min(len(table), ctas)) if table else []


@functools.lru_cache(maxsize=64)
def schedule(sizes: tuple, order: str, ctas: int, span: int = 1,
             pairs: int | None = None) -> tuple[int, tuple[int, ...]]:
    """(CTAs, the int32 words of the table the kernel reads): cta_tiles' lists, CTA c's t-th tile in
    row t * CTAs + c as (group, A tile, first B tile, the CTA's tile count in its first row, else 0,
    K tiles, B tiles held, 0, 0); rows past a CTA's count are zero and never read.
    The first row holds the count, so a CTA learns its first tile and its count in one load before
    its first TMA (a separate list of counts would be one more dependent load). Cached per shape
    set: the leaderboard's calls repeat the sizes with new tensors, and building it for 728 tiles
    takes ~1 ms of Python."""
    lists = cta_tiles(sizes, order, ctas, span, pairs)
    if not lists:
        return 0, ()
    width, k_tiles = len(lists), [k // 256 for _, _, k, _ in sizes]
    rows = [(0,) * TILE_FIELDS] * (width * max(map(len, lists)))
    for c, tiles in enumerate(lists):
        for t, (g, i, j, held) in enumerate(tiles):
            rows[t * width + c] = (g, i, j, len(tiles) if t == 0 else 0, k_tiles[g], held, 0, 0)
    return width, tuple(itertools.chain.from_iterable(rows))


# ------------------------------------------------------------------------------------------------
# Kernels
# ------------------------------------------------------------------------------------------------


def _kernel_class():
    """The grouped kernel class (built on first use: the module imports without the DSL)."""
    import cutlass
    import cutlass.cute as cute
    from cutlass import Float16, Int32, Int64, Uint8

    from problems.gemm.kernel_sm90 import GemmSm90
    from shared.cute import launch_queue
    from shared.cute.sm90_config import ROW_BYTES
    from shared.cute.sm90_gemm import TileWork

    try:
        from cutlass.tensor_utils import TensorMapManager, TensorMapUpdateMode
    except ImportError:  # older DSL
        from cutlass.utils import TensorMapManager, TensorMapUpdateMode

    tensormaps = TensorMapManager(TensorMapUpdateMode.GMEM, DESC_BYTES)

    def gmem(dtype, addr):
        return cute.make_ptr(dtype, addr, cute.AddressSpace.gmem, assumed_align=16)

    class GroupGemmSm90(GemmSm90):
        blocked_sf = True
        skip_rows_past_extent = True  # a tile past its group's M is common here
        tile_lists = True  # a CTA runs a list of tiles (_work)

        def _operands(self, p_vals_a, p_sf_a, p_vals_b, p_sf_b, m, n, k_tiles):
            """(values, scales) tensors of A and B: values [rows, K/2] row-major, scales as 16-row x
            128-byte blocks, one per (128-row tile, K tile), in that order."""
            row_b = k_tiles * ROW_BYTES

            def op(p_vals, p_sf, rows):
                vals = cute.make_tensor(p_vals, cute.make_layout((rows, row_b), stride=(row_b, 1)))
                blocks = (rows + TILE - 1) // TILE * k_tiles * (TILE // 8)
                sfs = cute.make_tensor(p_sf, cute.make_layout((blocks, 128), stride=(128, 1)))
                return vals, sfs

            return op(p_vals_a, p_sf_a, m), op(p_vals_b, p_sf_b, n)

        def _template_atoms(self, p, dummy: Int32):
            """TMA atoms over placeholder tensors: their descriptors are the templates the descriptor
            kernel copies and fills in; the GEMM never loads through them."""
            self._smem_layouts()
            a, b = self._operands(p, p, p, p, dummy, dummy, dummy)
            atoms, _, _ = self._roles(a, [b], cute.recast_ptr(p, dtype=Float16), dummy, dummy)
            return atoms

        @cute.jit
        def build_descriptors(self, p_meta: cute.Pointer, p_ops: cute.Pointer, p_descs: cute.Pointer,
                              groups: Int32, dummy: Int32, queue: launch_queue.Queue):
            """Write every group's four descriptors into p_descs (p_ops: int64 [G, 4] addresses of A,
            B, SFA, SFB; p_meta: int64 [G, 4], see META_FIELDS)."""
            atoms = self._template_atoms(p_descs, dummy)
            meta = cute.make_tensor(p_meta, cute.make_layout((groups, META_FIELDS), stride=(META_FIELDS, 1)))
            ops = cute.make_tensor(p_ops, cute.make_layout((groups, 4), stride=(4, 1)))
            launch_queue.launch(self.descriptor_kernel(atoms[0], atoms[2], atoms[4], atoms[6], meta, ops, p_descs),
                                queue, grid=[groups, 1, 1], block=[32, 1, 1])

        @cute.kernel
        def descriptor_kernel(self, tma_a: cute.CopyAtom, tma_sfa: cute.CopyAtom, tma_b: cute.CopyAtom,
                              tma_sfb: cute.CopyAtom, meta: cute.Tensor, ops: cute.Tensor, p_descs: cute.Pointer):
            g, _, _ = cute.arch.block_idx()
            m, n, k_tiles = Int32(meta[g, 1]), Int32(meta[g, 2]), Int32(meta[g, 3])
            (a, sfa), (b, sfb) = self._operands(gmem(Uint8, ops[g, 0]), gmem(Uint8, ops[g, 2]),
                                                gmem(Uint8, ops[g, 1]), gmem(Uint8, ops[g, 3]), m, n, k_tiles)
            atoms = (tma_a, tma_sfa, tma_b, tma_sfb)
            ptrs = tuple(tensormaps.get_tensormap_ptr(p_descs + (g * DESCS_PER_GROUP + j) * DESC_BYTES)
                         for j in range(DESCS_PER_GROUP))
            for atom, ptr in zip(atoms, ptrs):
                tensormaps.init_tensormap_from_atom(atom, ptr, 0)
            tensormaps.fence_tensormap_initialization()
            tensormaps.update_tensormap((a, sfa, b, sfb), atoms, ptrs, 0, (None,) * 4)

        @cute.jit
        def __call__(self, p_meta: cute.Pointer, p_tiles: cute.Pointer, p_descs: cute.Pointer,
                     groups: Int32, rows: Int32, ctas: Int32, dummy: Int32, queue: launch_queue.Queue):
            """The grouped GEMM on `ctas` CTAs; p_tiles: int32 [rows, TILE_FIELDS], the table of `schedule`."""
            atoms = self._template_atoms(p_descs, dummy)
            meta = cute.make_tensor(p_meta, cute.make_layout((groups, META_FIELDS), stride=(META_FIELDS, 1)))
            table = cute.make_tensor(p_tiles, cute.make_layout((rows, TILE_FIELDS), stride=(TILE_FIELDS, 1)))
            self.shared_storage = self._shared_storage()
            splits = self.cfg.splits  # a cluster of `splits` CTAs along z per tile, each a share of its K tiles
            launch_queue.launch(self.grouped_kernel(*atoms, self._tiled_mma(), meta, table, p_descs), queue,
                                grid=[ctas, 1, splits], block=[self.cfg.threads, 1, 1], cluster=[1, 1, splits],
                                min_blocks_per_mp=1, use_pdl=self.cfg.pdl)

        @cute.kernel
        def grouped_kernel(self, tma_0: cute.CopyAtom, g_0: cute.Tensor, tma_sf0: cute.CopyAtom,
                           g_sf0: cute.Tensor, tma_1: cute.CopyAtom, g_1: cute.Tensor, tma_sf1: cute.CopyAtom,
                           g_sf1: cute.Tensor, tma_2: cute.CopyAtom, g_2: cute.Tensor, tma_sf2: cute.CopyAtom,
                           g_sf2: cute.Tensor, tiled_mma: cute.TiledMma, meta: cute.Tensor, table: cute.Tensor,
                           p_descs: cute.Pointer):
            ops = [(tma_0, g_0, tma_sf0, g_sf0), (tma_1, g_1, tma_sf1, g_sf1), (tma_2, g_2, tma_sf2, g_sf2)]
            c, _, split = cute.arch.block_idx()
            ctas, _, _ = cute.arch.grid_dim()
            if cutlass.const_expr(self.cfg.pdl):
                cute.arch.griddepcontrol_wait()  # the table may be the earlier kernel's output (Sm90Config.pdl)
            # rows c, c + ctas, ..: this CTA's tiles, their count in the first one
            self._tiles(ops, tiled_mma, (meta, table, p_descs, split), (c, c + table[c, 3] * ctas, ctas))

        def _work(self, ctx, j):
            """Row j of the tile table: its group's C (transposed view, N cut after the tile's B tiles),
            K tiles and descriptors."""
            meta, table, p_descs, split = ctx
            g, bid_s, bid_r, k_tiles, held = table[j, 0], table[j, 1], table[j, 2], table[j, 4], table[j, 5]
            m, n = Int32(meta[g, 1]), Int32(meta[g, 2])
            n_end = (bid_r + held) * TILE
            mD = cute.make_tensor(gmem(Float16, meta[g, 0]), cute.make_layout((n_end, m), stride=(1, n)))  # C^T
            # the bulk tensor copy takes its descriptor by generic address
            desc = [tensormaps.get_tensormap_ptr(p_descs + (g * DESCS_PER_GROUP + d) * DESC_BYTES,
                                                 cute.AddressSpace.generic) for d in range(DESCS_PER_GROUP)]
            descs = [desc[0:2]] + [desc[2:4]] * self.nr
            if self.cfg.splits > 1:  # this CTA's share of the tile's K tiles
                kt_own = k_tiles // self.cfg.splits
                return TileWork(mD, k_tiles, kt_own, split * kt_own, bid_s, bid_r, split, descs)
            return TileWork(mD, k_tiles, k_tiles, Int32(0), bid_s, bid_r, Int32(0), descs)

    del Int64
    return GroupGemmSm90


def compiled(name: str, options: str = "", config=SM90):
    """The compiled descriptor builder ('descriptors') or GEMM ('gemm'), for sm_90a, built once against
    null pointers (no GPU needed); `options` are extra compile options (tests keep the PTX)."""
    import cutlass.cute as cute

    def build():
        from cutlass import Int32, Int64, Uint8

        from shared.cute import launch_queue
        from shared.cute.compile_cache import compile_arch
        from shared.cute.pointers import null_ptr

        kernel = _kernel_class()(config)
        p64, p8, one, queue = null_ptr(Int64, 16), null_ptr(Uint8, 128), Int32(1), launch_queue.placeholder()
        args = ((kernel.build_descriptors, p64, p64, p8, one, Int32(TILE), queue) if name == "descriptors" else
                (kernel, p64, null_ptr(Int32, 16), p8, one, one, one, Int32(TILE), queue))
        with compile_arch("sm_90a"):
            return cute.compile(*args, options=f"--gpu-arch sm_90a {options}".strip())

    return _COMPILED.get(("group_gemm_sm90", name, options, config), build)


# ------------------------------------------------------------------------------------------------
# Host glue
# ------------------------------------------------------------------------------------------------


def prepare(data, sizes, order: str = "long_first", config=None, ctas: int | None = None,
            pairs: int | None = None) -> PreparedLaunch | None:
    """Check a call's tensors, write the groups' descriptors and tables on the device, and bind the
    GEMM to them; calling the result launches (every group's C written in place). None where the
    kernel does not take the call (L != 1, N % 128 != 0, off the GPU, every group empty). `sizes`
    come from shared.inputs.check_grouped (one entry per group in every list). ctas: the grid, at most
    one CTA per tile (None: one per SM; cta_schedule deals the tiles; a split config deals them to
    ctas // splits clusters, one tile each, else ValueError); config: None for choose_config's; pairs: with
    a config of pairs of B tiles (r_tiles 2), how many tiles stay pairs (None: paired_table's choice, or
    every tile for a split config)."""
    from cutlass import Int32, Int64, Uint8

    from shared.cute.launch_binding import call_on_current_queue
    from shared.cute.operand_checks import check_group, check_groups_cuda
    from shared.cute.pointers import gmem_ptr
    from shared.device_facts import sm_count

    abc, _, reordered, _ = data
    if not all(l == 1 and n % TILE == 0 for _, n, _, l in sizes) or not abc[0][0].is_cuda:
        return None
    device = abc[0][0].device
    # the scales' bytes are read as they are: uint8 is taken too
    scales = [check_group(g, *abc[g], reordered[g], sizes[g], ("float8_e4m3fn", "uint8")) for g in range(len(sizes))]
    check_groups_cuda(abc, scales)
    meta = [(c.data_ptr(), m, n, k // 256) for (_, _, c), (m, n, k, _) in zip(abc, sizes)]
    addrs = [(a.data_ptr(), b.data_ptr(), sfa.data_ptr(), sfb.data_ptr()) for (a, b, _), (sfa, sfb) in zip(abc, scales)]
    shapes, ctas = tuple(map(tuple, sizes)), sm_count(device) if ctas is None else ctas
    config = config or choose_config(shapes, order, ctas)
    if config.splits > 1 and pairs is None:
        pairs = ALL_PAIRS  # a split config runs every tile a pair, one per cluster
    if config.splits > 1 and any(k % (256 * config.splits) for _, _, k, _ in sizes):
        raise ValueError(f"group_gemm: a config with splits={config.splits} needs every K a multiple of "
                         f"{256 * config.splits}, got {[k for _, _, k, _ in sizes]}")
    ctas, words = schedule(shapes, order, ctas // config.splits, config.r_tiles, pairs)
    if not ctas:
        return None
    if config.splits > 1 and len(words) > ctas * TILE_FIELDS:
        # the split's hand-over reuses the operand buffers once, after the CTA's last tile
        raise ValueError(f"group_gemm: a config with splits={config.splits} needs one tile per cluster, "
                         f"got {len(words) // TILE_FIELDS} table rows for {ctas} clusters")
    groups = len(sizes)
    meta_t = torch.tensor(meta, dtype=torch.int64, device=device)
    addr_t = torch.tensor(addrs, dtype=torch.int64, device=device)
    tiles_t = torch.tensor(words, dtype=torch.int32, device=device)
    descs = torch.empty(groups * DESCS_PER_GROUP * DESC_BYTES, dtype=torch.uint8, device=device)
    build_descriptors = compiled("descriptors")  # the same descriptors for every config (128-row boxes)
    call_on_current_queue(build_descriptors, [gmem_ptr(meta_t, Int64), gmem_ptr(addr_t, Int64),
                                               gmem_ptr(descs, Uint8, 128), Int32(groups), Int32(TILE)], device)
    args = [gmem_ptr(meta_t, Int64), gmem_ptr(tiles_t, Int32), gmem_ptr(descs, Uint8, 128), Int32(groups),
            Int32(len(words) // TILE_FIELDS), Int32(ctas), Int32(TILE)]
    return PreparedLaunch(compiled("gemm", config=config), args, device, hold=(meta_t, addr_t, tiles_t, descs))
