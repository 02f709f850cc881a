"""Hand-computed cases for the reference (SEMANTICS.md sections 1-6).

Every expected value is written out here from the contract (small vocabularies, values chosen so the
answer is obvious or a few math.exp/math.log calls away); none is obtained by running the reference on
another path. Where the order of operations matters, the comment shows what a wrong order would give.
Random numbers, where an expectation needs them, come from `sonicsampler.rng` (tested on its own against
the Random123 known answers and the Triton kernel in test_rng.py).
"""
from __future__ import annotations

import math

import pytest
import torch

from sonicsampler import reference as R
from sonicsampler import rng
from sonicsampler.params import SamplingParams

INF = math.inf
NAN = math.nan
SEED = 20240601
LN = math.log


def params(**kw) -> SamplingParams:
    kw.setdefault("seed", SEED)
    return SamplingParams(**kw)


def softmax(xs) -> list[float]:
    """Softmax by hand over the finite entries (-inf -> probability 0)."""
    m = max(x for x in xs if x != -INF)
    e = [0.0 if x == -INF else math.exp(x - m) for x in xs]
    s = sum(e)
    return [v / s for v in e]


def restricted(xs, keep) -> list[float]:
    """Softmax over the tokens in `keep` only."""
    return softmax([x if i in keep else -INF for i, x in enumerate(xs)])


def probs1(x, *, dtype=torch.float32, prompt=None, output=None, mask=None, **kw) -> torch.Tensor:
    logits = torch.tensor([x], dtype=dtype)
    return R.probs(logits, params(**kw),
                   prompt_token_ids=None if prompt is None else [prompt],
                   output_token_ids=None if output is None else [output],
                   grammar_bitmask=None if mask is None else torch.tensor([mask], dtype=torch.int32))[0]


def sample_support(x, n=48, *, dtype=torch.float32, prompt=None, output=None, mask=None, **kw) -> set[int]:
    """The set of tokens `reference.sample` returns for one row over positions 0..n-1."""
    logits = torch.tensor([x], dtype=dtype).expand(n, -1)
    out = R.sample(logits, params(**kw), positions=torch.arange(n),
                   prompt_token_ids=None if prompt is None else [prompt] * n,
                   output_token_ids=None if output is None else [output] * n,
                   grammar_bitmask=None if mask is None else torch.tensor([mask] * n, dtype=torch.int32))
    assert out.valid.all()
    return set(out.tokens.tolist())


def assert_probs(got: torch.Tensor, expected, atol=2e-6):
    assert got.dtype == torch.float64
    exp = torch.tensor(expected, dtype=torch.float64)
    assert got.shape == exp.shape
    # zero stays exactly zero: a truncated token must have no mass at all
    assert torch.equal(got == 0, exp == 0), (got, exp)
    torch.testing.assert_close(got, exp, rtol=0, atol=atol)


def i32(word: int) -> int:
    """A 32-bit pattern as the signed int32 value stored in the bitmask tensor."""
    word &= 0xFFFFFFFF
    return word - (1 << 32) if word >= 1 << 31 else word


# =================================================================================================
# 1. Logit processing
# =================================================================================================
class TestGrammarMask:
    def test_lsb_first(self):
        # 0xA5 = 0b1010_0101: bits 0, 2, 5, 7 -> those tokens allowed (LSB first)
        assert_probs(probs1([0.0] * 8, mask=[0xA5]), [0.25, 0, 0.25, 0, 0, 0.25, 0, 0.25])
        assert sample_support([0.0] * 8, mask=[0xA5]) == {0, 2, 5, 7}

    def test_bits_past_vocab_ignored(self):
        # V = 5; bits 5..31 set (word negative as int32) must not matter: allowed = {0, 2}
        word = i32(0xFFFFFFE0 | 0b00101)
        assert word < 0
        assert_probs(probs1([1.0, 2.0, 3.0, 4.0, 5.0], mask=[word]), restricted([1, 2, 3, 4, 5], {0, 2}))
        # only bits >= V set: every token masked -> invalid row
        out = R.sample(torch.zeros(1, 5), params(), positions=[0],
                       grammar_bitmask=torch.tensor([[i32(0xFFFFFFE0)]], dtype=torch.int32))
        assert out.tokens.tolist() == [-1] and out.valid.tolist() == [False]

    def test_sign_bit_word(self):
        # V = 40, two words. Word 0 = bit 31 | bit 0 (negative int32): tokens 0 and 31 allowed, and tokens
        # 1..30 NOT (an arithmetic shift without '& 1' reads (w >> 30) = -2 as 'set').
        # Word 1 = bit 3 (token 35) | bit 9 and bit 31 (tokens 41 and 63, past V: ignored).
        mask = [i32((1 << 31) | 1), i32((1 << 3) | (1 << 9) | (1 << 31))]
        expected = [0.0] * 40
        for t in (0, 31, 35):
            expected[t] = 1 / 3
        assert_probs(probs1([0.0] * 40, mask=mask), expected)
        assert sample_support([0.0] * 40, mask=mask) == {0, 31, 35}
        # greedy: token 31 has the largest allowed logit
        x = [float(t) / 10 for t in range(40)]      # argmax overall would be 39
        assert_probs(probs1(x, mask=mask, temperature=0.0), [1.0 if t == 35 else 0.0 for t in range(40)])
        x[31] = 9.0
        assert_probs(probs1(x, mask=mask, temperature=0.0), [1.0 if t == 31 else 0.0 for t in range(40)])

    def test_per_row_masks(self):
        logits = torch.tensor([[0.0, 1.0, 2.0, 3.0]] * 2)
        mask = torch.tensor([[0b0011], [0b1100]], dtype=torch.int32)
        p = R.probs(logits, params(temperature=0.0), grammar_bitmask=mask)
        assert p.tolist() == [[0, 1, 0, 0], [0, 0, 0, 1]]

    def test_bias_cannot_unmask(self):
        # mask applied first: a masked token stays -inf whatever its bias
        assert_probs(probs1([0.0, 0.0, 0.0, 0.0], mask=[0b1101], logit_bias={1: 100.0}), [1 / 3, 0, 1 / 3, 1 / 3])


