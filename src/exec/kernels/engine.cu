// The GPU hunt engine (`mmafuzz hunt --engine gpu`): tiles generated on the GPU, run through the
// instruction, computed again under a model, and compared, all in one kernel; only counters and
// the numbers of divergent tiles leave the GPU. `--engine gpu-tiles` uses the generator and the
// instruction alone (`engine_run_*`) and brings every tile and its D back for a CPU model.
//
// Three things here have twins in Rust that must stay bit-identical:
//  - the tile generator (src/engine/gen.rs): counter-based (tile i of seed s is a pure function
//    of (s, i)), integer arithmetic only;
//  - the model (src/engine/model.rs lists the knobs; src/model/emulator.rs is the specification):
//    one chain of fused blocks, terms aligned to the block's largest exponent in a window of
//    p + extra bits (truncating, flooring or sticky), an exact integer sum, one rounding into
//    the accumulator; exact products, C fused into the first block;
//  - the m16n8k16 fragment layouts (src/exec/kernels/mma_sync.cu).
// Regenerate the PTX with scripts/build-ptx.sh.
#include <stdint.h>

typedef unsigned long long u64;

// ---- The knobs the engine runs (src/engine/model.rs, EngineModel: same fields, same order) ----
struct EngineModel {
    int32_t window_p;      // significant bits of the window above the extra bits
    int32_t extra_bits;
    int32_t mode;          // 0 truncate, 1 floor (toward -inf), 2 sticky
    int32_t field_sum;     // 1: align by the sum of exponent fields, 0: by each term's leading bit
    int32_t has_floor;     // 1: the anchor never falls below `anchor_floor`
    int32_t anchor_floor;
    int32_t carry_bits;    // -1: unbounded; else the sum keeps window + carry_bits bits
    int32_t block_width;   // products per fused block (divides K)
    int32_t reverse;       // 1: blocks visited last to first
    int32_t acc_fmt;       // format codes: 0 f16, 1 bf16, 2 f32
    int32_t acc_rnd;       // 0 rne, 1 rz, 2 ru, 3 rd, 4 rna, 5 ra
    int32_t acc_ovf;       // 0 ieee, 1 saturate, 2 infinity
    int32_t acc_flush;     // subnormal accumulator values read as zero
    int32_t in_flush;      // subnormal A/B read as zero
    int32_t c_flush;       // subnormal C read as zero
    int32_t out_rnd;
    int32_t out_ovf;
    int32_t out_flush;
    int32_t nan_all_ones;  // 1: NaN output has every fraction bit set; 0: canonical quiet NaN
    int32_t zero_sign;     // 0 ieee, 1 always +0, 2 unsigned (-0 written as +0)
};

// ---- Formats: (exponent bits, fraction bits); every format here has infinities ----
__device__ __forceinline__ int fmt_eb(int f) { return f == 0 ? 5 : 8; }
__device__ __forceinline__ int fmt_mb(int f) { return f == 0 ? 10 : (f == 1 ? 7 : 23); }

enum { ZERO = 0, FINITE = 1, INF = 2, NAN_ = 3 };

struct Op {
    int cls;
    bool neg;
    uint32_t sig;
    int lsb;    // exponent of the significand's last bit
    int field;  // exponent of the hidden-bit position (subnormals: emin)
};

__device__ __forceinline__ Op decode(int f, uint32_t bits, bool flush) {
    const int eb = fmt_eb(f), mb = fmt_mb(f);
    const int bias = (1 << (eb - 1)) - 1;
    Op o;
    o.neg = (bits >> (eb + mb)) & 1;
    const uint32_t e = (bits >> mb) & ((1u << eb) - 1);
    const uint32_t m = bits & ((1u << mb) - 1);
    o.sig = 0; o.lsb = 0; o.field = 0;
    if (e == (1u << eb) - 1) {
        o.cls = m ? NAN_ : INF;
    } else if (e == 0) {
        if (m == 0 || flush) {
            o.cls = ZERO;
        } else {
            o.cls = FINITE; o.sig = m; o.field = 1 - bias; o.lsb = o.field - mb;
        }
    } else {
        o.cls = FINITE; o.sig = m | (1u << mb); o.field = (int)e - bias; o.lsb = o.field - mb;
    }
    return o;
}

