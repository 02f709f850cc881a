"""The fused sampler (kernels/sample.py) against reference.sample, under the interpreter.

Rows the kernel flags exact must match the reference token for token (a mismatch is tolerated only
where the two tokens' perturbed scores are within float rounding: the kernel's Gumbel noise takes its
log in the interpreter's numpy, the reference in torch). The flag itself must be true exactly when the
reference's survivor set fits the candidate bound, except for the one documented conservative case
(min-p not cutting inside the bound, or a top-k above it, combined with top-p). Inexact rows report the mass outside
the candidates, checked against the reference's distribution.
"""

import dataclasses

import pytest
import torch
import triton
import triton.language as tl

from sonicsampler import SamplingInputError, SamplingParams, reference, rng
from sonicsampler import indicators as bits
from sonicsampler.kernels import sample as sample_kernels, shared_sets
from sonicsampler.sampler import Sampler, sample

from draw_checks import assert_draws_follow
from slot_checks import assert_output_marked
from tolerances import assert_close

pytestmark = pytest.mark.interpreter

V = 600
BOUND = 32
BLOCK = 256


def random_params(gen: torch.Generator, i: int) -> SamplingParams:
    def pick(options):
        return options[int(torch.randint(len(options), (1,), generator=gen))]

    return SamplingParams(
        temperature=pick([0.0, 0.5, 0.7, 1.0, 1.3]),
        top_k=pick([0, 0, 1, 5, 20]),
        top_p=pick([1.0, 1.0, 0.5, 0.9]),
        min_p=pick([0.0, 0.0, 0.05, 0.3]),
        repetition_penalty=pick([1.0, 1.0, 1.2, 0.8]),
        frequency_penalty=pick([0.0, 0.0, 0.5, -0.3]),
        presence_penalty=pick([0.0, 0.0, 0.7]),
        logit_bias=pick([None, None, {3: 4.0, 11: float("-inf"), 500: -2.5}]),
        seed=pick([i, 2**63 + 12345 * i, 2**64 - 1 - i]),
        logprobs=pick([None, 0, 3, 5]),
        logprobs_mode=pick(["raw", "processed"]),
    )


def reference_support(logits, params, positions, prompts, outputs, mask=None):
    return reference.probs(logits, params, positions=positions, prompt_token_ids=prompts,
                           output_token_ids=outputs, grammar_bitmask=mask) > 0


def check_against_reference(logits, params, positions, prompts, outputs, out, mask=None):
    """Every valid row exact (sets beyond the bound take the exact passes over the row,
    kernels/long_rows.py; a greedy row for its processed log-probabilities' normalizer) and equal to
    the reference: tokens (near-ties of perturbed scores aside), log-probabilities and top-n."""
    ref = reference.sample(logits, params, positions=positions, prompt_token_ids=prompts,
                           output_token_ids=outputs, grammar_bitmask=mask)
    assert torch.equal(out.valid, ref.valid)
    n_exact = n_equal = 0
    for i, p in enumerate(params):
        if not bool(ref.valid[i]):
            assert int(out.tokens[i]) == -1
            continue
        assert bool(out.exact[i]) and float(out.dropped_mass[i]) == 0.0, (i, p)
        n_exact += 1
        if int(out.tokens[i]) == int(ref.tokens[i]):
            n_equal += 1
        else:   # must be a near-tie of perturbed scores
            row = reference._process_row(logits[i], p, prompts[i], outputs[i], None if mask is None else mask[i])
            a, b = int(out.tokens[i]), int(ref.tokens[i])
            g = rng.gumbel(p.seed_u64, positions[i], 0, torch.tensor([a, b]))
            sa, sb = float(row.x[a] + g[0]), float(row.x[b] + g[1])
            assert abs(sa - sb) <= 1e-5 * max(1.0, abs(sb)), (i, a, b, sa, sb)
        if p.logprobs is not None:
            assert_close(out.logprob[i], ref.logprob[i])
            assert torch.equal(out.top_token_ids[i], ref.top_token_ids[i])
            assert_close(out.top_logprobs[i], ref.top_logprobs[i])
    return n_exact, n_equal


# emit 4: tiles emit 4 keys, stage 2 refills saturated ones. Every stage-1 strategy (sorting networks,
# ranks, rounds of maxima) must give the same tile lists.
@pytest.mark.parametrize("emit,strategy", [(BOUND, "bitonic"), (4, "bitonic"), (BOUND, "rank"), (4, "rank"),
                                           (BOUND, "extract"), (4, "extract")])
def test_mixed_batches_match_the_reference(emit, strategy):
    gen = torch.Generator().manual_seed(1)
    n = 12
    total_exact = total_equal = 0
    for trial in range(3):
        logits = (2.0 * torch.randn(n, V, generator=gen)).to(torch.bfloat16)
        params = [random_params(gen, 10 * trial + i) for i in range(n)]
        prompts = [torch.randint(V, (5,), generator=gen).tolist() for _ in range(n)]
        outputs = [torch.randint(V, (7,), generator=gen).tolist() for _ in range(n)]
        positions = [int(x) for x in torch.randint(0, 2**40, (n,), generator=gen)]
        out = sample(logits, params, positions=positions, prompt_token_ids=prompts, output_token_ids=outputs,
                     bound=BOUND, block=BLOCK, emit=emit, strategy=strategy)
        e, q = check_against_reference(logits, params, positions, prompts, outputs, out)
        total_exact += e
        total_equal += q
    assert total_exact >= 12
    assert total_equal >= total_exact - 1      # near-ties: at most one in the whole test


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_each_processing_step_alone(dtype):
    gen = torch.Generator().manual_seed(2)
    steps = [
        SamplingParams(temperature=0.0),
        SamplingParams(temperature=0.6, top_k=7, seed=1),
        SamplingParams(top_p=0.6, seed=2, logprobs=4, logprobs_mode="processed"),
        SamplingParams(min_p=0.2, seed=3, logprobs=2),
        SamplingParams(repetition_penalty=1.5, top_k=9, seed=4),
        SamplingParams(frequency_penalty=1.0, top_k=9, seed=5),
        SamplingParams(presence_penalty=1.5, top_k=9, seed=6),
        SamplingParams(logit_bias={2: 9.0, 5: float("-inf")}, top_k=3, seed=7, logprobs=3),
        SamplingParams(temperature=0.0, repetition_penalty=2.0, logprobs=5),
    ]
    n = len(steps)
    logits = (3.0 * torch.randn(n, V, generator=gen)).to(dtype)   # peaked enough for every set to fit the bound
    prompts = [[0, 1, 2, 3]] * n
    outputs = [[4, 4, 5, 6]] * n
    positions = list(range(100, 100 + n))
    out = sample(logits, steps, positions=positions, prompt_token_ids=prompts, output_token_ids=outputs,
                 bound=BOUND, block=BLOCK)
    assert bool(out.exact.all())
    e, q = check_against_reference(logits, steps, positions, prompts, outputs, out)
    assert e == n and q == n


def test_bounded_approximation_reports_dropped_mass():
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(3, V, generator=gen).to(torch.bfloat16)
    params = [SamplingParams(seed=1), SamplingParams(top_p=0.999, seed=2), SamplingParams(temperature=3.0, seed=3)]
    out = sample(logits, params, positions=[0, 1, 2], bound=BOUND, block=BLOCK, allow_bounded_approximation=True)
    assert not bool(out.exact.any())
    for i, p in enumerate(params):
        x = logits[i].float() / (p.temperature if p.temperature != 1 else 1.0)
        probs = torch.softmax(x.double(), 0)
        order = torch.sort(x.to(torch.bfloat16).float(), descending=True, stable=True).indices
        expected = 1.0 - float(probs[order[:BOUND]].sum())
        assert abs(float(out.dropped_mass[i]) - expected) < 1e-4, (i, float(out.dropped_mass[i]), expected)
        assert int(out.tokens[i]) in set(order[:BOUND].tolist())


def test_untruncated_rows_are_exact_draws_from_the_full_softmax():
    """Near-uniform rows over 4096 tokens with a bound of 32: the bounded approximation can only ever
    return one of the best 32 tokens (it drops ~99% of the mass); the exact path matches the reference
    token for token and lands outside the best 32 almost always."""
    v = 4096
    gen = torch.Generator().manual_seed(6)
    n = 24
    logits = (0.01 * torch.randn(1, v, generator=gen)).repeat(n, 1).to(torch.bfloat16)
    params = [SamplingParams(seed=11, logprobs=1)] * n
    positions = list(range(1000, 1000 + n))
    exact = sample(logits, params, positions=positions, bound=BOUND, block=1024)
    bounded = sample(logits, params, positions=positions, bound=BOUND, block=1024, allow_bounded_approximation=True)
    ref = reference.sample(logits, [params[0].resolved()] * n, positions=positions)
    assert bool(exact.exact.all()) and torch.equal(exact.tokens, ref.tokens)
    assert_close(exact.logprob, ref.logprob)
    best = set(torch.sort(logits[0].float(), descending=True, stable=True).indices[:BOUND].tolist())
    outside_exact = sum(int(t) not in best for t in exact.tokens)
    outside_bounded = sum(int(t) not in best for t in bounded.tokens)
    assert outside_bounded == 0 and not bool(bounded.exact.any()) and float(bounded.dropped_mass.min()) > 0.98
    assert outside_exact >= n - 3, (outside_exact, outside_bounded)


def sample_over_poisoned_candidates(s, logits, positions, mask, skipping):
    """Samples rows 0..n-1 (slots 0..n-1) twice: the first call shapes the candidate scratch, which is then
    poisoned, and the slots' counts zeroed; the second call's output is returned after checking that
    exactly the rows in `skipping` left their candidate lists poisoned (stage 1 emitted none for them)."""
    n = logits.shape[0]
    s.sample(logits, list(range(n)), positions, grammar_bitmask=mask)
    cand = s._plans[next(iter(s._plans))]["scratch"]["cand"]
    poison = 0x5A5A5A5A5A5A5A5A
    cand.fill_(poison)
    for i in range(n):
        s.table.counts[i].zero_()
    out = s.sample(logits, list(range(n)), positions, grammar_bitmask=mask)
    lists = cand.view(n, -1)
    for i in range(n):
        assert bool((lists[i] == poison).all()) == (i in skipping), i
    return out


