// Forms of wgmma.m64n8k16 (and k32 FP8) beyond the plain one: A from shared memory, transposed
// (MN-major) operands, scale-d = 0, negated operands (imm-scale = -1), and chains of four wgmma
// over K with the accumulator kept in registers. Same signature and tile layout as the plain
// kernels in wgmma.cu (one warpgroup per tile, raw bits, row-major logical matrices), so each
// case still reads D = A.B + C:
//  - neg_a / neg_b: the kernel loads the negation of the case's A (B) and the instruction
//    negates it back (imm-scale-a/b = -1), so the case's A (B) is the factor of the product;
//  - scale_d0: the accumulator registers hold NaN when the instruction runs with scale-d = 0,
//    which must ignore them; the case's C is +0 (D = A.B, as the GPU gives it: a row of -0
//    products comes out +0, as from an accumulator started at +0).

static __device__ __forceinline__ uint64_t descriptor(const void* smem, uint32_t lbo, uint32_t sbo) {
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(smem);
    return (uint64_t)((addr >> 4) & 0x3fff) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}

// A (64 x 16, 16-bit) K-major: core matrices of 8 rows (m) x 16 bytes (8 k), 128 bytes apart
// along k (LBO) and 256 bytes apart along m (SBO).
static __device__ __forceinline__ void stage_a_kmajor(uint16_t* sa, const uint16_t* a) {
    for (int idx = threadIdx.x; idx < 64 * 16; idx += blockDim.x) {
        int m = idx / 16, kk = idx % 16;
        sa[((m / 8) * 256 + (kk / 8) * 128 + (m % 8) * 16) / 2 + kk % 8] = a[m * 16 + kk];
    }
}

// A (64 x 16, 16-bit) M-major: core matrices of 8 rows (k) x 16 bytes (8 m), 128 bytes apart
// along k and 256 bytes apart along m.
static __device__ __forceinline__ void stage_a_mmajor(uint16_t* sa, const uint16_t* a) {
    for (int idx = threadIdx.x; idx < 64 * 16; idx += blockDim.x) {
        int m = idx / 16, kk = idx % 16;
        sa[((m / 8) * 256 + (kk / 8) * 128 + (kk % 8) * 16) / 2 + m % 8] = a[m * 16 + kk];
    }
}

// B (16 x 8, 16-bit) N-major: two core matrices of 8 rows (k) x 16 bytes (the 8 n), 128 bytes
// apart along k. N = 8 is one core matrix wide, so only the k stride is read (LBO = SBO = 128).
static __device__ __forceinline__ void stage_b_nmajor(uint16_t* sb, const uint16_t* b) {
    for (int idx = threadIdx.x; idx < 16 * 8; idx += blockDim.x) {
        int kk = idx / 8, n = idx % 8;
        sb[((kk / 8) * 128 + (kk % 8) * 16) / 2 + n] = b[kk * 8 + n];
    }
}

static __device__ __forceinline__ void smem_ready() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
}

#define WG_F32_OUT "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])

// A from registers, f32 accumulator; SCALES is "scale-d, imm-scale-a, imm-scale-b, imm-trans-b"
// and FLIP_A / FLIP_B the sign bits XORed into the loaded operands.
#define WGMMA_REG_FORM(NAME, TYPE, SCALES, FLIP_A, FLIP_B)                                       \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    __shared__ __align__(128) uint16_t sb[16 * 8];                                              \
    __shared__ uint16_t tb[16 * 8];                                                             \
    WG_INDEX                                                                                    \
    for (int i = threadIdx.x; i < 16 * 8; i += blockDim.x) tb[i] = B[tile * 16 * 8 + i] ^ (FLIP_B); \
    __syncthreads();                                                                            \
    stage_b(sb, tb, 16);                                                                        \
    LOAD_A16                                                                                    \
    for (int r = 0; r < 4; r++) ra[r] ^= (uint32_t)(FLIP_A) * 0x10001u;                         \
    LOAD_C32                                                                                    \
    uint64_t desc = b_descriptor(sb);                                                           \
    WG_BEGIN                                                                                    \
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32." TYPE "." TYPE " {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, " SCALES ";" \
                 : WG_F32_OUT : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory"); \
    WG_END                                                                                      \
    STORE_D32                                                                                   \
}
WGMMA_REG_FORM(wgmma_m64n8k16_f32_f16_f16_neg_a, "f16", "1, -1, 1, 0", 0x8000, 0)
WGMMA_REG_FORM(wgmma_m64n8k16_f32_f16_f16_neg_b, "f16", "1, 1, -1, 0", 0, 0x8000)

