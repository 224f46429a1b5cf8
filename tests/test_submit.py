"""`nox -s submit` (harness/submit.py) against a fake popcorn-cli on PATH: no network.

The fake CLI checks what the real one checks before uploading (the file exists, its
`#!POPCORN leaderboard` directive matches --leaderboard), records its arguments, and writes one of
the three output shapes popcorn-cli has produced (text reports, full result JSON, job summary).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import problem as P
from harness import submit as sm

REPO = Path(__file__).resolve().parent.parent

FAKE_CLI = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    args = sys.argv[1:]
    with open(os.environ["FAKE_POPCORN_LOG"], "w") as f:
        json.dump(args, f)
    assert args[0] == "submit" and "--no-tui" in args, args
    opt = lambda k: args[args.index(k) + 1]
    head = open(args[-1]).read().splitlines()[:2]
    if head[0] != "#!POPCORN leaderboard " + opt("--leaderboard"):
        print("Error: leaderboard mismatch", file=sys.stderr)
        sys.exit(1)
    print("Submitting to leaderboard: " + opt("--leaderboard"), file=sys.stderr)
    text = open(os.environ["FAKE_POPCORN_OUTPUT"], encoding="utf-8").read()
    with open(opt("-o"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    sys.exit(int(os.environ.get("FAKE_POPCORN_RC", "0")))
""")

GEMV_OPEN, GEMV_CLOSED = "2025-11-29 06:59", "2025-11-29 07:00"  # its deadline: 2025-11-29 6:59 UTC
GEMV_BENCH = ["k: 16384; l: 1; m: 7168; seed: 1111", "k: 7168; l: 8; m: 4096; seed: 1111",
              "k: 2048; l: 4; m: 7168; seed: 1111"]


def reports_output(mode_header: str = "Ranked Benchmark") -> str:
    """What the hackathon-era CLI wrote with -o: the server's reports list, brackets stripped,
    `\\n` expanded (so each report is a quoted string spanning lines)."""
    system = ("\nRunning on:\n* GPU: `NVIDIA B200`\n* CPU: `INTEL(R) XEON(R) PLATINUM 8570`\n* Device count: `1`\n"
              "* Runtime: `CUDA`\n* Platform: `Linux-6.8.0-x86_64`\n* Torch: `2.9.1+cu130`\n* Hostname: `b200-3`\n")
    tests = "\n".join(f"✅ {s}" for s in ["k: 256; l: 1; m: 128; seed: 1111", "k: 1536; l: 1; m: 128; seed: 1111"])
    bench = (f"{GEMV_BENCH[0]}\n ⏱ 22.4 ± 0.02 µs\n ⚡ 21.9 µs 🐌 25.1 µs\n\n"
             f"{GEMV_BENCH[1]}\n ⏱ 40.1 ± 0.05 µs\n ⚡ 39.5 µs 🐌 44.0 µs\n\n"
             f"{GEMV_BENCH[2]}\n ⏱ 9.87 ± 0.011 µs\n ⚡ 9.61 µs 🐌 12.3 µs\n")
    long = (system + "\n\n## ✅ Passed 2/2 tests:\n```\n" + tests + "```"
            + f"\n\n## {mode_header}:\n```\n" + bench + "```")
    reports = ["**Leaderboard submission.py on NVIDIA**\n> ✅ Testing successful\n> ✅ Leaderboard run successful\n"
               + long]
    text = json.dumps(reports, ensure_ascii=False).strip()[1:-1]
    return text.replace("\\n", "\n")


