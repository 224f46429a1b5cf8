"""The queue a kernel launches on: torch's current CUDA queue on the kernel's device.

A real caller (a serving stack, a layer-by-layer loop, a CUDA graph capture) runs its work on
torch's current queue: a kernel launched on any other queue races with the ops that made its inputs
and read its output, and no graph captures it. So every compiled `__call__` takes the queue as its
last argument (typed `Queue`) and launches through `launch`; the host layer's PreparedLaunch passes
`argument(current(device))` on every call (the current queue is looked up per call: a caller may
switch queues between calls).

Leaderboard bundles: the leaderboard refuses any file containing the CUDA name of a queue, and its
runner calls custom_kernel on the default queue. The packager (harness/package.py) therefore bundles
launch_queue_default.py under this module's name: the same names, the default queue only. The
evaluator checks that premise when it runs a bundle.
"""

from __future__ import annotations

import torch

try:
    import cuda.bindings.driver as _driver

    Queue = _driver.CUstream  # the compiled __call__'s parameter type
except ImportError:  # pragma: no cover - no cuda-python: nothing compiles, the portable paths run
    _driver = Queue = None

_current_raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current(device_index: int) -> int:
    """The raw handle of torch's current queue on the device (0: the default queue)."""
    return _current_raw(device_index)


def argument(raw: int):
    """The compiled call's queue argument for a raw handle from `current`."""
    return _driver.CUstream(raw)


def capturing(raw: int) -> bool:
    """Whether the queue `raw` is being captured into a CUDA graph (a launch made now is replayed
    later, for as long as the graph lives)."""
    err, status = _driver.cuStreamIsCapturing(argument(raw))
    none = _driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE
    return err == _driver.CUresult.CUDA_SUCCESS and status != none


def placeholder():
    """The queue argument to compile against (no GPU needed; the value is not kept)."""
    return _driver.CUstream(0)


def launch(kernel_call, queue, **config) -> None:
    """Launch `kernel_call` (a @cute.kernel bound to its arguments) on `queue` with the launch
    config (grid, block, cluster, ...)."""
    kernel_call.launch(**config, stream=queue)
