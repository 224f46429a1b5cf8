"""`--runner modal` driven by the real, pinned Modal client (locks/modal.txt; `nox -s test` installs it), as far
as it goes without Modal's servers; every test here skips, saying why, where the client is not installed.

- the objects: the image and the function built by the client itself, with every warning an error (a
  deprecated keyword, like Function.map's wrap_returned_exceptions, fails here);
- the exception mapping fed the client's own exception classes, subclasses included;
- the credential check against the client's own decision, case by case;
- the image builder and the Python it gives, against the client's own tables;
- end to end: `python -m harness.runner` against tests/modal_local_server.py, a local server speaking the
  client's gRPC protocol (modal_proto): the image's layers, the function's GPU, timeout and container cap,
  the packed tree uploaded, one call per job, a job that times out and one that raises named with their
  exit status, the app recorded, and Ctrl-C. Nothing reaches Modal: MODAL_SERVER_URL is a local socket.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import warnings
from pathlib import Path

import pytest

modal = pytest.importorskip("modal", reason="the Modal client is not installed (nox -s test installs locks/modal.txt)")

from harness.runner import credentials, image, modal_backend  # noqa: E402
from harness.runner.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_PREREQ, EXIT_TIMEOUT, EXIT_USAGE  # noqa: E402
from harness.runner.job import BUNDLE_PATH, remote_entry  # noqa: E402
from harness.runner.modal_errors import explain  # noqa: E402
from harness.runner.plan import make_plan  # noqa: E402
from tests.modal_local_server import LocalModal  # noqa: E402
from tests.test_runner import CREDENTIAL_CASES, SMALL_CASES, bench_doc, ok_result  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
errors = modal.exception
SPEC = image.image_spec()


@pytest.fixture
def socket():
    """A path for the local server's socket: short, as a Unix socket's path must be (108 bytes on Linux,
    104 on macOS), which pytest's tmp_path under xdist need not be."""
    directory = tempfile.mkdtemp(prefix="nvfp4-modal-")
    yield Path(directory) / "modal.sock"
    shutil.rmtree(directory, ignore_errors=True)


def test_the_pinned_client_is_the_locks():
    assert modal.__version__ == image.lock_pins("locks/modal.txt")["modal"]