__device__ __forceinline__ uint32_t zero_bits(int f, bool neg) { return neg ? 1u << (fmt_eb(f) + fmt_mb(f)) : 0u; }
__device__ __forceinline__ uint32_t inf_bits(int f, bool neg) { return zero_bits(f, neg) | (((1u << fmt_eb(f)) - 1) << fmt_mb(f)); }
__device__ __forceinline__ uint32_t max_bits(int f, bool neg) { return zero_bits(f, neg) | ((((1u << fmt_eb(f)) - 2) << fmt_mb(f)) | ((1u << fmt_mb(f)) - 1)); }

// sig · 2^q, already on the format's grid (sig < 2^p).
__device__ __forceinline__ uint32_t pack(int f, bool neg, uint64_t sig, int q) {
    const int eb = fmt_eb(f), mb = fmt_mb(f);
    const int bias = (1 << (eb - 1)) - 1;
    uint32_t biased, frac;
    if ((sig >> mb) == 0) { biased = 0; frac = (uint32_t)sig; }
    else { biased = (uint32_t)(q + mb + bias); frac = (uint32_t)sig & ((1u << mb) - 1); }
    return zero_bits(f, neg) | (biased << mb) | frac;
}

// Whether rounding moves away from zero. vs: -1 below half, 0 exactly half, 1 above.
__device__ __forceinline__ bool rounds_away(int rnd, bool neg, bool odd, int vs, bool inexact) {
    switch (rnd) {
        case 0: return vs > 0 || (vs == 0 && odd);
        case 1: return false;
        case 2: return inexact && !neg;
        case 3: return inexact && neg;
        case 4: return vs >= 0;
        default: return inexact;
    }
}

__device__ __forceinline__ uint32_t overflow_bits(int f, bool neg, int rnd, int ovf) {
    bool to_inf = rnd == 0 || rnd == 4 || rnd == 5 || (rnd == 2 && !neg) || (rnd == 3 && neg);
    if (ovf == 2 || (to_inf && ovf == 0)) return inf_bits(f, neg);
    return max_bits(f, neg);
}

// (-1)^neg · mag · 2^exp rounded into format f (Format::round with no sticky bit).
__device__ uint32_t round_into(int f, bool neg, uint64_t mag, int exp, int rnd, int ovf) {
    const int eb = fmt_eb(f), mb = fmt_mb(f), p = mb + 1;
    const int bias = (1 << (eb - 1)) - 1;
    if (mag == 0) return zero_bits(f, neg);
    const int len = 64 - __clzll(mag);
    const int lead = exp + len - 1;
    const int min_lsb = 1 - bias - mb;
    int q = max(lead - p + 1, min_lsb);
    const long shift = (long)q - exp;
    uint64_t kept;
    int vs;
    bool inexact;
    if (shift <= 0) {
        kept = mag << (-shift); vs = -1; inexact = false;
    } else if (shift >= 64) {
        kept = 0; inexact = true;
        vs = (shift == 64 && (mag >> 63)) ? (mag == (1ull << 63) ? 0 : 1) : -1;
    } else {
        const uint64_t rem = mag & ((1ull << shift) - 1), half = 1ull << (shift - 1);
        vs = rem < half ? -1 : (rem == half ? 0 : 1);
        kept = mag >> shift; inexact = rem != 0;
    }
    if (rounds_away(rnd, neg, kept & 1, vs, inexact)) {
        kept += 1;
        if ((kept >> p) == 1) { kept >>= 1; q += 1; }
    }
    if (kept == 0) return zero_bits(f, neg);
    const int top = q + (64 - __clzll(kept)) - 1;
    if (top > bias) return overflow_bits(f, neg, rnd, ovf);
    return pack(f, neg, kept, q);
}

