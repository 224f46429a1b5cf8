"""Hopper (sm_90a) block-scaled NVFP4 GEMM shared by `gemm`, `dual_gemm` and `group_gemm`: the kernel.

Hopper has no FP4 tensor cores, so both operands are decoded exactly to fp16 inside the kernel and
multiplied with fp16 wgmma into fp32 accumulators. Why fp16 and not bf16: an E2M1 value (2
significant bits, 0.5..6) times an E4M3 scale (4 significant bits, 2^-9..448) needs at most 6
significant bits and lies in [2^-10, 2688]: inside fp16's *normal* range, so fp16 holds it exactly
(bf16 would too), and the decode below is shorter in fp16. Times a power of two down to 2^-14 (the
decode through fp16 bit patterns, below) it is still an fp16, subnormal at worst. The fp16 x fp16
products are exact in the fp32 accumulator. FP8 wgmma is not exact (an E2M1 x E4M3 product does
not fit E4M3).

Roles. Each product has an S side, decoded once per CTA by decoder warps into a 128B-swizzled fp16
K-major shared-memory ring that every consumer warpgroup reads (the wgmma B operand), and an R side,
decoded by the consumers straight into registers (register-sourced wgmma, no shared-memory round
trip). By default S = A (M rows) and R = B (N rows, one or two of them): the GEMM is computed
transposed, D[n, m] = sum_k B[n, k] A[m, k], and one decoded A tile serves both B operands. With
`Sm90Config.swap_ab`, S = B1 and B2 and R = A: D[m, n] is C itself, each A fragment feeds both
products, and the N tile (smem_rows) need not be a multiple of 64. The names below say A and B for
the default roles. CTA = n_dwg + n_cwg warpgroups:
  warp 0                TMA producer: packed FP4 bytes of A and B (128B-swizzled, one 256-K tile
                        per stage = 128 bytes per row) and their plain E4M3 scales (16 bytes per
                        row per stage) into two rings (mbarrier pipelines): `lda` for A, freed
                        by the decoders, and `ldb` for B, freed by the consumers; A is issued
                        one K tile ahead of B.
  the other 4*n_dwg-1 warps of the first n_dwg warpgroups: A decoders, each 256-K stage -> four
                        64-K fp16 sub-tiles of A in the `a16` ring, `a_batch` sub-tiles per proxy
                        fence and barrier hand-off (a hand-off per sub-tile was slower).
                        A unit (one row, 32 K) is ~92 instructions, 60 of them the decode; its
                        indices advance by adds, not a division per unit: the decoders share the
                        schedulers with the consumers, so each decoder instruction costs them time.
                        With owned_rows a thread keeps one row, its addresses thread constants
                        (~72 instructions a unit): faster on some configs, slower on others
                        (measured per config: the problems' config.py).
  the last n_cwg warpgroups: consumers, 64 rows of each B per warpgroup; per round (chunk_k = 32
                        or 64 K) decode the warpgroup's B fragments into registers (2 register
                        sets, so the decode of round j+1 overlaps the wgmma of round j; the packed
                        words of round j+1 are loaded before the wgmma of j; a round waits for its
                        decoded A sub-tile only after its own decode, just before its wgmma),
                        wgmma m64 x smem_rows x k16, then the epilogue straight from registers (C
                        is written through a transposed view, two lanes swapping halves so that
                        every store is a 4-byte word of two adjacent columns), or with
                        staged_epilogue those words into the warpgroup's own rows of the last
                        packed-R stage and out as 16-byte vectors of whole 128-byte row segments
                        of C (fewer and whole-line stores in the call's tail).
                        A thread's scales come in one 64-bit load per row, operand and half stage,
                        and one conversion serves its two rows (fewer consumer instructions than
                        byte loads per chunk). Measurements of these choices: results/TUNING.md.
setmaxnreg moves registers from the decoder warpgroups to the consumers (min_blocks_per_mp=1 lets
ptxas know the count at entry); the targets must fit the registers the CTA got at launch
(Sm90Config.check), or the consumers' setmaxnreg waits forever.

K order. A GEMM may visit K in any order as long as A and B use the same one. Inside every 32-K
chunk (16 bytes per row = 4 words of 8 nibbles) the decode of word c yields four f16x2 pairs, pair p
holding nibbles PAIR_NIBBLES[p] = (0, 2), (4, 6), (1, 3), (5, 7), and pair p lands at fp16 positions
8p + 2c + {0, 1}. That lets a consumer thread read exactly its own word c (the wgmma fragment
columns 2c, 2c+1, 2c+8, 2c+9) and a decoder thread turn one 16-byte load into four 16-byte stores;
both operands use the same decode, so they agree on the order.

Decode of one word (8 codes at once; fp4_decode.py, exact, 15 instructions per 8 values): on the
S side `decode_e2m1x8_f16`, E4M3 bytes converted to f16x2 and multiplied by scale * 2^6; on the R
side (Sm90Config.decode_bits) `decode_e2m1x8_f16_bits`, fp16 bit patterns worth e2m1 * 2^-14 put in
place by byte permutes instead of conversions, times the scale as converted (one multiply fewer per
two scales); the epilogue multiplies the fp32 sums by 2^14 (`acc`). The same products up to powers
of two, so the same C bit for bit (tested); measured in results/TUNING.md.

Host side: the config is sm90_config.py (free of the DSL); the checks, the compile cache and the
launch are the host layer's (sm90_host.py). Roles as methods: `producer`, `decoders`, `consumers`.

A ptxas pitfall, kept fixed by tests: with a wait_group placed after the K loop, ptxas scheduled the
epilogue's fp32 -> fp16 conversions of the accumulators above it (reading the last group's
accumulators before they were final: wrong results for GEMM, deterministic). The last K tile
therefore drains with wait_group(0) inside the loop; tests/sm90_common.py scans the SASS for any
accumulator access while an HGMMA group may be pending.

Split-K (`splits=2`, for grids that would leave half the SMs idle): a cluster of 2 CTAs along grid
z shares one output tile, each taking half of the K tiles. After the mainloop every thread of both
CTAs meets at a cluster barrier; each CTA then finishes half of the tile's columns: its consumers
store the fp32 sums of the other half into the other CTA's operand buffers through distributed
shared memory (mapa + st.shared::cluster), a second cluster barrier publishes them, and each CTA
adds what it received and runs the epilogue on its half. The exchange itself (barrier, sends, adds)
is shared/cute/cluster_reduce.py, which the sm100 split-K GEMM uses too. With `Sm90Config.async_handover` the
sums go into a receive buffer of their own beside the rings, sent with st.async, each vector completing its bytes
on the owner's transaction barrier (initialized in both CTAs before the arrive of one cluster barrier at the start,
whose wait each thread reaches later: the consumers before they send): each CTA waits on its own barrier only, and
no warp of either CTA waits for the other before its first load. The sum of two fp32 partials is not
bitwise the one-CTA sum, but both are fp32 sums of exact products (checked against the reference
with both generators on the H100); for the dual GEMM the nonlinear epilogue sees the full sums.

Pairs of R tiles (`Sm90Config.r_tiles = 2`, one B operand): the R side is two consecutive tiles of B,
each with its own ring buffers and accumulator, as B1 and B2 in the dual GEMM, so one decoded A tile
serves twice the rows of B. A CTA running a list of tiles (the grouped GEMM) may meet tiles of one
B tile: their consumers run a second copy of the K loop that decodes and multiplies one (a branch per
round would make ptxas drain the wgmma pipeline), and the producer counts the absent tile's bytes as
arrived on the stage's barrier (mbarrier.complete_tx) instead of loading them. With `splits=2` too, the
split's hand-over carries both accumulators; a CTA then runs one tile (the hand-over reuses the operand
buffers once, after the mainloop).

Partial S tiles. The S side's extent (M, or N with swap_ab) need not be a multiple of smem_rows:
TMA fills the rows of the last tile that lie past the tensor with zeros (their products are zero)
and the epilogue stores only the columns that exist. That lets a shape pick a tile height for its
grid: 512 rows in five tiles of 104 give 120 CTAs for N = 3072 where tiles of 128 give 96. A kernel
with `skip_rows_past_extent` (the grouped GEMM) does not decode those rows at all, and one with
`Sm90Config.half_s_tiles` multiplies a tile with at most half its rows inside the extent by wgmmas of
half the N, into accumulators of their own (`_consume_tile`, once per MMA width).

Shared S decode (`Sm90Config.share_s`): the two CTAs of a cluster along the R side hold the same S tile;
each decodes part of its rows and copies them into the other's decoded ring (sm90_decoded_ring.py), so
the decoders, which share the schedulers with the consumers, issue about half the instructions.

Constraints: K % 256 == 0 (K % 512 with splits=2), the R side's extent a multiple of reg_rows
(N % tile_n == 0, or M % tile_m == 0 with swap_ab), L == 1, the leaderboard layouts (K-major packed
values, plain [rows, K/16] scales). Nothing here writes an intermediate tensor to device memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass import Float16, Float32, Int32, Int64, Uint8
from cutlass.cute.nvgpu import cpasync, warpgroup

from shared.cute import launch_queue
from shared.cute.cluster_reduce import add_partial, cluster_handshake, send_partial
from shared.cute.fp4_decode import (
    SCALE_POW2,
    decode_e2m1x8_f16,
    decode_e2m1x8_f16_bits,
    e4m3x2_to_f16x2_pair,
    f16x2_pow2,
)
from shared.cute.ptx import (
    clock32,
    ld_shared_u16,
    ld_shared_u32,
    ld_shared_v2,
    ld_shared_v4,
    mbarrier_complete_tx,
    prmt,
    st_global_f16x2,
    st_global_f16x2_exchanged,
    st_global_v4_if,
    st_shared_f16x2_exchanged,
    st_shared_v4,
    store_if_equal,
    timeline_stamp,
    timeline_values,
)
from shared.cute.sm90_config import K_SUB, ROW_BYTES, SF_ROW_BYTES, TIMELINE_STAMPS, Sm90Config, row_owners
from shared.cute.sm90_decoded_ring import DecodedRing


@dataclass(frozen=True)
class RingAddresses:
    """32-bit shared addresses of the CTA's rings and their byte strides, for the hand-written
    decode (which applies the 128B swizzle itself): packed S (s4) and R (r4) values, their scales
    (sfs, sfr), the decoded S ring (s16). *_stage: one ring stage of one operand; *_bytes: a whole
    ring of one operand; s16_sub: one 64-K sub-tile of one S operand."""

    s4_base: object
    r4_base: object
    sfs_base: object
    sfr_base: object
    s16_base: object
    s4_stage: int
    r4_stage: int
    sfs_stage: int
    sfr_stage: int
    s16_sub: int
    s4_bytes: int
    r4_bytes: int
    sfs_bytes: int
    sfr_bytes: int


class OwnedUnit(NamedTuple):
    """One unit of a batch of an owned row (Sm90Config.owned_rows): the stage of packed S of its operand and
    that stage's scales, its chunk's offset e from the owner's first chunk, the decoded ring of its operand,
    its sub-tile in the batch and its chunk q of the owner's ones in that sub-tile."""

    src_stage: object
    sf_stage: object
    e: int
    s16_op: object
    sub: int
    q: int


