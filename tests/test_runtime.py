"""Host glue of the CuTe DSL kernels (shared/cute/runtime.py) that runs without a GPU."""

from __future__ import annotations

import torch

from shared.cute.runtime import LaunchCache, device_arch


class FakeCompiled:
    """The three entry points of a compiled CuTe function that LaunchCache uses, recorded."""

    def __init__(self):
        self.log = []

    def __call__(self, *args):
        self.log.append(("call", args))

    def generate_execution_args(self, *args):
        return [f"c_ptr({a})" for a in args], []

    def run_compiled_program(self, exe_args):
        self.log.append(("run", tuple(exe_args)))


def test_first_call_is_the_checked_call_then_repeats_reuse_the_marshalled_arguments():
    cache, fn = LaunchCache(), FakeCompiled()
    built = []

    def make_args(v):
        built.append(v)
        return [v, 7]

    cache.launch(fn, (0x1000, 7), lambda: make_args(0x1000))
    cache.launch(fn, (0x1000, 7), lambda: make_args(0x1000))
    cache.launch(fn, (0x2000, 7), lambda: make_args(0x2000))
    assert built == [0x1000, 0x2000]  # arguments built once per distinct values
    assert fn.log == [("call", (0x1000, 7)), ("run", ("c_ptr(4096)", "c_ptr(7)")), ("call", (0x2000, 7))]
    assert len(cache) == 2


def test_the_cache_is_bounded_and_keyed_by_function():
    cache, f, g = LaunchCache(limit=2), FakeCompiled(), FakeCompiled()
    for v in range(3):
        cache.launch(f, (v,), lambda v=v: [v])
    assert len(cache) == 1  # cleared when full, then the third entry added
    cache.launch(g, (2,), lambda: [2])
    assert g.log == [("call", (2,))]  # same values, other function: a miss


def test_a_function_without_the_split_entry_points_is_called_plainly():
    cache, calls = LaunchCache(), []

    def plain(*args):
        calls.append(args)

    for _ in range(2):
        cache.launch(plain, (1,), lambda: [1])
    assert calls == [(1,), (1,)] and len(cache) == 0


def test_device_arch_of_the_cpu():
    assert device_arch(torch.device("cpu")) == "cpu" and device_arch("cpu") == "cpu"
