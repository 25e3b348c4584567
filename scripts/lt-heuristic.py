#!/usr/bin/env python3
"""cuBLASLt's kernel choice asked of its heuristic, at any shape, without running a GEMM.

PyTorch's GEMMs reach cuBLASLt (torch.mm through cublasGemmEx, F.linear's bias and
torch._scaled_mm through cublasLtMatmul), and cuBLASLt's trace log prints each call's
descriptors and the kernel it ran. `lt-heuristic.cpp` rebuilds a call's descriptors from such
a line and asks cublasLtMatmulAlgoGetHeuristic for its first choice; this script checks that
choice against what real PyTorch calls logged, and then uses it to trace shapes densely: a
logged line of each path, call and degenerate class (a dimension of 1) is a template whose
m, n, k are replaced.

    python3 scripts/lt-heuristic.py build BIN
    python3 scripts/lt-heuristic.py check BIN RAW.jsonl.gz TEMPLATES.json ANSWERS.jsonl.gz
    python3 scripts/lt-heuristic.py dense BIN TEMPLATES.json OUT SECONDS [--seed S] [--jobs J]
    python3 scripts/lt-heuristic.py expand OUT-0.txt.xz ... OUT-5.txt.xz TRACE.tsv.gz
    python3 scripts/lt-heuristic.py split TRACE.tsv.gz DIR
    python3 scripts/lt-heuristic.py unfaithful ANSWERS.jsonl.gz UNPREDICTED.tsv.gz
    python3 scripts/lt-heuristic.py exclude TRACE.tsv.gz DENSE.log [--seed S] [--traced T1,T2,...] OUT.tsv.gz

`build` compiles the program against the libcublasLt that PyTorch loads. `check` reads the
lines `torch-trace.py ... --raw` wrote, and prints per path, call and shape class how often
the heuristic's first choice is the kernel that ran, and how often a template rebuilt the
logged descriptors exactly; it writes the templates. `dense` draws shapes from a seeded integer
generator (`shapes()`: the same everywhere), for at most SECONDS per path and call, and writes
only the chosen kernels in draw order; `expand` draws the same shapes again and writes the
table form `mmafuzz library fit` reads; `split` writes it once per path.
"""
import ctypes, gzip, json, lzma, os, re, subprocess, sys, threading, time

MASK = (1 << 64) - 1
# Same limits as torch-trace.py, so the dense draw covers what the validation draws.
MAX_MNK = 2 ** 41
MAX_OPERAND = 2 ** 29
SCRIPTS = os.path.dirname(os.path.abspath(__file__))


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def octave(r, lo_e, hi_e):
    """An integer in 2^lo_e .. 2^hi_e - 1: its octave uniform, then uniform in the octave."""
    e = lo_e + r % (hi_e - lo_e)
    return (1 << e) + (r >> 16) % (1 << e)


def family_shapes():
    sys.path.insert(0, SCRIPTS)
    tt = __import__("torch-trace")
    return tt.family_shapes()


