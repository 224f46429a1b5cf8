"""The Modal image, as data: the runner's environment from the project's one source of truth.

- the base image and Python come from the Dockerfile's ARGs (CUDA_VERSION, UBUNTU_VERSION, PYTHON_VERSION:
  nvidia/cuda:13.1.0-devel-ubuntu24.04, Python 3.13), as do the compilers (ARG COMPILERS);
- the Python packages are locks/leaderboard.txt + locks/tools.txt, installed as the Dockerfile installs
  them (--require-hashes --no-deps: every file checked, the lock is the whole closure).
No version is written here; tests/test_runner.py fails if this spec and the locks disagree.

Why not Modal's Image.from_dockerfile: the Dockerfile copies the repository into the image (a rebuild
for every edit) and takes uv from a second registry; here the base, the Python and the locks are the
same, the image is built once and cached by Modal, and the working tree is mounted per run (bundle.py).
Modal adds its Python (add_python, same major.minor as the Dockerfile's) because its client runs in it.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCKS = ("locks/leaderboard.txt", "locks/tools.txt")
SHOWN = ("torch", "nvidia-cutlass-dsl", "cuda-python", "cuda-toolkit", "triton", "numpy", "pytest", "nox")


def dockerfile_args(repo: Path = REPO) -> dict[str, str]:
    """The ARG defaults of the Dockerfile (`ARG NAME=value`, quotes removed)."""
    text = (repo / "Dockerfile").read_text()
    return {m.group(1): m.group(2).strip('"') for m in re.finditer(r"^ARG (\w+)=(.*)$", text, flags=re.M)}


def lock_pins(lock: str, repo: Path = REPO) -> dict[str, str]:
    """{distribution: version} of a hash-pinned lock."""
    pins = {}
    for m in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)", (repo / lock).read_text(), flags=re.M):
        pins[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return pins


def image_spec(repo: Path = REPO) -> dict:
    args = dockerfile_args(repo)
    pins: dict[str, str] = {}
    for lock in LOCKS:
        pins.update(lock_pins(lock, repo))
    return {
        "base": f"nvidia/cuda:{args['CUDA_VERSION']}-devel-ubuntu{args['UBUNTU_VERSION']}",
        "python": ".".join(args["PYTHON_VERSION"].split(".")[:2]),
        "dockerfile_python": args["PYTHON_VERSION"],
        "apt": [*args["COMPILERS"].split(), "git"],
        "locks": list(LOCKS),
        "pip_options": "--require-hashes --no-deps",
        "env": {"NVFP4_LOCK": "leaderboard", "PYTHONDONTWRITEBYTECODE": "1"},
        "pins": pins,
    }


def describe(spec: dict) -> str:
    shown = ", ".join(f"{name}=={spec['pins'][name]}" for name in SHOWN if name in spec["pins"])
    return "\n".join([
        f"image: {spec['base']} + Python {spec['python']} (Modal add_python; Dockerfile: {spec['dockerfile_python']})",
        f"  apt: {' '.join(spec['apt'])}",
        f"  pip install {spec['pip_options']} " + " ".join(f"-r {lock}" for lock in spec["locks"])
        + f" ({len(spec['pins'])} pins)",
        f"  pins: {shown}",
        f"  env: {' '.join(f'{k}={v}' for k, v in spec['env'].items())}; the working tree mounted per run",
    ] + ([] if "+" in spec["pins"].get("torch", "+") else [
        "  note: the lock's torch is PyPI's build (CUDA 12.8); the runner's is +cu130 "
        "(docs/SHIPPING.md: TORCH_INDEX=cu130 ci/lock.sh leaderboard pins it)"]))
