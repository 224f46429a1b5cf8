"""Cheating impl: outputs kept per argument object and per (address, version counter) of its tensors.
A change written in place through the tensor (the in-place guard's) bumps a counter, so it computes
anew there; the leaderboard's timed loop hands back the same argument objects every sample, so it
never computes again. The evaluator's fresh values, written without bumping a counter, must reject it
(the fresh-values check)."""

from cheat_support import reference_for, tensors

_kept = {}  # (id(tuple), (address, version) per tensor) -> (the tuple, kept alive; its output)


def custom_kernel(data):
    key = (id(data), tuple((t.data_ptr(), t._version) for t in tensors(data)))
    hit = _kept.get(key)
    if hit is not None:
        return hit[1]
    out = reference_for(data).ref_kernel(data)
    _kept[(id(data), tuple((t.data_ptr(), t._version) for t in tensors(data)))] = (data, out)
    return out
