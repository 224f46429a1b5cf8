"""Draw the dealt-K A/B (results/dealt-k/*-dealt-k-*.json) as one picture: per shape, graph-replay time with the
K tiles dealt over one CTA per SM over the time with one CTA per tile, against how full the one-per-tile grid's
waves are (1.0: whole waves; one wave of fewer tiles than SMs is drawn at its own fill, marked), with the
choosers' limit (sm90_deal_k.DEAL_K_MAX_FILL).

    python lab/plot_dealt_k.py results/dealt-k/2026-11-27-h100-dealt-k-12bee9b.json [OUT.png]
"""

import json
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, ".")
from shared.cute.sm90_deal_k import DEAL_K_MAX_FILL  # noqa: E402

SMS = 132
ROWS = {"gemm": 64, "dual": 128}  # A rows of m64_wide's and wide's tiles (104 for wide_104); B rows 128


def points(run: dict):
    for row in run["rows"]:
        problem, m, n, _ = re.match(r"(gemm|dual)-(\d+)x(\d+)x(\d+)", row["shape"]).groups()
        meds = row["us_per_call_median"]
        plain, dealt = sorted(meds, key=lambda name: ("dk" in name, name))
        rows = 104 if plain == "wide_104" else ROWS[problem]
        tiles = -(-int(m) // rows) * (int(n) // 128)
        waves = -(-tiles // SMS)
        ratio = statistics.median(meds[dealt]) / statistics.median(meds[plain])
        yield row["shape"], tiles / (waves * SMS), waves == 1, ratio


def main() -> None:
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else src.replace(".json", ".png")
    run = json.load(open(src))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (shape, fill, one_wave, ratio) in enumerate(sorted(points(run), key=lambda p: (p[1], p[3]))):
        ax.scatter(fill, ratio, marker="x" if one_wave else "o", color="tab:red" if ratio > 1 else "tab:green")
        # labels alternate below and above their point in the order of fill: shapes of one fill would overlap
        ax.annotate(shape, (fill, ratio), textcoords="offset points", xytext=(4, 4 if i % 2 else -11), fontsize=7)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axvline(DEAL_K_MAX_FILL, color="tab:blue", ls="--", lw=0.8,
               label=f"chosen past one wave up to {DEAL_K_MAX_FILL}")
    ax.set_xlabel("fill of the one-CTA-per-tile grid's waves (x: one wave, fewer tiles than SMs)")
    ax.set_ylabel("dealt K / one CTA per tile (graph replay)")
    ax.set_title(f"{run['device']}, {run['commit']}", fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