@dataclass(frozen=True)
class TileWork:
    """One output tile of a CTA's list (Sm90BlockScaledGemm._work): D's (r, s) view, the K tiles of the
    whole product, this CTA's K tiles kt_first .. kt_first + kt_own - 1, the tile's S and R indices
    (bid_r: its first reg_rows-row tile of the R side), the CTA's part of a split-K (dealt K: the count
    of later CTAs that hold some of the tile's K tiles), and None (TMA through the atoms' own
    descriptors) or, per operand, the global-memory addresses of its (values, scales) TMA descriptors."""

    mD: object
    k_tiles: object
    kt_own: object
    kt_first: object
    bid_s: object
    bid_r: object
    split: object
    descs: object
    work: object = None  # dealt K: the workspace's address (sm90_deal_k.py); else None


@dataclass(frozen=True)
class _MmaSet:
    """What the consumers multiply a tile with: the tiled wgmma and this thread's slice of it, the decoded
    S ring as its B fragments, the accumulators' fragment shape, the S rows they cover (the whole S tile,
    or its first half: half_s_tiles), and the accumulators (R operand r times S operand s at r * ns + s)."""

    tiled_mma: object
    thr_mma: object
    tCrS: object
    acc_shape: object
    rows_s: int
    accs: list


class Sm90BlockScaledGemm:
    """Fused block-scaled NVFP4 GEMM with `num_b` B operands sharing A (1: GEMM, 2: dual GEMM).

    Subclasses set `num_b` and define `epilogue_value(self, accs, i) -> Float32` (element i of the
    accumulator fragments -> the value written to C as fp16).
    """

    num_b = 1
    # Scales as the leaderboard's reordered copies hold them (LEADERBOARD.md 2.5: per 128 rows and
    # 256 K, one contiguous 2048-byte block of four 512-byte atoms) instead of plain [rows, K/16]
    # rows; needs 128-row tiles on both sides (grouped GEMM).
    blocked_sf = False
    # Skip decoding the S rows past the operand's extent (decoders()). Only the grouped GEMM, whose
    # tiles past a group's M are common: in the GEMMs the test cost more than it saved (H100; results/TUNING.md).
    skip_rows_past_extent = False
    # A CTA runs a list of tiles (the grouped GEMM's _work): its S tiles need not match the cluster
    # neighbour's, so the decode of S cannot be shared (Sm90Config.share_s).
    tile_lists = False
    # Sm90Config.timeline's stamps, in buffer order: the first thread of the CTA at entry and once every grid
    # before is complete (resident); the producer's first and last R stage issued; the first decoder thread's
    # first and last packed S stage arrived and its first decoded S published; the first consumer thread's
    # first and last R stage arrived and first decoded S ready; each end of the first (and last) consumer
    # warpgroup's K loop, the split's sums added, the epilogue's stores issued. Then two of summed %clock cycles
    # (not times): the first consumer thread's in its waits for R stages, decoded S and wgmmas over its K loop,
    # the first decoder thread's in its waits for packed S stages and free decoded slots.
    STAMPS = ("entry", "resident", "r_load_first", "r_load_last", "s_stage_first", "s_stage_last", "s_published_first",
              "r_stage_first", "s_ready_first", "r_stage_last", "loop_done", "sums_added", "stored",
              "loop_done_wg_last", "stored_wg_last", "consumer_waits", "decoder_waits")

    def __init__(self, config: Sm90Config):
        config.check(self.num_b)
        if self.blocked_sf and (config.smem_rows != 128 or config.reg_rows != 128 or config.swap_ab):
            # a stage's scale box is one whole 128-row block per side (the block's rows interleave)
            raise ValueError(f"{type(self).__name__}: blocked scales need 128-row tiles on both sides, got {config}")
        if (config.share_s or config.staged_epilogue or config.async_handover or config.l2_early) and self.tile_lists:
            # async_handover: its receive barrier has one phase and its cluster barrier one arrive per thread;
            # l2_early: the first tile's place is in tables that the kernel before this one may still write
            raise ValueError(f"{type(self).__name__}: share_s, staged_epilogue, async_handover and l2_early need one "
                             f"output tile per CTA, got {config}")
        self.cfg = config
        self.rows_s = config.smem_rows
        self.rows_r = config.reg_rows
        self.n_cwg = config.n_cwg
        self.stages = config.stages
        self.a_slots = config.a_slots
        self.ns, self.nr = config.operands(self.num_b)
        self.unit_cols = 2 * config.a_batch  # decoder units per row, S operand and batch (a power of two)
        # Every K tile takes 4 slots of the decoded ring, so where a_slots % 4 == 0 its 4 sub-tiles never wrap
        # around it: their slots are the K tile's first slot plus 0..3 (compile-time offsets of the barrier and
        # descriptor addresses), and the decoders' and consumers' ring states advance by 4 once per K tile instead
        # of an index increment, wrap test and phase select per sub-tile (measured: results/README.md, fifteenth
        # and sixteenth sessions)
        self.ring_by_k_tile = config.a_slots % 4 == 0
        # the power of two that the sums of products lack (acc): 2^-14 on R values, 2^-7 on S values decoded
        # through fp16 bit patterns (fp4_decode.SCALE_POW2)
        self.sum_pow2 = sum(14 - SCALE_POW2[side] for side, bit in (("r", 1), ("s", 2)) if config.decode_bits & bit)

    @staticmethod
    def can_implement(m: int, n: int, k: int, l: int, config: Sm90Config) -> bool:
        return config.shape_error(m, n, k, l) is None

    def _stamp_address(self, name: str):
        """Sm90Config.timeline: where this CTA's stamp `name` goes (16 bytes each, TIMELINE_STAMPS per CTA)."""
        bx, by, bz = cute.arch.block_idx()
        gx, gy, _ = cute.arch.grid_dim()
        slot = (bx + gx * (by + gy * bz)) * TIMELINE_STAMPS + self.STAMPS.index(name)
        return Int64(self.cfg.timeline) + Int64(slot) * 16

    def _stamp(self, name: str, on) -> None:
        """Sm90Config.timeline (timing probes only): where `on` holds, this CTA's stamp `name`; no code
        without a timeline."""
        if cutlass.const_expr(self.cfg.timeline):
            timeline_stamp(self._stamp_address(name), Int32(on))

    def _stamp_values(self, name: str, on, a, b, c) -> None:
        """Sm90Config.timeline: where `on` holds, the values a, b, c as this CTA's stamp `name`."""
        if cutlass.const_expr(self.cfg.timeline):
            timeline_values(self._stamp_address(name), Int32(on), a, b, c)

    def _timed(self, total, wait):
        """wait(), and with Sm90Config.timeline `total` plus the %clock cycles it took (else `total`)."""
        if cutlass.const_expr(self.cfg.timeline):
            t0 = clock32()
            wait()
            return total + (clock32() - t0)
        wait()
        return total

    # ---------------------------------------------------------------- host
    def _smem_layouts(self):
        # Packed FP4 bytes: rows of 128 bytes, 128B swizzle (16-byte chunk ^= row % 8), so that
        # eight consecutive rows read at the same K hit eight different bank groups. One ring per
        # side; a ring holds the tiles of all operands of its side, one after the other.
        u8_atom = cute.make_composed_layout(
            cute.make_swizzle(3, 4, 3), 0, cute.make_layout((8, ROW_BYTES), stride=(ROW_BYTES, 1)))
        self.sS4_layout = cute.tile_to_shape(u8_atom, (self.rows_s, ROW_BYTES, self.cfg.a_ring), order=(0, 1, 2))
        self.sR4_layout = cute.tile_to_shape(u8_atom, (self.rows_r, ROW_BYTES, self.stages), order=(0, 1, 2))
        # A stage of scales: plain rows of 16 bytes, or (blocked_sf) the 2048-byte block of a 128-row
        # tile as 16 rows of 128 bytes (a TMA box side is at most 256 elements)
        sf_shape = (lambda rows: (rows // 8, 128)) if self.blocked_sf else (lambda rows: (rows, SF_ROW_BYTES))
        self.sSFS_layout = cute.make_layout(
            (*sf_shape(self.rows_s), self.cfg.a_ring), stride=(sf_shape(self.rows_s)[1], 1, self.rows_s * SF_ROW_BYTES))
        self.sSFR_layout = cute.make_layout(
            (*sf_shape(self.rows_r), self.stages), stride=(sf_shape(self.rows_r)[1], 1, self.rows_r * SF_ROW_BYTES))
        f16_atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, Float16)
        # decoded ring: sub-tile slot * ns + s holds S operand s of ring slot `slot`
        self.sS16_layout = cute.tile_to_shape(f16_atom, (self.rows_s, K_SUB, self.a_slots * self.ns), order=(0, 1, 2))

    def _roles(self, a, bs, pC, m, n):
        """Host side of the roles: the TMA atoms (tma, gmem view) of packed values and of scales of
        every operand, S side first (the kernel takes 3 operands; for a GEMM the last is a copy), the
        (r, s) view of C that the accumulators D[r, s] map onto, and the grid. a and each of bs are
        (packed values, scales) tensors."""
        if self.cfg.swap_ab:
            s_ops, r_ops = list(bs), [a]
            mD = cute.make_tensor(pC, cute.make_layout((m, n), stride=(n, 1)))  # C itself
            s_total, r_total = n, m
        else:
            s_ops, r_ops = [a], list(bs) * self.cfg.r_tiles
            mD = cute.make_tensor(pC, cute.make_layout((n, m), stride=(1, n)))  # C transposed
            s_total, r_total = m, n
        g2s = cpasync.CopyBulkTensorTileG2SOp()
        one = lambda lay: cute.slice_(lay, (None, None, 0))  # noqa: E731
        sides = [(op, self.sS4_layout, self.sSFS_layout, self.rows_s) for op in s_ops]
        sides += [(op, self.sR4_layout, self.sSFR_layout, self.rows_r) for op in r_ops]
        atoms = []
        for (vals, sfs), lay4, lay_sf, rows in sides:
            atoms += list(cpasync.make_tiled_tma_atom(g2s, vals, one(lay4), (rows, ROW_BYTES)))
            sf_box = (rows // 8, 128) if self.blocked_sf else (rows, SF_ROW_BYTES)
            atoms += list(cpasync.make_tiled_tma_atom(g2s, sfs, one(lay_sf), sf_box))
        atoms += atoms[-4:] * (3 - len(sides))
        r_rows = self.rows_r * self.cfg.r_tiles
        grid = ((s_total + self.rows_s - 1) // self.rows_s, r_total // r_rows, self.cfg.splits)
        return atoms, mD, grid

    @cute.jit
    def __call__(self, pA: cute.Pointer, pB1: cute.Pointer, pB2: cute.Pointer, pSFA: cute.Pointer,
                 pSFB1: cute.Pointer, pSFB2: cute.Pointer, pC: cute.Pointer,
                 m: Int32, n: Int32, k_tiles: Int32, queue: launch_queue.Queue):
        """Launch on raw device pointers (L = 1) on `queue`; k_tiles = K / 256."""
        atoms, mD, grid = self._call_roles(pA, pB1, pB2, pSFA, pSFB1, pSFB2, pC, m, n, k_tiles)
        self.shared_storage = self._shared_storage()
        launch_queue.launch(self.kernel(*atoms, mD, self._tiled_mma(), k_tiles), queue,
                            grid=grid, block=[self.cfg.threads, 1, 1],
                            cluster=[1, 2 if self.cfg.share_s else 1, self.cfg.splits],
                            min_blocks_per_mp=1, use_pdl=self.cfg.pdl)

    def _call_roles(self, pA, pB1, pB2, pSFA, pSFB1, pSFB2, pC, m, n, k_tiles):
        """_roles of a call on raw device pointers: (TMA atoms, D's view, grid of one CTA per tile)."""
        self._smem_layouts()
        row_b = k_tiles * ROW_BYTES  # written as products so that TMA sees 16-byte-divisible strides
        row_sf = k_tiles * SF_ROW_BYTES

        def rows_of(p, rows, width):
            return cute.make_tensor(p, cute.make_layout((rows, width), stride=(width, 1)))

        a = (rows_of(pA, m, row_b), rows_of(pSFA, m, row_sf))
        bs = [(rows_of(pB1, n, row_b), rows_of(pSFB1, n, row_sf)),
              (rows_of(pB2, n, row_b), rows_of(pSFB2, n, row_sf))][: self.num_b]
        return self._roles(a, bs, pC, m, n)

    def _tiled_mma(self, rows_s=None):
        """wgmma 64 x rows_s x 16 (default: the whole S tile), fp16 operands (the R side from registers),
        fp32 accumulators."""
        return sm90_utils.make_trivial_tiled_mma(
            Float16, Float16, warpgroup.OperandMajorMode.K, warpgroup.OperandMajorMode.K, Float32,
            (1, 1, 1), tiler_mn=(64, rows_s or self.rows_s), a_source=warpgroup.OperandSource.RMEM)

    def _shared_storage(self):
        """The CTA's shared memory: the three rings' barriers and buffers (after _smem_layouts)."""
        S, SA, R = self.stages, self.cfg.a_ring, self.a_slots

        mem, align = cute.struct.MemRange, cute.struct.Align
        fields = {  # a class body's annotations would be strings here (postponed evaluation)
            "lda_mbar": mem[cutlass.Int64, 2 * SA],
            "ldb_mbar": mem[cutlass.Int64, 2 * S],
            "a16_mbar": mem[cutlass.Int64, 2 * R],
            "sS4": align[mem[Uint8, cute.cosize(self.sS4_layout) * self.ns], 1024],
            "sR4": align[mem[Uint8, cute.cosize(self.sR4_layout) * self.nr], 1024],
            "sS16": align[mem[Float16, cute.cosize(self.sS16_layout)], 1024],
            "sSFS": align[mem[Uint8, cute.cosize(self.sSFS_layout) * self.ns], 128],
            "sSFR": align[mem[Uint8, cute.cosize(self.sSFR_layout) * self.nr], 128],
        }
        if self.cfg.async_handover:  # the split's receive buffer and its transaction barrier
            fields["xch_mbar"] = mem[cutlass.Int64, 1]
            fields["xch"] = align[mem[Uint8, self.cfg.handover_bytes(self.num_b)], 128]
        return cute.struct(type("SharedStorage", (), {"__annotations__": fields}))

    # ---------------------------------------------------------------- device
    @staticmethod
    def _ring_views(buf, layout, count):
        """`count` swizzled ring tensors laid one after the other in the Uint8 buffer `buf`."""
        size = cute.cosize(layout)
        return [cute.make_tensor(cute.recast_ptr(buf.iterator + i * size, layout.inner, dtype=Uint8), layout.outer)
                for i in range(count)]

    @cute.kernel
    def kernel(self, tma_0: cute.CopyAtom, g_0: cute.Tensor, tma_sf0: cute.CopyAtom, g_sf0: cute.Tensor,
               tma_1: cute.CopyAtom, g_1: cute.Tensor, tma_sf1: cute.CopyAtom, g_sf1: cute.Tensor,
               tma_2: cute.CopyAtom, g_2: cute.Tensor, tma_sf2: cute.CopyAtom, g_sf2: cute.Tensor,
               mD: cute.Tensor, tiled_mma: cute.TiledMma, k_tiles: Int32):
        # operands 0 .. ns-1 are the S side, the next nr the R side (the rest unused)
        ops = [(tma_0, g_0, tma_sf0, g_sf0), (tma_1, g_1, tma_sf1, g_sf1), (tma_2, g_2, tma_sf2, g_sf2)]
        bid_s, bid_r, split = cute.arch.block_idx()
        kt_own = k_tiles // self.cfg.splits
        self._tiles(ops, tiled_mma, TileWork(mD, k_tiles, kt_own, split * kt_own, bid_s,
                                             bid_r * self.cfg.r_tiles, split, None), (0, 1, 1))

    def _r_tile(self, bid_r, r):
        """The reg_rows-row tile of R operand r in a CTA whose R side starts at tile bid_r: the same tile
        of every operand (B1 and B2), or consecutive tiles of the one operand (r_tiles > 1)."""
        return bid_r + r if self.cfg.r_tiles > 1 else bid_r

    def _more_r(self, w: TileWork):
        """r_tiles > 1: whether tile w has a second R tile (D's R extent ends past its first); else True."""
        if cutlass.const_expr(self.cfg.r_tiles == 1):
            return True
        return w.mD.shape[0] - w.bid_r * self.rows_r > self.rows_r

    def _s_rows(self, w: TileWork):
        """The rows of tile w's S tile inside the S extent (all rows_s but in a partial last tile)."""
        return w.mD.shape[1] - w.bid_s * self.rows_s

    def _work(self, ctx, j) -> TileWork:
        """Tile j of this CTA's list. Here one tile per CTA, ctx itself; the grouped GEMM reads its tile
        table (a CTA runs a list of tiles there)."""
        return ctx

    @cute.jit
    def _tiles(self, ops, tiled_mma, ctx, tiles):
        """One CTA's output tiles, j = first, first + step, .. < end for tiles = (first, end, step), each
        from self._work(ctx, j): the shared memory and its pipelines once, then every role
        (producer, decoders, consumers) over the tiles. The rings run on from one tile into the
        next, so a CTA with several tiles loads and decodes the next tile's first stages while its
        consumers finish the last one (no pipeline fill per tile)."""
        ns, nr = self.ns, self.nr
        rows_s, rows_r = self.rows_s, self.rows_r
        self._smem_layouts()  # static layouts, rebuilt inside the kernel's region
        tidx, _, _ = cute.arch.thread_idx()
        self._stamp("entry", tidx == 0)
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        wg = warp // 4

        smem = cutlass.utils.SmemAllocator()
        st = smem.allocate(self.shared_storage)
        sS4_all = st.sS4.get_tensor(cute.make_layout(cute.cosize(self.sS4_layout) * ns))
        sR4_all = st.sR4.get_tensor(cute.make_layout(cute.cosize(self.sR4_layout) * nr))
        sSFS_all = st.sSFS.get_tensor(cute.make_layout(cute.cosize(self.sSFS_layout) * ns))
        sSFR_all = st.sSFR.get_tensor(cute.make_layout(cute.cosize(self.sSFR_layout) * nr))
        sS16 = st.sS16.get_tensor(self.sS16_layout.outer, swizzle=self.sS16_layout.inner)
        sS4 = self._ring_views(sS4_all, self.sS4_layout, ns)
        sR4 = self._ring_views(sR4_all, self.sR4_layout, nr)
        s4_bytes, r4_bytes = cute.cosize(self.sS4_layout), cute.cosize(self.sR4_layout)
        sfs_bytes, sfr_bytes = cute.cosize(self.sSFS_layout), cute.cosize(self.sSFR_layout)
        sSFS = [cute.make_tensor(sSFS_all.iterator + i * sfs_bytes, self.sSFS_layout) for i in range(ns)]
        sSFR = [cute.make_tensor(sSFR_all.iterator + i * sfr_bytes, self.sSFR_layout) for i in range(nr)]

        # Raw shared addresses for the hand-written decode (the swizzle is applied by hand below).
        at = RingAddresses(
            s4_base=sS4_all.iterator.toint(), r4_base=sR4_all.iterator.toint(), sfs_base=sSFS_all.iterator.toint(),
            sfr_base=sSFR_all.iterator.toint(), s16_base=sS16.iterator.toint(), s4_stage=rows_s * ROW_BYTES,
            r4_stage=rows_r * ROW_BYTES, sfs_stage=rows_s * SF_ROW_BYTES, sfr_stage=rows_r * SF_ROW_BYTES,
            s16_sub=rows_s * K_SUB * 2, s4_bytes=s4_bytes, r4_bytes=r4_bytes, sfs_bytes=sfs_bytes, sfr_bytes=sfr_bytes)

        n_consumer_warps = 4 * self.n_cwg
        n_dec = self.cfg.decoder_threads

        def tma_ring(mbar, stages, releasing_warps, rows):
            # one arrive per releasing warp
            return pipeline.PipelineTmaAsync.create(
                barrier_storage=mbar.data_ptr(), num_stages=stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, releasing_warps),
                tx_count=rows * (ROW_BYTES + SF_ROW_BYTES), cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)))

        if cutlass.const_expr(self.cfg.async_handover):
            # the split's receive barrier (_add_split_sums): initialized with the rings' barriers, before the
            # fence and block-wide sync that follow theirs, so that its arrive below is ordered after it
            if tidx == 0:
                cute.arch.mbarrier_init(st.xch_mbar.data_ptr(), 1)
        lda_pipe = tma_ring(st.lda_mbar, self.cfg.a_ring, n_dec // 32, ns * rows_s)  # S side: the decoders
        ldb_pipe = tma_ring(st.ldb_mbar, self.stages, n_consumer_warps, nr * rows_r)  # R side: the consumers
        peer = None  # share_s: the other CTA of the cluster (along the R side), which holds the same S tile
        if cutlass.const_expr(self.cfg.share_s):
            peer = 1 - cute.arch.block_idx()[1] % 2
        a16_pipe = DecodedRing.create(st.a16_mbar, self.a_slots, n_dec, 32 * n_consumer_warps, peer)
        if cutlass.const_expr(self.cfg.share_s):
            cluster_handshake()  # both CTAs' barriers initialized before either arrives on the other's
        if cutlass.const_expr(self.cfg.async_handover):
            # the receive barrier expects the other CTA's half of the sums (its only phase); initialized in
            # both CTAs before either sends
            self._xch = (st.xch.data_ptr().toint(), st.xch_mbar.data_ptr())
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(st.xch_mbar.data_ptr(), self.cfg.handover_bytes(self.num_b))
            # the cluster barrier's arrive only: each thread waits where it must (the consumers before they
            # send, the other roles at their end), long after the other CTA arrived; a whole barrier here
            # held every CTA ~0.7 us before its first load (lab/cta_timeline.py)
            cute.arch.cluster_arrive_relaxed()

        if cutlass.const_expr(not self.tile_lists):
            # the TMA descriptors are kernel parameters, which the kernel before this one does not write:
            # fetched before the wait below, the first loads find them (the grouped GEMM's are written on
            # the device: the producer acquires them per tile)
            if warp == 0:
                for op in ops[:ns + nr]:
                    cpasync.prefetch_descriptor(op[0])
                    cpasync.prefetch_descriptor(op[2])
        if cutlass.const_expr(self.cfg.l2_early > 0 and self.cfg.pdl):  # never with tile lists (__init__)
            if warp == 0:
                self._l2_early(ops, (sS4, sSFS, sR4, sSFR), self._work(ctx, tiles[0]))
        if cutlass.const_expr(self.cfg.pdl):
            # Sm90Config.pdl: the next kernel in the queue may launch now (every CTA of this grid is
            # resident once all have passed here), and nothing below touches device memory before
            # the kernel before this one is complete
            cute.arch.griddepcontrol_launch_dependents()
            cute.arch.griddepcontrol_wait()
        self._stamp("resident", tidx == 0)
        if wg < self.cfg.n_dwg:
            cute.arch.setmaxregister_decrease(self.cfg.producer_regs)
            if warp == 0:
                self.producer(ops, (sS4, sSFS, sR4, sSFR), ctx, tiles, lda_pipe, ldb_pipe)
            else:
                self.decoders(tidx, at, ctx, tiles, lda_pipe, a16_pipe)
            if cutlass.const_expr(self.cfg.splits > 1 and not self.cfg.async_handover):
                # the split's two cluster barriers (_add_split_sums): the operand buffers receive the
                # other CTA's sums only once every warp of both CTAs is done with them
                for _ in cutlass.range_constexpr(2):
                    cluster_handshake()
            if cutlass.const_expr(self.cfg.async_handover):
                cute.arch.cluster_wait()  # the wait of the arrive above (every thread arrives and waits once)
        else:
            self.consumers(tidx, warp, wg, tiled_mma, sS16, at, ctx, tiles, ldb_pipe, a16_pipe)
        if cutlass.const_expr(self.cfg.share_s):
            cluster_handshake()  # the other CTA no longer stores into this one's ring or arrives on its barriers

    @cute.jit
    def producer(self, ops, rings, ctx, tiles, lda_pipe, ldb_pipe):
        """Warp 0: TMA loads of the packed values and scales of every operand into the two packed rings,
        the S side one K tile ahead of the R side."""
        ns, nr, rows_r = self.ns, self.nr, self.rows_r
        tile_first, tile_end, tile_step = tiles
        prod_a = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.cfg.a_ring)
        prod_b = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        lane0 = cute.arch.lane_idx() == 0  # the lane that stamps (Sm90Config.timeline)
        for tile_j in cutlass.range(tile_first, tile_end, tile_step, unroll=1):
            w = self._work(ctx, tile_j)
            kt_own, kt_first, descs = w.kt_own, w.kt_first, w.descs
            if cutlass.const_expr(descs is not None):
                # written by the descriptor kernel (generic proxy) before this launch (the kernel
                # parameters' are prefetched in _tiles)
                for i in cutlass.range_constexpr(ns + nr):
                    for d in descs[i]:
                        cpasync.fence_tma_desc_acquire(d)
            parts = self._tma_parts(ops, rings, w)
            more = self._more_r(w)
            # the S side runs one K tile ahead of the R side: its load of tile i is not held up
            # behind the wait for a free R stage (which the consumers release last)
            for i in cutlass.range(kt_own + 1, unroll=1):
                if i < kt_own:
                    kt = kt_first + i
                    lda_pipe.producer_acquire(prod_a)
                    bar = lda_pipe.producer_get_barrier(prod_a)
                    for j in cutlass.range_constexpr(ns):
                        self._tma_load(parts[j], kt, prod_a.index, bar)
                    lda_pipe.producer_commit(prod_a)
                    prod_a.advance()
                if i > 0:
                    kt = kt_first + i - 1
                    ldb_pipe.producer_acquire(prod_b)
                    bar = ldb_pipe.producer_get_barrier(prod_b)
                    for j in cutlass.range_constexpr(nr):
                        if cutlass.const_expr(j == 0 or self.cfg.r_tiles == 1):
                            self._tma_load(parts[ns + j], kt, prod_b.index, bar)
                        elif more:
                            self._tma_load(parts[ns + j], kt, prod_b.index, bar)
                        else:
                            # a tile of one R tile: its stage's bytes of the second one count as arrived
                            # (once: the whole warp runs this code)
                            with cute.arch.elect_one():
                                mbarrier_complete_tx(bar.toint(), rows_r * (ROW_BYTES + SF_ROW_BYTES))
                    ldb_pipe.producer_commit(prod_b)
                    prod_b.advance()
                    self._stamp("r_load_first", (i == 1) & lane0)
                    self._stamp("r_load_last", (i == kt_own) & lane0)


    @cute.jit
    def decoders(self, tidx, at, ctx, tiles, lda_pipe, a16_pipe):
        """The other warps of the first n_dwg warpgroups: each 256-K stage of the S side -> four 64-K
        fp16 sub-tiles of every S operand in the decoded ring. With skip_rows_past_extent, rows from
        `s_rows` on are not decoded (TMA zero-filled them) and their slots keep whatever they held:
        row s of the S tile feeds only accumulator column s, which the epilogue does not store for
        those rows, so stale (even non-finite) values there change nothing that is written."""
        ns, rows_s, n_dec, skip = self.ns, self.rows_s, self.cfg.decoder_threads, self.cfg.debug_skip
        s4_base, s4_stage, s4_bytes, s16_base, s16_sub = at.s4_base, at.s4_stage, at.s4_bytes, at.s16_base, at.s16_sub
        sfs_base, sfs_stage, sfs_bytes = at.sfs_base, at.sfs_stage, at.sfs_bytes
        # ---------------- S-side decoders (warps 1 .. 4*n_dwg-1): 256-K stage -> four 64-K
        # fp16 sub-tiles of every S operand
        dt = tidx - 32
        # The rows this CTA decodes: all rows_s, or with share_s rows row_base .. row_base + rows_d - 1
        # (sm90_config.shared_s_rows; for the second CTA those past rows_s are skipped), which one thread
        # then copies into the other CTA's ring (`sent` bytes per S operand; `incoming` arrive from it)
        rows_d, row_base = self.cfg.decoded_rows, 0
        if cutlass.const_expr(self.cfg.share_s):
            rank = 1 - a16_pipe.peer
            row_base = rank * rows_d
            sent = (rows_d + rank * (rows_s - 2 * rows_d)) * K_SUB * 2
            incoming = ns * (rows_s * K_SUB * 2 - sent)
        # unit u = col * rows_d + row: 32-K chunk `col` (S operand, then chunk of the batch) of
        # row `row`; thread dt takes units dt, dt + n_dec, ...; consecutive threads take
        # consecutive rows (conflict-free 16-byte accesses). (row, col) advance by adds: a
        # division and a modulo per unit made a unit ~110 instructions instead of ~92.
        row_first, col_first = dt % rows_d, dt // rows_d
        # n_dec, rows_d and row_base are multiples of 8, so every unit of a thread has the same row % 8
        sw = dt & 7
        sts_off = [(p ^ (sw & 3)) * 16 for p in range(4)]
        cols, cols_log2 = self.unit_cols, self.unit_cols.bit_length() - 1
        if cutlass.const_expr(self.cfg.owned_rows):
            # owned rows: thread dt keeps row row_base + dt % rows_d and, with k = 2 threads per row, the
            # 32-K chunks of parity dt // rows_d; its units' addresses are the thread constants below
            # XOR or plus compile-time offsets (_decode_owned_batch)
            k = row_owners(rows_d, n_dec)
            owner = dt < k * rows_d
            own_row = row_base + row_first
            own = self._owned_addresses(own_row, col_first, sw)
        by_tile = self.ring_by_k_tile
        ld_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.cfg.a_ring)
        a_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.a_slots)
        a_com = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.a_slots)
        tile_first, tile_end, tile_step = tiles
        waited_s, waited_slot = Int32(0), Int32(0)  # Sm90Config.timeline: cycles in the waits below
        for tile_j in cutlass.range(tile_first, tile_end, tile_step, unroll=1):
            w = self._work(ctx, tile_j)
            kt_own = w.kt_own
            s_rows = None  # the rows of this S tile that exist, where the decode skips the others
            if cutlass.const_expr(self.skip_rows_past_extent):
                s_rows = self._s_rows(w)
            if cutlass.const_expr(self.cfg.owned_rows):
                owned = self._row_decoded(own_row, s_rows, rows_d, owner)  # the thread's row, in this tile
            for _kt in cutlass.range(kt_own, unroll=1):
                waited_s = self._timed(waited_s, lambda: lda_pipe.consumer_wait(ld_state))
                self._stamp("s_stage_first", (_kt == 0) & (dt == 0))
                self._stamp("s_stage_last", (_kt == kt_own - 1) & (dt == 0))
                src_stage = s4_base + ld_state.index * s4_stage
                sf_stage = sfs_base + ld_state.index * sfs_stage
                # a_batch sub-tiles per hand-off: one proxy fence and barrier round per batch
                # (consecutive ring slots, wrapping around the ring)
                nbat = self.cfg.a_batch
                for h in cutlass.range_constexpr(4 // nbat):
                    if cutlass.const_expr(by_tile):
                        slot0 = a_state.index + h * nbat
                        for j in cutlass.range_constexpr(nbat):
                            free = a16_pipe.slot_after(a_state, h * nbat + j)
                            waited_slot = self._timed(waited_slot, lambda s=free: a16_pipe.producer_acquire(s))
                    else:
                        waited_slot = self._timed(waited_slot, lambda: a16_pipe.producer_acquire(a_state))
                        slot0 = a_state.index
                        a_state.advance()
                        for _sub in cutlass.range_constexpr(nbat - 1):
                            waited_slot = self._timed(waited_slot, lambda: a16_pipe.producer_acquire(a_state))
                            a_state.advance()
                    if cutlass.const_expr(self.cfg.owned_rows):
                        if owned:
                            # the thread's units of the batch: S operand op, chunk cols * h + k * i + its parity
                            self._decode_owned_batch(
                                [OwnedUnit(src_stage + op * s4_bytes, sf_stage + op * sfs_bytes, cols * h + k * i,
                                           s16_base + op * s16_sub, k * i // 2, (k * i) % 2)
                                 for op in range(0 if skip & 1 else ns) for i in range(cols // k)], own, slot0)
                    else:
                        row, col = row_first, col_first
                        for _u in cutlass.range(dt, 0 if skip & 1 else cols * rows_d * ns, n_dec,
                                                unroll=self.cfg.a_unroll):
                            op, cl = (col >> cols_log2, col & (cols - 1)) if ns > 1 else (0, col)
                            slot = self._batch_slot(slot0, cl >> 1)
                            row_s = row  # the row of the S tile
                            if cutlass.const_expr(self.cfg.share_s):
                                row_s = row_base + row
                            # without any test a compile-time True: no test in the loop
                            exists = self._row_decoded(row_s, s_rows, rows_d)
                            if exists:
                                self._decode_unit_to_smem(src_stage + op * s4_bytes, sf_stage + op * sfs_bytes,
                                                          s16_base + (slot * ns + op) * s16_sub, row_s, cols * h + cl,
                                                          cl & 1, sw, sts_off)
                            row = row + n_dec % rows_d
                            col = col + n_dec // rows_d
                            if row >= rows_d:
                                row = row - rows_d
                                col = col + 1
                    # generic-proxy stores -> visible to the wgmma (async proxy) reads, and to the bulk copy
                    cute.arch.fence_proxy("async.shared", space="cta")
                    if cutlass.const_expr(self.cfg.share_s):
                        # every decoder's rows stored before one thread copies them to the other CTA
                        cute.arch.barrier(barrier_id=2, number_of_threads=n_dec)
                    for _sub in cutlass.range_constexpr(nbat):
                        com = a16_pipe.slot_after(a_com, h * nbat + _sub) if by_tile else a_com
                        if cutlass.const_expr(self.cfg.share_s):
                            if dt == 0:
                                first = s16_base + com.index * ns * s16_sub + row_base * K_SUB * 2
                                a16_pipe.send(com, [(first + op * s16_sub, sent) for op in range(ns)], incoming)
                        a16_pipe.producer_commit(com)
                        if cutlass.const_expr(not by_tile):
                            a_com.advance()
                        if cutlass.const_expr(h == 0 and _sub == 0):
                            self._stamp("s_published_first", (_kt == 0) & (dt == 0))
                if cutlass.const_expr(by_tile):
                    a_state.advance(4)
                    a_com.advance(4)
                lda_pipe.consumer_release(ld_state)
                ld_state.advance()
        self._stamp_values("decoder_waits", dt == 0, waited_s, waited_slot, Int32(0))


    def _row_decoded(self, row_s, s_rows, rows_d, decoded=True):
        """`decoded` and the decoders' tests of row row_s of the S tile: it lies inside the operand
        (skip_rows_past_extent; s_rows: the tile's rows that exist), in the half of the rows that debug_skip
        bit 8 keeps (timing only), inside the tile (share_s, where the second CTA's share of rows_d rows runs
        past it). A Python True where no test applies."""
        def both(a, b):
            return b if a is True else a & b

        if self.skip_rows_past_extent:
            decoded = both(decoded, row_s < s_rows)
        if self.cfg.debug_skip & 8:
            decoded = both(decoded, row_s < self.rows_s // 2)
        if self.cfg.share_s and 2 * rows_d != self.rows_s:
            decoded = both(decoded, row_s < self.rows_s)
        return decoded

    @cute.jit
    def _batch_slot(self, slot0, sub):
        """The ring slot of sub-tile `sub` of a batch that starts at slot slot0: (slot0 + sub) mod a_slots, for
        slot0 < a_slots and sub < a_batch < a_slots; no test where a batch (inside one K tile) never wraps
        (ring_by_k_tile)."""
        slot = slot0 + sub
        if cutlass.const_expr(not self.ring_by_k_tile):
            if slot >= self.a_slots:
                slot = slot - self.a_slots
        return slot

    @cute.jit
    def consumers(self, tidx, warp, wg, tiled_mma, sS16, at, ctx, tiles, ldb_pipe, a16_pipe):
        """The last n_cwg warpgroups: R fragments decoded into registers, wgmma against the decoded S
        ring, the split's sum exchange, the epilogue."""
        ns, nr, rows_s = self.ns, self.nr, self.rows_s
        # ---------------- consumers: R fragments in registers, wgmma, epilogue
        cute.arch.setmaxregister_increase(self.cfg.consumer_regs)
        cw = wg - self.cfg.n_dwg
        # staged_epilogue: this warpgroup's rows of the last packed-R stage (only it reads them)
        self._epi_stage = at.r4_base + (self.stages - 1) * at.r4_stage + cw * 64 * ROW_BYTES
        t = tidx % 128
        lane = tidx % 32
        wq = (warp % 4) * 16
        row0 = cw * 64 + wq + lane // 4  # this thread's rows: row0 and row0 + 8 of the CTA's R tile
        c = lane % 4  # this thread's word of every 32-K chunk
        sw = (lane // 4) % 8  # = row0 % 8 = (row0 + 8) % 8
        # Scales: 8 bytes per row and half stage (one 64-bit load per row and R operand); chunk ch
        # uses group 2 * ch + c // 2, i.e. byte 2 * (ch % 2) + c // 2 of word (ch % 4) // 2.
        # prmt selectors for even and odd ch: (row0's byte, row0 + 8's byte)
        k0 = c // 2
        sf_sel = [k0 + ((k0 + 4) << 4), k0 + 0x22 + ((k0 + 4) << 4)]

        thr_mma = tiled_mma.get_slice(t)
        tCsS = thr_mma.partition_B(sS16)
        tCrS = tiled_mma.make_fragment_B(tCsS)
        acc_shape = thr_mma.partition_shape_C((64, rows_s))
        # accumulator r * ns + s: R operand r times S operand s (the B operands in order)
        accs = [cute.make_rmem_tensor(acc_shape, Float32) for _ in range(ns * nr)]
        # two register sets of each R operand's fragments (_mainloop)
        frags = [[thr_mma.make_fragment_A(thr_mma.partition_shape_A((64, self.cfg.chunk_k))) for _ in range(2)]
                 for _ in range(nr)]

        ld_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        a_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.a_slots)
        a_rel = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.a_slots)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        full = _MmaSet(tiled_mma, thr_mma, tCrS, acc_shape, rows_s, accs)
        half = None
        if cutlass.const_expr(self.cfg.half_s_tiles):
            # Sm90Config.half_s_tiles: wgmmas of N = rows_s / 2 on the decoded ring's first half rows
            rows_h = rows_s // 2
            half_mma = self._tiled_mma(rows_h)
            half_mma.set(warpgroup.Field.ACCUMULATE, True)
            thr_half = half_mma.get_slice(t)
            half_tCrS = half_mma.make_fragment_B(
                thr_half.partition_B(cute.local_tile(sS16, (rows_h, K_SUB, self.a_slots * ns), (0, 0, 0))))
            half_shape = thr_half.partition_shape_C((64, rows_h))
            half = _MmaSet(half_mma, thr_half, half_tCrS, half_shape, rows_h,
                           [cute.make_rmem_tensor(half_shape, Float32) for _ in range(ns * nr)])
        tile_first, tile_end, tile_step = tiles
        for tile_j in cutlass.range(tile_first, tile_end, tile_step, unroll=1):
            w = self._work(ctx, tile_j)
            states = (ld_state, a_state, a_rel)
            each = ((row0, c, sw, sf_sel), frags, at, (ldb_pipe, a16_pipe), cw, t)
            if cutlass.const_expr(self.cfg.half_s_tiles):
                small = self._s_rows(w) <= rows_s // 2
                if cutlass.const_expr(self.cfg.r_tiles > 1):
                    # only tiles with every R tile run the half width: a fourth copy of the K loop
                    # (half width, one R tile) made ptxas drain every wgmma group of the kernel
                    small = small & self._more_r(w)
                if small:
                    ld_state, a_state, a_rel = self._consume_tile(w, half, *each, states, every_r=True)
                else:
                    ld_state, a_state, a_rel = self._consume_tile(w, full, *each, states)
            else:
                ld_state, a_state, a_rel = self._consume_tile(w, full, *each, states)

    @cute.jit
    def _consume_tile(self, w, mma, thread, frags, at, pipes, cw, t, states, every_r: cutlass.Constexpr = False):
        """One output tile in the consumers, with the wgmmas, accumulators and S rows of `mma` (an _MmaSet):
        its K loop, the split's sum exchange, the epilogue (every_r: the tile has every R tile). Returns the
        pipeline states, advanced."""
        mD, kt_own, bid_s, bid_r, split = w.mD, w.kt_own, w.bid_s, w.bid_r, w.split
        a16_pipe = pipes[1]
        accs = mma.accs
        for i in cutlass.range_constexpr(len(accs)):
            accs[i].fill(0.0)
        more = self._more_r(w)
        ld_state, a_state, a_rel = self._tile_mainloop(more, kt_own, thread, mma.tiled_mma, accs, frags, mma.tCrS,
                                                       at, pipes, states, every_r)
        warpgroup.wait_group(0)
        self._stamp("loop_done", (t == 0) & (cw == 0))
        self._stamp("loop_done_wg_last", (t == 0) & (cw == self.n_cwg - 1))
        a16_pipe.consumer_release(a_rel)
        a_rel.advance()

        # the accumulators' S tile: the CTA's, or its first half (half_s_tiles)
        tile = (mma.thr_mma, mma.acc_shape, bid_s * (self.rows_s // mma.rows_s), mma.rows_s)
        if cutlass.const_expr(self.cfg.splits > 1):
            # each CTA of the split finishes half of the tile: the accumulator vectors (4 values,
            # one 8-column block) in halves[split]
            nv = cute.size(accs[0]) // 4
            halves = ((0, nv // 2), (nv // 2, nv))
            self._add_split_sums(accs, split, at.s4_base, cw * 128 + t, halves)
            self._stamp("sums_added", (t == 0) & (cw == 0))
            own = [(4 * first, 4 * last) for first, last in halves]  # as fragment elements
            if split == 0:
                self._store_tile(accs, mD, tile, bid_r, cw, more, every_r, own[0])
            else:
                self._store_tile(accs, mD, tile, bid_r, cw, more, every_r, own[1])
        else:
            self._finish_tile(accs, w, tile, cw, t, more, every_r)
        self._stamp("stored", (t == 0) & (cw == 0))
        self._stamp("stored_wg_last", (t == 0) & (cw == self.n_cwg - 1))
        return ld_state, a_state, a_rel

    @cute.jit
    def _finish_tile(self, accs, w, tile, cw, t, more, every_r: cutlass.Constexpr):
        """After the K loop of tile w: the epilogue (this CTA ran all of the tile's K tiles). Dealt K
        first adds the sums of the tile's other CTAs, or hands this CTA's over (sm90_deal_k.py)."""
        self._store_tile(accs, w.mD, tile, w.bid_r, cw, more, every_r)

    @cute.jit
    def _tile_mainloop(self, more, kt_own, thread, tiled_mma, accs, frags, tCrS, at, pipes, states,
                       every_r: cutlass.Constexpr):
        """_mainloop over every R tile of the output tile: with r_tiles > 1 the second R tile's decode and
        MMA only where the tile has one (`more`; every_r: it has)."""
        loop = (kt_own, thread, tiled_mma, accs, frags, tCrS, at, pipes)
        ld_state, a_state, a_rel = states
        if cutlass.const_expr(self.cfg.r_tiles > 1 and not every_r):
            if more:
                ld_state, a_state, a_rel = self._mainloop(self.nr, *loop, (ld_state, a_state, a_rel))
            else:
                ld_state, a_state, a_rel = self._mainloop(1, *loop, (ld_state, a_state, a_rel))
        else:
            ld_state, a_state, a_rel = self._mainloop(self.nr, *loop, (ld_state, a_state, a_rel))
        return ld_state, a_state, a_rel

    @cute.jit
    def _store_tile(self, accs, mD, tile, bid_r, cw, more, every_r: cutlass.Constexpr, elems=None):
        """The tile's epilogue: one over all accumulators (GEMM, dual GEMM), or with r_tiles > 1 one per R
        tile that exists (`more`: the second one; every_r: it does). tile: (thr_mma, accumulator shape, S
        tile index, S rows)."""
        if cutlass.const_expr(self.cfg.r_tiles > 1 and every_r):
            self._epilogue([accs[0]], mD, *tile, bid_r, cw, elems)
            self._epilogue([accs[1]], mD, *tile, bid_r + 1, cw, elems)
        elif cutlass.const_expr(self.cfg.r_tiles > 1):
            self._epilogue([accs[0]], mD, *tile, bid_r, cw, elems)
            if more:
                self._epilogue([accs[1]], mD, *tile, bid_r + 1, cw, elems)
        else:
            self._epilogue(accs, mD, *tile, bid_r, cw, elems)

    @cute.jit
    def _mainloop(self, live_r: cutlass.Constexpr, kt_own, thread, tiled_mma, accs, frags, tCrS, at, pipes, states):
        """One output tile's K loop in the consumers: per K tile, the fragments of the first `live_r` R
        operands (all nr, or fewer where the tile has fewer: a runtime branch per round would make
        ptxas close a wgmma group at each branch and drain the pipeline) decoded into registers round by
        round and multiplied with the decoded S ring. Returns the pipeline states, advanced."""
        ns, nr, skip = self.ns, live_r, self.cfg.debug_skip  # nr: the R operands this tile multiplies
        by_tile = self.ring_by_k_tile
        decode, pow2 = self._decoder("r", self.cfg.decode_bits & 1)
        r4_base, r4_stage, r4_bytes = at.r4_base, at.r4_stage, at.r4_bytes
        sfr_base, sfr_stage, sfr_bytes = at.sfr_base, at.sfr_stage, at.sfr_bytes
        row0, c, sw, sf_sel = thread
        ldb_pipe, a16_pipe = pipes
        ld_state, a_state, a_rel = states
        cw32 = self.cfg.chunk_k // 32  # 32-K words per round and row
        rounds = K_SUB // self.cfg.chunk_k  # rounds per 64-K sub-tile
        frag_i32 = [[cute.recast_tensor(frags[r][s], Int32) for s in range(2)] for r in range(nr)]
        # debug_skip bit 5 (timing only): no wgmma; the decoded fragments folded into `sink` instead, which
        # one impossible store keeps alive (ptxas would otherwise drop the decode with the wgmmas)
        sink = Int32(0)
        first = (row0 == 0) & (c == 0)  # the first thread of the first consumer warpgroup
        waited_r, waited_s, waited_mma = Int32(0), Int32(0), Int32(0)  # Sm90Config.timeline: cycles in the waits
        for kt in cutlass.range(kt_own, unroll=1):
            waited_r = self._timed(waited_r, lambda: ldb_pipe.consumer_wait(ld_state))
            self._stamp("r_stage_first", (kt == 0) & first)
            self._stamp("r_stage_last", (kt == kt_own - 1) & first)
            r_stage = r4_base + ld_state.index * r4_stage
            sf_stage = sfr_base + ld_state.index * sfr_stage

            def load_words(r_stage, rnd):
                # the thread's word c of each 32-K chunk ch of round rnd in its two rows, for
                # every R operand: [h][r] = (row0's word, row0 + 8's word), ch = cw32 * rnd + h.
                # Defined inside the K loop: the DSL rejects a function from outside a staged
                # loop that captures values (here c, row0, sw)
                return [[(ld_shared_u32(r_stage + r * r4_bytes + row0 * ROW_BYTES + ((ch ^ sw) * 16) + 4 * c),
                          ld_shared_u32(r_stage + r * r4_bytes + (row0 + 8) * ROW_BYTES + ((ch ^ sw) * 16) + 4 * c))
                         for r in range(0 if skip & 2 else nr)]
                        for ch in range(cw32 * rnd, cw32 * rnd + cw32)]

            words = load_words(r_stage, 0)
            for sub in cutlass.range_constexpr(4):
                a_sub = a16_pipe.slot_after(a_state, sub) if by_tile else a_state  # the decoded sub-tile's slot
                if cutlass.const_expr(sub % 2 == 0 and not skip & 64):
                    sf_words = []
                    for r in cutlass.range_constexpr(0 if skip & 2 else nr):
                        sfr = sf_stage + r * sfr_bytes
                        sf_words.append((self._sf_words(sfr, row0, sub), self._sf_words(sfr, row0 + 8, sub)))
                for q in cutlass.range_constexpr(rounds):
                    rnd = sub * rounds + q
                    rs = rnd % 2  # register set (rounds per K tile are even)
                    # load the next round's words now: they are issued ahead of this round's
                    # wgmma and its wait, which hide their latency (results/TUNING.md, dual_gemm)
                    cur = words
                    if cutlass.const_expr(rnd + 1 < 4 * rounds):
                        words = load_words(r_stage, rnd + 1)
                    for h in cutlass.range_constexpr(cw32):
                        ch = cw32 * rnd + h
                        for r in cutlass.range_constexpr(0 if skip & 2 else nr):
                            w_lo, w_hi = cur[h][r]
                            if cutlass.const_expr(skip & 64):  # timing only: scale 1 (x 2^pow2), nothing loaded
                                s_lo = s_hi = Int32(f16x2_pow2(pow2))
                            else:
                                sf_lo, sf_hi = sf_words[r]
                                s_lo, s_hi = e4m3x2_to_f16x2_pair(
                                    prmt(sf_lo[(ch % 4) // 2], sf_hi[(ch % 4) // 2], sf_sel[ch % 2]), pow2)
                            d_lo = decode(w_lo, s_lo)
                            d_hi = d_lo if skip & 16 else decode(w_hi, s_hi)  # 16: timing only
                            f = frag_i32[r][rs]
                            # pair j -> k16 block 2h + j // 2 of the round, fragment columns +8 when j is odd
                            for j in cutlass.range_constexpr(4):
                                f[(0, 0, j % 2), 0, 2 * h + j // 2] = d_lo[j]
                                f[(0, 1, j % 2), 0, 2 * h + j // 2] = d_hi[j]
                                if cutlass.const_expr(skip & 32):
                                    sink = sink ^ d_lo[j] ^ d_hi[j]
                    if cutlass.const_expr(q == 0):
                        # only the wgmma reads the decoded sub-tile: the round's B decode above does
                        # not wait for it (waiting before the decode was up to 4 % slower, results/TUNING.md)
                        waited_s = self._timed(waited_s, lambda s=a_sub: a16_pipe.consumer_wait(s))
                        if cutlass.const_expr(sub == 0):
                            self._stamp("s_ready_first", (kt == 0) & first)
                    warpgroup.fence()
                    for r in cutlass.range_constexpr(0 if skip & 32 else nr):
                        for s in cutlass.range_constexpr(ns):
                            for kb in cutlass.range_constexpr(2 * cw32):
                                cute.gemm(tiled_mma, accs[r * ns + s], frags[r][rs][(None, None, kb)],
                                          tCrS[(None, None, 2 * cw32 * q + kb, a_sub.index * ns + s)],
                                          accs[r * ns + s])
                    warpgroup.commit_group()
                    # at most one round in flight: the other fragment slot and every earlier
                    # sub-tile are free again
                    if sub == 3 and q == rounds - 1:
                        # drain in the last k tile: the epilogue must read finished accumulators
                        # (ptxas was seen hoisting them above a wait placed after the loop)
                        if kt == kt_own - 1:
                            waited_mma = self._timed(waited_mma, lambda: warpgroup.wait_group(0))
                        else:
                            waited_mma = self._timed(waited_mma, lambda: warpgroup.wait_group(self.cfg.wgmma_depth))
                    else:
                        waited_mma = self._timed(waited_mma, lambda: warpgroup.wait_group(self.cfg.wgmma_depth))
                    if q == 0:
                        if sub > 0:
                            if cutlass.const_expr(by_tile):
                                a16_pipe.consumer_release(a16_pipe.slot_after(a_state, sub - 1))
                            else:
                                a16_pipe.consumer_release(a_rel)
                                a_rel.advance()
                        else:
                            if kt > 0:
                                a16_pipe.consumer_release(a_rel)
                                if cutlass.const_expr(not by_tile):
                                    a_rel.advance()
                if cutlass.const_expr(not by_tile):
                    a_state.advance()
            if cutlass.const_expr(by_tile):
                a_rel = a16_pipe.slot_after(a_state, 3)  # released after the next K tile's first round, or the loop
                a_state.advance(4)
            ldb_pipe.consumer_release(ld_state)
            ld_state.advance()
        if cutlass.const_expr(skip & 32):
            store_if_equal(sink, 0x7F123457)
        self._stamp_values("consumer_waits", first, waited_r, waited_s, waited_mma)
        return ld_state, a_state, a_rel

    def _tma_part(self, op, s_vals, s_sf, rows, bid, k_tiles, descs):
        """TMA partitions of one operand's (packed values, scales): its CTA tile of `rows` rows, every K
        tile; descs: None or the (values, scales) descriptor addresses to load through."""
        tma, g_full, tma_sf, g_sf_full = op
        g = cute.local_tile(g_full, (rows, ROW_BYTES), (bid, None))
        if cutlass.const_expr(self.blocked_sf):
            # blocks of 16 x 128 bytes in (row tile, K tile) order: K tile kt of this tile is block bid * k_tiles + kt
            g_sf = cute.local_tile(g_sf_full, (rows // 8, 128), (None, 0))
            sf_first = bid * k_tiles
        else:
            g_sf = cute.local_tile(g_sf_full, (rows, SF_ROW_BYTES), (bid, None))
            sf_first = 0
        t_s, t_g = cpasync.tma_partition(tma, 0, cute.make_layout(1), cute.group_modes(s_vals, 0, 2),
                                         cute.group_modes(g, 0, 2))
        t_ssf, t_gsf = cpasync.tma_partition(tma_sf, 0, cute.make_layout(1), cute.group_modes(s_sf, 0, 2),
                                             cute.group_modes(g_sf, 0, 2))
        return tma, t_s, t_g, tma_sf, t_ssf, t_gsf, sf_first, descs

    def _tma_parts(self, ops, rings, w: TileWork):
        """_tma_part of every operand of tile w, the S side's first: what the producer loads, and _l2_early fetches."""
        sS4, sSFS, sR4, sSFR = rings
        ns, descs = self.ns, w.descs
        parts = [self._tma_part(ops[i], sS4[i], sSFS[i], self.rows_s, w.bid_s, w.k_tiles,
                                None if descs is None else descs[i]) for i in range(ns)]
        parts += [self._tma_part(ops[ns + i], sR4[i], sSFR[i], self.rows_r, self._r_tile(w.bid_r, i), w.k_tiles,
                                 None if descs is None else descs[ns + i]) for i in range(self.nr)]
        return parts

    @cute.jit
    def _l2_early(self, ops, rings, w: TileWork):
        """Sm90Config.l2_early: the CTA's first K tiles of every operand prefetched into L2 (the TMA warp, before the
        dependent launch's wait)."""
        parts = self._tma_parts(ops, rings, w)
        with cute.arch.elect_one():
            for kt in cutlass.range_constexpr(self.cfg.l2_early):
                if kt < w.kt_own:
                    for tma, _, t_g, tma_sf, _, t_gsf, sf_first, _ in parts:
                        cute.prefetch(tma, t_g[(None, w.kt_first + kt)])
                        cute.prefetch(tma_sf, t_gsf[(None, sf_first + w.kt_first + kt)])

    @staticmethod
    def _tma_load(part, kt, stage, bar):
        """K tile kt of one operand (values and scales) into ring stage `stage`, completing on `bar`."""
        tma, t_s, t_g, tma_sf, t_ssf, t_gsf, sf_first, descs = part
        if cutlass.const_expr(descs is None):
            cute.copy(tma, t_g[(None, kt)], t_s[(None, stage)], tma_bar_ptr=bar)
            cute.copy(tma_sf, t_gsf[(None, sf_first + kt)], t_ssf[(None, stage)], tma_bar_ptr=bar)
        else:
            cute.copy(tma, t_g[(None, kt)], t_s[(None, stage)], tma_bar_ptr=bar, tma_desc_ptr=descs[0])
            cute.copy(tma_sf, t_gsf[(None, sf_first + kt)], t_ssf[(None, stage)], tma_bar_ptr=bar,
                      tma_desc_ptr=descs[1])

    def _sf_words(self, base, row, sub):
        """The 8 scale bytes of `row` for sub-tiles sub and sub + 1 (sub even: 128 K) of a stage at
        shared address `base`, as two words."""
        if cutlass.const_expr(self.blocked_sf):
            at = base + sub * 512 + (row % 32) * 16 + (row // 32) * 4  # atom sub, the row's 4-byte group
            return [ld_shared_u32(at), ld_shared_u32(at + 512)]
        else:
            return ld_shared_v2(base + row * SF_ROW_BYTES + 4 * sub)

    @cute.jit
    def _epilogue(self, accs, mD, thr_mma, acc_shape, bid_s, rows_s, bid_r, cw, elems=None):
        """Registers -> C (through the D[r, s] view), fp16: every fragment element, or those in the
        static range `elems` (a split CTA's half); in a partial last S tile only the columns
        s < S extent are stored. The accumulators hold S tile bid_s of rows_s rows."""
        tile, at = (64, rows_s), (bid_r * self.n_cwg + cw, bid_s)
        tCgD = thr_mma.partition_C(cute.local_tile(mD, tile, at))
        first, last = (0, cute.size(acc_shape)) if elems is None else elems
        s_total = mD.shape[1]
        if cutlass.const_expr(self.cfg.swap_ab and elems is not None):
            # D is C itself: fragment elements i, i + 1 (i even) are columns n, n + 1 (n even) of one row
            # of C, so a split CTA's half goes out in 4-byte stores where N is even (C's rows then start
            # 4-byte aligned; elementwise fp16 stores cost the swapped split up to 10 % on the H100,
            # results/TUNING.md), else and at the S side's end value by value
            tCcD = thr_mma.partition_C(cute.local_tile(cute.make_identity_tensor(mD.shape), tile, at))
            base = mD.iterator.toint()
            for i in cutlass.range_constexpr(first, last, 2):
                row, col = tCcD[i]
                v0, v1 = self.epilogue_value(accs, i), self.epilogue_value(accs, i + 1)
                if col + 1 < s_total and s_total % 2 == 0:
                    st_global_f16x2(base + cute.crd2idx((row, col), mD.layout) * 2, v0, v1)
                else:
                    if col < s_total:
                        tCgD[i] = v0.to(Float16)
                    if col + 1 < s_total:
                        tCgD[i + 1] = v1.to(Float16)
        elif cutlass.const_expr(not self.cfg.swap_ab):
            # D is C transposed: fragment elements i, i + 1 (i even) are one column r of rows s, s + 1
            # of C, and lane ^ 4 holds column r ^ 1 of the same rows (r's parity is lane bit 2). The
            # two lanes swap halves of their f16x2 words: the even lane stores columns r, r + 1 of row
            # s, the odd one columns r - 1, r of row s + 1, as 4-byte words (N, a multiple of the R
            # tile, is even), half the stores of value by value
            tCcD = thr_mma.partition_C(cute.local_tile(cute.make_identity_tensor(mD.shape), tile, at))
            base = mD.iterator.toint()
            odd = (cute.arch.lane_idx() >> 2) & 1
            sel = 0x5410 + odd * (0x3276 - 0x5410)  # (own low, other low) / (other high, own high)
            if cutlass.const_expr(self.cfg.staged_epilogue):
                self._staged_epilogue(accs, mD, tCcD, odd, sel, tile, at, first, last, cw)
            else:
                for i in cutlass.range_constexpr(first, last, 2):
                    row, col = tCcD[i]
                    row, col = row - odd, col + odd
                    st_global_f16x2_exchanged(base + cute.crd2idx((row, col), mD.layout) * 2,
                                              self.epilogue_value(accs, i), self.epilogue_value(accs, i + 1), sel,
                                              col < s_total)
        else:
            out = cute.make_rmem_tensor(acc_shape, Float16)
            for i in cutlass.range_constexpr(first, last):
                out[i] = self.epilogue_value(accs, i).to(Float16)
            if cutlass.const_expr(elems is None) and (bid_s + 1) * rows_s <= s_total:
                cute.autovec_copy(out, tCgD)
            else:
                tCcD = thr_mma.partition_C(cute.local_tile(cute.make_identity_tensor(mD.shape), tile, at))
                for i in cutlass.range_constexpr(first, last):
                    if tCcD[i][1] < s_total:
                        tCgD[i] = out[i]

    @cute.jit
    def _staged_epilogue(self, accs, mD, tCcD, odd, sel, tile, at, first, last, cw):
        """Sm90Config.staged_epilogue: fragment elements first .. last - 1 of the warpgroup's 64 x rows_s tile of D
        (C transposed; tCcD, odd, sel: _epilogue's coordinates and lane exchange) into its rows of the last packed-R
        stage as rows of C (128 bytes: its 64 columns; 16-byte chunks XOR-swizzled by row, so that both the word
        stores and the vector loads are free of bank conflicts), then 16-byte vectors of whole row segments to C;
        rows past the S extent are not stored. tile, at: the tile's shape and coordinates in D."""
        stage = self._epi_stage
        t = cute.arch.thread_idx()[0] % 128
        s0, r0 = at[1] * tile[1], at[0] * 64  # the tile's first row and column of C
        bar = 3 + cw  # the warpgroup's own named barrier (1, 2: the consumers' and decoders' elsewhere)
        cute.arch.barrier(barrier_id=bar, number_of_threads=128)  # its warps done reading their R rows
        for i in cutlass.range_constexpr(first, last, 2):
            row, col = tCcD[i]
            n, m = row - odd - r0, col + odd - s0
            st_shared_f16x2_exchanged(stage + m * ROW_BYTES + (((n >> 3) ^ (m & 7)) << 4) + (n & 7) * 2,
                                      self.epilogue_value(accs, i), self.epilogue_value(accs, i + 1), sel)
        cute.arch.barrier(barrier_id=bar, number_of_threads=128)
        # a fragment vector of 4 elements is one 8-column block of the S tile: rows 2 * first .. 2 * last of C
        m_first, chunks = 2 * first, 2 * (last - first) * 8
        base, n_total, s_total = mD.iterator.toint(), mD.shape[0], mD.shape[1]
        for j in cutlass.range_constexpr(0, chunks, 128):
            q = j + t
            m, c = m_first + q // 8, q % 8
            v = ld_shared_v4(stage + m * ROW_BYTES + ((c ^ (m & 7)) << 4))
            st_global_v4_if(base + ((s0 + m) * n_total + r0 + c * 8) * 2, *v, (s0 + m < s_total) & (q < chunks))

    @cute.jit
    def _add_split_sums(self, accs, split, buf, ct, halves):
        """Split-K over a cluster of 2, CTA i finishing the accumulator vectors in halves[i]:
        consumer thread ct hands the fp32 sums of the other CTA's half to the same thread of the
        other CTA, into its operand buffers at `buf` (distributed shared memory; 16-byte vectors,
        thread-minor: conflict-free), then adds the half it received. Halving the hand-over and the
        epilogue per CTA (rather than CTA 1 handing everything to CTA 0) shortens the split's tail.
        Every thread of both CTAs takes part in the two cluster barriers (the other warps at the end
        of their roles): after the first, no warp touches its operand buffers any more; after the
        second, the sums have landed (release / acquire).
        With Sm90Config.async_handover the sums go to the other CTA's receive buffer instead (holding only the
        half it finishes: its slots start at 0), sent with st.async and completing on its barrier, which each
        CTA waits on for its own half: no other thread takes part, and neither CTA waits for the other's warps."""
        n_ct = 128 * self.n_cwg
        nv = cute.size(accs[0]) // 4
        bar = None
        width, first = nv, (0, 0)  # slot of vector v of accumulator b: b * width + v - first[half]
        if cutlass.const_expr(self.cfg.async_handover):
            buf, bar = self._xch
            width, first = nv // 2, (halves[0][0], halves[1][0])
            cute.arch.cluster_wait()  # the other CTA's receive barrier is initialized (its arrive in _tiles)
        else:
            cluster_handshake()
        for mine in cutlass.range_constexpr(2):
            if split == mine:
                for b in cutlass.range_constexpr(len(accs)):
                    send_partial(accs[b], range(*halves[1 - mine]), buf, b * width - first[1 - mine], ct, n_ct,
                                 1 - mine, None if bar is None else bar.toint())
        if cutlass.const_expr(self.cfg.async_handover):
            cute.arch.mbarrier_wait(bar, 0)
        else:
            cluster_handshake()
        for mine in cutlass.range_constexpr(2):
            if split == mine:
                for b in cutlass.range_constexpr(len(accs)):
                    add_partial(accs[b], range(*halves[mine]), buf, b * width - first[mine], ct, n_ct)

    @cute.jit
    def _decode_unit_to_smem(self, src_stage, sf_stage, dst_slot, row, ch, q, sw, sts_off):
        """Row `row`, 32-K chunk `ch` of a packed S-side stage -> 32 fp16 in the sub-tile at dst_slot
        (chunk q of it): one 16-byte load, four 16-byte stores, 128B-swizzled both sides. sw = row % 8
        and sts_off[p] = 16 * (p ^ (sw % 4)) are the thread's constants: store p goes to 16-byte chunk
        (4q + p) ^ sw = 4 * (q ^ (sw // 4)) + (p ^ (sw % 4)) of the row."""
        w = ld_shared_v4(src_stage + row * ROW_BYTES + ((ch ^ sw) * 16))
        if cutlass.const_expr(self.blocked_sf):
            # scales 2ch, 2ch + 1 of the row: atom ch // 2, byte (2ch) % 4 of the row's 4-byte group
            s01 = ld_shared_u16(sf_stage + ((ch >> 1) << 9) + ((row & 31) << 4) + ((row >> 5) << 2) + ((ch & 1) << 1))
        else:
            s01 = ld_shared_u16(sf_stage + row * SF_ROW_BYTES + 2 * ch)
        d = self._decode_words(w, s01)
        half = dst_slot + row * (K_SUB * 2) + ((q * 64) ^ ((sw & 4) * 16))  # 64 * (q ^ (sw // 4))
        for p in cutlass.range_constexpr(4):
            st_shared_v4(half + sts_off[p], d[0][p], d[1][p], d[2][p], d[3][p])

    @staticmethod
    def _decoder(side: str, bits: int):
        """(word decode, power of two of its scales) of side "r" or "s": through fp16 bit patterns where
        `bits` (Sm90Config.decode_bits), else through E4M3 bytes."""
        return (decode_e2m1x8_f16_bits, SCALE_POW2[side]) if bits else (decode_e2m1x8_f16, SCALE_POW2["e4m3"])

    def _decode_words(self, w, s01):
        """A unit's 4 words of packed FP4 (32 K of one row) and its 2 scale bytes -> 4 x 4 f16x2 pairs."""
        decode, pow2 = self._decoder("s", self.cfg.decode_bits & 2)
        s0, s1 = e4m3x2_to_f16x2_pair(s01, pow2)
        return [decode(w[0], s0), decode(w[1], s0), decode(w[2], s1), decode(w[3], s1)]

    def _owned_addresses(self, row, c0, sw):
        """The thread constants of an owned row's decode (Sm90Config.owned_rows): the byte offsets in a
        stage of packed S of chunk c0 of `row` (swizzled), of its scales, and of its fp16 row in a decoded
        sub-tile (swizzled; chunk parity c0: the second 32-K half of the sub-tile for c0 = 1)."""
        src = row * ROW_BYTES + ((c0 ^ sw) * 16)
        if self.blocked_sf:
            sf = ((row & 31) << 4) + ((row >> 5) << 2) + (c0 << 1)
        else:
            sf = row * SF_ROW_BYTES + 2 * c0
        dst = row * (K_SUB * 2) + (((4 * c0) ^ sw) * 16)
        return src, sf, dst

    def _owned_offsets(self, own, e: int, q: int):
        """(packed offset, scale offset, the 4 pieces' fp16 offsets) of chunk c0 + e of an owned row (e even
        where two threads share the row), stored as chunk q of the owner's parity in its sub-tile: (a ^ b) * 16
        = a * 16 ^ b * 16, and the row offsets have no bits in 4..6, so a swizzled chunk is a thread constant
        XOR a compile-time one."""
        src, sf, dst = own
        sf_e = (((e >> 1) << 9) + ((e & 1) << 1)) if self.blocked_sf else 2 * e
        return src ^ (16 * e), sf + sf_e, [dst ^ (16 * (4 * q + p)) for p in range(4)]

    def _decode_owned_batch(self, units, own, slot0):
        """An owned row's units of one batch (Sm90Config.owned_rows; OwnedUnit). Each unit's loads are issued
        before the previous unit's stores: ptxas keeps shared loads behind earlier shared stores, as it cannot
        tell the rings apart."""
        loaded = self._load_owned_unit(units[0], own)
        for j, u in enumerate(units):
            cur = loaded
            if j + 1 < len(units):
                loaded = self._load_owned_unit(units[j + 1], own)
            self._store_owned_unit(cur, u.s16_op, slot0, own, u.sub, u.q)

    def _load_owned_unit(self, u, own):
        """The packed words and scale bytes of unit u of an owned row."""
        src, sf, _ = self._owned_offsets(own, u.e, 0)
        return ld_shared_v4(u.src_stage + src), ld_shared_u16(u.sf_stage + sf)

    @cute.jit
    def _store_owned_unit(self, loaded, s16_op, slot0, own, sub: cutlass.Constexpr, q: cutlass.Constexpr):
        """A loaded unit decoded into sub-tile `sub` of the batch starting at ring slot slot0 (its chunk q of
        the owner's parity). s16_op: the decoded ring of this S operand."""
        d = self._decode_words(*loaded)
        slot_at = s16_op + self._batch_slot(slot0, sub) * (self.ns * self.rows_s * K_SUB * 2)
        pieces = self._owned_offsets(own, 0, q)[2]
        for p in cutlass.range_constexpr(4):
            st_shared_v4(slot_at + pieces[p], d[0][p], d[1][p], d[2][p], d[3][p])

    def acc(self, accs, b, i):
        """Element i of accumulator b as a sum of products: the fp32 sums times the power of two that the
        decodes through fp16 bit patterns leave out (Sm90Config.decode_bits; 1 otherwise). Applied where the
        epilogue reads a sum: scaling the accumulators in place after the K loop made ptxas spill."""
        if self.sum_pow2 == 0:
            return accs[b][i]
        return accs[b][i] * Float32(2.0 ** self.sum_pow2)

    @cute.jit
    def epilogue_value(self, accs, i):
        return self.acc(accs, 0, i)
