"""The per-call floor of the leaderboard's timing loop on this GPU: what a call that does (almost)
nothing costs when timed the way the leaderboard times a submission.

    python -m scripts.launch_floor --out results/launch-floor/<device>-<date>.json [--device cuda|cpu]

Measured with harness/timing.py's loop (L2 flush of the leaderboard's size, capped as the evaluator
caps it, then CUDA events around one call, until the stopping rule says stop), with and without the
flush:
  cute_empty  a near-empty CuTe DSL kernel (one CTA of 32 threads, one thread stores one word),
              launched as the submissions launch (shared/cute/launch_binding.PreparedLaunch: one C call);
              skipped, with the reason, where CuTe DSL or cuda-python is not importable;
  torch_add   an empty torch op: a 1-element in-place add.
The JSON (device, capability, versions, commit, date, flush bytes, per measurement the stats in us)
is what scripts/b200.py reads from results/launch-floor/*.json to split its fixed cost per call into
the launch floor and the rest (`python -m scripts.b200 --model`). `--device cpu` runs the same loop
on the CPU's clock (no flush): a check of the tool, not a figure the model uses.
"""

# No `from __future__ import annotations`: CuTe DSL resolves the kernel's annotations (cute.Tensor) in
# the function's scope at compile time, and the DSL is imported inside functions here.
import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SCHEMA = 1
MAX_REPEATS = 100
MAX_TIME_NS = 10e9


def flush_bytes() -> int:
    """The leaderboard's flush of the GEMM problems (62.5 GiB of randn), capped as the evaluator caps it."""
    import yaml

    from harness.timing import flush_bytes_for

    manifest = yaml.safe_load((ROOT / "problems" / "gemm" / "manifest.yaml").read_text())
    return flush_bytes_for(manifest["timing"]["flush_bytes"])


def mean_us(call: Callable[[], object], device: str, flush: int) -> dict:
    """harness.timing's loop over `call` (one warm-up call first): stats in us."""
    from harness.timing import Clock, timed_loop

    call()
    clock = Clock(device, flush)
    stats, _ = timed_loop(clock, call, MAX_REPEATS, MAX_TIME_NS)
    return {k: (v / 1e3 if k != "runs" else v) for k, v in stats.as_dict().items()}


def torch_add(device: str) -> Callable[[], object]:
    import torch

    x = torch.zeros(1, device=device)
    return lambda: x.add_(1)


def compile_empty(pointer=None):
    """The near-empty CuTe DSL kernel, compiled (against `pointer`, else a null one: no GPU needed)."""
    import cutlass
    import cutlass.cute as cute

    from shared.cute import launch_queue
    from shared.cute.pointers import null_ptr

    @cute.kernel
    def store_one(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        if tidx == 0:
            out[0] = cutlass.Int32(1)

    @cute.jit
    def launch(p: cute.Pointer, queue: launch_queue.Queue):
        out = cute.make_tensor(p, cute.make_layout(1))
        launch_queue.launch(store_one(out), queue, grid=(1, 1, 1), block=(32, 1, 1))

    return cute.compile(launch, pointer if pointer is not None else null_ptr(cutlass.Int32),
                        launch_queue.placeholder())


def cute_empty() -> Callable[[], object]:
    """The near-empty kernel bound like a submission's launch; ImportError without the DSL."""
    import cutlass
    import torch

    from shared.cute.launch_binding import PreparedLaunch
    from shared.cute.pointers import gmem_ptr

    word = torch.zeros(4, dtype=torch.int32, device="cuda")
    compiled = compile_empty(gmem_ptr(word, cutlass.Int32))
    return PreparedLaunch(compiled, [gmem_ptr(word, cutlass.Int32)], word.device, hold=word)


def device_record(device: str) -> dict:
    """Device, versions and commit as the evaluator records them (harness.eval.environment)."""
    from harness.eval import environment

    env = environment(device)
    return {"device": env.get("device"), "capability": env.get("capability"),
            "versions": {k: env.get(k) for k in ("python", "torch", "nvidia-cutlass-dsl", "cuda")},
            "commit": env.get("commit"), "dirty": env.get("dirty")}


def measure(device: str) -> tuple[dict, dict, int]:
    """({name: {"flush": stats, "no_flush": stats}}, {name: why skipped}, flush bytes)."""
    flush = flush_bytes() if device == "cuda" else 0
    makers = {"torch_add": lambda: torch_add(device)}
    skipped = {}
    if device == "cuda":
        makers["cute_empty"] = cute_empty
    else:
        skipped["cute_empty"] = "no CUDA device: a CuTe kernel cannot launch on the CPU"
    out = {}
    for name, make in makers.items():
        try:
            call = make()
        except ImportError as e:
            skipped[name] = f"not importable: {e}"
            continue
        out[name] = {"flush": mean_us(call, device, flush), "no_flush": mean_us(call, device, 0)}
    return out, skipped, flush


def document(measurements: dict, skipped: dict, flush: int, record: dict, date: str | None = None) -> dict:
    return {"schema": SCHEMA, **record, "date": date or dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "flush_bytes": flush, "timing": "harness/timing.py timed_loop (the leaderboard's loop)",
            "measurements": measurements, "skipped": skipped}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.launch_floor", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="the JSON to write (results/launch-floor/NAME.json)")
    p.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda where present")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        print("launch_floor: --device cuda but torch sees no CUDA device; nothing measured", file=sys.stderr)
        return 2
    measurements, skipped, flush = measure(device)
    doc = document(measurements, skipped, flush, device_record(device))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    for name, m in measurements.items():
        print(f"{name:11} flushed {m['flush']['mean']:8.2f} us   no flush {m['no_flush']['mean']:8.2f} us")
    for name, why in skipped.items():
        print(f"{name:11} skipped: {why}")
    print(f"{args.out}: {doc['device']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
