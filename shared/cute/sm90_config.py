"""Static tuning knobs of the Hopper (sm_90a) block-scaled GEMM kernels (sm90_gemm.py), and the
shared-memory arithmetic that checks a config before anything is compiled. Free of CuTe DSL, so that
the problems' config.py files and the choosers import no kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

K_TILE = 256  # K per pipeline stage: 128 bytes of packed FP4 per row, 16 scale bytes per row
K_SUB = 64  # K per decoded fp16 sub-tile of A: one 128-byte swizzle atom row
ROW_BYTES = K_TILE // 2
SF_ROW_BYTES = K_TILE // 16
TIMELINE_STAMPS = 32  # Sm90Config.timeline: stamps of 16 bytes per CTA


def shared_s_rows(rows_s: int, rank: int) -> tuple[int, int]:
    """(first row, rows) of an S tile of rows_s rows that CTA `rank` of a pair decodes (Sm90Config.share_s):
    the first ceil(rows_s / 16) * 8 rows for rank 0, the rest for rank 1. Both are whole 8-row swizzle atoms
    (a decoder thread keeps one row % 8 for all its rows, and a run of whole atoms is one contiguous range of
    bytes in a decoded sub-tile), so for rows_s = 104 the split is 56 + 48."""
    first_rows = (rows_s + 15) // 16 * 8
    return (0, first_rows) if rank == 0 else (first_rows, rows_s - first_rows)


def row_owners(rows_d: int, decoder_threads: int) -> int:
    """Decoder threads per S row with Sm90Config.owned_rows: 2 where twice the rows fit the threads (each
    then takes the chunks of one parity), else 1."""
    return 2 if 2 * rows_d <= decoder_threads else 1


@dataclass(frozen=True)
class Sm90Config:
    """Static tuning knobs of the Hopper kernels (one compiled kernel per distinct config).

    swap_ab: the roles of the module docstring swapped (S = the B operand(s), R = A). In the a_*
    knobs and ring names below, "A" means the S side (problem A unless swap_ab).

    smem_rows: rows of each S operand per CTA (= wgmma N; 32..256, a multiple of 8; at most 128
    for two accumulators). n_cwg: consumer warpgroups; each owns 64 R rows (reg_rows = 64 * n_cwg).
    n_dwg: warpgroups of TMA warp + A-decoder warps (4 * n_dwg - 1 decoder warps).
    stages: depth of the packed-B ring (256 K per stage). a_stages: depth of the packed-A ring (None:
    the same). a_slots: decoded-A ring depth (64 K each). The two packed rings are separate so
    that the A decoders free an A stage as soon as it is decoded and its next load can start
    while the consumers still hold the B stages (with one ring, the decoders waited for TMA data).
    consumer_regs / producer_regs: setmaxnreg targets of consumer / decoder warpgroups (the sum
    over warpgroups must fit the 64K-register file).
    wgmma_depth: wgmma groups left in flight while the next round of B decodes (0 or 1).
    chunk_k: K per consumer round (decode one register set, issue its wgmmas): 32 or 64.
    a_batch: sub-tiles the decoders publish at a time (1, 2 or 4 = a whole stage; needs
    a_slots > a_batch). a_unroll: unroll factor of the decoders' loop. debug_skip: timing experiments.
    splits: CTAs that share one output tile, each taking an equal share of the K tiles (1 or 2):
    a cluster of `splits` CTAs along grid z; each CTA finishes half of the tile's columns, with the
    other's fp32 sums of that half received through distributed shared memory (no tensor in device
    memory). For grids that would otherwise leave SMs idle. (Splits over 4 CTAs were slower: only 30
    clusters of 4 fit on the H100 at one CTA per SM; results/TUNING.md, gemm.)
    r_tiles: consecutive reg_rows-row tiles of the one B operand per CTA (1 or 2; 2 needs one B
    operand and no swap_ab), each with its own accumulator, as the dual GEMM has B1 and B2:
    every A tile the decoders decode then serves r_tiles x reg_rows rows of B (the grouped GEMM's
    pairs of B tiles: half the A decodes).
    pdl: programmatic dependent launch: the kernel may start while the kernel before it in the
    queue finishes (its CTAs take the SMs that grid frees), and lets the kernel after it do the
    same. Every thread waits (griddepcontrol.wait: the earlier grid complete, its writes visible)
    before its first access to device memory, so only the launch and the prologue (shared-memory
    barriers, register hand-over) overlap the earlier kernel; outputs are as without it.
    half_s_tiles: an S tile with at most half of its rows inside the operand (the grouped GEMM's
    tiles past a small group's M) runs wgmmas of half the N on the first half of the decoded rows:
    half the MMA work of such a tile (the decoders already skip the rows past the extent).
    deal_k: one CTA per SM, the output tiles' K tiles dealt evenly over them (sm90_deal_k.py): a
    CTA's range may end inside one tile and start inside another, and the CTA holding a tile's first
    K tile adds the others' fp32 sums (through a workspace in device memory) and stores the tile. For
    shapes whose tiles leave SMs idle in their last wave. Needs splits == 1.
    share_s: the S tile decoded once per cluster of 2 CTAs along the R side (sm90_decoded_ring.py): the two
    CTAs hold the same S tile, each decodes about half of its rows (shared_s_rows) into its own decoded ring
    and bulk-copies them into the other's. Fewer decoder instructions beside the consumers' critical path.
    Needs one output tile per CTA (no splits, deal_k or grouped tile lists) and an even number of R tiles.
    owned_rows: each decoder thread keeps one S row (with two threads per row, one parity of its 32-K chunks;
    row_owners) for the whole kernel, so that every address of its decode is a thread constant plus a
    compile-time offset, with no index arithmetic per unit (a unit ~72 instructions instead of ~92), and each
    unit's loads go out before the previous unit's stores; threads past the rows idle. Needs at least as
    many decoder threads as rows decoded.
    staged_epilogue: the default roles' epilogue through shared memory: each consumer warpgroup writes its
    64 columns of C x smem_rows rows into its own rows of the last packed-R stage (free once the K loop is
    done), then stores whole 128-byte row segments of C in 16-byte vectors instead of scattered 4-byte
    words. Needs smem_rows <= 64 (a warpgroup's rows of a stage hold 64 x 128 bytes), the default roles and
    one output tile per CTA (no deal_k or grouped tile lists, whose rings run on into the next tile).
    async_handover: the split's hand-over into a buffer of its own (half the tile's fp32 sums, beside the
    rings) with st.async, each CTA waiting on its own transaction barrier for the other's half, instead of two
    cluster barriers that every thread of both CTAs meets (and the operand buffers as the destination). Needs
    splits == 2 and one output tile per CTA (not the grouped GEMM's tile lists).
    decode_bits: which sides decode E2M1 through fp16 bit patterns and a byte permute (fp4_decode.py,
    decode_e2m1x8_f16_bits) instead of E4M3 bytes and the conversion unit: bit 0 the consumers' R fragments,
    bit 1 the decoders' S tiles. Such values lack a power of two (2^-14 on R, whose scales then need no multiply;
    2^-7 on S) that the epilogue takes out of the fp32 sums; outputs are the same (both decodes are exact).
    l2_early: the first l2_early K tiles of every operand (values and scales) fetched into L2 (TMA prefetch, no data to
    the SM) before the dependent launch's wait, while the kernel before this one still runs: the first loads then find
    them in L2. Safe before that wait: L2 is where every SM's writes land, so a line fetched early still sees the
    earlier kernel's later writes. Without pdl nothing is fetched early. Needs one output tile per CTA (a grouped
    GEMM's tiles come from tables that the kernel before it may still write).
    timeline: timing probes only (lab/cta_timeline.py): the device address of a buffer of TIMELINE_STAMPS stamps of
    16 bytes per CTA, which the first thread of each role writes at fixed points of the call (%globaltimer,
    %clock, %smid; shared/cute/sm90_gemm.py, Sm90BlockScaledGemm.STAMPS). 0: none, and not one instruction more.
    """

    smem_rows: int = 128
    n_cwg: int = 1
    n_dwg: int = 1  # warpgroups of warp 0 (TMA) + A decoders (the other 4 * n_dwg - 1 warps)
    stages: int = 3
    a_stages: int | None = None
    a_slots: int = 4
    consumer_regs: int = 232
    producer_regs: int = 40
    wgmma_depth: int = 1
    chunk_k: int = 32
    a_unroll: int = 1
    a_batch: int = 1
    # wrong results, timing only: bit 0 = skip the A decode, bit 1 = the B decode, bit 2 = dealt K's hand-over,
    # bit 3 = the S decode of the second half of the rows, bit 4 = the R decode of each thread's second row,
    # bit 5 = the consumers' wgmmas (their R decode kept, lab/decode_overlap.py), bit 6 = the consumers' scale loads
    # and conversions (a constant scale instead)
    debug_skip: int = 0
    splits: int = 1
    swap_ab: bool = False
    r_tiles: int = 1
    pdl: bool = True
    half_s_tiles: bool = False
    deal_k: bool = False
    share_s: bool = False
    owned_rows: bool = False
    staged_epilogue: bool = False
    async_handover: bool = False
    decode_bits: int = 1
    l2_early: int = 0
    timeline: int = 0

    @property
    def reg_rows(self) -> int:
        return 64 * self.n_cwg

    @property
    def tile_m(self) -> int:
        """Problem-M rows per CTA."""
        return self.reg_rows if self.swap_ab else self.smem_rows

    @property
    def tile_n(self) -> int:
        """Problem-N rows per CTA (of B, or of each of B1 and B2)."""
        return self.smem_rows if self.swap_ab else self.reg_rows * self.r_tiles

    def operands(self, num_b: int) -> tuple[int, int]:
        """(S operands, R operands) for `num_b` B operands; the r_tiles tiles of one B operand count as
        r_tiles operands (each its own ring buffers and accumulator)."""
        return (num_b, 1) if self.swap_ab else (1, num_b * self.r_tiles)

    @property
    def a_ring(self) -> int:
        return self.stages if self.a_stages is None else self.a_stages

    @property
    def threads(self) -> int:
        return 128 * (self.n_dwg + self.n_cwg)

    @property
    def launch_regs(self) -> int:
        """Registers per thread at launch: the 64K-register file over the threads, whole 8s."""
        return 65536 // self.threads // 8 * 8

    @property
    def decoder_threads(self) -> int:
        return 128 * self.n_dwg - 32

    @property
    def decoded_rows(self) -> int:
        """S rows each CTA decodes: all of its tile, or with share_s the larger share of the pair."""
        return shared_s_rows(self.smem_rows, 0)[1] if self.share_s else self.smem_rows

    def packed_rows(self, num_b: int) -> int:
        """Rows of packed data held at once: every stage of the A ring and of the B ring."""
        ns, nr = self.operands(num_b)
        return ns * self.smem_rows * self.a_ring + nr * self.reg_rows * self.stages

    def decoded_bytes(self, num_b: int) -> int:
        """The decoded fp16 A ring (every slot holds a 64-K sub-tile of each S operand)."""
        return self.a_slots * self.operands(num_b)[0] * self.smem_rows * K_SUB * 2

    def smem_bytes(self, num_b: int) -> int:
        return (self.packed_rows(num_b) * (ROW_BYTES + SF_ROW_BYTES) + self.decoded_bytes(num_b) + 1024 * 6
                + self.handover_bytes(num_b))

    def handover_bytes(self, num_b: int) -> int:
        """async_handover's receive buffer: the half of the tile's fp32 sums the other CTA hands over."""
        return self.reduce_bytes(num_b) // 2 if self.async_handover else 0

    def reduce_bytes(self, num_b: int) -> int:
        """fp32 sums one CTA of a split hands to the other (an accumulator tile of reg_rows x smem_rows per
        B operand and R tile); with deal_k, one CTA's slot of the workspace."""
        return 4 * num_b * self.r_tiles * self.reg_rows * self.smem_rows

    def staging_bytes(self, num_b: int) -> int:
        """The packed and decoded operand buffers (contiguous: sS4, sR4, sS16), reused for the split sum."""
        return self.packed_rows(num_b) * ROW_BYTES + self.decoded_bytes(num_b)

    def check(self, num_b: int) -> None:
        if self.timeline % 16:
            raise ValueError(f"Sm90Config.timeline must be a 16-byte aligned device address, got {self.timeline:#x}")
        if self.smem_rows % 8 or not 32 <= self.smem_rows <= 256:
            # wgmma N and TMA box rows; whole 8-row swizzle atoms
            raise ValueError(f"Sm90Config.smem_rows must be a multiple of 8 in 32..256, got {self.smem_rows}")
        if self.r_tiles not in (1, 2):
            raise ValueError(f"Sm90Config.r_tiles must be 1 or 2, got {self.r_tiles}")
        if self.r_tiles > 1 and (num_b > 1 or self.swap_ab):
            raise ValueError(f"Sm90Config.r_tiles={self.r_tiles} needs one B operand and no swap_ab, "
                             f"got num_b={num_b}, swap_ab={self.swap_ab}")
        accs = self.r_tiles * num_b
        if accs * self.smem_rows > 256:
            raise ValueError(f"Sm90Config: {accs} accumulators of 64 x {self.smem_rows} do not fit registers")
        if self.n_cwg not in (1, 2):
            raise ValueError(f"Sm90Config.n_cwg must be 1 or 2, got {self.n_cwg}")
        if self.n_dwg not in (1, 2, 3):
            raise ValueError(f"Sm90Config.n_dwg must be 1, 2 or 3, got {self.n_dwg}")
        if 128 * (self.n_dwg * self.producer_regs + self.n_cwg * self.consumer_regs) > self.threads * self.launch_regs:
            # setmaxnreg.inc waits until the registers it asks for are free: asking for more than the
            # decreases hand back waits forever (640 threads start with 96 registers, not 102:
            # results/TUNING.md, the n_dwg=3 hang)
            raise ValueError(f"Sm90Config {self}: setmaxnreg targets exceed the {self.threads * self.launch_regs} "
                             f"registers the CTA gets at launch ({self.launch_regs} per thread)")
        if self.half_s_tiles and (self.swap_ab or self.smem_rows % 16):
            # the S extent is the problem's M only in the default roles; half a tile is whole 8-row atoms
            raise ValueError(f"Sm90Config.half_s_tiles needs the default roles and smem_rows a multiple of 16, "
                             f"got {self}")
        if self.wgmma_depth not in (0, 1):
            raise ValueError(f"Sm90Config.wgmma_depth must be 0 or 1, got {self.wgmma_depth}")
        if self.chunk_k not in (32, 64):
            raise ValueError(f"Sm90Config.chunk_k must be 32 or 64, got {self.chunk_k}")
        if self.a_batch not in (1, 2, 4):
            raise ValueError(f"Sm90Config.a_batch must be 1, 2 or 4, got {self.a_batch}")
        if self.a_slots <= self.a_batch:
            # a consumer waiting for sub-tile s still holds s - 1 (it hands a sub-tile back only
            # once it works on the next), so the decoders can take a batch s .. s + a_batch - 1
            # only if the ring has more slots than a batch; otherwise both sides wait forever
            raise ValueError(f"Sm90Config.a_batch={self.a_batch} needs a_slots > {self.a_batch}, got {self.a_slots}")
        if self.stages < 2 or self.a_ring < 2 or self.a_slots < 2:
            raise ValueError("Sm90Config: need at least 2 stages of each packed ring and 2 decoded-A slots")
        if self.splits not in (1, 2):
            raise ValueError(f"Sm90Config.splits must be 1 or 2, got {self.splits}")
        if self.deal_k and (self.splits != 1 or self.r_tiles != 1 or self.half_s_tiles):
            # the K tiles are dealt by sm90_deal_k.py, not by a cluster split; one R tile per output tile
            raise ValueError(f"Sm90Config.deal_k needs splits=1, r_tiles=1 and no half_s_tiles, got {self}")
        if self.share_s and (self.splits != 1 or self.deal_k):
            # the pair of CTAs must run the same S tiles and K tiles in the same order
            raise ValueError(f"Sm90Config.share_s needs splits=1 and no deal_k, got {self}")
        if self.staged_epilogue and (self.smem_rows > 64 or self.swap_ab or self.deal_k):
            raise ValueError(f"Sm90Config.staged_epilogue needs smem_rows <= 64, the default roles and no deal_k, "
                             f"got {self}")
        if self.owned_rows and self.decoded_rows > self.decoder_threads:
            raise ValueError(f"Sm90Config.owned_rows needs a decoder thread per decoded row: {self.decoded_rows} rows, "
                             f"{self.decoder_threads} threads ({self})")
        ns = self.operands(num_b)[0]
        if self.l2_early < 0:
            raise ValueError(f"Sm90Config.l2_early must be >= 0, got {self.l2_early}")
        if self.async_handover and self.splits != 2:
            raise ValueError(f"Sm90Config.async_handover needs splits=2, got {self}")
        if self.async_handover and self.smem_rows % 16:
            # each CTA finishes half of a warpgroup's smem_rows / 8 accumulator blocks of 8 columns, and the receive
            # buffer holds half of them: an odd count would leave the second CTA one block more than it holds
            raise ValueError(f"Sm90Config.async_handover needs smem_rows a multiple of 16, got {self.smem_rows}")
        if self.staged_epilogue and self.splits > 1 and not self.async_handover and self.reduce_bytes(num_b) > (
                ns * self.smem_rows * self.a_ring + (self.stages - 1) * self.reg_rows) * ROW_BYTES:
            # the split's sums (received from the start of the packed rings) must end before the last R stage
            raise ValueError(f"Sm90Config {self}: the split's sums would overlap the staged epilogue")
        if self.splits > 1 and self.reduce_bytes(num_b) > self.staging_bytes(num_b):
            raise ValueError(f"Sm90Config {self}: the split's fp32 sums do not fit the operand buffers")
        if self.smem_bytes(num_b) > 227 * 1024:
            raise ValueError(f"Sm90Config {self}: {self.smem_bytes(num_b)} bytes of shared memory > 227 KiB")

    def shape_error(self, m: int, n: int, k: int, l: int) -> str | None:
        """None when the kernel with this config takes the shape, else the reason."""
        if l != 1:
            return f"L must be 1, got {l}"
        if k % K_TILE:
            return f"K must be a multiple of {K_TILE}, got {k}"
        if (k // K_TILE) % self.splits:
            return f"K / {K_TILE} must be a multiple of splits={self.splits}, got K={k}"
        # only the R side needs whole tiles: the S side's last tile may be partial (sm90_gemm.py)
        if self.swap_ab and m % self.tile_m:
            return f"M must be a multiple of tile_m={self.tile_m}, got {m}"
        if not self.swap_ab and n % self.tile_n:
            return f"N must be a multiple of tile_n={self.tile_n}, got {n}"
        r_tiles = m // self.tile_m if self.swap_ab else n // self.tile_n
        if self.share_s and r_tiles % 2:
            # the clusters of 2 CTAs along the R side
            return f"share_s needs an even number of R tiles, got {r_tiles} ({m}x{n}, {self})"
        return None
