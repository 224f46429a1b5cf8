"""An emulator of the sm100 kernels' data movement on the host, for the sm100 readiness tests: the
tile schedule, the stage ring, the K order and every scale byte through the kernels' own layouts
(tests/layout_probe.py) into the MMA, on real leaderboard data (`emulate`)."""

from __future__ import annotations

import cutlass
import numpy as np
import torch

from shared import scales as S
from shared.cute import sm100_blockscaled as bs
from tests.layout_probe import evaluate, probed, row_and_k, sf_names
from tests.sm100_common import NUM_B
from tests.sm100_facts import CTA_M, K_BLOCK, MMA_K, SF_ATOM, SF_VEC, TMEM_LANES, TMEM_MAX_COLS


def _sf_maps(p, name_g, name_s, name_t, atoms):
    """For one operand's scales: per (tile, K block, batch) the global byte offsets of a stage in
    (row, k) order, the stage's shared-memory offsets, and the tensor-memory addresses (lane,
    column, byte) of every replica, all as arrays indexed [row, k]."""
    rows = atoms * SF_ATOM
    cg, og = evaluate(p[name_g], sf_names(atoms, "global"))
    rg, kg = row_and_k(cg)
    glob_off = np.zeros((cg["tmn"].max() + 1, cg["tk"].max() + 1, cg["l"].max() + 1, rows, K_BLOCK), np.int64)
    glob_off[cg["tmn"], cg["tk"], cg["l"], rg, kg] = og
    cs, os_ = evaluate(p[name_s], sf_names(atoms, "smem"))
    rs, ks = row_and_k(cs)
    smem_off = np.zeros((rows, K_BLOCK), np.int64)
    smem_off[rs, ks] = os_
    ct, ot = evaluate(p[name_t], sf_names(atoms, "tmem"))
    rt, kt = ct["m0"] + 32 * ct["m1"], ct["k0"] + SF_VEC * ct["k1"] + MMA_K * ct["kb"]
    return glob_off, smem_off, (rt, kt, ot)


