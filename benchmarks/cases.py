"""The three benchmark cases: their inputs and shape grids.

Logits are bf16 standard Gumbel draws (-log(-log(U))), the distribution of the noise itself: a
heavy enough tail that top-k/top-p keep a realistic few hundred tokens at temperature 0.7.
Sampling parameters are per-row tensors (as serving engines pass them), all rows alike.
"""
from __future__ import annotations

import torch

from benchmarks.harness import Case, register_case

ROWS = [1, 4, 16, 32, 64, 128]
VOCABS = [32768, 131072, 151936, 262144]
TEMPERATURE, TOP_K, TOP_P = 0.7, 128, 0.9


def gumbel(shape, device, gen: torch.Generator, dtype=torch.bfloat16) -> torch.Tensor:
    # Drawn in fp32 and clamped away from 0 and 1, so that no entry is +-inf before the cast.
    u = torch.rand(shape, device=device, generator=gen).clamp_(1e-12, 1 - 1e-7)
    return (-torch.log(-torch.log(u))).to(dtype)


def _gen(device, seed: int) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(1234 + seed)
    return g


def _row_params(n: int, device, cfg: dict) -> dict:
    return {"temperature": torch.full((n,), float(cfg["T"]), device=device, dtype=torch.float32),
            "top_k": torch.full((n,), int(cfg["k"]), device=device, dtype=torch.int32),
            "top_p": torch.full((n,), float(cfg["p"]), device=device, dtype=torch.float32)}


def topk_inputs(cfg: dict, device, seed: int) -> dict:
    return {"logits": gumbel((cfg["rows"], cfg["V"]), device, _gen(device, seed))}


def sample_inputs(cfg: dict, device, seed: int) -> dict:
    rows = cfg["rows"]
    return {"logits": gumbel((rows, cfg["V"]), device, _gen(device, seed)), **_row_params(rows, device, cfg)}


def verify_inputs(cfg: dict, device, seed: int) -> dict:
    """Target logits (B, gamma+1, V) bf16; draft probs (B, gamma, V) fp32 and the draft's token ids.

    The draft's logits are the target's plus half-scale Gumbel noise, so the draft resembles the
    target and acceptance is neither 0 nor 1 (an unrelated draft would be rejected at once and
    leave the accept path untimed). Per-request parameters come as (B,) and, expanded to one per
    target row, as (B*(gamma+1),), the form FlashInfer's row-wise kernels take.
    """
    B, G, V = cfg["B"], cfg["gamma"], cfg["V"]
    g = _gen(device, seed)
    target = gumbel((B, G + 1, V), device, g)
    draft_logits = target[:, :G].float() + 0.5 * gumbel((B, G, V), device, g, torch.float32)
    draft_probs = torch.softmax(draft_logits / float(cfg["T"]), dim=-1)
    del draft_logits
    race = torch.empty_like(draft_probs).exponential_(generator=g)
    draft_ids = (draft_probs / race).argmax(-1).to(torch.int32)  # a draw from the draft (exponential race)
    del race
    per_req = _row_params(B, device, cfg)
    per_row = {k + "_rows": v.repeat_interleave(G + 1) for k, v in per_req.items()}
    return {"target_logits": target, "draft_probs": draft_probs, "draft_ids": draft_ids, **per_req, **per_row}


register_case(Case("topk", topk_inputs,
                   grid={"rows": ROWS, "V": VOCABS, "k": TOP_K},
                   quick_grid={"rows": [1, 32], "V": [151936], "k": TOP_K},
                   baseline="torch.topk"))
register_case(Case("sample", sample_inputs,
                   grid={"rows": ROWS, "V": VOCABS, "T": TEMPERATURE, "k": TOP_K, "p": TOP_P},
                   quick_grid={"rows": [1, 32], "V": [151936], "T": TEMPERATURE, "k": TOP_K, "p": TOP_P},
                   baseline="torch"))
register_case(Case("verify", verify_inputs,
                   grid={"B": ROWS, "gamma": [1, 3, 5, 7], "V": [32768, 151936, 262144],
                         "T": TEMPERATURE, "k": TOP_K, "p": TOP_P},
                   quick_grid={"B": [1, 16], "gamma": [3], "V": [151936], "T": TEMPERATURE, "k": TOP_K,
                               "p": TOP_P},
                   row_key="B", baseline="torch"))
