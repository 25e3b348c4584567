"""Whether cuBLASLt logs a strided-batched torch.bmm: its logger callback, level 5, around one
batched call and one torch.mm of the same shape (prints what each logged)."""
import ctypes, torch
torch.mm(torch.ones(16,16,device="cuda"),torch.ones(16,16,device="cuda"))
p=[l.split()[-1] for l in open("/proc/self/maps") if "libcublasLt.so" in l][0]
lt=ctypes.CDLL(p); msgs=[]
T=ctypes.CFUNCTYPE(None,ctypes.c_int,ctypes.c_char_p,ctypes.c_char_p)
cb=T(lambda l,f,m: msgs.append((l,(f or b"").decode(),(m or b"").decode()[:300])))
print(lt.cublasLtLoggerSetCallback(cb), lt.cublasLtLoggerSetLevel(5))
a=torch.randn(8,256,64,device="cuda",dtype=torch.float16); b=torch.randn(8,64,256,device="cuda",dtype=torch.float16)
torch.bmm(a,b); torch.cuda.synchronize(); print("bmm msgs", len(msgs)); [print(m) for m in msgs[:6]]
msgs.clear(); torch.mm(a[0],b[0]); torch.cuda.synchronize(); print("mm msgs", len(msgs)); [print(m) for m in msgs[:4]]
