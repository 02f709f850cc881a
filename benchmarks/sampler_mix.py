"""The fused Sampler over the paper's figure-3 breakdown and the issues' named mixes, on the GPU.

Each mix adds one feature to the one before (base -> +temperature -> +top-k -> +top-p -> +min-p ->
+penalties, bias and grammar -> +logprobs), then the heavy mix of issue 4 (per-row options, one row in
four greedy) and the exactness mixes of issue 5 (untruncated rows, their bounded approximation, one row
in 16 with a nucleus larger than the bound). Times are CUDA-graph replays rotating input copies
(benchmarks/harness.py); rows go to a CSV as case "sample_mix". The eager host time of one call
(no graph, no synchronisation: what the engine's CPU spends) is measured separately.

    python benchmarks/sampler_mix.py --rows 1,32,128 --vocab 151936 --out $OUT/sample_mix.csv
"""
from __future__ import annotations

import argparse
import inspect
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks import harness
from benchmarks.cases import gumbel
from sonicsampler import Sampler, SamplingParams

PROMPT = list(range(100, 300))
BIAS = {7: 2.0, 11: -1.0, 13: 0.5, 17: 1.5, 19: -3.0}


def _penalised(**kw):
    return dict(repetition_penalty=1.1, frequency_penalty=0.3, presence_penalty=0.2, logit_bias=BIAS, **kw)


def mix_params(mix: str, i: int) -> tuple[SamplingParams, bool]:
    """(params of row i, whether the mix applies a grammar mask)."""
    if mix == "base":  # plain sampling from softmax(logits): the untruncated exact path
        return SamplingParams(seed=i), False
    if mix == "temperature":
        return SamplingParams(temperature=0.7, seed=i), False
    if mix == "top_k":
        return SamplingParams(temperature=0.7, top_k=128, seed=i), False
    if mix == "top_p":  # the standard configuration of issue 4
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i), False
    if mix == "top_p_no_k":  # top-p without top-k (a common default) on rows whose nuclei fit the bound
        return SamplingParams(temperature=0.5, top_p=0.9, seed=i), False
    if mix == "min_p":
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, min_p=0.05, seed=i), False
    if mix == "processing":
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, min_p=0.05, seed=i, **_penalised()), True
    if mix == "logprobs":
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, min_p=0.05, seed=i, logprobs=20,
                              **_penalised()), True
    if mix == "standard_logprobs":  # the standard configuration + top-20 raw logprobs (issue 4: <= +20%)
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i, logprobs=20), False
    if mix == "heavy":  # issue 4's heavy mix: every option, per-row values, one row in four greedy
        if i % 4 == 3:
            return SamplingParams(temperature=0.0, seed=i, **_penalised()), True
        return SamplingParams(temperature=0.6 + 0.1 * (i % 4), top_k=(20, 50, 128)[i % 3],
                              top_p=(0.8, 0.9, 0.95)[i % 3], min_p=0.02, seed=i, **_penalised()), True
    if mix == "greedy":
        return SamplingParams(temperature=0.0, seed=i), False
    if mix == "bounded_approx":  # base, with allow_bounded_approximation=True (see make_sampler)
        return SamplingParams(seed=i), False
    if mix == "long_nucleus_1_in_16":  # one row in 16 keeps far more than 128 tokens
        if i % 16 == 0:
            return SamplingParams(temperature=1.5, top_p=0.99, seed=i), False
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i), False
    if mix == "long_nucleus_1_in_16_lp":  # the same, the long row asking processed log-probabilities: its
        if i % 16 == 0:                      # passes end with the final one (for the normalizer) every time
            return SamplingParams(temperature=1.5, top_p=0.99, seed=i, logprobs=1, logprobs_mode="processed"), False
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i), False
    if mix == "mid_nucleus_1_in_16":  # one row in 16 keeps 200-6500 tokens by top-p alone, on values above 0
        if i % 16 == 0:
            return SamplingParams(temperature=0.85, top_p=0.9, seed=i), False
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i), False
    if mix == "long_min_p_1_in_16":  # one row in 16 keeps ~1000 tokens by min-p alone (no search)
        if i % 16 == 0:
            return SamplingParams(temperature=1.5, min_p=0.01, seed=i), False
        return SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i), False
    raise ValueError(mix)


