#!/usr/bin/env python3
"""The shared matrix generator (mmafuzz's `src/library/libgen.rs` implements the same), in NumPy
and in PyTorch (on the GPU, for operands too large for NumPy).

    python3 scripts/libgen.py selftest     NumPy against PyTorch (CPU, and CUDA where there is
                                           one), uniform and special against torch-lib.py, and
                                           the values the Rust tests pin

Element i of operand X (0 = A m x k, 1 = B k x n, 2 = C m x n, row-major in the logical layout)
of seed s is drawn from r = splitmix64((s << 40) + (X << 36) + i), so a GEMM of any shape is
stored by reference. A style (a record's "values") says how r becomes a value:

  uniform  random sign, random significand, exponent 2^-4 .. 2^3 (torch-lib.py's `gen_bits`)
  special  uniform with specials planted into rows of A, columns of B and elements of C
  normal   (h0 + h1 + h2 + h3 - 131070) * 2^-15, h0..h3 the 16-bit fields of r (h0 the lowest),
           rounded to nearest even: Irwin-Hall values in (-4, 4) (+-4 itself once rounded)
  wide     random sign and significand, unbiased exponent ((r >> 40) mod (2W+1)) - W, W per
           format (WIDE) so that products and deep sums stay finite
  cancel   along K (A's columns, B's rows), half = K // 2: position half + j repeats position j,
           A's with the sign flipped, B's with the lowest significand bit flipped; for odd K the
           last position is uniform; C is uniform

Usage from another script (importable by path):

    spec = importlib.util.spec_from_file_location("libgen", "scripts/libgen.py")
    lib = importlib.util.module_from_spec(spec); spec.loader.exec_module(lib)
    bits = lib.operand_bits("float16", "normal", seed, 0, m, k)         # NumPy, storage order
    a = lib.torch_operand(torch, "float16", "normal", seed, 0, m, k)    # on the GPU, (m, k)

Both take `bt=True` for a B generated as its transpose (n x k row-major: element (kk, j) at
index j*k + kk, a record's "layout": "bt"); rows x cols is still the logical k x n, and the
result is in storage order (NumPy) or the stored n x k tensor (PyTorch).

Both implementations run one definition (`_bits`) over int64 arrays, whose arithmetic wraps
modulo 2^64 in NumPy and in PyTorch alike (right shifts are arithmetic, so logical ones are
masked); only the normal style's rounding differs: exact integer rounding in NumPy, PyTorch's
own float32 -> format conversion on the tensor. The values are exact in float32, so that is one
rounding to nearest even; PyTorch's float64 -> float16, bfloat16 and float8 conversions go
through float32 (two roundings: the self-check shows it), which these values never notice but
other float64 data would.
"""
import os, sys
import numpy as np

STYLES = ("uniform", "special", "normal", "wide", "cancel")

# format -> (storage bits, significand field bits, exponent bias); TF32 GEMMs read float32.
FMT = {"float16": (16, 10, 15), "bfloat16": (16, 7, 127), "float32": (32, 23, 127), "float64": (64, 52, 1023),
       "float8_e4m3fn": (8, 3, 7), "float8_e5m2": (8, 2, 15)}

# The wide style's exponent range +-W.
WIDE = {"float16": 5, "bfloat16": 60, "float32": 60, "float64": 500, "float8_e4m3fn": 3, "float8_e5m2": 6}

M64 = (1 << 64) - 1


def _s64(x):
    """A 64-bit pattern as the int64 that holds it."""
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def _srl(x, n):
    """Logical right shift of int64 bit patterns."""
    return (x >> n) & ((1 << (64 - n)) - 1)


def _splitmix64(x):
    x = x + _s64(0x9E3779B97F4A7C15)
    z = (x ^ _srl(x, 30)) * _s64(0xBF58476D1CE4E5B9)
    z = (z ^ _srl(z, 27)) * _s64(0x94D049BB133111EB)
    return z ^ _srl(z, 31)


