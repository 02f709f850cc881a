"""What a third launch after stage 2 would cost the batches that do not need it (a design diagnostic).

Stage 2's SHARED variant (the CUDA-graph path's, kernels/shared_sets.py) carries the exact passes of
rows beyond the bound in every launch; batches without such rows pay for its code (~2 us at 1 row,
runs 139-143). The alternative: stage 2 always plain, and a third launch that runs the long rows'
passes over every SM, which exits at once (before its PDL wait) when no row of the batch may exceed
the bound. This times, CUDA-graph replay of the standard mix at V = 151936:
- `shared`: the sampler as it is (device slots: SHARED);
- `plain`: the same with SHARED forced off (wrong for long rows; the standard mix has none);
- `plain+tail`: plain, then a tail kernel (132 programs of 8 warps) that reads the rows' MAY_EXCEED
  bits and exits, launched with PDL (it may start once stage 2's programs are all on the GPU);
- `plain+tail_nopdl`: the same tail without PDL (it starts when stage 2 ends).
Run 164: the tail cost more than SHARED does, PDL or not (stage 2 never lets a next launch start
early). With a snapshot whose stage 2 does (`let_next_start` first) on PYTHONPATH, `plain+tail` times
a tail that runs beside stage 2. Run 165: then the tail costs 0.5 us at 1 row (a net ~1 us against
SHARED) but 1.5 / 3.2 us at 32 / 128 rows, where stage 2's programs fill the SMs it waits for
(docs/PERFORMANCE.md, session 30).

    python3 benchmarks/tail_launch_cost.py --rows 1,32,128
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
import triton
import triton.language as tl

from benchmarks import harness
from benchmarks.cases import gumbel
from benchmarks.sampler_mix import make_sampler
from sonicsampler import Sampler
from sonicsampler import indicators as bits
from sonicsampler.kernels.pdl import wait_for_previous


@triton.jit
def tail(slots_ptr, flags_ptr, n_rows, out_ptr, MAY: tl.constexpr, ROWS: tl.constexpr, PDL: tl.constexpr):
    """Reads the batch's MAY_EXCEED bits before the PDL wait; waits and writes only if one is set."""
    i = tl.arange(0, ROWS)
    s = tl.load(slots_ptr + i, mask=i < n_rows, other=0)
    f = tl.load(flags_ptr + s, mask=i < n_rows, other=0)
    if tl.sum(((f & MAY) != 0).to(tl.int32)) > 0:
        wait_for_previous(PDL)
        tl.store(out_ptr + tl.program_id(0), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--budget-ms", type=float, default=20)
    ap.add_argument("--variants", default="shared,plain,plain+tail,plain+tail_nopdl,shared")
    a = ap.parse_args()
    orig_plan = Sampler._plan
    for n in map(int, a.rows.split(",")):
        for variant in a.variants.split(","):
            if variant == "shared":
                Sampler._plan = orig_plan
            else:
                Sampler._plan = lambda self, *args, **kw: orig_plan(self, *args, **{**kw, "shared": False})
            s, slots, positions, mask = make_sampler("top_p", n, a.vocab)
            flags = s.table.flags
            out = torch.zeros(132, dtype=torch.int32, device="cuda")
            rows = triton.next_power_of_2(max(n, 2))
            pdl = variant == "plain+tail"

            def step(x):
                s.sample(x, slots, positions, mask)
                if variant.startswith("plain+tail"):
                    tail[(132,)](slots, flags, n, out, MAY=bits.MAY_EXCEED, ROWS=rows, PDL=pdl, num_warps=8,
                                 launch_pdl=pdl)
            copies, _ = harness.plan_copies(n * a.vocab * 2, harness.l2_bytes("cuda"), 64)
            inputs = [gumbel((n, a.vocab), "cuda", torch.Generator(device="cuda").manual_seed(c))
                      for c in range(copies)]
            step(inputs[0])
            torch.cuda.synchronize()
            shared = sorted({p["const2"]["SHARED"] for p in s._plans.values()})
            p20, p50, p80 = harness.percentiles(
                harness.cuda_graph_timer([(lambda x=x: step(x)) for x in inputs], budget_ms=a.budget_ms))
            print(f"tail rows={n:4d} {variant:18s} {p50:7.2f} us (p20 {p20:.2f}, p80 {p80:.2f}); SHARED {shared}; "
                  f"tail wrote {int(out.sum())}", flush=True)
            del s, inputs
            harness._release("cuda")
    Sampler._plan = orig_plan


if __name__ == "__main__":
    main()