MIXES = ["base", "temperature", "top_k", "top_p", "top_p_no_k", "min_p", "processing", "logprobs", "standard_logprobs",
         "heavy", "greedy", "bounded_approx", "long_nucleus_1_in_16", "long_nucleus_1_in_16_lp", "mid_nucleus_1_in_16",
         "long_min_p_1_in_16"]


def _option(name: str, value: int):
    """A Sampler option's value from an integer on a command line (long_fill's as the bool it must be)."""
    return bool(value) if name == "long_fill" else value


def sampler_options(text: str) -> dict:
    """Sampler options from "name=value,..." (integers; long_fill as a bool), e.g. "long_fill=1,long_chunks=64"."""
    return {k: _option(k, int(x)) for k, x in (kv.split("=") for kv in text.split(",") if kv)}


def make_sampler(mix: str, n: int, v: int, **extra):
    """extra: Sampler options (only those given: also for a Sampler of code before them)."""
    s = Sampler(v, n, "cuda", allow_bounded_approximation=(mix == "bounded_approx"), **extra)
    grammar = False
    for i in range(n):
        p, grammar = mix_params(mix, i)
        s.add_request(i, p, prompt_token_ids=PROMPT)
    slots = torch.arange(n, device="cuda", dtype=torch.int64)
    positions = torch.arange(n, device="cuda", dtype=torch.int64) + 1000
    mask = None
    if grammar:  # a structured-output mask allowing about half the vocabulary (random bits)
        words = s.table.words
        mask = torch.randint(-2**31, 2**31 - 1, (n, words), device="cuda", dtype=torch.int32)
    return s, slots, positions, mask


def measure(mix: str, n: int, v: int, env: dict, out: str, budget_ms: float, variant: tuple = (),
            fixed: dict | None = None) -> None:
    """variant: () for the Sampler's defaults, or (option, value): a Sampler option (long_block,
    long_chunks, long_claim, long_fill: 0 / 1) or regs1 / regs2 (a stage's register cap). fixed: Sampler options for
    every variant (named in the impl column too)."""
    opt, value = variant or (None, None)
    regs = opt in ("regs1", "regs2")
    fixed = fixed or {}
    option = {opt: _option(opt, value)} if variant and not regs else {}
    s, slots, positions, mask = make_sampler(mix, n, v, **fixed, **option)
    if regs:   # one stage's register cap instead of the table's (the other stage keeps the table's)
        cfg = s.launch_config(n)
        s.regs = (value, cfg.regs2) if opt == "regs1" else (cfg.regs1, value)
    copies, note = harness.plan_copies(n * v * 2, harness.l2_bytes("cuda"), 64)
    inputs = [gumbel((n, v), "cuda", torch.Generator(device="cuda").manual_seed(c)) for c in range(copies)]
    fns = [(lambda x=x: s.sample(x, slots, positions, mask)) for x in inputs]
    p20, p50, p80 = harness.percentiles(harness.cuda_graph_timer(fns, budget_ms=budget_ms))
    # Host time: eager calls without synchronisation (the CPU cost an engine pays per step), with the
    # slots and positions as device tensors and as host lists; the fastest of five rounds (one
    # process's rounds varied up to 2x with identical code, runs 97-101).
    host_us, list_us = (
        harness.host_time(lambda a=a, b=b, xs=itertools.cycle(inputs): s.sample(next(xs), a, b, mask))
        for a, b in ((slots, positions), (slots.tolist(), positions.tolist())))
    # ... and into persistent output buffers (sample(out=...), where the code has it): no allocation
    out_us = float("nan")
    if "out" in inspect.signature(s.sample).parameters:
        buf = s.sample(inputs[0], slots, positions, mask)
        out_us = harness.host_time(lambda xs=itertools.cycle(inputs): s.sample(next(xs), slots, positions, mask,
                                                                                out=buf))
    impl = "sonicsampler" + "".join(f".{k}{x}" for k, x in fixed.items()) \
        + (f".{opt}{'_' if regs else ''}{value}" if variant else "")
    row = {"case": "sample_mix", "shape": f"rows={n},V={v},mix={mix}", "impl": impl,
           "p20_us": p20, "p50_us": p50, "p80_us": p80, **env,
           "note": f"host {host_us:.1f} us/call; host lists {list_us:.1f} us/call; host out= {out_us:.1f} us/call; "
                   f"{note}"}
    harness.append_rows(out, [row])
    print(f"{mix:22s} rows={n:4d} V={v:7d} {impl:12s} {p50:8.1f} us   host {host_us:6.1f} us, lists {list_us:6.1f} us, "
          f"out= {out_us:6.1f} us", flush=True)
    del s, inputs, fns
    harness._release("cuda")


