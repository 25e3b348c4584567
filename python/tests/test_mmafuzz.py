"""The Python package against what the GPU recorded (corpus/), against hand-worked values and
the exact reference, and on bad input."""

import pathlib
import subprocess
import sys
import threading
import time

import ml_dtypes
import numpy as np
import pytest

import mmafuzz

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"

F16_F32 = "sm90:mma.m16n8k16.f32.f16.f16.f32"


def bits(x):
    """Raw bit patterns of an array, for bitwise comparison (NaN payloads included)."""
    return np.asarray(x).view(f"u{np.asarray(x).dtype.itemsize}")


# A spread of instruction paths: 16-bit floats, FP8 with mixed formats, TF32, FP64, integers,
# b1 XOR, 2:4 sparse, wgmma.
REPLAYED = [
    "mma.m16n8k16.f32.f16.f16.f32",
    "mma.m16n8k16.f16.f16.f16.f16",
    "mma.m16n8k8.f32.bf16.bf16.f32",
    "mma.m16n8k32.f32.e4m3.e5m2.f32",
    "mma.m16n8k8.f32.tf32.tf32.f32",
    "mma.m8n8k4.f64.f64.f64.f64",
    "mma.m16n8k32.s32.s8.u8.s32.satfinite",
    "mma.m16n8k64.s32.s4.s4.s32",
    "mma.m16n8k256.s32.b1.b1.s32.xor.popc",
    "mma.sp.m16n8k32.f32.f16.f16.f32",
    "wgmma.m64n8k32.f32.e5m2.e4m3",
]


@pytest.mark.parametrize("path", REPLAYED)
def test_emulate_equals_the_gpu_on_its_corpus(path):
    groups = mmafuzz.corpus(CORPUS / f"{path}.jsonl.xz")
    assert groups, "the corpus file has tiles"
    tiles = 0
    for g in groups:
        assert all(gpu.startswith("NVIDIA") for gpu in g["gpu"])
        d = mmafuzz.emulate(f"sm90:{path}", g["a"], g["b"], g["c"], a_fmt=g["a_fmt"], b_fmt=g["b_fmt"], c_fmt=g["c_fmt"], meta=g.get("meta"))
        assert d.shape == g["d"].shape and d.dtype == g["d"].dtype
        differ = np.flatnonzero(bits(d).ravel() != bits(g["d"]).ravel())
        assert differ.size == 0, f"{differ.size} elements differ from the GPU, the first at {differ[:5]}"
        tiles += len(g["a"])
    assert tiles >= 1000


def test_a_different_model_disagrees_with_the_gpu():
    """The replay above can fail: the exact-rounding hypothesis is not what the H100 does."""
    g = mmafuzz.corpus(CORPUS / "mma.m16n8k16.f32.f16.f16.f32.jsonl.xz")[0]
    d = mmafuzz.emulate("exact-rne", g["a"], g["b"], g["c"])
    assert (bits(d) != bits(g["d"])).sum() > 1000


LIBRARY = ["cublas.gemm.f32.f16.f16.f32", "cublas.gemm.bf16.bf16.bf16.bf16", "cublas.gemm.f32.tf32.tf32.f32",
           "cublas.gemm.f64.f64.f64.f64", "cublaslt.matmul.f32.e4m3.e4m3.f32.fast_accum"]


@pytest.mark.parametrize("path", LIBRARY)
def test_matmul_equals_torch_on_the_gpu(path):
    """Whole GEMMs as torch.mm/addmm/F.linear/_scaled_mm returned them on the H100."""
    # FP64 emulates at a fraction of the other paths' speed: its smaller GEMMs only.
    most = 1_000_000 if "f64" in path else 4_000_000
    records = [r for r in mmafuzz.gemm_records(CORPUS / "library" / f"{path}.jsonl.xz", limit=60) if r["m"] * r["n"] * r["k"] <= most]
    run = 0
    for r in records:
        try:
            d = mmafuzz.matmul(r["a"], r["b"], r["c"], model=r["model"], bias=r["bias"], config=r["config"])
        except mmafuzz.NotModelled as e:
            assert "not modelled yet" in str(e)
            continue
        assert d.shape == (r["m"], r["n"])
        got = bits(d.ravel()[r["idx"]])
        assert (got == bits(r["d"])).all(), f"{r['m']}x{r['n']}x{r['k']} {r['config']}: {(got != bits(r['d'])).sum()} elements differ"
        run += 1
    assert run >= 15


