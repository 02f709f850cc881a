"""Sampler.sample(out=...) and Sampler.verify(out=...): the call writes into the caller's tensors (an
engine's persistent buffers) exactly what it would have returned in new ones, and refuses buffers that do
not fit, naming the field."""
import pytest
import torch

import dataclasses

from sonicsampler import SampleOutput, SamplingInputError, SamplingParams, SparseDraftProbs, VerifyOutput
from sonicsampler.sampler import Sampler

pytestmark = pytest.mark.interpreter

V, BOUND, BLOCK, N = 600, 32, 256, 5


def params(i: int) -> SamplingParams:
    """A mix: top-k + top-p, greedy with processed top-3, raw top-5 with a repetition penalty (its raw
    top-n takes the separate pass), min-p, untruncated."""
    return [SamplingParams(temperature=0.7, top_k=20, top_p=0.9, seed=i),
            SamplingParams(temperature=0.0, logprobs=3, logprobs_mode="processed"),
            SamplingParams(temperature=1.2, repetition_penalty=1.3, logprobs=5, seed=i),
            SamplingParams(temperature=0.9, min_p=0.2, seed=i),
            SamplingParams(seed=i)][i % 5]


def new_sampler() -> Sampler:
    s = Sampler(V, N, "cpu", bound=BOUND, block=BLOCK)
    for i in range(N):
        s.add_request(i, params(i), prompt_token_ids=[7, 8, 9])
    return s


def poisoned_like(o: SampleOutput) -> SampleOutput:
    """Tensors shaped as o's, filled with values no kernel writes (so an element left unwritten shows)."""
    def p(t):
        return torch.full_like(t, True) if t.dtype == torch.bool else torch.full_like(t, -7)
    d = o.draft_probs
    return SampleOutput(*(p(getattr(o, f)) for f in ("tokens", "valid", "logprob", "top_token_ids", "top_logprobs",
                                                     "exact", "dropped_mass")),
                        SparseDraftProbs(p(d.token_ids), p(d.probs), torch.zeros_like(d.complete)) if d else None)


def fields(o: SampleOutput) -> list:
    d = o.draft_probs
    return [o.tokens, o.valid, o.logprob, o.top_token_ids, o.top_logprobs, o.exact, o.dropped_mass] + (
        [d.token_ids, d.probs, d.complete] if d else [])


@pytest.mark.parametrize("draft", [False, True])
def test_out_receives_what_a_fresh_call_returns(draft):
    """Two samplers in the same state, three steps each (the output counts move the penalised row):
    one allocates, the other writes into poisoned buffers; every field is bitwise equal (NaN where NaN),
    and `out` itself comes back."""
    a, b = new_sampler(), new_sampler()
    gen = torch.Generator().manual_seed(3)
    out = None
    for step in range(3):
        x = (torch.randn(N, V, generator=gen) * 3).to(torch.bfloat16)
        x[3, 100:400] = 5.0           # a long tie for min-p's set
        slots, pos = [0, 1, 2, 3, 4], [10 + step] * N
        want = a.sample(x, slots, pos, return_draft_probs=draft)
        out = poisoned_like(want) if out is None else out
        for t in fields(out):        # poison again: each step must write every element
            t.fill_(True) if t.dtype == torch.bool else t.fill_(-7)
        got = b.sample(x, slots, pos, return_draft_probs=draft, out=out)
        assert got is out
        for w, g in zip(fields(want), fields(got)):
            assert w.shape == g.shape and w.dtype == g.dtype
            assert torch.equal(torch.nan_to_num(w.float(), nan=123.0), torch.nan_to_num(g.float(), nan=123.0))
        assert torch.equal(a.table.counts, b.table.counts)


def test_out_that_does_not_fit_is_refused_before_launch():
    s = new_sampler()
    x = torch.randn(N, V).to(torch.bfloat16)
    good = s.sample(x, list(range(N)), [0] * N)
    counts = s.table.counts.clone()

    def refused(out, match, **kw):
        with pytest.raises(SamplingInputError, match=match) as e:
            s.sample(x, list(range(N)), [0] * N, out=out, **kw)
        assert e.value.field == "out"
        assert torch.equal(s.table.counts, counts)      # nothing launched

    def with_(**kw):
        return SampleOutput(**{**good.__dict__, **kw})

    refused(with_(tokens=good.tokens[:-1]), r"tokens must be a contiguous, 16-byte aligned torch.int64 \(5,\)")
    refused(with_(logprob=good.logprob.double()), "logprob must be .* torch.float32")
    refused(with_(valid=torch.zeros(2 * N, dtype=torch.bool)[::2]), r"valid .*\(strided\)")
    refused(with_(top_token_ids=torch.zeros(N, 4, dtype=torch.int64)), r"top_token_ids .*\(5, 5\)")
    refused(with_(dropped_mass=torch.zeros(N + 1)[1:]), r"dropped_mass .*\(not 16-byte aligned\)")
    refused(with_(exact=None), "exact must be .* got NoneType")
    refused(good, "needs out.draft_probs", return_draft_probs=True)
    drafted = s.sample(x, list(range(N)), [0] * N, return_draft_probs=True)
    counts = s.table.counts.clone()
    refused(drafted, "draft_probs must be None without return_draft_probs")
    refused((good.tokens,), "must be a SampleOutput")


