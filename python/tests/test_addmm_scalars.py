"""torch.addmm with alpha and beta against what an H200 returned (driver 580.159.04, torch 2.11,
cuBLAS 13.1.0.3): three recordings of scripts/torch-addmm-validate.py (fresh shapes, scalars and
operand styles per seed, each call's kernel from cuBLASLt's logger and D at 8 x 8 sampled
elements). The rules in the H200 models' [schedule.scalars] were fitted on seeds 60301 (160
calls) and 60302 (200 calls), so those are in-sample; seed 60303 (300 calls) was drawn and run
after the rules were fixed and is the held-out set. The rule of the small-N kernels
(algorithm 11: alpha scales A before the products) came later from a designed probe
(scripts/probes/gemmsn-alpha.py, seed 60401), so for it all three sets are held out. Operands are regenerated from the record's
seed (scripts/torch-bmm-probe.py's generator); the sampled rows of A and columns of B are
emulated under the whole GEMM's kernel and plan (``whole_shape``)."""
import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")
import mmafuzz  # noqa: E402
import mmafuzz.torch as mt  # noqa: E402
import probe_records  # noqa: E402
from probe_records import generator  # noqa: E402

# seed: (calls, exact, declined); wrong must be 0.
EXPECTED = {60301: (160, 144, 16), 60302: (200, 191, 9), 60303: (300, 268, 32)}
DTYPE = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}
NAME = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


def records(seed=60301):
    return probe_records.records(f"h200-addmm-{seed}")


def model(r):
    i, o = NAME[r["dtype"]], NAME[r["out"]]
    return f"h200:cublas.gemm.{o}.{i}.{i}.{o}"


def scalar_kind(r):
    a, b = r["alpha"], r["beta"]
    if b == 0:
        return "beta 0"
    return "beta 1" if b == 1 else "beta other"


def emulate(g, r):
    """D at the record's sampled elements, or NotModelled/UnlearnedShape raised."""
    seed, call, (m, n, k), st = r["seed"], r["call"], (r["m"], r["n"], r["k"]), r["style"]
    dt, out = DTYPE[r["dtype"]], DTYPE[r["out"]]
    a = np.concatenate([g.rows(seed, call, 0, 0, i, 1, k, st) for i in r["rows"]]).astype(dt)
    b = np.concatenate([g.rows(seed, call, 1, 0, j, 1, k, st) for j in r["cols"]]).T.astype(dt)
    c = np.concatenate([g.rows(seed, call, 2, 0, i, 1, n, st)[:, r["cols"]] for i in r["rows"]]).astype(out)
    beta0 = r["beta"] == 0
    return mmafuzz.matmul(a, np.ascontiguousarray(b), None if beta0 else c, model(r), op="mm" if beta0 else "addmm", config=r["kernels"][0],
                          alpha=r["alpha"], beta=r["beta"], whole_shape=(m, n, k))


def outcome(g, r):
    if len(r["kernels"]) != 1:
        return "declined: no single logged kernel"
    try:
        d = emulate(g, r)
    except (mmafuzz.NotModelled, mmafuzz.UnlearnedShape) as e:
        return f"declined: {e}"
    got = np.asarray(d).view({4: np.uint32, 2: np.uint16}[np.asarray(d).dtype.itemsize]).astype(np.uint64).reshape(-1)
    want = np.array([int(x, 16) for x in r["d"]], np.uint64)
    return "exact" if np.array_equal(got, want) else "wrong"


@pytest.mark.parametrize("seed", sorted(EXPECTED), ids=lambda s: f"seed{s}-{'held-out' if s == 60303 else 'in-sample'}")
def test_addmm_with_alpha_and_beta_on_the_recorded_calls(seed):
    calls, exact, declined_count = EXPECTED[seed]
    recs = records(seed)
    assert len(recs) == calls and all(r["provenance"]["gpu"] == "NVIDIA H200" and r["seed"] == seed for r in recs)
    g = generator()
    results = [outcome(g, r) for r in recs]
    probe_records.tally(recs, results, lambda r: (f"{r['dtype']}->{r['out']}", scalar_kind(r)))
    wrong = [(r["call"], r["m"], r["n"], r["k"], r["dtype"], r["out"], r["alpha"], r["beta"], r["kernels"]) for r, res in zip(recs, results) if res == "wrong"]
    assert not wrong, wrong
    declined = [res for res in results if res.startswith("declined")]
    print(len(declined), "declined:", sorted(set(d[:90] for d in declined)))
    assert (results.count("exact"), len(declined)) == (exact, declined_count)


def test_the_torch_call_passes_alpha_and_beta():
    # Small integers under an unsplit SGEMM kernel of the recording: mt.addmm forwards alpha
    # and beta (exact here, so D is the plain formula), and beta 0 ignores a NaN input as torch
    # does.
    cfg = next(r["kernels"][0] for r in records() if r["dtype"] == "float32" and "numSplitsK" not in r["kernels"][0] and r["kernels"][0].startswith("algoId=20"))
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (4, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (16, 8)).astype(np.float32)
    c = rng.integers(-4, 5, (4, 8)).astype(np.float32)
    d = mt.addmm(c, a, b, beta=0.5, alpha=2.0, config=cfg)
    assert np.array_equal(d, (2 * (a @ b) + 0.5 * c).astype(np.float32))
    nan = np.full_like(c, np.nan)
    assert np.array_equal(mt.addmm(nan, a, b, beta=0, alpha=0.5, config=cfg), (0.5 * (a @ b)).astype(np.float32))


def test_small_n_kernels_scale_a_by_alpha():
    # scripts/probes/gemmsn-alpha.py (seed 60401): ten small shapes, whole D of torch.mm and of
    # torch.addmm at (alpha, beta) = (0.3, 0), (0.3, 0.7), (1, 0.7), (0.3, 1), on float32. On
    # cuBLAS's small-N kernels (algorithm 11) D = fma(beta, C, A'B) with A' = f32(alpha * A); the
    # larger shapes ran algorithms 20 and 55 and check their rules on fresh calls.
    g = generator()
    recs = probe_records.records("h200-gemmsn-alpha-60401")
    assert len(recs) == 50 and all(r["provenance"]["gpu"] == "NVIDIA H200" for r in recs)
    small_n = 0
    for r in recs:
        m, n, k, call = r["m"], r["n"], r["k"], r["call"]
        a = g.rows(r["seed"], call, 0, 0, 0, m, k, r["style"])
        b = np.ascontiguousarray(g.rows(r["seed"], call, 1, 0, 0, n, k, r["style"]).T)
        c = g.rows(r["seed"], call, 2, 0, 0, m, n, r["style"])
        beta0 = r["beta"] == 0
        d = mmafuzz.matmul(a, b, None if beta0 else c, "h200:cublas.gemm.f32.f32.f32.f32", op="mm" if beta0 else "addmm", config=r["lt"][0],
                           alpha=r["alpha"], beta=r["beta"])
        want = np.array([int(x, 16) for x in r["d"]], np.uint32)
        assert np.array_equal(np.asarray(d).reshape(-1).view(np.uint32), want), (call, m, n, k, r["alpha"], r["beta"], r["lt"])
        small_n += r["lt"][0] == "algoId=11" and r["alpha"] != 1
    assert small_n == 15
