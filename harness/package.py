"""The single-file packager: one problem's submission plus the project code it imports, as the
one Python file that popcorn-cli uploads to a GPU MODE leaderboard.

    python -m harness.package PROBLEM [--kernel NAME] [--gpu GPU] [--leaderboard NAME] [-o OUT]
                              [--gates TABLE.json] [--dsl runner|dev]
    nox -s package -- PROBLEM [...]                 (default output: dist/PROBLEM/submission.py)

The entry is problems/PROBLEM/submission.py (`--kernel NAME`: problems/PROBLEM/NAME.py, or a .py
path inside the repository). Every module it imports from the project's packages (`shared`,
`problems`), directly or through other project modules, at module level or inside functions, is
found by reading import statements (nothing is executed), and written into the output in
dependency order, each marked by a comment naming its source file. Third-party imports and
`from task import ...` (the leaderboard provides task.py) stay imports.

How modules are inlined (the choice and why). Each project module is kept verbatim as a string and
executed, on its first import, in its own module namespace by a small loader
(harness/bundle_loader.py, copied into the output); its `__builtins__.__import__` serves project
names from the bundle, so `from shared.nvfp4 import decode_e2m1` keeps working unchanged. The
alternative, plain text concatenation with project imports deleted, puts every module in one
namespace: two modules defining the same private name (`_cache`, `Config`) would silently
overwrite each other, `from shared import scales as sc` / `sc.to_permuted` would need rewriting,
and import-time side effects would run in a different order. Strings plus exec keep each
module's semantics exactly, cost ~90 lines of loader, and keep every source line byte-identical
(tracebacks and `inspect.getsource`, which CuTe DSL needs, point at the original lines through
linecache). Bundled modules live in sys.modules under a private prefix (`_nvfp4_bundle_<problem>`)
and resolve each other through that loader only, so in the local evaluator (which itself imports
`shared`) the submission never uses the project's modules: it runs on its own copy. They are
also entered under their real names where those are free (never shadowing the host's), because
CuTe DSL 4.3 (the runner's) re-imports a `@cute.jit` function's module imports by name.

Substitutes: a module listed in BUNDLE_SUBSTITUTES is bundled from another file, under its own name
(the launch queue: torch's current CUDA queue in the repository, the default queue in a bundle).

Refusals, each naming the file and line (and nothing is written):
- the substring "stream" in any case, anywhere in the output text (the leaderboard rejects such
  files at upload; inlined modules, comments and docstrings included);
- an import of the harness (`harness.*`): a submission contains only the kit (`shared/`) and `problems/`;
- a project import that cannot be resolved to a file of the repository (or a name a project
  package does not define), and dynamic imports (`importlib.import_module`, `__import__`) of
  project modules, which the packager cannot follow;
- a third-party module that the leaderboard's environment (locks/leaderboard.txt) does not
  provide, unless the import is guarded by `try: ... except ImportError`;
- relative file reads: `open()` of anything but an absolute literal path, `.read_text()`,
  `.read_bytes()`, `torch.load`, `numpy.load`, `cpp_extension.load(sources=...)` (the runner has
  only the one uploaded file, in a temporary directory);
- network access: importing socket, http, urllib, requests, ... or `torch.hub`, URL downloads.

The sm100 gates table (shared/sm100_variants.py): the bundle carries, in place of shared/sm100_gates.py
(which reads results/b200/gates.json and the b200 stage's forced variant), a generated module with the
table as a literal, what is being packaged (the target's CuTe DSL version, from its lock, and the code
fingerprint of the entry and every module it imports, shared/code_fingerprint.py) and nothing forced;
the header lists, per benchmark case, the variant it selects and why. The gate refuses a verdict measured
under another DSL, or on kernel code that has changed since: the conservative kernel, and the header
says which. No table: every shape gets its conservative kernel, and the header says so. `--dsl runner`
(default, the leaderboard runner's CuTe DSL 4.3.5) also leaves out variants registered with
runner_dsl=False.

Output: `#!POPCORN leaderboard <name>` / `#!POPCORN gpu <GPU>` first (the server reads only the
leading comment block), from problems/PROBLEM/manifest.yaml. Same inputs, same bytes: no dates,
no absolute paths, modules in a fixed order.

Exit status: 0 written; 1 refused (one line per finding); 2 a mistake in the arguments (one line: an
unknown problem, a GPU or leaderboard the manifest does not offer, an unknown option).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.arguments import EXIT_USAGE, OneLineParser, Usage, checked, manifest_targets, problem_name

REPO = Path(__file__).resolve().parent.parent
PROJECT_PACKAGES = ("shared", "problems")
# The harness (evaluator, timing, packager, ...) judges submissions and is never part of one.
HARNESS_PACKAGES = ("harness",)
LOADER = REPO / "harness" / "bundle_loader.py"
LEADERBOARD_LOCK = REPO / "locks" / "leaderboard.txt"
# Modules a bundle carries in another version. shared.cute.launch_queue launches on torch's current
# CUDA queue, and its text names that queue's CUDA type, which the leaderboard refuses; the runner
# calls custom_kernel on the default queue, which is all launch_queue_default.py gives (the evaluator
# checks that premise when it runs a bundle: harness/worker.py).
BUNDLE_SUBSTITUTES = {"shared.cute.launch_queue": "shared/cute/launch_queue_default.py"}
# The module whose compiled repeat-call check a bundle builds when run as a script: the runner's
# compile step (`python3 submission.py`, to warm load_inline caches) then pays the build, not a
# timed mode's first call.
HOST_CHECK = "shared.cute.host_check"

# Third-party import names the leaderboard runner provides besides the lock's distributions
# (task.py is written next to the submission by the runner).
RUNNER_MODULES = {"task"}
# Distribution name -> import names, where they differ from the normalised distribution name.
DIST_IMPORTS = {
    "nvidia-cutlass-dsl": ("cutlass",),
    "cuda-python": ("cuda",),
    "cuda-bindings": ("cuda",),
    "cuda-core": ("cuda",),
    "pyyaml": ("yaml",),
    "setuptools": ("setuptools", "pkg_resources", "_distutils_hack"),
    "typing-extensions": ("typing_extensions",),
    "markupsafe": ("markupsafe",),
    "jinja2": ("jinja2",),
    "pillow": ("PIL",),
}
NETWORK_MODULES = {
    "socket", "ssl", "http", "urllib", "urllib3", "requests", "httpx", "aiohttp", "ftplib", "smtplib",
    "poplib", "imaplib", "telnetlib", "xmlrpc", "websocket", "websockets", "paramiko", "grpc", "asyncssh",
    "huggingface_hub", "wget",
}
NETWORK_CALLS = {"load_state_dict_from_url", "download_url_to_file", "urlopen", "urlretrieve"}
READ_METHODS = {"read_text", "read_bytes"}


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class PackageError(Exception):
    """The submission cannot be packaged; `findings` name each file and line."""

    def __init__(self, findings: list[Finding]):
        self.findings = sorted(set(findings))
        super().__init__("\n".join(str(f) for f in self.findings))


@dataclass
class Module:
    name: str  # dotted, e.g. "shared.nvfp4"
    path: str  # repository-relative, posix
    is_package: bool
    text: str
    deps: set[str] = field(default_factory=set)
    third_party: list[tuple[str, int, bool]] = field(default_factory=list)  # (top name, line, guarded)


@dataclass(frozen=True)
class Packaged:
    text: str
    modules: tuple[str, ...]  # repository paths, in the order written
    leaderboard: str
    gpu: str


# ----- finding modules --------------------------------------------------------------------------


def module_file(name: str, repo: Path = REPO) -> tuple[Path, bool] | None:
    """(file, is_package) of a project module, or None."""
    base = repo.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py", True
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py"), False
    return None


def _is_project(name: str) -> bool:
    return name.partition(".")[0] in PROJECT_PACKAGES


def _resolve_relative(module: Module, level: int, target: str | None) -> str:
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - level + 1]) if level <= len(parts) else ""
    return f"{base}.{target}" if target else base


def _defines(module_text: str, name: str) -> bool:
    """Whether a module binds `name` at top level (def, class, assignment, import), looking into
    top-level if/try/with blocks; a module-level __getattr__ may define anything."""

    def bound(stmts) -> bool:
        for node in stmts:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if node.name in (name, "__getattr__"):
                    return True
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                    return True
            elif isinstance(node, ast.Import | ast.ImportFrom):
                if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                    return True
            elif isinstance(node, ast.If | ast.Try | ast.With):
                blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])]
                blocks += [h.body for h in getattr(node, "handlers", [])]
                if any(bound(b) for b in blocks):
                    return True
        return False

    return bound(ast.parse(module_text).body)


def _guarded_lines(tree: ast.AST) -> set[int]:
    """Lines of imports inside `try:` blocks that catch ImportError (optional dependencies) or under
    `if TYPE_CHECKING:` (never executed)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        body = None
        if isinstance(node, ast.Try):
            names = set()
            for h in node.handlers:
                types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
                names |= {getattr(t, "id", getattr(t, "attr", None)) for t in types if t is not None}
                if h.type is None:
                    names.add("Exception")
            if names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}:
                body = node.body
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            body = node.body
        for stmt in body or ():
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Import | ast.ImportFrom):
                    guarded.add(sub.lineno)
    return guarded


