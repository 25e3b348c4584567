"""mmafuzz.torch against what PyTorch returned on an H200: the 44 GEMMs of
scripts/example-model.py (bf16, f16, TF32, f32; F.linear with and without a bias, torch.mm,
torch.addmm), traced with `mmafuzz library trace` (corpus/library/traces/example-model)."""
import json
import os

import ml_dtypes
import numpy as np
import pytest

import mmafuzz
import mmafuzz.torch as mt

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "..", "..", "corpus", "library", "traces", "example-model")
PATH = {"bf16": "cublas.gemm.bf16.bf16.bf16.bf16", "f16": "cublas.gemm.f16.f16.f16.f16",
        "tf32": "cublas.gemm.f32.tf32.tf32.f32", "f32": "cublas.gemm.f32.f32.f32.f32"}


def _gemms():
    z = np.load(os.path.join(DIR, "gemms.npz"))
    typed = lambda key, dtype: z[key].view(ml_dtypes.bfloat16) if dtype == "bf16" else z[key]
    for i, c in enumerate(json.loads(str(z["calls"]))):
        ops = {name: typed(key, c["dtype"]) for name, key in c["operands"].items()}
        yield i, c, ops, typed(f"{i}.y", c["dtype"])


def _table(dtype):
    return os.path.join(DIR, f"{PATH[dtype]}.configs.tsv.xz")


def test_every_traced_gemm_is_torchs_bits():
    kinds = set()
    for i, c, o, want in _gemms():
        kw = dict(gpu="h200", allow_tf32=c["tf32"], table=_table(c["dtype"]))
        if c["op"] == "linear":
            got = mt.linear(o["x"], o["w"], o.get("bias"), **kw)
            kinds.add("linear_bias" if "bias" in o else "linear")
        elif c["op"] == "mm":
            got = mt.mm(o["a"], o["b"], **kw)
        else:
            got = mt.addmm(o["c"], o["a"], o["b"], **kw)
        kinds.add(c["op"])
        assert got.shape == want.shape and got.dtype == want.dtype, (i, got.shape, want.shape)
        assert np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8)), (i, c)
    assert kinds == {"linear", "linear_bias", "mm", "addmm"}


def test_layouts_and_calls_mirror_torch():
    """mm(x, w.T) is F.linear's call; matmul folds leading dimensions; addmm with a bias row
    and a transposed weight is F.linear's bias epilogue."""
    for i, c, o, want in _gemms():
        if c["op"] != "linear" or c["dtype"] != "f16":
            continue
        kw = dict(gpu="h200", table=_table("f16"))
        x2 = o["x"].reshape(-1, o["x"].shape[-1])
        if "bias" in o:
            got = mt.addmm(o["bias"], x2, o["w"].T, **kw)
        else:
            got = mt.mm(x2, o["w"].T, **kw)
            folded = mt.matmul(o["x"], o["w"].T, **kw)
            assert np.array_equal(folded.view(np.uint16), want.view(np.uint16))
        assert np.array_equal(got.view(np.uint16), want.reshape(got.shape).view(np.uint16)), i


def test_declines_with_reasons():
    a = np.ones((7, 64), np.float16)
    w = np.ones((33, 64), np.float16)
    # A shape the given table does not hold: declined, not guessed.
    with pytest.raises(mmafuzz.UnlearnedShape, match="not in the table"):
        mt.linear(a, w, gpu="h200", table=_table("f16"))
    # alpha and beta other than 1 under a model whose GPU was not measured with them (H100).
    cfg = "algoId=66 tile=MATMUL_TILE_64x64 stages=MATMUL_STAGES_64xAUTO customOption=3 clusterShape=CLUSTER_SHAPE_1x1x1"
    with pytest.raises(mmafuzz.NotModelled, match="beta"):
        mt.addmm(np.ones((7, 33), np.float16), a, np.ascontiguousarray(w.T), beta=0.5, gpu="h100", config=cfg)
    with pytest.raises(mmafuzz.NotModelled, match="GEMV"):
        mt.linear(np.ones(64, np.float16), w)
    with pytest.raises(mmafuzz.NotModelled, match="int32"):
        mt.mm(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match="h100, h200"):
        mt.mm(a, a.T, gpu="a100")
    # out_dtype picks torch's f16 -> f32 path (its model is named in the reason).
    with pytest.raises(mmafuzz.UnlearnedShape, match=r"h200:cublas\.gemm\.f32\.f16\.f16\.f32"):
        mt.mm(a, np.ones((64, 33), np.float16), out_dtype=np.float32)


def test_a_table_from_another_gpu_warns():
    a = np.ones((18, 64), np.float16)
    w = np.ones((128, 64), np.float16)
    with pytest.warns(UserWarning, match="NVIDIA H200"):
        mt.linear(a, w, np.zeros(128, np.float16), gpu="h100", table=_table("f16"))


def test_torch_tensors_in_torch_tensors_out():
    torch = pytest.importorskip("torch")
    for i, c, o, want in _gemms():
        if c["op"] != "linear" or c["dtype"] != "bf16":
            continue
        x = torch.from_numpy(o["x"].view(np.int16)).view(torch.bfloat16)
        w = torch.from_numpy(o["w"].view(np.int16)).view(torch.bfloat16)
        b = None if "bias" not in o else torch.from_numpy(o["bias"].view(np.int16)).view(torch.bfloat16)
        got = mt.linear(x, w, b, gpu="h200", table=_table("bf16"))
        assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
        assert np.array_equal(got.view(torch.int16).numpy().view(np.uint16), want.view(np.uint16)), i
