#!/usr/bin/env python3
"""MMA-Sim as an external oracle for mmafuzz: `--against external:CMD` (hunt), `--oracle` (replay,
discover, record), speaking either protocol over stdin/stdout.

    mmafuzz hunt --path mma.m16n8k16.f32.f16.f16.f32 --tiles 100000 \\
        --against "external:python3 scripts/mmasim-oracle.py --arch Hopper"
    mmafuzz replay --models sm90:mma.m16n8k16.f32.f16.f16.f32 --filter m16n8k16.f32.f16 \\
        --oracle "external-npz:python3 scripts/mmasim-oracle.py --arch Hopper --protocol npz"

The instruction comes from each batch's tiles (shape and formats: m64 tiles are wgmma, others
mma.sync; D's format is C's unless the batch says "d_fmt"), or from --instruction (MMA-Sim's own name, e.g. `mma:m16n8k16.f32.f16.f16.f32`,
`wgmma:m64n8k16.f32.f16.f16`, `mfma:f32_32x32x8f16`). Tiles MMA-Sim has no model for (sparse,
integer, an instruction its --arch lacks) are answered with an error, never a guess.

Protocols (mmafuzz's src/hunt/external.rs):
  jsonl  each batch is JSONL case lines and an empty line; the answer is one {"d": [...]} line
         per case, then an empty line; {"error": "..."} lines instead when it cannot.
  npz    each batch is an 8-byte little-endian length and an npz (a, b, c, header); the
         answer is a length and an npz holding d, or a length and {"error": "..."} JSON.

Needs torch (>= 2.9) and MMA-Sim 2.1.1: installed, or its wheel given with --wheel (put on
sys.path without pip). Runs on one thread unless --threads says otherwise; `--device cuda`
runs MMA-Sim's PyTorch arithmetic on the GPU instead (MMA-Sim is written for both: its pow2
avoids the GPU's inexact exp2/ldexp, and its sums are of exact fixed-point doubles), many
times faster on 128x8x64 tiles. Check a GPU's answers against those recorded on the CPU:

    mmafuzz replay --corpus corpus/mmasim/blackwell --models exact-rne --filter block \
        --oracle "external-npz:python3 scripts/mmasim-oracle.py --arch Blackwell --protocol npz --device cuda"
"""

import argparse
import io
import json
import os
import sys
import zipfile

import numpy as np

# Interchange format -> (torch dtype name, bytes per element).
FORMATS = {
    "f16": ("float16", 2), "bf16": ("bfloat16", 2), "f32": ("float32", 4), "tf32": ("float32", 4),
    "f64": ("float64", 8), "e4m3": ("float8_e4m3fn", 1), "e5m2": ("float8_e5m2", 1),
    "e4m3fnuz": ("float8_e4m3fnuz", 1), "e5m2fnuz": ("float8_e5m2fnuz", 1),
    # FP6 and FP4 travel one per uint8 (torch has no such dtypes): MMA-Sim reads FP6 from bits
    # 5:0 and FP4 from bits 5:2 of each byte, as kind::f8f6f4 registers hold them.
    "e3m2": ("uint8", 1), "e2m3": ("uint8", 1), "e2m1": ("uint8", 1),
}
# Left shift of a raw pattern into MMA-Sim's byte (FP4 sits in bits 5:2).
BYTE_SHIFT = {"e2m1": 2}
F8F6F4_ONLY = {"e3m2", "e2m3", "e2m1"}
# AMD's FP8 are the "fnuz" variants; mmafuzz names them so in its formats where it has them.
AMD_FORMATS = {"fp8": "e4m3fnuz", "bf8": "e5m2fnuz"}
# Block scales (block-scaled MMAs): torch dtype of each scale format (MMA-Sim clears ue4m3's
# sign bit itself).
SCALES = {"ue8m0": "float8_e8m0fnu", "ue4m3": "float8_e4m3fn"}
RAW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SIGNED = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", default="Hopper", help="MMA-Sim's architecture: Volta, Turing, Ampere, Ada Lovelace, Hopper, Blackwell, RTX Blackwell, CDNA1-3")
    p.add_argument("--protocol", choices=["jsonl", "npz"], default="jsonl")
    p.add_argument("--instruction", help="MMA-Sim's instruction, KIND:NAME (mma:, wgmma:, tcgen05:, mfma:); default: from each batch's tiles and --arch")
    p.add_argument("--wheel", help="MMA-Sim's wheel, used when `import mmasim` fails")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=2048, help="tiles per MMA-Sim call")
    p.add_argument("--device", default="cpu", help="where MMA-Sim's tensors live: cpu, or cuda (cuda:N)")
    p.add_argument("--nan-as", choices=["keep", "all-ones"], default="keep",
                   help="all-ones: write every NaN of D as the positive all-ones pattern. For AMD's mfma, MMA-Sim's NaN "
                        "bits come from the host CPU (x86 fma operand order, PyTorch's summation order), not from a rule "
                        "it models; this compares the rest bit for bit")
    return p.parse_args()


