"""Modal's exceptions, each made one line with its exit status (harness/runner/errors.py).

Matched by class against the installed client's own classes (`errors` is modal.exception), so that a
subclass lands where its family does: ConflictError is an InvalidError, MountUploadTimeoutError one of
Modal's TimeoutErrors. Python's built-in TimeoutError (a socket that gave up) is not Modal's timeout: it is
a failure to talk to Modal, not a job that ran too long.
"""

from __future__ import annotations

from harness.runner.credentials import TOKEN_HINT
from harness.runner.errors import EXIT_FAILED, EXIT_PREREQ, EXIT_TIMEOUT, EXIT_USAGE, RunnerError
from harness.runner.plan import MODAL_TIMEOUT_MARGIN_S

IMAGE_BUILDER_HINT = ("the image needs Modal's image builder {builder} (its Python {python}) and Modal refused it: "
                      "raise the workspace's image builder version to {builder} in Modal's settings (Image Config)")


def _text(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _old_image_builder(exc: BaseException, errors) -> bool:
    """The client refuses the image's Python on an image builder that predates it (InvalidError), or an
    image builder version it does not know (VersionError)."""
    text = str(exc)
    return isinstance(exc, errors.VersionError) or (
        isinstance(exc, errors.InvalidError) and ("Unsupported Python version" in text or "Image builder" in text))


def explain(exc: BaseException, errors, *, timeout_s: int, gpu: str, python: str, builder: str,
            job: str | None = None) -> RunnerError:
    """One line for an exception the Modal client raised; `job` names the job it was raised for."""
    kind, text = type(exc).__name__, _text(exc)
    where = f"{job}: " if job else ""
    if isinstance(exc, errors.AuthError):
        return RunnerError(f"{TOKEN_HINT} (Modal said: {text})", EXIT_PREREQ)
    if isinstance(exc, errors.FunctionTimeoutError):
        return RunnerError(f"{where}timeout: ran past Modal's limit of {timeout_s + MODAL_TIMEOUT_MARGIN_S} s "
                           f"(--timeout {timeout_s} s + {MODAL_TIMEOUT_MARGIN_S} s to start) ({text})", EXIT_TIMEOUT)
    if isinstance(exc, errors.TimeoutError):
        return RunnerError(f"{where}timeout: {kind}: {text}", EXIT_TIMEOUT)
    if _old_image_builder(exc, errors):
        return RunnerError(f"{IMAGE_BUILDER_HINT.format(python=python, builder=builder)} (Modal said: {text})",
                           EXIT_PREREQ)
    if isinstance(exc, errors.InvalidError | errors.NotFoundError | errors.ResourceExhaustedError) \
            and "gpu" in text.lower():
        return RunnerError(f"GPU type {gpu} is not available on Modal now: {text}", EXIT_USAGE)
    if isinstance(exc, TimeoutError):
        return RunnerError(f"{where}no answer from Modal in time (a network timeout, not the job's): {text}",
                           EXIT_FAILED)
    return RunnerError(f"{where}remote failure: {kind}: {text}", EXIT_FAILED)
