"""Where the GEMV's single-call time goes, on a GPU: `python lab/gemv_probe.py [--variants]`.

Per benchmark shape, all in the evaluator's loop (harness.timing: L2 flush of the manifest's size,
one call between two events, the leaderboard's stopping rule):
  * the submission, and the streaming read of the same bytes (harness.sol.read_once_loop_us), next
    to the graph-replayed read (harness.sol.read_once_us) the issue's floor is defined by;
  * kernel-only durations of both from the profiler (CUPTI), which leave out the gap between the
    start event and the kernel;
  * with --steady, kernel-only durations back to back over rotating inputs (no flush, warm TLB):
    the condition of the graph-replayed read, for the kernel alone;
  * with --variants, every config of scripts/tune/gemv.py's VARIANTS (checked on both generators
    first), so that configs are chosen by the time the leaderboard sees, not by back-to-back calls.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import sol, timing  # noqa: E402
from harness.problem import load_problem  # noqa: E402
from problems.gemv import reference as ref  # noqa: E402 (after the path fix-up)
from problems.gemv import submission as sub  # noqa: E402
from problems.gemv.config import choose_sm90  # noqa: E402
from scripts.tune import gemv as tune  # noqa: E402


def kernel_us(call, flush_bytes: int, reps: int = 20) -> dict[str, float]:
    """Mean device time per kernel name over `reps` flushed calls (the flush kernels left out);
    `call` may be a list of calls, made in turn without flushes (flush_bytes is then ignored)."""
    clock = timing.Clock("cuda", timing.flush_bytes_for(flush_bytes))
    calls = call if isinstance(call, list) else None
    for c in calls or [call]:
        c()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(reps):
            if calls:
                calls[i % len(calls)]()
            else:
                clock.flush()
                call()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        name = e.key
        if e.device_time > 0 and not any(s in name for s in ("normal", "randn", "distribution", "fill")):
            out[name[:48]] = e.device_time_total / reps
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--variants", action="store_true")
    p.add_argument("--steady", action="store_true")
    args = p.parse_args(argv)
    problem = load_problem("gemv")
    flush = problem.timing["flush_bytes"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name(0)}, flush {timing.flush_bytes_for(flush) >> 20} MiB", flush=True)
    rows, bad = [], 0
    for case in problem.benchmarks:
        m, k, l = case["m"], case["k"], case["l"]
        nbytes = ref.cost(m=m, k=k, l=l)[0]
        data = ref.generate_input(m=m, k=k, l=l, seed=case["seed"])
        graph_us = sol.read_once_us(nbytes)
        read_loop = sol.read_once_loop_us(nbytes, flush)
        call = partial(sub.custom_kernel, data)
        subm = timing.single_call_mean_us(call, flush)
        buf = torch.zeros(nbytes // 4, dtype=torch.int32, device="cuda")
        red = torch.empty(4 * sms, dtype=torch.int32, device="cuda")
        k_sub = kernel_us(call, flush)
        k_read = kernel_us(partial(sol.read_kernel(), buf, red), flush)
        del buf
        shape = (m, k, l)
        print(f"{shape}: read graph {graph_us:6.2f} | read loop {read_loop:6.2f} | submission loop {subm:6.2f} "
              f"(x{subm / graph_us:.3f} graph, x{subm / read_loop:.3f} loop)", flush=True)
        print(f"{shape}: kernel-only us: submission {k_sub} | read {k_read}", flush=True)
        if args.steady:
            copies = max(2, -(-200 * 2**20 // nbytes))
            datas = [ref.generate_input(m=m, k=k, l=l, seed=case["seed"] + i) for i in range(copies)]
            bufs = [torch.zeros(nbytes // 4, dtype=torch.int32, device="cuda") for _ in range(copies)]
            s_sub = kernel_us([partial(sub.custom_kernel, d) for d in datas], 0, reps=8 * copies)
            s_read = kernel_us([partial(sol.read_kernel(), b, red) for b in bufs], 0, reps=8 * copies)
            print(f"{shape}: steady kernel-only us: submission {s_sub} | read {s_read}", flush=True)
            del datas, bufs
        rows.append((shape, "submission", choose_sm90(m, k, l, sms), subm, graph_us, read_loop))
        if args.variants:
            for cfg in tune.VARIANTS:
                try:
                    fn = tune.compile_cfg(cfg, m, k, l, sms)
                except ValueError:
                    continue
                status = tune.verify(fn, m, k, l)
                bad += status != "ok"
                t = timing.single_call_mean_us(partial(tune.launch, fn, data), flush)
                rows.append((shape, status, cfg, t, graph_us, read_loop))
                print(f"{shape} {cfg}: {status} loop {t:6.2f} (x{t / graph_us:.3f} graph, x{t / read_loop:.3f} loop)",
                      flush=True)
        torch.cuda.empty_cache()
    print("\nshape | what | (warps, k_warps, rows, unroll, ctas/SM, prefetch) | loop us | x graph read | x loop read")
    for shape, what, cfg, t, g, rl in rows:
        c = (cfg.warps, cfg.k_warps, cfg.rows, cfg.k_unroll, cfg.ctas_per_sm, cfg.prefetch)
        print(f"{shape} | {what} | {c} | {t:.2f} | {t / g:.3f} | {t / rl:.3f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
