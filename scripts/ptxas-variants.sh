#!/usr/bin/env bash
# Which Hopper matrix-instruction variants does `ptxas -arch=sm_90a` accept?
#
# For every variant below this writes a minimal PTX file (one .visible .entry kernel that runs the
# single instruction once on uninitialised registers and stores one result register through a
# pointer parameter, so the instruction is not dead code), assembles it with ptxas and prints one
# Markdown table row: | variant | accepted/refused | first line of ptxas output |.
# For accepted variants the third column holds ptxas's first warning, if any.
#
# No GPU needed, only ptxas (CUDA 13.0). Usage:
#   scripts/ptxas-variants.sh                 # ptxas from PATH, else /usr/local/cuda/bin/ptxas
#   PTXAS=/path/to/ptxas scripts/ptxas-variants.sh
#   KEEP=1 scripts/ptxas-variants.sh          # keep the generated .ptx files (path printed)
# Always exits 0 once ptxas is found; refusals are results, not failures.
set -u

PTXAS=${PTXAS:-ptxas}
if ! command -v "$PTXAS" >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/ptxas ]; then PTXAS=/usr/local/cuda/bin/ptxas
  else echo "ptxas not found (set PTXAS=...)" >&2; exit 1; fi
fi
PTX_VERSION=${PTX_VERSION:-8.7}   # 8.7 = CUDA 12.8; needed for the fp8 .f16-accumulator and k16 mma

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptxas-variants.XXXXXX")
if [ -n "${KEEP:-}" ]; then echo "PTX files kept in $tmp" >&2; else trap 'rm -rf "$tmp"' EXIT; fi

# R PREFIX FIRST COUNT -> "{%PREFIXFIRST, ..., %PREFIX(FIRST+COUNT-1)}"
# Register banks: %f (f32), %r (b32: packed f16/bf16/fp8/int/tf32, s32 accumulators, metadata),
# %fd (f64), %rd (b64: %rd0 = out pointer, %rd1/%rd2 = wgmma A/B descriptors), %p (predicates).
# By convention D starts at 0, C at 100 (mma only), A at 200, B at 300.
R() {
  local p=$1 i=$2 n=$3 s="" j
  for ((j = i; j < i + n; j++)); do s+="${s:+, }%$p$j"; done
  printf '{%s}' "$s"
}

# variant NAME STORE_REG PTX_LINE... : write the kernel, run ptxas, print one table row.
variant() {
  local name=$1 store=$2; shift 2
  count=$((count + 1))
  local f st
  f="$tmp/$(printf '%03d' "$count")_${name//[^A-Za-z0-9_.-]/_}.ptx"
  case $store in %fd*) st=f64 ;; %f*) st=f32 ;; *) st=b32 ;; esac
  {
    printf '.version %s\n.target sm_90a\n.address_size 64\n\n' "$PTX_VERSION"
    printf '.visible .entry k(.param .u64 out)\n{\n'
    printf '\t.reg .pred %%p<4>;\n\t.reg .b32 %%r<400>;\n\t.reg .f32 %%f<400>;\n'
    printf '\t.reg .f64 %%fd<40>;\n\t.reg .b64 %%rd<4>;\n\n'
    printf '\tld.param.u64 %%rd0, [out];\n\tcvta.to.global.u64 %%rd0, %%rd0;\n'
    printf '\t%s\n' "$@"
    printf '\tst.global.%s [%%rd0], %s;\n\tret;\n}\n' "$st" "$store"
  } >"$f"
  local out verdict msg
  if out=$("$PTXAS" -arch=sm_90a -o /dev/null "$f" 2>&1); then verdict=accepted; else verdict=refused; fi
  msg=$(printf '%s\n' "$out" | grep -m1 -v '^[[:space:]]*$')
  msg=${msg//"$tmp/"/}; msg=${msg//|/\\|}
  printf '| %s | %s | %s |\n' "$name" "$verdict" "$msg"
}

# wgmma NAME STORE_REG INSTRUCTION: variant with zero descriptors, a false predicate %p1 for the
# scale-d tests, and the fence / commit_group / wait_group a wgmma needs around it.
wgmma() {
  variant "$1" "$2" \
    'mov.b64 %rd1, 0;' 'mov.b64 %rd2, 0;' 'mov.b32 %r399, 0;' 'setp.ne.b32 %p1, %r399, 0;' \
    'wgmma.fence.sync.aligned;' "$3" 'wgmma.commit_group.sync.aligned;' 'wgmma.wait_group.sync.aligned 0;'
}

