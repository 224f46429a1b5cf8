"""An emulator of a CTA pair's data movement (2-CTA MMAs, cta_group::2) on the host, for the sm100
readiness tests: the pair schedule, which rows of A and B each CTA of the pair loads, which half of each
B scale block each CTA fetches for both (the multicast), the 256-row MMA over both CTAs' halves of B,
and which rows of C each CTA stores, all taken from the kernel's own partitions
(tests/layout_probe.py `probed_pair`), on real leaderboard data (`emulate_pair`).

The tcgen05 contract it assumes (PTX ISA, cta_group::2): the MMA's N columns are CTA 0's B rows followed
by CTA 1's; CTA r's tensor memory holds the accumulator rows of CTA r's A rows, with the scales of its
own A rows and of all N columns; one 512-byte chunk of the permuted scales is 128 rows x one 64-wide K
step. The scale bytes' path inside one CTA (shared memory -> tensor memory -> MMA) is the one-CTA
kernels' and is emulated in tests/movement_emulator.py.
"""

from __future__ import annotations

import numpy as np
import torch

from shared import scales as S
from tests.layout_probe import probed_pair
from tests.sm100_facts import K_BLOCK, MMA_K, SF_VEC

PAIR_M = 256  # rows of one 2-CTA MMA
CHUNKS = K_BLOCK // MMA_K  # 512-byte scale chunks per 128-row block and K block


def _rows_of(view, rank_tiles: int, stride_rows: int):
    """{tile index: sorted row list} of one rank's MMA partition (plain layout over a row-major tensor
    with `stride_rows` elements per row, plus the identity partition's start row)."""
    (shape, stride), start = view
    grid = np.indices(shape).reshape(len(shape), -1)
    off = (grid * np.array(stride)[:, None]).sum(0)
    rows = off // stride_rows + start[0]
    tile_mode = len(shape) - 3  # (MMA..., RestMN, RestK, L): RestMN is the third mode from the end
    out = {}
    for t in range(rank_tiles):
        sel = (grid[tile_mode] == t) & (grid[-2] == 0) & (grid[-1] == 0)
        out[t] = np.unique(rows[sel])
    return out


