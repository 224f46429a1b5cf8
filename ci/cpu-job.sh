#!/usr/bin/env bash
# The CPU job: what .github/workflows/ci.yml runs on GitHub-hosted runners and what .ci/run runs
# locally. Needs python3 with nox (pinned in locks/dev.txt); everything else is installed by nox from
# the hash-pinned lock (NVFP4_LOCK=dev: CPU torch, never the multi-GB CUDA build).
#   lint     ruff over the tree
#   test     the unmarked (CPU) tier: codec, layouts, references, evaluator, packager (each problem's
#            packaged file passes the evaluator's test mode standing alone), submit against a fake
#            popcorn-cli, environment pins, and the CuTe DSL compiles for sm_90a and sm_100a
#   package  dist/PROBLEM/submission.py for every problem (CI keeps them as an artifact)
#   runner_dsl  the packaged sm100 kernels compiled with the leaderboard runner's CuTe DSL (4.3.5)
#   checks   flake.nix parses (nix-instantiate), the Dockerfile lints (hadolint) where installed
#   container  the Dockerfile built with buildah from offline stand-ins, then `nox -s package` and the CPU
#            tier run in it as its user (ci/check-container.sh; needs root and apt, else it says so)
set -euo pipefail
cd "$(dirname "$0")/.."
export NVFP4_LOCK=${NVFP4_LOCK:-dev}
nox -s lint
nox -s test
nox -s package
nox -s runner_dsl
ci/check-nix.sh
ci/check-docker.sh
ci/check-container.sh
