"""nvfp4_group_gemm submission: `custom_kernel(data)` -> the list of each group's C.

Dispatch by the device of the first group's `a`:
    sm_90 (H100/H200) -> problems/group_gemm/kernel_sm90.py: every group's tiles in one launch,
                         scales read in place from the reordered copies on the GPU.
    anything else     -> the portable path: each group decoded exactly (E2M1 x E4M3 in fp32) and
                         multiplied in fp32 with TF32 off, on whatever device the inputs live on.
                         There is no sm100 grouped kernel yet: a B200 takes this path.
Wrong dtypes or inconsistent shapes raise TypeError / ValueError naming the group and tensor; on a
GPU with a kernel, so do groups of different L and K or N the kernel cannot take; an empty group
list does everywhere. A repeat call with the same, unchanged tensors skips the checks (they were made once).
"""

from task import input_t, output_t

from shared.cute.runtime import PreparedCalls, device_arch, identity_key, tensor_key
from shared.inputs import check_grouped
from shared.refmath import block_scaled_products

_prepared = PreparedCalls()  # one launch per distinct set of tensors


def _portable(data):
    abc, sf, _, sizes = data
    for (a, b, c), (sfa, sfb), (_, _, _, n_l) in zip(abc, sf, sizes):
        for l in range(n_l):
            (prod,) = block_scaled_products(a, sfa, [(b, sfb)], l)
            c[:, :, l] = prod.half()
    return [c for _, _, c in abc]


def _kernel_tensors(data):
    """What the kernels read and write: every group's a, b, c and reordered scales."""
    abc, _, reordered, _ = data
    return [t for group in abc for t in group] + [t for pair in reordered for t in pair]


def _identity(data):
    """(the kernel's tensors, the key of this call's tensor objects as they are now, and the sizes)."""
    tensors = _kernel_tensors(data)
    return tensors, (identity_key(tensors), tuple(map(tuple, data[3])))


def _check_kernel_sizes(sizes) -> None:
    if len({l for _, _, _, l in sizes}) > 1:
        raise ValueError(f"group_gemm: every group must have the same L, got {[l for *_, l in sizes]}")
    for g, (m, n, k, l) in enumerate(sizes):
        if l != 1 or k % 256 or n % 128:
            raise ValueError(f"group_gemm: group {g} (M, N, K, L) = {(m, n, k, l)}: the GPU kernel needs "
                             "L = 1, K % 256 == 0 and N % 128 == 0")


def custom_kernel(data: input_t) -> output_t:
    try:  # a repeat call with the same, unchanged tensors and sizes: its launch, no checks
        tensors, ident = _identity(data)
        hit = _prepared.by_identity.get(ident)
    except Exception:  # not the expected structure: check_grouped says what is wrong
        ident = hit = None
    if hit is not None:
        hit[0]()
        return [c for _, _, c in data[0]]
    sizes = check_grouped("group_gemm", data)
    if not sizes:
        raise ValueError("group_gemm: the group list is empty")
    if device_arch(data[0][0][0].device) == "sm90":
        from problems.group_gemm import kernel_sm90

        _check_kernel_sizes(sizes)
        key = (tensor_key(tensors), tuple(sizes))
        launch = _prepared.get(key) or _prepared.put(key, kernel_sm90.prepare(data, sizes))
        if ident is not None:
            _prepared.alias(ident, tensors, launch)
        launch()
        return [c for _, _, c in data[0]]
    return _portable(data)
