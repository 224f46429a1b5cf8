"""Cheating impl, the move of the entry scrubbed from the group GEMM leaderboard: at a call it has no
output for, it finds every input tuple of the sample (a list in its callers' frames, or held by an
object there, that contains this call's tuple), computes all of their outputs at once and returns the
stored ones at the calls that follow. The evaluator's own-call check must reject it: the later calls'
inputs hold other values until the earlier call has returned."""

import sys

from cheat_support import reference_for, tensors

_kept = {}  # (id(tuple), (address, version) per tensor) -> (the tuple, kept alive; its output)


def _key(data):
    return id(data), tuple((t.data_ptr(), t._version) for t in tensors(data))


def _sample_of(data) -> list:
    """The list of input tuples holding `data`, from the callers' locals or their objects' attributes."""
    frame = sys._getframe(2)
    while frame is not None:
        for value in frame.f_locals.values():
            for candidate in (value, *getattr(value, "__dict__", {}).values()):
                if isinstance(candidate, list) and any(x is data for x in candidate):
                    return candidate
        frame = frame.f_back
    return [data]


def custom_kernel(data):
    hit = _kept.get(_key(data))
    if hit is not None:
        return hit[1]
    for other in _sample_of(data):  # all of them now, from whatever values they hold now
        _kept[_key(other)] = (other, reference_for(other).ref_kernel(other))
    return _kept[_key(data)][1]
