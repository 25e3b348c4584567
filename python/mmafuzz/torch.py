"""PyTorch's GEMM calls as a given GPU runs them, bit for bit, without that GPU.

    >>> import numpy as np, mmafuzz.torch as mt
    >>> x = np.ones((2, 5, 64), np.float16); w = np.ones((32, 64), np.float16)
    >>> mt.linear(x, w, gpu="h200", table="TABLES")   # what F.linear(x, w) returns on an H200

Each call mirrors its PyTorch namesake on NumPy arrays (``ml_dtypes.bfloat16`` for bf16) or CPU
torch tensors, and returns the same kind: ``mm(a, b, out_dtype=None)``, ``addmm(input, mat1,
mat2)``, ``linear(x, w, bias=None)`` (x with any leading dimensions, w (n, k) as ``nn.Linear``
holds it), ``matmul(a, b)``, ``_int_mm(a, b)`` (int8 into int32) and ``_scaled_mm(a, b,
scale_a, scale_b, out_dtype=...)`` (FP8, with the kernel cuBLASLt logged for the call). Keywords
common to all:

- ``gpu``: ``"h200"`` (default) or ``"h100"``: whose cuBLAS kernel choices to follow;
- ``allow_tf32``: float32 operands as ``torch.backends.cuda.matmul.allow_tf32`` would;
- ``table``: a kernel table file (``mmafuzz library trace`` writes them): it alone decides;
- ``predicted``: let the GPU's predictor answer for shapes no trace holds (off by default: it
  is not right everywhere; where it is unsure it declines anyway).

Where the kernel is not known (a shape no trace holds, the predictor off or unsure) the call
raises :class:`mmafuzz.UnlearnedShape` with the reason; a call or kernel the models do not
cover raises :class:`mmafuzz.NotModelled`. Nothing is guessed.

The layout decides the kernel as it does in PyTorch: ``mm(a, b)`` with ``b`` a transposed view
(``w.T``, F-contiguous) is F.linear's call, not torch.mm's.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import NotModelled, matmul as _matmul

try:
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover
    _ml = None

__all__ = ["mm", "addmm", "linear", "matmul", "bmm", "baddbmm", "_int_mm", "_scaled_mm", "GPUS"]

GPUS = ("h100", "h200")


def _path(dtype: np.dtype, out_dtype, allow_tf32: bool) -> str:
    """The library path of a call on `dtype` operands: cublas.gemm.D.A.B.C."""
    name = {np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}.get(dtype)
    if name is None and _ml is not None and dtype == np.dtype(_ml.bfloat16):
        name = "bf16"
    if name is None:
        raise NotModelled(f"operands of dtype {dtype}: the cuBLAS paths take float16, bfloat16, float32 and float64")
    out = name if out_dtype is None else _dtype_name(out_dtype)
    if name in ("f16", "bf16"):
        if out not in (name, "f32"):
            raise NotModelled(f"{name} operands with out_dtype {out}: torch takes {name} or float32")
        return f"cublas.gemm.{out}.{name}.{name}.{out}"
    if out != name:
        raise NotModelled(f"{name} operands with out_dtype {out}: only the operands' own dtype")
    if name == "f32" and allow_tf32:
        return "cublas.gemm.f32.tf32.tf32.f32"
    return f"cublas.gemm.{name}.{name}.{name}.{name}"


def _dtype_name(d) -> str:
    if str(d).startswith("torch."):
        s = str(d)[len("torch."):]
    else:
        try:
            s = np.dtype(d).name
        except TypeError:
            s = str(d)
    names = {"float16": "f16", "half": "f16", "float32": "f32", "float": "f32", "float64": "f64", "double": "f64", "bfloat16": "bf16"}
    if s not in names:
        raise NotModelled(f"out_dtype {d}")
    return names[s]


def _check_gpu(gpu: str) -> None:
    if gpu not in GPUS:
        raise ValueError(f"gpu={gpu!r}: the models describe {', '.join(GPUS)}")


def _model(gpu: str, path: str) -> str:
    _check_gpu(gpu)
    return f"{gpu}:{path}"


def _numpy(x, what: str):
    """(array, came from torch)."""
    if type(x).__module__.startswith("torch"):
        import torch

        if x.device.type != "cpu":
            raise ValueError(f"{what} is on {x.device}: give CPU tensors (mmafuzz emulates; it does not run on the GPU)")
        x = x.detach()
        if x.dtype == torch.bfloat16:
            if _ml is None:  # pragma: no cover
                raise ImportError("bfloat16 needs ml_dtypes")
            return x.view(torch.int16).numpy().view(_ml.bfloat16), True
        return x.numpy(), True
    return np.asarray(x), False


def _back(d: np.ndarray, torch_out: bool):
    if not torch_out:
        return d
    import torch

    if _ml is not None and d.dtype == np.dtype(_ml.bfloat16):
        return torch.from_numpy(np.ascontiguousarray(d).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(d))


def _transposed(b: np.ndarray) -> bool:
    """Whether `b` is a transposed view (w.T of a row-major w): what torch passes as OP_T."""
    return b.ndim == 2 and not b.flags.c_contiguous and b.flags.f_contiguous


def _gemm(a, b, *, c=None, bias=None, linear: bool, out_dtype, gpu, allow_tf32, table, predicted, alpha=1.0, beta=1.0, config=None, whole_shape=None):
    if a.dtype != b.dtype:
        raise TypeError(f"operands of two dtypes ({a.dtype}, {b.dtype}): torch needs one")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"a is {a.shape} and b {b.shape}: two matrices")
    if not a.flags.c_contiguous and a.flags.f_contiguous and a.shape[0] > 1 and a.shape[1] > 1:
        raise NotModelled("a transposed first operand: torch passes it as OP_T on the other side, a layout not traced yet")
    model = _model(gpu, _path(a.dtype, out_dtype, allow_tf32))
    op = ("linear_bias" if bias is not None else "linear") if linear else ("addmm" if c is not None else "mm")
    return _matmul(np.ascontiguousarray(a), np.ascontiguousarray(b), c, model, bias=bias, op=op, table=table, predicted=predicted, gpu=gpu,
                   alpha=alpha, beta=beta, config=config, whole_shape=whole_shape)


def mm(input, mat2, *, out_dtype=None, gpu: str = "h200", allow_tf32: bool = False, table=None, predicted: bool = False):
    """``torch.mm(input, mat2)`` (``out_dtype=float32`` for f16/bf16 operands as torch 2.11
    takes it). ``mat2`` as a transposed view (``w.T``) is F.linear's layout and kernel."""
    a, ta = _numpy(input, "input")
    b, tb = _numpy(mat2, "mat2")
    d = _gemm(a, b, linear=_transposed(b), out_dtype=out_dtype, gpu=gpu, allow_tf32=allow_tf32, table=table, predicted=predicted)
    return _back(d, ta or tb)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out_dtype=None, gpu: str = "h200", allow_tf32: bool = False, table=None, predicted: bool = False,
          config: Optional[str] = None):
    """``torch.addmm(input, mat1, mat2, beta=, alpha=)``: D = alpha·mat1·mat2 + beta·input,
    input m×n; or, with ``input`` one row of n and ``mat2`` a transposed weight, F.linear's bias
    epilogue. alpha and beta enter as float32 where the kernel's epilogue applies them
    (docs/src/library.md, "Scales, α and β"); beta = 0 ignores input (NaNs in it included) and
    runs torch.mm's kernel. Other than 1 they are modelled on the H200's f16, bf16 and f32
    paths (TF32 and FP64 not), except on kernels that split K in place and kernels whose
    algorithm was not measured for their kind (unsplit, split-K, GEMV lanes);
    elsewhere :class:`mmafuzz.NotModelled`. ``config``: the kernel
    cuBLASLt logged for the call (else the table or predictor decide)."""
    c, tc = _numpy(input, "input")
    a, ta = _numpy(mat1, "mat1")
    b, tb = _numpy(mat2, "mat2")
    m, n = a.shape[0], b.shape[1] if b.ndim == 2 else None
    kw = dict(out_dtype=out_dtype, gpu=gpu, allow_tf32=allow_tf32, table=table, predicted=predicted, alpha=float(alpha), beta=float(beta), config=config)
    if float(beta) == 0.0:
        d = _gemm(a, b, linear=_transposed(b), **kw)
    elif c.ndim == 1:
        if not _transposed(b):
            raise NotModelled("addmm with a broadcast row and an untransposed mat2: that bias layout is not traced (F.linear passes the weight transposed)")
        d = _gemm(a, b, bias=c, linear=True, **kw)
    else:
        if c.shape != (m, n):
            raise NotModelled(f"addmm with input {c.shape} broadcast to {(m, n)}: only a full m×n input or a bias row is modelled")
        d = _gemm(a, b, c=np.ascontiguousarray(c), linear=False, **kw)
    return _back(d, ta or tb or tc)


