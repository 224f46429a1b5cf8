"""The body of one remote job: unpack the working tree, run the job's command in it, return what it wrote.

Runs in a Modal container (modal_backend maps `remote_entry` over the jobs), and just as well on a local
CPU: the tests call run_job directly, which is how the remote function's output is checked without a GPU
or a network. Imports only the standard library and harness.runner.bundle (no torch, no shared.*), so
that the container needs only this package to start a job.

The command's own timeout is the job's (--timeout): past it the process group is killed and the job
reports exit status 124 with the tail of its output; Modal's timeout is set a little longer, as a backstop.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.runner.bundle import unpack

BUNDLE_PATH = "/opt/nvfp4/tree.tar.gz"  # where modal_backend mounts the packed tree in the container
TAIL_CHARS = 4000
EXIT_TIMEOUT = 124


def device_info() -> dict:
    """The container's GPU and driver, from nvidia-smi (no torch needed); {} where there is none."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return {}
    if out.returncode != 0 or not out.stdout.strip():
        return {}
    name, driver, memory = (x.strip() for x in out.stdout.splitlines()[0].split(",")[:3])
    return {"gpu": name, "driver": driver, "gpu_memory": memory}


def _run(argv: list[str], cwd: Path, env: dict, timeout_s: float) -> tuple[int, str, bool]:
    """(exit status, stdout+stderr, timed out). The command runs in its own process group, so that a
    timeout kills the evaluator's workers as well."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, out, False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return EXIT_TIMEOUT, out + f"\n(killed after {timeout_s:.0f} s: the job's --timeout)\n", True


def run_job(job: dict, bundle: bytes) -> dict:
    """job: {"index", "name", "argv", "timeout_s", "commit"}; bundle: the packed tree (bundle.pack).
    Returns {"index", "name", "rc", "timed_out", "seconds", "tail", "result" (the JSON the command wrote,
    or None), "device", "host", "python"}."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nvfp4-job-") as tmp:
        tree = Path(tmp) / "repo"
        unpack(bundle, tree)
        out = Path(tmp) / "result.json"
        argv = [sys.executable if a == "{python}" else str(out) if a == "{out}" else a for a in job["argv"]]
        # NVFP4_COMMIT: the evaluator records the local commit (the tree has no .git).
        env = dict(os.environ, NVFP4_COMMIT=job.get("commit") or "unknown", PYTHONDONTWRITEBYTECODE="1")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
        rc, text, timed_out = _run(argv, tree, env, float(job["timeout_s"]))
        result = None
        if out.is_file():
            try:
                result = json.loads(out.read_text())
            except json.JSONDecodeError as e:
                text += f"\n(the results JSON does not parse: {e})"
    return {"index": job["index"], "name": job["name"], "rc": rc, "timed_out": timed_out,
            "seconds": round(time.monotonic() - start, 1), "tail": text[-TAIL_CHARS:], "result": result,
            "device": device_info(), "host": socket.gethostname(), "python": sys.version.split()[0]}


def remote_entry(job: dict) -> dict:
    """What the Modal function runs: run_job on the tree mounted at BUNDLE_PATH. Any exception in the
    body comes back as a failed job with its traceback, so that no job's result is lost to another's."""
    try:
        return run_job(job, Path(BUNDLE_PATH).read_bytes())
    except Exception:  # noqa: BLE001 - reported as the job's failure, with its traceback
        import traceback

        return {"index": job["index"], "name": job["name"], "rc": 1, "timed_out": False, "seconds": None,
                "tail": traceback.format_exc()[-TAIL_CHARS:], "result": None, "device": device_info(),
                "host": socket.gethostname(), "python": sys.version.split()[0]}
