"""Input validation shared by the submissions: bad tuples get a TypeError / ValueError that names the
tensor, what was expected and what came, before any kernel sees them."""

import pytest
import torch

from harness.problem import load_problem
from shared.inputs import check_block_scaled, check_grouped, tuple_names


def data_of(problem, **case):
    return load_problem(problem).reference.generate_input(**case, seed=1, device="cpu")


def test_names_follow_the_leaderboard_tuples():
    assert tuple_names(1) == ["a", "b", "sfa", "sfb", "sfa_permuted", "sfb_permuted", "c"]
    assert len(tuple_names(2)) == 10 and tuple_names(2)[1:3] == ["b1", "b2"]


def test_valid_tuples_return_their_sizes():
    assert check_block_scaled("gemv", data_of("gemv", m=128, k=256, l=2), 1, c_cols=1) == (128, 128, 256, 2)
    assert check_block_scaled("gemm", data_of("gemm", m=128, n=256, k=512, l=1), 1) == (128, 256, 512, 1)
    assert check_block_scaled("dual_gemm", data_of("dual_gemm", m=128, n=256, k=512, l=1), 2) == (128, 256, 512, 1)
    g = data_of("group_gemm", m=(40, 128), n=(128, 256), k=(256, 512), g=2)
    assert check_grouped("group_gemm", g) == [(40, 128, 256, 1), (128, 256, 512, 1)]


def replaced(data, i, value):
    return tuple(value if j == i else x for j, x in enumerate(data))


@pytest.mark.parametrize("i,value,error,needle", [
    (0, None, TypeError, "gemm: a must be a torch.Tensor, got NoneType"),
    (2, torch.zeros(128, 32, 1), TypeError, "gemm: sfa must have dtype torch.float8_e4m3fn, got torch.float32"),
    (6, torch.zeros(128, 256, 1, dtype=torch.float32), TypeError, "c must have dtype torch.float16"),
    (1, torch.zeros(256, 128, dtype=torch.uint8), ValueError, "b must be 3-D, got shape (256, 128)"),
    (3, torch.zeros(256, 16, 1, dtype=torch.float8_e4m3fn), ValueError, "sfb must have shape (256, 32, 1)"),
    (6, torch.zeros(128, 128, 1, dtype=torch.float16), ValueError, "c must have shape (128, 256, 1)"),
])
def test_bad_gemm_inputs_are_named(i, value, error, needle):
    data = data_of("gemm", m=128, n=256, k=512, l=1)
    with pytest.raises(error, match=needle.replace("(", r"\(").replace(")", r"\)")):
        check_block_scaled("gemm", replaced(data, i, value), 1)


def test_wrong_arity_and_odd_k():
    with pytest.raises(TypeError, match="expected a 10-tuple"):
        check_block_scaled("dual_gemm", data_of("gemm", m=128, n=256, k=512, l=1), 2)
    a = torch.zeros(128, 4, 1, dtype=torch.uint8)  # K = 8
    sf = a.view(torch.float8_e4m3fn)
    with pytest.raises(ValueError, match="multiple of 16"):
        check_block_scaled("gemm", (a, a, sf, sf, None, None, torch.zeros(128, 128, 1, dtype=torch.float16)), 1)


def test_group_sizes_must_match_the_tensors():
    abc, sf, perm, sizes = data_of("group_gemm", m=(40, 128), n=(128, 256), k=(256, 512), g=2)
    with pytest.raises(ValueError, match=r"group 1 tensors have \(M, N, K, L\) = \(128, 256, 512, 1\)"):
        check_grouped("group_gemm", (abc, sf, perm, [sizes[0], (64, 256, 512, 1)]))
    with pytest.raises(ValueError, match="one entry per group"):
        check_grouped("group_gemm", (abc, sf[:1], perm, sizes))


@pytest.mark.parametrize("problem,case,n_b,c_cols", [
    ("gemv", dict(m=128, k=256, l=1), 1, 1),
    ("gemm", dict(m=128, n=256, k=512, l=1), 1, None),
    ("dual_gemm", dict(m=128, n=256, k=512, l=1), 2, None),
])
def test_scales_of_another_dtype_are_refused_plain_and_permuted(problem, case, n_b, c_cols):
    """A uint8 view of a scale tensor holds the same bytes, but one path would read them as E4M3 and
    another as integers: refused, naming the tensor, the expected and the given dtype."""
    data = data_of(problem, **case)
    names = tuple_names(n_b)
    for name in ("sfa", "sfa_permuted", names[-2]):
        i = names.index(name)
        bad = replaced(data, i, data[i].view(torch.uint8))
        with pytest.raises(TypeError, match=f"{problem}: {name} must have dtype torch.float8_e4m3fn, got torch.uint8"):
            check_block_scaled(problem, bad, n_b, c_cols=c_cols)


def test_group_scales_of_another_dtype_are_refused():
    abc, sf, perm, sizes = data_of("group_gemm", m=(40, 128), n=(128, 256), k=(256, 512), g=2)
    plain = [sf[0], (sf[1][0].view(torch.uint8), sf[1][1])]
    with pytest.raises(TypeError, match="group_gemm group 1: sfa must have dtype torch.float8_e4m3fn, got torch.uint8"):
        check_grouped("group_gemm", (abc, plain, perm, sizes))
    reordered = [(perm[0][0], perm[0][1].view(torch.uint8)), perm[1]]
    with pytest.raises(TypeError, match="group_gemm group 0: sfb_permuted must have dtype torch.float8_e4m3fn"):
        check_grouped("group_gemm", (abc, sf, reordered, sizes))


@pytest.mark.parametrize("problem", ["gemv", "gemm"])
def test_the_submission_refuses_uint8_scales_instead_of_answering(problem):
    import importlib

    sub = importlib.import_module(f"problems.{problem}.submission")
    case = dict(m=128, k=256, l=1) if problem == "gemv" else dict(m=128, n=256, k=512, l=1)
    data = data_of(problem, **case)
    with pytest.raises(TypeError, match=f"{problem}: sfa must have dtype torch.float8_e4m3fn, got torch.uint8"):
        sub.custom_kernel(replaced(data, 2, data[2].view(torch.uint8)))