def host_breakdown(n: int, v: int, reps: int = 300) -> None:
    """Where an eager call's host time goes (device slots and positions, the standard mix): the whole
    call, then with both kernel launches replaced by no-ops (host_ab.no_launches: validation, plan
    lookup, output allocation, argument lists), each with new outputs and into persistent ones
    (sample(out=...)); the C launches are the difference. Best of five rounds."""
    from benchmarks.host_ab import no_launches, per_call
    s, slots, positions, _ = make_sampler("top_p", n, v)
    x = gumbel((n, v), "cuda", torch.Generator(device="cuda").manual_seed(0))
    buf = s.sample(x, slots, positions)
    whole, whole_out = per_call(s, x, slots, positions, reps), per_call(s, x, slots, positions, reps, out=buf)
    restore = no_launches(s)
    try:
        bare, bare_out = per_call(s, x, slots, positions, reps), per_call(s, x, slots, positions, reps, out=buf)
    finally:
        restore()
    print(f"host breakdown rows={n} V={v}: whole call {whole:.1f} us ({whole_out:.1f} with out=), without the two "
          f"C launches {bare:.1f} us ({bare_out:.1f} with out=): the launches {whole - bare:.1f} us, the outputs' "
          f"allocation {bare - bare_out:.1f} us net of out='s check", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--vocab", default="151936")
    ap.add_argument("--mix", default=",".join(MIXES))
    ap.add_argument("--budget-ms", type=float, default=200.0)
    ap.add_argument("--out", default="sample_mix.csv")
    ap.add_argument("--host-breakdown", action="store_true", help="only the host-time breakdown")
    ap.add_argument("--long-block", default="",
                    help="sub-tiles of the exact passes to compare, alternating (default: the Sampler's)")
    ap.add_argument("--long-chunks", default="",
                    help="chunks of the shared exact passes to compare, alternating (default: the Sampler's)")
    ap.add_argument("--long-fill", default="",
                    help="long_fill off / on to compare, alternating (0,1; default: the Sampler's)")
    ap.add_argument("--long-claim", default="",
                    help="chunks a program takes at once to compare, alternating (0: the kernel's choice)")
    ap.add_argument("--with", dest="fixed", default="",
                    help="Sampler options for every variant, e.g. long_chunks=64 (comma-separated)")
    ap.add_argument("--regs1", default="",
                    help="stage-1 register caps to compare, alternating (0: none; default: the table's)")
    ap.add_argument("--regs2", default="",
                    help="stage-2 register caps to compare, alternating (0: none; default: the table's)")
    a = ap.parse_args(argv)
    env = harness.environment("cuda")
    fixed = sampler_options(a.fixed)
    if a.host_breakdown:
        for n in [int(x) for x in a.rows.split(",")]:
            host_breakdown(n, int(a.vocab.split(",")[0]))
        return
    for v in [int(x) for x in a.vocab.split(",")]:
        for mix in a.mix.split(","):
            for n in [int(x) for x in a.rows.split(",")]:
                variants = [(opt, int(x)) for opt, arg in (("long_block", a.long_block),
                                                           ("long_chunks", a.long_chunks),
                                                           ("long_claim", a.long_claim),
                                                           ("long_fill", a.long_fill), ("regs1", a.regs1),
                                                           ("regs2", a.regs2))
                            for x in arg.split(",") if x]
                for variant in variants or [()]:
                    try:
                        measure(mix, n, v, env, a.out, a.budget_ms, variant, fixed)
                    except Exception as e:  # a failing mix is data, not the end of the run
                        print(f"{mix} rows={n} V={v}: {harness.one_line(e)}", flush=True)
                        harness.append_rows(a.out, [{"case": "sample_mix", "shape": f"rows={n},V={v},mix={mix}",
                                                     "impl": "sonicsampler", **env,
                                                     "note": "error: " + harness.one_line(e)}])


if __name__ == "__main__":
    main()
