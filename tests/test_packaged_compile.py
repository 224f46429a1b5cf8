"""The packaged single files compile their sm100 kernels for sm_100a, with whichever CuTe DSL is
installed: the project's (4.8.1) under `nox -s test`, the leaderboard runner's (4.3.5,
locks/runner-dsl.txt) under `nox -s runner_dsl`. A kernel that compiles only with the newer DSL
would fail on the leaderboard; this is where that shows first.

Each compile runs in a child process that sees no GPU, so that every machine takes the same path.
CuTe DSL 4.3.5 hands the compiled module to the CUDA driver right after compiling it, and without a
driver that step raises CudaDriverDependencyError; the PTX and the cubin are written before it. The
child accepts that one error once both files exist (4.8.1 compiles without touching the driver).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

ROOT = Path(__file__).resolve().parent.parent

# The child: import the packaged file alone, compile its sm100 kernel(s) for one benchmark shape
# with PTX and cubin kept. argv: directory of submission.py, problem, dump directory.
# Both children accept one failure: CuTe DSL 4.3.5's missing-driver error after PTX and cubin were written.
DRIVER_STEP = r'''
import glob


def driver_step_only(e, dump):
    causes, x = [], e
    while x is not None:
        causes.append("%s: %s" % (type(x).__name__, x))
        x = x.__cause__ or x.__context__
    written = glob.glob(dump + "/*.ptx") and glob.glob(dump + "/*.cubin")
    return bool(written) and any("CudaDriverDependencyError" in c for c in causes)
'''
CHILD = DRIVER_STEP + r'''
import sys
sys.path.insert(0, sys.argv[1])
import submission
problem, dump = sys.argv[2], sys.argv[3]
load = submission._BUNDLE.load
options = "--keep-ptx --keep-cubin --dump-dir " + dump
kname = load("problems.%s.kernel_sm100" % problem).__name__
assert kname.startswith("_nvfp4_bundle"), "not the packaged module: " + kname
try:
    if problem == "gemv":
        kmod, cmod = load("problems.gemv.kernel_sm100"), load("problems.gemv.config")
        m, k, l, sms = 7168, 16384, 1, 148  # a benchmark shape; a B200 has 148 SMs
        load("problems.gemv.kernel_sm90").compile_gemv(kmod.GemvSm100, cmod.choose_sm100(m, k, l, sms), m, k, l,
                                                       sms, options=options)
    elif problem == "group_gemm":
        kmod = load("problems.group_gemm.kernel_sm100")
        sizes = [(80, 4096, 7168, 1), (176, 4096, 7168, 1)]  # from the first benchmark
        kmod.compile_for(load("problems.group_gemm.config").choose_sm100(sizes), options=options)
    else:
        load("problems.%s.kernel_sm100" % problem).compile_for(256, 1024, 512, 1, options=options)
except Exception as e:
    if not driver_step_only(e, dump):
        raise
    print("compiled; the driver step after it was skipped (no driver)")
'''

# What the PTX of each problem's sm100 kernel must contain: the hardware E2M1 -> f16x2 conversion
# (GEMV), the block-scaled MMA with one scale per 16 values (4.8.1 spells it .block16, 4.3.5 the
# older .scale_vec::4X; .scale_vec::2X would be one scale per 32).
NVFP4_MMA = r"tcgen05\.mma\.cta_group::1\.kind::mxf4nvf4\.block_scale\.(block16|scale_vec::4X)"
SIGNATURE = {"gemv": r"cvt\.rn\.f16x2\.e2m1x2", "gemm": NVFP4_MMA, "dual_gemm": NVFP4_MMA, "group_gemm": NVFP4_MMA}
# ... and the grouped GEMM rewrites its TMA descriptors per group on the device.
ALSO = {"group_gemm": [r"tensormap\.replace\.tile\.global_address", r"tensormap\.cp_fenceproxy\.global\.shared::cta",
                       r"fence\.proxy\.tensormap::generic\.acquire"]}


# The child for a variant of a problem's sm100 kernel (problems/<problem>/config.py SM100_VARIANTS):
# compile the config the variant chooses for one shape. One child per config: after CuTe DSL 4.3.5 has
# met the missing driver once, a second compile in the same process fails differently.
# argv: directory of submission.py, problem, variant, dump directory, the chooser's arguments as JSON.
VARIANT_CHILD = DRIVER_STEP + r'''
import json, sys
sys.path.insert(0, sys.argv[1])
import submission
problem, variant, dump, args = sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
load = submission._BUNDLE.load
kmod, cmod = load("problems.%s.kernel_sm100" % problem), load("problems.%s.config" % problem)
if problem == "group_gemm":
    args[0] = [tuple(size) for size in args[0]]
cfg = cmod.SM100_VARIANTS[variant].choose(*args)
options = "--keep-ptx --keep-cubin --dump-dir " + dump
try:
    if problem == "group_gemm":
        kmod.compile_for(cfg, options=options)
    else:
        kmod.compile_for(*args[:4], config=cfg, options=options)
except Exception as e:
    if not driver_step_only(e, dump):
        raise
print("compiled", args, cfg)
'''

# What each registered variant's PTX must show: its MMA and the technique it adds.
PAIR_MMA = r"tcgen05\.mma\.cta_group::2\.kind::mxf4nvf4\.block_scale\.(block16|scale_vec::4X)"
PAIR_COMMIT = r"tcgen05\.commit\.cta_group::2\.\S*multicast::cluster"
PAIR_MULTICAST_TMA = r"cp\.async\.bulk\.tensor\.\S*multicast::cluster\S*cta_group::2"
VARIANT_SIGNATURE = {
    ("gemm", "splitk_swap"): [NVFP4_MMA, r"mapa\.shared::cluster", r"st\.shared::cluster\.v4\.f32",
                              r"barrier\.cluster\.arrive", r"barrier\.cluster\.wait"],
    ("dual_gemm", "cta2"): [PAIR_MMA, PAIR_COMMIT, PAIR_MULTICAST_TMA, r"tcgen05\.alloc\.cta_group::2",
                            r"tcgen05\.dealloc\.cta_group::2"],
    ("group_gemm", "cta2"): [PAIR_MMA, PAIR_COMMIT, PAIR_MULTICAST_TMA, r"tensormap\.replace\.tile\.global_address"],
}


def runner_dsl_version() -> str:
    text = (ROOT / "locks" / "leaderboard.txt").read_text()
    return re.search(r"^nvidia-cutlass-dsl==(\S+)", text, flags=re.M).group(1)


def installed_dsl_version() -> str:
    from importlib.metadata import version

    return version("nvidia-cutlass-dsl")


def test_runner_dsl_session_runs_the_runners_dsl():
    """`nox -s runner_dsl` sets NVFP4_RUNNER_DSL: there, the DSL must be the runner's, or the session
    would check nothing new."""
    if not os.environ.get("NVFP4_RUNNER_DSL"):
        pytest.skip("not in `nox -s runner_dsl`")
    assert installed_dsl_version() == runner_dsl_version()


def _compile_packaged(problem, tmp_path) -> str:
    """Package `problem`, compile its sm100 kernel in a child without a GPU; the PTX."""
    _package(problem, tmp_path)
    dump = tmp_path / "dump"
    dump.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # the same path with or without a GPU (module docstring)
    argv = [sys.executable, "-c", CHILD, str(tmp_path), problem, str(dump)]
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    dsl = installed_dsl_version()
    assert run.returncode == 0, f"CuTe DSL {dsl}:\n{run.stderr[-3000:]}"
    (ptx,) = glob.glob(str(dump / "*.ptx"))
    assert glob.glob(str(dump / "*.cubin")), f"CuTe DSL {dsl}: no cubin"
    return Path(ptx).read_text()


@pytest.mark.parametrize("problem", list(SIGNATURE))
def test_packaged_sm100_kernel_compiles(problem, tmp_path):
    text = _compile_packaged(problem, tmp_path)
    for pattern in [SIGNATURE[problem], *ALSO.get(problem, [])]:
        assert re.search(pattern, text), f"CuTe DSL {installed_dsl_version()}: no {pattern} in the PTX"


def test_the_dsl_has_the_launch_halves_the_prepared_launch_uses():
    """shared.cute.launch_binding.bind_compiled splits a compiled function's call into the DSL's own halves
    (marshal once, then one C call per launch). Those are internals; this names each one it uses, in
    the installed DSL: 4.8.1 under `nox -s test`, the runner's 4.3.5 under `nox -s runner_dsl`. Should a
    DSL drop one, bind_compiled falls back to the plain call (correct, slower) and this test says so."""
    import inspect

    from cutlass.base_dsl.jit_executor import JitCompiledFunction, JitExecutor
    from cutlass.cutlass_dsl import cuda_jit_executor

    compiled = cuda_jit_executor.CudaDialectJitCompiledFunction  # what cute.compile returns
    assert issubclass(compiled, JitCompiledFunction)
    for name in ("generate_execution_args", "to"):
        assert callable(getattr(compiled, name, None)), f"CuTe DSL {installed_dsl_version()}: no {name}"
    assert callable(getattr(JitExecutor, "_get_invoke_packed_args", None))
    init = inspect.getsource(JitExecutor.__init__)
    assert "self.jit_module = jit_module" in init and "self.cuda_result =" in init
    assert "self.capi_func = capi_func" in inspect.getsource(cuda_jit_executor)
    # The executor's C entry takes the packed argument array, then the status slot, then the kernels.
    packer = inspect.getsource(JitExecutor._get_invoke_packed_args)
    assert "cuda_result" in packer


@functools.cache
def packaged_text(problem: str) -> str:
    """What `nox -s package -- PROBLEM` writes (for the runner's DSL by default), once per session."""
    from harness import package as pk

    return pk.package(problem).text


def _package(problem: str, tmp_path: Path) -> None:
    """The packaged submission.py in tmp_path, with the leaderboard's task.py beside it (the runner
    writes one; group_gemm imports it)."""
    (tmp_path / "submission.py").write_text(packaged_text(problem))
    (tmp_path / "task.py").write_text("input_t = tuple\noutput_t = object\n")


@pytest.mark.parametrize("problem,variant", list(VARIANT_SIGNATURE), ids=[f"{p}-{v}" for p, v in VARIANT_SIGNATURE])
def test_packaged_sm100_variant_compiles_for_every_benchmark_shape(problem, variant, tmp_path):
    """Each variant's config for every benchmark shape it applies to, compiled from the packaged file
    under the runner's DSL (`nox -s runner_dsl`, which CI runs), where a config that fails to compile
    would fail on the leaderboard; a variant the registry marks runner_dsl=False is left out there
    (packages for the runner leave it out too). Under the project's DSL (`nox -s test`) the first
    shape's config only: the sm100 tests compile the variants from the repository already, and each
    config here is a child process importing torch and the DSL (~5 s of the CPU tier)."""
    import json

    from harness.problem import load_problem
    from shared.devices import B200_SM_COUNT
    from shared.sm100_variants import case_shape, chooser_args

    config = __import__(f"problems.{problem}.config", fromlist=["SM100_VARIANTS"])
    entry = config.SM100_VARIANTS[variant]
    if os.environ.get("NVFP4_RUNNER_DSL") and not entry.runner_dsl:
        pytest.skip(f"{problem}/{variant} is marked runner_dsl=False")
    chosen = {}  # config -> (shape, the chooser's arguments) of the first benchmark shape choosing it
    for shape in (case_shape(problem, c) for c in load_problem(problem).benchmarks):
        args = chooser_args(problem, shape, B200_SM_COUNT)
        cfg = entry.choose(*args)
        if cfg is not None:
            chosen.setdefault(cfg, (shape, args))
    assert chosen, f"{variant} applies to no benchmark shape of {problem}"
    todo = list(chosen.values()) if os.environ.get("NVFP4_RUNNER_DSL") else list(chosen.values())[:1]
    _package(problem, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    dsl = installed_dsl_version()
    for i, (shape, args) in enumerate(todo):
        dump = tmp_path / f"dump{i}"
        dump.mkdir()
        run = subprocess.run([sys.executable, "-c", VARIANT_CHILD, str(tmp_path), problem, variant, str(dump),
                              json.dumps(args)], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0, f"CuTe DSL {dsl}, {shape}:\n{run.stderr[-3000:]}"
        (ptx,) = glob.glob(str(dump / "*.ptx"))
        text = Path(ptx).read_text()
        for pattern in VARIANT_SIGNATURE[(problem, variant)]:
            assert re.search(pattern, text), f"CuTe DSL {dsl}, {shape}: no {pattern} in the PTX"
        assert glob.glob(str(dump / "*.cubin")), f"CuTe DSL {dsl}: no cubin"


def test_every_registered_variant_with_its_own_kernel_is_compiled_here():
    """A new variant with its own kernel must join VARIANT_SIGNATURE, or no DSL would compile it in CI.
    group_gemm's msorted is left out: it compiles to the conservative binary (tests/test_sm100_gates.py)."""
    import importlib

    registered = {(p, v) for p in ("gemv", "gemm", "dual_gemm", "group_gemm")
                  for v in importlib.import_module(f"problems.{p}.config").SM100_VARIANTS}
    own_kernel = registered - {(p, "conservative") for p, _ in registered} - {("group_gemm", "msorted")}
    assert own_kernel == set(VARIANT_SIGNATURE)
