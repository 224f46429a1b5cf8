"""Cheating impl (GPU): it returns at once and leaves its work on another CUDA queue, behind a spin, so
that the work runs after the evaluator's end event; the values are right once the device is idle. The
evaluator's unfinished-work check must reject it. On the CPU it is the reference."""

import torch
from cheat_support import reference_for

_side = {}
SPIN_CYCLES = 2_000_000  # about 1 ms on an H100 at its boost clock


def custom_kernel(data):
    ref = reference_for(data)
    if not torch.cuda.is_available():
        return ref.ref_kernel(data)
    device = torch.cuda.current_device()
    side = _side.setdefault(device, torch.cuda.Stream())
    side.wait_stream(torch.cuda.current_stream())  # the inputs' values are ready
    with torch.cuda.stream(side):
        torch.cuda._sleep(SPIN_CYCLES)
        out = ref.ref_kernel(data)
    return out