class TestPenalties:
    def test_repetition_penalty(self):
        x = [2.0, -1.0, 0.5, -0.5, 1.0]
        # seen = prompt {0} OR output {1, 4}: positive / r, negative * r; tokens 2, 3 untouched;
        # token 1 occurs twice but is penalized once.
        got = probs1(x, prompt=[0], output=[1, 1, 4], repetition_penalty=2.0)
        assert_probs(got, softmax([1.0, -2.0, 0.5, -0.5, 0.5]))
        got = probs1(x, prompt=[0], output=[1, 1, 4], repetition_penalty=0.5)
        assert_probs(got, softmax([4.0, -0.5, 0.5, -0.5, 2.0]))
        # a token in both prompt and output is penalized once
        got = probs1(x, prompt=[0, 1], output=[1], repetition_penalty=2.0)
        assert_probs(got, softmax([1.0, -2.0, 0.5, -0.5, 1.0]))
        # r = 1 is off
        assert_probs(probs1(x, prompt=[0], output=[1], repetition_penalty=1.0), softmax(x))

    def test_frequency_and_presence_count_output_only(self):
        x = [1.0] * 5
        # output counts c = [3, 1, 0, 0, 0]; prompt tokens 3, 4 do not count
        got = probs1(x, prompt=[3, 3, 4], output=[0, 0, 1, 0], frequency_penalty=0.5, presence_penalty=0.25)
        assert_probs(got, softmax([1 - 1.5 - 0.25, 1 - 0.5 - 0.25, 1, 1, 1]))
        got = probs1(x, prompt=[3, 3, 4], output=[0, 0, 1, 0], frequency_penalty=-0.5)
        assert_probs(got, softmax([2.5, 1.5, 1, 1, 1]))
        got = probs1(x, prompt=[3, 3, 4], output=[0, 0, 1, 0], presence_penalty=2.0)
        assert_probs(got, softmax([-1.0, -1.0, 1, 1, 1]))

    def test_logit_bias(self):
        got = probs1([0.0, 0.0, 0.0, 0.0], logit_bias={1: 1.5, 2: -INF, 3: -0.5})
        assert_probs(got, softmax([0.0, 1.5, -INF, -0.5]))
        assert sample_support([0.0, 0.0, 0.0, 0.0], logit_bias={1: 1.5, 2: -INF, 3: -0.5}) == {0, 1, 3}

    def test_temperature(self):
        assert_probs(probs1([1.0, 2.0, 3.0, 4.0], temperature=0.5), softmax([2.0, 4.0, 6.0, 8.0]))
        assert_probs(probs1([1.0, 2.0, 3.0, 4.0], temperature=2.0), softmax([0.5, 1.0, 1.5, 2.0]))

    def test_processing_order(self):
        """grammar -> repetition -> frequency/presence -> bias -> temperature, step by step."""
        x = [2.0, 0.5, 1.0, -1.0, 3.0]
        # mask removes token 4; prompt [1], output [0, 3]; r = 2, f = 1, bias {1: -1, 2: +1}, T = 2
        # repetition (seen {0, 1, 3}):  [1.0, 0.25, 1.0, -2.0]
        # frequency (c = [1, 0, 0, 1]): [0.0, 0.25, 1.0, -3.0]
        # bias:                         [0.0, -0.75, 2.0, -3.0]
        # temperature 2:                [0.0, -0.375, 1.0, -1.5]
        # (frequency before repetition would give token 0 (2-1)/2 = 0.5; bias before repetition gives
        #  token 1 (0.5-1)*2 = -1.0; temperature before bias gives token 2 0.5+1 = 1.5.)
        ops = dict(repetition_penalty=2.0, frequency_penalty=1.0, logit_bias={1: -1.0, 2: 1.0})
        kw = dict(prompt=[1], output=[0, 3], mask=[0b01111], **ops)
        assert_probs(probs1(x, temperature=2.0, **kw), softmax([0.0, -0.375, 1.0, -1.5, -INF]))
        # the same with logprobs "processed": log-probabilities of the processed logits
        out = R.sample(torch.tensor([x]), params(temperature=2.0, logprobs=4, logprobs_mode="processed", **ops),
                       positions=[3], prompt_token_ids=[kw["prompt"]], output_token_ids=[kw["output"]],
                       grammar_bitmask=torch.tensor([kw["mask"]], dtype=torch.int32))
        z = LN(math.exp(0.0) + math.exp(-0.375) + math.exp(1.0) + math.exp(-1.5))
        assert out.top_token_ids.tolist() == [[2, 0, 1, 3]]
        torch.testing.assert_close(out.top_logprobs[0].double(),
                                   torch.tensor([1.0 - z, 0.0 - z, -0.375 - z, -1.5 - z], dtype=torch.float64),
                                   rtol=0, atol=1e-6)
        # greedy uses the same steps without temperature: [0.0, -0.75, 2.0, -3.0] -> token 2
        assert_probs(probs1(x, temperature=0.0, **kw), [0, 0, 1, 0, 0])


# =================================================================================================
# 2. Truncation
# =================================================================================================
class TestMinP:
    def test_threshold_inclusive(self):
        x = [0.0, LN(0.5), LN(0.25), LN(0.1)]
        # keep x >= max + ln(m) = ln(0.25): token 2 sits exactly on the threshold and is kept
        assert_probs(probs1(x, min_p=0.25), [1 / 1.75, 0.5 / 1.75, 0.25 / 1.75, 0.0])
        assert_probs(probs1(x, min_p=0.3), [1 / 1.5, 0.5 / 1.5, 0.0, 0.0])
        assert_probs(probs1(x, min_p=0.0), [1 / 1.85, 0.5 / 1.85, 0.25 / 1.85, 0.1 / 1.85])
        assert sample_support(x, min_p=0.3) <= {0, 1}

    def test_min_p_one_keeps_all_maxima(self):
        assert_probs(probs1([1.0, 3.0, 3.0, 0.0], min_p=1.0), [0, 0.5, 0.5, 0])

    def test_after_temperature(self):
        # processed logits [0, -0.5, -1, -1.5] (T = 2); ln(m) = -1.2 keeps tokens 0, 1, 2.
        # (on the raw logits [0, -1, -2, -3] it would keep only 0, 1)
        m = math.exp(-1.2)
        assert_probs(probs1([0.0, -1.0, -2.0, -3.0], temperature=2.0, min_p=m), restricted([0, -0.5, -1, -1.5], {0, 1, 2}))


