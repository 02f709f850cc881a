"""GPU checks of the two-stage top-k: exactness against the reference at production sizes, CUDA-graph
replay equal to eager, no recompilation over batch sizes 1..70. Writes JSON lines under $OUT (or ./out)."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/<this>.py` from anywhere

import torch

from benchmarks.configs import parse_configs
from benchmarks.gpu_log import JsonLog, compiled_variants
from sonicsampler import reference
from sonicsampler.topk import topk, topk_warmup

# Explicit configurations checked on every shape besides the table's (CHECK_CONFIGS, entries
# "strategy/block/emit/warps1"; CHECK_TABLE=0 leaves the table's out), at the k values of CHECK_KS.
CONFIGS = parse_configs(os.environ.get("CHECK_CONFIGS", "rank/4096/16/8"))
KS = [int(k) for k in os.environ.get("CHECK_KS", "1,50,128").split(",")]
USE_TABLE = os.environ.get("CHECK_TABLE", "1") != "0"

log = JsonLog("explore_topk.jsonl")
emit = log.emit


def gumbel(n, v, dtype=torch.bfloat16):
    u = torch.rand(n, v, device="cuda").clamp_(1e-20, 1 - 1e-7)
    return (-torch.log(-torch.log(u))).to(dtype)


def check_exact():
    """bf16 over the production grid; fp16/fp32 at one vocabulary (their code differs only in the keys)."""
    bad = n_checks = 0
    g = torch.Generator(device="cuda").manual_seed(0)
    vocabs = [int(v) for v in os.environ.get("CHECK_VOCABS", "32000,128256,151936,262144").split(",") if v]
    grid = [(v, n, torch.bfloat16) for v in vocabs for n in (1, 3, 64, 256)]
    grid += [(151936, 3, torch.float16), (151936, 3, torch.float32), (32000, 64, torch.float32)]
    for v, n, dtype in grid:
        for kind in ("gumbel", "normal", "ties", "sorted", "signed_zeros"):
            if kind == "gumbel":
                x = gumbel(n, v, dtype)
            elif kind == "normal":
                x = torch.randn(n, v, device="cuda", generator=g).to(dtype)
            elif kind == "ties":
                x = torch.randint(0, 4, (n, v), device="cuda", generator=g).to(dtype)
            elif kind == "sorted":
                x = torch.arange(v, device="cuda").float().repeat(n, 1).to(dtype)
            else:   # -0.0 and +0.0 share a key: the values must still come back bit for bit
                x = torch.zeros(n, v, device="cuda", dtype=dtype)
                x[:, ::3] = -0.0
            if n > 2:
                x[1, :] = float("-inf"); x[1, 5:9] = 1.0
                x[2, 77] = float("nan")
            for k, cfg in [(k, c) for k in KS for c in ([None] if USE_TABLE else []) + CONFIGS]:
                vals, idx = topk(x, k, config=cfg)
                rv, ri = reference.topk(x, k)
                n_checks += 1
                ok = torch.equal(idx, ri) and torch.equal(torch.nan_to_num(vals.float(), nan=1e9),
                                                          torch.nan_to_num(rv.float(), nan=1e9))
                ok = ok and bool((torch.isnan(rv) | (torch.signbit(vals) == torch.signbit(rv))).all())
                if not ok:
                    bad += 1
                    emit(what="mismatch", V=v, rows=n, dtype=str(dtype), kind=kind, k=k, config=str(cfg),
                         n_bad=int((idx != ri).sum()))
        # Progress after every shape, so that a run cut off by its time limit still shows what it checked.
        emit(what="exactness_so_far", V=v, rows=n, dtype=str(dtype), checks=n_checks, mismatches=bad)
    emit(what="exactness", checks=n_checks, mismatches=bad)


def check_graph_and_recompiles():
    from sonicsampler.kernels.topk import topk_stage1, topk_stage2
    x = gumbel(32, 151936)
    vals, idx = topk(x, 128)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gv, gi = topk(x, 128)
    ok = True
    for _ in range(3):
        x.copy_(gumbel(32, 151936))
        g.replay()
        ev, ei = topk(x, 128)
        ok &= torch.equal(gi, ei) and torch.equal(gv, ev)
    emit(what="graph_replay_equals_eager", ok=bool(ok))
    # The table picks a configuration per row bucket: warm them all first, as an engine would.
    emit(what="warmup_variants", n=topk_warmup(151936, 70))
    before = compiled_variants(topk_stage1, topk_stage2)
    for n in range(1, 71):
        topk(gumbel(n, 151936), 128)
    emit(what="recompiles_rows_1_70", before=before, after=compiled_variants(topk_stage1, topk_stage2))


if __name__ == "__main__":
    log.emit_env()
    steps = sys.argv[1:] or ["exact", "graph"]
    if "exact" in steps:
        check_exact()
    if "graph" in steps:
        check_graph_and_recompiles()
