"""A user's own results never break a test: `nox -s bench` writes where git ignores it, and the tests
that read results/ read only what git tracks (tests/committed_results.py)."""

import os
import subprocess
import sys

import pytest

from tests.committed_results import REPO, committed_results


def test_the_bench_sessions_default_results_file_is_ignored_by_git():
    noxfile = pytest.importorskip("noxfile", reason="nox is not installed (the noxfile imports it)")
    path = noxfile.local_results_path("gemv")
    assert path.startswith("results/local/gemv-") and path.endswith(".json")
    ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", path], capture_output=True)
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.returncode == 0, f"{path} is not ignored by git"


def test_an_untracked_results_file_is_not_read(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "2026-01-01-h100-gemv-abc.json").write_text("{}")
    git("add", "results")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "committed")
    (tmp_path / "results" / "gemv-20260101T000000Z.json").write_text("{}")  # a user's own run
    assert committed_results(tmp_path) == [str(tmp_path / "results" / "2026-01-01-h100-gemv-abc.json")]


def test_the_tests_collect_where_matplotlib_is_missing(tmp_path):
    """`pip install nvidia-cutlass-dsl cuda-python pyyaml pytest ml_dtypes` then `python -m pytest` (the README's
    set-up without nox, before matplotlib joined its list): collection must not stop; the picture's tests
    are skipped with their reason."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['matplotlib'] = None\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "tests/test_report.py", "tests/test_eval.py"], cwd=REPO, capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "matplotlib is not installed" in r.stdout or "1 skipped" in r.stdout, r.stdout[-2000:]
