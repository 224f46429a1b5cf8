#!/usr/bin/env bash
# Build the Dockerfile with buildah and run, as the image's user, `nox -s package` and the CPU test tier
# inside the image: the image is what `--runner modal` and the container instructions rely on, so a
# change that breaks it (e.g. a repository directory its user cannot write) fails here.
#
# Offline stand-ins (CI reaches PyPI and Debian's archive only), passed as the Dockerfile's build arguments:
#   BASE_IMAGE          the CUDA devel image -> Debian 12 bootstrapped here with debootstrap (Debian's packages only)
#   UV_IMAGE            the uv image -> the uv binary of the PyPI wheel of the Dockerfile's UV_VERSION
#   STANDIN_PYTHON      uv's managed CPython 3.13 (from GitHub) -> Debian's python3 (3.11)
#   STANDIN_LOCKS       locks/leaderboard.txt's CUDA wheels (several GB) -> locks/dev.txt (CPU torch from
#                       the wheel directory $NVFP4_WHEELS, mounted read-only into the build)
#   COMPILERS           g++-13 (Ubuntu 24.04) -> Debian 12's g++
# So this checks the Dockerfile's mechanics (stages, user, permissions, entrypoint, the locks installed
# hash-checked), not the runner's versions: tests/test_environment.py checks those pins.
#
# Needs root, buildah and debootstrap (apt-get installs them where they are missing). Where they cannot
# be had: says so and succeeds, unless NVFP4_REQUIRE_CONTAINER=1. Storage: vfs under a temporary
# directory, removed on exit (NVFP4_CONTAINER_KEEP=1 keeps it and prints where).
# NVFP4_CONTAINER_TESTS overrides the pytest arguments of the CPU tier run inside the image (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
start=$(date +%s)
say() { echo "check-container: $*"; }
skip() {
  say "skipped: $*"
  [ "${NVFP4_REQUIRE_CONTAINER:-0}" = 1 ] && exit 1
  exit 0
}

[ "$(id -u)" = 0 ] || skip "needs root (buildah with chroot isolation and vfs storage, debootstrap)"
if ! command -v buildah >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || skip "buildah/debootstrap not installed and no apt-get"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah debootstrap) \
    >/dev/null 2>&1 || skip "apt-get could not install buildah and debootstrap"
fi
wheels=${NVFP4_WHEELS:-/opt/wheels}
torch_pin=$(grep -o '^torch==[^ ]*' locks/dev.txt | cut -d= -f3)
ls "$wheels"/torch-"${torch_pin}"-*.whl >/dev/null 2>&1 \
  || skip "no torch ${torch_pin} wheel in $wheels (set NVFP4_WHEELS): CI never downloads torch here"

arg() { sed -n "s/^ARG $1=//p" Dockerfile; }
uv_version=$(arg UV_VERSION)
work=$(mktemp -d /var/tmp/nvfp4-container.XXXXXX)
if [ "${NVFP4_CONTAINER_KEEP:-0}" = 1 ]; then trap 'say "kept $work"' EXIT; else trap 'rm -rf "$work"' EXIT; fi
trap 'exit 130' INT TERM  # so that the EXIT trap removes the storage when the check is stopped
bah() { buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs "$@"; }

say "stand-in base: debootstrap Debian 12 (minbase + python3)"
debootstrap --variant=minbase --include=python3,ca-certificates bookworm "$work/rootfs" \
  http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; exit 1; }
# This host's CA bundle, for uv in the build: the route to PyPI may pass a TLS-inspecting proxy whose CA
# only the host trusts (uv reads SSL_CERT_FILE). Only the stand-in carries it; the real base is untouched.
cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/host-ca-certificates.crt"
tar -C "$work/rootfs" -cf "$work/rootfs.tar" .
rm -rf "$work/rootfs"
ctr=$(bah from scratch)
bah add "$ctr" "$work/rootfs.tar" / >/dev/null
bah config --env SSL_CERT_FILE=/etc/ssl/certs/host-ca-certificates.crt "$ctr"
bah commit -q "$ctr" localhost/nvfp4-standin-base >/dev/null
rm -f "$work/rootfs.tar"

