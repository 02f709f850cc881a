"""Where the host time of one eager `Sampler.sample` call goes, by cProfile over many calls (GPU machine).

    python3 benchmarks/profile_host.py [rows] [mix]

Prints the wall time per call without the profiler, then the functions with the most own time per call
under it (the profiler inflates Python-heavy parts; read the ranks, not the absolute numbers)."""
import cProfile
import pstats
import sys
import time

import torch

from benchmarks.sampler_mix import make_sampler
from benchmarks.cases import gumbel


def main(rows: int = 1, mix: str = "top_p", reps: int = 2000) -> None:
    s, slots, positions, mask = make_sampler(mix, rows, 151936)
    x = gumbel((rows, 151936), "cuda", torch.Generator(device="cuda").manual_seed(0))
    for _ in range(20):
        s.sample(x, slots, positions, mask)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        s.sample(x, slots, positions, mask)
    wall = (time.perf_counter() - t0) / reps * 1e6
    torch.cuda.synchronize()
    print(f"rows={rows} mix={mix}: {wall:.1f} us per eager call (no profiler)", flush=True)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(reps):
        s.sample(x, slots, positions, mask)
    prof.disable()
    torch.cuda.synchronize()
    st = pstats.Stats(prof)
    rows_ = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:25]
    for (file, line, name), (cc, nc, tt, ct, _callers) in rows_:
        print(f"{tt / reps * 1e6:8.2f} us own {ct / reps * 1e6:8.2f} us cum {nc / reps:6.1f} calls  "
              f"{name} ({file.split('/')[-1]}:{line})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1, sys.argv[2] if len(sys.argv) > 2 else "top_p")
