#!/usr/bin/env python3
"""Runs on the GPU machine: FTTN's whole-GEMM example through PyTorch (cuBLAS), with the kernel
cuBLASLt ran. D = C - A·B, m = n = k = 8192, A and B f16, C and D f32 (torch.addmm with
alpha = -1, out_dtype = float32); A[i][0] = 2^10, A[i][j] = 2^-2 (j odd), 2^-3 (j even);
B[0][j] = 2^10, other B = 2^-3; C = 2^20. Prints D's distinct values and the kernel.

    CUBLASLT_LOG_LEVEL=5 CUBLASLT_LOG_FILE=lt.log python3 scripts/torch-fttn.py
"""
import torch

n = 8192
a = torch.full((n, n), 0.125, dtype=torch.float16, device="cuda")
a[:, 1::2] = 0.25
a[:, 0] = 1024.0
b = torch.full((n, n), 0.125, dtype=torch.float16, device="cuda")
b[0, :] = 1024.0
c = torch.full((n, n), 2.0 ** 20, dtype=torch.float32, device="cuda")
for name, d in [("addmm alpha=-1", torch.addmm(c, a, b, alpha=-1, out_dtype=torch.float32)),
                ("C - mm", c - torch.mm(a, b, out_dtype=torch.float32))]:
    torch.cuda.synchronize()
    vals, counts = d.unique(return_counts=True)
    print(name, [(float(v), int(k)) for v, k in zip(vals, counts)], "d[0,0] bits", hex(d[0, 0].view(torch.int32).item() & 0xffffffff))
