"""The host layer: everything between torch tensors and compiled CuTe DSL kernels, for both
architectures.

- Compile once per static key against null pointers (no GPU needed, so CI compiles for sm_90a and
  sm_100a), cached at module level (CompileCache, compile_sm90, compile_sm100).
- Check the operands (check_operand, check_kmajor, check_scales, check_cuda, check_group): a
  TypeError / ValueError naming the tensor, what was expected and what came.
- Bind the compiled function to the tensors once (prepare_sm90, prepare_sm100, PreparedLaunch: the
  arguments marshalled once, then one C call per launch on torch's current queue, launch_queue.py).
- Find a repeat call's launch cheaply (PreparedCalls, Remembered, identity_key; host_check.py), which
  shared/dispatch.py uses for every submission.
"""

from __future__ import annotations

import ctypes
import os
import sys
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import torch

from shared.cute import launch_queue
from shared.cute.host_check import identity_key_function, watch_class

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


def identity_key(tensors) -> tuple | bytes:
    """Which tensor objects these are, and whether they changed since (host_check: compiled, ids and
    what a launch depends on; or in Python, ids, versions and addresses)."""
    return identity_key_function()(tuple(tensors))


_IMMUTABLE_LEAVES = (int, float, bool, str, type(None))


def _lists_in(obj, found: list) -> bool:
    """Append every list inside `obj`, the only containers of a call argument that can change in place
    (tuples cannot; tensors are watched themselves). False if `obj` holds anything else than tuples,
    lists, tensors and immutable scalars."""
    kind = type(obj)
    if kind is tuple or kind is list:
        if kind is list:
            found.append(obj)
        return all(_lists_in(x, found) for x in obj)
    return isinstance(obj, torch.Tensor) or kind in _IMMUTABLE_LEAVES


class Remembered:
    """A call argument whose launch is known, held so that its id cannot pass to another object, with
    what a repeat call must find unchanged (host_check.Watch): the items of each list inside it (the
    same objects) and the tensors the launch reads and writes (other tensors in it are checked once,
    when prepared). `unchanged()` is the watch's own method, so a repeat call's check is one call.
    `result`: what the call returns, kept for calls that build it (group_gemm's list of outputs)."""

    __slots__ = ("data", "tensors", "unchanged", "call", "result")

    def __init__(self, data, lists: list, tensors, call: Callable[[], None], result: Any = None) -> None:
        self.data, self.call, self.result = data, call, result
        self.tensors = tuple(tensors)
        self.unchanged = watch_class()(tuple(lists), self.tensors).unchanged


class PreparedCalls:
    """Prepared launches, found three ways, cheapest first (each bounded: cleared when full; the
    leaderboard rotates through at most 50 input sets, so a working set always fits):
    - `seen`: the very call argument (the same tuple object) called before and unchanged since, the
      leaderboard's pattern: the argument is held (`remember`), so only its lists' items and the
      state of the kernel's tensors are read, no key is built or hashed. Arguments that only this
      cache still holds are let go at the next `remember`: nobody can pass them again.
    - by identity_key of the call's tensor objects (an alias with weak references, dropped when one
      of its tensors dies, before a new tensor can take its id): the same tensors in a new tuple;
    - by tensor_key of the tensors a kernel reads and writes: what the checks depend on."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._calls: dict[Hashable, Callable[[], None]] = {}
        self.by_identity: dict[tuple, tuple] = {}  # identity_key -> (call, weak references)
        self._seen: dict[int, Remembered] = {}  # id of a held call argument -> what it launches

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

    def seen(self, data) -> Remembered | None:
        """What was remembered of this very object, if it is unchanged since; else None."""
        entry = self._seen.get(id(data))
        return entry if entry is not None and entry.unchanged() else None

    def remembers(self, data) -> bool:
        return id(data) in self._seen

    def remember(self, data, tensors, call: Callable[[], None], result: Any = None) -> None:
        """Hold `data` with its launch (see Remembered); `tensors`: those the launch reads and writes.
        An argument with other contents than tuples, lists, tensors and scalars is not held."""
        lists: list = []
        if not _lists_in(data, lists):
            return
        for key, entry in list(self._seen.items()):
            if sys.getrefcount(entry.data) <= 2:  # held by the entry alone (and getrefcount's argument)
                del self._seen[key]
        if len(self._seen) >= self.limit:
            self._seen.clear()
        self._seen[id(data)] = Remembered(data, lists, tensors, call, result)

    def __len__(self) -> int:
        return len(self._calls)

    def clear(self) -> None:
        self._calls.clear()
        self.by_identity.clear()
        self._seen.clear()


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


def device_index(device: torch.device) -> int:
    """The CUDA device's index ("cuda" without one: the current device)."""
    return device.index if device.index is not None else torch.cuda.current_device()