// B N-major (imm-trans-b = 1), A from registers.
#define WGMMA_TRANS_B(NAME, TYPE)                                                               \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    __shared__ __align__(128) uint16_t sb[16 * 8];                                              \
    WG_INDEX                                                                                    \
    stage_b_nmajor(sb, B + tile * 16 * 8);                                                      \
    smem_ready();                                                                               \
    LOAD_A16                                                                                    \
    LOAD_C32                                                                                    \
    uint64_t desc = descriptor(sb, 128, 128);                                                   \
    WG_BEGIN                                                                                    \
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32." TYPE "." TYPE " {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, 1, 1, 1, 1;" \
                 : WG_F32_OUT : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc) : "memory"); \
    WG_END                                                                                      \
    STORE_D32                                                                                   \
}
WGMMA_TRANS_B(wgmma_m64n8k16_f32_f16_f16_trans_b, "f16")
WGMMA_TRANS_B(wgmma_m64n8k16_f32_bf16_bf16_trans_b, "bf16")

// A from shared memory: K-major (imm-trans-a = 0) with B K-major, or M-major with B N-major
// (both transposed). LBO_A / SBO_A: the descriptor's strides for A.
#define WGMMA_SMEM_A(NAME, TYPE, STAGE_A, STAGE_B, LBO_A, SBO_A, TRANS)                          \
extern "C" __global__ void __launch_bounds__(128) NAME(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    __shared__ __align__(128) uint16_t sa[64 * 16];                                             \
    __shared__ __align__(128) uint16_t sb[16 * 8];                                              \
    WG_INDEX                                                                                    \
    STAGE_A(sa, A + tile * 64 * 16);                                                            \
    STAGE_B;                                                                                    \
    smem_ready();                                                                               \
    LOAD_C32                                                                                    \
    uint64_t da = descriptor(sa, LBO_A, SBO_A), db = descriptor(sb, 128, TRANS ? 128 : 256);    \
    WG_BEGIN                                                                                    \
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32." TYPE "." TYPE " {%0,%1,%2,%3}, %4, %5, 1, 1, 1, %6, %6;" \
                 : WG_F32_OUT : "l"(da), "l"(db), "n"(TRANS) : "memory");                      \
    WG_END                                                                                      \
    STORE_D32                                                                                   \
}
#define KMAJOR_B for (int idx = threadIdx.x; idx < 16 * 8; idx += blockDim.x) { int kk = idx / 8, n = idx % 8; sb[((kk / 8) * 128 + n * 16) / 2 + kk % 8] = B[tile * 16 * 8 + kk * 8 + n]; }
#define NMAJOR_B stage_b_nmajor(sb, B + tile * 16 * 8)
WGMMA_SMEM_A(wgmma_m64n8k16_f32_f16_f16_smem_a, "f16", stage_a_kmajor, KMAJOR_B, 128, 256, 0)
// M-major A: for the interleaved (no-swizzle) MN-major layout the leading byte offset steps
// along k and the stride byte offset along m; gpu-check on an H100 rejected the swapped reading.
WGMMA_SMEM_A(wgmma_m64n8k16_f32_f16_f16_trans_ab, "f16", stage_a_mmajor, NMAJOR_B, 128, 256, 1)
WGMMA_SMEM_A(wgmma_m64n8k16_f32_bf16_bf16_trans_ab, "bf16", stage_a_mmajor, NMAJOR_B, 128, 256, 1)

// scale-d = 0: D = A.B; the accumulator registers hold NaN, which the instruction must ignore.
extern "C" __global__ void __launch_bounds__(128) wgmma_m64n8k16_f32_f16_f16_scale_d0(const uint16_t* A, const uint16_t* B, const uint32_t* C, uint32_t* D, long ntiles) {
    __shared__ __align__(128) uint16_t sb[16 * 8];
    WG_INDEX
    stage_b(sb, B + tile * 16 * 8, 16);
    LOAD_A16
    float acc[4];
    for (int i = 0; i < 4; i++) acc[i] = __uint_as_float(0x7fffffffu);
    (void)C;
    uint64_t desc = b_descriptor(sb);
    int scale_d = 0;
    WG_BEGIN
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}"
                 : WG_F32_OUT : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "l"(desc), "r"(scale_d) : "memory");
    WG_END
    STORE_D32
}

