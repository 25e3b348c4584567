// mma.sp::ordered_metadata kernels (2:4 structured sparsity; tf32 1:2). A arrives compressed,
// m x k/2 kept values row-major, and M holds one index (0..3) per kept value: its position in
// its group of four along K (tf32: in units of 16 bits, two per tf32 value). The kernel packs
// the indices into the metadata register: one nibble per group (first kept index in bits 1:0,
// second in bits 3:2), a lane's register covering four groups of rows g (bits 15:0) and g + 8
// (bits 31:16). Compressed A takes the dense A layout of the shape with half the K; B and C/D
// are dense.

#include "sparse_meta.cuh"

// tf32 (1:2): a group of four tf32 values along K is two hardware pairs; index 0 or 1 keeps a
// pair's first value (nibble 0b0100), 2 or 3 its second (0b1110) in the second pair. Lane h
// covers pairs 4h..4h+3 (the case's groups 2h, 2h+1).
static __device__ __forceinline__ uint32_t sp_meta_tf32(const uint8_t* M, int half, int row, int h) {
    uint32_t e = 0;
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 4; j++) {
            uint8_t idx = M[(row + 8 * r) * half + 4 * h + j];
            e |= (uint32_t)((idx & 1) ? 0xe : 0x4) << (16 * r + 4 * j);
        }
    return e;
}

// m16n8k32 16-bit: compressed A (16 x 16) in the m16n8k16 A layout; B element i of register r
// -> (8r + 2t + i, g); lanes t = 0, 1 supply the metadata (selector 0), lane t covering groups 4t..4t+3.
#define LOAD_SP_16x8x32                                                               \
    const uint16_t* a = A + tile * 256;                                               \
    const uint16_t* b = B + tile * 256;                                               \
    const uint8_t* meta = M + tile * 256;                                             \
    uint32_t ra[4], rb[4];                                                            \
    for (int r = 0; r < 4; r++) {                                                     \
        int i0 = 2 * r, i1 = 2 * r + 1;                                               \
        int row0 = g + 8 * ((i0 >> 1) & 1), col0 = 2 * t + (i0 & 1) + 8 * (i0 >= 4);  \
        int row1 = g + 8 * ((i1 >> 1) & 1), col1 = 2 * t + (i1 & 1) + 8 * (i1 >= 4);  \
        ra[r] = pack16(a[row0 * 16 + col0], a[row1 * 16 + col1]);                    \
        rb[r] = pack16(b[(8 * r + 2 * t) * 8 + g], b[(8 * r + 2 * t + 1) * 8 + g]);   \
    }                                                                                 \
    const uint32_t e = t < 2 ? sp_meta(meta, 16, g, 4 * t) : 0u;

#define MMA_SP_K32_F32(NAME, TYPE)                                                                 \
extern "C" __global__ void NAME(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles, const uint8_t* M) { \
    TILE_INDEX                                                                                     \
    LOAD_SP_16x8x32                                                                                \
    LOAD_C32                                                                                       \
    asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, 0;" \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rb[2]), "r"(rb[3]), \
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]), "r"(e));                       \
    STORE_D32                                                                                      \
}
MMA_SP_K32_F32(mma_sp_m16n8k32_f32_f16_f16_f32, "f16")
MMA_SP_K32_F32(mma_sp_m16n8k32_f32_bf16_bf16_f32, "bf16")

extern "C" __global__ void mma_sp_m16n8k32_f16_f16_f16_f16(const uint16_t* A, const uint16_t* B, const uint16_t* C, uint16_t* D, long ntiles, const uint8_t* M) {
    TILE_INDEX
    LOAD_SP_16x8x32
    LOAD_C16
    asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7,%8,%9}, {%10,%11}, %12, 0;"
                 : "=r"(rd[0]), "=r"(rd[1])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rb[2]), "r"(rb[3]),
                   "r"(rc[0]), "r"(rc[1]), "r"(e));
    STORE_D16
}