def pair_split(config, shape) -> dict:
    """For each rank: {"A": {tm: rows}, "B": {tn: rows}, "C": {(tm, tn): (rows, cols) per accumulator
    element}, "sfb_chunks": the chunk range of a scale block its multicast TMA fetches}."""
    m, n, k, l = shape
    p = probed_pair(config.mainloop(), shape)
    tiles_m, tiles_n = m // PAIR_M, n // config.tile_n
    split = {}
    for r in (0, 1):
        c_shape, c_stride = p[f"C{r}"][0]
        c_start = p[f"C{r}"][1]
        grid = np.indices(c_shape).reshape(len(c_shape), -1)
        off = (grid * np.array(c_stride)[:, None]).sum(0)
        # C partition: ((rows, cols), 1, 1, RestM, RestN, L) over a row-major (M, N, L) tensor
        crow, ccol = off % (m * n) // n + c_start[0], off % n + c_start[1]
        c = {}
        for tm in range(tiles_m):
            for tn in range(tiles_n):
                sel = (grid[-3] == tm) & (grid[-2] == tn) & (grid[-1] == 0)
                c[(tm, tn)] = (crow[sel].reshape(c_shape[0], c_shape[1]), ccol[sel].reshape(c_shape[0], c_shape[1]))
        split[r] = {"A": _rows_of(p[f"A{r}"], tiles_m, k), "B": _rows_of(p[f"B{r}"], tiles_n, k), "C": c}
    # The B scales' multicast TMA: the two CTAs' start coordinates differ in one mode (1: the 512-byte
    # chunk of a 128-row block, 2: the 128-row block of a wider tile); each CTA fetches its half of it.
    (start0, box), (start1, _) = p["sfb_tma0"], p["sfb_tma1"]
    atoms = -(-config.tile_n // 128)
    for r, start in ((0, start0), (1, start1)):
        mode = next((i for i, (x, y) in enumerate(zip(start0, start1)) if x != y), None)
        cover = set()
        for atom in range(atoms):
            for chunk in range(CHUNKS):
                own = (chunk, atom)[mode - 1] if mode in (1, 2) else None
                half = box[mode] // 2 if mode in (1, 2) else 0
                if own is not None and start[mode] <= own < start[mode] + half:
                    cover.add((atom, chunk))
        split[r]["sfb_cover"] = cover
    return split


def _scale_loaded(split, rows_in_tile: int, k: int):
    """[MMA column j, K value] -> whether the multicast TMA of one CTA or the other fetched that scale."""
    have = set().union(split[0]["sfb_cover"], split[1]["sfb_cover"])
    j, kk = np.arange(rows_in_tile)[:, None], np.arange(k)[None, :]
    atom, chunk = j // 128, (kk % K_BLOCK) // MMA_K
    return np.vectorize(lambda a, c: (a, c) in have)(atom, chunk)


def emulate_pair(config, data, grid_pairs: int, split: dict | None = None):
    """The pair kernel's data movement on the host: pair p of `grid_pairs` walks tiles p, p + grid_pairs,
    ...; per tile and K block each CTA r receives its rows of A and B, and half of each B scale block,
    which the multicast writes into both CTAs; the leader's MMA computes, for each CTA's rows, against
    CTA 0's then CTA 1's B rows; each CTA stores its accumulator rows where its C partition says.
    A scale chunk no CTA fetched reads as 0 (stale shared memory). `split` overrides the probed one
    (the break-on-purpose tests)."""
    from shared.inputs import tuple_names
    from shared.nvfp4 import decode_e2m1, e4m3_to_float, unpack_nibbles

    t = dict(zip(tuple_names(2), data))
    m, k2, n_l = t["a"].shape
    n, k = t["b1"].shape[0], 2 * k2
    shape = (m, n, k, n_l)
    split = split or pair_split(config, shape)

    def values(x):  # packed FP4 [rows, K/2, L] -> float64 [L, rows, K]
        return decode_e2m1(unpack_nibbles(x.permute(2, 0, 1).contiguous())).double().numpy()

    e4m3 = e4m3_to_float(torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn)).double().numpy()
    A, Bs = values(t["a"]), [values(t["b1"]), values(t["b2"])]
    sfa_store = S.permuted_storage(t["sfa_permuted"]).view(torch.uint8).numpy()
    sfb_store = [S.permuted_storage(t[f"sf{b}_permuted"]).view(torch.uint8).numpy() for b in ("b1", "b2")]
    sf_k = k // SF_VEC
    kk = np.arange(k)
    out = np.full((n_l, m, n), np.nan)
    tiles_m, tiles_n = m // PAIR_M, n // config.tile_n
    written = np.zeros((n_l, m, n), int)
    for pair in range(grid_pairs):
        tile = pair
        while tile < tiles_m * tiles_n * n_l:
            mn = tiles_m * tiles_n
            tm, tn, tl = tile % mn % tiles_m, tile % mn // tiles_m, tile // mn
            b_rows = np.concatenate([split[0]["B"][tn], split[1]["B"][tn]])  # the MMA's N order
            # each CTA's B scale stage: the parts of each K block its TMA fetched, multicast to both
            sfb_ok = _scale_loaded(split, len(b_rows), k)
            accs = {}
            for r in (0, 1):
                a_rows = split[r]["A"][tm]
                sfa = e4m3[sfa_store[S.blocked_offset(a_rows[:, None], kk[None, :] // SF_VEC, tl, m, sf_k)]]
                a = A[tl, a_rows] * sfa
                res = []
                for i in range(2):
                    sfb = e4m3[sfb_store[i][S.blocked_offset(b_rows[:, None], kk[None, :] // SF_VEC, tl, n, sf_k)]]
                    b = Bs[i][tl, b_rows] * np.where(sfb_ok, sfb, 0.0)
                    res.append(a @ b.T)  # rows: this CTA's A rows; columns: the MMA's N order
                accs[r] = res
            for r in (0, 1):
                gate, up = accs[r]
                rows, cols = split[r]["C"][(tm, tn)]
                out[tl, rows, cols] = gate / (1 + np.exp(-gate)) * up
                written[tl, rows, cols] += 1
            tile += grid_pairs
    assert (written == 1).all(), "an element of C was stored twice or never"
    return torch.from_numpy(out).to(torch.float16).permute(1, 2, 0)


def emulate_group_pair(config, data, sm_count: int):
    """The grouped "cta2" kernel's data movement on the host: A and B swapped (the MMA's rows are the
    problem's N, 256 per pair tile; its columns the group's M, tile_n per tile), the pairs walking
    schedule_sm100.pair_schedule; per group the pair split comes from the kernel's own partitions over
    the swapped operands ((N, M rounded up to the tile, K)); rows of A past M read as zeros (the TMA's
    out-of-bounds fill); each CTA stores its accumulator rows into C transposed, columns past M left
    alone. Returns the list of C (M, N, 1) per group."""
    from problems.group_gemm.schedule_sm100 import pair_schedule
    from shared.nvfp4 import decode_e2m1, e4m3_to_float, unpack_nibbles

    abc, _sf, perms, sizes = data
    e4m3 = e4m3_to_float(torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn)).double().numpy()
    outs = [np.full((m, n), np.nan) for m, n, _k, _l in sizes]
    splits = {}
    for work in pair_schedule(sizes, config.tile_n, sm_count):
        for g, tn, tm in work:
            m, n, k, _ = sizes[g]
            step = max(config.tile_n, 128)  # whole tiles and whole 128-row scale blocks
            m_pad = -(-m // step) * step
            if g not in splits:
                splits[g] = pair_split(config, (n, m_pad, k, 1))
            split = splits[g]
            a, b, _ = abc[g]
            A = np.zeros((m_pad, k))
            A[:m] = decode_e2m1(unpack_nibbles(a[:, :, 0].contiguous())).double().numpy()
            B = decode_e2m1(unpack_nibbles(b[:, :, 0].contiguous())).double().numpy()
            sfa_store = S.permuted_storage(perms[g][0]).view(torch.uint8).numpy()
            sfb_store = S.permuted_storage(perms[g][1]).view(torch.uint8).numpy()
            sf_k, kk = k // SF_VEC, np.arange(k)
            # the MMA's B operand (the problem's A): CTA 0's rows, then CTA 1's
            m_rows = np.concatenate([split[0]["B"][tm], split[1]["B"][tm]])
            sf_ok = _scale_loaded(split, len(m_rows), k)
            # scale rows past the reordered tensor's whole 128-row blocks: the TMA's zero fill
            in_blocks = m_rows < -(-m // 128) * 128
            sfa = e4m3[sfa_store[S.blocked_offset(np.where(in_blocks, m_rows, 0)[:, None], kk[None, :] // SF_VEC,
                                                  0, m, sf_k)]]
            sfa = np.where(in_blocks[:, None] & sf_ok, sfa, 0.0)
            mma_b = A[m_rows] * sfa
            for r in (0, 1):
                n_rows = split[r]["A"][tn]
                sfb = e4m3[sfb_store[S.blocked_offset(n_rows[:, None], kk[None, :] // SF_VEC, 0, n, sf_k)]]
                acc = (B[n_rows] * sfb) @ mma_b.T  # rows: this CTA's N rows; columns: the MMA's M order
                rows, cols = split[r]["C"][(tn, tm)]  # rows: N, cols: M (the transposed view)
                keep = cols < m
                assert not np.isfinite(outs[g][cols[keep], rows[keep]]).any(), "an element of C stored twice"
                outs[g][cols[keep], rows[keep]] = acc[keep]
    return [torch.from_numpy(o).to(torch.float16)[:, :, None] for o in outs]
