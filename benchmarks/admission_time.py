"""Host time of Sampler.add_request while the GPU is busy (GPU machine): four admissions in a row behind
tens of milliseconds of queued matrix products, each timed, then where the last one's time goes
(cProfile's top functions by own time). An admission that waited for the queued work would take about
as long as the work.

    python3 benchmarks/admission_time.py
"""
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from sonicsampler import Sampler, SamplingParams


def busy(n=12):
    a = torch.randn(4096, 4096, device="cuda")
    for _ in range(n):
        a = (a @ a) * 1e-3
    return a


def main():
    s = Sampler(151936, 8, "cuda")
    p = SamplingParams(temperature=0.8, top_k=50, repetition_penalty=1.3, logit_bias={5: 4.0, 9: -2.0}, seed=7)
    s.add_request(7, p, prompt_token_ids=list(range(300)))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    busy()
    times = []
    for slot in range(4):
        t1 = time.perf_counter()
        s.add_request(slot, p, prompt_token_ids=list(range(100, 400)))
        times.append((time.perf_counter() - t1) * 1e3)
    torch.cuda.synchronize()
    print(f"admissions behind {1e3 * (time.perf_counter() - t0):.1f} ms of queued work: "
          + ", ".join(f"{t:.3f}" for t in times) + " ms", flush=True)
    busy()
    prof = cProfile.Profile()
    prof.enable()
    s.add_request(4, p, prompt_token_ids=list(range(100, 400)))
    prof.disable()
    torch.cuda.synchronize()
    st = pstats.Stats(prof)
    for (f, line, name), (cc, nc, tt, ct, _) in sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:12]:
        print(f"{tt * 1e3:8.3f} ms own {ct * 1e3:8.3f} ms cum {nc:4d} calls {name} ({f.split('/')[-1]}:{line})")


if __name__ == "__main__":
    main()
