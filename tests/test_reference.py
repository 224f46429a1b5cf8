"""Generators and references of the four problems.

Generators: for every manifest case (tests and benchmarks), the exact tuple of LEADERBOARD.md 3-6:
order, shapes, dtypes, strides, placement. References: against an independent float64 decode and
matmul (test_nvfp4.float64_dequantize), on the leaderboard's and on the stress data.
"""

import numpy as np
import pytest
import torch

from harness import problem as P
from harness.check import check_groups, check_tensor
from shared import generators as G
from shared import scales as S
from shared.nvfp4 import FP4_DTYPE, SF_DTYPE, as_bytes
from tests.test_nvfp4 import float64_dequantize

FP16 = torch.float16


def mkl(rows, cols, n_l, dtype):
    return ((rows, cols, n_l), dtype, (cols, 1, rows * cols))


def perm(rows, k, n_l):
    shape = S.permuted_shape(rows, k // 16, n_l)
    rm, rk = shape[2], shape[4]
    return (shape, SF_DTYPE, (16, 4, rk * 512, 1, 512, rm * rk * 512))


def expected_layout(name, case):
    """(shape, dtype, strides) of each tensor of the tuple, straight from the spec tables."""
    if name == "group_gemm":
        return None
    m, k, n_l = case["m"], case["k"], case["l"]
    n = 128 if name == "gemv" else case["n"]
    a = mkl(m, k // 2, n_l, FP4_DTYPE)
    b = mkl(n, k // 2, n_l, FP4_DTYPE)
    sfa, sfb = mkl(m, k // 16, n_l, SF_DTYPE), mkl(n, k // 16, n_l, SF_DTYPE)
    c = mkl(m, 1 if name == "gemv" else n, n_l, FP16)
    if name == "dual_gemm":
        return [a, b, b, sfa, sfb, sfb, perm(m, k, n_l), perm(n, k, n_l), perm(n, k, n_l), c]
    return [a, b, sfa, sfb, perm(m, k, n_l), perm(n, k, n_l), c]


def all_cases():
    for name in P.PROBLEM_NAMES:
        prob = P.load_problem(name)
        for kind, cases in (("test", prob.tests), ("bench", prob.benchmarks)):
            for i, case in enumerate(cases):
                yield pytest.param(name, dict(case), id=f"{name}-{kind}{i}")


@pytest.mark.parametrize("name,case", list(all_cases()))
def test_generator_layout_for_every_manifest_case(name, case):
    ref = P.load_problem(name).reference
    data = ref.generate_input(**case, device="cpu")
    if name == "group_gemm":
        abc, sf, sf_perm, sizes = data
        assert len(abc) == len(sf) == len(sf_perm) == len(sizes) == case["g"]
        for (a, b, c), (sfa, sfb), (pa, pb), size, mi, ni, ki in zip(abc, sf, sf_perm, sizes, case["m"], case["n"],
                                                                      case["k"]):
            assert size == (mi, ni, ki, 1) and all(isinstance(x, int) for x in size)
            got = [(tuple(t.shape), t.dtype, t.stride()) for t in (a, b, sfa, sfb, pa, pb, c)]
            want = [mkl(mi, ki // 2, 1, FP4_DTYPE), mkl(ni, ki // 2, 1, FP4_DTYPE), mkl(mi, ki // 16, 1, SF_DTYPE),
                    mkl(ni, ki // 16, 1, SF_DTYPE), perm(mi, ki, 1), perm(ni, ki, 1), mkl(mi, ni, 1, FP16)]
            assert got == want
        return
    got = [(tuple(t.shape), t.dtype, t.stride()) for t in data]
    assert got == expected_layout(name, case)


def small_case(name):
    return dict(P.load_problem(name).tests[0])


def tensors_of(data):
    """Every tensor of an input tuple, in order (group GEMM's lists of tuples flattened)."""
    if isinstance(data, torch.Tensor):
        return [data]
    if isinstance(data, list | tuple):
        return [t for x in data for t in tensors_of(x)]
    return []


@pytest.mark.parametrize("name", P.PROBLEM_NAMES)
def test_generator_is_deterministic_and_permuted_matches_plain(name):
    ref = P.load_problem(name).reference
    case = small_case(name)
    d1, d2 = ref.generate_input(**case, device="cpu"), ref.generate_input(**case, device="cpu")
    for t, u in zip(tensors_of(d1), tensors_of(d2)):
        if name == "dual_gemm" and t.dim() == 6:
            continue  # its permuted padding is torch.empty (none in its cases, but not comparable in general)
        assert torch.equal(t.view(torch.uint8) if t.element_size() == 1 else t,
                           u.view(torch.uint8) if u.element_size() == 1 else u)
    if name == "group_gemm":
        pairs = [pair for sfs, perms in zip(d1[1], d1[2]) for pair in zip(sfs, perms)]
    else:
        n_perm = 3 if name == "dual_gemm" else 2
        pairs = list(zip(d1[-1 - 2 * n_perm:-1 - n_perm], d1[-1 - n_perm:-1]))
    for plain, p in pairs:
        assert torch.equal(as_bytes(S.from_permuted(p, plain.shape[0], plain.shape[1])), as_bytes(plain))


def test_leaderboard_data_distributions():
    a, b, sfa, sfb, *_ = P.load_problem("gemv").reference.generate_input(m=256, k=512, l=2, seed=5, device="cpu")
    assert set(as_bytes(a).unique().tolist()) <= {0, 1, 2, 3}  # odd-K nibbles all zero: why stress data exists
    assert set(as_bytes(sfa).unique().tolist()) <= {0x00, 0x38, 0x40}  # scales {0, 1, 2}
    d = P.load_problem("dual_gemm").reference.generate_input(m=256, n=256, k=512, l=1, seed=5, device="cpu")
    assert bool(((as_bytes(d[0]) & 0x44) == 0).all())  # & 0xBB: values {0, +-0.5, +-1, +-1.5}
    assert float(d[3].float().max()) <= 1.0
    g = P.load_problem("group_gemm").reference.generate_input(m=(40, 72), n=(128, 256), k=(256, 512), g=2, seed=5,
                                                               device="cpu")
    assert set(as_bytes(g[1][0][0]).unique().tolist()) <= {0x38, 0x40}  # {1, 2}
    pad = S.permuted_storage(g[2][0][0])  # rows 40..127 are filler {1, 2}, never zero
    assert bool((pad != 0).all())


@pytest.mark.parametrize("name", P.PROBLEM_NAMES)
def test_stress_data_uses_every_code_in_both_nibbles(name):
    ref = P.load_problem(name).reference
    case = {"gemv": dict(m=256, k=1024, l=1), "gemm": dict(m=128, n=256, k=512, l=1),
            "dual_gemm": dict(m=128, n=256, k=512, l=1),
            "group_gemm": dict(m=(40, 100), n=(128, 256), k=(256, 512), g=2)}[name]
    data = ref.generate_stress_input(**case, seed=3, device="cpu")
    a = data[0][0][0] if name == "group_gemm" else data[0]
    byte = as_bytes(a)
    assert set((byte & 15).unique().tolist()) == set(range(16)) == set((byte >> 4).unique().tolist())
    out = ref.output_of(data)
    for c in out if isinstance(out, list) else [out]:
        assert bool(torch.isnan(c).all())  # poisoned: an unwritten element cannot pass


def float64_reference(name, data):
    """Independent: float64 decode (bit fields, ml_dtypes scales) and float64 matmul, fp16 once."""
    def prod(a, sa, b, sb, l):
        A = float64_dequantize(a[:, :, l:l + 1], sa[:, :, l:l + 1])[:, :, 0]
        B = float64_dequantize(b[:, :, l:l + 1], sb[:, :, l:l + 1])[:, :, 0]
        return A @ B.T

    if name == "group_gemm":
        return [np.stack([prod(a, sa, b, sb, 0)], -1).astype(np.float16)
                for (a, b, _), (sa, sb) in zip(data[0], data[1])]
    if name == "dual_gemm":
        a, b1, b2, sa, s1, s2, *_, c = data
        outs = []
        for l in range(c.shape[2]):
            p1, p2 = prod(a, sa, b1, s1, l), prod(a, sa, b2, s2, l)
            outs.append(p1 / (1 + np.exp(-p1)) * p2)
        return np.stack(outs, -1).astype(np.float16)
    a, b, sa, sb, *_, c = data
    if name == "gemv":
        b, sb = b[:1], sb[:1]
    return np.stack([prod(a, sa, b, sb, l) for l in range(c.shape[2])], -1).astype(np.float16)


@pytest.mark.parametrize("kind", ["leaderboard", "stress"])
@pytest.mark.parametrize("name", P.PROBLEM_NAMES)
def test_reference_matches_independent_float64(name, kind):
    prob = P.load_problem(name)
    ref = prob.reference
    gen = ref.generate_input if kind == "leaderboard" else ref.generate_stress_input
    cases = [dict(c) for c in prob.tests[:3]]
    if name == "group_gemm":
        cases.append(dict(m=(33, 100, 130), n=(128, 256, 128), k=(256, 256, 512), g=3, seed=9))
    for case in cases:
        data = gen(**case, device="cpu")
        want = float64_reference(name, data)
        got = ref.ref_kernel(data)
        for g_, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]):
            g_ = g_.double().numpy()
            if name == "dual_gemm" or kind == "stress":  # fp32 sums of non-dyadic-friendly scales: rounding only
                np.testing.assert_allclose(g_, w.astype(np.float64), rtol=1e-3, atol=1e-3)
            else:  # products are multiples of 1/4 and small: fp32 accumulation is exact, fp16 rounding once
                np.testing.assert_array_equal(g_, w.astype(np.float64))


def test_cost_figures():
    gemv = P.load_problem("gemv").reference
    assert gemv.cost(7168, 16384, 1)[0] == 66_069_504  # the 66.1 MB of H100-MEASURED.md
    read, written, flops = P.load_problem("dual_gemm").reference.cost(256, 4096, 7168, 1)
    assert flops == 4 * 256 * 4096 * 7168 and written == 2 * 256 * 4096


@pytest.mark.gpu
@pytest.mark.parametrize("name", P.PROBLEM_NAMES)
def test_cuda_placement_and_reference_agrees_with_cpu(name):
    prob = P.load_problem(name)
    ref = prob.reference
    case = dict(prob.tests[0])
    data = ref.generate_input(**case, device="cuda")
    if name == "group_gemm":
        for (a, b, c), (sfa, sfb), (pa, pb) in zip(*data[:3]):
            assert a.is_cuda and b.is_cuda and c.is_cuda and pa.is_cuda and pb.is_cuda
            assert sfa.device.type == "cpu" and sfb.device.type == "cpu"  # the leaderboard's quirk
    else:
        assert all(t.is_cuda for t in data)
    from harness.worker import clone_data

    def to_cpu(x):
        return x.cpu() if isinstance(x, torch.Tensor) else type(x)(to_cpu(y) for y in x) if isinstance(
            x, list | tuple) else x

    got = ref.ref_kernel(clone_data(data))
    want = ref.ref_kernel(to_cpu(data))
    for g_, w in zip(got if isinstance(got, list) else [got], want if isinstance(want, list) else [want]):
        if name == "dual_gemm":  # rand() scales: fp32 sums depend on the order, within rounding
            assert check_tensor(g_.cpu(), w, 1e-3, 1e-3) == (True, "")
        else:  # exact data: every order gives the same sum
            assert torch.equal(g_.cpu(), w)


@pytest.mark.sm100
@pytest.mark.parametrize("name", ["gemv", "gemm", "dual_gemm", "group_gemm"])
def test_reference_agrees_with_scaled_mm_on_blackwell(name):
    """On sm_100 torch._scaled_mm runs NVFP4 (the leaderboard's own reference): the two must agree."""
    prob = P.load_problem(name)
    ref = prob.reference
    for case in prob.tests[:4]:
        data = ref.generate_input(**dict(case), device="cuda")
        from harness.check import check_tensor
        got = ref.ref_kernel(data)
        want = G.scaled_mm_reference(name, data)
        ok, msg = (check_groups(got, want, 1e-3, 1e-3) if isinstance(want, list)
                   else check_tensor(got, want, 1e-3, 1e-3))
        assert ok, msg