class TestTopK:
    X = [1.0, 3.0, 3.0, 2.0, 3.0]

    def test_ties_at_boundary_to_lower_index(self):
        assert_probs(probs1(self.X, top_k=2), [0, 0.5, 0.5, 0, 0])
        assert_probs(probs1(self.X, top_k=1), [0, 1, 0, 0, 0])
        assert_probs(probs1(self.X, top_k=4), restricted(self.X, {1, 2, 3, 4}))
        assert sample_support(self.X, top_k=2) == {1, 2}

    @pytest.mark.parametrize("k", [0, 5, 6, 1000])
    def test_off(self, k):
        assert_probs(probs1(self.X, top_k=k), softmax(self.X))

    def test_masked_tokens_never_fill_k(self):
        # only 2 finite tokens, k = 3: the -inf token is not 'kept'
        assert_probs(probs1([0.0, -INF, 1.0], top_k=3), softmax([0.0, -INF, 1.0]))


class TestTopP:
    X = [LN(0.2), LN(0.4), LN(0.1), LN(0.3)]   # descending order: token 1, 3, 0, 2

    @pytest.mark.parametrize("p,keep", [
        (0.3, {1}),            # 0.4 >= 0.3 already
        (0.5, {1, 3}),         # 0.4 < 0.5, 0.7 crosses: the crossing token is kept
        (0.75, {1, 3, 0}),     # 0.7 < 0.75, 0.9 crosses
        (0.95, {1, 3, 0, 2}),
        (1e-9, {1}),           # at least one token
        (1.0, {0, 1, 2, 3}),   # off
    ])
    def test_prefix(self, p, keep):
        q = [0.2, 0.4, 0.1, 0.3]
        mass = sum(q[i] for i in keep)
        assert_probs(probs1(self.X, top_p=p), [q[i] / mass if i in keep else 0.0 for i in range(4)])
        if p < 1.0:
            assert sample_support(self.X, top_p=p) <= keep

    def test_cumulative_exactly_p_stops(self):
        # four equal logits: probabilities exactly 0.25, cumulative exactly 0.25, 0.5, 0.75, 1.0.
        # The shortest prefix with cumulative >= p: p = 0.5 -> {0, 1} (not {0, 1, 2}); p = 0.25 -> {0}.
        assert_probs(probs1([0.0] * 4, top_p=0.5), [0.5, 0.5, 0, 0], atol=0)
        assert_probs(probs1([0.0] * 4, top_p=0.25), [1, 0, 0, 0], atol=0)
        assert_probs(probs1([0.0] * 4, top_p=0.75), [1 / 3, 1 / 3, 1 / 3, 0], atol=1e-15)

    def test_ties_lower_index_first(self):
        x = [0.0, LN(2), LN(2), 0.0]     # probabilities [1/6, 1/3, 1/3, 1/6]
        assert_probs(probs1(x, top_p=0.3), [0, 1, 0, 0])                    # token 1 before token 2
        assert_probs(probs1(x, top_p=0.5), [0, 0.5, 0.5, 0])
        assert_probs(probs1(x, top_p=0.7), [0.2, 0.4, 0.4, 0])              # token 0 before token 3

    def test_renormalized_after_top_k(self):
        # probabilities [0.4, 0.3, 0.2, 0.1]; top-k 2 -> {0, 1} renormalized to [4/7, 3/7];
        # top-p 0.5: 4/7 >= 0.5 -> {0}. (top-p before top-k, or without renormalizing: {0, 1}.)
        x = [LN(0.4), LN(0.3), LN(0.2), LN(0.1)]
        assert_probs(probs1(x, top_k=2, top_p=0.5), [1, 0, 0, 0])
        assert_probs(probs1(x, top_k=2, top_p=0.6), [4 / 7, 3 / 7, 0, 0])

    def test_min_p_before_top_p(self):
        # probabilities [0.5, 0.2, 0.2, 0.1]; min-p 0.3 keeps p >= 0.15: {0, 1, 2} -> [5/9, 2/9, 2/9];
        # top-p 0.75: cumulative 5/9, 7/9 -> {0, 1}. (top-p first: 0.5, 0.7, 0.9 -> {0, 1, 2}, min-p keeps it.)
        x = [LN(0.5), LN(0.2), LN(0.2), LN(0.1)]
        assert_probs(probs1(x, min_p=0.3, top_p=0.75), [5 / 7, 2 / 7, 0, 0])

    # min-p and top-k commute (each keeps an upper set of the same ranking), so the order that matters,
    # and is tested above, is that top-p comes last, over the renormalized survivors of both.
    def test_min_p_top_k_top_p_chain(self):
        q = [0.35, 0.25, 0.2, 0.1, 0.06, 0.04]
        # min-p 0.2 -> p >= 0.07: {0,1,2,3}; top-k 3 -> {0,1,2} = [0.4375, 0.3125, 0.25];
        # top-p 0.7: cumulative 0.4375, 0.75 -> {0, 1}
        assert_probs(probs1([LN(v) for v in q], min_p=0.2, top_k=3, top_p=0.7), [0.35 / 0.6, 0.25 / 0.6, 0, 0, 0, 0])


# =================================================================================================
# 3. Selection, ranking precision
# =================================================================================================
class TestGreedy:
    def test_ties_to_lower_index(self):
        x = torch.tensor([[1.0, 3.0, 3.0, 2.0]])
        for seed, pos in [(0, 0), (99, 5), (2**64 - 1, 2**40)]:
            out = R.sample(x, params(temperature=0.0, seed=seed), positions=[pos])
            assert out.tokens.tolist() == [1] and out.valid.tolist() == [True]
        # greedy needs no seed
        out = R.sample(x, SamplingParams(temperature=0.0), positions=[0])
        assert out.tokens.tolist() == [1]
        assert_probs(probs1([1.0, 3.0, 3.0, 2.0], temperature=0.0), [0, 1, 0, 0])

    def test_after_penalties(self):
        # [3, 2.5, 0, 0] with output [0] and f = 1 -> [2, 2.5, 0, 0] -> token 1
        assert_probs(probs1([3.0, 2.5, 0.0, 0.0], output=[0], frequency_penalty=1.0, temperature=0.0), [0, 1, 0, 0])


