"""Bad input at the edges of the public API (found by a review of session 21): each is refused with a
SamplingInputError naming the field (and the row or slot), before anything is written or launched,
and a refused request leaves its slot as it was."""
import numpy as np
import pytest
import torch

from sonicsampler import SamplingInputError, SamplingParams, reference, topk
from sonicsampler import slots as slots_mod
from sonicsampler.errors import InvalidParameterError
from sonicsampler.sampler import Sampler, sample

pytestmark = pytest.mark.interpreter

V = 300


def _sampler():
    return Sampler(V, 4, "cpu", block=64, emit=8, bound=16)


@pytest.mark.parametrize("field,kw", [
    ("temperature", dict(temperature=1e-50)),     # float32 0: admission divided by zero after a first write
    ("temperature", dict(temperature=1e300)),     # float32 inf: 1 / temperature 0, a banned token NaN
    ("temperature", dict(temperature=1e-39)),     # float32 subnormal: its reciprocal overflows
    ("repetition_penalty", dict(repetition_penalty=1e-50)),
    ("repetition_penalty", dict(repetition_penalty=1e39)),
    ("logit_bias", dict(logit_bias={3: 1e39})),   # float32 +inf: the row would turn invalid
    ("logit_bias", dict(logit_bias={3: -1e39})),
])
def test_scales_and_biases_float32_cannot_hold_are_refused(field, kw):
    with pytest.raises(InvalidParameterError) as e:
        SamplingParams(**kw)
    assert e.value.field == field


def test_the_ranges_edges_are_kept():
    for kw in (dict(temperature=1e-30), dict(temperature=1e30), dict(repetition_penalty=1e-30),
               dict(repetition_penalty=1e30), dict(logit_bias={3: 1e30, 4: -1e30, 5: float("-inf")})):
        SamplingParams(**kw)


def test_numpy_integers_become_python_ints():
    p = SamplingParams(top_k=np.int64(5), seed=np.uint64(7), logprobs=np.int32(2))
    assert (type(p.top_k), type(p.seed), type(p.logprobs)) == (int, int, int)
    with pytest.raises(SamplingInputError) as e:      # the bound check sees it (it tests isinstance int)
        _sampler().add_request(0, SamplingParams(logprobs=np.int64(20)))
    assert e.value.field == "logprobs"


def _slot_state(s, slot):
    t = s.table
    return [x[slot].clone() for x in (t.flags, t.inv_temperature, t.top_k, t.top_p, t.repetition, t.seed,
                                      t.bias_count, t.prompt_mask)] + [t.host[slot]]


def _same(a, b):
    return all(torch.equal(x, y) if torch.is_tensor(x) else x == y for x, y in zip(a, b))


@pytest.mark.parametrize("prompt", [[3.9], [True], ["12"], torch.tensor([3.9, 1.0]), torch.tensor([True]),
                                    None, 5, [V], [-1]])
def test_bad_prompt_ids_are_refused_and_leave_the_slot_as_it_was(prompt):
    s = _sampler()
    s.add_request(0, SamplingParams(temperature=0.0))
    before = _slot_state(s, 0)
    with pytest.raises(SamplingInputError) as e:
        s.add_request(0, SamplingParams(temperature=0.7, top_k=5, seed=3), prompt_token_ids=prompt)
    assert e.value.field == "prompt_token_ids"
    assert _same(before, _slot_state(s, 0))


def test_a_request_refused_late_in_admission_writes_nothing(monkeypatch):
    """The slot's row is computed whole before its first write: a failure anywhere in that (here the
    prompt's bitmask) leaves the slot's earlier request in place, on the device and in the mirror."""
    s = _sampler()
    s.add_request(0, SamplingParams(temperature=0.0))
    before = _slot_state(s, 0)

    def boom(self, tokens):
        raise SamplingInputError("prompt_token_ids", "stand-in failure")
    monkeypatch.setattr(slots_mod.SlotTable, "bitmask", boom)
    with pytest.raises(SamplingInputError):
        s.add_request(0, SamplingParams(temperature=0.7, top_k=5, repetition_penalty=1.3, seed=3,
                                        logit_bias={1: 2.0}), prompt_token_ids=[1, 2])
    assert _same(before, _slot_state(s, 0))


