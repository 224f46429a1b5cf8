"""nvfp4_group_gemm submission: the portable path (no custom group GEMM kernel exists here yet).

Each group is decoded exactly (E2M1 x E4M3 in fp32) and multiplied in fp32 with TF32 off, on whatever
device the inputs live on. It is correct everywhere and slow everywhere: a starting point to replace.
"""

from task import input_t, output_t

from shared.inputs import check_grouped
from shared.refmath import block_scaled_products


def custom_kernel(data: input_t) -> output_t:
    check_grouped("group_gemm", data)
    abc, sf, _, sizes = data
    for (a, b, c), (sfa, sfb), (_, _, _, n_l) in zip(abc, sf, sizes):
        for l in range(n_l):
            (prod,) = block_scaled_products(a, sfa, [(b, sfb)], l)
            c[:, :, l] = prod.half()
    return [c for _, _, c in abc]
