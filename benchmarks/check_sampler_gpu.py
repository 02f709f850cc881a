"""GPU checks of the fused Sampler at production sizes (run on the device, results as JSON lines):
token-for-token equality with reference.sample on exact rows (the equality rate and that every mismatch
is a near-tie of perturbed scores), the exact flag against the reference's support size, CUDA-graph
capture and replay with new logits and positions equal to eager, and no recompilation over batch sizes.
Part `verify`: Sampler.verify against reference.verify at production sizes (dense drafts, mixed
requests) and its graph replay against eager (its stage 2 counts rows in per request with atomic
counters that must be back at zero for the next replay). Part `verify_long`: target sets far beyond
the bound, through the exact passes over the row; part `long`: every kind of such set (top-k above
the bound, top-p, both, min-p) in the sampler and in verification, bf16 and fp32. Part `untruncated`:
untruncated rows of every kind (most of them without candidates), tokens and log-probabilities. Part
`out_buffers`: sample(out=...) into an engine's buffers equals a fresh call, eager and in a CUDA graph;
`verify_out_buffers`: the same for verify(out=...).
Part `verify_warmup`: after Sampler.warmup_verify, verification compiles nothing.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/<this>.py` from anywhere

import torch

from benchmarks.gpu_log import JsonLog, compiled_variants
from sonicsampler import SamplingParams, indicators, reference, rng
from sonicsampler.kernels import shared_sets
from sonicsampler.kernels.sample import sample_stage1, sample_stage2
from sonicsampler.sampler import Sampler

log = JsonLog("check_sampler.jsonl")
emit = log.emit


def mixed_params(n, gen):
    def pick(o):
        return o[int(torch.randint(len(o), (1,), generator=gen))]
    return [SamplingParams(temperature=pick([0.0, 0.7, 1.0]), top_k=pick([0, 20, 128]), top_p=pick([1.0, 0.9]),
                           min_p=pick([0.0, 0.1]), repetition_penalty=pick([1.0, 1.1]),
                           frequency_penalty=pick([0.0, 0.3]), logit_bias=pick([None, {5: 3.0}]),
                           seed=pick([i, 2**63 + i]), logprobs=pick([None, 5]), logprobs_mode=pick(["raw", "processed"]))
            for i in range(n)]


def untruncated_params(n):
    """Untruncated rows of every kind: most ask for no top-n log-probabilities (they skip the candidates,
    kernels/sample.py without_candidates), some for the token's raw or processed one, some for a top-n,
    at several temperatures, some with penalties and bias."""
    out = []
    for i in range(n):
        extra = dict(repetition_penalty=1.2, frequency_penalty=0.3, logit_bias={5: 2.0}) if i % 3 == 2 else {}
        out.append(SamplingParams(temperature=(1.0, 0.8, 1.2)[i % 3], seed=2**63 + i if i % 2 else i,
                                  logprobs=(None, 0, 0, 3)[i % 4], logprobs_mode=("raw", "processed")[(i // 4) % 2],
                                  **extra))
    return out


def greedy_params(n):
    """Greedy rows of every kind: most need only their argmax (the scalar path, kernels/sample.py
    greedy_alone), some ask for the token's raw or processed log-probability, some for a top-n or a
    processed log-probability over a truncated set (those keep their candidates), some with penalties
    and bias, some with truncation that cannot change an argmax."""
    out = []
    for i in range(n):
        extra = dict(repetition_penalty=1.2, frequency_penalty=0.3, logit_bias={5: 2.0}) if i % 3 == 2 else {}
        trunc = dict(top_k=20, top_p=0.9) if i % 5 == 4 else {}
        out.append(SamplingParams(temperature=0.0, logprobs=(None, 0, 0, 3, None, 0)[i % 6],
                                  logprobs_mode=("raw", "processed")[(i // 6) % 2], **trunc, **extra))
    return out


def check_greedy(v, n, dtype=torch.bfloat16, device="cuda", first=0, **sampler_args):
    """Greedy rows (greedy_params) at production size, each row's maximum copied to two more places in
    other tiles (ties across tiles go to the lower index), a NaN row and a fully masked row among them:
    tokens, validity and the token's log-probability against the reference. No mismatch is allowed
    (greedy rows have no noise). first: the rows take greedy_params' kinds from this one on; batches
    of fewer than 4 rows have no NaN and no fully masked row."""
    gen = torch.Generator().manual_seed(v + n + 3 + first)
    params = greedy_params(first + n)[first:]
    s = Sampler(v, n, device, **sampler_args)
    for i, p in enumerate(params):
        s.add_request(i, p, prompt_token_ids=[1, 2, 3])
    logits = (3 * torch.randn(n, v, generator=gen)).to(dtype)
    for i in range(n):
        top = int(logits[i].float().argmax())
        for j in torch.randint(v, (2,), generator=gen).tolist():
            logits[i, j] = logits[i, top]
    mask = torch.full((n, -(-v // 32)), -1, dtype=torch.int32)
    if n >= 4:
        logits[n - 1, 5] = float("nan")
        mask[n - 2] = 0
    mask[0, : v // 64] = 0          # row 0: the first half of the vocabulary forbidden
    positions = list(range(n))
    out = s.sample(logits.to(device), list(range(n)), positions, grammar_bitmask=mask.to(device))
    ref = reference.sample(logits, params, positions=positions, prompt_token_ids=[[1, 2, 3]] * n,
                           grammar_bitmask=mask)
    has_lp = [i for i in range(n) if params[i].logprobs is not None and bool(ref.valid[i])]
    lp_err = max([abs(float(out.logprob[i]) - float(ref.logprob[i])) for i in has_lp], default=0.0)
    emit(what="greedy_tokens", V=v, rows=n, dtype=str(dtype), strategy=s.launch_config(n).strategy,
         equal=int((out.tokens.cpu() == ref.tokens).sum()), exact=int(out.exact.sum()),
         valid_equal=bool(torch.equal(out.valid.cpu(), ref.valid)), token_logprob_max_err=lp_err,
         ok=bool(torch.equal(out.tokens.cpu(), ref.tokens)) and bool(torch.equal(out.valid.cpu(), ref.valid)))


def near_tie(logits_row, p, prompt, output, mask_row, position, a, b) -> bool:
    """Whether tokens a (the kernel's) and b (the reference's) of one row have perturbed scores within
    float rounding of each other (a greedy row has no noise): the only mismatch the checks allow."""
    row = reference._process_row(logits_row, p, prompt, output, mask_row)
    g = (0.0, 0.0) if p.greedy else rng.gumbel(p.seed_u64, position, 0, torch.tensor([a, b]))
    return abs(float(row.x[a] + g[0]) - float(row.x[b] + g[1])) <= 1e-5 * max(1.0, abs(float(row.x[b])))


def raw_ordered_params(n):
    """Rows whose processing is at most a temperature (stage 1 ranks their raw values and converts the
    keys each tile emits: kernels/sample.py raw_ordered): temperatures below and above 1, top-k from 1 to 128, top-p,
    min-p, processed and raw top-20 log-probabilities (whose ids show the candidates' order), and every
    fourth row with a presence penalty (processed keys) in the same batch."""
    out = []
    for i in range(n):
        extra = dict(presence_penalty=0.5) if i % 4 == 3 else {}
        out.append(SamplingParams(temperature=(0.5, 0.7, 0.85, 1.3, 2.0)[i % 5], top_k=(128, 1, 20, 0, 77)[i % 5],
                                  top_p=(0.9, 1.0, 0.95, 0.8, 1.0)[(i // 5) % 5], min_p=(0.0, 0.05)[(i // 2) % 2],
                                  seed=i, logprobs=(20, None, 5)[i % 3], logprobs_mode=("processed", "raw")[(i // 3) % 2],
                                  **extra))
    return out


def bias_edge_params(n, v):
    """Rows whose logit biases sit on tile edges (the first and last ids of tiles of 1024, 4096 and 8192
    tokens, and the vocabulary's ends): stage 1 adds a bias only in the tile whose id range holds it
    (kernels/prologue.py process, SPAN). Greedy rows with one large bias (the token shows whether it was
    added), sampled rows with several and processed top-20 log-probabilities (their values show it)."""
    edges = [0, v - 1]
    for size in (1024, 4096, 8192):
        for k in (1, 7, v // size):
            edges += [k * size - 1, k * size]
    edges = sorted({e for e in edges if 0 <= e < v})
    out = []
    for i in range(n):
        e = edges[i % len(edges)]
        if i % 3 == 0:
            out.append(SamplingParams(temperature=0.0, logit_bias={e: 30.0}, logprobs=5, logprobs_mode="processed"))
        else:
            some = {edges[(i + j) % len(edges)]: (6.0, -4.0, 8.0, float("-inf"), 5.0)[j] for j in range(5)}
            out.append(SamplingParams(temperature=0.8, top_k=(128, 20)[i % 2], top_p=0.95, seed=i, logit_bias=some,
                                      logprobs=20, logprobs_mode="processed"))
    return out


def free_params(n):
    """Rows that need no full-vocabulary normalizer (indicator NORMALIZER_FREE: stage 1 takes each
    tile's maximum alone): temperature with a top-k within the bound (raw keys), the same with a
    penalty (processed values), greedy rows (the scalar argmax path), greedy with top-p."""
    kinds = (dict(temperature=0.7, top_k=128, top_p=0.9), dict(temperature=1.3, top_k=20, min_p=0.05),
             dict(top_k=50, repetition_penalty=1.2, presence_penalty=0.3), dict(temperature=0.0),
             dict(temperature=0.0, top_p=0.5))
    return [SamplingParams(seed=i, **kinds[i % len(kinds)]) for i in range(n)]


def check_free_rows(v, n, dtype=torch.bfloat16, first=0, device="cuda", **sampler_args):
    """Free rows (free_params) with a NaN of either sign or a +inf far below the row's maximum, in a
    tile of their own, against the reference: the maximum alone must flag them invalid (the GPU's
    tl.max skips NaN; stage 1 takes a NaN-propagating one), the clean rows must keep their tokens."""
    gen = torch.Generator().manual_seed(v + 3 * n)
    params = free_params(n)
    s = Sampler(v, n, device, **sampler_args)
    for i, p in enumerate(params):
        s.add_request(i, p, prompt_token_ids=[1, 2, 3])
    logits = (3 * torch.randn(n, v, generator=gen)).to(dtype)
    neg_nan = torch.tensor([float("nan")]).to(dtype)
    sign = neg_nan.view(torch.int16 if dtype != torch.float32 else torch.int32)
    sign |= -(2 ** 15) if dtype != torch.float32 else -(2 ** 31)
    kinds = ["clean", "nan", "neg_nan", "inf"]
    for i in range(n):
        logits[i, 17] = 20.0                            # the maximum, in the first tile
        what = kinds[(first + i // 5) % 4]              # each kind of row with each kind of damage
        if what == "nan":
            logits[i, v - 3] = float("nan")
        elif what == "neg_nan":
            logits[i, v // 2] = neg_nan[0]
        elif what == "inf":
            logits[i, v // 3] = float("inf")
    logits = logits.to(device)
    positions = list(range(11, 11 + n))
    out = s.sample(logits, list(range(n)), positions)
    ref = reference.sample(logits.cpu(), params, positions=positions, prompt_token_ids=[[1, 2, 3]] * n)
    emit(what="free_rows", V=v, rows=n, dtype=str(dtype), strategy=s.launch_config(n).strategy,
         first=first, free=sum(bool(int(f) & indicators.NORMALIZER_FREE) for f in s.table.flags.cpu()),
         invalid=int((~ref.valid).sum()),
         valid_equal=bool(torch.equal(out.valid.cpu(), ref.valid)),
         tokens_equal=int((out.tokens.cpu() == ref.tokens).sum()))


def check_tokens(v, n, strategy=None, params=None, what="tokens", dtype=torch.bfloat16, ties=False):
    """Mixed rows (or `params`) against the reference at production size. ties: logits in steps of 1/8,
    so that most values tie and the quotients of neighbouring raw values round together often."""
    gen = torch.Generator().manual_seed(v + n)
    params = params or mixed_params(n, gen)
    s = Sampler(v, n, "cuda", strategy=strategy)
    for i, p in enumerate(params):
        s.add_request(i, p, prompt_token_ids=[1, 2, 3])
    logits = 3 * torch.randn(n, v, device="cuda")
    if ties:
        logits = torch.round(8 * logits) / 8
    logits = logits.to(dtype)
    if n >= 4:   # bad rows: a NaN and a +inf (invalid, flagged by stage 1's statistics), the rest unharmed
        logits[n - 1, 5] = float("nan")
        logits[n - 2, v - 1] = float("inf")
    positions = list(range(7, 7 + n))
    out = s.sample(logits, list(range(n)), positions)
    ref = reference.sample(logits.cpu(), params, positions=positions, prompt_token_ids=[[1, 2, 3]] * n)
    exact = out.exact.cpu()
    equal = (out.tokens.cpu() == ref.tokens) & exact
    near = 0
    for i in torch.nonzero(exact & ~equal).flatten().tolist():
        near += near_tie(logits[i].cpu(), params[i], [1, 2, 3], [], None, positions[i], int(out.tokens[i]),
                         int(ref.tokens[i]))
    # Top-n log-probability ids on exact rows that asked for them (raw rows with temperature take the
    # kernel's re-ranking of the candidates): equal to the reference's, id for id.
    lp_rows = [i for i in range(n) if params[i].logprobs and bool(exact[i])]
    top_equal = sum(torch.equal(out.top_token_ids[i].cpu(), ref.top_token_ids[i]) for i in lp_rows)
    has_lp = [i for i in range(n) if params[i].logprobs is not None and bool(out.valid[i])]
    lp_err = max([abs(float(out.logprob[i]) - float(ref.logprob[i])) for i in has_lp], default=0.0)
    cfg = s.launch_config(n)
    emit(what=what, V=v, rows=n, dtype=str(dtype), ties=ties, strategy=cfg.strategy, block=cfg.block, tile_emit=cfg.emit,
         exact_rows=int(exact.sum()), equal=int(equal.sum()),
         mismatches=int((exact & ~equal).sum()), near_ties=int(near), logprob_rows=len(lp_rows),
         top_ids_equal=int(top_equal), valid_equal=bool(torch.equal(out.valid.cpu(), ref.valid)),
         token_logprob_max_err=lp_err)


def check_penalty_steps(v=151936, n=32, steps=4, device="cuda"):
    """Steps of one penalised batch (every row penalised, some with bias, a grammar mask on all: issue
    4's heavy mix), each against reference.sample given the tokens the batch emitted so far: the
    penalties see what the kernels counted at the steps before. The prologue reads counts only in the
    words the output mask marks (kernels/prologue.py), so a count the kernels forgot to mark would
    change a later step. Then the output mask marks every counted token."""
    gen = torch.Generator().manual_seed(v + n + 7)
    leaders = torch.randperm(v, generator=gen)[:24]
    params = []
    for i in range(n):
        pen = dict(repetition_penalty=(1.0, 1.3, 1.1)[i % 3], frequency_penalty=(0.5, 0.0, 0.3)[i % 3],
                   presence_penalty=(0.0, 0.4, 0.2)[i % 3], logit_bias={int(leaders[0]): 1.5} if i % 5 == 0 else None)
        if i % 4 == 3:
            params.append(SamplingParams(temperature=0.0, logprobs=(None, 5)[i % 2], **pen))
        else:
            params.append(SamplingParams(temperature=(0.6, 0.8, 1.0)[i % 3], top_k=(20, 128, 0)[i % 3],
                                         top_p=(0.9, 1.0, 0.95)[i % 3], min_p=0.02, seed=1000 + i,
                                         logprobs=(None, 3, 0)[i % 3], logprobs_mode=("raw", "processed")[i % 2],
                                         **pen))
    prompts = [torch.randint(v, (200,), generator=gen).tolist() + leaders[i % 24:i % 24 + 2].tolist()
               for i in range(n)]
    s = Sampler(v, n, device)
    params = [s.add_request(i, p, prompt_token_ids=prompts[i]) for i, p in enumerate(params)]
    logits = 2 * torch.randn(n, v, generator=gen)
    logits[:, leaders] += 7.0          # a few leaders: the penalties move the choice among them
    logits = logits.to(torch.bfloat16)
    words = -(-v // 32)
    mask = torch.randint(-2**31, 2**31, (n, words), generator=gen, dtype=torch.int64).to(torch.int32)
    mask |= torch.randint(-2**31, 2**31, (n, words), generator=gen, dtype=torch.int64).to(torch.int32)  # ~3/4 allowed
    outputs = [[] for _ in range(n)]
    equal = exact = mismatches = near = 0
    for step in range(steps):
        positions = [100 + step] * n
        out = s.sample(logits.to(device), list(range(n)), positions, mask.to(device))
        ref = reference.sample(logits, params, positions=positions, prompt_token_ids=prompts,
                               output_token_ids=outputs, grammar_bitmask=mask)
        ok = out.exact.cpu() & ref.valid
        eq = (out.tokens.cpu() == ref.tokens) & ok
        exact += int(ok.sum())
        equal += int(eq.sum())
        mismatches += int((ok & ~eq).sum())
        for i in torch.nonzero(ok & ~eq).flatten().tolist():
            near += near_tie(logits[i], params[i], prompts[i], outputs[i], mask[i], positions[i], int(out.tokens[i]),
                             int(ref.tokens[i]))
        for i in range(n):
            outputs[i].append(int(out.tokens[i]))
    counts = s.table.counts.cpu()
    marks = s.table.output_mask.cpu()
    unmarked = sum(int((s.table.bitmask(torch.nonzero(counts[i]).flatten().tolist()) & ~marks[i]).ne(0).sum())
                   for i in range(n))
    moved = sum(len(set(o)) > 1 for o in outputs)
    emit(what="penalty_steps", V=v, rows=n, steps=steps, strategy=s.launch_config(n).strategy, exact_rows=exact,
         equal=equal, mismatches=mismatches, near_ties=int(near), rows_whose_token_moved=moved,
         unmarked_words=unmarked)


def check_graph(v=151936, n=32):
    s = Sampler(v, n, "cuda")
    for i in range(n):
        s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
    slots = torch.arange(n, device="cuda")
    pos = torch.zeros(n, dtype=torch.int64, device="cuda")
    logits = torch.randn(n, v, device="cuda").to(torch.bfloat16)
    s.sample(logits, slots, pos)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = s.sample(logits, slots, pos)
    ok = True
    for step in range(3):
        logits.copy_(torch.randn(n, v, device="cuda").to(torch.bfloat16))
        pos.fill_(step + 1)
        g.replay()
        eager = s.sample(logits, slots, pos)
        ok &= torch.equal(out.tokens, eager.tokens)
    emit(what="graph_replay_equals_eager", ok=bool(ok))
    # Sampler.warmup compiles the variants of every row bucket up front; after it, no batch size compiles.
    variants = s.warmup(n)
    before = compiled_variants(sample_stage1, sample_stage2)
    for rows in range(1, n + 1):
        s.sample(logits[:rows], slots[:rows], pos[:rows])
    emit(what=f"recompiles_rows_1_{n}_after_warmup", variants=variants, before=before,
         after=compiled_variants(sample_stage1, sample_stage2))
    # A request with penalties admitted after warmup: its batches take their own stage-1 register cap
    # (SampleConfig.regs1_penalised), a variant warmup prepared whatever was admitted.
    s.remove_request(0)
    s.add_request(0, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=0, repetition_penalty=1.1))
    for rows in range(1, n + 1):
        s.sample(logits[:rows], slots[:rows], pos[:rows])
    emit(what=f"recompiles_rows_1_{n}_penalised_after_warmup", before=before,
         after=compiled_variants(sample_stage1, sample_stage2))
    # A request whose nucleus may exceed the bound (top-p without top-k): its batches take stage 2's
    # SHARED variant (with helper programs below 16 rows), which warmup also prepared.
    s.remove_request(1)
    s.add_request(1, SamplingParams(temperature=0.7, top_p=0.9, seed=1))
    for rows in range(1, n + 1):
        s.sample(logits[:rows], slots[:rows], pos[:rows])
    emit(what=f"recompiles_rows_1_{n}_shared_after_warmup", before=before,
         after=compiled_variants(sample_stage1, sample_stage2))


def _out_twin(v, n, device):
    """A sampler of n requests for the out= checks: top-k / top-p, greedy with processed top-5, penalised
    raw top-5 and untruncated requests in turn (small tiles and bound off the GPU)."""
    s = Sampler(v, n, device, **({} if device == "cuda" else {"bound": 32, "block": 256}))
    for i in range(n):
        s.add_request(i, [SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i),
                          SamplingParams(temperature=0.0, logprobs=5, logprobs_mode="processed"),
                          SamplingParams(temperature=1.1, repetition_penalty=1.2, logprobs=5, seed=i),
                          SamplingParams(seed=i)][i % 4], prompt_token_ids=list(range(50)))
    return s


def check_out_buffers(v=151936, n=32, steps=3, device="cuda"):
    """Sampler.sample(out=...) at production size: two samplers in the same state (a mix with top-k /
    top-p, raw and processed top-n, a penalised raw top-n row, greedy and untruncated rows), one
    allocating, one writing into poisoned buffers, over several steps; then a CUDA graph captured with
    out= replayed with new logits and positions against the allocating twin's eager calls."""

    def same(a, b):
        fa = [a.tokens, a.valid, a.logprob, a.top_token_ids, a.top_logprobs, a.exact, a.dropped_mass]
        fb = [b.tokens, b.valid, b.logprob, b.top_token_ids, b.top_logprobs, b.exact, b.dropped_mass]
        return all(torch.equal(torch.nan_to_num(x.float(), nan=123.0), torch.nan_to_num(y.float(), nan=123.0))
                   for x, y in zip(fa, fb))

    def poison(o):
        for t in (o.tokens, o.logprob, o.top_token_ids, o.top_logprobs, o.dropped_mass):
            t.fill_(-7)
        o.valid.fill_(True)
        o.exact.fill_(False)

    gen = torch.Generator(device=device).manual_seed(5)
    a, b = _out_twin(v, n, device), _out_twin(v, n, device)
    slots = torch.arange(n, device=device)
    pos = torch.zeros(n, dtype=torch.int64, device=device)
    x = torch.randn(n, v, device=device, generator=gen).to(torch.bfloat16)
    out = b.sample(x, slots, pos)
    a.sample(x, slots, pos)
    eager_ok = True
    for step in range(steps):
        x = torch.randn(n, v, device=device, generator=gen).to(torch.bfloat16)
        pos.fill_(step + 1)
        want = a.sample(x, slots, pos)
        poison(out)
        eager_ok &= b.sample(x, slots, pos, out=out) is out and same(want, out)
    graph_ok = None
    if device == "cuda":
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):     # records the launches: nothing runs, nothing is counted
            b.sample(x, slots, pos, out=out)
        graph_ok = True
        for step in range(steps):
            x.copy_(torch.randn(n, v, device=device, generator=gen).to(torch.bfloat16))
            pos.fill_(100 + step)
            poison(out)
            g.replay()
            graph_ok &= same(a.sample(x, slots, pos), out)
        torch.cuda.synchronize()
    emit(what="out_buffers", V=v, rows=n, steps=steps, eager_equal=bool(eager_ok), graph_equal=graph_ok and bool(graph_ok),
         counts_equal=bool(torch.equal(a.table.counts, b.table.counts)))


def check_verify_out_buffers(v=151936, bsz=8, gamma=3, steps=3, device="cuda"):
    """Sampler.verify(out=...) at production size: twin samplers in the same state (top-k / top-p,
    greedy with processed top-5, penalised raw top-5, untruncated requests), one allocating, one writing
    into poisoned buffers, over steps with one-hot, dense and sparse drafts and ragged draft counts
    (penalties count the accepted tokens); then a graph captured with out= (one-hot drafts, device
    slots, positions and counts) replayed with new logits and drafts against the twin's eager calls."""
    import dataclasses
    from sonicsampler import SparseDraftProbs, VerifyOutput

    def same(a, b):
        return all(torch.equal(torch.nan_to_num(x.float(), nan=123.0), torch.nan_to_num(y.float(), nan=123.0))
                   for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b)))

    def poison(o):
        for t in dataclasses.astuple(o):
            t.fill_(True) if t.dtype == torch.bool else t.fill_(-7)

    gen = torch.Generator(device=device).manual_seed(11)
    a, b = _out_twin(v, bsz, device), _out_twin(v, bsz, device)
    k = a.bound     # sparse draft entries
    slots = torch.arange(bsz, device=device)
    counts = torch.tensor([gamma, 1, 0, 2, gamma, gamma, 1, gamma][:bsz], device=device)
    rows = bsz * (gamma + 1)
    out, eager_ok = None, True
    for kind in ("one_hot", "dense", "sparse"):
        for step in range(steps):
            x = (3 * torch.randn(rows, v, device=device, generator=gen)).to(torch.bfloat16)
            d = torch.randint(0, v, (bsz, gamma), device=device, generator=gen)
            d[1] = x.float().view(bsz, gamma + 1, v)[1, :gamma].argmax(-1)     # the greedy request accepts
            q = None
            if kind == "dense":
                q = torch.softmax(torch.randn(bsz, gamma, v, device=device, generator=gen), -1)
            elif kind == "sparse":
                ids = (d[..., None] + 1187 * torch.arange(k, device=device)) % v   # distinct, the draft first
                q = SparseDraftProbs(ids, torch.softmax(torch.randn(bsz, gamma, k, device=device, generator=gen), -1))
            pos = torch.full((bsz,), 10 * step, device=device)
            kw = dict(draft_probs=q, num_draft_tokens=counts if step % 2 else None)
            want = a.verify(x, d, slots, pos, **kw)
            if out is None:
                out = VerifyOutput(*(t.clone() for t in dataclasses.astuple(want)))
            poison(out)
            eager_ok &= b.verify(x, d, slots, pos, out=out, **kw) is out and same(want, out)
    if device != "cuda":
        emit(what="verify_out_buffers", V=v, requests=bsz, gamma=gamma, steps=steps, eager_equal=bool(eager_ok),
             graph_equal=None, counts_equal=bool(torch.equal(a.table.counts, b.table.counts)))
        return
    torch.cuda.synchronize()
    x = (3 * torch.randn(rows, v, device=device, generator=gen)).to(torch.bfloat16)
    d = torch.randint(0, v, (bsz, gamma), device=device, generator=gen)
    pos = torch.zeros(bsz, dtype=torch.int64, device=device)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):     # records the launches: nothing runs, nothing is counted
        b.verify(x, d, slots, pos, num_draft_tokens=counts, out=out)
    graph_ok = True
    for step in range(steps):
        x.copy_((3 * torch.randn(rows, v, device=device, generator=gen)).to(torch.bfloat16))
        d.copy_(torch.randint(0, v, (bsz, gamma), device=device, generator=gen))
        pos.fill_(100 + step)
        poison(out)
        g.replay()
        graph_ok &= same(a.verify(x, d, slots, pos, num_draft_tokens=counts), out)
    torch.cuda.synchronize()
    emit(what="verify_out_buffers", V=v, requests=bsz, gamma=gamma, steps=steps, eager_equal=bool(eager_ok),
         graph_equal=bool(graph_ok), counts_equal=bool(torch.equal(a.table.counts, b.table.counts)))


