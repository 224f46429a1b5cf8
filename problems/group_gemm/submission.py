"""nvfp4_group_gemm submission: `custom_kernel(data)` -> the list of each group's C.

Dispatch by the device of the first group's `a` (shared.dispatch); on both GPUs every group's tiles go in one launch
and G = 1 is the same kernel:
    sm_100 (B200)     -> problems/group_gemm/kernel_sm100.py: persistent, tcgen05 block-scaled MMA,
                         per-group TMA descriptors rewritten on the device, the reordered scales
                         read as they are.
    sm_90 (H100/H200) -> problems/group_gemm/kernel_sm90.py: one CTA per SM running a list of tiles, per-group
                         TMA descriptors written on the device once per set of tensors, the reordered
                         scales read as they are, exact FP4 decode + fp16 wgmma.
    anything else     -> the portable path: each group decoded exactly (E2M1 x E4M3 in fp32) and
                         multiplied in fp32 with TF32 off, on whatever device the inputs live on (also
                         where a kernel does not take the shapes: L != 1, N % 128 != 0).
Wrong dtypes, inconsistent shapes, lists of different lengths, an empty group list, groups with
different L or a K that is not a positive multiple of 256 raise TypeError / ValueError naming the
group and tensor.

Host path (shared.dispatch): the first call on a set of tensors runs every check, writes the
kernel's group tables on the GPU and binds the launch; a repeat call costs one C call after a check
that the tuple, its lists and the kernel's tensors are unchanged.
"""

from problems.group_gemm.reference import ref_kernel as portable  # exact decode, fp32, into c
from shared.dispatch import Dispatch
from shared.inputs import check_grouped

K_MULTIPLE = 256




def check_groups(data) -> list[tuple[int, int, int, int]]:
    """Every check that does not depend on the device (shared.inputs.check_grouped: one entry per group
    in every list, at least one group, one L, tensors consistent with problem_sizes), and K a positive
    multiple of 256 (the problem's constraint, which the kernels rely on). Returns the sizes."""
    sizes = check_grouped("group_gemm", data)
    for g, (_m, _n, k, _l) in enumerate(sizes):
        if k <= 0 or k % K_MULTIPLE:
            raise ValueError(f"group_gemm: group {g} has K = {k}; K must be a positive multiple of {K_MULTIPLE}")
    return sizes


def kernel_tensors(data) -> list:
    """What the kernels read and write: every group's a, b, c, sfa_reordered, sfb_reordered."""
    abc, _, reordered, _ = data
    return [t for trio in abc for t in trio] + [t for pair in reordered for t in pair]


def sm100_config(sizes, sms: int):
    """The sm100 config of these groups: the gates table's variant where a B200 run found one correct
    and fastest for them, else choose_sm100 (shared/sm100_variants.gate)."""
    from problems.group_gemm.config import SM100_VARIANTS
    from shared.sm100_variants import gate

    sizes = [tuple(s) for s in sizes]
    return gate("group_gemm", SM100_VARIANTS, tuple(sizes), sizes, sms)


def kernel(arch: str, data, sizes, sms: int):
    """The device's bound launch for these tensors, or None where no kernel takes them."""
    if arch == "sm100":
        from problems.group_gemm import kernel_sm100

        if not kernel_sm100.takes(sizes):
            return None
        return kernel_sm100.prepare(data, sm100_config(sizes, sms), sizes)
    from problems.group_gemm import kernel_sm90

    return kernel_sm90.prepare(data, sizes)


_dispatch = Dispatch(
    check=check_groups,
    kernel=kernel,
    portable=portable,
    tensors=kernel_tensors,
    output=lambda data: [c for _, _, c in data[0]],
    sizes=lambda data: tuple(map(tuple, data[3])),
)


def custom_kernel(data):
    # No `from task import input_t, output_t` here: task.py exists only beside the leaderboard's
    # runner, and real callers import this module alone.
    return _dispatch(data)
