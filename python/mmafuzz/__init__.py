"""mmafuzz from Python: bit-exact emulators of GPU matrix units and of cuBLAS GEMMs, and the
exact (MPFR) reference, on NumPy arrays.

    >>> import numpy as np, mmafuzz
    >>> a = np.ones((1, 16, 16), np.float16); b = np.ones((1, 16, 8), np.float16)
    >>> c = np.zeros((1, 16, 8), np.float32)
    >>> mmafuzz.emulate("sm90:mma.m16n8k16.f32.f16.f16.f32", a, b, c)[0, 0, 0]
    np.float32(16.0)

Arrays are batches of tiles: A N×m×k, B N×k×n, C N×m×n (or one tile, 2-D). Formats come from
the dtypes (float16, float32, float64; bfloat16, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
float8_e5m2fnuz, float6_e3m2fn, float6_e2m3fn and float4_e2m1fn from ``ml_dtypes``; int8 and int32 for the integer MMAs), or from ``a_fmt``/``b_fmt``/``c_fmt`` (format
names: f16, bf16, tf32, f32, f64, e4m3, e5m2, e3m2, e2m3, e2m1,
e4m3fnuz, e5m2fnuz, s32, s8, u8, s4, u4, b1)
when the arrays hold raw bit patterns as unsigned integers of the format's container width.
Typed inputs give typed D; raw bits give raw bits. Nothing is copied on the way in unless the
array is not C-contiguous or the format needs it (s4/u4 values are masked to their 4 bits).
The work runs on all cores with the GIL released.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from . import _native
from ._native import MmafuzzError, NotModelled, UnlearnedShape

try:  # bfloat16 and FP8 dtypes
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - ml_dtypes is a dependency; raw bits work without it
    _ml = None

__all__ = ["emulate", "reference", "matmul", "models", "formats", "corpus", "gemm_records", "learned_shapes", "MmafuzzError", "NotModelled", "UnlearnedShape"]

_WIDTH = {name: width for name, width, _ in _native.formats()}
_MASK = {name: mask for name, _, mask in _native.formats()}
_RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# Typed dtypes and the format each one is; the first format listed for a dtype is its default.
_TYPED = [("f16", np.float16), ("f32", np.float32), ("tf32", np.float32), ("f64", np.float64), ("s8", np.int8), ("s4", np.int8), ("s32", np.int32)]
if _ml is not None:
    _TYPED += [("bf16", _ml.bfloat16), ("e4m3", _ml.float8_e4m3fn), ("e5m2", _ml.float8_e5m2)]
    # AMD's fnuz FP8 and the OCP FP6/FP4 (one value per byte, in the low bits, as mmafuzz keeps them).
    for _f, _name in [("e4m3fnuz", "float8_e4m3fnuz"), ("e5m2fnuz", "float8_e5m2fnuz"),
                      ("e3m2", "float6_e3m2fn"), ("e2m3", "float6_e2m3fn"), ("e2m1", "float4_e2m1fn")]:
        if hasattr(_ml, _name):
            _TYPED.append((_f, getattr(_ml, _name)))
_FMT_DTYPE = {}
_DTYPE_FMT = {}
for _f, _t in _TYPED:
    _FMT_DTYPE.setdefault(_f, np.dtype(_t))
    _DTYPE_FMT.setdefault(np.dtype(_t), _f)


def formats() -> dict:
    """Format name -> bytes per element of its container (as raw bits)."""
    return dict(_WIDTH)


def models(kind: Optional[str] = None) -> list:
    """Embedded models as (kind, name, description); kind is "instruction" (one per GPU
    instruction path, ``sm90:mma...``), "library" (whole cuBLAS GEMMs, ``h100:cublas...``) or
    "hypothesis" (named arithmetic hypotheses such as ``v100`` or ``exact-rne``)."""
    out = _native.models()
    return [m for m in out if kind is None or m[0] == kind]


def learned_shapes(model: str = "h100:cublas.gemm.f32.f16.f16.f32") -> list:
    """The GEMM shapes a library model's table learned on the GPU, as (m, n, k, beta, kernel),
    sorted by (m, n, k, beta): :func:`matmul` runs these without ``config=``; beta 1 is
    ``torch.addmm`` with a full C."""
    return _native.learned_shapes(model)


def _is_typed(x: np.ndarray) -> bool:
    return x.dtype.kind != "u"


def _format_of(x: np.ndarray, fmt: Optional[str], what: str) -> str:
    """The format of array `x`: `fmt` where given (checked against the dtype), else its dtype's."""
    if fmt is not None:
        if fmt not in _WIDTH:
            raise ValueError(f"{what}: unknown format '{fmt}' (known: {', '.join(_WIDTH)})")
        if x.dtype.itemsize != _WIDTH[fmt] and not (fmt in ("s4", "u4", "b1") and x.dtype.itemsize == 1):
            raise TypeError(f"{what} is {x.dtype} ({x.dtype.itemsize} bytes per element); {fmt} needs {_WIDTH[fmt]}")
        if _is_typed(x) and x.dtype.kind == "f" and fmt not in _FMT_DTYPE:
            raise TypeError(f"{what} is {x.dtype}, which cannot hold {fmt}: pass raw bits as {np.dtype(_RAW[_WIDTH[fmt]])}")
        return fmt
    if _is_typed(x):
        try:
            return _DTYPE_FMT[x.dtype.newbyteorder("=")]
        except KeyError:
            raise TypeError(f"{what} is {x.dtype}: no format has it (give {what}_fmt= with raw bits as unsigned integers)") from None
    raise TypeError(f"{what} is {x.dtype}, raw bits of an unnamed format: give {what}_fmt= (e.g. 'f16', 'bf16', 'e4m3')")


