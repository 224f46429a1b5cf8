"""The Modal image, as data: the runner's environment from the project's one source of truth.

- the base image comes from the Dockerfile's ARGs (CUDA_VERSION, UBUNTU_VERSION: nvidia/cuda:13.1.0-devel-
  ubuntu24.04), as do the system packages (its `apt-get install` line, ${COMPILERS} expanded), installed
  as there: without recommended packages;
- the Python packages are locks/leaderboard.txt + locks/tools.txt, installed as the Dockerfile installs
  them (--require-hashes --no-deps: every file checked, the lock is the whole closure).
No package version is written here; tests/test_runner.py fails if this spec and the locks disagree.

Python: Modal adds its own (add_python, same major.minor as the Dockerfile's) because its client runs in
it; which patch release depends on Modal's image builder version (3.13.0 on 2024.10 and 2025.06, 3.13.17
on 2026.10), and none is the Dockerfile's 3.13.8. So the runner pins the builder (IMAGE_BUILDER, set as
MODAL_IMAGE_BUILDER_VERSION for its own client) and says which Python that gives; tests with the pinned
client check both against the client's own tables.

Why not Modal's Image.from_dockerfile: the Dockerfile copies the repository into the image (a rebuild
for every edit) and takes uv from a second registry; here the base and the locks are the same, the image
is built once and cached by Modal, and the working tree is mounted per run (bundle.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.locks import lock_pins

REPO = Path(__file__).resolve().parents[2]
LOCKS = ("locks/leaderboard.txt", "locks/tools.txt")
# Modal's image builder the runner asks for, and the Python its add_python gives for the Dockerfile's
# major.minor there (the pinned client's python-build-standalone table; a test keeps the two in step).
IMAGE_BUILDER = "2026.10"
MODAL_PYTHON = {"3.13": "3.13.17"}
SHOWN = ("torch", "nvidia-cutlass-dsl", "cuda-python", "cuda-toolkit", "triton", "numpy", "pytest", "nox")


def dockerfile_args(repo: Path = REPO) -> dict[str, str]:
    """The ARG defaults of the Dockerfile (`ARG NAME=value`, quotes removed)."""
    text = (repo / "Dockerfile").read_text()
    return {m.group(1): m.group(2).strip('"') for m in re.finditer(r"^ARG (\w+)=(.*)$", text, flags=re.M)}


def dockerfile_apt(args: dict[str, str], repo: Path = REPO) -> list[str]:
    """The packages of the Dockerfile's `apt-get install` line, its ARGs expanded, its options left out."""
    m = re.search(r"apt-get install ([^\\\n&]*)", (repo / "Dockerfile").read_text())
    if m is None:
        raise ValueError("Dockerfile: no `apt-get install` line for the image's system packages")
    words = re.sub(r"\$\{(\w+)\}", lambda v: args[v.group(1)], m.group(1)).split()
    return [w for w in words if not w.startswith("-")]


def image_spec(repo: Path = REPO) -> dict:
    args = dockerfile_args(repo)
    pins: dict[str, str] = {}
    for lock in LOCKS:
        pins.update(lock_pins(lock, repo))
    python = ".".join(args["PYTHON_VERSION"].split(".")[:2])
    return {
        "base": f"nvidia/cuda:{args['CUDA_VERSION']}-devel-ubuntu{args['UBUNTU_VERSION']}",
        "python": python,
        "python_release": MODAL_PYTHON.get(python),
        "image_builder": IMAGE_BUILDER,
        "dockerfile_python": args["PYTHON_VERSION"],
        "apt": dockerfile_apt(args, repo),
        "locks": list(LOCKS),
        "pip_options": "--require-hashes --no-deps",
        "env": {"NVFP4_LOCK": "leaderboard", "PYTHONDONTWRITEBYTECODE": "1"},
        "pins": pins,
    }


def apt_command(spec: dict) -> str:
    """The image's system packages, installed as the Dockerfile installs them: no recommended packages,
    no prompts, no package lists left in the layer."""
    return ("apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            + " ".join(spec["apt"]) + " && rm -rf /var/lib/apt/lists/*")


def describe(spec: dict) -> str:
    shown = ", ".join(f"{name}=={spec['pins'][name]}" for name in SHOWN if name in spec["pins"])
    return "\n".join([
        f"image: {spec['base']} + Python {spec['python_release'] or spec['python']} (Modal's add_python on image "
        f"builder {spec['image_builder']}; the Dockerfile's {spec['dockerfile_python']} is not among Modal's)",
        f"  apt (no recommended packages): {' '.join(spec['apt'])}",
        f"  pip install {spec['pip_options']} " + " ".join(f"-r {lock}" for lock in spec["locks"])
        + f" ({len(spec['pins'])} pins)",
        f"  pins: {shown}",
        f"  env: {' '.join(f'{k}={v}' for k, v in spec['env'].items())}; the working tree mounted per run",
    ] + ([] if "+" in spec["pins"].get("torch", "+") else [
        "  note: the lock's torch is PyPI's build (CUDA 12.8); the runner's is +cu130 "
        "(docs/SHIPPING.md: TORCH_INDEX=cu130 ci/lock.sh leaderboard pins it)"]))
