"""Cheating impl: correct values in C, plus one element written just past C's last element, as a
kernel whose tile overruns the tensor would. From torch that memory is reachable only where C's
storage extends past it (the evaluator's guarded C); on a GPU a kernel writes it either way, into
whatever lives there. The evaluator's out-of-bounds guard must reject it."""

import torch
from cheat_support import reference_for


def _write_past_end(c: torch.Tensor) -> None:
    last = c.storage_offset() + sum((n - 1) * s for n, s in zip(c.shape, c.stride()))
    storage = c.untyped_storage()
    if (last + 2) * c.element_size() <= storage.nbytes():
        past = torch.empty(0, dtype=c.dtype, device=c.device).set_(storage, last + 1, (1,))
        past.fill_(0.0)


def custom_kernel(data):
    out = reference_for(data).ref_kernel(data)
    for c in out if isinstance(out, list) else [out]:
        _write_past_end(c)
    return out
