"""The repeat-call check (shared/cute/host_check.py), compiled and in Python: every change a bound
launch depends on is seen, in the lists of the argument and in its tensors, also for inference
tensors; a packaged file checks in Python."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from shared.cute import host_check


@pytest.fixture(params=["python", "compiled"])
def Watch(request):
    if request.param == "python":
        return host_check.PyWatch
    cls = host_check.watch_class()
    if cls is host_check.PyWatch:
        pytest.skip(f"the compiled host check is not built here: {host_check.why_python()}")
    return cls


def test_the_compiled_check_builds_where_a_compiler_and_ninja_are(monkeypatch):
    monkeypatch.delenv(host_check.ENV, raising=False)
    if not (shutil.which("ninja") and (shutil.which("c++") or shutil.which("g++"))):
        pytest.skip("no C++ compiler or no ninja here: the Python check runs (host_check.why_python)")
    host_check.compiled.cache_clear()
    assert host_check.watch_class() is not host_check.PyWatch, host_check.why_python()
    assert host_check.kind() == "compiled"


def test_the_environment_variable_keeps_to_python(monkeypatch):
    monkeypatch.setenv(host_check.ENV, "python")
    host_check.compiled.cache_clear()
    try:
        assert host_check.watch_class() is host_check.PyWatch
        assert host_check.kind() == f"python ({host_check.ENV}=python)"
    finally:
        monkeypatch.delenv(host_check.ENV)
        host_check._WHY_PYTHON.clear()
        host_check.compiled.cache_clear()


def test_a_mistyped_value_of_the_environment_variable_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(host_check.ENV, "bogus")
    host_check.compiled.cache_clear()
    try:
        with pytest.raises(ValueError) as e:
            host_check.watch_class()
        message = str(e.value)
        assert "\n" not in message
        assert message.startswith("NVFP4_HOST_CHECK='bogus': expected 'python'") and "unset" in message
    finally:
        monkeypatch.delenv(host_check.ENV)
        host_check.compiled.cache_clear()


def test_a_mistyped_value_stops_the_first_import_of_the_dispatcher():
    env = {**os.environ, host_check.ENV: "Python"}
    run = subprocess.run([sys.executable, "-c", "import shared.dispatch"], cwd=Path(__file__).parent.parent, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        "ValueError: NVFP4_HOST_CHECK='Python': expected 'python' (the Python check) or unset (the compiled check "
        "where it builds)")


def test_lists_are_checked_item_by_item_by_identity(Watch):
    a, b, c = torch.zeros(2), torch.zeros(3), torch.zeros(4)
    pair = (a, b)
    first, second = [pair, c], [(1, 2)]
    watch = Watch((first, second), (a, b, c))
    assert watch.unchanged()
    first[0] = (a, b)  # an equal tuple, another object
    assert not watch.unchanged()
    first[0] = pair
    assert watch.unchanged()
    second.append((3, 4))
    assert not watch.unchanged()
    second.pop()
    assert watch.unchanged()
    # the same items in the same order, split differently between the lists
    x, y, z = object(), object(), object()
    one, two = [x, y], [z]
    watch = Watch((one, two), ())
    one.pop()
    two.insert(0, y)
    assert not watch.unchanged()


CHANGES = {
    "t_": lambda t: t.t_(),
    "resize_ smaller": lambda t: t.resize_(2, 2),
    "unsqueeze_": lambda t: t.unsqueeze_(0),
    "as_strided_": lambda t: t.as_strided_((4, 4), (1, 4)),
    "set_ (other memory)": lambda t: t.set_(torch.zeros(4, 4, dtype=t.dtype)),
    "set_ (same memory, offset)": lambda t: t.set_(t.untyped_storage(), 2, (2, 4), (4, 1)),
    "data swap": lambda t: setattr(t, "data", torch.zeros(4, 4, dtype=t.dtype)),
    "storage resize_": lambda t: t.untyped_storage().resize_(4096),
}
# `.data =` another view of the same memory at the same address: no version bump, no new address.
# The compiled check compares the layout and sees it; the Python one cannot (the module docstring).
RELABELS = {
    "data swap, same address, transposed": lambda t: setattr(t, "data", t.t()),
    "data swap, same address, other dtype": lambda t: setattr(t, "data", t.view(torch.int16)),
}


@pytest.mark.parametrize("change", list(CHANGES) + list(RELABELS))
def test_every_change_a_launch_depends_on_is_seen(Watch, change):
    keep, t = torch.zeros(8), torch.zeros(4, 4, dtype=torch.float16)
    watch = Watch((), (keep, t))
    assert watch.unchanged()
    {**CHANGES, **RELABELS}[change](t)
    assert watch.unchanged() is (change in RELABELS and Watch is host_check.PyWatch)


@pytest.mark.parametrize("change", list(CHANGES) + list(RELABELS))
def test_identity_keys_follow_the_same_changes(Watch, change):
    key = host_check.py_identity_key if Watch is host_check.PyWatch else host_check.compiled().identity_key
    keep, t = torch.zeros(8), torch.zeros(4, 4, dtype=torch.float16)
    before = key((keep, t))
    assert key((keep, t)) == before and key((t, keep)) != before
    assert key((keep, torch.zeros(4, 4, dtype=torch.float16))) != before  # another tensor object
    {**CHANGES, **RELABELS}[change](t)
    assert (key((keep, t)) == before) is (change in RELABELS and Watch is host_check.PyWatch)


@pytest.mark.parametrize("change", ["t_", "unsqueeze_", "as_strided_", "set_ (other memory)"])
def test_inference_tensors_are_watched_too(Watch, change):
    with torch.inference_mode():  # no version counter: the Python check reads address and layout
        t = torch.zeros(4, 4, dtype=torch.float16)
        watch = Watch(([t],), (t,))
        assert watch.unchanged()
        t.fill_(1.0)
        assert watch.unchanged()  # a value written in place: nothing the launch depends on
        CHANGES[change](t)
        assert not watch.unchanged()


def test_a_value_written_in_place(Watch):
    t = torch.zeros(4, 4)
    watch = Watch((), (t,))
    t.fill_(1.0)
    # the compiled check compares what the launch depends on; the Python one reads the version counter,
    # which a value write bumps too (the caller then re-validates, and finds the same launch)
    assert watch.unchanged() is (Watch is not host_check.PyWatch)


def test_the_compiled_check_refuses_what_is_not_a_list_or_a_tensor(Watch):
    if Watch is host_check.PyWatch:
        pytest.skip("the Python check reads whatever it is given")
    with pytest.raises(TypeError, match="lists"):
        Watch(((1, 2),), ())
    with pytest.raises(TypeError, match="tensors"):
        Watch((), (1,))


def test_tensor_state_of_a_set_with_an_inference_tensor_is_its_key():
    t = torch.zeros(4)
    with torch.inference_mode():
        u = torch.zeros(4)
    assert host_check.tensor_state([t]) == (0, t.data_ptr())
    assert host_check.tensor_state([t, u]) == host_check.tensor_key([t, u])


def test_a_lock_left_by_a_killed_build_is_removed_and_a_live_one_waited_for(tmp_path):
    import os
    import threading
    import time

    from shared.cute.host_check_build import clear_stale_lock

    lock = tmp_path / "lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 1000, time.time() - 1000))
    clear_stale_lock(tmp_path, stale_s=300)  # torch would wait on this one forever
    assert not lock.exists()
    lock.write_text("")  # a build in progress: waited for until it removes its lock
    timer = threading.Timer(0.3, lock.unlink)
    timer.start()
    start = time.monotonic()
    clear_stale_lock(tmp_path, stale_s=300, poll_s=0.05)
    assert 0.25 < time.monotonic() - start < 5 and not lock.exists()
