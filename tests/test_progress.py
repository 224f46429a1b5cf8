"""harness/progress.py: the progress line's runner for long subprocesses (nox -s submit)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.progress import run_with_progress


def test_run_with_progress_returns_the_output_and_status(capsys):
    code = "import sys, time; time.sleep(0.5); print('done'); sys.exit(3)"
    proc = run_with_progress([sys.executable, "-c", code], "label", "waiting", timeout=30, tick_s=0.1)
    assert proc.returncode == 3 and proc.stdout == "done\n"


def test_run_with_progress_kills_at_the_timeout():
    with pytest.raises(subprocess.TimeoutExpired):
        run_with_progress([sys.executable, "-c", "import time; time.sleep(30)"], "label", "waiting", timeout=0.3,
                          tick_s=0.1)
