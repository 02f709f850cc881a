"""Rows whose outputs need no full-vocabulary processed normalizer (indicator NORMALIZER_FREE: a top-k
within the bound, with or without log-probabilities; greedy, unless it asks for processed
log-probabilities) take only each tile's maximum in stage 1, not its sum of exponentials. That maximum
must still make the row invalid for a NaN anywhere (either sign, in any tile) and for a processed +inf
(a raw +inf, or a finite value that the temperature divides past the largest float), and leave every
other row as the reference has it."""
import dataclasses

import pytest
import torch

from sonicsampler import SamplingParams
from sonicsampler import indicators as bits
from sonicsampler.sampler import Sampler
from sonicsampler.slots import indicator_bits

from test_sampler import check_against_reference

V = 600
BOUND = 8
BLOCK = 64      # ten tiles
EMIT = 4


@pytest.mark.parametrize("params,free", [
    (SamplingParams(top_k=8), True),
    (SamplingParams(temperature=0.7, top_k=8, top_p=0.9, min_p=0.05), True),   # cuts inside the k
    (SamplingParams(temperature=0.0), True),
    (SamplingParams(temperature=0.0, top_p=0.5), True),                         # greedy: the argmax
    (SamplingParams(top_k=8, repetition_penalty=1.2, logit_bias={3: 1.0}), True),
    (SamplingParams(top_k=9), False),                                            # above the bound
    (SamplingParams(top_p=0.9), False),                                          # the nucleus's mass
    (SamplingParams(min_p=0.1), False),
    (SamplingParams(), False),                                                   # untruncated
    (SamplingParams(top_k=8, logprobs=0), True),                                 # raw: the raw normalizer
    (SamplingParams(top_k=8, logprobs=2), True),
    (SamplingParams(temperature=0.0, logprobs=3), True),
    (SamplingParams(top_k=8, logprobs=2, logprobs_mode="processed"), True),     # over the k's survivors
    (SamplingParams(temperature=0.0, logprobs=0, logprobs_mode="processed"), False),   # over all tokens
    (SamplingParams(temperature=0.0, top_p=0.5, logprobs=2, logprobs_mode="processed"), False),
    (SamplingParams(top_p=0.9, logprobs=2), False),
])
def test_which_requests_need_no_normalizer(params, free):
    assert bool(indicator_bits(params, V, BOUND) & bits.NORMALIZER_FREE) == free


def _neg_nan(dtype):
    """A NaN with the sign bit set (what x86 produces for 0 * inf): its order-preserving key lies below
    -inf's, so no ranking of keys would ever see it."""
    x = torch.tensor([float("nan")]).to(dtype)
    w = x.view(torch.int16 if dtype != torch.float32 else torch.int32)
    w |= -(2 ** 15) if dtype != torch.float32 else -(2 ** 31)
    assert torch.isnan(x) and (x.view(torch.int16 if dtype != torch.float32 else torch.int32) < 0).all()
    return x[0]


@pytest.mark.parametrize("dtype,strategy", [(torch.bfloat16, "extract"), (torch.float16, "bitonic"),
                                            (torch.float32, "extract"), (torch.bfloat16, "rank")])
def test_rows_without_the_sum_still_flag_nan_and_inf(dtype, strategy):
    """Free rows of each stage-1 path (raw keys: temperature alone; processed: a penalty; greedy's scalar
    argmax; top-k rows with raw or processed log-probabilities) with a NaN of either sign far from the
    maximum, a +inf, and a finite maximum whose quotient overflows, beside clean free rows and rows that
    keep the sum: validity, tokens and counts equal the reference's. Fails if the invalid flag reads the sum alone (a free row's sum is 1)."""
    gen = torch.Generator().manual_seed(21)
    kinds = [SamplingParams(temperature=0.7, top_k=BOUND, top_p=0.9),        # raw keys
             SamplingParams(top_k=5, repetition_penalty=1.3),                # processed values
             SamplingParams(temperature=0.0),                                # greedy: scalar argmax
             SamplingParams(temperature=0.8, top_k=6, logprobs=3),           # raw log-probabilities
             SamplingParams(temperature=0.9, top_k=5, logprobs=2, logprobs_mode="processed")]   # processed
    params, bad = [], []
    for k, p in enumerate(kinds):
        for what in ("nan", "neg_nan", "inf", "clean"):
            params.append(dataclasses.replace(p, seed=10 * k + len(params)))
            bad.append(what)
    params.append(SamplingParams(temperature=0.25, top_k=4, seed=3))      # quotient overflow (below)
    bad.append("overflow")
    params += [SamplingParams(top_p=0.8, seed=4),                         # keep the sum
               SamplingParams(temperature=0.0, seed=5, logprobs=2, logprobs_mode="processed")]
    bad += ["nan", "clean"]
    n = len(params)
    s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK, emit=EMIT, strategy=strategy)
    prompts = [list(range(i, i + 20)) for i in range(n)]
    for i, p in enumerate(params):
        s.add_request(i, p, prompts[i])
    assert [bool(int(f) & bits.NORMALIZER_FREE) for f in s.table.flags] == [True] * (n - 2) + [False] * 2
    logits = (2 * torch.randn(n, V, generator=gen)).to(dtype)
    for i, what in enumerate(bad):
        logits[i, 30] = 12.0                                   # the maximum, in tile 0
        if what == "nan":
            logits[i, 517] = float("nan")                      # tile 8, far below nothing: no rank sees it
        elif what == "neg_nan":
            logits[i, 517] = _neg_nan(dtype)
        elif what == "inf":
            logits[i, 300] = float("inf")
        elif what == "overflow":
            big = torch.finfo(dtype).max
            logits[i, 300] = big                               # finite; big / 0.25 is +inf
    positions = list(range(5, 5 + n))
    out = s.sample(logits, torch.arange(n), torch.tensor(positions))
    check_against_reference(logits, params, positions, prompts, [()] * n, out)
    # bf16's and fp32's largest value over 0.25 is past fp32's: a processed +inf. fp16's is not.
    want_valid = [b == "clean" or (b == "overflow" and dtype == torch.float16) for b in bad]
    assert out.valid.tolist() == want_valid
    assert [int(s.table.counts[i].sum()) for i in range(n)] == [int(v) for v in want_valid]


def test_a_slot_readmitted_takes_its_new_requests_bit():
    """The bit lives in the slot's flags: a request that needs the normalizer, admitted to a slot that
    held one that did not (and the other way round), replaces it; a removed request leaves no bit."""
    s = Sampler(V, 2, "cpu", bound=BOUND, block=BLOCK, emit=EMIT)

    def free(slot):
        return bool(int(s.table.flags[slot]) & bits.NORMALIZER_FREE)

    s.add_request(0, SamplingParams(temperature=0.0))
    s.add_request(1, SamplingParams(top_p=0.9))
    assert [free(0), free(1)] == [True, False]
    s.remove_request(0)
    s.add_request(0, SamplingParams(temperature=0.0, logprobs=0, logprobs_mode="processed"))
    s.remove_request(1)
    assert [free(0), free(1)] == [False, False]
    s.add_request(1, SamplingParams(top_k=BOUND, temperature=0.5))
    assert [free(0), free(1)] == [False, True]