def full_json_output() -> str:
    result = {"check": "pass", "benchmark-count": 3}
    for i, (spec, mean) in enumerate(zip(GEMV_BENCH, [22431.5, 40120.25, 9871.0])):
        result.update({f"benchmark.{i}.spec": spec, f"benchmark.{i}.runs": 200, f"benchmark.{i}.mean": mean,
                       f"benchmark.{i}.std": 100.0, f"benchmark.{i}.err": 7.1, f"benchmark.{i}.best": mean - 500,
                       f"benchmark.{i}.worst": mean + 3000})
    run = {"success": True, "passed": True, "command": "python eval.py benchmark", "stdout": "", "stderr": "",
           "exit_code": 0, "duration": 12.0, "result": result}
    doc = {"status": "success", "results": [{"success": True, "error": "", "system": {"gpu": "NVIDIA B200",
                                                                                       "torch": "2.9.1+cu130"},
                                             "runs": {"benchmark": {"compilation": None, "run": run}}}]}
    return json.dumps(doc, indent=2).replace("\\n", "\n")


def summary_output() -> str:
    doc = {"submission_id": 4242, "leaderboard": "nvfp4_gemv", "file_name": "submission.py", "done": True,
           "runs": [{"mode": "leaderboard", "secret": False, "runner": "NVIDIA", "score": 1.96e-05, "passed": True},
                    {"mode": "leaderboard", "secret": True, "runner": "NVIDIA", "score": 1.97e-05, "passed": True}]}
    return "Geomean score (public) on NVIDIA: 1.96e-05 s\n\n" + json.dumps(doc, indent=2)


def failed_test_output() -> str:
    long = ("\nRunning on:\n* GPU: `NVIDIA B200`\n\n## Program stderr:\n```\nnothing```"
            "\n```bash\npython eval.py test```\nran successfully in 3.10 seconds, but did not pass all tests.\n"
            "\n\n## ❌ Failed tests:\n```\n✅ k: 256; l: 1; m: 128; seed: 1111\n❌ k: 1536; l: 1; m: 128; seed: 1111\n"
            "> mismatch found! custom implementation doesn't match reference: 3 mismatched elements\n```")
    return json.dumps(["**Test submission.py on NVIDIA**\n> ❌ Testing failed\n" + long],
                      ensure_ascii=False)[1:-1].replace("\\n", "\n")


# ----- parsing ----------------------------------------------------------------------------------


def test_parse_text_reports():
    parsed = sm.parse_output(reports_output())
    assert parsed["shape"] == "reports"
    assert parsed["system"]["gpu"] == "NVIDIA B200" and parsed["system"]["torch"] == "2.9.1+cu130"
    r = sm.to_results(P.load_problem("gemv"), "leaderboard", "NVIDIA", parsed)
    assert r["passed"] and r["mode_run"] == "leaderboard"
    assert [c["case"] for c in r["cases"]] == [
        {"k": 16384, "l": 1, "m": 7168, "seed": 1111}, {"k": 7168, "l": 8, "m": 4096, "seed": 1111},
        {"k": 2048, "l": 4, "m": 7168, "seed": 1111}]
    s0 = r["cases"][0]["stats"]
    assert s0["mean"] == pytest.approx(22400.0) and s0["err"] == pytest.approx(20.0)
    assert s0["best"] == pytest.approx(21900.0) and s0["worst"] == pytest.approx(25100.0)
    assert r["score_s"] == pytest.approx((22.4e-6 * 40.1e-6 * 9.87e-6) ** (1 / 3))
    assert r["cases"][0]["sol_us"] == P.load_problem("gemv").sol_b200_us[0]  # same case as the manifest


def test_parse_full_json():
    parsed = sm.parse_output(full_json_output())
    assert parsed["shape"] == "json"
    r = sm.to_results(P.load_problem("gemv"), "benchmark", "NVIDIA", parsed)
    assert r["passed"] and r["cases"][1]["stats"]["mean"] == 40120.25 and r["cases"][1]["stats"]["runs"] == 200


def test_parse_job_summary_keeps_the_public_score():
    parsed = sm.parse_output(summary_output())
    assert parsed["shape"] == "summary" and parsed["submission_id"] == 4242
    r = sm.to_results(P.load_problem("gemv"), "leaderboard", "NVIDIA", parsed)
    assert r["passed"] and r["score_s"] == pytest.approx(1.96e-05) and r["cases"] == []