class TestRankingPrecision:
    # Input logits [1.0, 1.0, 0.0, -1.0]; a bias of +b on token 1 gives fp32 values 1.0 and 1+b.
    # bf16 spacing at 1.0 is 2**-7 (b = 0.001 rounds back to 1.0: a tie -> token 0); fp16 spacing is
    # 2**-10 (b = 0.0004 rounds back, b = 0.001 does not); fp32 ranks on the fp32 values.
    CASES = [
        (torch.bfloat16, 0.001, 0),
        (torch.bfloat16, 0.01, 1),
        (torch.float16, 0.0004, 0),
        (torch.float16, 0.001, 1),
        (torch.float32, 0.0004, 1),
    ]

    @pytest.mark.parametrize("dtype,b,winner", CASES)
    def test_greedy_and_top_k(self, dtype, b, winner):
        x = [1.0, 1.0, 0.0, -1.0]
        onehot = [1.0 if t == winner else 0.0 for t in range(4)]
        assert_probs(probs1(x, dtype=dtype, logit_bias={1: b}, temperature=0.0), onehot)
        assert_probs(probs1(x, dtype=dtype, logit_bias={1: b}, top_k=1), onehot)
        # probabilities use the fp32 processed values, not the rounded ones
        e = math.exp(b)
        assert_probs(probs1(x, dtype=dtype, logit_bias={1: b}, top_k=2), [1 / (1 + e), e / (1 + e), 0, 0], atol=1e-7)

    @pytest.mark.parametrize("dtype,b,winner", CASES)
    def test_top_p_order(self, dtype, b, winner):
        # two tokens with ~0.5 each; top-p 0.4 keeps only the first in ranking order
        x = [1.0, 1.0, -30.0, -30.0]
        onehot = [1.0 if t == winner else 0.0 for t in range(4)]
        assert_probs(probs1(x, dtype=dtype, logit_bias={1: b}, top_p=0.4), onehot)


# =================================================================================================
# 6. Bad input
# =================================================================================================
class TestInvalidRows:
    def test_nan_row_isolated(self):
        logits = torch.tensor([[0.0, 5.0, 1.0, 2.0],
                               [1.0, NAN, 0.0, 0.0],
                               [0.0, 0.0, 7.0, 1.0],
                               [0.5, 0.1, 0.2, 0.3]])
        plist = [params(temperature=0.0), params(), params(top_k=1), params(seed=77, logprobs=2)]
        out = R.sample(logits, plist, positions=[0, 1, 2, 3])
        assert out.valid.tolist() == [True, False, True, True]
        assert out.tokens[:3].tolist() == [1, -1, 2]
        # the stochastic row 3 gives the token it gives alone (same seed and position)
        alone = R.sample(logits[3:], plist[3], positions=[3])
        assert out.tokens[3] == alone.tokens[0]
        assert torch.equal(out.top_token_ids[3], alone.top_token_ids[0])
        assert math.isnan(out.logprob[1])
        assert out.top_token_ids[1].tolist() == [-1, -1]
        p = R.probs(logits, plist)
        assert p[1].tolist() == [0.0] * 4
        assert_probs(p[2], [0, 0, 1, 0])

    def test_nan_row_greedy_and_logprobs(self):
        out = R.sample(torch.tensor([[NAN, 1.0]]), params(temperature=0.0, logprobs=1), positions=[0])
        assert out.tokens.tolist() == [-1] and out.valid.tolist() == [False]
        assert math.isnan(out.logprob[0]) and out.top_token_ids.tolist() == [[-1]]

    def test_plus_inf_row_invalid(self):
        out = R.sample(torch.tensor([[INF, 1.0, 0.0], [0.0, 9.0, 1.0]]), params(temperature=0.0), positions=[0, 1])
        assert out.tokens.tolist() == [-1, 1] and out.valid.tolist() == [False, True]

    @pytest.mark.parametrize("how", ["logits", "bitmask", "bias"])
    def test_fully_masked_row(self, how):
        v = 4
        logits = torch.tensor([[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]])
        mask = None
        plist = [params(), params(temperature=0.0)]
        if how == "logits":
            logits[0] = -INF
        elif how == "bitmask":
            mask = torch.tensor([[0], [0b1111]], dtype=torch.int32)
        else:
            plist[0] = params(logit_bias={t: -INF for t in range(v)})
        out = R.sample(logits, plist, positions=[0, 0], grammar_bitmask=mask)
        assert out.tokens.tolist() == [-1, 3]
        assert out.valid.tolist() == [False, True]
        assert R.probs(logits, plist, grammar_bitmask=mask)[0].tolist() == [0.0] * v


