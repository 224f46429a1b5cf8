{
  # Nix entry points for nvfp4-kernels. Needs Nix 2.18 or newer (nixos-25.11's minimum, per its release
  # notes) with flakes enabled (`--extra-experimental-features 'nix-command flakes'`, or in nix.conf).
  #   nix develop              a GPU development shell: Python 3.12, uv, nox, ruff, ninja, the CUDA 13 toolkit;
  #                            on first entry it creates .venv-nix from locks/gpu.txt (hash-checked),
  #                            so Python package versions are the lock's, not nixpkgs'.
  #   nix flake check          the CPU test tier (pytest without the gpu/sm90/sm100 markers) in the
  #                            sandbox, with nixpkgs' CPU torch (the sandbox has no network to install
  #                            the lock); tests that need nvidia-cutlass-dsl skip there.
  # The host's NVIDIA driver is found the usual NixOS way, through /run/opengl-driver/lib (on other
  # distributions, set NVFP4_DRIVER_LIB to the directory holding libcuda.so.1).
  description = "NVFP4 GPU kernels for the GPU MODE Blackwell NVFP4 leaderboards";

  # A release branch. flake.lock pins the exact revision: write it with `nix flake lock` (network access to
  # GitHub; `nix flake update` moves it to the branch's newest) and commit it; until then every evaluation
  # takes the branch's current head.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs = { self, nixpkgs }:
    let
      system = "x86_64-linux";
      # CUDA is unfree; cudaSupport stays off so that nothing here rebuilds torch from source.
      pkgs = import nixpkgs { inherit system; config.allowUnfree = true; };
      python = pkgs.python312;
      # CUDA 13, as locks/gpu.txt (torch 2.13 cu13) and locks/leaderboard.txt (cuda-toolkit 13.1). A nixpkgs
      # without it is an error, not the default cudaPackages (12.x there): the toolkit must match the wheels.
      cuda13 = pkgs.cudaPackages_13 or (throw
        "flake.nix: this nixpkgs has no cudaPackages_13 (CUDA 13, as the locks' wheels): use nixos-25.11 or newer");
      cudaMajor = pkgs.lib.versions.major (cuda13.cudaMajorMinorVersion or cuda13.cudaVersion);
      cuda = if cudaMajor == "13" then cuda13 else throw
        "flake.nix: cudaPackages_13 of this nixpkgs is CUDA ${cudaMajor}, not 13";
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
