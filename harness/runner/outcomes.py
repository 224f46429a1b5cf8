"""What a run over Modal gives back, as the command line collects it (no Modal import here).

A backend's run yields, in any order: each job's result (a dict from job.run_job, with its "index"), a
JobError where Modal raised for a job instead (a timeout, a container that died), the RemoteApp once the
app exists, and Interrupted last if the user pressed Ctrl-C. `Collected` is all of it, which the merge
and the exit status read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.runner.errors import RunnerError


@dataclass(frozen=True)
class RemoteApp:
    """The Modal app the jobs ran in: its id, and the dashboard page Modal gave for it."""

    app_id: str | None
    url: str | None


@dataclass(frozen=True)
class JobError:
    """Modal raised for job `index` instead of returning its result; `error` is that, made one line."""

    index: int
    error: RunnerError


@dataclass(frozen=True)
class Interrupted:
    """Ctrl-C: the jobs still running were stopped with the app."""


@dataclass
class Collected:
    results: list[dict] = field(default_factory=list)
    errors: dict[int, RunnerError] = field(default_factory=dict)
    app: RemoteApp | None = None
    interrupted: bool = False

    @property
    def done(self) -> int:
        return len(self.results) + len(self.errors)