def linear(input, weight, bias=None, *, gpu: str = "h200", allow_tf32: bool = False, table=None, predicted: bool = False):
    """``F.linear(input, weight, bias)``: input (..., k), weight (n, k), bias (n,) or None;
    returns (..., n). With a bias and more than three dimensions torch adds the bias after the
    GEMM, which is not modelled."""
    x, tx = _numpy(input, "input")
    w, tw = _numpy(weight, "weight")
    bias_np, tbias = (None, False) if bias is None else _numpy(bias, "bias")
    if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"input {x.shape} and weight {w.shape}: the weight is (n, k) with k = input's last dimension")
    if x.ndim == 1:
        raise NotModelled("F.linear on a vector runs a GEMV (torch.mv), not a GEMM")
    if bias_np is not None and x.ndim > 3:
        raise NotModelled("F.linear with a bias on more than three dimensions adds the bias after the GEMM: not modelled")
    lead = x.shape[:-1]
    x2 = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    d = _gemm(x2, np.ascontiguousarray(w).T, bias=bias_np, linear=True, out_dtype=None, gpu=gpu, allow_tf32=allow_tf32, table=table, predicted=predicted)
    return _back(d.reshape(*lead, w.shape[0]), tx or tw or tbias)


def matmul(input, other, *, gpu: str = "h200", allow_tf32: bool = False, table=None, predicted: bool = False, config: Optional[str] = None):
    """``torch.matmul`` where it is one GEMM or one batched GEMM: 2-D @ 2-D, (..., k) @ (k, n)
    (torch folds the leading dimensions into m), or (..., m, k) @ (..., k, n) with the same
    leading dimensions (torch's bmm over them: see :func:`bmm`, ``config`` its kernel).
    Vectors (mv, dot) and broadcast batch dimensions are not modelled."""
    a, ta = _numpy(input, "input")
    b, tb = _numpy(other, "other")
    if a.ndim >= 3 and b.ndim >= 3:
        if a.shape[:-2] != b.shape[:-2]:
            raise NotModelled(f"matmul of {a.shape} and {b.shape}: broadcast batch dimensions are not modelled")
        lead, batch = a.shape[:-2], int(np.prod(a.shape[:-2]))
        d = _batched(_stack(a, batch), _stack(b, batch), None, alpha=1.0, beta=0.0, gpu=gpu, allow_tf32=allow_tf32, config=config,
                     call="torch.matmul")
        return _back(d.reshape(*lead, a.shape[-2], b.shape[-1]), ta or tb)
    if a.ndim < 2 or b.ndim != 2:
        raise NotModelled(f"matmul of {a.shape} and {b.shape}: only (..., k) @ (k, n) and batched (..., m, k) @ (..., k, n) are modelled")
    lead = a.shape[:-1]
    d = _gemm(np.ascontiguousarray(a).reshape(-1, a.shape[-1]), b, linear=_transposed(b), out_dtype=None, gpu=gpu, allow_tf32=allow_tf32, table=table,
              predicted=predicted, config=config)
    return _back(d.reshape(*lead, b.shape[1]), ta or tb)


