"""Where alpha and beta enter cuBLAS's small-N kernels (gemmSN, algorithm 11) on float32: for
each shape, the same A, B and C through torch.mm, torch.addmm with beta = 0 and alpha = 0.3,
and with alpha = 0.3 and beta = 0.7, each call's kernel from cuBLASLt's logger callback and the
whole D (the shapes are small). If D(alpha) == f32(alpha * D(mm)) everywhere, alpha scales the
finished sum; otherwise it enters before the lanes are added.

    python3 scripts/probes/gemmsn-alpha.py OUT.jsonl.xz

Operands: scripts/torch-bmm-probe.py's generator (seed 60401, style "normal"), so that the
record holds D and the kernels only.
"""
import ctypes
import importlib.util
import json
import lzma
import os
import subprocess
import sys

import numpy as np
import torch

SHAPES = [(2, 360, 6), (4, 17, 23), (5, 1785, 6), (12, 8, 6), (16, 2, 6), (4, 128, 449), (16, 128, 235), (4, 64, 1174), (8, 81, 3343), (16, 64, 2076)]
SEED = 60401
CALLS = [("mm", 1.0, 0.0), ("addmm", 0.3, 0.0), ("addmm", 0.3, 0.7), ("addmm", 1.0, 0.7), ("addmm", 0.3, 1.0)]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("g", os.path.join(here, "..", "torch-bmm-probe.py"))
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.mm(torch.ones(16, 16, device="cuda"), torch.ones(16, 16, device="cuda"))
    lib = ctypes.CDLL([l.split()[-1] for l in open("/proc/self/maps") if "libcublasLt.so" in l][0])
    messages = []
    callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)(lambda level, fn, msg: messages.append((msg or b"").decode(errors="replace")))
    lib.cublasLtLoggerSetCallback(callback)
    lib.cublasLtLoggerSetLevel(5)
    drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    prov = {"gpu": torch.cuda.get_device_name(), "driver": drv, "torch": torch.__version__, "seed": SEED, "tool": "scripts/probes/gemmsn-alpha.py"}
    with lzma.open(sys.argv[1], "wt") as f:
        for call, (m, n, k) in enumerate(SHAPES):
            a = torch.from_numpy(g.rows(SEED, call, 0, 0, 0, m, k, "normal")).cuda()
            b = torch.from_numpy(g.rows(SEED, call, 1, 0, 0, n, k, "normal")).cuda().T.contiguous()
            c = torch.from_numpy(g.rows(SEED, call, 2, 0, 0, m, n, "normal")).cuda()
            for op, alpha, beta in CALLS:
                torch.cuda.synchronize()
                messages.clear()
                d = torch.mm(a, b) if op == "mm" else torch.addmm(c, a, b, beta=beta, alpha=alpha)
                torch.cuda.synchronize()
                lt = [x.split("algo=[", 1)[1].split("]", 1)[0] for x in messages if "algo=[" in x]
                bits = d.contiguous().cpu().view(torch.int32).numpy().astype(np.int64) & 0xFFFFFFFF
                f.write(json.dumps({"call": call, "m": m, "n": n, "k": k, "op": op, "alpha": alpha, "beta": beta, "style": "normal", "seed": SEED, "lt": lt,
                                    "d": [f"{x:x}" for x in bits.reshape(-1)], "provenance": prov}) + "\n")
    print(f"{len(SHAPES) * len(CALLS)} calls -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
