"""How many thread-block clusters of each size fit on the GPU at once, for a kernel that takes one
CTA per SM: `python lab/cluster_occupancy.py [--smem BYTES] [--threads N]`.

The driver's answer (cuOccupancyMaxActiveClusters) for a stand-in kernel compiled with NVRTC, with the
given dynamic shared memory and block size. A cluster's CTAs must sit in one GPC, and the GPCs have
uneven SM counts, so clusters of 4 or 8 can leave SMs idle: a grid of more clusters than this runs in
two waves. On the lent H100 (2026-11-23) with 222208 bytes and 512 threads: 132 CTAs as clusters of
1 or 2, but only 30 clusters of 4 and 15 of 8 (120 CTAs), which is why the gemm's split-K over 4 CTAs
lost (problems/gemm/config.py).
"""

from __future__ import annotations

import argparse

from cuda.bindings import driver, nvrtc

SOURCE = b"""extern "C" __global__ void probe(int *out) {
    extern __shared__ int s[];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (out) out[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}"""


def checked(result):
    """cuda-python returns (status, *values): raise on an error status, return the values."""
    status, *values = result
    if int(status) != 0:
        raise RuntimeError(f"CUDA call failed: {status}")
    return values[0] if len(values) == 1 else values


def stand_in_kernel(arch: str):
    prog = checked(nvrtc.nvrtcCreateProgram(SOURCE, b"probe.cu", 0, [], []))
    checked(nvrtc.nvrtcCompileProgram(prog, 1, [f"--gpu-architecture={arch}".encode()]))
    cubin = b" " * checked(nvrtc.nvrtcGetCUBINSize(prog))
    checked(nvrtc.nvrtcGetCUBIN(prog, cubin))
    return checked(driver.cuModuleGetFunction(checked(driver.cuModuleLoadData(cubin)), b"probe"))


def max_active_clusters(fn, cluster: int, smem: int, threads: int) -> int:
    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = 1, 1, 64 * cluster
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = threads, 1, 1
    cfg.sharedMemBytes = smem
    attr = driver.CUlaunchAttribute()
    attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = 1, 1, cluster
    cfg.attrs, cfg.numAttrs = [attr], 1
    return checked(driver.cuOccupancyMaxActiveClusters(fn, cfg))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smem", type=int, default=222208, help="dynamic shared memory per CTA (bytes)")
    ap.add_argument("--threads", type=int, default=512)
    args = ap.parse_args()
    checked(driver.cuInit(0))
    dev = checked(driver.cuDeviceGet(0))
    checked(driver.cuCtxSetCurrent(checked(driver.cuDevicePrimaryCtxRetain(dev))))
    major = checked(driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = checked(driver.cuDeviceGetAttribute(
        driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    fn = stand_in_kernel(f"sm_{major}{minor}")
    for attr, value in ((driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, args.smem),
                        (driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)):
        checked(driver.cuFuncSetAttribute(fn, attr, value))
    name = checked(driver.cuDeviceGetName(64, dev)).split(b"\0")[0].decode()
    print(f"{name}: {args.threads} threads, {args.smem} bytes of shared memory per CTA")
    for cluster in (1, 2, 4, 8):
        n = max_active_clusters(fn, cluster, args.smem, args.threads)
        print(f"clusters of {cluster}: at most {n} resident ({n * cluster} CTAs)")


if __name__ == "__main__":
    main()