def shapes(seed, path, op, fp8):
    """The dense draw of one path and call, endless: 45% m, n, k each log-uniform (by octave)
    in 1..16383; 15% in 1..65535; 25% layer-like (n, k multiples of 64 in 256..32767, m decode
    1..16 or log-uniform); 15% one of m, n in 1..16. Shapes over the size limits, model-family
    layer shapes (validation) and repeats are skipped."""
    held_out = family_shapes()
    state = splitmix64(splitmix64(seed) ^ splitmix64(int.from_bytes(f"{path}/{op}".encode()[:24], "little")))
    seen = set()
    i = 0
    while True:
        w = [splitmix64(state ^ (i * 8 + j)) for j in range(5)]
        i += 1
        kind = w[0] % 100
        if kind < 45:
            m, n, k = octave(w[1], 0, 14), octave(w[2], 0, 14), octave(w[3], 0, 14)
        elif kind < 60:
            m, n, k = octave(w[1], 0, 16), octave(w[2], 0, 16), octave(w[3], 0, 16)
        elif kind < 85:
            n, k = 64 * octave(w[2], 2, 9), 64 * octave(w[3], 2, 9)
            m = 1 + w[1] % 16 if w[4] % 2 else octave(w[1], 0, 14)
        else:
            a, b = 1 + w[1] % 16, octave(w[2], 0, 16)
            m, n = (a, b) if w[4] % 2 else (b, a)
            k = octave(w[3], 0, 16)
        if fp8:
            m, n, k = ((x + 15) // 16 * 16 for x in (m, n, k))
        s = (m, n, k)
        if s in seen or s in held_out or m * n * k > MAX_MNK or max(m * k, k * n, m * n) > MAX_OPERAND:
            continue
        if op == "linear_bias" and not (n > 1 and k > 1):
            continue  # PyTorch adds such a bias through addmm, not the bias epilogue
        seen.add(s)
        yield s


# ---- naming the heuristic's numbers as the log does -----------------------------------------
def header_enums():
    """Enum value -> log name for the algorithm attributes, from cublasLt.h."""
    for inc in header_dirs():
        p = os.path.join(inc, "cublasLt.h")
        if os.path.exists(p):
            text = re.sub(r"/\*.*?\*/|//[^\n]*", "", open(p).read(), flags=re.S)
            break
    else:
        raise SystemExit("cublasLt.h not found")
    out = {}
    for body, name in re.findall(r"typedef\s+enum\s*\w*\s*\{(.*?)\}\s*(\w+)\s*;", text, flags=re.S):
        values, v = {}, -1
        for entry in body.split(","):
            entry = entry.strip()
            if not entry:
                continue
            key, _, expr = entry.partition("=")
            key, expr = key.strip(), expr.strip()
            if expr:
                try:
                    v = int(expr, 0)
                except ValueError:
                    v = values.get(expr, v + 1)
            else:
                v += 1
            values[key] = v
        out[name] = {val: key.removeprefix("CUBLASLT_") for key, val in values.items()}
    return out


def header_dirs():
    import torch  # noqa: F401  (its nvidia packages may carry the headers)
    dirs = []
    for p in sys.path:
        for sub in ("nvidia/cu13/include", "nvidia/cublas/include"):
            d = os.path.join(p, sub)
            if os.path.isdir(d):
                dirs.append(d)
    return dirs + ["/usr/local/cuda/include"]


def algo_text(fields, enums):
    """The log's `algo=[...]` text for the program's numbers (defaults left out, as the log does)."""
    algo, tile, stages, split, red, custom, cluster, swz, inner = (int(x) for x in fields)
    parts = [f"algoId={algo}"]
    if tile:
        parts.append("tile=" + name(enums, "cublasLtMatmulTile_t", tile))
    if stages:
        parts.append("stages=" + name(enums, "cublasLtMatmulStages_t", stages))
    if red:
        parts.append("reductionScheme=" + name(enums, "cublasLtReductionScheme_t", red))
    if split != 1 and split != 0:
        parts.append(f"numSplitsK={split}")
    if swz:
        parts.append(f"ctaSwizzling={swz}")
    if custom:
        parts.append(f"customOption={custom}")
    if inner:
        parts.append("innerShape=" + name(enums, "cublasLtMatmulInnerShape_t", inner))
    if cluster:
        parts.append("clusterShape=" + name(enums, "cublasLtClusterShape_t", cluster))
    return " ".join(parts)


def name(enums, enum, value):
    return enums.get(enum, {}).get(value, f"{enum}#{value}")


def normal(algo):
    """A logged algo text with its attributes in a fixed order."""
    return " ".join(sorted(algo.split()))


# ---- the program ---------------------------------------------------------------------------
def lt_library():
    import torch
    torch.mm(torch.zeros(8, 8, device="cuda"), torch.zeros(8, 8, device="cuda"))
    for line in open("/proc/self/maps"):
        if "libcublasLt.so" in line:
            return line.split()[-1]
    raise SystemExit("PyTorch loaded no libcublasLt")


def build(binary):
    lib = lt_library()
    inc = [d for d in header_dirs() if os.path.exists(os.path.join(d, "cublasLt.h"))][0]
    here = os.path.dirname(os.path.abspath(binary))
    link = os.path.join(here, "libcublasLt.so")
    if not os.path.exists(link):
        os.symlink(lib, link)
    cmd = ["nvcc", "-O2", "-std=c++17", "-o", binary, os.path.join(SCRIPTS, "lt-heuristic.cpp"), f"-I{inc}", "-I/usr/local/cuda/include", f"-L{here}", "-lcublasLt", "-Xlinker", "-rpath", "-Xlinker", os.path.dirname(lib)]
    subprocess.run(cmd, check=True)
    print(f"built {binary} against {lib} (headers {inc})")


def ask(binary, lines, env=None):
    """The program's answers to `lines`, in order (a writer thread keeps the pipe moving)."""
    p = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1 << 20, env=dict(os.environ, **(env or {})))

    def feed():
        for l in lines:
            p.stdin.write(l + "\n")
        p.stdin.close()

    t = threading.Thread(target=feed)
    t.start()
    out = [l.split() for l in p.stdout]
    t.join()
    p.wait()
    return out