// ---- The model: one element of D ----
// A row: arow[k * astride], B column: bcol[k * bstride]; A and B in format af, C's bits in cf.
__device__ uint32_t model_element(const EngineModel& M, int af, int cf, int K,
                                  const uint16_t* arow, int astride, const uint16_t* bcol, int bstride, uint32_t cbits) {
    const int accf = M.acc_fmt;
    Op run = decode(cf, cbits, M.c_flush);
    const int nblocks = K / M.block_width;
    for (int bi = 0; bi < nblocks; bi++) {
        const int blk = M.reverse ? nblocks - 1 - bi : bi;
        const int k0 = blk * M.block_width, k1 = k0 + M.block_width;
        bool nan = false, pinf = false, ninf = false;
        int pz = 0, nz = 0, nterms = 0;
        int emax = -0x40000000;
        // Pass 1: specials, zeros and the anchor (the running value is the block's first term).
        if (run.cls == FINITE) {
            nterms++;
            emax = M.field_sum ? run.field : run.lsb + 31 - __clz(run.sig);
        } else if (run.cls == ZERO) { if (run.neg) nz++; else pz++; }
        else if (run.cls == INF) { if (run.neg) ninf = true; else pinf = true; }
        else nan = true;
        for (int k = k0; k < k1; k++) {
            const Op a = decode(af, arow[k * astride], M.in_flush), b = decode(af, bcol[k * bstride], M.in_flush);
            const bool neg = a.neg ^ b.neg;
            if (a.cls == NAN_ || b.cls == NAN_) nan = true;
            else if ((a.cls == INF && b.cls == ZERO) || (a.cls == ZERO && b.cls == INF)) nan = true;
            else if (a.cls == INF || b.cls == INF) { if (neg) ninf = true; else pinf = true; }
            else if (a.cls == ZERO || b.cls == ZERO) { if (neg) nz++; else pz++; }
            else {
                nterms++;
                const uint64_t sig = (uint64_t)a.sig * b.sig;
                const int key = M.field_sum ? a.field + b.field : a.lsb + b.lsb + 63 - __clzll(sig);
                emax = max(emax, key);
            }
        }
        const int rnd = M.acc_rnd;
        if (nan || (pinf && ninf)) { run.cls = NAN_; run.neg = false; continue; }
        if (pinf || ninf) { run.cls = INF; run.neg = ninf; continue; }
        if (nterms == 0) {
            run.cls = ZERO;
            run.neg = M.zero_sign == 0 && (pz == 0 || (rnd == 3 && nz > 0));
            continue;
        }
        if (M.has_floor) emax = max(emax, M.anchor_floor);
        int grid = emax - (M.window_p - 1) - M.extra_bits;
        int window = M.window_p + M.extra_bits;
        if (M.mode == 2) { grid -= 1; window += 1; }
        // Pass 2: every term aligned to the grid and added as an integer.
        long long sum = 0;
        for (int k = k0 - 1; k < k1; k++) {
            bool neg;
            uint64_t sig;
            int lsb;
            if (k < k0) {
                if (run.cls != FINITE) continue;
                neg = run.neg; sig = run.sig; lsb = run.lsb;
            } else {
                const Op a = decode(af, arow[k * astride], M.in_flush), b = decode(af, bcol[k * bstride], M.in_flush);
                if (a.cls != FINITE || b.cls != FINITE) continue;
                neg = a.neg ^ b.neg; sig = (uint64_t)a.sig * b.sig; lsb = a.lsb + b.lsb;
            }
            const long shift = (long)grid - lsb;
            uint64_t kept;
            bool lost;
            if (shift <= 0) { kept = sig << (-shift); lost = false; }
            else if (shift >= 64) { kept = 0; lost = sig != 0; }
            else { kept = sig >> shift; lost = (sig & ((1ull << shift) - 1)) != 0; }
            if (M.mode == 2) kept |= lost;
            else if (M.mode == 1 && neg) kept += lost;
            sum += neg ? -(long long)kept : (long long)kept;
        }
        const bool sneg = sum < 0;
        uint64_t mag = sneg ? (uint64_t)(-sum) : (uint64_t)sum;
        if (M.carry_bits >= 0) {
            int width = min(max(window + M.carry_bits, 1), 63);
            mag &= (1ull << width) - 1;
        }
        if (mag == 0) {
            run.cls = ZERO;
            run.neg = M.zero_sign == 0 && rnd == 3;
            continue;
        }
        run = decode(accf, round_into(accf, sneg, mag, grid, rnd, M.acc_ovf), M.acc_flush);
    }
    // Into D's format.
    uint32_t bits;
    if (run.cls == NAN_) {
        const int mb = fmt_mb(cf);
        const uint32_t frac = M.nan_all_ones ? (1u << mb) - 1 : 1u << (mb - 1);
        return (((1u << fmt_eb(cf)) - 1) << mb) | frac;
    } else if (run.cls == INF) {
        bits = inf_bits(cf, run.neg);
    } else if (run.cls == ZERO) {
        bits = zero_bits(cf, run.neg);
    } else if (cf == accf) {
        bits = pack(cf, run.neg, run.sig, run.lsb);
    } else {
        bits = round_into(cf, run.neg, run.sig, run.lsb, M.out_rnd, M.out_ovf);
    }
    if (M.out_flush) {
        const uint32_t mag = bits & ~zero_bits(cf, true);
        if (mag != 0 && (mag >> fmt_mb(cf)) == 0) bits = zero_bits(cf, run.neg);
    }
    if (M.zero_sign == 2 && bits == zero_bits(cf, true)) bits = 0;
    return bits;
}

