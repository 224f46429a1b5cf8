"""Speed of light per case: max(bytes / bandwidth, FLOPs / tensor rate).

B200: the task files' figures (LEADERBOARD.md 11.6: ~7.68 TB/s and ~6.9 PFLOP/s FP4; the manifests
carry the published per-case numbers). Hopper has no FP4 tensor cores, so its exact path is bf16:
the rate is a bf16 matmul's and the bandwidth a device-to-device copy's, both measured in the same
run (`measure_ceilings`), with datasheet figures when nothing can be measured.

`read_once_us` measures the time to stream exactly a case's input bytes once (a reduction over
rotating buffers, replayed from a CUDA graph): the floor a memory-bound kernel such as GEMV is held to.
`read_once_loop_us` times the same reduction in the leaderboard's loop (L2 flush, one call between
two events): the floor under the timing a submission actually gets, start-up and tail included.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass

import torch

# Datasheet fallbacks (bytes/s, dense FLOP/s on the exact path).
DATASHEET = {
    "H100": (3.35e12, 989e12),
    "H200": (4.8e12, 989e12),
    "B200": (7.68e12, 6.9e15),  # the leaderboard's SOL model (FP4 tensor cores)
}


@dataclass(frozen=True)
class Ceilings:
    device: str
    bandwidth_Bps: float
    flops: float
    source: str  # "measured" or "datasheet"

    def as_dict(self) -> dict:
        return asdict(self)


def sol_us(bytes_: float, flops: float, ceilings: Ceilings) -> float:
    return max(bytes_ / ceilings.bandwidth_Bps, flops / ceilings.flops) * 1e6


def _datasheet(name: str) -> Ceilings | None:
    for key, (bw, fl) in DATASHEET.items():
        if key in name:
            return Ceilings(name, bw, fl, "datasheet")
    return None


def _median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def measure_ceilings() -> Ceilings | None:
    """Copy bandwidth (bytes read + written) and bf16 matmul rate on the current CUDA device."""
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name()
    try:
        src = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        dst.copy_(src)
        bw = 2 * src.numel() / (_median_ms(lambda: dst.copy_(src), 10) * 1e-3)
        src = dst = None  # free 4 GiB before the matmul
        n = 8192
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        a @ b
        fl = 2 * n**3 / (_median_ms(lambda: a @ b, 10) * 1e-3)
        return Ceilings(name, bw, fl, "measured")
    except torch.OutOfMemoryError:
        return _datasheet(name)


def read_kernel():
    """A plain streaming reduction in Triton (wide loads, a grid of a few CTAs per SM): closer to the
    bandwidth a well-built kernel reaches than torch.sum. None where Triton is missing."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def read_all(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid, step = tl.program_id(0), tl.num_programs(0) * BLOCK
        acc = tl.zeros([BLOCK], dtype=tl.int32)
        for start in range(pid * BLOCK, n, step):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0, cache_modifier=".cg")
        tl.store(out_ptr + pid, tl.sum(acc))

    def launch(buf, out):
        read_all[(out.numel(),)](buf, out, buf.numel(), BLOCK=2048, num_warps=8)

    return launch


def read_once_us(nbytes: int, reps: int = 50) -> float | None:
    """Median time to read `nbytes` once from device memory (not L2): a reduction over one of several
    rotating buffers, enough of them that together they are several times the L2 size, replayed from a
    CUDA graph so that launch gaps do not count."""
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 * 1024**2)
    n_buf = max(2, -(-4 * l2 // max(nbytes, 1)))
    elems = max(nbytes // 4, 1)
    bufs = [torch.randint(-9, 9, (elems,), dtype=torch.int32, device="cuda") for _ in range(n_buf)]
    kernel = read_kernel()
    if kernel is None:
        outs = [torch.empty((), dtype=torch.int64, device="cuda") for _ in range(n_buf)]
        kernel = lambda buf, out: torch.sum(buf, dim=0, out=out)  # noqa: E731
    else:
        outs = [torch.empty(4 * props.multi_processor_count, dtype=torch.int32, device="cuda") for _ in range(n_buf)]
    for buf, out in zip(bufs, outs):  # compile and warm up outside the graph
        kernel(buf, out)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for buf, out in zip(bufs, outs):
            kernel(buf, out)
    graph.replay()
    torch.cuda.synchronize()
    ms = _median_ms(graph.replay, reps)
    del graph, bufs, outs
    return ms * 1e3 / n_buf


def read_once_loop_us(nbytes: int, flush_bytes: int, max_repeats: int = 100) -> float | None:
    """Mean time of the same streaming read, one call per sample after an L2 flush of `flush_bytes`,
    with the leaderboard's stopping rule (harness.timing): what a perfect memory-bound kernel would
    score, launch and cold-cache start included. None without CUDA or Triton, and None with a note line
    where the loop's own checks reject the samples: a reference column, not an impl's result, is left
    empty rather than ending the run."""
    kernel = read_kernel()
    if kernel is None or not torch.cuda.is_available():
        return None
    from harness import timing

    props = torch.cuda.get_device_properties(0)
    buf = torch.randint(-9, 9, (max(nbytes // 4, 1),), dtype=torch.int32, device="cuda")
    out = torch.empty(4 * props.multi_processor_count, dtype=torch.int32, device="cuda")
    try:
        return timing.single_call_mean_us(lambda: kernel(buf, out), flush_bytes, max_repeats)
    except RuntimeError as e:
        print(f"note: read once of {nbytes} bytes in the leaderboard's loop not measured: {e}", file=sys.stderr)
        return None