# ---- templates -------------------------------------------------------------------------------
DESC = re.compile(r"(\w)desc=\[([^\]]*)\]")


def degenerate(m, n, k):
    return "".join(c if v == 1 else "-" for c, v in zip("mnk", (m, n, k)))


def descriptors(line):
    """The part of a log line the heuristic reads besides the workspace: the four layouts and
    computeDesc (pointers as 0x1)."""
    ds = " ".join(f"{a}desc=[{b}]" for a, b in DESC.findall(line))
    cd = re.search(r"computeDesc=\[[^\]]*\]", line)
    return re.sub(r"(Pointer)=0x[0-9a-fA-F]+", r"\1=0x1", f"[cublasLtMatmul] {ds} {cd.group(0) if cd else ''}")


def workspace(line):
    ws = re.search(r"workSpaceSizeInBytes=(\d+)", line)
    return int(ws.group(1)) if ws else 0


def choices(answer, enums):
    """The program's answer as a list of (algo text, workspace needed), best first."""
    if not answer or answer[0] != "ok":
        return []
    n, f = int(answer[1]), answer[2:]
    return [(algo_text(f[10 * i:10 * i + 9], enums), int(f[10 * i + 9])) for i in range(n)]


# How the heuristic is asked: the workspace limit (None: the line's own) and pointer alignment.
# How cuBLAS asks (measured on an H200: the way that gives the logged kernels): torch.mm and
# the other cublasGemmEx calls with a 32 MiB workspace limit, PyTorch's own cublasLtMatmul calls
# (the bias epilogue, _scaled_mm) with its 1 MiB workspace; operands 256-byte aligned.
VARIANTS = {"ws-1MiB": {"LTH_WORKSPACE": str(1 << 20)}, "ws-32MiB": {"LTH_WORKSPACE": str(32 << 20)}}


def make_template(rec):
    """`rec`'s descriptors with its m, n, k as {m}, {n}, {k}, or None where a value is ambiguous."""
    m, n, k = rec["m"], rec["n"], rec["k"]
    names = {}
    for name, v in (("m", m), ("n", n), ("k", k)):
        if v != 1:
            if v in names:
                return None
            names[v] = name
    d = descriptors(rec["line"])
    return re.sub(r"\b(rows|cols|ld)=(\d+)", lambda mt: f"{mt.group(1)}={{{names[int(mt.group(2))]}}}" if int(mt.group(2)) in names else mt.group(0), d)


def fill(template, m, n, k):
    return template.replace("{m}", str(m)).replace("{n}", str(n)).replace("{k}", str(k))


