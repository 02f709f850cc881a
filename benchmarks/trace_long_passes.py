"""Where a long row's shared passes spend their time: a timeline of stage 2's programs, read from
%globaltimer stamps that the diagnostic snapshot `.ab/trace/src` writes (run it with that snapshot
first on PYTHONPATH; the tree's code has no stamps). Each program stamps, at hist + 2**23 + pid * 128:
0 entry, 1 after the PDL wait, 2 after the row's candidates (rows), 3 / 4 entering / leaving the shared
passes, 5 the end (rows), 6 its SM; in its first chunk, 7 after chunk_pass, 8 after the read-back of a search
pass's sums, 9 after the fold's atomics are issued; the owner's 26 / 28 after its last wide / narrow search
step, 27 once its early draw holds; 10 + i the owner's post of pass i, 30 + i the owner seeing pass i's
chunks all done (its reduction starts), 50 + i / 70 + i a program's first chunk start / last chunk end
in pass i, 90 + i its chunks in pass i, 100 + i a helper's acquire of pass i's post (before its claim),
110 + i its first chunk's parameters loaded; 40 / 41 before / after a program's first board scan, 43 its
first scan that found a posted pass with chunks left; 29 the owner's early draw's key computed after a
wide step, 47 its cut set (before the pass index's increment), 48 its early draw known to hold (before
the DONE exchange); 44 a row's program without a long set after its DONE exchange, 45 / 46 its loop's
first round / first look for other rows' chunks. First-time stamps are relaxed CASes (no fences; until
run 224 they were acq_rel, a MEMBAR.ALL.GPU before and a CCTL.IVALL after each). A pass posted before
the candidates (post_first_pass) stamps its time in the row's last "total" word, which the trace reads
as column 127 (zeroed with the stamps).

    PYTHONPATH=.ab/trace/src python benchmarks/trace_long_passes.py --out $OUT/trace.txt
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks.cases import gumbel
from benchmarks.sampler_mix import make_sampler, sampler_options
from sonicsampler.kernels import shared_sets

OFF = 2 ** 23


def _trace(s, x, slots, positions, mask, reps):
    runs = []
    for _ in range(3):
        s.sample(x, slots, positions, mask)
    torch.cuda.synchronize()
    hist = next(b for k, b in s._scratch._bufs.items() if k[0] == "hist")
    total = next(b for k, b in s._scratch._bufs.items() if k[0] == "total")
    tw = shared_sets.TOTAL_W.value
    n = x.shape[0]
    for _ in range(reps):
        hist[OFF:].zero_()
        total.view(-1, tw)[:, tw - 1].zero_()
        s.sample(x, slots, positions, mask)
        torch.cuda.synchronize()
        tr = hist[OFF:OFF + 256 * 128].view(256, 128).clone()
        tr[:n, 127] = total.view(-1, tw)[:n, tw - 1]
        runs.append(tr.cpu())
    return runs


def _us(t, t0):
    return (t - t0).double() / 1000.0


def describe(name, tr, n_rows, lines):
    progs = int((tr[:, 0] > 0).sum())
    t0 = tr[:progs, 0].min()
    ent = _us(tr[:progs, 0], t0)
    waited = _us(tr[:progs, 1], t0)
    lines.append(f"## {name}: {progs} programs ({n_rows} rows), SMs {sorted(set(tr[:progs, 6].tolist()))[:8]}...")
    lines.append(f"entry: {ent.min():.2f}..{ent.max():.2f} us; after the PDL wait {waited.min():.2f}..{waited.max():.2f}")
    own = tr[0]
    f = lambda v: f"{_us(v, t0):.2f}" if v > 0 else "-"
    lines.append(f"row 0: wait {f(own[1])} cand {f(own[2])} shared {f(own[3])}..{f(own[4])} end {f(own[5])}")
    ends = [_us(tr[r, 5], t0).item() for r in range(n_rows) if tr[r, 5] > 0]
    if ends:
        lines.append(f"rows' ends: min {min(ends):.2f} max {max(ends):.2f}; rows' candidates done "
                     f"{_us(tr[:n_rows, 2], t0).min():.2f}..{_us(tr[:n_rows, 2], t0).max():.2f}")
    for i in range(16):
        post = own[10 + i]
        if post <= 0 and not (tr[:progs, 50 + i] > 0).any():   # a pass posted before the candidates has no stamp
            break
        starts = tr[:progs, 50 + i]
        endsc = tr[:progs, 70 + i]
        ran = starts > 0
        red = own[30 + i]
        nxt = own[10 + i + 1] if i + 1 < 16 else torch.tensor(0)
        if ran.any():
            s_us = _us(starts[ran], t0)
            e_us = _us(endsc[ran], t0)
            dur = e_us - s_us
            lines.append(
                f"pass {i}: post {f(post)}; {int(ran.sum())} programs, {int(tr[:progs, 90 + i].sum())} chunks; "
                f"starts {s_us.min():.2f} / med {s_us.median():.2f} / {s_us.max():.2f}; "
                f"ends {e_us.min():.2f} / med {e_us.median():.2f} / {e_us.max():.2f}; "
                f"take->done med {dur.median():.2f} max {dur.max():.2f}; "
                f"owner sees done {f(red)}; next post {f(nxt)}")
            acq, par = tr[:progs, 100 + i], tr[:progs, 110 + i]
            if (acq > 0).any():
                a_us, p_us = _us(acq[acq > 0], t0), _us(par[par > 0], t0)
                lines.append(f"   helpers' acquires {a_us.min():.2f} / med {a_us.median():.2f} / {a_us.max():.2f}; "
                             f"parameters loaded {p_us.min():.2f} / med {p_us.median():.2f} / {p_us.max():.2f}")
        else:
            lines.append(f"pass {i}: post {f(post)}; no chunk stamped; owner sees done {f(red)}")
    # Inside the programs' first chunks (any pass), µs after the chunk's start (50 + its pass, the first).
    st = tr[:progs, 50]
    for slot, what in ((7, "chunk_pass"), (8, "read-back"), (9, "fold issued"), (70, "done released")):
        ok = (st > 0) & (tr[:progs, slot] > 0)
        if ok.any():
            d = _us(tr[:progs, slot][ok], st[ok])
            lines.append(f"   first chunk, start -> {what}: med {d.median():.2f} max {d.max():.2f} ({int(ok.sum())} programs)")
    posts = tr[:n_rows, 127]
    if (posts > 0).any():
        pu = _us(posts[posts > 0], t0)
        lines.append(f"passes posted before the candidates: {int((posts > 0).sum())} rows, at {pu.min():.2f} / med "
                     f"{pu.median():.2f} / {pu.max():.2f}")
    for slot, what in ((3, "enter shared"), (44, "DONE exchanged (rows without a long set)"),
                       (45, "loop's first round"), (46, "first look for others' chunks"),
                       (40, "first board scan starts"), (41, "first board scan ends"),
                       (43, "first scan finding a post")):
        v = tr[:progs, slot]
        if (v > 0).any():
            vu = _us(v[v > 0], t0)
            lines.append(f"   {what}: {int((v > 0).sum())} programs, {vu.min():.2f} / med {vu.median():.2f} / "
                         f"{vu.max():.2f}")
    steps = "; ".join(f"{what} {f(own[slot])}" for slot, what in ((26, "wide step done"), (29, "early key done"),
                                                                 (47, "cut set"), (48, "early draw known to hold"),
                                                                 (28, "narrow step done"),
                                                                 (27, "early draw holds")) if own[slot] > 0)
    if steps:
        lines.append(f"row 0 after its last pass: {steps}")
    # helpers' exits
    ex = tr[:progs, 4]
    if (ex > 0).any():
        lines.append(f"shared exits: {_us(ex[ex > 0], t0).min():.2f}..{_us(ex[ex > 0], t0).max():.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1,16")
    ap.add_argument("--mix", default="long_nucleus_1_in_16,long_min_p_1_in_16,top_p")
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", required=True)
    ap.add_argument("--with", dest="fixed", default="",
                    help="Sampler options, e.g. long_fill=1 (comma-separated integers; long_fill as a bool)")
    a = ap.parse_args()
    fixed = sampler_options(a.fixed)
    lines = [f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, Sampler options {fixed or 'default'}"]
    raw = {}
    for mix in a.mix.split(","):
        for n in (int(r) for r in a.rows.split(",")):
            s, slots, positions, mask = make_sampler(mix, n, a.vocab, **fixed)
            x = gumbel((n, a.vocab), "cuda", torch.Generator(device="cuda").manual_seed(0))
            runs = _trace(s, x, slots, positions, mask, a.reps)
            raw[f"{mix}/{n}"] = torch.stack(runs)
            for k, tr in enumerate(runs):
                describe(f"{mix} rows={n} rep {k}", tr, n, lines)
            print("\n".join(lines[-40:]), flush=True)
            del s
    Path(a.out).write_text("\n".join(lines) + "\n")
    torch.save(raw, str(Path(a.out).with_suffix(".pt")))


if __name__ == "__main__":
    main()
