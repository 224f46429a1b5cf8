{
  # Nix entry points for nvfp4-kernels.
  #   nix develop              a GPU development shell: Python 3.12, uv, nox, ruff, ninja, the CUDA 13 toolkit;
  #                            on first entry it creates .venv-nix from locks/gpu.txt (hash-checked),
  #                            so Python package versions are the lock's, not nixpkgs'.
  #   nix flake check          the CPU test tier (pytest without the gpu/sm90/sm100 markers) in the
  #                            sandbox, with nixpkgs' CPU torch (the sandbox has no network to install
  #                            the lock); tests that need nvidia-cutlass-dsl skip there.
  # The host's NVIDIA driver is found the usual NixOS way, through /run/opengl-driver/lib (on other
  # distributions, set NVFP4_DRIVER_LIB to the directory holding libcuda.so.1).
  description = "NVFP4 GPU kernels for the GPU MODE Blackwell NVFP4 leaderboards";

  # A release branch; flake.lock (written by the first `nix flake lock`) pins the exact revision.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs = { self, nixpkgs }:
    let
      system = "x86_64-linux";
      # CUDA is unfree; cudaSupport stays off so that nothing here rebuilds torch from source.
      pkgs = import nixpkgs { inherit system; config.allowUnfree = true; };
      python = pkgs.python312;
      # CUDA 13, as locks/gpu.txt (torch 2.13 cu13) and locks/leaderboard.txt (cuda-toolkit 13.1).
      cuda = pkgs.cudaPackages_13 or pkgs.cudaPackages;
      # Libraries that manylinux wheels (torch, nvidia-cutlass-dsl) expect from the system.
      wheelLibs = pkgs.lib.makeLibraryPath [ pkgs.stdenv.cc.cc.lib pkgs.zlib ];
      lock = "locks/gpu.txt";
    in
    {
      devShells.${system}.default = pkgs.mkShell {
        packages = [
          python
          pkgs.uv
          pkgs.ruff
          python.pkgs.nox
          pkgs.ninja  # builds shared/cute/host_check.cpp (torch.utils.cpp_extension) with stdenv's g++
          cuda.cudatoolkit
          pkgs.git
        ];
        shellHook = ''
          export CUDA_HOME=${cuda.cudatoolkit}
          export LD_LIBRARY_PATH=''${NVFP4_DRIVER_LIB:-/run/opengl-driver/lib}:${wheelLibs}''${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
          export NVFP4_LOCK=gpu
          if [ ! -x .venv-nix/bin/python ] || [ ${lock} -nt .venv-nix/.locked ]; then
            uv venv --quiet --allow-existing --python ${python}/bin/python .venv-nix
            VIRTUAL_ENV=.venv-nix uv pip install --quiet --require-hashes --no-deps -r ${lock}
            VIRTUAL_ENV=.venv-nix uv pip install --quiet --no-deps --no-build-isolation -e .
            touch .venv-nix/.locked
          fi
          . .venv-nix/bin/activate
        '';
      };

      checks.${system}.cpu-tests =
        let
          env = python.withPackages (ps: [ ps.torch ps.pytest ps.pyyaml ps.ml-dtypes ps.numpy ]);
        in
        pkgs.runCommand "nvfp4-cpu-tests" { nativeBuildInputs = [ env ]; } ''
          cp -r ${self} src && chmod -R u+w src && cd src
          HOME=$TMPDIR python -m pytest -q -p no:cacheprovider -m "not gpu and not sm90 and not sm100"
          touch $out
        '';

      formatter.${system} = pkgs.nixpkgs-fmt;
    };
}