def check(binary, raw_path, templates_out, answers_out):
    """Per path and call: how often each way of asking (VARIANTS) gives the logged kernel first,
    and anywhere in the first eight; the templates, each with the best way for its call."""
    enums = header_enums()
    recs = [json.loads(l) for l in gzip.open(raw_path, "rt")]
    templates = {}
    for r in recs:
        key = f"{r['path']} {r['op']} {degenerate(r['m'], r['n'], r['k'])}"
        if key not in templates:
            t = make_template(r)
            if t:
                templates[key] = {"line": t, "workspace": workspace(r["line"])}
    queries = [descriptors(r["line"]) + f" workSpaceSizeInBytes={workspace(r['line'])}" for r in recs]
    logged = [normal(re.search(r"algo=\[([^\]]*)\]", r["line"]).group(1)) for r in recs]
    calls = sorted({(r["path"], r["op"]) for r in recs})
    table = {c: {} for c in calls}
    answers = {}
    for name, env in VARIANTS.items():
        answers[name] = [choices(a, enums) for a in ask(binary, queries, dict(env, LTH_COUNT="8"))]
        for c in calls:
            table[c][name] = [0, 0, 0]
        for r, want, got in zip(recs, logged, answers[name]):
            t = table[(r["path"], r["op"])][name]
            t[0] += 1
            ranks = [normal(g[0]) for g in got]
            t[1] += bool(ranks) and ranks[0] == want
            t[2] += want in ranks
    print("heuristic's first choice = logged kernel (and: logged kernel among its first 8), per way of asking")
    print(f"{'path':45} {'call':12} {'calls':>6} " + " ".join(f"{n:>19}" for n in VARIANTS))
    best_of = {}
    first_total = 0
    for c in calls:
        row = table[c]
        best = max(VARIANTS, key=lambda n: row[n][1])
        best_of[c] = best
        first_total += row[best][1]
        print(f"{c[0]:45} {c[1]:12} {row[best][0]:6} " + " ".join(f"{row[n][1]:>10} ({row[n][2]:>6})" for n in VARIANTS) + f"  best {best}")
    print(f"all: {len(recs)} logged calls; the best way per call gives the logged kernel first for {first_total} ({100 * first_total / max(1, len(recs)):.3f}%)")
    shown = {}
    for r, want, i in zip(recs, logged, range(len(recs))):
        c = (r["path"], r["op"])
        got = answers[best_of[c]][i]
        if (not got or normal(got[0][0]) != want) and shown.get(c, 0) < 3:
            shown[c] = shown.get(c, 0) + 1
            print(f"  {c[0]} {c[1]} {r['m']}x{r['n']}x{r['k']} (logged ws {workspace(r['line'])}): logged [{want}]; heuristic {[g for g in got[:3]]}")
    bad_t = 0
    for r in recs:
        t = templates.get(f"{r['path']} {r['op']} {degenerate(r['m'], r['n'], r['k'])}")
        if t and fill(t["line"], r["m"], r["n"], r["k"]) != descriptors(r["line"]):
            bad_t += 1
            if bad_t <= 8:
                print(f"  template differs at {r['path']} {r['op']} {r['m']}x{r['n']}x{r['k']}: {fill(t['line'], r['m'], r['n'], r['k'])} | {descriptors(r['line'])}")
    print(f"templates: {len(templates)}; rebuilt descriptors differ from the logged ones in {bad_t} of {len(recs)} calls")
    for key, t in templates.items():
        path, op, _ = key.split()
        t["ask"] = best_of[(path, op)]
        row = table[(path, op)][t["ask"]]
        t["first_choice_share"] = row[1] / max(1, row[0])
    json.dump(templates, open(templates_out, "w"), indent=1, sort_keys=True)
    with gzip.open(answers_out, "wt") as f:
        for i, r in enumerate(recs):
            got = answers[best_of[(r["path"], r["op"])]][i]
            f.write(json.dumps({"path": r["path"], "op": r["op"], "m": r["m"], "n": r["n"], "k": r["k"], "logged": re.search(r"algo=\[([^\]]*)\]", r["line"]).group(1),
                                "heuristic": got[0][0] if got else None, "asked": best_of[(r["path"], r["op"])]}) + "\n")


def dense_one(binary, templates, path, op, seed, seconds, enums):
    fp8 = path.startswith("cublaslt")
    deadline = time.time() + seconds
    mine = {k: t for k, t in templates.items() if k.startswith(f"{path} {op} ")}
    ask_as = next(iter(mine.values()))["ask"] if mine else "own-ws"
    p = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1 << 20, env=dict(os.environ, **VARIANTS[ask_as]))
    count = [0]

    def feed():
        for (m, n, k) in shapes(seed, path, op, fp8):
            t = mine.get(f"{path} {op} {degenerate(m, n, k)}")
            if t is None:
                p.stdin.write("skip\n")  # answered "err": no template for this class
            else:
                p.stdin.write(fill(t["line"], m, n, k) + f" workSpaceSizeInBytes={t['workspace']}\n")
            count[0] += 1
            if count[0] % 256 == 0 and time.time() > deadline:
                break
        p.stdin.close()

    th = threading.Thread(target=feed)
    th.start()
    ids, cfgs = [], {}
    for line in p.stdout:
        got = choices(line.split(), enums)
        text = got[0][0] if got else "-"
        ids.append(cfgs.setdefault(text, len(cfgs)))
    th.join()
    p.wait()
    # Compressed here, in the worker, so that the parts compress in parallel: the files are
    # concatenated xz streams, which lzma reads back as one.
    text = f"call\t{path}\t{op}\t{len(ids)}\t{ask_as}\n" + "".join(f"cfg\t{i}\t{t}\n" for t, i in cfgs.items()) + " ".join(map(str, ids)) + "\n"
    return lzma.compress(text.encode(), preset=6), len(ids), len(cfgs), ask_as


# The dense answers are spread over this many files, OUT-0.txt.xz ...
FILES = 6


