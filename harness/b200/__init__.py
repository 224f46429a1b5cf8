"""The B200 session (`nox -s b200`, `python -m scripts.b200`, `python -m harness.b200`): the sm100 kernels
checked and timed on a B200, a verdict per kernel, and the gates table that packages read.

Modules:
    session      the command: the sm100 test tier, the evaluator steps, the verdicts, the results JSON
    variants     the variants stage: every registered sm100 variant forced through the gate per case
    gates_table  the gates table (results/b200/gates.json): what it records and who may write it
    model        the calibrated B200 time model each measured case is compared with
    model_table  what `--model` prints: the model per case and per variant, beside the entries
"""

PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
