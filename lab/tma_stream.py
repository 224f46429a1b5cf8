"""How fast does a TMA ring stream a packed operand from device memory? (issue 34: the gemm kernels' skeleton)

    python lab/tma_stream.py [--n 7168] [--k 2048,7168] [--rows 128] [--dup 2] [--inputs 25] [--json OUT]
    python lab/tma_stream.py --show OUT.json --plot PNG [--kernel DECODE_OVERLAP.json ...]

The sm90 GEMM kernels load their R operand (packed FP4 rows of K/2 bytes) as boxes of `rows` rows x 128 bytes
(one 256-K tile), one box per ring stage. Without decodes and wgmmas the gemm kernels still take 7.5-13 us on
128x7168x2048 and 128x4096x7168, nearly all of it that operand's stream (results/README.md, twelfth session).
This probe runs only such a stream: each CTA (one TMA warp, which waits for every stage and reloads it) reads one
rows x K/2 tile, `dup` CTAs per tile as the gemm's M halves do, through a ring of `stages` stages of
`rows` x `width` bytes, 128B-swizzled as in the kernels where width is 128, plain otherwise. Variants: boxes of
128 bytes per row (the kernels' stage) and of 256 bytes per row (two K tiles per box, so that each row's bytes
go out as one longer run), at the same bytes in flight or more. CUDA-graph replay over rotating
inputs (more than L2 holds), variants interleaved, median of 12; GB/s of each tile counted once. Needs an sm_90 GPU.
--plot draws us against K per variant, beside the kernel's skeleton and the kernel as it is from
lab/decode_overlap.py's files of the same N (--kernel, one file per K).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def build(rows: int, width: int, stages: int, dup: int, split: int = 1):
    """The compiled stream kernel for boxes of rows x width bytes, a ring of `stages`, `dup` CTAs per tile, each
    tile's row split over `split` of them in K (as split-K's CTAs read)."""
    import cutlass
    import cutlass.cute as cute
    import cutlass.pipeline as pipeline
    from cutlass import Int32, Uint8
    from cutlass.cute.nvgpu import cpasync

    from shared.cute import launch_queue

    class Stream:
        def _layout(self):
            # the ring's layout, built again inside the kernel's region (a value of the host region is not
            # visible there)
            if width == 128:
                atom = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0,
                                                 cute.make_layout((8, 128), stride=(128, 1)))
                self.lay = cute.tile_to_shape(atom, (rows, width, stages), order=(0, 1, 2))
            else:
                self.lay = cute.make_layout((rows, width, stages), stride=(width, 1, rows * width))

        @cute.jit
        def __call__(self, p: cute.Pointer, n: Int32, row_bytes: Int32, queue: launch_queue.Queue):
            g = cute.make_tensor(p, cute.make_layout((n, row_bytes), stride=(row_bytes, 1)))
            self._layout()
            tma, gt = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g,
                                                  cute.slice_(self.lay, (None, None, 0)), (rows, width))
            launch_queue.launch(self.kernel(tma, gt, row_bytes // width // split), queue,
                                grid=[n // rows * dup * split, 1, 1], block=[32, 1, 1],
                                smem=rows * width * stages + 1024 + 256)

        @cute.kernel
        def kernel(self, tma: cute.CopyAtom, gt: cute.Tensor, boxes: Int32):
            self._layout()
            smem = cutlass.memory.SmemAllocator()
            mbar = smem.allocate_array(cutlass.Int64, 2 * stages)
            buf = smem.allocate_array(Uint8, cute.cosize(self.lay), byte_alignment=1024)
            if cutlass.const_expr(width == 128):
                s = cute.make_tensor(cute.recast_ptr(buf, self.lay.inner, dtype=Uint8), self.lay.outer)
            else:
                s = cute.make_tensor(buf, self.lay)
            pipe = pipeline.PipelineTmaAsync.create(
                barrier_storage=mbar, num_stages=stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
                tx_count=rows * width, cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)))
            bid, _, _ = cute.arch.block_idx()
            g = cute.local_tile(gt, (rows, width), (bid // (dup * split), None))
            first = (bid % split) * boxes  # this CTA's share of the row
            t_s, t_g = cpasync.tma_partition(tma, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                             cute.group_modes(g, 0, 2))
            prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            cons = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            # the warp is producer and consumer, `stages` boxes ahead: box i - stages is waited for and its stage
            # released before box i is loaded into it
            for i in cutlass.range(boxes + stages, unroll=1):
                if i >= stages:
                    pipe.consumer_wait(cons)
                    pipe.consumer_release(cons)
                    cons.advance()
                if i < boxes:
                    pipe.producer_acquire(prod)
                    cute.copy(tma, t_g[(None, first + i)], t_s[(None, prod.index)],
                              tma_bar_ptr=pipe.producer_get_barrier(prod))
                    prod.advance()

    from cutlass.cute.runtime import make_ptr

    from shared.cute import launch_queue as lq
    fake = make_ptr(cutlass.Uint8, 16, cute.AddressSpace.gmem, assumed_align=16)
    return cute.compile(Stream(), fake, Int32(rows), Int32(1024), lq.placeholder())


def plot(doc: dict, kernel_files: list[str], out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from decode_overlap import finish_plot

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, name in enumerate(dict.fromkeys(r["variant"] for r in doc["rows_out"])):
        pts = sorted((r["k"], r["us"]) for r in doc["rows_out"] if r["variant"] == name)
        ax.plot(*zip(*pts), "o-" if i == 0 else ".--", color=f"C{i}", label=f"TMA stream alone, {name} per stage")
    kern = []
    for f in kernel_files:
        d = json.loads(Path(f).read_text())
        kern += [(v["k"], v["skeleton"], v["as is"]) for v in d["us"].values()]
    if kern:
        kern.sort()
        ax.plot([k for k, _, _ in kern], [s for _, s, _ in kern], "s-", color="grey",
                label="gemm kernel's skeleton (loads, barriers, epilogue)")
        ax.plot([k for k, _, _ in kern], [a for _, _, a in kern], "s-", color="black", label="gemm kernel as it is")
    ctas = doc['n'] // doc['rows'] * doc['dup'] * doc.get('split', 1)
    ax.set_xlabel(f"K (N = {doc['n']}, {ctas} CTAs)")
    finish_plot(fig, ax, f"Streaming the packed R operand, {doc['environment']['device']}, "
                f"{doc['environment']['commit']}", out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=7168)
    p.add_argument("--k", default="2048,7168", type=lambda s: [int(v) for v in s.split(",")])
    p.add_argument("--rows", type=int, default=128)
    p.add_argument("--dup", type=int, default=2)
    p.add_argument("--split", type=int, default=1, help="CTAs per tile sharing its rows in K (split-K)")
    p.add_argument("--inputs", type=int, default=25)
    p.add_argument("--variants", default="128x3,128x6,256x3,256x6",
                   help="WIDTHxSTAGES: bytes per row per box (128 or 256: a TMA box side holds at most 256) "
                        "and ring depth")
    p.add_argument("--json")
    p.add_argument("--show", help="a JSON file written earlier: print it, and draw it with --plot")
    p.add_argument("--plot")
    p.add_argument("--kernel", nargs="*", default=[], help="lab/decode_overlap.py JSON files (--plot)")
    args = p.parse_args()
    if args.show:
        doc = json.loads(Path(args.show).read_text())
        for r in doc["rows_out"]:
            print(f"N {doc['n']} K {r['k']}: {r['variant']:>12}  {r['us']:7.2f} us  {r['gb_s']:7.0f} GB/s")
        if args.plot:
            plot(doc, args.kernel, args.plot)
        return

    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass import Int32
    from cutlass.cute.runtime import make_ptr
    from graph_config_ab import capture, replay_interleaved

    from harness.eval import environment
    from shared.cute import launch_queue as lq

    variants = [tuple(int(x) for x in v.split("x")) for v in args.variants.split(",")]
    if any(w not in (128, 256) for w, _ in variants):
        sys.exit("tma_stream: box widths are 128 or 256 bytes")
    rows_out = []
    for k in args.k:
        row_bytes = k // 2
        bufs = [torch.randint(0, 256, (args.n, row_bytes), dtype=torch.uint8, device="cuda")
                for _ in range(args.inputs)]
        graphs, names, keep = [], [], []
        for width, stages in variants:
            fn = build(args.rows, width, stages, args.dup, args.split)
            keep.append(fn)  # a graph replays the compiled module: it must outlive the graph

            def call(b, fn=fn, row_bytes=row_bytes):
                ptr = make_ptr(cutlass.Uint8, b.data_ptr(), cute.AddressSpace.gmem, assumed_align=16)
                fn(ptr, Int32(args.n), Int32(row_bytes), lq.argument(lq.current(0)))
            graphs.append(capture([lambda b=b, call=call: call(b) for b in bufs]))
            names.append(f"{width} B x {stages}")
        times = replay_interleaved(graphs, 12, args.inputs)
        for name, t in zip(names, times):
            us = statistics.median(t)
            gbs = args.n * row_bytes / us / 1e3
            rows_out.append({"k": k, "variant": name, "us": us, "gb_s": gbs})
            ctas = args.n // args.rows * args.dup * args.split
            print(f"N {args.n} K {k} ({args.n * row_bytes / 1e6:.1f} MB, {ctas} CTAs): "
                  f"{name:>12}  {us:7.2f} us  {gbs:7.0f} GB/s", flush=True)
    if args.json:
        doc = {"n": args.n, "rows": args.rows, "dup": args.dup, "split": args.split, "inputs": args.inputs,
               "rows_out": rows_out,
               "environment": environment("cuda"), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        Path(args.json).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