def _scan_imports(module: Module, tree: ast.AST, repo: Path, findings: list[Finding]) -> None:
    guarded = _guarded_lines(tree)

    def need(name: str, line: int) -> bool:
        """Depend on project module `name` and its parent packages; False if it has no file."""
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            sub = ".".join(parts[:i])
            if module_file(sub, repo) is None:
                findings.append(Finding(module.path, line,
                                        f"project import {name!r} cannot be resolved: no {sub.replace('.', '/')}.py "
                                        f"or {sub.replace('.', '/')}/__init__.py in the repository"))
                return False
            module.deps.add(sub)
        return True

    def harness(name: str, line: int) -> bool:
        if name.partition(".")[0] not in HARNESS_PACKAGES:
            return False
        findings.append(Finding(module.path, line, f"imports the harness module {name!r}: a submission may "
                                                   "contain only the kit (shared/) and problems/"))
        return True

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if harness(a.name, node.lineno):
                    continue
                if _is_project(a.name):
                    need(a.name, node.lineno)
                else:
                    module.third_party.append((a.name.partition(".")[0], node.lineno, node.lineno in guarded))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve_relative(module, node.level, node.module) if node.level else node.module
            if node.level and not target:
                findings.append(Finding(module.path, node.lineno, "relative import beyond the top-level package"))
                continue
            if harness(target, node.lineno):
                continue
            if not _is_project(target):
                module.third_party.append((target.partition(".")[0], node.lineno, node.lineno in guarded))
                continue
            if not need(target, node.lineno):
                continue
            found = module_file(target, repo)
            for a in node.names:
                if a.name == "*":
                    continue
                sub = f"{target}.{a.name}"
                if module_file(sub, repo) is not None:
                    need(sub, node.lineno)
                elif not _defines(found[0].read_text(encoding="utf-8"), a.name):
                    findings.append(Finding(module.path, node.lineno,
                                            f"project import cannot be resolved: {target} has no module or name "
                                            f"{a.name!r}"))
        elif isinstance(node, ast.Call):
            fn = ast.unparse(node.func)
            if fn in {"importlib.import_module", "import_module", "__import__"} and node.args:
                arg = node.args[0]
                literal = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
                head = literal if literal is not None else (
                    arg.values[0].value if isinstance(arg, ast.JoinedStr) and arg.values
                    and isinstance(arg.values[0], ast.Constant) else "")
                if literal is None or _is_project(head) or head.partition(".")[0] in HARNESS_PACKAGES:
                    findings.append(Finding(module.path, node.lineno,
                                            f"dynamic import {ast.unparse(arg)}: the packager cannot follow it "
                                            "(use an import statement)"))