def test_matmul_takes_the_kernel_from_the_learned_table():
    """Without config, a learned shape gets the kernel the GPU ran, and the same D."""
    checked = 0
    for r in mmafuzz.gemm_records(CORPUS / "library" / "cublas.gemm.f32.f16.f16.f32.jsonl.xz", limit=40):
        if r["config"] is None or r["bias"] is not None or r["m"] * r["n"] * r["k"] > 4_000_000:
            continue
        try:
            d, used = mmafuzz.matmul(r["a"], r["b"], r["c"], return_config=True)
        except (mmafuzz.UnlearnedShape, mmafuzz.NotModelled):
            continue
        assert used.startswith("algoId="), used
        assert (bits(d.ravel()[r["idx"]]) == bits(r["d"])).all(), f"{r['m']}x{r['n']}x{r['k']}: table {used}, GPU {r['config']}"
        checked += 1
    assert checked >= 10


def test_unlearned_shape_is_said_not_guessed():
    a = np.ones((64, 4096), np.float16)
    b = np.ones((4096, 48), np.float16)
    with pytest.raises(mmafuzz.UnlearnedShape, match="64x48x4096"):
        mmafuzz.matmul(a, b)
    assert issubclass(mmafuzz.UnlearnedShape, mmafuzz.MmafuzzError)
    # F.linear's bias epilogue runs other kernels than torch.mm: the table's are not used for it.
    # (n > 1 and k > 1: with n = 1 or k = 1 torch's F.linear is addmm, whose kernels the table
    # has.) The list comes sorted, so the pick is the same every run.
    shapes = mmafuzz.learned_shapes()
    assert [s[:4] for s in shapes] == sorted(s[:4] for s in shapes) and len(shapes) > 100
    m, n, k, beta, _ = next(s for s in shapes if s[3] == 0 and s[1] > 1 and s[2] > 1 and s[0] * s[1] * s[2] < 100_000)
    x, w = np.ones((m, k), np.float16), np.ones((k, n), np.float16)
    assert mmafuzz.matmul(x, w).shape == (m, n)
    with pytest.raises(mmafuzz.UnlearnedShape, match="bias"):
        mmafuzz.matmul(x, w, bias=np.zeros(n, np.float32))
    # With the kernel given, it runs: all ones sum exactly to 4096.
    d = mmafuzz.matmul(a, b, config="algoId=14 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE numSplitsK=31")
    assert d.dtype == np.float32 and (d == 4096).all()


def test_fasi_probe_v100_drops_tiny_terms_the_reference_keeps():
    """Fasi et al.: 1 + four products of 2^-24 in FP32 on a V100 stays 1."""
    a = np.ones((1, 4), np.float16)
    b = np.full((4, 1), 2.0 ** -24, np.float16)
    c = np.ones((1, 1), np.float32)
    assert mmafuzz.emulate("v100", a, b, c)[0, 0] == np.float32(1.0)
    assert mmafuzz.reference(a, b, c)[0, 0] == np.float32(1 + 2.0 ** -22)


def test_reference_rounding_modes():
    a = np.array([[1.0, 2.0 ** -14]], np.float16)
    b = np.array([[1.0], [2.0 ** -14]], np.float16)  # 1 + 2^-28: between f32 neighbours
    c = np.zeros((1, 1), np.float32)
    assert mmafuzz.reference(a, b, c, rounding="rne")[0, 0] == np.float32(1.0)
    assert mmafuzz.reference(a, b, c, rounding="ru")[0, 0] == np.nextafter(np.float32(1), np.float32(2))
    with pytest.raises(ValueError, match="rounding"):
        mmafuzz.reference(a, b, c, rounding="nearest")


