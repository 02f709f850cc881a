"""Measure launch configurations of the two-stage top-k on this GPU and write the table that
`sonicsampler.tuning.topk_config` reads (tuning/tables/topk_<arch>.json).

    python3 benchmarks/tune_topk.py --out $OUT/topk_sm90.json   # on the GPU; copy the file into the repo
    python3 benchmarks/tune_topk.py --from-timings A.jsonl B.jsonl --out src/sonicsampler/tuning/tables/topk_sm90.json
                                                                 # a table from recorded timings (later files win)

Every (vocabulary, rows) point of the grid is timed with CUDA-graph replays (median) for each candidate
configuration on standard-Gumbel bf16 logits at k = 128; the fastest wins. Every timing is also written
as a JSON line next to the table, so the choice can be audited.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/<this>.py` from anywhere

import torch
import triton
import triton.testing

from benchmarks.configs import parse_configs
from sonicsampler.topk import topk
from sonicsampler.tuning import TopKConfig
from sonicsampler.tuning.topk_config import MAX_REFILL_RISK, refill_risk

VOCABS = (32768, 65536, 131072, 151936, 262144)
ROWS = (1, 4, 16, 32, 64, 128, 256)


def gumbel(n, v):
    u = torch.rand(n, v, device="cuda").clamp_(1e-20, 1 - 1e-7)
    return (-torch.log(-torch.log(u))).to(torch.bfloat16)


def candidates(v, blocks=(1024, 2048, 4096, 8192, 16384), warps1=(4, 8), emits=(32,), strategies=("bitonic", "rank")):
    for block in blocks:
        z = -(-v // block)
        if 8 <= z <= 256:
            for w1 in warps1:
                for emit in emits:
                    if refill_risk(v, block, emit) > MAX_REFILL_RISK:
                        continue   # fast on one input, slow on many (tuning/topk_config.py)
                    for strategy in strategies:
                        yield TopKConfig(block=block, warps1=w1, warps2=8, emit=emit, strategy=strategy)


def table_from_timings(paths):
    """Fastest configuration per (vocabulary, rows) over recorded timing lines; a later file's
    measurements of a point replace an earlier file's."""
    points = {}
    for path in paths:
        seen = {}
        for line in open(path):
            r = json.loads(line)
            if refill_risk(r["V"], r["block"], r["emit"]) <= MAX_REFILL_RISK:
                seen.setdefault((r["V"], r["rows"]), []).append(r)
        points.update(seen)
    entries = []
    for (v, n), rows in points.items():
        best = min(rows, key=lambda r: r["us"])
        entries.append({"max_vocab": v, "max_rows": n, "us": round(best["us"], 2),
                        **{f: best[f] for f in ("block", "m", "warps1", "warps2", "emit", "strategy", "regs1", "regs2") if f in best}})
    return sorted(entries, key=lambda e: (e["max_vocab"], e["max_rows"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="topk_table.json")
    ap.add_argument("--from-timings", nargs="+", help="build the table from recorded timings (no GPU needed)")
    ap.add_argument("--gpu", default="", help="with --from-timings: the GPU the timings came from")
    ap.add_argument("--arch", default="sm90", help="with --from-timings: its architecture")
    ap.add_argument("--vocabs", default=",".join(map(str, VOCABS)))
    ap.add_argument("--rows", default=",".join(map(str, ROWS)))
    ap.add_argument("--blocks", default="1024,2048,4096,8192,16384")
    ap.add_argument("--warps1", default="4,8")
    ap.add_argument("--emits", default="32")
    ap.add_argument("--strategies", default="bitonic,rank")
    ap.add_argument("--extra", default="", help="more configurations, 'strategy/block/emit/warps1' separated by commas")
    a = ap.parse_args()
    ints = lambda s: tuple(int(x) for x in s.split(",") if x)   # noqa: E731
    if a.from_timings:
        table = {"gpu": a.gpu, "arch": a.arch, "k": 128, "sources": a.from_timings,
                 "entries": table_from_timings(a.from_timings)}
        with open(a.out, "w") as f:
            json.dump(table, f, indent=1)
        return
    major, minor = torch.cuda.get_device_capability()
    log = open(a.out + ".timings.jsonl", "w")
    entries = []
    for v in map(int, a.vocabs.split(",")):
        for n in map(int, a.rows.split(",")):
            x = gumbel(n, v)
            best = None
            for cfg in [*candidates(v, ints(a.blocks), ints(a.warps1), ints(a.emits), tuple(a.strategies.split(","))),
                        *parse_configs(a.extra)]:
                us = triton.testing.do_bench_cudagraph(lambda: topk(x, 128, config=cfg), rep=50,
                                                        return_mode="median") * 1e3
                log.write(json.dumps({"V": v, "rows": n, **cfg.__dict__, "us": us}) + "\n")
                log.flush()  # a run cut off by its time limit keeps what it measured
                if best is None or us < best[0]:
                    best = (us, cfg)
            print(f"V={v} rows={n}: {best[0]:.1f} us with {best[1]}", flush=True)
            entries.append({"max_vocab": v, "max_rows": n, "us": round(best[0], 2), **best[1].__dict__})
    table = {"gpu": torch.cuda.get_device_name(), "arch": f"sm{major}{minor}", "torch": torch.__version__,
             "triton": triton.__version__, "date": time.strftime("%Y-%m-%d"),
             "commit": os.environ.get("BENCH_GIT_COMMIT", ""), "k": 128,
             "entries": sorted(entries, key=lambda e: (e["max_vocab"], e["max_rows"]))}
    with open(a.out, "w") as f:
        json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
