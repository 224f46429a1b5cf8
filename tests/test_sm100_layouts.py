"""B200 readiness, CPU tier: the layouts of the sm100 mainloop evaluated on the host at every
coordinate of a tile (tests/layout_probe.py), against the leaderboard's blocked-layout formula
(LEADERBOARD.md 2.5, `shared.scales.blocked_offset`) and the tcgen05 contract (one 32-bit column
holds the 4 scales of one 64-wide K step for 32 rows, the 32 rows replicated in the 4 lane quadrants
by `tcgen05.cp ... .warpx4`): the global scale view the TMA reads (first, last, odd tiles in M, N and
L), the shared-memory stage the TMA writes and `tcgen05.cp` reads, the tensor-memory image
`tcgen05.cp` writes and the MMA reads (with the SFB shift of odd 64-wide N tiles), and the
accumulator columns.
"""

from __future__ import annotations

import numpy as np
import pytest

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

from shared import scales as S  # noqa: E402
from shared.cute import sm100_blockscaled as bs  # noqa: E402
from tests.layout_probe import check_sizes, evaluate, probed, row_and_k, sf_names  # noqa: E402
from tests.sm100_common import NUM_B  # noqa: E402
from tests.sm100_facts import (  # noqa: E402
    CONFIG_IDS,
    CONFIGS,
    CTA_M,
    K_BLOCK,
    MMA_K,
    SF_ATOM,
    SF_VEC,
    TMEM_LANES,
    TMEM_MAX_COLS,
    tile_bytes,
    tmem_columns_needed,
)

# A problem with several tiles in every direction: the last M tile, the last (odd, for 64-wide tiles)
# N tile, two K blocks and two batches are all among the coordinates evaluated.
LAYOUT_SHAPE = {64: (384, 384, 512, 2), 128: (384, 384, 512, 2), 256: (384, 512, 512, 2)}



TILE_NS = [64, 128, 256]


