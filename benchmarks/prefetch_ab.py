"""Stage 1's L2 prefetch distance (kernels/prefetch.py) A/B for the top-k: the table's configuration with
each distance, alternating, CUDA-graph replay over rotating inputs (as the harness times), median.

    python3 benchmarks/prefetch_ab.py --vocab 151936 --rows 64,128 --prefetch 0,3072,0,3072

Rows go to --out (CSV, the harness's columns). The sampler's distances are compared with
`sampler_mix.py --prefetch`."""
import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/<this>.py` from anywhere

import torch

from benchmarks import harness
from benchmarks.cases import gumbel
from sonicsampler import topk
from sonicsampler.tuning import topk_config


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="151936")
    ap.add_argument("--rows", default="64,128")
    ap.add_argument("--prefetch", default="0,3072,0,3072")
    ap.add_argument("--budget-ms", type=float, default=40.0)
    ap.add_argument("--out", default="prefetch_ab.csv")
    a = ap.parse_args(argv)
    env = harness.environment("cuda")
    for v in map(int, a.vocab.split(",")):
        for n in map(int, a.rows.split(",")):
            copies, note = harness.plan_copies(n * v * 2, harness.l2_bytes("cuda"), 64)
            xs = [gumbel((n, v), "cuda", torch.Generator(device="cuda").manual_seed(c)) for c in range(copies)]
            base = topk_config(xs[0].device, v, n)
            want = topk(xs[0], 128)
            for pf in map(int, a.prefetch.split(",")):
                cfg = dataclasses.replace(base, prefetch=pf)
                got = topk(xs[0], 128, config=cfg)   # a hint: the result must not move
                same = all(torch.equal(g.view(torch.int16) if g.dtype == torch.bfloat16 else g, w.view(torch.int16)
                                       if w.dtype == torch.bfloat16 else w) for g, w in zip(got, want))
                fns = [(lambda x=x: topk(x, 128, config=cfg)) for x in xs]
                p20, p50, p80 = harness.percentiles(harness.cuda_graph_timer(fns, budget_ms=a.budget_ms))
                harness.append_rows(a.out, [{"case": "topk_prefetch", "shape": f"rows={n},V={v},k=128",
                                             "impl": f"sonicsampler.prefetch{pf}", "p20_us": p20, "p50_us": p50,
                                             "p80_us": p80, **env, "note": f"{cfg}; equal {same}; {note}"}])
                print(f"top-k V={v:7d} rows={n:4d} prefetch={pf:5d}: {p50:7.1f} us (p20 {p20:.1f}, p80 {p80:.1f})"
                      f"  equal to the table's config: {same}", flush=True)


if __name__ == "__main__":
    main()
