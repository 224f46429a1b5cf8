"""Peer impl `bf16-predecoded` (operands pre-decoded, exactly, before timing; see shared/peers.py).

The timed call is ONE `torch._grouped_mm` over all groups where it runs (Hopper and newer, groups that
share N and K), else a loop of cuBLAS GEMMs. One deviation from the name: `_grouped_mm`'s output dtype
must equal its input dtype, and a bf16 output loses bits the fp16 result needs (it fails the 1e-3
tolerance), so here the operands are decoded to fp16 instead (still exact: an E2M1 value times an E4M3
scale has at most 5 significant bits and stays within fp16's range) and the fp16 output is what the
reference produces (fp32 accumulation, one rounding). It skips the decode.
"""

import torch

from shared.nvfp4 import dequantize
from shared.peers import PredecodeCache

ALIGN_M = 16  # _grouped_mm wants aligned group offsets; pad each group's rows (free: done in prepare)


def _decode_fp16(values, scales):
    return dequantize(values, scales)[:, :, 0].to(torch.float16)  # [rows, K]


def _grouped_ok(sizes, device) -> bool:
    return (device.type == "cuda" and torch.cuda.get_device_capability(device) >= (9, 0)
            and hasattr(torch, "_grouped_mm") and len({(n, k) for _, n, k, _ in sizes}) == 1)


def _build(data):
    abc, sf, _, sizes = data
    a_list = [_decode_fp16(a, sfa) for (a, _, _), (sfa, _) in zip(abc, sf)]
    b_list = [_decode_fp16(b, sfb) for (_, b, _), (_, sfb) in zip(abc, sf)]
    if not _grouped_ok(sizes, a_list[0].device):
        return ("loop", a_list, [b.t() for b in b_list])
    padded = [torch.nn.functional.pad(a, (0, 0, 0, -a.shape[0] % ALIGN_M)) for a in a_list]
    ends = torch.tensor([p.shape[0] for p in padded], device=a_list[0].device).cumsum(0)
    starts = [0] + ends.tolist()[:-1]
    return ("grouped", torch.cat(padded), torch.stack(b_list).transpose(1, 2), ends.to(torch.int32), starts)


_cache = PredecodeCache(_build, outputs=lambda data: [c for _, _, c in data[0]])
prepare = _cache.prepare


def custom_kernel(data):
    entry = _cache.get(data)
    outs = [c for _, _, c in data[0]]
    if entry[0] == "loop":
        old = torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False  # fp32 sums only
        try:
            for c, a, b_t in zip(outs, entry[1], entry[2]):
                c[:, :, 0] = (a @ b_t) if a.is_cuda else (a.float() @ b_t.float()).half()
        finally:
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = old
        return outs
    _, a_cat, b_t, ends, starts = entry
    p = torch._grouped_mm(a_cat, b_t, offs=ends)
    for c, s in zip(outs, starts):
        c[:, :, 0] = p[s : s + c.shape[0]]
    return outs