def with_queue(args: list, raw) -> list:
    """A compiled call's arguments with the queue argument for `raw` (launch_queue.current) last. A
    leaderboard bundle's queue is a compile-time constant, not an argument: nothing is added (a None
    in its place would shift the arguments the DSL's host code reads)."""
    queue = launch_queue.argument(raw)
    return [*args] if queue is None else [*args, queue]


def call_on_current_queue(fn: Callable, args: list, device: torch.device) -> None:
    """A plain (checked) call of a compiled function on torch's current queue of `device`."""
    fn(*with_queue(args, launch_queue.current(device_index(device))))


class PreparedLaunch:
    """A compiled CuTe function bound to fixed arguments; calling it launches with one C call (no
    argument checks, no marshalling) on torch's current queue of `device` (launch_queue.py), which
    is passed as the compiled function's last argument. Built from validated tensors only: it
    trusts its arguments."""

    __slots__ = ("_fn", "_args", "_device", "_bound", "_hold")

    def __init__(self, fn: Callable, args: list, device: torch.device, hold: Any = None) -> None:
        # `hold`: what the arguments point into and nothing else keeps alive (the grouped GEMM's
        # device-side table of group pointers and its TMA descriptor workspace).
        self._fn, self._args, self._hold = fn, args, hold
        self._device = device_index(device)
        self._bound: dict = {}  # raw queue handle -> (entry, packed, status, keep)

    def __call__(self) -> None:
        raw = launch_queue.current(self._device)
        bound = self._bound.get(raw)
        if bound is None:  # the first launch on this queue is the DSL's own checked call
            args = with_queue(self._args, raw)
            checked_call(self._fn, args)
            if len(self._bound) >= 8:  # a caller cycling through many queues: keep a few
                self._bound.clear()
            self._bound[raw] = bind_compiled(self._fn, args)
            return
        entry, packed, status, _keep = bound
        entry(packed)
        if status is not None and status.value:
            raise RuntimeError(f"CUDA error {status.value} launching {getattr(self._fn, '__name__', 'kernel')}")


def sm_count(device: torch.device) -> int:
    """The device's SM count (a persistent grid's size, the choosers' input), asked once per device."""
    index = device_index(device)
    count = _SM_COUNTS.get(index)
    if count is None:
        count = _SM_COUNTS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return count


_SM_COUNTS: dict[int, int] = {}


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


# ------------------------------------------------------------------------------------------------
# Operand checks of both architectures: TypeError / ValueError naming the tensor, what was expected
# and what came. Dtypes are given by name ("float16"); strides of extent-1 dimensions are free.
# ------------------------------------------------------------------------------------------------

FP4 = ("float4_e2m1fn_x2", "uint8")
E4M3 = ("float8_e4m3fn",)


def _dims_match(got, want, shape) -> bool:
    """Strides agree wherever they matter (a dimension of extent 1 is never stepped over, and an
    empty tensor is never read)."""
    return 0 in shape or all(g == w or d == 1 for g, w, d in zip(got, want, shape))


def check_operand(name: str, t, shape, dtypes, strides) -> None:
    """A tensor of one of `dtypes` with this shape and these strides (where it lives: check_cuda)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if str(t.dtype).replace("torch.", "") not in dtypes:
        raise TypeError(f"{name}: expected dtype in {dtypes}, got {t.dtype}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")
    if not _dims_match(tuple(t.stride()), tuple(strides), tuple(shape)):
        raise ValueError(f"{name}: expected strides {tuple(strides)}, got {tuple(t.stride())}")


def check_kmajor(name: str, t, rows: int, cols: int, l: int, dtypes) -> None:
    """[rows, cols, L], each row contiguous, batch-major: the leaderboard's values and plain scales."""
    check_operand(name, t, (rows, cols, l), dtypes, (cols, 1, rows * cols))


