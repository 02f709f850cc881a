"""Programmatic dependent launch (kernels/pdl.py, sonicsampler/pdl.py).

The launch itself needs a Hopper GPU (benchmarks/check_sampler_gpu.py and check_topk_gpu.py check
there that results and graph replays are unchanged). Here: which devices use it, that every stage gets
the right constexpr and launch option, and that the sm_90 compile of each stage holds the instruction
it must (stage 1 the early trigger, stage 2 the wait) and none without PDL.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sonicsampler import Sampler, SamplingParams, pdl

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake_gpu(monkeypatch):
    """A CUDA device of a chosen compute capability, outside the interpreter, for uses_pdl."""
    def make(major):
        monkeypatch.setattr(pdl, "INTERPRETED", False)
        monkeypatch.setattr(pdl, "_by_device", {})
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=None: (major, 0))
    return make


def test_pdl_only_on_hopper_and_later_outside_the_interpreter(fake_gpu, monkeypatch):
    assert not pdl.uses_pdl(torch.device("cpu"))
    fake_gpu(9)
    assert pdl.uses_pdl(torch.device("cuda"))
    on, off = {"PDL": True, "launch_pdl": True}, {"PDL": False}
    for pair in ("topk", "sampler"):
        assert pdl.stage2_options(torch.device("cuda:0"), 1, pair) == on
        assert pdl.stage2_options(torch.device("cuda:0"), pdl.MAX_ROWS[pair], pair) == on
        assert pdl.stage2_options(torch.device("cuda:0"), pdl.MAX_ROWS[pair] + 1, pair) == off   # big batches
    fake_gpu(8)
    assert not pdl.uses_pdl(torch.device("cuda"))
    assert pdl.stage2_options(torch.device("cuda"), 1, "topk") == off
    fake_gpu(9)
    monkeypatch.setattr(pdl, "_OVERRIDE", "0")          # SONICSAMPLER_PDL_MAX_ROWS=0
    assert pdl.stage2_options(torch.device("cuda"), 1, "sampler") == off


def test_sampler_stages_get_pdl_where_the_device_has_it(monkeypatch):
    import sonicsampler.sampler as sampler_mod
    for on in (False, True):
        monkeypatch.setattr(sampler_mod, "stage2_options",
                            lambda dev, n, pair, on=on: {"PDL": True, "launch_pdl": True} if on else {"PDL": False})
        s = Sampler(64, 2, "cpu", bound=8, block=16)
        s.add_request(0, SamplingParams(temperature=0.7, top_k=3, seed=1))
        plan = s._plan(2, torch.bfloat16, False, 0, False)
        assert plan["const1"]["PDL"] is on and "launch_pdl" not in plan["const1"]   # stage 1 never waits
        assert plan["const2"]["PDL"] is on and plan["const2"].get("launch_pdl", False) is on
        assert plan["rows2"]["PDL"] is on        # verification's stage 2 takes these


_COMPILE = r"""
import sys
sys.path.insert(0, sys.argv[1])
import torch
import sonicsampler.sampler as sampler_mod
import sonicsampler.verification as verification_mod
sampler_mod.INTERPRETED = verification_mod.INTERPRETED = True   # CPU tensors accepted: nothing launches
from benchmarks.compile_launches import capture, signature_of
from benchmarks.compile_report import S1, S2, compile_kernel
from sonicsampler import Sampler, SamplingParams
from sonicsampler.kernels.sample import sample_stage1, sample_stage2
from sonicsampler.kernels.topk import topk_stage1, topk_stage2
from sonicsampler.kernels.verify import verify_stage2

def has(k, what):
    return "griddepcontrol." + what in k.asm["ptx"]

for pdl in (False, True):
    k1 = compile_kernel(topk_stage1, S1, dict(BLOCK_LOG2=10, E_LOG2=3, M_LOG2=5, KEY64=False, STRATEGY="extract",
                                              NEG_INF_KEY=0x7F, INF_KEY=0xFF80, PDL=pdl), 1)
    k2 = compile_kernel(topk_stage2, S2, dict(Z_LOG2=8, E_LOG2=3, C_LOG2=7, BLOCK_LOG2=10, KEY64=False,
                                              NEG_INF_KEY=0x7F, PDL=pdl), 8)
    print("topk", pdl, has(k1, "launch_dependents"), has(k1, "wait"), has(k2, "launch_dependents"), has(k2, "wait"))

def call():   # small shapes: each compile takes seconds
    s = Sampler(600, 3, "cpu", bound=16, block=256)
    s.add_request(0, SamplingParams(temperature=0.7, top_k=5, seed=1))
    s.add_request(1, SamplingParams(seed=2))
    # Stage 2's SHARED variant, with top-n log-probabilities (its raw re-ranking and whole-row pass).
    s.add_request(2, SamplingParams(temperature=0.7, top_p=0.9, seed=3, logprobs=2))
    s.sample(torch.randn(2, 600).to(torch.bfloat16), [0, 1], [0, 0])
    s.sample(torch.randn(2, 600).to(torch.bfloat16), [0, 2], [0, 0])
    s.verify(torch.randn(4, 600).to(torch.bfloat16), torch.zeros(2, 1, dtype=torch.int64), [0, 1], [0, 0])

for fn, args, kwargs in capture([sample_stage1, sample_stage2, verify_stage2], call):
    if fn is sample_stage1 and kwargs.get("PENDING"):
        continue                  # verification's stage 1: the same trigger as the sampler's
    sig, consts = signature_of(fn, args, kwargs)
    consts["PDL"] = True          # as on an sm_90 device
    k = compile_kernel(fn, sig, consts, kwargs.get("num_warps", 4))
    print(fn.fn.__name__, has(k, "launch_dependents"), has(k, "wait"))
"""


def test_sm90_compiles_hold_the_trigger_and_the_wait():
    """Compiled for sm_90 without a GPU (Triton's bundled ptxas), in a process without the interpreter:
    with PDL, every stage 1 (top-k, sampler) has griddepcontrol.launch_dependents in its PTX and every
    stage 2 (top-k, sampler, verification) griddepcontrol.wait, each only the one it needs; without
    PDL, neither (top-k). The sampler's and verification's launches are the ones a Sampler call makes
    (captured, not run), at small shapes: stage 2 both without and with the shared passes (the latter
    with top-n log-probabilities)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    out = subprocess.run([sys.executable, "-c", _COMPILE, str(ROOT)], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().split("\n")
    assert lines == ["topk False False False False False", "topk True True False False True",
                     "sample_stage1 True False", "sample_stage2 False True", "sample_stage1 True False",
                     "sample_stage2 False True", "verify_stage2 False True"], lines
