"""Measure launch configurations of the two-stage top-k on this GPU and write the table that
`sonicsampler.tuning.topk_config` reads (tuning/tables/topk_<arch>.json).

    python3 benchmarks/tune_topk.py --out $OUT/topk_sm90.json   # on the GPU; copy the file into the repo

Every (vocabulary, rows) point of the grid is timed with CUDA-graph replays (median) for each candidate
configuration on standard-Gumbel bf16 logits at k = 128; the fastest wins. Every timing is also written
as a JSON line next to the table, so the choice can be audited.
"""
import argparse
import json
import os
import time

import torch
import triton
import triton.testing

from sonicsampler.topk import topk
from sonicsampler.tuning import TopKConfig

VOCABS = (32768, 65536, 131072, 151936, 262144)
ROWS = (1, 4, 16, 32, 64, 128, 256)


def gumbel(n, v):
    u = torch.rand(n, v, device="cuda").clamp_(1e-20, 1 - 1e-7)
    return (-torch.log(-torch.log(u))).to(torch.bfloat16)


def candidates(v):
    for block in (1024, 2048, 4096, 8192, 16384):
        z = -(-v // block)
        if 8 <= z <= 128:
            for w1 in (4, 8):
                yield TopKConfig(block=block, warps1=w1, warps2=8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="topk_table.json")
    ap.add_argument("--vocabs", default=",".join(map(str, VOCABS)))
    ap.add_argument("--rows", default=",".join(map(str, ROWS)))
    a = ap.parse_args()
    major, minor = torch.cuda.get_device_capability()
    log = open(a.out + ".timings.jsonl", "w")
    entries = []
    for v in map(int, a.vocabs.split(",")):
        for n in map(int, a.rows.split(",")):
            x = gumbel(n, v)
            best = None
            for cfg in candidates(v):
                us = triton.testing.do_bench_cudagraph(lambda: topk(x, 128, config=cfg), rep=50,
                                                        return_mode="median") * 1e3
                log.write(json.dumps({"V": v, "rows": n, **cfg.__dict__, "us": us}) + "\n")
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
