"""keys.bf16_tile_keys takes its PTX path only for targets that can run it: the kernel of
benchmarks/check_keys_gpu.py (which calls bf16_tile_keys) is compiled, through ptxas, for sm_75, sm_80
and sm_90 without a GPU. sm_80 and sm_90 must get the PTX (fma.rn.bf16x2 in the output) and sm_75 the
integer path; every compile must succeed. Fails if the PTX uses an instruction ptxas refuses for sm_80
(as add.rn.bf16x2 did: "requires .target sm_90"), or if the gate lets sm_75 in or keeps sm_80 out.

The compile runs in a child process without TRITON_INTERPRET (the kernels must be built for a real
target), with Triton's compile-time target query answered by the target compiled for."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
sys.path.insert(0, ".")
from benchmarks.check_keys_gpu import _compare
from benchmarks.compile_report import answer_target_queries
out = {}
for arch in (75, 80, 90):
    target = GPUTarget("cuda", arch, 32)
    answer_target_queries(target)
    sig = {"count_ptr": "*i32", "first_ptr": "*i64", "stride": "i64", "BLOCK_LOG2": "constexpr"}
    k = triton.compile(ASTSource(fn=_compare, signature=sig, constexprs={"BLOCK_LOG2": 8}), target=target,
                       options={"num_warps": 1})
    out[arch] = {"ptx_path": "fma.rn.bf16x2" in k.asm["ptx"], "cubin_bytes": len(k.asm["cubin"])}
print(json.dumps(out))
"""


def test_pair_keys_compile_for_each_target():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    res = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert {a: o["ptx_path"] for a, o in out.items()} == {"75": False, "80": True, "90": True}
    assert all(o["cubin_bytes"] > 0 for o in out.values())
