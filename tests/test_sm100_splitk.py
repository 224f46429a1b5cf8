"""B200 readiness, CPU tier, of the gemm "splitk_swap" variant (shared/cute/sm100_splitk.py): A and B
swapped, K split over a cluster, fp32 partials summed through distributed shared memory.

For every config the benchmark shapes choose (and the 64-wide one), compiled for sm_100a:
  * the cluster reduction in the PTX: `mapa` + `st.shared::cluster` sends, `ld.shared` adds after the
    `barrier.cluster.arrive` that publishes them, counts from the tile and split sizes; every path
    from the kernel's entry to its exit passes each cluster barrier phase (a thread that skips one
    hangs the cluster);
  * the stage barrier's expect-tx = one K block of the swapped operands (128 rows of B, tile_n rows of
    A, their scales in whole 128-row atoms), the TMA destinations and the exchange buffer within 227 KB;
  * tensor memory allocated once and freed on every path; no local memory, no spills (SASS);
  * a host emulation (tests/movement_emulator.py `emulate_splitk`) of the K split and the exchange:
    every K block of every output tile accumulated by exactly one CTA of its cluster, every partial
    reduced exactly once into C.
Each check has a test that breaks the variant on purpose and shows the check failing. Every expected
number is computed here from the problem (tests/sm100_facts.py), not read from the kernel modules.
"""

from __future__ import annotations

import re

import pytest

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

from problems.gemm import config as gemm_config  # noqa: E402
from problems.gemm import kernel_sm100 as gemm_k  # noqa: E402
from problems.gemm.config import GemmSm100SplitKConfig  # noqa: E402
from shared.cute import sm100_blockscaled as bs  # noqa: E402
from shared.cute import sm100_splitk as sk  # noqa: E402
from shared.cute.compile_cache import CompileCache  # noqa: E402
from shared.cute.sm100_gemm import Sm100BlockScaledGemm  # noqa: E402
from shared.cute.sm100_host import compile_sm100  # noqa: E402
from tests.movement_emulator import check_splitk_trace, emulate_splitk  # noqa: E402
from tests.ptx_reader import (  # noqa: E402
    barrier_init_counts,
    compared_register,
    escapes_without,
    expect_tx_counts,
    guard_of,
    kernel_lines,
    operand_value,
    role_predicates,
    tma_smem_offsets,
)
from tests.sm100_common import artifacts, cases, sass_and_resources  # noqa: E402
from tests.sm100_facts import CTA_M, K_BLOCK, SF_ATOM, SF_VEC, SMEM_OPTIN, TMEM_MAX_COLS, tmem_columns_needed  # noqa: E402

SMS = 148  # a B200
BENCH = cases("gemm", "benchmarks")
EPI_COLS = 32  # accumulator columns per tcgen05.ld 32x32b.x32: one fp32 register per column
VEC = 4  # fp32 per 16-byte DSMEM vector


def configs_checked():
    """The benchmark shapes' configs (in shape order, distinct) and the 64-wide one."""
    out = []
    for shape in BENCH:
        cfg = gemm_config.choose_sm100_splitk(*shape, SMS)
        if cfg not in out:
            out.append(cfg)
    return out + [GemmSm100SplitKConfig(tile_n=64, splits=2)]


CONFIGS = configs_checked()
IDS = [f"n{c.tile_n}-s{c.splits}" for c in CONFIGS]


# ----------------------------------------------------------------------------- facts
def swapped_stage_bytes(tile_n: int) -> int:
    """One 256-wide K block of the swapped operands: 128 rows of B (the MMA's A) and tile_n rows of A
    (the MMA's B), packed FP4, with their E4M3 scales in whole 128-row atoms."""
    atom_sf = SF_ATOM * K_BLOCK // SF_VEC
    return CTA_M * K_BLOCK // 2 + atom_sf + tile_n * K_BLOCK // 2 + atom_sf