def _b_transposed(b: np.ndarray) -> bool:
    """Whether a stack of matrices (..., k, n) holds each as a transposed view (B = Bᵀᵀ, Bᵀ
    n×k row-major, as attention's Kᵀ): what torch passes as OP_T."""
    k, n = b.shape[-2:]
    s = b.strides[-2:]
    return k > 1 and n > 1 and s[0] == b.itemsize and s[1] == k * b.itemsize


def _stack(x: np.ndarray, batch: int) -> np.ndarray:
    """x (..., r, c) with `batch` matrices in its leading dimensions, as (batch, r, c), each
    matrix keeping its layout (row-major, or a transposed view)."""
    r, c = x.shape[-2:]
    if _b_transposed(x):
        return np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)).reshape(batch, c, r), 1, 2)
    return np.ascontiguousarray(x).reshape(batch, r, c)


def _batched(a, b, c, *, alpha, beta, gpu, allow_tf32, config, call, whole_shape=None):
    """D[i] = alpha·a[i]·b[i] + beta·c[i] for each matrix of the batch, each under the kernel
    cuBLASLt ran for the batched call (`config`): a strided-batched GEMM runs one kernel over
    every batch, so each batch is that kernel's GEMM of its own matrices."""
    if config is None:
        raise NotModelled(f"{call}: a strided-batched GEMM's kernel depends on the batch count too, and no kernel table of batched calls has been "
                          "learned; pass config= (the algo=[...] text cuBLASLt logs for the call)")
    if a.dtype != b.dtype:
        raise TypeError(f"operands of two dtypes ({a.dtype}, {b.dtype}): torch needs one")
    batch, m, k = a.shape
    if b.shape[0] != batch or b.shape[1] != k:
        raise ValueError(f"{call}: {a.shape} and {b.shape} are not batch x m x k and batch x k x n")
    if batch == 0:
        raise ValueError(f"{call}: no matrices (batch 0)")
    if not a[0].flags.c_contiguous and m > 1 and k > 1:
        raise NotModelled(f"{call}: a transposed first operand, a layout not traced yet")
    if batch > 1 and config.split()[0] == "algoId=11":
        raise NotModelled(f"{call}: the small-N kernels of algorithm 11 run over batches do not always follow the 2-D model's lane rule "
                          "(3 of 18 recorded batched calls differed): declined")
    n, linear = b.shape[2], _b_transposed(b)
    kw = dict(linear=linear, out_dtype=None, gpu=gpu, allow_tf32=allow_tf32, table=None, predicted=False, alpha=alpha, beta=beta, config=config,
              whole_shape=whole_shape)
    out = []
    for i in range(batch):
        ci = None if c is None or beta == 0.0 else np.ascontiguousarray(c[i])
        out.append(np.asarray(_gemm(np.ascontiguousarray(a[i]), b[i], c=ci, **kw)).reshape(m, n))
    return np.stack(out)