# ----- what the leaderboard cannot run ----------------------------------------------------------


def _check_code(module: Module, tree: ast.AST, findings: list[Finding]) -> None:
    """File reads relative to the repository and network access, by reading the code."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = ast.unparse(node.func)
            last = fn.rpartition(".")[2]
            if fn in {"open", "io.open"} and node.args:
                arg = node.args[0]
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("/")):
                    findings.append(Finding(module.path, node.lineno,
                                            f"file read {fn}({ast.unparse(arg)}): the runner has only the "
                                            "uploaded file (embed the data in the code)"))
            elif last in READ_METHODS or fn in {"torch.load", "np.load", "numpy.load"}:
                findings.append(Finding(module.path, node.lineno,
                                        f"file read {fn}(): the runner has only the uploaded file"))
            elif last == "load" and "cpp_extension" in fn:
                findings.append(Finding(module.path, node.lineno,
                                        f"{fn}() compiles source files that are not uploaded (use load_inline)"))
            elif last in NETWORK_CALLS or fn.startswith("torch.hub."):
                findings.append(Finding(module.path, node.lineno, f"network access {fn}()"))
    for top, line, _ in module.third_party:
        if top in NETWORK_MODULES:
            findings.append(Finding(module.path, line, f"network access: imports {top}"))


def leaderboard_modules(lock: Path = LEADERBOARD_LOCK) -> set[str] | None:
    """Import names the leaderboard environment provides, from the lock's distributions."""
    if not lock.is_file():
        return None
    names = set(RUNNER_MODULES)
    for line in lock.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(==|@)", line)
        if not m:
            continue
        dist = re.sub(r"[-_.]+", "-", m.group(1)).lower()
        names.update(DIST_IMPORTS.get(dist, (dist.replace("-", "_"),)))
        if dist.startswith("nvidia-"):
            names.add("nvidia")
    return names


