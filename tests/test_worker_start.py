"""The evaluator's workers on the CPU (harness/worker_start.py): forked from a server that imported torch
once, yet each a fresh process that sees the caller's environment of the moment, not the server's."""

from __future__ import annotations

import os

from harness.worker_start import in_worker

CALLS = []  # module state of this file inside a worker: a fresh worker starts with it empty


def environment_and_state(name: str) -> tuple[str | None, int, int]:
    CALLS.append(1)
    return os.environ.get(name), len(CALLS), os.getpid()


def test_a_cpu_worker_takes_the_callers_environment_of_the_moment(monkeypatch):
    name = "NVFP4_WORKER_START_PROBE"
    monkeypatch.delenv(name, raising=False)
    first = in_worker("cpu", environment_and_state, name)  # starts the server without the variable
    monkeypatch.setenv(name, "set after the server started")
    second = in_worker("cpu", environment_and_state, name)
    monkeypatch.delenv(name)
    third = in_worker("cpu", environment_and_state, name)
    assert [first[0], second[0], third[0]] == [None, "set after the server started", None]
    assert [first[1], second[1], third[1]] == [1, 1, 1]  # nothing an earlier run imported or set carries over
    assert len({first[2], second[2], third[2], os.getpid()}) == 4
