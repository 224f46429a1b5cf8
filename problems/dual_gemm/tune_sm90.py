"""Check and time the Hopper NVFP4 kernels (dual_gemm and gemm) on an sm_90 GPU.

    python problems/dual_gemm/tune_sm90.py [dual_gemm|gemm ...] [--configs NAME,...] [--quick]
        [--extra NEW=BASE:field=value,...] [--only-extra] [--no-check | --no-time]

NAMEs are the keys of SM90_CANDIDATES in problems/<p>/config.py; --extra derives variants (e.g.
--extra k1=default:debug_skip=1 times the kernel without the A decode; results are then not checked).

For every manifest case (tests and benchmarks) and every candidate config that can take it: run on
the leaderboard and the stress generators with the output poisoned with NaN, compare with ref_kernel
(rtol = atol = 1e-3, LEADERBOARD.md 7). Then time the benchmark shapes: L2 flushed (256 MiB write)
before each sample, CUDA events around one call, median of the samples; the bf16 cuBLAS peer
(operands pre-decoded, one GEMM on [B1; B2] for dual) and the Hopper roofline in the same run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.check import check_tensor  # noqa: E402
from harness.progress import Progress  # noqa: E402
from shared.nvfp4 import dequantize  # noqa: E402

BW, PEAK = 3.0e12, 790e12  # H100-MEASURED.md ceilings


def cases(problem):
    man = yaml.safe_load((ROOT / "problems" / problem / "manifest.yaml").read_text())
    return man["tests"], man["benchmarks"]


def time_us(fns, reps=30):
    """Median single-call time of each fn, L2 flushed before every call. The calls are interleaved
    (one sample of each fn per round) so that clock or neighbour drift during the run hits every
    fn alike, and a GPU sleep after the flush keeps host-side launch time out of the figure: on the
    lent H100 the same kernel measured up to 30% apart between runs without both."""
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
    for fn in fns:
        fn()
    torch.cuda.synchronize()
    ts = [[] for _ in fns]
    for _ in range(reps):
        for fn, t in zip(fns, ts):
            flush.fill_(1.0)
            torch.cuda._sleep(400_000)  # ~0.2 ms: the host is ahead, so the events time the GPU alone
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            t.append(s.elapsed_time(e) * 1e3)
    return [sorted(t)[len(t) // 2] for t in ts]


def warm_gpu(seconds=2.0):
    """Keep the GPU busy for a while so that the first timed kernels do not run at ramping clocks
    (a fresh process measured up to 30% slow otherwise, H100 2026-11-22)."""
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(20):
            x @ x
        torch.cuda.synchronize()


def sol_us(problem, m, n, k):
    nb = 2 if problem == "dual_gemm" else 1
    bytes_ = (m + nb * n) * (k // 2 + k // 16) + 2 * m * n
    return max(bytes_ / BW, 2 * nb * m * n * k / PEAK) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("problems", nargs="*", default=["dual_gemm", "gemm"])
    ap.add_argument("--configs", default="")
    ap.add_argument("--quick", action="store_true", help="first test case and the benchmarks only")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--no-check", action="store_true", help="time only (the configs were checked in another run)")
    ap.add_argument(
        "--extra",
        action="append",
        default=[],
        help="NAME=BASE:field=value,... a variant of candidate BASE (e.g. s4=m64_wide:stages=4)",
    )
    ap.add_argument("--only-extra", action="store_true", help="time and check only the --extra variants")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    print(torch.cuda.get_device_name(), flush=True)
    for problem in args.problems:
        ref = importlib.import_module(f"problems.{problem}.reference")
        kmod = importlib.import_module(f"problems.{problem}.kernel_sm90")
        cfgmod = importlib.import_module(f"problems.{problem}.config")
        cands = dict(cfgmod.SM90_CANDIDATES)
        names = [c for c in args.configs.split(",") if c] or list(cands)
        names = [c for c in names if c in cands]
        import dataclasses

        extra = []
        for spec in args.extra:
            name, rest = spec.split("=", 1)
            base, _, fields = rest.partition(":")
            if base not in cands:
                continue
            kw = {}
            for f in filter(None, fields.split(",")):
                key, val = f.split("=")
                cur = getattr(cands[base], key)
                kw[key] = int(val) if cur is None else type(cur)(int(val))
            cands[name] = dataclasses.replace(cands[base], **kw)
            extra.append(name)
        if args.only_extra:
            names = extra
        else:
            names += extra
        tests, benches = cases(problem)
        if args.quick:
            tests = tests[:2]
        cls = kmod.DualGemmSm90 if problem == "dual_gemm" else kmod.GemmSm90
        for name in names:
            t0 = time.time()
            from shared.cute.host import compile_sm90

            compile_sm90(cls, cands[name])
            print(f"[{problem}] compiled {name} {cands[name]} in {time.time() - t0:.1f}s", flush=True)
        # correctness
        for case in [] if args.no_check else tests + benches:
            m, n, k, l = case["m"], case["n"], case["k"], case["l"]
            for name in names:
                cfg = cands[name]
                if not cls.can_implement(m, n, k, l, cfg):
                    continue
                if cfg.debug_skip:
                    continue
                for gen in ("generate_input", "generate_stress_input"):
                    data = getattr(ref, gen)(**case, device="cuda")
                    want = ref.ref_kernel(tuple(t.clone() for t in data))
                    data[-1].fill_(float("nan"))
                    got = kmod.run(data, cfg)
                    torch.cuda.synchronize()
                    ok, msg = check_tensor(got, want, 1e-3, 1e-3)
                    err = (got.float() - want.float()).abs().nan_to_num(1e9).max().item()
                    print(
                        f"[{problem}] {name:7s} {gen[9:14]:6s} m={m:5d} n={n:5d} k={k:6d}: "
                        f"{'PASS' if ok else 'FAIL'} maxerr={err:.3g} {msg[:160]}",
                        flush=True,
                    )
        if args.no_time:
            continue
        # timing
        warm_gpu()
        print(f"\n[{problem}] timing (us, median, L2 flushed)")
        hdr = f"{'m':>5} {'n':>5} {'k':>6} | {'SOL':>6} {'cuBLAS-bf16':>11} | " + " ".join(f"{x:>8}" for x in names)
        print(hdr)
        progress = Progress(f"[{problem}] timing", len(benches))
        for i, case in enumerate(benches):
            m, n, k, l = case["m"], case["n"], case["k"], case["l"]
            progress.step(i + 1, f"m={m} n={n} k={k}")
            data = ref.generate_input(**case, device="cuda")
            # bf16 peer: operands decoded once outside the timed region
            a16 = dequantize(data[0], data[2 if problem == "gemm" else 3])[:, :, 0].to(torch.bfloat16)
            if problem == "gemm":
                bt = dequantize(data[1], data[3])[:, :, 0].to(torch.bfloat16).t()
            else:
                bt = torch.cat((dequantize(data[1], data[4]), dequantize(data[2], data[5])), 0)[:, :, 0]
                bt = bt.to(torch.bfloat16).t()
            fns = [lambda a16=a16, bt=bt: a16 @ bt]
            ok = [cls.can_implement(m, n, k, l, cands[name]) for name in names]
            fns += [lambda cfg=cands[name], data=data, run=kmod.run: run(data, cfg) for name, o in zip(names, ok) if o]
            times = iter(time_us(fns))
            peer = next(times)
            row = [f"{next(times):.1f}" if o else "-" for o in ok]
            print(
                f"{m:5d} {n:5d} {k:6d} | {sol_us(problem, m, n, k):6.1f} {peer:11.1f} | "
                + " ".join(f"{x:>8}" for x in row),
                flush=True,
            )
        progress.done()


if __name__ == "__main__":
    main()
