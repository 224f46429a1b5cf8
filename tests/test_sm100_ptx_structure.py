"""B200 readiness, CPU tier: the PTX (and SASS) of every configuration the benchmark shapes use and
the other supported ones (tests/sm100_facts.py CONFIGS), read with tests/ptx_reader.py.

  * the stage barrier's expect-tx count = the bytes of one 256-wide K block of every operand; the TMA
    destinations fit in 227 KB of shared memory with the stage count the barriers imply; the barrier
    arrival counts;
  * tensor memory: one power-of-two allocation of <= 512 columns that covers the column plan, freed
    (same count) on every path from the allocation to `ret`;
  * per K block, between the stage's full-barrier wait and the `tcgen05.commit` that frees it, exactly
    4 scale copies per 128-row scale block (all `32x128b.warpx4`) and 4 block-scaled MMAs per B;
  * SASS: no local memory, no spills.
Every number is computed from the problem (tests/sm100_facts.py), not taken from the kernel modules.
"""

from __future__ import annotations

import re

import pytest

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

from tests.ptx_reader import (  # noqa: E402
    barrier_init_counts,
    escapes_without,
    expect_tx_counts,
    guard_of,
    kernel_lines,
    operand_value,
    tma_smem_offsets,
)
from tests.sm100_common import CHOOSE, KERNELS, NUM_B, artifacts, cases, sass_and_resources  # noqa: E402
from tests.sm100_facts import (  # noqa: E402
    CONFIG_IDS,
    CONFIGS,
    K_BLOCK,
    MMA_K,
    SF_ATOM,
    SMEM_OPTIN,
    TMEM_MAX_COLS,
    expect_tx,
    tile_bytes,
    tmem_columns_needed,
)

COMPILE_SHAPE = (256, 512, 512, 1)


def test_the_benchmark_shapes_use_the_configs_checked_here():
    for problem in KERNELS:
        for shape in cases(problem, "benchmarks"):
            assert (problem, CHOOSE[problem](*shape)) in CONFIGS, (problem, shape)


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
