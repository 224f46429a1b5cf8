"""The sm100 configs' arithmetic is plain Python: a chooser, the B200 model (harness/b200/model.py) or a
tool can size and schedule the sm100 kernels on a machine without the CuTe DSL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DSL_FREE = ["shared.devices", "shared.cute.sm100_config", "problems.group_gemm.schedule_sm100", "shared.sm100_variants",
            "shared.sm100_gates", "problems.group_gemm.order", "problems.group_gemm.config", "problems.gemm.config",
            "problems.dual_gemm.config", "problems.gemv.config", "harness.b200.model"]


def test_the_sm100_sizes_and_the_grouped_schedule_import_without_the_dsl():
    code = (f"import sys; import {', '.join(DSL_FREE)}; "
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('cutlass', 'cuda'));"
            "print(loaded); assert not loaded")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_choosers_default_to_the_b200_sm_count():
    from problems.dual_gemm.config import choose_sm100 as choose_dual
    from problems.gemm.config import choose_sm100 as choose_gemm
    from problems.gemv.config import choose_sm100 as choose_gemv
    from problems.group_gemm.config import choose_sm100 as choose_group
    from problems.group_gemm.schedule_sm100 import schedule
    from shared.devices import B200_SM_COUNT

    assert choose_gemm(128, 7168, 16384, 1).sm_count == B200_SM_COUNT
    assert choose_dual(256, 4096, 7168, 1).sm_count == B200_SM_COUNT
    assert choose_group([(80, 4096, 7168, 1)]).sm_count == B200_SM_COUNT
    assert choose_gemv(7168, 16384, 1) == choose_gemv(7168, 16384, 1, B200_SM_COUNT)
    # 200 tiles of 128 x 128 in one group: the default grid is one CTA per B200 SM
    assert len(schedule([(128 * 25, 128 * 8, 256, 1)], 128)) == B200_SM_COUNT