# =================================================================================================
# 4. Log-probabilities
# =================================================================================================
class TestLogprobs:
    X = [1.0, 2.0, 3.0, 0.0]

    def _sample(self, n=16, rows=None, **kw):
        logits = torch.tensor([self.X if rows is None else rows]).expand(n, -1)
        return R.sample(logits, params(**kw), positions=torch.arange(n))

    def test_raw(self):
        z = LN(sum(math.exp(v) for v in self.X))
        out = self._sample(temperature=0.5, top_k=2, logprobs=3, logprobs_mode="raw")
        assert set(out.tokens.tolist()) <= {1, 2}
        for tok, lp in zip(out.tokens.tolist(), out.logprob.tolist()):
            assert lp == pytest.approx(self.X[tok] - z, abs=1e-6)
        assert out.top_token_ids.tolist() == [[2, 1, 0]] * 16
        torch.testing.assert_close(out.top_logprobs[0].double(),
                                   torch.tensor([3 - z, 2 - z, 1 - z], dtype=torch.float64), rtol=0, atol=1e-6)

    def test_processed(self):
        # x / T = [2, 4, 6, 0], top-k 2 keeps {2, 1}; normalizer over the survivors only
        z = LN(math.exp(6) + math.exp(4))
        out = self._sample(n=64, temperature=0.5, top_k=2, logprobs=3, logprobs_mode="processed")
        assert set(out.tokens.tolist()) == {1, 2}
        for tok, lp in zip(out.tokens.tolist(), out.logprob.tolist()):
            assert lp == pytest.approx({2: 6 - z, 1: 4 - z}[tok], abs=1e-6)
        assert out.top_token_ids.tolist() == [[2, 1, -1]] * 64       # padded: only 2 survivors
        assert out.top_logprobs[0, 0].item() == pytest.approx(6 - z, abs=1e-6)
        assert out.top_logprobs[0, 1].item() == pytest.approx(4 - z, abs=1e-6)
        assert out.top_logprobs[0, 2].item() == -INF

    def test_greedy_processed_has_no_temperature(self):
        z = LN(math.exp(3) + math.exp(2))
        out = self._sample(n=1, temperature=0.0, top_k=2, logprobs=2, logprobs_mode="processed")
        assert out.tokens.tolist() == [2]
        assert out.logprob[0].item() == pytest.approx(3 - z, abs=1e-6)
        assert out.top_token_ids.tolist() == [[2, 1]]
        assert out.top_logprobs[0].tolist() == pytest.approx([3 - z, 2 - z], abs=1e-6)

    def test_raw_padding_and_masked_inputs(self):
        # V = 4, n = 6: four real entries then (-1, -inf); a -inf input logit is never listed
        out = self._sample(n=1, rows=[1.0, -INF, 0.0, 0.0], logprobs=6, logprobs_mode="raw")
        z = LN(math.e + 2)
        assert out.top_token_ids.tolist() == [[0, 2, 3, -1, -1, -1]]        # tie 2/3: lower index first
        assert out.top_logprobs[0].tolist() == pytest.approx([1 - z, -z, -z, -INF, -INF, -INF], abs=1e-6)

    def test_raw_ignores_processing(self):
        # grammar masks token 1 and a penalty hits token 0: raw logprobs still describe the input logits
        x = [0.0, 5.0, 0.0, 0.0]
        logits = torch.tensor([x] * 8)
        mask = torch.tensor([[0b1101]] * 8, dtype=torch.int32)
        zr = LN(3 + math.exp(5))
        raw = R.sample(logits, params(logprobs=1, frequency_penalty=1.0), positions=torch.arange(8),
                       grammar_bitmask=mask, output_token_ids=[[0]] * 8)
        assert raw.top_token_ids.tolist() == [[1]] * 8
        assert raw.top_logprobs[:, 0].tolist() == pytest.approx([5 - zr] * 8, abs=1e-6)
        for tok, lp in zip(raw.tokens.tolist(), raw.logprob.tolist()):
            assert tok in (0, 2, 3) and lp == pytest.approx(-zr, abs=1e-6)
        # processed: [-1, -inf, 0, 0] -> top-1 token 2 (tie with 3, lower index)
        zp = LN(math.exp(-1) + 2)
        proc = R.sample(logits, params(logprobs=1, logprobs_mode="processed", frequency_penalty=1.0),
                        positions=torch.arange(8), grammar_bitmask=mask, output_token_ids=[[0]] * 8)
        assert proc.top_token_ids.tolist() == [[2]] * 8
        assert proc.top_logprobs[:, 0].tolist() == pytest.approx([-zp] * 8, abs=1e-6)
        for tok, lp in zip(proc.tokens.tolist(), proc.logprob.tolist()):
            assert lp == pytest.approx({0: -1 - zp, 2: -zp, 3: -zp}[tok], abs=1e-6)

    def test_none_and_zero(self):
        logits = torch.tensor([self.X] * 3)
        out = R.sample(logits, [params(logprobs=None), params(logprobs=0), params(logprobs=2)], positions=[0, 1, 2])
        z = LN(sum(math.exp(v) for v in self.X))
        assert math.isnan(out.logprob[0])
        assert out.logprob[1].item() == pytest.approx(self.X[out.tokens[1]] - z, abs=1e-6)
        assert out.top_token_ids.tolist() == [[-1, -1], [-1, -1], [2, 1]]
        assert out.top_logprobs[:2].tolist() == [[-INF, -INF], [-INF, -INF]]
        # nobody asks for top-n: width 0, and logprob NaN where not asked
        out = R.sample(logits[:2], [params(logprobs=None), params(logprobs=0)], positions=[0, 1])
        assert out.top_token_ids.shape == (2, 0) and out.top_logprobs.shape == (2, 0)
        assert math.isnan(out.logprob[0]) and not math.isnan(out.logprob[1])


# =================================================================================================
# reference.topk
# =================================================================================================
class TestTopkFunction:
    @pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
    def test_hand_cases(self, dtype):
        x = torch.tensor([[1.0, 3.0, 3.0, 2.0, -INF, 0.5],
                          [-INF, 1.0, -INF, 0.0, -INF, -INF],
                          [1.0, NAN, 2.0, 0.0, 0.0, 0.0],
                          [-0.0, 0.0, -1.0, 0.0, -0.0, -2.0],
                          [-INF] * 6], dtype=dtype)
        vals, idx = R.topk(x, 3)
        assert vals.dtype == dtype and idx.dtype == torch.int64
        assert idx.tolist() == [[1, 2, 3], [1, 3, -1], [-1, -1, -1], [0, 1, 3], [-1, -1, -1]]
        assert vals[0].tolist() == [3.0, 3.0, 2.0]
        assert vals[1].tolist() == [1.0, 0.0, -INF]
        assert torch.isnan(vals[2]).all()
        assert vals[3].tolist() == [0.0, 0.0, 0.0]
        assert vals[4].tolist() == [-INF] * 3
        # k > V: padded
        vals, idx = R.topk(x[:2], 8)
        assert idx.tolist() == [[1, 2, 3, 0, 5, -1, -1, -1], [1, 3, -1, -1, -1, -1, -1, -1]]
        assert vals[0].tolist() == [3.0, 3.0, 2.0, 1.0, 0.5, -INF, -INF, -INF]
        # k = 1, signed zeros: -0.0 == +0.0, lower index wins whichever sign comes first
        assert R.topk(torch.tensor([[-0.0, 0.0]], dtype=dtype), 1)[1].tolist() == [[0]]
        assert R.topk(torch.tensor([[0.0, -0.0]], dtype=dtype), 1)[1].tolist() == [[0]]
        assert R.topk(torch.tensor([[-1.0, -0.0, 0.0]], dtype=dtype), 2)[1].tolist() == [[1, 2]]

    def test_plus_inf_and_exact_values(self):
        vals, idx = R.topk(torch.tensor([[0.1, INF, 0.2, 0.3, 0.25]]), 2)
        assert idx.tolist() == [[1, 3]] and vals.tolist() == [[INF, torch.tensor(0.3).item()]]

    def test_rejects_bad_k(self):
        with pytest.raises(ValueError):
            R.topk(torch.zeros(1, 4), 0)


# =================================================================================================
# 5. reference.verify
# =================================================================================================
def onehot_rows(argmaxes, v):
    """Logits rows with a unique argmax (value 4) at each given token, 0 elsewhere."""
    return [[4.0 if t == a else 0.0 for t in range(v)] for a in argmaxes]


