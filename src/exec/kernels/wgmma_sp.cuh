// wgmma.sp kernels (2:4 structured sparsity): compressed A (64 x k/2) from registers in the
// dense A layout of the shape with half the K (two kernels at the end take it from shared
// memory), B (k x 8) from shared memory as for the dense kernels, metadata indices M (one per
// kept value, 0..3) packed per warp in the mma.sp m16n8k32 / m16n8k64 layout of its 16 rows
// (sparse_meta.cuh, selector 0).

#include "sparse_meta.cuh"

// 16-bit A and B, k = 32 (16 kept), f32 accumulator; lanes t = 0, 1 supply the metadata.
#define WGMMA_SP_16(NAME, TYPE)                                                                 \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles, const uint8_t* M) { \
    __shared__ __align__(128) uint16_t sb[32 * 8];                                              \
    WG_INDEX                                                                                    \
    stage_b(sb, B + tile * 32 * 8, 32);                                                         \
    LOAD_A16                                                                                    \
    const uint32_t e = t < 2 ? sp_meta(M + tile * 64 * 16, 16, 16 * w + g, 4 * t) : 0u;      \
    LOAD_C32                                                                                    \
    uint64_t desc = b_descriptor(sb);                                                           \
    WG_BEGIN                                                                                    \
    asm volatile("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32." TYPE "." TYPE " {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, %9, 0, 1, 1, 1, 0;" \
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])                         \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc), "r"(e) : "memory"); \
    WG_END                                                                                      \
    STORE_D32                                                                                   \
}
WGMMA_SP_16(wgmma_sp_m64n8k32_f32_f16_f16, "f16")
WGMMA_SP_16(wgmma_sp_m64n8k32_f32_bf16_bf16, "bf16")

// FP8 A and B, k = 64 (32 kept), f32 accumulator; every lane supplies metadata.
#define WGMMA_SP_FP8(NAME, TA, TB)                                                              \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles, const uint8_t* M) { \
    __shared__ __align__(128) uint8_t sb[64 * 8];                                               \
    WG_INDEX                                                                                    \
    stage_b(sb, B + tile * 64 * 8, 64);                                                         \
    LOAD_A8                                                                                     \
    const uint32_t e = sp_meta_fp8(M + tile * 64 * 32, 16 * w + g, t);                       \
    LOAD_C32                                                                                    \
    uint64_t desc = b_descriptor(sb);                                                           \
    WG_BEGIN                                                                                    \
    asm volatile("wgmma.mma_async.sp.sync.aligned.m64n8k64.f32." TA "." TB " {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, %9, 0, 1, 1, 1;" \
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])                         \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc), "r"(e) : "memory"); \
    WG_END                                                                                      \
    STORE_D32                                                                                   \
}
WGMMA_SP_FP8(wgmma_sp_m64n8k64_f32_e4m3_e4m3, "e4m3", "e4m3")
WGMMA_SP_FP8(wgmma_sp_m64n8k64_f32_e5m2_e5m2, "e5m2", "e5m2")

// A from shared memory (a-desc): the compressed A K-major in the no-swizzle core-matrix layout
// of a dense 64 x 32-byte A (16-bit: the m64n8k16 layout of wgmma_forms.cuh; FP8: the same
// bytes), LBO = 128 bytes along k, SBO = 256 bytes along m.
static __device__ __forceinline__ void stage_a_kmajor_bytes(uint8_t* sa, const uint8_t* a) {
    for (int idx = threadIdx.x; idx < 64 * 32; idx += blockDim.x) {
        int m = idx / 32, kk = idx % 32;
        sa[(m / 8) * 256 + (kk / 16) * 128 + (m % 8) * 16 + kk % 16] = a[m * 32 + kk];
    }
}

extern "C" __global__ void __launch_bounds__(128) wgmma_sp_m64n8k32_f32_f16_f16_smem_a(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles, const uint8_t* M) {
    __shared__ __align__(128) uint16_t sa[64 * 16];
    __shared__ __align__(128) uint16_t sb[32 * 8];
    WG_INDEX
    stage_a_kmajor(sa, A + tile * 64 * 16);
    stage_b(sb, B + tile * 32 * 8, 32);
    const uint32_t e = t < 2 ? sp_meta(M + tile * 64 * 16, 16, 16 * w + g, 4 * t) : 0u;
    LOAD_C32
    uint64_t da = descriptor(sa, 128, 256), db = b_descriptor(sb);
    WG_BEGIN
    asm volatile("wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, %6, 0, 1, 1, 1, 0, 0;"
                 : WG_F32_OUT : "l"(da), "l"(db), "r"(e) : "memory");
    WG_END
    STORE_D32
}

extern "C" __global__ void __launch_bounds__(128) wgmma_sp_m64n8k64_f32_e4m3_e4m3_smem_a(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles, const uint8_t* M) {
    __shared__ __align__(128) uint8_t sa[64 * 32];
    __shared__ __align__(128) uint8_t sb[64 * 8];
    WG_INDEX
    stage_a_kmajor_bytes(sa, A + tile * 64 * 32);
    stage_b(sb, B + tile * 64 * 8, 64);
    const uint32_t e = sp_meta_fp8(M + tile * 64 * 32, 16 * w + g, t);
    LOAD_C32
    uint64_t da = descriptor(sa, 128, 256), db = b_descriptor(sb);
    WG_BEGIN
    asm volatile("wgmma.mma_async.sp.sync.aligned.m64n8k64.f32.e4m3.e4m3 {%0,%1,%2,%3}, %4, %5, %6, 0, 1, 1, 1;"
                 : WG_F32_OUT : "l"(da), "l"(db), "r"(e) : "memory");
    WG_END
    STORE_D32
}