def _check_third_party(modules: dict[str, Module], available: set[str] | None, findings: list[Finding]) -> None:
    if available is None:
        return
    stdlib = set(sys.stdlib_module_names)
    for m in modules.values():
        for top, line, guarded in m.third_party:
            if guarded or top in stdlib or top in available or top.startswith("_") and top in sys.builtin_module_names:
                continue
            findings.append(Finding(m.path, line,
                                    f"imports {top!r}, which the leaderboard environment does not provide "
                                    f"(not in locks/leaderboard.txt); guard it with try/except ImportError "
                                    "or avoid it"))


def check_stream(path: str, text: str, first_line: int = 1) -> list[Finding]:
    """Every line containing "stream" in any case: the leaderboard refuses such files."""
    return [Finding(path, first_line + i, f"contains {m.group(0)!r}: the leaderboard rejects any file containing "
                                          "the substring 'stream' (any case)")
            for i, line in enumerate(text.splitlines()) for m in [re.search("stream", line, re.IGNORECASE)] if m]


# ----- assembling -------------------------------------------------------------------------------


def collect(entry: str, repo: Path = REPO,
            generated: dict[str, str] | None = None) -> tuple[dict[str, Module], list[Finding]]:
    """The entry module and every project module it needs, with findings. `generated`: module name ->
    the text the bundle carries in place of the repository's file (the gates table)."""
    modules: dict[str, Module] = {}
    findings: list[Finding] = []
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in modules:
            continue
        found = module_file(name, repo)
        if found is None:
            findings.append(Finding(name.replace(".", "/") + ".py", 0, f"module {name} not found"))
            continue
        file, is_package = found
        if name in BUNDLE_SUBSTITUTES and (repo / BUNDLE_SUBSTITUTES[name]).is_file():
            file = repo / BUNDLE_SUBSTITUTES[name]
        text = file.read_text(encoding="utf-8")
        if generated and name in generated:
            text = generated[name]
        m = Module(name, file.relative_to(repo).as_posix(), is_package, text)
        modules[name] = m
        try:
            tree = ast.parse(text, filename=m.path)
        except SyntaxError as e:
            findings.append(Finding(m.path, e.lineno or 0, f"syntax error: {e.msg}"))
            continue
        _scan_imports(m, tree, repo, findings)
        _check_code(m, tree, findings)
        findings += check_stream(m.path, text)
        # a submodule's parent packages run first on import
        parts = name.split(".")
        m.deps |= {".".join(parts[:i]) for i in range(1, len(parts))}
        m.deps.discard(name)
        todo += sorted(m.deps - modules.keys())
    return modules, findings


