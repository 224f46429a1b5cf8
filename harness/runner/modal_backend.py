"""Modal itself: the prerequisites, the image, the function, one call per job and its outcome.

The only module that imports `modal`, and only inside require_modal(), so that --dry-run, the CPU
sessions and the tests without the client run without it. Every keyword passed to the client is one the
pinned release (locks/modal.txt) takes without a deprecation warning: tests/test_runner_modal_client.py
builds these objects with warnings as errors.

One call per job (Function.spawn), each awaited concurrently, so that a result or an exception is known
to belong to its job as it comes back (Function.map with order_outputs=False yields exceptions without
their input). Ctrl-C is caught here, inside the app's context: Modal's app runner would otherwise swallow
it and return as if the run had ended; the run is marked Interrupted and the app stopped, which stops
its containers.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from harness.runner import credentials
from harness.runner.errors import EXIT_PREREQ, RunnerError
from harness.runner.image import apt_command
from harness.runner.job import BUNDLE_PATH, remote_entry
from harness.runner.modal_errors import explain
from harness.runner.outcomes import Interrupted, JobError, RemoteApp
from harness.runner.plan import GPUS, MODAL_TIMEOUT_MARGIN_S, REPO, Plan

INSTALL_HINT = ("modal is not installed: pip install --require-hashes --no-deps -r locks/modal.txt "
                "(or pip install -e '.[modal]'); `nox -s bench -- ... --runner modal` installs it itself")
APP_NAME = "nvfp4-runner"


def require_modal(importer: Callable = importlib.import_module):
    """The modal module, or RunnerError saying how to install it."""
    try:
        return importer("modal")
    except ImportError:
        raise RunnerError(INSTALL_HINT, EXIT_PREREQ) from None


def require_token(env: dict | None = None) -> None:
    trouble = credentials.problem(env)
    if trouble:
        raise RunnerError(trouble, EXIT_PREREQ)


def build_image(modal, spec: dict, bundle_file: Path):
    """The image of image.image_spec, with this package and the packed tree mounted (not baked in: an edit
    reuses the cached image)."""
    image = modal.Image.from_registry(spec["base"], add_python=spec["python"]).run_commands(apt_command(spec))
    for lock in spec["locks"]:
        image = image.pip_install_from_requirements(str(REPO / lock), extra_options=spec["pip_options"])
    return (image.env(spec["env"])
            .add_local_python_source("harness")
            .add_local_file(str(bundle_file), BUNDLE_PATH))


def function_options(plan: Plan) -> dict:
    """The keywords of app.function: the job's GPU, Modal's timeout (the job's own plus the start), at most
    --max-gpus containers, no retries (a failed job is reported, not rerun)."""
    return {"gpu": GPUS[plan.gpu].modal_name, "timeout": plan.timeout_s + MODAL_TIMEOUT_MARGIN_S,
            "max_containers": plan.max_gpus, "retries": 0, "serialized": True}


@contextlib.contextmanager
def image_builder(version: str):
    """MODAL_IMAGE_BUILDER_VERSION for this process while the app runs (the client reads it per build)."""
    old = os.environ.get("MODAL_IMAGE_BUILDER_VERSION")
    os.environ["MODAL_IMAGE_BUILDER_VERSION"] = version
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MODAL_IMAGE_BUILDER_VERSION", None)
        else:
            os.environ["MODAL_IMAGE_BUILDER_VERSION"] = old


CANCEL_WAIT_S = 2.0  # how long a run interrupted by Ctrl-C waits for its other calls to be cancelled


def completion_order(calls: dict[int, object]) -> Iterator[tuple[int, object]]:
    """(job index, its result or the exception its call raised), as each call finishes."""

    async def outcome(index: int, call) -> tuple[int, object]:
        try:
            return index, await call.get.aio()
        except Exception as e:  # noqa: BLE001 - the job's failure, handed to the caller with its index
            return index, e

    loop = asyncio.new_event_loop()
    pending = {loop.create_task(outcome(i, c)) for i, c in calls.items()}
    try:
        while pending:
            done, pending = loop.run_until_complete(asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED))
            for task in done:
                yield task.result()
    finally:
        for task in pending:
            task.cancel()
        if pending:  # bounded: a call the client does not let go of must not hold up Ctrl-C (the app's stop ends it)
            _, still = loop.run_until_complete(asyncio.wait(pending, timeout=CANCEL_WAIT_S))
            for task in still:  # left to the app's stop; without asyncio's "destroyed but pending" line
                task._log_destroy_pending = False
        loop.close()


def run(plan: Plan, spec: dict, bundle_file: Path, jobs: list[dict]) -> Iterator:
    """Each job's result or JobError as it finishes (any order), the RemoteApp first, Interrupted last."""
    modal = require_modal()
    require_token()

    def one_line(e: BaseException) -> RunnerError:
        return explain(e, modal.exception, timeout_s=plan.timeout_s, gpu=plan.gpu,
                       python=spec["python_release"] or spec["python"], builder=spec["image_builder"])

    app = modal.App(APP_NAME)
    function = app.function(image=build_image(modal, spec, bundle_file), **function_options(plan))(remote_entry)
    interrupted = False
    try:
        with image_builder(spec["image_builder"]), modal.enable_output(), app.run():
            yield RemoteApp(app.app_id, app.get_dashboard_url())
            try:
                calls = {job["index"]: function.spawn(job) for job in jobs}
                for index, value in completion_order(calls):
                    yield JobError(index, one_line(value)) if isinstance(value, BaseException) else value
            except KeyboardInterrupt:
                interrupted = True  # leaving the block normally stops the app and its containers
    except KeyboardInterrupt:
        interrupted = True  # during the image build or the app's start or stop
    except RunnerError:
        raise
    except Exception as e:  # noqa: BLE001 - Modal's client errors, made one line
        raise one_line(e) from None
    if interrupted:
        yield Interrupted()
