"""scripts/launch_floor.py: its arguments, the JSON it writes (the CPU loop end to end), the near-empty
CuTe kernel compiled without a GPU; the GPU measurement itself runs only on a CUDA device."""

from __future__ import annotations

import json

import pytest
import torch

from scripts import launch_floor as lf


def test_out_is_required_and_the_device_is_cuda_or_cpu(capsys):
    with pytest.raises(SystemExit):
        lf.build_parser().parse_args([])
    with pytest.raises(SystemExit):
        lf.build_parser().parse_args(["--out", "x.json", "--device", "tpu"])
    args = lf.build_parser().parse_args(["--out", "x.json", "--device", "cpu"])
    assert (str(args.out), args.device) == ("x.json", "cpu")


def test_the_cpu_loop_writes_the_json_shape_and_says_what_it_skipped(tmp_path, capsys):
    out = tmp_path / "floor.json"
    assert lf.main(["--out", str(out), "--device", "cpu"]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == lf.SCHEMA and doc["device"].startswith("cpu")
    assert set(doc) >= {"date", "commit", "versions", "flush_bytes", "measurements", "skipped", "timing"}
    assert doc["flush_bytes"] == 0
    stats = doc["measurements"]["torch_add"]
    for key in ("flush", "no_flush"):
        assert set(stats[key]) == {"runs", "mean", "std", "err", "best", "worst", "median"} and stats[key]["mean"] > 0
    assert doc["skipped"] == {"cute_empty": "no CUDA device: a CuTe kernel cannot launch on the CPU"}
    assert "cute_empty  skipped: no CUDA device" in capsys.readouterr().out


def test_the_flush_is_the_evaluators_capped_leaderboard_flush():
    from harness.timing import FLUSH_CAP_BYTES

    assert lf.flush_bytes() == FLUSH_CAP_BYTES  # 62.5 GiB of randn, capped at 8 GiB


def test_the_near_empty_kernel_compiles_without_a_gpu(monkeypatch):
    pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl is not installed")
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    assert lf.compile_empty() is not None


@pytest.mark.gpu
def test_the_gpu_measurement(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the launch floor is measured on a GPU")
    out = tmp_path / "floor.json"
    assert lf.main(["--out", str(out), "--device", "cuda"]) == 0
    doc = json.loads(out.read_text())
    assert doc["measurements"]["torch_add"]["flush"]["mean"] > 0
