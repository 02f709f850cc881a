"""sonicsampler's own kernels. Each is one register() line, guarded until the kernel exists.

Kept apart from baselines.py so that the issues adding kernels touch only this file.
"""
from __future__ import annotations

import torch

from benchmarks import cases  # noqa: F401  (registers the cases)
from benchmarks.harness import register

try:
    import sonicsampler as ss
except Exception as e:  # e.g. src/ not on the path on the GPU machine: say so, keep the baselines
    print(f"sonicsampler not importable, its kernels are not benchmarked: {e}")
    ss = None

# callable(): `sonicsampler.topk` is also the name of a submodule, an attribute once anything imports it.
if ss is not None and hasattr(ss, "topk") and callable(ss.topk):
    register("topk", "sonicsampler", lambda cfg: lambda inp: ss.topk(inp["logits"], cfg["k"]))


def f_sonicsampler_sample(cfg):
    """The fused Sampler, slots and positions as device tensors (the CUDA-graph path)."""
    n, v = cfg["rows"], cfg["V"]
    s = ss.Sampler(v, n, "cuda")
    for i in range(n):
        s.add_request(i, ss.SamplingParams(temperature=cfg["T"], top_k=cfg["k"], top_p=cfg["p"], seed=i))
    slots = torch.arange(n, device="cuda", dtype=torch.int64)
    positions = torch.zeros(n, device="cuda", dtype=torch.int64)
    return lambda inp: s.sample(inp["logits"], slots, positions).tokens


if ss is not None and hasattr(ss, "Sampler"):
    register("sample", "sonicsampler", f_sonicsampler_sample)


def f_sonicsampler_verify(cfg):
    """Sampler.verify on the case's dense draft probabilities, per-request options as the target rows'
    (temperature, top-k, top-p), slots and positions as device tensors (the CUDA-graph path)."""
    b, g, v = cfg["B"], cfg["gamma"], cfg["V"]
    s = ss.Sampler(v, b, "cuda")
    for i in range(b):
        s.add_request(i, ss.SamplingParams(temperature=cfg["T"], top_k=cfg["k"], top_p=cfg["p"], seed=i))
    slots = torch.arange(b, device="cuda", dtype=torch.int64)
    positions = torch.zeros(b, device="cuda", dtype=torch.int64)
    return lambda inp: s.verify(inp["target_logits"].view(b * (g + 1), v), inp["draft_ids"], slots, positions,
                                draft_probs=inp["draft_probs"]).tokens


if ss is not None and hasattr(ss, "Sampler") and hasattr(ss.Sampler, "verify"):
    register("verify", "sonicsampler", f_sonicsampler_verify)