def _key(seed, stream):
    """The key of element 0 of a stream: operands 0..2, line plants 4 (A) and 5 (B), C's plant 6."""
    return _s64((seed << 40) + (stream << 36))


def special_table(fmt):
    """+inf, -inf, NaN, +max, -max, +0, -0, +least subnormal, -least subnormal (e4m3fn has no
    infinity: its largest finite value stands in)."""
    width, mant, _ = FMT[fmt]
    sign = 1 << (width - 1)
    exp_all = ((1 << (width - 1 - mant)) - 1) << mant
    top = (exp_all - (1 << mant)) | ((1 << mant) - 1)
    inf, nan = exp_all, exp_all | (1 << (mant - 1))
    if fmt == "float8_e4m3fn":
        top, nan = 0x7E, 0x7F
        inf = top
    return [inf, inf | sign, nan, top, top | sign, 0, sign, 1, 1 | sign]


def _uniform(fmt, r):
    width, mant, bias = FMT[fmt]
    field = (bias - 4) + (_srl(r, 56) & 7)
    return (_srl(r, 63) << (width - 1)) | (field << mant) | (r & ((1 << mant) - 1))


def _wide(fmt, r):
    width, mant, bias = FMT[fmt]
    w = WIDE[fmt]
    field = (bias - w) + _srl(r, 40) % (2 * w + 1)
    return (_srl(r, 63) << (width - 1)) | (field << mant) | (r & ((1 << mant) - 1))


def _irwin_hall(r):
    """h0 + h1 + h2 + h3 - 131070: the normal style's value in units of 2^-15, |.| < 2^17."""
    return (r & 0xFFFF) + (_srl(r, 16) & 0xFFFF) + (_srl(r, 32) & 0xFFFF) + _srl(r, 48) - 131070


class _NumPy:
    """int64 arrays on the CPU."""

    def arange(self, a, b):
        return np.arange(a, b, dtype=np.int64)

    def vector(self, values):
        return np.array([_s64(v) for v in values], dtype=np.int64)

    where = staticmethod(np.where)

    def normal(self, fmt, units):
        """units * 2^-15 rounded to nearest even, as bit patterns: by integer arithmetic."""
        width, mant, bias = FMT[fmt]
        p = mant + 1
        neg = units < 0
        mag = np.abs(units)
        length = np.zeros_like(mag)
        for i in range(18):
            length += (mag >> i) > 0
        # The last place kept: p bits below the leading one, never below the least subnormal.
        q = np.maximum(length - 1 - 15 - p + 1, 1 - bias - mant)
        shift = q + 15
        up = np.maximum(shift, 0)
        kept = mag >> up
        rem = mag & ((np.int64(1) << up) - 1)
        half = (np.int64(1) << np.maximum(up - 1, 0))
        kept = kept + ((shift > 0) & ((rem > half) | ((rem == half) & ((kept & 1) == 1))))
        kept = np.where(shift < 0, mag << np.maximum(-shift, 0), kept)
        carry = kept >> p == 1
        kept, q = np.where(carry, kept >> 1, kept), np.where(carry, q + 1, q)
        field = np.where(kept >> mant > 0, q + mant + bias, 0)
        bits = (field << mant) | (kept & ((1 << mant) - 1))
        return np.where(neg, bits | _s64(1 << (width - 1)), bits)


