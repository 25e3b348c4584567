"""mmafuzz.torch._scaled_mm against what an H200 returned (driver 580.159.04, torch 2.11):
corpus/library/probes/h200-epilogue-60002.npz holds sampled rows of A and of B (stored n x k)
and the GPU's D on those rows and columns, for per-tensor and row-wise scaled calls; the
cuBLASLt log beside it names each call's kernel, which is passed as config=. The kernels are
unsplit, so each element is its own chain along K and the sampled rows and columns emulate as a
GEMM of their own. The operands (seed 60002) were not the ones the scaling was worked out on
(seed 60001)."""
import gzip
import pathlib
import re

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")
import mmafuzz  # noqa: E402
import mmafuzz.torch as mt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBE = ROOT / "corpus/library/probes/h200-epilogue-60002"
Z = np.load(str(PROBE) + ".npz")
E4M3 = ml_dtypes.float8_e4m3fn
OUT = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}


def fp8_kernels():
    """The algo=[...] of every FP8 call in the log, in the order the probe made them."""
    with gzip.open(str(PROBE) + ".lt.log.gz", "rt") as f:
        lines = [l for l in f if "[Trace][cublasLtMatmul]" in l and "R_8F_E4M3" in l]
    return [re.search(r"algo=\[([^\]]*)\]", l).group(1) for l in lines]


KERNELS = fp8_kernels()
# Per probed shape (the fourth, K = 1000, torch refused), without and then with fast
# accumulation: unit_f32, scaled_f32, scaled_bf16, scaled_f16, row_bf16; then the row-wise shape.
CALLS = ["unit_f32", "scaled_f32", "scaled_bf16", "scaled_f16", "row_bf16"]
SHAPES = [0, 1, 2, 3, 5]


def kernel(shape, fast, call):
    return KERNELS[SHAPES.index(shape) * 10 + fast * 5 + CALLS.index(call)]


def bits(x):
    x = np.asarray(x)
    return x.view({4: np.uint32, 2: np.uint16}[x.dtype.itemsize])


def scaled(a, b, sa, sb, **kw):
    """_scaled_mm on the sampled rows of A and of B (n x k), B's rows padded with zeros to a
    multiple of 16 as torch wants n (the padding's columns of D are dropped; with unsplit kernels
    they change no other element)."""
    n = b.shape[0]
    pad = -n % 16
    b = np.concatenate([b, np.zeros((pad, b.shape[1]), b.dtype)])
    if np.ndim(sb) == 2:
        sb = np.concatenate([sb, np.ones((1, pad), np.float32)], axis=1)
    return mt._scaled_mm(a, b.T, sa, sb, **kw)[:, :n]


def test_the_log_holds_every_fp8_call_and_the_docs_count_the_elements():
    assert len(KERNELS) == 53
    calls = [f"fp8/{i}/{c}/fast{f}" for i in SHAPES for f in (0, 1) for c in CALLS[1:]] + ["row/0/row_f32", "row/0/row_bf16"]
    # docs/src/library.md: "all 5,216 recorded elements of the 42 recorded scaled calls".
    assert (len(calls), sum(Z[c].size for c in calls)) == (42, 5216)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fast", [0, 1])
@pytest.mark.parametrize("call", CALLS[1:])
def test_scaled_mm_is_the_gpus_on_every_recorded_element(shape, fast, call):
    key = f"fp8/{shape}"
    a, b = Z[key + "/a"].view(E4M3), Z[key + "/b"].view(E4M3)
    out = call.split("_")[1]
    if call.startswith("row"):
        sa, sb = Z[key + "/row_a"].view(np.float32), Z[key + "/row_b"].view(np.float32)
    else:
        sa, sb = np.float32(0.3), np.float32(1.7)
    d = scaled(a, b, sa, sb, out_dtype=OUT[out], use_fast_accum=bool(fast), config=kernel(shape, fast, call))
    want = Z[f"{key}/{call}/fast{fast}"]
    assert d.dtype == OUT[out] and np.array_equal(bits(d), want.view(bits(d).dtype))


@pytest.mark.parametrize("out", ["f32", "bf16"])
def test_row_wise_scales_into_f32_and_bf16(out):
    a, b = Z["row/0/a"].view(E4M3), Z["row/0/b"].view(E4M3)
    ra, rb = Z["row/0/ra"].view(np.float32), Z["row/0/rb"].view(np.float32)
    d = scaled(a, b, ra, rb, out_dtype=OUT[out], config=KERNELS[51 + (out == "bf16")])
    assert np.array_equal(bits(d), Z[f"row/0/row_{out}"].view(bits(d).dtype))