def dense(binary, templates_path, out, seconds, seed, jobs):
    from concurrent.futures import ProcessPoolExecutor
    templates = json.load(open(templates_path))
    enums = header_enums()
    pairs = sorted({tuple(k.split()[:2]) for k in templates})
    t0 = time.time()
    with ProcessPoolExecutor(jobs) as ex:
        futs = {pair: ex.submit(dense_one, binary, templates, pair[0], pair[1], seed, seconds, enums) for pair in pairs}
    files = [open(f"{out}-{g}.txt.xz", "wb") for g in range(FILES)]
    paths = sorted({p for p, _ in pairs})
    total = 0
    for f in files:
        f.write(lzma.compress((json.dumps({"seed": seed, "generator": "lt-heuristic.py shapes()", "provenance": provenance()}) + "\n").encode()))
    for n, ((path, op), fut) in enumerate(futs.items()):
        block, count, kernels, ask_as = fut.result()
        files[n % FILES].write(block)
        total += count
        print(f"{path} {op}: {count} shapes, {kernels} kernels (asked as {ask_as})", flush=True)
    for f in files:
        f.close()
    print(f"{total} shapes in {time.time() - t0:.0f}s with {jobs} jobs")


def expand(dense_paths, out):
    with gzip.open(out, "wt") as o:
        for p in dense_paths:
            with lzma.open(p, "rt") as f:
                expand_one(f, o)


def expand_one(f, o):
    head = json.loads(f.readline())
    if o.tell() == 0:
        o.write(json.dumps({"provenance": head["provenance"], "learn_seed": head["seed"], "heuristic": True}) + "\n")
    current = None
    while True:
        line = f.readline()
        if not line:
            break
        parts = line.rstrip("\n").split("\t")
        if parts[0] == "call":
            path, op, count = parts[1], parts[2], int(parts[3])
            cfgs = {}
            if path != current:
                o.write(f"path\t{path}\n")
                current = path
                written = {}
        elif parts[0] == "cfg":
            cfgs[int(parts[1])] = parts[2]
        else:
            ids = [int(x) for x in line.split()]
            gen = shapes(head["seed"], path, op, path.startswith("cublaslt"))
            for i in ids:
                m, n, k = next(gen)
                text = cfgs[i]
                if text == "-":
                    continue
                if text not in written:
                    written[text] = len(written)
                    o.write(f"cfg\t{written[text]}\t{text}\n")
                o.write(f"{op}\t{m}\t{n}\t{k}\t{written[text]}\n")


def unfaithful(answers_path, out):
    """The call kinds and degenerate classes where the heuristic's first choice was not the
    logged kernel (cluster shape aside, which cuBLASLt settles at launch) for some checked
    call, pooled over paths: written as `unpredicted` lines for every path with that call, so
    that `mmafuzz library fit` declines them instead of learning the heuristic there."""
    norm = lambda s: " ".join(sorted(x for x in (s or "").split() if not x.startswith("clusterShape=")))
    seen, bad, paths, per_call = {}, {}, {}, {}
    for line in gzip.open(answers_path, "rt"):
        r = json.loads(line)
        key = (r["op"], degenerate(r["m"], r["n"], r["k"]))
        differs = norm(r["logged"]) != norm(r["heuristic"])
        seen[key] = seen.get(key, 0) + 1
        bad[key] = bad.get(key, 0) + differs
        paths.setdefault(r["op"], set()).add(r["path"])
        c = per_call.setdefault((r["path"], r["op"]), [0, 0, 0])
        c[0] += 1
        c[1] += not differs
        c[2] += r["logged"] == r["heuristic"] or normal(r["logged"]) == normal(r["heuristic"] or "")
    print("the heuristic's first choice against the logged kernel, per path and call (cluster shape aside; and with it)")
    print(f"{'path':45} {'call':12} {'calls':>6} {'same':>8} {'same with cluster':>18}")
    total = [0, 0, 0]
    for (path, op), c in sorted(per_call.items()):
        total = [a + b for a, b in zip(total, c)]
        print(f"{path:45} {op:12} {c[0]:6} {100 * c[1] / c[0]:7.2f}% {100 * c[2] / c[0]:17.2f}%")
    print(f"all: {total[0]} calls, {100 * total[1] / total[0]:.2f}% the logged kernel (cluster shape aside), {100 * total[2] / total[0]:.2f}% with the cluster shape")
    print("per call and shape class (the dimensions that are 1):")
    with gzip.open(out, "wt") as o:
        o.write(json.dumps({"provenance": {}, "heuristic": True, "check": os.path.basename(answers_path)}) + "\n")
        for path in sorted({p for ps in paths.values() for p in ps}):
            o.write(f"path\t{path}\n")
            for (op, cls), n in sorted(bad.items()):
                if n and path in paths[op]:
                    why = (f"cuBLAS's choice for {op} at this shape class ({cls}: {n} of {seen[(op, cls)]} checked calls) is not its heuristic's:"
                           " trace it (mmafuzz library trace)")
                    o.write(f"unpredicted\t{op}\t{cls}\t{why}\n")
    for (op, cls), n in sorted(bad.items()):
        print(f"{op} {cls}: {seen[(op, cls)]} checked, {n} not the heuristic's first choice" + ("  -> unpredicted" if n else ""))


