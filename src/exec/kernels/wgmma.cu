// wgmma.mma_async kernels (sm_90a), one per instruction path. One warpgroup (128 threads, one
// block) runs one tile case: A (64 x k) from registers, B (k x 8) from shared memory through a
// matrix descriptor, C loaded into the accumulator registers, D stored back. Raw bit patterns
// throughout, row-major logical matrices as in the interchange format.
// A fragment per warp w: the mma.sync m16n8kK A layout for rows 16w..16w+15. D element i of
// thread (w, g, t): row 16w + g + 8*((i>>1)&1), column 2t + (i&1) (n = 8).
// B in shared memory, K-major, no swizzle: core matrices of 8 rows (n) x 16 bytes (along k),
// LBO = 128 bytes between core matrices adjacent in k.
#include <stdint.h>

#define WG_INDEX                                                     \
    const long tile = blockIdx.x;                                    \
    if (tile >= ntiles) return;                                      \
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;         \
    const int g = lane >> 2, t = lane & 3;

static __device__ __forceinline__ uint64_t b_descriptor(const void* smem) {
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(smem);
    const uint64_t lbo = 128, sbo = 256;
    return (uint64_t)((addr >> 4) & 0x3fff) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32);
}

// Copy B (k x 8 elements of `bytes` each) into the core-matrix layout: element (kk, n) at
// (kk / per_row) * 128 + n * 16 + (kk % per_row) * bytes, per_row = 16 / bytes.
template <typename T>
static __device__ __forceinline__ void stage_b(T* sb, const T* b, int k) {
    const int per_row = 16 / sizeof(T);
    for (int idx = threadIdx.x; idx < k * 8; idx += blockDim.x) {
        int kk = idx / 8, n = idx % 8;
        sb[((kk / per_row) * 128 + n * 16) / sizeof(T) + kk % per_row] = b[kk * 8 + n];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
}

static __device__ __forceinline__ uint32_t pack16(uint16_t lo, uint16_t hi) {
    return (uint32_t)lo | ((uint32_t)hi << 16);
}

#define WG_BEGIN asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#define WG_END                                                            \
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");        \
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");

// 16-bit A, k = 16: element i -> (16w + g + 8*((i>>1)&1), 2t + (i&1) + 8*(i>=4)).
#define LOAD_A16                                                                   \
    const uint16_t* a = A + tile * 64 * 16;                                        \
    uint32_t ra[4];                                                                \
    for (int r = 0; r < 4; r++) {                                                  \
        int i0 = 2 * r, i1 = 2 * r + 1;                                            \
        int row = 16 * w + g + 8 * ((i0 >> 1) & 1);                                \
        int c0 = 2 * t + (i0 & 1) + 8 * (i0 >= 4), c1 = 2 * t + (i1 & 1) + 8 * (i1 >= 4); \
        ra[r] = pack16(a[row * 16 + c0], a[row * 16 + c1]);                        \
    }

#define LOAD_C32                                                                   \
    const uint32_t* c = C + tile * 64 * 8;                                         \
    float acc[4];                                                                  \
    for (int i = 0; i < 4; i++)                                                    \
        acc[i] = __uint_as_float(c[(16 * w + g + 8 * ((i >> 1) & 1)) * 8 + 2 * t + (i & 1)]);

#define STORE_D32                                                                  \
    uint32_t* d = D + tile * 64 * 8;                                               \
    for (int i = 0; i < 4; i++)                                                    \
        d[(16 * w + g + 8 * ((i >> 1) & 1)) * 8 + 2 * t + (i & 1)] = __float_as_uint(acc[i]);

// f16 accumulator: two f16x2 registers, element 2r in the low half of register r.
#define LOAD_C16                                                                   \
    const uint16_t* c = C + tile * 64 * 8;                                         \
    uint32_t acc[2];                                                               \
    for (int r = 0; r < 2; r++) {                                                  \
        int row = 16 * w + g + 8 * r;                                              \
        acc[r] = pack16(c[row * 8 + 2 * t], c[row * 8 + 2 * t + 1]);               \
    }

#define STORE_D16                                                                  \
    uint16_t* d = D + tile * 64 * 8;                                               \
    for (int r = 0; r < 2; r++) {                                                  \
        int row = 16 * w + g + 8 * r;                                              \
        d[row * 8 + 2 * t] = (uint16_t)(acc[r] & 0xffff);                          \
        d[row * 8 + 2 * t + 1] = (uint16_t)(acc[r] >> 16);                         \
    }

#define WGMMA_16(NAME, TYPE)                                                                    \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    __shared__ __align__(128) uint16_t sb[16 * 8];                                              \
    WG_INDEX                                                                                    \
    stage_b(sb, B + tile * 16 * 8, 16);                                                         \
    LOAD_A16                                                                                    \
    LOAD_C32                                                                                    \
    uint64_t desc = b_descriptor(sb);                                                           \
    WG_BEGIN                                                                                    \
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32." TYPE "." TYPE " {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, 1, 1, 0;" \
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])                         \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory");         \
    WG_END                                                                                      \
    STORE_D32                                                                                   \
}
WGMMA_16(wgmma_m64n8k16_f32_f16_f16, "f16")
WGMMA_16(wgmma_m64n8k16_f32_bf16_bf16, "bf16")

