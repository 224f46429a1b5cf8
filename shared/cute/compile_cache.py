"""Compiling once, without a GPU: a kernel is compiled per static key against null pointers
(shared/cute/pointers.py) for the architecture compile_arch names, and kept in a CompileCache; after
each compile the heap is settled (settle_heap) so that the compiler's leftovers are not walked again
by a garbage collection inside a timed call."""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable


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
