#!/usr/bin/env python3
"""Compare `mmafuzz bench --paths ...` tables of two builds measured in the same run.

    python3 scripts/bench-compare.py OLD.txt [OLD.txt ...] -- NEW.txt [NEW.txt ...]

Each build may have several tables (runs); per path the median over its runs is taken of the
emulator's terms/s, the ratio to MPFR and the hunt tiles' terms/s. Prints one row per path with
the emulator's speed-up (new / old, both measured side by side), and how many paths reach 50x
MPFR in each build.
"""
import statistics
import sys


def read(files):
    rows = {}
    for name in files:
        with open(name) as f:
            for line in f:
                parts = line.split()
                # shape, model, emulator term/s, MPFR term/s, ratio, [hunt term/s]
                if len(parts) >= 5 and parts[1].startswith("sm90:") and parts[4].endswith("x"):
                    emu, mpfr, ratio = float(parts[2]), float(parts[3]), float(parts[4][:-1])
                    hunt = float(parts[5]) if len(parts) > 5 else float("nan")
                    rows.setdefault(parts[0], []).append((emu, mpfr, ratio, hunt))
    return {p: tuple(statistics.median(r[i] for r in runs) for i in range(4)) for p, runs in rows.items()}


def main():
    if "--" not in sys.argv[1:]:
        sys.exit(__doc__)
    cut = sys.argv.index("--")
    old, new = read(sys.argv[1:cut]), read(sys.argv[cut + 1:])
    paths = [p for p in new if p in old]
    if not paths:
        sys.exit("no path appears in both builds' tables")
    print(f"{'path':40} {'old emu/s':>10} {'new emu/s':>10} {'speed-up':>8} {'old x':>7} {'new x':>7} {'old hunt/s':>10} {'new hunt/s':>10}")
    for p in paths:
        o, n = old[p], new[p]
        print(f"{p:40} {o[0]:10.3e} {n[0]:10.3e} {n[0] / o[0]:7.2f}x {o[2]:6.1f}x {n[2]:6.1f}x {o[3]:10.3e} {n[3]:10.3e}")
    ups = sorted(new[p][0] / old[p][0] for p in paths)
    print(f"{len(paths)} paths; emulator speed-up median {statistics.median(ups):.2f}x (lowest {ups[0]:.2f}x, highest {ups[-1]:.2f}x)")
    for label, table in (("old", old), ("new", new)):
        reach = sum(table[p][2] >= 50 for p in paths)
        low = min(paths, key=lambda p: table[p][2])
        print(f"{label}: {reach} of {len(paths)} paths at >= 50x MPFR; lowest {table[low][2]:.1f}x ({low})")


if __name__ == "__main__":
    main()