class TestVerify:
    V = 5
    # target argmax per row: 1, 0, 4 (row 1 has a tie 0/1 -> 0)
    ROWS = [[0.0, 4.0, 1.0, 0.0, 0.0], [3.0, 3.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0, 2.0]]
    CASES = [([1, 0], [1, 0, 4], 2),      # all accepted: bonus argmax of row 2
             ([1, 1], [1, 0, -1], 1),     # d2 = 1 tied with 0 at row 1 but argmax is 0: rejected, emit 0
             ([2, 0], [1, -1, -1], 0)]    # first rejected: emit argmax of row 0

    def _run(self, p, draft_probs=None, positions=None):
        b = len(self.CASES)
        logits = torch.tensor(self.ROWS * b)
        drafts = torch.tensor([c[0] for c in self.CASES])
        return R.verify(logits, drafts, p, positions=[7, 100, 2**33] if positions is None else positions,
                        draft_probs=draft_probs)

    def test_greedy_target(self):
        out = self._run(params(temperature=0.0, logprobs=0))
        assert out.tokens.tolist() == [c[1] for c in self.CASES]
        assert out.num_accepted.tolist() == [c[2] for c in self.CASES]
        assert out.num_emitted.tolist() == [c[2] + 1 for c in self.CASES]
        assert out.valid.tolist() == [True] * 3
        # raw logprobs of the emitted tokens, NaN past them
        z = [LN(sum(math.exp(v) for v in r)) for r in self.ROWS]
        lp = out.logprob
        assert lp[0].tolist() == pytest.approx([4 - z[0], 3 - z[1], 2 - z[2]], abs=1e-6)
        assert lp[1, :2].tolist() == pytest.approx([4 - z[0], 3 - z[1]], abs=1e-6) and math.isnan(lp[1, 2])
        assert lp[2, 0].item() == pytest.approx(4 - z[0], abs=1e-6) and torch.isnan(lp[2, 1:]).all()

    @pytest.mark.parametrize("kind", ["onehot", "dense", "sparse"])
    def test_stochastic_target_with_one_hot_p(self, kind):
        # top-k 1 makes every p_l one-hot at its argmax: p(d) = 1 is always accepted (u * q(d) <= 1),
        # p(d) = 0 always rejected and the residual max(0, p - q) is that same one-hot (q(argmax) < 1).
        b = len(self.CASES)
        dp = None
        if kind == "dense":
            dp = torch.full((b, 2, self.V), 0.2, dtype=torch.float64)
        elif kind == "sparse":
            ids = torch.tensor([[[c[0][l], (c[0][l] + 2) % self.V, -1] for l in range(2)] for c in self.CASES])
            dp = R.SparseDraftProbs(ids, torch.tensor([[[0.6, 0.4, 0.0]] * 2] * b, dtype=torch.float64))
        for seed, base in [(1, 0), (2**64 - 1, 2**40), (12345, 77)]:
            out = self._run(params(top_k=1, seed=seed), draft_probs=dp, positions=[base, base + 10, base + 20])
            assert out.tokens.tolist() == [c[1] for c in self.CASES]
            assert out.num_accepted.tolist() == [c[2] for c in self.CASES]

    def test_acceptance_uses_stream_1_and_residual_stream_2(self):
        # p_0 = [0.5, 0.5, 0, 0] (tokens 2, 3 banned); one-hot draft d = 0: accept iff u <= 0.5, u from the
        # acceptance stream at position pos. On rejection the residual is max(0, p - onehot(0)) = token 1.
        # On acceptance the bonus token is the Gumbel-max of row 1 (all logits equal -> argmax of the
        # sampling-stream noise at pos + 1).
        logits = torch.tensor([[0.0, 0.0, -INF, -INF], [0.0, 0.0, 0.0, 0.0]] * 40)
        pos = torch.arange(40) * 5 + 3
        seed = 31337
        out = R.verify(logits, torch.zeros(40, 1, dtype=torch.int64), params(seed=seed), positions=pos)
        seen = set()
        for i in range(40):
            u = rng.uniforms(seed, int(pos[i]), 1, torch.tensor([0])).item()
            if u <= 0.5:
                bonus = int(torch.argmax(rng.uniforms(seed, int(pos[i]) + 1, 0, torch.arange(4))))
                assert out.tokens[i].tolist() == [0, bonus] and out.num_accepted[i] == 1
            else:
                assert out.tokens[i].tolist() == [1, -1] and out.num_accepted[i] == 0
            seen.add(u <= 0.5)
        assert seen == {True, False}

    @pytest.mark.parametrize("kind", ["dense", "sparse"])
    def test_acceptance_ratio_and_residual_with_q(self, kind):
        # p_0 = [0.5, 0.5, 0, 0]; q_0 = [0, 0.75, 0, 0.25]; draft d = 1: accept iff u * 0.75 <= 0.5
        # (u <= 2/3); residual max(0, p - q) = [0.5, 0, 0, 0] -> token 0.
        n = 40
        logits = torch.tensor([[0.0, 0.0, -INF, -INF], [0.0, -INF, -INF, -INF]] * n)   # bonus row: token 0
        if kind == "dense":
            dp = torch.tensor([[[0.0, 0.75, 0.0, 0.25]]] * n, dtype=torch.float64)
        else:
            dp = R.SparseDraftProbs(torch.tensor([[[3, 1, -1]]] * n), torch.tensor([[[0.25, 0.75, 0.0]]] * n))
        pos = torch.arange(n) * 2
        seed = 4242
        out = R.verify(logits, torch.ones(n, 1, dtype=torch.int64), params(seed=seed), positions=pos, draft_probs=dp)
        seen = set()
        for i in range(n):
            u = rng.uniforms(seed, int(pos[i]), 1, torch.tensor([0])).item()
            acc = u * 0.75 <= 0.5
            assert out.tokens[i].tolist() == ([1, 0] if acc else [0, -1])
            seen.add(acc)
        assert seen == {True, False}

    def test_ragged_num_draft_tokens(self):
        # request 0: n = 1 (draft [1]), rows: argmax 1, argmax 3, NaN (ignored);
        # request 1: n = 0, row 0 argmax 2, rows 1-2 NaN (ignored)
        nan_row = [NAN] * self.V
        logits = torch.tensor(onehot_rows([1, 3], self.V) + [nan_row] + onehot_rows([2], self.V) + [nan_row] * 2)
        drafts = torch.tensor([[1, -1], [-1, -1]])
        for p in (params(temperature=0.0), params(top_k=1)):
            out = R.verify(logits, drafts, p, positions=[10, 20], num_draft_tokens=[1, 0])
            assert out.tokens.tolist() == [[1, 3, -1], [2, -1, -1]]
            assert out.num_emitted.tolist() == [2, 1]
            assert out.num_accepted.tolist() == [1, 0]
            assert out.valid.tolist() == [True, True]

    def test_invalid_target_row_reached(self):
        nan_row = [NAN] * self.V
        logits = torch.tensor(onehot_rows([1], self.V) + [nan_row] + onehot_rows([1], self.V) + [nan_row])
        out = R.verify(logits, torch.tensor([[1], [2]]), params(temperature=0.0), positions=[0, 0])
        # request 0 accepts d = 1 and reaches the NaN row; request 1 rejects at row 0 and never needs it
        assert out.valid.tolist() == [False, True]
        assert out.tokens[1].tolist() == [1, -1]

    def test_penalties_count_earlier_drafts(self):
        # frequency penalty 1; drafts [1, 2]; greedy target, same logits for both requests:
        #   row 0 [0, 3,   0,   0  ]   row 1 [0, 3, 2.5, 0]   row 2 [0, 3.5, 3.2, 2.9]
        # request 0 (no output): row 0 -> 1 (accept d1 = 1); row 1 counts {1}: [0, 2, 2.5, 0] -> 2 (accept);
        #   row 2 counts {1, 2}: [0, 2.5, 2.2, 2.9] -> bonus 3. (Not counting drafts: row 1 -> 1, reject.)
        # request 1 (output [2, 2]): row 0 [0, 3, -2, 0] -> 1 (accept); row 1 counts {2: 2, 1: 1}:
        #   [0, 2, 0.5, 0] -> 1, d2 = 2 rejected, emit 1.
        rows = [[0.0, 3.0, 0.0, 0.0], [0.0, 3.0, 2.5, 0.0], [0.0, 3.5, 3.2, 2.9]]
        out = R.verify(torch.tensor(rows * 2), torch.tensor([[1, 2], [1, 2]]),
                       params(temperature=0.0, frequency_penalty=1.0), positions=[0, 0],
                       output_token_ids=[[], [2, 2]])
        assert out.tokens.tolist() == [[1, 2, 3], [1, 1, -1]]
        assert out.num_accepted.tolist() == [2, 1]
        # repetition penalty r = 2 counts the prompt AND the earlier drafts; prompt [3], drafts [1, 2]:
        #   row 0 [0, 3, 0, 0] -> 1 (accept d1 = 1)
        #   row 1 [0, 3, 2, 3], seen {3, 1}: [0, 1.5, 2, 1.5] -> 2 (accept d2 = 2)
        #     (draft ignored: [0, 3, 2, 1.5] -> 1; prompt ignored: [0, 1.5, 2, 3] -> 3; both: 1)
        #   row 2 [1, 0, 0, 0] -> bonus 0
        rows = [[0.0, 3.0, 0.0, 0.0], [0.0, 3.0, 2.0, 3.0], [1.0, 0.0, 0.0, 0.0]]
        out = R.verify(torch.tensor(rows), torch.tensor([[1, 2]]), params(temperature=0.0, repetition_penalty=2.0),
                       positions=[0], prompt_token_ids=[[3]])
        assert out.tokens.tolist() == [[1, 2, 0]]
        assert out.num_accepted.tolist() == [2]


