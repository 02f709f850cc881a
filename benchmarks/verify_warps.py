"""Verification's time by launch configuration: stage 2's warps and register cap (a diagnostic for
batches of more target rows than the GPU has SMs: stage 2 runs one program per row, and with 8 warps
at 255 registers a program holds a whole SM, so 512 target rows run in four waves), stage 1's cap, or
a whole configuration.

    python3 benchmarks/verify_warps.py --rows 32,64,128 --configs 8x255,4x255,4x168,8x255x160

γ = 3, V = 151936, the harness's verify case (benchmarks/cases.py), CUDA-graph replay, median. A
configuration WARPSxCAP overrides the table's stage-2 warps and cap (Sampler(warps=, regs=)) and keeps
its stage 1; WARPSxCAPxCAP1 also sets stage 1's cap; 'strategy/block/emit/W1xW2/R1xR2' (as
benchmarks/tune_sampler.py reads it) replaces the whole configuration. The first configuration is
timed again last.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
import triton.testing

from benchmarks.cases import verify_inputs
from benchmarks.tune_sampler import _config
from sonicsampler import Sampler, SamplingParams


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="32,64,128", help="requests B")
    ap.add_argument("--gamma", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--configs", default="8x255,4x255", help="stage 2's WARPSxCAP, comma-separated")
    a = ap.parse_args()
    configs = a.configs.split(",")
    configs.append(configs[0])
    for b in map(int, a.rows.split(",")):
        cfg = {"B": b, "gamma": a.gamma, "V": a.vocab, "T": 0.7, "k": 128, "p": 0.9}
        inp = verify_inputs(cfg, torch.device("cuda"), 0)
        x = inp["target_logits"].view(b * (a.gamma + 1), a.vocab)
        slots = torch.arange(b, device="cuda")
        pos = torch.zeros(b, dtype=torch.int64, device="cuda")
        table = Sampler(a.vocab, b, "cuda").launch_config(b * (a.gamma + 1), verify=True)   # its stage 1 is kept
        for c in configs:
            if "/" in c:
                cfg = _config(c)
                s = Sampler(a.vocab, b, "cuda", block=cfg["block"], emit=cfg["emit"], strategy=cfg["strategy"],
                            warps=(cfg["warps1"], cfg["warps2"]), regs=(cfg.get("regs1", 0), cfg.get("regs2", 0)))
                what = c
            else:
                w2, cap2, *cap1 = (int(t) for t in c.split("x"))
                cap1 = cap1[0] if cap1 else table.regs1 or 0
                s = Sampler(a.vocab, b, "cuda", warps=(table.warps1, w2), regs=(cap1, cap2))
                what = f"stage2 {w2} warps cap {cap2} (stage 1 {table.warps1} warps cap {cap1})"
            for i in range(b):
                s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
            ms = triton.testing.do_bench_cudagraph(
                lambda: s.verify(x, inp["draft_ids"], slots, pos, draft_probs=inp["draft_probs"]), rep=40,
                return_mode="median")
            print(f"verify gamma={a.gamma} B={b} V={a.vocab} {what}: {ms * 1e3:.1f} us", flush=True)


if __name__ == "__main__":
    main()
