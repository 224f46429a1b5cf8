"""Host glue of the CuTe DSL kernels (shared/cute/runtime.py) that runs without a GPU."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest
import torch

from shared.cute.runtime import PreparedCalls, PreparedLaunch, call_prepared, device_arch, tensor_key


class FakeExecutor:
    """The executor halves bind_compiled uses: a packer (which, like 4.3.5's, appends to its list)
    and a C entry point, recorded."""

    def __init__(self, log):
        self.log = log
        self.cuda_result = ctypes.c_int(0)
        self.jit_module = SimpleNamespace(capi_func=lambda packed: log.append(("entry", list(packed))))

    def _get_invoke_packed_args(self, exe_args):
        exe_args.append(ctypes.addressof(self.cuda_result))
        return (ctypes.c_void_p * len(exe_args))(*exe_args)


class FakeCompiled:
    """A compiled CuTe function as bind_compiled sees it: the checked call, the marshalling, `to`."""

    def __init__(self):
        self.log = []
        self.executors = 0

    def __call__(self, *args):
        self.log.append(("checked", args))

    def generate_execution_args(self, *args):
        self.log.append(("marshal", args))
        return [0x100 + a for a in args], ["adapted"]

    def to(self, device):
        self.executors += 1
        return FakeExecutor(self.log)


def test_first_launch_is_checked_then_one_c_call_with_arguments_marshalled_once():
    fn = FakeCompiled()
    launch = PreparedLaunch(fn, [1, 2])
    assert fn.log == []  # preparing launches nothing
    for _ in range(3):
        launch()
    status_addr = fn.log[2][1][-1]
    assert fn.log == [("checked", (1, 2)), ("marshal", (1, 2)),
                      ("entry", [0x101, 0x102, status_addr]), ("entry", [0x101, 0x102, status_addr])]


def test_one_executor_per_compiled_function():
    fn = FakeCompiled()
    for args in ([1], [2]):
        launch = PreparedLaunch(fn, args)
        launch()
        launch()
    assert fn.executors == 1


def test_a_cuda_error_from_the_entry_point_is_raised():
    fn = FakeCompiled()
    launch = PreparedLaunch(fn, [1])
    launch()
    launch._status.value = 700  # what the host code writes back on a failed launch
    with pytest.raises(RuntimeError, match="CUDA error 700"):
        launch()


def test_a_function_without_the_split_entry_points_is_called_plainly():
    calls = []

    def plain(*args):
        calls.append(args)

    launch = PreparedLaunch(plain, [1])
    for _ in range(3):
        launch()
    assert calls == [(1,)] * 3


def test_tensor_key_tells_apart_address_shape_strides_and_dtype():
    t = torch.zeros(4, 8, dtype=torch.uint8)
    key = tensor_key([t])
    assert key == tensor_key([t]) and key == tensor_key([t.view(4, 8)])
    for other in (t[1:], t.view(8, 4), t.t(), t.view(torch.int8), t.clone()):
        assert tensor_key([other]) != key


def test_call_prepared_keeps_kernel_launches_only_and_checks_only_on_a_miss(monkeypatch):
    from shared.cute import runtime

    monkeypatch.setattr(runtime, "device_arch", lambda device: "sm90")
    cache, prepared, launched = PreparedCalls(), [], []

    def prepare(data):
        prepared.append(data[0].data_ptr())
        return PreparedLaunch(lambda *a: launched.append(a), [len(prepared)])

    a, c = torch.zeros(16, dtype=torch.uint8), torch.zeros(4, dtype=torch.float16)
    a2 = torch.zeros(16, dtype=torch.uint8)
    reads = {"sm90": (0, 1)}
    for data in ((a, c), (a, c), (a2, c), (a, c)):
        assert call_prepared(cache, data, reads, prepare) is c
    assert prepared == [a.data_ptr(), a2.data_ptr()] and len(cache) == 2
    assert launched == [(1,), (1,), (2,), (1,)]

    portable, other = [], PreparedCalls()
    reads_none = {}  # no kernel for this device: the portable callable runs every time, never kept
    for _ in range(2):
        call_prepared(other, (a, c), reads_none, lambda data: lambda: portable.append(1))
    assert portable == [1, 1] and len(other) == 0 and not other.by_identity


def test_identity_aliases_follow_in_place_changes_and_die_with_their_tensors(monkeypatch):
    from shared.cute import runtime

    monkeypatch.setattr(runtime, "device_arch", lambda device: "sm90")
    cache, prepared, keys = PreparedCalls(), [], []
    real_key = runtime.tensor_key
    monkeypatch.setattr(runtime, "tensor_key", lambda ts: keys.append(1) or real_key(ts))

    def prepare(data):
        prepared.append(1)
        return PreparedLaunch(lambda *a: None, [])

    a, c = torch.zeros(16, dtype=torch.uint8), torch.zeros(4, dtype=torch.float16)
    reads = {"sm90": (0, 1)}
    call_prepared(cache, (a, c), reads, prepare)
    call_prepared(cache, (a, c), reads, prepare)
    assert (len(prepared), len(keys)) == (1, 1)  # the repeat: found by identity, no tensor_key built
    c.fill_(1.0)  # an in-place op bumps c's version: the identity alias no longer matches ...
    call_prepared(cache, (a, c), reads, prepare)
    assert (len(prepared), len(keys)) == (1, 2)  # ... but the tensor_key does: no new checks
    a.resize_(8)  # same object, other shape: a new tensor_key, so checked again
    call_prepared(cache, (a, c), reads, prepare)
    assert len(prepared) == 2
    aliases = len(cache.by_identity)
    del a
    assert len(cache.by_identity) < aliases  # aliases of a dead tensor are dropped with it


def test_call_prepared_leaves_bad_input_to_prepare():
    def prepare(data):
        raise TypeError("gemm: expected a 7-tuple")

    with pytest.raises(TypeError, match="7-tuple"):
        call_prepared(PreparedCalls(), "not a tuple", {"sm90": (0,)}, prepare)


def test_prepared_calls_are_bounded():
    cache = PreparedCalls(limit=2)
    for k in range(3):
        cache.put(k, lambda: None)
    assert len(cache) == 1 and cache.get(2) is not None


def test_device_arch_of_the_cpu():
    assert device_arch(torch.device("cpu")) == "cpu" and device_arch("cpu") == "cpu"
