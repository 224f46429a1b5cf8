#!/usr/bin/env bash
# The device runs behind results/ and the closing notes. On the GPU machine, from the repo root, with
# CuTe DSL importable:
#   bash scripts/device_bench.sh tests        GPU test tiers (gpu, sm90) + every submission on stress data
#   bash scripts/device_bench.sh sanitize [P ...]  compute-sanitizer memcheck and racecheck on test shapes
#                                             that reach every chosen sm90 config (default: gemv gemm
#                                             dual_gemm group_gemm)
#   bash scripts/device_bench.sh bench P ...  package; benchmark (submission, bf16-predecoded, the packaged file;
#                                             CUDA-graph metric, host figures) and leaderboard mode, per
#                                             problem; the packaged file in test mode
#   BEFORE_DIR=DIR [BEFORE_COMMIT=SHA] bash scripts/device_bench.sh trust P ...
#                                             the evaluator and the submissions of an earlier tree (DIR: its
#                                             harness, shared, problems, scripts) and of this one, side by
#                                             side per problem: benchmark mode (submission, packaged file),
#                                             a table of means and host us before / after (TRUST_IMPLS:
#                                             other impls than the submission and the packaged file); with
#                                             LEADERBOARD_WALL=1 also each side's whole --mode leaderboard
#                                             run, its wall time
#   bash scripts/device_bench.sh host P ...   benchmark submission, bf16-predecoded and the packaged file
#                                             (plus $HOST_BASE_DIR/P.py when set: an earlier packaged file)
#                                             with host us per call (group_gemm: also 16 groups); then the
#                                             sm100 path's host time up to the driver call
#                                             (lab/host_time_sm100.py)
#   bash scripts/device_bench.sh peer [P ...] issue 34's comparison, per problem (default: gemm dual_gemm group_gemm):
#                                             benchmark with --graph of submission, cublas-predecoded and
#                                             bf16-predecoded (plus $PEER_BASE_DIR/P.py when set: an earlier
#                                             packaged file, its loop mean) to $OUT/P-peer.json; with
#                                             $PEER_BASE_TREE (an earlier commit's tree, named by $PEER_BASE_COMMIT)
#                                             that tree's submission too, graph included, to $OUT/P-before.json;
#                                             then scripts/peer_table.py: per case ours/peer, ours/floor, the goal
#   bash scripts/device_bench.sh profile [P ...]  scripts/profile_sm90.py (Nsight Compute, one line per case)
#                                             for the submission and cublas-predecoded, to $OUT/P-profile.json
# Everything goes to $OUT/run.log (results JSON to $OUT/<problem>.json); short summaries are printed.
# A copy of the tree without .git cannot name its commit: pass it as NVFP4_COMMIT=<sha>.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"; OUT="$(cd "$OUT" && pwd)"  # absolute: the peer mode runs from another tree
log="$OUT/run.log"
what="${1:-bench}"; shift || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$log"
case "$what" in
tests)
  python -m pytest -q -ra -m "gpu or sm90" tests > "$OUT/pytest.log" 2>&1; echo "pytest gpu+sm90 tiers rc=$?" | tee -a "$log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -25
  for p in gemv gemm dual_gemm group_gemm; do
    python -m harness.eval $p --mode test --data stress --impl submission >> "$log" 2>&1
    echo "stress test $p rc=$?" | tee -a "$log"
  done
  grep -E "^FAIL" "$log" | cut -c1-400 | head -10 ;;
