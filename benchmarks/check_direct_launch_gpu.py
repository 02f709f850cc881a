"""The direct launch (direct_launch.DirectLaunch) against Triton's C launcher at production size, on the
GPU: twin Samplers in the same state, one launching every call through Triton's launcher (launch.DIRECT
off), the other through the kept parameter blocks (on), over several steps with new logits, positions
and masks; every output must be bitwise equal, and the slots' counts too. Covered: the sampler's
mixed rows (penalties, bias, a grammar mask, raw and processed top-n, greedy), draft outputs, out=,
untruncated rows and a nucleus beyond the bound (stage 2's shared passes, helper programs),
verification with one-hot, dense and sparse drafts and ragged counts, the top-k, and a CUDA graph
captured through the direct launch replayed against the twin's eager calls. Each check also reports
how many launches went direct (none would make it no test). JSON lines in $OUT/check_direct.jsonl."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from benchmarks.check_sampler_gpu import mixed_params
from benchmarks.gpu_log import JsonLog
from sonicsampler import Sampler, SamplingParams, SparseDraftProbs, launch, reference, topk
from sonicsampler.direct_launch import DirectLaunch

log = JsonLog("check_direct.jsonl")
# CHECK_DEVICE=cpu CHECK_V=600 (with TRITON_INTERPRET=1) runs the script's own code on a CPU: nothing
# launches direct there, so it only catches the script's mistakes before a GPU call.
DEV = os.environ.get("CHECK_DEVICE", "cuda")
V = int(os.environ.get("CHECK_V", 151936))
KW = {} if DEV == "cuda" else {"block": 64, "bound": 16}
_direct_calls = [0]
_real_call = DirectLaunch.__call__


def _counting(self, grid, dyn, stream):
    ok = _real_call(self, grid, dyn, stream)
    _direct_calls[0] += bool(ok)
    return ok


DirectLaunch.__call__ = _counting


def _tensors(o):
    """Every tensor of an output, nested dataclasses included, in field order."""
    if torch.is_tensor(o):
        return [o]
    if o is None:
        return []
    if isinstance(o, (tuple, list)):
        return [t for x in o for t in _tensors(x)]
    return [t for f in o.__dataclass_fields__ for t in _tensors(getattr(o, f))]


def _equal(a, b) -> bool:
    ta, tb = _tensors(a), _tensors(b)
    return len(ta) == len(tb) and all(
        x.shape == y.shape and torch.equal(torch.nan_to_num(x.float(), nan=123.0), torch.nan_to_num(y.float(), nan=123.0))
        for x, y in zip(ta, tb))


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def _twins(params, prompt=(1, 2, 3)):
    out = []
    for _ in range(2):
        s = Sampler(V, len(params), DEV, **KW)
        for i, p in enumerate(params):
            s.add_request(i, p, prompt_token_ids=list(prompt))
        out.append(s)
    return out


def _ab(what, triton_call, direct_call, steps=3, state=None):
    """Each step: the first call through Triton's launcher, the second through the direct launch."""
    before, ok = _direct_calls[0], True
    for step in range(steps):
        launch.DIRECT = False
        want = triton_call(step)
        launch.DIRECT = True
        got = direct_call(step)
        ok &= _equal(want, got)
    sync()
    row = dict(what=what, equal=bool(ok), direct_launches=_direct_calls[0] - before)
    if state is not None:
        row["state_equal"] = bool(state())
    log.emit(**row)