def emulate(problem: str, config, data, grid: int):
    """The kernel's data movement on the host: CTA b of `grid` walks the tiles TileScheduler gives it;
    per tile and K block the stage (ring index = the CTA's running K-block count mod stages) receives
    the operands' bytes from global memory through the kernels' own scale views, tcgen05.cp moves the
    scale stage into a tensor-memory image through the kernels' TMEM layouts, and every MMA of the
    K block takes row r's scales from (lane r % 32, column base + r // 32, byte) of that image, at the
    columns and shifts the mainloop computes. A and B tiles move as logical tiles (their swizzled
    shared-memory form is the MMA descriptor's business, not evaluated here)."""
    from shared.inputs import tuple_names
    from shared.nvfp4 import decode_e2m1, e4m3_to_float, unpack_nibbles

    num_b, tile_n = NUM_B[problem], config.tile_n
    t = dict(zip(tuple_names(num_b), data))
    b_names = tuple_names(num_b)[1 : 1 + num_b]
    m, k2, n_l = t["a"].shape
    n, k = t[b_names[0]].shape[0], 2 * k2
    p = probed(config.mainloop(), (m, n, k, n_l))
    ml = p["ml"]
    atoms = -(-tile_n // SF_ATOM)
    stages = ml.num_ab_stage
    sfa_maps = _sf_maps(p, "gSFA", "sfa_smem", "sfa_tmem", 1)
    sfb_maps = _sf_maps(p, "gSFB", "sfb_smem", "sfb_tmem", atoms)
    ncols = TMEM_MAX_COLS

    def values(x):  # packed FP4 [rows, K/2, L] -> float64 [L, rows, K]
        return decode_e2m1(unpack_nibbles(x.permute(2, 0, 1).contiguous())).double().numpy()

    A = values(t["a"])
    Bs = [values(t[b]) for b in b_names]
    storage = {name: S.permuted_storage(t[name]).view(torch.uint8).numpy()
               for name in ["sfa_permuted", *(f"sf{b}_permuted" for b in b_names)]}
    e4m3 = e4m3_to_float(torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn)).double().numpy()
    out = np.full((n_l, m, n), np.nan)
    tiles_m, tiles_n = m // CTA_M, n // tile_n
    sched = bs.TileScheduler(tiles_m, tiles_n, n_l)
    done = np.zeros((n_l, tiles_m, tiles_n), int)
    for cta in range(grid):
        smem = {name: np.zeros((stages, 2048 * (1 if name == "sfa_permuted" else atoms)), np.uint8) for name in storage}
        count = 0  # K blocks this CTA has loaded: the pipeline state
        tile = cta
        while tile < tiles_m * tiles_n * n_l:
            tm, tn, tl = (int(x) for x in sched.coord(cutlass.Int32(tile)))
            done[tl, tm, tn] += 1
            accs = [np.zeros((CTA_M, tile_n)) for _ in range(num_b)]
            shift = int(ml.sfb_shift(tn))
            sfa_col, sfb_cols = ml.sf_tmem_columns(shift)  # where the MMAs read
            sfb_base = ml.sf_tmem_columns(0)[1]  # where tcgen05.cp writes (the unshifted views)
            for kt in range(k // K_BLOCK):
                stage = count % stages
                count += 1
                tmem = np.zeros((TMEM_LANES, ncols * 4), np.uint8)  # byte image of the columns used
                # TMA: each scale stage from its global view; tcgen05.cp: stage -> TMEM image
                for name, (g, s_off, (rt, kk, ot)), row_tile, base in [
                    ("sfa_permuted", sfa_maps, tm, sfa_col),
                    *[(f"sf{b}_permuted", sfb_maps, tn // ml.sfb_tile_div, sfb_base[i]) for i, b in enumerate(b_names)],
                ]:
                    smem[name][stage, s_off] = storage[name][g[row_tile, kt, tl]]
                    lane, col, byte = ot >> 18, (ot & 0x3FFFF) >> 2, ot & 3
                    tmem[lane, (base + col) * 4 + byte] = smem[name][stage, s_off[rt, kk]]
                # the MMAs of this K block, in order
                for kb in range(K_BLOCK // MMA_K):
                    ks = slice(kt * K_BLOCK + kb * MMA_K, kt * K_BLOCK + (kb + 1) * MMA_K)
                    r = np.arange(CTA_M)
                    sub = np.arange(MMA_K) // SF_VEC
                    sfa = e4m3[tmem[r[:, None] % 32, (sfa_col + 4 * kb + r[:, None] // 32) * 4 + sub[None, :]]]
                    a = A[tl, tm * CTA_M + r][:, ks] * sfa
                    for i in range(num_b):
                        nn = np.arange(tile_n)
                        col = sfb_cols[i] + 4 * atoms * kb + nn[:, None] // 32
                        sfb = e4m3[tmem[nn[:, None] % 32, col * 4 + sub[None, :]]]
                        b = Bs[i][tl, tn * tile_n + nn][:, ks] * sfb
                        accs[i] += a @ b.T
            rows = slice(tm * CTA_M, (tm + 1) * CTA_M)
            cols = slice(tn * tile_n, (tn + 1) * tile_n)
            if num_b == 1:
                out[tl, rows, cols] = accs[0]
            else:
                g = accs[0]
                out[tl, rows, cols] = g / (1 + np.exp(-g)) * accs[1]
            tile += grid
    assert (done == 1).all(), "a tile was computed twice or never"
    return torch.from_numpy(out).to(torch.float16).permute(1, 2, 0)


# ------------------------------------------------------------------------------------- split-K
class SplitKTrace:
    """What `emulate_splitk` saw: C, and per output tile the times each K block was accumulated
    (`k_blocks` [tiles, K blocks]), each exchange slot written and read (`written`, `read` [tiles,
    ranks, slots]), each rank's partial of each subtile reduced into C (`reduced` [tiles, ranks,
    subtiles]) and each element of C stored (`stored` [L, M, N])."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def emulate_splitk(config, m: int, n: int, k: int, l: int, seed: int = 0) -> SplitKTrace:
    """The splitk_swap variant's data movement on the host, walking the kernel's own pieces
    (shared/cute/sm100_splitk.py): cluster y takes tile SplitKScheduler.coord(y); its rank r's TMA warp
    loads K block `k_block(tile, i)` for i < `k_tiles(tile, K blocks)` and its MMAs accumulate them
    into the swapped partial D_r[n, m]; the epilogue of rank r keeps the subtiles `splitk_owner` gives
    it and stores every other one, 16-byte vector by vector, into the owner's exchange buffer at
    `splitk_slot` (the buffer holds the kernel's `exchange_bytes`); each owner adds its buffer's slots
    and stores fp16-free (exact) sums to C through the transposed view. Operands are small random
    integers, so every sum is exact and C must equal A . B^T bit for bit."""
    from problems.gemm.kernel_sm100 import NvFp4GemmSm100SplitK
    from shared.cute import sm100_splitk as sk

    kern = NvFp4GemmSm100SplitK(config)
    splits, subtiles, vectors = kern.splits, kern.subtiles, kern.vectors
    threads, cols = 32 * len(bs.EPILOGUE_WARPS), sk.EPI_SUBTILE
    n_slots = kern.exchange_bytes // (16 * threads)
    rng = np.random.default_rng(seed)
    A = rng.integers(-3, 4, (l, m, k)).astype(np.float64)
    B = rng.integers(-3, 4, (l, n, k)).astype(np.float64)
    tiles_m, tiles_n, kc = n // CTA_M, m // config.tile_n, k // K_BLOCK  # the swapped tile counts
    n_tiles = tiles_m * tiles_n * l
    C = np.full((l, m, n), np.nan)
    k_blocks = np.zeros((n_tiles, kc), int)
    written = np.zeros((n_tiles, splits, n_slots), int)
    read = np.zeros((n_tiles, splits, n_slots), int)
    reduced = np.zeros((n_tiles, splits, subtiles), int)
    stored = np.zeros((l, m, n), int)
    for tile in range(n_tiles):  # one cluster per tile
        partial, buffers = [], np.full((splits, n_slots, threads, 4), np.nan)
        for r in range(splits):
            sched = sk.SplitKScheduler(tiles_m, tiles_n, l, splits, kc, split=r)
            tm, tn, tl = (int(x) for x in sched.coord(cutlass.Int32(tile)))
            rows = slice(tm * CTA_M, (tm + 1) * CTA_M)  # N rows: the MMA's A
            mcols = slice(tn * config.tile_n, (tn + 1) * config.tile_n)  # M: the MMA's B
            acc = np.zeros((CTA_M, config.tile_n))
            for i in range(int(sched.k_tiles(cutlass.Int32(tile), cutlass.Int32(kc)))):
                kb = int(sched.k_block(cutlass.Int32(tile), cutlass.Int32(i)))
                k_blocks[tile, kb] += 1
                ks = slice(kb * K_BLOCK, (kb + 1) * K_BLOCK)
                acc += B[tl, rows, ks] @ A[tl, mcols, ks].T
            partial.append(acc)
        for r in range(splits):  # phase 1: sends (thread t holds accumulator row t)
            for sub in range(subtiles):
                owner = sk.splitk_owner(sub, splits)
                if owner == r:
                    continue
                slot = sk.splitk_slot(r, owner, sub, splits, subtiles) * vectors
                for v in range(vectors):
                    assert 0 <= slot + v < n_slots, f"slot {slot + v} outside the {n_slots}-slot exchange buffer"
                    buffers[owner, slot + v] = partial[r][:, sub * cols + 4 * v : sub * cols + 4 * v + 4]
                    written[tile, owner, slot + v] += 1
        for r in range(splits):  # phase 2, after the cluster barrier: the owners add and store
            for sub in range(subtiles):
                if sk.splitk_owner(sub, splits) != r:
                    continue
                kept = partial[r][:, sub * cols : (sub + 1) * cols].copy()
                for sender in range(splits):
                    if sender == r:
                        continue
                    slot = sk.splitk_slot(sender, r, sub, splits, subtiles) * vectors
                    for v in range(vectors):
                        kept[:, 4 * v : 4 * v + 4] += buffers[r, slot + v]
                        read[tile, r, slot + v] += 1
                    reduced[tile, sender, sub] += 1
                reduced[tile, r, sub] += 1  # the owner's own partial, from registers
                ms = np.arange(tn * config.tile_n + sub * cols, tn * config.tile_n + (sub + 1) * cols)
                ns = np.arange(tm * CTA_M, (tm + 1) * CTA_M)
                C[tl, ms[None, :], ns[:, None]] = kept  # D[n, m] -> C[m, n]
                stored[tl, ms[None, :], ns[:, None]] += 1
    ref = np.einsum("lmk,lnk->lmn", A, B)
    return SplitKTrace(C=C, ref=ref, k_blocks=k_blocks, written=written, read=read, reduced=reduced,
                       stored=stored, n_slots=n_slots)


def check_splitk_trace(t: SplitKTrace) -> None:
    """AssertionError unless every K block of every tile was accumulated by exactly one rank, every
    exchange slot in use was written once and read once, every rank's partial of every subtile was
    reduced exactly once, every element of C stored once, and C = A . B^T exactly."""
    bad = np.argwhere(t.k_blocks != 1)
    assert not len(bad), f"(tile, K block) accumulated {t.k_blocks[tuple(bad[0])]} times: {bad[:4].tolist()}"
    assert ((t.written == t.read) & (t.written <= 1)).all(), "an exchange slot written twice, or written and not read"
    bad = np.argwhere(t.reduced != 1)
    assert not len(bad), f"(tile, rank, subtile) partial reduced {t.reduced[tuple(bad[0])]} times: {bad[:4].tolist()}"
    assert (t.stored == 1).all(), "an element of C stored twice or never"
    assert np.array_equal(t.C, t.ref), "C differs from A . B^T"
