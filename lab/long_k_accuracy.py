"""How far from the exact result are our sm90 kernel, cuBLAS on fp16 operands decoded beforehand (the
cublas-predecoded peer) and the fp32 reference, as K grows? (why the dual GEMM fails the 1e-3 check against the
fp32 reference on stress data at K = 14336 while it passes at the benchmarks' K <= 7168)

    python lab/long_k_accuracy.py [--json OUT.json] [CASE ...]
    CASE: PROBLEM:MxNxK:GENERATOR:SEED, e.g. dual_gemm:512x3072x14336:stress:49 (GENERATOR leaderboard or stress)

Per case (gemm or dual_gemm, L = 1; default: the cases below): the products of the exact decode taken in fp64
(shared/refmath.block_scaled_products with fp64), the output made from them in fp64 (silu(h1) * h2 for the dual
GEMM), and for each of ours (the chooser's config, output NaN-poisoned first), the peer, the fp32 reference and the
fp64 output rounded to fp16: its worst error as a fraction of the problem's tolerance (atol + rtol * |exact|), and
how many outputs exceed the tolerance and half of it. Also the outputs where ours misses the fp32 reference's
tolerance, with h1 and h2.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT_CASES = ["dual_gemm:512x3072x7168:stress:49", "dual_gemm:512x3072x10752:stress:49",
                 "dual_gemm:512x3072x14336:stress:49", "dual_gemm:512x3072x14336:stress:91",
                 "dual_gemm:512x3072x14336:leaderboard:7", "dual_gemm:256x4096x14336:stress:49",
                 "gemm:128x7168x16384:stress:49"]


def run_case(spec: str) -> dict:
    import torch

    from harness.problem import load_problem
    from tests.sm90_common import fp64_products

    problem, shape, gen, seed = spec.split(":")
    m, n, k = (int(x) for x in shape.split("x"))
    prob = load_problem(problem)
    ref = prob.reference
    kernel = __import__(f"problems.{problem}.kernel_sm90", fromlist=["prepare"])
    config = __import__(f"problems.{problem}.config", fromlist=["choose_sm90"]).choose_sm90(m, n, k)
    peer = __import__(f"problems.{problem}.cublas_predecoded", fromlist=["prepare"])
    make = ref.generate_stress_input if gen == "stress" else ref.generate_input
    data = make(m=m, n=n, k=k, l=1, seed=int(seed), device="cuda")
    out = ref.output_of(data)

    def output_of(call):
        out.fill_(float("nan"))
        call()
        torch.cuda.synchronize()
        return out[:, :, 0].double().clone()

    ours = output_of(kernel.prepare(data, config))
    peer.prepare(data)
    cublas = output_of(lambda: peer.custom_kernel(data))
    fp32 = ref.ref_kernel(data)[:, :, 0].double()
    want, h1, h2 = fp64_products(problem, data)
    tol = prob.atol + prob.rtol * want.abs()
    row = {"case": spec, "config": str(config), "max_abs_h": h1.abs().max().item()}
    print(f"== {spec} (|h| up to {row['max_abs_h']:.1f})", flush=True)
    for name, got in (("ours", ours), ("cublas-predecoded", cublas), ("fp32 reference", fp32),
                      ("exact, rounded to fp16", want.half().double())):
        err = (got - want).abs() / tol
        row[name] = {"worst_of_tolerance": err.max().item(), "over": int((err > 1).sum()),
                     "over_half": int((err > 0.5).sum())}
        print(f"  {name:23s} worst {row[name]['worst_of_tolerance']:.3f} of the tolerance, {row[name]['over']} "
              f"over it, {row[name]['over_half']} over half", flush=True)
    miss = ((ours - fp32).abs() > prob.atol + prob.rtol * fp32.abs()).nonzero().tolist()
    row["ours_vs_fp32_reference_over"] = len(miss)
    row["misses"] = [{"at": [i, j], "h1": h1[i, j].item(), "h2": h2[i, j].item(), "exact": want[i, j].item(),
                      "ours": ours[i, j].item(), "fp32_reference": fp32[i, j].item()} for i, j in miss[:8]]
    print(f"  ours against the fp32 reference: {len(miss)} over the tolerance", flush=True)
    for x in row["misses"]:
        print(f"    {x['at']}: h1 {x['h1']:.6f} h2 {x['h2']:.6f} exact {x['exact']:.6f} ours {x['ours']:.6f} "
              f"fp32 reference {x['fp32_reference']:.6f}")
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", default=DEFAULT_CASES)
    p.add_argument("--json")
    args = p.parse_args()
    rows = [run_case(c) for c in args.cases]
    if args.json:
        from harness.eval import environment

        doc = {"cases": rows, "environment": environment("cuda"),
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
