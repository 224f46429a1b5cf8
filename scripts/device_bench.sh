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
#   bash scripts/device_bench.sh host P ...   benchmark submission, bf16-predecoded and the packaged file
#                                             (plus $HOST_BASE_DIR/P.py when set: an earlier packaged file)
#                                             with host us per call (group_gemm: also 16 groups); then the
#                                             sm100 path's host time up to the driver call
#                                             (lab/host_time_sm100.py)
# Everything goes to $OUT/run.log (results JSON to $OUT/<problem>.json); short summaries are printed.
# A copy of the tree without .git cannot name its commit: pass it as NVFP4_COMMIT=<sha>.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
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
                "m: 128; n: 7168; k: 8192; l: 1; seed: 5" ;;
      dual_gemm) san $tool dual_gemm "m: 256; n: 512; k: 512; l: 1; seed: 5" "m: 512; n: 3072; k: 512; l: 1; seed: 5" ;;
      group_gemm) san $tool group_gemm "m: [40, 176, 128]; n: [512, 256, 384]; k: [512, 1024, 256]; g: 3; seed: 5" ;;
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
esac
