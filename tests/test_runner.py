"""`--runner modal` (harness/runner) on the CPU, with no network and without Modal installed:

- the remote function's body (job.run_job) runs here on the CPU and gives the same JSON fields as a
  local run of the evaluator, and the merge of its jobs gives one results file as a local run does;
- the image spec pins the leaderboard lock's versions (fails if they drift from the runner's);
- the working-tree bundle holds an uncommitted edit and none of the excluded folders;
- the merge of several jobs' results, one of them failed, keeps every finished result;
- the error paths are one line each with their exit status: no modal, no credentials (as the client
  decides: tokens, OAuth, profiles), unknown GPU, a timeout naming its job, a remote failure, Ctrl-C;
- the CPU bench subset, the runner's dry run and the packaged submissions never import modal.
What needs the Modal client itself (its exception classes, its objects, a run against a local server
speaking its protocol) is tests/test_runner_modal_client.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from harness.runner import bundle, cli, credentials, image, job, merge, modal_backend
from harness.runner.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_PREREQ, EXIT_TIMEOUT, EXIT_USAGE, RunnerError
from harness.runner.outcomes import Collected, Interrupted, JobError, RemoteApp
from harness.runner.plan import GPUS, Job, Plan, make_plan
from tests.test_eval import run_eval

REPO = Path(__file__).resolve().parent.parent
SMALL_CASES = ["m: 128; k: 256; l: 1; seed: 1111", "m: 256; k: 512; l: 2; seed: 7"]
BLOCK_MODAL = ("import sys\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
               "        if name == 'modal' or name.startswith('modal.'):\n"
               "            raise ImportError('modal is blocked in this test')\n"
               "sys.meta_path.insert(0, Block())\n")


def lock_pins(name: str) -> dict[str, str]:
    return image.lock_pins(f"locks/{name}.txt")


def lock_python(name: str) -> str:
    return re.search(r"^# Python (\d+\.\d+),", (REPO / "locks" / f"{name}.txt").read_text(), flags=re.M).group(1)


# ----- the plan -----------------------------------------------------------------------------------


def test_bench_plan_is_one_job_per_benchmark_case_on_the_gpu():
    plan = make_plan("bench", ["gemm", "--impl", "submission", "reference"], "B200", 600, 2)
    assert len(plan.jobs) == 3 and plan.problem == "gemm"
    for j in plan.jobs:
        argv = list(j.argv)
        assert argv[:4] == ["{python}", "-m", "harness.eval", "gemm"]
        assert argv[argv.index("--device") + 1] == "cuda" and argv[-2:] == ["--json", "{out}"]
        assert argv[argv.index("--impl"):argv.index("--impl") + 3] == ["--impl", "submission", "reference"]
    assert plan.jobs[0].argv[plan.jobs[0].argv.index("--case") + 1] == "m: 128; n: 7168; k: 16384; l: 1; seed: 1111"
    assert plan.gpu_minutes == sum(j.minutes for j in plan.jobs) > 0
    assert plan.cost_usd == pytest.approx(plan.gpu_minutes / 60 * GPUS["B200"].usd_per_hour)
    given = make_plan("bench", ["gemv", "--case", SMALL_CASES[0], "--case", SMALL_CASES[1]], "H100", 600, 2)
    assert [j.argv[j.argv.index("--case") + 1] for j in given.jobs] == SMALL_CASES


def test_b200_plan_splits_the_tier_from_the_problems_and_needs_a_b200():
    plan = make_plan("b200", [], "B200", 1200, 4)
    assert [j.name for j in plan.jobs] == ["sm100 test tier", "b200 gemv", "b200 gemm", "b200 dual_gemm",
                                           "b200 group_gemm"]
    with pytest.raises(RunnerError, match="needs --gpu B200") as e:
        make_plan("b200", [], "H100", 1200, 4)
    assert e.value.status == EXIT_USAGE
    with pytest.raises(RunnerError, match="local checkout"):
        make_plan("b200", ["--reference-kernels", "/tmp/x"], "B200", 1200, 4)
    # the image has the runner's CuTe DSL: a table for another target is measured on a B200 machine
    assert len(make_plan("b200", ["--dsl", "runner"], "B200", 1200, 4).jobs) == 5
    with pytest.raises(RunnerError, match="--dsl runner only; for another, run `nox -s b200 -- --dsl dev`"):
        make_plan("b200", ["--dsl", "dev"], "B200", 1200, 4)


def test_test_plan_is_one_job_per_file_with_gpu_tests():
    plan = make_plan("test", ["-x"], "H200", 1200, 4)
    files = [j.argv[j.argv.index("gpu or sm90 or sm100") + 1] for j in plan.jobs]
    assert "tests/test_sm100_kernels.py" in files and "tests/test_sm90_gemm_kernels.py" in files
    assert "tests/test_nvfp4.py" not in files  # CPU only
    assert all(j.argv[-1] == "-x" for j in plan.jobs)


@pytest.mark.parametrize("argv", [["bench", "gemm", "--gpu", "A100"], ["bench", "gemm", "--gpu", "b200"]])
def test_an_unknown_gpu_is_one_line_and_exit_2(argv, capsys):
    assert cli.main(argv) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"runner: GPU type {argv[-1]!r} is not available: --gpu takes B200, H200, H100"]


def test_dry_run_prints_the_plan_and_the_image_and_sends_nothing(capsys):
    def never(*a):
        raise AssertionError("a dry run must not start anything")

    assert cli.main(["bench", "gemm", "--runner", "modal", "--dry-run"], run_jobs=never) == 0
    out = capsys.readouterr().out
    assert out.startswith("plan: bench on Modal, 3 job(s), one B200 GPU each")
    assert "GPU-minutes x $6.25/GPU-hour" in out and "image: nvidia/cuda:13.1.0-devel-ubuntu24.04" in out
    assert out.rstrip().endswith("dry run: nothing sent")


# ----- the image ----------------------------------------------------------------------------------


def test_image_spec_pins_the_runners_versions_from_the_locks():
    """LEADERBOARD.md section 9: the Modal B200 image is CUDA 13.1 devel on Ubuntu 24.04, Python 3.13,
    torch 2.9.1, CuTe DSL 4.3.5. The spec must say so, and it must say it through the locks."""
    spec = image.image_spec()
    lb = lock_pins("leaderboard")
    assert spec["base"] == "nvidia/cuda:13.1.0-devel-ubuntu24.04"
    assert spec["apt"] == ["g++-13", "gcc-13", "git", "ca-certificates"]  # the Dockerfile's line
    assert "--no-install-recommends" in image.apt_command(spec)
    # the Python Modal gives on the pinned builder, said as such (not the Dockerfile's 3.13.8)
    assert (spec["image_builder"], spec["python_release"]) == ("2026.10", "3.13.17")
    assert "Python 3.13.17 (Modal's add_python on image builder 2026.10;" in image.describe(spec)
    assert spec["python"] == lock_python("leaderboard") == "3.13"
    assert spec["pins"]["torch"].split("+")[0] == lb["torch"].split("+")[0] == "2.9.1"
    assert spec["pins"]["nvidia-cutlass-dsl"] == lb["nvidia-cutlass-dsl"] == "4.3.5"
    assert spec["locks"] == ["locks/leaderboard.txt", "locks/tools.txt"]
    assert spec["pip_options"] == "--require-hashes --no-deps"
    assert {**lock_pins("tools"), **lb} == spec["pins"]  # nothing but the locks' pins
    assert "g++-13" in spec["apt"]


def test_image_spec_follows_a_drifted_lock(tmp_path):
    """The spec has no versions of its own: change the lock and the image changes with it."""
    for rel in ("Dockerfile", "locks/leaderboard.txt", "locks/tools.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    lock = tmp_path / "locks" / "leaderboard.txt"
    lock.write_text(lock.read_text().replace("nvidia-cutlass-dsl==4.3.5", "nvidia-cutlass-dsl==4.4.0"))
    assert image.image_spec(tmp_path)["pins"]["nvidia-cutlass-dsl"] == "4.4.0"


class FakeImage:
    """Records the Modal image calls (modal.Image's builder methods return a new image)."""

    def __init__(self, calls):
        self.calls = calls

    def __getattr__(self, name):
        def method(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return self
        return method


def test_the_modal_image_is_built_from_the_spec(tmp_path):
    calls = []
    fake = types.SimpleNamespace(Image=types.SimpleNamespace(
        from_registry=lambda tag, add_python=None: calls.append(("from_registry", (tag,), {"add_python": add_python}))
        or FakeImage(calls)))
    spec = image.image_spec()
    modal_backend.build_image(fake, spec, tmp_path / "tree.tar.gz")
    assert calls[0] == ("from_registry", ("nvidia/cuda:13.1.0-devel-ubuntu24.04",), {"add_python": "3.13"})
    assert calls[1] == ("run_commands", ("apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                                         "--no-install-recommends g++-13 gcc-13 git ca-certificates "
                                         "&& rm -rf /var/lib/apt/lists/*",), {})
    pip = [c for c in calls if c[0] == "pip_install_from_requirements"]
    assert [Path(c[1][0]).relative_to(REPO).as_posix() for c in pip] == spec["locks"]
    assert all(c[2]["extra_options"] == "--require-hashes --no-deps" for c in pip)
    assert ("add_local_file", (str(tmp_path / "tree.tar.gz"), job.BUNDLE_PATH), {}) in calls


# ----- the bundle ---------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def work_tree(tmp_path):
    repo = tmp_path / "repo"
    (repo / "problems" / "gemv").mkdir(parents=True)
    (repo / "problems" / "gemv" / "submission.py").write_text("def custom_kernel(data):\n    return 1\n")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo.parent, "init", "-q", str(repo))
    git(repo, "add", ".")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    return repo


def test_the_bundle_holds_an_uncommitted_edit_and_none_of_the_excluded_folders(work_tree, tmp_path):
    clean = bundle.provenance(work_tree)
    assert clean.commit and clean.dirty is False and clean.diff_sha256 is None
    (work_tree / "problems" / "gemv" / "submission.py").write_text("def custom_kernel(data):\n    return 2\n")
    (work_tree / "problems" / "gemv" / "new_kernel.py").write_text("X = 1\n")  # untracked, not ignored
    for junk in (".nox/bench/lib/x.py", "results/gemv.json", "dist/gemv/submission.py", ".venv/lib/y.py",
                 "myenv/lib/z.py", "problems/gemv/__pycache__/s.pyc", "run.log"):
        (work_tree / junk).parent.mkdir(parents=True, exist_ok=True)
        (work_tree / junk).write_text("junk\n")
    (work_tree / "myenv" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a venv under any name
    edited = bundle.provenance(work_tree)
    assert edited.commit == clean.commit and edited.dirty is True and len(edited.diff_sha256) == 64

    out = tmp_path / "unpacked"
    bundle.unpack(bundle.pack(work_tree), out)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [".gitignore", "problems/gemv/new_kernel.py", "problems/gemv/submission.py"]
    assert "return 2" in (out / "problems" / "gemv" / "submission.py").read_text()  # the edit, not the commit
    assert bundle.pack(work_tree) == bundle.pack(work_tree)  # same tree, same bytes

    (work_tree / "problems" / "gemv" / "submission.py").write_text("def custom_kernel(data):\n    return 3\n")
    assert bundle.provenance(work_tree).diff_sha256 != edited.diff_sha256  # another edit, another hash


def test_the_repository_bundle_leaves_out_results_and_dist():
    files = {p.as_posix() for p in bundle.tree_files(REPO)}
    assert "harness/runner/job.py" in files and "problems/gemv/submission.py" in files
    assert not any(f.split("/")[0] in ("results", "dist", ".nox", ".git") for f in files)


# ----- the remote body, here on the CPU -----------------------------------------------------------


def local_job(plan: Plan, index: int, timeout_s: int = 600) -> dict:
    """The plan's job as the runner sends it, on this CPU instead of the GPU (--device cpu)."""
    argv = ["cpu" if a == "cuda" else a for a in plan.jobs[index].argv]
    return {"index": index, "name": plan.jobs[index].name, "argv": argv, "timeout_s": timeout_s,
            "commit": "abc123+dirty"}


def keys(doc: dict) -> dict:
    impl = next(iter(doc["impls"].values()))
    return {"top": set(doc) - {"remote"}, "environment": set(doc["environment"]) - {"driver", "diff_sha256", "runner",
                                                                                     "gpu_requested"},
            "impl": set(impl), "case": set(impl["cases"][0]), "stats": set(impl["cases"][0]["stats"])}


def test_the_remote_body_on_the_cpu_gives_a_local_runs_fields_and_merges(tmp_path):
    plan = make_plan("bench", ["gemv", "--case", SMALL_CASES[0], "--case", SMALL_CASES[1]], "B200", 600, 2)
    packed = bundle.pack(REPO)
    results = [job.run_job(local_job(plan, i), packed) for i in range(2)]
    for r in results:
        assert r["rc"] == 0, r["tail"]
        assert r["result"]["environment"]["commit"] == "abc123+dirty"  # the local commit, named remotely

    local = tmp_path / "local.json"
    done = run_eval("gemv", "--mode", "benchmark", "--device", "cpu", "--case", SMALL_CASES[0], "--case",
                    SMALL_CASES[1], "--json", str(local))
    assert done.returncode == 0, done.stderr
    local_doc = json.loads(local.read_text())
    assert keys(results[0]["result"]) == keys(local_doc)

    prov = bundle.Provenance("abc123", True, "f" * 64)
    merged = merge.merge_bench(plan, Collected(results), prov)
    assert keys(merged) == keys(local_doc)
    impl = merged["impls"]["submission"]
    assert [c["case"] for c in impl["cases"]] == [c["case"] for c in local_doc["impls"]["submission"]["cases"]]
    assert impl["check"] == "pass" and impl["score_s"] > 0
    env = merged["environment"]
    assert (env["commit"], env["dirty"], env["diff_sha256"], env["gpu_requested"]) == ("abc123", True, "f" * 64, "B200")
    assert [j["rc"] for j in merged["remote"]["jobs"]] == [0, 0]


def test_the_remote_body_times_out_with_exit_124_and_its_output(tmp_path):
    sleeper = {"index": 0, "name": "sleeper", "timeout_s": 1, "commit": None,
               "argv": ["{python}", "-c", "import time; print('started', flush=True); time.sleep(60)"]}
    r = job.run_job(sleeper, bundle.pack(tmp_path))
    assert (r["rc"], r["timed_out"]) == (EXIT_TIMEOUT, True)
    assert "started" in r["tail"] and "killed after 1 s" in r["tail"] and r["seconds"] < 30


# ----- the merge, one job failed ------------------------------------------------------------------


def bench_doc(case: dict, mean_ns: float, check: str = "pass") -> dict:
    stats = {"runs": 10, "mean": mean_ns, "std": 1.0, "err": 0.5, "best": mean_ns - 1, "worst": mean_ns + 1}
    return {"problem": "gemv", "leaderboard": "nvfp4_gemv", "mode": "benchmark", "data": "leaderboard",
            "date": "2026-11-24T00:00:00+00:00", "ceilings": None,
            "environment": {"device": "NVIDIA B200", "commit": "abc123+dirty", "dirty": None},
            "impls": {"submission": {"check": check, "error": None, "score_s": mean_ns / 1e9,
                                     "cases": [{"case": case, "status": "pass", "error": None, "stats": stats}]}}}


def ok_result(index: int, doc: dict | None, rc: int = 0, tail: str = "done") -> dict:
    return {"index": index, "name": f"job {index}", "rc": rc, "timed_out": False, "seconds": 60.0, "tail": tail,
            "result": doc, "device": {"gpu": "NVIDIA B200", "driver": "580.95.05"}, "host": "modal", "python": "3.13.8"}


TRACEBACK = ('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
             "RuntimeError: CUDA error: out of memory")


def test_a_failed_job_loses_none_of_the_finished_results():
    plan = make_plan("bench", ["gemv"], "B200", 600, 4)
    cases = [{"m": 7168, "k": 16384, "l": 1, "seed": 1111}, {"m": 4096, "k": 7168, "l": 8, "seed": 1111},
             {"m": 7168, "k": 2048, "l": 4, "seed": 1111}]
    results = [ok_result(2, bench_doc(cases[2], 9000.0)), ok_result(1, None, rc=1, tail=TRACEBACK),
               ok_result(0, bench_doc(cases[0], 21000.0))]
    doc = merge.merge_bench(plan, Collected(results), bundle.Provenance("abc123", False, None),
                            sol_b200_us=[1.0, 2.0, 3.0])
    impl = doc["impls"]["submission"]
    assert [c["case"] for c in impl["cases"]] == [cases[0], cases[2]]  # in the plan's order, both kept
    assert [c["sol_b200_us"] for c in impl["cases"]] == [1.0, 3.0]
    assert impl["check"] == "fail" and impl["score_s"] is None  # no score from two cases of three
    assert "1 remote job(s) failed" in impl["error"]
    failed = doc["remote"]["jobs"][1]
    assert failed["rc"] == 1 and failed["error"] == "RuntimeError: CUDA error: out of memory"
    assert doc["environment"]["driver"] == "580.95.05" and doc["environment"]["device"] == "NVIDIA B200"


def test_the_b200_merge_marks_a_failed_problem_and_keeps_the_others():
    plan = make_plan("b200", [], "B200", 1200, 4)
    step = {"rc": 0, "tail": "ok"}
    tier = ok_result(0, {"device": "NVIDIA B200", "date": "x", "tier": step, "readiness": step})
    gemm = ok_result(2, {"device": "NVIDIA B200", "date": "x", "steps": {"gemm": {"stress": step}},
                         "verdicts": {"gemm": {"verdict": "ok", "failed_steps": [], "cases": []}}})
    dual = ok_result(3, None, rc=1, tail=TRACEBACK)
    doc = merge.merge_b200(plan, Collected([tier, gemm, dual]), bundle.Provenance("abc123", False, None))
    assert doc["verdicts"]["gemm"]["verdict"] == "ok" and doc["steps"]["gemm"]["sm100_tier"] == step
    assert doc["verdicts"]["dual_gemm"]["verdict"] == "fail"
    assert "CUDA error" in doc["verdicts"]["dual_gemm"]["failed_steps"][0]
    assert doc["verdicts"]["gemv"]["verdict"] == "fail"  # its job never came back
    assert doc["remote"]["jobs"][1]["error"] == "no result came back"


def test_the_test_merge_reads_pytests_summary():
    plan = Plan("test", "B200", [Job("pytest a", ("{python}", "-m", "pytest", "-m", "gpu or sm90 or sm100",
                                                   "tests/test_a.py"), "test file"),
                                 Job("pytest b", ("{python}", "-m", "pytest", "-m", "gpu or sm90 or sm100",
                                                   "tests/test_b.py"), "test file")], 600, 2)
    results = [ok_result(0, None, tail="...\n12 passed, 3 skipped in 40.1s\n"),
               ok_result(1, None, rc=1, tail="E  assert 1 == 2\n1 failed, 5 passed in 9.0s\n")]
    doc = merge.merge_tests(plan, Collected(results), bundle.Provenance("abc123", False, None))
    assert [(f["file"], f["rc"], f["summary"]) for f in doc["files"]] == [
        ("tests/test_a.py", 0, "12 passed, 3 skipped in 40.1s"), ("tests/test_b.py", 1, "1 failed, 5 passed in 9.0s")]
    assert doc["passed"] is False


# ----- the command's error paths, through cli.main ------------------------------------------------


def run_main(argv: list[str], outcomes: list, capsys, monkeypatch, tmp_path) -> tuple[int, str, str, dict | None]:
    monkeypatch.setattr(cli, "REPO", tmp_path)  # results/ of this test, not the repository's
    monkeypatch.setattr(cli, "LOCAL_RESULTS", tmp_path / "results" / "local")
    monkeypatch.setattr(cli.bundle, "pack", lambda repo: b"packed")
    monkeypatch.setattr(cli.bundle, "tree_files", lambda repo: [])
    status = cli.main(argv, run_jobs=lambda plan, spec, path, jobs: iter(outcomes))
    out, err = capsys.readouterr()
    written = sorted((tmp_path / "results" / "local").glob("*.json"))
    return status, out, err, json.loads(written[0].read_text()) if written else None


def test_a_remote_failure_is_one_line_with_the_traceback_tail_and_exit_code(capsys, monkeypatch, tmp_path):
    case = {"m": 128, "k": 256, "l": 1, "seed": 1111}
    outcomes = [ok_result(0, bench_doc(case, 5000.0)), ok_result(1, None, rc=3, tail=TRACEBACK)]
    argv = ["bench", "gemv", "--case", SMALL_CASES[0], "--case", SMALL_CASES[1]]
    status, out, err, doc = run_main(argv, outcomes, capsys, monkeypatch, tmp_path)
    assert status == 3
    assert "runner: gemv [m: 256; k: 512; l: 2; seed: 7]: remote exit 3: RuntimeError: CUDA error: out of memory" in err
    assert re.search(r"^\[1/2\] gemv \[m: 128; k: 256; l: 1; seed: 1111\]: ok \(60 s on NVIDIA B200\)$", err, re.M)
    assert re.search(r"^\[2/2\] gemv \[m: 256.*\]: FAILED, exit 3 \(60 s on NVIDIA B200\): RuntimeError: CUDA error",
                     err, re.M)
    assert len(doc["impls"]["submission"]["cases"]) == 1  # the finished job's result is in results/


def test_a_timeout_is_exit_124(capsys, monkeypatch, tmp_path):
    timed_out = {**ok_result(0, None, rc=EXIT_TIMEOUT, tail="...\n(killed after 600 s: the job's --timeout)"),
                 "timed_out": True}
    status, _, err, doc = run_main(["bench", "gemv", "--case", SMALL_CASES[0]], [timed_out], capsys, monkeypatch,
                                   tmp_path)
    assert status == EXIT_TIMEOUT and ": TIMEOUT, exit 124 (60 s on NVIDIA B200)" in err
    assert doc["remote"]["jobs"][0]["timed_out"] is True


def test_a_job_modal_raised_for_is_named_and_keeps_its_exit_status(capsys, monkeypatch, tmp_path):
    """A timeout Modal raised for one job (its container outlived Modal's limit) exits 124, not 1, and the
    line names that job; the other job's result is kept."""
    case = {"m": 128, "k": 256, "l": 1, "seed": 1111}
    timeout = RunnerError("timeout: ran past Modal's limit of 720 s (Function timed out)", EXIT_TIMEOUT)
    outcomes = [ok_result(0, bench_doc(case, 5000.0)), JobError(1, timeout)]
    argv = ["bench", "gemv", "--case", SMALL_CASES[0], "--case", SMALL_CASES[1]]
    status, _, err, doc = run_main(argv, outcomes, capsys, monkeypatch, tmp_path)
    assert status == EXIT_TIMEOUT
    assert "[2/2] gemv [m: 256; k: 512; l: 2; seed: 7]: TIMEOUT, exit 124: timeout: ran past Modal's limit" in err
    assert len(doc["impls"]["submission"]["cases"]) == 1
    assert doc["remote"]["jobs"][1] == {"name": "gemv [m: 256; k: 512; l: 2; seed: 7]", "rc": EXIT_TIMEOUT,
                                        "timed_out": True, "error": str(timeout)}


def test_the_results_file_records_the_modal_app(capsys, monkeypatch, tmp_path):
    case = {"m": 128, "k": 256, "l": 1, "seed": 1111}
    outcomes = [RemoteApp("ap-123", "https://modal.com/apps/ws/main/ap-123"), ok_result(0, bench_doc(case, 5e3))]
    status, _, err, doc = run_main(["bench", "gemv", "--case", SMALL_CASES[0]], outcomes, capsys, monkeypatch, tmp_path)
    assert status == 0 and "Modal app ap-123: https://modal.com/apps/ws/main/ap-123" in err
    assert doc["remote"]["modal_app"] == {"app_id": "ap-123", "url": "https://modal.com/apps/ws/main/ap-123"}
    assert doc["remote"]["interrupted"] is False


def interrupted_between_jobs(*_):
    """A backend run interrupted by Ctrl-C while the consumer held the first job's result."""
    case = {"m": 128, "k": 256, "l": 1, "seed": 1111}
    yield ok_result(0, bench_doc(case, 5000.0))
    raise KeyboardInterrupt


@pytest.mark.parametrize("where", ["in the backend", "between two outcomes"])
def test_ctrl_c_marks_the_run_interrupted_and_exits_130(where, capsys, monkeypatch, tmp_path):
    """Modal's app runner swallows Ctrl-C: the backend reports Interrupted instead; one that comes while the
    command line holds an outcome is caught there. Either way no partial run passes for a finished one."""
    case = {"m": 128, "k": 256, "l": 1, "seed": 1111}
    argv = ["bench", "gemv", "--case", SMALL_CASES[0], "--case", SMALL_CASES[1]]
    if where == "in the backend":
        status, _, err, doc = run_main(argv, [ok_result(0, bench_doc(case, 5e3)), Interrupted()], capsys, monkeypatch,
                                       tmp_path)
    else:
        monkeypatch.setattr(cli, "REPO", tmp_path)
        monkeypatch.setattr(cli, "LOCAL_RESULTS", tmp_path / "results" / "local")
        monkeypatch.setattr(cli.bundle, "pack", lambda repo: b"packed")
        monkeypatch.setattr(cli.bundle, "tree_files", lambda repo: [])
        status = cli.main(argv, run_jobs=interrupted_between_jobs)
        err = capsys.readouterr().err
        doc = json.loads(next((tmp_path / "results" / "local").glob("*.json")).read_text())
    assert status == EXIT_INTERRUPTED
    assert "runner: interrupted (Ctrl-C): 1 of 2 jobs came back" in err
    assert doc["remote"]["interrupted"] is True
    assert doc["remote"]["jobs"][1]["error"] == "interrupted before it finished"
    assert doc["impls"]["submission"]["check"] == "fail"  # no score from one case of two


def test_ctrl_c_before_anything_was_sent_is_one_line_and_exit_130(capsys, monkeypatch, tmp_path):
    """Ctrl-C while the working tree is packed (the first second or two): one line, no traceback, no file."""
    def interrupted(repo):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "LOCAL_RESULTS", tmp_path / "results" / "local")
    monkeypatch.setattr(cli.bundle, "pack", interrupted)
    sent = []
    status = cli.main(["bench", "gemv", "--case", SMALL_CASES[0]], run_jobs=lambda *a: sent.append(a) or [])
    err = capsys.readouterr().err
    assert status == EXIT_INTERRUPTED and sent == []
    assert err.strip().splitlines()[-1] == "runner: interrupted (Ctrl-C) before anything was sent; nothing written"
    assert not (tmp_path / "results").exists()


def test_a_timeout_past_modals_24_hours_is_refused_before_anything_starts(capsys):
    assert cli.main(["bench", "gemv", "--timeout", "86281", "--dry-run"]) == EXIT_USAGE
    assert capsys.readouterr().err.strip().splitlines() == [
        "runner: --timeout: at most 86280 s (Modal's limit of 24 h less the 120 s a job needs to start), got 86281"]
    assert make_plan("bench", ["gemv"], "B200", 86280, 4).timeout_s == 86280


def pytest_tail(summary: str, *skips: str) -> str:
    return "".join(f"SKIPPED [1] tests/test_a.py:{i}: {reason}\n" for i, reason in enumerate(skips)) + summary


@pytest.mark.parametrize(("tail", "failure"), [
    (pytest_tail("12 passed, 3 skipped in 4.0s\n", "needs a Hopper sm_90 GPU (have (10, 0))"), None),
    (pytest_tail("3 skipped in 1.0s\n", *["needs a Hopper sm_90 GPU (have (10, 0))"] * 3), None),
    (pytest_tail("4 skipped in 1.0s\n", "no CUDA device (torch.cuda.is_available() is False)",
                 "needs a Blackwell sm_100 GPU (have none)"),
     "every test skipped: no CUDA device (torch.cuda.is_available() is False)"),
    ("2 skipped in 1.0s\n", "every test skipped: no reason shown"),
])
def test_a_gpu_test_file_in_which_every_test_skipped_is_not_a_pass(tail, failure, capsys, monkeypatch, tmp_path):
    """On a GPU, a file whose tests all skipped passes only where each skip names another GPU architecture:
    CUDA unusable in the container skips every test, and that is a failure, not success."""
    assert merge.gpu_test_file_failure(0, tail) == failure
    argv = ["test", "tests/test_sm100_kernels.py"]
    status, out, _, doc = run_main(argv, [ok_result(0, None, tail=tail)], capsys, monkeypatch, tmp_path)
    assert doc["passed"] is (failure is None) and status == (0 if failure is None else EXIT_FAILED)
    if failure:
        assert f"FAILED: {failure}" in out


def test_without_modal_it_says_how_to_install_it(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "modal", None)  # `import modal` raises ImportError
    assert cli.main(["bench", "gemm"]) == EXIT_PREREQ
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("runner: modal is not installed: pip install --require-hashes")
    assert "locks/modal.txt" in err[0]


def no_modal_settings(monkeypatch, config: Path) -> None:
    for var in [v for v in list(__import__("os").environ) if v.startswith("MODAL_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(config))


def test_without_credentials_it_says_modal_token_new(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "modal", types.ModuleType("modal"))  # installed, never called
    no_modal_settings(monkeypatch, tmp_path / "none.toml")
    assert cli.main(["b200", "--runner", "modal"]) == EXIT_PREREQ
    assert capsys.readouterr().err.strip().splitlines() == [f"runner: {credentials.TOKEN_HINT}"]


PROFILES = {"work": 'token_id = "ak-1"\ntoken_secret = "as-2"\n', "home": 'token_id = "ak-3"\ntoken_secret = "as-4"\n'}
OAUTH_ENV = {"MODAL_OAUTH_REFRESH_TOKEN": "rt", "MODAL_OAUTH_CLIENT_ID": "ci", "MODAL_OAUTH_CLIENT_SECRET": "ov-s"}
# (case, config file text or None, environment, the problem's start or None): what the client accepts
CREDENTIAL_CASES = [
    ("no config, no variables", None, {}, "not authenticated with Modal"),
    ("token variables", None, {"MODAL_TOKEN_ID": "ak-1", "MODAL_TOKEN_SECRET": "as-2"}, None),
    ("one token variable", None, {"MODAL_TOKEN_ID": "ak-1"}, "not authenticated with Modal"),
    ("OAuth variables", None, OAUTH_ENV, None),
    ("OAuth with a JWT key", None, {**OAUTH_ENV, "MODAL_OAUTH_CLIENT_SECRET": "", "MODAL_OAUTH_JWT_KEY": "k"}, None),
    ("OAuth without its client id", None, {**OAUTH_ENV, "MODAL_OAUTH_CLIENT_ID": ""}, "incomplete Modal OAuth"),
    ("OAuth with both secrets", None, {**OAUTH_ENV, "MODAL_OAUTH_JWT_KEY": "k"}, "incomplete Modal OAuth"),
    ("OAuth keys in the config", '[default]\noauth_refresh_token = "rt"\noauth_client_id = "ci"\n'
                                 'oauth_client_secret = "ov-s"\n', {}, None),
    ("OAuth beside a token", "[default]\n" + PROFILES["work"], OAUTH_ENV, "both a Modal token and OAuth"),
    ("one profile, not marked active", "[work]\n" + PROFILES["work"], {}, "not authenticated with Modal"),
    ("the default profile", "[default]\n" + PROFILES["work"], {}, None),
    ("the active one of two", "[work]\n" + PROFILES["work"] + "active = true\n[home]\n" + PROFILES["home"], {}, None),
    ("two profiles, none active", "[work]\n" + PROFILES["work"] + "[home]\n" + PROFILES["home"], {},
     "no Modal profile is active"),
    ("two profiles, MODAL_PROFILE", "[work]\n" + PROFILES["work"] + "[home]\n" + PROFILES["home"],
     {"MODAL_PROFILE": "home"}, None),
    ("two active profiles", "[work]\n" + PROFILES["work"] + "active = true\n[home]\n" + PROFILES["home"]
     + "active = true\n", {}, "more than one Modal profile is active"),
    ("MODAL_PROFILE not in the file", "[work]\n" + PROFILES["work"], {"MODAL_PROFILE": "gone"},
     "Modal profile 'gone' (MODAL_PROFILE) is not in"),
    ("an empty variable wins over the file", "[default]\n" + PROFILES["work"], {"MODAL_TOKEN_SECRET": ""},
     "not authenticated with Modal"),
]


@pytest.mark.parametrize(("case", "config", "env", "want"), CREDENTIAL_CASES, ids=[c[0] for c in CREDENTIAL_CASES])
def test_the_credential_check_decides_as_modals_client(case, config, env, want, tmp_path):
    """tests/test_runner_modal_client.py runs every case through the installed client as well."""
    path = tmp_path / "modal.toml"
    if config is not None:
        path.write_text(config)
    got = credentials.problem({**env, "MODAL_CONFIG_PATH": str(path)})
    assert (got is None) if want is None else (got or "").startswith(want), got


# ----- modal stays optional -----------------------------------------------------------------------


def test_the_cpu_paths_and_the_dry_run_never_import_modal():
    code = BLOCK_MODAL + (
        "import harness.eval, harness.package, harness.submit, harness.runner.cli as cli\n"
        "assert cli.main(['bench', 'gemv', '--dry-run']) == 0\n"
        "assert cli.main(['b200', '--dry-run']) == 0\n"
        "assert 'modal' not in sys.modules\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr


def test_the_packaged_submissions_never_import_modal_or_the_runner(tmp_path):
    from harness import package as pk

    for problem in ("gemv", "group_gemm"):
        path, _ = pk.write(problem, tmp_path / f"{problem}.py")
        text = path.read_text()
        assert not re.search(r"^\s*(import modal|from modal)", text, flags=re.M), problem
        assert "harness.runner" not in text and not re.search(r"^\s*(import|from) harness", text, flags=re.M), problem
    assert "modal" not in pk.leaderboard_modules()


def test_modal_is_an_optional_extra_with_its_own_lock():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not any(r.startswith("modal") for r in project["dependencies"] + project["optional-dependencies"]["dev"])
    assert any(r.startswith("modal") for r in project["optional-dependencies"]["modal"])
    assert "modal" in lock_pins("modal")
    # bounded above: a client release may remove what this one only deprecates (wrap_returned_exceptions did)
    from packaging.requirements import Requirement

    (extra,) = [Requirement(r) for r in project["optional-dependencies"]["modal"]]
    pinned = lock_pins("modal")["modal"]
    assert extra.specifier.contains(pinned), (str(extra), pinned)
    major, minor = (int(x) for x in pinned.split(".")[:2])
    assert not extra.specifier.contains(f"{major}.{minor + 1}.0"), f"{extra} lets the next minor release in"
    for other in ("dev", "gpu", "leaderboard", "tools", "runner-dsl", "ci"):
        assert "modal" not in lock_pins(other), other
    noxfile = (REPO / "noxfile.py").read_text()
    cpu_subset = re.search(r"EVAL_CPU_PACKAGES = \[(.*?)\]", noxfile, flags=re.S).group(1)
    assert "modal" not in cpu_subset


def test_ctrl_c_is_not_held_up_by_a_call_that_ignores_its_cancellation():
    """The Modal client's call.get keeps polling on its own loop after a cancel: Ctrl-C while one job is
    still out waits for it only CANCEL_WAIT_S (it waited forever: the client hung after Ctrl-C in CI)."""
    async def quick():
        return "done"

    async def stubborn():
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue

    calls = {0: types.SimpleNamespace(get=types.SimpleNamespace(aio=quick)),
             1: types.SimpleNamespace(get=types.SimpleNamespace(aio=stubborn))}
    order = modal_backend.completion_order(calls)
    assert next(order) == (0, "done")
    raised = []

    def interrupt():
        try:
            order.throw(KeyboardInterrupt)
        except KeyboardInterrupt:
            raised.append(True)

    worker = threading.Thread(target=interrupt, daemon=True)
    worker.start()
    worker.join(modal_backend.CANCEL_WAIT_S + 20)
    assert raised == [True], "Ctrl-C waited on the cancelled call"
