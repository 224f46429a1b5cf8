"""scripts/profile_sm90.py and scripts/ncu_metrics.py: the metric choice, the reading of ncu's CSV, the
profile line, and the whole run against a stand-in ncu, all on the CPU; the real ncu on a Hopper GPU.

The fixtures in tests/fixtures/ncu/ were written by hand in the layouts ncu documents for
`ncu --query-metrics` (a table: name, type, unit, description) and `ncu --import R --csv --page raw
--print-units base` (a header row, a units row, one row per kernel, ncu's `==PROF==` lines mixed in);
they were not captured from a device. The sm90-marked test is the check against the real thing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from scripts import ncu_metrics as N
from scripts import profile_sm90 as S

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "ncu"
GMMA = "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
CASE = "m: 128; n: 256; k: 512; l: 1; seed: 3"


def _raw_csv() -> str:
    return (FIXTURES / "raw_two_kernels.csv").read_text()


def test_the_first_offered_candidate_is_chosen_per_role():
    offered = N.offered_metrics((FIXTURES / "query_metrics_gh100.txt").read_text())
    assert "sm__pipe_tensor_op_gmma_cycles_active" in offered and "Metric" not in offered and "Device" not in offered
    chosen = N.choose(offered)
    assert chosen["tensor"] == GMMA  # wgmma's pipe, ahead of HMMA's, which the fixture also offers
    assert chosen["time"] == "gpu__time_duration.sum" and chosen["dram"].startswith("dram__throughput.")
    without_gmma = N.choose(offered - {"sm__pipe_tensor_op_gmma_cycles_active"} | {"sm__pipe_tensor_cycles_active"})
    assert without_gmma["tensor"] == "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
    assert N.choose({"gpu__time_duration"})["tensor"] is None
    assert N.choose(set()) == {role: candidates[0] for role, candidates in N.ROLES.items()}  # ncu names what it rejects


def test_the_raw_csv_gives_one_record_per_kernel():
    kernels = N.parse_raw_csv(_raw_csv())
    assert [k["id"] for k in kernels] == [0, 1]
    first = kernels[0]
    assert first["name"].startswith("Sm90GemmKernel_0(") and first["grid"] == "(132, 1, 1)"
    assert first["values"]["gpu__time_duration.sum"] == 30000.0  # thousands separator read
    assert first["units"]["gpu__time_duration.sum"] == "nsecond" and N.kernel_us(first) == pytest.approx(30.0)
    assert first["values"]["sm__inst_executed_pipe_alu.sum"] == 1000.0
    missing = _raw_csv().replace('"60"\n', '"n/a"\n', 1)
    assert N.parse_raw_csv(missing)[0]["values"][GMMA] is None


@pytest.mark.parametrize("text,needle", [
    ("==PROF== Disconnected from process 1\n", "expected a header row with ID and Kernel Name"),
    ('"a","b"\n"1","2"\n', "expected a header row with ID and Kernel Name"),
    ('"ID","Kernel Name","gpu__time_duration.sum"\n"",""\n', "the units row has 2 columns, the header 3"),
])
def test_a_table_that_is_not_ncus_raw_page_is_one_clear_line(text, needle):
    with pytest.raises(ValueError, match=needle):
        N.parse_raw_csv(text)


def test_a_call_of_two_kernels_is_one_line_weighted_by_duration():
    """30 us at 90 % SM busy and 10 us at 50 %: (90 * 30 + 50 * 10) / 40 = 80; instruction counts summed:
    (1000 + 100 + 2000 + 900) / (6000 + 2000) = 50 % decode share."""
    chosen = N.choose(N.offered_metrics((FIXTURES / "query_metrics_gh100.txt").read_text()))
    s = N.summarize(N.parse_raw_csv(_raw_csv()), chosen)
    assert s["time_us"] == pytest.approx(40.0) and s["kernels"] == 2
    assert s["sm_busy_pct"] == pytest.approx(80.0) and s["tensor_pct"] == pytest.approx(45.0)
    assert s["dram_pct"] == pytest.approx(35.0)
    assert s["alu_pipe_pct"] == pytest.approx(25.0) and s["fma_pipe_pct"] == pytest.approx(35.0)
    assert s["decode_share_pct"] == pytest.approx(50.0)
    none = N.summarize(N.parse_raw_csv(_raw_csv()), {**chosen, "tensor": None, "all_inst": None})
    assert none["tensor_pct"] is None and none["decode_share_pct"] is None and none["sm_busy_pct"] == s["sm_busy_pct"]
    with pytest.raises(ValueError, match="ncu profiled no kernel"):
        N.summarize([], chosen)
    bad = N.parse_raw_csv(_raw_csv().replace('"nsecond"', '"cycle"'))
    with pytest.raises(ValueError, match=r"kernel 0 has gpu__time_duration.sum = 30000.0 in 'cycle', expected"):
        N.summarize(bad, chosen)


def test_the_profile_line_and_its_header_line_up():
    summary = {"time_us": 64.08, "sm_busy_pct": 97.2, "tensor_pct": None, "dram_pct": 48.0, "alu_pipe_pct": 30.0,
               "fma_pipe_pct": 41.5, "decode_share_pct": 42.04, "kernels": 1}
    line = S.profile_line("m: 128; n: 7168", "submission", summary, None, 16)
    assert line.split() == ["m:", "128;", "n:", "7168", "submission", "64.1", "97.2", "-", "48.0", "30.0", "41.5",
                            "42.0", "1"]
    assert len(line) == len(S.header_line(16))
    failed = S.profile_line("m: 128", "submission", None, "ncu exited 1: ==ERROR== no permission", 16)
    assert failed.endswith("FAILED: ncu exited 1: ==ERROR== no permission")


def test_without_a_gpu_or_ncu_it_says_so_in_one_line(capsys):
    assert S.main(["gemm", "--ncu", "no-such-ncu-here"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs a CUDA GPU and Nsight Compute's ncu" in err[0]
    assert "ncu (no-such-ncu-here)" in err[0]


FAKE_NCU = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_NCU_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
fixtures = os.environ["FAKE_NCU_FIXTURES"]
if args == ["--query-metrics"]:
    print(open(os.path.join(fixtures, "query_metrics_gh100.txt")).read())
elif args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1 (stand-in)")
elif args[0] == "--import":
    if os.environ.get("FAKE_NCU_NO_REPORT"):
        print("==ERROR== Failed to open report file")
        sys.exit(1)
    print(open(os.path.join(fixtures, "raw_two_kernels.csv")).read())
elif os.environ.get("FAKE_NCU_NO_REPORT"):
    print("RuntimeError: the impl raised before the profiled call")
elif os.environ.get("FAKE_NCU_SLEEP"):
    import time
    time.sleep(float(os.environ["FAKE_NCU_SLEEP"]))
elif os.environ.get("FAKE_NCU_FAIL"):
    print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
    sys.exit(1)
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """A stand-in ncu that logs its arguments and answers with the fixtures; the GPU's presence and the
    environment record faked, so that the orchestration runs on the CPU."""
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    log = tmp_path / "ncu.log"
    monkeypatch.setenv("FAKE_NCU_LOG", str(log))
    monkeypatch.setenv("FAKE_NCU_FIXTURES", str(FIXTURES))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr("harness.eval.environment", lambda device: {"device": "stand-in", "commit": "abc"})
    return ncu, log


def test_a_run_profiles_one_call_per_case_and_writes_the_json(fake_ncu, tmp_path, capsys):
    ncu, log = fake_ncu
    out = tmp_path / "p.json"
    assert S.main(["gemm", "--case", CASE, "--impl", "submission", "cublas-predecoded", "--ncu", str(ncu),
                   "--json", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert f"tensor {GMMA}" in stdout
    rows = [line for line in stdout.splitlines() if line.startswith("m: 128")]
    assert len(rows) == 2 and all(line.split()[-8:] == ["40.0", "80.0", "45.0", "35.0", "25.0", "35.0", "50.0", "2"]
                                  for line in rows)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    profiles = [c for c in calls if "--metrics" in c]
    assert len(profiles) == 2  # one process under ncu per case and impl
    first = profiles[0]
    for option in ("--profile-from-start", "off", "--cache-control", "all", "--clock-control", "none"):
        assert option in first
    metrics = first[first.index("--metrics") + 1].split(",")
    assert GMMA in metrics and not any("hmma" in m for m in metrics)
    child = first[first.index(sys.executable):]
    assert child[2:4] == ["gemm", "--child"] and json.loads(child[child.index("--case-json") + 1])["n"] == 256
    doc = json.loads(out.read_text())
    assert doc["metrics"]["tensor"] == GMMA and doc["ncu"] == "Version 2099.1 (stand-in)"
    assert doc["environment"]["commit"] == "abc" and "decode share" in doc["definitions"]
    assert [c["impl"] for c in doc["cases"]] == ["submission", "cublas-predecoded"]
    assert doc["cases"][0]["summary"]["decode_share_pct"] == pytest.approx(50.0)
    assert len(doc["cases"][0]["kernels"]) == 2


@pytest.mark.parametrize("env,extra,needle", [
    ({"FAKE_NCU_FAIL": "1"}, [], "FAILED: ncu exited 1: ==ERROR== ERR_NVGPUCTRPERM"),
    ({"FAKE_NCU_NO_REPORT": "1"}, [], "FAILED: ncu --import exited 1: ==ERROR== Failed to open report file; the "
                                      "profiled run said: RuntimeError: the impl raised before the profiled call"),
    ({"FAKE_NCU_SLEEP": "30"}, ["--timeout", "0.5"], "FAILED: ncu took more than 0.5 s (--timeout)"),
])
def test_a_case_ncu_cannot_profile_is_one_line_and_exit_1(fake_ncu, monkeypatch, capsys, env, extra, needle):
    ncu, _ = fake_ncu
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert S.main(["gemm", "--case", CASE, "--ncu", str(ncu), *extra]) == 1
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("m: 128")]
    assert len(rows) == 1 and needle in rows[0]


@pytest.mark.sm90
def test_the_real_ncu_profiles_the_submission_and_the_peer(tmp_path):
    if shutil.which("ncu") is None:
        pytest.skip("Nsight Compute's ncu is not on PATH")
    out = tmp_path / "p.json"
    r = subprocess.run([sys.executable, "scripts/profile_sm90.py", "gemm", "--case", CASE, "--impl", "submission",
                        "cublas-predecoded", "--json", str(out)], cwd=REPO, capture_output=True, text=True,
                       timeout=600, env=os.environ)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    for case in doc["cases"]:
        s = case["summary"]
        assert s["time_us"] > 0 and 0 < s["sm_busy_pct"] <= 100 and s["decode_share_pct"] is not None, case
        assert s["tensor_pct"] is not None and s["tensor_pct"] > 0, (doc["metrics"], case)
