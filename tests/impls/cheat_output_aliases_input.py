"""Cheating impl: correct values, returned in a view of A's memory (the input used as scratch) instead
of C or a tensor of its own. The evaluator's aliasing guard must reject it. It needs A's storage to
hold C's bytes (gemv; gemm-like cases with K >= 4 N)."""

import torch
from cheat_support import reference_for


def _in_storage_of(a: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    storage = a.untyped_storage()
    if storage.nbytes() < values.numel() * values.element_size():
        raise ValueError(f"this cheat needs A's {storage.nbytes()} bytes to hold C's {values.numel()} fp16 values")
    view = torch.empty(0, dtype=values.dtype, device=values.device).set_(storage, 0, values.shape)
    return view.copy_(values)


def custom_kernel(data):
    out = reference_for(data).ref_kernel(data)
    if isinstance(out, list):
        return [_in_storage_of(a, c) for (a, _, _), c in zip(data[0], out)]
    return _in_storage_of(data[0], out)
