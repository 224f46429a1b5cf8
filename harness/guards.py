"""The evaluator's guards: what an impl's output must satisfy beyond its values, checked in test mode.

Three ways an impl can pass a values-only check and still be wrong for a real caller, each with its
own guard (the leaderboard lacked them; an entry that returned cached outputs for a repeated input
tuple was only found after the contest):

- in-place: a call with the same tuple object after its A was changed in place must compute anew;
- aliasing: an output may not share memory with any input other than its own C;
- out-of-bounds: nothing may be written outside C. C is rebuilt inside a larger buffer whose other
  bytes are poisoned, with C's own shape and strides, and those bytes must be intact after the call.

This module holds the pieces (walking an input tuple, the guarded C, the memory ranges); the order
of calls lives in harness/worker.py (Runner.guard_case). Every failure is one line that starts with
the guard's name.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from shared.nvfp4 import as_bytes

IN_PLACE, ALIASING, OUT_OF_BOUNDS = "in-place guard", "aliasing guard", "out-of-bounds guard"
GUARD_BYTES = 64 * 1024  # poisoned bytes before and after C: far past any plausible tile overrun
POISON = 0x7F  # every guard byte; 0x7F7F is an fp16 NaN, so a kernel that reads a band sees NaN


def tensors_in(data, path: str = "data") -> Iterator[tuple[str, torch.Tensor]]:
    """(path, tensor) for every tensor in a nested input tuple, e.g. ("data[0][1][2]", c)."""
    if isinstance(data, torch.Tensor):
        yield path, data
    elif isinstance(data, list | tuple):
        for i, x in enumerate(data):
            yield from tensors_in(x, f"{path}[{i}]")


def replace_tensors(data, new: dict[int, torch.Tensor]):
    """A copy of the tuple's structure (lists and tuples rebuilt) in which each tensor whose id() is a
    key of `new` is replaced by its value; every other item is the same object as before."""
    if isinstance(data, torch.Tensor):
        return new.get(id(data), data)
    if isinstance(data, list | tuple):
        return type(data)(replace_tensors(x, new) for x in data)
    return data


def a_tensors(data) -> list[torch.Tensor]:
    """The A operand(s): data[0] of the gemv / gemm / dual_gemm tuple; the `a` of each group
    (data[0] is the list of (a, b, c)) for group_gemm."""
    if isinstance(data[0], list):
        return [group[0] for group in data[0]]
    return [data[0]]


def as_list(out) -> list:
    return list(out) if isinstance(out, list | tuple) else [out]


def byte_range(t: torch.Tensor) -> tuple[int, int]:
    """[start, end) addresses of the tensor's whole storage: a view of any part of an input's
    storage counts as sharing it."""
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def shares_memory(x: torch.Tensor, y: torch.Tensor) -> bool:
    if x.device != y.device:
        return False
    (x0, x1), (y0, y1) = byte_range(x), byte_range(y)
    return x0 < y1 and y0 < x1


def aliasing_error(out, inputs: list[tuple[str, torch.Tensor]]) -> str | None:
    """The first output tensor that shares memory with one of `inputs` (the tuple's tensors other
    than the C's), named with its index and the input's path."""
    for i, t in enumerate(as_list(out)):
        if not isinstance(t, torch.Tensor):
            continue
        for path, x in inputs:
            if shares_memory(t, x):
                return (f"{ALIASING}: output {i} shares memory with the input {path} "
                        f"({tuple(x.shape)} {x.dtype}); an output must live in its own memory or in C")
    return None


class GuardedOutput:
    """A copy of C (same shape, strides, dtype and values) placed GUARD_BYTES into a buffer whose
    every other byte is POISON: before C, after it, and in any gap its strides leave."""

    def __init__(self, c: torch.Tensor):
        size = c.element_size()
        span = 1 + sum((n - 1) * s for n, s in zip(c.shape, c.stride())) if c.numel() else 0
        self.before = GUARD_BYTES // size
        total = 2 * self.before + span
        raw = torch.full((total * size,), POISON, dtype=torch.uint8, device=c.device)
        self.buffer = raw.view(c.dtype)
        self.view = self.buffer.as_strided(c.shape, c.stride(), self.before)
        self.view.copy_(c)
        self.outside = torch.ones(total, dtype=torch.bool, device=c.device)
        self.outside.as_strided(c.shape, c.stride(), self.before).fill_(False)
        self.end = self.before + span

    def damage(self) -> str | None:
        """Where the first poisoned element was overwritten, relative to C, or None if all are intact."""
        size = self.view.element_size()
        written = (self.buffer.view(torch.uint8).view(-1, size) != POISON).any(dim=1) & self.outside
        hits = torch.nonzero(written).flatten()
        if hits.numel() == 0:
            return None
        first = int(hits[0])
        if first < self.before:
            where = f"{self.before - first} before C's first element"
        elif first >= self.end:
            where = f"{first - self.end + 1} past C's last element"
        else:
            where = f"in a gap between C's elements, {first - self.before} after its first"
        return f"{hits.numel()} element(s) outside C written, the first {where}"


def guarded_outputs(data, outputs: list[torch.Tensor]):
    """The tuple with each output tensor (each C) replaced by a GuardedOutput's view of it; and the
    GuardedOutputs, in the order of `outputs`."""
    guards = [GuardedOutput(c) for c in outputs]
    return replace_tensors(data, {id(c): g.view for c, g in zip(outputs, guards)}), guards


def out_of_bounds_error(guards: list[GuardedOutput]) -> str | None:
    for i, g in enumerate(guards):
        damage = g.damage()
        if damage:
            return f"{OUT_OF_BOUNDS}: C {i} (shape {tuple(g.view.shape)}, strides {g.view.stride()}): {damage}"
    return None


def copy_values(targets: list[torch.Tensor], sources: list[torch.Tensor]) -> None:
    """Copy each source's values into its target, in place, as bytes (FP4 has no arithmetic copy in
    every torch build); the shapes must match."""
    for target, source in zip(targets, sources, strict=True):
        as_bytes(target).copy_(as_bytes(source))
