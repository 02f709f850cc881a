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


@triton.jit
def _count_sum_min_max(a1, s1, lo1, hi1, a2, s2, lo2, hi2):
    return a1 + a2, s1 + s2, tl.minimum(lo1, lo2), tl.maximum(hi1, hi2)


@triton.jit
def _tuple_reduce(x_ptr, f_ptr, o_ptr, of_ptr, AXIS: tl.constexpr):
    """Reduce an int64 (8, 16) block along AXIS (2: all of it) by a tuple combine: the count of odd
    values (int32), their sum (int64), the minimum and maximum (int64); along axis 1, also fp32 sums by
    the same combine, which must stay sequential (the slow reduction's rounding). (Triton's own
    reduction of a tuple over a whole block, axis None, fails on a 2-D block: it flattens only the
    first operand.)"""
    r = tl.arange(0, 8)[:, None]
    c = tl.arange(0, 16)[None, :]
    x = tl.load(x_ptr + r * 16 + c)
    odd = (x % 2) != 0
    if AXIS == 2:
        n, s, lo, hi = tl.reduce((odd.to(tl.int32), tl.where(odd, x, 0), x, x), None, _count_sum_min_max)
        tl.store(o_ptr, n.to(tl.int64))
        tl.store(o_ptr + 1, s)
        tl.store(o_ptr + 2, lo)
        tl.store(o_ptr + 3, hi)
    else:
        n, s, lo, hi = tl.reduce((odd.to(tl.int32), tl.where(odd, x, 0), x, x), AXIS, _count_sum_min_max)
        W: tl.constexpr = 16 if AXIS == 0 else 8
        j = tl.arange(0, W)
        tl.store(o_ptr + j, n.to(tl.int64))
        tl.store(o_ptr + W + j, s)
        tl.store(o_ptr + 2 * W + j, lo)
        tl.store(o_ptr + 3 * W + j, hi)
        if AXIS == 1:
            f = tl.load(f_ptr + r * 16 + c)
            fs, _a, _b, _c = tl.reduce((f, f, f, f), 1, _count_sum_min_max)
            tl.store(of_ptr + j, fs)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_integer_tuple_reductions_by_halving_equal_numpy(axis):
    """interpreter_speedup reduces integer tuples by halving (item 3 of its docstring): the results must be
    the exact count, sum, minimum and maximum along each axis and over the whole block (random int64
    values, odd and even, two near the int64 limits so that a wrong pairing of lanes shows); a float
    tuple keeps the sequential reduction (its sums round as index order does)."""
    import triton.runtime.interpreter as interp
    assert interp.ReduceOps.generic_reduce.__name__ == "halving_generic_reduce"
    gen = torch.Generator().manual_seed(11)
    x = torch.randint(-2 ** 40, 2 ** 40, (8, 16), generator=gen, dtype=torch.int64)
    x[3, 5] = 2 ** 62 + 1
    x[6, 0] = -2 ** 62 - 1
    f = torch.randn(8, 16, generator=gen) * torch.logspace(-6, 6, 16)
    o = torch.full((64,), -7, dtype=torch.int64)
    of = torch.full((8,), -7.0)
    _tuple_reduce[(1,)](x, f, o, of, AXIS=axis)
    odd = (x % 2) != 0
    dims = (0, 1) if axis == 2 else (axis,)
    want = [odd.sum(dims), torch.where(odd, x, 0).sum(dims), x.amin(dims), x.amax(dims)]
    if axis == 2:
        assert o[:4].tolist() == [int(w) for w in want]
    else:
        w = 16 if axis == 0 else 8
        assert o[:4 * w].view(4, w).tolist() == [t.tolist() for t in want]
    if axis == 1:
        seq = f[:, 0].clone()
        for k in range(1, 16):
            seq = seq + f[:, k]                # fp32, in index order: the sequential reduction's rounding
        assert of.tolist() == seq.tolist()