def check_admission_async(v=151936):
    """add_request while the GPU is busy returns before that work ends (its rows go in as fills and
    copies from pinned memory, not copies from pageable memory, which wait), and what it wrote is
    right: the request's next token (penalty, bias, prompt) equals the reference's."""
    import time
    s = Sampler(v, 4, "cuda")
    s.add_request(1, SamplingParams(seed=1))     # a first admission and sample: allocations, compiles
    x = (3 * torch.randn(1, v, device="cuda")).to(torch.bfloat16)
    s.sample(x, [1], [0])
    a = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(12):                           # tens of milliseconds of queued work
        a = (a @ a) * 1e-3
    p = SamplingParams(temperature=0.8, top_k=50, repetition_penalty=1.3, logit_bias={5: 4.0, 9: -2.0}, seed=7)
    t1 = time.perf_counter()
    s.add_request(0, p, prompt_token_ids=list(range(100, 400)))
    admit = time.perf_counter() - t1
    torch.cuda.synchronize()
    busy = time.perf_counter() - t0
    out = s.sample(x, [0], [3])
    ref = reference.sample(x.cpu(), [s.table.host[0]], positions=[3], prompt_token_ids=[list(range(100, 400))])
    emit(what="admission_async", admit_ms=round(admit * 1e3, 3), gpu_busy_ms=round(busy * 1e3, 3),
         returned_before_the_gpu_work=bool(admit < 0.5 * busy), token=int(out.tokens[0]), reference=int(ref.tokens[0]),
         equal=bool(int(out.tokens[0]) == int(ref.tokens[0])))