def test_admission_writes_the_table_without_waiting_for_the_gpu(monkeypatch):
    """add_request, remove_request and set_output write the slot table with fills and copies from pinned
    memory (non_blocking): an element assignment (`t[slot] = value`) or a blocking copy waits for the
    GPU's queued work (~30 ms per write behind busy work on an H100, run 121). Recorded on the CPU: every
    __setitem__ and copy_ into the table's storage."""
    s = _sampler()
    t = s.table
    storages = {x.untyped_storage().data_ptr() for x in vars(t).values() if torch.is_tensor(x)}
    writes = []
    real_set, real_copy = torch.Tensor.__setitem__, torch.Tensor.copy_

    def setitem(self, key, value):
        if self.untyped_storage().data_ptr() in storages:
            writes.append("setitem")
        return real_set(self, key, value)

    def copy_(self, src, non_blocking=False):
        if self.untyped_storage().data_ptr() in storages and not non_blocking:
            writes.append("blocking copy_")
        return real_copy(self, src, non_blocking)

    monkeypatch.setattr(torch.Tensor, "__setitem__", setitem)
    monkeypatch.setattr(torch.Tensor, "copy_", copy_)
    s.add_request(1, SamplingParams(temperature=0.7, top_k=5, top_p=0.9, min_p=0.1, repetition_penalty=1.3,
                                    frequency_penalty=0.2, presence_penalty=0.1, logit_bias={1: 2.0, 4: -1.0},
                                    logprobs=2, seed=3), prompt_token_ids=[1, 2, 3])
    t.set_output(1, [4, 4, 5])
    s.remove_request(1)
    monkeypatch.undo()
    assert writes == []
    s.add_request(1, SamplingParams(temperature=0.7, repetition_penalty=1.3, seed=3), prompt_token_ids=[1, 2])
    t.set_output(1, [4, 4, 5])
    assert t.counts[1, 4] == 2 and t.counts[1, 5] == 1 and int(t.counts[1].sum()) == 3
    assert int(t.flags[1]) == t.host_flags[1] != 0


def test_duplicate_host_slots_are_refused_naming_the_second_row():
    s = _sampler()
    s.add_request(0, SamplingParams(seed=1))
    s.add_request(1, SamplingParams(seed=2))
    x = torch.randn(3, V).to(torch.bfloat16)
    for slots in ([0, 1, 0], torch.tensor([0, 1, 0])):
        with pytest.raises(SamplingInputError, match="slot 0 is also row 0") as e:
            s.sample(x, slots, [1, 1, 1])
        assert (e.value.field, e.value.request) == ("slots", 2)
    assert int(s.table.counts.sum()) == 0


@pytest.mark.parametrize("bad", [
    torch.tensor([0, 9, 1, 9, 2, 9])[::2],      # strided: the kernels would read 0, 9, 1
    torch.tensor([1]).expand(3),                # broadcast: they would read past the allocation
    torch.tensor([0, 1, 2], dtype=torch.int32),
    torch.tensor([0.0, 1.0, 2.0]),
    torch.tensor([True, False, True]),
])
def test_device_slots_and_positions_of_another_layout_are_refused(monkeypatch, bad):
    """Device tensors are used unchecked (no sync) but their dtype and layout are checked: the kernels
    read n int64 values at the address. On the CPU, the device branch is reached as a CUDA caller would."""
    monkeypatch.setattr(Sampler, "on_host", staticmethod(lambda values: not torch.is_tensor(values)))
    s = _sampler()
    for i in range(3):
        s.add_request(i, SamplingParams(seed=i))
    x = torch.randn(3, V).to(torch.bfloat16)
    good = torch.tensor([0, 1, 2])
    for slots, positions, field in ((bad, good, "slots"), (good, bad, "positions")):
        with pytest.raises(SamplingInputError) as e:
            s.sample(x, slots, positions)
        assert e.value.field == field
    d = torch.zeros(3, 2, dtype=torch.int64)
    y = torch.randn(9, V).to(torch.bfloat16)
    with pytest.raises(SamplingInputError) as e:
        s.verify(y, d, good, good, num_draft_tokens=bad)
    assert e.value.field == "num_draft_tokens"
    assert int(s.table.counts.sum()) == 0


