"""The host figures in the evaluator's table, its JSON and harness/report.py: host us (GPU kept busy)
and host idle us (GPU idle, next to an empty torch op's measured the same way)."""

import json

from harness import report

CASE = {"m": 7168, "k": 16384, "l": 1, "seed": 1111}
STATS = {"runs": 3, "mean": 32000.0, "std": 1.0, "err": 0.5, "best": 31000.0, "worst": 33000.0}


def write_doc(path, **host):
    case = {"case": CASE, "status": "pass", "error": None, "stats": STATS, "host_us": 9.5, "host_rotating_us": 8.9,
            "host_over_gpu": False, **host}
    doc = {"problem": "gemv", "mode": "benchmark", "data": "leaderboard", "date": "2026-11-24T00:00:00+00:00",
           "environment": {"device": "NVIDIA H100 80GB HBM3", "commit": "abc"}, "ceilings": None,
           "impls": {"submission": {"check": "pass", "error": None, "score_s": 32e-6, "cases": [case]},
                     "slow": {"check": "pass", "error": None, "score_s": 32e-6,
                              "cases": [{**case, "host_idle_us": host.get("host_idle_us") and 31.0}]}}}
    path.write_text(json.dumps(doc))
    return str(path)


def test_report_shows_idle_host_time_next_to_the_empty_op(tmp_path):
    text = report.render(write_doc(tmp_path / "r.json", host_idle_us=7.25, host_idle_empty_us=5.0))
    head, _, submission, slow, *_ = text.splitlines()[1:]
    assert "host us" in head and "host idle us" in head
    assert "9.5 / 8.9" in submission and "7.2 / 5.0" in submission and "7.2 / 5.0 !" not in submission
    assert "31.0 / 5.0 !" in slow  # more than twice the empty op's
    assert text.splitlines()[-1].startswith("host idle us: median host time per call with the GPU idle")


def test_results_without_idle_figures_have_no_idle_column(tmp_path):
    text = report.render(write_doc(tmp_path / "r.json"))
    assert "host us" in text and "host idle us" not in text


def test_runner_reports_both_idle_figures_for_its_device():
    """The worker's plumbing, on the CPU (its sync is then a no-op): both figures, in microseconds."""
    from harness.eval import REPO
    from harness.worker import Runner

    runner = Runner("gemv", str(REPO / "problems" / "gemv" / "reference.py"), "reference", "cpu", "leaderboard")
    calls = []
    figures = runner.host_idle(lambda: calls.append(1))
    assert set(figures) == {"host_idle_us", "host_idle_empty_us"} and len(calls) == 55  # 5 warm-up + 50 timed
    assert 0 < figures["host_idle_us"] < 1e4 and 0 < figures["host_idle_empty_us"] < 1e4
