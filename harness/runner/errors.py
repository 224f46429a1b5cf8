"""The runner's errors: each is one line that says what to do, with the exit status it ends with."""

from __future__ import annotations

EXIT_FAILED = 1  # a remote job failed without an exit status of its own
EXIT_USAGE = 2  # bad arguments (an unknown GPU type included)
EXIT_PREREQ = 3  # modal not installed, not authenticated (as harness/submit.py's missing prerequisites)
EXIT_TIMEOUT = 124  # a job ran past --timeout or Modal's limit (as timeout(1))
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it)


class RunnerError(Exception):
    """A one-line error and the exit status that goes with it."""

    def __init__(self, message: str, status: int = EXIT_FAILED):
        super().__init__(message)
        self.status = status
