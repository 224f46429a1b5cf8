"""Modal itself: the prerequisites, the image, the function and the map over the jobs.

The only module that imports `modal`, and only inside require_modal(), so that --dry-run, the CPU
sessions and the tests run without it. Errors from Modal become one line each (explain()), matched by
the exception's class name so that the tests can raise look-alikes without Modal installed.
"""

from __future__ import annotations

import importlib
import os
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.runner.errors import EXIT_FAILED, EXIT_PREREQ, EXIT_TIMEOUT, EXIT_USAGE, RunnerError
from harness.runner.job import BUNDLE_PATH, remote_entry
from harness.runner.plan import GPUS, REPO, Plan

INSTALL_HINT = ("modal is not installed: pip install --require-hashes --no-deps -r locks/modal.txt "
                "(or pip install -e '.[modal]'); `nox -s bench -- ... --runner modal` installs it itself")
TOKEN_HINT = "not authenticated with Modal: run `modal token new` (or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET)"
MODAL_TIMEOUT_MARGIN_S = 120  # unpacking the tree and probing the GPU, beyond the command's own timeout


def require_modal(importer: Callable = importlib.import_module):
    """The modal module, or RunnerError saying how to install it."""
    try:
        return importer("modal")
    except ImportError:
        raise RunnerError(INSTALL_HINT, EXIT_PREREQ) from None


def has_token(env: dict | None = None, config_path: Path | None = None) -> bool:
    """Whether Modal's client has credentials: MODAL_TOKEN_ID/SECRET, or a profile with both in the config
    file that `modal token new` writes (MODAL_CONFIG_PATH, default ~/.modal.toml). No network: whether
    the token is still valid shows on the first call (AuthError, explained below)."""
    env = os.environ if env is None else env
    if env.get("MODAL_TOKEN_ID") and env.get("MODAL_TOKEN_SECRET"):
        return True
    path = config_path or Path(env.get("MODAL_CONFIG_PATH") or Path.home() / ".modal.toml")
    try:
        config = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return False
    profile = env.get("MODAL_PROFILE")
    profiles = [config.get(profile, {})] if profile else [p for p in config.values() if isinstance(p, dict)]
    return any(p.get("token_id") and p.get("token_secret") for p in profiles)


def require_token(env: dict | None = None, config_path: Path | None = None) -> None:
    if not has_token(env, config_path):
        raise RunnerError(TOKEN_HINT, EXIT_PREREQ)


def explain(exc: BaseException, plan: Plan) -> RunnerError:
    """One line for an exception raised by Modal's client."""
    kind, text = type(exc).__name__, " ".join(str(exc).split())[:300]
    if kind == "AuthError":
        return RunnerError(f"{TOKEN_HINT} (Modal said: {text})", EXIT_PREREQ)
    if kind in ("FunctionTimeoutError", "TimeoutError"):
        return RunnerError(f"timeout: a job ran past Modal's limit of {plan.timeout_s + MODAL_TIMEOUT_MARGIN_S} s "
                           f"({text})", EXIT_TIMEOUT)
    if kind in ("InvalidError", "NotFoundError", "ResourceExhaustedError") and "gpu" in text.lower():
        return RunnerError(f"GPU type {plan.gpu} is not available on Modal now: {text}", EXIT_USAGE)
    return RunnerError(f"remote failure: {kind}: {text}", EXIT_FAILED)


def build_image(modal, spec: dict, bundle_file: Path):
    """The image of image.image_spec, with this package and the packed tree mounted (not baked in: an edit
    reuses the cached image)."""
    image = modal.Image.from_registry(spec["base"], add_python=spec["python"]).apt_install(*spec["apt"])
    for lock in spec["locks"]:
        image = image.pip_install_from_requirements(str(REPO / lock), extra_options=spec["pip_options"])
    return (image.env(spec["env"])
            .add_local_python_source("harness")
            .add_local_file(str(bundle_file), BUNDLE_PATH))


def run(plan: Plan, spec: dict, bundle_file: Path, jobs: list[dict]) -> Iterator[dict | BaseException]:
    """Each job's result as it finishes (any order), or the exception Modal raised for it."""
    modal = require_modal()
    require_token()
    app = modal.App("nvfp4-runner")
    function = app.function(image=build_image(modal, spec, bundle_file), gpu=GPUS[plan.gpu].modal_name,
                            timeout=plan.timeout_s + MODAL_TIMEOUT_MARGIN_S, max_containers=plan.max_gpus,
                            retries=0, serialized=True)(remote_entry)
    try:
        with modal.enable_output(), app.run():
            yield from function.map(jobs, order_outputs=False, return_exceptions=True, wrap_returned_exceptions=False)
    except RunnerError:
        raise
    except Exception as e:  # noqa: BLE001 - Modal's client errors, made one line
        raise explain(e, plan) from None