def test_integer_mma_is_exact_integer_arithmetic():
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (50, 16, 32), dtype=np.int8)
    b = rng.integers(-128, 128, (50, 32, 8), dtype=np.int8)
    c = rng.integers(-2**20, 2**20, (50, 16, 8), dtype=np.int32)
    d = mmafuzz.emulate("sm90:mma.m16n8k32.s32.s8.s8.s32", a, b, c)
    assert d.dtype == np.int32
    assert (d == (a.astype(np.int64) @ b.astype(np.int64) + c)).all()


def edge_tiles(n=200, seed=5):
    """f16 tiles with subnormals, cancellation, infinities and NaNs (with payloads)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 16, (n, 16, 16), dtype=np.uint16)
    b = rng.integers(0, 1 << 16, (n, 16, 8), dtype=np.uint16)
    c = rng.integers(0, 1 << 32, (n, 16, 8), dtype=np.uint32)
    return a, b, c


def test_typed_and_raw_bits_give_the_same_bits():
    a, b, c = edge_tiles()
    raw = mmafuzz.emulate(F16_F32, a, b, c, a_fmt="f16", c_fmt="f32")
    assert raw.dtype == np.uint32
    typed = mmafuzz.emulate(F16_F32, a.view(np.float16), b.view(np.float16), c.view(np.float32))
    assert typed.dtype == np.float32
    assert (bits(typed) == raw).all()
    assert np.isnan(typed).any(), "the random bit patterns include NaNs"
    # A path's model gives raw arrays its own formats.
    assert (mmafuzz.emulate(F16_F32, a, b, c) == raw).all()
    # bfloat16 and FP8 through ml_dtypes.
    ab = a.view(ml_dtypes.bfloat16)
    bb = b.view(ml_dtypes.bfloat16)
    m = "sm90:mma.m16n8k16.f32.bf16.bf16.f32"
    assert (bits(mmafuzz.emulate(m, ab, bb, c.view(np.float32))) == mmafuzz.emulate(m, a, b, c, a_fmt="bf16", c_fmt="f32")).all()
    a8 = (a[:, :, :] & 0xFF).astype(np.uint8)
    b8 = (b & 0xFF).astype(np.uint8)
    m8 = "sm90:mma.m16n8k16.f32.e4m3.e4m3.f32"
    typed8 = mmafuzz.emulate(m8, a8.view(ml_dtypes.float8_e4m3fn), b8.view(ml_dtypes.float8_e4m3fn), c.view(np.float32))
    assert (bits(typed8) == mmafuzz.emulate(m8, a8, b8, c, a_fmt="e4m3", c_fmt="f32")).all()


def test_fp6_fp4_and_fnuz_dtypes_from_ml_dtypes():
    """FP4/FP6 operands (RTX Blackwell's kind::f8f6f4, modelled from MMA-Sim) and AMD's fnuz FP8
    arrive typed through ml_dtypes, one value per byte, and give the bits raw input gives; the
    formats are decoded as MMA-Sim decodes them (6 x 28 = 168 per product)."""
    if not hasattr(ml_dtypes, "float4_e2m1fn"):
        pytest.skip("this ml_dtypes has no FP4/FP6")
    rng = np.random.default_rng(5)
    a = rng.integers(0, 16, (6, 16, 32), dtype=np.uint8)
    b = rng.integers(0, 64, (6, 32, 8), dtype=np.uint8)
    c = rng.standard_normal((6, 16, 8)).astype(np.float32)
    m = "rtx-blackwell:mma.m16n8k32.f32.e2m1.e3m2.f32"
    typed = mmafuzz.emulate(m, a.view(ml_dtypes.float4_e2m1fn), b.view(ml_dtypes.float6_e3m2fn), c)
    raw = mmafuzz.emulate(m, a, b, c.view(np.uint32), a_fmt="e2m1", b_fmt="e3m2", c_fmt="f32")
    assert typed.dtype == np.float32 and (bits(typed) == raw).all()
    # Largest magnitudes: e2m1 0x7 is 6, e3m2 0x1f is 28; 32 such products are exact in f32.
    top = mmafuzz.emulate(m, np.full((16, 32), 7, np.uint8), np.full((32, 8), 0x1F, np.uint8), np.zeros((16, 8), np.uint32),
                          a_fmt="e2m1", b_fmt="e3m2", c_fmt="f32")
    assert (top.view(np.float32) == 32 * 6.0 * 28.0).all()
    # fnuz: 0x80 is NaN (no negative zero), and the dtype names the format.
    assert mmafuzz._DTYPE_FMT[np.dtype(ml_dtypes.float8_e4m3fnuz)] == "e4m3fnuz"
    assert np.isnan(np.array([0x80], np.uint8).view(ml_dtypes.float8_e4m3fnuz).astype(np.float32))[0]


def test_block_scales_fold_into_the_products():
    """Block-scaled MMAs (kind::mxf8f6f4.block32, ue8m0): one scale per row of A and column of B
    along K = 32. 2^t on A and 2^-t on B change nothing; 2^3 on A alone is 8 times the exact sum;
    a NaN scale (0xff) makes its row NaN; scales of the wrong shape are a clear error."""
    rng = np.random.default_rng(9)
    path = "rtx-blackwell:mma.m16n8k32.f32.e4m3.e2m1.f32"
    a = rng.integers(0, 0x7f, (4, 16, 32), dtype=np.uint8) & 0x3f  # |a| <= 1.875: no overflow
    b = rng.integers(0, 16, (4, 32, 8), dtype=np.uint8)
    c = np.zeros((4, 16, 8), np.float32)
    ones_a, ones_b = np.full((4, 16, 1), 127, np.uint8), np.full((4, 1, 8), 127, np.uint8)
    kw = dict(a_fmt="e4m3", b_fmt="e2m1")
    plain = mmafuzz.emulate(path, a, b, c, **kw, scale_a=ones_a, scale_b=ones_b)
    assert (bits(plain) == bits(mmafuzz.emulate(path, a, b, c, **kw))).all()
    moved = mmafuzz.emulate(path, a, b, c, **kw, scale_a=ones_a + 9, scale_b=ones_b - 9)
    assert (bits(moved) == bits(plain)).all()
    exact8 = mmafuzz.reference(a, b, c, **kw, scale_a=ones_a + 3, scale_b=ones_b)
    exact1 = mmafuzz.reference(a, b, c, **kw)
    assert (exact8 == 8 * exact1).all()
    nan_a = ones_a.copy()
    nan_a[:, 5] = 0xFF
    d = mmafuzz.emulate(path, a, b, c, **kw, scale_a=nan_a, scale_b=ones_b)
    assert np.isnan(d[:, 5]).all() and not np.isnan(np.delete(d, 5, axis=1)).any()
    if hasattr(ml_dtypes, "float8_e8m0fnu"):
        typed = mmafuzz.emulate(path, a, b, c, **kw, scale_a=(ones_a + 9).view(ml_dtypes.float8_e8m0fnu), scale_b=(ones_b - 9).view(ml_dtypes.float8_e8m0fnu))
        assert (bits(typed) == bits(plain)).all()
    with pytest.raises(ValueError, match="scale_a"):
        mmafuzz.emulate(path, a, b, c, **kw, scale_a=np.full((4, 16, 3), 127, np.uint8), scale_b=ones_b)


@pytest.mark.parametrize("arch, path", [
    ("rtx-blackwell", "mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0"),
    ("rtx-blackwell", "mma.m16n8k64.mxf4nvf4.block16.f32.e2m1.e2m1.f32.ue4m3"),
    ("blackwell", "tcgen05.mma.m128n8k32.mxf8f6f4.block32.f32.e3m2.e2m1.ue8m0"),
])
def test_block_scaled_corpus_replays_mma_sim(arch, path):
    """MMA-Sim's recorded answers on block-scaled tiles come back with their scales, and the
    model discovered against it reproduces them; without the scales it does not."""
    groups = mmafuzz.corpus(CORPUS / "mmasim" / arch / f"{path}.jsonl.xz")
    assert groups and all("scale_a" in g for g in groups)
    for g in groups:
        t, m, n = g["d"].shape
        k = g["b"].shape[1]
        block = k // g["scale_a"].shape[2]
        assert g["scale_a"].shape == (t, m, k // block) and g["scale_b"].shape == (t, k // block, n)
        assert all("MMA-Sim" in s for s in g["gpu"])
        kw = dict(a_fmt=g["a_fmt"], b_fmt=g["b_fmt"], c_fmt=g["c_fmt"])
        d = mmafuzz.emulate(f"{arch}:{path}", g["a"], g["b"], g["c"], **kw,
                            scale_a=g["scale_a"], scale_b=g["scale_b"], scale_fmt=g["scale_fmt"])
        differ = np.flatnonzero(bits(d).ravel() != bits(g["d"]).ravel())
        assert differ.size == 0, f"{differ.size} elements differ from MMA-Sim, the first at {differ[:5]}"
        ones = np.full_like(g["scale_a"], 0x7F if g["scale_fmt"] == "ue8m0" else 0x38)
        unscaled = mmafuzz.emulate(f"{arch}:{path}", g["a"], g["b"], g["c"], **kw, scale_a=ones,
                                   scale_b=np.full_like(g["scale_b"], ones.flat[0]), scale_fmt=g["scale_fmt"])
        assert (bits(unscaled) != bits(g["d"])).sum() > d.size // 10


def test_d_wider_than_c():
    """mma.m8n8k4.f32.f16.f16.f16 adds f16 C into f32 D: d_fmt gives D's format (float32 out),
    and the sum is rounded once into it, exactly as with C widened to float32 beforehand."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((20, 8, 4)).astype(np.float16)
    b = rng.standard_normal((20, 4, 8)).astype(np.float16)
    c = (rng.standard_normal((20, 8, 8)) * 1e-3).astype(np.float16)
    d = mmafuzz.reference(a, b, c, d_fmt="f32")
    assert d.dtype == np.float32 and d.shape == (20, 8, 8)
    assert (bits(d) == bits(mmafuzz.reference(a, b, c.astype(np.float32)))).all()
    assert (d != mmafuzz.reference(a, b, c)).any(), "an f16 D would round what f32 keeps"
    e = mmafuzz.emulate("exact-rne", a, b, c, d_fmt="f32")
    assert e.dtype == np.float32 and (bits(e) == bits(d)).all()
    raw = mmafuzz.emulate("exact-rne", a.view(np.uint16), b.view(np.uint16), c.view(np.uint16), a_fmt="f16", c_fmt="f16", d_fmt="f32")
    assert raw.dtype == np.uint32 and (raw == bits(d)).all()


def test_one_tile_strided_views_and_byte_order():
    a, b, c = edge_tiles(3)
    whole = mmafuzz.emulate(F16_F32, a, b, c)
    one = mmafuzz.emulate(F16_F32, a[1], b[1], c[1])
    assert one.shape == (16, 8) and (one == whole[1]).all()
    # A transposed view (not C-contiguous) and big-endian copies give the same bits.
    bt = np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)
    assert not bt.flags.c_contiguous
    assert (mmafuzz.emulate(F16_F32, a, bt, c) == whole).all()
    big = a.view(np.float16).astype(">f2")
    d = mmafuzz.emulate(F16_F32, big, b.view(np.float16), c.view(np.float32).astype(">f4"))
    assert d.dtype == np.float32 and (bits(d) == whole).all()


