"""Hopper (sm_90a) block-scaled GEMM and fused dual GEMM kernels (one mainloop, shared/cute/
sm90_gemm.py): compiled and inspected on the CPU, run on an sm_90 GPU.

CPU tier: every candidate config (split-K and swapped roles included) compiles for sm_90a; PTX has
16 fp16 wgmma per stage and B operand, one TMA load per operand and scale tensor, the exact
E4M3 -> f16 conversion; SASS has the HGMMAs, no local memory, no accumulator read while a
wgmma group is in flight, a wgmma group left in flight (not serialized), and decode multiplies
that read their scale as a half (.H0_H0 / .H1_H1); the swapped split's 4-byte stores; no
device-memory access before the dependent launch's griddepcontrol.wait;
every manifest shape is accepted; only the R side needs whole tiles; bad shapes raise ValueError;
both word decodes (E4M3 bytes, fp16 bit patterns) are exact (Python models of their bit operations);
the portable path matches the reference on the CPU.
GPU tier (sm90): every manifest case and every candidate config, leaderboard and stress data,
output NaN-poisoned first; partial last S tiles; every combination of the two decodes per side gives the
same C bit for bit, at the scales' extremes too; repeat launches from the kept arguments; two GEMMs
chained through memory under the dependent launch (in a queue and a graph), and that chain's control.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

from harness.check import check_tensor  # noqa: E402
from harness.problem import load_problem  # noqa: E402
from shared.cute.sm90_host import launch_sm90  # noqa: E402
from tests import sm90_common as C  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# problem -> (kernel class name, number of B operands, config used for the shape-error tests)
KERNELS = {"gemm": ("GemmSm90", 1, "SM90_M128"), "dual_gemm": ("DualGemmSm90", 2, "SM90_DEFAULT")}


def parts(problem):
    """(kernel module, config module, submission module, kernel class, num_b, shape-test config)."""
    kmod = importlib.import_module(f"problems.{problem}.kernel_sm90")
    cmod = importlib.import_module(f"problems.{problem}.config")
    sub = importlib.import_module(f"problems.{problem}.submission")
    cls_name, num_b, cfg_name = KERNELS[problem]
    return kmod, cmod, sub, getattr(kmod, cls_name), num_b, getattr(cmod, cfg_name)


def all_cases(problem):
    return C.cases(problem, "tests") + C.cases(problem, "benchmarks")


def configs(problem):
    cmod = parts(problem)[1]
    chosen = {cmod.choose_sm90(m, n, k) for m, n, k, _ in all_cases(problem)}
    return sorted(set(cmod.SM90_CANDIDATES.values()) | chosen, key=str)


def config_id(x):
    """Test id of a (problem, config) parameter: tile (M x N), stages, splits, roles swapped."""
    if isinstance(x, str):
        return x
    flags = ("swap" if x.swap_ab else "") + ("dk" if x.deal_k else "") + ("sh" if x.share_s else "")
    return f"m{x.tile_m}n{x.tile_n}s{x.stages}k{x.splits}" + flags


@pytest.fixture(scope="session")
def dump_root(tmp_path_factory):
    return tmp_path_factory.mktemp("sm90")


@pytest.mark.parametrize("problem,config", [(p, c) for p in KERNELS for c in configs(p)],
                         ids=config_id)
def test_compiles_for_sm90a(problem, config, dump_root):
    _, _, _, cls, num_b, _ = parts(problem)
    ptx, cubin = C.artifacts(cls, config, dump_root)
    C.check_ptx(ptx, num_b=num_b)
    C.check_sass(cubin, num_b=num_b)


def test_sass_check_catches_a_serialized_wgmma_pipeline(dump_root):
    # SM90_WIDE's two accumulators take 128 of the consumers' registers; with 168 in all ptxas drains
    # every wgmma group at once (seen with a third fragment set at 200, 2026-11-23)
    _, cmod, _, cls, _, _ = parts("dual_gemm")
    _, cubin = C.artifacts(cls, replace(cmod.SM90_WIDE, consumer_regs=168, producer_regs=88), dump_root)
    assert C.wgmma_serialized(C.sass_of(cubin)[0])
    assert not C.wgmma_serialized(C.sass_of(C.artifacts(cls, cmod.SM90_WIDE, dump_root)[1])[0])


def test_timing_bit_without_wgmmas_keeps_the_consumers_decode(dump_root):
    """debug_skip bit 5 (lab/decode_overlap.py's "no wgmma") must leave out the consumers' wgmmas and nothing
    else: ptxas drops a decode no instruction reads, so without the sink the timing would leave out the decode
    too and claim it free. The E4M3 conversions (decoders' and consumers') stay; the MMAs of the tile go."""
    _, cmod, _, cls, _, _ = parts("dual_gemm")
    plain = C.sass_of(C.artifacts(cls, cmod.SM90_WIDE_104, dump_root)[1])[0]
    bare = C.sass_of(C.artifacts(cls, replace(cmod.SM90_WIDE_104, debug_skip=32), dump_root)[1])[0]
    conversions = [len(re.findall(r"F2FP\.F16\.E4M3", s)) for s in (plain, bare)]
    assert conversions[0] > 0 and conversions[0] == conversions[1], conversions
    assert "HGMMA.64x104x16" in plain and "HGMMA.64x104x16" not in bare


def test_timing_bit_without_r_scales_leaves_out_only_the_consumers_scale_handling(dump_root):
    """debug_skip bit 6 (lab/decode_overlap.py's "no R scales") must leave out the consumers' scale loads and
    conversions and nothing else: per K tile one byte permute and one conversion per 32-K chunk (the R decode
    takes the scales as converted, Sm90Config.decode_bits), the scale rows' 64-bit loads; the decodes'
    multiplies and every wgmma stay."""
    from shared.cute.sm90_config import K_TILE

    _, cmod, _, cls, _, _ = parts("gemm")
    assert cmod.SM90_M64_WIDE.decode_bits & 1
    plain = C.sass_of(C.artifacts(cls, cmod.SM90_M64_WIDE, dump_root)[1])[0]
    bare = C.sass_of(C.artifacts(cls, replace(cmod.SM90_M64_WIDE, debug_skip=64), dump_root)[1])[0]
    count = {op: [len(re.findall(op, text)) for text in (plain, bare)]
             for op in (r"F2FP\.F16\.E4M3", r"PRMT", r"HMUL2", r"HGMMA\.64x64x16", r"LDS\.64")}
    for op in (r"HGMMA\.64x64x16", r"HMUL2"):
        assert count[op][0] == count[op][1] > 0, count
    for op in (r"F2FP\.F16\.E4M3", r"PRMT"):  # the decoders' conversions and the R decode's permutes stay
        assert count[op][0] - count[op][1] == K_TILE // 32 and count[op][1] > 0, count
    assert count[r"LDS\.64"][0] > 0 == count[r"LDS\.64"][1], count


def test_decode_routes_leave_the_conversion_unit_to_the_scales(dump_root):
    """Sm90Config.decode_bits: a side decoded through fp16 bit patterns converts only its scales (one F2FP per
    two), and its words with byte permutes instead; the default decodes R that way and S through E4M3 bytes."""
    _, cmod, _, cls, _, _ = parts("gemm")
    f2fp = {bits: len(re.findall(r"F2FP\.F16\.E4M3", C.sass_of(C.artifacts(
        cls, replace(cmod.SM90_M64_WIDE, decode_bits=bits), dump_root)[1])[0])) for bits in range(4)}
    # per K tile the consumers convert 16 words (4 pairs each) and 8 scale pairs of their two rows
    assert f2fp[0] - f2fp[1] == f2fp[2] - f2fp[3] == 16 * 4, f2fp
    assert f2fp[0] > f2fp[2] > f2fp[3] > 0, f2fp  # the decoders' words go too, not their scales


def test_epilogues_store_pairs_of_columns_as_words(dump_root):
    """In the swapped roles a split CTA's half goes out in 4-byte stores (two adjacent columns of C), with
    2-byte stores only as the fallback (odd N, the S side's end): one word per column pair, two halves in its
    fallback. In the transposed roles (a thread's two columns are rows of C) every store is a 4-byte word
    too, each after one exchange with lane ^ 4 (whose columns of C are the adjacent ones), split or not."""
    _, cmod, _, cls, _, _ = parts("gemm")
    swap, _ = C.artifacts(cls, cmod.SM90_M128_SWAP_SPLIT2, dump_root)
    words, halves = (len(re.findall(rf"st\.global\.b{w}\b", swap)) for w in (32, 16))
    assert words > 0 and halves == 2 * words, (words, halves)
    for config in (cmod.SM90_M64_WIDE, cmod.SM90_M64_WIDE_SPLIT2):
        assert config.staged_epilogue
        transposed, _ = C.artifacts(cls, replace(config, staged_epilogue=False), dump_root)
        words = len(re.findall(r"st\.global\.b32\b", transposed))
        # 64 x 64 accumulators per warpgroup: 32 values per thread, 16 words (a split: its two halves
        # are two branches of 8)
        assert words == 16, (config, words)
        assert len(re.findall(r"shfl\.sync\.bfly\.b32 \S+, \S+, 4,", transposed)) == words
        assert not re.search(r"st\.global\.b16\b", transposed)
        # staged (the configs as chosen): the same 16 exchanged words go to shared memory, and C gets 16-byte
        # vectors only: 64 rows x 128 bytes per warpgroup, 4 per thread (a split: 2 per branch)
        staged, _ = C.artifacts(cls, config, dump_root)
        assert len(re.findall(r"st\.shared\.b32\b", staged)) == 16
        assert len(re.findall(r"shfl\.sync\.bfly\.b32 \S+, \S+, 4,", staged)) == 16
        assert len(re.findall(r"st\.global\.v4\.b32\b", staged)) == 4
        assert not re.search(r"st\.global\.b(16|32)\b", staged)


def test_async_handover_meets_the_other_cta_once_and_sends_with_st_async(dump_root):
    """Sm90Config.async_handover: the split's sums go out as st.async into a buffer of their own (beside the
    rings, counted in smem_bytes), each completing on the owner's transaction barrier; the two CTAs meet at
    one cluster barrier, where the plain hand-over meets three times: its arrive (relaxed) once the barriers
    are initialized, its wait on each role's path (the consumers' before they send, the other roles' at
    their end), so that no CTA waits for the other before its first load."""
    from problems.gemm.config import SM90_M64_WIDE_SPLIT2, SM90_M128_SWAP_SPLIT2

    _, _, _, cls, _, _ = parts("gemm")
    for config in (SM90_M64_WIDE_SPLIT2, SM90_M128_SWAP_SPLIT2):
        assert config.async_handover
        plain = replace(config, async_handover=False)
        assert config.smem_bytes(1) - plain.smem_bytes(1) == config.reduce_bytes(1) // 2
        ptx, _ = C.artifacts(cls, config, dump_root)
        assert len(re.findall(r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes\.v4\.f32", ptx)) > 0
        assert "st.shared::cluster" not in ptx
        assert len(re.findall(r"barrier\.cluster\.arrive", ptx)) == 1 and "barrier.cluster.arrive.relaxed" in ptx
        assert len(re.findall(r"barrier\.cluster\.wait", ptx)) == 2
        order = [ptx.index(x) for x in ("barrier.cluster.arrive", "griddepcontrol.wait", "barrier.cluster.wait")]
        assert order == sorted(order)
        ptx_plain, _ = C.artifacts(cls, plain, dump_root)
        assert "st.async" not in ptx_plain and len(re.findall(r"barrier\.cluster\.wait", ptx_plain)) >= 2
    with pytest.raises(ValueError, match="async_handover needs splits=2"):
        replace(SM90_M64_WIDE_SPLIT2, splits=1).check(1)


@pytest.mark.parametrize("problem", KERNELS)
def test_a_timeline_build_stamps_each_point_once_and_no_other_build_does(problem, dump_root):
    """Sm90Config.timeline (lab/cta_timeline.py): every stamp of STAMPS is one predicated store at its point of
    the kernel (the split's too, on a split config), the two of summed wait cycles included; a build without a
    timeline has none; an address that is not 16-byte aligned is refused."""
    _, cmod, _, cls, _, _ = parts(problem)
    config = cmod.SM90_CANDIDATES["m64_wide_split2" if problem == "gemm" else "wide_104"]
    ptx, _ = C.artifacts(cls, replace(config, timeline=1 << 20), dump_root)
    stamps = [n for n in cls.STAMPS if n != "sums_added" or config.splits > 1]  # the wide_104 dual has no split
    waits = [n for n in stamps if n.endswith("_waits")]  # summed cycles: two reads of %clock around each wait
    assert len(waits) == 2
    assert len(re.findall(r"mov\.u64 g, %globaltimer", ptx)) == len(stamps) - len(waits)
    assert len(re.findall(r"@p st\.global\.v4\.u32", ptx)) == len(stamps)
    assert "%globaltimer" not in C.artifacts(cls, config, dump_root)[0]
    with pytest.raises(ValueError, match="timeline must be a 16-byte aligned"):
        replace(config, timeline=(1 << 20) + 8).check(KERNELS[problem][1])


def test_staged_epilogue_needs_a_free_stage_and_one_tile_per_cta():
    """Sm90Config.staged_epilogue writes a warpgroup's tile into its own 64 rows of the last packed-R stage:
    at most 64 rows of the S tile, the default roles, and rings that end with the tile (not dealt K, whose
    producer loads the next tile's stages meanwhile)."""
    from problems.dual_gemm.config import SM90_WIDE
    from problems.gemm.config import SM90_M64_WIDE, SM90_M64_WIDE_DK, SM90_M128_SWAP_SPLIT2

    assert not SM90_M64_WIDE_DK.staged_epilogue
    for bad, num_b in ((replace(SM90_WIDE, staged_epilogue=True), 2), (replace(SM90_M64_WIDE, deal_k=True), 1),
                       (replace(SM90_M128_SWAP_SPLIT2, staged_epilogue=True), 1)):
        with pytest.raises(ValueError, match="staged_epilogue needs smem_rows <= 64"):
            bad.check(num_b)
    # (the grouped GEMM's 128-row tiles already exclude it; its kernel refuses it with tile lists all the same)


@pytest.mark.parametrize("problem", KERNELS)
def test_a_dependent_launch_waits_before_touching_device_memory(problem, dump_root):
    """Sm90Config.pdl (the default): the kernel lets the next one launch early and reads or writes no
    device memory before griddepcontrol.wait; without it, neither instruction is there."""
    _, cmod, _, cls, _, _ = parts(problem)
    config = cmod.choose_sm90(*all_cases(problem)[-1][:3])
    assert config.pdl
    ptx = C.artifacts(cls, config, dump_root)[0]
    early, accesses = C.dependent_launch_order(ptx)
    assert early and not accesses, accesses
    # the TMA descriptors (kernel parameters) are fetched before the wait, all four of the operands' atoms, and
    # with Sm90Config.l2_early the first K tiles of every atom into L2; nothing else is prefetched into L2
    before_wait = ptx[ptx.index(".entry"):ptx.index("griddepcontrol.wait;")]
    atoms = 2 * (1 + KERNELS[problem][1])
    assert len(re.findall(r"prefetch\.tensormap", before_wait)) == atoms
    l2 = r"cp\.async\.bulk\.prefetch\.tensor\.2d\.L2"
    assert len(re.findall(l2, before_wait)) == len(re.findall(l2, ptx)) == config.l2_early * atoms
    if not config.l2_early:
        early_ptx = C.artifacts(cls, replace(config, l2_early=2), dump_root)[0]
        assert C.dependent_launch_order(early_ptx) == (True, [])
        assert len(re.findall(l2, early_ptx[:early_ptx.index("griddepcontrol.wait;")])) == 2 * atoms
    ptx_off, _ = C.artifacts(cls, replace(config, pdl=False), dump_root)
    assert "griddepcontrol" not in ptx_off
    # the check sees an access: the kernel without the wait has its loads before the (absent) wait
    assert C.dependent_launch_order(ptx_off)[1]


def test_the_launch_order_check_passes_only_descriptors_that_are_kernel_parameters():
    """dependent_launch_order counts every device-memory access before griddepcontrol.wait except a prefetch of
    a descriptor whose address is a kernel parameter's (cvta.param), or of its tiles into L2: one read from device
    memory counts, and so do both prefetches through a descriptor read from device memory."""
    l2 = "cp.async.bulk.prefetch.tensor.2d.L2.global.tile.L2::cache_hint"
    ptx = ("// header\n.entry k(\n\tcvta.param.u64 \t%rd1, %rd9;\n\tprefetch.tensormap \t[%rd1];\n"
           f"\t{l2} [%rd1, {{%r1, %r2}}], %rd4;\n"
           "\tld.global.u64 \t%rd2, [%rd3];\n\tprefetch.tensormap \t[%rd2];\n"
           f"\t{l2} [%rd2, {{%r1, %r2}}], %rd4;\n"
           "\tgriddepcontrol.launch_dependents;\n\tgriddepcontrol.wait;\n\tld.global.u32 \t%r1, [%rd3];\n")
    early, accesses = C.dependent_launch_order(ptx)
    assert early and accesses == ["ld.global.u64 \t%rd2, [%rd3];", "prefetch.tensormap \t[%rd2];",
                                  f"{l2} [%rd2, {{%r1, %r2}}], %rd4;"]


def test_the_spill_check_finds_spills_inside_a_loop_and_not_around_it():
    """spills_in_inner_loops reports a local load inside a loop, even where a retry block at the end branches back
    over the whole loop (as ptxas places barrier-wait retries), and not the store before the loop or the load after."""
    def listing(in_loop: str) -> str:  # the loop is 0x10-0x40, the retry branch at 0x70 goes back to its head
        lines = ["STL [R1], R3", "IMAD R4, R4, 0x2, RZ", in_loop, "HGMMA.64x128x16.F32 R24, gdesc[UR4], R24",
                 "@P0 BRA 0x10", "LDL R209, [R1]", "EXIT", "@!P1 BRA 0x10"]
        return "".join(f"        /*{16 * i:04x}*/                   {text} ;\n" for i, text in enumerate(lines))

    assert C.spills_in_inner_loops(listing("NOP")) == []
    assert C.spills_in_inner_loops(listing("LDL R5, [R1+0x4]")) == ["20 LDL R5, [R1+0x4]"]


def test_e4m3_route_decode_is_exact_for_every_code_and_scale():
    """The bit operations of the decode (modelled in Python) turn every code of every nibble position
    into an E4M3 byte worth e2m1 * 2^-6, in the pair order the kernel documents; times every finite
    E4M3 scale * 2^6 the product is exactly representable in fp16 (so the fp16 multiply is exact)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import numpy as np

    from shared.cute.fp4_decode import PAIR_NIBBLES, e4m3_bytes_of_codes
    from shared.nvfp4 import decode_e2m1

    e4m3 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    rng = np.random.default_rng(7)
    # all 16 codes at every nibble position (w = c * 0x11111111), then random words
    words = [c * 0x11111111 for c in range(16)] + [int(x) for x in rng.integers(0, 2**32, 4096, dtype=np.uint64)]
    for w in words:
        low, high = e4m3_bytes_of_codes(w)
        got_bytes = [(low >> 8 * i) & 0xFF for i in range(4)] + [(high >> 8 * i) & 0xFF for i in range(4)]
        # cvt.rn.f16x2.e4m3x2 puts the low byte of a 16-bit half in the low fp16 half
        pairs = [(got_bytes[0], got_bytes[1]), (got_bytes[2], got_bytes[3]),
                 (got_bytes[4], got_bytes[5]), (got_bytes[6], got_bytes[7])]
        codes = torch.tensor([(w >> 4 * i) & 0xF for i in range(8)], dtype=torch.uint8)
        want = decode_e2m1(codes).double().numpy()
        for p, (b_lo, b_hi) in enumerate(pairs):
            n_lo, n_hi = PAIR_NIBBLES[p]
            assert e4m3[b_lo] * 64 == want[n_lo] and e4m3[b_hi] * 64 == want[n_hi], (hex(w), p)
    values = decode_e2m1(torch.arange(16, dtype=torch.uint8)).double().numpy()
    scales = e4m3[np.isfinite(e4m3) & (e4m3 > 0)]
    assert scales.size == 126 and scales.max() * 64 < 65504
    prod = np.multiply.outer(values, scales)
    assert np.array_equal(prod.astype(np.float16).astype(np.float64), prod)
    assert np.abs(prod[prod != 0]).min() >= 2.0**-14  # normal fp16: no subnormal rounding either


def test_bits_route_decode_is_exact_for_every_code_and_scale():
    """decode_e2m1x8_f16_bits: its bit operations (modelled in Python) give every code of every nibble position
    the high byte of an fp16 worth e2m1 * 2^-14, in the kernel's pair order (a byte permute per pair, low
    half first); times every finite E4M3 scale * 2^k for k = 0 (R) and 7 (S; fp4_decode.SCALE_POW2) the
    product is an fp16, normal or subnormal, exactly."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import numpy as np

    from shared.cute.fp4_decode import PAIR_NIBBLES, SCALE_POW2, f16_bytes_of_codes
    from shared.nvfp4 import decode_e2m1

    rng = np.random.default_rng(8)
    words = [c * 0x11111111 for c in range(16)] + [int(x) for x in rng.integers(0, 2**32, 4096, dtype=np.uint64)]
    for w in words:
        low, high = f16_bytes_of_codes(w)
        got_bytes = [(low >> 8 * i) & 0xFF for i in range(4)] + [(high >> 8 * i) & 0xFF for i in range(4)]
        halves = np.array([b << 8 for b in got_bytes], dtype=np.uint16).view(np.float16).astype(np.float64)
        codes = torch.tensor([(w >> 4 * i) & 0xF for i in range(8)], dtype=torch.uint8)
        want = decode_e2m1(codes).double().numpy()
        for p in range(4):
            n_lo, n_hi = PAIR_NIBBLES[p]
            assert halves[2 * p] * 2**14 == want[n_lo] and halves[2 * p + 1] * 2**14 == want[n_hi], (hex(w), p)
    values = decode_e2m1(torch.arange(16, dtype=torch.uint8)).double().numpy() * 2.0**-14
    e4m3 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    scales = e4m3[np.isfinite(e4m3) & (e4m3 > 0)]
    for k in (SCALE_POW2["r"], SCALE_POW2["s"]):
        assert scales.max() * 2**k < 65504
        prod = np.multiply.outer(values, scales * 2**k)
        assert np.array_equal(prod.astype(np.float16).astype(np.float64), prod), k
        assert np.abs(prod[prod != 0]).min() >= 2.0**-24


@pytest.mark.parametrize("rows_d,n_dwg,a_batch,blocked,share",
                         [(104, 2, 4, False, False), (64, 2, 4, False, False), (112, 2, 4, False, False),
                          (128, 2, 4, True, False), (128, 2, 2, False, False), (128, 2, 1, False, True),
                          (64, 1, 2, False, False), (96, 1, 4, True, False)])
def test_owned_rows_decode_every_unit_once_where_the_plain_mapping_does(rows_d, n_dwg, a_batch, blocked, share):
    """Sm90Config.owned_rows: the thread constants and compile-time offsets of the owned decode
    (Sm90BlockScaledGemm._owned_addresses / _owned_offsets, run on Python ints) give, for every active
    thread and unit of every batch of a stage, the packed, scale and fp16 offsets of the plain decode
    (_decode_unit_to_smem's 128B-swizzled layouts, written out here); together the threads cover each
    (row, 32-K chunk) of the stage once."""
    from shared.cute.sm90_config import K_SUB, ROW_BYTES, SF_ROW_BYTES, Sm90Config, row_owners
    from shared.cute.sm90_gemm import Sm90BlockScaledGemm

    cfg = Sm90Config(smem_rows=2 * rows_d if share else rows_d, n_cwg=2, n_dwg=n_dwg, stages=2, a_slots=a_batch + 1,
                     consumer_regs=200, producer_regs=56 if n_dwg == 2 else 40, a_batch=a_batch, share_s=share,
                     owned_rows=True)
    kern = Sm90BlockScaledGemm(cfg)
    kern.blocked_sf = blocked
    n_dec, cols = cfg.decoder_threads, 2 * a_batch
    k = row_owners(rows_d, n_dec)
    assert k * rows_d <= n_dec and cols % k == 0
    for row_base in ((0, rows_d) if share else (0,)):
        seen = set()
        for dt in range(k * rows_d):
            sw, row, c0 = dt & 7, row_base + dt % rows_d, dt // rows_d
            own = kern._owned_addresses(row, c0, sw)
            for h in range(4 // a_batch):
                for i in range(cols // k):
                    src, sf, pieces = kern._owned_offsets(own, cols * h + k * i, (k * i) % 2)
                    cl = k * i + c0  # the chunk in the batch: sub-tile cl // 2, its half cl % 2
                    ch = cols * h + cl  # the chunk in the stage
                    assert (k * i) // 2 == cl // 2
                    assert src == row * ROW_BYTES + ((ch ^ sw) * 16)
                    if blocked:
                        assert sf == ((ch >> 1) << 9) + ((row & 31) << 4) + ((row >> 5) << 2) + ((ch & 1) << 1)
                    else:
                        assert sf == row * SF_ROW_BYTES + 2 * ch
                    half = row * (K_SUB * 2) + (((cl & 1) * 64) ^ ((sw & 4) * 16))
                    assert pieces == [half + (p ^ (sw & 3)) * 16 for p in range(4)]
                    seen.add((row, ch))
        assert seen == {(row_base + r, ch) for r in range(rows_d) for ch in range(8)}


def test_owned_rows_need_a_decoder_thread_per_row():
    from shared.cute.sm90_config import Sm90Config, row_owners

    assert (row_owners(104, 224), row_owners(128, 224), row_owners(64, 96)) == (2, 1, 1)
    with pytest.raises(ValueError, match="decoder thread per decoded row: 128 rows, 96 threads"):
        Sm90Config(smem_rows=128, n_dwg=1, owned_rows=True).check(1)
    Sm90Config(smem_rows=128, n_dwg=1, share_s=True, owned_rows=True).check(1)  # 64 rows each


def test_split_k_needs_an_even_number_of_k_tiles_and_room_for_the_sums():
    from problems.dual_gemm.config import SM90_WIDE_SPLIT2

    assert SM90_WIDE_SPLIT2.shape_error(256, 512, 512, 1) is None
    assert "splits=2" in SM90_WIDE_SPLIT2.shape_error(256, 512, 768, 1)
    with pytest.raises(ValueError, match="splits must be 1 or 2"):
        replace(SM90_WIDE_SPLIT2, splits=3).check(2)
    assert SM90_WIDE_SPLIT2.reduce_bytes(2) <= SM90_WIDE_SPLIT2.staging_bytes(2)


def test_the_asynchronous_hand_over_needs_an_even_count_of_8_column_blocks():
    # 120 rows: 15 blocks, 7 slots per accumulator in the receive buffer, 8 sent to the second CTA (an illegal
    # address on the H200, 2026-11-28); 112 and 96 rows (14 and 12 blocks) ran
    from problems.gemm.config import SM90_M128_SWAP_SPLIT2

    for rows in (96, 112):
        replace(SM90_M128_SWAP_SPLIT2, smem_rows=rows).check(1)
    for rows in (104, 120):
        with pytest.raises(ValueError, match="async_handover needs smem_rows a multiple of 16"):
            replace(SM90_M128_SWAP_SPLIT2, smem_rows=rows).check(1)
        replace(SM90_M128_SWAP_SPLIT2, smem_rows=rows, async_handover=False).check(1)


def test_ring_checks_reject_configs_that_would_deadlock_or_overflow_shared_memory():
    from problems.dual_gemm.config import SM90_WIDE

    # a batched hand-off takes a_batch slots while the consumers may still hold one
    with pytest.raises(ValueError, match="needs a_slots > 4"):
        replace(SM90_WIDE, a_batch=4, a_slots=4).check(2)
    replace(SM90_WIDE, a_batch=4, a_slots=5).check(2)
    with pytest.raises(ValueError, match="needs a_slots > 2"):
        replace(SM90_WIDE, a_batch=2, a_slots=2).check(2)
    replace(SM90_WIDE, a_batch=2, a_slots=3).check(2)
    with pytest.raises(ValueError, match="a_batch must be 1, 2 or 4"):
        replace(SM90_WIDE, a_batch=3).check(2)
    with pytest.raises(ValueError, match="chunk_k must be 32 or 64"):
        replace(SM90_WIDE, chunk_k=128).check(2)
    # the packed A ring is sized on its own: one more A stage no longer fits beside 7 decoded slots
    assert SM90_WIDE.smem_bytes(2) <= 227 * 1024
    with pytest.raises(ValueError, match="shared memory"):
        replace(SM90_WIDE, a_stages=3).check(2)
    # 640 threads start with 96 registers each: what setmaxnreg hands out must fit 61440
    with pytest.raises(ValueError, match="61440 registers"):
        replace(SM90_WIDE, n_dwg=3, producer_regs=32).check(2)
    replace(SM90_WIDE, n_dwg=3, producer_regs=56, consumer_regs=152).check(2)


def test_swapped_roles_tile_n_by_the_shared_memory_rows():
    """swap_ab: A in registers (64 rows per consumer warpgroup), B1/B2 in shared memory (smem_rows)."""
    from problems.dual_gemm.config import SM90_WIDE_SWAP

    assert (SM90_WIDE_SWAP.tile_m, SM90_WIDE_SWAP.tile_n) == (128, 96)
    assert SM90_WIDE_SWAP.operands(2) == (2, 1)
    assert SM90_WIDE_SWAP.shape_error(512, 3072, 7168, 1) is None
    assert SM90_WIDE_SWAP.shape_error(512, 4096, 7168, 1) is None  # last N tile partial
    assert "tile_m=128" in SM90_WIDE_SWAP.shape_error(192, 3072, 7168, 1)
    # two 96-row S operands per decoded slot: five slots is all that fits beside the packed rings
    assert SM90_WIDE_SWAP.smem_bytes(2) <= 227 * 1024 < replace(SM90_WIDE_SWAP, a_slots=6).smem_bytes(2)
    with pytest.raises(ValueError, match="smem_rows must be a multiple of 8"):
        replace(SM90_WIDE_SWAP, smem_rows=100).check(2)
    # half-width tiles take the problem's M as the S extent: the default roles only, whole 8-row atoms
    with pytest.raises(ValueError, match="half_s_tiles needs the default roles"):
        replace(SM90_WIDE_SWAP, half_s_tiles=True).check(2)
    with pytest.raises(ValueError, match="half_s_tiles needs the default roles"):
        replace(SM90_WIDE_SWAP, swap_ab=False, smem_rows=104, half_s_tiles=True).check(2)


@pytest.mark.parametrize("problem", KERNELS)
def test_every_manifest_shape_is_taken_by_the_kernel(problem):
    _, cmod, _, cls, _, _ = parts(problem)
    for m, n, k, l in all_cases(problem):
        assert cls.can_implement(m, n, k, l, cmod.choose_sm90(m, n, k)), (m, n, k, l)


def sanitizer_cases(problem: str) -> list[tuple[int, int, int]]:
    """(m, n, k) of the cases `scripts/device_bench.sh sanitize` runs for the problem."""
    script = (REPO / "scripts" / "device_bench.sh").read_text().replace("\\\n", " ")
    line = re.search(rf"^\s*{problem}\) san \$tool {problem} (.*);;", script, re.M)
    assert line, f"no sanitize line for {problem} in scripts/device_bench.sh"
    return [tuple(int(v) for v in c) for c in re.findall(r'"m: (\d+); n: (\d+); k: (\d+);', line.group(1))]


@pytest.mark.parametrize("problem", KERNELS)
def test_the_sanitizer_cases_reach_every_chosen_config(problem):
    # compute-sanitizer is slow, so it runs chosen shapes, not the manifest: those must still reach
    # every config the chooser gives a manifest shape, or a new config would go unchecked
    cmod = parts(problem)[1]
    name = {config: name for name, config in cmod.SM90_CANDIDATES.items()}
    reached = {name[cmod.choose_sm90(*case)] for case in sanitizer_cases(problem)}
    missing = {name[cmod.choose_sm90(m, n, k)] for m, n, k, _ in all_cases(problem)} - reached
    assert not missing, f"{problem}: no sanitize case of scripts/device_bench.sh reaches {sorted(missing)}"


def test_only_the_r_side_needs_whole_tiles():
    """The S side (M, or N with swap_ab) may end in a partial tile; the R side may not."""
    from problems.dual_gemm.config import SM90_WIDE, SM90_WIDE_104, SM90_WIDE_SWAP

    def err(m, n, k, l, config):
        return config.shape_error(m, n, k, l)

    assert err(512, 3072, 7168, 1, SM90_WIDE_104) is None  # five 104-row tiles, the last with 96
    assert err(200, 256, 512, 1, SM90_WIDE) is None and err(40, 256, 512, 1, SM90_WIDE) is None
    assert "tile_n=128" in err(256, 200, 512, 1, SM90_WIDE)
    assert err(128, 200, 512, 1, SM90_WIDE_SWAP) is None
    assert "tile_m=128" in err(200, 192, 512, 1, SM90_WIDE_SWAP)


@pytest.mark.parametrize("problem", KERNELS)
@pytest.mark.parametrize("shape,needle", [((256, 512, 320, 1), "multiple of 256"),
                                          ((256, 100, 512, 1), "N must be"),
                                          ((256, 512, 512, 2), "L must be 1")])
def test_unsupported_shapes_raise(problem, shape, needle):
    _, _, _, cls, num_b, config = parts(problem)
    m, n, k, l = shape
    a = torch.zeros(m, k // 2, l, dtype=torch.uint8)
    b = torch.zeros(n, k // 2, l, dtype=torch.uint8)
    sa = torch.zeros(m, k // 16, l, dtype=torch.uint8)
    sb = torch.zeros(n, k // 16, l, dtype=torch.uint8)
    c = torch.zeros(m, n, l, dtype=torch.float16)
    with pytest.raises(ValueError, match=needle):
        launch_sm90(cls, config, a, (b,) * num_b, sa, (sb,) * num_b, c)


@pytest.mark.parametrize("problem", KERNELS)
def test_run_rejects_cpu_tensors_by_name(problem):
    kmod = parts(problem)[0]
    data = load_problem(problem).reference.generate_input(m=128, n=64, k=256, l=1, seed=1, device="cpu")
    with pytest.raises(ValueError, match="a: expected a CUDA tensor"):
        kmod.run(data)


@pytest.mark.parametrize("problem", KERNELS)
def test_portable_path_matches_reference_on_cpu(problem):
    sub = parts(problem)[2]
    ref = load_problem(problem).reference
    data = ref.generate_input(m=128, n=64, k=512, l=1, seed=3, device="cpu")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    ok, msg = check_tensor(sub.custom_kernel(data), want, 1e-3, 1e-3)
    assert ok, msg


# what a submission's sm90 call goes through between the dispatcher and the kernel
HOST_LAYER = ("shared/dispatch.py", "shared/call_cache.py", "shared/device_facts.py", "shared/cute/sm90_host.py",
              "shared/cute/launch_binding.py", "shared/cute/operand_checks.py", "shared/cute/pointers.py",
              "shared/cute/compile_cache.py")


@pytest.mark.parametrize("problem", KERNELS)
def test_submission_has_no_forbidden_word(problem):
    for f in (f"problems/{problem}/submission.py", f"problems/{problem}/kernel_sm90.py",
              f"problems/{problem}/config.py", "shared/cute/sm90_gemm.py", "shared/cute/sm90_config.py",
              "shared/cute/ptx.py", "shared/cute/fp4_decode.py", *HOST_LAYER):
        assert "str" "eam" not in (REPO / f).read_text().lower(), f


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("problem,case", [(p, c) for p in KERNELS for c in all_cases(p)],
                         ids=lambda x: x if isinstance(x, str) else "x".join(map(str, x)))
def test_sm90_kernel_matches_reference(problem, case, generator):
    C.run_and_check(problem, parts(problem)[0].run, case, generator)


# Shapes small enough to run fast that every candidate config takes (K / 256 even for the splits;
# N = 384: whole 96-row N tiles for the swapped roles, whose other shapes end in a partial tile).
EVERY_CONFIG_SHAPES = [(256, 512, 1024, 1), (128, 1024, 2048, 1), (256, 384, 1024, 1)]


@pytest.mark.parametrize("problem", KERNELS)
def test_every_candidate_config_has_a_test_shape(problem):
    cls = parts(problem)[3]
    for config in configs(problem):
        assert any(cls.can_implement(*s, config) for s in EVERY_CONFIG_SHAPES), config


@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("problem,config", [(p, c) for p in KERNELS for c in configs(p)],
                         ids=config_id)
def test_every_candidate_config_matches_reference(problem, config, generator):
    """The chooser picks one config per manifest shape; this runs every candidate, so that a config
    only the benchmarks reach is checked on more than one shape."""
    kmod, _, _, cls, _, _ = parts(problem)
    shapes = [s for s in EVERY_CONFIG_SHAPES if cls.can_implement(*s, config)]
    assert shapes, f"no test shape fits {config}"
    for shape in shapes:
        C.run_and_check(problem, lambda data: kmod.run(data, config), shape, generator)


# (problem, config, shape): the S side ends in a partial tile (M by default, N with swap_ab), once
# with an M that is not a multiple of 8 and once smaller than one tile; the swapped split's 4-byte
# stores with an even N and its value-by-value stores with an odd one
PARTIAL_S_TILES = [("dual_gemm", "SM90_WIDE", (200, 256, 512, 1)),
                   ("dual_gemm", "SM90_WIDE_104", (512, 256, 512, 1)),
                   ("dual_gemm", "SM90_WIDE_104_SHARED", (512, 256, 512, 1)),
                   ("dual_gemm", "SM90_WIDE_SPLIT2", (200, 256, 1024, 1)),
                   ("dual_gemm", "SM90_WIDE_SWAP", (128, 200, 512, 1)),
                   ("gemm", "SM90_M128_SWAP_SPLIT2", (128, 200, 512, 1)),
                   ("gemm", "SM90_M128_SWAP_SPLIT2", (128, 201, 512, 1)),
                   ("gemm", "SM90_M64", (100, 128, 256, 1)),
                   ("gemm", "SM90_M128", (40, 128, 512, 1))]


@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("problem,name,shape", PARTIAL_S_TILES,
                         ids=lambda x: x if isinstance(x, str) else "x".join(map(str, x)))
def test_partial_s_tiles_match_reference(problem, name, shape, generator):
    """TMA zero-fills the missing rows, the epilogue stores only the existing ones: the NaN poison
    must be overwritten exactly on C, and the guard after C's end (a tile's worth of rows or more)
    left as it was."""
    kmod, cmod, _, cls, _, _ = parts(problem)
    config = getattr(cmod, name)
    assert cls.can_implement(*shape, config) and shape[0 if not config.swap_ab else 1] % config.smem_rows
    C.run_and_check(problem, lambda data: kmod.run(data, config), shape, generator, guard=256 * max(shape[:2]))


def e4m3_scales_between(like: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
    """Random E4M3 scales shaped as `like` ([rows, K/16, L]) with exponent fields lo..hi, any mantissa, no NaN."""
    exp = torch.randint(lo, hi + 1, like.shape, dtype=torch.uint8, device=like.device)
    bits = (exp << 3) | torch.randint(0, 8, like.shape, dtype=torch.uint8, device=like.device)
    return torch.where(bits == 0x7F, 0x7E, bits).view(torch.float8_e4m3fn)


@pytest.mark.sm90
@pytest.mark.parametrize("problem,name,extremes", [("gemm", "SM90_M64_WIDE", True),
                                                   ("gemm", "SM90_M64_WIDE_SPLIT2", True),
                                                   ("gemm", "SM90_M128_SWAP_SPLIT2", True),
                                                   ("dual_gemm", "SM90_WIDE_SPLIT2", False)])
def test_decode_routes_give_the_same_outputs_bit_for_bit(problem, name, extremes):
    """Sm90Config.decode_bits: every combination of the two decodes per side (fp16 bit patterns or E4M3 bytes)
    feeds the tensor cores the same products up to powers of two and must give the same C, bit for bit, and
    the reference's. With `extremes` the scales of one side are the largest E4M3 values (64..448) and the
    other's the smallest (2^-9.., subnormals: R values down to 2^-24), then the other way round; else the
    stress generator's."""
    from shared import generators as G

    kmod, cmod, _, cls, num_b, _ = parts(problem)
    ref = load_problem(problem).reference
    shape = next(s for s in EVERY_CONFIG_SHAPES if cls.can_implement(*s, getattr(cmod, name)))
    m, n, k, l = shape
    base = ref.generate_stress_input(m=m, n=n, k=k, l=l, seed=2024, device="cuda")
    ranges = [((13, 15), (0, 1)), ((0, 1), (13, 15))] if extremes else [None]
    for r in ranges:
        data = list(base)
        if r is not None:
            torch.manual_seed(77)
            ns = 1 + num_b  # scale tensors: A's, then each B's; their permuted copies after them
            for j in range(ns):
                plain = e4m3_scales_between(data[1 + num_b + j], *(r[0] if j == 0 else r[1]))
                data[1 + num_b + j], data[1 + num_b + ns + j] = plain, G.permuted_with_filler(plain, (0, 4))
        want = ref.ref_kernel(tuple(t.clone() for t in data))
        outs = []
        for bits in range(4):
            d = [t.clone() for t in data]
            d[-1].fill_(float("nan"))
            outs.append(kmod.run(tuple(d), replace(getattr(cmod, name), decode_bits=bits)).clone())
        torch.cuda.synchronize()
        ok, msg = check_tensor(outs[0], want, 1e-3, 1e-3)
        assert ok, msg
        for bits in range(1, 4):
            assert torch.equal(outs[bits], outs[0]), (r, bits)


@pytest.mark.sm90
def test_the_guard_catches_a_store_past_c(monkeypatch):
    """The guard has teeth: with the transposed epilogue's store predicate forced on, the rows of the
    last S tile past M are written after C's end, and run_and_check says so."""
    from shared.cute import ptx, sm90_gemm, sm90_host
    from shared.cute.compile_cache import CompileCache

    monkeypatch.setattr(sm90_host, "_SM90_COMPILED", CompileCache())  # the broken kernel stays in this test
    monkeypatch.setattr(sm90_gemm, "st_global_f16x2_exchanged",
                        lambda addr, lo, hi, sel, store: ptx.st_global_f16x2_exchanged(addr, lo, hi, sel, 1))
    kmod, cmod, _, _, _, _ = parts("gemm")
    with pytest.raises(AssertionError, match="written past C's end"):
        C.run_and_check("gemm", lambda data: kmod.run(data, cmod.SM90_M64), (100, 128, 256, 1),
                        "generate_stress_input", guard=256 * 128)


@pytest.mark.sm90
@pytest.mark.parametrize("problem", KERNELS)
def test_repeat_calls_launch_from_the_prepared_launch(problem):
    """A repeat call on the same tensors launches from the submission's prepared launch (one C call,
    no checks); it must still write all of C (poisoned again first), and a call on other tensors in
    between must not leak into it."""
    sub = parts(problem)[2]
    ref = load_problem(problem).reference
    first, other = (ref.generate_stress_input(m=256, n=512, k=512, l=1, seed=s, device="cuda") for s in (5, 6))
    want = ref.ref_kernel(tuple(t.clone() for t in first))
    sub.custom_kernel(first)  # prepared; the DSL's checked call
    sub.custom_kernel(first)  # bound: the one-C-call launch from here on
    sub.custom_kernel(other)
    entries = len(sub.custom_kernel.prepared)
    first[-1].fill_(float("nan"))
    got = sub.custom_kernel(first)
    torch.cuda.synchronize()
    assert len(sub.custom_kernel.prepared) == entries  # a hit, not a new entry
    ok, msg = check_tensor(got, want, 1e-3, 1e-3)
    assert ok, msg


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("problem", KERNELS)
def test_submission_dispatches_to_the_sm90_kernel(problem):
    sub = parts(problem)[2]
    ref = load_problem(problem).reference
    data = ref.generate_input(m=256, n=512, k=256, l=1, seed=1111, device="cuda")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    ok, msg = check_tensor(sub.custom_kernel(data), want, 1e-3, 1e-3)
    assert ok, msg


# Two GEMMs chained through memory, for the dependent launch (Sm90Config.pdl): the first runs 8 CTAs for a
# long K, so the second's CTAs start at once on the idle SMs and wait there; the second reads the first's C
# as its A (128 rows of 512 bytes: K = 1024) and writes its C over the first's A (128 rows of 8192 bytes:
# N = 4096 fp16), so a read or a write of device memory before its wait would show in C.
CHAIN_FIRST = dict(m=128, n=256, k=16384, l=1)
CHAIN_SECOND = dict(m=128, n=4096, k=1024, l=1)


def _chained_gemms(prepare, rounds: int = 3, graph: bool = False) -> list[str]:
    """`prepare(data)` -> a launch, for each of the two GEMMs; both launched back to back on a side queue
    (behind a GPU sleep, so that both are queued before the first starts), `rounds` times, the first's A
    restored and its C poisoned before each. Returns the failed checks."""
    ref = load_problem("gemm").reference
    first = ref.generate_stress_input(**CHAIN_FIRST, seed=21, device="cuda")
    second = list(ref.generate_stress_input(**CHAIN_SECOND, seed=22, device="cuda"))
    second[0] = first[-1].permute(2, 0, 1).view(torch.uint8).permute(1, 2, 0).view(torch.float4_e2m1fn_x2)
    second[-1] = first[0].permute(2, 0, 1).view(torch.float16).permute(1, 2, 0)
    a1 = first[0].clone()
    want1 = ref.ref_kernel(tuple(t.clone() for t in first))
    launches = [prepare(first), prepare(tuple(second))]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    replay = None
    with torch.cuda.stream(side):
        for launch in launches:  # bound on this queue (the DSL's checked first launch) before the rounds
            launch()
        if graph:
            replay = torch.cuda.CUDAGraph()
            with torch.cuda.graph(replay, stream=side):
                for launch in launches:
                    launch()
    torch.cuda.synchronize()
    failures = []
    for r in range(rounds):
        with torch.cuda.stream(side):
            first[0].copy_(a1)
            first[-1].fill_(float("nan"))
            torch.cuda._sleep(2_000_000)
            if replay is not None:
                replay.replay()
            else:
                for launch in launches:
                    launch()
        torch.cuda.synchronize()
        ok, msg = check_tensor(first[-1], want1, 1e-3, 1e-3)  # the first read its A before the second wrote it
        if not ok:
            failures.append(f"round {r}, first GEMM: {msg}")
        # the second against its A as the first left it: it read that A only after the first was done
        got2 = second[-1].clone()
        want2 = ref.ref_kernel(tuple(t.clone() for t in second))
        ok, msg = check_tensor(got2, want2, 1e-3, 1e-3)
        if not ok:
            failures.append(f"round {r}, second GEMM: {msg}")
    return failures


def _chooser_prepare(data):
    kmod, cmod = parts("gemm")[:2]
    a, b = data[0], data[1]
    return kmod.prepare(data, cmod.choose_sm90(a.shape[0], b.shape[0], 2 * a.shape[1]))


@pytest.mark.sm90
@pytest.mark.parametrize("graph", [False, True], ids=["queue", "graph"])
def test_a_dependent_launch_reads_and_writes_only_after_the_kernel_before_it(graph):
    """The second GEMM starts before the first ends (dependent launch) yet reads the first's output and
    overwrites its input only once the first is complete, in a queue and in a replayed graph."""
    failures = _chained_gemms(_chooser_prepare, graph=graph)
    assert not failures, failures


@pytest.mark.sm90
def test_the_chain_catches_a_kernel_that_skips_its_wait(monkeypatch):
    """The chain test has teeth, and the dependent launch is in effect: compiled without the wait (the
    trigger kept), the second GEMM's CTAs, started early, read the first's C before it is written."""
    from shared.cute import sm90_host
    from shared.cute.compile_cache import CompileCache

    monkeypatch.setattr(sm90_host, "_SM90_COMPILED", CompileCache())  # the broken kernel stays in this test
    monkeypatch.setattr(cutlass.cute.arch, "griddepcontrol_wait", lambda *a, **k: None)
    failures = _chained_gemms(_chooser_prepare)
    assert any("second GEMM" in f for f in failures), failures