def check_verify_warmup(v=151936, max_requests=2, gammas=(3,), drafts=("one_hot",)):
    """Sampler.warmup_verify, then real verifications of 1..max_requests requests: no compile after it,
    and the slots' counts untouched by it."""
    from sonicsampler.kernels.verify import verify_stage2
    s = Sampler(v, 8, "cuda")
    for i in range(8):
        s.add_request(i, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
    counts = s.table.counts.clone()
    variants = s.warmup_verify(max_requests, gammas, drafts=drafts)
    untouched = bool(torch.equal(s.table.counts, counts))
    before = compiled_variants(sample_stage1, verify_stage2)
    gen = torch.Generator(device="cuda").manual_seed(9)
    for gamma in gammas:
        for b in range(1, max_requests + 1):
            x = torch.randn(b * (gamma + 1), v, device="cuda", generator=gen).to(torch.bfloat16)
            d = torch.randint(0, v, (b, gamma), device="cuda", generator=gen)
            s.verify(x, d, torch.arange(b, device="cuda"), torch.zeros(b, dtype=torch.int64, device="cuda"))
    torch.cuda.synchronize()
    emit(what="verify_warmup", max_requests=max_requests, gammas=list(gammas), drafts=list(drafts),
         variants=variants, counts_untouched=untouched, before=before,
         after=compiled_variants(sample_stage1, verify_stage2))


def _verify_inputs(bsz, gamma, v, gen):
    """Target logits (bf16, on the GPU), a dense draft q resembling the target, and drafts drawn from q."""
    logits = (3 * torch.randn(bsz * (gamma + 1), v, generator=gen)).to(torch.bfloat16)
    rows = logits.float().view(bsz, gamma + 1, v)[:, :gamma]
    q = torch.softmax(rows + torch.randn(rows.shape, generator=gen), dim=-1)
    drafts = torch.multinomial(q.reshape(-1, v), 1, generator=gen).view(bsz, gamma)
    return logits, q, drafts


def check_verify(v, bsz, gamma=3):
    gen = torch.Generator().manual_seed(v + bsz + gamma)
    params = mixed_params(bsz, gen)
    s = Sampler(v, bsz, "cuda")
    for i, p in enumerate(params):
        s.add_request(i, p, prompt_token_ids=[1, 2, 3])
    logits, q, drafts = _verify_inputs(bsz, gamma, v, gen)
    positions = list(range(11, 11 + bsz))
    out = s.verify(logits.cuda(), drafts, list(range(bsz)), positions, draft_probs=q.cuda())
    ref = reference.verify(logits, drafts, params, positions=positions, draft_probs=q,
                           prompt_token_ids=[[1, 2, 3]] * bsz)
    _emit_verify("verify_tokens", out, ref, v, bsz, gamma)


def _emit_verify(what, out, ref, v, bsz, gamma, **extra):
    """Exact requests against the reference: tokens, accepted counts and top-n ids, request for request."""
    exact = out.exact.cpu()
    same = (out.tokens.cpu() == ref.tokens).all(dim=1) & (out.num_accepted.cpu() == ref.num_accepted)
    top_same = (out.top_token_ids.cpu() == ref.top_token_ids).flatten(1).all(dim=1)
    emit(what=what, V=v, requests=bsz, gamma=gamma, exact_requests=int(exact.sum()),
         equal=int((same & exact).sum()), mismatches=int((exact & ~same).sum()),
         top_ids_equal=int((top_same & exact).sum()), accepted=int(out.num_accepted.sum()),
         valid_equal=bool(torch.equal(out.valid.cpu(), ref.valid)), **extra)


def _eager_ms(call, reps=5):
    """Mean time of one eager call (CUDA events, after a warm call), in ms."""
    call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        call()
    end.record()
    torch.cuda.synchronize()
    return round(start.elapsed_time(end) / reps, 3)


LONG_SETS = [dict(top_p=0.9), dict(top_k=500), dict(min_p=0.2), dict(top_p=0.8, min_p=0.05),
             dict(top_k=600, top_p=0.9), dict(top_k=3000, min_p=0.1)]


def check_sample_long(v, dtype):
    """Rows whose sets lie far beyond the bound (flat rows; every kind of set in LONG_SETS), bf16 or
    fp32: the reference's tokens and top-n ids, every row exact; one eager call timed."""
    n = len(LONG_SETS)
    params = [SamplingParams(temperature=1.0, seed=70 + i, logprobs=5, logprobs_mode=("processed", "raw")[i % 2],
                             **LONG_SETS[i]) for i in range(n)]
    s = Sampler(v, n, "cuda")
    for i, p in enumerate(params):
        s.add_request(i, p)
    logits = (0.5 * torch.randn(n, v, generator=torch.Generator().manual_seed(v))).to(dtype)
    positions = list(range(9, 9 + n))
    out = s.sample(logits.cuda(), list(range(n)), positions)
    ref = reference.sample(logits, params, positions=positions)
    sizes = [int((p > 0).sum()) for p in reference.probs(logits, params)]
    emit(what="sample_long_sets", V=v, dtype=str(dtype), rows=n, exact_rows=int(out.exact.sum()),
         equal=int((out.tokens.cpu() == ref.tokens).sum()),
         top_ids_equal=int((out.top_token_ids.cpu() == ref.top_token_ids).all(dim=1).sum()), set_sizes=sizes,
         eager_ms=_eager_ms(lambda: s.sample(logits.cuda(), list(range(n)), positions)))


def check_graph_late_long(v=151936):
    """A graph captured while only bounded requests are admitted (as an engine captures at start-up),
    replayed after two requests were admitted: one whose nucleus exceeds the bound (its row must be
    exact), one with a repetition penalty and raw top-5 log-probabilities (the graph was planned
    without the launcher's raw top-k: stage 2's whole-row pass gives its raw top-n). The replay's and
    a later eager call's tokens and top-n ids equal to the reference's (the eager call's with the
    replay's tokens counted)."""
    s = Sampler(v, 3, "cuda")
    s.add_request(0, SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=1, logprobs=5))
    gen = torch.Generator().manual_seed(5)
    logits = 2 * torch.randn(3, v, generator=gen)
    logits[1] *= 0.15                                     # flat: a nucleus of thousands of tokens
    logits = logits.to(torch.bfloat16)
    prompts = [[], [], logits[2].float().topk(4).indices.tolist()]   # the penalty reorders row 2's top
    x = logits.cuda()
    slots_d, pos_d = torch.arange(3, device="cuda"), torch.tensor([3, 4, 5], device="cuda")
    s.sample(x, slots_d, pos_d)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gout = s.sample(x, slots_d, pos_d)
    s.add_request(1, SamplingParams(temperature=1.5, top_p=0.99, seed=2))
    s.add_request(2, SamplingParams(temperature=0.8, repetition_penalty=3.0, seed=3, logprobs=5),
                  prompt_token_ids=prompts[2])
    g.replay()
    torch.cuda.synchronize()
    eager = s.sample(x, slots_d, pos_d)
    params = [s.table.host[i] for i in range(3)]
    ref = reference.sample(logits, params, positions=[3, 4, 5], prompt_token_ids=prompts)
    # The eager call comes after the replay counted its tokens: row 2's penalty then covers its token.
    ref_after = reference.sample(logits, params, positions=[3, 4, 5], prompt_token_ids=prompts,
                                 output_token_ids=[[t] for t in gout.tokens.tolist()])
    emit(what="graph_captured_before_a_long_request", exact=gout.exact.tolist(),
         eager_equals_reference_after_counts=bool(torch.equal(eager.tokens.cpu(), ref_after.tokens)),
         equals_reference=bool(torch.equal(gout.tokens.cpu(), ref.tokens)),
         top_ids_equal=[bool(torch.equal(gout.top_token_ids[i].cpu(), ref.top_token_ids[i])) for i in (0, 2)],
         eager_top_ids_equal=[bool(torch.equal(eager.top_token_ids[i].cpu(), ref_after.top_token_ids[i]))
                              for i in (0, 2)])