def _bits(x: np.ndarray, fmt: str, what: str) -> np.ndarray:
    """`x` as the bytes of its raw bit patterns in `fmt`'s container, without copying where the
    array is already C-contiguous and native-endian."""
    width = _WIDTH[fmt]
    if x.dtype.byteorder == ">":
        x = x.astype(x.dtype.newbyteorder("="))
    if x.dtype.kind == "i":
        if fmt in ("s4", "u4", "b1", "u8"):
            lo, hi = {"s4": (-8, 7), "u4": (0, 15), "b1": (0, 1), "u8": (0, 255)}[fmt]
            if x.size and (x.min() < lo or x.max() > hi):
                raise ValueError(f"{what} holds values outside {fmt}'s range {lo}..{hi}")
        raw = x.view(_RAW[x.dtype.itemsize]) & np.array(_MASK[fmt], _RAW[x.dtype.itemsize])
    elif x.dtype.kind == "u":
        raw = x
        if _MASK[fmt] != (1 << (8 * width)) - 1 and x.size and (x & ~np.array(_MASK[fmt], x.dtype)).any():
            raise ValueError(f"{what} holds bit patterns wider than {fmt}'s {_MASK[fmt].bit_length()} bits")
    else:
        raw = x.view(_RAW[width])
    return np.ascontiguousarray(raw).reshape(-1).view(np.uint8)


def _batch(x, what: str, dims: int = 3) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == dims - 1:
        x = x[None]
    if x.ndim != dims:
        raise ValueError(f"{what} has shape {x.shape}: expected {dims} dimensions (a batch) or {dims - 1} (one)")
    return x


