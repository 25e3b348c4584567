"""Where torch's scales and alpha/beta enter, as recorded on an H200 (driver 580.159.04, torch
2.11): scripts/torch-scaled-probe.py wrote corpus/library/probes/h200-epilogue-60002.npz
(sampled elements: 12 x 12 of each FP8 GEMM, up to 16 x 8 of two batches of each batched one;
the script records more, cut down for the repository). These
tests check the recorded GPU outputs against the formulas the docs state, with NumPy alone."""
import pathlib

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")
ROOT = pathlib.Path(__file__).resolve().parents[2]
Z = np.load(ROOT / "corpus/library/probes/h200-epilogue-60002.npz")
F32 = np.float32


def same(x, y):
    return np.array_equal(np.asarray(x, F32).view(np.uint32), np.asarray(y, F32).view(np.uint32))


def fma(a, x, y):
    """a*x + y rounded once to f32 (exact in f64 for these magnitudes: two f32 products fit)."""
    return (np.float64(a) * np.asarray(x, np.float64) + np.asarray(y, np.float64)).astype(F32)


@pytest.mark.parametrize("shape", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("fast", [0, 1])
def test_scaled_mm_scales_by_the_rounded_product_of_the_scales(shape, fast):
    # Per-tensor scales 0.3 and 1.7: D = f32(f32(sa * sb) * acc), where acc is the unit-scale
    # f32 output (the same kernel); bf16 and f16 outputs are that f32 rounded to nearest.
    sa, sb = F32(0.3), F32(1.7)
    acc = Z[f"fp8/{shape}/unit_f32/fast{fast}"].view(F32)
    d = Z[f"fp8/{shape}/scaled_f32/fast{fast}"].view(F32)
    assert same(d, F32(sa * sb) * acc)
    assert not same(d, sa * (sb * acc)), "the scales are multiplied together first"
    bf = Z[f"fp8/{shape}/scaled_bf16/fast{fast}"].view(ml_dtypes.bfloat16)
    assert np.array_equal(bf.view(np.uint16), d.astype(ml_dtypes.bfloat16).view(np.uint16))
    h = Z[f"fp8/{shape}/scaled_f16/fast{fast}"].view(np.float16)
    assert np.array_equal(h.view(np.uint16), d.astype(np.float16).view(np.uint16))


@pytest.mark.parametrize("j", [0, 1, 2])
def test_baddbmm_is_one_fma_of_alpha_acc_and_the_rounded_beta_c(j):
    # FP32 baddbmm with alpha 0.3: D = fma(alpha, acc, beta * C rounded to f32), acc the bmm's
    # output; with beta 1 that is fma(alpha, acc, C), not alpha * acc rounded then added.
    k = f"bmm/f32/{j}"
    acc, c = Z[k + "/bmm"].view(F32), Z[k + "/c"].view(F32)
    alpha, beta = F32(0.3), F32(0.7)
    assert same(Z[k + "/baddbmm_b0"].view(F32), alpha * acc)
    assert same(Z[k + "/baddbmm_a"].view(F32), fma(alpha, acc, c))
    assert not same(Z[k + "/baddbmm_a"].view(F32), alpha * acc + c)
    assert same(Z[k + "/baddbmm_ab"].view(F32), fma(alpha, acc, beta * c))


@pytest.mark.parametrize("j", [0, 1])
def test_int_mm_is_the_exact_integer_sum(j):
    a = Z[f"int/{j}/a"].view(np.int8).astype(np.int64)
    b = Z[f"int/{j}/b"].view(np.int8).astype(np.int64)
    assert np.array_equal((a @ b).astype(np.int32), Z[f"int/{j}/d"].view(np.int32))


@pytest.mark.parametrize("name", ["f16", "bf16"])
def test_16_bit_baddbmm_rounds_alpha_acc_first_where_beta_is_one(name):
    # Integer operands (acc exact in f32), alpha 0.3: with beta 0.7, D = round16(fma(alpha, acc,
    # f32(beta * C))); with beta 1, D = round16(round16(alpha * acc) + C): the sum is rounded to
    # D's format before C is added, as the unsplit kernels' own epilogue adds C.
    dt = np.float16 if name == "f16" else ml_dtypes.bfloat16
    k = f"ibmm/{name}"
    a, b = Z[k + "/a"].view(dt).astype(np.float64), Z[k + "/b"].view(dt).astype(np.float64)
    c = Z[k + "/c"].view(dt).astype(F32)
    acc = (a @ b).astype(F32)
    alpha, beta = F32(0.3), F32(0.7)
    r16 = lambda x: np.asarray(x, F32).astype(dt).view(np.uint16)
    assert np.array_equal(Z[k + "/baddbmm_ab"].view(np.uint16), r16(fma(alpha, acc, beta * c)))
    once = r16(fma(alpha, acc, c))
    twice = r16(r16(alpha * acc).view(dt).astype(F32) + c)
    got = Z[k + "/baddbmm_a"].view(np.uint16)
    assert np.array_equal(got, twice) and not np.array_equal(got, once)
    assert np.array_equal(Z[k + "/addmm_ab"].view(np.uint16), r16(fma(alpha, acc[0], beta * c[0])))


def test_rowwise_scales_apply_scale_b_then_scale_a():
    # Row-wise scales (m x 1 and 1 x n) into f32 at 64x512x1024: D = f32(ra * f32(rb * acc)).
    ra, rb, acc = Z["row/0/ra"].view(F32), Z["row/0/rb"].view(F32), Z["row/0/unit_f32"].view(F32)
    d = Z["row/0/row_f32"].view(F32)
    assert same(d, ra * (rb * acc))
    assert not same(d, (ra * rb) * acc) and not same(d, rb * (ra * acc))
    bf = Z["row/0/row_bf16"].view(np.uint16)
    assert np.array_equal(bf, d.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_mmafuzz_torch_int_mm_returns_the_gpus_bits():
    import mmafuzz
    import mmafuzz.torch as mt

    for j in (0, 1):
        a, b = Z[f"int/{j}/a"].view(np.int8), Z[f"int/{j}/b"].view(np.int8)
        # The recording keeps sampled rows and columns: pad the rows to torch's m > 16.
        pad = np.zeros((max(0, 17 - a.shape[0]), a.shape[1]), np.int8)
        d = mt._int_mm(np.vstack([a, pad]), b)
        assert d.dtype == np.int32 and np.array_equal(d[: a.shape[0]], Z[f"int/{j}/d"].view(np.int32))
    with pytest.raises(ValueError, match="greater than 16"):
        mt._int_mm(np.zeros((16, 8), np.int8), np.zeros((8, 8), np.int8))
    with pytest.raises(ValueError, match="multiples of 8"):
        mt._int_mm(np.zeros((32, 12), np.int8), np.zeros((12, 8), np.int8))
    with pytest.raises(mmafuzz.NotModelled, match="int32's range"):
        mt._int_mm(np.zeros((32, 131_072), np.int8), np.zeros((131_072, 8), np.int8))
    with pytest.raises(mmafuzz.NotModelled, match="H200 only"):
        mt._int_mm(np.zeros((32, 8), np.int8), np.zeros((8, 8), np.int8), gpu="h100")
