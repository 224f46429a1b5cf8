"""nvfp4_group_gemm submission: `custom_kernel(data)` -> the list of each group's C.

Dispatch by the device of the first group's `a`:
    sm_100 (B200)     -> problems/group_gemm/kernel_sm100.py: all groups in one persistent launch
                         (tcgen05 block-scaled MMA, per-group TMA descriptors rewritten on the device,
                         the reordered scales read as they are). G = 1 is the same kernel.
    sm_90 (H100/H200) -> problems/group_gemm/kernel_sm90.py: every group through the GEMM kernel,
                         one launch per group (scales taken from the reordered copies on the GPU).
    anything else     -> the portable path: each group decoded exactly (E2M1 x E4M3 in fp32) and
                         multiplied in fp32 with TF32 off, on whatever device the inputs live on
                         (also where a kernel does not take the shapes: L != 1, N % 128 on sm100).
Wrong dtypes, inconsistent shapes, lists of different lengths, an empty group list, groups with
different L or a K that is not a positive multiple of 256 raise TypeError / ValueError naming the
group and tensor.

Host path (sm100): the first call on a set of tensors runs every check, builds the kernel's group
table on the GPU and binds the launch (shared.cute.runtime.PreparedLaunch); a repeat call with the
same, unchanged tensors is found by their identity and costs one C call into the launcher.
"""

from task import input_t, output_t

from shared.cute.runtime import PreparedCalls, PreparedLaunch, device_arch, identity_key, tensor_key
from shared.inputs import check_grouped
from shared.refmath import block_scaled_products

K_MULTIPLE = 256


def _portable(data):
    abc, sf, _, sizes = data
    for (a, b, c), (sfa, sfb), (_, _, _, n_l) in zip(abc, sf, sizes):
        for l in range(n_l):
            (prod,) = block_scaled_products(a, sfa, [(b, sfb)], l)
            c[:, :, l] = prod.half()
    return [c for _, _, c in abc]


def check_groups(data) -> list[tuple[int, int, int, int]]:
    """Every check that does not depend on the device (shared.inputs.check_grouped: one entry per group
    in every list, at least one group, one L, tensors consistent with problem_sizes), and K a positive
    multiple of 256 (the problem's constraint, which the kernels rely on). Returns the sizes."""
    sizes = check_grouped("group_gemm", data)
    for g, (_m, _n, k, _l) in enumerate(sizes):
        if k <= 0 or k % K_MULTIPLE:
            raise ValueError(f"group_gemm: group {g} has K = {k}; K must be a positive multiple of {K_MULTIPLE}")
    return sizes


_prepared = PreparedCalls()  # sm100: one launch for all groups, by the tensors it reads and writes


def _tensors(data) -> list:
    """What the sm100 launch reads and writes: every group's a, b, c, sfa_reordered, sfb_reordered."""
    abc, _, reordered, _ = data
    return [t for trio in abc for t in trio] + [t for pair in reordered for t in pair]


def custom_kernel(data: input_t) -> output_t:
    try:
        tensors = _tensors(data)
        ident = identity_key(tensors)
        hit = _prepared.by_identity.get(ident)
    except Exception:  # not the leaderboard tuple: check_groups says what is wrong
        tensors = ident = hit = None
    if hit is not None:
        hit[0]()
        return [c for _, _, c in data[0]]
    sizes = check_groups(data)
    arch = device_arch(data[0][0][0].device)
    if arch == "sm100":
        from problems.group_gemm import kernel_sm100

        key = tensor_key(tensors)
        call = _prepared.get(key) or kernel_sm100.prepare(data, sizes)
        if call is not None:
            if isinstance(call, PreparedLaunch):
                _prepared.put(key, call)
                _prepared.alias(ident, tensors, call)
            call()
            return [c for _, _, c in data[0]]
    elif arch == "sm90":
        from problems.group_gemm import kernel_sm90

        out = kernel_sm90.run(data, sizes)
        if out is not None:
            return out
    return _portable(data)