say "stand-in uv: uv ${uv_version} from its PyPI wheel"
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_17_x86_64 \
  -d "$work/uv" "uv==${uv_version}" 2>"$work/pip.log" || { cat "$work/pip.log"; exit 1; }
python3 -m zipfile -e "$work"/uv/uv-*.whl "$work/uv/x"
install -m 0755 "$work"/uv/x/uv-*.data/scripts/uv "$work/uv/uv"
ctr=$(bah from scratch)
bah copy "$ctr" "$work/uv/uv" /uv >/dev/null
bah commit -q "$ctr" localhost/nvfp4-standin-uv >/dev/null

say "building the Dockerfile (buildah $(buildah --version | cut -d' ' -f3), --isolation chroot, vfs)"
# No --layers: with vfs every cached layer is a full copy of the tree (tens of GB for this image).
bah build --isolation chroot --pull=never -q -f Dockerfile -t localhost/nvfp4-check \
  --volume "$wheels:$wheels:ro" \
  --build-arg BASE_IMAGE=localhost/nvfp4-standin-base \
  --build-arg UV_IMAGE=localhost/nvfp4-standin-uv \
  --build-arg STANDIN_PYTHON=/usr/bin/python3 \
  --build-arg STANDIN_LOCKS=dev.txt \
  --build-arg STANDIN_FIND_LINKS="$wheels" \
  --build-arg COMPILERS="g++ gcc" \
  . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; say "FAILED: the image did not build"; exit 1; }
say "image built ($(( $(date +%s) - start )) s so far)"

ctr=$(bah from localhost/nvfp4-check)
as_user() { bah run --isolation chroot --user 10001:10001 "$ctr" -- "$@"; }
entry=$(bah inspect --format '{{.OCIv1.Config.Entrypoint}}' localhost/nvfp4-check)
say "entrypoint $entry, user $(bah inspect --format '{{.OCIv1.Config.User}}' localhost/nvfp4-check)"

say "as uid 10001: nox -s package (writes dist/ at the repository's root)"
if ! as_user nox --no-venv --no-install -s package >"$work/package.log" 2>&1; then
  tail -8 "$work/package.log"
  say "FAILED: nox -s package failed in the image, as its user"
  exit 1
fi
tail -2 "$work/package.log"
as_user test -s dist/gemv/submission.py || { say "FAILED: no dist/gemv/submission.py"; exit 1; }

# The CPU tier in the image's environment, as its user, spread over the cores as `nox -s test` does on a
# CPU; by default without the CuTe DSL compile tests: the stand-in installs the same dev lock as the host's
# `nox -s test`, which runs them, so in the image they would add ~10 min on two cores and nothing the image
# changes. Also left out: the report tests, which plot the committed results/ (not in the image:
# .dockerignore). Everything else runs: the evaluator, the packaged files standing alone, submit, the
# environment pins, the runner. NVFP4_CONTAINER_TESTS="-q -n auto" runs the whole tier.
# shellcheck disable=SC2206
tests=(${NVFP4_CONTAINER_TESTS:--q -n auto --dist worksteal -p no:cacheprovider
  --ignore=tests/test_sm100_ptx_structure.py --ignore=tests/test_sm100_layouts.py --ignore=tests/test_sm100_data_movement.py --ignore=tests/test_sm100_kernels.py --ignore=tests/test_group_gemm_sm100.py --ignore=tests/test_sm100_splitk.py --ignore=tests/test_sm100_cta2.py
  --ignore=tests/test_sm90_gemm_kernels.py --ignore=tests/test_group_gemm_sm90.py --ignore=tests/test_packaged_compile.py
  --ignore=tests/test_report.py --deselect=tests/test_eval.py::test_report_draws_the_newest_results_per_problem})
say "as uid 10001: nox -s test -- ${tests[*]}"
if ! as_user nox --no-venv --no-install -s test -- "${tests[@]}" >"$work/tier.log" 2>&1; then
  grep -E "^(FAILED|ERROR) |^E   " "$work/tier.log" | head -40 || true
  tail -5 "$work/tier.log"
  say "FAILED: the CPU tier failed in the image"
  exit 1
fi
tail -2 "$work/tier.log"
say "passed in $(( $(date +%s) - start )) s"
