"""The single-file packager (harness/package.py) and its loader (harness/bundle_loader.py).

Two kinds of tests:
- synthetic repositories under tmp_path pin the packager's behaviour (inlining, order, determinism,
  every refusal with its file and line, the loader's import semantics, CuTe DSL compiles from a
  packaged file for sm_90a and sm_100a);
- the real problems: `package` each problem's submission.py and run the packaged file standing alone
  in a fresh temporary directory, (1) in a `python -I` process in which the repository's packages
  cannot be imported at all, and (2) through the evaluator's test mode with --impl pointing at it.
  On CPU that is the portable path, on the manifest's small cpu cases (what is checked there, the
  file standing alone and the evaluator taking it, does not grow with the shapes; the portable path
  itself is the repository's, checked on every shape by the reference tests); the `gpu` tier repeats
  the evaluator run on CUDA on every manifest test (the kernels).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import package as pk
from harness.problem import describe_case, load_problem

REPO = Path(__file__).resolve().parent.parent
PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")

# A minimal stand-in for the leaderboard's task.py, which the runner writes next to the submission.
TASK_PY = "import torch\ninput_t = tuple\noutput_t = object\n"

# Run inside the isolated child: make the project's packages unimportable, whatever sys.path holds.
BLOCKER = textwrap.dedent("""
    import sys
    class _Block:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("shared", "problems"):
                raise ImportError(f"{name} must not be imported by a packaged submission")
    sys.meta_path.insert(0, _Block())
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != REPO]
    sys.path.insert(0, HERE)