def check_long_shared(v=151936, n=16, dtype=torch.bfloat16, mode="processed"):
    """Batches where one row in 16 has a long set (flat rows, LONG_SETS in turn) among standard rows,
    so that stage 2's programs share its passes (kernels/shared_sets.py): every row's token equal to
    the reference's; each long row's token and processed log-probability bitwise equal to the same
    row sampled alone (a 1-row batch, whose passes helper-only programs share), so who ran which chunk
    does not matter; graph replay equal to eager, for the batch and for the lone rows (three replays
    each: the helpers' counters reset); one eager call timed. The Sampler's long_chunks, long_claim and
    long_fill from CHECK_LONG_CHUNKS, CHECK_LONG_CLAIM and CHECK_LONG_FILL (0 / 1) if set, its warps from
    CHECK_WARPS (the defaults otherwise). mode: the
    long rows' log-probabilities; "raw" lets them draw in their first search pass (shared_sets
    _early_holds), "processed" needs the final pass's normalizer. Reports each long row's passes (the
    board's done counters after the eager call)."""
    opts = {k: int(os.environ[e]) for k, e in (("long_chunks", "CHECK_LONG_CHUNKS"), ("long_claim", "CHECK_LONG_CLAIM"))
            if os.environ.get(e)}
    if os.environ.get("CHECK_LONG_FILL"):
        opts["long_fill"] = os.environ["CHECK_LONG_FILL"] == "1"
    if os.environ.get("CHECK_WARPS"):     # e.g. "4,4": stage 2 with less dynamic shared memory than 48 KiB
        opts["warps"] = tuple(int(w) for w in os.environ["CHECK_WARPS"].split(","))
    params = [SamplingParams(temperature=1.5, seed=90 + i, logprobs=5, logprobs_mode=mode,
                             **LONG_SETS[(i // 16) % len(LONG_SETS)]) if i % 16 == 0
              else SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=90 + i) for i in range(n)]
    gen = torch.Generator().manual_seed(v + n)
    logits = torch.randn(n, v, generator=gen)
    logits[::16] *= 0.3                                   # flat: thousands of tokens in each long set
    logits = logits.to(dtype)
    positions = list(range(5, 5 + n))
    s = Sampler(v, n, "cuda", **opts)
    for i, p in enumerate(params):
        s.add_request(i, p)
    x = logits.cuda()
    out = s.sample(x, list(range(n)), positions)
    board = next(b for k, b in s._scratch._bufs.items() if k[0] == "board").view(-1, shared_sets.BOARD_W.value)
    passes = [int((board[r, shared_sets.DONE_AT.value:] > 0).sum()) for r in range(0, n, 16)]
    ref = reference.sample(logits, params, positions=positions)
    alone = alone_graph = 0
    for i in range(0, n, 16):
        a = Sampler(v, 1, "cuda", **opts)
        a.add_request(0, params[i])
        o = a.sample(x[i:i + 1], [0], [positions[i]])
        alone += int(torch.equal(o.tokens, out.tokens[i:i + 1]) and torch.equal(o.logprob, out.logprob[i:i + 1]))
        s0, p0 = torch.zeros(1, dtype=torch.int64, device="cuda"), torch.tensor([positions[i]], device="cuda")
        g1 = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g1):
            go = a.sample(x[i:i + 1], s0, p0)
        for _ in range(3):
            g1.replay()
            torch.cuda.synchronize()
            alone_graph += int(torch.equal(go.tokens, o.tokens) and torch.equal(go.logprob, o.logprob))
    slots_d, pos_d = torch.arange(n, device="cuda"), torch.tensor(positions, device="cuda")
    eager = s.sample(x, slots_d, pos_d)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gout = s.sample(x, slots_d, pos_d)
    g.replay()
    torch.cuda.synchronize()
    graph_ok = (torch.equal(gout.tokens, eager.tokens)
                and torch.equal(gout.logprob.nan_to_num(), eager.logprob.nan_to_num()))
    long_rows = list(range(0, n, 16))
    chunks = s._chunks(n, True, x.device)
    emit(what="sample_long_shared", V=v, dtype=str(dtype), mode=mode, rows=n, long_chunks=s.long_chunks,
         long_claim=s.long_claim, long_fill=s.long_fill, chunks=chunks,
         helpers=s._helper_programs(n, chunks, True, x.device), long_rows=len(long_rows), passes=passes,
         exact_rows=int(out.exact.sum()), equal=int((out.tokens.cpu() == ref.tokens).sum()),
         long_logprob_max_err=float((out.logprob.cpu()[long_rows] - ref.logprob[long_rows]).abs().max()),
         long_equal_alone=alone, alone_graph_replays_equal=alone_graph, graph_equals_eager=bool(graph_ok),
         set_sizes=[int((p > 0).sum()) for p in reference.probs(logits[long_rows], [params[i] for i in long_rows])],
         eager_ms=_eager_ms(lambda: s.sample(x, slots_d, pos_d)))


NARROW_SETS = [dict(top_p=0.9), dict(top_k=600, top_p=0.9), dict(top_p=0.8, min_p=0.05), dict(top_p=0.99)]


def check_narrow_cuts(v=151936, dtype=torch.bfloat16):
    """Long top-p cuts on rows of values around 10 (keys sparse there, unlike flat rows around 0), whose
    searches start from the key range their candidates bound (long_rows.nucleus_start): in the sampler,
    one such row in 16 among standard rows (NARROW_SETS in turn), against the reference, with the passes
    each long row took (its board's done counters; 5 for a full 16-bit search and the draw, 9 after a
    top-k above the bound); in verification (γ = 1), every request such a row, against the reference."""
    n = 16 * len(NARROW_SETS)
    params = [SamplingParams(temperature=1.0, seed=110 + i, logprobs=3, **NARROW_SETS[i // 16]) if i % 16 == 0
              else SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=110 + i) for i in range(n)]
    gen = torch.Generator().manual_seed(v + 3)
    logits = (10 + 0.5 * torch.randn(n, v, generator=gen)).to(dtype)
    s = Sampler(v, n, "cuda")
    for i, p in enumerate(params):
        s.add_request(i, p)
    positions = list(range(7, 7 + n))
    out = s.sample(logits.cuda(), list(range(n)), positions)
    ref = reference.sample(logits, params, positions=positions)
    torch.cuda.synchronize()
    board = s._scratch.get("board", n * shared_sets.BOARD_W.value, torch.int32, s.table.device)
    done = board.view(n, -1)[:, shared_sets.DONE_AT.value:].cpu()
    long_rows = list(range(0, n, 16))
    emit(what="sample_narrow_cuts", V=v, dtype=str(dtype), rows=n, exact_rows=int(out.exact.sum()),
         equal=int((out.tokens.cpu() == ref.tokens).sum()),
         long_logprob_max_err=float((out.logprob.cpu()[long_rows] - ref.logprob[long_rows]).abs().max()),
         passes=[int((done[r] > 0).sum()) for r in long_rows],
         set_sizes=[int((p > 0).sum()) for p in reference.probs(logits[long_rows], [params[i] for i in long_rows])])
    bsz, gamma = len(NARROW_SETS), 1
    vp = [SamplingParams(temperature=1.0, seed=130 + b, logprobs=3, **NARROW_SETS[b]) for b in range(bsz)]
    sv = Sampler(v, bsz, "cuda")
    for i, p in enumerate(vp):
        sv.add_request(i, p)
    x = (10 + 0.5 * torch.randn(bsz * (gamma + 1), v, generator=gen)).to(dtype)
    drafts = torch.randint(0, v, (bsz, gamma), generator=gen)
    vout = sv.verify(x.cuda(), drafts, list(range(bsz)), list(range(bsz)))
    vref = reference.verify(x, drafts, vp, positions=list(range(bsz)))
    _emit_verify("verify_narrow_cuts", vout, vref, v, bsz, gamma, dtype=str(dtype))


def check_verify_long(v=151936, bsz=4, gamma=3, dtype=torch.bfloat16):
    """Requests whose target sets lie far beyond the bound (flat rows: nuclei, top-k 500, min-p alone
    of thousands of tokens) take the exact passes over the row: the reference's tokens and top-n,
    flagged exact. Times one eager call too (CUDA events, mean of 5 after a warm call)."""
    gen = torch.Generator().manual_seed(v + 17)
    params = [SamplingParams(temperature=1.0, seed=50 + b, logprobs=5, logprobs_mode=("processed", "raw")[b % 2],
                             **LONG_SETS[b % len(LONG_SETS)]) for b in range(bsz)]
    s = Sampler(v, bsz, "cuda")
    for i, p in enumerate(params):
        s.add_request(i, p)
    logits = (0.5 * torch.randn(bsz * (gamma + 1), v, generator=gen))
    logits.view(bsz, gamma + 1, v)[:2, :, 7] += 9.0             # requests 0, 1: a likely token, drafted below
    logits = logits.to(dtype)
    rows = logits.float().view(bsz, gamma + 1, v)[:, :gamma]
    q = torch.softmax(rows + torch.randn(rows.shape, generator=gen), dim=-1)
    drafts = torch.multinomial(q.reshape(-1, v), 1, generator=gen).view(bsz, gamma)
    drafts[:2] = 7
    positions = list(range(3, 3 + bsz))
    args = (logits.cuda(), drafts, list(range(bsz)), positions)
    out = s.verify(*args, draft_probs=q.cuda())
    ref = reference.verify(logits, drafts, params, positions=positions, draft_probs=q)
    sizes = [int((p > 0).sum()) for p in reference.probs(logits[::gamma + 1], params)]
    _emit_verify("verify_long_sets", out, ref, v, bsz, gamma, dtype=str(dtype), first_row_set_sizes=sizes,
                 eager_ms=_eager_ms(lambda: s.verify(*args, draft_probs=q.cuda())))


def check_verify_graph(v=151936, bsz=16, gamma=3):
    gen = torch.Generator().manual_seed(5)
    s = Sampler(v, bsz, "cuda")
    for i in range(bsz):
        s.add_request(i, SamplingParams(temperature=0.0) if i % 4 == 0 else
                      SamplingParams(temperature=0.7, top_k=128, top_p=0.9, seed=i))
    slots = torch.arange(bsz, device="cuda")
    pos = torch.zeros(bsz, dtype=torch.int64, device="cuda")
    logits, q, drafts = (t.cuda() for t in _verify_inputs(bsz, gamma, v, gen))
    s.verify(logits, drafts, slots, pos, draft_probs=q)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = s.verify(logits, drafts, slots, pos, draft_probs=q)
    ok, accepted = True, 0
    for step in range(4):
        for buf, new in zip((logits, q, drafts), _verify_inputs(bsz, gamma, v, gen)):
            buf.copy_(new)
        pos.fill_(step + 1)
        g.replay()
        eager = s.verify(logits, drafts, slots, pos, draft_probs=q)
        ok &= all(torch.equal(a, b) for a, b in ((out.tokens, eager.tokens), (out.num_emitted, eager.num_emitted),
                                                 (out.num_accepted, eager.num_accepted)))
        accepted += int(eager.num_accepted.sum())
    emit(what="verify_graph_replay_equals_eager", ok=bool(ok), replays=4, accepted=accepted)


if __name__ == "__main__":
    parts = sys.argv[1:] or ["tokens", "graph"]   # e.g. `check_sampler_gpu.py graph`
    log.emit_env()
    if "tokens" in parts:
        for v, n in ((32000, 16), (151936, 8), (262144, 4)):
            for strategy in os.environ.get("CHECK_STRATEGIES", "bitonic,rank").split(","):
                check_tokens(v, n, strategy)
    if "tokens_small" in parts:   # one vocabulary only (V = 32000, 16 mixed rows)
        for strategy in os.environ.get("CHECK_STRATEGIES", "bitonic,rank").split(","):
            check_tokens(32000, 16, strategy)
    if "tokens_32k" in parts:   # the table's V = 32768 entries (512-token tiles emitting 8, run 249), row buckets
        for v, n in ((32768, 1), (32000, 4), (32768, 64), (32000, 128), (32768, 300)):   # mixed rows, bad ones too
            check_tokens(v, n)
        for v, bsz in ((32768, 16), (32000, 64)):   # verification: 64 and 256 target rows
            check_verify(v, bsz, 3)
    if "admission_async" in parts:
        check_admission_async()
    if "greedy" in parts:       # greedy rows, most on the scalar argmax path
        for v, n in ((151936, 32), (262144, 8)):
            check_greedy(v, n)
    if "greedy_one_row" in parts:   # the 1-row configuration (rank strategy, 1-D keys of 4096-token tiles)
        for v in (151936, 262144):
            for first in (0, 2):    # a plain greedy row; one with penalties and bias
                check_greedy(v, 1, first=first)
                check_greedy(v, 1, torch.float16, first=first)
    if "greedy_dtypes" in parts:
        check_greedy(151936, 8, torch.float32)
        check_greedy(32000, 16, torch.float16)
    if "raw_keys" in parts:     # rows ranked on raw keys at each row configuration (CHECK_RAW: "V:rows ...")
        shapes = os.environ.get("CHECK_RAW", "151936:1 151936:32 151936:128 262144:8 32000:16").split()
        for v, n in (tuple(map(int, x.split(":"))) for x in shapes):
            for dtype in (torch.bfloat16, torch.float16):
                for ties in (False, True):
                    check_tokens(v, n, params=raw_ordered_params(n), what="raw_keys_tokens", dtype=dtype, ties=ties)
    if "bias_edges" in parts:   # logit biases on tile edges, at each row configuration
        for p in bias_edge_params(12, 151936):   # 1 row (rank strategy, tiles of 4096): one batch per edge
            check_tokens(151936, 1, params=[p], what="bias_edges")
        for n in (32, 128):
            check_tokens(151936, n, params=bias_edge_params(n, 151936), what="bias_edges")
    if "free_rows" in parts:    # rows without the sum of exponentials (NORMALIZER_FREE), NaN / +inf rows among them
        for first in range(4):    # 1 row (the rank strategy): clean, NaN, negative NaN, +inf
            check_free_rows(151936, 1, first=first)
        for v, n in ((151936, 40), (151936, 128), (262144, 20)):
            check_free_rows(v, n)
        check_free_rows(151936, 20, torch.float32)
    if "untruncated" in parts:
        for v, n in ((151936, 16), (262144, 8)):
            check_tokens(v, n, params=untruncated_params(n), what="untruncated_tokens")
    if "graph" in parts:
        check_graph()
    if "verify_warmup" in parts:  # no compile after Sampler.warmup_verify
        check_verify_warmup()
    if "out_buffers" in parts:    # sample(out=...): an engine's buffers, eager and in a graph
        check_out_buffers()
    if "verify_out_buffers" in parts:   # verify(out=...), eager and in a graph
        check_verify_out_buffers()
    if "penalty_steps" in parts:  # penalised batches over several steps (counts read where the output mask says)
        for n in (32, 128):
            check_penalty_steps(151936, n)
    if "verify" in parts:
        for v, bsz, gamma in ((32000, 16, 3), (151936, 8, 3), (151936, 4, 7), (262144, 3, 1)):
            check_verify(v, bsz, gamma)
    if "verify" in parts or "verify_graph" in parts:
        check_verify_graph()
    if "verify_long" in parts:
        check_verify_long(151936, 4, 3)
        check_verify_long(32000, 8, 1)
    if "graph_late_long" in parts:
        check_graph_late_long()
    if "long_shared" in parts:  # long rows among standard ones: their passes shared by the batch
        for n in (16, 128):
            check_long_shared(151936, n)
    if "narrow_cuts" in parts:  # long top-p cuts whose searches start narrowed
        for dtype in (torch.bfloat16, torch.float32):
            check_narrow_cuts(151936, dtype)
    if "long_shared_raw" in parts:  # the same with raw log-probabilities: long rows may draw early
        for n in (16, 128):
            check_long_shared(151936, n, mode="raw")
    if "long_shared_mid" in parts:   # batches between long_chunks rows and the SMs' count (long_fill's)
        for n in (32, 64):
            check_long_shared(151936, n)
    if "long_shared_262k" in parts:   # the same at the largest vocabulary the issues time
        for n in (16, 64):
            check_long_shared(262144, n)
    if "long_shared_fp32" in parts:
        check_long_shared(151936, 32, torch.float32)
    if "long" in parts:         # every kind of set beyond the bound, bf16 and fp32
        for dtype in (torch.bfloat16, torch.float32):
            check_sample_long(151936, dtype)
            check_verify_long(151936, 6, 1, dtype)