def load(args):
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch
    torch.set_num_threads(args.threads)
    try:
        import mmasim  # noqa: F401
    except ImportError:
        if not args.wheel:
            sys.exit("mmasim-oracle: MMA-Sim is not installed; give its wheel with --wheel")
        sys.path.insert(0, args.wheel)  # a wheel is a zip of the package: importable as it is
        import mmasim  # noqa: F401
    from mmasim import nv_ptx
    try:
        from mmasim import amd
    except Exception:
        amd = None
    return torch, nv_ptx, amd


class Oracle:
    def __init__(self, args):
        self.args = args
        self.torch, self.nv, self.amd = load(args)
        self.ops = {}

    def op(self, m, n, k, a_fmt, b_fmt, c_fmt, scale=None, d_fmt=None):
        if self.args.instruction:
            kind, name = self.args.instruction.split(":", 1)
        else:
            kind, name = self.instruction(m, n, k, a_fmt, b_fmt, c_fmt, scale, d_fmt)
        key = (kind, name)
        if key not in self.ops:
            try:
                if ".block" in name:  # block-scaled: MMA-Sim's *BlockScale classes
                    cls = {"mma": self.nv.MMABlockScale, "tcgen05": self.nv.TCGen05MMABlockScale}[kind]
                else:
                    cls = {"mma": self.nv.MMA, "wgmma": self.nv.WGMMA, "tcgen05": self.nv.TCGen05MMA, "mfma": getattr(self.amd, "MFMA", None)}[kind]
                self.ops[key] = cls(self.args.arch, name)
            except (AssertionError, KeyError, TypeError) as e:
                self.ops[key] = ValueError(f"MMA-Sim has no {kind} {name} on {self.args.arch}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        op = self.ops[key]
        if isinstance(op, Exception):
            raise op
        return op

    def instruction(self, m, n, k, a_fmt, b_fmt, c_fmt, scale=None, d_fmt=None):
        """MMA-Sim's (kind, name) for a tile: mfma on AMD architectures, tcgen05.mma for
        M = 64 on Blackwell, wgmma for M = 64 elsewhere, mma.sync otherwise. `scale`: (format,
        block[, kind]) of block-scaled tiles: kind::mxf8f6f4 at K = 32; at K = 64 (FP4)
        kind::mxf4 for ue8m0 per 32, kind::mxf4nvf4 otherwise, unless the kind is given (MMA-Sim
        computes both the same way)."""
        arch = self.args.arch
        if scale is not None:
            fmt, block = scale[:2]
            kind = scale[2] if len(scale) > 2 else "mxf8f6f4" if k == 32 else "mxf4" if (fmt, block) == ("ue8m0", 32) else "mxf4nvf4"
            if m >= 64:  # Blackwell's tcgen05.mma (MMA-Sim has its block-scaled forms at M = 128)
                return "tcgen05", f"m{m}n{n}k{k}.kind::{kind}.block{block}.{c_fmt}.{a_fmt}.{b_fmt}.{fmt}"
            return "mma", f"m{m}n{n}k{k}.kind::{kind}.block{block}.{c_fmt}.{a_fmt}.{b_fmt}.{c_fmt}.{fmt}"
        if arch.startswith("CDNA"):
            return "mfma", self.mfma_name(m, n, k, a_fmt, b_fmt, c_fmt)
        if m == 64 and arch == "Blackwell":
            kind = {"tf32": "tf32", "f16": "f16", "bf16": "f16"}.get(a_fmt, "f8f6f4")
            return "tcgen05", f"m64n{n}k{k}.kind::{kind}.{c_fmt}.{a_fmt}.{b_fmt}"
        if m == 64:
            return "wgmma", f"m64n{n}k{k}.{c_fmt}.{a_fmt}.{b_fmt}"
        if {a_fmt, b_fmt} & F8F6F4_ONLY:  # FP6/FP4 operands: sm_120's kind::f8f6f4
            return "mma", f"m{m}n{n}k{k}.kind::f8f6f4.{c_fmt}.{a_fmt}.{b_fmt}.{c_fmt}"
        # PTX's .dtype.atype.btype.ctype: D wider than C only on m8n8k4 (f16 C into f32 D).
        return "mma", f"m{m}n{n}k{k}.{d_fmt or c_fmt}.{a_fmt}.{b_fmt}.{c_fmt}"

    def mfma_name(self, m, n, k, a_fmt, b_fmt, c_fmt):
        """The arch's v_mfma suffix of this shape and these types. mmafuzz calls CDNA3's xf32
        tf32 and AMD's FP8 (fnuz) e4m3fnuz/e5m2fnuz; where two instructions share shape and
        types (CDNA2's 32x32x4 bf16 and bf16_1k) the one without _1k."""
        if not hasattr(self, "mfma_index"):
            from mmasim.amd import isa_mfma
            short = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float8_e4m3fnuz": "e4m3fnuz", "float8_e5m2fnuz": "e5m2fnuz"}
            typ = lambda t: short[str(t).removeprefix("torch.")]
            self.mfma_index = {}
            for suffix in sorted(isa_mfma.arch_mfma_suffix[self.args.arch], key=lambda s: s.endswith("_1k")):
                op = isa_mfma.MFMA(self.args.arch, suffix)
                xf32 = suffix.endswith("xf32")
                a, b = ("tf32", "tf32") if xf32 else (typ(op.a_type), typ(op.b_type))
                self.mfma_index.setdefault((op.m, op.n, op.k, a, b, typ(op.d_type)), suffix)
        key = (m, n, k, a_fmt, b_fmt, c_fmt)
        if key not in self.mfma_index:
            raise ValueError(f"MMA-Sim has no mfma {m}x{n}x{k} {a_fmt}/{b_fmt} -> {c_fmt} on {self.args.arch}")
        return self.mfma_index[key]

    def tensor(self, raw, fmt):
        name, width = FORMATS[fmt]
        if fmt in BYTE_SHIFT:
            raw = np.left_shift(raw, BYTE_SHIFT[fmt])
        return self.torch.from_numpy(np.ascontiguousarray(raw).view(SIGNED[width])).view(getattr(self.torch, name))

    def fp4_values(self, raw):
        """e2m1 bit patterns (0..15, sign in bit 3) as float32 values."""
        table = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)
        return self.torch.from_numpy(table[np.asarray(raw, np.int64) & 15])

    def run(self, a, b, c, a_fmt, b_fmt, c_fmt, scales=None, d_fmt=None):
        """D (raw bits, N×m×n, in `d_fmt`, C's format by default) of tiles given as raw-bit
        arrays a N×m×k, b N×k×n, c N×m×n; `scales`: (format, block, scale_a N×m×(k/block),
        scale_b N×(k/block)×n) of block-scaled tiles, uint8 bit patterns."""
        d_fmt = d_fmt or c_fmt
        for f in (a_fmt, b_fmt, c_fmt, d_fmt):
            if f not in FORMATS:
                raise ValueError(f"MMA-Sim has no {f} tiles")
        t, m, k = a.shape
        n = b.shape[2]
        if scales is not None and scales[0] not in SCALES:
            raise ValueError(f"MMA-Sim has no {scales[0]} block scales")
        op = self.op(m, n, k, a_fmt, b_fmt, c_fmt, None if scales is None else scales[:2], d_fmt)
        A, B, C = self.tensor(a, a_fmt), self.tensor(b, b_fmt), self.tensor(c, c_fmt)
        if scales is not None and k == 64:
            # kind::mxf4/mxf4nvf4 (MMA-Sim's GST_FDPA) take FP4 packed two per byte, or any float
            # tensor of the values: the values, exactly, as float32.
            A, B = self.fp4_values(a), self.fp4_values(b)
        dev = self.args.device
        A, B, C = A.to(dev), B.to(dev), C.to(dev)
        if scales is not None:
            dtype = getattr(self.torch, SCALES[scales[0]])
            SA, SB = (self.torch.from_numpy(np.ascontiguousarray(x, np.uint8)).view(dtype).to(dev) for x in scales[2:])
        out = []
        for i in range(0, t, self.args.batch):
            sa, sb, sc = A[i:i + self.args.batch], B[i:i + self.args.batch], C[i:i + self.args.batch]
            # Row i of A and column j of B as the [..., K] vectors of D[i][j] (MMA-Sim's dpa);
            # their block scales likewise, as [..., K/block] vectors.
            av = sa[:, :, None, :].expand(-1, -1, n, -1)
            bv = sb.transpose(1, 2)[:, None, :, :].expand(-1, m, -1, -1)
            if scales is None:
                out.append(op.dpa(av, bv, sc))
            else:
                alpha = SA[i:i + self.args.batch][:, :, None, :].expand(-1, -1, n, -1)
                beta = SB[i:i + self.args.batch].transpose(1, 2)[:, None, :, :].expand(-1, m, -1, -1)
                out.append(op.dpa(av, bv, sc, alpha, beta))
        d = self.torch.cat(out).cpu()
        width = FORMATS[d_fmt][1]
        bits = d.contiguous().view(getattr(self.torch, f"int{8 * width}") if width > 1 else self.torch.uint8).numpy().view(RAW[width]).copy()
        if self.args.nan_as == "all-ones":
            bits[d.isnan().numpy()] = (1 << (8 * width - 1)) - 1
        return bits


