"""scripts/peer_table.py: the submission against the cuBLAS peer per case, read from an evaluator results
JSON (here a small one written by the test, with figures chosen so that each ratio is known)."""

from __future__ import annotations

import copy
import json

import pytest

from scripts import peer_table as T

RATE = 1e15  # FLOP/s the run measured: shown, not used (the floor is at issue 34's fixed 790 TFLOP/s)
FLOOR_US = 2 * 128 * 1024 * 4096 / 790e12 * 1e6  # 1.359 us


def _case(graph_ns, mean_ns, k=4096):
    return {"case": {"m": 128, "n": 1024, "k": k, "l": 1, "seed": 1111}, "status": "pass",
            "stats": {"mean": mean_ns}, "graph_ns": graph_ns, "graph_error": None}


def _doc():
    return {"problem": "gemm", "environment": {"commit": "abc123"},
            "ceilings": {"device": "NVIDIA H100 80GB HBM3", "flops": RATE, "bandwidth_Bps": 3e12},
            "impls": {"submission": {"cases": [_case(2000, 2500), _case(3000, 3500, k=8192)]},
                      "cublas-predecoded": {"cases": [_case(2500, 2600), _case(2500, 2700, k=8192)]},
                      "bf16-predecoded": {"cases": [_case(2800, 3000), _case(5000, 5200, k=8192)]},
                      "/tmp/base/gemm.py": {"cases": [_case(None, 2450), _case(None, 3600, k=8192)]}}}


def test_each_case_gets_the_ratios_and_the_goal():
    first, second = T.rows(_doc())
    assert first["case"] == "m: 128; n: 1024; k: 4096; l: 1"
    assert (first["ours_mean"], first["ours_graph"], first["peer_graph"]) == (2.5, 2.0, 2.5)
    assert first["ours_over_peer"] == pytest.approx(0.8) and first["floor_us"] == pytest.approx(FLOOR_US)
    assert first["ours_over_floor"] == pytest.approx(2.0 / FLOOR_US) and first["goal"] is True  # 1.47x
    assert second["ours_over_peer"] == pytest.approx(1.2) and second["goal"] is False  # slower than the peer
    assert first["others"] == {"bf16-predecoded graph": 2.8, "base/gemm.py mean": 2.45}  # a bundle: its mean


def test_a_case_within_the_peer_but_over_twice_the_floor_misses_the_goal():
    doc = _doc()
    doc["impls"]["submission"]["cases"][0]["graph_ns"] = 2800  # 2.06x the floor, still 0.93x the peer
    doc["impls"]["cublas-predecoded"]["cases"][0]["graph_ns"] = 3000
    assert T.rows(doc)[0]["goal"] is False
    doc["ceilings"]["flops"] = 700e12  # a run that measured a slower GPU does not move the verdict
    assert T.rows(doc)[0]["goal"] is False
    doc["impls"]["cublas-predecoded"]["cases"][0]["graph_ns"] = None  # the peer not captured: no verdict
    assert T.rows(doc)[0]["goal"] is None


def test_the_table_and_the_earlier_run():
    before = copy.deepcopy(_doc())
    before["impls"]["submission"]["cases"][0]["graph_ns"] = 2600
    text = T.render(_doc(), before=before)
    lines = text.splitlines()
    assert "floor at 790 TFLOP/s (issue 34; bf16 measured in the run: 1000)" in lines[0] and "commit abc123" in lines[0]
    assert lines[1].split("  ")[-1] == "goal" and "before graph" in lines[1] and "base/gemm.py mean" in lines[1]
    assert lines[2].split()[-1] == "met" and "2.6" in lines[2].split() and lines[3].split()[-1] == "no"
    assert "geomean ours/peer: 0.98" in text  # sqrt(0.8 * 1.2)
    assert lines[-1].endswith("1 of 2 cases")


@pytest.mark.parametrize("change,needle", [
    (lambda d: d["impls"].pop("cublas-predecoded"), "no impl 'cublas-predecoded' in this run (has: submission,"),
    (lambda d: d.update(ceilings=None), "no ceilings (a CPU run?"),
    (lambda d: d["impls"]["bf16-predecoded"]["cases"].pop(), "bf16-predecoded has 1 cases, expected 2"),
])
def test_a_run_the_table_cannot_read_is_one_line(change, needle):
    doc = _doc()
    change(doc)
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace("?", r"\?")):
        T.rows(doc, "x.json")


def test_the_command_matches_earlier_runs_by_problem(tmp_path, capsys):
    results, before, other = tmp_path / "r.json", tmp_path / "b.json", tmp_path / "o.json"
    results.write_text(json.dumps(_doc()))
    before.write_text(json.dumps(_doc()))
    other.write_text(json.dumps({**_doc(), "problem": "dual_gemm"}))
    assert T.main([str(results), "--before", str(other), str(before)]) == 0
    assert "before mean" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"problem": "gemm", "ceilings": _doc()["ceilings"]}))
    assert T.main([str(bad)]) == 2
    assert capsys.readouterr().err.strip() == f"peer_table: {bad}: not an evaluator results JSON (no 'impls')"
