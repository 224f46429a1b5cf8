"""Sessions: `nox -s test` (default), `nox -s lint`, `nox -s bench -- PROBLEM [eval options]`,
`nox -s package -- PROBLEM`, `nox -s submit -- PROBLEM --mode ...`.

torch is installed to fit the machine: with an NVIDIA driver present, PyPI's (CUDA) build; without
one, the CPU build (torch==X+cpu from a local wheel directory when pip has one, else PyTorch's CPU
index), so that a laptop or CI never downloads several GB of CUDA libraries it cannot use.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import shutil
import subprocess

import nox

nox.options.sessions = ["test"]
nox.options.default_venv_backend = "venv"

TORCH_VERSION = "2.13.0"
TORCH_CPU_INDEX = os.environ.get("NVFP4_TORCH_CPU_INDEX", "https://download.pytorch.org/whl/cpu")
PYTHON = os.environ.get("NVFP4_PYTHON")  # None: the interpreter running nox


def has_nvidia_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _pip_find_links() -> list[str]:
    try:
        out = subprocess.run(["pip", "config", "list"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    dirs = []
    for line in out.splitlines():
        if "find-links" in line:
            dirs += line.split("=", 1)[1].strip().strip("'\"").split()
    return dirs


def torch_requirement() -> list[str]:
    if has_nvidia_gpu():
        return [f"torch=={TORCH_VERSION}"]
    local = any(glob.glob(os.path.join(d, f"torch-{TORCH_VERSION}+cpu-*.whl")) for d in _pip_find_links())
    return [f"torch=={TORCH_VERSION}+cpu"] + ([] if local else ["--extra-index-url", TORCH_CPU_INDEX])


def install(session: nox.Session) -> None:
    session.install(*torch_requirement())
    session.install("-e", ".[dev]")


@nox.session(python=PYTHON)
def test(session: nox.Session) -> None:
    """pytest: the CPU tier always; the gpu / sm90 / sm100 tiers where such a GPU is present."""
    install(session)
    session.run("python", "-m", "pytest", *(session.posargs or ["-q"]))


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", ".")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """`nox -s bench -- PROBLEM [eval options]`: the evaluator in benchmark mode; results JSON in results/."""
    if not session.posargs:
        session.error("usage: nox -s bench -- PROBLEM [--impl ...] [--data ...] [--device ...]")
    install(session)
    args = list(session.posargs)
    if "--mode" not in args:
        args += ["--mode", "benchmark"]
    if "--json" not in args:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        args += ["--json", f"results/{args[0]}-{stamp}.json"]
    session.run("python", "-m", "shared.eval", *args)
