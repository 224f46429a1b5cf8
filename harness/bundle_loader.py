"""The loader that harness/package.py copies, verbatim below this docstring, into every packaged
submission. It is a real module only so that it is linted and tested like any other code.

A packaged file defines `_BUNDLE_SOURCES = {dotted name: (repo path, is_package, source text)}`
for the project modules (the `shared` and `problems` packages) its entry module needs, then this
code, then `_BUNDLE = _BundleImporter(prefix, _BUNDLE_SOURCES)` and the entry's exports.

How a bundled module runs (the same steps Python's import system takes for a file):
- on its first import it becomes a fresh module object named `<prefix>.<dotted name>`, is entered
  in `sys.modules` under that private name, and its source is executed in that module's namespace;
  parent packages run first, and a submodule is set as an attribute of its package afterwards;
- it is also entered under its real name, but only where that name is free: code that imports by
  name through importlib finds it (CuTe DSL 4.3, the runner's version, re-executes the imports of a
  `@cute.jit` function's module with `importlib.import_module`), while a copy of the project that
  the host has already imported (the local evaluator imports `shared`) is never shadowed;
- the module's `__builtins__` carry an `__import__` that resolves `shared...` / `problems...`
  names (and relative imports) to bundled modules only, and hands every other name to the real
  import, so `from shared.nvfp4 import x` keeps working unchanged and `from task import ...`
  still finds the leaderboard's task.py;
- its source is registered in `linecache` under `<repo path> (packaged)`, so tracebacks show the
  original lines and `inspect.getsource` works (CuTe DSL's `@cute.jit` / `@cute.kernel` read the
  source of the functions they compile). The suffix keeps the name from matching a real file: the
  interpreter's last-resort traceback printer looks up a file's base name on sys.path, where it
  would find the packaged submission.py itself.
"""

import builtins as _bundle_builtins
import importlib.machinery as _bundle_machinery
import linecache as _bundle_linecache
import sys as _bundle_sys
import types as _bundle_types


class _BundleImporter:
    """Executes bundled project modules on first import, each in its own namespace."""

    roots = frozenset({"shared", "problems"})

    def __init__(self, prefix, sources):
        self.prefix = prefix
        self.sources = sources
        self.modules = {}
        self.real_import = _bundle_builtins.__import__
        self.builtins = dict(vars(_bundle_builtins))
        self.builtins["__import__"] = self.import_

    def load(self, name):
        """The bundled module `name` (real dotted name), executing it and its parents if needed."""
        module = self.modules.get(name)
        if module is not None:
            return module
        if name not in self.sources:
            raise ModuleNotFoundError(f"No module named {name!r} in this packaged submission", name=name)
        parent, _, child = name.rpartition(".")
        parent_module = self.load(parent) if parent else None
        module = self.modules.get(name)  # the parent's __init__ may have imported it already
        if module is not None:
            return module
        path, is_package, text = self.sources[name]
        private = f"{self.prefix}.{name}"
        filename = f"{path} (packaged)"
        module = _bundle_types.ModuleType(private)
        spec = _bundle_machinery.ModuleSpec(private, None, origin=filename, is_package=is_package)
        module.__dict__.update(
            __file__=filename,
            __builtins__=self.builtins,
            __spec__=spec,
            __package__=private if is_package else private.rpartition(".")[0],
        )
        if is_package:
            module.__path__ = []
        _bundle_linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        self.modules[name] = module
        _bundle_sys.modules[private] = module
        aliased = _bundle_sys.modules.setdefault(name, module) is module
        spec._initializing = True
        try:
            exec(compile(text, filename, "exec", dont_inherit=True), module.__dict__)
        except BaseException:
            del self.modules[name]
            _bundle_sys.modules.pop(private, None)
            if aliased:
                _bundle_sys.modules.pop(name, None)
            raise
        finally:
            spec._initializing = False
        if parent_module is not None:
            setattr(parent_module, child, module)
        return module

    def import_(self, name, globals=None, locals=None, fromlist=(), level=0):
        """`__import__` of bundled modules: project names are served from the bundle only."""
        if level:
            package = (globals or {}).get("__package__") or ""
            if not package.startswith(self.prefix + "."):
                return self.real_import(name, globals, locals, fromlist, level)
            parts = package[len(self.prefix) + 1 :].split(".")
            if level > len(parts):
                raise ImportError("attempted relative import beyond top-level package")
            base = ".".join(parts[: len(parts) - level + 1])
            name = f"{base}.{name}" if name else base
        elif name.partition(".")[0] not in self.roots:
            return self.real_import(name, globals, locals, fromlist, level)
        module = self.load(name)
        if not fromlist:
            return self.modules[name.partition(".")[0]]  # `import a.b.c` binds `a`
        wanted = list(fromlist)
        if "*" in wanted:
            wanted = list(getattr(module, "__all__", ()))
        for item in wanted:
            if not hasattr(module, item) and f"{name}.{item}" in self.sources:
                self.load(f"{name}.{item}")
        return module
