// Integer mma.sync: s8/u8, s4/u4 and b1 operands into s32, with and without
// .satfinite. Included by mma_sync.cu. Operands arrive one value per byte (a 4-bit value in the
// low nibble, a bit in bit 0) and are packed here, lower K index in lower bits; C and D are
// s32 in the f32 layout (CD_ROW/CD_COL). Layouts checked on the GPU by `mmafuzz gpu-check`.

#define MMA_INT_ASM(INSTR)                                                                         \
    asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"               \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),         \
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));

// m16n8k32, 8-bit integers: the fragments of the k32 FP8 shape.
#define MMA_INT8_K32(NAME, INSTR)                                                                  \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    LOAD_FP8_K32                                                                                   \
    LOAD_C32                                                                                       \
    MMA_INT_ASM(INSTR)                                                                             \
    STORE_D32                                                                                      \
}
MMA_INT8_K32(mma_m16n8k32_s32_s8_s8_s32, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32")
MMA_INT8_K32(mma_m16n8k32_s32_s8_s8_s32_satfinite, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32")
MMA_INT8_K32(mma_m16n8k32_s32_u8_u8_s32, "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32")
MMA_INT8_K32(mma_m16n8k32_s32_u8_u8_s32_satfinite, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.u8.s32")
MMA_INT8_K32(mma_m16n8k32_s32_s8_u8_s32_satfinite, "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32")
MMA_INT8_K32(mma_m16n8k32_s32_u8_s8_s32, "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32")

// m16n8k16, 8-bit integers: the fragments of the k16 FP8 shape.
#define MMA_INT8_K16(NAME, INSTR)                                                                  \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    LOAD_FP8_K16                                                                                   \
    LOAD_C32                                                                                       \
    asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"                           \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3])); \
    STORE_D32                                                                                      \
}
MMA_INT8_K16(mma_m16n8k16_s32_s8_s8_s32, "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32")
MMA_INT8_K16(mma_m16n8k16_s32_s8_s8_s32_satfinite, "mma.sync.aligned.m16n8k16.row.col.satfinite.s32.s8.s8.s32")

// Values narrower than a byte, VPR = 32 / BITS per register (m16n8k64 4-bit: 8, m16n8k256
// bits: 32). A element i -> (g + 8*((i/VPR)&1), VPR*t + i%VPR + 4*VPR*(i >= 2*VPR)),
// B element i -> (VPR*t + i%VPR + 4*VPR*(i >= VPR), g): the 8-bit k32 layout scaled by VPR / 4.
#define MMA_PACKED(NAME, INSTR, BITS, K)                                                           \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    const int vpr = 32 / (BITS);                                                                   \
    const uint32_t mask = (1u << (BITS)) - 1;                                                      \
    const uint8_t* a = A + tile * 16 * (K);                                                        \
    const uint8_t* b = B + tile * (K) * 8;                                                         \
    uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};                                                 \
    for (int i = 0; i < 4 * vpr; i++)                                                              \
        ra[i / vpr] |= (a[(g + 8 * ((i / vpr) & 1)) * (K) + vpr * t + i % vpr + 4 * vpr * (i >= 2 * vpr)] & mask) << ((BITS) * (i % vpr)); \
    for (int i = 0; i < 2 * vpr; i++)                                                              \
        rb[i / vpr] |= (b[(vpr * t + i % vpr + 4 * vpr * (i >= vpr)) * 8 + g] & mask) << ((BITS) * (i % vpr)); \
    LOAD_C32                                                                                       \
    MMA_INT_ASM(INSTR)                                                                             \
    STORE_D32                                                                                      \
}
MMA_PACKED(mma_m16n8k64_s32_s4_s4_s32, "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32", 4, 64)
MMA_PACKED(mma_m16n8k64_s32_s4_s4_s32_satfinite, "mma.sync.aligned.m16n8k64.row.col.satfinite.s32.s4.s4.s32", 4, 64)
MMA_PACKED(mma_m16n8k64_s32_u4_u4_s32, "mma.sync.aligned.m16n8k64.row.col.s32.u4.u4.s32", 4, 64)
MMA_PACKED(mma_m16n8k256_s32_b1_b1_s32_and_popc, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc", 1, 256)
MMA_PACKED(mma_m16n8k256_s32_b1_b1_s32_xor_popc, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc", 1, 256)
