#!/usr/bin/env bash
# One device run for the foundation: GPU test tier of the core, then every problem's evaluator in test
# mode (leaderboard + stress data) and benchmark mode with the reference and the bf16-predecoded peer.
# Usage (device machine, repo root): bash lab/device_foundation.sh [PROBLEM ...] -> $OUT/run.log, JSON
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
problems=("${@:-gemv gemm dual_gemm group_gemm}")
log="$OUT/run.log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >> "$log"
python -m pytest -q -m gpu tests/test_reference.py >> "$log" 2>&1; echo "pytest gpu tier rc=$?" | tee -a "$log"
for p in ${problems[*]}; do
  for d in leaderboard stress; do
    python -m harness.eval $p --mode test --data $d --impl reference bf16-predecoded >> "$log" 2>&1
    echo "test $p $d rc=$?" | tee -a "$log"
  done
done
for p in ${problems[*]}; do
  python -m harness.eval $p --mode benchmark --impl reference bf16-predecoded --json "$OUT/$p.json" > "$OUT/b.log" 2>&1
  echo "bench $p rc=$?" | tee -a "$log"; cat "$OUT/b.log" >> "$log"
  sed -n '/--mode benchmark/,$p' "$OUT/b.log"; grep -E "^(error|FAIL)|Error" "$OUT/b.log" | head -5
done
rm -f "$OUT/b.log"
