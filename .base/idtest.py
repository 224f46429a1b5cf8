import sys, os, timeit, torch
sys.path.insert(0, os.getcwd())
from shared.worker import install_task_module, load_impl
install_task_module()
from shared.problem import load_problem
prob = load_problem("group_gemm")
case = dict(prob.benchmarks[1])
data = prob.reference.generate_input(**case, device="cuda")
repo = load_impl("problems/group_gemm/submission.py", "repo")
dist = load_impl("dist/group_gemm/submission.py", "dist")
from shared.cute import runtime
ts = repo._kernel_tensors(data)
def t(f, n=2000):
    return min(timeit.repeat(f, number=n, repeat=5)) / n * 1e6
import types
dist_sub = types.SimpleNamespace(**dist.custom_kernel.__globals__)
for name, m in (("repo", repo), ("dist", dist_sub)):
    g = m._identity.__globals__
    print(name, "_identity %.2f" % t(lambda: m._identity(data)), "_kernel_tensors %.2f" % t(lambda: m._kernel_tensors(data)),
          "identity_key %.2f" % t(lambda: g["identity_key"](ts)), "sizes %.2f" % t(lambda: tuple(map(tuple, data[3]))))
print("types", type(data[3]), type(data[3][0]), type(data[3][0][0]))