def check_scales(name: str, t, rows: int, k: int, l: int, dtypes=E4M3) -> None:
    """The permuted (reordered) scales of a rows x K operand: [32, 4, rows/128, 4, K/64, L] of
    contiguous 512-byte atoms, as the leaderboard makes them."""
    rest_mn, rest_k = -(-rows // 128), -(-k // 64)
    check_operand(name, t, (32, 4, rest_mn, 4, rest_k, l), dtypes,
                  (16, 4, rest_k * 512, 1, 512, rest_mn * rest_k * 512))


def check_cuda(align: int = 16, **tensors) -> None:
    """ValueError naming the first tensor that is not on the CUDA device of the first one, or not
    `align`-byte aligned (the kernels' vector loads and TMA boxes assume it)."""
    device = None
    for name, t in tensors.items():
        if not t.is_cuda:
            raise ValueError(f"{name}: expected a CUDA tensor, got device {t.device}")
        device = device or t.device
        if t.device != device:
            raise ValueError(f"{name}: expected device {device} like the other operands, got {t.device}")
        if t.data_ptr() % align:
            raise ValueError(f"{name}: expected a {align}-byte aligned address, got 0x{t.data_ptr():x}")


def check_group(g: int, a, b, c, reordered, size, scale_dtypes=E4M3) -> tuple:
    """Group g of a grouped GEMM as both grouped kernels read it: a [M, K/2, 1], b [N, K/2, 1] K-major,
    c [M, N, 1] fp16 row-major, the pair of reordered scales; returns (sfa_reordered, sfb_reordered).
    The device comes after every group's layout: check_groups_cuda."""
    m, n, k, _ = size
    if not isinstance(reordered, tuple | list) or len(reordered) != 2:
        raise TypeError(f"group_gemm: group {g} sfasfb_reordered entry must be a pair (sfa, sfb), "
                        f"got {type(reordered).__name__}")
    sfa_r, sfb_r = reordered
    check_kmajor(f"group {g} a", a, m, k // 2, 1, FP4)
    check_kmajor(f"group {g} b", b, n, k // 2, 1, FP4)
    check_kmajor(f"group {g} c", c, m, n, 1, ("float16",))
    check_scales(f"group {g} sfa_reordered", sfa_r, m, k, 1, scale_dtypes)
    check_scales(f"group {g} sfb_reordered", sfb_r, n, k, 1, scale_dtypes)
    return sfa_r, sfb_r


def check_groups_cuda(abc, scales) -> None:
    """Every group's tensors on one CUDA device, 16-byte aligned (after check_group of each)."""
    check_cuda(**{f"group {g} {x}": t for g in range(len(abc))
                  for x, t in zip(("a", "b", "c", "sfa_reordered", "sfb_reordered"), (*abc[g], *scales[g]))})


# ------------------------------------------------------------------------------------------------
# sm90 GEMM family (shared/cute/sm90_gemm.py): compile once per (kernel class, config), check, bind
# ------------------------------------------------------------------------------------------------

_SM90_COMPILED = CompileCache()


def compile_sm90(kernel_cls, config, options: str = ""):
    """The compiled kernel for (class, config), built once for sm_90a against null pointers (no GPU
    needed); shapes are runtime arguments."""

    def build():
        from cutlass import Float16, Int32, Uint8

        p8, pc = null_ptr(Uint8, 16), null_ptr(Float16, 16)
        with compile_arch("sm_90a"):
            return cute.compile(kernel_cls(config), p8, p8, p8, p8, p8, p8, pc, Int32(128), Int32(64), Int32(1),
                                launch_queue.placeholder(), options=f"--gpu-arch sm_90a {options}".strip())

    return _SM90_COMPILED.get((kernel_cls.__name__, config, options), build)


def prepare_sm90(kernel_cls, config, a, bs, sfa, sfbs, c) -> PreparedLaunch:
    """Check the operands and bind the compiled kernel to them: a [M, K/2, 1] FP4x2, bs: one or two
    [N, K/2, 1], plain scales sfa [M, K/16, 1], sfbs [N, K/16, 1], c [M, N, 1] fp16 (written in place).
    Calling the result launches."""
    from cutlass import Float16, Int32, Uint8

    from shared.cute.sm90_config import K_TILE

    sf = ("float8_e4m3fn", "uint8")
    m, half_k, l = a.shape
    n = bs[0].shape[0]
    k = 2 * half_k
    err = config.shape_error(m, n, k, l)
    if err is not None:
        raise ValueError(f"{kernel_cls.__name__}: shape (m={m}, n={n}, k={k}, l={l}) not supported: {err}")
    bnames = ["b"] if len(bs) == 1 else [f"b{i + 1}" for i in range(len(bs))]
    check_kmajor("a", a, m, half_k, 1, FP4)
    check_kmajor("sfa", sfa, m, k // 16, 1, sf)
    for name, b, sb in zip(bnames, bs, sfbs):
        check_kmajor(name, b, n, half_k, 1, FP4)
        check_kmajor(f"sf{name}", sb, n, k // 16, 1, sf)
    check_kmajor("c", c, m, n, 1, ("float16",))
    check_cuda(a=a, sfa=sfa, **dict(zip(bnames, bs)), **{f"sf{x}": t for x, t in zip(bnames, sfbs)}, c=c)
    fn = compile_sm90(kernel_cls, config)
    tensors = (a, bs[0], bs[-1], sfa, sfbs[0], sfbs[-1])
    args = [gmem_ptr(t, Uint8, 16) for t in tensors] + [gmem_ptr(c, Float16, 16), Int32(m), Int32(n),
                                                         Int32(k // K_TILE)]
    return PreparedLaunch(fn, args, c.device)


def launch_sm90(kernel_cls, config, a, bs, sfa, sfbs, c):
    """prepare_sm90 and launch once; returns c."""
    prepare_sm90(kernel_cls, config, a, bs, sfa, sfbs, c)()
    return c


# ------------------------------------------------------------------------------------------------
# sm100 GEMM family (shared/cute/sm100_gemm.py): compile once per config, check, bind
# ------------------------------------------------------------------------------------------------

def compile_sm100(cache, make_kernel, config, num_b: int, problem: tuple, arch: str, options: str):
    """Compile (once per config, arch and options) a kernel whose `__call__` takes the pointers
    (a, b_1..b_nb, sfa_permuted, sfb_1..sfb_nb_permuted, c) and the runtime problem (m, n, k, l);
    null pointers suffice, so no GPU is needed. Raises ValueError for shapes it cannot take."""
    from shared.cute.sm100_blockscaled import AB_DTYPE, C_DTYPE, SF_DTYPE, check_problem

    m, n, k, l = problem
    check_problem(m, n, k, l, config.tile_n, config.mainloop().cta_group)

    def build():
        ptrs = [null_ptr(AB_DTYPE, 16)] * (1 + num_b) + [null_ptr(SF_DTYPE, 16)] * (1 + num_b)
        with compile_arch(arch):
            return cute.compile(make_kernel(config), *ptrs, null_ptr(C_DTYPE, 16), (m, n, k, l),
                                launch_queue.placeholder(), options=f"--gpu-arch {arch} {options}".strip())

    return cache.get((config, arch, options), build)


def prepare_sm100(data, num_b: int, config, compile_for):
    """The leaderboard entry on sm100 for a tuple (a, b_1..b_nb, sfa, sfb_1.., sfa_permuted,
    sfb_1_permuted.., c): check every tensor the kernel reads (by name), compile or fetch the kernel
    of `config` (chosen by the caller for the device's SM count), and bind it to the tensors; calling
    the result launches (the same PreparedLaunch the sm90 kernels use)."""
    from shared.cute.sm100_blockscaled import AB_DTYPE, C_DTYPE, SF_ATOM_ROWS, SF_DTYPE, check_problem
    from shared.inputs import tuple_names

    t = dict(zip(tuple_names(num_b), data))
    b_names = tuple_names(num_b)[1 : 1 + num_b]
    a, c = t["a"], t["c"]
    m, k2, l = a.shape
    n, k = t[b_names[0]].shape[0], 2 * k2
    # Every config needs whole 128-row tiles and scale atoms: check before touching the tensors.
    check_problem(m, n, k, l, SF_ATOM_ROWS)
    check_kmajor("a", a, m, k2, l, FP4)
    for b in b_names:
        check_kmajor(b, t[b], n, k2, l, FP4)
    check_kmajor("c", c, m, n, l, ("float16",))
    scales = ["sfa_permuted", *(f"sf{b}_permuted" for b in b_names)]
    for name, rows in zip(scales, [m] + [n] * num_b):
        check_scales(name, t[name], rows, k, l)
    check_cuda(**{name: t[name] for name in ["a", *b_names, *scales, "c"]})
    compiled = compile_for(m, n, k, l, arch="sm_100a", config=config)
    args = [*(gmem_ptr(t[x], AB_DTYPE) for x in ["a", *b_names]), *(gmem_ptr(t[x], SF_DTYPE) for x in scales),
            gmem_ptr(c, C_DTYPE), (m, n, k, l)]
    return PreparedLaunch(compiled, args, c.device)


def launch_sm100(data, num_b: int, config, compile_for):
    """prepare_sm100 and launch once; returns c."""
    prepare_sm100(data, num_b, config, compile_for)()
    return data[-1]
