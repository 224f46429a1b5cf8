"""Run by Python at start-up in gpu-mode/reference-kernels' eval processes (scripts/official_eval.py puts
this folder first on PYTHONPATH, so their spawned pool workers run it too).

Their eval files do `from cutlass.cute.nvgpu.common import OpError`: CuTe DSL 4.3 (the leaderboard
runner's) defines that name, 4.8 (this project's, and the H100's) no longer does, so their files would
fail at import. Where the module lacks it, this adds OpError there as a new DSLBaseError subclass that
nothing raises: their `except OpError` then catches nothing, and a CuTe DSL error from a submission ends
the run with its traceback (a failure either way) instead of becoming their failure message. Nothing
else changes; with CuTe DSL 4.3 this does nothing. A sitecustomize that this file shadows (a
distribution's) still runs, after it.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

MODULE = "cutlass.cute.nvgpu.common"


def _add_op_error(module) -> None:
    if hasattr(module, "OpError"):
        return
    try:
        from cutlass.base_dsl.common import DSLBaseError as base
    except ImportError:
        base = Exception
    module.OpError = type("OpError", (base,), {"__module__": MODULE, "__doc__": "Added by official_eval: "
                                               "CuTe DSL 4.3's name, which this CuTe DSL never raises."})


class _OpErrorFinder(importlib.abc.MetaPathFinder):
    """Finds cutlass.cute.nvgpu.common with the other finders and runs _add_op_error after its code."""

    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        for finder in sys.meta_path:
            spec = None if finder is self else getattr(finder, "find_spec", lambda *a: None)(name, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _add_op_error(module)

        spec.loader.exec_module = exec_module
        return spec


def _run_shadowed_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


sys.meta_path.insert(0, _OpErrorFinder())
_run_shadowed_sitecustomize()
