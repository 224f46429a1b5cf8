"""Check and time GEMV kernel configs on an H100: `python -m problems.gemv.tune_sm90 [--quick]`.

For every benchmark shape and config: compile, compare with the reference on the leaderboard and
the stress generator (output poisoned first), then time with CUDA events, one call per sample,
an L2 flush (a 512 MiB memset) before each sample and rotating input copies (together larger than
L2). Prints one table row per (shape, config) with the median and best time, the effective read
bandwidth and the ratio to the time of reading the input bytes once at `--floor-tbs` TB/s; the
bf16-predecoded cuBLAS peer is timed the same way for comparison.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import torch

from harness.check import check_tensor
from harness.progress import Progress
from problems.gemv import reference as ref
from problems.gemv.config import GemvConfig, choose_sm90

BENCH = [(7168, 16384, 1), (4096, 7168, 8), (7168, 2048, 4)]
FLOOR_US = {(7168, 16384, 1): 25.4, (4096, 7168, 8): 46.5, (7168, 2048, 4): 13.2}  # H100-MEASURED.md

VARIANTS = [  # (warps, k_warps, rows, k_unroll, ctas_per_sm, prefetch)
    GemvConfig(8, 1, 2, 2, 0, 1),
    GemvConfig(8, 1, 2, 2, 0, 2),
    GemvConfig(8, 1, 4, 1, 0, 1),
    GemvConfig(8, 1, 2, 2, 2, 1),
    GemvConfig(8, 1, 2, 2, 3, 1),
    GemvConfig(8, 1, 2, 2, 4, 1),
    GemvConfig(8, 1, 2, 2, 2, 2),
    GemvConfig(8, 1, 4, 1, 2, 1),
    GemvConfig(8, 1, 4, 1, 3, 2),
    GemvConfig(4, 1, 2, 2, 4, 1),
    GemvConfig(16, 1, 2, 2, 1, 1),
    GemvConfig(8, 1, 1, 4, 3, 1),
]


def diagnostic_kernels():
    """Variants of the kernel that drop parts of the work, to see where the time goes."""
    from cutlass import Float32

    from problems.gemv.kernel_sm90 import GemvSm90

    class LoadsOnly(GemvSm90):  # every load of A and SFA, no decode or dot products
        def k_block(self, acc, a_words, sfa_bits, sb_lane, ssf_lane, step0, n_steps, step_chunks):
            rows = len(a_words) // n_steps
            for u in range(n_steps):
                for r in range(rows):
                    w = a_words[u * rows + r]
                    acc[r] = acc[r] + (w[0] ^ w[1] ^ w[2] ^ w[3] ^ sfa_bits[u * rows + r]).to(Float32)

    class NoVector(GemvSm90):  # skips the per-CTA vector decode (wrong results, timing only)
        def decode_vector(self, *args):
            pass

    class LoadsOnlyNoVector(LoadsOnly):
        def decode_vector(self, *args):
            pass

    class Empty(LoadsOnlyNoVector):  # launch, tile loop and stores only
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.steps = 0

    return {
        "full": GemvSm90,
        "loads_only": LoadsOnly,
        "no_vector": NoVector,
        "loads_only_no_vector": LoadsOnlyNoVector,
        "empty": Empty,
    }


def compile_cfg(cfg, m, k, l, sms, kernel_cls=None):
    import cutlass
    import cutlass.cute as cute

    from problems.gemv.kernel_sm90 import GemvSm90
    from shared.cute.host import null_ptr

    kern = (kernel_cls or GemvSm90)(cfg, m, k, l, sms=sms)
    u8 = null_ptr(cutlass.Uint8)
    return cute.compile(kern, u8, u8, u8, u8, null_ptr(cutlass.Float16, align=2))


def launch(fn, data):
    import cutlass

    from shared.cute.host import gmem_ptr

    a, b, sfa, sfb, _, _, c = data
    u8 = cutlass.Uint8
    fn(gmem_ptr(a, u8), gmem_ptr(b, u8), gmem_ptr(sfa, u8), gmem_ptr(sfb, u8), gmem_ptr(c, cutlass.Float16, align=2))
    return c


def verify(fn, m, k, l) -> str:
    for gen in (ref.generate_input, ref.generate_stress_input):
        data = gen(m=m, k=k, l=l, seed=1111)
        want = ref.ref_kernel(tuple(t.clone() for t in data))
        data[-1].fill_(float("nan"))
        got = launch(fn, data)
        torch.cuda.synchronize()
        ok, msg = check_tensor(got, want, 1e-3, 1e-3)
        if not ok:
            return f"{gen.__name__}: {msg[:300]}"
    return "ok"


def time_us(call, inputs, samples: int, per_sample: int = 1) -> tuple[float, float]:
    """Median and best per-call time: flush L2, then `per_sample` calls between two events."""
    flush = torch.empty(512 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    times = []
    for i in range(samples + 3):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for j in range(per_sample):
            call(inputs[(i * per_sample + j) % len(inputs)])
        end.record()
        torch.cuda.synchronize()
        if i >= 3:
            times.append(start.elapsed_time(end) * 1e3 / per_sample)
    return statistics.median(times), min(times)


def diagnose(m, k, l, sms, inputs, samples):
    cfg = choose_sm90(m, k, l, sms)
    for name, cls in diagnostic_kernels().items():
        fn = compile_cfg(cfg, m, k, l, sms, cls)
        single = time_us(lambda d, fn=fn: launch(fn, d), inputs, samples)
        b2b = time_us(lambda d, fn=fn: launch(fn, d), inputs, max(5, samples // 4), per_sample=8)
        print(
            f"{(m, k, l)} {name:>22}: single median {single[0]:7.2f} best {single[1]:7.2f} us | "
            f"8 back-to-back: median {b2b[0]:7.2f} best {b2b[1]:7.2f} us per call",
            flush=True,
        )
    floor_inputs = [
        torch.cat(
            [d[0].view(torch.uint8).permute(2, 0, 1).reshape(-1), d[2].view(torch.uint8).permute(2, 0, 1).reshape(-1)]
        ).view(torch.float32)
        for d in inputs
    ]
    med, best = time_us(lambda x: x.sum(), floor_inputs, samples)
    print(f"{(m, k, l)} {'torch sum of A+SFA bytes':>22}: single median {med:7.2f} best {best:7.2f} us")
    del floor_inputs


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="default config only")
    p.add_argument("--samples", type=int, default=40)
    p.add_argument("--diagnose", action="store_true", help="time kernels with parts of the work removed")
    args = p.parse_args(argv)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"device: {torch.cuda.get_device_name(0)}, {sms} SMs, torch {torch.__version__}")
    rows = []
    progress = Progress("gemv tune", len(BENCH))
    for i, (m, k, l) in enumerate(BENCH):
        progress.step(i + 1, f"m={m} k={k} l={l}")
        read_bytes = ref.cost(m=m, k=k, l=l)[0]
        copies = max(2, -(-256 * 1024 * 1024 // read_bytes))
        inputs = [ref.generate_input(m=m, k=k, l=l, seed=1111 + 13 * i) for i in range(copies)]
        if args.diagnose:
            diagnose(m, k, l, sms, inputs, args.samples)
        cfgs = [choose_sm90(m, k, l, sms)] + ([] if args.quick else VARIANTS)
        seen = set()
        for cfg in cfgs:
            if cfg in seen:
                continue
            seen.add(cfg)
            try:
                fn = compile_cfg(cfg, m, k, l, sms)
            except ValueError as e:
                print(f"{(m, k, l)} {cfg}: skipped ({e})")
                continue
            status = verify(fn, m, k, l)
            med, best = time_us(lambda d, fn=fn: launch(fn, d), inputs, args.samples)
            b2b, _ = time_us(lambda d, fn=fn: launch(fn, d), inputs, max(5, args.samples // 4), per_sample=8)
            rows.append(((m, k, l), cfg, status, med, best, read_bytes / med / 1e6))
            print(
                f"{(m, k, l)} w{cfg.warps} kw{cfg.k_warps} r{cfg.rows} u{cfg.k_unroll} "
                f"p{cfg.ctas_per_sm} pf{cfg.prefetch}: {status:>3} "
                f"single median {med:6.2f} best {best:6.2f} us ({read_bytes / med / 1e6:4.2f} TB/s, "
                f"x{med / FLOOR_US[(m, k, l)]:.3f} of floor) | 8 back-to-back {b2b:6.2f} us/call "
                f"(x{b2b / FLOOR_US[(m, k, l)]:.3f})",
                flush=True,
            )
        try:
            from problems.gemv import bf16_predecoded as peer

            for d in inputs:
                peer.prepare(d)
            med, best = time_us(peer.custom_kernel, inputs, args.samples)
            print(f"{(m, k, l)} bf16-predecoded cuBLAS peer: median {med:7.2f} us best {best:7.2f} us")
        except Exception as e:  # the peer is a comparison only
            print(f"{(m, k, l)} peer failed: {e}")
        del inputs
        torch.cuda.empty_cache()
    progress.done()
    bad = [r for r in rows if r[2] != "ok"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
