"""A compiled CuTe function bound to its tensors once (PreparedLaunch): the arguments are marshalled
on the first launch on a queue, and every later launch is one C call into the DSL's host code on
torch's current queue (shared/cute/launch_queue.py). The operands are checked before binding, by the
caller (shared/cute/operand_checks.py): a bound launch trusts its arguments."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import torch

from shared.cute import launch_queue
from shared.device_facts import device_index


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


def with_queue(args: list, raw) -> list:
    """A compiled call's arguments with the queue argument for `raw` (launch_queue.current) last. A
    leaderboard bundle's queue is a compile-time constant, not an argument: nothing is added (a None
    in its place would shift the arguments the DSL's host code reads)."""
    queue = launch_queue.argument(raw)
    return [*args] if queue is None else [*args, queue]


def call_on_current_queue(fn: Callable, args: list, device: torch.device) -> None:
    """A plain (checked) call of a compiled function on torch's current queue of `device`."""
    fn(*with_queue(args, launch_queue.current(device_index(device))))


# What launches captured into a CUDA graph point into (PreparedLaunch's `hold`), by id, for the life of
# the process: a graph replays its launches with the addresses they had at capture, and torch does not
# say when a graph dies, so a table the caller's cache lets go of would be freed under it (and its
# memory given to other tensors: wrong results or an illegal instruction at the next replay). Holds are
# small (kilobytes of tables) and pinned once per launch, however often it is captured.
_CAPTURED_HOLDS: dict[int, Any] = {}


class PreparedLaunch:
    """A compiled CuTe function bound to fixed arguments; calling it launches with one C call (no
    argument checks, no marshalling) on torch's current queue of `device` (launch_queue.py), which
    is passed as the compiled function's last argument. Built from validated tensors only: it
    trusts its arguments."""

    __slots__ = ("_fn", "_args", "_device", "_bound", "_hold")

    def __init__(self, fn: Callable, args: list, device: torch.device, hold: Any = None) -> None:
        # `hold`: what the arguments point into and nothing else keeps alive (the grouped GEMM's
        # device-side table of group pointers and its TMA descriptor workspace, a scratch output);
        # pinned for good once a launch is captured into a CUDA graph (_CAPTURED_HOLDS).
        self._fn, self._args, self._hold = fn, args, hold
        self._device = device_index(device)
        self._bound: dict = {}  # raw queue handle -> (entry, packed, status, keep)

    def __call__(self) -> None:
        raw = launch_queue.current(self._device)
        if self._hold is not None and launch_queue.capturing(raw):
            _CAPTURED_HOLDS[id(self._hold)] = self._hold
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