// m16n8k16 16-bit: compressed A (16 x 8) in the m16n8k8 A layout, B as dense m16n8k16; the lane
// t = 0 of each quad supplies all four groups of rows g and g + 8 (selector 0).
#define MMA_SP_K16_F32(NAME, TYPE)                                                                 \
extern "C" __global__ void NAME(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles, const uint8_t* M) { \
    TILE_INDEX                                                                                     \
    const uint16_t* a = A + tile * 128;                                                            \
    const uint16_t* b = B + tile * 128;                                                            \
    uint32_t ra[2], rb[2];                                                                         \
    for (int r = 0; r < 2; r++) {                                                                  \
        ra[r] = pack16(a[(g + 8 * r) * 8 + 2 * t], a[(g + 8 * r) * 8 + 2 * t + 1]);                \
        rb[r] = pack16(b[(8 * r + 2 * t) * 8 + g], b[(8 * r + 2 * t + 1) * 8 + g]);                \
    }                                                                                              \
    const uint32_t e = t == 0 ? sp_meta(M + tile * 128, 8, g, 0) : 0u;                             \
    LOAD_C32                                                                                       \
    asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, {%4,%5}, {%6,%7}, {%8,%9,%10,%11}, %12, 0;" \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rb[1]),                                 \
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]), "r"(e));                       \
    STORE_D32                                                                                      \
}
MMA_SP_K16_F32(mma_sp_m16n8k16_f32_f16_f16_f32, "f16")
MMA_SP_K16_F32(mma_sp_m16n8k16_f32_bf16_bf16_f32, "bf16")

// m16n8k16 tf32 (1:2): compressed A (16 x 8) in the m16n8k8 tf32 A layout, B element i -> (t + 4i, g).
extern "C" __global__ void mma_sp_m16n8k16_f32_tf32_tf32_f32(const uint32_t* A, const uint32_t* B, const uint32_t* C, uint32_t* D, long ntiles, const uint8_t* M) {
    TILE_INDEX
    const uint32_t* a = A + tile * 128;
    const uint32_t* b = B + tile * 128;
    uint32_t ra[4], rb[4];
    for (int i = 0; i < 4; i++) {
        ra[i] = a[(g + 8 * (i & 1)) * 8 + t + 4 * (i >= 2)];
        rb[i] = b[(t + 4 * i) * 8 + g];
    }
    const uint32_t e = t < 2 ? sp_meta_tf32(M + tile * 128, 8, g, t) : 0u;
    LOAD_C32
    asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, 0;"
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rb[2]), "r"(rb[3]),
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]), "r"(e));
    STORE_D32
}

// m16n8k64 fp8: compressed A (16 x 32 bytes) in the m16n8k32 fp8 A layout; B byte q of register
// r -> (16r + 4t + q, g); every lane supplies metadata (selector 0, sp_meta_fp8).
#define MMA_SP_FP8(NAME, TA, TB)                                                                   \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles, const uint8_t* M) { \
    TILE_INDEX                                                                                     \
    const uint8_t* a = A + tile * 512;                                                             \
    const uint8_t* b = B + tile * 512;                                                             \
    uint32_t ra[4] = {0, 0, 0, 0}, rb[4] = {0, 0, 0, 0};                                           \
    for (int i = 0; i < 16; i++) {                                                                 \
        int row = g + 8 * ((i >> 2) & 1), col = 4 * t + (i & 3) + 16 * (i >= 8);                   \
        ra[i >> 2] |= (uint32_t)a[row * 32 + col] << (8 * (i & 3));                               \
        rb[i >> 2] |= (uint32_t)b[(16 * (i >> 2) + 4 * t + (i & 3)) * 8 + g] << (8 * (i & 3));    \
    }                                                                                              \
    const uint32_t e = sp_meta_fp8(M + tile * 512, g, t);                                          \
    LOAD_C32                                                                                       \
    asm volatile("mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32." TA "." TB ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, 0;" \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rb[2]), "r"(rb[3]), \
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]), "r"(e));                       \
    STORE_D32                                                                                      \
}
MMA_SP_FP8(mma_sp_m16n8k64_f32_e4m3_e4m3_f32, "e4m3", "e4m3")
MMA_SP_FP8(mma_sp_m16n8k64_f32_e5m2_e5m2_f32, "e5m2", "e5m2")
MMA_SP_FP8(mma_sp_m16n8k64_f32_e4m3_e5m2_f32, "e4m3", "e5m2")
