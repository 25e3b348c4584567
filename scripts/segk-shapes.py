#!/usr/bin/env python3
"""FPRev specs for cuBLAS's segment-K kernel (TF32 algorithm 43, split chosen at run time).

    python3 scripts/segk-shapes.py SPECS.txt --seed S [--per 150] [--align 16]
    python3 scripts/segk-shapes.py SPECS.txt --gaps GAPS.tsv [GAPS.tsv ...]
    python3 scripts/segk-shapes.py JOBS.json --probed FPREV.json.xz [...]

With --seed: --per shapes per PyTorch call (torch.mm, addmm with a zero C, F.linear with and
without a bias) drawn log-uniformly where the kernel runs (m 2..1,024 with half of them at the
decode sizes 2..8, n 256..16,384, k 512..32,768, at most 96 output tiles of 128x64; with
--align A, n and k rounded to multiples of A: cuBLASLt runs the sm90 kernels only on 16-byte
aligned rows, and at unaligned random shapes it ran algorithm 43 at 3 of 600 on an H100), for
`scripts/torch-fprev.py --specs SPECS.txt --only 'algoId=43 .*numSplitsK=-1'`: the probe is
made only where cuBLASLt picks that kernel. With --gaps: the shapes of `mmafuzz library
check-predict --gaps` lines whose kernel is that one. `starts:32@` measures where each segment
starts (count(32t, 32t+1) = 8 opens a chain), so the split count of each probed shape is read
off the probe. With --probed: `scripts/torch-lib.py record --shapes` jobs (scripts/device-gaps.sh)
for every shape those FPRev files probed (where the kernel ran), to record D there.
"""
import argparse, gzip, json, lzma, math, random, sys

FPREV = {"mm": "tf32", "addmm": "tf32.addmm", "linear": "tf32.linear_nobias", "linear_bias": "tf32.linear"}


def drawn(seed, per, align):
    rng = random.Random(seed)
    logu = lambda lo, hi: int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
    out = []
    for call in FPREV:
        shapes = set()
        while len(shapes) < per:
            m = rng.randint(2, 8) if rng.random() < 0.5 else logu(9, 1024)
            n, k = (max(align, round(logu(lo, hi) / align) * align) for lo, hi in ((256, 16384), (512, 32768)))
            if math.ceil(m / 128) * math.ceil(n / 64) <= 96:
                shapes.add((m, n, k))
        out += [f"{FPREV[call]}:{m}x{n}x{k}:starts:32@" for m, n, k in sorted(shapes)]
    return out


def gaps(files):
    out = []
    for fn in files:
        with open(fn) as f:
            for line in f:
                c = line.rstrip("\n").split("\t")
                if len(c) < 7 or c[0] == "path" or ".tf32." not in c[0] or not c[6].startswith("algo 43 ") or "chosen by the kernel" not in c[6]:
                    continue
                spec = f"{FPREV[c[1]]}:{c[2]}x{c[3]}x{c[4]}:starts:32@"
                if spec not in out:
                    out.append(spec)
    return out


def probed(files):
    """Record jobs for every shape the FPRev files probed (the kernel matched --only)."""
    calls = {v: k for k, v in FPREV.items()}
    jobs, seen = [], set()
    for fn in files:
        opener = lzma.open if fn.endswith(".xz") else gzip.open if fn.endswith(".gz") else open
        with opener(fn, "rt") as f:
            probes = json.load(f)["probes"]
        for p in probes:
            call = calls.get(p["path"])
            key = (call, p["m"], p["n"], p["k"])
            if call is None or p.get("counts") is None or key in seen:
                continue
            seen.add(key)
            j = {"path": "cublas.gemm.f32.tf32.tf32.f32", "m": p["m"], "n": p["n"], "k": p["k"], "beta": 1 if call == "addmm" else 0}
            if call == "linear_bias":
                j["bias"] = 1
            elif call == "linear":
                j["linear"] = 1
            jobs.append(j)
    return jobs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--per", type=int, default=150)
    ap.add_argument("--align", type=int, default=1)
    ap.add_argument("--gaps", nargs="+")
    ap.add_argument("--probed", nargs="+")
    a = ap.parse_args()
    if a.probed:
        try:
            jobs = probed(a.probed)
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"segk-shapes.py: {e}")
        with open(a.out, "w") as f:
            json.dump(jobs, f, separators=(",", ":"))
        print(f"{a.out}: {len(jobs)} GEMMs to record")
        return
    if (a.seed is None) == (a.gaps is None):
        sys.exit("segk-shapes.py: give --seed S (drawn shapes) or --gaps FILE... (check-predict gaps)")
    try:
        specs = drawn(a.seed, a.per, max(1, a.align)) if a.gaps is None else gaps(a.gaps)
    except OSError as e:
        sys.exit(f"segk-shapes.py: {e}")
    head = f"# scripts/segk-shapes.py {' '.join(sys.argv[2:])}: TF32 segment-K (algorithm 43, numSplitsK = -1) probes\n"
    with open(a.out, "w") as f:
        f.write(head + "".join(s + "\n" for s in specs))
    print(f"{a.out}: {len(specs)} specs")


if __name__ == "__main__":
    main()
