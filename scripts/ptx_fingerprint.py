"""The PTX of every kernel and config, compiled for its architecture without a GPU, as sha256 per job.

A refactor of kernel code proves itself by byte-identical PTX before and after:

    python -m scripts.ptx_fingerprint --json results/ptx/BEFORE.json       # on the old commit
    python -m scripts.ptx_fingerprint --compare results/ptx/BEFORE.json    # on the new one: exit 1 on a change

Where a change must alter the PTX text but not the machine code (say `ld.shared.v4.u32` becoming
`.b32`), `--sass` also hashes the SASS that cuobjdump prints for the kept cubin, and `--compare`
reports such a job as "PTX changed, SASS identical" (still a difference: exit 1).

Jobs: each sm90 GEMM-family config in the problems' candidate tables, the grouped kernels' configs
and descriptor builder, each GEMV static key that a manifest case compiles, for sm_90a and
sm_100a, and each registered sm100 variant's config for the manifest cases it applies to. `--keep DIR`
leaves the PTX files there for a diff.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cases(problem: str):
    from harness.problem import load_problem

    p = load_problem(problem)
    return [dict(c) for c in (*p.tests, *p.benchmarks)]


def jobs():
    """(name, compile(options)) for every kernel and config; names stay stable across refactors."""
    out = []
    # sm90 GEMM family: every candidate config of gemm and dual_gemm
    from problems.dual_gemm.config import SM90_CANDIDATES as DUAL_CANDIDATES
    from problems.dual_gemm.kernel_sm90 import DualGemmSm90
    from problems.gemm.config import SM90_CANDIDATES as GEMM_CANDIDATES
    from problems.gemm.kernel_sm90 import GemmSm90
    from shared.cute.sm90_host import compile_sm90

    for name, cfg in GEMM_CANDIDATES.items():
        out.append((f"sm90/gemm/{name}", lambda o, c=cfg: compile_sm90(GemmSm90, c, o)))
    for name, cfg in DUAL_CANDIDATES.items():
        out.append((f"sm90/dual_gemm/{name}", lambda o, c=cfg: compile_sm90(DualGemmSm90, c, o)))
    from problems.group_gemm import kernel_sm90 as group90
    from problems.group_gemm.config import SM90_PAIRS, SM90_PAIRS_SPLIT

    out.append(("sm90/group_gemm/gemm", lambda o: group90.compiled("gemm", o)))
    out.append(("sm90/group_gemm/gemm-pairs", lambda o: group90.compiled("gemm", o, config=SM90_PAIRS)))
    out.append(("sm90/group_gemm/gemm-pairs-split", lambda o: group90.compiled("gemm", o, config=SM90_PAIRS_SPLIT)))
    out.append(("sm90/group_gemm/descriptors", lambda o: group90.compiled("descriptors", o)))

    # GEMV: the static key (M, K, L, config) of every manifest case
    from problems.gemv.config import choose_sm90, choose_sm100
    from problems.gemv.kernel_sm90 import GemvSm90, compile_gemv
    from problems.gemv.kernel_sm100 import GemvSm100
    from shared.devices import B200_SM_COUNT, H100_SM_COUNT

    for arch, kernel, choose, sms in (("sm90", GemvSm90, choose_sm90, H100_SM_COUNT),
                                        ("sm100", GemvSm100, choose_sm100, B200_SM_COUNT)):
        seen = set()
        for c in _cases("gemv"):
            m, k, l = c["m"], c["k"], c["l"]
            cfg = choose(m, k, l, sms)
            if (m, k, l) in seen or not kernel.can_implement(cfg, m, k, l)[0]:
                continue
            seen.add((m, k, l))
            out.append((f"{arch}/gemv/m{m}_k{k}_l{l}",
                        lambda o, kernel=kernel, cfg=cfg, m=m, k=k, l=l, sms=sms: compile_gemv(
                            kernel, cfg, m, k, l, sms, options=o)))

    # sm100 GEMM family: the config chosen for each manifest case
    from problems.dual_gemm import config as dual_config
    from problems.dual_gemm import kernel_sm100 as dual100
    from problems.gemm import config as gemm_config
    from problems.gemm import kernel_sm100 as gemm100

    for problem, mod, choose in (("gemm", gemm100, gemm_config.choose_sm100),
                                 ("dual_gemm", dual100, dual_config.choose_sm100)):
        seen = set()
        for c in _cases(problem):
            shape = (c["m"], c["n"], c["k"], c["l"])
            cfg = choose(*shape)
            if cfg in seen:
                continue
            seen.add(cfg)
            out.append((f"sm100/{problem}/{_cfg_name(cfg)}",
                        lambda o, mod=mod, shape=shape, cfg=cfg: mod.compile_for(*shape, config=cfg, options=o)))
    from problems.group_gemm import kernel_sm100 as group100
    from problems.group_gemm.config import choose_sm100 as choose_group

    seen = set()
    for c in _cases("group_gemm"):
        sizes = [(m, n, k, 1) for m, n, k in zip(c["m"], c["n"], c["k"])]
        cfg = choose_group(sizes)
        if cfg in seen:
            continue
        seen.add(cfg)
        out.append((f"sm100/group_gemm/{_cfg_name(cfg)}", lambda o, cfg=cfg: group100.compile_for(cfg, options=o)))
    out += _variant_jobs()
    return out


def _variant_jobs():
    """The registered sm100 variants (SM100_VARIANTS besides "conservative"): the config each one
    chooses for a manifest case, once per config."""
    from problems.dual_gemm import config as dual_config
    from problems.dual_gemm import kernel_sm100 as dual100
    from problems.gemm import config as gemm_config
    from problems.gemm import kernel_sm100 as gemm100
    from problems.group_gemm import config as group_config
    from problems.group_gemm import kernel_sm100 as group100
    from shared.devices import B200_SM_COUNT
    from shared.sm100_variants import CONSERVATIVE, case_shape, chooser_args

    out = []
    for problem, config, mod in (("gemm", gemm_config, gemm100), ("dual_gemm", dual_config, dual100),
                                 ("group_gemm", group_config, group100)):
        for name, variant in config.SM100_VARIANTS.items():
            if name == CONSERVATIVE:
                continue
            seen = set()
            for c in _cases(problem):
                shape = case_shape(problem, c)
                cfg = variant.choose(*chooser_args(problem, shape, B200_SM_COUNT))
                if cfg is None or cfg in seen:
                    continue
                seen.add(cfg)
                if problem == "group_gemm":
                    build = lambda o, cfg=cfg: group100.compile_for(cfg, options=o)  # noqa: E731
                else:
                    build = lambda o, mod=mod, shape=shape, cfg=cfg: mod.compile_for(*shape, config=cfg, options=o)  # noqa: E731
                out.append((f"sm100/{problem}/{name}/{_cfg_name(cfg)}", build))
    return out


def _cfg_name(cfg) -> str:
    from dataclasses import fields

    # host-only fields (the grouped schedule's group order) do not reach the binary
    return "_".join(f"{f.name}{getattr(cfg, f.name)}" for f in fields(cfg) if not f.metadata.get("host_only"))


def sass_text(cubin: Path) -> str:
    """The cubin's SASS as cuobjdump prints it, without the lines that name the file."""
    import subprocess

    sys.path.insert(0, str(ROOT / "tests"))
    from cuda_tools import find_tool

    tool = find_tool("cuobjdump")
    if tool is None:
        raise SystemExit("--sass needs cuobjdump (pip install nvidia-cuda-cuobjdump)")
    out = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    return "\n".join(line for line in out.splitlines() if not line.startswith("Fatbin") and "code for" not in line)


