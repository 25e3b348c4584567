#!/usr/bin/env python3
"""Thins FPRev files of segment-K kernels to the pairs `mmafuzz library fprev` compares exactly.

    python3 scripts/fprev-segk-thin.py OUT.json.xz IN.json.xz [IN ...]

The probes (scripts/torch-fprev.py with `starts:32@` or `every:32:N`) measure count(q, p) at
k-tile starts q = 32t. Tensor-core chains add fused 8-term blocks, which the comparison does
not model, so only pairs whose count does not depend on them are kept, per shape two probes:
every tile start against K-1 (the root, or the chain of the last segment), and the segment
starts against each other (the segments' reduction tree). A segment starts where
count(32t, 32t+1) is 8: 32t opens a chain.
"""
import gzip, json, lzma, sys


def thin(p):
    k, anchors, counts = p["k"], p["anchors"], p["counts"]
    probes = p.get("probes") or list(range(k))
    row, col = {q: i for i, q in enumerate(anchors)}, {q: i for i, q in enumerate(probes)}
    starts = [q for q in range(0, k, 32) if q + 1 < k and q in row and q + 1 in col]
    if len(starts) < -(-(k - 1) // 32) or k - 1 not in col:
        return []
    seg = [q for q in starts if counts[row[q]][col[q + 1]] == 8]
    base = {x: p[x] for x in ("path", "m", "n", "k", "config", "compute", "kernels") if x in p}
    out = [dict(base, anchors=starts, probes=[k - 1], counts=[[counts[row[q]][col[k - 1]]] for q in starts],
                stats={"thinned": "tile starts against K-1"})]
    if len(seg) > 1:
        out.append(dict(base, anchors=seg, probes=seg, counts=[[counts[row[q]][col[s]] for s in seg] for q in seg],
                        stats={"thinned": "segment starts", "segments": len(seg)}))
    return out


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    probes, info = [], None
    for f in sys.argv[2:]:
        d = json.load(gzip.open(f, "rt") if f.endswith(".gz") else lzma.open(f, "rt") if f.endswith(".xz") else open(f))
        info = info or d.get("info")
        for p in d["probes"]:
            if "counts" in p and "numSplitsK=-1" in (p.get("config") or ""):
                probes += thin(p)
    with (lzma.open(sys.argv[1], "wt", preset=9) if sys.argv[1].endswith(".xz") else gzip.open(sys.argv[1], "wt")) as f:
        json.dump({"info": info, "probes": probes}, f, separators=(",", ":"))
    print(f"wrote {sys.argv[1]}: {len(probes)} probes")


if __name__ == "__main__":
    main()
