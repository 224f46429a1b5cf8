"""scripts/official_eval.py (our packaged submissions through gpu-mode/reference-kernels' own eval files,
their ref_kernel swapped for our exact decode) and the scratch-dir setup the B200 session (harness/b200)
runs through it.

A tiny fake reference-kernels tree (made in tmp_path) stands in for theirs: its ref_kernel raises, as
torch._scaled_mm on FP4 does anywhere but on a B200, and its eval files run on the CPU. One test reads
the real tree from the local mirror of gpu-mode/reference-kernels (skipped where there is none).
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

from harness.b200 import steps as b200_steps
from scripts import official_eval as oe

ROOT = Path(__file__).resolve().parent.parent
MIRROR = Path("/work/.mirror/gpu-mode+reference-kernels/repo")

FAKE_UTILS = '''\
import torch


def set_seed(seed=42):
    torch.manual_seed(seed)


def make_match_reference(reference, **kwargs):
    def wrapped(data, output):
        expected = reference(data)
        if not torch.allclose(output.float(), expected.float(), **kwargs):
            return False, "mismatch found! custom implementation doesn't match reference"
        return True, ""

    return wrapped


def clear_l2_cache_large():
    pass
'''

# The problem's own utils.py, which task.yml does not use (as in the real nvfp4_gemm): it lacks
# clear_l2_cache_large, so an eval that imported it would fail.
FAKE_PROBLEM_UTILS = '''\
def set_seed(seed=42):
    pass
'''

FAKE_TASK_PY = '''\
from typing import TypeVar

input_t = TypeVar("input_t")
output_t = TypeVar("output_t")
'''

# Their reference.py, CPU-only: generate_input draws our leaderboard tuple on the CPU (theirs allocates
# on cuda); ref_kernel fails as their torch._scaled_mm on FP4 does on anything but sm_100.
FAKE_REFERENCE = f'''\
import sys

import torch
from task import input_t, output_t
from utils import make_match_reference

sys.path.insert(1, {str(ROOT)!r})  # the fake's inputs come from our generator, on the CPU
from problems.gemm.reference import generate_input as _our_generate_input


def ref_kernel(data):
    raise RuntimeError("fake torch._scaled_mm: FP4 operands need sm_100")


def generate_input(m, n, k, l, seed):
    return _our_generate_input(m, n, k, l, seed, device="cpu")


check_implementation = make_match_reference(ref_kernel, rtol=1e-03, atol=1e-03)
'''

# Their eval file, cut down to what the runner relies on: `python eval.py MODE CASES` in the scratch
# dir, key: value lines to POPCORN_FD, POPCORN_SEED combined into each case's seed, exit 0 / 112.
# FAKE_EVAL_SABOTAGE=1 perturbs the submission's output, so that their check must fail.
FAKE_EVAL = '''\
import os
import sys

import torch

from utils import set_seed, {utils_name}
from reference import check_implementation, generate_input


def cases(path):
    out = []
    for line in open(path).read().splitlines():
        args = {{}}
        for part in line.split(";"):
            key, value = part.split(":")
            args[key.strip()] = int(value)
        out.append((line, args))
    return out


def clone(data):
    return tuple(x.clone() if isinstance(x, torch.Tensor) else x for x in data)


def main():
    fd = os.getenv("POPCORN_FD")
    if not fd:
        return 111
    mode, path = sys.argv[1], sys.argv[2]
    seed = os.getenv("POPCORN_SEED")
    set_seed(int(seed) if seed else 42)
    from submission import custom_kernel

    out = os.fdopen(int(fd), "w")

    def log(key, value):
        print(f"{{key}}: {{value}}", file=out, flush=True)

    kind = "test" if mode == "test" else "benchmark"
    tests = cases(path)
    log(f"{{kind}}-count", len(tests))
    passed = True
    for i, (spec, args) in enumerate(tests):
        if seed:
            a, b = args["seed"], int(seed)
            args["seed"] = a + (a + b) * (a + b + 1) // 2
        log(f"{{kind}}.{{i}}.spec", spec)
        data = generate_input(**args)
        output = custom_kernel(clone(data))
        if os.getenv("FAKE_EVAL_SABOTAGE"):
            output = output + 1
        good, message = check_implementation(data, output)
        passed = passed and good
        if not good:
            log(f"{{kind}}.{{i}}.status", "fail")
            log(f"{{kind}}.{{i}}.error", message)
        elif kind == "test":
            log(f"{{kind}}.{{i}}.status", "pass")
        else:
            for field, value in (("runs", 3), ("mean", 1500.0 * (i + 1)), ("std", 1.0), ("err", 0.5)):
                log(f"{{kind}}.{{i}}.{{field}}", value)
    log("check", "pass" if passed else "fail")
    return 0 if passed else 112


if __name__ == "__main__":
    sys.exit(main())
'''

FAKE_TASK_YML = '''\
files:
  - {"name": "submission.py", "source": "@SUBMISSION@"}
  - {"name": "task.py", "source": "task.py"}
  - {"name": "utils.py", "source": "../utils.py"}
  - {"name": "reference.py", "source": "reference.py"}
  - {"name": "eval.py", "source": "../eval_better_bench.py"}
tests:
  - {"m": 128, "n": 256, "k": 256, "l": 1, "seed": 1111}
  - {"m": 128, "n": 128, "k": 512, "l": 1, "seed": 7}
benchmarks:
  - {"m": 128, "n": 256, "k": 256, "l": 1, "seed": 1111}
ranking_by: "geom"
'''


@pytest.fixture
def fake_tree(tmp_path) -> Path:
    """A reference-kernels checkout with problems/nvidia/{eval.py, eval_better_bench.py, utils.py} and
    nvfp4_gemm/{task.yml, task.py, reference.py, utils.py, submission.py}."""
    nvidia = tmp_path / "refk" / "problems" / "nvidia"
    gemm = nvidia / "nvfp4_gemm"
    gemm.mkdir(parents=True)
    (nvidia / "utils.py").write_text(FAKE_UTILS)
    (nvidia / "eval.py").write_text(FAKE_EVAL.format(utils_name="make_match_reference"))
    (nvidia / "eval_better_bench.py").write_text(FAKE_EVAL.format(utils_name="clear_l2_cache_large"))
    (gemm / "task.yml").write_text(FAKE_TASK_YML)
    (gemm / "task.py").write_text(FAKE_TASK_PY)
    (gemm / "reference.py").write_text(FAKE_REFERENCE)
    (gemm / "utils.py").write_text(FAKE_PROBLEM_UTILS)
    (gemm / "submission.py").write_text("raise RuntimeError('their sample submission must not be used')\n")
    return tmp_path / "refk"


def test_b200_reference_eval_runs_their_eval_from_the_scratch_dir(fake_tree, tmp_path):
    """The B200 step (their ref_kernel kept) gets as far as their check: the eval imported reference.py,
    task.yml's utils.py and our submission from the scratch dir. On the CPU their ref_kernel then
    fails, as it does on any GPU but a B200."""
    result = b200_steps.reference_eval("gemm", fake_tree, tmp_path / "work")
    assert result["popcorn"].get("benchmark-count") == "1", result["tail"]
    assert "fake torch._scaled_mm" in result["tail"]
    assert result["rc"] != 0


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -c CODE` in the scratch dir, as their eval imports its modules: from its working directory,
    in a fresh interpreter (their module names, reference / utils / task, stay out of this one)."""
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_scratch_dir_holds_their_files_our_submission_and_the_swap(fake_tree, tmp_path):
    scratch = oe.prepare_scratch("gemm", fake_tree, tmp_path / "work", exact_reference=True)
    nvidia = fake_tree / "problems" / "nvidia"
    assert sorted(p.name for p in scratch.dir.iterdir()) == sorted(
        ["eval.py", "utils.py", "task.py", "reference.py", "submission.py", "tests.txt", "benchmarks.txt"])
    # Their files, byte for byte, from where task.yml says (utils.py and eval.py from the parent folder).
    assert (scratch.dir / "eval.py").read_bytes() == (nvidia / "eval_better_bench.py").read_bytes()
    assert (scratch.dir / "utils.py").read_bytes() == (nvidia / "utils.py").read_bytes()
    assert (scratch.dir / "task.py").read_bytes() == (nvidia / "nvfp4_gemm" / "task.py").read_bytes()
    assert not any(p.is_symlink() for p in scratch.dir.iterdir())
    assert scratch.eval_source == "../eval_better_bench.py"
    # reference.py: theirs unchanged, then the appended block, which re-runs their derived line.
    theirs = (nvidia / "nvfp4_gemm" / "reference.py").read_text()
    ours = (scratch.dir / "reference.py").read_text()
    assert ours.startswith(theirs)
    block = ours[len(theirs):]
    assert "from problems.gemm.reference import ref_kernel" in block
    assert "check_implementation = make_match_reference(ref_kernel, rtol=1e-03, atol=1e-03)" in block
    assert "Replaced: ref_kernel, and nothing else" in block
    # Our packaged single file (the leaderboard's header, the bundle), not their sample submission.
    submission = (scratch.dir / "submission.py").read_text()
    assert submission.startswith("#!POPCORN leaderboard nvfp4_gemm")
    assert "_BUNDLE_SOURCES" in submission
    # The cases, one `key: value; ...` line per task.yml entry.
    assert (scratch.dir / "tests.txt").read_text() == (
        "m: 128; n: 256; k: 256; l: 1; seed: 1111\nm: 128; n: 128; k: 512; l: 1; seed: 7\n")
    assert (scratch.dir / "benchmarks.txt").read_text() == "m: 128; n: 256; k: 256; l: 1; seed: 1111\n"
    # Without the swap reference.py is their file as it is.
    plain = oe.prepare_scratch("gemm", fake_tree, tmp_path / "plain", exact_reference=False)
    assert (plain.dir / "reference.py").read_text() == theirs