sanitize)
  san() {  # tool problem case...
    local tool=$1 p=$2; shift 2
    local args=(); for c in "$@"; do args+=(--case "$c"); done
    # --report-api-errors no: the DSL and cuda-python probe the driver for optional entry points
    # (cuGetProcAddress answers "invalid argument" ~34 times); those are not memory errors.
    timeout 280 compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 99 \
      ${SANITIZER_FLAGS:---report-api-errors no} \
      python -m harness.eval "$p" --mode test --impl submission "${args[@]}" >> "$log" 2>&1
    echo "sanitizer $tool $p rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)" | tee -a "$log"
  }
  for tool in ${SANITIZER_TOOLS:-memcheck racecheck}; do
    for p in ${@:-gemv gemm dual_gemm group_gemm}; do
      case $p in
      gemv) san $tool gemv "m: 128; k: 256; l: 1; seed: 5" "m: 512; k: 1536; l: 2; seed: 5" ;;
      gemm) san $tool gemm "m: 256; n: 512; k: 512; l: 1; seed: 5" "m: 128; n: 7168; k: 512; l: 1; seed: 5" \
                "m: 128; n: 7168; k: 8192; l: 1; seed: 5" "m: 256; n: 7168; k: 512; l: 1; seed: 5" \
                "m: 256; n: 2048; k: 1024; l: 1; seed: 5" "m: 128; n: 256; k: 256; l: 1; seed: 5" \
                "m: 128; n: 7168; k: 2048; l: 1; seed: 5" ;;
      dual_gemm) san $tool dual_gemm "m: 256; n: 512; k: 512; l: 1; seed: 5" "m: 512; n: 3072; k: 512; l: 1; seed: 5" \
                "m: 768; n: 3072; k: 512; l: 1; seed: 5" "m: 512; n: 4096; k: 512; l: 1; seed: 5" \
                "m: 256; n: 512; k: 256; l: 1; seed: 5" "m: 4608; n: 384; k: 256; l: 1; seed: 5" ;;
      # the single-tile kernel, the pair kernel (several waves; a 40-row A tile: half-width wgmmas), the split pairs
      group_gemm) san $tool group_gemm "m: [40, 176, 128]; n: [512, 256, 384]; k: [512, 1024, 256]; g: 3; seed: 5" \
                    "m: [40, 200]; n: [8192, 8192]; k: [256, 256]; g: 2; seed: 5" \
                    "m: [64, 128]; n: [256, 256]; k: [4096, 4096]; g: 2; seed: 5" ;;
      esac
    done
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | sort | uniq -c ;;
bench)
  for p in "$@"; do
    python -m harness.package "$p" >> "$log" 2>&1
    python -m harness.eval $p --mode benchmark --graph --impl submission bf16-predecoded "dist/$p/submission.py" \
      --json "$OUT/$p.json" > "$OUT/b.log" 2>&1
    echo "bench $p rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
    grep -E "^(FAIL|error|note)" "$OUT/b.log" | cut -c1-300
    timeout 300 python -m harness.eval $p --mode leaderboard --popcorn --impl submission > "$OUT/b.log" 2>&1
    echo "leaderboard $p rc=$? $(grep -c 'check: pass' "$OUT/b.log") x check: pass" | tee -a "$log"
    cat "$OUT/b.log" >> "$log"
    python -m harness.eval $p --mode test --impl "dist/$p/submission.py" > "$OUT/b.log" 2>&1
    echo "packaged test $p rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
  done
  rm -f "$OUT/b.log"
  for p in "$@"; do sed -n "/^$p --mode benchmark/,/^geomean (score) *dist/p" "$log"; done ;;
trust)
  before="${BEFORE_DIR:?set BEFORE_DIR to an earlier tree (its harness, shared, problems, scripts)}"
  side_dir() { if [ "$1" = before ]; then echo "$before"; else echo .; fi; }
  for p in "$@"; do
    for side in before after; do ( cd "$(side_dir $side)" && python -m harness.package "$p" ) >> "$log" 2>&1; done
    # TRUST_ROUNDS=2: before, after, before, after (run-to-run spread beside the difference)
    for round in $(seq 1 "${TRUST_ROUNDS:-1}"); do
      for side in before after; do
        tag=$side; [ "$round" -gt 1 ] && tag=$side$round
        commit=${NVFP4_COMMIT:-unknown}; [ "$side" = before ] && commit=${BEFORE_COMMIT:-before}
        ( cd "$(side_dir $side)" && NVFP4_COMMIT="$commit" python -m harness.eval "$p" \
            --mode benchmark --impl ${TRUST_IMPLS:-submission "dist/$p/submission.py"} --json "$OUT/$p-$tag.json" ) \
            > "$OUT/b.log" 2>&1
        echo "bench $p $tag rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
        grep -E "^(FAIL|error)" "$OUT/b.log" | cut -c1-300
      done
    done
    [ -n "${LEADERBOARD_WALL:-}" ] || continue
    for side in before after; do
      t0=$(date +%s)
      ( cd "$(side_dir $side)" && timeout "${LEADERBOARD_TIMEOUT:-540}" python -m harness.eval "$p" --mode leaderboard \
          --impl submission ) > "$OUT/b.log" 2>&1
      echo "leaderboard $p $side rc=$? wall $(( $(date +%s) - t0 )) s" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
      grep -E "^(FAIL|error)" "$OUT/b.log" | cut -c1-300
    done
  done
  rm -f "$OUT/b.log"
  python - "$OUT" <<'PY'
import glob, json, os, sys
print(f"{'problem':<11}{'case':<40}{'impl':<10}{'mean us b/a':>17}{'host us b/a':>14}{'idle us b/a':>14}")
for after in sorted(glob.glob(os.path.join(sys.argv[1], "*-after*.json"))):
    pair = [json.load(open(after.replace("-after", f"-{s}"))) for s in ("before", "after")]
    for name in pair[1]["impls"]:
        rows = zip(*(doc["impls"].get(name, {"cases": []})["cases"] for doc in pair))
        for b, a in rows:
            f = lambda c, k: f"{c[k]:.1f}" if isinstance(c.get(k), (int, float)) else "-"
            m = lambda c: f"{c['stats']['mean'] / 1e3:.2f}" if c.get("stats") else "fail"
            spec = "; ".join(f"{k}: {v}" for k, v in a["case"].items() if k != "seed")[:39]
            print(f"{pair[1]['problem']:<11}{spec:<40}{'packaged' if name.endswith('.py') else name:<10}"
                  f"{m(b) + ' / ' + m(a):>17}{f(b, 'host_us') + ' / ' + f(a, 'host_us'):>14}"
                  f"{f(b, 'host_idle_us') + ' / ' + f(a, 'host_idle_us'):>14}")