def bmm(input, mat2, *, gpu: str = "h200", allow_tf32: bool = False, config: Optional[str] = None, whole_shape=None):
    """``torch.bmm(input, mat2)``: input (b, m, k), mat2 (b, k, n) (each matrix row-major or a
    transposed view, as attention's Kᵀ) -> (b, m, n). cuBLAS runs one strided-batched kernel
    over the batches, chosen for the batch count as well as the shape, so one batch's D can
    differ from ``torch.mm`` of that batch alone; ``config`` is that kernel (cuBLASLt's log of
    the batched call), under which every batch is emulated. Without it, declined
    (:class:`mmafuzz.NotModelled`): no kernel table of batched calls is learned yet.
    ``whole_shape=(m, n, k)``: the matrices hold some rows and columns of each batch of a larger
    batched GEMM (as in :func:`mmafuzz.matmul`)."""
    a, ta = _numpy(input, "input")
    b, tb = _numpy(mat2, "mat2")
    if a.ndim != 3 or b.ndim != 3:
        raise ValueError(f"bmm of {a.shape} and {b.shape}: two stacks of matrices (b, m, k) and (b, k, n)")
    d = _batched(a, b, None, alpha=1.0, beta=0.0, gpu=gpu, allow_tf32=allow_tf32, config=config, call="torch.bmm", whole_shape=whole_shape)
    return _back(d, ta or tb)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, gpu: str = "h200", allow_tf32: bool = False, config: Optional[str] = None, whole_shape=None):
    """``torch.baddbmm(input, batch1, batch2, beta=, alpha=)``: D[i] = alpha·batch1[i]·batch2[i]
    + beta·input[i], input broadcast to (b, m, n) as torch broadcasts it. alpha and beta enter
    as in ``addmm`` (float32, where the kernel's epilogue applies them; docs/src/library.md,
    "Scales, α and β"); beta = 0 ignores input. ``config`` and ``whole_shape`` as in :func:`bmm`."""
    a, ta = _numpy(batch1, "batch1")
    b, tb = _numpy(batch2, "batch2")
    c, tc = _numpy(input, "input")
    if a.ndim != 3 or b.ndim != 3:
        raise ValueError(f"baddbmm of {a.shape} and {b.shape}: two stacks of matrices (b, m, k) and (b, k, n)")
    c = np.broadcast_to(c, (a.shape[0], a.shape[1], b.shape[2]))
    d = _batched(a, b, c, alpha=float(alpha), beta=float(beta), gpu=gpu, allow_tf32=allow_tf32, config=config, call="torch.baddbmm",
                 whole_shape=whole_shape)
    return _back(d, ta or tb or tc)


