"""Whether a remembered call argument is unchanged: the check a repeat call of the same tuple costs.

`Watch(lists, tensors)` holds the argument's lists (each checked item by item, by identity) and the
tensors a bound launch reads and writes; `unchanged()` says whether all of them are as they were. Two
implementations, one interface:
  - compiled (host_check_source.py, built once per machine by host_check_build.py with
    torch.utils.cpp_extension.load_inline and cached on disk): one C++ pass that compares each
    tensor's address, dtype, sizes and strides, which is what the launch depends on, at a small
    fraction of the Python reads' cost (measured: results/README.md, 2026-11-25);
  - Python (PyWatch): the version counter and address of each tensor, two attribute reads per
    tensor; tensor_key (address, shape, strides, dtype) for a set that holds an inference tensor,
    which has no version counter.
Both see a swap of a tensor's memory (its address changes) and an in-place layout change (t_, resize_,
set_, as_strided_, unsqueeze_ ...: its sizes or strides, and its version). The Python check also
reports values written in place, which only costs the caller a re-validation. One change only the
compiled check sees: `t.data = v` where v is another view of the same memory at the same address (a
transpose, another dtype) bumps no version and moves no address; reading layout and dtype as well
would make the Python check several times dearer (tensor_key builds a shape and a strides tuple per
tensor), so it is left to the compiled one, which reads them in place.

`identity_key(tensors)` is the key a new tuple of the same tensor objects is looked up by (ids, and the
same reads). `watch_class()` and `identity_key_function()` pick the compiled ones where they build, else
Python, and `why_python()` says why not.

NVFP4_HOST_CHECK=python keeps to Python (A/B timing, tests); unset or empty, the compiled check runs
where it builds. Any other value is a ValueError, at import and wherever the choice is made: a typo
would otherwise time the wrong check without a word. A packaged single file carries the source and
builds it the same way.
"""

from __future__ import annotations

import functools
import operator
import os
from itertools import chain

import torch

ENV = "NVFP4_HOST_CHECK"
ENV_VALUES = ("", "python")  # unset or empty: compiled where it builds; "python": the Python check
_VERSION = operator.attrgetter("_version")
_DATA_PTR = torch.Tensor.data_ptr


def tensor_key(tensors) -> tuple:
    """What a validated call depends on, per tensor: address, shape, strides, dtype. Two calls with
    equal keys read and write the same memory in the same layout, so the first call's checks and
    marshalled arguments hold for the second. The device is implied: CUDA's unified addressing
    gives every allocation of the process, host or device, its own address range."""
    return tuple([(t.data_ptr(), t.shape, t.stride(), t.dtype) for t in tensors])


def tensor_state(tensors) -> tuple:
    """Version counter and address of each tensor: an in-place change of a tensor's layout (resize_,
    set_, t_, as_strided_ ...) bumps its version; a swap of its memory that does not (`.data =`, a
    resize_ of its storage, as FSDP does) changes its address. Two reads per tensor, ~0.1 us each on
    the lent H100's host. Inference tensors have no version counter: a set that holds one gives its
    tensor_key instead (never equal to a state of the other kind)."""
    try:
        return (*map(_VERSION, tensors), *map(_DATA_PTR, tensors))
    except RuntimeError:  # "Inference tensors do not track version counter"
        return tensor_key(tensors)


class PyWatch:
    """The check in Python (see the module docstring)."""

    __slots__ = ("lists", "lengths", "items", "tensors", "state")

    def __init__(self, lists: tuple, tensors: tuple) -> None:
        self.lists = lists
        self.lengths = tuple(map(len, lists))
        self.items = tuple(chain.from_iterable(lists))
        self.tensors = tensors
        self.state = tensor_state(tensors)

    def unchanged(self) -> bool:
        # the lists' lengths, then their items by identity, each one C-level pass over all lists (==
        # would compare tensors that are not the same); then the tensors' state
        return (tuple(map(len, self.lists)) == self.lengths
                and all(map(operator.is_, chain.from_iterable(self.lists), self.items))
                and tensor_state(self.tensors) == self.state)


def py_identity_key(tensors) -> tuple:
    """Which tensor objects these are, and whether they changed since: id and tensor_state. Flat
    (ids, then the state) because map() over C getters is the cheapest way to read them."""
    return (*map(id, tensors), *tensor_state(tensors))


_WHY_PYTHON: list[str] = []


def env_choice() -> str:
    """NVFP4_HOST_CHECK's value: "" (unset or empty) or "python"; a ValueError for any other."""
    value = os.environ.get(ENV, "")
    if value not in ENV_VALUES:
        raise ValueError(f"{ENV}={value!r}: expected 'python' (the Python check) or unset (the compiled "
                         "check where it builds)")
    return value


env_choice()  # a mistyped value stops the first import, before any call is timed


@functools.cache
def compiled():
    """The compiled module (host_check_build.py: built once per machine, ~30 s, then loaded from
    torch's extension cache), or None, with the reason kept for why_python()."""
    _WHY_PYTHON.clear()
    if env_choice() == "python":
        _WHY_PYTHON.append(f"{ENV}=python")
        return None
    from shared.cute import host_check_build

    try:
        return host_check_build.compiled()
    except Exception as e:  # no compiler, no ninja, no headers, a torch whose C++ API moved
        _WHY_PYTHON.append(f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[-1][:200]}")
        return None


def watch_class() -> type:
    """The compiled Watch where it builds, else PyWatch."""
    module = compiled()
    return PyWatch if module is None else module.Watch


def identity_key_function():
    """identity_key(tensors): the compiled one (ids and what a launch depends on, as bytes) where it
    builds, else py_identity_key (ids, versions, addresses)."""
    module = compiled()
    return py_identity_key if module is None else module.identity_key


def why_python() -> str | None:
    """Why the Python check is in use (None: the compiled one is, or none was asked for yet)."""
    return _WHY_PYTHON[0] if _WHY_PYTHON else None


def kind() -> str:
    """'compiled' or 'python (why)': what a repeat call's check is, for the evaluator's record."""
    return "compiled" if compiled() is not None else f"python ({why_python()})"
