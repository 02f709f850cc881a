"""Measure launch configurations of the fused Sampler on this GPU and write the table that
`sonicsampler.tuning.sample_config` reads (tuning/tables/sample_<arch>.json).

    python3 benchmarks/tune_sampler.py --out $OUT/sample_sm90.json [--install]
    python3 benchmarks/tune_sampler.py --from-timings T.jsonl --gpu "..." --out src/sonicsampler/tuning/tables/sample_sm90.json

Each (vocabulary, rows) point is timed with CUDA-graph replays (median) for every candidate
(tile, emitted candidates per tile, warps per stage, stage 1's strategy) on standard-Gumbel bf16 logits with temperature
0.7, top-k 128, top-p 0.9 (issue 4's standard configuration); the fastest wins. Every timing is also a
JSON line next to the table. --install also writes the table into the source tree, so that a benchmark
run later in the same command uses it.
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
import triton
import triton.testing

from benchmarks.sampler_mix import mix_params
from benchmarks.tune_topk import gumbel, table_from_timings
from sonicsampler import Sampler, SamplingParams

CASE = "temperature 0.7, top-k 128, top-p 0.9, bf16 Gumbel logits"
TABLES = Path(__file__).resolve().parent.parent / "src" / "sonicsampler" / "tuning" / "tables"


def candidates(v, blocks, emits, warps, strategies):
    for block in blocks:
        if 8 <= -(-v // block) <= 160:
            for emit in emits:
                for w in warps:
                    for strategy in strategies:
                        yield {"block": block, "emit": emit, "warps1": w[0], "warps2": w[1], "strategy": strategy}


def _config(text: str) -> dict:
    """'strategy/block/emit/W1xW2[/R1xR2]' -> a configuration (register caps only when not 0)."""
    st, b, e, w, *r = text.split("/")
    cfg = {"block": int(b), "emit": int(e), "warps1": int(w.split("x")[0]), "warps2": int(w.split("x")[1]),
           "strategy": st}
    for name, cap in zip(("regs1", "regs2"), (int(x) for x in (r[0].split("x") if r else ()))):
        if cap:
            cfg[name] = cap
    return cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="sample_table.json")
    ap.add_argument("--vocabs", default="151936")
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--blocks", default="2048,4096,8192")
    ap.add_argument("--emits", default="16,32")
    ap.add_argument("--warps", default="8x8,4x8,4x4")
    ap.add_argument("--strategies", default="bitonic,rank")
    ap.add_argument("--configs", default="", help="instead of the grid: 'strategy/block/emit/W1xW2[/R1xR2]' entries, "
                    "comma-separated (R: each stage's register cap, 0 for none)")
    ap.add_argument("--install", action="store_true", help="also write the table into src/sonicsampler/tuning/tables")
    ap.add_argument("--from-timings", nargs="+", help="build the table from recorded timings (no GPU needed)")
    ap.add_argument("--gpu", default="", help="with --from-timings: the GPU, versions and date the timings came from")
    ap.add_argument("--mix", default="", help="time a mix of benchmarks/sampler_mix.py without grammar mask "
                    "(e.g. base: untruncated) instead of the standard case (timings only: the table is the standard case's)")
    a = ap.parse_args()
    if a.mix and a.install:
        ap.error("--mix times another case than the table's: it cannot --install")
    if a.from_timings:
        with open(a.out, "w") as f:
            json.dump({"gpu": a.gpu, "arch": "sm90", "case": CASE, "sources": a.from_timings,
                       "entries": table_from_timings(a.from_timings)}, f, indent=1)
        return
    blocks = [int(x) for x in a.blocks.split(",")]
    emits = [int(x) for x in a.emits.split(",")]
    warps = [tuple(int(y) for y in x.split("x")) for x in a.warps.split(",")]
    major, minor = torch.cuda.get_device_capability()
    log = open(a.out + ".timings.jsonl", "w")
    entries = []
    for v in map(int, a.vocabs.split(",")):
        for n in map(int, a.rows.split(",")):
            x = gumbel(n, v)
            slots = torch.arange(n, device="cuda")
            pos = torch.zeros(n, dtype=torch.int64, device="cuda")
            best = None
            grid = ([_config(c) for c in a.configs.split(",")]
                    if a.configs else candidates(v, blocks, emits, warps, a.strategies.split(",")))
            for cfg in grid:
                s = Sampler(v, n, "cuda", block=cfg["block"], emit=cfg["emit"], warps=(cfg["warps1"], cfg["warps2"]),
                            strategy=cfg["strategy"], regs=(cfg.get("regs1", 0), cfg.get("regs2", 0)))
                for i in range(n):
                    s.add_request(i, mix_params(a.mix, i)[0] if a.mix
                                  else SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
                try:
                    us = triton.testing.do_bench_cudagraph(lambda: s.sample(x, slots, pos), rep=30,
                                                            return_mode="median") * 1e3
                except Exception as e:   # e.g. out of shared memory for a big tile at few warps
                    print(f"V={v} rows={n} {cfg}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                log.write(json.dumps({"V": v, "rows": n, **cfg, "us": us, **({"mix": a.mix} if a.mix else {})}) + "\n")
                log.flush()   # a run cut off by its time limit keeps what it measured
                if best is None or us < best[0]:
                    best = (us, cfg)
            if best is not None and a.mix:
                print(f"V={v} rows={n} mix {a.mix}: {best[0]:.1f} us with {best[1]}", flush=True)
            elif best is not None:
                print(f"V={v} rows={n}: {best[0]:.1f} us with {best[1]}", flush=True)
                entries.append({"max_vocab": v, "max_rows": n, "us": round(best[0], 2), **best[1]})
            table = {"gpu": torch.cuda.get_device_name(), "arch": f"sm{major}{minor}", "torch": torch.__version__,
                     "triton": triton.__version__, "date": time.strftime("%Y-%m-%d"),
                     "commit": os.environ.get("BENCH_GIT_COMMIT", ""),
                     "case": CASE,
                     "entries": sorted(entries, key=lambda e: (e["max_vocab"], e["max_rows"]))}
            # Written after every point, so a run cut off keeps a usable table.
            paths = [a.out] + ([TABLES / f"sample_sm{major}{minor}.json"] if a.install else [])
            for p in paths:
                with open(p, "w") as f:
                    json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