def test_untruncated_rows_without_top_logprobs_build_no_candidates():
    """Untruncated rows that ask for no top-n log-probabilities (logprobs None or 0) skip the candidates
    (kernels/sample.py, without_candidates): stage 1 writes nothing to their candidate lists (poisoned
    here before the call, and still poisoned after) while the other rows of the batch write theirs, and
    every row still equals the reference: tokens, the token's raw or processed log-probability,
    validity (a NaN row and a fully masked row among the skipping ones), counts."""
    gen = torch.Generator().manual_seed(9)
    n = 8
    params = [SamplingParams(seed=1), SamplingParams(seed=2, logprobs=0),
              SamplingParams(temperature=0.8, seed=3, logprobs=0, logprobs_mode="processed"),
              SamplingParams(seed=4, logprobs=2),                      # top-n: keeps its candidates
              SamplingParams(temperature=0.7, top_k=5, seed=5),        # truncated: keeps them
              SamplingParams(seed=6, repetition_penalty=1.3, logprobs=0),
              SamplingParams(seed=7), SamplingParams(seed=8)]
    skipping = [0, 1, 2, 5, 6, 7]
    s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK)
    prompts = [list(range(i, i + 30)) for i in range(n)]
    for i, p in enumerate(params):
        s.add_request(i, p, prompts[i])
    logits = (2 * torch.randn(n, V, generator=gen)).to(torch.bfloat16)
    logits[6, 17] = float("nan")                                  # row 6: invalid
    mask = torch.full((n, -(-V // 32)), -1, dtype=torch.int32)
    mask[7] = 0                                                   # row 7: nothing allowed
    positions = [3, 4, 5, 6, 7, 8, 9, 10]
    out = sample_over_poisoned_candidates(s, logits, positions, mask, skipping)
    check_against_reference(logits, params, positions, prompts, [()] * n, out, mask)
    assert out.valid.tolist() == [True] * 6 + [False, False]
    assert int(s.table.counts[6].sum()) == 0 and int(s.table.counts[7].sum()) == 0
    assert [int(s.table.counts[i].sum()) for i in range(6)] == [1] * 6


@pytest.mark.parametrize("emit,strategy,dtype", [(4, "extract", torch.bfloat16), (BOUND, "extract", torch.bfloat16),
                                                 (BOUND, "rank", torch.float16), (4, "extract", torch.float32)])
def test_greedy_rows_take_the_scalar_argmax_path(emit, strategy, dtype):
    """Greedy rows whose outputs need only the argmax (no top-n log-probabilities, no processed
    log-probability over a truncated set) build no candidates (kernels/sample.py, greedy_alone): stage 1
    writes nothing to their candidate lists (poisoned before the call, still poisoned after) and each
    tile reports its argmax instead, while the other rows write theirs. Every row equals the reference,
    token for token: ties across tiles and inside one go to the lower index, a bias that rounds away in
    the input dtype ranks on the rounded value, not on the fp32 one; validity (a NaN row and a fully
    masked row among the skipping ones), log-probabilities and counts."""
    gen = torch.Generator().manual_seed(12)
    n = 11
    params = [SamplingParams(temperature=0.0),
              SamplingParams(temperature=0.0, logprobs=0),
              SamplingParams(temperature=0.0, logprobs=0, logprobs_mode="processed"),
              SamplingParams(temperature=0.0, top_k=5, logprobs=0, logprobs_mode="processed"),  # keeps them
              SamplingParams(temperature=0.0, logprobs=2),                                      # top-n: keeps
              SamplingParams(temperature=0.0, repetition_penalty=1.3, frequency_penalty=0.5, logprobs=0),
              SamplingParams(temperature=0.0, top_p=0.5, min_p=0.1, logit_bias={450: 0.002}),
              SamplingParams(temperature=0.0),
              SamplingParams(temperature=0.0),
              SamplingParams(temperature=0.7, top_k=5, seed=5),                                 # keeps them
              SamplingParams(seed=11)]        # untruncated: the same per-tile slots, its Gumbel-max there
    skipping = [0, 1, 2, 5, 6, 7, 8, 10]
    s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK, emit=emit, strategy=strategy)
    prompts = [list(range(i, i + 30)) for i in range(n)]
    for i, p in enumerate(params):
        s.add_request(i, p, prompts[i])
    logits = (2 * torch.randn(n, V, generator=gen)).to(dtype)
    logits[0, [300, 310, 520]] = 20.0          # the row's maximum three times, in two tiles: token 300
    logits[1, [46, 44, 599]] = 20.0            # twice in one group of 8 and in the last tile: token 44
    logits[6, 440] = 10.0
    logits[6, 450] = 10.0                      # + 0.002 of bias: 10.002 rounds back to 10 in 16 bits
    logits[7, 17] = float("nan")               # row 7: invalid
    mask = torch.full((n, -(-V // 32)), -1, dtype=torch.int32)
    mask[8] = 0                                # row 8: nothing allowed
    mask[2, 0] = 0                             # row 2: tokens 0..31 not allowed
    logits[2, 5] = 30.0
    positions = list(range(3, 3 + n))
    out = sample_over_poisoned_candidates(s, logits, positions, mask, skipping)
    resolved = [p.resolved() for p in params]
    check_against_reference(logits, resolved, positions, prompts, [()] * n, out, mask)
    ref = reference.sample(logits, resolved, positions=positions, prompt_token_ids=prompts, grammar_bitmask=mask)
    assert out.tokens[:9].tolist() == ref.tokens[:9].tolist()
    assert out.tokens[[0, 1, 6]].tolist() == ([300, 44, 440] if dtype != torch.float32 else [300, 44, 450])
    assert int(out.tokens[2]) != 5
    assert out.valid.tolist() == [True] * 7 + [False, False, True, True]
    assert [int(s.table.counts[i].sum()) for i in range(n)] == [1] * 7 + [0, 0, 1, 1]


def test_fp16_greedy_row_whose_ranks_all_round_to_minus_inf_is_valid():
    """An fp16 greedy row whose processed values are all finite but below -65504 (a repetition penalty
    on logits near -40000) ranks every token at -inf, as the reference does: it is valid and its token
    is the lowest selectable index (here 320, in the second tile: the grammar mask forbids 0..319), through
    the scalar argmax path and stage 2's walk over the row. (Rows that keep candidates have no finite
    ranking key there: a known gap, docs/ARCHITECTURE.md.)"""
    s = Sampler(V, 1, "cpu", bound=BOUND, block=BLOCK)
    p = SamplingParams(temperature=0.0, repetition_penalty=2.0, logprobs=0)
    s.add_request(0, p, list(range(V)))
    logits = torch.full((1, V), -40000.0, dtype=torch.float16)
    logits[0, 100] = -39000.0
    mask = torch.full((1, -(-V // 32)), -1, dtype=torch.int32)
    mask[0, :10] = 0
    out = s.sample(logits, [0], [0], grammar_bitmask=mask)
    ref = reference.sample(logits, [p], positions=[0], prompt_token_ids=[list(range(V))], grammar_bitmask=mask)
    assert bool(ref.valid[0]) and bool(out.valid[0])
    assert int(out.tokens[0]) == int(ref.tokens[0]) == 320
    assert_close(out.logprob, ref.logprob)


def test_greedy_and_stochastic_rows_mix_and_counts_update():
    gen = torch.Generator().manual_seed(4)
    s = Sampler(V, 8, "cpu", bound=BOUND, block=BLOCK)
    s.add_request(5, SamplingParams(temperature=0.0, frequency_penalty=2.0))
    s.add_request(2, SamplingParams(top_k=4, seed=9))
    logits = torch.randn(2, V, generator=gen).to(torch.bfloat16)
    logits[0, 17] = 50.0
    out1 = s.sample(logits, [5, 2], [0, 0])
    assert int(out1.tokens[0]) == 17
    assert int(s.table.counts[5, 17]) == 1 and int(s.table.counts[2, int(out1.tokens[1])]) == 1
    assert int(s.table.counts.sum()) == 2
    # next step: the frequency penalty now sees token 17 once (50 - 2 = 48 still wins); counts grow
    out2 = s.sample(logits, [5, 2], [1, 1])
    assert int(out2.tokens[0]) == 17 and int(s.table.counts[5, 17]) == 2


def test_penalties_see_the_tokens_counted_at_earlier_steps():
    """Five steps of one batch, each against the reference given the tokens emitted so far: the
    penalties of every step see what the kernels counted at the steps before. Stage 1's grouped tile
    (extract) reads a count only where the slot's output mask marks its word, so a token counted but
    not marked (stage 2 counting without marking) would be skipped from the second step on. (1-D
    tiles read dense counts: test_greedy_and_stochastic_rows_mix_and_counts_update.)"""
    gen = torch.Generator().manual_seed(21)
    params = [SamplingParams(temperature=0.0, frequency_penalty=2.0, logprobs=2, logprobs_mode="processed"),
              SamplingParams(temperature=0.0, presence_penalty=2.0),
              SamplingParams(temperature=0.0, repetition_penalty=4.0),
              SamplingParams(top_k=3, seed=4, frequency_penalty=2.0, presence_penalty=1.0, logprobs=2,
                             logprobs_mode="processed")]
    n = len(params)
    s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK, strategy="extract", emit=4)
    params = [s.add_request(i, p) for i, p in enumerate(params)]
    logits = torch.randn(n, V, generator=gen)
    logits[:, 300:304] += 5.0       # a few leaders in one word: the penalties move the choice among them
    logits[:, 36] += 5.0            # and one in another word
    logits = logits.to(torch.bfloat16)
    outputs = [[] for _ in range(n)]
    for step in range(5):
        positions = [step] * n
        out = s.sample(logits, list(range(n)), positions)
        e, q = check_against_reference(logits, params, positions, [[]] * n, outputs, out)
        assert e == n and q == n
        for i in range(n):
            outputs[i].append(int(out.tokens[i]))
        assert_output_marked(s.table)
    assert all(len(set(o)) > 1 for o in outputs[:3]), outputs     # every greedy row's choice moved


@pytest.mark.parametrize("strategy,emit", [("extract", 4), ("rank", 8)])
def test_bitmask_words_at_the_vocabularys_end(strategy, emit):
    """Grammar mask, prompt and output masks read per group of 8 neighbours in stage 1's grouped layout
    (extract; prologue._words_of) and per token elsewhere (rank), at a vocabulary whose last group and
    last word are partial (V = 603: 75 full groups and 3 tokens). The allowed tokens and the penalised
    ones sit in the last words, the leaders among them; every row must equal the reference."""
    v = 603
    gen = torch.Generator().manual_seed(23)
    params = [SamplingParams(temperature=0.0, repetition_penalty=3.0),
              SamplingParams(temperature=0.0, frequency_penalty=2.0, logprobs=2, logprobs_mode="processed"),
              SamplingParams(temperature=0.8, top_k=4, seed=3, presence_penalty=2.0, repetition_penalty=1.5),
              SamplingParams(temperature=0.8, seed=4, frequency_penalty=1.0, logprobs=0)]
    n = len(params)
    logits = torch.randn(n, v, generator=gen)
    logits[:, 590:] += 4.0
    logits = logits.to(torch.bfloat16)
    mask = torch.zeros(n, -(-v // 32), dtype=torch.int32)
    mask[:, -1] = 0x07070FF0                     # tokens 580-587, 592-594, 600-602 (word 18 holds 576..607)
    mask[:, 5] = 1 << 3                          # and token 163
    mask[3] = -1                                 # row 3: everything allowed
    prompts = [[601, 163, 590], [], [589, 602], [600]]
    outputs = [[602], [601, 601, 590], [591, 600], [602, 5]]
    positions = [7, 8, 9, 10]
    out = sample(logits, params, positions=positions, prompt_token_ids=prompts, output_token_ids=outputs,
                 bound=BOUND, block=BLOCK, emit=emit, strategy=strategy, grammar_bitmask=mask)
    e, q = check_against_reference(logits, params, positions, prompts, outputs, out, mask)
    assert e == n and q == n


def test_nan_and_fully_masked_rows_do_not_touch_others():
    gen = torch.Generator().manual_seed(5)
    s = Sampler(V, 4, "cpu", bound=BOUND, block=BLOCK)
    for slot in range(4):
        s.add_request(slot, SamplingParams(top_k=3, seed=slot, logprobs=2))
    logits = torch.randn(4, V, generator=gen).to(torch.bfloat16)
    logits[1, 250] = float("nan")
    mask = torch.full((4, -(-V // 32)), -1, dtype=torch.int32)
    mask[2] = 0                                   # row 2: nothing allowed
    mask[3, 0] = 0b1010                           # row 3: tokens 1 and 3 of the first word...
    mask[3, 1:] = 0                               # ...and nothing else
    out = s.sample(logits, [0, 1, 2, 3], [0, 0, 0, 0], grammar_bitmask=mask)
    assert out.valid.tolist() == [True, False, False, True]
    assert out.tokens[1:3].tolist() == [-1, -1]
    assert int(out.tokens[3]) in (1, 3)
    assert torch.isnan(out.logprob[1]) and torch.isnan(out.top_logprobs[1]).all()
    params = [s.table.host[i] for i in range(4)]
    ref = reference.sample(logits, params, positions=[0] * 4, grammar_bitmask=mask)
    assert int(out.tokens[0]) == int(ref.tokens[0]) and int(out.tokens[3]) == int(ref.tokens[3])
    assert int(s.table.counts[1].sum()) == 0 and int(s.table.counts[2].sum()) == 0


def test_masked_nan_or_inf_makes_raw_logprobs_nan_as_the_reference():
    """A raw NaN or +inf that the grammar mask hides leaves the row valid, but its raw log-probabilities
    are torch's log_softmax of the raw row: all NaN, so the token's is NaN and no token ranks in the
    top-n (ids -1, -inf). Processed log-probabilities never see the masked token. Would fail with the
    raw statistics skipping NaN (stage 1 before this), which gave finite raw log-probabilities."""
    gen = torch.Generator().manual_seed(11)
    s = Sampler(V, 4, "cpu", bound=BOUND, block=BLOCK)
    s.add_request(0, SamplingParams(top_k=5, seed=1, logprobs=3))                 # raw, NaN masked
    s.add_request(1, SamplingParams(top_k=5, seed=2, logprobs=3))                 # raw, +inf masked
    s.add_request(2, SamplingParams(top_k=5, seed=3, logprobs=3, logprobs_mode="processed"))  # NaN masked
    s.add_request(3, SamplingParams(top_k=5, seed=4, logprobs=3))                 # untouched
    logits = torch.randn(4, V, generator=gen).to(torch.bfloat16)
    logits[0, 37] = float("nan")
    logits[1, V - 2] = float("inf")
    logits[2, 37] = float("nan")
    mask = torch.full((4, -(-V // 32)), -1, dtype=torch.int32)
    mask[[0, 2], 1] = ~(1 << 5)                                                  # token 37 not allowed
    mask[1, (V - 2) // 32] = ~(1 << ((V - 2) % 32))
    out = s.sample(logits, [0, 1, 2, 3], [0] * 4, grammar_bitmask=mask)
    ref = reference.sample(logits, [s.table.host[i] for i in range(4)], positions=[0] * 4, grammar_bitmask=mask)
    assert out.valid.tolist() == [True] * 4
    assert out.tokens.tolist() == ref.tokens.tolist()
    for r in (0, 1):
        assert torch.isnan(out.logprob[r]) and torch.isnan(ref.logprob[r])
        assert out.top_token_ids[r].tolist() == ref.top_token_ids[r].tolist() == [-1] * 3
        assert torch.isneginf(out.top_logprobs[r]).all() and torch.isneginf(ref.top_logprobs[r]).all()
    for r in (2, 3):
        assert out.top_token_ids[r].tolist() == ref.top_token_ids[r].tolist()
        assert_close(out.logprob[r:r + 1], ref.logprob[r:r + 1])
        assert_close(out.top_logprobs[r], ref.top_logprobs[r])


def test_device_slot_tensors_with_bad_slots_only_invalidate_their_rows():
    """Slots given as a tensor that lives on the Sampler's device are not checked on the host (the
    CUDA-graph path): an empty or out-of-range slot gives an invalid row and leaves the others alone."""
    gen = torch.Generator().manual_seed(7)
    s = Sampler(V, 4, "cpu", bound=BOUND, block=BLOCK)
    s.add_request(0, SamplingParams(top_k=3, seed=1))
    s.add_request(2, SamplingParams(temperature=0.0))
    logits = torch.randn(4, V, generator=gen).to(torch.bfloat16)
    # On the CPU the Sampler's device is the CPU: a CPU tensor is checked on the host, so hand the
    # kernels the unchecked path the way a CUDA caller would, through _rows' device branch.
    slots = torch.tensor([0, 1, 2, 99])
    s.on_host = lambda values: False
    out = s.sample(logits, slots, torch.tensor([5, 5, 5, 5]))
    assert out.valid.tolist() == [True, False, True, False]
    assert out.tokens[1].item() == -1 and out.tokens[3].item() == -1
    ref = reference.sample(logits[[0, 2]], [s.table.host[0], s.table.host[2]], positions=[5, 5])
    assert out.tokens[[0, 2]].tolist() == ref.tokens.tolist()
    assert int(s.table.counts.sum()) == 2


def test_bad_input_is_refused_before_launch():
    s = Sampler(V, 4, "cpu", bound=BOUND, block=BLOCK)
    s.add_request(0, SamplingParams(seed=1))
    x = torch.randn(1, V).to(torch.bfloat16)
    cases = [
        (lambda: s.sample(torch.randn(1, V + 1).to(torch.bfloat16), [0], [0]), "logits"),
        (lambda: s.sample(x.to(torch.int32), [0], [0]), "logits"),
        (lambda: s.sample(x, [1], [0]), "slots"),            # no request there
        (lambda: s.sample(x, [9], [0]), "slots"),            # out of range
        (lambda: s.sample(x, [0, 0], [0]), "slots"),         # wrong length
        (lambda: s.sample(x, [0], [-1]), "positions"),
        (lambda: s.sample(x, [True], [0]), "slots"),         # a bool is not a slot
        (lambda: s.sample(x, [0], [2**63]), "positions"),
        (lambda: s.sample(x, [0], [0.0]), "positions"),
        (lambda: s.sample(x, [0], [0], grammar_bitmask=torch.zeros(1, 3, dtype=torch.int32)), "grammar_bitmask"),
        (lambda: s.add_request(1, SamplingParams(logit_bias={V: 1.0})), "logit_bias"),
        (lambda: s.add_request(1, SamplingParams(), prompt_token_ids=[V]), "prompt_token_ids"),
        (lambda: s.add_request(4, SamplingParams()), "slot"),
        # top-n beyond the row's candidates: before, positions past the bound came back as token 0
        (lambda: Sampler(V, 1, "cpu", bound=8, block=BLOCK).add_request(0, SamplingParams(logprobs=9)),
         "logprobs"),
    ]
    for call, field in cases:
        with pytest.raises(SamplingInputError) as e:
            call()
        assert e.value.field == field, (field, e.value)
    # Whole batches are checked at once; the error still names the first bad row.
    s.add_request(1, SamplingParams(seed=2))
    x3 = torch.randn(3, V).to(torch.bfloat16)
    for slots, positions, field, row in (([0, 1, 2], [0, 0, 0], "slots", 2), ([0, 1, 0], [0, 5, -3], "positions", 2),
                                         ([1, 0.0, 0], [0, 0, 0], "slots", 1)):
        with pytest.raises(SamplingInputError) as e:
            s.sample(x3, slots, positions)
        assert (e.value.field, e.value.request) == (field, row), e.value


def test_host_slots_and_positions_reach_the_kernels_in_one_copy():
    """Host slots and positions travel to the device in one tensor; positions start 16-byte aligned
    for every batch size (Triton specialises on pointer alignment: an odd batch would compile another
    variant), and both hold the given values."""
    s = Sampler(V, 8, "cpu", bound=BOUND, block=BLOCK)
    for i in range(8):
        s.add_request(i, SamplingParams(seed=i))
    for n in (1, 2, 3, 8):
        slots, positions = list(range(8 - n, 8)), [10 * i + 3 for i in range(n)]
        sd, pd, host = s._slots_positions(slots, positions, n)
        assert sd.tolist() == slots and pd.tolist() == positions and host == slots
        assert sd.dtype == pd.dtype == torch.int64 and pd.data_ptr() % 16 == 0 and sd.data_ptr() % 16 == 0


from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

row_params = st.builds(
    SamplingParams,
    temperature=st.sampled_from([0.0, 0.3, 0.7, 1.0, 1.7]),
    top_k=st.sampled_from([0, 1, 2, 7, 31, 32, 33]),
    top_p=st.sampled_from([1.0, 0.3, 0.9, 0.999]),
    min_p=st.sampled_from([0.0, 0.01, 0.2, 1.0]),
    repetition_penalty=st.sampled_from([1.0, 0.7, 1.4]),
    frequency_penalty=st.sampled_from([0.0, -1.0, 0.8]),
    presence_penalty=st.sampled_from([0.0, 1.2]),
    logit_bias=st.one_of(st.none(), st.dictionaries(st.integers(0, V - 1),
                                                    st.sampled_from([-3.0, 2.0, float("-inf")]), max_size=3)),
    seed=st.integers(0, 2**64 - 1),
    logprobs=st.sampled_from([None, 0, 2, 6]),
    logprobs_mode=st.sampled_from(["raw", "processed"]),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(params=st.lists(row_params, min_size=1, max_size=5), scale=st.sampled_from([0.5, 2.0, 6.0]),
       data_seed=st.integers(0, 2**31 - 1), position=st.integers(0, 2**62), emit=st.sampled_from([2, 8, 32]),
       strategy=st.sampled_from(["bitonic", "rank", "extract"]))
def test_hypothesis_mixes_match_the_reference(params, scale, data_seed, position, emit, strategy):
    gen = torch.Generator().manual_seed(data_seed)
    n = len(params)
    logits = (scale * torch.randn(n, V, generator=gen)).to(torch.bfloat16)
    prompts = [torch.randint(V, (3,), generator=gen).tolist() for _ in range(n)]
    outputs = [torch.randint(V, (4,), generator=gen).tolist() for _ in range(n)]
    positions = [position + i for i in range(n)]
    out = sample(logits, params, positions=positions, prompt_token_ids=prompts, output_token_ids=outputs,
                 bound=BOUND, block=BLOCK, emit=emit, strategy=strategy)
    check_against_reference(logits, params, positions, prompts, outputs, out)


def test_direct_launches_get_every_parameter():
    """After its first call the Sampler launches the compiled kernels directly, every parameter given
    positionally (launch.py). Parameters the Sampler does not pass (stage 1's verification-only ones)
    must come from the kernel's defaults: the first GPU run of this path failed on exactly that."""
    s = Sampler(V, 2, "cpu", bound=BOUND, block=BLOCK)
    s.add_request(0, SamplingParams(temperature=0.7, top_k=3, seed=1))
    s.sample(torch.randn(1, V).to(torch.bfloat16), [0], [0])
    (_, tail1, fixed1, bare1, direct1, _, _), = s._stage1._compiled.values()
    (_, tail2, fixed2, bare2, direct2, _, _), = s._stage2._compiled.values()
    assert bare1 is None and bare2 is None      # the interpreter launches through Triton, never bare
    # ... but builds the direct launches, with a recorder in place of the C launch (launch._check)
    assert direct1 is not None and direct2 is not None
    # drafts_ptr, rows_per_request, PENDING, PDL (off on a CPU), SKIP_UNTRUNCATED, RAW_KEYS
    assert tail1[-6:] == (None, 1, False, False, True, True)
    n1, n2 = len(s._stage1.fn.arg_names), len(s._stage2.fn.arg_names)
    assert len(tail1) < n1 and len(tail2) < n2
    # The fixed addresses (launch.Launcher) cover exactly the leading arguments the tail does not.
    assert len(fixed1) + len(tail1) == n1 and len(fixed2) + len(tail2) == n2


def test_warmup_covers_every_variant_of_the_batch_sizes_it_names(monkeypatch):
    """After warmup(max_rows), no batch size in 1..max_rows needs a launch variant (constexprs and
    warps) that warmup did not prepare: a serving step then compiles nothing. With a launch table whose
    row buckets change the configuration, a missed bucket fails here."""
    import importlib

    from sonicsampler.sampler import _variant
    table_mod = importlib.import_module("sonicsampler.tuning.table")
    buckets = ({"max_vocab": V, "max_rows": 1, "block": 256, "emit": 16, "warps1": 4, "warps2": 4},
               {"max_vocab": V, "max_rows": 8, "block": 128, "emit": 32, "warps1": 8, "warps2": 4},
               {"max_vocab": V, "max_rows": 64, "block": 256, "emit": 8, "warps1": 4, "warps2": 8})
    monkeypatch.setattr(table_mod, "arch", lambda device: "sm90")
    monkeypatch.setattr(table_mod, "entries", lambda kind, arch: buckets)
    table_mod._nearest.cache_clear()
    s = Sampler(V, 4, "cpu", bound=BOUND)
    s.add_request(0, SamplingParams(logprobs=3, seed=1))
    # Three buckets (beyond the table, 65..70, its last applies), each without and with the shared
    # passes (stage 2's SHARED variant), the latter with helpers below 16 rows (the chunks per pass):
    # the third bucket's shared variant splits at 16 rows.
    # With top-n width 3 admitted, batches of width 0 and 3 with and without raw rows needing the raw
    # top-k: at least the 7 variants of one width.
    assert s.warmup(70) >= 7
    prepared = {_variant(p) for p in s._plans.values()}
    for n in range(1, 71):
        for shared in (False, True):
            for n_top, raw in ((3, False), (0, False), (3, True)):
                assert _variant(s._plan(n, torch.bfloat16, False, n_top, raw, shared=shared)) in prepared, n
    # The draft-probabilities variants (a stage-2 constexpr) are prepared on request, and only then.
    assert _variant(s._plan(5, torch.bfloat16, False, 3, False, True)) not in prepared
    s.warmup(70, draft_probs=True)
    prepared = {_variant(p) for p in s._plans.values()}
    for n in range(1, 71):
        assert _variant(s._plan(n, torch.bfloat16, False, 3, False, True)) in prepared, n
    table_mod._nearest.cache_clear()


def test_warmup_covers_every_batch_the_admitted_requests_can_make():
    """Host-list batches plan from their own rows: each mix of the admitted requests (top-n widths 5, 2
    with a penalty, so its raw top-n needs the exact raw top-k, and none) plans a variant warmup made.
    Before, warmup took the summary of all admitted requests and prepared that one width only."""
    from sonicsampler.sampler import _variant
    s = Sampler(V, 4, "cpu", bound=BOUND, block=BLOCK)
    s.add_request(0, SamplingParams(logprobs=5, seed=1))
    s.add_request(1, SamplingParams(seed=2))
    s.add_request(2, SamplingParams(logprobs=2, repetition_penalty=1.2, seed=3))
    s.warmup(3)
    prepared = {_variant(p) for p in s._plans.values()}
    for rows in ([1], [0], [2], [0, 2], [1, 2], [0, 1, 2]):
        n_top, raw, penalised, shared = s._batch_summary(rows, False)
        assert _variant(s._plan(len(rows), torch.bfloat16, False, n_top, raw, penalised=penalised,
                                shared=shared)) in prepared, rows


def test_warmup_prepares_the_widths_it_is_told_before_any_request():
    """An engine warms up before admitting anything: `logprobs` names the widths to come."""
    from sonicsampler.sampler import _variant
    s = Sampler(V, 4, "cpu", bound=BOUND, block=BLOCK)
    s.warmup(2, logprobs=(5, 20))
    prepared = {_variant(p) for p in s._plans.values()}
    s.add_request(0, SamplingParams(logprobs=20, logprobs_mode="raw", frequency_penalty=0.5, seed=1))
    s.add_request(1, SamplingParams(logprobs=5, seed=2))
    for rows in ([0], [1], [0, 1]):
        n_top, raw, penalised, shared = s._batch_summary(rows, False)
        assert _variant(s._plan(len(rows), torch.bfloat16, False, n_top, raw, penalised=penalised,
                                shared=shared)) in prepared, rows
    with pytest.raises(ValueError, match="logprobs"):
        s.warmup(2, logprobs=(BOUND + 1,))


def test_the_table_tallies_summarise_every_admitted_request():
    """Device-slot batches plan from the table's running tallies (no walk over the slots): after any
    sequence of admissions, replacements and releases they say what a walk over the slots says."""
    import random
    rnd = random.Random(5)
    s = Sampler(V, 12, "cpu", bound=BOUND, block=BLOCK)
    kinds = [SamplingParams(seed=1), SamplingParams(logprobs=3, seed=1),
             SamplingParams(logprobs=7, logprobs_mode="processed", presence_penalty=0.3, seed=1),
             SamplingParams(logprobs=2, repetition_penalty=1.1, seed=1), SamplingParams(top_p=0.8, seed=1),
             SamplingParams(logit_bias={3: 1.0}, seed=1)]
    for step in range(200):
        slot = rnd.randrange(12)
        if rnd.random() < 0.3:
            s.remove_request(slot)
        else:
            s.add_request(slot, rnd.choice(kinds))
        for mask in (False, True):
            walked = s._summarize([i for i in range(12) if s.table.host[i] is not None], mask)
            assert s._batch_summary(None, mask)[:3] == walked[:3], step


def test_warmup_launches_touch_no_request(monkeypatch):
    """warmup's launches (taken on a GPU only: here forced through the interpreter) run each prepared
    plan on rows that point at no slot: the admitted request's output counts stay as they were, and a
    later step samples as if warmup had not run."""
    import sonicsampler.sampler as sampler_mod
    monkeypatch.setattr(sampler_mod, "_WARMUP_LAUNCHES", True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    s = Sampler(V, 2, "cpu", bound=BOUND, block=BLOCK)
    p = SamplingParams(temperature=0.8, top_k=10, seed=3, repetition_penalty=1.2)
    s.add_request(0, p)
    counts = s.table.counts.clone()
    launched = []
    real_launch = s._launch
    s._launch = lambda plan, *a: launched.append(plan["key"]) or real_launch(plan, *a)
    assert s.warmup(3) == len(launched) >= 1
    assert torch.equal(s.table.counts, counts)
    logits = torch.randn(1, V, generator=torch.Generator().manual_seed(8)).to(torch.bfloat16)
    out = s.sample(logits, [0], [5])
    assert torch.equal(out.tokens, reference.sample(logits, [p], positions=[5]).tokens)


def assert_exact_beyond_the_bound(logits, params, first_position: int, times: int):
    """Every row's set holds more than `times` x the bound, yet the kernel is exact with no dropped mass
    and gives the reference's tokens (and, through check_against_reference, its logprobs). Returns the
    prompts, outputs and positions it used."""
    n = len(params)
    prompts, outputs = [[1, 2]] * n, [[3, 4, 4]] * n
    positions = list(range(first_position, first_position + n))
    support = reference_support(logits, params, positions, prompts, outputs)
    assert (support.sum(1) > times * BOUND).all()      # every set is far beyond the bound
    out = sample(logits, params, positions=positions, prompt_token_ids=prompts, output_token_ids=outputs,
                 bound=BOUND, block=BLOCK)
    assert out.exact.all() and (out.dropped_mass == 0).all()
    check_against_reference(logits, params, positions, prompts, outputs, out)
    ref = reference.sample(logits, params, positions=positions, prompt_token_ids=prompts, output_token_ids=outputs)
    assert torch.equal(out.tokens, ref.tokens)
    return prompts, outputs, positions


def test_min_p_sets_beyond_the_bound_are_exact():
    """High-entropy rows (nearly uniform over V = 600 tokens) with min-p alone keep hundreds of tokens,
    far beyond the bound of 32: the exact full-row pass gives the reference's token and its exact
    processed log-probability; the bounded approximation (opt-in) flags them and reports the mass
    it dropped, which is large here."""
    gen = torch.Generator().manual_seed(21)
    n = 6
    logits = (0.3 * torch.randn(n, V, generator=gen)).to(torch.bfloat16)
    params = [SamplingParams(temperature=(1.0, 1.5, 0.8)[i % 3], min_p=(0.05, 0.3)[i % 2], seed=100 + i,
                             logprobs=2, logprobs_mode=("processed", "raw")[i % 2],
                             presence_penalty=0.5 if i == 4 else 0.0) for i in range(n)]
    prompts, outputs, positions = assert_exact_beyond_the_bound(logits, params, first_position=50, times=4)
    approx = sample(logits, params, positions=positions, prompt_token_ids=prompts, output_token_ids=outputs,
                    bound=BOUND, block=BLOCK, allow_bounded_approximation=True)
    assert not approx.exact.any() and (approx.dropped_mass > 0.5).all()


@pytest.mark.parametrize("kind,dtype", [("top_p", torch.bfloat16), ("top_k", torch.bfloat16),
                                        ("top_k_top_p", torch.bfloat16), ("top_p", torch.float32),
                                        ("top_k_top_p", torch.float32), ("top_k", torch.float16)])
def test_long_sets_beyond_the_bound_are_exact(kind, dtype):
    """High-entropy rows whose top-p nucleus, top-k of 3x-10x the bound, or top-p among such a top-k
    (each alone or after min-p, with penalties and bias) holds hundreds of tokens, far beyond the bound
    of 32: the exact search over the row's keys (16-bit keys, 32-bit ones for fp32 rows; by mass, by
    count, or by count then mass) gives the reference's token and exact processed log-probabilities.
    Tie-heavy rows (logits on a coarse grid) exercise the tokens tied at each cut's last key, taken in
    index order."""
    gen = torch.Generator().manual_seed({"top_p": 5, "top_k": 8, "top_k_top_p": 9}[kind])
    n = 8
    logits = (0.4 * torch.randn(n, V, generator=gen))
    logits[4:] = torch.round(logits[4:] * 4) / 4              # many exact ties at every key
    logits = logits.to(dtype)
    ps, ks = (0.9, 0.5, 0.97, 0.8), (100, 250, 320, 97)
    cuts = {"top_p": [dict(top_p=ps[i % 4]) for i in range(n)],
            "top_k": [dict(top_k=ks[i % 4]) for i in range(n)],
            "top_k_top_p": [dict(top_k=(150, 300, 400, 130)[i % 4], top_p=(0.9, 0.8, 0.95, 0.85)[i % 4])
                            for i in range(n)]}[kind]
    params = [SamplingParams(temperature=(1.0, 0.7, 1.3, 1.0)[i % 4], **c,
                             min_p=0.05 if i % 3 == 1 else 0.0, seed=300 + i, logprobs=3,
                             logprobs_mode=("processed", "raw")[i % 2],
                             frequency_penalty=0.4 if i == 2 else 0.0,
                             logit_bias={7: 1.5, 9: float("-inf")} if i == 3 else None) for i, c in enumerate(cuts)]
    assert_exact_beyond_the_bound(logits, params, first_position=70, times=2)


@pytest.mark.parametrize("dtype,claim", [(torch.bfloat16, 3), (torch.float32, 4)])
def test_shared_passes_cut_ties_across_chunks(dtype, claim):
    """The exact passes in chunks that any of stage 2's programs may run (kernels/shared_sets.py): 19
    sub-tiles of 32 tokens in 4 chunks of 4-5, on tie-heavy rows (logits on a coarse grid: every cut's
    key holds tied tokens in several chunks), so that the weight tied before each chunk comes from the
    earlier chunks' sums. Tokens, processed and raw log-probabilities equal the reference's, over two
    launches of one Sampler (the second starts from the first's board, every row DONE; in bf16 only),
    with standard rows in the batch. A wrong tie prefix moves a nucleus's mass by about 1% here (a
    log-probability by ~0.06, far outside the tolerance). In bf16 programs take 3 chunks at once
    (long_claim: chunks 0-2, then 3, each with its own tie prefix); in fp32 a whole pass at once."""
    gen = torch.Generator().manual_seed(31)
    n = 6
    logits = torch.round(0.4 * torch.randn(n, V, generator=gen) * 4) / 4
    logits = logits.to(dtype)
    cuts = [dict(top_p=0.9), dict(top_k=300, top_p=0.85), dict(top_k=250), dict(top_k=40, top_p=0.9),
            dict(min_p=0.1, top_p=0.95), dict(top_p=0.8)]
    params = [SamplingParams(temperature=(1.0, 1.3)[i % 2], seed=400 + i, logprobs=3,
                             logprobs_mode=("processed", "raw")[i % 2], **cuts[i]) for i in range(n)]
    s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK, long_block=32, long_chunks=4, long_claim=claim)
    for i, p in enumerate(params):
        s.add_request(i, p)
    for step in range(2 if dtype == torch.bfloat16 else 1):   # the board's reuse once (CI time)
        positions = list(range(90 + step, 90 + step + n))
        out = s.sample(logits, list(range(n)), positions)
        n_exact, n_equal = check_against_reference(logits, params, positions, [[]] * n, [[]] * n, out)
        assert n_exact == n and n_equal == n


def test_claims_of_several_chunks_change_no_bit():
    """How many chunks a program takes at once (Sampler long_claim) decides who runs which chunk, not
    the chunks' sums or their order: a lone tie-heavy nucleus (1 row, 3 helper programs, 4 chunks)
    gives bitwise the same token and log-probabilities with claims of 1, 3 (chunks 0-2, then 3) and
    the kernel's choice, and the reference's. Invalid claims are refused."""
    gen = torch.Generator().manual_seed(43)
    logits = (torch.round(0.4 * torch.randn(1, V, generator=gen) * 4) / 4).to(torch.bfloat16)
    params = [SamplingParams(temperature=1.2, top_p=0.9, seed=600, logprobs=3, logprobs_mode="processed")]
    outs = []
    for claim in (1, 3, 0):
        s = Sampler(V, 1, "cpu", bound=BOUND, block=BLOCK, long_block=32, long_chunks=4, long_chunks_small=4,
                    long_claim=claim)
        s.add_request(0, params[0])
        outs.append(s.sample(logits, [0], [70]))
    n_exact, n_equal = check_against_reference(logits, params, [70], [[]], [[]], outs[0])
    assert n_exact == 1 and n_equal == 1
    for o in outs[1:]:
        assert torch.equal(o.tokens, outs[0].tokens) and torch.equal(o.logprob, outs[0].logprob)
        assert torch.equal(o.top_logprobs, outs[0].top_logprobs)
    for bad in (-1, 5, 1.0):
        with pytest.raises(ValueError, match="long_claim"):
            Sampler(V, 1, "cpu", long_chunks=4, long_claim=bad)


@pytest.mark.parametrize("rows", ["tie_heavy_bf16", "long_tail_fp32"])
def test_chunk_counts_change_no_bit(rows):
    """Every sum of the exact passes is an integer sum (kernels/long_rows.py: the searches' interval
    weights, the weight tied before each sub-tile, the set's mass), so a long row's token and
    log-probabilities do not depend on how many chunks its passes are cut into: batches whose passes
    have 1, 2, 8 and 32 chunks (19 sub-tiles of 32 tokens) give bitwise the same outputs, equal to the
    reference's. The batch size picks the chunk count (Sampler long_chunks_small: here batches of at
    most long_chunks rows), so this is what keeps a row's result independent of its batch.
    - tie_heavy_bf16: a nucleus, a top-k above the bound, both, and min-p then top-p, on logits in
      steps of 1/4 (the tie prefixes across chunks);
    - long_tail_fp32: nuclei of top-p 0.999999 over fp32 rows whose best token is 0 and most of whose
      mass lies in 80 tokens above a long tail. With the draw's mass summed in fp32 chunk by chunk (the
      code before 29ef652) the best token's log-probability moved in its last bits with the chunk
      count on these rows (-2.10958004 with 1 chunk, -2.10958028 with 2)."""
    if rows == "tie_heavy_bf16":
        gen = torch.Generator().manual_seed(47)
        n = 4
        logits = (torch.round(0.4 * torch.randn(n, V, generator=gen) * 4) / 4).to(torch.bfloat16)
        cuts = [dict(top_p=0.9), dict(top_k=300), dict(top_k=250, top_p=0.8), dict(min_p=0.05, top_p=0.95)]
        params = [SamplingParams(temperature=1.1, seed=700 + i, logprobs=3,
                                 logprobs_mode=("processed", "raw")[i % 2], **cuts[i]) for i in range(n)]
    else:
        gen = torch.Generator().manual_seed(0)
        n = 2
        logits = -15 + 3 * torch.randn(n, V, generator=gen)
        logits[:, 1:80] = -6 + 5 * torch.rand(n, 79, generator=gen)
        logits[:, 0] = 0.0
        params = [SamplingParams(temperature=1.0, seed=900 + i, logprobs=2, logprobs_mode="processed", top_p=0.999999)
                  for i in range(n)]
    positions = list(range(30, 30 + n))
    outs = []
    for small in (1, 2, 8, 32):
        s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK, long_block=32, long_chunks=n, long_chunks_small=small)
        for i, p in enumerate(params):
            s.add_request(i, p)
        plan = s._plan(n, logits.dtype, False, params[0].logprobs, False, shared=True)
        assert plan["const2"]["CHUNKS_LOG2"] == small.bit_length() - 1
        outs.append(s.sample(logits, list(range(n)), positions))
    n_exact, n_equal = check_against_reference(logits, params, positions, [[]] * n, [[]] * n, outs[0])
    assert n_exact == n and n_equal == n
    for o in outs[1:]:
        assert torch.equal(o.tokens, outs[0].tokens) and torch.equal(o.logprob, outs[0].logprob)
        assert torch.equal(o.top_logprobs, outs[0].top_logprobs)


@triton.jit
def _bounds_that_do_not_hold(search_p, m, kept, top_p, thr, hi_key, V, KEY64: tl.constexpr, IS_BF16: tl.constexpr):
    # A clamped first pass whose range lies above every key: the cut falls in its interval 0 (the
    # verification test puts the range below every key instead: interval 15).
    return hi_key + 4096, tl.zeros((), tl.int64), search_p


def _key16(v: torch.Tensor) -> int:
    """The order-preserving 16-bit key of a bf16 value (kernels/keys.py), in Python."""
    b = int(v.view(torch.int16)) & 0xFFFF
    return b | 0x8000 if b < 0x8000 else ~b & 0xFFFF


def final_passes(logits, params, positions):
    """Per row, whether the sampler's shared passes end with a final pass (1) or draw in their first
    search pass (0: kernels/shared_sets._early_holds): the Gumbel-max over the first pass's tokens (the
    row's tokens at or above min-p's threshold) is then 2 keys or more above the set's lowest key, and
    the row asks for no processed log-probabilities."""
    out = []
    for i, p in enumerate(params):
        row = reference._process_row(logits[i], p, [], [], None)
        wide = reference._process_row(logits[i], dataclasses.replace(p, top_k=0, top_p=1.0), [], [], None)
        w = reference._gumbel_argmax([row.x], [wide.keep], [p.seed_u64], [positions[i]], 0)[0]
        lowest = min(_key16(v) for v in row.rank[row.keep])
        out.append(int(p.logprobs_mode == "processed" or _key16(row.rank[w]) < lowest + 2))
    return out


@triton.jit
def _no_speculation(mm, lse_all, top_p, m_t, keys, lasts, C_LOG2: tl.constexpr, KEY64: tl.constexpr,
                    IS_BF16: tl.constexpr, NEG_INF_KEY: tl.constexpr):
    return lse_all < float("-inf"), tl.full((), 0.0, tl.float32)


def _narrowing_batch():
    """Six long rows (test_top_p_cuts_that_the_candidates_bound_take_fewer_passes)."""
    gen = torch.Generator().manual_seed(5)
    n = 6
    logits = 10 + 0.5 * torch.randn(n, V, generator=gen)
    logits[3] = torch.round(logits[3] * 8) / 8           # ties at the cut's key
    logits[4, 7] = 30.0                                   # a nucleus of one token inside a top-k of 200
    logits = logits.to(torch.bfloat16)
    params = [SamplingParams(temperature=1.0, top_p=0.9, seed=1, logprobs=2),
              SamplingParams(temperature=0.7, top_k=100, top_p=0.3, seed=2, logprobs=2),
              SamplingParams(temperature=1.0, top_p=0.99, seed=3, logprobs=2, logprobs_mode="raw"),
              SamplingParams(temperature=1.0, top_p=0.9, min_p=0.05, seed=4, logprobs=2, logprobs_mode="processed"),
              SamplingParams(temperature=1.0, top_k=200, top_p=0.5, seed=5, logprobs=2),
              SamplingParams(temperature=1.0, top_k=100, top_p=0.99, seed=6, logprobs=2)]
    return logits, params


def _passes_taken(logits, params, **sampler_args):
    """Sample the batch twice (the same outputs); its outputs and each row's passes (what the board's done
    counters show)."""
    n = len(params)
    s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK, long_block=32, long_chunks=4, **sampler_args)
    for i, p in enumerate(params):
        s.add_request(i, p)
    positions = list(range(10, 10 + n))
    out = s.sample(logits, list(range(n)), positions)
    n_exact, n_equal = check_against_reference(logits, params, positions, [[]] * n, [[]] * n, out)
    assert n_exact == n and n_equal == n
    again = s.sample(logits, list(range(n)), positions)
    assert torch.equal(again.tokens, out.tokens) and torch.equal(again.logprob, out.logprob)
    board = s._plan(n, logits.dtype, False, 2, False, shared=True)["scratch"]["board"].view(n, -1)
    return out, [int((board[r, shared_sets.DONE_AT.value:] > 0).sum()) for r in range(n)]


@pytest.mark.parametrize("bounds", ["held", "broken"])
def test_top_p_cuts_that_the_candidates_bound_take_fewer_passes(bounds, monkeypatch):
    """A long top-p cut's search starts from the range its candidates bound (long_rows.nucleus_start):
    rows on values around 10 (not straddling 0, where keys are dense) with nuclei of 2x-18x the bound
    of 32, alone, after a top-k of 100 or 200 (2 passes of its own), or after min-p. The full search
    takes 2 passes per 16-bit cut (a digit of 8 bits each): 2, 4, 2, 2, 4, 4 passes of search. Bounded,
    each top-p cut takes 1: 1, 3, 1, 1, 3, 3. The last row's top-p 0.99 after a top-k of 100 would take
    2 from its candidates' bound alone (u ~9 below the maximum: ~260 keys, more than one pass's 254) and
    takes 1 from the top-k cut's key up (long_rows.nucleus_after_top_k). With bounds that do not hold
    (the range moved above every key), each top-p search starts over after its first pass: one pass
    more than the full search, and the same tokens and log-probabilities as the reference's either way.
    Then the final pass, unless the first pass's own draw lies above the set's cut (final_passes): for
    rows 0 and 2 it does; row 3 asks for processed log-probabilities; the top-k rows 1 and 5 keep too
    little of the row's mass for the draw over all its tokens to fall in their sets, and row 4's draw
    (its nucleus of one token) is at the cut's key. The board's done counters show the passes. (Nuclei
    that stage 1's statistics show to exceed the bound start their search before the candidates, from
    every key: that is off here, and tested below.)"""
    monkeypatch.setattr(sample_kernels, "nucleus_beyond", _no_speculation)
    if bounds == "broken":
        monkeypatch.setattr(sample_kernels, "nucleus_start", _bounds_that_do_not_hold)
    logits, params = _narrowing_batch()
    n = len(params)
    positions = [10 + i for i in range(n)]
    assert [int(x) for x in reference_support(logits, params, positions, [[]] * n,
                                              [[]] * n).sum(1)] == [470, 18, 582, 470, 1, 99]
    _out, passes = _passes_taken(logits, params)
    final = final_passes(logits, params, positions)
    assert final == [0, 1, 0, 1, 1, 1]
    search = [1, 3, 1, 1, 3, 3] if bounds == "held" else [3, 5, 3, 3, 5, 5]
    assert passes == [a + b for a, b in zip(search, final)]


@triton.jit
def _window_above_every_key(m, kept, top_p, thr, V, KEY64: tl.constexpr, IS_BF16: tl.constexpr):
    # A wide pass's window above every key (sample.nucleus_low_key, taken by the wide window only):
    # every token falls in its interval 0.
    return tl.full((), 0xFFF0, tl.int64), m == m


@pytest.mark.parametrize("window", ["held", "broken", "speculated", "speculated_broken", "speculated_discarded"])
def test_wide_first_passes_set_nuclei_on_values_around_zero_in_one_pass(window, monkeypatch):
    """Launches cut into more than 16 chunks (here 32: up to 16 rows on the GPU) start a top-p search
    that the candidates do not narrow to one pass with a wide pass (long_rows.WIDE_BITS: 2048
    intervals of one key each over the window the candidates bound, the magnitudes nearest zero in one
    interval). Row 0, standard normal logits at temperature 1 with top-p 0.9: its bounds straddle
    zero, where 8-bit digits take 2 search passes (4-chunk launches, which have no wide passes); the
    wide pass sets its cut in 1. Row 1, logits on a grid of 1/4 whose cut lies at 0.0 by construction
    (top_p puts the target halfway through the tokens tied at 0): the wide pass finds the cut in the
    lump around zero, and the search starts over from every key (1 + 2 passes). With a window that
    does not hold (above every key), both rows start over. Both rows are nuclei that stage 2 shows
    beyond the bound before merging their candidates (row 0 from its statistics, row 1 from its emitted
    candidates: sample.nucleus_beyond), so with speculation on ("speculated") their first pass is
    posted before the candidates (shared_sets.post_first_pass), wide too, over the window that the full
    normalizer and the row's maximum bound; breaking that window alone (shared_sets' nucleus_low_key)
    shows that this pass is the one taken; discarding it (shared_sets.FORCE_DISCARD) costs one pass
    more. Each row
    also takes the final pass (processed log-probabilities). Tokens and log-probabilities equal the
    reference's and, bitwise, those of the 4-chunk launch, whatever the path of the search (integer
    sums), in a second launch too (a wide pass's words in the row's totals are left zero for it)."""
    if not window.startswith("speculated"):
        monkeypatch.setattr(sample_kernels, "nucleus_beyond", _no_speculation)
    if window == "broken":
        monkeypatch.setattr(sample_kernels, "nucleus_low_key", _window_above_every_key)
    if window == "speculated_broken":
        monkeypatch.setattr(shared_sets, "nucleus_low_key", _window_above_every_key)
    if window == "speculated_discarded":
        monkeypatch.setattr(shared_sets, "FORCE_DISCARD", tl.constexpr(True))
    gen = torch.Generator().manual_seed(71)
    logits = torch.randn(2, V, generator=gen)
    logits[1] = torch.round(logits[1] * 4) / 4
    logits = logits.to(torch.bfloat16)
    x1 = logits[1].double()
    above, at0 = x1[x1 > 0].exp().sum(), float((x1 == 0).sum())
    assert at0 > 50                                      # many tokens tied at the cut's key
    top_p1 = float((above + 0.5 * at0) / x1.exp().sum())
    params = [SamplingParams(temperature=1.0, top_p=0.9, seed=801, logprobs=2, logprobs_mode="processed"),
              SamplingParams(temperature=1.0, top_p=top_p1, seed=802, logprobs=2, logprobs_mode="processed")]
    positions = [40, 41]
    outs, passes = [], []
    for chunks in (32, 4):
        s = Sampler(V, 2, "cpu", bound=BOUND, block=BLOCK, long_block=32, long_chunks=2, long_chunks_small=chunks)
        for i, p in enumerate(params):
            s.add_request(i, p)
        outs.append(s.sample(logits, [0, 1], positions))
        board = s._plan(2, torch.bfloat16, False, 2, False, shared=True)["scratch"]["board"].view(2, -1)
        passes.append([int((board[r, shared_sets.DONE_AT.value:] > 0).sum()) for r in range(2)])
        again = s.sample(logits, [0, 1], positions)
        assert torch.equal(again.tokens, outs[-1].tokens) and torch.equal(again.logprob, outs[-1].logprob)
    n_exact, n_equal = check_against_reference(logits, params, positions, [[]] * 2, [[]] * 2, outs[0])
    assert n_exact == 2 and n_equal == 2
    assert torch.equal(outs[0].tokens, outs[1].tokens) and torch.equal(outs[0].logprob, outs[1].logprob)
    assert torch.equal(outs[0].top_logprobs, outs[1].top_logprobs)
    extra = int(window == "speculated_discarded")
    assert passes[1] == [3 + extra, 3 + extra]
    assert passes[0] == ([4, 4] if window.endswith("broken") else [2 + extra, 4 + extra])


@pytest.mark.parametrize("discard", [False, True])
def test_nuclei_beyond_the_bound_start_their_search_before_the_candidates(discard, monkeypatch):
    """A nucleus without top-k or min-p whose best C tokens cannot reach top_p (C times the best token's
    probability, from stage 1's statistics: sample.nucleus_beyond) gets its first search pass posted
    before its candidates are merged (shared_sets.post_first_pass), over every key: the pure nuclei of
    the batch above (rows 0 and 2, whose early draws hold) take 2 passes, the first beside the
    candidates, where their candidates' bounds would have left 1 after them. The same tokens and
    log-probabilities, bitwise, as without it (integer sums: the same whatever the path of the search),
    and the reference's. With `discard` (shared_sets.FORCE_DISCARD: what a row whose m differed from
    the candidates' would do) that pass's sums are thrown away (not its early draw, which m does not
    change) and the row searches from its candidates' bounds after it: 2 passes again, the same
    outputs."""
    logits, params = _narrowing_batch()
    if discard:
        monkeypatch.setattr(shared_sets, "FORCE_DISCARD", tl.constexpr(True))
    out, passes = _passes_taken(logits, params)
    assert passes == [2, 4, 2, 2, 4, 4]
    monkeypatch.setattr(sample_kernels, "nucleus_beyond", _no_speculation)
    plain, passes = _passes_taken(logits, params)
    assert passes == [1, 4, 1, 2, 4, 4]
    assert torch.equal(out.tokens, plain.tokens) and torch.equal(out.logprob, plain.logprob)
    assert torch.equal(out.top_logprobs, plain.top_logprobs) and torch.equal(out.top_token_ids, plain.top_token_ids)


def _second_bound(x, top_p, emit, dtype):
    """sample.nucleus_beyond's second bound for processed values x (fp32) of one row, relative to top_p:
    each tile's best `emit` values rounded to dtype, taken halfway to the next value (keys.row_key_ceiling),
    summed as weights, plus C times the largest tile's last emitted one; and the row's best C tokens'
    weight, relative to top_p too."""
    rank = x.to(dtype)
    up = torch.nextafter(rank, torch.tensor(float("inf"), dtype=dtype)).float()
    ceil = rank.float() + (up - rank.float()) / 2
    lse = torch.logsumexp(x.double(), 0)
    tiles = torch.nn.functional.pad(ceil.double(), (0, -V % BLOCK), value=float("-inf")).view(-1, BLOCK)
    best = tiles.topk(emit, dim=1).values
    bound = (best - lse).exp().sum() + BOUND * (best[:, -1].max() - lse).exp()
    top_c = torch.softmax(x.double(), 0).topk(BOUND).values.sum()
    return float(bound) / top_p, float(top_c) / top_p


@pytest.mark.parametrize("dtype,temperature,emit", [(torch.bfloat16, 1.0, 32), (torch.bfloat16, 0.7, 8),
                                                    (torch.float16, 0.7, 8)])
def test_nuclei_whose_emitted_candidates_weigh_less_than_top_p_start_their_search_before_them(
        dtype, temperature, emit, monkeypatch):
    """A nucleus whose best token alone weighs more than top_p / C, so that stage 1's statistics cannot
    show it beyond the bound, but whose tiles' emitted candidates weigh less than top_p: one token far
    above a flat tail (row 0; sample.nucleus_beyond's second bound, emulated here by _second_bound). Its
    first search pass is posted before its candidates are merged, which FORCE_DISCARD makes visible as
    one pass more than without speculation. Never posted: a nucleus that fits the bound (row 1: its best
    C tokens reach top_p; its passes stay 0 under FORCE_DISCARD), nor one beyond it whose bound reaches
    top_p (row 3: the search runs after the candidates). Row 2's best token weighs little enough for the
    statistics to decide (the first bound). With 3 tiles of 32 emitted candidates (C = 32), and of 8
    (then each tile holds back tokens, bounded by the largest last emitted value) at temperature 0.7
    (tiles emit quotients of raw keys) in bf16 and fp16. Outputs equal the reference and, bitwise, the
    launch without speculation, twice in a row."""
    gen = torch.Generator().manual_seed(91)
    logits = 0.3 * torch.randn(4, V, generator=gen)
    logits[0, 17] = 4.0
    logits[1] = 8 * logits[1]
    logits[3] = logits[1]
    logits = logits.to(dtype)
    x = logits.float() / torch.tensor(temperature, dtype=torch.float32) if temperature != 1.0 else logits.float()
    bound3, top_c3 = _second_bound(x[3], 1.0, emit, dtype)
    top_p = [0.9, 0.5, 0.95, (top_c3 + min(bound3, 1.0)) / 2]     # row 3: between its best C and its bound
    bounds = [_second_bound(x[i], top_p[i], emit, dtype) for i in range(4)]
    p_best = torch.softmax(x.double(), -1).max(-1).values
    assert BOUND * p_best[0] >= top_p[0] and bounds[0][0] < 0.99       # only the second bound posts row 0
    assert bounds[1][1] >= 1.0                                         # row 1 fits the bound
    assert BOUND * p_best[2] < 0.99 * top_p[2]                         # the first bound posts row 2
    assert bounds[3][1] < 0.999 and bounds[3][0] > 1.001               # row 3: beyond, its bound not met
    params = [SamplingParams(temperature=temperature, top_p=top_p[i], seed=11 + i, logprobs=2,
                             logprobs_mode="raw" if i == 1 else "processed") for i in range(4)]
    out, passes = _passes_taken(logits, params, emit=emit)
    monkeypatch.setattr(shared_sets, "FORCE_DISCARD", tl.constexpr(True))
    _o, passes_discarded = _passes_taken(logits, params, emit=emit)
    monkeypatch.setattr(sample_kernels, "nucleus_beyond", _no_speculation)
    plain, passes_plain = _passes_taken(logits, params, emit=emit)
    assert passes_plain[1] == 0 and min(passes_plain[0], passes_plain[2], passes_plain[3]) > 0
    assert passes_discarded == [passes_plain[0] + 1, 0, passes_plain[2] + 1, passes_plain[3]]
    assert torch.equal(out.tokens, plain.tokens) and torch.equal(out.logprob, plain.logprob)
    assert torch.equal(out.top_logprobs, plain.top_logprobs) and torch.equal(out.top_token_ids, plain.top_token_ids)


def test_long_row_passes_fit_their_chunks_to_the_gpus_programs(monkeypatch):
    """On a GPU a pass has as many chunks as there are programs beside the rows' (Sampler._chunks: halved
    from long_chunks_small, not below long_chunks), and a batch of fewer rows than chunks launches a
    helper per chunk where the SMs hold them (sampler._helpers): a pass posted before the candidates runs
    on the helpers alone, in one round. 1-row batches and those of 2..long_chunks rows each get one
    count (one compile each); an explicit long_chunks_small is kept; on a CPU nothing is fitted."""
    import sonicsampler.sampler as sampler_mod

    class Gpu:
        type = "cuda"

    gpu, cpu = Gpu(), torch.device("cpu")
    s = Sampler(151936, 4, "cpu", long_fill=False)   # above long_chunks rows: the plan without long_fill's helpers
    for sms, want in ((132, {1: (128, 128), 2: (64, 64), 16: (64, 64), 17: (16, 0)}),
                      (108, {1: (64, 64), 2: (64, 64), 16: (64, 64), 17: (16, 0)}),
                      (40, {1: (32, 32), 2: (16, 16), 16: (16, 0), 17: (16, 0)})):
        monkeypatch.setitem(sampler_mod._SMS, gpu, sms)
        for n, (chunks, helpers) in want.items():
            assert s._chunks(n, True, gpu) == chunks, (sms, n)
            assert sampler_mod._helpers(n, chunks, True, gpu) == helpers, (sms, n)
            assert n + helpers <= max(sms, n) or helpers == chunks - n
        assert s._chunks(2, False, gpu) == s.long_chunks and sampler_mod._helpers(2, 64, False, gpu) == 0
    assert [s._chunks(n, True, cpu) for n in (1, 2, 16, 17)] == [128, 128, 128, 16]
    assert sampler_mod._helpers(2, 128, True, cpu) == 126
    fixed = Sampler(151936, 4, "cpu", long_chunks_small=128)
    assert fixed._chunks(16, True, gpu) == 128


def test_long_fill_gives_batches_above_long_chunks_rows_helpers_up_to_one_program_per_sm(monkeypatch):
    """long_fill (Sampler): a shared batch of more than long_chunks rows that leaves at least long_chunks
    SMs free launches helpers up to one program per SM, and its passes take long_chunks_small chunks
    halved until the free SMs hold them (sampler._fill_programs); batches that leave fewer, unshared
    batches, batches up to long_chunks rows, Samplers without long_fill and the CPU keep their plans."""
    import sonicsampler.sampler as sampler_mod

    class Gpu:
        type = "cuda"

    gpu, cpu = Gpu(), torch.device("cpu")
    monkeypatch.setitem(sampler_mod._SMS, gpu, 132)
    s = Sampler(151936, 4, "cpu")            # long_fill by default (run 233)
    plain = Sampler(151936, 4, "cpu", long_fill=False)
    want = {1: (128, 128), 16: (64, 64), 17: (64, 115), 32: (64, 100), 64: (64, 68), 68: (64, 64),
            69: (32, 63), 100: (32, 32), 116: (16, 16), 117: (16, 0), 128: (16, 0), 200: (16, 0)}
    for n, (chunks, helpers) in want.items():
        assert s._chunks(n, True, gpu) == chunks, n
        assert s._helper_programs(n, chunks, True, gpu) == helpers, n
        assert n + helpers <= max(132, n)
        if n > 16:
            assert plain._chunks(n, True, gpu) == 16 and plain._helper_programs(n, 16, True, gpu) == 0
    assert s._chunks(32, False, gpu) == 16 and s._helper_programs(32, 16, False, gpu) == 0
    assert s._chunks(32, True, cpu) == 16 and s._helper_programs(32, 16, True, cpu) == 0
    with pytest.raises(ValueError, match="long_fill"):
        Sampler(151936, 4, "cpu", long_fill=1)


def test_long_fill_launches_equal_the_reference_and_the_default_plan(monkeypatch):
    """A 20-row batch with two long rows (a nucleus, a min-p set) among bounded ones, planned as on a GPU
    of 40 SMs with long_fill (monkeypatched SM count: 20 helpers, passes of 16 chunks where the default
    has 4 and no helpers) equals the reference and, bit for bit, the default plan's launch. Under the
    interpreter the helpers run after the rows and find them done: this checks the filled plan's
    scratch and launch, not the sharing (which the GPU checks do)."""
    import sonicsampler.sampler as sampler_mod
    monkeypatch.setattr(sampler_mod, "_sm_count_or_none", lambda dev: 40)
    gen = torch.Generator().manual_seed(41)
    n = 20
    logits = (0.4 * torch.randn(n, V, generator=gen)).to(torch.bfloat16)
    params = [SamplingParams(temperature=0.8, top_k=10, top_p=0.9, seed=700 + i) for i in range(n)]
    params[3] = SamplingParams(temperature=1.0, top_p=0.95, seed=703, logprobs=2)
    params[11] = SamplingParams(temperature=1.3, min_p=0.02, seed=711)
    support = (reference.probs(logits[[3, 11]], [params[3], params[11]]) > 0).sum(1)
    assert int(support.min()) > 4 * BOUND          # both sets far beyond the bound: they take the passes
    outs = []
    for fill in (True, False):
        s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK, long_block=64, long_chunks=4, long_chunks_small=16,
                    long_fill=fill)
        for i, p in enumerate(params):
            s.add_request(i, p)
        plan = s._plan(n, torch.bfloat16, False, 2, False, shared=True)
        assert plan["help"] == (20 if fill else 0)
        assert plan["const2"]["CHUNKS_LOG2"] == (4 if fill else 2) and plan["const2"]["HELPERS"] == fill
        positions = list(range(30, 30 + n))
        out = s.sample(logits, list(range(n)), positions)
        n_exact, n_equal = check_against_reference(logits, params, positions, [[]] * n, [[]] * n, out)
        assert n_exact == n and n_equal == n
        outs.append(out)
    for name in ("tokens", "logprob", "top_token_ids", "top_logprobs", "exact", "valid"):
        a, b = getattr(outs[0], name), getattr(outs[1], name)
        if a.dtype == torch.float32:   # bit for bit, NaN (no log-probability asked) included
            a, b = a.view(torch.int32), b.view(torch.int32)
        assert torch.equal(a, b), name


def test_helper_programs_share_a_lone_long_row_over_launches():
    """A batch with fewer rows than a pass has chunks launches helper-only stage-2 programs
    (kernels/shared_sets.py): here 2 rows and 4 chunks, so 2 helpers, at program ids 2 and 3. Tokens and
    log-probabilities equal the reference's over three launches, each row's board ends DONE (which no
    program waits on), and the second and third launches start from boards poisoned with other launches'
    states (DONE, and 0 for a fresh board). Under the interpreter the programs run in program-id order,
    so the helpers come after the rows, find them DONE and leave after their looks: this checks that a
    late helper ends and changes nothing; helpers that do share chunks are checked on the GPU
    (`benchmarks/check_sampler_gpu.py long_shared`, each long row bitwise equal alone and in a batch)."""
    gen = torch.Generator().manual_seed(37)
    logits = (0.4 * torch.randn(2, V, generator=gen)).to(torch.bfloat16)
    params = [SamplingParams(temperature=1.0, top_p=0.9, seed=500, logprobs=3),
              SamplingParams(temperature=0.7, top_k=20, top_p=0.9, seed=501, logprobs=3, logprobs_mode="raw")]
    s = Sampler(V, 2, "cpu", bound=BOUND, block=BLOCK, long_block=32, long_chunks=4, long_chunks_small=4)
    for i, p in enumerate(params):
        s.add_request(i, p)
    plan = s._plan(2, torch.bfloat16, False, 3, False, shared=True)
    assert plan["help"] == 2
    board = plan["scratch"]["board"]
    done = shared_sets.DONE.value
    for step, stale in enumerate((None, (done, 0), (0, done))):
        if stale is not None:
            board[:: shared_sets.BOARD_W.value][:2] = torch.tensor(stale, dtype=board.dtype)
        positions = [60 + step, 61 + step]
        out = s.sample(logits, [0, 1], positions)
        n_exact, n_equal = check_against_reference(logits, params, positions, [[]] * 2, [[]] * 2, out)
        assert n_exact == 2 and n_equal == 2
        assert board[:: shared_sets.BOARD_W.value][:2].tolist() == [done, done]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_processed_raw_logprobs_rows_stay_exact_without_the_launchers_top_k(dtype):
    """A launch planned without the launcher's raw top-k (raw_rows_processed False: a CUDA graph
    captured before a request with penalties, bias or a mask and raw logprobs was admitted) still
    gives such rows the reference's raw top-n: stage 2 builds it from the whole row. Without that,
    their top-n came from the processed candidates (here the penalties and bias move tokens in and out
    of the top). With and without a grammar mask."""
    gen = torch.Generator().manual_seed(41)
    n = 4
    logits = (1.5 * torch.randn(n, V, generator=gen)).to(dtype)
    top = logits.float().topk(8, dim=-1).indices
    params = [SamplingParams(temperature=0.8, repetition_penalty=3.0, seed=1, logprobs=5),
              SamplingParams(logit_bias={int(top[1, 0]): -20.0, int(top[1, 1]): -20.0, 3: 9.0}, seed=2, logprobs=5),
              SamplingParams(temperature=0.7, frequency_penalty=0.5, seed=3, logprobs=4, logprobs_mode="processed"),
              SamplingParams(temperature=1.3, seed=4, logprobs=5)]
    prompts = [top[0, :4].tolist(), [], [], []]
    mask = torch.full((n, -(-V // 32)), -1, dtype=torch.int32)
    mask[:, 0] = 0x0000FFFF                                        # tokens 16..31 not allowed
    for m in (None, mask):
        s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK)
        for i, p in enumerate(params):
            s.add_request(i, p, prompt_token_ids=prompts[i])
        plan = s._plan(n, dtype, m is not None, 5, False, penalised=True)
        assert plan["const2"]["RAW_TOP_FROM_CANDIDATES"]
        positions = list(range(20, 20 + n))
        out = s._launch(plan, logits, torch.arange(n), torch.tensor(positions), m)
        n_exact, _ = check_against_reference(logits, params, positions, prompts, [[]] * n, out, mask=m)
        assert n_exact == n


def test_helper_launches_whose_rows_point_at_no_slot_end():
    """Warm-up launches the SHARED variants with rows that point at no slot (all invalid): with helper
    programs too, every launch ends and its rows come out invalid."""
    s = Sampler(V, 2, "cpu", bound=BOUND, block=BLOCK, long_block=32, long_chunks=4, long_chunks_small=4)
    plan = s._plan(2, torch.bfloat16, False, 0, False, shared=True)
    assert plan["help"] == 2
    logits = torch.randn(2, V).to(torch.bfloat16)
    nowhere = torch.full((2,), s.table.max_slots, dtype=torch.int64)
    for _ in range(2):
        out = s._launch(plan, logits, nowhere, torch.zeros(2, dtype=torch.int64), None)
        assert out.tokens.tolist() == [-1, -1] and not bool(out.valid.any())


def test_shared_launches_without_a_row_that_may_exceed_the_bound_share_nothing():
    """Stage 2's SHARED variant (every CUDA-graph launch takes it) reads the batch's MAY_EXCEED bits
    first: with none set, no row announces itself or touches the board and the helpers leave at once
    (the board, poisoned here, is left as it was); with one set, the rows use the board (every state
    ends DONE). Both batches give the reference's tokens and log-probabilities."""
    gen = torch.Generator().manual_seed(43)
    logits = (0.4 * torch.randn(2, V, generator=gen)).to(torch.bfloat16)
    bounded = [SamplingParams(temperature=0.7, top_k=20, top_p=0.9, seed=600 + i, logprobs=2) for i in range(2)]
    s = Sampler(V, 3, "cpu", bound=BOUND, block=BLOCK, long_block=32, long_chunks=4, long_chunks_small=4)
    for i, p in enumerate(bounded):
        s.add_request(i, p)
    s.add_request(2, SamplingParams(temperature=1.0, top_p=0.9, seed=602, logprobs=2))
    assert [(s.table.flags[i].item() & bits.MAY_EXCEED) != 0 for i in range(3)] == [False, False, True]
    plan = s._plan(2, torch.bfloat16, False, 2, False, shared=True)
    assert plan["const2"]["SHARED"] and plan["help"] == 2
    board = plan["scratch"]["board"]
    positions = [70, 71]
    for slots, params in (([0, 1], bounded), ([0, 2], [bounded[0], s.table.host[2]])):
        share = 2 in slots
        board.fill_(0 if share else 7)
        out = s._launch(plan, logits, torch.tensor(slots), torch.tensor(positions), None)
        n_exact, n_equal = check_against_reference(logits, params, positions, [[]] * 2, [[]] * 2, out)
        assert n_exact == 2 and n_equal == 2
        states = board[:: shared_sets.BOARD_W.value][:2].tolist()
        assert states == ([shared_sets.DONE.value] * 2 if share else [7, 7]), (slots, states)


def test_batches_that_may_hold_long_rows_share_their_passes():
    """Stage 2's SHARED variant, whose programs share the exact passes (kernels/shared_sets.py), runs
    only batches with a request whose set can exceed the bound: top-p or min-p without a top-k within the
    bound, or a top-k above it; never with the bounded approximation. It adds helper programs when the
    batch has fewer rows than a pass has chunks. Warm-up prepares both variants whatever is admitted.
    No kernel runs here."""
    cases = [(SamplingParams(temperature=0.7, top_k=32, top_p=0.9), False),
             (SamplingParams(temperature=0.7), False),                       # untruncated: stage 1's draw
             (SamplingParams(temperature=0.0, top_k=20), False),
             (SamplingParams(temperature=0.7, top_p=0.9), True),
             (SamplingParams(temperature=0.7, min_p=0.05), True),
             (SamplingParams(temperature=0.7, top_k=33), True),
             (SamplingParams(temperature=0.7, top_k=V), False)]              # k >= V: no top-k
    s = Sampler(V, len(cases), "cpu", bound=BOUND, block=BLOCK)
    for i, (p, _) in enumerate(cases):
        s.add_request(i, p)
    assert [s._batch_summary([i], False)[3] for i in range(len(cases))] == [want for _, want in cases]
    assert [(int(f) & bits.MAY_EXCEED) != 0 for f in s.table.flags] == [want for _, want in cases]
    assert s._batch_summary([0, 3], False)[3] and s._batch_summary(None, False)[3]
    plan, alone = s._plan(2, torch.bfloat16, False, 0, False, shared=True), s._plan(2, torch.bfloat16, False, 0, False)
    assert plan["const2"]["SHARED"] and not alone["const2"]["SHARED"]
    # Up to long_chunks rows a pass has long_chunks_small chunks, and helpers fill the grid up to them.
    assert (plan["help"], alone["help"]) == (s.long_chunks_small - 2, 0)
    assert plan["const2"]["CHUNKS_LOG2"] == (s.long_chunks_small - 1).bit_length()
    edge = s._plan(s.long_chunks, torch.bfloat16, False, 0, False, shared=True)
    assert edge["help"] == s.long_chunks_small - s.long_chunks
    wide = s._plan(s.long_chunks + 1, torch.bfloat16, False, 0, False, shared=True)
    assert wide["help"] == 0 and plan["const2"]["HELPERS"] and not wide["const2"]["HELPERS"]
    assert wide["const2"]["CHUNKS_LOG2"] == (s.long_chunks - 1).bit_length()
    fresh = Sampler(V, 1, "cpu", bound=BOUND, block=BLOCK)
    fresh.warmup(2)   # nothing admitted: the interpreter compiles nothing, but the plans are made
    assert {k.shared for k in fresh._plans} == {False, True}
    # Device slots (the CUDA-graph path: the batch's requests are unknown on the host) always share
    # the passes, so that a graph captured before a request that may exceed the bound was admitted
    # samples it exactly; host slots share only when a row's request may exceed it.
    fresh.add_request(0, SamplingParams(temperature=0.7, top_k=20))
    assert fresh._batch_summary(None, False)[3] and not fresh._batch_summary([0], False)[3]
    approx = Sampler(V, 1, "cpu", bound=BOUND, block=BLOCK, allow_bounded_approximation=True)
    approx.add_request(0, SamplingParams(temperature=0.7, top_p=0.9))
    assert not approx._batch_summary([0], False)[3] and not approx._batch_summary(None, False)[3]
    assert not approx._plan(1, torch.bfloat16, False, 0, False, shared=True)["const2"]["SHARED"]


def test_greedy_rows_processed_logprobs_beyond_the_bound():
    """A greedy row's token is the argmax whatever its set, but its processed log-probabilities are
    normalized over its truncated set (at temperature 1): for sets beyond the bound the kernel takes
    the exact passes for that normalizer, so the row is exact and its log-probabilities equal the
    reference's. bf16 and fp32 rows."""
    gen = torch.Generator().manual_seed(17)
    cuts = [dict(top_p=0.9), dict(top_k=200), dict(min_p=0.05), dict(top_k=300, top_p=0.8)]
    params = [SamplingParams(temperature=0.0, logprobs=3, logprobs_mode="processed", **c) for c in cuts]
    for dtype in (torch.bfloat16, torch.float32):
        logits = (0.4 * torch.randn(len(params), V, generator=gen)).to(dtype)
        n = len(params)
        out = sample(logits, params, positions=list(range(n)), bound=BOUND, block=BLOCK)
        check_against_reference(logits, params, list(range(n)), [[]] * n, [[]] * n, out)
        approx = sample(logits, params, positions=list(range(n)), bound=BOUND, block=BLOCK,
                        allow_bounded_approximation=True)
        assert not bool(approx.exact.any()) and torch.equal(approx.tokens, out.tokens)


def _tie_after_division(dtype, t: float) -> tuple[float, float]:
    """Two adjacent values of `dtype` in [1, 4) whose quotients by t (fp32, as the kernels divide) round
    to the same `dtype` value: distinct raw values that tie on the candidates' rank values."""
    grid = torch.arange(1.0, 4.0, 2.0 ** -10).to(dtype).unique()
    q = (grid.float() / torch.tensor(t, dtype=torch.float32)).to(dtype)
    i = int(torch.nonzero(q[1:] == q[:-1])[0, 0])
    return float(grid[i]), float(grid[i + 1])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_raw_top_logprobs_of_temperature_rows_come_from_the_kernel(dtype):
    """Temperature-only rows get raw top-n log-probabilities in stage 2, without the launcher's extra
    top-k of the logits. Row 0: random logits (re-ranking the candidates on raw values). Row 1: lo < hi
    are distinct values that tie after division by 1.9 and rounding (for bf16 1.8984375 and 1.90625),
    and the larger ones sit at high indices behind 100 lower-index ties, outside the 32 candidates:
    only the whole-row fallback finds them. Row 2: no temperature (candidate order is raw order). Row
    3: four tokens tied at the top, candidate order 5, 10, 200, 300, raw order 200, 300 (hi, equal:
    lower index first), then 5: the re-ranking of the head alone (the first 2 x 8 candidates), ties
    included. Row 4: 24 tokens tied at the top (20 lo, then 4 hi at 40..43), a run of ties from the 6th
    candidate past the head: ranking the head alone would give 0..5, the whole candidate set gives
    40..43, 0, 1. Both 16-bit dtypes: their re-ranking keys are built from the value in the input
    dtype."""
    lo, hi = _tie_after_division(dtype, 1.9)
    gen = torch.Generator().manual_seed(5)
    logits = torch.randn(5, V, generator=gen)
    logits[1] = -3.0
    logits[1, :100] = lo
    logits[1, 500:510] = hi
    logits[3] = 0.3 * logits[3]                      # below 1.5 without ties at the tail
    logits[3, [5, 10]] = lo
    logits[3, [200, 300]] = hi
    logits[4] = 0.3 * logits[4]
    logits[4, :20] = lo
    logits[4, 40:44] = hi
    logits = logits.to(dtype)
    params = [SamplingParams(temperature=0.7, top_k=20, seed=1, logprobs=6),
              SamplingParams(temperature=1.9, top_p=0.9, seed=2, logprobs=6),
              SamplingParams(top_k=5, seed=3, logprobs=3),
              SamplingParams(temperature=1.9, seed=4, logprobs=3),
              SamplingParams(temperature=1.9, seed=5, logprobs=6)]
    s = Sampler(V, 5, "cpu", bound=BOUND, block=BLOCK)
    for i, p in enumerate(params):
        s.add_request(i, p)
    calls = []
    s._raw_top = lambda *a: calls.append(a)          # the launcher's raw top-k pass must not run
    out = s.sample(logits, [0, 1, 2, 3, 4], [4, 5, 6, 7, 8])
    ref = reference.sample(logits, params, positions=[4, 5, 6, 7, 8])
    assert not calls
    assert torch.equal(out.top_token_ids, ref.top_token_ids)
    assert out.top_token_ids[1, :6].tolist() == list(range(500, 506))
    assert out.top_token_ids[3, :3].tolist() == [200, 300, 5]
    assert out.top_token_ids[4, :6].tolist() == [40, 41, 42, 43, 0, 1]
    assert_close(out.top_logprobs, ref.top_logprobs)


@pytest.mark.parametrize("path", ["untruncated", "long_nucleus", "long_top_k_top_p_fp32"])
def test_draws_of_the_exact_paths_follow_reference_probs(path):
    """Statistical test of the exact paths beyond the bound against reference.probs: one request per
    draw, all alike but for their positions (so their Philox noise), in one batch. draw_checks: each
    token's count against Binomial(n, p) exactly (two-sided tail >= 1e-7, about |z| < 5.3; over 64
    tokens a false alarm has probability < 1e-5), and no draw outside the distribution's support. On a
    GPU 100 000 draws, where an absolute error of 0.01 in any probability is >= 7 standard errors.
    Under the interpreter 800 draws (400 for the fp32 path, whose rows take 17 passes each): an error e
    in a probability p fails once e > ~5.3 sqrt(p (1 - p) / n), i.e. above 0.08 (0.11) for p = 0.2
    and 0.04 (0.06) for p = 0.05. The interpreter_speedup of session 27 halved their cost; they had
    400 and 200 draws before, and a per-token z-test (at 800 draws it failed on a token of probability
    0.0037 drawn 13 times, expected 3: a binomial tail of 3e-5, |z| = 5.8)."""
    v, bound = 64, 8
    n = 100_000 if torch.cuda.is_available() else (400 if path.endswith("fp32") else 800)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    # Untruncated: peaked enough that a wrong temperature moves probabilities by > 0.1. Long sets:
    # flat enough that top-p 0.9 keeps far more than the bound, on values around 10, where the top-p
    # search starts narrowed (long_rows.nucleus_start: 3 passes instead of 5; in fp32, after the top-k's
    # 8, from the top-k cut's key, nucleus_after_top_k: 6 instead of 8), which also keeps CI shorter.
    scale = 1.5 if path == "untruncated" else 0.4
    row = scale * torch.randn(v, generator=torch.Generator().manual_seed(21))
    if path != "untruncated":
        row += 10.0
    p = {"untruncated": SamplingParams(temperature=1.0, seed=77),
         "long_nucleus": SamplingParams(temperature=1.2, top_p=0.9, seed=77),
         "long_top_k_top_p_fp32": SamplingParams(temperature=1.2, top_k=48, top_p=0.9, seed=77)}[path]
    # One sub-tile per exact pass (the interpreter's cost grows with their number; the carries between
    # sub-tiles are checked token for token by the tests above).
    s = Sampler(v, n, dev, bound=bound, block=16, long_block=v)
    resolved = [s.add_request(i, p) for i in range(n)][0]
    logits = row.to(torch.float32 if path.endswith("fp32") else torch.bfloat16).repeat(n, 1).to(dev)
    out = s.sample(logits, torch.arange(n, device=dev), torch.arange(n, device=dev) * 3 + 5)
    target = reference.probs(logits[:1].cpu(), [resolved])[0]
    assert bool(out.exact.all()) and bool(out.valid.all())
    if path != "untruncated":
        assert int((target > 0).sum()) > 4 * bound          # the set lies far beyond the bound
    assert_draws_follow(out.tokens, target)


def test_the_helpers_path_is_out_of_line():
    """Stage 2's helper-only path (sample._help) is a noinline call: inlined, its code came first in the
    SASS and slowed the rows' code behind it ~1.4x at 64 bounded rows on an H100 (instruction fetch, runs
    230-232). Results do not show it; this keeps the attribute from being dropped by accident."""
    from sonicsampler.kernels import sample
    f = sample._help
    # a JITFunction's attribute when compiled, the interpreter's wrapper keeps it among its kwargs
    assert getattr(f, "noinline", None) or getattr(f, "kwargs", {}).get("noinline")