// f16 accumulator (LOAD_C16, STORE_D16).
extern "C" __global__ void __launch_bounds__(128) wgmma_m64n8k16_f16_f16_f16(const uint16_t* A, const uint16_t* B, const uint16_t* C, uint16_t* D, long ntiles) {
    __shared__ __align__(128) uint16_t sb[16 * 8];
    WG_INDEX
    stage_b(sb, B + tile * 16 * 8, 16);
    LOAD_A16
    LOAD_C16
    uint64_t desc = b_descriptor(sb);
    WG_BEGIN
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, %6, 1, 1, 1, 0;"
                 : "+r"(acc[0]), "+r"(acc[1])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory");
    WG_END
    STORE_D16
}

// tf32, k = 8: A element i -> (16w + g + 8*(i&1), t + 4*(i>=2)).
extern "C" __global__ void __launch_bounds__(128) wgmma_m64n8k8_f32_tf32_tf32(const uint32_t* A, const uint32_t* B, const uint32_t* C, uint32_t* D, long ntiles) {
    __shared__ __align__(128) uint32_t sb[8 * 8];
    WG_INDEX
    stage_b(sb, B + tile * 8 * 8, 8);
    const uint32_t* a = A + tile * 64 * 8;
    uint32_t ra[4];
    for (int i = 0; i < 4; i++) ra[i] = a[(16 * w + g + 8 * (i & 1)) * 8 + t + 4 * (i >= 2)];
    LOAD_C32
    uint64_t desc = b_descriptor(sb);
    WG_BEGIN
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, 1, 1;"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory");
    WG_END
    STORE_D32
}

// fp8, k = 32: A element i -> (16w + g + 8*((i>>2)&1), 4t + (i&3) + 16*(i>=8)).
#define LOAD_A8                                                                                 \
    const uint8_t* a = A + tile * 64 * 32;                                                      \
    uint32_t ra[4] = {0, 0, 0, 0};                                                              \
    for (int i = 0; i < 16; i++) {                                                              \
        int row = 16 * w + g + 8 * ((i >> 2) & 1), col = 4 * t + (i & 3) + 16 * (i >= 8);      \
        ra[i >> 2] |= (uint32_t)a[row * 32 + col] << (8 * (i & 3));                            \
    }

// FP8 A and B (the same format or mixed), f32 accumulator.
#define WGMMA_FP8(NAME, TA, TB)                                                                 \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    __shared__ __align__(128) uint8_t sb[32 * 8];                                               \
    WG_INDEX                                                                                    \
    stage_b(sb, B + tile * 32 * 8, 32);                                                         \
    LOAD_A8                                                                                     \
    LOAD_C32                                                                                    \
    uint64_t desc = b_descriptor(sb);                                                           \
    WG_BEGIN                                                                                    \
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k32.f32." TA "." TB " {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, 1, 1;" \
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])                         \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory");         \
    WG_END                                                                                      \
    STORE_D32                                                                                   \
}
WGMMA_FP8(wgmma_m64n8k32_f32_e4m3_e4m3, "e4m3", "e4m3")
WGMMA_FP8(wgmma_m64n8k32_f32_e5m2_e5m2, "e5m2", "e5m2")
WGMMA_FP8(wgmma_m64n8k32_f32_e4m3_e5m2, "e4m3", "e5m2")
WGMMA_FP8(wgmma_m64n8k32_f32_e5m2_e4m3, "e5m2", "e4m3")

// FP8 A and B, f16 accumulator (two f16x2 registers, as the f16 kernel above).
#define WGMMA_FP8_F16(NAME, T)                                                                  \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint8_t* A, const uint8_t* B, const uint16_t* C, uint16_t* D, long ntiles) { \
    __shared__ __align__(128) uint8_t sb[32 * 8];                                               \
    WG_INDEX                                                                                    \
    stage_b(sb, B + tile * 32 * 8, 32);                                                         \
    LOAD_A8                                                                                     \
    LOAD_C16                                                                                    \
    uint64_t desc = b_descriptor(sb);                                                           \
    WG_BEGIN                                                                                    \
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k32.f16." T "." T " {%0,%1}, {%2,%3,%4,%5}, %6, 1, 1, 1;" \
                 : "+r"(acc[0]), "+r"(acc[1])                                                   \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory");         \
    WG_END                                                                                      \
    STORE_D16                                                                                   \
}
WGMMA_FP8_F16(wgmma_m64n8k32_f16_e4m3_e4m3, "e4m3")
WGMMA_FP8_F16(wgmma_m64n8k32_f16_e5m2_e5m2, "e5m2")

// Wider N (16 to 256): generated by scripts/gen-wgmma-wide.py.
#include "wgmma_wide.cuh"
// Forms of m64n8 (shared-memory A, transposes, scale-d = 0, negation, chains over K).
#include "wgmma_forms.cuh"
// Integer operands into s32.
#include "wgmma_int.cuh"
// Structured sparsity (2:4).
#include "wgmma_sp.cuh"
