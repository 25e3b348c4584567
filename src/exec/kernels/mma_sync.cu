// mma.sync kernels, one per instruction path. Each warp runs one independent tile case of a
// batch: it loads its fragment from logical row-major A (m×k), B (k×n) and C (m×n) held as raw
// bit patterns, issues the instruction once, and stores D the same way. Fragment layouts are the
// PTX ISA's (verified on H100, ../shared/GPU.md): g = lane >> 2, t = lane & 3.
// Regenerate the PTX with scripts/build-ptx.sh; the driver loads the .ptx at run time.
#include <stdint.h>

#define TILE_INDEX                                                    \
    const int lane = threadIdx.x & 31;                                \
    const long tile = (long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); \
    if (tile >= ntiles) return;                                       \
    const int g = lane >> 2, t = lane & 3;

// C/D layout shared by every m16n8 shape: element i -> (g + 8*(i>=2), 2t + (i&1)).
#define CD_ROW(i) (g + 8 * ((i) >= 2))
#define CD_COL(i) (2 * t + ((i) & 1))

static __device__ __forceinline__ uint32_t pack16(uint16_t lo, uint16_t hi) {
    return (uint32_t)lo | ((uint32_t)hi << 16);
}

// m16n8k16 with 16-bit A/B: A element i -> (g + 8*(i&2 ? 1 : 0), 2t + (i&1) + 8*(i>=4)),
// B element i -> (2t + (i&1) + 8*(i>=2), g).
#define LOAD_AB_16x8x16                                                          \
    const uint16_t* a = A + tile * 256;                                          \
    const uint16_t* b = B + tile * 128;                                          \
    uint32_t ra[4], rb[2];                                                       \
    for (int r = 0; r < 4; r++) {                                                \
        int i0 = 2 * r, i1 = 2 * r + 1;                                          \
        int row0 = g + 8 * ((i0 >> 1) & 1), col0 = 2 * t + (i0 & 1) + 8 * (i0 >= 4); \
        int row1 = g + 8 * ((i1 >> 1) & 1), col1 = 2 * t + (i1 & 1) + 8 * (i1 >= 4); \
        ra[r] = pack16(a[row0 * 16 + col0], a[row1 * 16 + col1]);               \
    }                                                                            \
    for (int r = 0; r < 2; r++) {                                                \
        int i0 = 2 * r, i1 = 2 * r + 1;                                          \
        int row0 = 2 * t + (i0 & 1) + 8 * (i0 >= 2), row1 = 2 * t + (i1 & 1) + 8 * (i1 >= 2); \
        rb[r] = pack16(b[row0 * 8 + g], b[row1 * 8 + g]);                       \
    }

#define LOAD_C32                                                                 \
    const uint32_t* c = C + tile * 128;                                          \
    uint32_t rc[4], rd[4];                                                       \
    for (int i = 0; i < 4; i++) rc[i] = c[CD_ROW(i) * 8 + CD_COL(i)];

#define STORE_D32                                                                \
    uint32_t* d = D + tile * 128;                                                \
    for (int i = 0; i < 4; i++) d[CD_ROW(i) * 8 + CD_COL(i)] = rd[i];

extern "C" __global__ void mma_m16n8k16_f32_f16_f16_f32(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) {
    TILE_INDEX
    LOAD_AB_16x8x16
    LOAD_C32
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));
    STORE_D32
}

extern "C" __global__ void mma_m16n8k16_f32_bf16_bf16_f32(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) {
    TILE_INDEX
    LOAD_AB_16x8x16
    LOAD_C32
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));
    STORE_D32
}

// f16 C/D: the four elements packed two per register, element 0 in the low half.
extern "C" __global__ void mma_m16n8k16_f16_f16_f16_f16(const uint16_t* A, const uint16_t* B, const uint16_t* C, uint16_t* D, long ntiles) {
    TILE_INDEX
    LOAD_AB_16x8x16
    const uint16_t* c = C + tile * 128;
    uint32_t rc[2], rd[2];
    for (int r = 0; r < 2; r++)
        rc[r] = pack16(c[CD_ROW(2 * r) * 8 + CD_COL(2 * r)], c[CD_ROW(2 * r + 1) * 8 + CD_COL(2 * r + 1)]);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};"
                 : "=r"(rd[0]), "=r"(rd[1])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rc[0]), "r"(rc[1]));
    uint16_t* d = D + tile * 128;
    for (int r = 0; r < 2; r++) {
        d[CD_ROW(2 * r) * 8 + CD_COL(2 * r)] = (uint16_t)(rd[r] & 0xffff);
        d[CD_ROW(2 * r + 1) * 8 + CD_COL(2 * r + 1)] = (uint16_t)(rd[r] >> 16);
    }
}