def check_sample(n=16):
    gen = torch.Generator().manual_seed(3)
    params = mixed_params(n, gen)
    params[0] = SamplingParams(temperature=1.0, top_p=0.999, seed=1)    # a nucleus beyond the bound
    params[1] = SamplingParams(temperature=0.9, seed=2, logprobs=3)      # untruncated, top-n
    a, b = _twins(params)
    g = torch.Generator(device=DEV).manual_seed(4)
    xs = [(3 * torch.randn(n, V, device=DEV, generator=g)).to(torch.bfloat16) for _ in range(3)]
    masks = [torch.randint(-2**31, 2**31 - 1, (n, a.table.words), device=DEV, dtype=torch.int32, generator=g)
             for _ in range(3)]
    slots = torch.arange(n, device=DEV)

    def call(s, step, **kw):
        pos = torch.full((n,), 10 + step, device=DEV)
        return s.sample(xs[step], slots, pos, masks[step] if step % 2 else None, **kw)

    state = lambda: torch.equal(a.table.counts, b.table.counts)
    _ab("sample_mixed", lambda st: call(a, st), lambda st: call(b, st), state=state)
    _ab("sample_mixed_drafts", lambda st: call(a, st, return_draft_probs=True),
        lambda st: call(b, st, return_draft_probs=True), state=state)
    buf = call(b, 0)
    call(a, 0)       # the twins stay in the same state (counts)
    _ab("sample_mixed_out", lambda st: call(a, st), lambda st: call(b, st, out=buf), state=state)
    if DEV != "cuda":
        return
    # a graph captured through the direct launch, replayed against the twin's eager calls (Triton's)
    x, pos = xs[0].clone(), torch.zeros(n, dtype=torch.int64, device=DEV)
    launch.DIRECT = False
    a.sample(x, slots, pos)
    launch.DIRECT = True
    b.sample(x, slots, pos)     # (each twin samples this step once: their counts stay equal)
    torch.cuda.synchronize()
    before = _direct_calls[0]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = b.sample(x, slots, pos)
    captured = _direct_calls[0] - before
    ok = True
    for step in range(3):
        x.copy_(xs[step])
        pos.fill_(50 + step)
        graph.replay()
        launch.DIRECT = False
        ok &= _equal(a.sample(x, slots, pos), got)
    torch.cuda.synchronize()
    log.emit(what="sample_graph_direct", equal=bool(ok), direct_launches_captured=captured,
             state_equal=bool(torch.equal(a.table.counts, b.table.counts)))


def check_verify(bsz=6, gamma=3):
    gen = torch.Generator().manual_seed(5)
    params = mixed_params(bsz, gen)
    a, b = _twins(params)
    g = torch.Generator(device=DEV).manual_seed(6)
    rows = bsz * (gamma + 1)
    slots = torch.arange(bsz, device=DEV)
    k = KW.get("bound", 128)
    for kind in ("one_hot", "dense", "sparse"):
        xs = [(3 * torch.randn(rows, V, device=DEV, generator=g)).to(torch.bfloat16) for _ in range(3)]
        ds = [torch.randint(0, V, (bsz, gamma), device=DEV, generator=g) for _ in range(3)]
        if kind == "dense":
            qs = [torch.softmax(torch.randn(bsz, gamma, V, device=DEV, generator=g), -1) for _ in range(3)]
        elif kind == "sparse":
            qs = []
            for step in range(3):
                # distinct ids, the draft's own first
                ids = (ds[step][..., None] + 1187 * torch.arange(k, device=DEV)) % V
                qs.append(SparseDraftProbs(ids, torch.softmax(torch.randn(bsz, gamma, k, device=DEV, generator=g), -1)))
        else:
            qs = [None] * 3
        counts = torch.tensor([gamma, 1, 0, 2, gamma, gamma][:bsz], device=DEV)

        def call(s, step):
            pos = torch.full((bsz,), 20 + step, device=DEV)
            return s.verify(xs[step], ds[step], slots, pos, draft_probs=qs[step],
                            num_draft_tokens=counts if step == 2 else None)

        _ab(f"verify_{kind}", lambda st: call(a, st), lambda st: call(b, st),
            state=lambda: torch.equal(a.table.counts, b.table.counts))


def check_topk():
    g = torch.Generator(device=DEV).manual_seed(7)
    for n, v, k in ((1, V, 128), (32, V, 128), (7, 32000, 50)) if DEV == "cuda" else ((3, V, 8),):
        xs = [torch.randn(n, v, device=DEV, generator=g).to(torch.bfloat16) for _ in range(3)]
        topk(xs[0], k)
        _ab(f"topk n={n} V={v} k={k}", lambda st: topk(xs[st], k), lambda st: topk(xs[st], k))
        ref = reference.topk(xs[2].cpu(), k)
        launch.DIRECT = True
        got = topk(xs[2], k)
        log.emit(what=f"topk_reference n={n} V={v} k={k}", indices_equal=bool(torch.equal(got[1].cpu(), ref[1])))


if __name__ == "__main__":
    if DEV == "cuda":
        log.emit_env()
    parts = sys.argv[1:] or ["sample", "topk", "verify"]
    if "sample" in parts:
        check_sample()
    if "topk" in parts:
        check_topk()
    if "verify" in parts:
        check_verify()
