"""lab/sass_stalls.py on a made-up source page (CPU): the roles found from the code's shape, the samples no listed
reason accounts for, the instructions per loop iteration, and the kernel-wide counters read from beside the file."""

from __future__ import annotations

import csv
import gzip

import pytest

from lab import sass_stalls as S

HEADER = ["Address", "Source", S.SAMPLES, S.EXECUTED, "stall_wait", "stall_selected", "stall_long_sb"]


def page(path, rows, gz=False):
    """An `ncu --page source --csv` file: the kernel's name line, the header, one row per instruction."""
    with (gzip.open(path, "wt", newline="") if gz else path.open("w", newline="")) as f:
        w = csv.writer(f)
        w.writerow(["Kernel Name", "k"])
        w.writerow(HEADER)
        for i, (src, samples, executed, wait, selected, long_sb) in enumerate(rows):
            w.writerow([hex(0x1000 + 16 * i), src, samples, executed, wait, selected, long_sb])


ROWS = [
    # prologue
    ("MOV R1, c[0x0][0x28]", 2, 1, 0, 2, 0),
    # decoders' loop (0x1010 .. 0x1040): a conversion, a store, the way back
    ("LDS.128 R4, [R2]", 1, 10, 1, 0, 0),
    ("F2FP.F16.E4M3.UNPACK_B R5, R4", 3, 10, 1, 2, 0),
    ("STS.128 [R3], R4", 1, 10, 0, 1, 0),
    ("@P0 BRA 0x1010", 4, 10, 0, 0, 4),
    # consumers' loop (0x1050 .. 0x1090)
    ("LOP3.LUT R8, R9, 0x80808080, RZ, 0xc0, !PT", 5, 20, 2, 3, 0),
    ("HMUL2 R8, R8, R10.H0_H0", 1, 20, 0, 1, 0),
    ("WARPGROUP.ARRIVE", 0, 20, 0, 0, 0),
    ("HGMMA.64x64x16.F32 R24, R8, gdesc[UR4], R24", 6, 20, 1, 1, 0),  # 4 samples with no listed reason
    ("@P1 BRA 0x1050", 1, 20, 0, 1, 0),
    # epilogue
    ("STG.E [R2], R24", 2, 1, 0, 0, 2),
    ("EXIT", 0, 1, 0, 0, 0),
]


@pytest.mark.parametrize("gz", [False, True])
def test_roles_reasons_and_counts(tmp_path, gz):
    src = tmp_path / ("k-sass.csv.gz" if gz else "k-sass.csv")
    page(src, ROWS, gz)
    result = S.analyse(src)
    roles = result["roles"]
    assert (roles["consumers"]["first"], roles["consumers"]["last"]) == ("0x1050", "0x1090")
    assert (roles["decoders"]["first"], roles["decoders"]["last"]) == ("0x1010", "0x1040")
    assert result["samples"] == 26
    assert [roles[r]["samples"] for r in ("consumers", "decoders", "rest")] == [13, 9, 4]
    cons = roles["consumers"]
    assert cons["reasons_pct"]["unlisted at HGMMA"] == pytest.approx(100 * 4 / 13, abs=0.05)
    assert "unlisted elsewhere" not in cons["reasons_pct"]
    assert cons["at_pct"]["decode"] == pytest.approx(100 * 6 / 13, abs=0.05)
    # 20 iterations (the loop head's count): per iteration 2 decode, 2 wgmma (arrive + HGMMA), 1 wait (the branch)
    assert cons["iterations"] == 20 and cons["per_iteration"] == {"decode": 2.0, "wgmma": 2.0, "waits": 1.0}
    assert roles["decoders"]["per_iteration"] == {"shared memory": 2.0, "decode": 1.0, "waits": 1.0}
    assert "kernel_wide_pct" not in result


def test_kernel_wide_counters_beside_the_page(tmp_path):
    src = tmp_path / "k-sass.csv"
    page(src, ROWS)
    with (tmp_path / "k-raw.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ID", "smsp__pcsamp_warps_issue_stalled_warpgroup_arrive",
                    "smsp__pcsamp_warps_issue_stalled_warpgroup_arrive_not_issued",
                    "smsp__pcsamp_warps_issue_stalled_selected"])
        w.writerow(["", "", "", ""])  # the units line
        w.writerow(["0", "1", "1", "3"])
    assert S.analyse(src)["kernel_wide_pct"] == {"selected": 75.0, "warpgroup_arrive": 25.0}