// m16n8k8 tf32 (32-bit containers): A element i -> (g + 8*(i&1), t + 4*(i>=2)), B element i -> (t + 4i, g).
extern "C" __global__ void mma_m16n8k8_f32_tf32_tf32_f32(const uint32_t* A, const uint32_t* B, const uint32_t* C, uint32_t* D, long ntiles) {
    TILE_INDEX
    const uint32_t* a = A + tile * 128;
    const uint32_t* b = B + tile * 64;
    uint32_t ra[4], rb[2];
    for (int i = 0; i < 4; i++) ra[i] = a[(g + 8 * (i & 1)) * 8 + t + 4 * (i >= 2)];
    for (int i = 0; i < 2; i++) rb[i] = b[(t + 4 * i) * 8 + g];
    LOAD_C32
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));
    STORE_D32
}

// m16n8k32 fp8: A element i (16 bytes in 4 regs) -> (g + 8*((i>>2)&1), 4t + (i&3) + 16*(i>=8)),
// B element i (8 bytes in 2 regs) -> (4t + (i&3) + 16*(i>=4), g). Lower index in lower bits.
#define MMA_FP8(NAME, TYPE)                                                                        \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    const uint8_t* a = A + tile * 512;                                                             \
    const uint8_t* b = B + tile * 256;                                                             \
    uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};                                                 \
    for (int i = 0; i < 16; i++) {                                                                 \
        int row = g + 8 * ((i >> 2) & 1), col = 4 * t + (i & 3) + 16 * (i >= 8);                   \
        ra[i >> 2] |= (uint32_t)a[row * 32 + col] << (8 * (i & 3));                               \
    }                                                                                              \
    for (int i = 0; i < 8; i++) {                                                                  \
        int row = 4 * t + (i & 3) + 16 * (i >= 4);                                                 \
        rb[i >> 2] |= (uint32_t)b[row * 8 + g] << (8 * (i & 3));                                  \
    }                                                                                              \
    LOAD_C32                                                                                       \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};" \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),         \
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));                                \
    STORE_D32                                                                                      \
}
MMA_FP8(mma_m16n8k32_f32_e4m3_e4m3_f32, "e4m3")
MMA_FP8(mma_m16n8k32_f32_e5m2_e5m2_f32, "e5m2")

// m8n8k4 f64: A (g, t), B (t, g), C/D element i -> (g, 2t + i).
extern "C" __global__ void mma_m8n8k4_f64_f64_f64_f64(const uint64_t* A, const uint64_t* B, const uint64_t* C, uint64_t* D, long ntiles) {
    TILE_INDEX
    const uint64_t* a = A + tile * 32;
    const uint64_t* b = B + tile * 32;
    const uint64_t* c = C + tile * 64;
    uint64_t ra = a[g * 4 + t], rb = b[t * 8 + g], rc0 = c[g * 8 + 2 * t], rc1 = c[g * 8 + 2 * t + 1], rd0, rd1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};"
                 : "=l"(rd0), "=l"(rd1)
                 : "l"(ra), "l"(rb), "l"(rc0), "l"(rc1));
    uint64_t* d = D + tile * 64;
    d[g * 8 + 2 * t] = rd0;
    d[g * 8 + 2 * t + 1] = rd1;
}

// ---- The other mma.sync shapes of sm_90. Layouts from the PTX ISA, checked on the
// GPU by `mmafuzz gpu-check` (integer tiles of known exact result).

// m16n8k8 with 16-bit A/B: A element i (4 halves in 2 regs) -> (g + 8*(i>=2), 2t + (i&1)),
// B element i (2 halves in 1 reg) -> (2t + i, g).
#define LOAD_AB_16x8x8                                                           \
    const uint16_t* a = A + tile * 128;                                          \
    const uint16_t* b = B + tile * 64;                                           \
    uint32_t ra[2], rb[1];                                                       \
    for (int r = 0; r < 2; r++)                                                  \
        ra[r] = pack16(a[(g + 8 * r) * 8 + 2 * t], a[(g + 8 * r) * 8 + 2 * t + 1]); \
    rb[0] = pack16(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);

