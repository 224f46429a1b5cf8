"""Cheating impl: on import it rewrites the harness's statistics (every mean divided by 200) and makes
its correctness comparison pass anything, then computes right answers. The statistics are computed in
the evaluator's parent process, which never imports an impl; the rebinding guard must reject it."""

from dataclasses import replace

from cheat_support import reference_for

import harness.timing
import harness.worker

_real_stats_of = harness.timing.stats_of


def _flattering_stats(durations):
    stats = _real_stats_of(durations)
    return replace(stats, mean=stats.mean / 200)


harness.timing.stats_of = _flattering_stats
harness.worker.Runner.compare = lambda self, out, expected: None


def custom_kernel(data):
    return reference_for(data).ref_kernel(data)
