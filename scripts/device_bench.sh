#!/usr/bin/env bash
# The benchmark run behind results/: on the device machine, from the repo root, with CuTe DSL importable.
#   bash scripts/device_bench.sh tests       # GPU test tiers, stress tests of every submission, sanitizers
#   bash scripts/device_bench.sh bench P...  # benchmark (submission, bf16-predecoded, reference) + leaderboard
# Logs go to $OUT/run.log, results JSON to $OUT/<problem>.json; a short table is printed last.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
log="$OUT/run.log"
what="${1:-bench}"; shift || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$log"
if [ "$what" = tests ]; then
  python -m pytest -q -m "gpu or sm90" tests >> "$log" 2>&1; echo "pytest gpu+sm90 tiers rc=$?" | tee -a "$log"
  tail -15 "$log" | grep -E "passed|failed|SKIPPED|FAILED|Error" | head -20
  for p in gemv gemm dual_gemm; do
    python -m shared.eval $p --mode test --data stress --impl submission >> "$log" 2>&1
    echo "stress test $p rc=$?" | tee -a "$log"
  done
  # compute-sanitizer on test shapes (memcheck and racecheck), the kernels only through the evaluator
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --target-processes all --error-exitcode 99 python -m shared.eval gemv --mode test --impl submission \
      --case "m: 128; k: 256; l: 1; seed: 5" --case "m: 512; k: 1536; l: 2; seed: 5" >> "$log" 2>&1
    echo "sanitizer $tool gemv rc=$?" | tee -a "$log"
    for p in gemm dual_gemm; do
      compute-sanitizer --tool $tool --target-processes all --error-exitcode 99 python -m shared.eval $p --mode test --impl submission \
        --case "m: 256; n: 512; k: 256; l: 1; seed: 5" >> "$log" 2>&1
      echo "sanitizer $tool $p rc=$?" | tee -a "$log"
    done
  done
  exit 0
fi
for p in "$@"; do
  impls="submission bf16-predecoded reference"
  python -m shared.eval $p --mode benchmark --graph --impl $impls --json "$OUT/$p.json" > "$OUT/b.log" 2>&1
  echo "bench $p rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
  python -m shared.eval $p --mode leaderboard --impl submission >> "$log" 2>&1
  echo "leaderboard $p rc=$?" | tee -a "$log"
done
rm -f "$OUT/b.log"
for p in "$@"; do sed -n "/^$p --mode benchmark/,/^results written/p" "$log" | grep -v "^results"; done