#define MMA_K8_16BIT_F32(NAME, TYPE)                                                               \
extern "C" __global__ void NAME(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    LOAD_AB_16x8x8                                                                                 \
    LOAD_C32                                                                                       \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};" \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3])); \
    STORE_D32                                                                                      \
}
MMA_K8_16BIT_F32(mma_m16n8k8_f32_f16_f16_f32, "f16")
MMA_K8_16BIT_F32(mma_m16n8k8_f32_bf16_bf16_f32, "bf16")

// f16 C/D packed two per register (element 0 low), as for m16n8k16.
#define LOAD_C16                                                                 \
    const uint16_t* c = C + tile * 128;                                          \
    uint32_t rc[2], rd[2];                                                       \
    for (int r = 0; r < 2; r++)                                                  \
        rc[r] = pack16(c[CD_ROW(2 * r) * 8 + CD_COL(2 * r)], c[CD_ROW(2 * r + 1) * 8 + CD_COL(2 * r + 1)]);

#define STORE_D16                                                                \
    uint16_t* d = D + tile * 128;                                                \
    for (int r = 0; r < 2; r++) {                                                \
        d[CD_ROW(2 * r) * 8 + CD_COL(2 * r)] = (uint16_t)(rd[r] & 0xffff);       \
        d[CD_ROW(2 * r + 1) * 8 + CD_COL(2 * r + 1)] = (uint16_t)(rd[r] >> 16);  \
    }

extern "C" __global__ void mma_m16n8k8_f16_f16_f16_f16(const uint16_t* A, const uint16_t* B, const uint16_t* C, uint16_t* D, long ntiles) {
    TILE_INDEX
    LOAD_AB_16x8x8
    LOAD_C16
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3}, {%4}, {%5,%6};"
                 : "=r"(rd[0]), "=r"(rd[1])
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rc[0]), "r"(rc[1]));
    STORE_D16
}

// m16n8k4 tf32: A element i -> (g + 8i, t), B element 0 -> (t, g).
extern "C" __global__ void mma_m16n8k4_f32_tf32_tf32_f32(const uint32_t* A, const uint32_t* B, const uint32_t* C, uint32_t* D, long ntiles) {
    TILE_INDEX
    const uint32_t* a = A + tile * 64;
    const uint32_t* b = B + tile * 32;
    uint32_t ra0 = a[g * 4 + t], ra1 = a[(g + 8) * 4 + t], rb0 = b[t * 8 + g];
    LOAD_C32
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])
                 : "r"(ra0), "r"(ra1), "r"(rb0), "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));
    STORE_D32
}

// m16n8kK f64 (K = 4, 8, 16): A element i -> (g + 8*(i&1), t + 4*(i>>1)), B element i ->
// (t + 4i, g), C/D as every m16n8 shape (four doubles).
#define F64_FRAGMENTS(K)                                                         \
    const uint64_t* a = A + tile * 16 * K;                                       \
    const uint64_t* b = B + tile * K * 8;                                        \
    const uint64_t* c = C + tile * 128;                                          \
    uint64_t ra[K / 2], rb[K / 4], rc[4], rd[4];                                 \
    for (int i = 0; i < K / 2; i++) ra[i] = a[(g + 8 * (i & 1)) * K + t + 4 * (i >> 1)]; \
    for (int i = 0; i < K / 4; i++) rb[i] = b[(t + 4 * i) * 8 + g];              \
    for (int i = 0; i < 4; i++) rc[i] = c[CD_ROW(i) * 8 + CD_COL(i)];

#define STORE_D64                                                                \
    uint64_t* d = D + tile * 128;                                                \
    for (int i = 0; i < 4; i++) d[CD_ROW(i) * 8 + CD_COL(i)] = rd[i];

extern "C" __global__ void mma_m16n8k4_f64_f64_f64_f64(const uint64_t* A, const uint64_t* B, const uint64_t* C, uint64_t* D, long ntiles) {
    TILE_INDEX
    F64_FRAGMENTS(4)
    asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                 : "=l"(rd[0]), "=l"(rd[1]), "=l"(rd[2]), "=l"(rd[3])
                 : "l"(ra[0]), "l"(ra[1]), "l"(rb[0]), "l"(rc[0]), "l"(rc[1]), "l"(rc[2]), "l"(rc[3]));
    STORE_D64
}

extern "C" __global__ void mma_m16n8k8_f64_f64_f64_f64(const uint64_t* A, const uint64_t* B, const uint64_t* C, uint64_t* D, long ntiles) {
    TILE_INDEX
    F64_FRAGMENTS(8)
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                 : "=l"(rd[0]), "=l"(rd[1]), "=l"(rd[2]), "=l"(rd[3])
                 : "l"(ra[0]), "l"(ra[1]), "l"(ra[2]), "l"(ra[3]), "l"(rb[0]), "l"(rb[1]),
                   "l"(rc[0]), "l"(rc[1]), "l"(rc[2]), "l"(rc[3]));
    STORE_D64
}

