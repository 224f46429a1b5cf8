"""Sessions: `nox -s test` (default), `nox -s lint`, `nox -s bench -- PROBLEM [eval options]`,
`nox -s package -- PROBLEM`, `nox -s submit -- PROBLEM --mode ...`, `nox -s runner_dsl`, `nox -s report`,
`nox -s b200 [-- --reference-kernels DIR]` (the B200 owner's one command; exits 0 without a B200).
bench, b200 and test take `--runner modal` (harness/runner: on Modal GPUs, results in results/).

Installs come from hash-pinned locks (locks/*.txt, written by ci/lock.sh from locks/*.in):
NVFP4_LOCK=dev (CPU torch: CI and any machine without an NVIDIA driver, the default there),
gpu (PyPI's CUDA torch: the default where nvidia-smi works), leaderboard (the B200 runners' versions),
or none (unlocked: torch to fit the machine, then the project's ranges). The CPU build comes from a
local wheel directory when pip has one, else PyTorch's CPU index, so that a laptop or CI never
downloads several GB of CUDA libraries it cannot use.
"""

from __future__ import annotations

import datetime as dt
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

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
    return [f"torch=={TORCH_VERSION}+cpu", *cpu_torch_index()]


def install(session: nox.Session) -> None:
    """The project and its tools from a hash-pinned lock (see install_locked below)."""
    install_locked(session)


def import_harness() -> None:
    """Let nox's own Python import the harness's standard-library modules (argument checks, deadlines,
    the submit preflight): they run before anything is installed."""
    if REPO not in sys.path:
        sys.path.insert(0, REPO)


def check_arguments(session: nox.Session, command: str, checker: str, argv: list[str]) -> None:
    """A command's arguments checked before anything is installed or looked up, by `checker`
    ("module:function" in harness/, standard library only, so that it runs in nox's own Python, and
    the same check the command itself makes); a mistake ends the session with its one line."""
    import importlib

    import_harness()
    from harness.arguments import Usage

    module, function = checker.split(":")
    try:
        getattr(importlib.import_module(module), function)(argv)
    except Usage as e:
        session.error(f"{command}: {e}")


def option_values(session: nox.Session, name: str) -> tuple[list[str], list[str]]:
    """(the values of every `name VALUE` / `name=VALUE` among the session's arguments, the others)."""
    import_harness()
    from harness.options import MissingValue, take_option

    try:
        return take_option(list(session.posargs), name)
    except MissingValue as e:
        session.error(str(e))


def remote_runner(session: nox.Session, command: str) -> bool:
    """`--runner modal` among a session's arguments: run the command on Modal GPUs (harness/runner) with
    only PyYAML and the Modal client installed (not even that with --dry-run), and return True.
    `--runner local` is the default and is dropped."""
    runners, rest = option_values(session, "--runner")
    runner = runners[-1] if runners else None
    if runner in (None, "local"):
        session.posargs[:] = rest
        return False
    if runner != "modal":
        session.error(f"--runner {runner}: expected local or modal")
    session.chdir(REPO)
    install_subset(session, ["pyyaml"])
    if "--dry-run" not in rest:
        session.install("--require-hashes", "--no-deps", "-r", os.path.join(REPO, "locks", "modal.txt"))
    session.run("python", "-m", "harness.runner", command, *rest)
    return True


@nox.session(python=PYTHON)
def test(session: nox.Session) -> None:
    """pytest: the CPU tier always; the gpu / sm90 / sm100 tiers where such a GPU is present.
    `-- --runner modal [--gpu ...]`: the GPU tiers on Modal, one container per test file (harness/runner)."""
    if remote_runner(session, "test"):
        return
    install(session)
    if lock_name() in MODAL_CLIENT_LOCKS:
        # The Modal client, so that the CPU tier drives the runner's Modal backend with the real client
        # (tests/test_runner_modal_client.py; it skips, saying so, where the client is missing).
        session.install("--require-hashes", "--no-deps", "-r", os.path.join(REPO, "locks", "modal.txt"))
    args = session.posargs or ["-q"]
    if not session.posargs and not has_nvidia_gpu():
        # The CPU tier spread over the cores (pytest-xdist, pinned in the dev lock): ~4 min instead of
        # ~7 on two cores. With a GPU the tiers run in one process, one test at a time on the device.
        args += ["-n", "auto", "--dist", "worksteal"]
    session.run("python", "-m", "pytest", *args)


@nox.session(python=PYTHON)
def runner_dsl(session: nox.Session) -> None:
    """The packaged sm100 kernels compiled with the leaderboard runner's CuTe DSL, no GPU needed.

    The runner has CuTe DSL 4.3.5 (development uses 4.8.1): tests/test_packaged_compile.py in
    locks/runner-dsl.txt."""
    install_locked(session, "runner-dsl")
    session.run("python", "-m", "pytest", "-q", "tests/test_packaged_compile.py", *session.posargs,
                env={"NVFP4_RUNNER_DSL": "1"})


