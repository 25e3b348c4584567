#!/usr/bin/env python3
"""The table of models per MMA-Sim architecture (report/mmasim.md) and its summary in the book.

Reads the models under models/<arch>/, the results of scripts/mmasim-models.py (one JSON line
per architecture and path: the hunt against MMA-Sim that checked the model) and the findings
under findings/mmasim/, and writes report/mmasim.md: per architecture and instruction, the
model's agreement with MMA-Sim, the knobs that differ from our measured Hopper (sm90) model of
the same instruction (or its nearest kin), and the findings. With --book, it also replaces the
part of docs/src/architectures.md between the `mmasim-table` markers with the summary table
(one row per architecture).

    python3 scripts/mmasim-table.py --results target/mmasim-models/results.jsonl --book
"""

import argparse
import glob
import hashlib
import json
import os
import re
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCHS = [("Volta", "volta"), ("Turing", "turing"), ("Ampere", "ampere"), ("Ada Lovelace", "ada"), ("Hopper", "hopper"),
         ("Blackwell", "blackwell"), ("RTX Blackwell", "rtx-blackwell"), ("CDNA1", "cdna1"), ("CDNA2", "cdna2"), ("CDNA3", "cdna3")]
# Knobs every model file spells out but that say nothing about the arithmetic's shape.
QUIET = {"blocks.separate_rounding", "products.rounding", "align.emin_floor", "blocks.interleave", "blocks.order"}


def flat(table, prefix=""):
    out = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        elif k not in ("name", "description", "sources", "base"):
            out[prefix + k] = v
    return out


def load(path):
    """A model file's knobs, flattened, its `base = "ARCH:PATH"` chain resolved."""
    with open(path, "rb") as f:
        t = tomllib.load(f)
    knobs = {}
    base = t.get("base")
    if isinstance(base, str) and ":" in base:
        arch, pid = base.split(":", 1)
        knobs.update(load(os.path.join(ROOT, "models", arch, pid + ".toml")))
    knobs.update(flat(t))
    return knobs


def kin(pid, a_fmt, b_fmt):
    """The measured sm90 model this path is compared with: its own, Hopper's wgmma for
    Blackwell's tcgen05.mma, the same types for mixed FP8, Hopper's FP8 instruction for a
    block-scaled one."""
    # AMD's mfma: the H100's mma.sync of the same input types (Hopper has no FP32-input MMA).
    amd = {"f16": "mma.m16n8k16.f32.f16.f16.f32", "bf16": "mma.m16n8k16.f32.bf16.bf16.f32",
           "tf32": "mma.m16n8k8.f32.tf32.tf32.f32", "f64": "mma.m8n8k4.f64.f64.f64.f64"}
    if pid.startswith("mfma."):
        pid = amd.get(a_fmt, pid)
    # D wider than C (Volta's mma.m8n8k4.f32.f16.f16.f16): the same instruction with C in D's format.
    m = re.match(r"(mma\.m\d+n\d+k\d+)\.(\w+)\.(\w+)\.(\w+)\.(\w+)$", pid)
    if m and m.group(2) != m.group(5):
        pid = f"{m.group(1)}.{m.group(2)}.{m.group(3)}.{m.group(4)}.{m.group(2)}"
    # Block-scaled MMAs (kind::mxf8f6f4, mxf4, mxf4nvf4): the unscaled instruction of Hopper's FP8 shape.
    if re.search(r"\.mxf[a-z0-9]+\.block\d+\.", pid):
        pid = re.sub(r"\.mxf[a-z0-9]+\.block\d+\.", ".", re.sub(r"\.ue[0-9]m[0-9]$", "", pid))
        pid = re.sub(r"m\d+n8k\d+", "m64n8k32" if pid.startswith("tcgen05.") else "m16n8k32", pid)
    k = pid.replace("tcgen05.mma.", "wgmma.", 1)
    same = k.replace(f".{a_fmt}.{b_fmt}", f".{a_fmt}.{a_fmt}", 1)
    # FP6/FP4 operands (kind::f8f6f4): Hopper's e4m3 instruction of the same shape and D.
    fp8 = k.replace(f".{a_fmt}.{b_fmt}", ".e4m3.e4m3", 1)
    for cand in (pid, k, same, fp8):
        f = os.path.join(ROOT, "models", "sm90", cand + ".toml")
        if os.path.exists(f):
            return cand, load(f)
    return None, None


def fmt(v):
    return v if isinstance(v, str) else json.dumps(v)


def diff(ours, ref):
    keys = sorted(set(ours) | set(ref))
    out = []
    for k in keys:
        if k in QUIET or ours.get(k) == ref.get(k):
            continue
        short = k.split(".", 1)[1] if k.count(".") else k
        out.append(f"{short} {fmt(ours.get(k, 'unset'))}")
    return out


def findings_of(d, pid):
    """`findings/mmasim/<arch>/<path>/`: a count, linked, or empty."""
    rel = os.path.join("findings", "mmasim", d, pid)
    n = len(glob.glob(os.path.join(ROOT, rel, "*.md")))
    return f"[{n}]({rel}/)" if n else ""