def test_parse_failed_tests():
    r = sm.to_results(P.load_problem("gemv"), "test", "NVIDIA", sm.parse_output(failed_test_output()))
    assert not r["passed"]
    assert [c["status"] for c in r["cases"]] == ["pass", "fail"]
    assert "mismatch found" in r["cases"][1]["error"]


def test_unrecognised_output_is_a_failure_not_a_crash():
    r = sm.to_results(P.load_problem("gemv"), "test", "NVIDIA", sm.parse_output("Error: something odd\n"))
    assert not r["passed"] and "unrecognised popcorn-cli output" in r["error"]


# ----- the round trip through a fake CLI --------------------------------------------------------


@pytest.fixture
def fake_env(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "popcorn-cli"
    cli.write_text(FAKE_CLI.format(python=sys.executable))
    cli.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".popcorn.yaml").write_text("cli_id: test-cli-id-123\n")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(home),
           "POPCORN_API_URL": "http://127.0.0.1:9", "FAKE_POPCORN_LOG": str(tmp_path / "argv.json"),
           "NVFP4_NOW": GEMV_OPEN}  # a fixed clock: the gemv leaderboard still open (harness/deadlines.py)
    return env


def submit(tmp_path, env, *args, output: str) -> subprocess.CompletedProcess:
    """`python -m harness.submit ARGS` from the repository with `env` as its whole environment: its main,
    run in this process with stdout and stderr captured (a new interpreter would spend ~3 s importing
    torch); popcorn-cli, the fake one, runs as a child as always."""
    (tmp_path / "cli_output.txt").write_text(output, encoding="utf-8")
    env = {**env, "FAKE_POPCORN_OUTPUT": str(tmp_path / "cli_output.txt")}
    argv = [*args, "--output", str(tmp_path / "sub.py"), "--json", str(tmp_path / "res.json")]
    saved, cwd, out, err = dict(os.environ), os.getcwd(), io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(REPO)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = sm.main(argv)
            except SystemExit as e:  # argparse's usage errors
                code = e.code
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(cwd)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def test_submit_round_trips_into_results_json(tmp_path, fake_env):
    res = submit(tmp_path, fake_env, "gemv", "--mode", "leaderboard", output=reports_output())
    assert res.returncode == 0, res.stderr
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[:7] == ["submit", "--leaderboard", "nvfp4_gemv", "--gpu", "NVIDIA", "--mode", "leaderboard"]
    assert argv[7:9] == ["--no-tui", "-o"] and argv[-1] == str(tmp_path / "sub.py")
    doc = json.loads((tmp_path / "res.json").read_text())
    assert doc["source"] == "popcorn-cli" and doc["problem"] == "gemv" and doc["mode"] == "leaderboard"
    impl = doc["impls"]["submission"]
    assert impl["check"] == "pass" and len(impl["cases"]) == 3
    assert impl["cases"][2]["stats"]["mean"] == pytest.approx(9870.0)
    assert doc["environment"]["device"] == "NVIDIA B200"
    # the same key: value lines and table as the local evaluator
    assert "benchmark.0.mean: 22400.0" in res.stdout and "check: pass" in res.stdout
    assert "mean us" in res.stdout and "x SOL" in res.stdout and "geomean (score)" in res.stdout
    assert Path(doc["popcorn"]["raw_output"]).read_text(encoding="utf-8") == reports_output()


def test_submit_reports_a_failed_check(tmp_path, fake_env):
    res = submit(tmp_path, fake_env, "gemv", "--mode", "test", output=failed_test_output())
    assert res.returncode == 112, res.stderr
    doc = json.loads((tmp_path / "res.json").read_text())
    assert doc["impls"]["submission"]["check"] == "fail"