def fingerprint(keep: Path | None = None, only: str | None = None, sass: bool = False) -> dict[str, str]:
    """{job: sha256 of its PTX} and, with sass, {job + " sass": sha256 of its SASS}."""
    result = {}
    todo = [(n, b) for n, b in jobs() if only is None or only in n]
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, build) in enumerate(todo, 1):
            d = Path(tmp) / name.replace("/", "__")
            d.mkdir(parents=True)
            build(f"--keep-ptx {'--keep-cubin ' if sass else ''}--dump-dir {d}")
            ptx = glob.glob(str(d / "*.ptx"))
            if len(ptx) != 1:
                raise SystemExit(f"{name}: expected one .ptx in {d}, found {len(ptx)}")
            text = Path(ptx[0]).read_bytes()
            result[name] = hashlib.sha256(text).hexdigest()
            if sass:
                (cubin,) = glob.glob(str(d / "*.cubin"))
                result[name + " sass"] = hashlib.sha256(sass_text(Path(cubin)).encode()).hexdigest()
            if keep:
                keep.mkdir(parents=True, exist_ok=True)
                (keep / (name.replace("/", "__") + ".ptx")).write_bytes(text)
            print(f"\r[{i}/{len(todo)}] {name} ({time.time() - t0:.0f} s)\033[K", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write {job: sha256} here")
    ap.add_argument("--compare", type=Path, help="compare with an earlier --json file; exit 1 on any difference")
    ap.add_argument("--keep", type=Path, help="keep the PTX files in this folder")
    ap.add_argument("--only", help="only jobs whose name contains this")
    ap.add_argument("--sass", action="store_true", help="also hash each kernel's SASS (cuobjdump)")
    args = ap.parse_args(argv)
    got = fingerprint(args.keep, args.only, args.sass)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    if not args.compare:
        for name, h in sorted(got.items()):
            print(f"{h[:16]}  {name}")
        return 0
    want = json.loads(args.compare.read_text())
    if args.only:
        want = {n: h for n, h in want.items() if args.only in n}
    rows = []
    for name in sorted(n for n in set(want) | set(got) if not n.endswith(" sass")):
        a, b = want.get(name), got.get(name)
        verdict = "identical" if a == b else "missing now" if b is None else "new" if a is None else "CHANGED"
        if verdict == "CHANGED" and want.get(name + " sass") and want.get(name + " sass") == got.get(name + " sass"):
            verdict = "PTX changed, SASS identical"
        rows.append((name, verdict))
    width = max(len(n) for n, _ in rows)
    for name, verdict in rows:
        print(f"{name:<{width}}  {verdict}")
    bad = [n for n, v in rows if v != "identical"]
    print(f"{len(rows) - len(bad)} of {len(rows)} jobs byte-identical ({os.path.basename(args.compare)})")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
