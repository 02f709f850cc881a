"""What the shared passes' atomics cost on the GPU, measured alone (a diagnostic, not a test).

The search passes add each token's weight into 256 per-chunk words by relaxed 64-bit atomics
(long_rows.chunk_pass); session 33's fine tables added it into 65536 words per row as well, and lost
~7 us a pass. Which part of that is the atomics, and how much do lanes of a warp that hit the same word
cost? Each kernel here runs P programs of 8 warps, each over n_sub sub-tiles of 1024 digits read from
memory (precomputed on the host, so only the atomics differ), and is timed over many launches
replayed in a CUDA graph; `load` (the same loads, one store) is the floor to subtract. (Run
189 timed eager launches, at 5a68e9e, whose ~13-21 µs of Python launch time hid every kernel shorter than
that; this graph-timed form has not run on a GPU yet.)

Digit patterns (V = 151936 tokens of Gumbel logits / 1.5 in bf16, the long nucleus's rows):
- top: the keys' top byte (the first search pass: a third of the tokens on one word);
- low: the keys' low byte (a pass of single keys: spread);
- lane: lane ids (no two lanes of a warp on one word);
- same: every token on word 0;
- wide: the keys' low 11 bits (a wide pass: 2048 words per chunk, one key each).
Kernels: `chunk` (each program its own 256 words, as the passes), `chunk_combined` (the same, the 8
digits of 8 sampled tokens summed by block reductions first and added once), `fine` (one 65536-word
table shared by all programs, keys as indices: the fine tables), `fine_private` (a table per program).
`rmw` times R dependent same-address RMWs per program (P programs on one word, or each on its own):
the claims' and acquires' latency under contention.

    python3 benchmarks/atomics_probe.py [--out FILE]      (on the GPU machine)
"""
import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import harness  # noqa: E402
from benchmarks.cases import gumbel  # noqa: E402

SUB = 1024
V = 151936


@triton.jit
def _probe(dig_ptr, out_ptr, n_sub, TABLE: tl.constexpr, SHARED: tl.constexpr, MODE: tl.constexpr,
           HOT: tl.constexpr, SUB: tl.constexpr):
    """MODE 0: loads and one store (the floor); 1: an atomic per token; 2: HOT sampled digits summed
    by block reductions first, the rest by atomics."""
    pid = tl.program_id(0)
    base = out_ptr if SHARED else out_ptr + pid * TABLE
    i = tl.arange(0, SUB)
    acc = tl.zeros((SUB,), tl.int64)
    t = tl.zeros((), tl.int32)
    while t < n_sub:  # a while loop: the interpreter cannot iterate range() over a runtime bound
        d = tl.load(dig_ptr + (pid * n_sub + t) * SUB + i)
        w = d.to(tl.int64) * 3 + 1
        if MODE == 0:
            acc += w
        elif MODE == 1:
            tl.atomic_add(base + d, w, sem="relaxed")
        else:
            rest = d >= 0
            for s in tl.static_range(HOT):
                p = tl.max(tl.where(i == s * (SUB // HOT), d, -1))
                e = rest & (d == p)
                tl.atomic_add(base + p, tl.sum(tl.where(e, w, 0)), sem="relaxed")
                rest = rest & ~e
            tl.atomic_add(base + d, w, mask=rest, sem="relaxed")
        t += 1
    if MODE == 0:
        tl.store(base + i, acc)


@triton.jit
def _rmw(ctr_ptr, out_ptr, R, SPREAD: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros((), tl.int64)
    r = tl.zeros((), tl.int32)
    while r < R:
        # The address depends on the previous RMW's result (its high bits are 0), so they are serial.
        c = tl.atomic_add(ctr_ptr + (pid * 32 if SPREAD else 0) + (acc >> 60), 1, sem="relaxed")
        acc += c
        r += 1
    tl.store(out_ptr + pid, acc)


def _time(fn) -> float:
    """Median µs per launch, replayed in a CUDA graph (no Python launch time)."""
    return harness.percentiles(harness.cuda_graph_timer([fn], budget_ms=20))[1]


def write_jsonl(path: str, rows: list) -> None:
    """The rows as JSON lines after an env line (GPU, versions, commit from BENCH_GIT_COMMIT, date)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps({"what": "env", **harness.environment("cuda")}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")


def digit_patterns() -> dict:
    x = gumbel((V,), "cuda", torch.Generator(device="cuda").manual_seed(0)).float() / 1.5
    b = x.to(torch.bfloat16).view(torch.int16).to(torch.int32) & 0xFFFF
    key = torch.where((b & 0x8000) != 0, (~b) & 0xFFFF, b | 0x8000)
    return {"top": key >> 8, "low": key & 255, "lane": torch.arange(V, device="cuda") % 32 * 8,
            "same": torch.zeros(V, device="cuda", dtype=torch.int32), "fine": key, "wide": key & 2047}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="out/atomics_probe.jsonl")
    args = ap.parse_args()
    pats = digit_patterns()
    rows = []
    # (256, 2): four long rows' 64-chunk passes at 64 rows with long_fill (run 229: a chunk's done count
    # released ~9 µs after its fold was issued; is the L2's total atomic rate the bound?)
    for progs, n_sub in ((128, 1), (16, 9), (128, 9), (256, 2)):
        n = progs * n_sub * SUB
        for name, src in pats.items():
            dig = src.repeat((n + V - 1) // V)[:n].to(torch.int32).contiguous()
            kernels = [("load", 0, 256, False), ("chunk", 1, 256, False), ("chunk_combined", 2, 256, False)]
            if name == "fine":
                kernels = [("load", 0, 65536, False), ("fine", 1, 65536, True), ("fine_private", 1, 65536, False)]
            elif name == "wide":   # a wide pass's 2048 words per chunk, one key each
                kernels = [("load", 0, 2048, False), ("chunk", 1, 2048, False)]
            for kname, mode, table, shared in kernels:
                out = torch.zeros(table * (1 if shared else progs), device="cuda", dtype=torch.int64)
                us = _time(lambda: _probe[(progs,)](dig, out, n_sub, table, shared, mode, 8, SUB, num_warps=8))
                rows.append({"what": "atomics", "pattern": name, "kernel": kname, "programs": progs,
                             "sub_tiles": n_sub, "us": round(us, 2)})
                print(rows[-1], flush=True)
    for progs in (1, 16, 128):
        for spread in (False, True):
            ctr = torch.zeros(progs * 32, device="cuda", dtype=torch.int64)
            out = torch.zeros(progs, device="cuda", dtype=torch.int64)
            us = _time(lambda: _rmw[(progs,)](ctr, out, 200, spread, num_warps=8))
            rows.append({"what": "rmw", "programs": progs, "spread": spread, "R": 200,
                         "us_per_rmw": round(us / 200, 4)})
            print(rows[-1], flush=True)
    write_jsonl(args.out, rows)


if __name__ == "__main__":
    main()