count=0
echo "ptxas: $("$PTXAS" --version 2>&1 | tail -n1), PTX .version $PTX_VERSION, -arch=sm_90a"
echo
echo '| variant | accepted/refused | first line of ptxas output (error, or warning if accepted) |'
echo '|---|---|---|'

# ---------------------------------------------------------------------------------------------
# mma.sync.aligned  (d, a, b, c; fragment sizes per thread of the warp)
M='mma.sync.aligned'

# f16 / bf16 / tf32 inputs. m16n8k8 f16: A 2 b32, B 1 b32, C/D 4 f32 or 2 b32 (f16x2).
variant mma.m16n8k8.f32.f16.f16.f32 %f0 "$M.m16n8k8.row.col.f32.f16.f16.f32 $(R f 0 4), $(R r 200 2), $(R r 300 1), $(R f 100 4);"
variant mma.m16n8k8.f16.f16.f16.f16 %r0 "$M.m16n8k8.row.col.f16.f16.f16.f16 $(R r 0 2), $(R r 200 2), $(R r 300 1), $(R r 100 2);"
variant mma.m16n8k8.f32.bf16.bf16.f32 %f0 "$M.m16n8k8.row.col.f32.bf16.bf16.f32 $(R f 0 4), $(R r 200 2), $(R r 300 1), $(R f 100 4);"
variant mma.m16n8k4.f32.tf32.tf32.f32 %f0 "$M.m16n8k4.row.col.f32.tf32.tf32.f32 $(R f 0 4), $(R r 200 2), $(R r 300 1), $(R f 100 4);"

# f64. m8n8k4: A 1, B 1, C/D 2; m16n8k4: A 2, B 1, C/D 4; m16n8k8: A 4, B 2; m16n8k16: A 8, B 4.
variant mma.m8n8k4.f64 %fd0 "$M.m8n8k4.row.col.f64.f64.f64.f64 $(R fd 0 2), $(R fd 10 1), $(R fd 20 1), $(R fd 30 2);"
variant mma.m16n8k4.f64 %fd0 "$M.m16n8k4.row.col.f64.f64.f64.f64 $(R fd 0 4), $(R fd 10 2), $(R fd 20 1), $(R fd 30 4);"
variant mma.m16n8k8.f64 %fd0 "$M.m16n8k8.row.col.f64.f64.f64.f64 $(R fd 0 4), $(R fd 10 4), $(R fd 20 2), $(R fd 30 4);"
variant mma.m16n8k16.f64 %fd0 "$M.m16n8k16.row.col.f64.f64.f64.f64 $(R fd 0 4), $(R fd 10 8), $(R fd 20 4), $(R fd 30 4);"

# fp8 (sm_89+). m16n8k32: A 4 b32, B 2 b32; m16n8k16: A 2 b32, B 1 b32. C/D 4 f32 or 2 b32 (f16x2).
# The .f16 accumulator and the k16 shape need PTX ISA 8.7.
variant mma.m16n8k32.f16.e4m3.e4m3.f16 %r0 "$M.m16n8k32.row.col.f16.e4m3.e4m3.f16 $(R r 0 2), $(R r 200 4), $(R r 300 2), $(R r 100 2);"
variant mma.m16n8k32.f16.e5m2.e5m2.f16 %r0 "$M.m16n8k32.row.col.f16.e5m2.e5m2.f16 $(R r 0 2), $(R r 200 4), $(R r 300 2), $(R r 100 2);"
variant mma.m16n8k16.f32.e4m3.e4m3.f32 %f0 "$M.m16n8k16.row.col.f32.e4m3.e4m3.f32 $(R f 0 4), $(R r 200 2), $(R r 300 1), $(R f 100 4);"
variant mma.m16n8k16.f16.e4m3.e4m3.f16 %r0 "$M.m16n8k16.row.col.f16.e4m3.e4m3.f16 $(R r 0 2), $(R r 200 2), $(R r 300 1), $(R r 100 2);"
variant mma.m16n8k32.f32.e4m3.e5m2.f32 %f0 "$M.m16n8k32.row.col.f32.e4m3.e5m2.f32 $(R f 0 4), $(R r 200 4), $(R r 300 2), $(R f 100 4);"
variant mma.m16n8k32.f32.e5m2.e4m3.f32 %f0 "$M.m16n8k32.row.col.f32.e5m2.e4m3.f32 $(R f 0 4), $(R r 200 4), $(R r 300 2), $(R f 100 4);"