def test_c_none_is_positive_zero():
    a, b, _ = edge_tiles(20)
    zero = np.zeros((20, 16, 8), np.uint32)
    assert (mmafuzz.emulate(F16_F32, a, b) == mmafuzz.emulate(F16_F32, a, b, zero)).all()
    with pytest.raises(ValueError, match="c_fmt"):
        mmafuzz.emulate("h100", a, b, a_fmt="f16")


def test_bad_input_is_a_clear_error():
    a, b, c = edge_tiles(2)
    with pytest.raises(TypeError, match="a_fmt"):
        mmafuzz.emulate("h100", a, b, c)
    with pytest.raises(ValueError, match="inner dimensions"):
        mmafuzz.emulate(F16_F32, a, b[:, :8], c)
    with pytest.raises(ValueError, match="tiles"):
        mmafuzz.emulate(F16_F32, a, b[:1], c)
    with pytest.raises(ValueError, match="c has shape"):
        mmafuzz.emulate(F16_F32, a, b, c[:, :, :4])
    with pytest.raises(ValueError, match="dimensions"):
        mmafuzz.emulate(F16_F32, a[0, 0], b, c)
    with pytest.raises(mmafuzz.MmafuzzError, match="unknown model"):
        mmafuzz.emulate("no-such-model", a, b, c)
    with pytest.raises(mmafuzz.MmafuzzError, match="library model"):
        mmafuzz.emulate("h100:cublas.gemm.f32.f16.f16.f32", a, b, c)
    with pytest.raises(mmafuzz.MmafuzzError, match="instruction model"):
        mmafuzz.matmul(a[0].view(np.float16), b[0].view(np.float16), model=F16_F32)
    with pytest.raises(TypeError, match="float32"):
        mmafuzz.matmul(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32))
    with pytest.raises(mmafuzz.MmafuzzError, match="config"):
        mmafuzz.matmul(np.ones((4, 4), np.float16), np.ones((4, 4), np.float16), config="algoId=banana")
    with pytest.raises(ValueError, match="wider than"):
        mmafuzz.emulate("sm90:mma.m16n8k64.s32.s4.s4.s32", np.full((1, 16, 64), 0x1F, np.uint8), np.zeros((1, 64, 8), np.uint8), np.zeros((1, 16, 8), np.int32))
    with pytest.raises(TypeError, match="needs 1"):
        mmafuzz.emulate(F16_F32, a, b, c, a_fmt="e4m3")
    with pytest.raises(ValueError, match="range"):
        mmafuzz.emulate("sm90:mma.m16n8k64.s32.s4.s4.s32", np.full((1, 16, 64), 9, np.int8), np.zeros((1, 64, 8), np.int8), np.zeros((1, 16, 8), np.int32), a_fmt="s4", b_fmt="s4")
    with pytest.raises(ValueError, match="meta"):
        mmafuzz.emulate("sm90:mma.sp.m16n8k32.f32.f16.f16.f32", np.zeros((1, 16, 16), np.float16), np.zeros((1, 32, 8), np.float16), np.zeros((1, 16, 8), np.float32))


