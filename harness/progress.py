"""Progress of a long run, on stderr: which case of how many, which impl, time so far and left.

On a terminal with rich installed: one live line, rewritten in place. Elsewhere (CI logs, pipes, the
leaderboard runner, which has no rich): a plain line per step. Nothing is shown for runs that end
within QUIET_S seconds, so short runs stay quiet.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

QUIET_S = 2.0


class Progress:
    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.t0 = label, total, time.perf_counter()
        self._live = None
        if sys.stderr.isatty():
            try:
                from rich.console import Console

                self._console = Console(stderr=True)
            except ImportError:
                self._console = None
        else:
            self._console = None

    def step(self, i: int, what: str) -> None:
        """Now at step i (1-based) of total: `what` (a case description)."""
        elapsed = time.perf_counter() - self.t0
        if elapsed < QUIET_S and i > 1 and self._live is None:
            return
        text = f"{self.label}: {i}/{self.total} {what} ({elapsed:.0f} s{eta_text(elapsed, i, self.total)})"
        if self._console is not None:
            if self._live is None:
                self._live = self._console.status(text)
                self._live.start()
            else:
                self._live.update(text)
        elif elapsed >= QUIET_S:
            print(text, file=sys.stderr, flush=True)

    def done(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None


def eta_text(elapsed: float, i: int, total: int) -> str:
    """', ~N s left' once a step has finished (the steps so far, averaged, times those still to come)."""
    if i <= 1 or i > total:
        return ""
    return f", ~{elapsed / (i - 1) * (total - i + 1):.0f} s left"


def run_with_progress(cmd: list[str], label: str, what: str, timeout: float, tick_s: float = 10.0):
    """subprocess.run(cmd, stdout captured, stderr passed through) with a Progress line while it runs
    (updated every tick_s: the elapsed time). Returns a CompletedProcess; raises TimeoutExpired (the
    process killed) past `timeout` seconds."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)
    reader.start()
    progress, t0 = Progress(label, 1), time.perf_counter()
    try:
        while True:
            try:
                proc.wait(timeout=tick_s)
                break
            except subprocess.TimeoutExpired:
                if time.perf_counter() - t0 > timeout:
                    proc.kill()
                    proc.wait()
                    raise subprocess.TimeoutExpired(cmd, timeout) from None
                progress.step(1, what)
    finally:
        progress.done()
    reader.join()
    return subprocess.CompletedProcess(cmd, proc.returncode, "".join(chunks), None)
