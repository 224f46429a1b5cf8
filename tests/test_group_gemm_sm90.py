"""Grouped GEMM on sm90 (problems/group_gemm/kernel_sm90.py: each group through the GEMM kernel).

CPU tier: the reordered -> plain scale conversion agrees with shared/scales.py on M that are not
multiples of 128 (with random filler in the tail); every manifest group gets a config the GEMM kernel
takes; off sm90 the kernel path declines (the portable path runs); reordered scales that do not fit
their group are refused with the group and tensor named.
GPU tier (sm90): every manifest case, leaderboard and stress data, every C NaN-poisoned first; the
kernel path must be the one that ran; a bad reordered tensor raises before any group is launched.
"""

from __future__ import annotations

import pytest
import torch

from problems.group_gemm import kernel_sm90
from problems.group_gemm.config import choose_sm90
from shared import scales as S
from shared.check import check_groups
from shared.problem import load_problem

PROBLEM = load_problem("group_gemm")


def manifest_groups():
    for case in PROBLEM.tests + PROBLEM.benchmarks:
        yield from zip(case["m"], case["n"], case["k"])


@pytest.mark.parametrize("rows,k", [(40, 256), (128, 512), (164, 2048), (384, 768)])
def test_plain_scales_undo_the_reordered_layout(rows, k):
    plain = torch.randint(0, 256, (rows, k // 16, 1), dtype=torch.uint8)
    filler = torch.randint(0, 256, S.storage_shape(rows, k // 16, 1), dtype=torch.uint8)
    reordered = S.to_permuted(plain, filler)
    got = kernel_sm90.plain_scales(reordered, rows, k)
    assert got.is_contiguous() and tuple(got.shape) == (rows, k // 16, 1)
    assert torch.equal(got, plain)
    assert torch.equal(got, S.from_permuted(reordered, rows, k // 16))


def test_every_manifest_group_gets_a_config_the_gemm_kernel_takes():
    from shared.cute.sm90_blockscaled_mainloop import Sm90BlockScaledGemm

    for m, n, k in manifest_groups():
        cfg = choose_sm90(m, n, k)
        assert cfg is not None and Sm90BlockScaledGemm.can_implement(m, n, k, 1, cfg), (m, n, k, cfg)
        assert not cfg.swap_ab or m % cfg.tile_m == 0


def test_no_sm90_config_for_l_other_than_one_means_the_portable_path():
    data = PROBLEM.reference.generate_input(m=[64], n=[128], k=[256], g=1, seed=1, device="cpu")
    assert kernel_sm90.run(data, [(64, 128, 256, 2)]) is None  # L = 2: no config, nothing launched
    assert kernel_sm90.run(data, [(64, 128, 256, 1)]) is None  # CPU tensors: not for the kernel


def test_reordered_scales_that_do_not_fit_their_group_are_refused():
    good = torch.zeros(S.permuted_shape(40, 512 // 16, 1), dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"group 1 sfb_reordered must be a CUDA tensor of shape \(32, 4, 1, 4, 8, 1\)"):
        kernel_sm90.check_reordered(1, "sfb_reordered", good[:, :, :, :, :4], 40, 512)
    with pytest.raises(TypeError, match="group 0 sfa_reordered must have dtype"):
        kernel_sm90.check_reordered(0, "sfa_reordered", good.float(), 40, 512)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        kernel_sm90.check_reordered(0, "sfa_reordered", None, 40, 512)


@pytest.mark.sm90
def test_sm90_wrong_reordered_scales_raise_before_any_launch():
    data = PROBLEM.reference.generate_input(m=[64, 96], n=[128, 256], k=[256, 512], g=2, seed=5, device="cuda")
    (sfa_r, sfb_r) = data[2][1]
    data[2][1] = (sfa_r, sfb_r[:, :, :, :, :1])  # group 1's sfb for K = 256, not 512
    for _, _, c in data[0]:
        c.fill_(float("nan"))
    with pytest.raises(ValueError, match="group 1 sfb_reordered"):
        kernel_sm90.run(data, [tuple(s) for s in data[3]])
    torch.cuda.synchronize()
    assert all(torch.isnan(c).all() for _, _, c in data[0]), "a group was computed before the error"


@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("case", range(len(PROBLEM.tests) + len(PROBLEM.benchmarks)))
def test_sm90_groups_match_reference(case, generator):
    spec = (PROBLEM.tests + PROBLEM.benchmarks)[case]
    ref = PROBLEM.reference
    data = getattr(ref, generator)(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"], seed=spec["seed"],
                                   device="cuda")
    want = ref.ref_kernel(([tuple(t.clone() for t in group) for group in data[0]], *data[1:]))
    for _, _, c in data[0]:
        c.fill_(float("nan"))
    got = kernel_sm90.run(data, [tuple(s) for s in data[3]])
    assert got is not None, "the sm90 path did not take this case"
    torch.cuda.synchronize()
    assert all(g.data_ptr() == c.data_ptr() for g, (_, _, c) in zip(got, data[0])), "C must be written in place"
    ok, msg = check_groups(got, want, 1e-3, 1e-3)
    assert ok, msg