""")


@pytest.fixture(autouse=True)
def _restore_import_state():
    """Tests that exec a packaged file in this process register its modules (under their real names
    too, where free): put sys.modules and sys.meta_path back so that later tests import the project."""
    ours = ("shared", "problems", "task", "_nvfp4_bundle")

    def project(names):
        return {n for n in names if n.split(".")[0].startswith(ours)}

    saved, meta_path = {n: sys.modules[n] for n in project(sys.modules)}, list(sys.meta_path)
    yield
    for name in project(sys.modules) - set(saved):  # third-party modules (native ones) stay loaded
        del sys.modules[name]
    sys.modules.update(saved)
    sys.meta_path[:] = meta_path


# ----- synthetic repositories -------------------------------------------------------------------


def make_repo(root: Path, files: dict[str, str], manifest: str | None = None) -> Path:
    """A repository with shared/ and problems/demo/ packages and the given extra files."""
    base = {
        "shared/__init__.py": '"""shared"""\n',
        "problems/__init__.py": "",
        "problems/demo/__init__.py": "",
        "problems/demo/manifest.yaml": manifest or (
            "name: demo\nleaderboard: nvfp4_demo\ngpus: [B200, NVIDIA]\ntests: []\nbenchmarks: []\n"
            "extra_leaderboards: [modal_nvfp4_demo]\n"),
        "locks/leaderboard.txt": "torch==2.9.1 \\\n    --hash=sha256:00\nnvidia-cutlass-dsl==4.3.5 \\\n"
                                 "    --hash=sha256:00\nnumpy==2.4.1 \\\n    --hash=sha256:00\n",
    }
    for rel, text in {**base, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


DEMO = {
    "shared/util.py": """\
        '''Utility module with a private name that the entry also defines.'''
        _SCALE = 2

        def double(x):
            return x * _SCALE
        """,
    "shared/sub/__init__.py": "from . import leaf\nfrom .leaf import VALUE\n",
    "shared/sub/leaf.py": "VALUE = 7\n",
    "problems/demo/config.py": """\
        from dataclasses import dataclass

        @dataclass(frozen=True)
        class Config:
            factor: int = 3
        """,
    "problems/demo/submission.py": """\
        from task import input_t, output_t

        import shared.sub
        from shared import util as u
        from shared.sub import VALUE
        from .config import Config

        _SCALE = 100  # must not clash with shared.util._SCALE

        def custom_kernel(data: input_t) -> output_t:
            import shared.sub.leaf as leaf  # a lazy import inside a function
            return u.double(data) + VALUE + Config().factor + leaf.VALUE + shared.sub.VALUE + _SCALE
        """,
}


def load_packaged(tmp_path: Path, text: str, name: str = "submission"):
    """Import a packaged file the way the leaderboard does: `from submission import custom_kernel`."""
    d = tmp_path / f"run_{name}"
    d.mkdir()
    (d / f"{name}.py").write_text(text)
    (d / "task.py").write_text(TASK_PY)
    code = BLOCKER + f"import {name} as s\nprint(s.custom_kernel(1))\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-I", "-c", f"import os\nHERE={str(d)!r}\nREPO={str(REPO)!r}\n" + code],
                         cwd=d, capture_output=True, text=True, env=env, timeout=300)
    return res


def test_a_packaged_file_builds_the_compiled_check_like_the_repository(tmp_path):
    """The bundle's host_check builds the same source (from torch's cache, where the repository's
    build already is) where a compiler and ninja are, and says why not elsewhere."""
    d = tmp_path / "run"
    d.mkdir()
    (d / "submission.py").write_text(pk.package("gemv").text)
    (d / "task.py").write_text(TASK_PY)
    code = (f"import os\nHERE={str(d)!r}\nREPO={str(REPO)!r}\n" + BLOCKER
            + "import submission as s\nprint(s._BUNDLE.load('shared.cute.host_check').kind())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NVFP4_HOST_CHECK")}
    res = subprocess.run([sys.executable, "-I", "-c", code], cwd=d, capture_output=True, text=True, env=env,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    kind = res.stdout.strip().splitlines()[-1]
    if shutil.which("ninja") and (shutil.which("c++") or shutil.which("g++")):
        assert kind == "compiled", kind
    else:
        assert kind.startswith("python ("), kind


def test_inlines_modules_in_dependency_order_and_runs_standalone(tmp_path):
    repo = make_repo(tmp_path / "repo", DEMO)
    out = pk.package("demo", repo=repo)
    assert out.text.startswith("#!POPCORN leaderboard nvfp4_demo\n#!POPCORN gpu B200\n")
    assert out.modules == ("problems/__init__.py", "problems/demo/__init__.py", "problems/demo/config.py",
                           "shared/__init__.py", "shared/sub/leaf.py", "shared/sub/__init__.py",
                           "shared/util.py", "problems/demo/submission.py")
    for path in out.modules:  # each module marked by a comment naming its source file
        assert f"# ---- source: {path} " in out.text
    res = load_packaged(tmp_path, out.text)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [str(2 + 7 + 3 + 7 + 7 + 100)]


def test_output_is_deterministic(tmp_path):
    a = pk.package("demo", repo=make_repo(tmp_path / "a", DEMO))
    b = pk.package("demo", repo=make_repo(tmp_path / "b", DEMO))
    assert a.text == b.text
    assert str(tmp_path) not in a.text


def test_no_project_import_outside_the_embedded_sources(tmp_path):
    import ast

    text = pk.package("demo", repo=make_repo(tmp_path / "repo", DEMO)).text
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            assert not any(a.name.split(".")[0] in pk.PROJECT_PACKAGES for a in node.names)
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and (node.module or "").split(".")[0] not in pk.PROJECT_PACKAGES


def test_gpu_and_leaderboard_from_the_manifest(tmp_path):
    repo = make_repo(tmp_path / "repo", DEMO)
    assert pk.package("demo", gpu="NVIDIA", repo=repo).text.splitlines()[:2] == [
        "#!POPCORN leaderboard nvfp4_demo", "#!POPCORN gpu NVIDIA"]
    assert pk.package("demo", leaderboard="modal_nvfp4_demo", gpu="B200", repo=repo).leaderboard == "modal_nvfp4_demo"
    with pytest.raises(pk.PackageError, match="GPU 'H100' is not offered by nvfp4_demo"):
        pk.package("demo", gpu="H100", repo=repo)
    with pytest.raises(pk.PackageError, match="unknown problem 'nope'"):
        pk.package("nope", repo=repo)


def test_kernel_option_selects_another_entry(tmp_path):
    files = {**DEMO, "problems/demo/alt.py": "def custom_kernel(data):\n    return -data\n"}
    out = pk.package("demo", kernel="alt", repo=make_repo(tmp_path / "repo", files))
    assert out.modules[-1] == "problems/demo/alt.py"
    with pytest.raises(pk.PackageError, match="no kernel 'missing'"):
        pk.package("demo", kernel="missing", repo=make_repo(tmp_path / "r2", DEMO))


def refusal(tmp_path, files: dict[str, str]) -> list[str]:
    with pytest.raises(pk.PackageError) as e:
        pk.package("demo", repo=make_repo(tmp_path / "repo", files))
    return [str(f) for f in e.value.findings]


SUB = "problems/demo/submission.py"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({SUB: "import torch\n\ndef custom_kernel(d):\n    return torch.cuda.current_stream()\n"},
         f"{SUB}:4: contains 'stream'"),
        ({SUB: "from shared.helper import f\n\ndef custom_kernel(d):\n    return f(d)\n",
          "shared/helper.py": "def f(x):\n    '''Runs on the default STREAM.'''\n    return x\n"},
         "shared/helper.py:2: contains 'STREAM'"),
        ({SUB: "from shared.missing import f\n\ndef custom_kernel(d):\n    return f(d)\n"},
         f"{SUB}:1: project import 'shared.missing' cannot be resolved"),
        ({SUB: "from shared import nothing_here\n\ndef custom_kernel(d):\n    return d\n"},
         f"{SUB}:1: project import cannot be resolved: shared has no module or name 'nothing_here'"),
        ({SUB: "from harness.timing import flush\n\ndef custom_kernel(d):\n    return d\n"},
         f"{SUB}:1: imports the harness module 'harness.timing'"),
        ({SUB: "from shared.kit import f\n\ndef custom_kernel(d):\n    return f(d)\n",
          "shared/kit.py": "def f(x):\n    import harness.check\n    return x\n"},
         "shared/kit.py:2: imports the harness module 'harness.check'"),
        ({SUB: "import importlib\n\ndef custom_kernel(d):\n    return importlib.import_module('harness.eval')\n"},
         f"{SUB}:4: dynamic import 'harness.eval'"),
        ({SUB: "import importlib\n\ndef custom_kernel(d):\n    return importlib.import_module('shared.x')\n"},
         f"{SUB}:4: dynamic import 'shared.x'"),
        ({SUB: "def custom_kernel(d):\n    with open('weights.bin', 'rb') as f:\n        return f.read()\n"},
         f"{SUB}:2: file read open('weights.bin')"),
        ({SUB: "from pathlib import Path\n\ndef custom_kernel(d):\n    return Path('k.cu').read_text()\n"},
         f"{SUB}:4: file read Path('k.cu').read_text()"),
        ({SUB: "from torch.utils import cpp_extension\nM = cpp_extension.load('m', ['m.cu'])\n"
               "def custom_kernel(d):\n    return d\n"},
         f"{SUB}:2: cpp_extension.load() compiles source files"),
        ({SUB: "import urllib.request\n\ndef custom_kernel(d):\n    return d\n"},
         f"{SUB}:1: network access: imports urllib"),
        ({SUB: "import torch\n\ndef custom_kernel(d):\n    return torch.hub.load('a/b', 'c')\n"},
         f"{SUB}:4: network access torch.hub.load()"),
        ({SUB: "import yaml\n\ndef custom_kernel(d):\n    return d\n"},
         f"{SUB}:1: imports 'yaml', which the leaderboard environment does not provide"),
        ({SUB: "def kernel(d):\n    return d\n"}, f"{SUB}:1: defines no top-level custom_kernel"),
    ],
    ids=["stream", "stream-in-inlined-docstring", "unresolved-module", "unresolved-name", "harness-import",
         "harness-import-in-kit", "harness-dynamic-import", "dynamic-import",
         "open-relative", "read_text", "cpp_extension-load", "network-import", "torch-hub", "not-on-runner",
         "no-custom_kernel"],
)
def test_refusals_name_file_and_line(tmp_path, files, expected):
    found = refusal(tmp_path, files)
    assert any(f.startswith(expected) for f in found), found


def test_refusal_writes_nothing_and_cli_prints_file_line(tmp_path):
    repo = make_repo(tmp_path / "repo", {SUB: "def custom_kernel(d):\n    return 'Stream'\n"})
    out = tmp_path / "dist.py"
    with pytest.raises(pk.PackageError):
        pk.write("demo", out, repo=repo)
    assert not out.exists()


def test_allowed_imports_are_kept(tmp_path):
    files = {SUB: textwrap.dedent("""\
        import math
        import numpy as np
        import torch
        from task import input_t, output_t
        try:
            import cupy  # optional: absent on the runner, guarded
        except ImportError:
            cupy = None

        def custom_kernel(data: input_t) -> output_t:
            with open("/dev/null") as f:  # an absolute path is allowed
                f.read()
            return data
        """)}
    out = pk.package("demo", repo=make_repo(tmp_path / "repo", files))
    assert "from task import input_t, output_t" in out.text


def test_loader_never_uses_the_host_project(tmp_path, monkeypatch):
    """In the local evaluator `shared` is importable too; the bundle must run on its own copy."""
    import types

    text = pk.package("demo", repo=make_repo(tmp_path / "repo", DEMO)).text
    fake = types.ModuleType("shared")
    fake.__path__ = []
    monkeypatch.setitem(sys.modules, "shared", fake)  # a poisoned host package
    (tmp_path / "task.py").write_text(TASK_PY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "task", raising=False)
    ns: dict = {"__name__": "submission_under_test"}
    exec(compile(text, "submission_under_test.py", "exec"), ns)
    assert ns["custom_kernel"](1) == 126
    assert sys.modules["shared"] is fake
    assert ns["custom_kernel"].__module__ == "_nvfp4_bundle_demo.problems.demo.submission"
    for name in [m for m in sys.modules if m.startswith("_nvfp4_bundle_demo")]:
        del sys.modules[name]


def test_bundled_modules_are_importable_by_their_real_names_when_free(tmp_path):
    """CuTe DSL 4.3 (the runner's) re-imports a @cute.jit module's imports with importlib."""
    res = load_packaged(tmp_path, pk.package("demo", repo=make_repo(tmp_path / "repo", DEMO)).text + (
        "import importlib, sys\n"
        "assert importlib.import_module('shared.util') is sys.modules['_nvfp4_bundle_demo.shared.util']\n"
        "assert importlib.import_module('problems.demo.config').Config().factor == 3\n"))
    assert res.returncode == 0, res.stderr


def test_tracebacks_and_getsource_show_original_lines(tmp_path):
    import inspect
    import traceback

    files = {**DEMO, SUB: "def custom_kernel(d):\n    raise ValueError('bad d')\n"}
    text = pk.package("demo", repo=make_repo(tmp_path / "r0", files)).text
    (tmp_path / "task.py").write_text(TASK_PY)
    sys.path.insert(0, str(tmp_path))
    try:
        ns: dict = {"__name__": "tb_under_test"}
        exec(compile(text, "tb_under_test.py", "exec"), ns)
        assert inspect.getsource(ns["custom_kernel"]).startswith("def custom_kernel(d):")
        with pytest.raises(ValueError) as e:
            ns["custom_kernel"](0)
        last = traceback.extract_tb(e.value.__traceback__)[-1]
        assert (last.filename, last.lineno, last.line) == (
            "problems/demo/submission.py (packaged)", 2, "raise ValueError('bad d')")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("_nvfp4_bundle_demo")]:
            del sys.modules[name]

    res = load_packaged(tmp_path, pk.package("demo", repo=make_repo(tmp_path / "repo", files)).text)
    assert res.returncode != 0
    assert 'File "problems/demo/submission.py (packaged)", line 2, in custom_kernel' in res.stderr


CUTE_KERNEL = """\
    '''A trivial CuTe DSL kernel: proves @cute.jit / @cute.kernel compile from a packaged file.'''
    import cutlass
    import cutlass.cute as cute

    from shared.cute.compile_cache import compile_arch
    from shared.cute.pointers import null_ptr


    @cute.kernel
    def _twice_kernel(mX: cute.Tensor, mY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        mY[tidx] = mX[tidx] + mX[tidx]


    @cute.jit
    def twice(px: cute.Pointer, py: cute.Pointer):
        mX = cute.make_tensor(px, cute.make_layout(128))
        mY = cute.make_tensor(py, cute.make_layout(128))
        _twice_kernel(mX, mY).launch(grid=(1, 1, 1), block=(128, 1, 1))


    def compile_for(arch):
        with compile_arch(arch):
            return cute.compile(twice, null_ptr(cutlass.Float32), null_ptr(cutlass.Float32),
                                options=f"--gpu-arch {arch}")


    def custom_kernel(data):
        return compile_for(data)
    """


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_cute_dsl_compiles_from_a_packaged_file(tmp_path, arch):
    pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl is not installed")
    # the kit the helpers import (inside functions too), as the repository has it
    kit = {f.relative_to(REPO).as_posix(): f.read_text() for f in (REPO / "shared").rglob("*.py")
           if f.name != "__init__.py" or f.parent.name == "cute"}
    files = {SUB: CUTE_KERNEL, **kit}
    text = pk.package("demo", repo=make_repo(tmp_path / "repo", files), lock=tmp_path / "none.txt").text
    d = tmp_path / "run"
    d.mkdir()
    (d / "submission.py").write_text(text)
    (d / "task.py").write_text(TASK_PY)
    code = f"import os\nHERE={str(d)!r}\nREPO={str(REPO)!r}\n" + BLOCKER + (
        f"import submission\nf = submission.custom_kernel({arch!r})\nprint(type(f).__name__)\n")
    res = subprocess.run([sys.executable, "-I", "-c", code], cwd=d, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]


# ----- the real problems ------------------------------------------------------------------------


@functools.cache
def packaged_text(problem: str) -> str:
    """`nox -s package -- PROBLEM`'s text (once per problem and session: the same inputs give the same
    bytes, test_output_is_deterministic)."""
    try:
        return pk.package(problem).text
    except pk.PackageError as e:
        pytest.fail(f"nox -s package -- {problem} refused:\n{e}")


def packaged_problem(problem: str, tmp_path: Path) -> Path:
    """dist-style packaged submission for a real problem, alone in a fresh directory."""
    d = tmp_path / "fresh"
    d.mkdir()
    path = d / "submission.py"
    path.write_text(packaged_text(problem))
    (d / "task.py").write_text(TASK_PY)
    return path


@pytest.mark.parametrize("problem", PROBLEMS)
def test_packaged_submission_runs_alone_without_the_project(problem, tmp_path):
    """The packaged file in a `python -I` process where `shared` and `problems` cannot be imported:
    the parent generates the inputs of the manifest's cpu cases and checks the outputs."""
    import torch

    from harness import check as chk
    from harness import problem as P

    path = packaged_problem(problem, tmp_path)
    prob = P.load_problem(problem)
    cases = [dict(c) for c in prob.cpu_cases]
    datas = [prob.reference.generate_input(**c, device="cpu") for c in cases]
    torch.save(datas, path.parent / "inputs.pt")
    code = f"import os\nHERE={str(path.parent)!r}\nREPO={str(REPO)!r}\n" + BLOCKER + textwrap.dedent("""
        import torch
        from submission import custom_kernel
        datas = torch.load(os.path.join(HERE, "inputs.pt"), weights_only=False)
        torch.save([custom_kernel(d) for d in datas], os.path.join(HERE, "outputs.pt"))
        print("ran", len(datas))
    """)
    res = subprocess.run([sys.executable, "-I", "-c", code], cwd=path.parent, capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 0, res.stderr[-4000:]
    outs = torch.load(path.parent / "outputs.pt", weights_only=False)
    for case, out in zip(cases, outs):
        want = prob.reference.ref_kernel(prob.reference.generate_input(**case, device="cpu"))
        if isinstance(want, list | tuple):
            ok, msg = chk.check_groups(out, list(want), prob.rtol, prob.atol)
        else:
            ok, msg = chk.check_tensor(out, want, prob.rtol, prob.atol)
        assert ok, f"{problem} {case}: {msg}"


def run_evaluator(problem: str, path: Path, device: str, tmp_path: Path, cases=()) -> dict:
    """The evaluator's test mode on the packaged file: the manifest's tests, or `cases` (--case lines)."""
    from tests.test_eval import run_eval

    out = tmp_path / "result.json"
    case_args = [arg for case in cases for arg in ("--case", describe_case(case))]
    res = run_eval(problem, "--mode", "test", "--impl", str(path), "--device", device, "--json", str(out), *case_args)
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
    assert ": pass (" in res.stdout  # the verdict line per impl
    doc = json.loads(out.read_text())
    (impl,) = doc["impls"].values()
    assert impl["check"] == "pass"
    return doc


@pytest.mark.parametrize("problem", PROBLEMS)
def test_packaged_submission_passes_evaluator_test_mode_cpu(problem, tmp_path):
    cases = load_problem(problem).cpu_cases
    doc = run_evaluator(problem, packaged_problem(problem, tmp_path), "cpu", tmp_path, cases)
    (impl,) = doc["impls"].values()
    assert [describe_case(c["case"]) for c in impl["cases"]] == [describe_case(c) for c in cases]


@pytest.mark.gpu
@pytest.mark.parametrize("problem", PROBLEMS)
def test_packaged_submission_passes_evaluator_test_mode_gpu(problem, tmp_path):
    run_evaluator(problem, packaged_problem(problem, tmp_path), "cuda", tmp_path)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_packaged_submission_imports_no_development_tool(problem, tmp_path):
    """The leaderboard runner has neither rich nor matplotlib (locks/leaderboard.txt): the packaged
    file must not import them, whatever the evaluator and the report use."""
    text = packaged_problem(problem, tmp_path).read_text()
    for tool in ("rich", "matplotlib", "xdist"):
        found = re.findall(rf"^\s*(?:import|from)\s+{tool}\b.*$", text, flags=re.M)
        assert not found, f"{problem}: {found}"
    assert "harness.progress" not in text and "harness.report" not in text


@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_bundle_carries_the_default_launch_queue(problem):
    """The repository's launch_queue (torch's current CUDA queue, whose type name the leaderboard
    refuses) is bundled as launch_queue_default.py under its own name; nothing else is substituted.
    The compiled check's source travels as a module, built with load_inline (no file is read), and
    running the file as a script (the runner's compile step) builds it."""
    text = packaged_text(problem)
    assert "_BUNDLE_SOURCES['shared.cute.launch_queue'] = ('shared/cute/launch_queue_default.py'" in text
    assert (REPO / "shared" / "cute" / "launch_queue.py").read_text() not in text
    assert "stream" not in text.lower()
    assert "_BUNDLE_SOURCES['shared.cute.host_check_source']" in text and "load_inline(" in text
    assert "cpp_extension.load(" not in text
    assert text.rstrip().endswith('if __name__ == "__main__":  # the runner\'s compile step: build the compiled '
                                  "check now\n    _BUNDLE.load('shared.cute.host_check').compiled()")
    assert pk.BUNDLE_SUBSTITUTES == {"shared.cute.launch_queue": "shared/cute/launch_queue_default.py"}