# m8n8k4 f16 (Volta shape; 4 independent MMAs per warp): A 2 b32, B 2 b32, C/D 8 f32 or 4 b32.
variant mma.m8n8k4.row.col.f32.f16.f16.f32 %f0 "$M.m8n8k4.row.col.f32.f16.f16.f32 $(R f 0 8), $(R r 200 2), $(R r 300 2), $(R f 100 8);"
variant mma.m8n8k4.row.col.f16.f16.f16.f16 %r0 "$M.m8n8k4.row.col.f16.f16.f16.f16 $(R r 0 4), $(R r 200 2), $(R r 300 2), $(R r 100 4);"

# Integer. m16n8k32 s8/u8 and m16n8k64 s4: A 4 b32, B 2 b32, C/D 4 s32. .satfinite goes after .row.col.
variant mma.m16n8k32.s32.s8.s8.s32 %r0 "$M.m16n8k32.row.col.s32.s8.s8.s32 $(R r 0 4), $(R r 200 4), $(R r 300 2), $(R r 100 4);"
variant mma.m16n8k32.satfinite.s32.s8.s8.s32 %r0 "$M.m16n8k32.row.col.satfinite.s32.s8.s8.s32 $(R r 0 4), $(R r 200 4), $(R r 300 2), $(R r 100 4);"
variant mma.m16n8k32.s32.u8.u8.s32 %r0 "$M.m16n8k32.row.col.s32.u8.u8.s32 $(R r 0 4), $(R r 200 4), $(R r 300 2), $(R r 100 4);"
variant mma.m16n8k32.satfinite.s32.u8.u8.s32 %r0 "$M.m16n8k32.row.col.satfinite.s32.u8.u8.s32 $(R r 0 4), $(R r 200 4), $(R r 300 2), $(R r 100 4);"
variant mma.m16n8k64.s32.s4.s4.s32 %r0 "$M.m16n8k64.row.col.s32.s4.s4.s32 $(R r 0 4), $(R r 200 4), $(R r 300 2), $(R r 100 4);"

# Single bit: m8n8k128 A 1, B 1, C/D 2; m16n8k256 A 4, B 2, C/D 4. bitOp.popc goes last.
variant mma.m8n8k128.b1.xor.popc %r0 "$M.m8n8k128.row.col.s32.b1.b1.s32.xor.popc $(R r 0 2), $(R r 200 1), $(R r 300 1), $(R r 100 2);"
variant mma.m8n8k128.b1.and.popc %r0 "$M.m8n8k128.row.col.s32.b1.b1.s32.and.popc $(R r 0 2), $(R r 200 1), $(R r 300 1), $(R r 100 2);"
variant mma.m16n8k256.b1.xor.popc %r0 "$M.m16n8k256.row.col.s32.b1.b1.s32.xor.popc $(R r 0 4), $(R r 200 4), $(R r 300 2), $(R r 100 4);"
variant mma.m16n8k256.b1.and.popc %r0 "$M.m16n8k256.row.col.s32.b1.b1.s32.and.popc $(R r 0 4), $(R r 200 4), $(R r 300 2), $(R r 100 4);"

# ---------------------------------------------------------------------------------------------
# mma.sp  (d, a, b, c, metadata e (b32 register), sparsity selector f (immediate))
# A is 2:4 sparse so it holds half of K. f16/bf16 m16n8k32: A 4, B 4; tf32 m16n8k16: A 4, B 4;
# fp8 m16n8k64: A 4, B 4. Selector 0 is valid for every shape (fp8 allows only 0).
S='mma.sp::ordered_metadata.sync.aligned'
variant mma.sp::ordered_metadata.m16n8k32.f32.f16.f16.f32 %f0 "$S.m16n8k32.row.col.f32.f16.f16.f32 $(R f 0 4), $(R r 200 4), $(R r 300 4), $(R f 100 4), %r390, 0x0;"
variant mma.sp::ordered_metadata.m16n8k32.f32.bf16.bf16.f32 %f0 "$S.m16n8k32.row.col.f32.bf16.bf16.f32 $(R f 0 4), $(R r 200 4), $(R r 300 4), $(R f 100 4), %r390, 0x0;"
variant mma.sp::ordered_metadata.m16n8k16.f32.tf32.tf32.f32 %f0 "$S.m16n8k16.row.col.f32.tf32.tf32.f32 $(R f 0 4), $(R r 200 4), $(R r 300 4), $(R f 100 4), %r390, 0x0;"
variant mma.sp::ordered_metadata.m16n8k64.f32.e4m3.e4m3.f32 %f0 "$S.m16n8k64.row.col.f32.e4m3.e4m3.f32 $(R f 0 4), $(R r 200 4), $(R r 300 4), $(R f 100 4), %r390, 0x0;"
variant mma.sp::ordered_metadata.m16n8k64.f32.e5m2.e5m2.f32 %f0 "$S.m16n8k64.row.col.f32.e5m2.e5m2.f32 $(R f 0 4), $(R r 200 4), $(R r 300 4), $(R f 100 4), %r390, 0x0;"
# Extra: the older mma.sp without ::ordered_metadata (f16 only; fp8 requires ::ordered_metadata).
variant mma.sp.m16n8k32.f32.f16.f16.f32 %f0 "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 $(R f 0 4), $(R r 200 4), $(R r 300 4), $(R f 100 4), %r390, 0x0;"

