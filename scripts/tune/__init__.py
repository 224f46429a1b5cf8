"""The sm90 tuner's pieces, one module per kernel family; the command is scripts/tune_sm90.py.

common:       the cases, the check against the reference, the timing loop and the bf16 peer
gemv:         the GEMV kernel's configs and its diagnostic variants
gemm_family:  the GEMM kernel's candidate configs, for gemm and dual_gemm
"""
