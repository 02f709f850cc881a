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
    draft_probs: "SparseDraftProbs | None" = None   # Sampler.sample(return_draft_probs=True): each row's
                                  # final distribution as (N, 1, C) ids / probabilities, for verification


@dataclass
class SparseDraftProbs:
    """A draft distribution given on a candidate set: token_ids (B, γ, K) padded with -1, probs (B, γ, K).

    complete (B, γ) bool, optional: whether each step's entries hold its whole distribution. The
    Sampler's own draft steps set it False where the distribution reaches past the candidates (rows
    sampled from the full softmax, sets beyond the bound); verification then reports the request as
    not exact, since the draft probability of a token outside the entries is unknown."""
    token_ids: torch.Tensor
    probs: torch.Tensor
    complete: torch.Tensor | None = None

    @staticmethod
    def cat(steps: "list[SparseDraftProbs]") -> "SparseDraftProbs":
        """The γ draft steps of B requests (each (B, 1, K), as `Sampler.sample` returns them) as one
        (B, γ, K) draft for `Sampler.verify`."""
        complete = None
        if all(s.complete is not None for s in steps):
            complete = torch.cat([s.complete for s in steps], dim=1)
        return SparseDraftProbs(torch.cat([s.token_ids for s in steps], dim=1),
                                torch.cat([s.probs for s in steps], dim=1), complete)


@dataclass
class VerifyOutput:
    tokens: torch.Tensor          # (B, γ+1) int64, emitted tokens padded with -1
    num_emitted: torch.Tensor     # (B,) int64
    num_accepted: torch.Tensor    # (B,) int64
    valid: torch.Tensor           # (B,) bool: False if a target row it needed was invalid
    logprob: torch.Tensor         # (B, γ+1) float32, NaN where nothing emitted or not asked
    exact: torch.Tensor | None = None   # (B,) bool: every target row the request used had its exact
                                        # selected set (Sampler.verify; the reference leaves it None: always)
    top_token_ids: torch.Tensor | None = None   # (B, γ+1, n_max) int64: each emitted token's row's top-n,
                                        # as SampleOutput's; -1 past n and at positions not emitted
    top_logprobs: torch.Tensor | None = None    # (B, γ+1, n_max) float32, -inf where top_token_ids is -1
