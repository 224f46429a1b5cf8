"""Host glue of the CuTe DSL kernels that runs without a GPU: the call cache (shared/call_cache.py), the
launch binding (shared/cute/launch_binding.py) and the device facts (shared/device_facts.py)."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest
import torch

from shared import dispatch as dispatch_module
from shared.call_cache import PreparedCalls
from shared.cute import launch_binding, launch_queue
from shared.cute.host_check import tensor_key
from shared.cute.launch_binding import PreparedLaunch
from shared.device_facts import device_arch
from shared.dispatch import Dispatch

GPU = torch.device("cuda", 0)
QUEUE = {"raw": 0}  # torch's current queue as the fake launch_queue.current reports it


@pytest.fixture(autouse=True)
def fake_queue(monkeypatch):
    """No GPU here: the current queue is QUEUE["raw"], and the queue argument is 0x50 + its handle."""
    QUEUE["raw"] = 0
    monkeypatch.setattr(launch_queue, "current", lambda device_index: QUEUE["raw"])
    monkeypatch.setattr(launch_queue, "argument", lambda raw: 0x50 + raw)
    monkeypatch.setattr(launch_queue, "capturing", lambda raw: raw in QUEUE.get("capturing", ()))
    QUEUE["capturing"] = ()


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
    launch = PreparedLaunch(fn, [1, 2], GPU)
    assert fn.log == []  # preparing launches nothing
    for _ in range(3):
        launch()
    status_addr = fn.log[2][1][-1]
    assert fn.log == [("checked", (1, 2, 0x50)), ("marshal", (1, 2, 0x50)),
                      ("entry", [0x101, 0x102, 0x150, status_addr]), ("entry", [0x101, 0x102, 0x150, status_addr])]


def test_each_launch_goes_to_the_current_queue_read_per_call():
    fn = FakeCompiled()
    launch = PreparedLaunch(fn, [1], GPU)
    for raw in (0, 7, 7, 0, 9):
        QUEUE["raw"] = raw
        launch()
    entries = [e[1][:2] for e in fn.log if e[0] == "entry"]
    checked = [e[1] for e in fn.log if e[0] == "checked"]
    # a queue seen before reuses its marshalled arguments; a new one is bound by one checked call
    assert checked == [(1, 0x50), (1, 0x57), (1, 0x59)]
    assert entries == [[0x101, 0x157], [0x101, 0x150]]


def test_one_executor_per_compiled_function():
    fn = FakeCompiled()
    for args in ([1], [2]):
        launch = PreparedLaunch(fn, args, GPU)
        launch()
        launch()
    assert fn.executors == 1


def test_a_cuda_error_from_the_entry_point_is_raised():
    fn = FakeCompiled()
    launch = PreparedLaunch(fn, [1], GPU)
    launch()
    launch._bound[0][2].value = 700  # what the host code writes back on a failed launch
    with pytest.raises(RuntimeError, match="CUDA error 700"):
        launch()


def test_a_function_without_the_split_entry_points_is_called_plainly():
    calls = []

    def plain(*args):
        calls.append(args)

    launch = PreparedLaunch(plain, [1], GPU)
    for _ in range(3):
        launch()
    assert calls == [(1, 0x50)] * 3


def test_a_launch_captured_into_a_graph_keeps_what_it_points_into_after_its_owner_lets_go(monkeypatch):
    """A graph replays a launch with the addresses it had at capture: the launch's device tables (its
    `hold`) must outlive the PreparedLaunch that the caller's cache drops, and only captured ones."""
    monkeypatch.setattr(launch_binding, "_CAPTURED_HOLDS", {})
    captured_table, eager_table = torch.zeros(4), torch.zeros(4)
    QUEUE["capturing"] = (7,)
    for raw, table in ((7, captured_table), (0, eager_table)):
        QUEUE["raw"] = raw
        launch = PreparedLaunch(FakeCompiled(), [1], GPU, hold=table)
        for _ in range(3):  # the first launch on a queue (checked) and the bound ones alike
            launch()
        del launch
    alive = list(launch_binding._CAPTURED_HOLDS.values())
    assert len(alive) == 1 and alive[0] is captured_table


def test_tensor_key_tells_apart_address_shape_strides_and_dtype():
    t = torch.zeros(4, 8, dtype=torch.uint8)
    key = tensor_key([t])
    assert key == tensor_key([t]) and key == tensor_key([t.view(4, 8)])
    for other in (t[1:], t.view(8, 4), t.t(), t.view(torch.int8), t.clone()):
        assert tensor_key([other]) != key


