"""Verification's time by stage 2's warps and register cap (a diagnostic for batches of more target
rows than the GPU has SMs: stage 2 runs one program per row, and with 8 warps at 255 registers a
program holds a whole SM, so 512 target rows run in four waves).

    python3 benchmarks/verify_warps.py --rows 32,64,128 --configs 8x255,4x255,4x168

γ = 3, V = 151936, the harness's verify case (benchmarks/cases.py), CUDA-graph replay, median; each
configuration overrides the table's stage-2 warps and cap (Sampler(warps=, regs=)) and keeps its
stage 1; the first configuration is timed again last.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
import triton.testing

from benchmarks.cases import verify_inputs
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
            w2, cap2 = (int(t) for t in c.split("x"))
            s = Sampler(a.vocab, b, "cuda", warps=(table.warps1, w2), regs=(table.regs1 or 0, cap2))
            for i in range(b):
                s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
            ms = triton.testing.do_bench_cudagraph(
                lambda: s.verify(x, inp["draft_ids"], slots, pos, draft_probs=inp["draft_probs"]), rep=40,
                return_mode="median")
            print(f"verify gamma={a.gamma} B={b} V={a.vocab} stage2 {w2} warps cap {cap2}: {ms * 1e3:.1f} us "
                  f"(stage 1 {table.warps1} warps cap {table.regs1})", flush=True)


if __name__ == "__main__":
    main()