def test_what_is_not_modelled_is_declined_and_torchs_own_errors_raise():
    a = np.zeros((32, 64), E4M3)
    w = np.zeros((48, 64), E4M3)
    one = np.float32(1)
    cfg = KERNELS[0]
    with pytest.raises(mmafuzz.NotModelled, match="config="):
        mt._scaled_mm(a, w.T, one, one, out_dtype=np.float32)
    with pytest.raises(mmafuzz.NotModelled, match="fp8|float8|out"):
        mt._scaled_mm(a, w.T, one, one, config=cfg)
    with pytest.raises(mmafuzz.NotModelled, match="bias"):
        mt._scaled_mm(a, w.T, one, one, bias=np.zeros(48, np.float32), out_dtype=np.float32, config=cfg)
    with pytest.raises(mmafuzz.NotModelled, match="splits K"):
        mt._scaled_mm(a, w.T, one, one, out_dtype=np.float32, config="algoId=66 tile=MATMUL_TILE_64x64 numSplitsK=2 reductionScheme=REDUCTION_SCHEME_COMPUTE_TYPE")
    with pytest.raises(mmafuzz.NotModelled, match="H200"):
        mt._scaled_mm(a, w.T, one, one, out_dtype=np.float32, config=cfg, gpu="h100")
    with pytest.raises(ValueError, match="divisible by 16"):
        mt._scaled_mm(np.zeros((32, 72), E4M3), np.zeros((40, 72), E4M3).T, one, one, out_dtype=np.float32, config=cfg)
    with pytest.raises(ValueError, match="column-major"):
        mt._scaled_mm(a, np.ascontiguousarray(w.T), one, one, out_dtype=np.float32, config=cfg)
    with pytest.raises(TypeError, match="float8"):
        mt._scaled_mm(a.astype(np.float32), w.T, one, one, out_dtype=np.float32, config=cfg)
    with pytest.raises(TypeError, match="float32 scales"):
        mt._scaled_mm(a, w.T, np.float64(1), one, out_dtype=np.float32, config=cfg)


# Held-out calls: scripts/torch-scaled-validate.py on an H200 (seed 60101), drawn after the
# scaling and this emulation were written and the tests above passed: new shapes (FP8 layers of
# model families at decode and prefill, log-uniform ones), new scales (log-uniform per-tensor,
# row-wise), three input styles, every output dtype. Each record holds its seed, not operands.
VALIDATE = ROOT / "corpus/library/probes/h200-scaled-mm-60101.jsonl.xz"


def validation_records():
    import importlib.util
    import json
    import lzma

    spec = importlib.util.spec_from_file_location("validate", ROOT / "scripts/torch-scaled-validate.py")
    v = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(v)
    with lzma.open(VALIDATE, "rt") as f:
        return v, [json.loads(line) for line in f]


def validate_one(v, r):
    """'exact', 'wrong' or 'declined: why' for one recorded call, with its logged kernel."""
    a = v.regenerate(r, 0, r["rows"])
    b = v.regenerate(r, 1, r["cols"])
    if r["scales"] == "rowwise":
        sa = np.array([int(x, 16) for x in r["ra"]], np.uint32).view(np.float32).reshape(-1, 1)
        sb = np.array([int(x, 16) for x in r["rb"]], np.uint32).view(np.float32).reshape(1, -1)
    else:
        sa, sb = np.float32(r["sa"]), np.float32(r["sb"])
    out = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[r["out"]]
    try:
        d = scaled(a, b, sa, sb, out_dtype=out, use_fast_accum=r["fast"], config=r["kernel"])
    except mmafuzz.NotModelled as e:
        return f"declined: {e}"
    want = np.array([int(x, 16) for x in r["d"]], np.uint64).reshape(d.shape)
    return "exact" if np.array_equal(bits(d).astype(np.uint64), want) else "wrong"


def test_held_out_calls_with_their_logged_kernels():
    v, records = validation_records()
    assert len(records) == 120 and all(r["provenance"]["gpu"] == "NVIDIA H200" for r in records)
    results = [validate_one(v, r) for r in records]
    tally = {}
    for r, res in zip(records, results):
        key = (r["scales"], r["out"], res.split(":")[0])
        tally[key] = tally.get(key, 0) + 1
    print(sorted(tally.items()))
    assert results.count("wrong") == 0, [r["call"] for r, res in zip(records, results) if res == "wrong"]
    declined = [res for res in results if res.startswith("declined")]
    assert all("splits K" in res for res in declined), declined
    assert (results.count("exact"), len(declined)) == (118, 2)