extern "C" __global__ void mma_m16n8k16_f64_f64_f64_f64(const uint64_t* A, const uint64_t* B, const uint64_t* C, uint64_t* D, long ntiles) {
    TILE_INDEX
    F64_FRAGMENTS(16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%16,%17,%18,%19};"
                 : "=l"(rd[0]), "=l"(rd[1]), "=l"(rd[2]), "=l"(rd[3])
                 : "l"(ra[0]), "l"(ra[1]), "l"(ra[2]), "l"(ra[3]), "l"(ra[4]), "l"(ra[5]), "l"(ra[6]), "l"(ra[7]),
                   "l"(rb[0]), "l"(rb[1]), "l"(rb[2]), "l"(rb[3]),
                   "l"(rc[0]), "l"(rc[1]), "l"(rc[2]), "l"(rc[3]));
    STORE_D64
}

// FP8 fragments. k32: as MMA_FP8 above. k16: A element i (8 bytes in 2 regs) ->
// (g + 8*(i>=4), 4t + (i&3)), B element i (4 bytes in 1 reg) -> (4t + i, g).
#define LOAD_FP8_K32                                                                               \
    const uint8_t* a = A + tile * 512;                                                             \
    const uint8_t* b = B + tile * 256;                                                             \
    uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};                                                 \
    for (int i = 0; i < 16; i++)                                                                   \
        ra[i >> 2] |= (uint32_t)a[(g + 8 * ((i >> 2) & 1)) * 32 + 4 * t + (i & 3) + 16 * (i >= 8)] << (8 * (i & 3)); \
    for (int i = 0; i < 8; i++)                                                                    \
        rb[i >> 2] |= (uint32_t)b[(4 * t + (i & 3) + 16 * (i >= 4)) * 8 + g] << (8 * (i & 3));

#define LOAD_FP8_K16                                                                               \
    const uint8_t* a = A + tile * 256;                                                             \
    const uint8_t* b = B + tile * 128;                                                             \
    uint32_t ra[2] = {0, 0}, rb[1] = {0};                                                          \
    for (int i = 0; i < 8; i++)                                                                    \
        ra[i >> 2] |= (uint32_t)a[(g + 8 * (i >= 4)) * 16 + 4 * t + (i & 3)] << (8 * (i & 3));     \
    for (int i = 0; i < 4; i++)                                                                    \
        rb[0] |= (uint32_t)b[(4 * t + i) * 8 + g] << (8 * i);

// FP8 into f16 (k32): D and C are f16, packed.
#define MMA_FP8_K32_F16(NAME, TYPE)                                                                \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint16_t* C, uint16_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    LOAD_FP8_K32                                                                                   \
    LOAD_C16                                                                                       \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f16." TYPE "." TYPE ".f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};" \
                 : "=r"(rd[0]), "=r"(rd[1])                                                        \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rc[0]), "r"(rc[1])); \
    STORE_D16                                                                                      \
}
MMA_FP8_K32_F16(mma_m16n8k32_f16_e4m3_e4m3_f16, "e4m3")
MMA_FP8_K32_F16(mma_m16n8k32_f16_e5m2_e5m2_f16, "e5m2")

#define MMA_FP8_K16_F32(NAME, TYPE)                                                                \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    LOAD_FP8_K16                                                                                   \
    LOAD_C32                                                                                       \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TYPE "." TYPE ".f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};" \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3])); \
    STORE_D32                                                                                      \
}
MMA_FP8_K16_F32(mma_m16n8k16_f32_e4m3_e4m3_f32, "e4m3")
MMA_FP8_K16_F32(mma_m16n8k16_f32_e5m2_e5m2_f32, "e5m2")

#define MMA_FP8_K16_F16(NAME, TYPE)                                                                \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint16_t* C, uint16_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    LOAD_FP8_K16                                                                                   \
    LOAD_C16                                                                                       \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16." TYPE "." TYPE ".f16 {%0,%1}, {%2,%3}, {%4}, {%5,%6};" \
                 : "=r"(rd[0]), "=r"(rd[1])                                                        \
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rc[0]), "r"(rc[1]));                    \
    STORE_D16                                                                                      \
}
MMA_FP8_K16_F16(mma_m16n8k16_f16_e4m3_e4m3_f16, "e4m3")
MMA_FP8_K16_F16(mma_m16n8k16_f16_e5m2_e5m2_f16, "e5m2")

