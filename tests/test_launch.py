"""Launches after the first pass the slot table's and the scratch's tensors as fixed addresses
(launch.Launcher, `dynamic`); under the interpreter every launch checks that nothing outside the
dynamic positions changed, so these repeated calls with new logits, slots, positions, masks and
outputs would fail on a missing position. Launcher.launch also checks that the values a call gives
for the dynamic positions are the ones its whole argument tuple holds there."""
import importlib

import pytest
import torch

from sonicsampler import Sampler, SamplingParams

sampler_mod = importlib.import_module("sonicsampler.sampler")


def _steps(s, v):
    outs = []
    for step in range(3):
        n = 3 + min(step, 1)        # steps 1 and 2 share their plans: the fixed addresses are reused
        x = torch.randn(n, v).to(torch.bfloat16)
        mask = torch.full((n, (v + 31) // 32), -1, dtype=torch.int32)
        outs.append(s.sample(x, list(range(n)), [step] * n))
        outs.append(s.sample(x, torch.arange(n), torch.full((n,), step), grammar_bitmask=mask))
        outs.append(s.sample(x, list(range(n)), [step] * n, return_draft_probs=True))
    return outs


def _sampler(v):
    s = Sampler(v, 4, "cpu", block=64, emit=8, bound=16)
    for i in range(4):
        s.add_request(i, SamplingParams(temperature=0.7, top_k=10, top_p=0.9, seed=i, logprobs=2 if i % 2 else None))
    return s


def test_fixed_addresses_cover_every_changing_argument():
    outs = _steps(_sampler(300), 300)
    assert all(bool(o.valid.all()) for o in outs)


def test_a_missing_dynamic_position_is_caught(monkeypatch):
    monkeypatch.setattr(sampler_mod, "_DYNAMIC1", sampler_mod._DYNAMIC1[1:])   # logits no longer dynamic
    # Caught where the call's dynamic values are compared with the whole argument tuple (Launcher.launch)
    # or, for a launch given all its arguments, where the fixed addresses are (Launcher.__call__).
    with pytest.raises(AssertionError, match="not dynamic|differs"):
        _steps(_sampler(300), 300)


verification_mod = importlib.import_module("sonicsampler.verification")


def _verify_steps(s, v):
    """Repeated verifications with one plan each: new logits, drafts, slots (host and device), positions,
    draft counts and dense draft probabilities, and fresh outputs every call."""
    outs = []
    for step in range(3):
        x = torch.randn(6, v).to(torch.bfloat16)
        drafts = torch.randint(0, v, (2, 2))
        q = torch.rand(2, 2, v)
        q /= q.sum(-1, keepdim=True)
        outs.append(s.verify(x, drafts, [0, 1], [step, step]))
        outs.append(s.verify(x, drafts, torch.tensor([2, 3]), torch.tensor([step, step]),
                             num_draft_tokens=torch.tensor([1, 2])))
        outs.append(s.verify(x, drafts, [1, 0], [step, step], draft_probs=q))
    return outs


def test_verification_launches_cover_every_changing_argument():
    outs = _verify_steps(_sampler(300), 300)
    assert all(bool(o.valid.all()) for o in outs)


def test_a_missing_verification_dynamic_position_is_caught(monkeypatch):
    monkeypatch.setattr(verification_mod, "_DYNAMIC2", verification_mod._DYNAMIC2[:-3])   # top-n outputs fixed
    with pytest.raises(AssertionError, match="not dynamic|differs"):
        _verify_steps(_sampler(300), 300)


def test_draft_counts_made_under_graph_capture_are_not_kept(monkeypatch):
    """Verification keeps the draft counts of γ per (B, γ), except when they are made during CUDA-graph
    capture (their fill would then run only at replays, and an eager call before the first replay
    would read an unfilled tensor)."""
    s = _sampler(300)
    x = torch.randn(6, 300).to(torch.bfloat16)
    drafts = torch.randint(0, 300, (2, 2))
    monkeypatch.setattr(verification_mod, "_capturing", lambda dev: True)
    s.verify(x, drafts, [0, 1], [0, 0])
    assert s._full_drafts == {}
    monkeypatch.setattr(verification_mod, "_capturing", lambda dev: False)
    s.verify(x, drafts, [0, 1], [1, 1])
    assert list(s._full_drafts) == [(2, 2)] and s._full_drafts[(2, 2)].tolist() == [2, 2]


launch_mod = importlib.import_module("sonicsampler.launch")


def test_a_direct_launch_that_passes_other_arguments_is_caught(monkeypatch):
    """The direct launch (launch._direct: the arguments bound in a generated function) is checked under
    the interpreter, at every launch of a recorded key, against what Triton's runner takes: here it is
    built with the first two fixed values swapped."""
    real = launch_mod._direct

    def swapped(bare, grid, fixed, tail, dynamic, tensors):
        fixed = list(fixed)
        free = [i for i in range(len(fixed)) if i not in dynamic]
        fixed[free[0]], fixed[free[1]] = fixed[free[1]], fixed[free[0]]
        return real(bare, grid, fixed, tail, dynamic, tensors)

    monkeypatch.setattr(launch_mod, "_direct", swapped)
    with pytest.raises(AssertionError, match="direct launch passes"):
        _steps(_sampler(300), 300)


def test_a_recorded_key_launched_with_another_grid_goes_the_general_way(monkeypatch):
    """Off the interpreter, a recorded key launches through its direct function, which holds the key's
    first grid; a call with another grid must not use it (it would launch the wrong number of
    programs) but the C launch with its own grid. Exercised with stand-ins for the compiled kernel."""
    monkeypatch.setattr(launch_mod, "INTERPRETED", False)
    monkeypatch.setattr(launch_mod, "_hooks_set", lambda: False)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda dev: 77, raising=False)
    calls = []
    lau = launch_mod.Launcher(None)
    bare = (lambda *a: calls.append(("c", a)), "fn", False, False, "packed")
    direct = lambda *d: calls.append(("direct", d))   # noqa: E731
    lau._compiled["k"] = (None, ("tail",), [10, 20, 30], bare, direct, (4,), (0, 2))
    lau.launch((4,), "k", (11, 31), None, {}, (0, 2))
    assert calls == [("direct", (11, 31))]
    calls.clear()
    lau.launch((5,), "k", (12, 32), None, {}, (0, 2))
    assert calls == [("c", (5, 1, 1, 77, "fn", False, False, None, None, "packed", None, None, None,
                            12, 20, 32, "tail"))]