@pytest.fixture(params=["python", "compiled"])
def watch_kind(request, monkeypatch):
    """Each test that takes it runs with the Python check and with the compiled one (skipped, with the
    reason, where it cannot be built)."""
    from shared.cute import host_check

    if request.param == "python":
        monkeypatch.setattr(host_check, "compiled", lambda: None)
    elif host_check.compiled() is None:
        pytest.skip(f"the compiled host check is not built here: {host_check.why_python()}")
    return request.param


def dispatcher(reads, prepare, portable=lambda data: data[-1]):
    """A Dispatch whose kernel is `prepare(data)` (a launch, or None for the portable path)."""
    return Dispatch(check=lambda data: None, kernel=lambda arch, data, shape, sms: prepare(data),
                    portable=portable, reads=reads)


@pytest.fixture
def on_sm90(monkeypatch):
    """The CPU tensors below taken for an sm90 device's."""
    monkeypatch.setattr(dispatch_module, "device_arch", lambda device: "sm90")
    monkeypatch.setattr(dispatch_module, "sm_count", lambda device: 132)


def test_dispatch_keeps_kernel_launches_only_and_checks_only_on_a_miss(on_sm90):
    prepared, launched = [], []

    def prepare(data):
        prepared.append(data[0].data_ptr())
        return PreparedLaunch(lambda *a: launched.append(a[:-1]), [len(prepared)], GPU)

    a, c = torch.zeros(16, dtype=torch.uint8), torch.zeros(4, dtype=torch.float16)
    a2 = torch.zeros(16, dtype=torch.uint8)
    call = dispatcher({"sm90": (0, 1)}, prepare)
    for data in ((a, c), (a, c), (a2, c), (a, c)):
        assert call(data) is c
    assert prepared == [a.data_ptr(), a2.data_ptr()] and len(call.prepared) == 2
    assert launched == [(1,), (1,), (2,), (1,)]

    portable = []  # no kernel takes the call: the portable path runs every time, nothing is kept
    other = dispatcher({"sm90": (0, 1)}, lambda data: None, lambda data: portable.append(1))
    for _ in range(2):
        other((a, c))
    assert portable == [1, 1] and len(other.prepared) == 0 and not other.prepared.by_identity
    assert not other.prepared._seen


def _counting(monkeypatch, reads):
    """A Dispatch on sm90, counting prepare() calls and the keys built on the way."""
    monkeypatch.setattr(dispatch_module, "device_arch", lambda device: "sm90")
    monkeypatch.setattr(dispatch_module, "sm_count", lambda device: 132)
    counts = {"prepared": 0, "identity_key": 0, "tensor_key": 0}
    for name in ("identity_key", "tensor_key"):
        real = getattr(dispatch_module, name)
        monkeypatch.setattr(dispatch_module, name,
                            lambda ts, real=real, name=name: counts.__setitem__(name, counts[name] + 1) or real(ts))

    def prepare(data):
        counts["prepared"] += 1
        return PreparedLaunch(lambda *a: None, [], GPU)

    return counts, dispatcher(reads, prepare)


def test_identity_aliases_follow_in_place_changes_and_die_with_their_tensors(monkeypatch, watch_kind):
    counts, call = _counting(monkeypatch, {"sm90": (0, 1)})
    cache = call.prepared
    a, c = torch.zeros(16, dtype=torch.uint8), torch.zeros(4, dtype=torch.float16)
    call((a, c))
    call((a, c))  # a new tuple of the same tensors
    assert (counts["prepared"], counts["tensor_key"]) == (1, 1)  # found by identity, no tensor_key built
    c.fill_(1.0)  # a value written in place: the compiled identity key is the same; the Python one ...
    call((a, c))
    # ... reads c's version, which the write bumped, so the tensor_key is built: it matches, no new checks
    assert (counts["prepared"], counts["tensor_key"]) == (1, 2 if watch_kind == "python" else 1)
    a.resize_(8)  # same object, other shape: a new tensor_key, so checked again
    call((a, c))
    assert counts["prepared"] == 2
    aliases = len(cache.by_identity)
    del a  # the tuples above are held by the cache alone: let go at the next remember ...
    call((torch.ones(16, dtype=torch.uint8), c))
    assert aliases == (3 if watch_kind == "python" else 2)  # the fill_ made a third key in Python
    assert len(cache.by_identity) == 1  # ... and then the aliases of the dead tensor die with it