# The longest K whose int8 x int8 sums cannot pass int32's range (128 * 128 * K < 2^31): past it
# the GPU's behaviour on overflow (wrap or saturate) was not recorded.
_INT_MM_MAX_K = (2**31 - 1) // (128 * 128)


def _int_mm(input, mat2, *, gpu: str = "h200"):
    """``torch._int_mm(input, mat2)``: int8 (m, k) times int8 (k, n) into int32. The GPU returns
    the exact integer sum (recorded on an H200: corpus/library/probes/, every sampled element),
    so this is that sum; torch's own conditions (m > 16, k and n positive multiples of 8) raise
    as torch raises them. K past 131,071, where a sum could pass int32's range, is declined."""
    a, ta = _numpy(input, "input")
    b, tb = _numpy(mat2, "mat2")
    _check_gpu(gpu)
    if gpu != "h200":
        raise NotModelled(f"_int_mm on the {gpu}: recorded on an H200 only")
    if a.dtype != np.int8 or b.dtype != np.int8:
        raise TypeError(f"_int_mm takes int8 operands, not {a.dtype} and {b.dtype}")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"input {a.shape} and mat2 {b.shape}: two matrices, (m, k) and (k, n)")
    (m, k), n = a.shape, b.shape[1]
    if m <= 16:
        raise ValueError(f"torch._int_mm: self.size(0) needs to be greater than 16, but got {m}")
    if k == 0 or k % 8 or n == 0 or n % 8:
        raise ValueError(f"torch._int_mm: k ({k}) and n ({n}) must be positive multiples of 8")
    if k > _INT_MM_MAX_K:
        raise NotModelled(f"_int_mm with k = {k}: sums may pass int32's range, whose handling on the GPU was not recorded")
    d = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    return _back(d, ta or tb)


def _fp8_name(dtype: np.dtype) -> Optional[str]:
    if _ml is None:  # pragma: no cover
        return None
    return {np.dtype(_ml.float8_e4m3fn): "e4m3", np.dtype(_ml.float8_e5m2): "e5m2"}.get(dtype)


def _scales(scale_a, scale_b, m: int, n: int):
    """The scales as float32: one value each (per-tensor, returned as 0-d arrays), or row-wise,
    scale_a (m, 1) and scale_b (1, n), as torch tells the two apart."""
    (sa, _), (sb, _) = _numpy(scale_a, "scale_a"), _numpy(scale_b, "scale_b")
    for s, what in ((sa, "scale_a"), (sb, "scale_b")):
        if s.dtype != np.float32:
            raise TypeError(f"{what} is {s.dtype}: torch._scaled_mm takes float32 scales")
    if sa.size == 1 and sb.size == 1:
        return sa.reshape(()), sb.reshape(())
    if sa.shape != (m, 1) or sb.shape != (1, n):
        raise ValueError(f"scale_a {sa.shape} and scale_b {sb.shape}: one value each, or ({m}, 1) and (1, {n}) for row-wise scaling")
    return sa, sb


