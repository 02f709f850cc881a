"""Host time of one eager `Sampler.verify` call (GPU machine): B requests, γ = 3, V = 151936, target rows
with temperature 0.7, top-k 128, top-p 0.9, one-hot drafts. Slots, positions and draft ids as device
tensors, then as host lists, then device tensors writing into persistent outputs (verify(out=...), where
the code has it); the fastest of five rounds of 100 calls without synchronisation.

    python3 benchmarks/verify_host.py [B ...]
"""
import inspect
import sys

import torch

from benchmarks import harness
from sonicsampler import Sampler, SamplingParams


def main(sizes) -> None:
    v, gamma = 151936, 3
    for bsz in sizes:
        s = Sampler(v, bsz, "cuda")
        for i in range(bsz):
            s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
        logits = torch.randn(bsz * (gamma + 1), v, device="cuda").to(torch.bfloat16)
        slots = torch.arange(bsz, device="cuda")
        pos = torch.arange(bsz, device="cuda") + 100
        drafts = torch.randint(0, v, (bsz, gamma), device="cuda")
        dev_us = harness.host_time(lambda: s.verify(logits, drafts, slots, pos))
        sl, pl, dl = slots.tolist(), pos.tolist(), drafts.cpu()
        list_us = harness.host_time(lambda: s.verify(logits, dl, sl, pl))
        out_us = float("nan")
        if "out" in inspect.signature(s.verify).parameters:
            buf = s.verify(logits, drafts, slots, pos)
            out_us = harness.host_time(lambda: s.verify(logits, drafts, slots, pos, out=buf))
        print(f"verify host B={bsz} gamma={gamma}: device tensors {dev_us:.1f} us, host lists {list_us:.1f} us, "
              f"out= {out_us:.1f} us per eager call", flush=True)


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [1, 32])