def test_the_image_and_the_function_build_with_no_warning(tmp_path):
    plan = make_plan("bench", ["gemv"], "H100", 600, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # modal.exception.DeprecationError is a UserWarning: every warning fails
        built = modal_backend.build_image(modal, SPEC, tmp_path / "tree.tar.gz")
        app = modal.App("nvfp4-runner-test")
        function = app.function(image=built, **modal_backend.function_options(plan))(remote_entry)
    assert isinstance(built, modal.Image) and isinstance(function, modal.Function)


def test_modal_image_builder_and_python_are_the_clients():
    """The builder the runner asks for is one the client knows, and it gives the Python the spec says."""
    from modal._image import SUPPORTED_PYTHON_SERIES  # the client's own tables (no public accessor)
    from modal.mount import PYTHON_STANDALONE_VERSIONS

    assert SPEC["python"] in SUPPORTED_PYTHON_SERIES[SPEC["image_builder"]]
    assert PYTHON_STANDALONE_VERSIONS[SPEC["image_builder"]][SPEC["python"]][1] == SPEC["python_release"]


def explained(exc: BaseException, job: str | None = None):
    return explain(exc, errors, timeout_s=600, gpu="H200", python="3.13.17", builder="2026.10", job=job)


def old_builder_error() -> BaseException:
    """The client's own refusal of Python 3.13 on image builder 2024.04."""
    from modal._image import _validate_python_version

    with pytest.raises(errors.InvalidError) as e:
        _validate_python_version("3.13", "2024.04", allow_micro_granularity=False)
    return e.value


@pytest.mark.parametrize(("exc", "status", "start"), [
    (errors.FunctionTimeoutError("Function timed out"), EXIT_TIMEOUT,
     "gemv [m: 1]: timeout: ran past Modal's limit of 720 s (--timeout 600 s + 120 s to start)"),
    (errors.MountUploadTimeoutError("upload stalled"), EXIT_TIMEOUT, "gemv [m: 1]: timeout: MountUploadTimeoutError"),
    (TimeoutError("timed out"), EXIT_FAILED, "gemv [m: 1]: no answer from Modal in time (a network timeout"),
    (errors.AuthError("Token is invalid"), EXIT_PREREQ, "not authenticated with Modal"),
    (errors.ConflictError("GPU type 'H200' is not available in your workspace"), EXIT_USAGE,
     "GPU type H200 is not available on Modal now"),
    (errors.ResourceExhaustedError("No GPU capacity"), EXIT_USAGE, "GPU type H200 is not available on Modal now"),
    (old_builder_error(), EXIT_PREREQ, "the image needs Modal's image builder 2026.10 (its Python 3.13.17)"),
    (errors.VersionError("This version of the modal client supports ..."), EXIT_PREREQ,
     "the image needs Modal's image builder 2026.10"),
    (errors.ExecutionError("container crashed"), EXIT_FAILED, "gemv [m: 1]: remote failure: ExecutionError"),
    (RuntimeError("CUDA error: out of memory"), EXIT_FAILED, "gemv [m: 1]: remote failure: RuntimeError"),
], ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else None)
def test_the_clients_exceptions_are_matched_by_class(exc, status, start):
    got = explained(exc, job="gemv [m: 1]")
    assert (got.status, "\n" in str(got)) == (status, False)
    assert str(got).startswith(start), str(got)


CLIENT_DECIDES = """
import importlib, json, os, sys
import modal, modal.config, modal.client
verdicts = []
for env, config in json.loads(sys.stdin.read()):
    for key in [k for k in os.environ if k.startswith("MODAL_")]:
        del os.environ[key]
    os.environ.update(env)
    # the client reads its config file and profile once, at import: read them again for this case, and
    # forget the client it made for the last one (private, but the only way to ask it twice in one process)
    importlib.reload(modal.config)
    modal.client._Client._client_from_env = None
    try:
        modal.Client.from_env()
        verdicts.append("ok")
    except (modal.exception.AuthError, modal.exception.InvalidError) as e:
        verdicts.append(type(e).__name__ + ": " + str(e).splitlines()[0])
print(json.dumps(verdicts))
"""


def rsa_key_pem() -> str:
    """A key the client takes as MODAL_OAUTH_JWT_KEY (an unencrypted 2048-bit RSA key, PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def test_the_credential_check_agrees_with_the_client_on_every_case(tmp_path, socket):
    pem = rsa_key_pem()
    cases = []
    for i, (_, config, env, _want) in enumerate(CREDENTIAL_CASES):
        path = tmp_path / f"modal-{i}.toml"
        if config is not None:
            path.write_text(config)
        env = {k: pem if k == "MODAL_OAUTH_JWT_KEY" else v for k, v in env.items()}
        cases.append(({**env, "MODAL_CONFIG_PATH": str(path)}, None))
    with LocalModal(lambda job: ("hang", None), socket) as server:  # the client connects at once
        cases = [({**env, "MODAL_SERVER_URL": server.url}, None) for env, _ in cases]
        run = subprocess.run([sys.executable, "-c", CLIENT_DECIDES], input=json.dumps(cases), capture_output=True,
                             text=True, timeout=120, cwd=REPO)
    assert run.returncode == 0, run.stderr
    for (name, _, _, want), (env, _), client in zip(CREDENTIAL_CASES, cases, json.loads(run.stdout.splitlines()[-1])):
        ours = credentials.problem(env)
        assert (ours is None) == (client == "ok"), (name, ours, client)
        assert (ours is None) == (want is None), name


# ----- end to end, against a local server speaking the client's protocol --------------------------------
DRIVER = """
import sys, warnings
from pathlib import Path
import modal.exception
warnings.simplefilter("error", modal.exception.DeprecationError)
warnings.simplefilter("error", DeprecationWarning)
from harness.runner import cli
cli.LOCAL_RESULTS = Path(sys.argv[1])
sys.exit(cli.main(sys.argv[2:]))
"""
CASES = [*SMALL_CASES, "m: 512; k: 256; l: 1; seed: 3"]


def client_env(server: LocalModal, tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODAL_")}
    return {**env, "MODAL_SERVER_URL": server.url, "MODAL_TOKEN_ID": "ak-local", "MODAL_TOKEN_SECRET": "as-local",
            "MODAL_CONFIG_PATH": str(tmp_path / "no-modal.toml")}


def start_client(server: LocalModal, tmp_path: Path, argv: list[str]) -> subprocess.Popen:
    """The runner as a user starts it from a terminal, where Ctrl-C is delivered: SIGINT back to its default
    disposition, which a test run started in the background (`cmd &` in a script) would hand down ignored."""
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path / "results"), *argv], cwd=REPO,
                            env=client_env(server, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def case_answers(job: dict):
    """Job 0 passes; job 1 runs past Modal's timeout; job 2's container raises."""
    if job["index"] == 1:
        return "timeout", "Function call timed out after 720 s"
    if job["index"] == 2:
        return "error", RuntimeError("CUDA error: an illegal memory access was encountered")
    case = {"m": 128, "k": 256, "l": 1, "seed": 1111}
    return "ok", {**ok_result(job["index"], bench_doc(case, 5000.0)), "name": job["name"]}


def written(tmp_path: Path) -> dict:
    (path,) = (tmp_path / "results").glob("*.json")
    return json.loads(path.read_text())


def uploaded_tree(server: LocalModal) -> list[str]:
    """The files of the packed working tree the client uploaded (the one gzip among the mount files)."""
    (packed,) = [data for data in server.mount_files.values() if data[:2] == b"\x1f\x8b"]
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        return tar.getnames()


def test_a_run_through_the_real_client_builds_uploads_calls_and_names_each_failure(tmp_path, socket):
    """The workspace is on image builder 2023.12, which has no Python 3.13: the runner asks for its own."""
    with LocalModal(case_answers, socket, image_builder="2023.12") as server:
        argv = ["bench", "gemv", *[a for c in CASES for a in ("--case", c)], "--gpu", "H100", "--timeout", "600",
                "--max-gpus", "2"]
        client = start_client(server, tmp_path, argv)
        out, err = client.communicate(timeout=120)
    assert client.returncode == EXIT_TIMEOUT, err
    assert server.unanswered == []
    # the image, layer by layer, on the builder the runner pins
    layers = server.named("ImageGetOrCreate")
    assert {r.builder_version for r in layers} == {SPEC["image_builder"]}
    commands = [c for r in layers for c in r.image.dockerfile_commands]
    assert "FROM nvidia/cuda:13.1.0-devel-ubuntu24.04" in commands
    assert f"RUN {image.apt_command(SPEC)}" in commands and "--no-install-recommends" in image.apt_command(SPEC)
    assert sum("--require-hashes --no-deps" in c for c in commands) == len(SPEC["locks"])
    mounts = {r.deployment_name for r in server.named("MountGetOrCreate")}
    assert f"python-build-standalone.20261021.{SPEC['python_release']}-gnu" in mounts
    # the function: its GPU, Modal's timeout, the container cap, no retries
    (created,) = server.named("FunctionCreate")
    function = created.function
    assert (function.resources.gpu_config.gpu_type, function.timeout_secs) == ("H100!", 720)
    assert (function.autoscaler_settings.max_containers, function.retry_policy.retries) == (2, 0)
    # the working tree as it is, and one call per job
    files = uploaded_tree(server)
    assert "harness/runner/job.py" in files and not any(f.startswith(("results/", ".git/")) for f in files)
    assert any(f.filename == BUNDLE_PATH for r in server.named("MountGetOrCreate") for f in r.files)
    assert len(server.named("FunctionMap")) == 3
    # each failure named with its job and its status; the app recorded
    assert f"gemv [{CASES[1]}]: TIMEOUT, exit 124: timeout: ran past Modal's limit of 720 s" in err
    assert f"gemv [{CASES[2]}]: FAILED, exit 1: remote failure: RuntimeError: CUDA error: an illegal memory" in err
    doc = written(tmp_path)
    app_id = doc["remote"]["modal_app"]["app_id"]
    assert app_id.startswith("ap-") and doc["remote"]["modal_app"]["url"].endswith(app_id)
    assert [j["rc"] for j in doc["remote"]["jobs"]] == [0, EXIT_TIMEOUT, EXIT_FAILED]
    assert len(doc["impls"]["submission"]["cases"]) == 1 and doc["remote"]["interrupted"] is False


def test_ctrl_c_through_the_real_client_stops_the_app_and_marks_the_run(tmp_path, socket):
    """Job 1 never finishes; Ctrl-C while the client waits for it: exit 130, the app stopped, the first
    job's result written and the run marked interrupted (Modal's app runner alone would swallow it)."""
    def answers(job):
        return ("hang", None) if job["index"] == 1 else case_answers(job)

    with LocalModal(answers, socket) as server:
        client = start_client(server, tmp_path, ["bench", "gemv", "--case", CASES[0], "--case", CASES[1]])
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(client.stderr), daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while not any(line.startswith("[1/2] ") for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)  # job 0's result has come back; job 1's is awaited
        sent_after = time.monotonic() - deadline + 60
        client.send_signal(signal.SIGINT)
        try:
            client.wait(timeout=60)
        except subprocess.TimeoutExpired:
            client.kill()
            reader.join(10)
            pytest.fail(f"the client did not stop within 60 s of Ctrl-C (sent {sent_after:.1f} s after it started); "
                        f"its stderr:\n{''.join(lines)[-4000:]}")
        reader.join(10)
        assert server.disconnected.is_set()
    err = "".join(lines)
    assert client.returncode == EXIT_INTERRUPTED, err
    assert "runner: interrupted (Ctrl-C): 1 of 2 jobs came back" in err
    doc = written(tmp_path)
    assert doc["remote"]["interrupted"] is True
    assert [j.get("error") for j in doc["remote"]["jobs"]] == [None, "interrupted before it finished"]
