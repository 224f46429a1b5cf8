"""The rebinding guard (harness/integrity.py): nothing changes while honest work runs; a rebound clock, a
harness function given other code, a Tensor operator overridden are each named."""

import time

import torch

import harness.timing
import harness.worker
from harness.integrity import REBINDING, Snapshot


def test_honest_work_changes_nothing_the_snapshot_holds():
    snapshot = Snapshot("gemm")
    ref = __import__("problems.gemm.reference", fromlist=["ref_kernel"])
    data = ref.generate_input(128, 128, 256, 1, 3, device="cpu")
    ref.ref_kernel(data)
    harness.timing.stats_of([1.0, 2.0])
    assert snapshot.changed() == [] and snapshot.error() is None


def test_each_rebinding_is_named(monkeypatch):
    snapshot = Snapshot("gemm")
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
    monkeypatch.setattr(harness.timing.should_stop, "__code__", (lambda d, w, m: True).__code__)
    monkeypatch.setattr(torch.Tensor, "__sub__", lambda a, b: a, raising=False)
    monkeypatch.setattr(harness.worker.Runner, "compare", lambda self, out, want: None)
    assert sorted(snapshot.changed()) == ["harness.timing.should_stop", "harness.worker.Runner.compare",
                                          "time.perf_counter_ns", "torch.Tensor.__sub__"]
    assert snapshot.error().startswith(f"{REBINDING}: ")
