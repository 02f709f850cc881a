"""sonicsampler.interpreter_speedup skips the Triton interpreter's repeated patching of triton.language
on helper calls. It must change no result: a child process runs a mixed sampler batch (processing,
truncation, logprobs, a row beyond the bound) and a top-k with the speedup and without it
(SONICSAMPLER_FAST_INTERPRETER=0), and every output must be bitwise equal. conftest installs it: if a
Triton upgrade made `install()` a no-op, the first test says so (CI would silently take twice as long)."""
import json
import os
import subprocess
import sys

import pytest
import torch
import triton
import triton.language as tl

from interp_core_only import plus_one
from sonicsampler import interpreter_speedup

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter only")

CHILD = r"""
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from sonicsampler import interpreter_speedup
fast = interpreter_speedup.install()
from sonicsampler import Sampler, SamplingParams, topk
gen = torch.Generator().manual_seed(3)
V = 300
logits = (2.0 * torch.randn(5, V, generator=gen)).to(torch.bfloat16)
params = [SamplingParams(temperature=0.7, top_k=10, top_p=0.9, seed=1, logprobs=3),
          SamplingParams(temperature=1.0, seed=2),
          SamplingParams(temperature=0.0, seed=3, logit_bias={7: 5.0}),
          SamplingParams(min_p=0.1, repetition_penalty=1.3, seed=4),
          SamplingParams(temperature=1.5, top_p=0.99, seed=5)]
s = Sampler(V, 5, "cpu", bound=16, block=64)
for i, p in enumerate(params):
    s.add_request(i, p)
out = s.sample(logits, list(range(5)), [3, 4, 5, 6, 7])
vals, idx = topk(logits.float(), 9)
res = {"fast": fast, "tokens": out.tokens.tolist(), "logprob": out.logprob.float().tolist(),
       "top_ids": out.top_token_ids.tolist(), "top_lp": out.top_logprobs.float().tolist(),
       "exact": out.exact.tolist(), "valid": out.valid.tolist(), "topk": [vals.tolist(), idx.tolist()]}
print(json.dumps(res))
"""


def _child(fast: bool) -> dict:
    env = dict(os.environ, SONICSAMPLER_FAST_INTERPRETER="1" if fast else "0")
    p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_conftest_installed_the_speedup():
    import triton.runtime.interpreter as interp
    assert interpreter_speedup._installed                      # by conftest, before this test
    assert interp._patch_lang.__name__ == "patch_lang_once"    # and the interpreter calls the wrapper
    assert interp.GridExecutor.__call__.__name__ == "launch_in_fresh_chunk"


def test_the_speedup_changes_no_output():
    fast, slow = _child(True), _child(False)
    assert fast.pop("fast") is True and slow.pop("fast") is False
    assert fast == slow


@triton.jit
def _store_doubles(o_ptr):
    tl.store(o_ptr + tl.arange(0, 4), tl.arange(0, 4) * 2)


def test_a_host_call_of_a_jit_function_leaves_later_launches_patched():
    """A jit function called from host code (outside any launch) is patched by Triton and recorded by
    nothing: launches after it still patch the language modules they need (a first version of the
    speedup recorded the host call's module and then skipped the second launch's patch)."""
    assert plus_one(1) == 2
    for _ in range(2):
        o = torch.full((4,), -1, dtype=torch.int32)
        _store_doubles[(1,)](o)
        assert o.tolist() == [0, 2, 4, 6]