@pytest.mark.parametrize("slots", [torch.tensor(0), 0, None])
def test_slots_that_are_no_sequence_are_refused(slots):
    s = _sampler()
    s.add_request(0, SamplingParams(seed=1))
    with pytest.raises(SamplingInputError) as e:
        s.sample(torch.randn(1, V).to(torch.bfloat16), slots, [0])
    assert e.value.field == "slots"


def test_numpy_slots_and_positions_are_taken():
    s = _sampler()
    s.add_request(2, SamplingParams(temperature=0.0))
    x = torch.randn(1, V).to(torch.bfloat16)
    out = s.sample(x, np.array([2]), np.array([4]))
    assert out.tokens.tolist() == [int(x.float().argmax())]


@pytest.mark.parametrize("call,field", [
    (lambda x: sample(x[None], SamplingParams(), positions=[0]), "logits"),                  # 3-D
    (lambda x: sample(x, [SamplingParams(), None], positions=[0, 0]), "params"),
    (lambda x: sample(x, SamplingParams(), positions=[0, 0], prompt_token_ids=[[1]]), "prompt_token_ids"),
    (lambda x: sample(x, SamplingParams(), positions=[0, 0], output_token_ids=[[1.7], []]), "output_token_ids"),
    (lambda x: sample(x, SamplingParams(), positions=[0, 0], output_token_ids=[[V], []]), "output_token_ids"),
    (lambda x: sample(x, SamplingParams(), positions=[0, 0], output_token_ids=[1, 2]), "output_token_ids"),
])
def test_functional_form_refuses_bad_input_by_field(call, field):
    x = torch.randn(2, V).to(torch.bfloat16)
    with pytest.raises(SamplingInputError) as e:
        call(x)
    assert e.value.field == field


def test_topk_out_is_checked():
    x = torch.randn(2, V).to(torch.bfloat16)
    k = 4
    good = (torch.empty(2, k, dtype=torch.bfloat16), torch.empty(2, k, dtype=torch.int64))
    for bad in [(torch.empty(2, 2, dtype=torch.bfloat16), good[1]),                  # too small
                (torch.empty(2, k, dtype=torch.float32), good[1]),                   # values' dtype
                (good[0], torch.empty(2, k, dtype=torch.int32)),                     # indices' dtype
                (good[0], torch.empty(k, 2, dtype=torch.int64).t()),                 # strided
                [1, 2], good[0]]:
        with pytest.raises(SamplingInputError) as e:
            topk(x, k, out=bad)
        assert e.value.field == "out"
    v, i = topk(x, k, out=good)
    assert v is good[0] and i is good[1]
    assert torch.equal(i, reference.topk(x, k)[1])     # ties (bf16 values repeat) to the lower index


def test_a_capture_that_would_make_zeroed_scratch_is_refused(monkeypatch):
    """A zeroed scratch buffer (arrival counters, boards) made during a CUDA-graph capture would be
    zeroed only at that graph's replays while eager calls use it too: refused, naming the warm-up."""
    from sonicsampler.topk import _Scratch
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    with pytest.raises(RuntimeError, match="warmup"):
        _Scratch().get("verify_arrived", 8, torch.int32, torch.device("cuda"), zeroed=True)


def test_topk_warmup_prepares_each_k_specialisation():
    """k is a launch argument Triton specialises (1, multiples of 16): k = 1 and k = 2 share every
    configuration yet compile apart, so the warm-up counts (and on a GPU launches) both."""
    from sonicsampler.topk import topk_warmup
    assert topk_warmup(V, 1, ks=(1, 2), device="cpu") == 2
    assert topk_warmup(V, 1, ks=(100, 128), device="cpu") == 2
    assert topk_warmup(V, 1, ks=(100, 120), device="cpu") == 1


def test_vocabularies_the_exact_passes_cannot_count_are_refused():
    """The exact passes hold token ids as fp32 values and sum a row's weights as integers
    (kernels/long_rows.py): a vocabulary of 2**24 tokens or more is refused when the Sampler is made,
    naming the field; one token fewer is accepted (no tensor of that width is allocated here)."""
    with pytest.raises(ValueError, match="vocab_size must be below 2\\*\\*24"):
        Sampler(2 ** 24, 1, "cpu")
    assert Sampler(2 ** 24 - 1, 1, "cpu").vocab_size == 2 ** 24 - 1
