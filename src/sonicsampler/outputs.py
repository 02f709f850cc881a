"""Result types shared by the reference and the kernels' launchers."""
from __future__ import annotations

import operator
from dataclasses import dataclass

import torch

from .errors import SamplingInputError


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


_SAMPLE_FIELDS = (("tokens", torch.int64, 1), ("valid", torch.bool, 1), ("logprob", torch.float32, 1),
                  ("top_token_ids", torch.int64, 2), ("top_logprobs", torch.float32, 2), ("exact", torch.bool, 1),
                  ("dropped_mass", torch.float32, 1))


def check_out(out, n: int, n_top: int, draft_c: int, device: torch.device) -> None:
    """Refuse a `Sampler.sample(out=...)` whose tensors are not exactly what the call would allocate:
    (n,) rows, (n, n_top) top-n, with draft_c > 0 a SparseDraftProbs of (n, 1, draft_c) ids and
    probabilities and an (n, 1) bool `complete` (else no draft_probs); the dtypes of SampleOutput, on `device`, contiguous,
    16-byte aligned. The kernels write every element of each by address, so a wrong shape or a strided
    view would be written out of place; and they were compiled for the 16-byte aligned outputs of a
    fresh call (Triton specialises pointers on it), so a misaligned one could take vector stores it
    cannot. (A host-time path: one pass of cheap tests; the message is built on failure.)"""
    if not isinstance(out, SampleOutput):
        raise SamplingInputError("out", f"must be a SampleOutput, got {type(out).__name__}")
    want = {1: (n,), 2: (n, n_top)}
    fields = [(name, getattr(out, name), dtype, want[dims]) for name, dtype, dims in _SAMPLE_FIELDS]
    d = out.draft_probs
    if not draft_c and d is not None:   # it would come back holding an earlier call's distributions
        raise SamplingInputError("out", "out.draft_probs must be None without return_draft_probs=True")
    if draft_c:
        if not isinstance(d, SparseDraftProbs):
            raise SamplingInputError("out", "return_draft_probs=True needs out.draft_probs, a SparseDraftProbs")
        fields += [("draft_probs.token_ids", d.token_ids, torch.int64, (n, 1, draft_c)),
                   ("draft_probs.probs", d.probs, torch.float32, (n, 1, draft_c)),
                   ("draft_probs.complete", d.complete, torch.bool, (n, 1))]
    _check_fields(fields, device)


def check_verify_out(out, bsz: int, g: int, n_top: int, device: torch.device) -> None:
    """check_out for `Sampler.verify(out=...)`: a VerifyOutput of (B, γ+1) tokens and log-probabilities,
    (B,) counts, validity and exactness, (B, γ+1, n_top) top-n, as verify would allocate them."""
    if not isinstance(out, VerifyOutput):
        raise SamplingInputError("out", f"must be a VerifyOutput, got {type(out).__name__}")
    _check_fields([("tokens", out.tokens, torch.int64, (bsz, g)), ("num_emitted", out.num_emitted, torch.int64, (bsz,)),
                   ("num_accepted", out.num_accepted, torch.int64, (bsz,)), ("valid", out.valid, torch.bool, (bsz,)),
                   ("logprob", out.logprob, torch.float32, (bsz, g)), ("exact", out.exact, torch.bool, (bsz,)),
                   ("top_token_ids", out.top_token_ids, torch.int64, (bsz, g, n_top)),
                   ("top_logprobs", out.top_logprobs, torch.float32, (bsz, g, n_top))], device)


def kept_check(memo, key, out, held_of, held_args: tuple, check, check_args: tuple) -> tuple:
    """An out= check made once for an engine's persistent buffers: (the new memo, the addresses the
    kernels write at). `held_of(out, *held_args)` gives (the tensors out holds, their addresses),
    raising AttributeError where a field is not a tensor; `check(out, *check_args)` raises naming the
    field that does not fit. The check is skipped when `memo` (the last result) is for the same `key`
    (rows, widths, options) and `out` object, holding the same tensors at the same addresses; a field
    replaced, or a tensor given other memory in place (`.data =`, `set_`), is checked again. The check
    costs ~3 µs of host time per call (Sampler.sample, Sampler.verify)."""
    if memo is not None and memo[0] == key and out is memo[1]:
        try:
            held, addresses = held_of(out, *held_args)
        except AttributeError:   # a field replaced by something else: check names it
            held = None
        if held is not None and all(map(operator.is_, held, memo[2])) and addresses == memo[3]:
            return memo, addresses
    check(out, *check_args)
    held, addresses = held_of(out, *held_args)
    return (key, out, held, addresses), addresses


def addresses(tensors) -> tuple:
    """The tensors' data addresses, as the kernels' direct launches take them."""
    return tuple(map(torch.Tensor.data_ptr, tensors))


def _check_fields(fields, device: torch.device) -> None:
    """(name, tensor, dtype, shape) each: refused, naming the first that does not fit, unless a contiguous
    tensor of that dtype and shape on `device`, 16-byte aligned (check_out says why)."""
    for name, t, dtype, shape in fields:
        try:
            fits = (t.dtype is dtype and t.shape == shape and t.device == device and t.is_contiguous()
                    and t.data_ptr() % 16 == 0)
        except AttributeError:   # not a tensor
            fits = False
        if not fits:
            got = (f"{t.dtype} {tuple(t.shape)} on {t.device}{'' if t.is_contiguous() else ' (strided)'}"
                   f"{'' if t.data_ptr() % 16 == 0 else ' (not 16-byte aligned)'}"
                   if isinstance(t, torch.Tensor) else type(t).__name__)
            raise SamplingInputError("out", f"{name} must be a contiguous, 16-byte aligned {dtype} {shape} tensor "
                                     f"on {device}, got {got}")


@dataclass
class SparseDraftProbs:
    """A draft distribution given on a candidate set: token_ids (B, γ, K) padded with -1, probs (B, γ, K).
    Each step's ids must be distinct and in [0, V) (or -1). They are device data, used unchecked (a check
    would need a host sync): verification sums the probabilities of a repeated id and ignores an id
    outside the vocabulary, so such a draft is not the distribution it meant.

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