def _tile_args(model, a, b, c, a_fmt, b_fmt, c_fmt, meta):
    one = np.ndim(a) == 2
    a, b = _batch(a, "a"), _batch(b, "b")
    path = _native.path_formats(model) if model else None
    sparse = meta is not None or (path is not None and path[3])
    default = lambda i, x: path[i] if path is not None and not _is_typed(x) else None
    a_fmt = _format_of(a, a_fmt or default(0, a), "a")
    b_fmt = _format_of(b, b_fmt or default(1, b) or (a_fmt if not _is_typed(b) else None), "b")
    n_tiles, m, a_cols = a.shape
    k = b.shape[1]
    if b.shape[0] != n_tiles:
        raise ValueError(f"a holds {n_tiles} tiles, b {b.shape[0]}")
    n = b.shape[2]
    if c is None:
        if c_fmt is None and path is None:
            raise ValueError("without c, give c_fmt= (the format of D)")
        c_fmt = c_fmt or path[2]
        dtype = _FMT_DTYPE.get(c_fmt) if _is_typed(a) else None
        c = np.zeros((n_tiles, m, n), dtype if dtype is not None else _RAW[_WIDTH[c_fmt]])
    else:
        c = _batch(c, "c")
        c_fmt = _format_of(c, c_fmt or default(2, c), "c")
    if c.shape != (n_tiles, m, n):
        raise ValueError(f"c has shape {c.shape}; a {a.shape} and b {b.shape} make D {(n_tiles, m, n)}")
    if sparse:
        if meta is None:
            raise ValueError(f"{model} is a 2:4 sparse path: give meta= (N×m×k/2 indices 0..3 of each kept value in its group of four)")
        meta = _batch(meta, "meta")
        if meta.shape != a.shape or 2 * a_cols != k:
            raise ValueError(f"sparse tiles: a and meta must both be N×m×(k/2) = {(n_tiles, m, k // 2)}; a is {a.shape}, meta {meta.shape}")
        meta = np.ascontiguousarray(meta.astype(np.uint8, copy=False)).reshape(-1)
    elif a_cols != k:
        raise ValueError(f"a is {a.shape} and b {b.shape}: the inner dimensions differ")
    xor = bool(path is not None and path[4])
    args = ((a_fmt, b_fmt, c_fmt), (n_tiles, m, n, k), _bits(a, a_fmt, "a"), _bits(b, b_fmt, "b"), _bits(c, c_fmt, "c"))
    return args, meta, xor, c, one, path