// ---- The generator (twin: src/engine/gen.rs) ----
__device__ __forceinline__ u64 mix(u64 x) {
    x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27; x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}
__device__ __forceinline__ u64 tile_key(u64 seed, u64 tile) { return mix((seed * 0x9E3779B97F4A7C15ull) ^ mix(tile ^ 0xD6E8FEB86659FD93ull)); }
__device__ __forceinline__ u64 slot_hash(u64 key, u64 slot) { return mix(key ^ ((slot + 1) * 0xD1B54A32D192ED03ull)); }

struct TileParams {
    int recipe, width, special, cstyle, kbig, gap, ca, cb;
};

__device__ __forceinline__ int clampi(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }

__device__ TileParams tile_params(u64 key, int inf, int cf) {
    const u64 p = slot_hash(key, 1000), q = slot_hash(key, 1001);
    const int widths[6] = {0, 1, 2, 4, 8, 16};
    const int specials[4] = {0, 0, 4, 32};
    TileParams t;
    t.recipe = (int)(p % 7);
    t.width = widths[(p >> 8) % 6];
    t.special = specials[(p >> 16) % 4];
    t.cstyle = (int)((p >> 24) % 8);
    t.kbig = (int)((p >> 32) % 16);
    t.gap = 6 + (int)((p >> 40) % 24);
    const int eb = fmt_eb(inf), mb = fmt_mb(inf), bias = (1 << (eb - 1)) - 1;
    const int lo = 1 - bias - mb, hi = bias;
    const int span = hi - lo + 1;
    t.ca = lo + (int)(q % (u64)span);
    t.cb = lo + (int)((q >> 20) % (u64)span);
    if (t.recipe == 4) {
        // Sums near the bottom of C's format (the window floor, subnormal results).
        const int cbias = (1 << (fmt_eb(cf) - 1)) - 1;
        const int target = (1 - cbias) + (int)((q >> 40) % 24) - 16;
        t.ca = clampi(target / 2 + (int)(q % 5) - 2, lo, hi);
        t.cb = clampi(target - t.ca, lo, hi);
    }
    return t;
}

// A value of format f with its leading bit at 2^e (below emin: the subnormal it shifts to,
// never zero).
__device__ __forceinline__ uint32_t encode(int f, bool neg, int e, uint32_t mant) {
    const int eb = fmt_eb(f), mb = fmt_mb(f), bias = (1 << (eb - 1)) - 1;
    int biased = e + bias;
    const uint32_t s = neg ? 1u << (eb + mb) : 0u;
    if (biased >= (1 << eb) - 1) biased = (1 << eb) - 2;
    if (biased >= 1) return s | ((uint32_t)biased << mb) | mant;
    const int shift = 1 - biased;
    uint32_t sig = shift > mb ? 0 : (((1u << mb) | mant) >> shift);
    return s | (sig == 0 ? 1u : sig);
}

