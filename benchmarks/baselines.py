"""Baselines a user would compare sonicsampler against, one small factory each.

A factory takes the shape dict and returns ``call(inputs)`` (see harness.py). Imports and signature
checks happen in the factory, so a missing package or a changed API becomes a row's note.

FlashInfer: its samplers draw from torch's default generator unless given ``seed=`` and ``offset=``,
and that draw cannot be captured in a CUDA graph, so every call passes a fixed pair (replays then
repeat the same draws, which does not change their cost).
"""
from __future__ import annotations

import inspect

import torch

from benchmarks import cases  # noqa: F401  (registers the cases the implementations below belong to)
from benchmarks.harness import Skip, one_line, register

SEED, OFFSET = 42, 0


# ---------------------------------------------------------------- PyTorch reference pipelines

def mask_top_k_top_p(x: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Set fp32 logits outside each row's top-k, then outside its top-p nucleus, to -inf.

    One full ascending sort per row, as vLLM's V1 sampler does when FlashInfer is off: the k-th
    largest value is read at position V-k, and the nucleus is cut where the ascending cumulative
    probability is still <= 1-p (the largest token always stays).
    """
    V = x.shape[-1]
    srt, idx = x.sort(dim=-1, descending=False)
    kth = srt.gather(-1, (V - k.long()).clamp(min=0).unsqueeze(-1))
    srt.masked_fill_(srt < kth, float("-inf"))
    cum = srt.softmax(dim=-1).cumsum(dim=-1)
    drop = cum <= (1.0 - p).unsqueeze(-1)
    drop[..., -1] = False
    srt.masked_fill_(drop, float("-inf"))
    return torch.empty_like(x).scatter_(-1, idx, srt)


def torch_sample(logits, temperature, top_k, top_p) -> torch.Tensor:
    """Temperature, top-k, top-p, softmax, then an exponential race: argmax(probs / Exp(1)).

    The noise is drawn inside the call from torch's default CUDA generator, which PyTorch makes
    safe to capture in a graph; serving engines draw it every step, so its cost belongs in the time.
    """
    x = logits.float() / temperature.unsqueeze(-1)
    probs = mask_top_k_top_p(x, top_k, top_p).softmax(dim=-1)
    return probs.div_(torch.empty_like(probs).exponential_()).argmax(dim=-1)


def torch_verify(target_logits, draft_probs, draft_ids, temperature_rows, top_k_rows, top_p_rows):
    """Chain speculative verification: (B, gamma+1) tokens padded with -1, and accepted counts.

    Target probabilities get temperature and top-k/top-p by sort; draft token i is accepted while
    u_i * q_i < p_i; at the first rejection the replacement is drawn from max(p - q, 0), and when
    every draft is accepted the bonus token is drawn from the last target row. Both draws are an
    exponential race on the unnormalised weights.
    """
    B, G1, V = target_logits.shape
    G = G1 - 1
    x = target_logits.reshape(B * G1, V).float() / temperature_rows.unsqueeze(-1)
    p = mask_top_k_top_p(x, top_k_rows, top_p_rows).softmax(dim=-1).view(B, G1, V)
    ids = draft_ids.long().unsqueeze(-1)
    p_d = p[:, :G].gather(-1, ids).squeeze(-1)
    q_d = draft_probs.gather(-1, ids).squeeze(-1)
    accept = torch.rand_like(q_d) * q_d < p_d
    n_acc = accept.int().cumprod(dim=1).sum(dim=1)  # accepted prefix length, (B,)
    at = n_acc.view(B, 1, 1).expand(B, 1, V)
    p_sel = p.gather(1, at).squeeze(1)
    q_sel = draft_probs.gather(1, at.clamp(max=G - 1)).squeeze(1) * (n_acc < G).unsqueeze(-1)
    weights = (p_sel - q_sel).clamp_(min=0)
    last = weights.div_(torch.empty_like(weights).exponential_()).argmax(dim=-1)
    pos = torch.arange(G1, device=target_logits.device)
    drafts = torch.cat([draft_ids.long(), torch.full_like(draft_ids[:, :1], -1).long()], dim=1)
    out = torch.where(pos < n_acc.unsqueeze(-1), drafts, torch.full_like(drafts, -1))
    out.scatter_(1, n_acc.long().unsqueeze(-1), last.unsqueeze(-1))
    return out, n_acc


# ---------------------------------------------------------------- case topk

def f_torch_topk(cfg):
    k = cfg["k"]
    return lambda inp: torch.topk(inp["logits"], k)


def f_flashinfer_topk(cfg):
    fi = flashinfer()
    k = cfg["k"]
    return lambda inp: fi.top_k(inp["logits"], k)


# ---------------------------------------------------------------- case sample

def f_torch_sample(cfg):
    return lambda inp: torch_sample(inp["logits"], inp["temperature"], inp["top_k"], inp["top_p"])


def f_torch_compile_sample(cfg):
    # A fresh static-shape compile per shape: dynamo's per-function cache would otherwise hit its
    # recompile limit across the grid and silently fall back to eager.
    torch._dynamo.reset()
    fn = torch.compile(torch_sample, dynamic=False)
    return lambda inp: fn(inp["logits"], inp["temperature"], inp["top_k"], inp["top_p"])


def f_flashinfer_sample_probs(cfg):
    s = flashinfer().sampling
    softmax = needs(s.softmax, "temperature")
    draw = needs(s.top_k_top_p_sampling_from_probs, "seed", "offset")

    def call(inp):
        probs = softmax(inp["logits"], temperature=inp["temperature"])
        return draw(probs, inp["top_k"], inp["top_p"], seed=SEED, offset=OFFSET)
    return call


def f_flashinfer_sample_logits(cfg):
    s = flashinfer().sampling
    draw = needs(s.top_k_top_p_sampling_from_logits, "seed", "offset")

    def call(inp):
        # No temperature argument there: divide first (bf16 / fp32 promotes to the fp32 it expects).
        x = inp["logits"] / inp["temperature"].unsqueeze(-1)
        return draw(x, inp["top_k"], inp["top_p"], seed=SEED, offset=OFFSET)
    return call


# ---------------------------------------------------------------- case verify

def f_torch_verify(cfg):
    return lambda inp: torch_verify(inp["target_logits"], inp["draft_probs"], inp["draft_ids"],
                                    inp["temperature_rows"], inp["top_k_rows"], inp["top_p_rows"])


def _flashinfer_verify(with_top_p: bool):
    def factory(cfg):
        s = flashinfer().sampling
        softmax = needs(s.softmax, "temperature")
        chain = needs(s.chain_speculative_sampling, "seed", "offset")

        def call(inp):
            B, G1, V = inp["target_logits"].shape
            probs = softmax(inp["target_logits"].view(B * G1, V), temperature=inp["temperature_rows"])
            probs = s.top_k_renorm_probs(probs, inp["top_k_rows"])
            if with_top_p:
                probs = s.top_p_renorm_probs(probs, inp["top_p_rows"])
            return chain(inp["draft_probs"], inp["draft_ids"], probs.view(B, G1, V), seed=SEED, offset=OFFSET)
        return call
    return factory


# ---------------------------------------------------------------- FlashInfer plumbing

_FI: object = None


def flashinfer():
    """The flashinfer module, imported once; Skip (a recorded row) when it cannot be imported."""
    global _FI
    if _FI is None:
        try:
            import flashinfer as fi
            import flashinfer.sampling  # noqa: F401

            _FI = fi
        except Exception as e:  # ImportError, or a missing CUDA library at import
            _FI = e
    if isinstance(_FI, Exception):
        raise Skip("flashinfer not importable (" + one_line(_FI, 200) + ")")
    return _FI


def needs(fn, *params):
    """Return ``fn`` if it takes the keyword ``params``; else fail with its real signature in the note."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return fn  # a C function without a signature: let the call itself say
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return fn
    missing = [p for p in params if p not in sig.parameters]
    if missing:
        raise TypeError(f"{getattr(fn, '__qualname__', fn)}{sig} has no parameter(s) {missing}")
    return fn


register("topk", "torch.topk", f_torch_topk, note="sorted output")
register("topk", "flashinfer.top_k", f_flashinfer_topk, note="unsorted output")
register("sample", "torch", f_torch_sample, note="vLLM-V1-style: fp32, sort masks, exponential race")
register("sample", "torch.compile", f_torch_compile_sample, note="torch.compile(dynamic=False) of 'torch'")
register("sample", "flashinfer.probs", f_flashinfer_sample_probs,
         note="softmax(temperature) + top_k_top_p_sampling_from_probs")
register("sample", "flashinfer.logits", f_flashinfer_sample_logits,
         note="logits/temperature + top_k_top_p_sampling_from_logits")
register("verify", "torch", f_torch_verify, note="sort masks, accept test, residual, bonus")
register("verify", "flashinfer", _flashinfer_verify(True),
         note="softmax + top_k_renorm + top_p_renorm + chain_speculative_sampling")
register("verify", "flashinfer.k_only", _flashinfer_verify(False),
         note="softmax + top_k_renorm + chain_speculative_sampling (no top-p)")