PY
  ;;
host)
  for p in "$@"; do
    python -m harness.package "$p" >> "$log" 2>&1
    impls=(submission bf16-predecoded "dist/$p/submission.py")
    [ -n "${HOST_BASE_DIR:-}" ] && impls+=("$HOST_BASE_DIR/$p.py")
    python -m harness.eval "$p" --mode benchmark --impl "${impls[@]}" --json "$OUT/$p.json" > "$OUT/b.log" 2>&1
    echo "host bench $p rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
    grep -E "^(FAIL|error)" "$OUT/b.log" | cut -c1-300
    if [ "$p" = group_gemm ]; then  # the host limit holds up to 16 groups: the second case's groups twice
      m="40, 76, 168, 72, 164, 148, 196, 160"; n=$(printf '7168, %.0s' {1..15})7168; k=$(printf '2048, %.0s' {1..15})2048
      python -m harness.eval group_gemm --mode benchmark --impl submission "dist/$p/submission.py" \
        --case "m: [$m, $m]; n: [$n]; k: [$k]; g: 16; seed: 1111" --json "$OUT/group_gemm-g16.json" > "$OUT/b.log" 2>&1
      echo "host bench group_gemm g=16 rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
    fi
  done
  rm -f "$OUT/b.log"
  python lab/host_time_sm100.py --json "$OUT/sm100_host.json" 2>&1 | tee -a "$log" | tail -5
  python - "$OUT"/*.json <<'PY'
import json, sys
print(f"{'problem':<11}{'case':<44}{'impl':<26}{'mean us':>9}{'host us':>9}{'rot us':>8}  flags")
for path in sys.argv[1:]:
    doc = json.load(open(path))
    if "impls" not in doc:
        continue
    for name, r in doc["impls"].items():
        for c in r["cases"]:
            s = c.get("stats") or {}
            spec = "; ".join(f"{k}: {v}" for k, v in c["case"].items() if k != "seed")[:43]
            fl = ("HOST>GPU " if c.get("host_over_gpu") else "") + ("" if c.get("host_gpu_busy", True) else "gpu-idle")
            f = lambda v: f"{v:.1f}" if isinstance(v, (int, float)) else "-"
            print(f"{doc['problem']:<11}{spec:<44}{name[-25:]:<26}{f(s.get('mean', 0) / 1e3):>9}"
                  f"{f(c.get('host_us')):>9}{f(c.get('host_rotating_us')):>8}  {fl}")
PY
  ;;
peer)
  if [ -n "${PEER_BASE_TREE:-}" ] && [ -z "${PEER_BASE_COMMIT:-}" ]; then
    echo "peer: PEER_BASE_TREE is set but PEER_BASE_COMMIT is not (the commit that tree holds)"; exit 2
  fi
  problems=("$@"); [ ${#problems[@]} -eq 0 ] && problems=(gemm dual_gemm group_gemm)
  peers=(); befores=()
  for p in "${problems[@]}"; do
    read -r -a impls <<< "${PEER_IMPLS:-submission cublas-predecoded bf16-predecoded}"
    [ -n "${PEER_BASE_DIR:-}" ] && impls+=("$PEER_BASE_DIR/$p.py")
    python -m harness.eval "$p" --mode benchmark --graph --impl "${impls[@]}" --json "$OUT/$p-peer.json" \
      > "$OUT/b.log" 2>&1
    echo "peer bench $p rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
    grep -E "^(FAIL|error|note)" "$OUT/b.log" | cut -c1-300
    peers+=("$OUT/$p-peer.json")
    if [ -n "${PEER_BASE_TREE:-}" ]; then  # the earlier tree's own evaluator and kernels, graph replay included
      (cd "$PEER_BASE_TREE" && NVFP4_COMMIT="$PEER_BASE_COMMIT" python -m harness.eval "$p" --mode benchmark --graph \
        --impl submission --json "$OUT/$p-before.json") > "$OUT/b.log" 2>&1
      echo "before bench $p ($PEER_BASE_COMMIT) rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
      befores+=("$OUT/$p-before.json")
    fi
  done
  rm -f "$OUT/b.log"
  python scripts/peer_table.py "${peers[@]}" --before "${befores[@]}" 2>&1 | tee -a "$log" ;;
profile)
  problems=("$@"); [ ${#problems[@]} -eq 0 ] && problems=(gemm dual_gemm group_gemm)
  for p in "${problems[@]}"; do
    python scripts/profile_sm90.py "$p" --impl submission cublas-predecoded --json "$OUT/$p-profile.json" 2>&1 \
      | tee -a "$log"
  done ;;
esac
