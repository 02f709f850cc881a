"""Host time of eager calls with each launch path, alternating in one process (GPU machine): launches
through direct_launch.DirectLaunch (launch.DIRECT on) against Triton's C launcher (off), for the
sampler's standard mix (fresh outputs and out=) and verification (γ = 3, one-hot drafts), slots and
positions as device tensors; then the same calls with both launches stubbed out (what the Python
around them costs). The fastest of five rounds of 300 calls each (harness.host_time).

    python3 benchmarks/host_ab.py --rows 1,32,128 --verify 1,32 --rounds 2
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks import harness
from benchmarks.cases import gumbel
from benchmarks.sampler_mix import make_sampler
from sonicsampler import Sampler, SamplingParams, launch

V = 151936


def _calls(rows, verify):
    """(label, call) for every measured call."""
    out = []
    for n in rows:
        s, slots, positions, _ = make_sampler("top_p", n, V)
        x = gumbel((n, V), "cuda", torch.Generator(device="cuda").manual_seed(0))
        buf = s.sample(x, slots, positions)
        out.append((f"sample rows={n}", lambda s=s, x=x, a=slots, b=positions: s.sample(x, a, b)))
        out.append((f"sample rows={n} out=", lambda s=s, x=x, a=slots, b=positions, o=buf: s.sample(x, a, b, out=o)))
    for bsz in verify:
        gamma = 3
        s = Sampler(V, bsz, "cuda")
        for i in range(bsz):
            s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
        logits = torch.randn(bsz * (gamma + 1), V, device="cuda").to(torch.bfloat16)
        slots, pos = torch.arange(bsz, device="cuda"), torch.arange(bsz, device="cuda") + 100
        drafts = torch.randint(0, V, (bsz, gamma), device="cuda")
        out.append((f"verify B={bsz} gamma=3", lambda s=s, x=logits, d=drafts, a=slots, b=pos: s.verify(x, d, a, b)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--verify", default="1,32")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    calls = _calls([int(r) for r in a.rows.split(",") if r], [int(b) for b in a.verify.split(",") if b])
    for label, call in calls:   # every key launched twice: the second goes through the kept launch
        call(), call()
    torch.cuda.synchronize()
    for r in range(a.rounds):
        for direct in (False, True):
            launch.DIRECT = direct
            for label, call in calls:
                us = harness.host_time(call, reps=300)
                print(f"round {r} {'direct' if direct else 'triton'}: {label}: {us:.1f} us per eager call", flush=True)
    launch.DIRECT = True
    go, direct = launch.Launcher.__dict__["_go"], launch.Launcher.__dict__["_direct"]
    launch.Launcher._go = staticmethod(lambda *args: None)
    launch.Launcher._direct = staticmethod(lambda *args: True)
    try:
        for label, call in calls:
            print(f"no launches: {label}: {harness.host_time(call, reps=300):.1f} us per call", flush=True)
    finally:
        launch.Launcher._go, launch.Launcher._direct = go, direct


if __name__ == "__main__":
    main()
