"""Which path a call takes (shared/dispatch.py): a GPU whose kernel cannot be imported warns once, naming
the import error, and the evaluator reports the path per case."""

import warnings

import pytest
import torch

from shared import dispatch as D


def test_a_kernel_that_cannot_be_imported_warns_once_and_counts_portable_calls(monkeypatch):
    def kernel(arch, data, shape, sms):
        raise ImportError("No module named 'cutlass'")

    monkeypatch.setattr(D, "device_arch", lambda device: "sm90")  # a Hopper GPU, as far as the dispatcher knows
    monkeypatch.setattr(D, "sm_count", lambda device: 132)
    monkeypatch.setattr(D, "kernel_unavailable", None)
    d = D.Dispatch(check=lambda data: data[0].shape, kernel=kernel, portable=lambda data: data[0] * 2,
                   reads={"sm90": (0,)})
    before = D.portable_calls
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert torch.equal(d((torch.ones(2),)), torch.full((2,), 2.0))
    assert D.portable_calls - before == 3
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert messages == ["no sm90 kernel (ImportError: No module named 'cutlass'): every call takes the portable "
                        "torch path, 150-1000x slower"]
    assert D.kernel_unavailable == "ImportError: No module named 'cutlass'"


def test_a_device_without_a_kernel_takes_the_portable_path_without_keying_the_call(monkeypatch):
    """On the CPU the call goes straight to torch: no identity key, so no build of the compiled host check
    (~30 s on a machine's first call) and nothing kept in the call cache."""
    keyed = []
    monkeypatch.setattr(D, "identity_key", lambda tensors: keyed.append(tensors) or b"")
    d = D.Dispatch(check=lambda data: data[0].shape, kernel=lambda *a: None,
                   portable=lambda data: data[0] * 2, tensors=lambda data: list(data))
    assert torch.equal(d((torch.ones(2),)), torch.full((2,), 2.0))
    assert keyed == [] and not d.prepared.by_identity
    monkeypatch.setattr(D, "device_arch", lambda device: "sm90")  # where a kernel exists, the call is keyed
    monkeypatch.setattr(D, "sm_count", lambda device: 132)
    d((torch.ones(2),))
    assert len(keyed) == 1


@pytest.mark.parametrize("mode", ["test", "benchmark"])
def test_the_evaluator_records_the_path_per_case(tmp_path, mode):
    import json

    from tests.test_eval import SMALL, run_eval

    out = tmp_path / "r.json"
    r = run_eval("gemv", "--mode", mode, "--device", "cpu", "--impl", "submission", "reference", "--case",
                 SMALL["gemv"], "--json", str(out))
    assert r.returncode == 0, r.stderr
    impls = json.loads(out.read_text())["impls"]
    assert impls["submission"]["cases"][0]["path"] == "portable"  # a CPU has no kernel, and no import failed
    assert impls["reference"]["cases"][0]["path"] is None  # no dispatcher
    assert "path taken (shared/dispatch.py): submission portable on 1/1 cases" in r.stdout
