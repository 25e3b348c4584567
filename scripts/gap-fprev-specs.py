#!/usr/bin/env python3
"""FPRev probes for the GEMV-like kernels the models do not run yet, from check-predict outcomes.

    mmafuzz library check-predict TRACE.tsv.gz ... --gpu h200 --outcomes OUT.tsv.gz
    python3 scripts/gap-fprev-specs.py OUT.tsv.gz SPECS.txt [--per 2] [--algos 11,13,14,16] \
        [--records JOBS.json --records-per 4]

Every traced GEMM whose logged kernel the model does not run (`unmodelled`) and whose algorithm
is one of --algos names a kernel: path, call, algorithm, customOption, split or not. For each,
up to --per of its traced shapes (the smallest first) become `scripts/torch-fprev.py` specs, on
the FPRev path that makes the same call (torch.mm, torch.addmm with a zero C, F.linear with or
without a bias) where that path can count the tree at this K: every anchor up to K = 300,
`spread:12` above. cuBLASLt picks the kernel by the shape, so the probe meets the same kernel;
its log is stored with the probe. Then `mmafuzz library infer-lanes` on the FPRev output.
`spread:12` keeps the output small at long K; a second run with more anchors settles a kernel
the first leaves ambiguous.

--records writes up to --records-per other traced shapes of each kernel (not probed) as
`scripts/torch-lib.py record --shapes` jobs (scripts/device-gaps.sh): D recorded there checks an
inferred rule bit for bit on shapes the inference did not see.
"""
import argparse, gzip, json, re

# torch-lib.py record's beta and bias for each call (F.linear without a bias: "linear").
BETA_BIAS = {"mm": (0, 0), "addmm": (1, 0), "linear_bias": (0, 1), "linear": (0, 0)}

# (path, call) -> FPRev path, and the largest K it counts exactly.
FPREV = {
    ("cublas.gemm.f64.f64.f64.f64", "mm"): ("f64", None),
    ("cublas.gemm.f64.f64.f64.f64", "addmm"): ("f64.addmm", None),
    ("cublas.gemm.f64.f64.f64.f64", "linear"): ("f64.linear_nobias", None),
    ("cublas.gemm.f64.f64.f64.f64", "linear_bias"): ("f64.linear", None),
    ("cublas.gemm.f32.f32.f32.f32", "mm"): ("f32", None),
    ("cublas.gemm.f32.f32.f32.f32", "addmm"): ("f32.addmm", None),
    ("cublas.gemm.f32.f32.f32.f32", "linear"): ("f32.linear_nobias", None),
    ("cublas.gemm.f32.f32.f32.f32", "linear_bias"): ("f32.linear", None),
    ("cublas.gemm.f32.tf32.tf32.f32", "mm"): ("tf32", None),
    ("cublas.gemm.f32.tf32.tf32.f32", "addmm"): ("tf32.addmm", None),
    ("cublas.gemm.f32.tf32.tf32.f32", "linear"): ("tf32.linear_nobias", None),
    ("cublas.gemm.f32.tf32.tf32.f32", "linear_bias"): ("tf32.linear", None),
    ("cublas.gemm.f32.f16.f16.f32", "mm"): ("f16.f32", None),
    ("cublas.gemm.f32.f16.f16.f32", "addmm"): ("f16.f32.addmm", None),
    ("cublas.gemm.f32.bf16.bf16.f32", "mm"): ("bf16.f32", None),
    ("cublas.gemm.f32.bf16.bf16.f32", "addmm"): ("bf16.f32.addmm", None),
    ("cublas.gemm.f16.f16.f16.f16", "mm"): ("f16", 8),
    ("cublas.gemm.f16.f16.f16.f16", "addmm"): ("f16.addmm", 2049),
    ("cublas.gemm.bf16.bf16.bf16.bf16", "mm"): ("bf16", 257),
    ("cublas.gemm.bf16.bf16.bf16.bf16", "linear"): ("bf16.linear_nobias", 257),
    ("cublas.gemm.bf16.bf16.bf16.bf16", "linear_bias"): ("bf16.linear", 257),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outcomes")
    ap.add_argument("specs")
    ap.add_argument("--per", type=int, default=2)
    ap.add_argument("--algos", default="11,13,14,16")
    ap.add_argument("--records")
    ap.add_argument("--records-per", type=int, default=4)
    a = ap.parse_args()
    algos = {int(x) for x in a.algos.split(",")}
    kernels = {}
    with gzip.open(a.outcomes, "rt") as f:
        next(f)
        for line in f:
            path, call, m, n, k, _cls, outcome, logged, _model = line.rstrip("\n").split("\t")
            if outcome != "unmodelled":
                continue
            algo = int(re.search(r"algoId=(\d+)", logged).group(1))
            if algo not in algos:
                continue
            opt = re.search(r"customOption=(\d+)", logged)
            split = re.search(r"numSplitsK=(-?\d+)", logged)
            key = (path, call, algo, int(opt.group(1)) if opt else 0, int(split.group(1)) if split else 1)
            kernels.setdefault(key, set()).add((int(m), int(n), int(k)))
    specs, jobs, skipped = [], [], 0
    for key, shapes in sorted(kernels.items()):
        fp = FPREV.get(key[:2])
        if fp is None:
            skipped += 1
            continue
        name, kmax = fp
        fit = sorted((s for s in shapes if kmax is None or s[2] <= kmax), key=lambda s: (s[0] * s[1] * s[2], s))
        if not fit:
            skipped += 1
            continue
        for m, n, k in fit[: a.per]:
            specs.append(f"{name}:{m}x{n}x{k}:{'all' if k <= 300 else 'spread:12'}")
        for m, n, k in sorted(shapes - set(fit[: a.per]))[: a.records_per]:
            beta, bias = BETA_BIAS[key[1]]
            j = {"path": key[0], "m": m, "n": n, "k": k, "beta": beta}
            if bias:
                j["bias"] = 1
            elif key[1] == "linear":
                j["linear"] = 1
            jobs.append(j)
    with open(a.specs, "w") as f:
        f.write("\n".join(specs) + "\n")
    print(f"{len(kernels)} unmodelled kernels, {len(specs)} probes written to {a.specs}; {skipped} kernels with no FPRev path at their K")
    if a.records:
        with open(a.records, "w") as f:
            json.dump(jobs, f, separators=(",", ":"))
        print(f"{a.records}: {len(jobs)} GEMMs to record")


if __name__ == "__main__":
    main()
