// Packing 2:4 metadata into the registers mma.sp and wgmma.sp read (shared by mma_sp.cuh and
// wgmma_sp.cuh). M holds one index (0..3) per kept A value, row-major, `half` per row; a group's
// nibble has its first kept index in bits 1:0 and its second in bits 3:2.
#pragma once
#include <stdint.h>

// The metadata word for rows `row` and `row + 8`, groups gbase..gbase+3 (half: kept values per row).
static __device__ __forceinline__ uint32_t sp_meta(const uint8_t* M, int half, int row, int gbase) {
    uint32_t e = 0;
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 4; j++) {
            const uint8_t* p = M + (row + 8 * r) * half + 2 * (gbase + j);
            e |= (uint32_t)((p[0] & 3) | ((p[1] & 3) << 2)) << (16 * r + 4 * j);
        }
    return e;
}

// The fp8 m16n8k64 metadata word of lane t: eight groups of one row, row g + 8*(t & 1), groups
// 8*(t >> 1)..+7, group j of them in bits 4j..4j+3 (found on the H100: the 16-bit layout above,
// tried first, misreads every tile).
static __device__ __forceinline__ uint32_t sp_meta_fp8(const uint8_t* M, int row, int t) {
    uint32_t e = 0;
    const uint8_t* p = M + (row + 8 * (t & 1)) * 32 + 16 * (t >> 1);
    for (int j = 0; j < 8; j++) e |= (uint32_t)((p[2 * j] & 3) | ((p[2 * j + 1] & 3) << 2)) << (4 * j);
    return e;
}

