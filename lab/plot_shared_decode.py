"""Draw the shared-decode measurements (results/shared-decode/*-shared-decode.json) as one picture: per issue-34
shape, the graph-replay time of each timing-only bound (half of the S decode left out, all of it, half of the R
decode, all of it) over the kernel as it was, and where a pair of CTAs shares the S decode (the kept protocol's
runs), the shared kernel over its plain twin.

    python lab/plot_shared_decode.py results/shared-decode/2026-11-27-h100-shared-decode.json [OUT.png]
"""

import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BOUNDS = ["S decode of half the rows", "no S decode", "R decode of one row of two", "no R decode"]
COLORS = ["tab:blue", "tab:cyan", "tab:orange", "tab:red"]
# the kept protocol's A/B runs: (plain config, shared config) per shape
KEPT_LOG = "warp-release"
PAIRS = [("wide", "wide_shared/a_batch:1"), ("wide_104", "wide_104_shared"), ("m64_wide", "m64_wide_shared")]


def shared_ratios(doc: dict) -> dict:
    out = {}
    for row in doc["bulk_copy"]:
        if KEPT_LOG not in row["log"]:
            continue
        meds = row["us_per_call_median"]
        for plain, shared in PAIRS:
            if plain in meds and shared in meds:
                out[row["shape"]] = statistics.median(meds[shared]) / statistics.median(meds[plain])
    return out


def main() -> None:
    src = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else src.replace(".json", ".png")
    doc = json.load(open(src))
    rows = doc["bounds"]
    shared = shared_ratios(doc)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / (len(BOUNDS) + 1)
    labelled = False  # the shared kernel's legend entry, once
    for i, row in enumerate(rows):
        meds = {k: statistics.median(v) for k, v in row["us_per_call_median"].items()}
        for j, (name, color) in enumerate(zip(BOUNDS, COLORS)):
            ax.bar(i + j * width, meds[name] / meds["as is"], width, color=color, label=name if i == 0 else None)
        if row["shape"] in shared:
            ax.bar(i + len(BOUNDS) * width, shared[row["shape"]], width, color="tab:green", hatch="//",
                   label=None if labelled else "S decode shared by a CTA pair, over its plain twin")
            labelled = True
    ax.axhline(1.0, color="grey", lw=0.8)
    names = [r["shape"].replace("-", "\n", 1) for r in rows]  # problem over shape: the shapes' names are long
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], names, fontsize=8)
    ax.set_ylabel("graph replay / the kernel as it was")
    ax.set_ylim(0.6, 1.25)
    ax.set_title(f"{doc['device']}, {doc['date']}: timing-only bounds (wrong results), the shared decode",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper right", ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
