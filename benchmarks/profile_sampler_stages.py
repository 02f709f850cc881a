"""Where a sampler call's time goes: the whole call and its stage 1 alone (stage 2 replaced by a no-op
after warm-up), CUDA-graph replays as in sampler_mix.py, per mix and batch size. Stage 2 (and the gap
between the launches) is the difference.

    python benchmarks/profile_sampler_stages.py --rows 1,32,128 --mix top_k,standard_logprobs,base,heavy
    python benchmarks/profile_sampler_stages.py --mix standard_logprobs --stage2-const TOP_N=0
    python benchmarks/profile_sampler_stages.py --vocab 32768 --rows 1 --mix top_p --configs table,512/8/1/8/extract

--stage2-const overrides stage 2's constexprs, for experiments only (the outputs are then wrong): e.g.
TOP_N=0 leaves out the top-n log-probabilities' code, so the difference is what that code costs.
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks import harness
from benchmarks.cases import gumbel
from benchmarks.sample_config_probe import sampler_overrides
from benchmarks.sampler_mix import make_sampler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--mix", default="top_k,standard_logprobs,base,heavy")
    ap.add_argument("--budget-ms", type=float, default=40)
    ap.add_argument("--out", default="")
    ap.add_argument("--stage2-const", default="", help="NAME=INT,...: stage-2 constexpr overrides (experiments)")
    ap.add_argument("--configs", default="table",
                    help="comma list of launch configurations, each 'table' or block/emit/warps1/warps2/strategy"
                         "[/REGS1xREGS2] (sample_config_probe.py's form)")
    a = ap.parse_args()
    overrides = {k: int(x) for k, x in (kv.split("=") for kv in a.stage2_const.split(",") if kv)}
    v = a.vocab
    lines = []
    for mix, n, conf in itertools.product(a.mix.split(","), map(int, a.rows.split(",")), a.configs.split(",")):
        s, slots, positions, mask = make_sampler(mix, n, v, **sampler_overrides(conf))
        if overrides:
            s._plan = _overriding(s._plan, overrides)
        copies, _ = harness.plan_copies(n * v * 2, harness.l2_bytes("cuda"), 64)
        inputs = [gumbel((n, v), "cuda", torch.Generator(device="cuda").manual_seed(c)) for c in range(copies)]
        fns = [(lambda x=x: s.sample(x, slots, positions, mask)) for x in inputs]
        full = harness.percentiles(harness.cuda_graph_timer(fns, budget_ms=a.budget_ms))[1]
        cfg = s.launch_config(n)
        s._stage2 = SimpleNamespace(launch=lambda *args, **kw: None)   # Sampler._launch calls .launch
        stage1 = harness.percentiles(harness.cuda_graph_timer(fns, budget_ms=a.budget_ms))[1]
        name = mix + (" " + a.stage2_const if overrides else "") + ("" if conf == "table" else " " + conf)
        line = (f"{name:18s} rows={n:4d} V={v}  call {full:7.1f} us  stage 1 {stage1:7.1f}  stage 2 + gap "
                f"{full - stage1:6.1f}   ({cfg})")
        print(line, flush=True)
        lines.append(line)
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")


def _overriding(plan_fn, overrides: dict):
    """Sampler._plan with stage 2's constexprs overridden (the plan cache keeps the changed dict)."""
    def plan(*args, **kwargs):
        p = plan_fn(*args, **kwargs)
        p["const2"].update(overrides)
        return p
    return plan


if __name__ == "__main__":
    main()
