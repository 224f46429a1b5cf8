"""The B200 model (harness/b200/model.py) and its calibration: the entrant's figures it is fitted to,
the launch floor it reads from results/launch-floor/*.json when one is committed (and says so when
not), the per-variant estimates, and `--model`'s tables. Every figure is a model; nothing here runs a
kernel."""

from __future__ import annotations

import json

import pytest

from harness.b200 import PROBLEMS, model_table
from harness.b200 import model as M
from harness.b200.session import main as b200_main
from scripts import launch_floor as lf


@pytest.fixture(autouse=True)
def _fresh_calibration():
    M.calibration.cache_clear()
    yield
    M.calibration.cache_clear()


def test_every_calibration_entry_cites_its_source_and_covers_every_case():
    doc = M.entries()
    assert doc["ceilings"]["source"].startswith("https://github.com/gau-nernst/gpu-mode-kernels/blob/")
    for problem, items in doc["entries"].items():
        cases = M.benchmark_cases(problem)
        assert sum(1 for e in items if e.get("best")) == 1, problem
        for e in items:
            assert len(e["us"]) == len(cases), (problem, e["name"])
            assert e["source"].startswith("https://github.com/gau-nernst/gpu-mode-kernels/blob/"), e
            assert e["technique"] and (e["ours"] is None or e["ours"] in M.MODELLED[problem]), e


def test_one_fixed_cost_reproduces_the_entries_within_the_stated_spread():
    cal = M.calibration()
    assert len(cal["points"]) == 25  # gemv 3, gemm 2 x 3, dual 2 x 4, group 2 x 4
    residuals = [p["residual_us"] for p in cal["points"]]
    assert min(residuals) <= cal["fixed_us"] <= max(residuals)
    assert cal["rms_us"] < 1.5 and cal["worst_us"] < 2.5  # what the docs state (1.12 / 2.30)
    for p in cal["points"]:  # every entry lies inside its case's range
        assert p["core_us"] + cal["low_us"] <= p["entry_us"] <= p["core_us"] + cal["high_us"] + 1e-9


def test_without_a_launch_floor_file_the_model_says_it_is_uncalibrated(tmp_path, monkeypatch):
    monkeypatch.setattr(M, "LAUNCH_FLOOR_DIR", tmp_path / "none")
    lines = M.calibration_lines()
    assert any(line.startswith("launch floor: uncalibrated (no results/launch-floor/*.json), FIXED = ")
               for line in lines)


def test_a_launch_floor_json_from_a_gpu_is_read_and_bounds_the_range(tmp_path, monkeypatch):
    """scripts/launch_floor.py's document, as the lead's H100 run writes it, read back by the model; a CPU
    run of the tool is not a calibration."""
    stats = {"runs": 50, "mean": 5.0, "std": 0.1, "err": 0.01, "best": 4.8, "worst": 5.5}
    record = {"device": "NVIDIA H100 80GB HBM3", "capability": "sm_90", "versions": {}, "commit": "x", "dirty": False}
    doc = lf.document({"cute_empty": {"flush": stats, "no_flush": {**stats, "mean": 3.0}}}, {}, 8 << 30, record,
                      date="2026-11-25T00:00:00Z")
    (tmp_path / "h100.json").write_text(json.dumps(doc))
    cpu = lf.document({"torch_add": {"flush": {**stats, "mean": 99.0}, "no_flush": stats}}, {}, 0,
                      {**record, "device": "cpu (x86_64, 2 threads)"}, date="2026-11-26T00:00:00Z")
    (tmp_path / "cpu.json").write_text(json.dumps(cpu))
    monkeypatch.setattr(M, "LAUNCH_FLOOR_DIR", tmp_path)
    floor = M.launch_floor()
    assert (floor["kernel"], floor["us"], floor["device"]) == ("cute_empty", 5.0, "NVIDIA H100 80GB HBM3")
    cal = M.calibration()
    assert cal["low_us"] == 5.0  # above the smallest residual (4.31): the floor is the range's bottom
    assert any(line.startswith("launch floor: 5.00 us (cute_empty in the flushed loop, NVIDIA H100")
               for line in M.calibration_lines())


def test_variant_estimates_follow_their_technique():
    gemm = M.benchmark_cases("gemm")
    split = M.core("gemm", "splitk_swap", gemm[1])  # 128 x 4096 x 7168: MMA-bound unsplit, 64 CTAs
    assert split["splits"] > 1 and split["tiles"] <= M.SMS
    assert split["core_us"] < M.core("gemm", "conservative", gemm[1])["core_us"]
    dual = M.benchmark_cases("dual_gemm")
    assert M.core("dual_gemm", "cta2", dual[0])["efficiency"] == pytest.approx(0.8)  # 64-wide pairs
    assert M.core("dual_gemm", "conservative", dual[0])["efficiency"] == pytest.approx(2 / 3)
    for case in M.benchmark_cases("group_gemm"):  # one K per case: the order does not move the busiest CTA
        assert M.core("group_gemm", "msorted", case)["core_us"] == M.core("group_gemm", "conservative", case)["core_us"]
    assert M.core("gemv", "msorted", M.benchmark_cases("gemv")[0]) is None


def test_model_prints_every_variant_next_to_the_entries_and_why_it_is_faster(capsys):
    assert b200_main(["--model"]) == 0
    out = capsys.readouterr().out
    for problem in PROBLEMS:
        header = next(line for line in out.splitlines() if line.startswith("case | conservative (model)")
                      and out.splitlines()[out.splitlines().index(line) - 1].startswith(f"{problem}:"))
        for name in {*model_table.registered(problem), *M.MODELLED[problem]}:
            assert f"{name} (model)" in header, (problem, name)
        assert "(best entry)" in header
    tail = out.split("model faster than the entry with the same technique:")[1].strip().splitlines()
    assert tail and all(" < " in line and ("DRAM-bound" in line or "MMA-bound" in line) for line in tail)