def traced_shapes(trace):
    """(path, call, m, n, k) of every GEMM of a torch-trace.py trace."""
    out, path = set(), None
    with gzip.open(trace, "rt") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "path":
                path = parts[1]
            elif len(parts) >= 5 and parts[0] != "cfg" and path is not None:
                out.add((path, parts[0], int(parts[1]), int(parts[2]), int(parts[3])))
    return out


def exclude(trace, log, seed, out, traced=()):
    """Write `trace` (a torch-trace.py validation trace) without the GEMMs whose path, call and
    shape the dense draw of `seed` asked about, or that one of the `traced` traces (those a
    predictor was calibrated on) holds; the draw's size per path and call is read from the
    run's log (`dense`'s lines `PATH OP: N shapes`)."""
    counts = {}
    for line in open(log):
        m = re.match(r"(\S+) (\w+): (\d+) shapes", line)
        if m:
            counts[(m.group(1), m.group(2))] = int(m.group(3))
    drawn = set()
    for (path, op), n in counts.items():
        gen = shapes(seed, path, op, path.startswith("cublaslt"))
        for _ in range(n):
            drawn.add((path, op) + next(gen))
    dense_size = len(drawn)
    for t in traced:
        drawn |= traced_shapes(t)
    kept = dropped = 0
    path = None
    with gzip.open(trace, "rt") as f, gzip.open(out, "wt") as o:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "path":
                path = parts[1]
            elif len(parts) >= 5 and parts[0] != "cfg" and path is not None:
                if (path, parts[0], int(parts[1]), int(parts[2]), int(parts[3])) in drawn:
                    dropped += 1
                    continue
                kept += 1
            o.write(line)
    also = f" or in {len(traced)} calibration trace(s)" if traced else ""
    print(f"{trace}: {kept} GEMMs kept, {dropped} left out (their shape was in the dense draw of seed {seed}: {dense_size} shapes{also})")


def split(trace, out_dir):
    """One trace per path (DIR/<path>.tsv.gz, each with the trace's first line), so that
    `mmafuzz library fit` can learn one path at a time with its own --max-per-call."""
    os.makedirs(out_dir, exist_ok=True)
    outs, current = {}, None
    with gzip.open(trace, "rt") as f:
        head = f.readline()
        for line in f:
            if line.startswith("path\t"):
                path = line.rstrip("\n").split("\t")[1]
                if path not in outs:
                    outs[path] = gzip.open(os.path.join(out_dir, path + ".tsv.gz"), "wt", compresslevel=1)
                    outs[path].write(head)
                current = outs[path]
            if current is None:
                raise SystemExit(f"{trace}: a line before the first path line: {line[:60]!r}")
            current.write(line)
    for o in outs.values():
        o.close()
    print(f"{trace}: {len(outs)} path(s) into {out_dir}")


def provenance():
    sys.path.insert(0, SCRIPTS)
    return __import__("torch-trace").provenance()


if __name__ == "__main__":
    a = sys.argv[1:]
    opt = lambda name, default: int(a[a.index(name) + 1]) if name in a else default
    if a[:1] == ["build"]:
        build(a[1])
    elif a[:1] == ["check"]:
        check(a[1], a[2], a[3], a[4])
    elif a[:1] == ["dense"]:
        dense(a[1], a[2], a[3], float(a[4]), opt("--seed", 58201), opt("--jobs", 16))
    elif a[:1] == ["exclude"]:
        traced = a[a.index("--traced") + 1].split(",") if "--traced" in a else ()
        exclude(a[1], a[2], opt("--seed", 58202), a[-1], traced)
    elif a[:1] == ["unfaithful"]:
        unfaithful(a[1], a[2])
    elif a[:1] == ["expand"]:
        expand(a[1:-1], a[-1])
    elif a[:1] == ["split"] and len(a) == 3:
        split(a[1], a[2])
    else:
        raise SystemExit(__doc__)