def test_submit_passes_on_the_cli_failure(tmp_path, fake_env):
    res = submit(tmp_path, {**fake_env, "FAKE_POPCORN_RC": "1"}, "gemv", "--mode", "test", output="")
    assert res.returncode == 1
    assert "popcorn-cli exited with status 1" in res.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no-cli", "submit: popcorn-cli is not on PATH: install it from https://github.com/gpu-mode/popcorn-cli"),
        ("no-url", "submit: POPCORN_API_URL is not set: export POPCORN_API_URL="),
        ("no-registration", "submit: not registered with the leaderboard"),
        ("empty-cli-id", "submit: not registered with the leaderboard"),
    ],
)
def test_each_missing_prerequisite_is_one_line(tmp_path, fake_env, change, message):
    env = dict(fake_env)
    if change == "no-cli":
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                      if not (Path(p) / "popcorn-cli").exists() and not (Path(p) / "popcorn").exists())
    elif change == "no-url":
        del env["POPCORN_API_URL"]
    elif change == "no-registration":
        (Path(env["HOME"]) / ".popcorn.yaml").unlink()
    else:
        (Path(env["HOME"]) / ".popcorn.yaml").write_text("cli_id: ''\n")
    res = submit(tmp_path, env, "gemv", "--mode", "test", output=reports_output())
    assert res.returncode == sm.EXIT_PREREQ
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), res.stderr
    assert not (tmp_path / "argv.json").exists()  # the CLI was never called


def test_the_popcorn_name_is_accepted_too(tmp_path, fake_env):
    bin_dir = Path(fake_env["PATH"].split(os.pathsep)[0])
    (bin_dir / "popcorn-cli").rename(bin_dir / "popcorn")
    res = submit(tmp_path, fake_env, "gemv", "--mode", "benchmark", output=full_json_output())
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "res.json").read_text())["impls"]["submission"]["cases"][0]["stats"]["runs"] == 200


# ----- the deadlines (docs/spec/upstream/nvidia.yaml), with a fixed clock -------------------------


def test_past_the_deadline_it_refuses_in_one_line_and_sends_nothing(tmp_path, fake_env):
    res = submit(tmp_path, {**fake_env, "NVFP4_NOW": GEMV_CLOSED}, "gemv", "--mode", "test", output=reports_output())
    assert res.returncode == sm.EXIT_CLOSED
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("submit: the nvfp4_gemv leaderboard closed on 2025-11-29 06:59 UTC and refuses")
    assert "nox -s bench -- gemv --runner modal" in lines[0]
    assert not (tmp_path / "argv.json").exists() and not (tmp_path / "sub.py").exists()  # nothing packaged or sent


def test_force_still_sends_past_the_deadline(tmp_path, fake_env):
    res = submit(tmp_path, {**fake_env, "NVFP4_NOW": GEMV_CLOSED}, "gemv", "--mode", "test", "--force",
                 output=reports_output())
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "argv.json").read_text())[:3] == ["submit", "--leaderboard", "nvfp4_gemv"]


def test_each_leaderboard_has_its_upstream_deadline():
    import datetime as dt

    from harness import deadlines as dl

    utc = lambda s: dt.datetime.strptime(s, "%Y-%m-%d %H:%M").replace(tzinfo=dt.UTC)  # noqa: E731
    found = dl.deadlines()
    assert found["nvfp4_gemv"] == utc("2025-11-29 06:59") and found["nvfp4_group_gemm"] == utc("2026-02-21 07:30")
    assert found["nvfp4_dual_gemm"] == found["modal_nvfp4_dual_gemm"] == utc("2026-01-20 07:59")
    for problem in ("gemv", "gemm", "dual_gemm", "group_gemm"):  # every manifest's leaderboard is known
        assert dl.manifest_leaderboard(problem) in found, problem
    assert dl.closed_message("gemm", now=utc("2025-12-21 07:59")) is None
    assert "closed on 2025-12-21 07:59 UTC" in dl.closed_message("gemm", now=utc("2025-12-21 08:00"))
    assert dl.closed_message("dual_gemm", "modal_nvfp4_dual_gemm", now=utc("2026-01-19 00:00")) is None
    assert dl.closed_message("group_gemm", now=utc("2026-02-21 07:31")).startswith("the nvfp4_group_gemm leaderboard")