@nox.session(python=PYTHON)
def b200(session: nox.Session) -> None:
    """The B200 owner's one command: the sm100 kernels checked and timed, a verdict per kernel.

    `nox -s b200 [-- --reference-kernels DIR]`: on a B200, the sm100 tier, stress data, leaderboard mode,
    optionally the leaderboard's own eval files from a reference-kernels checkout, and each case against
    its expected time: one results JSON and a verdict per kernel (harness/b200); then every registered sm100
    variant forced through the gate on each benchmark case, written to the gates table results/b200/gates.json
    that `nox -s package` bakes into the bundles (`-- --variants skip|only`). Elsewhere: says so, exit 0.
    `-- --dsl dev`: the table for packages made with `nox -s package -- --dsl dev` (default: the runner's DSL).
    `-- --runner modal`: the same on a Modal B200, one container per problem and one for the tier."""
    if remote_runner(session, "b200"):
        return
    if not has_nvidia_gpu():
        session.log("b200: no NVIDIA GPU here (nvidia-smi -L fails); nothing to run. The CPU tier is `nox -s test`.")
        return
    # The gates table is measured under the CuTe DSL of the package target it is for: the leaderboard
    # runner's (locks/b200.txt, the default) or, with `-- --dsl dev`, development's (locks/gpu.txt). In the
    # container (NVFP4_LOCK=leaderboard) the environment already is the runner's.
    targets, _ = option_values(session, "--dsl")
    dsl = targets[-1] if targets else "runner"
    if dsl not in B200_LOCKS:
        session.error(f"b200: --dsl {dsl}: expected one of {', '.join(B200_LOCKS)}")
    if lock_name() in ("leaderboard", "none"):
        install(session)
    else:
        install_locked(session, B200_LOCKS[dsl])
    session.run("python", "-m", "scripts.b200", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    install_subset(session, ["ruff"])
    session.run("ruff", "check", ".")


# What `bench` installs where there is no GPU, pinned by locks/dev.txt: torch and its dependencies (numpy
# too: torch warns without it), PyYAML, rich, and setuptools (the editable install's backend).
EVAL_CPU_PACKAGES = ["torch", "filelock", "typing-extensions", "sympy", "mpmath", "networkx", "jinja2", "markupsafe",
                     "fsspec", "numpy", "pyyaml", "rich", "markdown-it-py", "mdurl", "pygments", "setuptools"]


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """The evaluator in benchmark mode; its results JSON goes to results/local/ (git-ignored).

    `nox -s bench -- PROBLEM [eval options]` (--json OUT puts the results elsewhere); PROBLEM and --mode are
    checked before anything is installed.
    `--runner modal [--gpu B200|H200|H100] [--timeout S] [--max-gpus N] [--dry-run]`: on Modal GPUs, one
    container per case (harness/runner)."""
    if not session.posargs:
        session.error("usage: nox -s bench -- PROBLEM [--impl ...] [--data ...] [--device ...] [--runner modal]")
    check_arguments(session, "bench", "harness.arguments:check_eval_arguments", option_values(session, "--runner")[1])
    if remote_runner(session, "bench"):
        return
    if lock_name() == "dev" and not has_nvidia_gpu():
        # No GPU: the evaluator runs the impls' portable paths, which need torch, PyYAML and rich only.
        # Leaving out CuTe DSL, cuda-python and the test tools halves a fresh clone's first run (~45 s
        # instead of ~65 s on two cores, most of it unpacking torch).
        install_subset(session, EVAL_CPU_PACKAGES)
        session.install("--no-deps", "--no-build-isolation", "-e", REPO)
    else:
        install(session)
    args = list(session.posargs)
    if "--mode" not in args:
        args += ["--mode", "benchmark"]
    if "--json" not in args:
        args += ["--json", local_results_path(args[0])]
    session.run("python", "-m", "harness.eval", *args)


# A user's own runs land here, which git ignores: results/*.json is the committed record that the docs
# and the report tests read, so a run of `bench` must not add to it (nor leave an untracked file there).
# To share a run, move it up into results/ and commit it.
LOCAL_RESULTS = "results/local"


def local_results_path(stem: str) -> str:
    """Where a session writes a user's results file: results/local/STEM-<UTC stamp>.json."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{LOCAL_RESULTS}/{stem}-{stamp}.json"


@nox.session(python=PYTHON)
def report(session: nox.Session) -> None:
    """Redraw results/summary.png from the newest GPU results per problem.

    `python -m harness.report --summary`; run it whenever results are committed. Extra args go to
    harness.report (e.g. --plot OUT.png FILES, --device NAME)."""
    session.chdir(REPO)
    install(session)
    session.run("python", "-m", "harness.report", *(session.posargs or ["--summary"]))


REPO = os.path.dirname(os.path.abspath(__file__))
LOCK_FILES = {
    "dev": ["locks/dev.txt"],
    "gpu": ["locks/gpu.txt"],
    "leaderboard": ["locks/leaderboard.txt", "locks/tools.txt"],
    "runner-dsl": ["locks/runner-dsl.txt"],  # `nox -s runner_dsl` only
    "b200": ["locks/b200.txt"],  # `nox -s b200`: gpu.txt with the leaderboard runner's CuTe DSL
}
B200_LOCKS = {"runner": "b200", "dev": "gpu"}  # `nox -s b200 -- --dsl TARGET`: the lock it measures under
CPU_TORCH_LOCKS = ("dev", "runner-dsl")  # their torch is the +cpu wheel
MODAL_CLIENT_LOCKS = ("dev", "gpu")  # Python 3.11 locks whose shared pins equal locks/modal.txt's (test_environment)


def lock_name() -> str:
    name = os.environ.get("NVFP4_LOCK") or ("gpu" if has_nvidia_gpu() else "dev")
    choices = ("dev", "gpu", "leaderboard")
    if name not in choices and name != "none":
        raise SystemExit(f"NVFP4_LOCK={name!r}: expected one of {', '.join(choices)}, none")
    return name


def install_locked(session: nox.Session, name: str | None = None) -> None:
    """Install a lock exactly (hashes checked, no resolver), then this repository without deps."""
    name = name or lock_name()
    if name == "none":  # unlocked: torch to fit the machine, then the project's ranges
        session.install(*torch_requirement())
        session.install("-e", ".[dev]")
        return
    args = ["--require-hashes", "--no-deps"]
    for f in LOCK_FILES[name]:
        args += ["-r", os.path.join(REPO, f)]
    if name in CPU_TORCH_LOCKS:
        args += cpu_torch_index()
    session.install(*args)
    session.install("--no-deps", "--no-build-isolation", "-e", REPO)


def install_subset(session: nox.Session, names: list[str], lock: str = "locks/dev.txt") -> None:
    """Install only `names` from a lock, with their pinned hashes (e.g. PyYAML for the packager, which
    needs no torch)."""
    text = open(os.path.join(REPO, lock)).read()
    norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()  # noqa: E731
    blocks = {norm(m.group(1)): m.group(0)
              for m in re.finditer(r"^([A-Za-z0-9._-]+)==[^\n]*(?:\n    [^\n]*)*", text, flags=re.M)}
    missing = {norm(n) for n in names} - blocks.keys()
    if missing:
        session.error(f"{lock} has no pin for {', '.join(sorted(missing))}")
    keep = [blocks[norm(n)] for n in names]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(keep) + "\n")
    extra = cpu_torch_index() if "torch" in map(norm, names) and lock == "locks/dev.txt" else []
    session.install("--require-hashes", "--no-deps", "-r", f.name, *extra)
    os.unlink(f.name)


def cpu_torch_index() -> list[str]:
    """Where the +cpu torch wheel comes from: a local wheel directory pip knows, else PyTorch's CPU index."""
    local = any(glob.glob(os.path.join(d, f"torch-{TORCH_VERSION}+cpu-*.whl")) for d in _pip_find_links())
    return [] if local else ["--extra-index-url", TORCH_CPU_INDEX]  # the wheel is hash pinned either way


@nox.session(python=PYTHON)
def package(session: nox.Session) -> None:
    """The single-file submission the leaderboard accepts, in dist/PROBLEM/submission.py.

    `nox -s package -- [PROBLEM] [--kernel NAME] [--gpu B200|NVIDIA] [--leaderboard NAME] [-o FILE]`
    (no PROBLEM: all four)."""
    session.chdir(REPO)
    args = list(session.posargs)
    if args and not args[0].startswith("-"):
        commands = [args]
    else:  # every problem, with the options given
        import_harness()
        from harness.arguments import PROBLEM_NAMES

        commands = [[problem, *args] for problem in PROBLEM_NAMES]
    for argv in commands:
        check_arguments(session, "package", "harness.package:check_arguments", argv)
    install_subset(session, ["pyyaml"])
    for argv in commands:
        session.run("python", "-m", "harness.package", *argv)


@nox.session(python=PYTHON)
def submit(session: nox.Session) -> None:
    """Package, send with popcorn-cli, and write the reply as results JSON and a table.

    `nox -s submit -- PROBLEM --mode test|benchmark|leaderboard [--gpu ...] [--force]`; the reply goes to
    results/local/PROBLEM-popcorn-*.json. Past the leaderboard's deadline (docs/spec/upstream) it refuses and
    sends nothing, unless --force."""
    if not session.posargs:
        session.error("usage: nox -s submit -- PROBLEM --mode test|benchmark|leaderboard [--gpu B200|NVIDIA]")
    session.chdir(REPO)
    # The arguments, the deadline, the CLI, POPCORN_API_URL and the registration are checked before
    # anything is installed (harness/submit.py needs only the standard library for that).
    check_arguments(session, "submit", "harness.submit:check_arguments", session.posargs)
    from harness.deadlines import closed_message
    from harness.submit import Prerequisite, preflight

    board = next((b for a, b in zip(session.posargs, session.posargs[1:]) if a == "--leaderboard"), None)
    closed = None if "--force" in session.posargs else closed_message(session.posargs[0], board)
    if closed:
        session.error(f"submit: {closed}")
    try:
        preflight()
    except Prerequisite as e:
        session.error(f"submit: {e}")
    install_locked(session, "dev" if lock_name() in ("dev", "none") else lock_name())
    session.run("python", "-m", "harness.submit", *session.posargs)
