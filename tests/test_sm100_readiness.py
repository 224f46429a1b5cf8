"""B200 readiness, CPU tier: the points of docs/B200-READINESS.md made executable.

Every number the kernels must agree with is computed here from the problem, not taken from the
kernel modules: tile bytes from the FP4/E4M3 sizes, the scale byte order from the leaderboard's
blocked-layout formula (LEADERBOARD.md 2.5, `shared.scales.blocked_offset`), the tensor-memory
scale layout from the tcgen05 contract (one 32-bit column holds the 4 scales of one 64-wide K step
for 32 rows, the 32 rows replicated in the 4 lane quadrants by `tcgen05.cp ... .warpx4`).

  * PTX of every configuration the benchmark shapes use (and the other supported ones):
    the stage barrier's expect-tx count = the bytes of one 256-wide K block of every operand; the
    TMA destinations fit in 227 KB of shared memory with the stage count the barriers imply; the
    barrier arrival counts; tensor memory: one power-of-two allocation of <= 512 columns that covers
    the column plan, freed (same count) on every path from the allocation to `ret`; per K block,
    between the stage's full-barrier wait and the `tcgen05.commit` that frees it, exactly
    4 scale copies per 128-row scale block (all `32x128b.warpx4`) and 4 block-scaled MMAs per B;
  * SASS: no local memory, no spills;
  * layouts evaluated on the host at every coordinate of a tile: the global scale view the TMA
    reads (first, last, odd tiles in M, N and L), the shared-memory stage the TMA writes and
    `tcgen05.cp` reads, the tensor-memory image `tcgen05.cp` writes and the MMA reads (with the SFB
    shift of odd 64-wide N tiles), and the accumulator columns;
  * an emulation of the data movement (tile schedule, stage ring, K order, scale bytes through
    those layouts into the MMA) on real leaderboard data, checked against the reference.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
import cutlass.cute as cute  # noqa: E402
import cutlass.utils.blockscaled_layout as blockscaled_utils  # noqa: E402

from harness.problem import load_problem  # noqa: E402
from problems.dual_gemm.config import DualGemmSm100Config  # noqa: E402
from problems.gemm.config import GemmSm100Config  # noqa: E402
from shared import scales as S  # noqa: E402
from shared.cute import sm100_blockscaled as bs  # noqa: E402
from shared.cute.runtime import compile_arch, null_ptr  # noqa: E402
from tests.sm100_common import CHOOSE, KERNELS, NUM_B, artifacts, cases, sass_and_resources  # noqa: E402

# ----------------------------------------------------------------------------- independent facts
CTA_M = 128  # rows of a cta_group::1 block-scaled MMA
K_BLOCK = 256  # K per pipeline stage
MMA_K = 64  # K of one kind::mxf4nvf4 MMA (32 bytes of E2M1 per row)
SF_VEC = 16  # values per E4M3 scale
SF_ATOM = 128  # rows per scale atom (a 512-byte chunk holds 128 rows x 4 scales)
TMEM_LANES, TMEM_MAX_COLS = 128, 512
SMEM_OPTIN = 232448  # sm_100 max dynamic shared memory per block (227 KB)


def tile_bytes(tile_n: int) -> dict[str, int]:
    """Bytes one 256-wide K block of each operand occupies: FP4 = 1/2 byte, one scale per 16 values,
    B's scales in whole 128-row atoms."""
    atoms = -(-tile_n // SF_ATOM)
    return {
        "A": CTA_M * K_BLOCK // 2,
        "SFA": CTA_M * K_BLOCK // SF_VEC,
        "B": tile_n * K_BLOCK // 2,
        "SFB": atoms * SF_ATOM * K_BLOCK // SF_VEC,
    }


def expect_tx(tile_n: int, num_b: int) -> int:
    t = tile_bytes(tile_n)
    return t["A"] + t["SFA"] + num_b * (t["B"] + t["SFB"])


def tmem_columns_needed(tile_n: int, num_b: int, num_acc_stage: int) -> int:
    """fp32 accumulators (one column per N) + 4 columns per 64-K step per 128-row scale atom."""
    atoms = -(-tile_n // SF_ATOM)
    sf = (K_BLOCK // MMA_K) * 4
    return num_acc_stage * num_b * tile_n + sf + num_b * atoms * sf


# Every configuration the kernels support; the benchmark shapes' choices are among them (asserted).
CONFIGS = [
    ("gemm", GemmSm100Config(tile_n=64, num_acc_stage=2)),
    ("gemm", GemmSm100Config(tile_n=128, num_acc_stage=2)),
    ("gemm", GemmSm100Config(tile_n=256, num_acc_stage=1)),
    ("dual_gemm", DualGemmSm100Config(tile_n=64, num_acc_stage=2)),
    ("dual_gemm", DualGemmSm100Config(tile_n=128, num_acc_stage=1)),
]
CONFIG_IDS = [f"{p}-n{c.tile_n}-acc{c.num_acc_stage}" for p, c in CONFIGS]
COMPILE_SHAPE = (256, 512, 512, 1)


def test_the_benchmark_shapes_use_the_configs_checked_here():
    for problem in KERNELS:
        for shape in cases(problem, "benchmarks"):
            assert (problem, CHOOSE[problem](*shape)) in CONFIGS, (problem, shape)


# ----------------------------------------------------------------------------- PTX reading
def kernel_lines(ptx: str) -> list[str]:
    """Instruction lines of the one .entry function, inline-asm blocks ({ ... } on lines of their own,
    the mbarrier spin loops) folded into a single line so that their local labels do not collide."""
    body = ptx[ptx.index(".entry") :]
    body = body[body.index("{", body.index(")")) + 1 :]
    out, depth, block = [], 0, []
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        if line == "{":
            depth += 1
            block.append(line)
            continue
        if depth:
            block.append(line)
            if line == "}":
                depth -= 1
                if not depth:
                    out.append(" ".join(block))
                    block = []
            continue
        out.append(line)
    return out


def reg_value(lines: list[str], reg: str) -> int:
    """The immediate a register is set to with mov.b32 (exactly one definition)."""
    defs = [ln for ln in lines if re.match(rf"mov\.(b|u|s)32\s+{re.escape(reg)},", ln)]
    assert len(defs) == 1, (reg, defs)
    return int(re.search(r",\s*(-?\d+);", defs[0]).group(1))


def operand_value(lines: list[str], op: str) -> int:
    return int(op) if re.fullmatch(r"-?\d+", op) else reg_value(lines, op)


def expect_tx_counts(lines):
    hits = [re.search(r"mbarrier\.arrive\.expect_tx\.shared\.b64\s+%\w+, \[[^\]]+\], (\S+);", ln) for ln in lines]
    return [operand_value(lines, h.group(1)) for h in hits if h]


def barrier_init_counts(lines):
    hits = [re.search(r"mbarrier\.init\.shared\.b64\s+\[[^\]]+\], (\S+);", ln) for ln in lines]
    return [operand_value(lines, h.group(1)) for h in hits if h]


def tma_smem_offsets(lines):
    """Immediate offsets of the TMA load destinations [%r+OFF] from the dynamic shared-memory base."""
    offs = []
    for ln in lines:
        if ln.startswith("cp.async.bulk.tensor") and ".global" in ln:
            m = re.search(r"\.tile\S*\s+\[%\w+(?:\+(\d+))?\]", ln)
            offs.append(int(m.group(1) or 0))
    return offs


def successors(lines, labels, i, known):
    """Next instruction indices after line i, with predicate registers of known value resolved."""
    ln = lines[i]
    if re.match(r"(ret|exit|trap);", ln):
        return []
    m = re.match(r"(@(!?)(%p\d+)\s+)?bra(\.uni)?\s+(\$?\w+);", ln)
    if not m:
        return [i + 1]
    target = labels[m.group(5)]
    if not m.group(1):
        return [target]
    value = known.get(m.group(3))
    if value is not None:
        taken = value != bool(m.group(2))
        return [target] if taken else [i + 1]
    return [target, i + 1]


def escapes_without(lines, start: int, needle: str, known: dict) -> list[int]:
    """A path (line indices) from `start` to ret/exit that never executes a line containing
    `needle`, or [] when every path passes one."""
    labels = {ln[:-1]: i for i, ln in enumerate(lines) if re.fullmatch(r"\$?\w+:", ln)}
    stack, seen = [(start, [start])], {start}
    while stack:
        i, path = stack.pop()
        if needle in lines[i]:
            continue
        if re.match(r"(ret|exit|trap);", lines[i]):
            return path
        for j in successors(lines, labels, i, known):
            if j < len(lines) and j not in seen:
                seen.add(j)
                stack.append((j, path + [j]))
    return []


def guard_of(lines, i: int) -> dict:
    """{pred: value} that must hold for line i to execute: the nearest `@%p bra L` before it that
    jumps over it (the predicate defined once, so its value is the same later in the kernel)."""
    labels = {ln[:-1]: k for k, ln in enumerate(lines) if re.fullmatch(r"\$?\w+:", ln)}
    for k in range(i - 1, -1, -1):
        m = re.match(r"@(!?)(%p\d+)\s+bra(\.uni)?\s+(\$?\w+);", lines[k])
        if m and labels[m.group(4)] > i:
            defs = [ln for ln in lines if re.match(rf"\S+\s+{re.escape(m.group(2))}\b", ln)
                    or re.search(rf"\|{re.escape(m.group(2))},", ln)]
            if len(defs) == 1:
                return {m.group(2): bool(m.group(1))}  # `@%p bra` skips it: %p is false here
            return {}
    return {}


@pytest.fixture(scope="module", params=range(len(CONFIGS)), ids=CONFIG_IDS)
def compiled(request, dump_root):
    problem, config = CONFIGS[request.param]
    _, ptx, cubin = artifacts(problem, COMPILE_SHAPE, dump_root, config=config)
    return problem, config, kernel_lines(ptx), cubin


# ----------------------------------------------------------------------------- PTX: barriers, smem
def test_stage_barrier_expects_the_bytes_of_one_k_block_of_every_operand(compiled):
    """A count above the bytes the TMAs deliver hangs the MMA warp; below, it reads a half-filled stage."""
    problem, config, lines, _ = compiled
    num_b = NUM_B[problem]
    assert expect_tx_counts(lines) == [expect_tx(config.tile_n, num_b)]
    # one TMA per operand per stage: A, SFA and each B, SFB, all signalling that one barrier
    assert len(tma_smem_offsets(lines)) == 2 * (1 + num_b)
    # single-CTA everything: no multicast TMA, no CTA-pair MMA or commit (the counts above assume it)
    assert not any("multicast" in ln or "cta_group::2" in ln for ln in lines)


def test_barrier_counts_and_shared_memory_footprint(compiled):
    """Full barriers: 1 arrival (the expect-tx) + bytes; empty: 1 (tcgen05.commit); accumulator full: 1
    (tcgen05.commit), empty: the 128 epilogue threads. The stage ring the barriers imply fits in 227 KB
    with each operand's buffers laid out back to back."""
    problem, config, lines, _ = compiled
    num_b = NUM_B[problem]
    counts = barrier_init_counts(lines)
    acc = config.num_acc_stage
    assert counts.count(128) == acc, counts
    stages = (len(counts) - 2 * acc) // 2
    assert sorted(counts) == sorted([1] * (2 * stages + acc) + [128] * acc)
    assert stages >= 2
    t = tile_bytes(config.tile_n)
    order = ["A", "SFA"] + ["B", "SFB"] * num_b  # allocation order in shared memory
    bases = sorted(tma_smem_offsets(lines))
    assert bases[0] >= 8 * len(counts), "operand buffers overlap the barriers"
    for name, lo, hi in zip(order, bases, bases[1:] + [None]):
        size = stages * t[name]
        end = lo + size if hi is None else hi
        assert end - lo >= size, f"{name}: {stages} stages of {t[name]} B do not fit before the next buffer"
    end = bases[-1] + stages * t[order[-1]]
    assert end <= SMEM_OPTIN, f"{end} bytes of shared memory > {SMEM_OPTIN}"
    # and the ring is as deep as shared memory allows (one more stage would not fit)
    assert end + expect_tx(config.tile_n, num_b) > SMEM_OPTIN


# ----------------------------------------------------------------------------- PTX: tensor memory
def test_tensor_memory_allocated_once_within_512_columns_and_freed_on_every_path(compiled):
    problem, config, lines, _ = compiled
    allocs = [i for i, ln in enumerate(lines) if ln.startswith("tcgen05.alloc.")]
    deallocs = [i for i, ln in enumerate(lines) if ln.startswith("tcgen05.dealloc.")]
    assert len(allocs) == 1 and len(deallocs) == 1, (allocs, deallocs)
    ncols = operand_value(lines, re.search(r",\s*(\S+);", lines[allocs[0]]).group(1))
    assert ncols <= TMEM_MAX_COLS and ncols >= 32 and ncols & (ncols - 1) == 0, ncols
    assert operand_value(lines, re.search(r",\s*(\S+);", lines[deallocs[0]]).group(1)) == ncols
    assert tmem_columns_needed(config.tile_n, NUM_B[problem], config.num_acc_stage) <= ncols
    assert any(ln.startswith("tcgen05.relinquish_alloc_permit") for ln in lines)
    path = escapes_without(lines, allocs[0], "tcgen05.dealloc", guard_of(lines, allocs[0]))
    assert not path, "a path from tcgen05.alloc to ret without tcgen05.dealloc:\n" + "\n".join(
        lines[i] for i in path[-12:])


# ----------------------------------------------------------------------------- PTX: the K block
def test_each_k_block_copies_the_scales_then_issues_four_mmas_per_b(compiled):
    """Between the wait on a full stage and the commit that frees it: 4 scale copies per 128-row
    scale block of A and of each B (all 32x128b.warpx4: 32 lanes x 16 bytes, replicated to the 4 lane
    quadrants), then K_BLOCK / MMA_K block-scaled MMAs per B operand, inside the K loop."""
    problem, config, lines, _ = compiled
    num_b = NUM_B[problem]
    mma = [i for i, ln in enumerate(lines) if ln.startswith("tcgen05.mma.")]
    for i in mma:
        assert re.match(r"tcgen05\.mma\.cta_group::1\.kind::mxf4nvf4\.block_scale\.block16(\.|\s)", lines[i]), lines[i]
    assert len(mma) == (K_BLOCK // MMA_K) * num_b
    cps = [i for i, ln in enumerate(lines) if ln.startswith("tcgen05.cp.")]
    assert all(lines[i].startswith("tcgen05.cp.cta_group::1.32x128b.warpx4 ") for i in cps), [lines[i] for i in cps]
    atoms = -(-config.tile_n // SF_ATOM)
    assert len(cps) == (K_BLOCK // MMA_K) * (1 + num_b * atoms)
    wait = max(i for i, ln in enumerate(lines[: min(cps)]) if "mbarrier.try_wait" in ln)
    commit = min(i for i, ln in enumerate(lines) if ln.startswith("tcgen05.commit") and i > max(mma))
    assert wait < min(cps) and max(cps) < min(mma) and max(mma) < commit
    # nothing else waits or commits inside the block, and the block is a loop body (a back edge)
    assert not any("mbarrier.try_wait" in ln or ln.startswith("tcgen05.commit") for ln in lines[wait + 1 : commit])
    labels = {ln[:-1]: i for i, ln in enumerate(lines) if re.fullmatch(r"\$?\w+:", ln)}
    back = [ln for ln in lines[commit : commit + 20] if (m := re.search(r"bra\S*\s+(\$?\w+);", ln))
            and labels[m.group(1)] < wait]
    assert back, "the K block is not inside a loop"


def test_no_local_memory_and_no_spills(compiled):
    _, _, lines, cubin = compiled
    assert not any(".local" in ln for ln in lines)
    sass, res = sass_and_resources(cubin)
    assert not re.search(r"\b(LDL|STL)\b", sass), "local-memory spills in SASS"
    usage = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", res)
    assert usage and usage.group(2) == "0" and usage.group(3) == "0", res


# ----------------------------------------------------------------------------- layouts on the host
# A problem with several tiles in every direction: the last M tile, the last (odd, for 64-wide tiles)
# N tile, two K blocks and two batches are all among the coordinates evaluated.
LAYOUT_SHAPE = {64: (384, 384, 512, 2), 128: (384, 384, 512, 2), 256: (384, 512, 512, 2)}


def _flat(t):
    return [x for e in t for x in _flat(e)] if isinstance(t, tuple) else [t]


def _plain(layout):
    """(flat shape, flat stride) of a static CuTe layout, as Python ints."""
    shape, stride = _flat(layout.shape), _flat(layout.stride)
    assert all(isinstance(x, int) for x in shape + stride), f"not a static layout: {layout}"
    return shape, stride


_PROBED: dict = {}


@cute.jit
def _probe_layouts(sf_ptr: cute.Pointer, key: cutlass.Constexpr):
    """Build the mainloop exactly as the kernels do and record the static layouts they use."""
    mcfg, (m, n, k, l) = key
    ml = bs.BlockScaledMainloop(mcfg)
    tiled_mma = ml.setup()
    one = (None, None, None, 0)
    out = _PROBED.setdefault(key, {})
    out["sfa_smem_staged"] = _plain(ml.sfa_smem_layout)
    out["sfb_smem_staged"] = _plain(ml.sfb_smem_layout)
    out["sfa_smem"] = _plain(cute.slice_(ml.sfa_smem_layout, one))
    out["sfb_smem"] = _plain(cute.slice_(ml.sfb_smem_layout, one))
    out["sfa_tmem"] = _plain(blockscaled_utils.make_tmem_layout_sfa(
        ml.tiled_mma, ml.mma_tiler, bs.SF_VEC_SIZE, cute.slice_(ml.sfa_smem_layout, one)))
    out["sfb_tmem"] = _plain(blockscaled_utils.make_tmem_layout_sfb(
        ml.tiled_mma, ml.mma_tiler, bs.SF_VEC_SIZE, cute.slice_(ml.sfb_smem_layout, one)))
    out["acc"] = _plain(ml.make_acc_fragment().layout)
    out["mma_shape"] = tuple(tiled_mma.shape_mnk)
    # The global scale views exactly as the kernels build them, over a static problem.
    mA = cute.make_tensor(sf_ptr, cute.make_layout((m, k, l), stride=(k, 1, m * k)))
    mB = cute.make_tensor(sf_ptr, cute.make_layout((n, k, l), stride=(k, 1, n * k)))
    gsfa = ml.tile_global(tiled_mma.get_slice(0), bs.make_scale_operand(sf_ptr, mA), operand_a=True)
    out["gSFA"] = _plain(gsfa.layout)
    out["gSFB"] = _plain(ml.tile_global_sfb(bs.make_scale_operand(sf_ptr, mB)).layout)
    out["ml"] = ml


def probed(mcfg: bs.MainloopConfig, shape) -> dict:
    key = (mcfg, tuple(shape))
    if key not in _PROBED:
        with compile_arch("sm_100a"):
            cute.compile(_probe_layouts, null_ptr(bs.SF_DTYPE), key)
    return _PROBED[key]


def evaluate(plain, names):
    """Offsets of a layout at every coordinate; coords[name] per named flat mode ('_' = size-1 mode)."""
    shape, stride = plain
    assert len(shape) == len(names), (shape, names)
    grid = np.indices(shape).reshape(len(shape), -1).astype(np.int64)
    coords = {}
    for i, name in enumerate(names):
        if name == "_":
            assert shape[i] == 1, (shape, names)
        else:
            coords[name] = grid[i]
    return coords, (grid * np.array(stride, dtype=np.int64)[:, None]).sum(0)


def sf_names(atoms: int, kind: str) -> list[str]:
    """Flat mode names of the scale layouts (asserted against their shapes by the sizes checked below):
    rows r = m0 + 32 m1 (+ 128 atom), K = k0 + 16 k1 + 64 kb inside a 256-wide block."""
    mn = ["m0", "m1"] + (["atom"] if atoms > 1 else [])
    if kind == "smem":  # (((32,4),atoms),(16,4)),1,4
        return ["m0", "m1", "atom" if atoms > 1 else "_", "k0", "k1", "_", "kb"]
    if kind == "tmem":  # (((32,4*atoms),4),(16,4)),1,4 : the third mode replicates over lane quadrants
        return ["m0", "m1", "q", "k0", "k1", "_", "kb"]
    return mn + ["k0", "k1", "_", "kb", "tmn", "tk", "_", "l"]  # global: ..., RestMN, RestK, (1, L)


SIZES = {"m0": 32, "k0": SF_VEC, "k1": 4, "kb": K_BLOCK // MMA_K, "q": 4}


def check_sizes(coords, atoms):
    for name, size in SIZES.items():
        if name in coords:
            assert coords[name].max() + 1 == size, name
    if "atom" in coords:
        assert coords["atom"].max() + 1 == atoms


def row_and_k(c):
    r = c["m0"] + 32 * c["m1"] + SF_ATOM * c.get("atom", 0)
    return r, c["k0"] + SF_VEC * c["k1"] + MMA_K * c["kb"]


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


# ----------------------------------------------------------------------------- emulation
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


EMULATED = [
    ("gemm", CONFIGS[0][1], (384, 384, 512, 2), 5),  # 64-wide tiles: odd N tiles, several tiles per CTA
    ("gemm", CONFIGS[2][1], (256, 512, 768, 1), 3),  # 256-wide tiles: two SFB atoms
    ("dual_gemm", CONFIGS[3][1], (256, 384, 512, 2), 7),
    ("dual_gemm", CONFIGS[4][1], (384, 256, 512, 1), 2),
]


@pytest.mark.parametrize("problem,config,shape,grid", EMULATED,
                         ids=[f"{p}-n{c.tile_n}-{'x'.join(map(str, s))}-grid{g}" for p, c, s, g in EMULATED])
def test_emulated_data_movement_matches_the_reference(problem, config, shape, grid):
    from harness.check import check_tensor

    prob = load_problem(problem)
    m, n, k, l = shape
    data = prob.reference.generate_input(m=m, n=n, k=k, l=l, seed=11, device="cpu")
    got = emulate(problem, config, data, grid)
    want = prob.reference.ref_kernel(prob.reference.generate_input(m=m, n=n, k=k, l=l, seed=11, device="cpu"))
    ok, message = check_tensor(got, want, prob.rtol, prob.atol)
    assert ok, message