// Chains: four wgmma over K (k = 64 for 16-bit, 128 for FP8) issued back to back on the same
// accumulator registers, one commit group. B is staged K-major for the whole K; step s starts
// 256 bytes (two core matrices along k) further.
// 16-bit A of step s: element i -> (16w + g + 8*((i>>1)&1), 16s + 2t + (i&1) + 8*(i>=4)).
#define LOAD_A16_STEP(KT, S)                                                                    \
    for (int r = 0; r < 4; r++) {                                                               \
        int i0 = 2 * r, i1 = 2 * r + 1;                                                         \
        int row = 16 * w + g + 8 * ((i0 >> 1) & 1);                                             \
        int c0 = 16 * (S) + 2 * t + (i0 & 1) + 8 * (i0 >= 4), c1 = 16 * (S) + 2 * t + (i1 & 1) + 8 * (i1 >= 4); \
        ra[S][r] = pack16(a[row * (KT) + c0], a[row * (KT) + c1]);                              \
    }
// FP8 A of step s: element i -> (16w + g + 8*((i>>2)&1), 32s + 4t + (i&3) + 16*(i>=8)).
#define LOAD_A8_STEP(KT, S)                                                                     \
    for (int i = 0; i < 16; i++) {                                                              \
        int row = 16 * w + g + 8 * ((i >> 2) & 1), col = 32 * (S) + 4 * t + (i & 3) + 16 * (i >= 8); \
        ra[S][i >> 2] |= (uint32_t)a[row * (KT) + col] << (8 * (i & 3));                       \
    }

#define WGMMA_CHAIN_F32(NAME, ELEM, KT, INSTR, SCALES, LOAD_STEP)                                       \
extern "C" __global__ void __launch_bounds__(128) NAME(const ELEM* A, const ELEM* B, const uint32_t* C, uint32_t* D, long ntiles) { \
    __shared__ __align__(128) ELEM sb[(KT) * 8];                                                \
    WG_INDEX                                                                                    \
    stage_b(sb, B + tile * (KT) * 8, KT);                                                       \
    const ELEM* a = A + tile * 64 * (KT);                                                       \
    uint32_t ra[4][4] = {};                                                                     \
    _Pragma("unroll") for (int s = 0; s < 4; s++) { LOAD_STEP(KT, s) }                          \
    LOAD_C32                                                                                    \
    WG_BEGIN                                                                                    \
    _Pragma("unroll") for (int s = 0; s < 4; s++) {                                             \
        uint64_t desc = b_descriptor((const char*)sb + 256 * s);                                \
        asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, " SCALES ";"                        \
                     : WG_F32_OUT : "r"(ra[s][0]), "r"(ra[s][1]), "r"(ra[s][2]), "r"(ra[s][3]), "l"(desc) : "memory"); \
    }                                                                                           \
    WG_END                                                                                      \
    STORE_D32                                                                                   \
}
WGMMA_CHAIN_F32(wgmma_m64n8k16_f32_f16_f16_chain4, uint16_t, 64, "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16", "1, 1, 1, 0", LOAD_A16_STEP)
WGMMA_CHAIN_F32(wgmma_m64n8k16_f32_bf16_bf16_chain4, uint16_t, 64, "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16", "1, 1, 1, 0", LOAD_A16_STEP)
WGMMA_CHAIN_F32(wgmma_m64n8k32_f32_e4m3_e4m3_chain4, uint8_t, 128, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3", "1, 1, 1", LOAD_A8_STEP)

// The f16 accumulator chained: two f16x2 registers, rounded to f16 between the four steps.
extern "C" __global__ void __launch_bounds__(128) wgmma_m64n8k16_f16_f16_f16_chain4(const uint16_t* A, const uint16_t* B, const uint16_t* C, uint16_t* D, long ntiles) {
    __shared__ __align__(128) uint16_t sb[64 * 8];
    WG_INDEX
    stage_b(sb, B + tile * 64 * 8, 64);
    const uint16_t* a = A + tile * 64 * 64;
    uint32_t ra[4][4] = {};
#pragma unroll
    for (int s = 0; s < 4; s++) { LOAD_A16_STEP(64, s) }
    LOAD_C16
    WG_BEGIN
#pragma unroll
    for (int s = 0; s < 4; s++) {
        uint64_t desc = b_descriptor((const char*)sb + 256 * s);
        asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, %6, 1, 1, 1, 0;"
                     : "+r"(acc[0]), "+r"(acc[1]) : "r"(ra[s][0]), "r"(ra[s][1]), "r"(ra[s][2]), "r"(ra[s][3]), "l"(desc) : "memory");
    }
    WG_END
    STORE_D16
}
