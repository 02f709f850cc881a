"""One call of a sonicsampler operation under Nsight Compute: warm-up outside the profiled range, then
one call between cudaProfilerStart and cudaProfilerStop, so that `ncu --profile-from-start off` sees
only that call's kernels (compilation and warm-up excluded).

    ncu --profile-from-start off --set full python benchmarks/profile_ncu.py sample top_p 128
    ncu --profile-from-start off --set full python benchmarks/profile_ncu.py topk - 128
    ncu --profile-from-start off --set full python benchmarks/profile_ncu.py verify 3 32   # γ = 3, B = 32

Arguments: what (sample | topk | verify), the sampler mix (sampler_mix.py's names) or γ, the rows (or
requests B), optionally the vocabulary (default 151936) and the Sampler's options (e.g. long_fill=1).
Inputs are bf16 standard Gumbel logits.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

import sonicsampler as ss
from benchmarks import cases
from benchmarks.cases import gumbel
from benchmarks.sampler_mix import make_sampler, sampler_options


def call_for(what: str, arg: str, n: int, v: int, options: dict | None = None):
    gen = torch.Generator(device="cuda").manual_seed(0)
    if what == "topk":
        x = gumbel((n, v), "cuda", gen)
        return lambda: ss.topk(x, 128)
    if what == "sample":
        s, slots, positions, mask = make_sampler(arg, n, v, **(options or {}))
        x = gumbel((n, v), "cuda", gen)
        return lambda: s.sample(x, slots, positions, mask)
    if what == "verify":
        g = int(arg)
        cfg = {"B": n, "gamma": g, "V": v, "T": 0.7, "k": 128, "p": 0.9}
        inp = cases.verify_inputs(cfg, "cuda", 0)
        s = ss.Sampler(v, n, "cuda")
        for i in range(n):
            s.add_request(i, ss.SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
        slots = torch.arange(n, device="cuda", dtype=torch.int64)
        positions = torch.zeros(n, device="cuda", dtype=torch.int64)
        return lambda: s.verify(inp["target_logits"].view(n * (g + 1), v), inp["draft_ids"], slots, positions,
                                draft_probs=inp["draft_probs"])
    raise ValueError(what)


def main():
    what, arg, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    v = int(sys.argv[4]) if len(sys.argv) > 4 else 151936
    fn = call_for(what, arg, n, v, sampler_options(sys.argv[5] if len(sys.argv) > 5 else ""))
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"profiled one call: {what} {arg} n={n} V={v}")


if __name__ == "__main__":
    main()