def test_out_checked_once_is_checked_again_when_it_changes():
    """sample(out=...) skips the check for the buffers the last checked call had (outputs.kept_check):
    a field replaced in place, a draft field replaced, another batch size or the same buffers with
    another draft option must still be refused before launch."""
    s = new_sampler()
    x = torch.randn(N, V).to(torch.bfloat16)
    out = s.sample(x, list(range(N)), [0] * N, return_draft_probs=True)
    assert s.sample(x, list(range(N)), [1] * N, out=out, return_draft_probs=True) is out   # checked, kept
    counts = s.table.counts.clone()

    def refused(match, rows=N, **kw):
        with pytest.raises(SamplingInputError, match=match):
            s.sample(x[:rows], list(range(rows)), [2] * rows, out=out, **kw)
        assert torch.equal(s.table.counts, counts)

    refused("draft_probs must be None", return_draft_probs=False)
    refused(r"tokens must be .*\(4,\)", rows=N - 1, return_draft_probs=True)
    good_probs = out.draft_probs.probs
    out.draft_probs.probs = good_probs[:, :, :-1]
    refused(r"draft_probs.probs must be .*\(5, 1, 32\)", return_draft_probs=True)
    out.draft_probs.probs = good_probs
    out.logprob = out.logprob.double()
    refused("logprob must be .* torch.float32", return_draft_probs=True)
    out.logprob = out.logprob.float()
    assert s.sample(x, list(range(N)), [2] * N, out=out, return_draft_probs=True) is out   # checked again, kept
    counts = s.table.counts.clone()
    out.tokens.data = torch.empty(N - 2, dtype=torch.int64)   # same tensor object, other (smaller) memory
    refused(r"tokens must be .*\(5,\)", return_draft_probs=True)
    out.tokens.data = torch.empty(N, dtype=torch.int64)
    drafts = out.draft_probs
    out.draft_probs = ("ids", "probs")
    refused("needs out.draft_probs, a SparseDraftProbs", return_draft_probs=True)
    refused("draft_probs must be None")
    out.draft_probs = drafts


def test_device_slots_checked_once_are_checked_again_when_they_change(monkeypatch):
    """Device slots and positions that passed the last call's checks are used unchecked
    (Sampler._slots_positions); other tensors, or the same ones for another row count, are checked. CPU
    tensors stand in for device ones here."""
    monkeypatch.setattr(Sampler, "on_host", staticmethod(lambda v: not torch.is_tensor(v)))
    s = new_sampler()
    x = torch.randn(N, V).to(torch.bfloat16)
    slots, pos = torch.arange(N), torch.zeros(N, dtype=torch.int64)
    s.sample(x, slots, pos)
    assert s._rows_checked[0] is slots and s._rows_checked[2] == N
    s.sample(x, slots, pos)
    with pytest.raises(SamplingInputError, match="slots: must be a contiguous int64"):
        s.sample(x, slots.int(), pos)
    with pytest.raises(SamplingInputError, match=r"positions: must be a contiguous int64 \(4,\)"):
        s.sample(x[:4], slots[:4], pos)
    with pytest.raises(SamplingInputError, match=r"slots: must be a contiguous int64 \(4,\)"):
        s.sample(x[:4], slots, pos)
    s.sample(x, slots, pos)
    slots.data = slots.data.int()     # same tensor object, now int32 (other memory): checked again
    with pytest.raises(SamplingInputError, match="slots: must be a contiguous int64"):
        s.sample(x, slots, pos)
    slots.data = slots.data.long()
    # verification shares the memo: the same tensors for another request count are checked again
    s.sample(x, slots, pos)
    d = torch.zeros(4, 2, dtype=torch.int64)
    with pytest.raises(SamplingInputError, match=r"slots: must be a contiguous int64 \(4,\)"):
        s.verify(torch.randn(12, V).to(torch.bfloat16), d, slots, pos)
    assert s.verify(torch.randn(15, V).to(torch.bfloat16), torch.zeros(N, 2, dtype=torch.int64), slots,
                    pos).tokens.shape == (N, 3)


def test_out_of_an_empty_batch():
    s = new_sampler()
    x = torch.zeros(0, V, dtype=torch.bfloat16)
    empty = s.sample(x, [], [])
    assert s.sample(x, [], [], out=empty) is empty and empty.tokens.shape == (0,)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        torch.nan_to_num(a.float(), nan=123.0), torch.nan_to_num(b.float(), nan=123.0))


