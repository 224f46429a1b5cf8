# syntax=docker/dockerfile:1
# The leaderboard runners' environment (shared/spec/LEADERBOARD.md section 9), for running the tests,
# the evaluator and packaged submissions as the B200 runners do:
#   docker build -t nvfp4 .
#   docker run --rm --gpus all nvfp4                         # nox -s test
#   docker run --rm --gpus all nvfp4 -s bench -- gemv        # any nox session
#   docker run --rm --gpus all -v "$PWD:/home/nvfp4/repo" nvfp4 -s test   # on a live checkout
#
# Base: NVIDIA's CUDA 13.1 *devel* image on Ubuntu 24.04, the image the Modal B200 runners use. The
# torch and CuTe DSL wheels bring their own CUDA user-space libraries, so a plain Ubuntu base would
# run them too; the devel image is chosen because submissions may compile C++/CUDA at run time
# (torch.utils.cpp_extension.load_inline needs nvcc and the CUDA headers, as on the runner), and so
# that nothing here differs from the runner without a reason. The host provides the driver
# (NVIDIA Container Toolkit, `--gpus all`). Pin the digest too when building for a release:
#   docker buildx imagetools inspect nvidia/cuda:13.1.0-devel-ubuntu24.04
#
# Versions: every Python package comes from locks/leaderboard.txt + locks/tools.txt (hash-checked,
# no resolver); the ARGs below must agree with those locks (tests/test_environment.py checks it).
ARG CUDA_VERSION=13.1.0
ARG UBUNTU_VERSION=24.04
ARG PYTHON_VERSION=3.13.8
ARG UV_VERSION=0.13.9
# The two images built on. ci/check-container.sh passes local stand-ins where they cannot be pulled
# (a debootstrapped Debian for the CUDA base, uv from its PyPI wheel); the defaults are the real ones.
ARG BASE_IMAGE=nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION}
ARG UV_IMAGE=ghcr.io/astral-sh/uv:${UV_VERSION}

FROM ${UV_IMAGE} AS uv

# ---- build stage: a relocatable Python and the locked environment in /opt/venv ----------------------
FROM ${BASE_IMAGE} AS build
ARG PYTHON_VERSION
# Stand-in check only (ci/check-container.sh, offline): STANDIN_PYTHON=/usr/bin/python3 takes the base
# image's Python instead of uv's managed CPython (downloaded from GitHub), and STANDIN_LOCKS installs
# those locks (the CPU one, torch from a wheel directory mounted at STANDIN_FIND_LINKS) instead of the
# leaderboard's multi-GB CUDA wheels. Empty, as here, the image is the runner's.
ARG STANDIN_PYTHON=
ARG STANDIN_LOCKS=
ARG STANDIN_FIND_LINKS=
COPY --from=uv /uv /usr/local/bin/uv
ENV UV_PYTHON_INSTALL_DIR=/opt/python UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1
RUN if [ -z "${STANDIN_PYTHON}" ]; then uv python install "${PYTHON_VERSION}" \
      && uv venv --python "${PYTHON_VERSION}" /opt/venv; \
    else mkdir -p /opt/python && uv venv --python "${STANDIN_PYTHON}" /opt/venv; fi
COPY locks/ /tmp/locks/
# --require-hashes: every file must match the lock; --no-deps: the lock is the whole closure.
RUN --mount=type=cache,target=/root/.cache/uv \
    if [ -z "${STANDIN_LOCKS}" ]; then set -- -r /tmp/locks/leaderboard.txt -r /tmp/locks/tools.txt; \
    else set -- ${STANDIN_FIND_LINKS:+--find-links "$STANDIN_FIND_LINKS"}; \
         for lock in ${STANDIN_LOCKS}; do set -- "$@" -r "/tmp/locks/$lock"; done; fi \
 && VIRTUAL_ENV=/opt/venv uv pip install --require-hashes --no-deps "$@"

# ---- final stage: the same base, the environment, the repository, a non-root user ----------------
FROM ${BASE_IMAGE} AS final
# gcc/g++ 13 and git as on the runner (load_inline; the evaluator records the commit when .git is mounted).
# Not version-pinned: Ubuntu replaces point releases in place; the base image tag fixes the release.
# COMPILERS: the stand-in Debian 12 has gcc 12 (ci/check-container.sh passes it).
ARG COMPILERS="g++-13 gcc-13"
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ${COMPILERS} git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/python /opt/python
COPY --from=build /opt/venv /opt/venv
# The repository directory belongs to the image's user: sessions write dist/, results/ and .nox at its
# root (WORKDIR alone would create it owned by root; tests/test_environment.py and
# ci/check-container.sh fail if that comes back).
RUN useradd --create-home --uid 10001 --user-group --shell /bin/bash nvfp4 \
 && install -d -o 10001 -g 10001 /home/nvfp4/repo
WORKDIR /home/nvfp4/repo
COPY --chown=10001:10001 . .
USER 10001:10001
ENV PATH=/opt/venv/bin:$PATH \
    VIRTUAL_ENV=/opt/venv \
    PYTHONDONTWRITEBYTECODE=1 \
    NVFP4_LOCK=leaderboard
# The image *is* the environment: nox runs its sessions in it (--no-venv) and installs nothing
# (--no-install); arguments after the image name are nox arguments.
ENTRYPOINT ["nox", "--no-venv", "--no-install"]
CMD ["-s", "test"]
