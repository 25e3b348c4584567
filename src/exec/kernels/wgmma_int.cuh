// Integer wgmma: 8-bit A (registers, the FP8 layout, LOAD_A8) and B (shared memory,
// the FP8 staging) into an s32 accumulator in the f32 layout. Integer wgmma takes no
// imm-scale-a/b or transposes: the instruction ends at scale-d. Included by wgmma.cu.

#define LOAD_CS32                                                                  \
    const uint32_t* c = C + tile * 64 * 8;                                         \
    uint32_t acc[4];                                                               \
    for (int i = 0; i < 4; i++)                                                    \
        acc[i] = c[(16 * w + g + 8 * ((i >> 1) & 1)) * 8 + 2 * t + (i & 1)];

#define STORE_DS32                                                                 \
    uint32_t* d = D + tile * 64 * 8;                                               \
    for (int i = 0; i < 4; i++)                                                    \
        d[(16 * w + g + 8 * ((i >> 1) & 1)) * 8 + 2 * t + (i & 1)] = acc[i];

#define WGMMA_INT8(NAME, INSTR)                                                                 \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    __shared__ __align__(128) uint8_t sb[32 * 8];                                               \
    WG_INDEX                                                                                    \
    stage_b(sb, B + tile * 32 * 8, 32);                                                         \
    LOAD_A8                                                                                     \
    LOAD_CS32                                                                                   \
    uint64_t desc = b_descriptor(sb);                                                           \
    WG_BEGIN                                                                                    \
    asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1;"                                 \
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])                         \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory");         \
    WG_END                                                                                      \
    STORE_DS32                                                                                  \
}
WGMMA_INT8(wgmma_m64n8k32_s32_s8_s8, "wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8")
WGMMA_INT8(wgmma_m64n8k32_s32_s8_s8_satfinite, "wgmma.mma_async.sync.aligned.m64n8k32.satfinite.s32.s8.s8")
WGMMA_INT8(wgmma_m64n8k32_s32_u8_u8, "wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.u8")
WGMMA_INT8(wgmma_m64n8k32_s32_s8_u8_satfinite, "wgmma.mma_async.sync.aligned.m64n8k32.satfinite.s32.s8.u8")

// Single bits, k = 256 (.and.popc; wgmma offers no XOR): eight bits per byte, lower K in lower
// bits, so A and B take the 8-bit k = 32 layouts over their packed bytes.
static __device__ __forceinline__ void stage_b_bits(uint8_t* sb, const uint8_t* b) {
    for (int idx = threadIdx.x; idx < 32 * 8; idx += blockDim.x) {
        int kb = idx / 8, n = idx % 8;
        uint8_t byte = 0;
        for (int bit = 0; bit < 8; bit++) byte |= (uint8_t)((b[(8 * kb + bit) * 8 + n] & 1) << bit);
        sb[(kb / 16) * 128 + n * 16 + kb % 16] = byte;
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(128) wgmma_m64n8k256_s32_b1_b1_and_popc(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) {
    __shared__ __align__(128) uint8_t sb[32 * 8];
    WG_INDEX
    stage_b_bits(sb, B + tile * 256 * 8);
    const uint8_t* a = A + tile * 64 * 256;
    uint32_t ra[4] = {0, 0, 0, 0};
    for (int i = 0; i < 16; i++) {
        int row = 16 * w + g + 8 * ((i >> 2) & 1), kb = 4 * t + (i & 3) + 16 * (i >= 8);
        uint32_t byte = 0;
        for (int bit = 0; bit < 8; bit++) byte |= (uint32_t)(a[row * 256 + 8 * kb + bit] & 1) << bit;
        ra[i >> 2] |= byte << (8 * (i & 3));
    }
    LOAD_CS32
    uint64_t desc = b_descriptor(sb);
    WG_BEGIN
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1;"
                 : "+r"(acc[0]), "+r"(acc[1]), "+r"(acc[2]), "+r"(acc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory");
    WG_END
    STORE_DS32
}
