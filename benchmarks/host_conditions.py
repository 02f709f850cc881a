"""Why `sampler_mix.py` and `host_ab.py` disagree on the eager host time at 32-128 rows (GPU machine).

Run 121: with `out=`, host_ab.py measured 17.7 / 18.6 µs per call at 32 / 128 rows, sampler_mix.py (another
process) 21.9 / 28.1. The two differ in what runs before and around the timed calls: sampler_mix times
CUDA graphs of the sampler first and cycles through several input copies; host_ab does neither. Here,
in one process, the standard mix with `out=` (best of five rounds of 100 calls, as sampler_mix's
harness.host_time), under each condition in turn:
  same input; cycling the input copies sampler_mix uses; after sampler_mix's CUDA-graph timing of the
  same sampler; same input again.

    python3 benchmarks/host_conditions.py [rows ...]
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks import harness
from benchmarks.cases import gumbel
from benchmarks.sampler_mix import make_sampler


def main(rows) -> None:
    v = 151936
    for n in rows:
        s, slots, positions, mask = make_sampler("top_p", n, v)
        copies, _ = harness.plan_copies(n * v * 2, harness.l2_bytes("cuda"), 64)
        inputs = [gumbel((n, v), "cuda", torch.Generator(device="cuda").manual_seed(c)) for c in range(copies)]
        buf = s.sample(inputs[0], slots, positions)
        x = inputs[0]
        same = lambda: s.sample(x, slots, positions, out=buf)   # noqa: E731
        xs = itertools.cycle(inputs)
        cycled = lambda: s.sample(next(xs), slots, positions, out=buf)   # noqa: E731
        times = {"same input": harness.host_time(same), f"cycling {copies} copies": harness.host_time(cycled)}
        fns = [(lambda x=x: s.sample(x, slots, positions, mask)) for x in inputs]
        gpu = harness.percentiles(harness.cuda_graph_timer(fns, budget_ms=20))[1]
        times["after the graph timing, same input"] = harness.host_time(same)
        times["after the graph timing, cycling"] = harness.host_time(cycled)
        times["same input, 300 calls a round"] = harness.host_time(same, reps=300)
        cells = ", ".join(f"{k} {t:.1f}" for k, t in times.items())
        print(f"host conditions rows={n} V={v} (graph p50 {gpu:.1f} us): us per eager call with out=: {cells}",
              flush=True)
        del s, inputs, fns
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main([int(r) for r in sys.argv[1:]] or [32, 128])