@pytest.mark.parametrize("tile_n", TILE_NS)
def test_global_scale_views_are_the_leaderboard_blocked_layout_at_every_coordinate(tile_n):
    """What the TMA reads for tile (tm, tk, l): SFA byte of row tm*128 + r, scale column (tk*256 + k)/16
    of batch l, at the blocked offset of LEADERBOARD.md 2.5 (every M tile, K block and batch); the same
    for SFB by 128-row atoms (256-wide tiles: two atoms per tile)."""
    m, n, k, l = LAYOUT_SHAPE[tile_n]
    p = probed(bs.MainloopConfig(tile_n=tile_n), (m, n, k, l))
    sfb_atoms = -(-tile_n // SF_ATOM)
    for name, rows, atoms, tile_rows in (("gSFA", m, 1, CTA_M), ("gSFB", n, sfb_atoms, sfb_atoms * SF_ATOM)):
        c, off = evaluate(p[name], sf_names(atoms, "global"))
        check_sizes(c, atoms)
        r, kk = row_and_k(c)
        row = c["tmn"] * tile_rows + r
        want = S.blocked_offset(row, (c["tk"] * K_BLOCK + kk) // SF_VEC, c["l"], rows, k // SF_VEC)
        bad = np.flatnonzero(off != want)
        assert not bad.size, f"{name}: row {row[bad[0]]}, k {kk[bad[0]]}: offset {off[bad[0]]}, blocked {want[bad[0]]}"
        # every tile of the problem is there, the last M/N tile and the last batch included
        assert c["tmn"].max() + 1 == rows // tile_rows and c["tk"].max() + 1 == k // K_BLOCK and c["l"].max() + 1 == l


@pytest.mark.parametrize("tile_n", TILE_NS)
def test_shared_memory_stage_is_what_tcgen05_cp_32x128b_reads(tile_n):
    """One stage of scales in shared memory: per 128-row atom and 64-wide K step a 512-byte chunk of
    32 rows x 16 bytes, row r at 16 (r % 32) + 4 (r // 32), the 4 scales of the step in consecutive
    bytes. This is also the blocked layout of the global tile, so the TMA box is a plain copy."""
    m, n, k, l = LAYOUT_SHAPE[tile_n]
    p = probed(bs.MainloopConfig(tile_n=tile_n), (m, n, k, l))
    t = tile_bytes(tile_n)
    for name, atoms, stage_bytes in (("sfa_smem", 1, t["SFA"]), ("sfb_smem", -(-tile_n // SF_ATOM), t["SFB"])):
        c, off = evaluate(p[name], sf_names(atoms, "smem"))
        check_sizes(c, atoms)
        r, kk = row_and_k(c)
        chunk = 4 * (r // SF_ATOM) + kk // MMA_K  # 512-byte chunk (atom, K step)
        want = 512 * chunk + 16 * (r % 32) + 4 * ((r % SF_ATOM) // 32) + (kk // SF_VEC) % 4
        bad = np.flatnonzero(off != want)
        assert not bad.size, f"{name}: row {r[bad[0]]}, k {kk[bad[0]]}: smem byte {off[bad[0]]}, want {want[bad[0]]}"
        assert sorted(set(off.tolist())) == list(range(stage_bytes))
        staged_shape, staged_stride = p[name + "_staged"]
        assert staged_stride[-1] == stage_bytes, "stages are not back to back"


@pytest.mark.parametrize("tile_n", TILE_NS)
def test_tensor_memory_scales_are_where_the_mma_reads_them(tile_n):
    """tcgen05.cp 32x128b.warpx4 writes chunk (atom, kb) to 4 columns, lane r % 32 of every lane
    quadrant; the MMA of K step kb reads row r's scales from column (K-step base) + r // 32, byte
    (16-wide sub-block), its K-step base being 4 columns per atom further for each step."""
    m, n, k, l = LAYOUT_SHAPE[tile_n]
    p = probed(bs.MainloopConfig(tile_n=tile_n), (m, n, k, l))
    for name, atoms in (("sfa_tmem", 1), ("sfb_tmem", -(-tile_n // SF_ATOM))):
        c, off = evaluate(p[name], sf_names(atoms, "tmem"))
        check_sizes(c, atoms)
        assert c["m1"].max() + 1 == 4 * atoms
        r, kk = c["m0"] + 32 * c["m1"], c["k0"] + SF_VEC * c["k1"] + MMA_K * c["kb"]
        # TMEM address of an 8-bit element: lane << 16 | column, in bytes of 32-bit columns
        lane, col, byte = off >> 18, (off & 0x3FFFF) >> 2, off & 3
        want_col = 4 * atoms * (kk // MMA_K) + r // 32
        ok = (lane == r % 32 + 32 * c["q"]) & (col == want_col) & (byte == (kk // SF_VEC) % 4)
        bad = np.flatnonzero(~ok)
        assert not bad.size, (f"{name}: row {r[bad[0]]}, k {kk[bad[0]]} at lane {lane[bad[0]]} col {col[bad[0]]} "
                              f"byte {byte[bad[0]]}; want lane {r[bad[0]] % 32}+32q col {want_col[bad[0]]}")
        assert lane.max() < TMEM_LANES and col.max() + 1 == 16 * atoms  # 16 columns per atom, all used


@pytest.mark.parametrize("problem,config", CONFIGS, ids=CONFIG_IDS)
def test_tensor_memory_column_plan_and_the_odd_tile_sfb_shift(problem, config):
    """Accumulators (buffer = stage * num_b + b) from column 0, then SFA (16), then 16 per atom per B;
    nothing overlaps, all inside the allocation; a 64-wide N tile's MMA reads exactly the 64 rows of its
    own half of the 128-row SFB atom (tile tn covers rows tn*64.. of atom tn // 2)."""
    num_b, tile_n, acc_stages = NUM_B[problem], config.tile_n, config.num_acc_stage
    m, n, k, l = LAYOUT_SHAPE[tile_n]
    p = probed(config.mainloop(), (m, n, k, l))
    ml = p["ml"]
    atoms = -(-tile_n // SF_ATOM)
    # accumulators: lane = row, column = N + buffer offset, buffers disjoint
    c, off = evaluate(p["acc"], ["row", "col", "_", "_", "buf"])
    assert p["mma_shape"] == (CTA_M, tile_n, MMA_K)
    assert c["buf"].max() + 1 == acc_stages * num_b
    lane, col = off >> 16, off & 0xFFFF
    assert (lane == c["row"]).all() and (col == c["col"] + tile_n * c["buf"]).all()
    acc_cols = acc_stages * num_b * tile_n
    assert col.max() + 1 == acc_cols
    sfa_col, sfb_cols = ml.sf_tmem_columns()
    assert sfa_col == acc_cols
    assert sfb_cols == [acc_cols + 16 + 16 * atoms * i for i in range(num_b)]
    tiles_n = n // tile_n
    for tn in range(tiles_n):
        shift = int(ml.sfb_shift(tn))
        atom_of_tile = tn // ml.sfb_tile_div
        first_row = tn * tile_n - atom_of_tile * atoms * SF_ATOM  # row of the tile inside its atom(s)
        assert 0 <= first_row and first_row + tile_n <= atoms * SF_ATOM
        for nn in range(tile_n):
            written = (first_row + nn) // 32  # column of that atom row in a K step (tensor-memory test)
            read = shift + nn // 32  # where the MMA of that tile looks for its row nn
            assert written == read, (tn, nn, written, read)
    # the last column any MMA reads: last B's scales, last K step, largest shift, last row of the tile
    last_kb = K_BLOCK // MMA_K - 1
    top = max(sfb_cols) + max(int(ml.sfb_shift(tn)) for tn in range(tiles_n)) + 4 * atoms * last_kb + (tile_n - 1) // 32
    assert top < tmem_columns_needed(tile_n, num_b, acc_stages) <= TMEM_MAX_COLS