class _Torch:
    """int64 tensors on a PyTorch device."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def arange(self, a, b):
        return self.torch.arange(a, b, dtype=self.torch.int64, device=self.device)

    def vector(self, values):
        return self.torch.tensor([_s64(v) for v in values], dtype=self.torch.int64, device=self.device)

    def where(self, c, x, y):
        t = self.torch
        as_t = lambda v: v if isinstance(v, t.Tensor) else t.tensor(v, dtype=t.int64, device=self.device)
        return t.where(c, as_t(x), as_t(y))

    def normal(self, fmt, units):
        """units * 2^-15 through PyTorch's conversion from float32, where the value is exact:
        one rounding to nearest even into the format (float64 takes it as it is)."""
        t = self.torch
        if fmt == "float64":
            return (units.to(t.float64) * 2.0 ** -15).view(t.int64)
        v = (units.to(t.float32) * 2.0 ** -15).to(getattr(t, fmt))
        width = FMT[fmt][0]
        raw = v.view({8: t.uint8, 16: t.int16, 32: t.int32}[width]).to(t.int64)
        return raw & ((1 << width) - 1)


def _line_plants(be, seed, operand, lines, length):
    """(kind, position, table index) of each line: kind 0 all signed zeros, 1 or 2 one special."""
    u = _splitmix64(be.arange(0, lines) + _key(seed, operand + 4))
    return u & 7, _srl(u, 8) % length, _srl(u, 40) % 9


def _bits(be, fmt, style, seed, operand, rows, cols, bt, row, col, plants):
    """Bit patterns (int64) of the elements at logical (row, col) (broadcast int64 arrays)."""
    index = col * rows + row if bt else row * cols + col
    width, mant, _ = FMT[fmt]
    sign = _s64(1 << (width - 1))
    if style == "cancel" and operand != 2:
        depth = cols if operand == 0 else rows
        along = col if operand == 0 else row
        half = depth // 2
        paired = (along >= half) & (along < 2 * half)
        # The first half's element that a second-half one repeats, and the bit it flips.
        back = paired * half
        first = index - (back * rows if bt else back) if operand == 0 else index - (back if bt else back * cols)
        r = _splitmix64(first + _key(seed, operand))
        return _uniform(fmt, r) ^ (paired * (sign if operand == 0 else 1))
    r = _splitmix64(index + _key(seed, operand))
    if style == "normal":
        return be.normal(fmt, _irwin_hall(r))
    if style == "wide":
        return _wide(fmt, r)
    bits = _uniform(fmt, r)
    if style in ("uniform", "cancel"):
        return bits
    table = special_table(fmt)
    if operand == 2:
        u = _splitmix64(index + _key(seed, 6))
        pick = be.vector([table[0], table[1], table[2], table[5], table[6]])[_srl(u, 8) % 5]
        return be.where((u & 7) == 0, pick, bits)
    kind, at, which = plants
    line, pos = (row, col) if operand == 0 else (col, row)
    kind, at, which = kind[line], at[line], which[line]
    special = be.vector(table)[which]
    bits = be.where(kind == 0, bits & sign, bits)
    return be.where(((kind == 1) | (kind == 2)) & (pos == at), special, bits)


def _check(fmt, style, operand):
    if fmt not in FMT:
        raise ValueError(f"'{fmt}' is not one of {', '.join(FMT)}")
    if style not in STYLES:
        raise ValueError(f"'{style}' is not a value style ({', '.join(STYLES)})")
    if operand not in (0, 1, 2):
        raise ValueError(f"operand {operand} is not 0 (A), 1 (B) or 2 (C)")


def operand_bits(fmt, style, seed, operand, rows, cols, bt=False):
    """An operand's bits in storage order as a flat unsigned array: A (m x k), B (k x n; with
    `bt` n x k, the transpose), C (m x n; the bias is C's first n elements: rows 1)."""
    _check(fmt, style, operand)
    be = _NumPy()
    plants = None
    if style == "special" and operand != 2:
        plants = _line_plants(be, seed, operand, rows if operand == 0 else cols, cols if operand == 0 else rows)
    with np.errstate(over="ignore"):
        if bt:
            row, col = be.arange(0, rows)[None, :], be.arange(0, cols)[:, None]
        else:
            row, col = be.arange(0, rows)[:, None], be.arange(0, cols)[None, :]
        bits = _bits(be, fmt, style, seed, operand, rows, cols, bt, row, col, plants)
    width = FMT[fmt][0]
    return np.ascontiguousarray(bits).reshape(-1).astype(np.uint64).astype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width])


