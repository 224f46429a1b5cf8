"""How the evaluator starts a worker: a fresh process per impl and mode, which has never imported the impl.

On a GPU the worker is spawned, as the leaderboard starts each mode. On the CPU, where no figure is compared
with the leaderboard's, it is forked from a server that has imported torch once: a run starts in ~0.05 s
instead of the ~3 s a new interpreter spends importing torch (most of the CPU test tier's time went there).
The server keeps the environment it started with, so the worker first takes the caller's environment, then
imports the function it runs. This module imports nothing of the project, so that nothing of it is
imported in the worker before that.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os


def in_worker(device: str, fn, *args):
    """fn(*args) in a fresh worker process (see the module's docstring); fn is a module-level function."""
    if device == "cpu" and "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["torch"])  # the import only: no CUDA, nothing of this project
        fn, args = _run_in_environ, (dict(os.environ), fn.__module__, fn.__qualname__, *args)
    else:
        ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(fn, args)


def _run_in_environ(environ: dict, module: str, name: str, *args):
    """In the forked worker: the caller's environment, then module.name(*args)."""
    os.environ.clear()
    os.environ.update(environ)
    return getattr(importlib.import_module(module), name)(*args)
