"""Host-side glue between torch tensors and compiled CuTe DSL kernels.

Kernels are compiled once per static key against null pointers (the compile needs no GPU, so CI can
compile for sm_90a and sm_100a), cached at module level, and called with the real tensors' data
pointers wrapped as CuTe pointers. A submission validates a call's tensors once per tensor_key and
keeps a PreparedLaunch for it (PreparedCalls), so that a repeat costs little more than the launch.
"""

from __future__ import annotations

import ctypes
import operator
import os
import weakref
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


def tensor_key(tensors) -> tuple:
    """What a validated call depends on, per tensor: address, shape, strides, dtype. Two calls with
    equal keys read and write the same memory in the same layout, so the first call's checks and
    marshalled arguments hold for the second. The device is implied: CUDA's unified addressing
    gives every allocation of the process, host or device, its own address range."""
    return tuple([(t.data_ptr(), t.shape, t.stride(), t.dtype) for t in tensors])


def identity_key(tensors) -> tuple:
    """Which tensor objects these are, and whether they changed since: id, version counter (every
    in-place op bumps it, the metadata ones - resize_, set_, as_strided_, t_ ... - included) and
    address (a `.data =` swap changes it). About a third of tensor_key's cost; flat (ids, then
    versions, then addresses) because map() over C getters is the cheapest way to read them (~80 ns
    per tensor per attribute on the build machine, which is what a 40-tensor grouped call pays)."""
    return (*map(id, tensors), *map(_VERSION, tensors), *map(_DATA_PTR, tensors))


_VERSION = operator.attrgetter("_version")
_DATA_PTR = torch.Tensor.data_ptr


class PreparedCalls:
    """Prepared launches, found two ways (both bounded: cleared when full; the leaderboard rotates
    through at most 50 input sets, so a working set always fits):
    - by tensor_key of the tensors a kernel reads and writes: what the checks depend on;
    - by identity_key of the call's tensor objects, an alias added once the first way has found or
      made the launch, so that a repeat call with the same, unchanged tensors skips building the
      tensor_key. Each alias holds weak references to its tensors and is dropped when one of them
      dies, before a new tensor can take its id (and perhaps its address and version)."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._calls: dict[Hashable, Callable[[], None]] = {}
        self.by_identity: dict[tuple, tuple] = {}  # identity_key -> (call, weak references)

    def get(self, key: Hashable) -> Callable[[], None] | None:
        return self._calls.get(key)

    def put(self, key: Hashable, call: Callable[[], None]) -> Callable[[], None]:
        if len(self._calls) >= self.limit:
            self._calls.clear()
        self._calls[key] = call
        return call

    def alias(self, ident: tuple, tensors, call: Callable[[], None]) -> None:
        if len(self.by_identity) >= self.limit:
            self.by_identity.clear()
        drop = self.by_identity.pop
        refs = [weakref.ref(t, lambda _ref, ident=ident: drop(ident, None)) for t in tensors]
        self.by_identity[ident] = (call, refs)

    def __len__(self) -> int:
        return len(self._calls)

    def clear(self) -> None:
        self._calls.clear()
        self.by_identity.clear()


def bind_compiled(fn: Callable, args: list) -> tuple[Callable, Any, Any, tuple]:
    """Split a compiled CuTe function's call into its two halves, once: marshal `args` into the
    C argument array its host entry point takes, and return (entry, packed, status, keep).
    `entry(packed)` then launches, and `status.value` (when status is not None) is its CUDA
    error code; `keep` holds the objects the array points into.

    A plain call re-checks the signature and marshals every argument on every call: ~50 us of host
    time per call, more than some of the kernels run. The names used here (generate_execution_args,
    to, _get_invoke_packed_args, jit_module.capi_func, cuda_result) are the DSL's own halves of
    that call in 4.8.1 and in the leaderboard runner's 4.3.5 (whose packer appends to the list it is
    given, hence the copy). A function without them (a future DSL, a test double) is called plainly.
    """
    try:
        exe_args, adapted = fn.generate_execution_args(*args)
        executor = _executor(fn)
        packed_view = executor._get_invoke_packed_args(list(exe_args))
        entry = executor.jit_module.capi_func
        status = executor.cuda_result
    except AttributeError:
        return (lambda _packed: fn(*args)), None, None, (fn, args)
    # 4.8.1 returns a per-thread buffer that the next marshalling overwrites: keep a copy.
    packed = (ctypes.c_void_p * len(packed_view))(*packed_view)
    return entry, packed, status, (fn, args, exe_args, adapted, executor)


def checked_call(fn: Callable, args: list) -> None:
    """The plain call: the DSL checks the arguments against the compiled signature and launches."""
    fn(*args)


_EXECUTORS: dict[int, tuple] = {}


def _executor(fn):
    """The function's executor on the current device, one per compiled function (each `to` retains
    the device's primary context and looks its kernels up again)."""
    hit = _EXECUTORS.get(id(fn))
    if hit is None or hit[0] is not fn:
        hit = _EXECUTORS[id(fn)] = (fn, getattr(fn, "_default_executor", None) or fn.to(None))
    return hit[1]


class PreparedLaunch:
    """A compiled CuTe function bound to fixed arguments; calling it launches with one C call (no
    argument checks, no marshalling). Built from validated tensors only: it trusts its arguments."""

    __slots__ = ("_fn", "_args", "_entry", "_packed", "_status", "_keep", "_hold")

    def __init__(self, fn: Callable, args: list, hold: Any = None) -> None:
        # `hold`: what the arguments point into and nothing else keeps alive (the grouped GEMM's
        # device-side table of group pointers and its TMA descriptor workspace).
        self._fn, self._args, self._hold = fn, args, hold
        self._entry = None

    def __call__(self) -> None:
        if self._entry is None:  # the first launch is the DSL's own checked call
            checked_call(self._fn, self._args)
            self._entry, self._packed, self._status, self._keep = bind_compiled(self._fn, self._args)
            return
        self._entry(self._packed)
        if self._status is not None and self._status.value:
            raise RuntimeError(f"CUDA error {self._status.value} launching {getattr(self._fn, '__name__', 'kernel')}")


def call_prepared(cache: PreparedCalls, data, reads: dict[str, tuple[int, ...]], prepare: Callable) -> Any:
    """A leaderboard tuple (all tensors, the output last) called through its prepared launch: found
    by the identity of the tuple's tensors, else by the tensor_key of those its kernel reads and
    writes (`reads[arch]`: their positions in `data`), else made by `prepare(data)` (all the checks;
    a PreparedLaunch, or a plain callable for the portable path, which is not kept). Returns
    data[-1], the output."""
    try:
        ident = identity_key(data)
        hit = cache.by_identity.get(ident)
    except Exception:  # not a tuple of tensors: prepare() says what is wrong
        ident = hit = None
    if hit is not None:
        hit[0]()
        return data[-1]
    try:
        key = tensor_key([data[i] for i in reads[device_arch(data[0].device)]])
    except Exception:  # not a tuple of tensors, or no kernel for this device: prepare() tells
        key = None
    call = cache.get(key)
    if call is None:
        call = prepare(data)
        if key is None or not isinstance(call, PreparedLaunch):
            call()
            return data[-1]
        cache.put(key, call)
    if ident is not None:
        cache.alias(ident, data, call)
    call()
    return data[-1]


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