@pytest.mark.parametrize("kind", ["one_hot", "sparse"])
def test_verify_out_receives_what_a_fresh_call_returns(kind):
    """Two samplers in the same state verify three steps (ragged draft counts, penalties counting the
    accepted tokens, raw and processed top-n); one allocates, the other writes into poisoned buffers:
    every field bitwise equal, `out` itself returned, the counts equal. Sparse drafts whose entries miss
    part of the distribution (complete False) make `exact` False in place."""
    a, b = new_sampler(), new_sampler()
    gen = torch.Generator().manual_seed(8)
    gamma, bsz = 2, N
    out = None
    for step in range(3):
        x = (torch.randn(bsz * (gamma + 1), V, generator=gen) * 3).to(torch.bfloat16)
        d = torch.randint(0, V, (bsz, gamma), generator=gen)
        d[1] = x.float().view(bsz, gamma + 1, V)[1, :gamma].argmax(-1)     # the greedy request accepts
        q = None
        if kind == "sparse":
            ids = torch.randint(0, V, (bsz, gamma, 4), generator=gen)
            ids[..., 0] = d
            q = SparseDraftProbs(ids, torch.full((bsz, gamma, 4), 0.25),
                                 torch.tensor([[True, True], [True, False]] + [[True, True]] * (bsz - 2)))
        kw = dict(num_draft_tokens=[2, 2, 1, 0, 2], draft_probs=q)
        want = a.verify(x, d, list(range(bsz)), [5 * step] * bsz, **kw)
        if out is None:
            out = VerifyOutput(*(torch.full_like(t, True) if t.dtype == torch.bool else torch.full_like(t, -7)
                                 for t in dataclasses.astuple(want)))
        else:
            for t in dataclasses.astuple(out):
                t.fill_(True) if t.dtype == torch.bool else t.fill_(-7)
        got = b.verify(x, d, list(range(bsz)), [5 * step] * bsz, out=out, **kw)
        assert got is out
        assert all(same_values(w, g) for w, g in zip(dataclasses.astuple(want), dataclasses.astuple(got)))
        assert torch.equal(a.table.counts, b.table.counts)
    if kind == "sparse":
        assert not bool(out.exact[1])


def test_verify_out_that_does_not_fit_is_refused_before_launch():
    s = new_sampler()
    x = torch.randn(N * 3, V).to(torch.bfloat16)
    d = torch.zeros(N, 2, dtype=torch.int64)
    good = s.verify(x, d, list(range(N)), [0] * N)
    counts = s.table.counts.clone()
    for bad, match in ((dataclasses.replace(good, tokens=good.tokens[:, :2]), r"tokens .*\(5, 3\)"),
                       (dataclasses.replace(good, valid=good.valid.to(torch.int8)), "valid must be .* torch.bool"),
                       (dataclasses.replace(good, top_token_ids=None), "top_token_ids must be"),
                       (good.tokens, "must be a VerifyOutput")):
        with pytest.raises(SamplingInputError, match=match) as e:
            s.verify(x, d, list(range(N)), [0] * N, out=bad)
        assert e.value.field == "out"
        assert torch.equal(s.table.counts, counts)


def test_verify_out_checked_once_is_checked_again_when_it_changes():
    """verify(out=...) skips the check for the buffers of the last checked call (outputs.kept_check);
    a field replaced in place, or the same buffers for another batch or γ, are checked again."""
    s = new_sampler()
    x = torch.randn(N * 3, V).to(torch.bfloat16)
    d = torch.zeros(N, 2, dtype=torch.int64)
    out = s.verify(x, d, list(range(N)), [0] * N)
    assert s.verify(x, d, list(range(N)), [1] * N, out=out) is out    # checked, kept
    counts = s.table.counts.clone()

    def refused(match, x=x, d=d, bsz=N):
        with pytest.raises(SamplingInputError, match=match) as e:
            s.verify(x, d, list(range(bsz)), [2] * bsz, out=out)
        assert e.value.field == "out"
        assert torch.equal(s.table.counts, counts)

    refused(r"tokens must be .*\(5, 2\)", x=x[:N * 2], d=d[:, :1])
    refused(r"tokens must be .*\(4, 3\)", x=x[:12], d=d[:4], bsz=4)
    good = out.num_accepted
    out.num_accepted = good[:-1]
    refused(r"num_accepted must be .*\(5,\)")
    out.num_accepted = good
    assert s.verify(x, d, list(range(N)), [3] * N, out=out) is out
    counts = s.table.counts.clone()
    out.tokens.data = torch.empty(N, 1, dtype=torch.int64)   # same tensor object, other (smaller) memory
    refused(r"tokens must be .*\(5, 3\)")