def test_the_same_tuple_again_is_found_without_building_a_key(monkeypatch):
    counts, call = _counting(monkeypatch, {"sm90": (0, 1)})
    data = (torch.zeros(16, dtype=torch.uint8), torch.zeros(4, 4, dtype=torch.float16))
    for _ in range(3):
        assert call(data) is data[1]
    assert counts == {"prepared": 1, "identity_key": 1, "tensor_key": 1}


@pytest.mark.parametrize("change", ["fill_", "t_", "resize_", "data swap", "storage resize_", "set_"])
def test_the_same_tuple_with_a_changed_tensor_is_looked_up_again(monkeypatch, change, watch_kind):
    counts, call = _counting(monkeypatch, {"sm90": (0, 1)})
    a, c = torch.zeros(16, dtype=torch.uint8), torch.zeros(4, 4, dtype=torch.float16)
    data = (a, c)
    call(data)
    {"fill_": lambda: c.fill_(1.0), "t_": c.t_, "resize_": lambda: c.resize_(2, 2),
     "data swap": lambda: setattr(c, "data", torch.zeros(4, 4, dtype=torch.float16)),
     "storage resize_": lambda: c.untyped_storage().resize_(4096),
     "set_": lambda: c.set_(torch.zeros(4, 4, dtype=torch.float16))}[change]()
    call(data)
    # not taken as unchanged, except a value written in place where the compiled check runs: it
    # compares address and layout, all the launch depends on (the Python one reads the version)
    assert counts["identity_key"] == (1 if change == "fill_" and watch_kind == "compiled" else 2)
    # a new layout or address is a new tensor_key: checked and prepared again (a value change is not)
    assert counts["prepared"] == (1 if change == "fill_" else 2)
    keys = counts["identity_key"]
    call(data)
    assert counts["identity_key"] == keys  # remembered as it is now: found as the same tuple


def test_inference_tensors_are_launched_and_watched(monkeypatch, watch_kind):
    # torch.inference_mode() tensors have no version counter (reading it raises): serving code makes them
    counts, call = _counting(monkeypatch, {"sm90": (0, 1)})
    with torch.inference_mode():
        a, c = torch.zeros(16, dtype=torch.uint8), torch.zeros(4, 4, dtype=torch.float16)
        data = (a, c)
        for _ in range(3):
            assert call(data) is c
        assert counts == {"prepared": 1, "identity_key": 1, "tensor_key": 1}
        c.t_()  # a layout change in place, which no version counter records
        call(data)
    assert counts["prepared"] == 2


def test_a_remembered_argument_sees_changes_of_its_lists(watch_kind):
    from shared.call_cache import Remembered, _lists_in

    a, b = torch.zeros(2), torch.zeros(3)
    pair = (a, b)
    data = ([pair], [(1, 2)])
    lists = []
    assert _lists_in(data, lists) and lists == [data[0], data[1]]
    entry = Remembered(data, lists, [a, b], lambda: None)
    assert entry.unchanged()
    data[0][0] = (a, b)  # an equal tuple, another object: not the same
    assert not entry.unchanged()
    data[0][0] = pair
    assert entry.unchanged()
    data[1].append((3, 4))
    assert not entry.unchanged()
    assert not _lists_in(({"a": a},), [])  # a dict could change unseen: not remembered


def test_arguments_only_the_cache_holds_are_let_go():
    cache = PreparedCalls()
    kept = (torch.zeros(2),)
    cache.remember(kept, kept, lambda: None)
    cache.remember((torch.zeros(2),), (), lambda: None)  # nobody else holds this one
    cache.remember((torch.zeros(3),), (), lambda: None)
    assert len(cache._seen) == 2 and cache.seen(kept) is not None


def test_dispatch_leaves_bad_input_to_the_check():
    def check(data):
        raise TypeError("gemm: expected a 7-tuple")

    call = Dispatch(check=check, kernel=lambda *a: None, portable=lambda data: None, reads={"sm90": (0,)})
    with pytest.raises(TypeError, match="7-tuple"):
        call("not a tuple")


def test_dispatch_takes_reads_or_tensors():
    with pytest.raises(TypeError, match="reads .* or tensors"):
        Dispatch(check=None, kernel=None, portable=None)


def test_prepared_calls_are_bounded():
    cache = PreparedCalls(limit=2)
    for k in range(3):
        cache.put(k, lambda: None)
    assert len(cache) == 1 and cache.get(2) is not None


def test_device_arch_of_the_cpu():
    assert device_arch(torch.device("cpu")) == "cpu" and device_arch("cpu") == "cpu"
