"""Result types shared by the reference and the kernels' launchers."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class SampleOutput:
    tokens: torch.Tensor          # (N,) int64, -1 where invalid
    valid: torch.Tensor           # (N,) bool
    logprob: torch.Tensor         # (N,) float32, log-probability of the sampled token (NaN if not asked)
    top_token_ids: torch.Tensor   # (N, n_max) int64, padded with -1
    top_logprobs: torch.Tensor    # (N, n_max) float32, padded with -inf
    exact: torch.Tensor           # (N,) bool: the selected set is exact (the reference always is)
    dropped_mass: torch.Tensor    # (N,) float32: mass outside a bounded candidate set (exact for untruncated
                                  # rows; an upper bound where top-k, top-p or min-p also cut)


@dataclass
class SparseDraftProbs:
    """A draft distribution given on a candidate set: token_ids (B, γ, K) padded with -1, probs (B, γ, K)."""
    token_ids: torch.Tensor
    probs: torch.Tensor


@dataclass
class VerifyOutput:
    tokens: torch.Tensor          # (B, γ+1) int64, emitted tokens padded with -1
    num_emitted: torch.Tensor     # (B,) int64
    num_accepted: torch.Tensor    # (B,) int64
    valid: torch.Tensor           # (B,) bool: False if a target row it needed was invalid
    logprob: torch.Tensor         # (B, γ+1) float32, NaN where nothing emitted or not asked
    exact: torch.Tensor | None = None   # (B,) bool: every target row the request used had its exact
                                        # selected set (Sampler.verify; the reference leaves it None: always)