# ---------------------------------------------------------------------------------------------
# wgmma.mma_async  (warpgroup of 128 threads; per thread D is N/2 f32 or s32, N/4 b32 for f16
# output; A from registers is 4 b32 for every type here). Operand order:
#   f16/bf16: d, a-desc|a, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a (desc A only), imm-trans-b
#   fp8:      d, a-desc|a, b-desc, scale-d, imm-scale-a, imm-scale-b        (no transpose operands)
#   integer:  d, a-desc|a, b-desc, scale-d                                  (no scale/transpose)
W='wgmma.mma_async.sync.aligned'
wgmma wgmma.m64n8k16.f16.f16.f16.regA %r0 "$W.m64n8k16.f16.f16.f16 $(R r 0 2), $(R r 200 4), %rd2, 1, 1, 1, 0;"
wgmma wgmma.m64n8k16.f16.f16.f16.descA %r0 "$W.m64n8k16.f16.f16.f16 $(R r 0 2), %rd1, %rd2, 1, 1, 1, 0, 0;"
wgmma wgmma.m64n8k32.f16.e4m3.e4m3.descA %r0 "$W.m64n8k32.f16.e4m3.e4m3 $(R r 0 2), %rd1, %rd2, 1, 1, 1;"
wgmma wgmma.m64n8k32.f16.e4m3.e4m3.regA %r0 "$W.m64n8k32.f16.e4m3.e4m3 $(R r 0 2), $(R r 200 4), %rd2, 1, 1, 1;"
wgmma wgmma.m64n8k32.f32.e4m3.e5m2.descA %f0 "$W.m64n8k32.f32.e4m3.e5m2 $(R f 0 4), %rd1, %rd2, 1, 1, 1;"
wgmma wgmma.m64n8k32.f32.e5m2.e4m3.descA %f0 "$W.m64n8k32.f32.e5m2.e4m3 $(R f 0 4), %rd1, %rd2, 1, 1, 1;"
for n in 16 64 128 256; do
  wgmma "wgmma.m64n${n}k16.f32.f16.f16.descA" %f0 "$W.m64n${n}k16.f32.f16.f16 $(R f 0 $((n / 2))), %rd1, %rd2, 1, 1, 1, 0, 0;"
