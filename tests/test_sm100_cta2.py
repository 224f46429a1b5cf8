"""B200 readiness, CPU tier: the dual GEMM's "cta2" variant (2-CTA MMAs, tcgen05 cta_group::2, 256-row
tiles on clusters of (2,1,1)), compiled for sm_100a and read from its PTX / SASS (tests/ptx_reader.py)
and its launch, plus the pair's data movement emulated on the host (tests/pair_emulator.py).

Each check is a function that raises AssertionError; each is run on the variant and on a variant broken
on purpose (a monkeypatched mainloop or pipeline compiled afresh), which it must reject:

  * MMAs and scale copies are cta_group::2 and only the leader CTA (rank 0) can reach them;
  * the stage barrier: one expect-tx, the leader's only, of both CTAs' bytes; every TMA is the 2-SM
    form and signals the leader's barrier (the peer bit of its address cleared); the B scales go by
    multicast to both CTAs (mask 0b11), the rest not;
  * every tcgen05.commit is cta_group::2 and multicasts to both CTAs (mask 0b11);
  * barrier arrival counts: stage full / empty 1, accumulator full 1, accumulator empty 256 (both CTAs'
    epilogue threads), the tensor-memory dealloc handshake 32;
  * tensor memory: one cta_group::2 allocation of a power of two <= 512 columns that covers the plan,
    freed (cta_group::2, same count) on every path, on both CTAs;
  * the launch: cluster (2, 1, 1), an even grid of at most the SM count;
  * SASS: no local memory, no spills;
  * host emulation: each CTA's rows of A and half of B, each CTA's half of the B scales multicast to
    both, each CTA's rows of C, against the reference.
Every number comes from tests/sm100_facts.py, not from the kernel modules.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

from problems.dual_gemm import config as dual_config  # noqa: E402
from problems.dual_gemm import kernel_sm100 as dual_k  # noqa: E402
from problems.group_gemm import config as group_config  # noqa: E402
from problems.group_gemm import kernel_sm100 as group_k  # noqa: E402
from problems.group_gemm import schedule_sm100 as group_schedule  # noqa: E402
from shared.cute import launch_queue  # noqa: E402
from shared.cute import sm100_blockscaled as bs  # noqa: E402
from tests.ptx_reader import (  # noqa: E402
    barrier_init_counts,
    escapes_without,
    eval_reg,
    expect_tx_counts,
    guard_of,
    kernel_lines,
    operand_value,
    reachable,
    with_equal_predicates,
)
from tests.sm100_common import cases, sass_and_resources  # noqa: E402
from tests.sm100_facts import (  # noqa: E402
    CTA2_CONFIG_IDS,
    CTA2_CONFIGS,
    K_BLOCK,
    MMA_K,
    PAIR_MASK,
    SF_ATOM,
    SMEM_PEER_BIT,
    TMEM_MAX_COLS,
    pair_expect_tx,
    tmem_columns_needed,
)

NUM_B = 2
COMPILE_SHAPE = (256, 512, 512, 1)
B200_SMS = 148
LEADER, PEER = {"%cluster_ctarank": 0, "%ctaid.x": 0}, {"%cluster_ctarank": 1, "%ctaid.x": 1}


# ------------------------------------------------------------------------------ compile
_COUNT = [0]


def compile_variant(config, dump_root: Path, group: bool = False):
    """Compile `config` afresh (its own dump folder, so no cached binary is reused); returns (PTX lines,
    cubin path, the launch's recorded grid and cluster)."""
    _COUNT[0] += 1
    out = dump_root / f"cta2_{_COUNT[0]}"
    out.mkdir()
    launches = []
    real = launch_queue.launch

    def recording(kernel_call, queue, **cfg):
        launches.append(cfg)
        return real(kernel_call, queue, **cfg)

    launch_queue.launch = recording
    try:
        options = f"--keep-ptx --keep-cubin --dump-dir {out}"
        if group:
            group_k.compile_for(config, arch="sm_100a", options=options)
        else:
            dual_k.compile_for(*COMPILE_SHAPE, arch="sm_100a", config=config, options=options)
    finally:
        launch_queue.launch = real
    (ptx,) = glob.glob(str(out / "*.ptx"))
    (cubin,) = glob.glob(str(out / "*.cubin"))
    assert len(launches) == 1, launches
    return kernel_lines(Path(ptx).read_text()), Path(cubin), launches[0]


@pytest.fixture(scope="module", params=range(len(CTA2_CONFIGS)), ids=CTA2_CONFIG_IDS)
def compiled(request, dump_root):
    config = CTA2_CONFIGS[request.param]
    return (config, *compile_variant(config, dump_root))


# ------------------------------------------------------------------------------ the checks
def _indices(lines, prefix):
    return [i for i, ln in enumerate(lines) if ln.startswith(prefix)]


def check_pair_mmas(lines, tile_n: int, num_b: int = NUM_B) -> None:
    """4 cta_group::2 block-scaled MMAs per B and 4 cta_group::2 scale copies per 128-row scale block,
    issued by the leader only (the peer CTA cannot reach them)."""
    mma = _indices(lines, "tcgen05.mma.")
    cps = _indices(lines, "tcgen05.cp.")
    assert len(mma) == (K_BLOCK // MMA_K) * num_b, len(mma)
    for i in mma:
        assert re.match(r"tcgen05\.mma\.cta_group::2\.kind::mxf4nvf4\.block_scale\.block16(\.|\s)", lines[i]), lines[i]
    atoms = -(-tile_n // SF_ATOM)
    assert len(cps) == (K_BLOCK // MMA_K) * (1 + num_b * atoms), len(cps)
    assert all(lines[i].startswith("tcgen05.cp.cta_group::2.32x128b.warpx4 ") for i in cps)
    leader, peer = reachable(lines, LEADER), reachable(lines, PEER)
    assert all(i in leader for i in mma + cps), "the leader cannot reach its MMAs"
    assert not any(i in peer for i in mma + cps), "the peer CTA issues MMAs or scale copies"


def check_pair_tx(lines, tile_n: int, num_b: int = NUM_B) -> None:
    """One expect-tx of both CTAs' bytes, the leader's only; 2-SM TMAs that all signal the leader's
    barrier; the B scales multicast to both CTAs, A, SFA and B not multicast."""
    assert expect_tx_counts(lines) == [pair_expect_tx(tile_n, num_b)], expect_tx_counts(lines)
    (expect,) = _indices(lines, "mbarrier.arrive.expect_tx")
    assert expect in reachable(lines, LEADER) and expect not in reachable(lines, PEER), \
        "the stage barrier's expect-tx must be the leader's alone"
    loads = [i for i in _indices(lines, "cp.async.bulk.tensor") if ".global" in lines[i]]
    assert len(loads) == 2 * (1 + num_b), len(loads)
    multicast = [i for i in loads if ".multicast::cluster" in lines[i]]
    assert len(multicast) == num_b, "only the B scales are multicast"
    for i in loads:
        assert ".cta_group::2" in lines[i], f"not the 2-SM TMA: {lines[i]}"
        bar = re.search(r"\],\s*\[(%r\d+)\]", lines[i]).group(1)
        for env in (LEADER, PEER):
            d = [j for j in range(i) if re.match(rf"and\.b32\s+{re.escape(bar)},", lines[j])]
            assert d, f"the TMA's barrier is not masked to the leader: {lines[i]}"
            mask = eval_reg(lines, lines[d[-1]].rstrip(";").split(",")[-1].strip(), env, d[-1])
            assert mask & SMEM_PEER_BIT == 0 and mask & 0xFFFFF8 == 0xFFFFF8, hex(mask & 0xFFFFFFFF)
    for i in multicast:
        for env in (LEADER, PEER):
            assert eval_reg(lines, lines[i].rstrip(";").split(",")[-2].strip(), env, i) == PAIR_MASK, lines[i]


def check_pair_commits(lines) -> None:
    """Every tcgen05.commit: cta_group::2, multicast to both CTAs of the pair (the stage's empty barrier
    and the accumulator's full barrier live in both)."""
    commits = _indices(lines, "tcgen05.commit")
    assert len(commits) == 2, [lines[i] for i in commits]
    for i in commits:
        assert lines[i].startswith(
            "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64"), lines[i]
        mask = lines[i].rstrip(";").split(",")[-1].strip()
        assert eval_reg(lines, mask, LEADER, i) == PAIR_MASK, f"commit mask {eval_reg(lines, mask, LEADER, i):#b}"


def check_pair_barrier_counts(lines, config) -> None:
    """Stage full 1 (the leader's expect-tx) and empty 1 (one commit), accumulator full 1 (one commit)
    and empty 256 (the epilogue threads of both CTAs arrive at the leader), dealloc handshake 32."""
    counts = barrier_init_counts(lines)
    acc = config.num_acc_stage
    assert counts.count(2 * 128) == acc, counts
    assert counts.count(32) == 1, counts
    stages = (len(counts) - 2 * acc - 1) // 2
    assert stages >= 2
    assert sorted(counts) == sorted([1] * (2 * stages + acc) + [256] * acc + [32]), counts


def check_pair_tmem(lines, config, num_b: int = NUM_B) -> None:
    """One cta_group::2 allocation on both CTAs, a power of two <= 512 columns covering the plan, freed
    with the same count on every path from the allocation to ret."""
    allocs, deallocs = _indices(lines, "tcgen05.alloc."), _indices(lines, "tcgen05.dealloc.")
    assert len(allocs) == 1 and len(deallocs) == 1, (allocs, deallocs)
    assert lines[allocs[0]].startswith("tcgen05.alloc.cta_group::2.")
    assert lines[deallocs[0]].startswith("tcgen05.dealloc.cta_group::2.")
    assert any(ln.startswith("tcgen05.relinquish_alloc_permit.cta_group::2") for ln in lines)
    ncols = operand_value(lines, re.search(r",\s*(\S+);", lines[allocs[0]]).group(1))
    assert 32 <= ncols <= TMEM_MAX_COLS and ncols & (ncols - 1) == 0, ncols
    assert operand_value(lines, re.search(r",\s*(\S+);", lines[deallocs[0]]).group(1)) == ncols
    assert tmem_columns_needed(config.tile_n, num_b, config.num_acc_stage) <= ncols
    for env in (LEADER, PEER):
        seen = reachable(lines, env)
        assert allocs[0] in seen and deallocs[0] in seen, "both CTAs of the pair allocate and free"
    known = with_equal_predicates(lines, guard_of(lines, allocs[0]))
    path = escapes_without(lines, allocs[0], "tcgen05.dealloc", known)
    assert not path, "a path from tcgen05.alloc to ret without tcgen05.dealloc"


def check_pair_launch(launch: dict, sm_count: int = B200_SMS) -> None:
    assert tuple(launch["cluster"]) == (2, 1, 1), launch["cluster"]
    grid = launch["grid"]
    assert tuple(grid[1:]) == (1, 1), grid


def check_no_spills(cubin) -> None:
    sass, res = sass_and_resources(cubin)
    assert not re.search(r"\b(LDL|STL)\b", sass), "local-memory spills in SASS"
    usage = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", res)
    assert usage and usage.group(2) == "0" and usage.group(3) == "0", res


# ------------------------------------------------------------------------------ the variant passes
def test_the_benchmark_shapes_choose_the_configs_checked_here():
    chosen = {dual_config.choose_sm100_cta2(*s) for s in cases("dual_gemm", "benchmarks")}
    assert chosen <= set(CTA2_CONFIGS) and None not in chosen, chosen
    # each pair's 2 CTAs: one wave on 148 SMs
    for m, n, k, l in cases("dual_gemm", "benchmarks"):
        cfg = dual_config.choose_sm100_cta2(m, n, k, l)
        assert 2 * (m // 256) * (n // cfg.tile_n) * l <= B200_SMS


def test_registered_and_none_where_it_does_not_apply():
    v = dual_config.SM100_VARIANTS["cta2"]
    assert v.name == "cta2" and v.choose is dual_config.choose_sm100_cta2 and v.runner_dsl
    assert dual_config.SM100_VARIANTS["conservative"].choose is dual_config.choose_sm100
    assert v.choose(128, 4096, 7168, 1) is None  # one 128-row tile: no pair
    assert v.choose(384, 4096, 7168, 1) is None
    assert v.choose(256, 4096, 7168, 1) is not None
    with pytest.raises(ValueError, match="m % 256"):
        dual_k.compile_for(128, 512, 512, 1, config=CTA2_CONFIGS[0])
    # the submission's check before prepare: a cta2 config passes it where its chooser applies, not on 128-row M
    for shape in cases("dual_gemm", "benchmarks"):
        assert dual_k.NvFp4DualGemmSm100.can_implement(*shape, v.choose(*shape)), shape
    assert not dual_k.NvFp4DualGemmSm100.can_implement(384, 4096, 7168, 1, CTA2_CONFIGS[0])


def test_pair_mmas(compiled):
    config, lines, _, _ = compiled
    check_pair_mmas(lines, config.tile_n)


def test_pair_tx_bytes(compiled):
    config, lines, _, _ = compiled
    check_pair_tx(lines, config.tile_n)


def test_pair_commits(compiled):
    check_pair_commits(compiled[1])


def test_pair_barrier_counts(compiled):
    config, lines, _, _ = compiled
    check_pair_barrier_counts(lines, config)


def test_pair_tmem(compiled):
    config, lines, _, _ = compiled
    check_pair_tmem(lines, config)


def test_pair_launch(compiled):
    check_pair_launch(compiled[3])


def test_pair_no_spills(compiled):
    check_no_spills(compiled[2])


# ------------------------------------------------------------------------------ broken on purpose
BROKEN_CONFIG = CTA2_CONFIGS[1]


def _break(monkeypatch, dump_root, target, name, replacement):
    monkeypatch.setattr(target, name, replacement)
    return compile_variant(BROKEN_CONFIG, dump_root)


def test_break_tx_bytes_counted_for_one_cta(monkeypatch, dump_root):
    real = bs.BlockScaledMainloop.bind

    def one_cta_bytes(self, tiled_mma):
        real(self, tiled_mma)
        self.tma_bytes //= self.cta_group  # forgets that the peer's TMAs signal the leader too

    lines, _, _ = _break(monkeypatch, dump_root, bs.BlockScaledMainloop, "bind", one_cta_bytes)
    with pytest.raises(AssertionError, match=str(pair_expect_tx(BROKEN_CONFIG.tile_n, NUM_B) // 2)):
        check_pair_tx(lines, BROKEN_CONFIG.tile_n)


def test_break_commit_mask_own_cta_only(monkeypatch, dump_root):
    import cutlass.pipeline as pipeline

    lines, _, _ = _break(monkeypatch, dump_root, pipeline.PipelineTmaUmma, "_compute_mcast_arrival_mask",
                         staticmethod(lambda *a, **k: cutlass.Int32(1)))
    with pytest.raises(AssertionError, match="commit mask 0b1"):
        check_pair_commits(lines)


def test_break_accumulator_empty_count_one_cta(monkeypatch, dump_root):
    import cutlass.pipeline as pipeline

    def acc_pipeline_one_cta(self, barrier_ptr):
        return pipeline.PipelineUmmaAsync.create(
            barrier_storage=barrier_ptr, num_stages=self.num_acc_stage,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128),  # the peer's 128 forgotten
            cta_layout_vmnk=self.cluster_layout_vmnk, defer_sync=True)

    lines, _, _ = _break(monkeypatch, dump_root, bs.BlockScaledMainloop, "make_acc_pipeline", acc_pipeline_one_cta)
    with pytest.raises(AssertionError):
        check_pair_barrier_counts(lines, BROKEN_CONFIG)


def test_break_tmem_never_freed(monkeypatch, dump_root):
    def no_free(tmem, epilogue_barrier, acc_tmem_ptr):
        tmem.relinquish_alloc_permit()
        epilogue_barrier.arrive_and_wait()

    lines, _, _ = _break(monkeypatch, dump_root, bs.BlockScaledMainloop, "release_accumulators", staticmethod(no_free))
    with pytest.raises(AssertionError, match=r"\(\[\d+\], \[\]\)"):
        check_pair_tmem(lines, BROKEN_CONFIG)


def test_break_peer_issues_mmas(monkeypatch, dump_root):
    from shared.cute.sm100_gemm import Sm100BlockScaledGemm

    @cute_jit
    def both_ctas(self, is_leader, sched, k_tile_cnt, ab_pipeline, acc_pipeline, acc_tmem_ptr, acc_layout,
                  tCrA, tCrB, sSFA, sSFB):
        self.ml.mma_warp(sched, k_tile_cnt, ab_pipeline, acc_pipeline, acc_tmem_ptr, acc_layout, tCrA, tCrB, sSFA, sSFB)

    lines, _, _ = _break(monkeypatch, dump_root, Sm100BlockScaledGemm, "leader_mma_warp", both_ctas)
    with pytest.raises(AssertionError, match="the peer CTA issues MMAs"):
        check_pair_mmas(lines, BROKEN_CONFIG.tile_n)


def test_break_launch_without_cluster(monkeypatch, dump_root):
    """The kernel launched on one-CTA clusters (what its launch call passes is what is recorded)."""
    import types

    from shared.cute import sm100_gemm

    def one_cta_clusters(kernel_call, queue, **cfg):
        return launch_queue.launch(kernel_call, queue, **{**cfg, "cluster": (1, 1, 1)})

    monkeypatch.setattr(sm100_gemm, "launch_queue", types.SimpleNamespace(launch=one_cta_clusters))
    _, _, launch = compile_variant(BROKEN_CONFIG, dump_root)
    with pytest.raises(AssertionError, match=r"\(1, 1, 1\)"):
        check_pair_launch(launch)


def test_break_spills(monkeypatch, dump_root):
    """An epilogue that indexes its accumulator registers with a thread-dependent index: the fragment
    goes to local memory."""
    from problems.dual_gemm.kernel_sm100 import NvFp4DualGemmSm100

    @cute_jit
    def local_memory_value(self, accs):
        gate, up = accs
        import cutlass.cute as cute

        tidx, _, _ = cute.arch.thread_idx()
        gate[tidx % cute.size(gate)] = up[(tidx + 1) % cute.size(up)]
        return gate.load()

    monkeypatch.setattr(NvFp4DualGemmSm100, "epilogue_value", local_memory_value)
    _, cubin, _ = compile_variant(BROKEN_CONFIG, dump_root)
    with pytest.raises(AssertionError, match="spills|LOCAL|STACK"):
        check_no_spills(cubin)


def cute_jit(fn):
    import cutlass.cute as cute

    return cute.jit(fn)


# ------------------------------------------------------------------------------ host emulation
EMULATED = [(CTA2_CONFIGS[0], (512, 384, 512, 2), 5), (CTA2_CONFIGS[1], (512, 256, 768, 1), 3)]


def _emulation_matches(config, shape, grid, split=None):
    from harness.check import check_tensor
    from harness.problem import load_problem
    from tests.pair_emulator import emulate_pair

    prob = load_problem("dual_gemm")
    m, n, k, l = shape
    got = emulate_pair(config, prob.reference.generate_input(m=m, n=n, k=k, l=l, seed=11, device="cpu"), grid, split)
    want = prob.reference.ref_kernel(prob.reference.generate_input(m=m, n=n, k=k, l=l, seed=11, device="cpu"))
    ok, message = check_tensor(got, want, prob.rtol, prob.atol)
    assert ok, message


@pytest.mark.parametrize("config,shape,grid", EMULATED,
                         ids=[f"n{c.tile_n}-{'x'.join(map(str, s))}-pairs{g}" for c, s, g in EMULATED])
def test_pair_emulation_matches_the_reference(config, shape, grid):
    from tests.pair_emulator import pair_split

    split = pair_split(config, shape)
    # the pair's split, from the kernel's partitions: disjoint halves of B, A rows and C rows per CTA
    for t, rows0 in split[0]["B"].items():
        assert len(rows0) == config.tile_n // 2 and not set(rows0) & set(split[1]["B"][t])
    for t, rows0 in split[0]["A"].items():
        assert len(rows0) == 128 and not set(rows0) & set(split[1]["A"][t])
    _emulation_matches(config, shape, grid)


def test_break_emulation_both_ctas_load_the_same_b_half():
    from tests.pair_emulator import pair_split

    config, shape, grid = EMULATED[1]
    split = pair_split(config, shape)
    split[1] = {**split[1], "B": split[0]["B"]}
    with pytest.raises(AssertionError):
        _emulation_matches(config, shape, grid, split)


def break_scale_partition_rank(monkeypatch) -> None:
    """The break both emulations must catch: the mainloop's TMA partition ignores the CTA's rank in its
    pair, so both CTAs fetch the same half of each multicast scale block (layouts probed afresh)."""
    from tests import layout_probe

    real = bs.BlockScaledMainloop.partition_tma

    def rankless(self, tma_atom, gX, sX, scales, cta_coord=0, cta_count=1):
        return real(self, tma_atom, gX, sX, scales, 0, cta_count)

    monkeypatch.setattr(bs.BlockScaledMainloop, "partition_tma", rankless)
    monkeypatch.setattr(layout_probe, "_PROBED", {})


def test_break_emulation_scale_multicast_without_the_rank(monkeypatch):
    """Both CTAs fetch the first half of each B scale block (the TMA partition ignores the CTA's rank)."""
    break_scale_partition_rank(monkeypatch)
    config, shape, grid = EMULATED[1]
    with pytest.raises(AssertionError):
        _emulation_matches(config, shape, grid)


# ------------------------------------------------------------------------------ group_gemm "cta2"
# A and B swapped (the problem's N on the MMA's 256 rows, the groups' M on its N side), 2-CTA MMAs, the
# problem's SFA (the MMA's B scales) multicast over the pair; the same checks with one B operand, plus
# the grouped kernel's descriptor rewrite and its host-side schedule.
GROUP_CONFIGS = [group_config.GroupGemmSm100Cta2Config(tile_n=t, num_acc_stage=1 if t == 256 else 2)
                 for t in (64, 128, 256)]


def _group_sizes(case):
    return [(m, n, k, 1) for m, n, k in zip(case["m"], case["n"], case["k"])]


@pytest.fixture(scope="module", params=range(len(GROUP_CONFIGS)),
                ids=[f"group-cta2-n{c.tile_n}" for c in GROUP_CONFIGS])
def group_compiled(request, dump_root):
    config = GROUP_CONFIGS[request.param]
    return (config, *compile_variant(config, dump_root, group=True))


def check_group_descriptors(lines) -> None:
    """The per-group descriptor rewrite of the grouped kernel (address of 4 descriptors replaced, the
    fenced copies to the CTA's workspace slot and the acquires), and every TMA load, the multicast one
    included, through a descriptor in that workspace (one the fenced copies write), never a kernel
    parameter's (the first group's)."""
    text = "\n".join(lines)
    assert len(re.findall(r"tensormap\.replace\.tile\.global_address\.shared::cta\.b1024\.b64", text)) == 4
    copies = [re.search(r"\[(%rd\d+)\]", ln).group(1) for ln in lines
              if ln.startswith("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu")]
    assert len(copies) == 4, copies
    assert len(re.findall(r"fence\.proxy\.tensormap::generic\.acquire\.gpu", text)) == 4
    loads = [ln for ln in lines if ln.startswith("cp.async.bulk.tensor") and ".global" in ln]
    assert len(loads) == 4
    for ln in loads:
        desc = re.search(r"\], \[(%rd\d+), \{", ln).group(1)
        assert desc in copies, f"a TMA not through a descriptor of the workspace: {ln}"
def test_group_chooser_registered_and_none_where_it_does_not_apply():
    v = group_config.SM100_VARIANTS["cta2"]
    assert v.choose is group_config.choose_sm100_cta2 and v.runner_dsl
    for case in load_cases("group_gemm"):
        assert v.choose(_group_sizes(case)) in GROUP_CONFIGS
    for case in load_cases("group_gemm"):  # the kernel's check takes the cta2 configs (N on the pair's 256 rows)
        sizes = _group_sizes(case)
        assert group_k.NvFp4GroupGemmSm100.can_implement(sizes, v.choose(sizes))
    assert not group_k.NvFp4GroupGemmSm100.can_implement([(128, 384, 512, 1)], GROUP_CONFIGS[0])
    assert v.choose([(128, 384, 512, 1)]) is None  # N not a multiple of 256
    assert v.choose([(128, 512, 384, 1)]) is None  # K not a multiple of 256


def load_cases(problem):
    from harness.problem import load_problem

    return load_problem(problem).benchmarks


@pytest.mark.parametrize("sizes", [[(80, 512, 256, 1), (0, 256, 256, 1), (300, 768, 512, 1)],
                                   [(40, 7168, 2048, 1)], [(256, 256, 256, 1)] * 3])
@pytest.mark.parametrize("tile_n", [64, 128, 256])
def test_group_pair_schedule_covers_every_tile_once(sizes, tile_n):
    """The host mirror of the pair kernel's schedule against brute force: every (group, N tile of 256,
    M tile) exactly once, on 4 and 148 SMs; the metadata's fast count is the M tiles."""
    want = sorted((g, tn, tm) for g, (m, n, _k, _l) in enumerate(sizes)
                  for tn in range(n // 256) for tm in range(-(-m // tile_n)))
    for sms in (4, 148):
        work = group_schedule.pair_schedule(sizes, tile_n, sms)
        assert len(work) <= sms // 2
        assert sorted(t for w in work for t in w) == want
    rows = group_k.metadata_rows(sizes, [(0,) * 5] * len(sizes), tile_n, pairs=True)
    assert [r[group_k.COL_TILES_M] for r in rows] == [-(-m // tile_n) for m, _, _, _ in sizes]


def test_group_pair_mmas(group_compiled):
    config, lines, _, _ = group_compiled
    check_pair_mmas(lines, config.tile_n, num_b=1)


def test_group_pair_tx_bytes_and_sfa_multicast(group_compiled):
    config, lines, _, _ = group_compiled
    check_pair_tx(lines, config.tile_n, num_b=1)


def test_group_pair_commits_barriers_tmem(group_compiled):
    config, lines, _, launch = group_compiled
    check_pair_commits(lines)
    check_pair_barrier_counts(lines, config)
    check_pair_tmem(lines, config, num_b=1)
    check_pair_launch(launch)


def test_group_pair_descriptors(group_compiled):
    check_group_descriptors(group_compiled[1])


def test_group_pair_no_spills(group_compiled):
    check_no_spills(group_compiled[2])


def test_break_group_sfa_not_multicast(monkeypatch, dump_root):
    """The grouped pair kernel with the scales' multicast mask naming only CTA 0 (CTA 1 would never
    receive half of the problem's SFA block): the TMA check rejects it."""
    import types

    monkeypatch.setattr(group_k, "cpasync", types.SimpleNamespace(
        create_tma_multicast_mask=lambda *a, **k: cutlass.Int16(1)))
    lines, _, _ = compile_variant(GROUP_CONFIGS[1], dump_root, group=True)
    with pytest.raises(AssertionError, match="multicast::cluster"):
        check_pair_tx(lines, GROUP_CONFIGS[1].tile_n, num_b=1)


def test_break_group_descriptor_bypassed(monkeypatch, dump_root):
    """The grouped pair kernel loading the B scales through the kernel parameter's descriptor (the first
    group's, never rewritten): the descriptor check rejects it."""
    real = bs.BlockScaledMainloop.load_k_tile

    def param_desc_for_sfb(self, ab_pipeline, state, k_tile, copies, masks=None):
        copies = list(copies[:3]) + [tuple(copies[3][:3])]
        return real(self, ab_pipeline, state, k_tile, copies, masks)

    monkeypatch.setattr(bs.BlockScaledMainloop, "load_k_tile", param_desc_for_sfb)
    lines, _, _ = compile_variant(GROUP_CONFIGS[1], dump_root, group=True)
    with pytest.raises(AssertionError, match="a TMA not through a descriptor of the workspace"):
        check_group_descriptors(lines)


GROUP_EMULATED = {"m": [40, 300, 0], "n": [512, 256, 256], "k": [512, 768, 256], "g": 3, "seed": 5}


def _group_emulation_matches(config, sms=6):
    from harness.check import check_tensor
    from harness.problem import load_problem
    from tests.pair_emulator import emulate_group_pair

    prob = load_problem("group_gemm")
    got = emulate_group_pair(config, prob.reference.generate_stress_input(**GROUP_EMULATED, device="cpu"), sms)
    want = prob.reference.ref_kernel(prob.reference.generate_stress_input(**GROUP_EMULATED, device="cpu"))
    for g, (x, y) in enumerate(zip(got, want)):
        ok, message = check_tensor(x, y, prob.rtol, prob.atol)
        assert ok, f"group {g}: {message}"


@pytest.mark.parametrize("config", GROUP_CONFIGS, ids=[f"n{c.tile_n}" for c in GROUP_CONFIGS])
def test_group_pair_emulation_matches_the_reference(config):
    """Stress data, M tails (40, 300) and an empty group, 3 pairs: the swapped operands' split over the
    pair from the kernel's partitions, A's rows past M zero-filled, A's scales split over the pair by
    the multicast TMA's partition (chunks of a block, or whole blocks for 256-wide tiles), C stored
    transposed with columns past M left alone."""
    _group_emulation_matches(config)


def test_break_group_emulation_scale_multicast_without_the_rank(monkeypatch):
    """The 256-wide tile's scale blocks both fetched by the same CTA (the partition ignores the rank)."""
    break_scale_partition_rank(monkeypatch)
    with pytest.raises(AssertionError, match="group 0"):
        _group_emulation_matches(GROUP_CONFIGS[2])


# ------------------------------------------------------------------------------ through the submissions' gate
def test_the_forced_cta2_variant_reaches_the_submissions_configs(monkeypatch):
    """Forced (as the b200 variants stage forces it), each submission's sm100_config serves the cta2
    config its chooser gives, hashable, and the kernel's own check takes it; where the chooser gives
    None (dual M = 128) the gate falls back to the conservative config."""
    import importlib

    from harness.worker import install_task_module
    from shared import sm100_gates

    install_task_module()  # the leaderboard's task module, which the submissions import
    monkeypatch.setattr(sm100_gates, "TABLE", None)
    monkeypatch.setenv(sm100_gates.FORCE_ENV, "cta2")
    dual_sub = importlib.import_module("problems.dual_gemm.submission")
    group_sub = importlib.import_module("problems.group_gemm.submission")
    for shape in cases("dual_gemm", "benchmarks"):
        cfg = dual_sub.sm100_config(*shape, B200_SMS)
        assert isinstance(cfg, dual_config.DualGemmSm100Cta2Config) and hash(cfg) is not None, shape
        assert dual_k.NvFp4DualGemmSm100.can_implement(*shape, cfg), shape
    assert isinstance(dual_sub.sm100_config(128, 4096, 7168, 1, B200_SMS), dual_config.DualGemmSm100Config)
    for case in load_cases("group_gemm"):
        sizes = _group_sizes(case)
        cfg = group_sub.sm100_config(sizes, B200_SMS)
        assert isinstance(cfg, group_config.GroupGemmSm100Cta2Config) and hash(cfg) is not None, sizes
        assert group_k.NvFp4GroupGemmSm100.can_implement(sizes, cfg), sizes