def pairs_listed():
    """(arch, path, MMA-Sim's instruction, measured) from report/mmasim-pairs.txt."""
    f = os.path.join(ROOT, "report", "mmasim-pairs.txt")
    out = []
    for line in open(f) if os.path.exists(f) else []:
        m = re.match(r"(.+?)\s{2,}(\S+)\s+(.+?)(  \(measured sm90 model\))?$", line.rstrip("\n"))
        if m:
            out.append((m.group(1).strip(), m.group(2), m.group(3).strip(), bool(m.group(4))))
    return out


def results(files):
    """(arch, path) -> the last result line (an agreeing one preferred). A later `--check` line
    of the same model file (same model_sha256, or the model file as it is now where the earlier
    line predates the hash) adds its hunt to the line that approved the model: the tiles are
    hunted with another seed, so both hunts together are the model's agreement."""
    best = {}
    for f in files:
        if not os.path.exists(f):
            continue
        for line in open(f):
            r = json.loads(line)
            key = (r["arch"], r["path"])
            old = best.get(key)
            # A check adds its tiles to the hunt that approved the same model file; a row older
            # than the hashes cannot show that it hunted this file, so the check replaces it.
            if r.get("checked") and old is not None and old["status"] == "agrees" and old.get("model_sha256") and same_model(old, r):
                if r["status"] == "agrees":
                    merged = dict(old, model_sha256=r.get("model_sha256"))
                    seen = {(h["seed"], h["tiles"]) for h in old["hunts"] if h.get("check")}
                    merged["hunts"] = old["hunts"] + [dict(h, check=True) for h in r["hunts"] if (h["seed"], h["tiles"]) not in seen]
                    best[key] = merged
                else:
                    best[key] = r  # a check that found divergences: the model is contradicted
            elif old is None or r["status"] == "agrees" or old["status"] != "agrees":
                best[key] = r
    return best


