#!/usr/bin/env python3
"""A model per MMA-Sim architecture and instruction, found by `mmafuzz discover` against
MMA-Sim and checked by hunting against it.

For every architecture MMA-Sim models and every mmafuzz path it has an instruction for:

  1. `mmafuzz discover --oracle external-npz:(MMA-Sim)`: active learning over the knob space;
     writes the model and records the deciding tiles (MMA-Sim's answers) into a work corpus.
  2. `mmafuzz hunt --against (MMA-Sim)` on fresh edge-biased tiles (--tiles, 10^5 by default).
     Divergent elements, if any, are minimised into findings; their cases are recorded from
     MMA-Sim into the work corpus and `mmafuzz infer` over that corpus picks the model again;
     the hunt repeats with the next seed (at most --rounds times).
  3. A model whose last hunt had 0 divergent elements goes to models/<arch>/<path>.toml, and
     --record tiles of MMA-Sim's answers to corpus/mmasim/<arch>/ (replayed in CI, no PyTorch).

Paths that have a model measured on the H100 (models/sm90/) are not rediscovered for MMA-Sim's
Hopper: the sm90 model is hunted against MMA-Sim's Hopper instead (report/mmasim.md, Hopper's rows).

Needs PyTorch (>= 2.9) and MMA-Sim 2.1.1 importable by --python, and a built mmafuzz.

    python3 scripts/mmasim-models.py --mmafuzz target/release/mmafuzz --arch Ampere --jobs 2
    python3 scripts/mmasim-models.py --list        # the (architecture, path) pairs, nothing run

Results: one JSON line per pair in OUT/results.jsonl (OUT = target/mmasim-models by default),
logs and work corpora under OUT/<arch>/<path>/.
"""

import argparse
import concurrent.futures as cf
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time

ARCHS = {
    "Volta": "volta", "Turing": "turing", "Ampere": "ampere", "Ada Lovelace": "ada", "Hopper": "hopper",
    "Blackwell": "blackwell", "RTX Blackwell": "rtx-blackwell", "CDNA1": "cdna1", "CDNA2": "cdna2", "CDNA3": "cdna3",
}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A path's corpus file is <id>.jsonl.xz (or, written before 2026-11-27, .jsonl.gz).
CORPUS_ENDINGS = (".jsonl.xz", ".jsonl.gz")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mmafuzz", default=os.path.join(ROOT, "target/release/mmafuzz"))
    p.add_argument("--python", default="python3",
                   help="the Python that has torch and mmasim (runs the oracle; default python3 from PATH). The oracle "
                        "command, this name included, is written into findings and provenance, so a name on PATH keeps "
                        "them free of one machine's paths")
    p.add_argument("--arch", action="append", help="only these architectures (MMA-Sim's names; repeat)")
    p.add_argument("--only", help="only paths whose id contains this")
    p.add_argument("--skip", action="append", default=[], help="leave out paths whose id contains this (repeat)")
    p.add_argument("--tiles", type=int, default=100_000, help="tiles per checking hunt")
    p.add_argument("--max-dots", type=float, default=2.56e7, help="dot products (D elements) per checking hunt at most: "
                   "fewer tiles for wide ones (25,000 of AMD's 32x32; 100,000 up to 256 elements)")
    p.add_argument("--measured-products", type=float, default=3e8, help="products per hunt of a measured sm90 model (wide wgmma tiles get fewer tiles)")
    p.add_argument("--rounds", type=int, default=4, help="hunt / infer rounds before giving up on a pair")
    p.add_argument("--discover-seconds", type=int, default=300)
    p.add_argument("--record", type=int, default=256, help="tiles of MMA-Sim's answers recorded per pair into corpus/mmasim/")
    p.add_argument("--jobs", type=int, default=1, help="pairs run at once")
    p.add_argument("--oracle-threads", type=int, default=1, help="threads of each MMA-Sim oracle process (PyTorch's)")
    p.add_argument("--oracle-device", default="cpu", help="where each MMA-Sim oracle computes: cpu, or cuda (the GPU machine's "
                   "card, shared by every job; see scripts/mmasim-oracle.py --device)")
    p.add_argument("--discover-base", help="discovery starts from this model file for every pair (default: the nearest kin the "
                   "script picks, see scaled_kin and the functions after it); a written model is the survivor nearest its base")
    p.add_argument("--out", default=os.path.join(ROOT, "target/mmasim-models"))
    p.add_argument("--redo", action="store_true", help="run pairs that already have a model too")
    p.add_argument("--list", action="store_true", help="print the pairs and stop")
    p.add_argument("--check", action="store_true",
                   help="hunt the models already in models/<arch>/ again (no discovery, no re-inference): one hunt of "
                        "--tiles tiles (raise --max-dots for wide tiles), seed 200")
    p.add_argument("--top-up", type=int, metavar="N",
                   help="with --check: only models that agreed on fewer than N tiles so far (report/mmasim-results.jsonl as "
                        "scripts/mmasim-table.py merges it), each hunted for the tiles it lacks (no --max-dots cap)")
    p.add_argument("--record-missing", action="store_true",
                   help="only record MMA-Sim's answers (--record tiles) for pairs that have no corpus/mmasim file yet (with a "
                        "model or without: `infer` can then start from the recorded tiles)")
    p.add_argument("--record-in", metavar="DIR",
                   help="only record MMA-Sim's answers on the cases in DIR/<path>.jsonl (designed tiles, e.g. "
                        "scripts/window-floor-cases.py's), appended to corpus/mmasim/<arch>/, for the pairs that have such a file")
    return p.parse_args()