def exchange_bytes(tile_n: int, splits: int) -> int:
    """Each CTA receives, for its 1/splits of the 128 x tile_n fp32 tile, a partial from every other."""
    return (splits - 1) * CTA_M * (tile_n // splits) * 4


# ----------------------------------------------------------------------------- checks
def check_dsmem_reduction(lines: list[str], tile_n: int, splits: int) -> None:
    """Sends: one `mapa` + `st.shared::cluster.v4.f32` per 16-byte vector of every subtile a rank does
    not own, in every rank's branch; adds: one `ld.shared.v4.f32` per vector, partial and owned
    subtile; all sends before the barrier arrival that publishes them, all adds after it, and the
    start phase waited on before the first send. One tcgen05.ld per subtile in every rank's branch."""
    subtiles = tile_n // EPI_COLS
    owned = subtiles // splits
    vectors = EPI_COLS // VEC
    sends = [i for i, ln in enumerate(lines) if "st.shared::cluster.v4.f32" in ln]
    # each store's address is the mapa of the line before (the sender's exchange address -> the owner's)
    assert all(lines[i - 1].startswith("mapa.shared::cluster.u32 r,") and "[r]" in lines[i] for i in sends), \
        "a DSMEM store not addressed through mapa"
    assert len(sends) == splits * (subtiles - owned) * vectors, f"{len(sends)} DSMEM stores"
    adds = [i for i, ln in enumerate(lines) if ln.startswith("ld.shared.v4.f32")]
    assert len(adds) == subtiles * (splits - 1) * vectors, f"{len(adds)} exchange-buffer loads"
    loads = [ln for ln in lines if ln.startswith("tcgen05.ld.")]
    assert len(loads) == splits * subtiles, f"{len(loads)} tcgen05.ld"
    relaxed = [i for i, ln in enumerate(lines) if ln.startswith("barrier.cluster.arrive.relaxed")]
    arrives = [i for i, ln in enumerate(lines) if re.match(r"barrier\.cluster\.arrive(\.aligned)?;", ln)]
    waits = [i for i, ln in enumerate(lines) if ln.startswith("barrier.cluster.wait")]
    assert len(relaxed) == 1 and len(arrives) == 2 and len(waits) == 4, (relaxed, arrives, waits)
    publish = [a for a in arrives if max(sends) < a < min(adds)]
    assert len(publish) == 1, "the sends and the adds are not separated by one barrier.cluster.arrive"
    assert any(relaxed[0] < w < min(sends) for w in waits), "a send before every CTA of the cluster is known to run"


def warp_register(lines: list[str]) -> str:
    """The warp index's register: the one the guard of tcgen05.alloc compares (warp 0 allocates)."""
    alloc = next(i for i, ln in enumerate(lines) if ln.startswith("tcgen05.alloc."))
    (pred,) = guard_of(lines, alloc)
    return compared_register(lines, pred)


def check_every_thread_joins(lines: list[str]) -> None:
    """For each of the 6 warps (its role's branches resolved), every path from the entry to the exit
    passes the start arrival, a publishing arrival and a wait."""
    reg = warp_register(lines)
    for warp in range(6):
        known = role_predicates(lines, reg, warp)
        for needle in ("barrier.cluster.arrive.relaxed", "barrier.cluster.arrive;", "barrier.cluster.wait"):
            path = escapes_without(lines, 0, needle, known)
            assert not path, f"warp {warp}: a path to the exit without {needle}:\n" + "\n".join(
                lines[i] for i in path[-8:])


def check_stage_bytes(lines: list[str], tile_n: int, splits: int) -> None:
    """The stage barrier expects one K block of the swapped operands; four TMAs per stage (B, its
    scales, A, its scales), none multicast; their stage rings and the exchange buffer fit."""
    assert expect_tx_counts(lines) == [swapped_stage_bytes(tile_n)], expect_tx_counts(lines)
    bases = sorted(tma_smem_offsets(lines))
    assert len(bases) == 4
    assert not any("multicast" in ln or "cta_group::2" in ln for ln in lines)
    counts = barrier_init_counts(lines)
    assert sorted(counts) == sorted([1] * (len(counts) - 1) + [128]), counts  # one accumulator stage
    stages = (len(counts) - 2) // 2
    sizes = [CTA_M * K_BLOCK // 2, SF_ATOM * K_BLOCK // SF_VEC, tile_n * K_BLOCK // 2, SF_ATOM * K_BLOCK // SF_VEC]
    for lo, hi, size in zip(bases, bases[1:] + [None], sizes):
        assert hi is None or hi - lo >= stages * size, f"a {stages}-stage ring of {size} B overlaps the next"
    end = bases[-1] + stages * sizes[-1]
    assert end + exchange_bytes(tile_n, splits) <= SMEM_OPTIN, f"{end} + exchange > {SMEM_OPTIN}"


def check_tmem(lines: list[str], tile_n: int) -> None:
    allocs = [i for i, ln in enumerate(lines) if ln.startswith("tcgen05.alloc.")]
    deallocs = [i for i, ln in enumerate(lines) if ln.startswith("tcgen05.dealloc.")]
    assert len(allocs) == 1 and len(deallocs) == 1, (allocs, deallocs)
    ncols = operand_value(lines, re.search(r",\s*(\S+);", lines[allocs[0]]).group(1))
    assert ncols <= TMEM_MAX_COLS and ncols & (ncols - 1) == 0 and ncols >= tmem_columns_needed(tile_n, 1, 1)
    assert operand_value(lines, re.search(r",\s*(\S+);", lines[deallocs[0]]).group(1)) == ncols
    # warp 0 allocates and frees: its branches resolved (the guards are recomputed after the reduction)
    path = escapes_without(lines, allocs[0], "tcgen05.dealloc", role_predicates(lines, warp_register(lines), 0))
    assert not path, "a path from tcgen05.alloc to the exit without tcgen05.dealloc"


def check_no_spills(sass: str, res: str) -> None:
    assert "code for sm_100a" in sass
    assert not re.search(r"\b(LDL|STL)\b", sass), "local-memory spills in SASS"
    usage = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", res)
    assert usage and usage.group(2) == "0" and usage.group(3) == "0", res


# ----------------------------------------------------------------------------- compiled variants
@pytest.fixture(scope="module", params=range(len(CONFIGS)), ids=IDS)
def compiled(request, dump_root):
    config = CONFIGS[request.param]
    shape = next((s for s in BENCH if gemm_config.choose_sm100_splitk(*s, SMS) == config), (256, 512, 1024, 1))
    _, ptx, cubin = artifacts("gemm", shape, dump_root, config=config)
    return config, kernel_lines(ptx), cubin


def test_benchmark_shapes_fill_the_gpu_with_split_clusters():
    chosen = [gemm_config.choose_sm100_splitk(*s, SMS) for s in BENCH]
    assert [(c.tile_n, c.splits) for c in chosen] == [(128, 2), (128, 4), (128, 2)]
    for (m, n, k, l), c in zip(BENCH, chosen):
        ctas = (n // CTA_M) * (m // c.tile_n) * l * c.splits
        assert 0.75 * SMS <= ctas <= SMS, (m, n, k, ctas)
    assert "splitk_swap" in gemm_config.SM100_VARIANTS
    assert gemm_config.SM100_VARIANTS["splitk_swap"].choose is gemm_config.choose_sm100_splitk
    assert gemm_config.SM100_VARIANTS["conservative"].choose is gemm_config.choose_sm100


@pytest.mark.parametrize("shape", [(128, 128, 256, 1), (128, 7168, 16384, 4), (100, 7168, 2048, 1),
                                   (128, 7168, 200, 1)])
def test_chooser_returns_none_where_the_variant_does_not_apply(shape):
    assert gemm_config.choose_sm100_splitk(*shape, SMS) is None


def test_bad_configs_and_shapes_raise():
    with pytest.raises(ValueError, match="splits = 3"):
        GemmSm100SplitKConfig(tile_n=128, splits=3)
    with pytest.raises(ValueError, match="tile_n = 256"):
        GemmSm100SplitKConfig(tile_n=256, splits=2)
    with pytest.raises(ValueError, match="k = 512"):
        gemm_k.compile_for(128, 512, 512, 1, config=GemmSm100SplitKConfig(tile_n=128, splits=4))
    with pytest.raises(TypeError, match="config"):
        gemm_k.kernel_class(object())
    assert gemm_k.kernel_class(GemmSm100SplitKConfig()) is gemm_k.NvFp4GemmSm100SplitK


def test_dsmem_reduction_in_the_ptx(compiled):
    config, lines, _ = compiled
    check_dsmem_reduction(lines, config.tile_n, config.splits)
    check_every_thread_joins(lines)


def test_stage_barrier_expects_the_swapped_operands(compiled):
    config, lines, _ = compiled
    check_stage_bytes(lines, config.tile_n, config.splits)


def test_tensor_memory_freed_on_every_path(compiled):
    config, lines, _ = compiled
    check_tmem(lines, config.tile_n)


def test_no_local_memory_and_no_spills(compiled):
    _, lines, cubin = compiled
    assert not any(".local" in ln for ln in lines)
    check_no_spills(*sass_and_resources(cubin))


# ----------------------------------------------------------------------------- host emulation
@pytest.mark.parametrize("shape", BENCH, ids=["x".join(map(str, s)) for s in BENCH])
def test_emulated_split_covers_every_k_block_and_partial_once(shape):
    """The benchmark shapes' configs with their M and K (N cut to 512: N only sets the tile count)."""
    m, _, k, l = shape
    config = gemm_config.choose_sm100_splitk(*shape, SMS)
    check_splitk_trace(emulate_splitk(config, m, 512, k, l))


def test_emulated_uneven_split_and_narrow_tiles():
    check_splitk_trace(emulate_splitk(GemmSm100SplitKConfig(tile_n=128, splits=4), 128, 256, 7 * K_BLOCK, 1))
    check_splitk_trace(emulate_splitk(GemmSm100SplitKConfig(tile_n=64, splits=2), 256, 256, 5 * K_BLOCK, 2))


# ----------------------------------------------------------------------------- broken on purpose
def test_emulation_fails_when_every_rank_starts_at_k_block_0(monkeypatch):
    monkeypatch.setattr(sk.SplitKScheduler, "k_block", lambda self, tile, k_step: k_step)
    with pytest.raises(AssertionError, match="accumulated 2 times"):
        check_splitk_trace(emulate_splitk(GemmSm100SplitKConfig(tile_n=128, splits=2), 128, 256, 4 * K_BLOCK, 1))


def test_emulation_fails_when_senders_share_a_slot(monkeypatch):
    monkeypatch.setattr(sk, "splitk_slot", lambda sender, owner, sub, splits, subtiles: sub // splits)
    with pytest.raises(AssertionError, match="written twice"):
        check_splitk_trace(emulate_splitk(GemmSm100SplitKConfig(tile_n=128, splits=4), 128, 256, 4 * K_BLOCK, 1))


def _broken_lines(cls, config, dump_root, name):
    out = dump_root / f"broken_{name}"
    out.mkdir()
    compile_sm100(CompileCache(), cls, config, 1, (128, 512, 1024, 1), "sm_100a",
                  f"--keep-ptx --dump-dir {out}")
    (ptx,) = out.glob("*.ptx")
    return kernel_lines(ptx.read_text())


BROKEN_CONFIG = GemmSm100SplitKConfig(tile_n=128, splits=2)


class _NoProducerJoin(gemm_k.NvFp4GemmSm100SplitK):
    """The TMA and MMA warps skip the cluster barriers (the base class's no-op tail)."""

    producer_warps_tail = Sm100BlockScaledGemm.producer_warps_tail


class _HalfSent(gemm_k.NvFp4GemmSm100SplitK):
    """Only half of each subtile's vectors travel (and are added)."""

    def __init__(self, config):
        super().__init__(config)
        self.vectors //= 2


class _MiscountingMainloop(bs.BlockScaledMainloop):
    def bind(self, tiled_mma):
        super().bind(tiled_mma)
        self.tma_bytes += 16


class _NotFreeingMainloop(bs.BlockScaledMainloop):
    @staticmethod
    def release_accumulators(tmem, epilogue_barrier, acc_tmem_ptr):
        tmem.relinquish_alloc_permit()
        epilogue_barrier.arrive_and_wait()


class _Miscounted(gemm_k.NvFp4GemmSm100SplitK):
    def __init__(self, config):
        super().__init__(config)
        self.ml = _MiscountingMainloop(config.mainloop())


class _NoDealloc(gemm_k.NvFp4GemmSm100SplitK):
    def __init__(self, config):
        super().__init__(config)
        self.ml = _NotFreeingMainloop(config.mainloop())


def test_join_check_fails_when_the_producer_warps_skip_the_cluster_barrier(dump_root):
    lines = _broken_lines(_NoProducerJoin, BROKEN_CONFIG, dump_root, "join")
    with pytest.raises(AssertionError, match="a path to the exit without barrier.cluster"):
        check_every_thread_joins(lines)
    with pytest.raises(AssertionError):
        check_dsmem_reduction(lines, BROKEN_CONFIG.tile_n, BROKEN_CONFIG.splits)


def test_reduction_check_fails_when_half_a_subtile_travels(dump_root):
    lines = _broken_lines(_HalfSent, BROKEN_CONFIG, dump_root, "half")
    with pytest.raises(AssertionError, match="DSMEM stores"):
        check_dsmem_reduction(lines, BROKEN_CONFIG.tile_n, BROKEN_CONFIG.splits)


def test_stage_check_fails_when_the_expected_bytes_are_miscounted(dump_root):
    lines = _broken_lines(_Miscounted, BROKEN_CONFIG, dump_root, "tx")
    with pytest.raises(AssertionError, match=str(swapped_stage_bytes(BROKEN_CONFIG.tile_n) + 16)):
        check_stage_bytes(lines, BROKEN_CONFIG.tile_n, BROKEN_CONFIG.splits)


def test_tmem_check_fails_when_the_dealloc_is_dropped(dump_root):
    lines = _broken_lines(_NoDealloc, BROKEN_CONFIG, dump_root, "dealloc")
    with pytest.raises(AssertionError):
        check_tmem(lines, BROKEN_CONFIG.tile_n)


def test_spill_check_fails_on_local_memory_traffic(compiled):
    _, _, cubin = compiled
    sass, res = sass_and_resources(cubin)
    with pytest.raises(AssertionError, match="spills"):
        check_no_spills(sass + "\n        /*0a10*/                   STL [R1+0x4], R2 ;\n", res)
    with pytest.raises(AssertionError):
        check_no_spills(sass, re.sub(r"LOCAL:\d+", "LOCAL:8", res))


# ----------------------------------------------------------------------------- on a B200
# Runs only where a Blackwell GPU is present (`pytest -m sm100`, `nox -s b200`): the variant on every
# manifest case it applies to, and each config on a shape of its own (uneven split included), output
# poisoned with NaN so that an unwritten element fails.
FORCED = [(GemmSm100SplitKConfig(tile_n=64, splits=2), dict(m=256, n=512, k=1280, l=2, seed=3)),
          (GemmSm100SplitKConfig(tile_n=128, splits=4), dict(m=128, n=256, k=1792, l=1, seed=4)),
          (GemmSm100SplitKConfig(tile_n=128, splits=2), dict(m=384, n=1024, k=2048, l=1, seed=5))]


@pytest.mark.sm100
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
def test_splitk_matches_reference_on_b200(generator):
    import torch

    from harness.check import check
    from harness.problem import load_problem
    from shared.device_facts import sm_count

    prob = load_problem("gemm")
    gen = getattr(prob.reference, generator)
    runs = []
    for case in [dict(c) for c in (*prob.tests, *prob.benchmarks)]:
        shape = tuple(case[x] for x in ("m", "n", "k", "l"))
        cfg = gemm_config.choose_sm100_splitk(*shape, sm_count(torch.device("cuda")))
        if cfg is not None:
            runs.append((cfg, case))
    assert runs, "the variant applies to no manifest case"
    for cfg, case in runs + FORCED:
        data = gen(**case, device="cuda")
        data[-1].fill_(float("nan"))
        out = gemm_k.run(data, cfg)
        torch.cuda.synchronize()
        ok, message = check(prob, gen(**case, device="cuda"), out)
        assert ok, f"splitk_swap {case} ({generator}, {cfg}): {message}"
