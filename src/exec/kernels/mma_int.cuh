// Integer mma.sync (issue 12): s8/u8, s4/u4 and b1 operands into s32, with and without
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

// m16n8k64, 4-bit integers: 8 values per register. A element i -> (g + 8*((i>>3)&1),
// 8t + (i&7) + 32*(i>=16)), B element i -> (8t + (i&7) + 32*(i>=8), g).
#define MMA_INT4_K64(NAME, INSTR)                                                                  \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    const uint8_t* a = A + tile * 16 * 64;                                                         \
    const uint8_t* b = B + tile * 64 * 8;                                                          \
    uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};                                                 \
    for (int i = 0; i < 32; i++)                                                                   \
        ra[i >> 3] |= (uint32_t)(a[(g + 8 * ((i >> 3) & 1)) * 64 + 8 * t + (i & 7) + 32 * (i >= 16)] & 0xf) << (4 * (i & 7)); \
    for (int i = 0; i < 16; i++)                                                                   \
        rb[i >> 3] |= (uint32_t)(b[(8 * t + (i & 7) + 32 * (i >= 8)) * 8 + g] & 0xf) << (4 * (i & 7)); \
    LOAD_C32                                                                                       \
    MMA_INT_ASM(INSTR)                                                                             \
    STORE_D32                                                                                      \
}
MMA_INT4_K64(mma_m16n8k64_s32_s4_s4_s32, "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32")
MMA_INT4_K64(mma_m16n8k64_s32_s4_s4_s32_satfinite, "mma.sync.aligned.m16n8k64.row.col.satfinite.s32.s4.s4.s32")
MMA_INT4_K64(mma_m16n8k64_s32_u4_u4_s32, "mma.sync.aligned.m16n8k64.row.col.s32.u4.u4.s32")

// m16n8k256, single bits: 32 per register. A element i -> (g + 8*((i>>5)&1),
// 32t + (i&31) + 128*(i>=64)), B element i -> (32t + (i&31) + 128*(i>=32), g).
#define MMA_B1_K256(NAME, INSTR)                                                                   \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    const uint8_t* a = A + tile * 16 * 256;                                                        \
    const uint8_t* b = B + tile * 256 * 8;                                                         \
    uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};                                                 \
    for (int i = 0; i < 128; i++)                                                                  \
        ra[i >> 5] |= (uint32_t)(a[(g + 8 * ((i >> 5) & 1)) * 256 + 32 * t + (i & 31) + 128 * (i >= 64)] & 1) << (i & 31); \
    for (int i = 0; i < 64; i++)                                                                   \
        rb[i >> 5] |= (uint32_t)(b[(32 * t + (i & 31) + 128 * (i >= 32)) * 8 + g] & 1) << (i & 31); \
    LOAD_C32                                                                                       \
    MMA_INT_ASM(INSTR)                                                                             \
    STORE_D32                                                                                      \
}
MMA_B1_K256(mma_m16n8k256_s32_b1_b1_s32_and_popc, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc")
MMA_B1_K256(mma_m16n8k256_s32_b1_b1_s32_xor_popc, "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.xor.popc")