// A special value when the tile's rate says so; returns 1 and sets *out.
__device__ __forceinline__ bool special_value(int f, u64 h, int rate, uint32_t* out) {
    if ((int)((h >> 48) & 0xff) >= rate) return false;
    const int eb = fmt_eb(f), mb = fmt_mb(f);
    const bool neg = h & 1;
    switch ((h >> 56) & 7) {
        case 0: *out = 0; break;
        case 1: *out = zero_bits(f, true); break;
        case 2: *out = inf_bits(f, false); break;
        case 3: *out = inf_bits(f, true); break;
        case 4: *out = (((1u << eb) - 1) << mb) | (1u << (mb - 1)); break;
        case 5: *out = max_bits(f, neg); break;
        case 6: *out = zero_bits(f, neg) | 1u; break;
        default: *out = zero_bits(f, neg) | (1u << mb); break;
    }
    return true;
}

__device__ __forceinline__ uint32_t banded(int f, int centre, int width, u64 h) {
    const int mb = fmt_mb(f);
    uint32_t mant = (uint32_t)(h >> 1) & ((1u << mb) - 1);
    if (((h >> 40) & 3) == 0) mant &= ~((1u << (mb / 2)) - 1);
    const int off = (int)((h >> 24) % (u64)(width + 1)) - width / 2;
    return encode(f, h & 1, centre + off, mant);
}

// A[r][k] and B[k][n] before the cancellation recipe pairs them up.
__device__ uint32_t gen_a_plain(u64 key, const TileParams& t, int inf, int r, int k) {
    const int mask_bits = 1 + fmt_eb(inf) + fmt_mb(inf);
    const u64 h = slot_hash(key, (u64)(r * 16 + k));
    if (t.recipe == 5) return (uint32_t)h & ((1u << mask_bits) - 1);
    uint32_t v;
    if (special_value(inf, h, t.special, &v)) return v;
    // Zero rows (one in four) and zero elements (one in four): products that vanish.
    if (t.recipe == 6 && ((slot_hash(key, (u64)(2000 + r)) & 3) == 0 || ((h >> 44) & 3) == 0)) return zero_bits(inf, h & 1);
    const int centre = (t.recipe == 2 && k != t.kbig) ? t.ca - t.gap : t.ca;
    return banded(inf, centre, t.width, h);
}

__device__ uint32_t gen_b_plain(u64 key, const TileParams& t, int inf, int k, int n) {
    const int mask_bits = 1 + fmt_eb(inf) + fmt_mb(inf);
    const u64 h = slot_hash(key, (u64)(256 + k * 8 + n));
    if (t.recipe == 5) return (uint32_t)h & ((1u << mask_bits) - 1);
    uint32_t v;
    if (special_value(inf, h, t.special, &v)) return v;
    if (t.recipe == 6 && ((slot_hash(key, (u64)(3000 + n)) & 3) == 0 || ((h >> 44) & 3) == 0)) return zero_bits(inf, h & 1);
    return banded(inf, t.cb, t.width, h);
}

// Cancellation: odd k repeats B's row k-1 and negates A's column k-1 (one tile in eight of
// those pairs with A's last bit flipped: a tiny remainder).
__device__ uint32_t gen_a(u64 key, const TileParams& t, int inf, int r, int k) {
    if (t.recipe != 3 || !(k & 1)) return gen_a_plain(key, t, inf, r, k);
    const int mask_bits = 1 + fmt_eb(inf) + fmt_mb(inf);
    const uint32_t v = gen_a_plain(key, t, inf, r, k - 1) ^ (1u << (mask_bits - 1));
    return (slot_hash(key, (u64)(r * 16 + k)) & 7) == 0 ? v ^ 1u : v;
}

