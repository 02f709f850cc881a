"""Where the top-k's time goes: each stage timed alone (CUDA-graph replay, median), for the table's
configuration and the ones named on the command line ('strategy/block/emit/warps1 ...')."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/<this>.py` from anywhere

import torch
import triton.testing

from benchmarks.configs import parse_configs
from sonicsampler.topk import _launches
from sonicsampler.tuning import topk_config


def gumbel(n, v):
    u = torch.rand(n, v, device="cuda").clamp_(1e-20, 1 - 1e-7)
    return (-torch.log(-torch.log(u))).to(torch.bfloat16)


def t(fn):
    return triton.testing.do_bench_cudagraph(fn, rep=30, return_mode="median") * 1e3


EXTRA = parse_configs(" ".join(sys.argv[1:]))

for v, n in ((151936, 1), (151936, 32), (151936, 128), (262144, 128), (32768, 1), (32768, 128)):
    x = gumbel(n, v)
    vals = torch.empty(n, 128, dtype=x.dtype, device="cuda")
    idx = torch.empty(n, 128, dtype=torch.int64, device="cuda")
    for cfg in (topk_config(x.device, v, n), *EXTRA):
        s1, s2 = _launches(x, 128, cfg, vals, idx)
        s1(); s2()
        a, b = t(s1), t(s2)
        both = t(lambda: (s1(), s2()))
        print(f"V={v} rows={n} {cfg}: stage1 {a:.1f} us, stage2 {b:.1f} us, both {both:.1f} us", flush=True)