def _scale_args(path, scale_a, scale_b, scale_fmt, shape):
    """The block scales as the native call takes them: (format, block, A's bytes, B's bytes)."""
    scaled = path is not None and path[5] is not None
    if scale_a is None and scale_b is None:
        if scaled:
            raise ValueError(f"a block-scaled path ({path[5][0]} per {path[5][1]} along K): give scale_a= (N×m×k/block) and scale_b= (N×k/block×n)")
        return None
    if scale_a is None or scale_b is None:
        raise ValueError("block-scaled tiles need both scale_a and scale_b")
    n_tiles, m, n, k = shape
    sa, sb = _batch(scale_a, "scale_a"), _batch(scale_b, "scale_b")
    fmt = scale_fmt or (path[5][0] if scaled else "ue8m0")
    blocks = sa.shape[2] if sa.ndim == 3 else 0
    if blocks == 0 or k % blocks or sa.shape != (n_tiles, m, blocks) or sb.shape != (n_tiles, blocks, n):
        raise ValueError(f"scale_a {sa.shape} and scale_b {sb.shape}: expected N×m×(k/block) and N×(k/block)×n for tiles of {m}x{n}x{k}")
    raw = lambda x: np.ascontiguousarray(x.view(np.uint8) if x.dtype.itemsize == 1 and x.dtype.kind not in "iu" else x.astype(np.uint8, copy=False)).reshape(-1)
    return (fmt, k // blocks, raw(sa), raw(sb))


def _result(raw: np.ndarray, c: np.ndarray, c_fmt: str, one: bool, d_fmt: Optional[str] = None) -> np.ndarray:
    d_fmt = d_fmt or c_fmt
    d = raw.view(_RAW[_WIDTH[d_fmt]]).reshape(c.shape)
    if _is_typed(c):
        d = d.view(c.dtype.newbyteorder("=") if d_fmt == c_fmt else _FMT_DTYPE[d_fmt])
    return d[0] if one else d


def emulate(model: str, a, b, c=None, a_fmt: Optional[str] = None, c_fmt: Optional[str] = None, *, b_fmt: Optional[str] = None, meta=None,
            scale_a=None, scale_b=None, scale_fmt: Optional[str] = None, d_fmt: Optional[str] = None) -> np.ndarray:
    """D = A·B + C for every tile under an instruction model, bit for bit as the model's GPU.

    ``model``: an embedded name (``sm90:mma.m16n8k16.f32.f16.f16.f32``, ``sm90:wgmma...``,
    ``h100``, ``v100``: see :func:`models`) or the path of a model TOML file. For ``ARCH:PATH``
    models, raw-bit arrays default to the path's formats, and ``c=None`` means C = +0.
    ``meta``: the 2:4 sparsity metadata of sparse paths (then A is N×m×k/2).
    ``scale_a``, ``scale_b``: block scales of block-scaled MMAs (``...mxf8f6f4.block32...ue8m0``
    paths), N×m×(k/block) and N×(k/block)×n bit patterns (uint8, or ml_dtypes'
    ``float8_e8m0fnu``); ``scale_fmt`` ``ue8m0`` (default) or ``ue4m3``; the block is k over
    the number of scales per row.
    ``d_fmt``: D's format where it is wider than C's (``mma.m8n8k4.f32.f16.f16.f16`` adds f16 C
    into f32 D; an ``ARCH:PATH`` model sets it).
    Returns D, N×m×n (m×n for 2-D inputs), in C's format and dtype (D's where they differ).
    """
    if _native.model_kind(model) == "library":
        raise MmafuzzError(f"{model} is a library model: call mmafuzz.matmul (whole GEMMs of any shape), not emulate")
    (fmts, shape, ab, bb, cb), meta, xor, c, one, path = _tile_args(model, a, b, c, a_fmt, b_fmt, c_fmt, meta)
    scales = _scale_args(path, scale_a, scale_b, scale_fmt, shape)
    d_fmt = d_fmt or (path[6] if path is not None else None)
    return _result(_native.emulate_raw(model, fmts, shape, ab, bb, cb, meta, xor, scales, d_fmt), c, fmts[2], one, d_fmt)


def reference(a, b, c=None, a_fmt: Optional[str] = None, c_fmt: Optional[str] = None, *, b_fmt: Optional[str] = None, rounding: str = "rne", meta=None, xor: bool = False,
              scale_a=None, scale_b=None, scale_fmt: Optional[str] = None, d_fmt: Optional[str] = None) -> np.ndarray:
    """The exact D = A·B + C (MPFR), rounded once to C's format (or ``d_fmt``) with ``rounding``
    (rne, rna, rz, ru, rd, ra): what an ideal matrix unit would return. Same arrays as
    :func:`emulate` (block scales too)."""
    (fmts, shape, ab, bb, cb), meta, _, c, one, _ = _tile_args(None, a, b, c, a_fmt, b_fmt, c_fmt, meta)
    scales = _scale_args(None, scale_a, scale_b, scale_fmt, shape)
    return _result(_native.reference_raw(fmts, shape, ab, bb, cb, rounding, meta, xor, scales, d_fmt), c, fmts[2], one, d_fmt)


def _matrix(x, fmt: str, what: str, dims: int = 2) -> Tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    if x.ndim != dims:
        raise ValueError(f"{what} has shape {x.shape}: expected {dims} dimensions")
    if _is_typed(x) and x.dtype.newbyteorder("=") != _FMT_DTYPE.get(fmt):
        want = _FMT_DTYPE.get(fmt)
        raise TypeError(f"{what} is {x.dtype}; this model takes {fmt} ({want if want is not None else 'raw bits'}, or raw bits as {np.dtype(_RAW[_WIDTH[fmt]])})")
    return x, _bits(x, fmt, what)


def matmul(a, b, c=None, model: str = "h100:cublas.gemm.f32.f16.f16.f32", *, bias=None, config: Optional[str] = None, return_config: bool = False,
           op: Optional[str] = None, table=None, predicted: bool = False, gpu: Optional[str] = None, alpha: float = 1.0,
           beta: float = 1.0, whole_shape=None):
    """One whole GEMM as PyTorch runs it through cuBLAS/cuBLASLt, bit for bit: D = A·B
    (``torch.mm``), D = A·B + C (``torch.addmm``, β = 1) or D = A·B + bias (``F.linear``'s bias
    epilogue, ``bias`` n elements). A m×k, B k×n, any shape the model's table learned.

    ``model``: a library model (``models("library")``), named for its formats:
    ``h100:cublas.gemm.D.A.B.C``; e.g. ``...f32.f16.f16.f32`` takes float16 A and B and returns
    float32. The kernel configuration (tile, split-K, reduction) comes from the model's table of
    shapes recorded on the GPU; a shape outside it raises :class:`UnlearnedShape` unless
    ``config`` gives the kernel (the ``algo=[...]`` text of cuBLASLt's CUBLASLT_LOG_LEVEL=5 trace);
    a kernel whose schedule the model does not cover yet raises :class:`NotModelled` (declined,
    never guessed).
    ``op`` names the PyTorch call whose kernel is wanted (``mm``, ``addmm``, ``linear``: B is
    the transposed weight, ``linear_bias``); by default what ``c`` and ``bias`` say. ``table``:
    a kernel table file (what ``mmafuzz library trace`` wrote), which then alone decides;
    ``predicted=True`` lets the model's predictor answer for shapes no trace holds; ``gpu``:
    the GPU asked about (``"h200"``), warned about where the model's kernels are another's.
    ``alpha`` and ``beta``: D = alpha·A·B + beta·C as ``torch.addmm(c, a, b, beta=, alpha=)``
    (float32 scalars applied where the kernel's epilogue applies them; beta 0 ignores C);
    values other than 1 where they were not measured raise :class:`NotModelled` (kernels that
    split K in place, kernels whose algorithm was not measured for their kind (unsplit, split-K, GEMV
    lanes), the bias, TF32, FP64, the H100's models). ``whole_shape=(m, n, k)``: ``a`` holds
    some rows and ``b`` some columns of an m×n×k GEMM (``c`` the elements where they cross):
    their elements of D, under that GEMM's kernel and plan.
    With ``return_config=True`` returns (D, the configuration used).
    """
    a_fmt, b_fmt, d_fmt = _native.library_formats(model)
    a, ab = _matrix(a, a_fmt, "a")
    b, bb = _matrix(b, b_fmt, "b")
    (m, k), (kb, n) = a.shape, b.shape
    if k != kb:
        raise ValueError(f"a is {a.shape} and b {b.shape}: the inner dimensions differ")
    if c is not None and bias is not None:
        raise ValueError("give c (torch.addmm) or bias (F.linear), not both")
    cb = xb = None
    if c is not None:
        c, cb = _matrix(c, d_fmt, "c")
        if c.shape != (m, n):
            raise ValueError(f"c has shape {c.shape}, D is {(m, n)}")
    if bias is not None:
        bias, xb = _matrix(bias, d_fmt, "bias", dims=1)
        if bias.shape != (n,):
            raise ValueError(f"bias has shape {bias.shape}, D has {n} columns")
    raw, used, _source, warning = _native.matmul_raw(model, (m, n, k), ab, bb, cb, xb, config, op,
                                                     None if table is None else str(table), predicted, gpu, float(alpha), float(beta),
                                                     None if whole_shape is None else tuple(int(x) for x in whole_shape))
    if warning:
        import warnings
        warnings.warn(warning, stacklevel=2)
    d = raw.view(_RAW[_WIDTH[d_fmt]]).reshape(m, n)
    if _is_typed(a) and d_fmt in _FMT_DTYPE:
        d = d.view(_FMT_DTYPE[d_fmt])
    return (d, used) if return_config else d


def _view(raw: np.ndarray, fmt: str, shape, typed: bool) -> np.ndarray:
    x = raw.view(_RAW[_WIDTH[fmt]]).reshape(shape)
    if typed and fmt in _FMT_DTYPE and fmt not in ("s4", "u4"):
        x = x.view(_FMT_DTYPE[fmt])
    return x


def corpus(file, typed: bool = True) -> list:
    """The GPU-recorded tiles of a corpus file (``corpus/<path>.jsonl.xz``; tiles stored by
    reference are regenerated from their seeds): one dict per shape and formats, with ``a``,
    ``b``, ``c`` and the GPU's ``d`` as arrays (typed where a dtype holds the format, else raw
    bits), ``a_fmt``, ``b_fmt``, ``c_fmt``, ``meta`` (sparse paths), ``xor``, ``gpu`` (each
    tile's GPU, or the simulator that answered) and, for block-scaled paths, ``scale_a``
    (N×m×k/block), ``scale_b`` (N×k/block×n, uint8) and ``scale_fmt``.
    ``emulate(model, g["a"], g["b"], g["c"], meta=g.get("meta"), scale_a=g.get("scale_a"),
    scale_b=g.get("scale_b"), scale_fmt=g.get("scale_fmt"))`` replays them."""
    out = []
    for (af, bf, cf, df), (t, m, n, k), a, b, c, d, meta, xor, gpu, scales in _native.corpus_raw(str(file)):
        a_cols = k // 2 if meta is not None else k
        group = {
            "a_fmt": af, "b_fmt": bf, "c_fmt": cf, "xor": xor, "gpu": gpu,
            "a": _view(a, af, (t, m, a_cols), typed), "b": _view(b, bf, (t, k, n), typed),
            "c": _view(c, cf, (t, m, n), typed), "d": _view(d, df, (t, m, n), typed),
        }
        if df != cf:
            group["d_fmt"] = df
        if meta is not None:
            group["meta"] = meta.reshape(t, m, a_cols)
        if scales is not None:
            fmt, block, sa, sb = scales
            group.update(scale_fmt=fmt, scale_a=sa.reshape(t, m, k // block), scale_b=sb.reshape(t, k // block, n))
        out.append(group)
    return out


def gemm_records(file, limit: Optional[int] = None, typed: bool = True) -> list:
    """The GEMMs of a library corpus file (``corpus/library/<path>.jsonl.xz``), as PyTorch ran
    them on the GPU, operands regenerated from their seeds: dicts with ``model``, ``m``, ``n``,
    ``k``, ``a`` (m×k), ``b`` (k×n), ``c`` (m×n or None), ``bias`` (n or None), ``idx`` (row-major
    indices of the recorded elements of D) and ``d`` (their bits, as the GPU returned them),
    ``config`` (the kernel cuBLASLt logged), ``gpu``, ``driver``, ``torch``, ``cublas``.
    ``matmul(r["a"], r["b"], r["c"], model=r["model"], bias=r["bias"], config=r["config"]).ravel()[r["idx"]]``
    is the emulator's answer to compare with ``r["d"]``."""
    out = []
    for r in _native.gemm_records_raw(str(file), limit):
        af, bf, df = r.pop("formats")
        m, n, k = r["m"], r["n"], r["k"]
        r["a"] = _view(r["a"], af, (m, k), typed)
        r["b"] = _view(r["b"], bf, (k, n), typed)
        if r["c"] is not None:
            r["c"] = _view(r["c"], df, (m, n), typed)
        if r["bias"] is not None:
            r["bias"] = _view(r["bias"], df, (n,), typed)
        r["idx"] = np.asarray(r["idx"], np.int64)
        r["d"] = _view(r["d"], df, (len(r["idx"]),), typed)
        out.append(r)
    return out
