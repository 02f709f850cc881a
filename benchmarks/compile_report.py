"""Compile the kernels for sm_90 on a machine without a GPU and report registers, spills, shared memory
and SASS instruction counts per launch configuration (no device time needed)."""
import argparse
import os
import re
import subprocess
import tempfile

import triton
import triton.language.target_info
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from sonicsampler.kernels.topk import topk_stage1, topk_stage2

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
TARGET = GPUTarget("cuda", 90, 32)


def answer_target_queries(target: GPUTarget) -> None:
    """Compile-time target queries (keys.pair_keys_in_ptx) ask the active driver, which a machine without
    a GPU lacks: from now on they get `target`, the one compiled for."""
    def current_target():
        return target
    current_target.__triton_builtin__ = True   # as Triton marks its own, so kernels' cache keys may refer to it
    triton.language.target_info.current_target = current_target


answer_target_queries(TARGET)


def compile_kernel(fn, signature, constexprs, num_warps, maxnreg=None):
    sig = dict(signature)
    sig.update({k: "constexpr" for k in constexprs})
    # As Triton specializes them at launch for the usual shapes: pointers, the row stride and the
    # vocabulary divisible by 16 (vector loads).
    attrs = {(fn.arg_names.index(k),): [["tt.divisibility", 16]]
             for k, t in signature.items() if t.startswith("*") or k in ("stride_row", "V")}
    return triton.compile(ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs),
                          target=TARGET,
                          options={"num_warps": num_warps, **({"maxnreg": maxnreg} if maxnreg else {})})


def report(name, k, dump=None):
    """One line of resource counts; `dump`: also write the disassembly to that file."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(k.asm["cubin"]); f.flush()
        res = subprocess.run([os.path.join(BIN, "cuobjdump"), "--dump-resource-usage", f.name],
                             capture_output=True, text=True).stdout
        sass = subprocess.run([os.path.join(BIN, "nvdisasm"), "-c", f.name], capture_output=True, text=True).stdout
    if dump:
        with open(dump, "w") as f:
            f.write(sass)
        with open(dump.removesuffix(".sass") + ".cubin", "wb") as f:   # for `nvdisasm -g` (line information)
            f.write(k.asm["cubin"])
    regs = re.search(r"REG:(\d+)", res)
    stack = re.search(r"STACK:(\d+)", res)
    # static shared memory, beside Triton's dynamic share: ~1 KiB of Triton's own in every kernel here; more
    # where inline PTX declares a .shared array (benchmarks/variants/smem_sums.patch)
    static = re.search(r"SHARED:(\d+)", res)
    ops = re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", sass, re.M)
    counts = {}
    for o in ops:
        counts[o] = counts.get(o, 0) + 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:10]
    print(f"{name}: regs={regs and regs.group(1)} stack={stack and stack.group(1)} smem={k.metadata.shared} "
          f"static_smem={static and static.group(1)} "
          f"sass={len(ops)} bar={counts.get('BAR', 0)} top={top}")


S1 = {"logits_ptr": "*bf16", "stride_row": "i32", "V": "i32", "cand_ptr": "*u64", "scratch_ptr": "*u32",
      "nan_ptr": "*i32", "Z": "i32"}
S2 = {"cand_ptr": "*u64", "nan_ptr": "*i32", "Z": "i32", "logits_ptr": "*bf16", "stride_row": "i32", "V": "i32",
      "k": "i32", "values_ptr": "*bf16", "indices_ptr": "*i64", "scratch_ptr": "*u32"}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", default="12,13,14")
    ap.add_argument("--warps", default="4,8")
    ap.add_argument("--e", type=int, default=5)
    ap.add_argument("--stage1-only", action="store_true")
    ap.add_argument("--strategies", default="bitonic,rank,extract")
    a = ap.parse_args()
    for b in map(int, a.blocks.split(",")):
        for w in map(int, a.warps.split(",")):
            for strategy in a.strategies.split(","):
                k = compile_kernel(topk_stage1, S1, {"BLOCK_LOG2": b, "E_LOG2": a.e, "M_LOG2": a.e + 2,
                                                     "KEY64": False, "STRATEGY": strategy,
                                                     "NEG_INF_KEY": 0x7F, "INF_KEY": 0xFF80}, w)
                report(f"stage1 block=2^{b} warps={w} {strategy}", k)
    for zl in (5, 6) if not a.stage1_only else ():
        for w in map(int, a.warps.split(",")):
            k = compile_kernel(topk_stage2, S2, {"Z_LOG2": zl, "E_LOG2": a.e, "C_LOG2": 7, "BLOCK_LOG2": 12,
                                                 "KEY64": False, "NEG_INF_KEY": 0x7F}, w)
            report(f"stage2 Z=2^{zl} warps={w}", k)