__device__ uint32_t gen_b(u64 key, const TileParams& t, int inf, int k, int n) {
    return gen_b_plain(key, t, inf, (t.recipe == 3 && (k & 1)) ? k - 1 : k, n);
}

__device__ uint32_t gen_c(u64 key, const TileParams& t, int cf, int r, int n) {
    const int eb = fmt_eb(cf), mb = fmt_mb(cf), bias = (1 << (eb - 1)) - 1;
    const int bits = 1 + eb + mb;
    const u64 h = slot_hash(key, (u64)(384 + r * 8 + n));
    uint32_t v;
    if (special_value(cf, h, t.special, &v)) return v;
    const int scale = t.ca + t.cb;
    const int spread = (int)((h >> 24) % 30);
    switch (t.cstyle) {
        case 0: return zero_bits(cf, h & 1);
        case 2: return (uint32_t)h & (bits == 32 ? 0xffffffffu : ((1u << bits) - 1));
        case 3: return banded(cf, scale + 10 + spread, 0, h);
        case 4: return banded(cf, scale - 10 - spread, 0, h);
        case 5: return banded(cf, (1 - bias) - 1 - (int)((h >> 24) % (u64)mb), 0, h);
        case 7: return banded(cf, scale, 2, h);
        default: return banded(cf, scale, 8, h);
    }
}

// ---- Kernels: m16n8k16 with 16-bit A/B; one warp per tile, tiles strided over the grid ----
// Tile `i` of a launch is hunt-wide tile (first + i) * shard_n + shard_i.
struct Launch {
    u64 seed, first, count, shard_n, shard_i;
};

struct WarpTile {
    uint16_t a[256];
    uint16_t b[128];
    uint32_t c[128];
};

#define WARPS 8

// The tile's A, B, C into shared memory, the 32 lanes taking every 32nd element.
__device__ __forceinline__ void generate(WarpTile* w, u64 key, int inf, int cf, int lane) {
    const TileParams t = tile_params(key, inf, cf);
    for (int s = lane; s < 256; s += 32) w->a[s] = (uint16_t)gen_a(key, t, inf, s >> 4, s & 15);
    for (int s = lane; s < 128; s += 32) w->b[s] = (uint16_t)gen_b(key, t, inf, s >> 3, s & 7);
    for (int s = lane; s < 128; s += 32) w->c[s] = gen_c(key, t, cf, s >> 3, s & 7);
    __syncwarp();
}

#define CD_ROW(i) (g + 8 * ((i) >= 2))
#define CD_COL(i) (2 * t + ((i) & 1))

__device__ __forceinline__ uint32_t pack16(uint32_t lo, uint32_t hi) { return (lo & 0xffff) | (hi << 16); }

// D of this lane's four elements through the instruction; variant 0: f32.f16.f16.f32,
// 1: f32.bf16.bf16.f32, 2: f16.f16.f16.f16.
__device__ __forceinline__ void run_mma(int variant, const WarpTile* w, int g, int t, uint32_t d[4]) {
    uint32_t ra[4], rb[2];
    for (int r = 0; r < 4; r++) {
        const int i0 = 2 * r, i1 = 2 * r + 1;
        const int row0 = g + 8 * ((i0 >> 1) & 1), col0 = 2 * t + (i0 & 1) + 8 * (i0 >= 4);
        const int row1 = g + 8 * ((i1 >> 1) & 1), col1 = 2 * t + (i1 & 1) + 8 * (i1 >= 4);
        ra[r] = pack16(w->a[row0 * 16 + col0], w->a[row1 * 16 + col1]);
    }
    for (int r = 0; r < 2; r++) {
        const int i0 = 2 * r, i1 = 2 * r + 1;
        const int row0 = 2 * t + (i0 & 1) + 8 * (i0 >= 2), row1 = 2 * t + (i1 & 1) + 8 * (i1 >= 2);
        rb[r] = pack16(w->b[row0 * 8 + g], w->b[row1 * 8 + g]);
    }
    uint32_t rc[4];
    for (int i = 0; i < 4; i++) rc[i] = w->c[CD_ROW(i) * 8 + CD_COL(i)];
    if (variant == 0) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),
                       "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));
    } else if (variant == 1) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                     : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]),
                       "r"(rc[0]), "r"(rc[1]), "r"(rc[2]), "r"(rc[3]));
    } else {
        uint32_t rd[2];
        const uint32_t c01 = pack16(rc[0], rc[1]), c23 = pack16(rc[2], rc[3]);
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};"
                     : "=r"(rd[0]), "=r"(rd[1])
                     : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(c01), "r"(c23));
        d[0] = rd[0] & 0xffff; d[1] = rd[0] >> 16; d[2] = rd[1] & 0xffff; d[3] = rd[1] >> 16;
    }
}

