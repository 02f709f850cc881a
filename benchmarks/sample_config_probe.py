"""Time the sampler's standard mix under explicit launch configurations beside the table's, on the GPU.

Written when run 248 found 1 row at V = 32768 slower (23.6 µs) than 4 rows (16.5): the table then held
only V = 151936 entries, and its 1-row entry (block 4096, emit 16) fitted to V = 32768 became 8 tiles
emitting 64 each (tuning/topk_config.fit_entry). Each configuration is "table" or
"block/emit/warps1/warps2/strategy[/REGS1xREGS2]": without the register caps a configuration keeps the
table's for that row count (Sampler.launch_config), so name them to compare with another table's.
Explicit configurations are not fitted: their refills, if any, are in the times. One CSV row each (case
"sample_config").

    python benchmarks/sample_config_probe.py --vocab 32768 --rows 1,64,128 \
        --configs table,1024/16/1/8/extract,512/8/1/8/extract --out $OUT/probe.csv
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks import harness
from benchmarks.cases import gumbel
from benchmarks.sampler_mix import make_sampler


def sampler_overrides(text: str) -> dict:
    """Sampler options of a configuration: {} for "table", else block/emit/warps1/warps2/strategy."""
    if text == "table":
        return {}
    block, emit, w1, w2, strategy, *regs = text.split("/")
    out = dict(block=int(block), emit=int(emit), warps=(int(w1), int(w2)), strategy=strategy)
    if regs:
        out["regs"] = tuple(int(r) for r in regs[0].split("x"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="32768")
    ap.add_argument("--rows", default="1,64,128")
    ap.add_argument("--configs", default="table,1024/16/1/8/extract")
    ap.add_argument("--mix", default="top_p")
    ap.add_argument("--budget-ms", type=float, default=50.0)
    ap.add_argument("--out", default="sample_config.csv")
    a = ap.parse_args()
    env = harness.environment()
    for v in map(int, a.vocab.split(",")):
        for n in map(int, a.rows.split(",")):
            for c in a.configs.split(","):
                s, slots, positions, mask = make_sampler(a.mix, n, v, **sampler_overrides(c))
                cfg = s.launch_config(n)
                copies, note = harness.plan_copies(n * v * 2, harness.l2_bytes("cuda"), 64)
                xs = [gumbel((n, v), "cuda", torch.Generator(device="cuda").manual_seed(i)) for i in range(copies)]
                fns = [(lambda x=x: s.sample(x, slots, positions, mask)) for x in xs]
                p20, p50, p80 = harness.percentiles(harness.cuda_graph_timer(fns, budget_ms=a.budget_ms))
                print(f"{a.mix:8s} V={v:7d} rows={n:4d} {c:28s} -> {cfg.block}/{cfg.emit}/{cfg.warps1}/"
                      f"{cfg.warps2}/{cfg.strategy}/{cfg.regs1}x{cfg.regs2}  {p50:7.1f} us", flush=True)
                harness.append_rows(a.out, [dict(case="sample_config", shape=f"rows={n},V={v},mix={a.mix}",
                                                impl=f"sonicsampler[{c}]", p20_us=p20, p50_us=p50, p80_us=p80,
                                                note=f"{cfg}; {note}", **env)])
                del s, xs, fns
                harness._release("cuda")


if __name__ == "__main__":
    main()