def dependency_order(modules: dict[str, Module], entry: str) -> list[str]:
    """Dependencies before dependents (depth first from the entry, children in name order); an import
    cycle is cut where it closes, which is harmless because modules execute on first import."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        if state.get(name):
            return
        state[name] = 1
        for dep in sorted(modules[name].deps):
            if dep in modules:
                visit(dep)
        state[name] = 2
        order.append(name)

    visit(entry)
    return order


def string_literal(text: str) -> str:
    """The source as a readable raw triple-quoted literal where possible, else an escaped one."""
    for q in ("'''", '"""'):
        if q not in text and not text.endswith(("\\", q[0])):
            literal = f"r{q}{text}{q}"
            try:
                if ast.literal_eval(literal) == text:
                    return literal
            except (SyntaxError, ValueError):
                pass
    return repr(text)


def exported_names(module: Module) -> list[str]:
    """Public top-level functions, classes and assignments of the entry (what the leaderboard imports)."""
    names = []
    for node in ast.parse(module.text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return sorted({n for n in names if not n.startswith("_")})


def loader_source() -> str:
    """harness/bundle_loader.py without its module docstring."""
    text = LOADER.read_text(encoding="utf-8")
    doc = ast.parse(text).body[0]
    lines = text.splitlines(True)
    return "".join(lines[doc.end_lineno:]).lstrip("\n")


def entry_module(problem: str, kernel: str | None, repo: Path = REPO) -> str:
    """Dotted name of the entry: problems.P.submission, problems.P.NAME, or a file in the repo."""
    if kernel is None:
        kernel = "submission"
    if kernel.endswith(".py") or "/" in kernel:
        path = Path(kernel).resolve()
        try:
            rel = path.relative_to(repo)
        except ValueError:
            raise PackageError([Finding(kernel, 0, "--kernel file must be inside the repository")]) from None
        if not path.is_file() or rel.parts[0] not in PROJECT_PACKAGES:
            raise PackageError([Finding(kernel, 0, "--kernel file must be a .py file under shared/ or problems/")])
        return ".".join(rel.with_suffix("").parts)
    name = f"problems.{problem}.{kernel.replace('-', '_')}"
    if module_file(name, repo) is None:
        raise PackageError([Finding(f"problems/{problem}/{kernel}.py", 0, f"no kernel {kernel!r} for {problem}")])
    return name


def read_manifest(problem: str, repo: Path = REPO) -> dict:
    import yaml

    path = repo / "problems" / problem / "manifest.yaml"
    if not path.is_file():
        known = sorted(p.parent.name for p in (repo / "problems").glob("*/manifest.yaml"))
        raise PackageError([Finding(f"problems/{problem}/manifest.yaml", 0,
                                    f"unknown problem {problem!r} (known: {', '.join(known)})")])
    return yaml.safe_load(path.read_text())


def target(manifest: dict, gpu: str | None, leaderboard: str | None) -> tuple[str, str]:
    """(leaderboard, gpu) checked against the manifest: `leaderboard`, `gpus`, `extra_leaderboards`
    (names, or {name, gpus} mappings)."""
    where = f"problems/{manifest['name']}/manifest.yaml"
    boards = {manifest["leaderboard"]: list(manifest["gpus"])}
    for extra in manifest.get("extra_leaderboards", []) or []:
        if isinstance(extra, dict):
            boards[extra["name"]] = list(extra.get("gpus", manifest["gpus"]))
        else:
            boards[extra] = None  # GPUs not recorded: any of the hackathon's
    board = leaderboard or manifest["leaderboard"]
    if board not in boards:
        raise PackageError([Finding(where, 0, f"leaderboard {board!r} is not one of {sorted(boards)}")])
    gpus = boards[board] or ["B200", "NVIDIA"]
    gpu = gpu or gpus[0]
    if gpu not in gpus:
        raise PackageError([Finding(where, 0, f"GPU {gpu!r} is not offered by {board} (one of {gpus})")])
    return board, gpu


# ----- the sm100 gates table ----------------------------------------------------------------------

GATES_MODULE = "shared.sm100_gates"
GATES_TABLE = Path("results") / "b200" / "gates.json"
DSL_TARGETS = ("runner", "dev")  # harness/locks.py DSL_LOCKS: the CuTe DSL each runs under


def baked_table(table: dict | None) -> dict | None:
    """What a bundle keeps of the table: provenance and keys, and per case the choice and each variant's
    verdict, mean and kernel fingerprint (failure texts stay in the results file: a bundle's text is
    checked for refused words)."""
    if not table:
        return None
    keep = {k: table.get(k) for k in ("schema", "device", "capability", "sm_count", "dsl", "versions", "commit",
                                      "date")}
    keep["problems"] = {
        p: {"code": spec.get("code"),
            "cases": [{"key": c["key"], "chosen": c.get("chosen"),
                       "variants": {v: {"correct": r.get("correct") is True, "mean_us": r.get("mean_us"),
                                        "kernel": r.get("kernel")}
                                    for v, r in sorted((c.get("variants") or {}).items())}}
                      for c in spec.get("cases") or []]}
        for p, spec in sorted((table.get("problems") or {}).items())}
    return keep


def gates_module_text(table: dict | None, source: str, runner_dsl_only: bool, keys) -> str:
    """The module a bundle carries in place of shared/sm100_gates.py: the table as a literal (no file
    read at run time), what is being packaged (`keys`), nothing forced, the runner-DSL filter of the
    package's target."""
    import pprint

    literal = pprint.pformat(baked_table(table), width=110, sort_dicts=True)
    return (f'"""The sm100 gates table of this package, generated by harness/package.py from {source}.\n\n'
            "shared/sm100_variants.gate reads it: a shape listed with a variant that the B200 run found correct\n"
            "and fastest, measured under this package's CuTe DSL on this package's kernel code, gets that\n"
            "variant; every other shape its conservative kernel.\n\"\"\"\n\n"
            f"TABLE = {literal}\n"
            f"SOURCE = {source!r}\n"
            f"RUNNER_DSL_ONLY = {runner_dsl_only!r}\n"
            f"DSL = {keys.dsl!r}\n"
            f"CODE = {keys.code!r}\n\n\n"
            "def code_fingerprint(problem):\n    return CODE\n\n\n"
            "def forced():\n    return None\n")


def gates_summary(problem: str, table: dict | None, source: str, runner_dsl_only: bool, keys,
                  repo: Path = REPO) -> list[str]:
    """Header lines: where the table comes from, what it was measured with against what is packaged, and
    per benchmark case the variant a B200 SM count gets and why."""
    if not table:
        return [f"# sm100 kernels: conservative for every shape ({source}; `nox -s b200` writes it)."]
    import importlib

    from shared.devices import B200_SM_COUNT
    from shared.sm100_variants import case_key, case_shape, chosen_variant

    measured = ((table.get("problems") or {}).get(problem) or {}).get("code")
    variants = importlib.import_module(f"problems.{problem}.config").SM100_VARIANTS
    lines = [f"# sm100 gates table: {source}",
             f"#   measured under CuTe DSL {table.get('dsl')} on {problem} code {measured}; this package: CuTe DSL "
             f"{keys.dsl}, code {keys.code}. Per benchmark case:"]
    for case in read_manifest(problem, repo).get("benchmarks") or []:
        shape = case_shape(problem, case)
        name, why = chosen_variant(baked_table(table), problem, shape, B200_SM_COUNT, variants, keys, runner_dsl_only)
        lines.append(f"#   {case_key(shape)}: {name} ({why})")
    return lines


def package(problem: str, kernel: str | None = None, gpu: str | None = None, leaderboard: str | None = None,
            repo: Path = REPO, lock: Path | None = None, gates: Path | None = None, dsl: str = "runner") -> Packaged:
    """The packaged submission text, or PackageError with every finding. `gates`: the B200 gates table
    (default results/b200/gates.json; absent = conservative kernels); `dsl`: "runner" (the leaderboard
    runner's CuTe DSL 4.3.5: variants marked runner_dsl=False are left out) or "dev"."""
    from harness.locks import dsl_version
    from shared.code_fingerprint import code_fingerprint
    from shared.sm100_gates import load as load_gates
    from shared.sm100_variants import GateKeys

    if dsl not in DSL_TARGETS:
        raise PackageError([Finding("harness/package.py", 0, f"--dsl must be one of {DSL_TARGETS}, got {dsl!r}")])
    manifest = read_manifest(problem, repo)
    board, gpu = target(manifest, gpu, leaderboard)
    entry = entry_module(problem, kernel, repo)
    gates_path = gates or repo / GATES_TABLE
    table = load_gates(gates_path)
    shown = gates_path.relative_to(repo).as_posix() if gates_path.is_relative_to(repo) else gates_path.name
    source = (f"{shown} ({table.get('device')}, commit {table.get('commit')}, {table.get('date')})" if table
              else f"no B200 gates table ({shown} absent)")
    keys = GateKeys(dsl_version(dsl, repo), code_fingerprint(problem, repo, entry))
    modules, findings = collect(entry, repo, {GATES_MODULE: gates_module_text(table, source, dsl == "runner", keys)})
    _check_third_party(modules, leaderboard_modules(lock or repo / "locks" / "leaderboard.txt"), findings)
    if entry in modules and "custom_kernel" not in exported_names(modules[entry]):
        findings.append(Finding(modules[entry].path, 1, "defines no top-level custom_kernel"))
    if findings:
        raise PackageError(findings)

    order = dependency_order(modules, entry)
    prefix = f"_nvfp4_bundle_{problem}"
    entry_path = modules[entry].path
    out = [
        f"#!POPCORN leaderboard {board}",
        f"#!POPCORN gpu {gpu}",
        f"# Single-file submission for {board} ({gpu}), generated by harness/package.py",
        f"# (nox -s package -- {problem}) from {entry_path} and the {len(order) - 1} project modules it",
        "# imports. Do not edit: edit those files and package again.",
        *(gates_summary(problem, table, source, dsl == "runner", keys, repo) if GATES_MODULE in modules else []),
        "# Each module is kept verbatim as a string, dependencies first, and runs on its first import in",
        "# its own namespace (the loader after the modules: harness/bundle_loader.py). Modules:",
        *[f"#   {modules[n].path}" for n in order],
        "",
        "_BUNDLE_SOURCES = {}",
        "",
    ]
    spans: list[tuple[int, int, str]] = []  # (first output line, count, source path) for findings
    for name in order:
        m = modules[name]
        out.append(f"# ---- source: {m.path} " + "-" * max(4, 86 - len(m.path)))
        first = len(out) + 1
        literal = string_literal(m.text)
        out.append(f"_BUNDLE_SOURCES[{name!r}] = ({m.path!r}, {m.is_package}, {literal})")
        spans.append((first, literal.count("\n") + 1, m.path))
        out.append("")
    out.append("# ---- loader: harness/bundle_loader.py " + "-" * 57)
    out.append(loader_source().rstrip("\n"))
    out.append("")
    out.append("")
    out.append(f"_BUNDLE = _BundleImporter({prefix!r}, _BUNDLE_SOURCES)")
    out.append(f"_bundle_entry = _BUNDLE.load({entry!r})")
    for n in exported_names(modules[entry]):
        out.append(f"{n} = _bundle_entry.{n}")
    if HOST_CHECK in modules:
        out += ["", "", 'if __name__ == "__main__":  # the runner\'s compile step: build the compiled check now',
                f"    _BUNDLE.load({HOST_CHECK!r}).compiled()"]
    text = "\n".join(out) + "\n"

    # The rule covers the whole uploaded text: report source lines, and any hit outside them.
    findings = []
    for f in check_stream(f"dist/{problem}/submission.py", text):
        inside = [s for s in spans if s[0] <= f.line < s[0] + s[1]]
        if not inside:
            findings.append(f)
    if findings:
        raise PackageError(findings)
    compile(text, f"dist/{problem}/submission.py", "exec")
    return Packaged(text, tuple(modules[n].path for n in order), board, gpu)


def write(problem: str, out: Path | None = None, **kw) -> tuple[Path, Packaged]:
    result = package(problem, **kw)
    out = out or REPO / "dist" / problem / "submission.py"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(result.text.encode("utf-8"))
    return out, result


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m harness.package", description=__doc__.split("\n\n")[0])
    p.add_argument("problem", type=problem_name)
    p.add_argument("--kernel", default=None, help="entry module: problems/PROBLEM/NAME.py or a .py path "
                                                  "(default: submission)")
    p.add_argument("--gpu", default=None, help="GPU directive (default: the manifest's first)")
    p.add_argument("--leaderboard", default=None, help="leaderboard name (default: the manifest's)")
    p.add_argument("-o", "--output", default=None, help="output file (default: dist/PROBLEM/submission.py)")
    p.add_argument("--gates", default=None, help="the B200 gates table (default: results/b200/gates.json)")
    p.add_argument("--dsl", choices=DSL_TARGETS, default="runner",
                   help="the CuTe DSL the package runs under: runner (4.3.5, the leaderboard's; default) or dev")
    return p


def check_target(problem: str, gpu: str | None, leaderboard: str | None) -> None:
    """Usage (one line) where --gpu or --leaderboard is not the manifest's, checked without PyYAML
    (arguments.manifest_targets); the packager checks again, whatever the manifest's form."""
    manifest = manifest_targets(problem)
    if manifest is None:
        return
    try:
        target(manifest, gpu, leaderboard)
    except PackageError as e:
        raise Usage(e.findings[0].message) from None


def check_arguments(argv: list[str] | None, parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """The command line, checked before anything is read or installed (the noxfile calls this first);
    `parser`: another command's that has the packager's PROBLEM, --gpu and --leaderboard (submit's).
    Usage (one line) on a mistake."""
    args = (parser or build_parser()).parse_args(argv)
    check_target(args.problem, args.gpu, args.leaderboard)
    return args


def main(argv: list[str] | None = None) -> int:
    args = checked("package", check_arguments, argv)
    if args is None:
        return EXIT_USAGE
    try:
        out, result = write(args.problem, Path(args.output) if args.output else None, kernel=args.kernel,
                            gpu=args.gpu, leaderboard=args.leaderboard,
                            gates=Path(args.gates).resolve() if args.gates else None, dsl=args.dsl)
    except PackageError as e:
        print(f"package {args.problem}: refused ({len(e.findings)} problem(s)):", file=sys.stderr)
        for f in e.findings:
            print(f"  {f}", file=sys.stderr)
        return 1
    try:
        shown = out.resolve().relative_to(REPO)
    except ValueError:
        shown = out
    print(f"{shown}: {result.leaderboard} on {result.gpu}, {len(result.modules)} modules, "
          f"{len(result.text.encode())} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