__device__ __forceinline__ void variant_formats(int variant, int* inf, int* cf) {
    *inf = variant == 1 ? 1 : 0;
    *cf = variant == 2 ? 0 : 2;
}

// Every tile of a launch, one warp per tile: generated into shared memory and run through the
// instruction; then `after(i, tile, w, d)` sees the launch-relative index, the hunt-wide tile
// number, the tile and this lane's four elements of D (CD_ROW/CD_COL place them).
template <typename After>
__device__ __forceinline__ void each_run_tile(int variant, const Launch& L, After after) {
    __shared__ WarpTile tiles[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    int inf, cf;
    variant_formats(variant, &inf, &cf);
    WarpTile* w = &tiles[warp];
    const u64 warps = (u64)gridDim.x * WARPS;
    for (u64 i = (u64)blockIdx.x * WARPS + warp; i < L.count; i += warps) {
        const u64 tile = (L.first + i) * L.shard_n + L.shard_i;
        generate(w, tile_key(L.seed, tile), inf, cf, lane);
        uint32_t d[4];
        run_mma(variant, w, g, t, d);
        after(i, tile, w, d);
        __syncwarp();
    }
}

// counters[0]: divergent tiles, [1]: divergent elements, [2]: tile numbers written to `found`
// (up to `cap`; the rest only counted), [3]: the lowest divergent tile number (starts at ~0).
__device__ void hunt(int variant, EngineModel M, Launch L, u64* counters, u64* found, uint32_t cap) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    int inf, cf;
    variant_formats(variant, &inf, &cf);
    each_run_tile(variant, L, [&](u64, u64 tile, const WarpTile* w, const uint32_t* d) {
        int wrong = 0;
        for (int e = 0; e < 4; e++) {
            const int r = CD_ROW(e), c = CD_COL(e);
            const uint32_t m = model_element(M, inf, cf, 16, &w->a[r * 16], 1, &w->b[c], 8, w->c[r * 8 + c]);
            wrong += m != d[e];
        }
        const unsigned any = __ballot_sync(0xffffffffu, wrong != 0);
        if (wrong) atomicAdd(&counters[1], (u64)wrong);
        if (any && lane == 0) {
            atomicAdd(&counters[0], 1ull);
            const u64 slot = atomicAdd(&counters[2], 1ull);
            if (slot < cap) found[slot] = tile;
            atomicMin(&counters[3], tile);
        }
    });
}