def test_models_lists_every_kind():
    kinds = {k for k, _, _ in mmafuzz.models()}
    assert kinds == {"instruction", "library", "hypothesis"}
    names = [n for _, n, _ in mmafuzz.models("library")]
    assert "h100:cublas.gemm.f32.f16.f16.f32" in names and "h200:cublaslt.matmul.f32.e4m3.e4m3.f32" in names
    assert F16_F32 in [n for _, n, _ in mmafuzz.models("instruction")]


def test_the_gil_is_released_while_emulating():
    """Another Python thread runs while emulate works (it holds no GIL in Rust)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5000, 64, 16)).astype(np.float16)
    b = rng.standard_normal((5000, 16, 8)).astype(np.float16)
    c = np.zeros((5000, 64, 8), np.float32)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    time.sleep(0.01)
    calls = []  # (start, end) of each call, until they add up to half a second
    while sum(e - s for s, e in calls) < 0.5:
        start = time.perf_counter()
        mmafuzz.emulate("sm90:wgmma.m64n8k16.f32.f16.f16", a, b, c)
        calls.append((start, time.perf_counter()))
    done.set()
    t.join()
    busy = sum(e - s for s, e in calls)
    during = [x for x in ticks if any(s < x < e for s, e in calls)]
    # Holding the GIL, the ticker could run only between calls: not one tick inside them. A
    # few are enough to show it ran, however loaded the machine is.
    assert len(during) >= 3, f"{len(during)} ticks in {busy:.3f} s of {len(calls)} calls"


def test_departures_example_runs(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "departures.png"
    r = subprocess.run([sys.executable, str(ROOT / "examples/python/departures.py"), "--tiles", "200", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 10_000
    assert "departs from exact rounding" in r.stdout
