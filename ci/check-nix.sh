#!/usr/bin/env bash
# Parse flake.nix (syntax only: evaluating it would fetch nixpkgs). Uses nix-instantiate from any Nix
# install (Debian/Ubuntu: apt-get install nix-bin). Without it: says so and succeeds, unless
# NVFP4_REQUIRE_NIX=1 (then it fails), so that CI can insist where Nix is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nix-instantiate >/dev/null 2>&1; then
  echo "check-nix: skipped: nix-instantiate not found (apt-get install nix-bin, or install Nix)"
  [ "${NVFP4_REQUIRE_NIX:-0}" = 1 ] && exit 1
  exit 0
fi
nix-instantiate --parse flake.nix > /dev/null
echo "check-nix: flake.nix parses ($(nix-instantiate --version))"
if command -v nix >/dev/null 2>&1 && [ "${NVFP4_NIX_EVAL:-0}" = 1 ]; then
  # With network and flakes enabled: evaluate every output and run the CPU checks.
  nix --extra-experimental-features 'nix-command flakes' flake check --print-build-logs
fi
