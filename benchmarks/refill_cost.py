"""What a saturated tile costs: rows where one tile holds more of the row's best keys than it emits, so
that stage 2 re-reads it (the refill of kernels/topk.py and kernels/sample.py), against the same rows
without it.

    python3 benchmarks/refill_cost.py --rows 1,32,128 [--check]

Logits: standard Gumbel in bf16 (seeded); a saturated row also gets 24 values above its maximum in one
1024-aligned span (a different one per row), which lies inside one tile for every tile of 1024 or more,
so that tile holds 24 of the row's best keys and emits 8 or 16. Timed by CUDA-graph replay (median):
the sampler (temperature 0.7, top-k 128, top-p 0.9, the table's configuration) and the top-k (k = 128).
--check first compares both with the reference on the saturated rows: top-k values and indices exactly,
the sampler's tokens (a mismatch must be a near-tie, as benchmarks/check_sampler_gpu.py counts them).
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
import triton.testing

import sonicsampler
from sonicsampler import Sampler, SamplingParams, reference

SPAN = 1024
HOT = 24


def logits(n: int, v: int, saturate: bool, device="cuda") -> torch.Tensor:
    gen = torch.Generator(device=device).manual_seed(n * 7 + v)
    u = torch.rand(n, v, device=device, generator=gen).clamp_(1e-20, 1 - 1e-7)
    x = -torch.log(-torch.log(u))
    if saturate:
        spans = v // SPAN
        for r in range(n):
            start = ((r * 37 + 11) % spans) * SPAN
            x[r, start + 100:start + 100 + HOT] = x[r].max() + 0.5 + 0.25 * torch.arange(HOT, device=device)
    return x.to(torch.bfloat16)


def sampler_for(n: int, v: int, device="cuda", **kw) -> Sampler:
    s = Sampler(v, n, device, **kw)
    for i in range(n):
        s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
    return s


def check(n: int, v: int, device="cuda", **kw) -> None:
    """kw: Sampler options (the CPU's smoke run gives a small block)."""
    from benchmarks.check_sampler_gpu import near_tie
    x = logits(n, v, True, device)
    vals, idx = sonicsampler.topk(x, 128)
    rv, ri = reference.topk(x.cpu(), 128)
    s = sampler_for(n, v, device, **kw)
    params = [s.table.host[i] for i in range(n)]
    pos = list(range(5, 5 + n))
    out = s.sample(x, list(range(n)), pos)
    ref = reference.sample(x.cpu(), params, positions=pos)
    bad = torch.nonzero(out.tokens.cpu() != ref.tokens).flatten().tolist()
    near = sum(near_tie(x[i].cpu(), params[i], [], [], None, pos[i], int(out.tokens[i]), int(ref.tokens[i]))
               for i in bad)
    print(f"check rows={n} V={v}: top-k indices equal {torch.equal(idx.cpu(), ri)}, values equal "
          f"{torch.equal(vals.cpu(), rv)}; sampler tokens equal {n - len(bad)} of {n}, mismatches near-ties "
          f"{near} of {len(bad)}, exact {bool(out.exact.all())}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    v = a.vocab
    for n in map(int, a.rows.split(",")):
        if a.check:
            check(n, v)
        slots = torch.arange(n, device="cuda")
        pos = torch.zeros(n, dtype=torch.int64, device="cuda")
        s = sampler_for(n, v)
        for sat in (False, True):
            x = logits(n, v, sat)
            us_s = triton.testing.do_bench_cudagraph(lambda: s.sample(x, slots, pos), rep=40,
                                                     return_mode="median") * 1e3
            us_t = triton.testing.do_bench_cudagraph(lambda: sonicsampler.topk(x, 128), rep=40,
                                                     return_mode="median") * 1e3
            print(f"refill rows={n} V={v} saturated={int(sat)}: sampler {us_s:.1f} us, top-k {us_t:.1f} us",
                  flush=True)


if __name__ == "__main__":
    main()
