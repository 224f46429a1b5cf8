"""Host-side glue between torch tensors and compiled CuTe DSL kernels.

Kernels are compiled once per static key against null pointers (the compile needs no GPU, so CI can
compile for sm_90a and sm_100a), cached at module level, and called with the real tensors' data
pointers wrapped as CuTe pointers; a repeat call with the same pointers and sizes reuses the
marshalled arguments (LaunchCache), so that it costs little more than the launch itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from typing import Any

import torch

try:  # CuTe DSL is optional: the portable torch path and the CPU tests run without it
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    HAVE_CUTE = True
except ImportError:  # pragma: no cover - exercised only where the DSL is absent
    cutlass = cute = make_ptr = None
    HAVE_CUTE = False


def require_cute() -> None:
    if not HAVE_CUTE:
        raise RuntimeError("nvidia-cutlass-dsl is not installed: pip install 'nvidia-cutlass-dsl'")


_ARCH_OF_DEVICE: dict[torch.device, str] = {}


def device_arch(device: torch.device | str | None = None) -> str:
    """The kernel family a device takes: 'sm90' (Hopper, 9.x), 'sm100' (Blackwell, 10.x), 'other' for
    any other CUDA device, 'cpu' when there is none or the device is the CPU. Remembered per indexed
    torch.device (a tensor's device): asking the driver costs ~8 us per call."""
    arch = _ARCH_OF_DEVICE.get(device) if isinstance(device, torch.device) else None
    if arch is None:
        arch = _device_arch(device)
        if isinstance(device, torch.device) and (device.index is not None or device.type == "cpu"):
            _ARCH_OF_DEVICE[device] = arch
    return arch


def _device_arch(device: torch.device | str | None) -> str:
    if device is not None and torch.device(device).type != "cuda":
        return "cpu"
    if not torch.cuda.is_available():
        return "cpu"
    major, _ = torch.cuda.get_device_capability(device)
    return {9: "sm90", 10: "sm100"}.get(major, "other")


def gmem_ptr(tensor: torch.Tensor, dtype: Any, align: int = 16):
    """The tensor's device address as a CuTe global-memory pointer of element type `dtype`.

    The alignment promise lets the compiler emit wide loads; it is checked here because a broken
    promise is a silent wrong answer or a fault in the kernel.
    """
    require_cute()
    addr = tensor.data_ptr()
    if addr % align:
        raise ValueError(f"tensor at 0x{addr:x} is not {align}-byte aligned")
    return make_ptr(dtype, addr, cute.AddressSpace.gmem, assumed_align=align)


def null_ptr(dtype: Any, align: int = 16):
    """A placeholder pointer for compiling without real tensors."""
    require_cute()
    return make_ptr(dtype, 0, cute.AddressSpace.gmem, assumed_align=align)


def compile_arch(arch: str):
    """Context manager that makes `cute.compile` target `arch` ('sm_90a', 'sm_100a') without a GPU."""
    return _EnvVar("CUTE_DSL_ARCH", arch)


class _EnvVar:
    def __init__(self, name: str, value: str):
        self.name, self.value, self.old = name, value, None

    def __enter__(self):
        self.old = os.environ.get(self.name)
        os.environ[self.name] = self.value
        return self

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop(self.name, None)
        else:
            os.environ[self.name] = self.old


def settle_heap() -> None:
    """Call after compiling: collect garbage once, then freeze what survives (mostly the compiler's
    Python objects) so that a later garbage collection, which can start inside a timed call while
    the GPU waits for the launch, does not walk them again. NVFP4_GC_FREEZE=0 turns it off (A/B
    timing)."""
    if os.environ.get("NVFP4_GC_FREEZE", "1") == "0":
        return
    import gc

    gc.collect()
    gc.freeze()


class LaunchCache:
    """The marshalled arguments of compiled CuTe functions, per distinct argument values.

    A plain call of a compiled function re-checks it against its compile-time signature and marshals
    every argument: with the pointer wraps about 65 us of host time per call on the lent H100's
    host (2026-11-23; 48 us the call, 14 the seven wraps), more than some of the kernels run, and
    the leaderboard's 50 back-to-back calls per sample must stay inside the head start its L2
    flush gives the host. It calls the kernels on the same 50 inputs over and over, so the first
    call with new values goes through the plain, checked call and keeps the marshalled form (with
    the argument objects its C pointers point into); a repeat only launches (the DSL's
    run_compiled_program). Keys are the function and every value that reaches it (pointer addresses
    and sizes), so a hit launches exactly what the plain call would. generate_execution_args and
    run_compiled_program are the two halves of the DSL's own __call__ in 4.8.1 and in 4.3.5 (the
    leaderboard runner's version); a function without them is always called plainly."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._entries: dict[Hashable, tuple] = {}

    def launch(self, fn: Callable, values: tuple, make_args: Callable[[], list]) -> None:
        hit = self._entries.get((fn, values))
        if hit is not None:
            fn.run_compiled_program(hit[0])
            return
        args = make_args()
        fn(*args)
        if not hasattr(fn, "run_compiled_program"):
            return
        if len(self._entries) >= self.limit:
            self._entries.clear()
        exe_args, adapted = fn.generate_execution_args(*args)
        self._entries[(fn, values)] = (exe_args, args, adapted)

    def __len__(self) -> int:
        return len(self._entries)


class CompileCache:
    """Compiled kernels keyed by their static configuration; built on first use (then the heap is
    settled: settle_heap). A build may return a falsy marker for "no kernel takes this key"."""

    def __init__(self) -> None:
        self._fns: dict[Hashable, Callable] = {}

    def get(self, key: Hashable, build: Callable[[], Callable]) -> Callable:
        fn = self._fns.get(key)
        if fn is None:
            fn = self._fns[key] = build()
            settle_heap()
        return fn

    def __len__(self) -> int:
        return len(self._fns)

    def items(self):
        return self._fns.items()

    def clear(self) -> None:
        self._fns.clear()