# =================================================================================================
# Batched noise: the reference draws the noise of many rows in batched Philox calls; regression test
# against the row-by-row path (one scalar rng call per row, as the reference originally did)
# =================================================================================================
def _random_params(g, v: int) -> SamplingParams:
    kw = dict(seed=g.choice([0, 7, 2**32 + 7, 2**63 - 1, 2**63, 2**63 + 99, 2**64 - 1, -1])
              if g.random() < 0.4 else g.randrange(-(2**63), 2**64))
    r = g.random()
    if r < 0.15:
        kw["temperature"] = 0.0
    elif r < 0.6:
        kw["temperature"] = g.choice([0.3, 0.7, 1.5, 2.0])
    for name, p, values in [("top_k", 0.4, [1, 2, 3, 10, v, v + 3]), ("top_p", 0.4, [1e-6, 0.5, 0.9, 1.0]),
                            ("min_p", 0.3, [0.01, 0.2, 1.0]), ("repetition_penalty", 0.3, [0.5, 1.2, 2.0]),
                            ("frequency_penalty", 0.3, [-0.5, 0.3, 1.0]), ("presence_penalty", 0.3, [-1.0, 0.5])]:
        if g.random() < p:
            kw[name] = g.choice(values)
    if g.random() < 0.3:
        kw["logit_bias"] = {g.randrange(v): g.choice([-INF, -2.0, 0.5, 3.0]) for _ in range(g.randint(1, 3))}
    if g.random() < 0.2:
        kw["logprobs"], kw["logprobs_mode"] = g.choice([0, 3]), g.choice(["raw", "processed"])
    return SamplingParams(**kw)


