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
from benchmarks.compile_report import S1, S2, compile_kernel
from sonicsampler.kernels.topk import topk_stage1, topk_stage2
for pdl in (False, True):
    k1 = compile_kernel(topk_stage1, S1, dict(BLOCK_LOG2=10, E_LOG2=3, M_LOG2=5, KEY64=False, STRATEGY="extract",
                                              NEG_INF_KEY=0x7F, INF_KEY=0xFF80, PDL=pdl), 1)
    k2 = compile_kernel(topk_stage2, S2, dict(Z_LOG2=8, E_LOG2=3, C_LOG2=7, BLOCK_LOG2=10, KEY64=False,
                                              NEG_INF_KEY=0x7F, PDL=pdl), 8)
    print(pdl, "griddepcontrol.launch_dependents" in k1.asm["ptx"], "griddepcontrol.wait" in k1.asm["ptx"],
          "griddepcontrol.launch_dependents" in k2.asm["ptx"], "griddepcontrol.wait" in k2.asm["ptx"])
"""


def test_sm90_compiles_hold_the_trigger_and_the_wait():
    """Compiled for sm_90 without a GPU (Triton's bundled ptxas), in a process without the interpreter:
    with PDL, stage 1's PTX has griddepcontrol.launch_dependents and stage 2's griddepcontrol.wait;
    without, neither."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    out = subprocess.run([sys.executable, "-c", _COMPILE, str(ROOT)], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.split("\n")
    assert lines[0] == "False False False False False"
    assert lines[1] == "True True False False True"
