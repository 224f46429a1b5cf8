"""harness.report's tables without the picture: the filters (--problem, --device, --newest), the
comparison of two results files (harness/compare.py), and results files with and without a "units" map
(harness/results_doc.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness import report
from harness.results_doc import read_results

CASES = [{"m": 128, "k": 256, "l": 1, "seed": 1}, {"m": 256, "k": 512, "l": 1, "seed": 2}]
H100, CPU = "NVIDIA H100 80GB HBM3", "cpu (x86_64, 2 threads)"


def results(path: Path, means_us: dict[str, list[float | None]], *, problem="gemv", device=H100,
            date="2026-11-25T00:00:00+00:00", cases=CASES, unit: str | None = None) -> str:
    """A results file as the evaluator writes it: per impl, one mean per case (None: the case failed);
    the stats in ns, or in `unit` under a top-level units map as newer files declare them."""
    scale = {"ns": 1e3, "us": 1.0, "ms": 1e-3, None: 1e3}[unit]

    def case(spec, mean):
        stats = None if mean is None else {"runs": 9, "mean": mean * scale, "err": 0.1 * scale,
                                           "best": mean * scale, "std": 0.0, "worst": mean * scale}
        return {"case": spec, "status": "pass" if stats else "fail", "error": None, "stats": stats}

    doc = {"problem": problem, "mode": "benchmark", "data": "leaderboard", "date": date, "ceilings": None,
           "environment": {"device": device, "commit": path.stem},
           "impls": {name: {"check": "pass", "error": None, "score_s": None,
                            "cases": [case(s, m) for s, m in zip(cases, means)]} for name, means in means_us.items()}}
    if unit:
        doc["units"] = {"stats": unit}
    path.write_text(json.dumps(doc))
    return str(path)


def run(capsys, *argv) -> str:
    assert report.main(list(argv)) == 0
    out, err = capsys.readouterr()
    return out


# ----- units ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("unit", [None, "ns", "us", "ms"])
def test_stats_are_read_in_ns_with_or_without_a_units_map(tmp_path, unit):
    doc = read_results(results(tmp_path / "r.json", {"submission": [12.5, None]}, unit=unit))
    stats = doc["impls"]["submission"]["cases"][0]["stats"]
    assert stats["mean"] == pytest.approx(12500.0) and stats["err"] == pytest.approx(100.0) and stats["runs"] == 9
    assert doc["impls"]["submission"]["cases"][1]["stats"] is None


def test_the_table_shows_us_whatever_unit_the_file_declares(tmp_path, capsys):
    old = run(capsys, results(tmp_path / "ns.json", {"submission": [12.5, 30.0]}))
    new = run(capsys, results(tmp_path / "us.json", {"submission": [12.5, 30.0]}, unit="us"))
    rows = lambda text: [line for line in text.splitlines() if "submission" in line]  # noqa: E731
    assert rows(old) == rows(new) and "12.50" in rows(new)[0]


def test_an_unknown_unit_is_one_line(tmp_path, capsys):
    path = results(tmp_path / "r.json", {"submission": [1.0, 2.0]}, unit="us")
    doc = json.loads(Path(path).read_text())
    doc["units"]["stats"] = "fortnights"
    Path(path).write_text(json.dumps(doc))
    assert report.main([path]) == 2
    said = capsys.readouterr().err.strip()
    assert said == f"report: {path}: stats in unit 'fortnights'; expected one of ns, us, ms, s"


# ----- filters --------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    return {
        "gemv-old": results(tmp_path / "gemv-old.json", {"submission": [20.0, 40.0]}, date="2026-11-24T00:00:00+00:00"),
        "gemv-new": results(tmp_path / "gemv-new.json", {"submission": [10.0, 40.0]}),
        "gemv-cpu": results(tmp_path / "gemv-cpu.json", {"submission": [900.0, 1800.0]}, device=CPU,
                            date="2099-01-01T00:00:00+00:00"),
        "gemm": results(tmp_path / "gemm.json", {"submission": [50.0]}, problem="gemm",
                        cases=[{"m": 128, "n": 7168, "k": 16384, "l": 1, "seed": 1111}]),
    }


def heads(text: str) -> list[str]:
    """The first line of each file's table: problem, mode, device, date, commit."""
    return [block.splitlines()[0] for block in text.split("\n\n")]