def test_the_swap_rebinds_ref_kernel_and_their_check_on_the_cpu(fake_tree, tmp_path):
    """Their check_implementation, rebuilt by the appended block, calls our ref_kernel: it passes a correct
    output and fails a wrong one on the CPU, where their ref_kernel cannot run."""
    code = """
import torch, reference, utils
from problems.gemm import reference as ours
assert reference.ref_kernel is ours.ref_kernel
data = reference.generate_input(m=128, n=256, k=256, l=1, seed=5)
clone = lambda d: tuple(x.clone() for x in d)
good = ours.ref_kernel(clone(data)).clone()
print(reference.check_implementation(clone(data), good)[0], reference.check_implementation(clone(data), good + 1)[0])
"""
    swapped = oe.prepare_scratch("gemm", fake_tree, tmp_path / "swapped", exact_reference=True)
    done = run_python(code, swapped.dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
    # The control: their file alone binds their ref_kernel, which fails here.
    plain = oe.prepare_scratch("gemm", fake_tree, tmp_path / "plain", exact_reference=False)
    done = run_python(code.replace("assert reference.ref_kernel is ours.ref_kernel", ""), plain.dir)
    assert done.returncode != 0 and "fake torch._scaled_mm" in done.stderr


def test_parse_popcorn_splits_at_the_first_colon():
    text = "test-count: 2\ntest.0.spec: m: 128; k: 256\n test.0.status : pass \nno colon here\ncheck: pass\n"
    assert oe.parse_popcorn(text) == {"test-count": "2", "test.0.spec": "m: 128; k: 256",
                                      "test.0.status": "pass", "check": "pass"}


def test_summarize_counts_cases_and_needs_rc_0_and_check_pass():
    lines = {"benchmark-count": "2", "benchmark.0.mean": "1500.0", "benchmark.1.mean": "4000.0", "check": "pass"}
    assert oe.summarize("benchmark", lines, 0, False) == {
        "passed": True, "checked": 2, "total": 2, "means_us": [1.5, 4.0], "errors": []}
    # Their leaderboard mode exits 0 with a failed case: `check` decides.
    failed = {"benchmark-count": "2", "benchmark.0.mean": "1500.0", "benchmark.1.status": "fail",
              "benchmark.1.error": "mismatch found!", "check": "fail"}
    s = oe.summarize("leaderboard", failed, 0, False)
    assert (s["passed"], s["checked"], s["means_us"], s["errors"]) == (
        False, 1, [1.5, None], ["benchmark.1.error: mismatch found!"])
    tests = {"test-count": "2", "test.0.status": "pass", "test.1.status": "pass", "check": "pass"}
    assert oe.summarize("test", tests, 0, False)["passed"]
    assert not oe.summarize("test", tests, 1, False)["passed"]  # a crash after the last line
    assert not oe.summarize("test", tests, 0, True)["passed"]  # killed at the time limit
    assert not oe.summarize("test", {"check": "pass"}, 0, False)["passed"]  # no cases at all


def test_a_run_through_the_fake_eval_passes_with_our_reference(fake_tree, tmp_path):
    scratch = oe.prepare_scratch("gemm", fake_tree, tmp_path / "work", exact_reference=True)
    result = oe.run_eval(scratch, "test", timeout=300)
    assert result["passed"], result["tail"]
    assert (result["rc"], result["checked"], result["total"]) == (0, 2, 2)
    assert result["popcorn"]["test.1.spec"] == "m: 128; n: 128; k: 512; l: 1; seed: 7"
    bench = oe.run_eval(scratch, "benchmark", timeout=300, seed=12345)
    assert bench["passed"] and bench["means_us"] == [1.5], bench["tail"]


def test_a_failing_check_is_reported_as_a_failure(fake_tree, tmp_path, monkeypatch):
    scratch = oe.prepare_scratch("gemm", fake_tree, tmp_path / "work", exact_reference=True)
    monkeypatch.setenv("FAKE_EVAL_SABOTAGE", "1")
    result = oe.run_eval(scratch, "test", timeout=300)
    assert not result["passed"]
    assert (result["rc"], result["checked"], result["popcorn"]["check"]) == (112, 0, "fail")
    assert result["errors"] and "mismatch found" in result["errors"][0]


def test_a_crash_and_a_timeout_are_failures(fake_tree, tmp_path):
    scratch = oe.prepare_scratch("gemm", fake_tree, tmp_path / "work", exact_reference=False)
    crashed = oe.run_eval(scratch, "test", timeout=300)  # their ref_kernel raises on the CPU
    assert not crashed["passed"] and crashed["rc"] != 0 and "fake torch._scaled_mm" in crashed["tail"]
    (scratch.dir / "eval.py").write_text("import time\ntime.sleep(60)\n")
    slow = oe.run_eval(scratch, "test", timeout=2)
    assert slow["timed_out"] and not slow["passed"] and slow["seconds"] < 30


def test_main_writes_the_table_and_the_json(fake_tree, tmp_path, capsys, monkeypatch):
    """Relative paths as on the GPU machine (`--reference-kernels .refk`), the REVISION file beside the tree."""
    (fake_tree / "REVISION").write_text("f83cb92a\n")
    out = tmp_path / "report.json"
    monkeypatch.chdir(fake_tree.parent)
    rc = oe.main(["gemm", "--reference-kernels", fake_tree.name, "--work", "work", "--json", "report.json",
                  "--seed", "7"])
    assert rc == 0
    table = capsys.readouterr().out.strip().splitlines()[-3:-1]
    assert table[0].split()[:4] == ["gemm", "test", "pass", "2/2"]
    assert table[1].split() == ["gemm", "benchmark", "pass", "1/1", "1.50", "1.50"]
    report = json.loads(out.read_text())
    assert report["seed"] == 7 and report["reference_kernels"]["revision"] == "f83cb92a"
    assert report["reference_kernels"]["dir"] == str(fake_tree)
    assert report["modes"] == ["test", "benchmark"]
    entry = report["problems"]["gemm"]
    assert entry["eval_file"] == "../eval_better_bench.py" and entry["reference"] == "ours (exact decode)"
    assert entry["runs"]["test"]["popcorn"]["check"] == "pass"
    assert {"device", "torch", "commit"} <= set(report["environment"])


def test_main_refuses_a_folder_without_problems_nvidia(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        oe.main(["--reference-kernels", str(tmp_path)])
    assert e.value.code == 2
    assert "expected a directory holding problems/nvidia" in capsys.readouterr().err


@pytest.fixture(scope="module")
def real_scratch(tmp_path_factory) -> dict:
    """Their real problems/nvidia (git archive of the mirror) and one exact-reference scratch dir per problem."""
    if not MIRROR.is_dir():
        pytest.skip(f"no local mirror of gpu-mode/reference-kernels at {MIRROR}")
    base = tmp_path_factory.mktemp("refk")
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", "HEAD", "problems/nvidia"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    return {p: oe.prepare_scratch(p, base, base / "work", exact_reference=True) for p in oe.PROBLEMS}


# Their check with our ref_kernel bound, on their generate_input's data: right output passes, wrong fails.
# Run in a copy of the scratch dir whose reference.py allocates on "cpu" where theirs says "cuda".
THEIR_CHECK_ON_THE_CPU = """
import sys, torch, reference
from problems.{problem} import reference as ours
assert reference.ref_kernel is ours.ref_kernel
assert ours.ref_kernel in [c.cell_contents for c in reference.check_implementation.__closure__]

def clone(d):
    if isinstance(d, (list, tuple)):
        return type(d)(clone(x) for x in d)
    return d.clone() if isinstance(d, torch.Tensor) else d

data = reference.generate_input(**{case})
good = clone(ours.ref_kernel(clone(data)))
wrong = [c + 0.5 for c in good] if isinstance(good, list) else good + 0.5
print(reference.check_implementation(clone(data), good)[0], reference.check_implementation(clone(data), wrong)[0])
"""
SMALL_CASES = {"gemv": dict(m=128, k=256, l=2, seed=1111), "gemm": dict(m=128, n=256, k=256, l=1, seed=1111),
               "dual_gemm": dict(m=256, n=256, k=256, l=1, seed=1111),
               "group_gemm": dict(m=(96, 72), n=(128, 256), k=(256, 512), g=2, seed=1111)}


@pytest.mark.parametrize("problem", oe.PROBLEMS)
def test_the_real_tree_their_check_runs_with_our_ref_kernel(real_scratch, problem, tmp_path):
    """Per problem: the eval file task.yml names is the one our manifest expects; the scratch reference.py
    imports on the CPU with ref_kernel and check_implementation bound to ours; and, in a copy whose
    reference.py allocates on the CPU, their check passes our reference's output on their data and
    fails a wrong one."""
    scratch = real_scratch[problem]
    assert Path(scratch.eval_source).name == oe.manifest_of(problem)["eval_variant"]
    cpu = tmp_path / problem
    shutil.copytree(scratch.dir, cpu)
    text = (cpu / "reference.py").read_text()
    (cpu / "reference.py").write_text(text.replace('"cuda"', '"cpu"').replace("'cuda'", "'cpu'")
                                      .replace(".cuda()", ".cpu()"))
    done = run_python(THEIR_CHECK_ON_THE_CPU.format(problem=problem, case=SMALL_CASES[problem]), cpu)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "False"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU their eval would run in full: "
                    "run python -m scripts.official_eval there")
@pytest.mark.parametrize("problem", ["gemv", "gemm", "group_gemm"])  # their three eval files (dual_gemm: gemm's)
def test_the_real_eval_files_get_to_their_generate_input_on_the_cpu(real_scratch, problem):
    """Their eval files, unchanged, with our packaged submission: each imports (CuTe DSL 4.3's OpError
    added), parses task.yml's tests, imports reference.py and our submission in its worker, and stops
    only where their generate_input allocates on cuda."""
    result = oe.run_eval(real_scratch[problem], "test", timeout=300)
    assert result["popcorn"].get("test-count") == "10", (problem, result["tail"])
    assert "data = generate_input(**test.args)" in result["tail"], (problem, result["tail"])
    assert "ImportError" not in result["tail"] and "ModuleNotFoundError" not in result["tail"]
    assert not result["passed"] and (result["checked"], result["total"]) == (0, 10)


def test_the_startup_file_adds_op_error_and_still_runs_a_shadowed_sitecustomize(tmp_path):
    """Their evals import cutlass.cute.nvgpu.common.OpError (CuTe DSL 4.3); with SITE_DIR first on
    PYTHONPATH the import works under any CuTe DSL, and a sitecustomize further down still runs."""
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.SHADOWED_RAN = True\n")
    code = ("from cutlass.cute.nvgpu.common import OpError\nfrom cutlass.base_dsl.common import DSLBaseError\n"
            "print(issubclass(OpError, DSLBaseError), SHADOWED_RAN)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(oe.SITE_DIR), str(tmp_path)]))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]


def test_the_swap_refuses_another_copy_of_the_project(fake_tree, tmp_path):
    """Where another checkout's problems package comes first on the path (here PYTHONPATH lists it before
    ours), the appended block says so instead of binding that copy's ref_kernel."""
    other = tmp_path / "other"
    (other / "problems" / "gemm").mkdir(parents=True)
    (other / "problems" / "__init__.py").write_text("")
    (other / "problems" / "gemm" / "__init__.py").write_text("")
    (other / "problems" / "gemm" / "reference.py").write_text("def ref_kernel(data):\n    return None\n")
    (fake_tree / "problems" / "nvidia" / "nvfp4_gemm" / "reference.py").write_text(  # no path of its own
        "from utils import make_match_reference\n\n\ndef ref_kernel(data):\n    raise RuntimeError\n\n\n"
        "check_implementation = make_match_reference(ref_kernel, rtol=1e-03, atol=1e-03)\n")
    scratch = oe.prepare_scratch("gemm", fake_tree, tmp_path / "work", exact_reference=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(other), str(ROOT)]))
    done = subprocess.run([sys.executable, "-c", "import reference"], cwd=scratch.dir, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert f"problems.gemm.reference was imported from {other}" in done.stderr