def serve_jsonl(oracle):
    stdin, stdout = sys.stdin, sys.stdout
    while True:
        lines = []
        for line in stdin:
            if not line.strip():
                break
            lines.append(json.loads(line))
        else:
            if not lines:
                return
        answers = [None] * len(lines)
        # Tiles of one kind together (a batch is usually all one kind).
        groups = {}
        for i, case in enumerate(lines):
            scale = (case["scale_fmt"], case["scale_block"]) if "scale_fmt" in case else None
            key = (case["a_fmt"], case.get("b_fmt", case["a_fmt"]), case["c_fmt"], case.get("d_fmt", case["c_fmt"]), case["m"], case["n"], case["k"], "meta" in case, scale)
            groups.setdefault(key, []).append(i)
        for (af, bf, cf, df, m, n, k, sparse, scale), idx in groups.items():
            try:
                if sparse:
                    raise ValueError("MMA-Sim has no 2:4 sparse instructions")
                if af not in FORMATS or bf not in FORMATS or cf not in FORMATS:
                    raise ValueError(f"MMA-Sim has no {af}/{bf} -> {cf} tiles")
                arr = lambda key, f, shape: np.array([[int(x, 16) for x in lines[i][key]] for i in idx], RAW[FORMATS[f][1]]).reshape(len(idx), *shape)
                scales = None
                if scale is not None:
                    blocks = k // scale[1]
                    sarr = lambda key, shape: np.array([[int(x, 16) for x in lines[i][key]] for i in idx], np.uint8).reshape(len(idx), *shape)
                    scales = (*scale, sarr("scale_a", (m, blocks)), sarr("scale_b", (blocks, n)))
                d = oracle.run(arr("a", af, (m, k)), arr("b", bf, (k, n)), arr("c", cf, (m, n)), af, bf, cf, scales, df)
                digits = 2 * FORMATS[df][1]
                for t, i in enumerate(idx):
                    answers[i] = json.dumps({"d": [format(int(x), f"0{digits}x") for x in d[t].ravel()]})
            except Exception as e:  # an answer for every case: the stream stays in step
                for i in idx:
                    answers[i] = json.dumps({"error": str(e)})
        stdout.write("\n".join(answers) + "\n\n")
        stdout.flush()


def serve_npz(oracle):
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(8)
        if len(head) < 8:
            return
        data = stdin.read(int.from_bytes(head, "little"))
        try:
            z = np.load(io.BytesIO(data))
            h = json.loads(bytes(z["header"]).decode())
            if "meta" in z.files:
                raise ValueError("MMA-Sim has no 2:4 sparse instructions")
            scales = None
            if "scale_a" in z.files:
                scales = (h["scale_fmt"], h["scale_block"], z["scale_a"], z["scale_b"])
            d = oracle.run(z["a"], z["b"], z["c"], h["a_fmt"], h["b_fmt"], h["c_fmt"], scales, h.get("d_fmt"))
            buf = io.BytesIO()
            np.savez(buf, d=d)
            answer = buf.getvalue()
        except (ValueError, KeyError, zipfile.BadZipFile) as e:
            answer = json.dumps({"error": str(e)}).encode()
        stdout.write(len(answer).to_bytes(8, "little") + answer)
        stdout.flush()


def main():
    args = parse_args()
    oracle = Oracle(args)
    (serve_npz if args.protocol == "npz" else serve_jsonl)(oracle)


if __name__ == "__main__":
    main()
