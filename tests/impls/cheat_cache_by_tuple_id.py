"""Cheating impl (the leaderboard's known hole): the output of a tuple is computed once and returned
again whenever the same tuple object comes back, whatever happened to its tensors in between.
Correct on every fresh tuple; the evaluator's in-place guard must reject it."""

from cheat_support import reference_for

_seen = {}  # id(tuple) -> (the tuple, kept alive so that its id is not reused; its output)


def custom_kernel(data):
    hit = _seen.get(id(data))
    if hit is not None:
        return hit[1]
    out = reference_for(data).ref_kernel(data)
    _seen[id(data)] = (data, out)
    return out