def _scaled_mm(input, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum: bool = False, *,
               gpu: str = "h200", config: Optional[str] = None):
    """``torch._scaled_mm(input, mat2, scale_a, scale_b, out_dtype=...)``: float8_e4m3fn (m, k)
    times float8_e4m3fn (k, n), mat2 column-major as torch wants it (``w.T`` of a row-major
    (n, k) weight), into float32, bfloat16 or float16, per-tensor scales (one float32 each) or
    row-wise ones (``scale_a`` (m, 1), ``scale_b`` (1, n)), with or without ``use_fast_accum``.

    As an H200 computes it (driver 580.159.04, torch 2.11; docs/src/library.md): the unit-scale
    FP8 accumulation ``acc`` in f32, then D = f32(f32(scale_a * scale_b) * acc) for per-tensor
    scales and D = f32(scale_a[i] * f32(scale_b[j] * acc)) for row-wise ones, rounded to nearest
    into a 16-bit ``out_dtype``.

    The FP8 kernel tables hold no scaled calls yet, so ``config`` is required: the ``algo=[...]``
    text cuBLASLt's CUBLASLT_LOG_LEVEL=5 log shows for this call. Kernels that split K are
    declined (where the scales enter then was not measured), as are a bias, ``scale_result``,
    FP8 outputs, e5m2 operands and the H100 (not measured)."""
    a, ta = _numpy(input, "input")
    b, tb = _numpy(mat2, "mat2")
    _check_gpu(gpu)
    fa, fb = _fp8_name(a.dtype), _fp8_name(b.dtype)
    if fa is None or fb is None:
        raise TypeError(f"_scaled_mm takes float8 operands, not {a.dtype} and {b.dtype}")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"input {a.shape} and mat2 {b.shape}: two matrices, (m, k) and (k, n)")
    (m, k), n = a.shape, b.shape[1]
    if k % 16 or n % 16:
        raise ValueError(f"torch._scaled_mm: both dimensions of mat2 ({k}, {n}) must be divisible by 16")
    if not _transposed(b):
        raise ValueError("torch._scaled_mm: mat2 must be column-major (the transpose of a row-major (n, k) weight)")
    if gpu != "h200":
        raise NotModelled(f"_scaled_mm on the {gpu}: its scaling was measured on an H200 only")
    if (fa, fb) != ("e4m3", "e4m3"):
        raise NotModelled(f"_scaled_mm on {fa} x {fb} operands: the scaling was measured with e4m3 x e4m3")
    if bias is not None or scale_result is not None:
        raise NotModelled("_scaled_mm with a bias or scale_result: not measured")
    out = "fp8" if out_dtype is None else _dtype_name(out_dtype)
    if out not in ("f32", "bf16", "f16"):
        raise NotModelled(f"_scaled_mm into {out_dtype or input.dtype}: float32, bfloat16 and float16 outputs are modelled")
    if config is None:
        raise NotModelled("_scaled_mm needs config=: the kernel cuBLASLt logged for the call (CUBLASLT_LOG_LEVEL=5, its algo=[...]); the kernel tables hold no scaled FP8 calls yet")
    sa, sb = _scales(scale_a, scale_b, m, n)
    text = config[len("algo=["):-1] if config.startswith("algo=[") else config
    splits = [int(t.split("=", 1)[1]) for t in text.split() if t.startswith("numSplitsK=")]
    if any(s > 1 for s in splits):
        raise NotModelled(f"_scaled_mm on a kernel that splits K ({text}): where the scales enter then was not measured")
    model = f"{gpu}:cublaslt.matmul.f32.{fa}.{fb}.f32" + (".fast_accum" if use_fast_accum else "")
    acc = _matmul(np.ascontiguousarray(a), b, None, model, config=text, gpu=gpu)
    with np.errstate(over="ignore", invalid="ignore"):
        # Every product of float32 values, rounded to float32 once.
        d = (sa * sb) * acc if sa.ndim == 0 else sa * (sb * acc)
        # Rounded to nearest into a 16-bit output; past its range, infinity, as on the GPU.
        if out == "bf16":
            d = d.astype(_ml.bfloat16)
        elif out == "f16":
            d = d.astype(np.float16)
    return _back(d, ta or tb)
