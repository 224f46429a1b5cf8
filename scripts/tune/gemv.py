"""The GEMV kernel's configs (problems/gemv/kernel_sm90.py) on each benchmark shape.

Per shape: the chosen config and every one of VARIANTS (--quick: the chosen one only) compiled for
the shape, checked on both generators, then timed together with the bf16-predecoded peer over
rotating input copies (together larger than L2): one call per sample, and 8 calls back to back per
sample. A row gives the median and best time, the effective read bandwidth and the ratio to the
time of reading the input bytes once. --diagnose first times kernels with parts of the work removed.
"""

from __future__ import annotations

from functools import partial

import torch

from harness.problem import load_problem
from harness.progress import Progress
from problems.gemv.config import GemvConfig, choose_sm90
from scripts.tune.common import check_on_both_generators, describe_device, peer_calls, time_us, warm_gpu

# Reading each benchmark shape's input bytes once (docs/spec/H100-MEASURED.md), us.
FLOOR_US = {(7168, 16384, 1): 25.4, (4096, 7168, 8): 46.5, (7168, 2048, 4): 13.2}
ROTATING_BYTES = 256 * 1024 * 1024  # input copies at least this large together: none stays in L2
BACK_TO_BACK = 8  # calls per sample in the second timing

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


def add_arguments(parser) -> None:
    parser.add_argument("--diagnose", action="store_true", help="first time kernels with parts of the work removed")


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
    """The kernel (or a diagnostic variant of it) compiled for one shape; raises ValueError where the
    config does not take the shape."""
    from problems.gemv.kernel_sm90 import GemvSm90, compile_gemv

    return compile_gemv(kernel_cls or GemvSm90, cfg, m, k, l, sms)


def launch(fn, data):
    """One call of a compiled kernel on the leaderboard tuple; returns c."""
    import cutlass

    from shared.cute.launch_binding import call_on_current_queue
    from shared.cute.pointers import gmem_ptr

    a, b, sfa, sfb, _, _, c = data
    u8 = cutlass.Uint8
    call_on_current_queue(fn, [gmem_ptr(a, u8), gmem_ptr(b, u8), gmem_ptr(sfa, u8), gmem_ptr(sfb, u8),
                               gmem_ptr(c, cutlass.Float16, align=2)], c.device)
    return c


def verify(fn, m, k, l) -> str:
    """"ok", or the first generator whose check failed and why."""
    case = {"m": m, "k": k, "l": l, "seed": 1111}
    for check in check_on_both_generators(load_problem("gemv"), case, partial(launch, fn)):
        if not check.ok:
            return f"{check.data}: {check.message[:300]}"
    return "ok"


def configs_for(m, k, l, sms, quick: bool) -> list[GemvConfig]:
    """The chosen config first, then the variants, each once."""
    return list(dict.fromkeys([choose_sm90(m, k, l, sms)] + ([] if quick else VARIANTS)))


def rotating_inputs(ref, m, k, l) -> list[tuple]:
    read_bytes = ref.cost(m=m, k=k, l=l)[0]
    copies = max(2, -(-ROTATING_BYTES // read_bytes))
    return [ref.generate_input(m=m, k=k, l=l, seed=1111 + 13 * i) for i in range(copies)]


def batch_major_bytes(t: torch.Tensor) -> torch.Tensor:
    """An [rows, cols, L] tensor's bytes, batch by batch, as one flat uint8 tensor."""
    return t.view(torch.uint8).permute(2, 0, 1).reshape(-1)


def diagnose(m, k, l, sms, inputs, samples) -> None:
    cfg = choose_sm90(m, k, l, sms)
    for name, cls in diagnostic_kernels().items():
        calls = [partial(launch, compile_cfg(cfg, m, k, l, sms, cls), d) for d in inputs]
        single = time_us([calls], samples)[0]
        b2b = time_us([calls], max(5, samples // 4), per_sample=BACK_TO_BACK)[0]
        print(
            f"{(m, k, l)} {name:>22}: single median {single.median_us:7.2f} best {single.best_us:7.2f} us | "
            f"{BACK_TO_BACK} back-to-back: median {b2b.median_us:7.2f} best {b2b.best_us:7.2f} us per call",
            flush=True,
        )
    a_and_sfa = [torch.cat([batch_major_bytes(d[0]), batch_major_bytes(d[2])]).view(torch.float32) for d in inputs]
    floor = time_us([[x.sum for x in a_and_sfa]], samples)[0]
    print(f"{(m, k, l)} {'torch sum of A+SFA bytes':>22}: "
          f"single median {floor.median_us:7.2f} best {floor.best_us:7.2f} us")


def describe(cfg: GemvConfig) -> str:
    return f"w{cfg.warps} kw{cfg.k_warps} r{cfg.rows} u{cfg.k_unroll} p{cfg.ctas_per_sm} pf{cfg.prefetch}"


def tune_shape(problem, m, k, l, sms, args) -> int:
    """Check and time the configs on one benchmark shape; returns the number of failed checks."""
    ref = problem.reference
    inputs = rotating_inputs(ref, m, k, l) if args.diagnose or not args.no_time else []
    if args.diagnose:
        diagnose(m, k, l, sms, inputs, args.samples)
    compiled, status, failures = {}, {}, 0
    for cfg in configs_for(m, k, l, sms, args.quick):
        try:
            compiled[cfg] = compile_cfg(cfg, m, k, l, sms)
        except ValueError as e:
            print(f"{(m, k, l)} {describe(cfg)}: skipped ({e})")
            continue
        status[cfg] = "-" if args.no_check else verify(compiled[cfg], m, k, l)
        failures += status[cfg] not in ("ok", "-")
        if args.no_time:
            print(f"{(m, k, l)} {describe(cfg)}: {status[cfg]}", flush=True)
    if args.no_time:
        return failures
    subjects = [peer_calls(problem, inputs)] + [[partial(launch, fn, d) for d in inputs] for fn in compiled.values()]
    single = time_us(subjects, args.samples)
    b2b = time_us(subjects, max(5, args.samples // 4), per_sample=BACK_TO_BACK)
    read_bytes, floor = ref.cost(m=m, k=k, l=l)[0], FLOOR_US[(m, k, l)]
    for cfg, one, many in zip(compiled, single[1:], b2b[1:]):
        print(
            f"{(m, k, l)} {describe(cfg)}: {status[cfg]:>3} "
            f"single median {one.median_us:6.2f} best {one.best_us:6.2f} us "
            f"({read_bytes / one.median_us / 1e6:4.2f} TB/s, x{one.median_us / floor:.3f} of floor) | "
            f"{BACK_TO_BACK} back-to-back {many.median_us:6.2f} us/call (x{many.median_us / floor:.3f})",
            flush=True,
        )
    peer = single[0]
    print(f"{(m, k, l)} bf16-predecoded peer: median {peer.median_us:7.2f} us best {peer.best_us:7.2f} us", flush=True)
    return failures


def run(args) -> int:
    """Every benchmark shape; exit status 1 if any check failed."""
    problem = load_problem("gemv")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(describe_device())
    if not args.no_time:
        warm_gpu()
    failures = 0
    progress = Progress("gemv tune", len(problem.benchmarks))
    for i, case in enumerate(problem.benchmarks):
        m, k, l = case["m"], case["k"], case["l"]
        progress.step(i + 1, f"m={m} k={k} l={l}")
        failures += tune_shape(problem, m, k, l, sms, args)
        torch.cuda.empty_cache()
    progress.done()
    return 1 if failures else 0