// The generated tiles themselves (A, B, C bits, 256 + 128 + 128 per tile) and the model's D (128
// per tile): what the Rust twins are checked against.
__device__ void dump(int variant, EngineModel M, Launch L, uint32_t* out_tiles, uint32_t* out_d) {
    __shared__ WarpTile tiles[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int inf, cf;
    variant_formats(variant, &inf, &cf);
    WarpTile* w = &tiles[warp];
    const u64 warps = (u64)gridDim.x * WARPS;
    for (u64 i = (u64)blockIdx.x * WARPS + warp; i < L.count; i += warps) {
        const u64 tile = (L.first + i) * L.shard_n + L.shard_i;
        generate(w, tile_key(L.seed, tile), inf, cf, lane);
        uint32_t* o = out_tiles + i * 512;
        for (int s = lane; s < 256; s += 32) o[s] = w->a[s];
        for (int s = lane; s < 128; s += 32) o[256 + s] = w->b[s];
        for (int s = lane; s < 128; s += 32) o[384 + s] = w->c[s];
        for (int s = lane; s < 128; s += 32) {
            const int r = s >> 3, c = s & 7;
            out_d[i * 128 + s] = model_element(M, inf, cf, 16, &w->a[r * 16], 1, &w->b[c], 8, w->c[r * 8 + c]);
        }
        __syncwarp();
    }
}

// The model on given tiles (A, B, C bits as in `dump`): for the fuzz target that checks the
// CUDA model against the Rust emulator on any input.
__device__ void model_tiles(int variant, EngineModel M, const uint32_t* in_tiles, u64 count, uint32_t* out_d) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __shared__ WarpTile tiles[WARPS];
    int inf, cf;
    variant_formats(variant, &inf, &cf);
    WarpTile* w = &tiles[warp];
    const u64 warps = (u64)gridDim.x * WARPS;
    for (u64 i = (u64)blockIdx.x * WARPS + warp; i < count; i += warps) {
        const uint32_t* in = in_tiles + i * 512;
        for (int s = lane; s < 256; s += 32) w->a[s] = (uint16_t)in[s];
        for (int s = lane; s < 128; s += 32) w->b[s] = (uint16_t)in[256 + s];
        for (int s = lane; s < 128; s += 32) w->c[s] = in[384 + s];
        __syncwarp();
        for (int s = lane; s < 128; s += 32) {
            const int r = s >> 3, c = s & 7;
            out_d[i * 128 + s] = model_element(M, inf, cf, 16, &w->a[r * 16], 1, &w->b[c], 8, w->c[r * 8 + c]);
        }
        __syncwarp();
    }
}

// Words of one tile as the run kernel writes it: A's 256 and B's 128 16-bit values in pairs
// (element 2s in the low half of word s), then C (128 words), then the instruction's D (128
// words, row-major). Keep in step with RUN_WORDS in src/engine/tiles.rs.
#define RUN_WORDS 448

// Tiles generated and run through the instruction, written out with D for a model on the CPU
// (`hunt --engine gpu-tiles`): no model here, every element of D comes back.
__device__ void run_tiles(int variant, Launch L, uint32_t* out) {
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    each_run_tile(variant, L, [&](u64 i, u64, const WarpTile* w, const uint32_t* d) {
        uint32_t* o = out + i * RUN_WORDS;
        for (int s = lane; s < 128; s += 32) o[s] = pack16(w->a[2 * s], w->a[2 * s + 1]);
        for (int s = lane; s < 64; s += 32) o[128 + s] = pack16(w->b[2 * s], w->b[2 * s + 1]);
        for (int s = lane; s < 128; s += 32) o[192 + s] = w->c[s];
        for (int e = 0; e < 4; e++) o[320 + CD_ROW(e) * 8 + CD_COL(e)] = d[e];
    });
}

#define ENGINE_KERNELS(name, variant)                                                                              \
    extern "C" __global__ void __launch_bounds__(32 * WARPS) engine_hunt_##name(EngineModel M, Launch L, u64* counters, u64* found, uint32_t cap) { \
        hunt(variant, M, L, counters, found, cap);                                                                 \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(32 * WARPS) engine_dump_##name(EngineModel M, Launch L, uint32_t* out_tiles, uint32_t* out_d) { \
        dump(variant, M, L, out_tiles, out_d);                                                                     \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(32 * WARPS) engine_model_##name(EngineModel M, const uint32_t* in_tiles, u64 count, uint32_t* out_d) { \
        model_tiles(variant, M, in_tiles, count, out_d);                                                           \
    }                                                                                                              \
    extern "C" __global__ void __launch_bounds__(32 * WARPS) engine_run_##name(Launch L, uint32_t* out) {         \
        run_tiles(variant, L, out);                                                                                \
    }

ENGINE_KERNELS(m16n8k16_f32_f16_f16_f32, 0)
ENGINE_KERNELS(m16n8k16_f32_bf16_bf16_f32, 1)
ENGINE_KERNELS(m16n8k16_f16_f16_f16_f16, 2)
