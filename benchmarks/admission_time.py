"""Host time of Sampler.add_request while the GPU is busy (GPU machine): four admissions in a row behind
tens of milliseconds of queued matrix products, each timed, then where the last one's time goes
(cProfile's top functions by own time). An admission that waited for the queued work would take about
as long as the work. Then probes (run 120 found the first admission behind fresh work ~30 ms, the next
1-2 ms, inside SlotTable.assign's own tensor writes), with --probes in a process of their own: each
kind of write an admission makes, alone, on tensors of its own, timed behind fresh queued work, twice
(the process's first and second time of each kind).

    python3 benchmarks/admission_time.py [--probes]
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


def probes():
    """Each kind of write an admission makes, timed alone behind fresh queued work: which of them waits?"""
    d = "cuda"
    i32, f64, i64 = (torch.zeros(16, dtype=t, device=d) for t in (torch.int32, torch.float64, torch.int64))
    rows = torch.zeros(16, 4800, dtype=torch.int32, device=d)
    kinds = {
        "int32 element = int": lambda: i32.__setitem__(3, 5),
        "float64 element = float": lambda: f64.__setitem__(3, 0.5),
        "int64 element = big int": lambda: i64.__setitem__(3, -(1 << 62)),
        "element fill_": lambda: i32[4].fill_(6),
        "pin_memory + copy_ non_blocking": lambda: rows[2].copy_(torch.arange(4800, dtype=torch.int32).pin_memory(),
                                                                non_blocking=True),
        "row zero_": lambda: rows[5].zero_(),
        "torch.empty": lambda: torch.empty(1000, device=d),
    }
    for rep in ("first", "second"):
        for name, fn in kinds.items():
            torch.cuda.synchronize()
            busy()
            t0 = time.perf_counter()
            fn()
            dt = (time.perf_counter() - t0) * 1e3
            torch.cuda.synchronize()
            print(f"probe ({rep}) {name}: {dt:.3f} ms behind fresh queued work", flush=True)


if __name__ == "__main__":
    probes() if "--probes" in sys.argv else main()