def _random_logits(g, n: int, v: int, dtype) -> torch.Tensor:
    tg = torch.Generator().manual_seed(g.randrange(2**31))
    x = torch.randn(n, v, generator=tg) * g.choice([0.1, 1.0, 5.0])
    if g.random() < 0.3:
        x = torch.round(x * 2) / 2                    # many exact ties
    if g.random() < 0.2:
        x[:, torch.randperm(v, generator=tg)[: v // 3]] = -INF
    for i in range(n):
        if g.random() < 0.03:
            x[i, g.randrange(v)] = NAN
    return x.to(dtype)


def _random_position(g) -> int:
    r = g.random()
    if r < 0.4:
        return g.choice([0, 2**32 - 1, 2**32, 2**32 + 5, 2**40 + 3, 2**63, 2**64 - 3, 2**64 - 1])
    return g.randrange(2**64) if r < 0.7 else g.randrange(10**6)


def _rowwise_gumbel_token(row, seed: int, position: int, stream: int) -> int:
    ids = torch.nonzero(row.keep).flatten()
    g = rng.gumbel(seed, position, stream, ids)       # one scalar call per row
    return int(ids[torch.argmax(row.x[ids] + g)])


@pytest.mark.parametrize("batch", range(6))
def test_sample_batched_noise_equals_rowwise(batch):
    import random
    g = random.Random(1000 + batch)
    n, v = 60, g.choice([2, 5, 17, 64, 257])
    dtype = g.choice([torch.float32, torch.bfloat16, torch.float16])
    logits = _random_logits(g, n, v, dtype)
    plist = [_random_params(g, v) for _ in range(n)]
    pos = [_random_position(g) for _ in range(n)]
    prompts = [[g.randrange(v) for _ in range(g.randint(0, 4))] for _ in range(n)]
    outputs = [[g.randrange(v) for _ in range(g.randint(0, 5))] for _ in range(n)]
    mask = None
    if g.random() < 0.5:
        mask = torch.randint(-(2**31), 2**31, (n, (v + 31) // 32), generator=torch.Generator().manual_seed(batch),
                             dtype=torch.int64).to(torch.int32)
    out = R.sample(logits, plist, positions=pos, prompt_token_ids=prompts, output_token_ids=outputs,
                   grammar_bitmask=mask)
    kinds = set()
    for i in range(n):
        row = R._process_row(logits[i], plist[i], prompts[i], outputs[i], None if mask is None else mask[i])
        if not row.valid:
            expected = -1
        elif row.greedy:
            expected = int(R._order(row.rank, row.keep)[0])
        else:
            expected = _rowwise_gumbel_token(row, plist[i].seed_u64, pos[i], rng.STREAM_SAMPLE)
            kinds.add(int(row.keep.sum()) > 1)
        assert int(out.tokens[i]) == expected, (batch, i, plist[i], pos[i])
        assert bool(out.valid[i]) == (expected >= 0)
    assert True in kinds                          # stochastic rows with a real choice were drawn


def _rowwise_verify(logits, drafts, plist, pos, counts, draft_probs, prompts, outputs):
    """SEMANTICS.md section 5 request by request, with one scalar rng call per random number."""
    bsz, gamma = drafts.shape
    v = logits.shape[1]
    tokens, n_acc, valid = [], [], []
    for b in range(bsz):
        p, ds, emitted, acc, ok = plist[b], drafts[b].tolist(), [], 0, True
        for l in range(counts[b] + 1):
            row = R._process_row(logits[b * (gamma + 1) + l], p, prompts[b], outputs[b] + ds[:l], None)
            if not row.valid:
                ok = False
                break
            best = int(R._order(row.rank, row.keep)[0])
            if l == counts[b]:
                emitted.append(best if row.greedy else _rowwise_gumbel_token(row, p.seed_u64, pos[b] + l, 0))
                break
            d = ds[l]
            if row.greedy:
                emitted.append(best)
                if d != best:
                    break
                acc += 1
                continue
            pl = R._row_probs(row)
            q = R._draft_q(draft_probs, b, l, v, d, logits.device)
            u = float(rng.uniforms(p.seed_u64, pos[b] + l, rng.STREAM_ACCEPT, torch.zeros(1, dtype=torch.int64)))
            if pl[d] > 0 and u * q[d] <= pl[d]:
                emitted.append(d)
                acc += 1
                continue
            resid = torch.clamp(pl - q, min=0.0)
            if not (resid.sum() > 0):
                resid = pl
            ids = torch.nonzero(resid > 0).flatten()
            g = rng.gumbel(p.seed_u64, pos[b] + l, rng.STREAM_RESIDUAL, ids).double()
            emitted.append(int(ids[torch.argmax(torch.log(resid[ids]) + g)]))
            break
        tokens.append(emitted + [-1] * (gamma + 1 - len(emitted)))
        n_acc.append(acc)
        valid.append(ok)
    return tokens, n_acc, valid


@pytest.mark.parametrize("batch", range(6))
def test_verify_batched_noise_equals_rowwise(batch):
    import random
    g = random.Random(2000 + batch)
    bsz, v, gamma = 50, g.choice([3, 5, 17, 64]), g.choice([1, 2, 3])
    logits = _random_logits(g, bsz * (gamma + 1), v, g.choice([torch.float32, torch.bfloat16]))
    plist = [_random_params(g, v) for _ in range(bsz)]
    pos = [_random_position(g) for _ in range(bsz)]
    tg = torch.Generator().manual_seed(batch)
    # drafts: often the target argmax, so that chains run long
    drafts = torch.randint(0, v, (bsz, gamma), generator=tg)
    top = torch.nan_to_num(logits.float(), nan=0.0).reshape(bsz, gamma + 1, v)[:, :gamma].argmax(-1)
    drafts = torch.where(torch.rand(bsz, gamma, generator=tg) < 0.6, top, drafts)
    kind = ["none", "dense", "sparse"][batch % 3]
    dp = None
    if kind == "dense":
        near = torch.nan_to_num(logits.double(), nan=0.0, neginf=-30.0).reshape(bsz, gamma + 1, v)[:, :gamma]
        dp = torch.softmax(near + torch.randn(bsz, gamma, v, generator=tg, dtype=torch.float64), dim=-1)
    elif kind == "sparse":
        k = min(3, v)
        ids = torch.stack([torch.randperm(v, generator=tg)[:k] for _ in range(bsz * gamma)]).reshape(bsz, gamma, k)
        ids[..., 0] = drafts
        ids[..., -1] = torch.where(torch.rand(bsz, gamma, generator=tg) < 0.5, -1, ids[..., -1])
        pr = torch.where(ids >= 0, torch.rand(bsz, gamma, k, generator=tg, dtype=torch.float64), 0.0)
        dp = R.SparseDraftProbs(ids, pr / pr.sum(-1, keepdim=True))
    counts = [g.randint(0, gamma) if g.random() < 0.3 else gamma for _ in range(bsz)]
    prompts = [[g.randrange(v) for _ in range(g.randint(0, 3))] for _ in range(bsz)]
    outputs = [[g.randrange(v) for _ in range(g.randint(0, 4))] for _ in range(bsz)]
    out = R.verify(logits, drafts, plist, positions=pos, num_draft_tokens=counts, draft_probs=dp,
                   prompt_token_ids=prompts, output_token_ids=outputs)
    tokens, n_acc, valid = _rowwise_verify(logits, drafts, plist, pos, counts, dp, prompts, outputs)
    assert out.tokens.tolist() == tokens
    assert out.num_accepted.tolist() == n_acc
    assert out.valid.tolist() == valid
    assert out.num_emitted.tolist() == [sum(t >= 0 for t in row) for row in tokens]
    assert len(set(n_acc)) > 1                    # both early rejections and longer chains occur


def test_token_ids_outside_the_vocabulary_are_refused_by_row():
    """The oracle takes prompt and output ids as integers in the vocabulary, naming the row of one that
    is not (before, an output id >= V was silently left out of the counts and a prompt id >= V failed
    deep in indexing)."""
    x = torch.randn(2, 50)
    p = SamplingParams(repetition_penalty=1.2, frequency_penalty=0.5, seed=1)
    for kw, match in ((dict(output_token_ids=[[1], [50]]), "output_token_ids: row 1: token 50"),
                      (dict(prompt_token_ids=[[60], []]), "prompt_token_ids: row 0: token 60"),
                      (dict(prompt_token_ids=[[1], [-1]]), "row 1: token -1"),
                      (dict(output_token_ids=[[1.5], []]), "row 0: token 1.5")):
        with pytest.raises(ValueError, match=match):
            R.sample(x, p, positions=[0, 0], **kw)
    R.sample(x, p, positions=[0, 0], prompt_token_ids=[[0, 49], []], output_token_ids=[[], [3, 3]])