def paths(mmafuzz):
    """Dense floating-point instruction paths (no library calls, sparse or integer paths, and no
    wgmma forms: MMA-Sim names instructions by shape and types only)."""
    out = subprocess.run([mmafuzz, "paths", "--json"], check=True, capture_output=True, text=True).stdout
    rows = [json.loads(l) for l in out.splitlines() if l.strip()]
    keep = []
    for r in rows:
        if r["runs"] == "library" or ".sp." in r["id"] or r["c_fmt"] == "s32":
            continue
        if re.search(r"\.(chain4|smem_a|trans_ab|trans_b|neg_a|neg_b|scale_d0)$", r["id"]):
            continue
        keep.append(r)
    return keep


def pairs(args):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import importlib.util
    spec = importlib.util.spec_from_file_location("mmasim_oracle", os.path.join(ROOT, "scripts/mmasim-oracle.py"))
    oracle_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle_mod)
    out = []
    for arch, d in ARCHS.items():
        if args.arch and arch not in args.arch:
            continue
        sys.argv = ["mmasim-oracle", "--arch", arch]
        oracle = oracle_mod.Oracle(oracle_mod.parse_args())
        for p in paths(args.mmafuzz):
            if args.only and args.only not in p["id"] or any(x in p["id"] for x in args.skip):
                continue
            # Block-scaled paths (`...mxf8f6f4.block32....ue8m0`): the scale format and block.
            block = re.search(r"\.block(\d+)\.", p["id"])
            kind = re.search(r"\.(mxf\w+)\.block", p["id"])
            scale = (p["id"].rsplit(".", 1)[1], int(block.group(1)), kind.group(1)) if block else None
            try:
                d_fmt = p.get("d_fmt", p["c_fmt"])
                kind, name = oracle.instruction(p["m"], p["n"], p["k"], p["a_fmt"], p["b_fmt"], p["c_fmt"], scale, d_fmt)
                oracle.op(p["m"], p["n"], p["k"], p["a_fmt"], p["b_fmt"], p["c_fmt"], scale, d_fmt)
            except (ValueError, KeyError):
                continue
            if kind != p["id"].split(".")[0]:
                continue  # e.g. a wgmma path's shape on Blackwell, which has tcgen05.mma instead
            measured = arch == "Hopper" and "sm90" in p["models"]
            if arch == "Hopper" and not measured:
                continue  # no model of ours to check, and Hopper's own claims are the sm90 models'
            out.append({"arch": arch, "dir": d, "path": p, "mmasim": f"{kind} {name}", "measured": measured})
    return out


