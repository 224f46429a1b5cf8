"""Peer impl `cublas-predecoded`: A, B1 and B2 decoded to fp16 before timing, B1 and B2 stacked as one
[B1; B2] (see shared/peers.py). The timed call is ONE cuBLAS fp16 GEMM of A against [B1; B2] with an
fp32 result, then silu(A·B1ᵀ) in place and the product with A·B2ᵀ written as fp16 into C.

Why the GEMM writes fp32, not fp16: rounding both products to fp16 before an fp32 epilogue fails the
1e-3 check on all 10 manifest test cases with both generators (an emulation of that rounding on the CPU:
42 to 19,726 mismatched elements per case), as the reference keeps them fp32 until one final rounding;
with fp32 products the same emulation passes all 20. It skips the decode."""

import torch

from shared.peers import PredecodeCache, as_lmn, decode_fp16, matmul_fp32_out, one_batch, summing_in_fp32


def _build(data):
    a, b1, b2, sfa, sfb1, sfb2, *_ = data
    b12 = torch.cat((decode_fp16(b1, sfb1), decode_fp16(b2, sfb2)), dim=1)  # [L, 2N, K]
    return one_batch(decode_fp16(a, sfa)), one_batch(b12.transpose(1, 2))


_cache = PredecodeCache(_build)
prepare = _cache.prepare


@summing_in_fp32
def custom_kernel(data):
    a, b12_t = _cache.get(data)
    c = data[-1]
    p = matmul_fp32_out(a, b12_t)  # [(L,) M, 2N] fp32
    n = p.shape[-1] // 2
    gate = torch.nn.functional.silu(p[..., :n], inplace=True)
    torch.mul(gate, p[..., n:], out=as_lmn(c))  # one rounding to fp16, into C
    return c