def same_model(old, r):
    if old.get("model_sha256") and r.get("model_sha256"):
        return old["model_sha256"] == r["model_sha256"]
    f = os.path.join(ROOT, r.get("model") or old.get("model") or "")
    if not r.get("model_sha256") or not os.path.isfile(f):
        return False
    with open(f, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest() == r["model_sha256"]


def agreed_tiles(r):
    """Tiles the current model agreed on: the hunt that approved it and every check after it (none
    where the last result diverged, or where the model file is no longer the one hunted)."""
    if r.get("status") != "agrees" or (r.get("model_sha256") and not same_model({}, r)):
        return 0
    hunts = r.get("hunts") or []
    first = [h for h in hunts if not h.get("check")][-1:]
    return sum(h.get("tiles") or 0 for h in first + [h for h in hunts if h.get("check")])


def formats(pid):
    # A block-scaled id names its kind and block after the shape: mma.m16n8k32.mxf8f6f4.block32.f32.e4m3...
    parts = [p for p in pid.split(".") if not re.match(r"(mxf[a-z0-9]+|block\d+)$", p)]
    shape = next(i for i, p in enumerate(parts) if re.match(r"m\d+n\d+k\d+", p))
    d, a, b = parts[shape + 1:shape + 4]
    return a.replace("xf32", "tf32"), b.replace("xf32", "tf32")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", action="append", default=[os.path.join(ROOT, "report", "mmasim-results.jsonl")])
    ap.add_argument("--keep", default=os.path.join(ROOT, "report", "mmasim-results.jsonl"), help="where the merged results are kept")
    ap.add_argument("--book", action="store_true",
                    help="also write the summary table between the mmasim-table markers of docs/src/architectures.md")
    args = ap.parse_args()
    res = results(args.results)
    with open(args.keep + ".tmp", "w") as f:
        for key in sorted(res):
            f.write(json.dumps(res[key], sort_keys=True) + "\n")
    os.replace(args.keep + ".tmp", args.keep)

    rows, summary, unmodelled = [], [], []
    for arch, d in ARCHS:
        files = sorted(glob.glob(os.path.join(ROOT, "models", d, "*.toml")))
        measured = [r for (a, _), r in res.items() if a == arch and r.get("measured")]
        tried = [r for (a, _), r in res.items() if a == arch and not r.get("measured")]
        pids = [os.path.basename(f)[:-5] for f in files]
        for r in sorted(measured, key=lambda r: r["path"]):
            h = r["hunts"][-1]
            nan_note = " (NaNs as one pattern)" if ".f64." in r["path"] else ""
            rows.append(f"| {arch} | `{r['path']}` ({r['mmasim']}) | sm90 (measured on the H100) | {h['tiles']:,} tiles, "
                        f"{h['divergent_elements']} divergent elements{nan_note} | — | {findings_of('hopper', r['path'])} |")
        for f, pid in zip(files, pids):
            r = res.get((arch, pid), {})
            h = (r.get("hunts") or [{}])[-1]
            a_fmt, b_fmt = formats(pid)
            ref_id, ref = kin(pid, a_fmt, b_fmt)
            ours = load(f)
            knobs = ", ".join(diff(ours, ref)) if ref else "no Hopper counterpart (no FP32-input MMA)"
            ref_note = "" if not ref_id or ref_id == pid else f" (vs `{ref_id}`)"
            checks = sum(1 for x in r.get("hunts") or [] if x.get("check"))
            if not h.get("tiles"):
                agree = "corpus replay only"
            elif r.get("status") != "agrees":  # the last hunt diverged: its tiles, not an agreement
                agree = f"{h['tiles']:,} tiles, {h['divergent_elements']} divergent elements"
            else:
                agree = f"{agreed_tiles(r):,} tiles{f' ({checks + 1} hunts)' if checks else ''}, {h['divergent_elements']} divergent elements"
            inst = r.get("mmasim", "")
            rows.append(f"| {arch} | `{pid}` ({inst}) | `{d}:{pid}` | {agree} | {knobs or 'none'}{ref_note} | {findings_of(d, pid)} |")
        missing = [r for r in tried if r["path"] not in pids]
        # Pairs `mmasim-models.py --list` names (report/mmasim-pairs.txt) that were never run.
        known = {r["path"] for r in tried} | set(pids)
        for line in pairs_listed():
            if line[0] == arch and line[1] not in known and not line[3]:
                missing.append({"path": line[1], "mmasim": line[2], "status": "not run yet", "hunts": []})
        for r in sorted(missing, key=lambda r: r["path"]):
            # The hunt of the model that came closest (re-inference may not improve on discovery).
            h = min(r.get("hunts") or [{}], key=lambda x: x.get("divergent_elements") or 0)
            what = r["status"] if not h.get("tiles") else f"{r['status']}: {h['divergent_elements']:,} divergent elements in {h['tiles']:,} tiles"
            rows.append(f"| {arch} | `{r['path']}` ({r['mmasim']}) | none | {what} | | {findings_of(d, r['path'])} |")
        unmodelled += [f"{arch} `{r['path']}`" for r in sorted(missing, key=lambda r: r["path"])]
        total_tiles = sum(agreed_tiles(res.get((arch, p), {})) for p in pids)
        differ = sum(1 for p in pids if res.get((arch, p), {}).get("status", "agrees") != "agrees")
        summary.append(f"| {arch} | {len(pids)} | {differ} | {len(measured)} | {len(missing)} | {total_tiles:,} |")

    findings = sorted(glob.glob(os.path.join(ROOT, "findings", "mmasim", "hopper", "*", "*.md")))
    head = ["| architecture | models (discovered against MMA-Sim) | of which differ (last hunt diverged) | measured sm90 models checked | not modelled yet | agreed tiles |",
            "|---|---|---|---|---|---|", *summary]
    table = [*head, "",
             "<details><summary>Per instruction: the model, its agreement with MMA-Sim, the knobs that differ from Hopper</summary>", "",
             "| architecture | path (MMA-Sim's instruction) | model | agreement (the hunt against MMA-Sim that approved the model, plus later `--check` hunts on other tiles) | knobs that differ from the sm90 model | findings |",
             "|---|---|---|---|---|---|", *rows, "", "</details>", "",
             f"Findings where MMA-Sim and the H100 disagree ({len(findings)}, `findings/mmasim/hopper/`): FP64 NaN payloads only "
             "(`findings/mmasim/README.md` says which side the H100 takes). Findings under `findings/mmasim/<arch>/` are what "
             "MMA-Sim computes that no model of the knob space does."]
    if unmodelled:
        table.append("")
        table.append(f"Not modelled ({len(unmodelled)}): {', '.join(unmodelled)}; each has its minimised disagreements under "
                     "`findings/mmasim/<arch>/<path>/`, and `findings/mmasim/README.md` says why no model of the knob space "
                     "reproduces them.")
    text = "\n".join(table) + "\n"
    os.makedirs(os.path.join(ROOT, "report"), exist_ok=True)
    with open(os.path.join(ROOT, "report", "mmasim.md"), "w") as f:
        f.write("# Models per MMA-Sim architecture\n\nGenerated by `scripts/mmasim-table.py`.\n\n" + text)
    if args.book:
        # The summary alone: the per-instruction table (whose links are relative to the
        # repository root) stays in report/mmasim.md, which the chapter links.
        chapter = os.path.join(ROOT, "docs", "src", "architectures.md")
        s = open(chapter).read()
        start, end = "<!-- mmasim-table -->", "<!-- /mmasim-table -->"
        if start in s and end in s and s.index(start) < s.index(end):
            s = s[:s.index(start) + len(start)] + "\n" + "\n".join(head) + "\n" + s[s.index(end):]
            with open(chapter + ".tmp", "w") as f:
                f.write(s)
            os.replace(chapter + ".tmp", chapter)
        else:
            print(f"docs/src/architectures.md has no {start} ... {end} markers; wrote report/mmasim.md only")
    print(text)


if __name__ == "__main__":
    main()
