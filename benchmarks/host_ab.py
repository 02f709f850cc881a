"""Host time of one eager `Sampler.sample` call, this code against an older one, in one process (GPU machine).

Host time varies ~1.7x between processes on the H100 machine (runs 113, 116), so an A/B across
processes says little; here both versions are imported side by side. The older code is a copy of
its `sonicsampler` package renamed `sonicsampler_old` (its imports inside the package are relative)
in the directory given by --old. The standard mix (temperature 0.7, top-k 128, top-p 0.9), device slots
and positions, V = 151936; per row count: rounds alternating the two codes, each the fastest of five
rounds of 300 calls without synchronisation, with new outputs and into persistent ones (out=), then
this code with its two launches made no-ops (what is left is Python). Every call passes the same
slots, positions and out= objects, as an engine with persistent buffers does: the best case for the
checks this code keeps between calls (new views each step are checked each step). The tokens compared
are each code's first call on fresh Samplers (same requests, seeds and logits).

    python3 benchmarks/host_ab.py --old .ab/pkg [--rows 1,32,128] [--rounds 3]
    python3 benchmarks/host_ab.py --old .ab/pkg --verify 1,32      # verification's (γ = 3) instead
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks.cases import gumbel

ORDER = (("new", "old"), ("old", "new"))   # the codes' order, alternating between rounds


def make(pkg, n: int, v: int):
    s = pkg.Sampler(v, n, "cuda")
    for i in range(n):
        s.add_request(i, pkg.SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i),
                      prompt_token_ids=list(range(100, 300)))
    slots = torch.arange(n, device="cuda", dtype=torch.int64)
    positions = torch.arange(n, device="cuda", dtype=torch.int64) + 1000
    return s, slots, positions


def per_call(s, x, slots, positions, reps: int = 300, **kw) -> float:
    """Host µs per eager `s.sample(x, slots, positions, **kw)`: the best of five rounds of `reps` calls
    without synchronisation (also sampler_mix.host_breakdown's)."""
    best = float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            s.sample(x, slots, positions, **kw)
        best = min(best, (time.perf_counter() - t0) / reps * 1e6)
        torch.cuda.synchronize()
    return best


def no_launches(s):
    """Make this code's launches of `s` no-ops (its recorded direct launches and Triton's runner path);
    returns a function putting them back."""
    from sonicsampler import launch
    saved = []
    for lau in (s._stage1, s._stage2):
        for key, hit in list(lau._compiled.items()):
            saved.append((lau, key, hit))
            lau._compiled[key] = hit[:4] + ((lambda *a: None) if hit[4] is not None else None,) + hit[5:]
    real = launch.Launcher.__dict__["_go"]
    launch.Launcher._go = staticmethod(lambda *a: None)

    def restore():
        for lau, key, hit in saved:
            lau._compiled[key] = hit
        launch.Launcher._go = real
    return restore


def verify_ab(new_pkg, old_pkg, sizes, v: int, rounds: int, gamma: int = 3) -> None:
    """Verification's eager host time, both codes alternating: B requests, γ = 3, the standard mix's target
    rows, one-hot drafts, device slots / positions / drafts, new outputs and out=."""
    for bsz in sizes:
        logits = gumbel((bsz * (gamma + 1), v), "cuda", torch.Generator(device="cuda").manual_seed(1))
        drafts = torch.randint(0, v, (bsz, gamma), device="cuda")
        runs, emitted = {}, {}
        for name, pkg in (("new", new_pkg), ("old", old_pkg)):
            s, slots, positions = make(pkg, bsz, v)
            first = s.verify(logits, drafts, slots, positions)
            emitted[name] = (first.tokens.clone(), first.num_emitted.clone())
            buf = s.verify(logits, drafts, slots, positions)
            for _ in range(20):
                s.verify(logits, drafts, slots, positions, out=buf)
            torch.cuda.synchronize()
            runs[name] = (s, slots, positions, buf)
        same = all(torch.equal(a, b) for a, b in zip(emitted["new"], emitted["old"]))
        times: dict[str, list[float]] = {}
        for r in range(rounds):
            for name in ORDER[r % 2]:
                s, slots, positions, buf = runs[name]
                for label, kw in ((name, {}), (name + " out=", {"out": buf})):
                    best = float("inf")
                    for _ in range(5):
                        torch.cuda.synchronize()
                        t0 = time.perf_counter()
                        for _ in range(300):
                            s.verify(logits, drafts, slots, positions, **kw)
                        best = min(best, (time.perf_counter() - t0) / 300 * 1e6)
                        torch.cuda.synchronize()
                    times.setdefault(label, []).append(best)
        cells = ", ".join(f"{k} {min(t):.1f} ({' / '.join(f'{x:.1f}' for x in t)})" for k, t in times.items())
        print(f"host ab verify B={bsz} gamma={gamma} V={v}: first step's tokens equal {same}; us per eager call, "
              f"best (each round): {cells}", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="directory holding the older code as package sonicsampler_old")
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--verify", default="", help="request counts B of a verification A/B (γ = 3) instead")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(a.old).resolve()))
    new_pkg = importlib.import_module("sonicsampler")
    old_pkg = importlib.import_module("sonicsampler_old")
    if a.verify:
        verify_ab(new_pkg, old_pkg, [int(b) for b in a.verify.split(",")], a.vocab, a.rounds)
        return
    for n in map(int, a.rows.split(",")):
        x = gumbel((n, a.vocab), "cuda", torch.Generator(device="cuda").manual_seed(0))
        runs = {}
        for name, pkg in (("new", new_pkg), ("old", old_pkg)):
            s, slots, positions = make(pkg, n, a.vocab)
            buf = s.sample(x, slots, positions)
            for _ in range(20):
                s.sample(x, slots, positions)
                s.sample(x, slots, positions, out=buf)
            torch.cuda.synchronize()
            # the two codes' tokens for the same requests and logits (same seeds and positions)
            runs[name] = (s, slots, positions, buf)
        t_new = make(new_pkg, n, a.vocab)[0].sample(x, slots, positions).tokens
        t_old = make(old_pkg, n, a.vocab)[0].sample(x, slots, positions).tokens
        same = bool(torch.equal(t_new, t_old))
        times: dict[str, list[float]] = {}
        for r in range(a.rounds):
            for name in ORDER[r % 2]:
                s, slots, positions, buf = runs[name]
                times.setdefault(name, []).append(per_call(s, x, slots, positions))
                times.setdefault(name + " out=", []).append(per_call(s, x, slots, positions, out=buf))
        s, slots, positions, buf = runs["new"]
        restore = no_launches(s)
        try:
            times["new, launches no-op"] = [per_call(s, x, slots, positions)]
            times["new out=, launches no-op"] = [per_call(s, x, slots, positions, out=buf)]
        finally:
            restore()
        cells = ", ".join(f"{k} {min(v):.1f} ({' / '.join(f'{t:.1f}' for t in v)})" for k, v in times.items())
        print(f"host ab rows={n} V={a.vocab}: tokens equal {same}; us per eager call, best (each round): {cells}",
              flush=True)


if __name__ == "__main__":
    main()