// Mixed FP8 (A and B in different formats), k32 into f32: the fragments of the k32 FP8 shape.
#define MMA_FP8_MIXED(NAME, TA, TB)                                                                \
extern "C" __global__ void NAME(const uint8_t* A, const uint8_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    TILE_INDEX                                                                                     \
    LOAD_FP8_K32                                                                                   \
    LOAD_C32                                                                                       \
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TA "." TB ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};" \
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])                             \
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),         \
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));                                \
    STORE_D32                                                                                      \
}
MMA_FP8_MIXED(mma_m16n8k32_f32_e4m3_e5m2_f32, "e4m3", "e5m2")
MMA_FP8_MIXED(mma_m16n8k32_f32_e5m2_e4m3_f32, "e5m2", "e4m3")

// m8n8k4 with f16 A/B, the Volta quad-pair shape: each quad pair (lanes 4q..4q+3 and
// 4q+16..4q+19) multiplies its own 8x8x4 matrices. All four quad pairs of the warp load this
// tile and the first stores it. In a quad pair, r = lane % 4 + 4 * (lane >= 16) names A's row r
// (4 halves) and B's column r (4 halves); f16 C/D: row r, half i -> column i; f32 C/D: element i
// -> row (lane & 1) + (i & 2) + 4 * (lane >= 16), column (i & 4) + (lane & 2) + (i & 1).
#define LOAD_AB_8x8x4                                                                              \
    const int hi = lane >= 16 ? 4 : 0, r = (lane & 3) + hi;                                        \
    const uint16_t* a = A + tile * 32;                                                             \
    const uint16_t* b = B + tile * 32;                                                             \
    uint32_t ra[2] = {pack16(a[r * 4], a[r * 4 + 1]), pack16(a[r * 4 + 2], a[r * 4 + 3])};         \
    uint32_t rb[2] = {pack16(b[r], b[8 + r]), pack16(b[16 + r], b[24 + r])};
#define CD32_ROW_8x8x4(i) ((lane & 1) + ((i) & 2) + hi)
#define CD32_COL_8x8x4(i) (((i) & 4) + (lane & 2) + ((i) & 1))

extern "C" __global__ void mma_m8n8k4_f32_f16_f16_f32(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) {
    TILE_INDEX
    LOAD_AB_8x8x4
    const uint32_t* c = C + tile * 64;
    uint32_t rc[8], rd[8];
    for (int i = 0; i < 8; i++) rc[i] = c[CD32_ROW_8x8x4(i) * 8 + CD32_COL_8x8x4(i)];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9}, {%10,%11}, {%12,%13,%14,%15,%16,%17,%18,%19};"
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3]), "=r"(rd[4]), "=r"(rd[5]), "=r"(rd[6]), "=r"(rd[7])
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rb[1]),
                   "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]), "r"(rc[4]), "r"(rc[5]), "r"(rc[6]), "r"(rc[7]));
    if ((lane & 12) == 0) {
        uint32_t* d = D + tile * 64;
        for (int i = 0; i < 8; i++) d[CD32_ROW_8x8x4(i) * 8 + CD32_COL_8x8x4(i)] = rd[i];
    }
}

extern "C" __global__ void mma_m8n8k4_f16_f16_f16_f16(const uint16_t* A, const uint16_t* B, const uint16_t* C, uint16_t* D, long ntiles) {
    TILE_INDEX
    LOAD_AB_8x8x4
    const uint16_t* c = C + tile * 64;
    uint32_t rc[4], rd[4];
    for (int j = 0; j < 4; j++) rc[j] = pack16(c[r * 8 + 2 * j], c[r * 8 + 2 * j + 1]);
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f16.f16.f16.f16 {%0,%1,%2,%3}, {%4,%5}, {%6,%7}, {%8,%9,%10,%11};"
                 : "=r"(rd[0]), "=r"(rd[1]), "=r"(rd[2]), "=r"(rd[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb[0]), "r"(rb[1]), "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));
    if ((lane & 12) == 0) {
        uint16_t* d = D + tile * 64;
        for (int j = 0; j < 4; j++) {
            d[r * 8 + 2 * j] = (uint16_t)(rd[j] & 0xffff);
            d[r * 8 + 2 * j + 1] = (uint16_t)(rd[j] >> 16);
        }
    }
}

// Integer operands into s32 (s8/u8, s4/u4, b1).
#include "mma_int.cuh"
// Structured sparsity (2:4, tf32 1:2).
#include "mma_sp.cuh"
