# %% [markdown]
# # Is this PyTorch matmul what the emulator says, bit for bit?
#
# A notebook in script form (`# %%` cells). On a machine with a CUDA GPU of the model's kind
# (an H100 or H200 for the `sm90:` models), runs `torch.mm` and `torch.addmm` at shapes the
# library model learned, on fresh random inputs, and compares every element of D with
# `mmafuzz.matmul`. Without CUDA it says so and stops.
#
#     python examples/python/check_torch.py [--shapes 12] [--seed 1] [--model h100:cublas.gemm.f32.f16.f16.f32 ...]

# %%
import argparse
import sys

import numpy as np

import mmafuzz

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--shapes", type=int, default=12, help="shapes per model and beta")
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--max-elements", type=float, default=2e8, help="skip shapes with m*n*k above this")
parser.add_argument("--model", nargs="*", default=None, help="library models (default: every cublas.gemm model)")
args, _ = parser.parse_known_args()

try:
    import torch
except ImportError:
    sys.exit("check_torch: PyTorch is not installed; nothing to compare with")
if not torch.cuda.is_available():
    sys.exit("check_torch: no CUDA GPU visible to PyTorch; nothing to compare with")
import ml_dtypes

print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}")

# %% How each model's formats map to torch and NumPy. TF32 is PyTorch's allow_tf32 switch; 16-bit
# inputs into f32 are torch.mm(..., out_dtype=torch.float32); every other setting is PyTorch's default.
TORCH = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
models = args.model or [name for kind, name, _ in mmafuzz.models("library") if ":cublas.gemm." in name]


def as_numpy(t, fmt):
    """A CUDA tensor's bits as a NumPy array of the format's dtype."""
    width = {"f16": torch.int16, "bf16": torch.int16, "f32": torch.int32, "f64": torch.int64}[fmt]
    return t.cpu().view(width).numpy().view(NUMPY[fmt])


# %% Compare.
rng = np.random.default_rng(args.seed)
total = {"exact": 0, "differ": 0, "declined": 0}
for model in models:
    a_fmt, b_fmt, d_fmt = mmafuzz._native.library_formats(model)
    tf32 = ".tf32." in model
    torch.backends.cuda.matmul.allow_tf32 = tf32
    out_dtype = TORCH[d_fmt] if d_fmt != a_fmt and a_fmt in ("f16", "bf16") else None
    shapes = [s for s in mmafuzz.learned_shapes(model) if s[0] * s[1] * s[2] <= args.max_elements]
    for beta in (0, 1):
        pool = [s for s in shapes if s[3] == beta]
        for i in rng.choice(len(pool), size=min(args.shapes, len(pool)), replace=False):
            m, n, k, _, kernel = pool[i]
            a = torch.randn(m, k, device="cuda").to(TORCH[a_fmt])
            b = torch.randn(k, n, device="cuda").to(TORCH[b_fmt])
            c = torch.randn(m, n, device="cuda").to(TORCH[d_fmt]) if beta else None
            extra = {"out_dtype": out_dtype} if out_dtype is not None else {}
            d = torch.addmm(c, a, b, **extra) if beta else torch.mm(a, b, **extra)
            torch.cuda.synchronize()
            try:
                e = mmafuzz.matmul(as_numpy(a, a_fmt), as_numpy(b, b_fmt), as_numpy(c, d_fmt) if beta else None, model=model)
            except mmafuzz.NotModelled as err:
                total["declined"] += 1
                print(f"  {model} {m}x{n}x{k} beta {beta}: declined ({err})")
                continue
            got = as_numpy(d, d_fmt)
            differ = int((got.view(f"u{got.dtype.itemsize}") != e.view(f"u{e.dtype.itemsize}")).sum())
            total["exact" if differ == 0 else "differ"] += 1
            print(f"  {model} {m}x{n}x{k} beta {beta} [{kernel}]: {'equal' if differ == 0 else f'{differ} of {m * n} elements differ'}")

print(f"\n{total['exact']} GEMMs equal bit for bit, {total['differ']} differ, {total['declined']} declined (kernels not modelled yet)")
sys.exit(1 if total["differ"] else 0)
