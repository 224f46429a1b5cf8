"""Tuning choice of the grouped GEMM on sm90: one config for every group (one launch, one kernel).

Tiles of 128 rows of A x 128 rows of B (two consumer warpgroups): the reordered scales come in
blocks of 128 rows, one TMA box per block and K tile, and a B tile decoded into registers serves
twice the MMA work of the 64-row-B configs. Stages, slots and registers as the GEMM's 128-row
configs (problems/gemm/config.py). Tile orders measured: results/README.md.
"""

from dataclasses import replace

from problems.gemm.config import SM90_M128

# Chosen over decoded-A batches of 2 with deeper packed rings (5-13% slower) and 216 consumer registers
# (3-6% slower) on the four benchmark cases (H100, 2026-11-24; results/README.md).
SM90 = replace(SM90_M128, n_cwg=2, consumer_regs=200, a_unroll=2)