def load_table():
    """scripts/mmasim-table.py as a module (its results() merge and agreed_tiles())."""
    spec = importlib.util.spec_from_file_location("mmasim_table", os.path.join(ROOT, "scripts", "mmasim-table.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sha256(path):
    """The hunted model file's hash: scripts/mmasim-table.py adds a later --check's tiles to the
    hunt that approved the same file."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        t = time.time()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=f, text=True)
        f.write(r.stdout + f"[exit {r.returncode}, {time.time() - t:.1f} s]\n")
    return r


def divergent(stdout):
    m = re.search(r"divergent: (\d+) tiles, (\d+) elements", stdout)
    return (int(m.group(1)), int(m.group(2))) if m else None


def finding_cases(findings_dir):
    """The minimised and original case of every finding (JSONL lines, without outputs)."""
    lines = []
    for md in glob.glob(os.path.join(findings_dir, "**", "*.md"), recursive=True):
        text = open(md).read()
        m = re.search(r"## Record\n\n```json\n(.*?)\n```", text, re.S)
        if not m:
            continue
        rec = json.loads(m.group(1))
        for key in ("minimised", "original"):
            case = dict(rec.get(key) or {})
            for drop in ("d", "d_b"):
                case.pop(drop, None)
            if case:
                lines.append(json.dumps(case))
    return lines


def oracle_for(args, pr):
    """The oracle command and provenance label of a pair."""
    p, arch = pr["path"], pr["arch"]
    # Where MMA-Sim computes on the host CPU (AMD's mfma, every FP64 instruction: x86 fma and
    # PyTorch's summation order), its NaN bits are the CPU's, not a rule it models: NaNs are
    # compared as one pattern there (the adapter's --nan-as all-ones).
    host_nans = arch.startswith("CDNA") or p["a_fmt"] == "f64"
    label = f"MMA-Sim 2.1.1 {arch} model{' (NaNs written as all-ones)' if host_nans else ''}, not hardware"
    # The adapter relative to the working directory (the hunts' too), as findings should name it.
    adapter = os.path.relpath(os.path.join(ROOT, "scripts", "mmasim-oracle.py"))
    oracle = (f"external-npz:{args.python} {adapter} --arch '{arch}' --protocol npz"
              f" --instruction '{pr['mmasim'].replace(' ', ':', 1)}' --threads {args.oracle_threads}"
              + (" --nan-as all-ones" if host_nans else "")
              + (f" --device {args.oracle_device}" if args.oracle_device != "cpu" else ""))
    return oracle, label, host_nans


def record(args, pr, log):
    """MMA-Sim's answers on --record generated tiles into corpus/mmasim/<arch>/ (CI replays them)."""
    oracle, label, _ = oracle_for(args, pr)
    rec = os.path.join(ROOT, "corpus", "mmasim", pr["dir"])
    for ending in CORPUS_ENDINGS:
        f = os.path.join(rec, pr["path"]["id"] + ending)
        if os.path.exists(f):
            os.remove(f)
    return run([args.mmafuzz, "record", "--path", pr["path"]["id"], "--count", str(args.record), "--seed", "7", "--oracle", oracle,
                "--label", label, "--corpus", rec], log)


def record_in(args, pr, cases, log):
    """MMA-Sim's answers on designed cases, appended to the pair's corpus/mmasim/<arch>/ file."""
    oracle, label, _ = oracle_for(args, pr)
    rec = os.path.join(ROOT, "corpus", "mmasim", pr["dir"])
    return run([args.mmafuzz, "record", "--path", pr["path"]["id"], "--in", cases, "--oracle", oracle, "--label", label,
                "--corpus", rec], log)


def flushed(model_file, work):
    """A copy of a model file with every subnormal setting "flush" (a discovery base)."""
    import tomllib
    with open(model_file, "rb") as f:
        t = tomllib.load(f)
    for sec, key in [("inputs", "subnormals"), ("inputs", "c_subnormals"), ("accumulator", "subnormals"), ("output", "subnormals")]:
        t.setdefault(sec, {})[key] = "flush"
    lines = [f"name = {json.dumps(t.get('name', 'base') + ' (flushed)')}"]
    for sec, body in t.items():
        if isinstance(body, dict):
            lines.append(f"[{sec}]")
            lines += [f"{k} = {json.dumps(v)}" for k, v in body.items() if not isinstance(v, dict)]
            for sub, sb in body.items():
                if isinstance(sb, dict):
                    lines.append(f"[{sec}.{sub}]")
                    lines += [f"{k} = {json.dumps(v)}" for k, v in sb.items()]
    out = os.path.join(work, "flushed-" + os.path.basename(model_file))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return out


def keep_findings(work, round_, d, pid):
    """The last hunt's minimised disagreements into findings/mmasim/<arch>/<path>/ (what MMA-Sim
    computes that no model of the knob space does)."""
    src = os.path.join(work, f"findings-{round_}", pid)
    dst = os.path.join(ROOT, "findings", "mmasim", d, pid)
    if os.path.isdir(src):
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.state.json"))


SMALL_FLOATS = {"e3m2", "e2m3", "e2m1"}


def fnuz_base(work):
    """The discovery base of CDNA3's FP8 mfma (fnuz): its f16 model's staged adder, 16 wide, with
    the FP8 variant's two knobs, which discovery does not search (MMA-Sim's GTR_FDPA: even and
    odd k summed apart, a far smaller C dropped)."""
    f = os.path.join(work, "fnuz-base.toml")
    with open(f, "w") as out:
        out.write('base = "cdna3:mfma.m16n16k16.f32.f16.f16.f32"\nname = "cdna3 FP8 start"\n'
                  "[blocks]\nwidth = 16\n[blocks.staged]\neven_odd = true\ndrop_c = true\n")
    return f


def scaled_kin(p, d):
    """The discovery base of a block-scaled path: this architecture's model of the same
    instruction without scales (MMA-Sim's ST_FDPA is its T_FDPA with the scales' exponents
    added), e.g. `mma.m16n8k32.f32.e4m3.e2m1.f32` for `mma.m16n8k32.mxf8f6f4.block32.f32.e4m3.e2m1.f32.ue8m0`."""
    if not re.search(r"\.block\d+\.", p["id"]):
        return None
    plain = re.sub(r"\.mxf\w+\.block\d+\.", ".", p["id"]).rsplit(".", 1)[0]
    # tcgen05's block-scaled forms are M = 128; our unscaled tcgen05 paths are M = 64 (MMA-Sim's
    # arithmetic does not depend on M).
    for name in (plain, plain.replace(".m128n", ".m64n", 1)):
        f = os.path.join(ROOT, "models", d, name + ".toml")
        if os.path.exists(f):
            return f
    return None


def widened_kin(p, d):
    """The discovery base of a path whose D is wider than C (Volta's mma.m8n8k4.f32.f16.f16.f16):
    this architecture's model of the same instruction with C in D's format (MMA-Sim adds C as a
    value either way)."""
    if p.get("d_fmt", p["c_fmt"]) == p["c_fmt"]:
        return None
    f = os.path.join(ROOT, "models", d, p["id"].rsplit(".", 1)[0] + "." + p["d_fmt"] + ".toml")
    return f if os.path.exists(f) else None


def fp8_kin(p, d):
    """The discovery base of a kind::f8f6f4 path with FP6/FP4 operands, and of tcgen05's FP8 with
    f16 D (too slow to discover from Hopper's wgmma, whose FP8 arithmetic is narrower): the
    model this architecture already has for the same instruction on e4m3 operands, else RTX
    Blackwell's mma.sync one with the same D (MMA-Sim gives both the same fused dot product).
    Discovery still decides every knob it can against MMA-Sim; the base only fills the rest."""
    small = bool({p["a_fmt"], p["b_fmt"]} & SMALL_FLOATS)
    tcgen05_f16_fp8 = p["id"].startswith("tcgen05.") and p["c_fmt"] == "f16" and p["a_fmt"] in ("e4m3", "e5m2")
    if not (small or tcgen05_f16_fp8):
        return None
    same = p["id"].replace(f".{p['a_fmt']}.{p['b_fmt']}", ".e4m3.e4m3", 1)
    c = p["c_fmt"]
    for f in (os.path.join(ROOT, "models", d, same + ".toml"),
              os.path.join(ROOT, "models", "rtx-blackwell", f"mma.m16n8k32.{c}.e4m3.e4m3.{c}.toml")):
        if os.path.exists(f):
            return f
    return None


def one(args, pr):
    p, d, arch = pr["path"], pr["dir"], pr["arch"]
    pid = p["id"]
    work = os.path.join(args.out, d, pid)
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "log.txt")
    oracle, label, host_nans = oracle_for(args, pr)
    final = os.path.join(ROOT, "models", "sm90" if pr["measured"] else d, pid + ".toml")
    result = {"arch": arch, "dir": d, "path": pid, "mmasim": pr["mmasim"], "measured": pr["measured"], "hunts": []}
    t0 = time.time()
    products = p["m"] * p["n"] * p["k"]
    tiles = min(args.tiles, int(args.max_dots / (p["m"] * p["n"])))
    if args.check and args.top_up:
        tiles = args.top_up - pr["agreed"]
    if pr["measured"]:
        tiles = max(1000, min(tiles, int(args.measured_products / products)))
    if pr["measured"] or args.check:
        model = final
        if host_nans and pr["measured"]:  # the measured model with NaNs written as the adapter writes them
            model = os.path.join(work, "measured-all-ones-nan.toml")
            with open(model, "w") as f:
                f.write(f'base = "sm90:{pid}"\nname = "sm90:{pid} (NaNs as all-ones)"\n[specials]\nnan = "all_ones"\n')
    else:
        model = os.path.join(work, "model.toml")
        corpus = os.path.join(work, "corpus")
        for ending in CORPUS_ENDINGS:
            if os.path.exists(os.path.join(corpus, pid + ending)):
                os.remove(os.path.join(corpus, pid + ending))
        kin = os.path.abspath(args.discover_base) if args.discover_base else fnuz_base(work) if p["a_fmt"].endswith("fnuz") else scaled_kin(p, d) or widened_kin(p, d) or fp8_kin(p, d)
        base = ["--base", kin] if kin else []
        if kin:
            result["discover_base"] = os.path.relpath(kin, ROOT)
        r = run([args.mmafuzz, "discover", "--path", pid, "--oracle", oracle, "--arch", d, "--label", label, *base,
                 "--seconds", str(args.discover_seconds), "--write", model, "--corpus", corpus], log)
        if not os.path.exists(model):
            # The core stage judges plain elements with the base's special knobs; where those
            # decide plain elements too (flushed bf16 products), start again from a sibling this
            # architecture already has (same D format), e.g. CDNA2's f16 model for its bf16.
            # A flush-to-zero variant of each is tried too: where subnormal products are flushed,
            # plain elements depend on it.
            sibs = sorted(glob.glob(os.path.join(ROOT, "models", d, f"*.{p['c_fmt']}.toml")))
            for sib in sibs + [flushed(f, work) for f in sibs]:
                r = run([args.mmafuzz, "discover", "--path", pid, "--oracle", oracle, "--arch", d, "--label", label, "--base", sib,
                         "--seconds", str(args.discover_seconds), "--write", model, "--corpus", corpus], log)
                if os.path.exists(model):
                    result["discover_base"] = os.path.relpath(sib, ROOT)
                    break
        m = re.search(r"(\d+) rounds, (\d+) tiles run", r.stdout)
        result["discover"] = {"exit": r.returncode, "rounds": int(m.group(1)) if m else None, "tiles": int(m.group(2)) if m else None,
                              "summary": [l for l in r.stdout.splitlines() if l.startswith("survivors") or "no model of the space" in l]}
        if not os.path.exists(model):
            result["status"] = "no model in the knob space"
            result["seconds"] = round(time.time() - t0, 1)
            return result
    best = None  # (divergent elements, round) of the closest model
    for round_ in range(1, args.rounds + 1):
        fdir = os.path.join(work, f"findings-{round_}")
        shutil.rmtree(fdir, ignore_errors=True)
        # A check hunts tiles no earlier round saw; each top-up takes the next seed, so a second
        # top-up of a model hunts tiles the first did not.
        seed = 200 + pr.get("checks", 0) if args.check else 100 + round_
        r = run([args.mmafuzz, "hunt", "--path", pid, "--model", model, "--against", oracle, "--tiles", str(tiles),
                 "--seed", str(seed), "--findings", fdir], log)
        div = divergent(r.stdout)
        result["hunts"].append({"seed": seed, "tiles": tiles, "exit": r.returncode,
                                "divergent_tiles": div[0] if div else None, "divergent_elements": div[1] if div else None})
        if div is None or div[1] == 0 or pr["measured"] or args.check:
            break
        if best is not None and div[1] > best[0] * 4:
            break  # re-inference made it worse: keep the closer model's findings
        if best is None or div[1] < best[0]:
            best = (div[1], round_)
        cases = finding_cases(fdir)
        with open(os.path.join(work, "finding-cases.jsonl"), "w") as f:
            f.write("\n".join(cases) + "\n")
        run([args.mmafuzz, "record", "--path", pid, "--in", os.path.join(work, "finding-cases.jsonl"), "--oracle", oracle,
             "--label", label, "--corpus", corpus], log)
        r = run([args.mmafuzz, "infer", "--path", pid, "--corpus", corpus, "--findings", os.path.join(work, "no-findings"),
                 "--arch", d, "--label", label, "--write", model], log)
        if r.returncode != 0:
            result["infer"] = [l for l in r.stdout.splitlines() if l.startswith("nearest") or l.startswith("  simplest")][:4]
    last = result["hunts"][-1] if result["hunts"] else {}
    ok = last.get("divergent_elements") == 0
    result["status"] = "agrees" if ok else "differs"
    if not ok and best is not None:
        keep_findings(work, best[1], d, pid)
    if args.check and not pr["measured"]:
        result["checked"] = True
        result["model"] = os.path.relpath(final, ROOT)
        result["model_sha256"] = sha256(final)
        if not ok and div is not None:
            keep_findings(work, 1, d, pid)
    elif ok and not pr["measured"]:
        os.makedirs(os.path.dirname(final), exist_ok=True)
        shutil.copyfile(model, final + ".tmp")
        os.replace(final + ".tmp", final)
        result["model"] = os.path.relpath(final, ROOT)
        result["model_sha256"] = sha256(final)
        if args.record:
            record(args, pr, log)
    result["seconds"] = round(time.time() - t0, 1)
    return result


def main():
    args = parse_args()
    # MMA-Sim builds a C++ extension with ninja at import: the Python's own bin/ first on PATH.
    python_bin = os.path.dirname(shutil.which(args.python) or args.python)
    if python_bin:
        os.environ["PATH"] = python_bin + os.pathsep + os.environ.get("PATH", "")
    todo = pairs(args)
    if args.list:
        for pr in todo:
            print(f"{pr['arch']:<14} {pr['path']['id']:<40} {pr['mmasim']}{'  (measured sm90 model)' if pr['measured'] else ''}")
        print(f"{len(todo)} pairs")
        return
    if args.record_in:
        os.makedirs(args.out, exist_ok=True)
        for pr in todo:
            cases = os.path.join(args.record_in, pr["path"]["id"] + ".jsonl")
            if os.path.exists(cases):
                r = record_in(args, pr, cases, os.path.join(args.out, "record-in.log"))
                print(f"{pr['arch']:<14} {pr['path']['id']:<40} {cases} recorded, exit {r.returncode}", flush=True)
        return
    if args.record_missing:
        todo = [pr for pr in todo if not pr["measured"]
                and not any(os.path.exists(os.path.join(ROOT, "corpus", "mmasim", pr["dir"], pr["path"]["id"] + e)) for e in CORPUS_ENDINGS)]
        os.makedirs(args.out, exist_ok=True)
        for pr in todo:
            r = record(args, pr, os.path.join(args.out, "record-missing.log"))
            print(f"{pr['arch']:<14} {pr['path']['id']:<40} recorded, exit {r.returncode}", flush=True)
        return
    if args.check:
        todo = [pr for pr in todo if not pr["measured"] and os.path.exists(os.path.join(ROOT, "models", pr["dir"], pr["path"]["id"] + ".toml"))]
        if args.top_up:
            table = load_table()
            merged = table.results([os.path.join(ROOT, "report", "mmasim-results.jsonl")])
            for pr in todo:
                row = merged.get((pr["arch"], pr["path"]["id"]), {})
                pr["agreed"] = table.agreed_tiles(row)
                # Check hunts take seeds from 200 up (discovery's rounds 101, 102, ...), also
                # where a check replaced the row (a changed model: its hunt is not marked).
                pr["checks"] = len({h["seed"] for h in row.get("hunts") or [] if h["seed"] >= 200}) if pr["agreed"] else 0
            todo = [pr for pr in todo if pr["agreed"] < args.top_up]
    elif not args.redo:
        todo = [pr for pr in todo if pr["measured"] or not os.path.exists(os.path.join(ROOT, "models", pr["dir"], pr["path"]["id"] + ".toml"))]
    os.makedirs(args.out, exist_ok=True)
    results = os.path.join(args.out, "results.jsonl")
    print(f"{len(todo)} pairs; results in {results}", flush=True)
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        for fut in cf.as_completed([ex.submit(one, args, pr) for pr in todo]):
            res = fut.result()
            with open(results, "a") as f:
                f.write(json.dumps(res) + "\n")
            h = res["hunts"][-1] if res["hunts"] else {}
            print(f"{res['arch']:<14} {res['path']:<40} {res['status']:<28} hunts {len(res['hunts'])}, last {h.get('tiles')} tiles, "
                  f"{h.get('divergent_elements')} divergent elements, {res['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
