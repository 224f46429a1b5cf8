"""The rebinding guard: everything the evaluator relies on while it times and checks an impl, recorded
before the impl is loaded and compared after each case.

The worker loads the impl into its own process, as the leaderboard does, so an impl can rebind any
name it reaches: the host clock (`time.perf_counter_ns`), torch's CUDA events and synchronize, the
harness's own timing, statistics and checks, the problem's reference. An entry was scrubbed from a GPU
MODE leaderboard for patching the timer from its module (reference-kernels issue 162). Two defences:
- harness/timing.py reads clocks and events only through references it took at import, before any
  impl, so a rebinding cannot change a measured time; the statistics are computed in the parent
  process, which never imports the impl (harness/eval.py);
- this module fails the impl that tried, with one line naming what it changed: a snapshot of every
  function and class the harness modules hold (and of each function its code, defaults and closure),
  of torch's Tensor, CUDA event and stream classes, and of the clock, math and builtin functions the
  timing and the checks call.

What it cannot see: a change undone before the case ends, or memory patched below Python. An impl
that sets out to defeat this guard in particular can; the guard stops the reported class of exploit,
a module that rebinds what the harness reads, and the timing's own bound references stand either way.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import types

REBINDING = "rebinding guard"

# Outside the harness: what the timing, the checks and the references call, by module.
EXTERNAL = {
    "time": ("perf_counter_ns", "perf_counter", "monotonic", "monotonic_ns", "time", "time_ns", "sleep"),
    "math": ("sqrt", "log", "exp", "isfinite", "fsum"),
    "builtins": ("sum", "min", "max", "len", "sorted", "abs", "float", "int", "range", "isinstance", "zip",
                 "enumerate", "any", "all", "next", "round", "getattr", "hasattr", "iter", "map"),
    "torch": ("abs", "isnan", "isposinf", "isneginf", "nonzero", "equal", "randn", "empty", "zeros", "full",
              "matmul", "mm", "bmm"),
    "torch.cuda": ("Event", "Stream", "synchronize", "current_stream", "default_stream", "set_stream", "stream",
                   "graph", "CUDAGraph", "_sleep"),
    "torch._C": ("_CudaEventBase", "_cuda_synchronize", "_cuda_getCurrentStream"),
}
# Classes whose every attribute is recorded (their methods are what `a - b`, `.abs()`, `.record()` run).
WHOLE_CLASSES = ("torch.Tensor", "torch._C.TensorBase", "torch.cuda.Event", "torch._C._CudaEventBase",
                 "torch.cuda.Stream")
# The kit modules the references compute with (decode, products, generators).
KIT = ("shared.nvfp4", "shared.refmath", "shared.generators", "shared.scales")


def _resolve(dotted: str):
    """The object at a dotted path (modules, then attributes), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name, None)
        return obj
    return None


def _fingerprint(obj) -> tuple:
    """What identifies a callable now: the object, and for a Python function its code, defaults and
    closure contents (each can be replaced on the same function object)."""
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    if isinstance(obj, property):
        return (id(obj), *(_fingerprint(f) for f in (obj.fget, obj.fset) if f is not None))
    if isinstance(obj, types.FunctionType):
        cells = []
        for cell in obj.__closure__ or ():
            try:
                cells.append(id(cell.cell_contents))
            except ValueError:  # an empty cell
                cells.append(None)
        return (id(obj), id(obj.__code__), id(obj.__defaults__), id(obj.__kwdefaults__), tuple(cells))
    return (id(obj),)


def _watched(obj) -> bool:
    return callable(obj) or isinstance(obj, staticmethod | classmethod | property)


class Snapshot:
    """The fingerprints of everything the harness relies on, keyed by dotted name; the objects are kept
    so that an id cannot be reused by another object while the snapshot lives."""

    def __init__(self, problem_name: str | None = None) -> None:
        self.fingerprints: dict[str, tuple] = {}
        self._keep: list = []
        for module, names in EXTERNAL.items():
            mod = sys.modules.get(module) or _resolve(module)
            for name in names:
                if hasattr(mod, name):
                    self._add(f"{module}.{name}", getattr(mod, name))
        for dotted in WHOLE_CLASSES:
            cls = _resolve(dotted)
            if isinstance(cls, type):
                self._add_class(dotted, cls)
        modules = [m for name, m in sorted(sys.modules.items())
                   if m is not None and (name == "harness" or name.startswith("harness."))]
        modules += [_resolve(name) for name in KIT]
        if problem_name:
            modules.append(importlib.import_module(f"problems.{problem_name}.reference"))
        for module in modules:
            self._add_module(module)

    def _add(self, name: str, obj) -> None:
        if _watched(obj):
            self.fingerprints[name] = _fingerprint(obj)
            self._keep.append(obj)

    def _add_class(self, name: str, cls: type) -> None:
        """The class and every attribute it resolves, inherited ones too (a new override in the class's
        own dict shadows the inherited one it was recorded as)."""
        self._add(name, cls)
        for attr in dir(cls):
            if not attr.startswith("__") or attr in _OPERATORS:
                self._add(f"{name}.{attr}", inspect.getattr_static(cls, attr, None))

    def _add_module(self, module) -> None:
        for attr, value in vars(module).items():
            if attr.startswith("__"):
                continue
            name = f"{module.__name__}.{attr}"
            if isinstance(value, type) and value.__module__ == module.__name__:
                self._add_class(name, value)
            elif isinstance(value, types.ModuleType):
                continue  # a module object: its contents are recorded where they matter
            else:
                self._add(name, value)

    def changed(self) -> list[str]:
        """Dotted names whose object (or function code, defaults, closure) differs from the snapshot."""
        out = []
        for name, fingerprint in self.fingerprints.items():
            obj = _current(name)
            if obj is _MISSING or not _watched(obj) or _fingerprint(obj) != fingerprint:
                out.append(name)
        return out

    def error(self) -> str | None:
        """The guard's one line, or None when nothing changed."""
        names = self.changed()
        if not names:
            return None
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        return (f"{REBINDING}: {shown} changed after the evaluator bound it; an impl may not rebind the "
                "clocks, CUDA events, statistics, checks or references the evaluator uses")


_MISSING = object()
# The dunders the checks' tensor arithmetic and the harness's classes go through.
_OPERATORS = ("__sub__", "__rsub__", "__gt__", "__lt__", "__abs__", "__xor__", "__or__", "__and__", "__add__",
              "__mul__", "__truediv__", "__getitem__", "__setitem__", "__bool__", "__float__", "__int__",
              "__len__", "__iter__", "__eq__", "__new__", "__init__", "__call__")


def _current(dotted: str):
    """The object now at a recorded dotted name (resolved through modules and class attributes as
    recorded), or _MISSING."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:cut]))
        if mod is None:
            continue
        obj = mod
        for name in parts[cut:]:
            holder = obj
            obj = (inspect.getattr_static(holder, name, _MISSING) if isinstance(holder, type)
                   else getattr(holder, name, _MISSING))
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING
