"""Cheating impl: on import it slows the clocks the timing might read (the host clock 200x, CUDA event
times 200x), then computes right answers. The evaluator times through references it took before the
impl was loaded, so no score moves, and its rebinding guard must reject the impl for trying."""

import time

import torch
from cheat_support import reference_for

_real_ns = time.perf_counter_ns
time.perf_counter_ns = lambda: _real_ns() // 200
_real_elapsed = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _real_elapsed(self, end) / 200


def custom_kernel(data):
    return reference_for(data).ref_kernel(data)