def torch_operand(torch, fmt, style, seed, operand, rows, cols, device="cuda", bt=False, chunk=1 << 24):
    """The operand as a tensor of dtype `fmt` on `device`, generated there: shape (rows, cols),
    or with `bt` the stored (cols, rows). Works through `chunk` elements at a time."""
    _check(fmt, style, operand)
    be = _Torch(torch, device)
    plants = None
    if style == "special" and operand != 2:
        plants = _line_plants(be, seed, operand, rows if operand == 0 else cols, cols if operand == 0 else rows)
    stored = (cols, rows) if bt else (rows, cols)
    width = FMT[fmt][0]
    store = {8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width]
    out = torch.empty(stored, dtype=store, device=device)
    step = max(1, chunk // max(stored[1], 1))
    across = be.arange(0, stored[1])[None, :]
    for s0 in range(0, stored[0], step):
        down = be.arange(s0, min(s0 + step, stored[0]))[:, None]
        row, col = (across, down) if bt else (down, across)
        bits = _bits(be, fmt, style, seed, operand, rows, cols, bt, row, col, plants)
        if width in (16, 32):
            # Into the signed storage integer without relying on how a narrowing cast wraps.
            bits = bits - ((bits >> (width - 1)) & 1) * (1 << width)
        out[s0:s0 + step] = bits.to(store)
    return out.view(getattr(torch, fmt))


def torch_bits(torch, t):
    """A tensor's bit patterns as a flat NumPy unsigned array (storage order)."""
    width = t.element_size() * 8
    raw = t.contiguous().view({8: torch.uint8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[width]).cpu().numpy()
    return raw.reshape(-1).view({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width])


# ---- self-check --------------------------------------------------------------------------
def _value(fmt, bits):
    """Decoded values of finite bit patterns, as float64."""
    width, mant, bias = FMT[fmt]
    if width == 64:
        return bits.astype(np.uint64).view(np.float64)
    b = bits.astype(np.int64)
    neg = (b >> (width - 1)) & 1
    field = (b >> mant) & ((1 << (width - 1 - mant)) - 1)
    frac = b & ((1 << mant) - 1)
    sig = np.where(field > 0, frac + (1 << mant), frac).astype(np.float64)
    e = np.where(field > 0, field, 1) - bias - mant
    return np.where(neg == 1, -1.0, 1.0) * np.ldexp(sig, e.astype(np.int32))


def _torch_lib():
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("torchlib", os.path.join(here, "torch-lib.py"))
    lib = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lib)
    return lib


def selftest():
    failures = []

    def check(what, ok):
        if not ok:
            failures.append(what)
            print("FAIL", what, flush=True)

    # Uniform and special against torch-lib.py's generator.
    tl = _torch_lib()
    for fmt in FMT:
        for operand, (rows, cols) in ((0, (37, 64)), (1, (64, 29)), (2, (37, 29)), (2, (1, 29))):
            for bt in ((False, True) if operand == 1 else (False,)):
                for style in ("uniform", "special"):
                    want = tl.operand_bits(fmt, 11, operand, rows, cols, style == "special", bt)
                    got = operand_bits(fmt, style, 11, operand, rows, cols, bt)
                    check(f"{style} {fmt} operand {operand} {rows}x{cols} bt={bt} = torch-lib.py", np.array_equal(want, got))
    # Normal style: the integer rounding against float64 -> the format by NumPy (float16) and
    # ml_dtypes where it is installed, over every value the style can take (PyTorch below).
    units = np.arange(-131070, 131071, dtype=np.int64)
    exact = units * 2.0 ** -15
    theirs = {"float16": lambda x: x.astype(np.float16).view(np.uint16), "float32": lambda x: x.astype(np.float32).view(np.uint32),
              "float64": lambda x: x.view(np.uint64)}
    try:
        import ml_dtypes
        for fmt in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            theirs[fmt] = (lambda d: lambda x: x.astype(d).view({1: np.uint8, 2: np.uint16}[np.dtype(d).itemsize]))(getattr(ml_dtypes, fmt))
    except ImportError:
        print("ml_dtypes is not importable here: normal bfloat16 and float8 roundings checked against PyTorch only")
    for fmt, conv in theirs.items():
        check(f"normal {fmt}: every value as float64 -> {fmt}", np.array_equal(_NumPy().normal(fmt, units).astype(np.uint64), conv(exact).astype(np.uint64)))
    for fmt in FMT:
        v = _value(fmt, _NumPy().normal(fmt, units).astype(np.uint64))
        # Below 4 exactly; rounded, the largest reach 4 in the narrow formats.
        check(f"normal {fmt} within [-4, 4]", bool(np.all(np.abs(v) <= 4)))
        check(f"normal {fmt} sign kept", bool(np.all((np.signbit(v) == (units < 0)) | (units == 0))))
        check(f"normal {fmt} error at most half a step", bool(np.all(np.abs(v - exact) <= np.abs(exact) * 2.0 ** -(FMT[fmt][1] + 1) + 2.0 ** (1 - FMT[fmt][2] - FMT[fmt][1] - 1))))
    # Ranges of the wide style.
    for fmt in FMT:
        width, mant, bias = FMT[fmt]
        b = operand_bits(fmt, "wide", 7, 1, 200, 200).astype(np.uint64).view(np.int64)
        check(f"wide {fmt} finite", bool(np.all(np.isfinite(_value(fmt, operand_bits(fmt, "wide", 7, 1, 200, 200))))))
        e = ((b >> mant) & ((1 << (width - 1 - mant)) - 1)) - bias
        check(f"wide {fmt} exponents within +-{WIDE[fmt]}", bool(np.all(np.abs(e) <= WIDE[fmt])) and e.min() == -WIDE[fmt] and e.max() == WIDE[fmt])
    # Cancel: the halves pair up.
    for fmt in FMT:
        width = FMT[fmt][0]
        a = operand_bits(fmt, "cancel", 3, 0, 5, 9).reshape(5, 9).astype(np.uint64)
        u = operand_bits(fmt, "uniform", 3, 0, 5, 9).reshape(5, 9).astype(np.uint64)
        check(f"cancel {fmt} A", np.array_equal(a[:, :4], u[:, :4]) and np.array_equal(a[:, 4:8], u[:, :4] ^ np.uint64(1 << (width - 1)))
              and np.array_equal(a[:, 8], u[:, 8]))
        b = operand_bits(fmt, "cancel", 3, 1, 9, 5).reshape(9, 5).astype(np.uint64)
        u = operand_bits(fmt, "uniform", 3, 1, 9, 5).reshape(9, 5).astype(np.uint64)
        check(f"cancel {fmt} B", np.array_equal(b[:4], u[:4]) and np.array_equal(b[4:8], u[:4] ^ np.uint64(1)) and np.array_equal(b[8], u[8]))
        bt = operand_bits(fmt, "cancel", 3, 1, 9, 5, bt=True).reshape(5, 9).T
        ut = operand_bits(fmt, "uniform", 3, 1, 9, 5, bt=True).reshape(5, 9).T
        check(f"cancel {fmt} B bt", np.array_equal(bt[:4], ut[:4]) and np.array_equal(bt[4:8], ut[:4] ^ 1) and np.array_equal(bt[8], ut[8]))
        sp = operand_bits(fmt, "special", 3, 1, 9, 5, bt=True).reshape(5, 9).T
        check(f"special {fmt} B bt = B by columns", np.array_equal(sp, tl.operand_bits(fmt, 3, 1, 9, 5, True, True).reshape(5, 9).T))
    # NumPy against PyTorch, on the CPU and on CUDA where there is one.
    try:
        import torch
    except ImportError:
        torch = None
        print("torch is not importable here: NumPy against PyTorch not checked")
    if torch is not None:
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
        for device in devices:
            for fmt in FMT:
                for style in STYLES:
                    for operand, (rows, cols) in ((0, (37, 65)), (1, (65, 29)), (2, (37, 29))):
                        for bt in ((False, True) if operand == 1 else (False,)):
                            want = operand_bits(fmt, style, 5, operand, rows, cols, bt)
                            # A small chunk, so that chunk edges are crossed too.
                            t = torch_operand(torch, fmt, style, 5, operand, rows, cols, device=device, bt=bt, chunk=300)
                            shape_ok = tuple(t.shape) == ((cols, rows) if bt else (rows, cols)) and t.dtype == getattr(torch, fmt)
                            check(f"torch {device} {style} {fmt} operand {operand} bt={bt}", shape_ok and np.array_equal(torch_bits(torch, t), want))
                # Every value of the normal style through PyTorch's conversion.
                got = torch_bits(torch, _Torch(torch, device).normal(fmt, torch.arange(-131070, 131071, device=device)).to(torch.int64)).astype(np.uint64)
                check(f"torch {device} normal {fmt} every value", np.array_equal(got & np.uint64((1 << FMT[fmt][0]) - 1) if FMT[fmt][0] < 64 else got,
                                                                                 _NumPy().normal(fmt, units).astype(np.uint64)))
            # Is float64 -> the format one rounding? (1 + half a step + a little must round up.)
            for fmt in ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"):
                x = 1 + 2.0 ** -(FMT[fmt][1] + 1) + 2.0 ** -40
                y = torch.tensor([x], dtype=torch.float64, device=device).to(getattr(torch, fmt)).to(torch.float64).item()
                print(f"torch {device} float64 -> {fmt}: {'one rounding' if y > 1 else 'through float32 (two roundings)'}")
        # Large operands on the GPU, timed, a few rows of each against NumPy.
        if "cuda" in devices:
            import time
            size = 16384
            pick = np.array([0, 1, 8190, 8191, 8192, 8193, size - 1], dtype=np.int64)
            for fmt, style, operand in (("bfloat16", "cancel", 1), ("float16", "normal", 0), ("bfloat16", "special", 0), ("float32", "wide", 1)):
                torch.cuda.synchronize()
                t0 = time.time()
                big = torch_operand(torch, fmt, style, 1, operand, size, size)
                torch.cuda.synchronize()
                took = time.time() - t0
                got = torch_bits(torch, big[torch.tensor(pick, device="cuda")]).reshape(len(pick), size).astype(np.uint64)
                be = _NumPy()
                plants = _line_plants(be, 1, operand, size, size) if style == "special" else None
                with np.errstate(over="ignore"):
                    want = _bits(be, fmt, style, 1, operand, size, size, False, pick[:, None], be.arange(0, size)[None, :], plants)
                want = want.astype(np.uint64) & np.uint64((1 << FMT[fmt][0]) - 1)
                check(f"{size}x{size} {style} {fmt} operand {operand} on the GPU ({took:.2f} s) = NumPy", np.array_equal(got, want))
                print(f"{size}x{size} {style} {fmt} operand {operand} on the GPU: {took:.2f} s", flush=True)
                del big
    # The values the Rust tests pin (src/library/libgen.rs).
    print("expected values for src/library/libgen.rs:")
    for style in ("normal", "wide"):
        for fmt in FMT:
            print(style, fmt, "A", [int(x) for x in operand_bits(fmt, style, 1, 0, 1, 4)],
                  "C", [int(x) for x in operand_bits(fmt, style, 9, 2, 1, 3)])
    for fmt in FMT:
        print("cancel", fmt, "A 2x5 seed 4", [int(x) for x in operand_bits(fmt, "cancel", 4, 0, 2, 5)])
        print("cancel", fmt, "B 5x2 seed 4", [int(x) for x in operand_bits(fmt, "cancel", 4, 1, 5, 2)])
        print("cancel", fmt, "B bt 5x2 seed 4", [int(x) for x in operand_bits(fmt, "cancel", 4, 1, 5, 2, bt=True)])
    print("special float16 B bt 6x3 seed 5", [int(x) for x in operand_bits("float16", "special", 5, 1, 6, 3, bt=True)])
    print(f"{'FAILED: ' + str(len(failures)) if failures else 'all passed'}")
    return not failures


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "selftest":
        sys.exit(0 if selftest() else 1)
    raise SystemExit(__doc__)
