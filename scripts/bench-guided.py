#!/usr/bin/env python3
"""Benchmark: guided against unguided hunts (no GPU needed: the planted model stands where the
GPU stands, the path's sm90 model is the model under test, as on the GPU).

    python3 scripts/bench-guided.py MMAFUZZ_BINARY [--seeds 11] [--max-tiles 1000000]
                                    [--curve-tiles 1000000] [--plants NAME ...]
                                    [--paths-tiles 100000]

1. Tiles to the first divergence for each planted one-knob change (fuzz/plants/*.toml), over
   seeds 1..S (11 by default), guided (`hunt --guided`) and unguided (`hunt`, batches of 256 so the first
   divergent tile is found to within one small batch; the state records its exact number);
   a hunt that finds nothing within --max-tiles counts as "> max". Median ratio per plant.
2. Arithmetic features reached (situations × count levels) after 10^3 … 10^6 tiles on the
   sm90 f16 model against itself, guided and unguided, seed 1.
3. Features after --paths-tiles tiles on every mma.sync path (its sm90 model against itself),
   guided and unguided, seed 1, with the most the guided hunt could reach there (the situations
   it reached × 8 levels). 0 skips it.
Prints three Markdown tables (docs/src/benchmarks.md, "Measuring the rest", lists the command).
"""
import argparse, json, os, shutil, statistics, subprocess, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Plant file -> path it changes.
PLANTS = {
    "f16-accflush": "mma.m16n8k16.f32.f16.f16.f32",
    "f16h-floor6": "mma.m16n8k16.f16.f16.f16.f16",
    "f16h-floor8": "mma.m16n8k16.f16.f16.f16.f16",
    "bf16-floor6": "mma.m16n8k16.f32.bf16.bf16.f32",
    "tf32-floor6": "mma.m16n8k8.f32.tf32.tf32.f32",
    "f16h-outsub": "mma.m16n8k16.f16.f16.f16.f16",
}


MMA_SYNC = ["mma.m16n8k16.f32.f16.f16.f32", "mma.m16n8k16.f32.bf16.bf16.f32", "mma.m16n8k16.f16.f16.f16.f16",
            "mma.m16n8k8.f32.tf32.tf32.f32", "mma.m16n8k32.f32.e4m3.e4m3.f32", "mma.m16n8k32.f32.e5m2.e5m2.f32",
            "mma.m8n8k4.f64.f64.f64.f64"]


def hunt(binary, path, against, seed, tiles, guided, work, stop_at_first=True):
    findings = os.path.join(work, "findings")
    shutil.rmtree(findings, ignore_errors=True)
    pop = os.path.join(work, "population")
    shutil.rmtree(pop, ignore_errors=True)
    cmd = [binary, "hunt", "--path", path, "--against", against, "--tiles", str(tiles), "--seed", str(seed),
           "--findings", findings, "--per-class", "0", "--exact-every", "1000000000"]
    if stop_at_first:
        cmd.append("--stop-at-first")
    if guided:
        cmd += ["--guided", "--population", pop]
    else:
        cmd += ["--batch", "256"]
        if stop_at_first:
            # The first divergence needs no features: map none (the default maps 1 tile in 16).
            cmd += ["--features-every", "1000000000"]
        else:
            # Features of every tile, as the guided hunt maps them (the default samples 1 in 16;
            # a hunt for the first divergence needs none).
            cmd += ["--features-every", "1"]
    t0 = time.time()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    secs = time.time() - t0
    states = [f for f in os.listdir(os.path.join(findings, path)) if f.endswith(".state.json")]
    with open(os.path.join(findings, path, states[0])) as f:
        return json.load(f), secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--seeds", type=int, default=11)
    ap.add_argument("--max-tiles", type=int, default=1_000_000)
    ap.add_argument("--curve-tiles", type=int, default=1_000_000)
    ap.add_argument("--plants", nargs="*", default=list(PLANTS))
    ap.add_argument("--paths-tiles", type=int, default=100_000)
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    work = tempfile.mkdtemp(prefix="bench-guided-")
    os.chdir(ROOT)
    print(f"| plant | path | guided: tiles to first divergence (seeds 1..{args.seeds}) | unguided | median guided / median unguided |")
    print("|---|---|---|---|---|")
    for plant in args.plants:
        path = PLANTS[plant]
        g, u = [], []
        for seed in range(1, args.seeds + 1):
            for guided, out in ((True, g), (False, u)):
                state, _ = hunt(binary, path, f"fuzz/plants/{plant}.toml", seed, args.max_tiles, guided, work)
                out.append(state.get("first_divergence"))
        show = lambda xs: ", ".join(str(x) if x is not None else f">{args.max_tiles}" for x in xs)
        # Not found counts as the cap (a lower bound for the unguided median, so the ratio is an upper bound).
        med = lambda xs: statistics.median([x if x is not None else args.max_tiles for x in xs])
        mg, mu = med(g), med(u)
        lower = "≤ " if any(x is None for x in u) and not any(x is None for x in g) else ""
        print(f"| {plant} | {path} | {show(g)} | {show(u)} | {lower}{mg / mu:.3g} |", flush=True)
    print()
    path = "mma.m16n8k16.f32.f16.f16.f32"
    rows = {}
    for guided in (True, False):
        state, secs = hunt(binary, path, f"sm90:{path}", 1, args.curve_tiles, guided, work, stop_at_first=False)
        rows[guided] = ({p[0]: p[1] for p in state["feature_curve"]}, {p[0]: p[2] for p in state["feature_curve"]}, state["tiles"] / secs)
    points = sorted(set(rows[True][0]) | set(rows[False][0]))
    print(f"| tiles ({path}, seed 1) | guided: features (situations) | unguided: features (situations) | ratio of features |")
    print("|---|---|---|---|")
    for p in points:
        gf, gs = rows[True][0].get(p), rows[True][1].get(p)
        uf, us = rows[False][0].get(p), rows[False][1].get(p)
        ratio = f"{gf / uf:.2f}" if gf and uf else "-"
        print(f"| {p:,} | {gf} ({gs}) | {uf} ({us}) | {ratio} |")
    if args.paths_tiles:
        print(f"\n| path ({args.paths_tiles:,} tiles, seed 1) | guided: features (situations) | unguided | ratio | guided's ceiling (situations x 8) |")
        print("|---|---|---|---|---|")
        for p in MMA_SYNC:
            got = {}
            for guided in (True, False):
                state, _ = hunt(binary, p, f"sm90:{p}", 1, args.paths_tiles, guided, work, stop_at_first=False)
                got[guided] = state["feature_curve"][-1]
            (_, gf, gs), (_, uf, us) = got[True], got[False]
            print(f"| {p} | {gf:,} ({gs}) | {uf:,} ({us}) | {gf / uf:.2f} | {gs * 8:,} |", flush=True)
    print(f"\nthroughput on this machine: guided {rows[True][2]:.0f} tiles/s, unguided {rows[False][2]:.0f} tiles/s "
          f"({os.cpu_count()} cores; both sides are models here)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
