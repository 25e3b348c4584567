# %% [markdown]
# # Where a tensor-core model departs from exact rounding
#
# A notebook in script form (the `# %%` cells open in Jupyter, VS Code or with jupytext).
# Each tile row holds one large product and 15 small ones whose exponents sit `gap` binades
# below it: the hardware aligns every product to the largest before adding, with a limited
# number of extra bits, so at some gap the small products start to be cut. We count, per gap,
# how often each model's D differs from the exact sum rounded once (MPFR, round to nearest
# even), and plot it.
#
#     python examples/python/departures.py [--tiles N] [--out departures.png]

# %%
import argparse

import numpy as np

import mmafuzz

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--tiles", type=int, default=20000, help="tiles per gap (16 rows of 8 elements each)")
parser.add_argument("--out", default="departures.png", help="where the plot goes")
args, _ = parser.parse_known_args()

MODELS = {
    "H100 mma f16 -> f32": ("sm90:mma.m16n8k16.f32.f16.f16.f32", np.float16),
    "H100 mma bf16 -> f32": ("sm90:mma.m16n8k16.f32.bf16.bf16.f32", "bfloat16"),
    "H100 wgmma f16 -> f32": ("sm90:wgmma.m64n8k16.f32.f16.f16", np.float16),
    "V100 (Fasi et al.)": ("v100", np.float16),
}
GAPS = np.arange(0, 35, 2)

# %% Tiles: one big product per row, the rest `gap` binades below it, random signs.
def tiles(gap, n, m, dtype, rng):
    k = 16
    # The big one near 2^12 so that the small ones stay representable in f16 down to gap 34
    # (2^-22, a subnormal: the exact reference sees the same stored inputs).
    big = rng.uniform(1, 2, (n, m, 1)) * rng.choice([-1, 1], (n, m, 1)) * 2.0 ** 12
    small = rng.uniform(1, 2, (n, m, k - 1)) * rng.choice([-1, 1], (n, m, k - 1)) * 2.0 ** (12 - gap)
    a = np.concatenate([big, small], axis=2)
    rng.permuted(a, axis=2, out=a)  # the big one anywhere along K
    b = rng.uniform(1, 2, (n, k, 8))
    if dtype == "bfloat16":
        import ml_dtypes
        dtype = ml_dtypes.bfloat16
    return a.astype(dtype), b.astype(dtype), np.zeros((n, m, 8), np.float32)


# %% Count the departures.
rng = np.random.default_rng(2026)
rates = {}
for label, (model, dtype) in MODELS.items():
    m = 64 if "wgmma" in model else 16
    row = []
    for gap in GAPS:
        a, b, c = tiles(int(gap), max(1, args.tiles * 16 // m), m, dtype, rng)
        d = mmafuzz.emulate(model, a, b, c)
        exact = mmafuzz.reference(a, b, c)
        row.append(float(np.mean(d.view(np.uint32) != exact.view(np.uint32))))
    rates[label] = row
    first = next((int(g) for g, r in zip(GAPS, row) if r > 0), None)
    print(f"{label:24s} ({model}) departs from exact rounding in {max(row):.1%} of elements at worst; first at gap {first}")

# %% Plot.
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 4))
for label, row in rates.items():
    ax.plot(GAPS, np.array(row) * 100, marker="o", ms=3, label=label)
ax.set_xlabel("exponent gap between the largest product and the others (binades)")
ax.set_ylabel("elements differing from exact RNE (%)")
ax.set_title("Where tensor-core models depart from exact rounding")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(args.out, dpi=120)
print(f"plot written to {args.out}")
