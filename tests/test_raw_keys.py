"""Rows whose processing is at most a temperature rank their raw values in stage 1 (sample.raw_ordered),
and each tile turns only the keys it emits into its quotients' keys (topk.quotient_list). Division and
rounding to the input dtype are monotone, so the raw order is the processed one except where two raw
values' quotients round together: such a class must then come out in index order, as the reference
ranks it. The rows below put such a class where each part of the selection decides it: split by the
C-th place inside one tile list, held back by a tile whose last emitted key is the C-th key itself
(stage 2's refill), and in the middle of the candidates. The last tests run stage 2's refill in both of its
compiles (out of line and inline), in the sampler and in verification."""
import pytest
import torch

from sonicsampler import SamplingParams, reference
from sonicsampler.sampler import Sampler, sample

from test_sampler import check_against_reference

V = 600
BOUND = 8       # C: the 8th candidate is where the classes below are split
BLOCK = 64      # ten tiles
EMIT = 4        # tiles emit 4 keys: a tile with more high tokens is saturated and re-read
T = 0.7


def merged_pair(dtype):
    """Two raw values a > b in [2, 4) of `dtype` whose quotients by T round to the same value."""
    v = torch.arange(2.0, 4.0, 2.0 ** -9).to(dtype).unique()
    q = (v.float() / torch.tensor(T, dtype=torch.float32)).to(dtype)
    for i in range(len(v) - 1, 0, -1):
        if q[i] == q[i - 1] and v[i] != v[i - 1]:
            return float(v[i]), float(v[i - 1])
    raise AssertionError("no pair of raw values whose quotients round together")


def rows(dtype):
    a, b = merged_pair(dtype)
    x = torch.full((3, V), -8.0)
    x += 0.01 * torch.randn(3, V, generator=torch.Generator().manual_seed(5))
    # Row 0: the class {a at 40, b at 5} in tile 0's list (a first, on raw keys) is split by the 8th
    # place: the reference takes b (lower index).
    x[0, [330, 331, 400, 401, 460, 461, 530]] = torch.tensor([12.0, 11.5, 11.0, 10.5, 10.0, 9.5, 9.0])
    x[0, 40], x[0, 5] = a, b
    # Row 1: tile 3 emits 250, 251, 252 and a at 240 (its 4th, last); b at 193 stays behind. Merged, a
    # is the 8th key itself, so only a test on the value (not the key) re-reads tile 3 and finds b.
    x[1, [250, 251, 252, 400, 401, 402, 403]] = torch.tensor([12.0, 11.5, 11.0, 10.5, 10.0, 9.5, 9.0])
    x[1, 240], x[1, 193] = a, b
    # Row 2: the class in the middle of the candidates, in two tiles: b at 100 ranks before a at 300.
    x[2, [550, 551, 552, 10, 20, 30]] = torch.tensor([12.0, 11.5, 11.0, 1.0, 0.5, 0.25])
    x[2, 300], x[2, 100] = a, b
    return x.to(dtype)


