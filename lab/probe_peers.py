"""Device probe: which cuBLAS paths give a correct fp32 result from bf16 operands (for the peers)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

torch.manual_seed(0)
M, N, K = 128, 512, 2048
a = torch.randint(-6, 7, (M, K), device="cuda").to(torch.bfloat16)
b = torch.randint(-6, 7, (N, K), device="cuda").to(torch.bfloat16)
want = a.double() @ b.double().t()
def report(name, fn):
    try:
        got = fn().double().reshape(want.shape)
        print(f"{name:45s} max abs err {float((got - want).abs().max()):.3g}")
    except Exception as e:  # noqa: BLE001
        print(f"{name:45s} ERROR {type(e).__name__}: {str(e).splitlines()[0][:100]}")
report("mm(a, b.t(), out_dtype=fp32)", lambda: torch.mm(a, b.t(), out_dtype=torch.float32))
report("mm(a, b.t().contiguous(), out_dtype=fp32)", lambda: torch.mm(a, b.t().contiguous(), out_dtype=torch.float32))
report("bmm(a3, b3.mT, out_dtype=fp32)", lambda: torch.bmm(a[None], b[None].mT, out_dtype=torch.float32))
report("bmm(a3, b3.mT.contiguous(), out_dtype=fp32)",
       lambda: torch.bmm(a[None], b[None].mT.contiguous(), out_dtype=torch.float32))
report("matmul bf16 (bf16 out)", lambda: a @ b.t())
report("matmul fp16 operands (fp16 out)", lambda: a.half() @ b.half().t())
offs = torch.tensor([64, 128], device="cuda", dtype=torch.int32)
bb = torch.stack([b, b]).mT
report("_grouped_mm bf16", lambda: torch._grouped_mm(a, bb, offs=offs))
report("_grouped_mm fp16", lambda: torch._grouped_mm(a.half(), bb.half(), offs=offs))
report("_grouped_mm bf16 out fp32", lambda: torch._grouped_mm(a, bb, offs=offs, out_dtype=torch.float32))

from harness.sol import read_once_us  # noqa: E402

for nbytes in (66_069_504, 132_152_832, 33_034_752):
    print(f"read once {nbytes / 1e6:.1f} MB: {read_once_us(nbytes):.2f} us")
