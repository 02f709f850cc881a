"""What one kernel launch costs the host on this GPU machine, taken apart: tiny kernels with 2 and with
80 parameters, through Triton's runner and its bare C launch (launch.bare_launch), with and without
Triton's launch_pdl option, on the legacy default stream and on a created stream; then the sampler's own
stage-1 variant through its bare C launch; then a whole eager sampler call on each stream. Best of five
rounds of 2000 launches each, host time only (no synchronisation inside a round). Run 117 ran it with
a third path, direct_launch.DirectLaunch (commit f2bfc49), since removed: it was slower.

    python3 benchmarks/launch_cost.py
"""
import importlib.util
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks import harness
from sonicsampler import launch

N_WIDE = 80


def _kernels():
    """k2(out, n) and a kernel of N_WIDE pointer parameters, written to a file (Triton reads the source)."""
    params = ", ".join(f"p{i}" for i in range(N_WIDE))
    src = f'''import triton
import triton.language as tl


@triton.jit
def k2(out, n):
    tl.store(out + tl.program_id(0), n)


@triton.jit
def kwide({params}):
    tl.store(p0 + tl.program_id(0), 1)
'''
    path = Path(tempfile.mkdtemp()) / "launch_cost_kernels.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("launch_cost_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k2, mod.kwide


def _best(fn, reps=2000):
    return harness.host_time(fn, rounds=5, reps=reps)


def _ways(label, compiled, args, run_triton=None):
    """Print the host µs per launch of `compiled` through each path, on both streams."""
    b = launch.bare_launch(compiled)
    for stream_name, stream in (("default stream", torch.cuda.default_stream()), ("created stream", torch.cuda.Stream())):
        with torch.cuda.stream(stream):
            raw = launch.current_stream()
            res = {}
            if run_triton is not None:
                res["triton runner"] = _best(run_triton)
            if b is not None:
                fn, function, coop, pdl, packed = b
                res["bare C launch"] = _best(lambda: fn(1, 1, 1, raw, function, coop, pdl, None, None, packed, None, None,
                                                        None, *args))
        print(f"{label} on the {stream_name}: " + ", ".join(f"{k} {v:.2f} us" for k, v in res.items()), flush=True)


def main():
    k2, kwide = _kernels()
    out = torch.zeros(16, dtype=torch.int32, device="cuda")
    for pdl in (False, True):
        c = k2[(1,)](out, 5, launch_pdl=pdl)
        _ways(f"k2 (2 parameters, launch_pdl={pdl})", c, [out.data_ptr(), 5],
              run_triton=lambda: k2[(1,)](out, 5, launch_pdl=pdl))
    bufs = [torch.zeros(16, dtype=torch.int32, device="cuda") for _ in range(N_WIDE)]
    c = kwide[(1,)](*bufs)
    _ways(f"kwide ({N_WIDE} pointer parameters)", c, [t.data_ptr() for t in bufs],
          run_triton=lambda: kwide[(1,)](*bufs))

    from benchmarks.sampler_mix import make_sampler
    from benchmarks.cases import gumbel
    for n in (1, 32):
        s, slots, positions, _ = make_sampler("top_p", n, 151936)
        x = gumbel((n, 151936), "cuda", torch.Generator(device="cuda").manual_seed(0))
        buf = s.sample(x, slots, positions)
        s.sample(x, slots, positions)
        for name, ln in (("stage 1", s._stage1), ("stage 2", s._stage2)):
            (compiled, tail, fixed, bare), = ln._compiled.values()
            if name == "stage 1":   # stage 1 alone is safe to launch again and again (it writes scratch)
                _ways(f"sampler rows={n} {name} ({len(fixed) + len(tail)} arguments)", compiled, fixed + list(tail))
            else:
                print(f"sampler rows={n} stage 2: {len(fixed) + len(tail)} arguments", flush=True)
        for stream_name, stream in (("default stream", torch.cuda.default_stream()), ("created stream", torch.cuda.Stream())):
            with torch.cuda.stream(stream):
                s.sample(x, slots, positions)
                whole = _best(lambda: s.sample(x, slots, positions, out=buf), reps=300)
                print(f"sampler rows={n} whole eager call with out= on the {stream_name}: {whole:.1f} us", flush=True)


if __name__ == "__main__":
    main()