done
wgmma wgmma.m64n256k16.f32.f16.f16.regA %f0 "$W.m64n256k16.f32.f16.f16 $(R f 0 128), $(R r 200 4), %rd2, 1, 1, 1, 0;"
# scale-d: a predicate register that is false (D = A*B, C ignored); also the immediate-0 spelling.
wgmma wgmma.m64n8k16.f32.f16.f16.scale-d=pred-false %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 4), %rd1, %rd2, %p1, 1, 1, 0, 0;"
wgmma wgmma.m64n8k16.f32.f16.f16.scale-d=imm-0 %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 4), %rd1, %rd2, 0, 1, 1, 0, 0;"  # unsure: immediate 0 may not be allowed
# imm-scale-a / imm-scale-b = -1 (negate A / B).
wgmma wgmma.m64n8k16.f32.f16.f16.scale-a=-1 %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 4), %rd1, %rd2, 1, -1, 1, 0, 0;"
wgmma wgmma.m64n8k16.f32.f16.f16.scale-b=-1 %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 4), %rd1, %rd2, 1, 1, -1, 0, 0;"
wgmma wgmma.m64n8k32.f32.e4m3.e4m3.scale-ab=-1 %f0 "$W.m64n8k32.f32.e4m3.e4m3 $(R f 0 4), %rd1, %rd2, 1, -1, -1;"
# Transposed f16 operands (A and B from descriptors); trans-b also with A from registers.
wgmma wgmma.m64n8k16.f32.f16.f16.trans-a %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 4), %rd1, %rd2, 1, 1, 1, 1, 0;"
wgmma wgmma.m64n8k16.f32.f16.f16.trans-b %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 4), %rd1, %rd2, 1, 1, 1, 0, 1;"
wgmma wgmma.m64n8k16.f32.f16.f16.trans-ab %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 4), %rd1, %rd2, 1, 1, 1, 1, 1;"
wgmma wgmma.m64n8k16.f32.f16.f16.regA.trans-b %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 4), $(R r 200 4), %rd2, 1, 1, 1, 1;"
# Integer (.satfinite goes right after the shape).
wgmma wgmma.m64n8k32.s32.s8.s8.descA %r0 "$W.m64n8k32.s32.s8.s8 $(R r 0 4), %rd1, %rd2, 1;"
wgmma wgmma.m64n8k32.satfinite.s32.s8.s8.descA %r0 "$W.m64n8k32.satfinite.s32.s8.s8 $(R r 0 4), %rd1, %rd2, 1;"
wgmma wgmma.m64n8k32.s32.s8.s8.regA %r0 "$W.m64n8k32.s32.s8.s8 $(R r 0 4), $(R r 200 4), %rd2, 1;"

# ---------------------------------------------------------------------------------------------
# wgmma.mma_async.sp  (sp-meta b32 register and sp-sel immediate come after b-desc)
#   f16: d, a-desc|a, b-desc, sp-meta, sp-sel, scale-d, imm-scale-a, imm-scale-b, imm-trans-a (desc A only), imm-trans-b
#   fp8: d, a-desc|a, b-desc, sp-meta, sp-sel, scale-d, imm-scale-a, imm-scale-b
WS='wgmma.mma_async.sp.sync.aligned'
wgmma wgmma.sp.m64n8k32.f32.f16.f16.descA %f0 "$WS.m64n8k32.f32.f16.f16 $(R f 0 4), %rd1, %rd2, %r390, 0, 1, 1, 1, 0, 0;"
wgmma wgmma.sp.m64n8k32.f32.f16.f16.regA %f0 "$WS.m64n8k32.f32.f16.f16 $(R f 0 4), $(R r 200 4), %rd2, %r390, 0, 1, 1, 1, 0;"
wgmma wgmma.sp.m64n8k64.f32.e4m3.e4m3.descA %f0 "$WS.m64n8k64.f32.e4m3.e4m3 $(R f 0 4), %rd1, %rd2, %r390, 0, 1, 1, 1;"
wgmma wgmma.sp.m64n8k64.f32.e4m3.e4m3.regA %f0 "$WS.m64n8k64.f32.e4m3.e4m3 $(R f 0 4), $(R r 200 4), %rd2, %r390, 0, 1, 1, 1;"

# ---------------------------------------------------------------------------------------------
# Controls that must be refused (check that a refusal shows up as one): a shape that does not
# exist, a wrong D register count, fp8 with a transpose operand, sparse fp8 with selector 1.
variant CONTROL.mma.m16n8k8.f32.e4m3.e4m3.f32 %f0 "$M.m16n8k8.row.col.f32.e4m3.e4m3.f32 $(R f 0 4), $(R r 200 2), $(R r 300 1), $(R f 100 4);"
wgmma CONTROL.wgmma.m64n8k16.f32.f16.f16.3-D-regs %f0 "$W.m64n8k16.f32.f16.f16 $(R f 0 3), %rd1, %rd2, 1, 1, 1, 0, 0;"
wgmma CONTROL.wgmma.m64n8k32.f32.e4m3.e4m3.trans %f0 "$W.m64n8k32.f32.e4m3.e4m3 $(R f 0 4), %rd1, %rd2, 1, 1, 1, 1, 0;"
variant CONTROL.mma.sp::ordered_metadata.m16n8k64.e4m3.sel1 %f0 "$S.m16n8k64.row.col.f32.e4m3.e4m3.f32 $(R f 0 4), $(R r 200 4), $(R r 300 4), $(R f 100 4), %r390, 0x1;"

exit 0
