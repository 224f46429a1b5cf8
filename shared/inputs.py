"""Validation of the leaderboard's block-scaled input tuples (LEADERBOARD.md 2.4), shared by the
submissions. Free of I/O and of CuTe DSL, so that the packager can inline it into a single file.

A tuple is (a, b_1..b_nb, sfa, sfb_1..sfb_nb, sfa_permuted, sfb_1_permuted.., c): gemv and gemm have
one B (named b), the dual GEMM two (b1, b2). Values may be float4_e2m1fn_x2 or their uint8 bytes;
scales, plain and permuted, must be float8_e4m3fn: a scale tensor of another dtype (a uint8 view, say)
is refused rather than read as E4M3 bytes by one path and as integers by another. Every tensor is
3-D [rows, cols, L] (the permuted scales aside).
"""

from __future__ import annotations

import torch

FP4 = (torch.float4_e2m1fn_x2, torch.uint8)
E4M3 = (torch.float8_e4m3fn,)
FP16 = (torch.float16,)


def tuple_names(n_b: int) -> list[str]:
    bs = ["b"] if n_b == 1 else [f"b{i + 1}" for i in range(n_b)]
    return ["a", *bs, "sfa", *(f"sf{b}" for b in bs), "sfa_permuted", *(f"sf{b}_permuted" for b in bs), "c"]


def check_block_scaled(problem: str, data, n_b: int, c_cols: int | None = None,
                       one_device: bool = True) -> tuple[int, int, int, int]:
    """Raise TypeError / ValueError naming the tensor, what was expected and what came; else return
    (M, N, K, L) with N the rows of each B and K the logical (unpacked) K. c must be [M, c_cols or N, L].
    Of the permuted scales only the dtype is checked here (the kernels that read them check their
    layout); None stands for a permuted scale nobody reads (group GEMM's plain pairs)."""
    names = tuple_names(n_b)
    if not isinstance(data, tuple | list) or len(data) != len(names):
        got = f"{type(data).__name__} of length {len(data)}" if hasattr(data, "__len__") else type(data).__name__
        raise TypeError(f"{problem}: expected a {len(names)}-tuple ({', '.join(names)}), got {got}")
    t = dict(zip(names, data))
    bs = names[1 : 1 + n_b]
    kinds = {"a": FP4, **{b: FP4 for b in bs}, "sfa": E4M3, **{f"sf{b}": E4M3 for b in bs}, "c": FP16}
    for name, ok in kinds.items():
        x = t[name]
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{problem}: {name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dtype not in ok:
            raise TypeError(f"{problem}: {name} must have dtype {' or '.join(map(str, ok))}, got {x.dtype}")
        if x.dim() != 3:
            raise ValueError(f"{problem}: {name} must be 3-D, got shape {tuple(x.shape)}")
    for name in (n for n in names if n.endswith("_permuted")):
        x = t[name]
        if x is not None and (not isinstance(x, torch.Tensor) or x.dtype not in E4M3):
            got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"{problem}: {name} must have dtype {E4M3[0]}, got {got}")
    m, half_k, l = t["a"].shape
    n, k = t[bs[0]].shape[0], 2 * half_k
    if k % 16:
        raise ValueError(f"{problem}: K = 2*a.shape[1] = {k} must be a multiple of 16")
    expect = {**{b: (n, half_k, l) for b in bs}, "sfa": (m, k // 16, l), **{f"sf{b}": (n, k // 16, l) for b in bs},
              "c": (m, n if c_cols is None else c_cols, l)}
    for name, shape in expect.items():
        if tuple(t[name].shape) != shape:
            raise ValueError(f"{problem}: {name} must have shape {shape} (a is {tuple(t['a'].shape)}), "
                             f"got {tuple(t[name].shape)}")
    devices = {t[name].device for name in kinds}
    if one_device and len(devices) != 1:
        raise ValueError(f"{problem}: {', '.join(kinds)} must be on one device, got {sorted(map(str, devices))}")
    return m, n, k, l



def check_grouped(problem: str, data) -> list[tuple[int, int, int, int]]:
    """The group GEMM tuple (abc_tensors, sfasfb_tensors, sfasfb_reordered_tensors, problem_sizes): lists
    of one entry per group, each group's tensors consistent with its (M, N, K, L). The plain scales
    live on the CPU (the leaderboard's layout), so devices are not compared. Returns the sizes."""
    if not isinstance(data, tuple | list) or len(data) != 4:
        raise TypeError(f"{problem}: expected a 4-tuple (abc_tensors, sfasfb_tensors, sfasfb_reordered_tensors, "
                        f"problem_sizes), got {type(data).__name__}")
    abc, sf, reordered, sizes = data
    if not (len(abc) == len(sf) == len(reordered) == len(sizes)):
        raise ValueError(f"{problem}: abc_tensors, sfasfb_tensors, sfasfb_reordered_tensors and problem_sizes "
                         f"need one entry per group, got {len(abc)}, {len(sf)}, {len(reordered)}, {len(sizes)}")
    if not sizes:
        raise ValueError(f"{problem}: expected at least one group, got an empty group list")
    for g, ((a, b, c), (sfa, sfb), pair, size) in enumerate(zip(abc, sf, reordered, sizes)):
        # a malformed reordered pair is the kernels' to name (shared/cute/host.check_group)
        sfa_r, sfb_r = pair if isinstance(pair, tuple | list) and len(pair) == 2 else (None, None)
        got = check_block_scaled(f"{problem} group {g}", (a, b, sfa, sfb, sfa_r, sfb_r, c), n_b=1, one_device=False)
        if tuple(size) != got:
            raise ValueError(f"{problem}: group {g} tensors have (M, N, K, L) = {got}, "
                             f"problem_sizes says {tuple(size)}")
        if got[3] != sizes[0][3]:
            raise ValueError(f"{problem}: every group needs the same L, group 0 has L = {sizes[0][3]}, "
                             f"group {g} has L = {got[3]}")
    return [tuple(s) for s in sizes]
