// How many thread-block clusters of each size can be resident on this GPU at once
// (cudaOccupancyMaxActiveClusters), for a block that fills an SM (one block per SM) and for one
// that lets two share it. cuBLAS's segment-K kernel (algorithm 43) sizes its run-time split by
// how many of its clustered blocks fit: docs/src/library-schedules.md.
//
//     nvcc -arch=sm_90a -o cluster-occupancy scripts/probes/cluster-occupancy.cu && ./cluster-occupancy
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(float *out) {
    extern __shared__ float smem[];
    smem[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (out) out[blockIdx.x] = smem[0];
}

int main() {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) { printf("no CUDA device\n"); return 2; }
    printf("{\"gpu\": \"%s\", \"sm_count\": %d, \"smem_per_sm\": %zu, \"clusters\": [\n", p.name, p.multiProcessorCount, p.sharedMemPerMultiprocessor);
    cudaFuncSetAttribute(fill, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaFuncSetAttribute(fill, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
    size_t smems[2] = {200 * 1024, 100 * 1024};
    bool first = true;
    for (int s = 0; s < 2; ++s) {
        for (int x = 1; x <= 16; ++x) {
            for (int y = 1; y <= 16 / x; ++y) {
                if (x > 1 && y > 1 && x * y > 8) continue;
                cudaLaunchConfig_t cfg = {};
                cfg.gridDim = dim3(x * 64, y * 64, 1);
                cfg.blockDim = dim3(384, 1, 1);
                cfg.dynamicSmemBytes = smems[s];
                cudaLaunchAttribute a[1];
                a[0].id = cudaLaunchAttributeClusterDimension;
                a[0].val.clusterDim.x = x; a[0].val.clusterDim.y = y; a[0].val.clusterDim.z = 1;
                cfg.attrs = a; cfg.numAttrs = 1;
                int n = -1;
                cudaError_t e = cudaOccupancyMaxActiveClusters(&n, fill, &cfg);
                printf("%s  {\"smem\": %zu, \"x\": %d, \"y\": %d, \"clusters\": %d, \"blocks\": %d, \"error\": \"%s\"}",
                       first ? "" : ",\n", smems[s], x, y, n, n * x * y, e == cudaSuccess ? "" : cudaGetErrorString(e));
                first = false;
                cudaGetLastError();
            }
        }
    }
    printf("\n]}\n");
    return 0;
}