def params():
    # top_k = C, processed top-8 log-probabilities: their ids are the 8 best processed values in order.
    return [SamplingParams(temperature=T, top_k=BOUND, seed=i, logprobs=BOUND, logprobs_mode="processed")
            for i in range(3)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("strategy", ["extract", "rank", "bitonic"])
def test_classes_that_quotients_merge_come_out_in_index_order(dtype, strategy):
    logits, ps = rows(dtype), params()
    positions, prompts, outputs = [7, 8, 9], [[]] * 3, [[]] * 3
    ref = reference.sample(logits, ps, positions=positions)
    # The rows test what they are meant to: ranked on raw values, a would come before b.
    assert 5 in ref.top_token_ids[0].tolist() and 40 not in ref.top_token_ids[0].tolist()
    assert 193 in ref.top_token_ids[1].tolist() and 240 not in ref.top_token_ids[1].tolist()
    ids = ref.top_token_ids[2].tolist()
    assert ids.index(100) < ids.index(300)
    out = sample(logits, ps, positions=positions, bound=BOUND, block=BLOCK, emit=EMIT, strategy=strategy)
    check_against_reference(logits, ps, positions, prompts, outputs, out)


def test_temperature_rows_skip_stage_1s_processing_and_penalised_rows_do_not(monkeypatch):
    """Stage 1 processes (prologue.process) the tiles of a row with a penalty, not those of a row whose
    processing is a temperature alone: those rank raw values. Counted under the interpreter, where the
    kernel's calls go through the module's names."""
    import sonicsampler.kernels.sample as sample_kernels

    calls = []
    real = sample_kernels.process

    def counting(x, *args, **kwargs):
        calls.append(tuple(x.shape))
        return real(x, *args, **kwargs)

    monkeypatch.setattr(sample_kernels, "process", counting)
    logits = (3 * torch.randn(2, V, generator=torch.Generator().manual_seed(3))).to(torch.bfloat16)
    tiles = -(-V // BLOCK)
    for extra, stage1_calls in (({}, 0), ({"presence_penalty": 0.5}, tiles)):
        s = Sampler(V, 1, "cpu", bound=BOUND, block=BLOCK, emit=EMIT)
        s.add_request(0, SamplingParams(temperature=T, top_k=5, seed=1, **extra))
        calls.clear()
        s.sample(logits[:1], [0], [0])
        assert sum(shape != (BOUND,) for shape in calls) == stage1_calls, calls


def test_statistics_from_raw_values_give_the_reference_top_p_sets():
    """Stage 1's statistics of a raw-ordered row come from its raw values (sample._max_sumexp_quotients).
    Top-p without top-k measures its nucleus against them: rows at several temperatures and p, with
    processed log-probabilities (whose normalizer is the kept set's), equal the reference."""
    gen = torch.Generator().manual_seed(11)
    n = 8
    logits = (2.5 * torch.randn(n, V, generator=gen)).to(torch.bfloat16)
    ps = [SamplingParams(temperature=(0.6, 0.8, 1.3, 2.0)[i % 4], top_p=(0.3, 0.5, 0.7, 0.9)[(i // 4) % 4], seed=i,
                         logprobs=3, logprobs_mode="processed") for i in range(n)]
    positions = list(range(n))
    out = sample(logits, ps, positions=positions, bound=BOUND, block=BLOCK, emit=EMIT)
    check_against_reference(logits, ps, positions, [[]] * n, [[]] * n, out)


@pytest.mark.parametrize("logprobs", [None, BOUND])
def test_the_refill_in_line_and_out_of_line_gives_the_reference_sets(logprobs):
    """Stage 2's refill runs out of line (sample.refill_saturated) in launches without top-n
    log-probabilities and inline (refill_tiles) in those with them (row_distribution's REFILL_CALL).
    Row 1 above needs it (tile 3 holds back b): each row's survivors and their probabilities (the draft
    distribution) equal reference.probs, in both compiles."""
    logits = rows(torch.bfloat16)
    ps = [SamplingParams(temperature=T, top_k=BOUND, seed=i, logprobs=logprobs) for i in range(3)]
    positions = [7, 8, 9]
    s = Sampler(V, 3, "cpu", bound=BOUND, block=BLOCK, emit=EMIT, strategy="extract")
    for i, p in enumerate(ps):
        s.add_request(i, p)
    out = s.sample(logits, [0, 1, 2], positions, return_draft_probs=True)
    assert {plan["rows2"]["REFILL_CALL"] for plan in s._plans.values()} == {logprobs is None}
    ref = reference.probs(logits, ps, positions=positions)
    for i in range(3):
        ids, p = out.draft_probs.token_ids[i, 0], out.draft_probs.probs[i, 0]
        assert sorted(ids[ids >= 0].tolist()) == sorted(torch.nonzero(ref[i]).flatten().tolist())
        dense = torch.zeros(V, dtype=torch.float64).index_add_(0, ids[ids >= 0], p[ids >= 0].double())
        torch.testing.assert_close(dense.float(), ref[i].float(), atol=1e-6, rtol=1e-5)
    check_against_reference(logits, ps, positions, [[]] * 3, [[]] * 3, out)


@pytest.mark.parametrize("logprobs", [None, BOUND])
def test_verifications_refill_in_line_and_out_of_line(logprobs):
    """Verification's stage 2 shares row_distribution and the plan's REFILL_CALL. Eight tokens of equal
    value, six of them in tile 1, which emits four: the other two come only from the refill, and the
    top-8 draw is uniform over all eight. With no drafts each request's token is its row's own draw:
    16 requests (each with its own seed) equal the reference's tokens, some of them held-back ones."""
    n = 16
    x = torch.full((n, V), -8.0)
    x[:, [64, 65, 66, 67, 68, 69, 300, 400]] = 5.0
    logits = x.to(torch.bfloat16)
    ps = [SamplingParams(top_k=BOUND, seed=i, logprobs=logprobs) for i in range(n)]
    positions = list(range(3, 3 + n))
    s = Sampler(V, n, "cpu", bound=BOUND, block=BLOCK, emit=EMIT, strategy="extract")
    for i, p in enumerate(ps):
        s.add_request(i, p)
    out = s.verify(logits, torch.zeros((n, 0), dtype=torch.int64), list(range(n)), positions)
    assert {plan["rows2"]["REFILL_CALL"] for plan in s._plans.values()} == {logprobs is None}
    ref = reference.sample(logits, ps, positions=positions).tokens
    assert {68, 69} & set(ref.tolist())                  # the test reaches the refilled tokens
    assert torch.equal(out.tokens[:, 0], ref)