def test_problem_device_and_newest_filter_the_files(files, capsys):
    every = list(files.values())
    assert len(heads(run(capsys, *every))) == 4
    assert all(h.startswith("gemv ") for h in heads(run(capsys, "--problem", "gemv", *every)))
    assert len(heads(run(capsys, "--problem", "gemv", *every))) == 3
    assert heads(run(capsys, "--device", "cpu", *every)) == [
        f"gemv --mode benchmark on {CPU} (2099-01-01T00:00:00+00:00, commit gemv-cpu)"]
    newest = heads(run(capsys, "--newest", "--problem", "gemv", "--device", "H100", *every))
    assert newest == [f"gemv --mode benchmark on {H100} (2026-11-25T00:00:00+00:00, commit gemv-new)"]
    # newest of each problem and device
    assert sorted(h.split("commit ")[1] for h in heads(run(capsys, "--newest", *every))) == [
        "gemm)", "gemv-cpu)", "gemv-new)"]


def test_a_filter_that_keeps_nothing_is_one_line(files, capsys):
    assert report.main(["--problem", "dual_gemm", *files.values()]) == 2
    assert capsys.readouterr().err.strip() == "report: no results file of problem dual_gemm among the 4 read"


def test_without_files_a_filter_reads_results_and_the_users_results_local(tmp_path, monkeypatch):
    (tmp_path / "results" / "local").mkdir(parents=True)
    committed = results(tmp_path / "results" / "a.json", {"submission": [1.0, 2.0]})
    mine = results(tmp_path / "results" / "local" / "b.json", {"submission": [1.0, 2.0]}, device=CPU)
    (tmp_path / "results" / "gates.json").write_text("{}")  # not a results file: skipped
    assert [d["_path"] for d in report.default_results(str(tmp_path))] == [committed, mine]


# ----- the comparison -------------------------------------------------------------------------------


def table_rows(text: str) -> dict[tuple[str, str], str]:
    """{(case, impl): new/old} of the comparison's table."""
    rows = [re.split(r"\s{2,}", line) for line in text.splitlines() if line.startswith(("m:", "geomean"))]
    return {(row[0], row[1]): row[-1] for row in rows}


def test_compare_gives_the_ratio_per_case_and_impl_and_its_geomean(tmp_path, capsys):
    old = results(tmp_path / "old.json", {"submission": [20.0, 40.0], "reference": [100.0, 100.0]})
    new = results(tmp_path / "new.json", {"submission": [10.0, 40.0], "reference": [100.0, 400.0]}, unit="us")
    text = run(capsys, "--compare", old, new)
    first, second = "m: 128; k: 256; l: 1; seed: 1", "m: 256; k: 512; l: 1; seed: 2"
    assert table_rows(text) == {
        (first, "submission"): "0.500", (second, "submission"): "1.000",
        (first, "reference"): "1.000", (second, "reference"): "4.000",
        ("geomean of ratios (2 cases)", "submission"): "0.707", ("geomean of ratios (2 cases)", "reference"): "2.000"}
    assert "note:" not in text


def test_compare_says_which_cases_and_impls_do_not_match(tmp_path, capsys):
    other = [CASES[0], {"m": 512, "k": 512, "l": 1, "seed": 3}]
    old = results(tmp_path / "old.json", {"submission": [20.0, 40.0], "peer": [1.0, 1.0]})
    new = results(tmp_path / "new.json", {"submission": [10.0, None]}, cases=other, device=CPU)
    text = run(capsys, "--compare", old, new)
    assert "note: the files come from two devices" in text
    assert "note: impls in one file only, left out: peer" in text
    assert "note: the files ran different cases; left out: 1 case(s) of old only, 1 of new only" in text
    assert "geomean of ratios (1 cases)" in text


def test_compare_of_files_with_no_case_in_common_is_one_line(tmp_path, capsys):
    old = results(tmp_path / "old.json", {"submission": [20.0]}, cases=CASES[:1])
    new = results(tmp_path / "new.json", {"submission": [20.0]}, cases=CASES[1:])
    assert report.main(["--compare", old, new]) == 2
    assert capsys.readouterr().err.strip().startswith("report: no case in both files")
