"""SlotTable: each admitted request's options, seed and token statistics, resident on the device.

Written once per request (`assign`) and cleared at `release`; a decode step only reads it (and counts
its sampled tokens into `counts` inside the kernels), so no host work or host-to-device copy of
parameters happens per step. A host mirror of each slot's options lets the launcher make per-batch
decisions (which optional work to compile in) without reading the device.
"""
from __future__ import annotations

import math
from collections import Counter

import torch

from .errors import SamplingInputError
from .indicators import (ACTIVE, BIAS, FREQUENCY, GREEDY, LOGPROBS, LOGPROBS_PROCESSED, MAY_EXCEED, MIN_P,
                         NORMALIZER_FREE, PRESENCE, REORDERING, REPETITION, TEMPERATURE, TOP_K, TOP_LOGPROBS, TOP_P)
from .params import SamplingParams, _f32, _is_int


def row_kinds(flags: int) -> dict[str, bool]:
    """What a request's indicator bits say for a batch's launch plan: it asks for raw log-probabilities,
    its processing reorders tokens (penalties or bias), and both (its raw top-n then needs the exact
    raw top-k; a grammar mask makes any raw row need it)."""
    raw = bool(flags & LOGPROBS) and not flags & LOGPROBS_PROCESSED
    reordering = bool(flags & REORDERING)
    return {"raw": raw, "reordering": reordering, "raw_reordering": raw and reordering}


def may_exceed(p: SamplingParams, vocab_size: int, bound: int) -> bool:
    """Whether a request's truncated set can hold more than `bound` tokens: min-p or top-p without a
    top-k within the bound, or a top-k above it."""
    k_active = p.top_k_active(vocab_size)
    if k_active and p.top_k <= bound:
        return False
    return k_active or p.top_p < 1.0 or p.min_p > 0.0


def normalizer_free(p: SamplingParams, vocab_size: int, bound: int) -> bool:
    """Whether nothing a request's rows output depends on the full vocabulary's processed normalizer
    (indicator NORMALIZER_FREE); its validity then needs only each tile's maximum. So it is for a
    top-k within the bound: the token is a draw from the k (the survivors of min-p and top-p lie within
    the k too), and processed log-probabilities are over those survivors; raw ones take the raw
    normalizer, which stage 1 sums apart. And for a greedy request (the argmax) unless it asks for
    processed log-probabilities, which without such a top-k are over survivors that may reach past
    the candidates."""
    if p.top_k_active(vocab_size) and p.top_k <= bound:
        return True
    return p.greedy and (p.logprobs is None or p.logprobs_mode == "raw")


def indicator_bits(p: SamplingParams, vocab_size: int, bound: int = 128) -> int:
    bits = ACTIVE
    if p.repetition_penalty != 1.0:
        bits |= REPETITION
    if p.frequency_penalty != 0.0:
        bits |= FREQUENCY
    if p.presence_penalty != 0.0:
        bits |= PRESENCE
    if p.logit_bias:
        bits |= BIAS
    if p.greedy:
        bits |= GREEDY
    elif p.temperature != 1.0:
        bits |= TEMPERATURE
    if p.top_k_active(vocab_size):
        bits |= TOP_K
    if p.top_p < 1.0:
        bits |= TOP_P
    if p.min_p > 0.0:
        bits |= MIN_P
    if p.logprobs is not None:
        bits |= LOGPROBS
        if p.logprobs_mode == "processed":
            bits |= LOGPROBS_PROCESSED
        if p.logprobs > 0:
            bits |= TOP_LOGPROBS
    if may_exceed(p, vocab_size, bound):
        bits |= MAY_EXCEED
    if normalizer_free(p, vocab_size, bound):
        bits |= NORMALIZER_FREE
    return bits


class SlotTable:
    def __init__(self, vocab_size: int, max_slots: int, device, max_bias: int = 64, bound: int = 128):
        if vocab_size < 1 or max_slots < 1:
            raise ValueError(f"vocab_size and max_slots must be >= 1, got {vocab_size}, {max_slots}")
        if vocab_size >= 2 ** 24:
            # The exact passes hold token ids as fp32 values (exact below 2**24) and sum a row's weights
            # as integers, which stay below 2**63 while V times the largest weight stays below 2**24
            # (kernels/long_rows.py, FIX).
            raise ValueError(f"vocab_size must be below 2**24, got {vocab_size}")
        self.vocab_size, self.max_slots, self.max_bias = vocab_size, max_slots, max_bias
        self.bound = bound   # the candidates per row (indicator bit MAY_EXCEED)
        # A concrete device ("cuda" -> "cuda:N"): tensors report their index, so that comparisons of
        # the caller's tensors with this device hold for every spelling of the same GPU.
        self.device = torch.empty(0, device=device).device
        d, s = self.device, max_slots
        self.flags = torch.zeros(s, dtype=torch.int32, device=d)
        # Divisors as the kernels take them (kernels/prologue.div_exact): 1 / temperature in fp64, and
        # (r, 1 / r) in fp64 for the repetition penalty, each reciprocal of the fp32 value correctly
        # rounded here, so that no kernel divides in fp64.
        self.inv_temperature = torch.ones(s, dtype=torch.float64, device=d)
        self.top_k = torch.zeros(s, dtype=torch.int32, device=d)
        self.top_p = torch.ones(s, dtype=torch.float32, device=d)
        self.log_min_p = torch.zeros(s, dtype=torch.float32, device=d)   # ln(min_p), computed on the host
        self.repetition = torch.ones(s, 2, dtype=torch.float64, device=d)
        self.frequency = torch.zeros(s, dtype=torch.float32, device=d)
        self.presence = torch.zeros(s, dtype=torch.float32, device=d)
        self.seed = torch.zeros(s, dtype=torch.int64, device=d)             # uint64 bit pattern
        self.n_logprobs = torch.zeros(s, dtype=torch.int32, device=d)
        self.bias_ids = torch.zeros(s, max_bias, dtype=torch.int32, device=d)
        self.bias_vals = torch.zeros(s, max_bias, dtype=torch.float32, device=d)
        self.bias_count = torch.zeros(s, dtype=torch.int32, device=d)
        self.words = -(-vocab_size // 32)
        # Per slot, two bitmasks of `words` int32 words (token t: bit t % 32 of word t // 32): the prompt's
        # tokens, then the output's (set whenever t's count is above 0). The kernels take the whole
        # table as one pointer (kernels/prologue.py).
        self.token_bits = torch.zeros(s, 2, self.words, dtype=torch.int32, device=d)
        self.prompt_mask = self.token_bits[:, 0]
        self.output_mask = self.token_bits[:, 1]
        # Output-token counts for the penalties: max_slots x vocab_size int32 (e.g. 256 x 151936 x 4 B =
        # 156 MB), dense so that a tile's counts are one coalesced load; the prologue reads only the
        # 32-token words that the output mask marks (a row's output touches few of them).
        self.counts = torch.zeros(s, vocab_size, dtype=torch.int32, device=d)
        self.host: list[SamplingParams | None] = [None] * s
        self.host_flags = [0] * s
        self.occupied: set[int] = set()   # the slots holding a request (a whole batch checked in one test)
        self.version = 0   # bumped by assign/release: launchers cache per-table summaries against it
        # Running tallies of the admitted requests (kept by assign/release), so that a summary of all of
        # them (Sampler._batch_summary for device slots, the warm-ups' widths) costs no walk over the
        # slots: their `logprobs` values, and how many are of each of row_kinds' kinds.
        self.widths: Counter = Counter()
        self.kinds: Counter = Counter()

    def _check_slot(self, slot) -> int:
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < self.max_slots:
            raise SamplingInputError("slot", f"must be an integer in 0..{self.max_slots - 1}, got {slot!r}", slot)
        return slot

    def assign(self, slot: int, params: SamplingParams, prompt_token_ids=()) -> SamplingParams:
        """Admit a request: validate against the vocabulary, draw its seed if needed, write its row."""
        slot = self._check_slot(slot)
        if not isinstance(params, SamplingParams):
            raise SamplingInputError("params", f"must be a SamplingParams, got {type(params).__name__}", slot)
        p = params.validate(vocab_size=self.vocab_size, request=slot).resolved()
        bias = dict(p.logit_bias or {})
        if len(bias) > self.max_bias:
            raise SamplingInputError("logit_bias", f"has {len(bias)} entries; this Sampler holds at most "
                                     f"{self.max_bias} (Sampler(max_bias=...))", slot)
        prompt = self._token_ids("prompt_token_ids", prompt_token_ids, slot)
        # Everything the slot's row will hold, computed before the first write: a request refused
        # here leaves the slot as it was (a request in it keeps sampling as before).
        bits = indicator_bits(p, self.vocab_size, self.bound)
        r = _f32(p.repetition_penalty)
        row = dict(inv_temperature=1.0 / _f32(p.temperature if p.temperature > 0 else 1.0),
                   top_k=p.top_k if p.top_k_active(self.vocab_size) else 0, top_p=p.top_p,
                   log_min_p=math.log(p.min_p) if p.min_p > 0 else -math.inf,
                   frequency=p.frequency_penalty, presence=p.presence_penalty,
                   seed=p.seed_u64 - (1 << 64) if p.seed_u64 >= (1 << 63) else p.seed_u64,
                   n_logprobs=p.logprobs or 0, bias_count=len(bias))
        repetition = self._staged(torch.tensor([r, 1.0 / r], dtype=torch.float64))
        bias_ids = self._staged(torch.tensor(list(bias.keys()), dtype=torch.int32))
        bias_vals = self._staged(torch.tensor(list(bias.values()), dtype=torch.float32))
        prompt_mask = self._staged(self.bitmask(prompt))
        # Scalars go in as fills, rows as copies from pinned memory: neither waits for the GPU's queued
        # work. A copy from pageable memory would, and so does an element assignment (`t[slot] = value`):
        # on an H100 each such write waited ~30 ms behind queued matrix products, a fill_ 0.1 ms (run 121).
        self.flags[slot].fill_(bits)
        for name, value in row.items():
            getattr(self, name)[slot].fill_(value)
        self.repetition[slot].copy_(repetition, non_blocking=True)
        if bias:
            self.bias_ids[slot, : len(bias)].copy_(bias_ids, non_blocking=True)
            self.bias_vals[slot, : len(bias)].copy_(bias_vals, non_blocking=True)
        self.prompt_mask[slot].copy_(prompt_mask, non_blocking=True)
        self.output_mask[slot].zero_()
        self.counts[slot].zero_()
        if self.host[slot] is not None:
            self._tally(slot, -1)
        self.host[slot], self.host_flags[slot] = p, bits
        self._tally(slot, 1)
        self.occupied.add(slot)
        self.version += 1
        return p

    def _tally(self, slot: int, sign: int) -> None:
        """Count the request in `slot` into the running tallies (sign 1) or out of them (-1)."""
        self.widths[self.host[slot].logprobs] += sign
        for kind, holds in row_kinds(self.host_flags[slot]).items():
            self.kinds[kind] += sign * holds

    def admitted_widths(self) -> set:
        """The `logprobs` values (None included) of the admitted requests."""
        return {w for w, c in self.widths.items() if c > 0}

    def _staged(self, t: torch.Tensor) -> torch.Tensor:
        """A host tensor ready for an asynchronous copy to the table's device: in pinned memory there
        (torch's pinned caching allocator keeps the block until the copy has run), as it is on a CPU."""
        return t.pin_memory() if self.device.type == "cuda" else t

    def _token_ids(self, field: str, ids, slot) -> list[int]:
        """Token ids given as a sequence of ints or an integer tensor, each in the vocabulary; anything
        else (floats, bools, strings) is refused rather than rounded."""
        if torch.is_tensor(ids):
            if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool or ids.dim() > 1:
                raise SamplingInputError(field, f"must be a 1-D integer tensor or a list of ints, got {ids.dtype} "
                                         f"{tuple(ids.shape)}", slot)
            ids = ids.tolist()
        try:
            ids = list(ids)
        except TypeError:
            raise SamplingInputError(field, f"must be a sequence of token ids, got {type(ids).__name__}", slot) from None
        for t in ids:
            if not _is_int(t) or not 0 <= t < self.vocab_size:
                raise SamplingInputError(field, f"token {t!r} is not an integer id in the vocabulary of size "
                                         f"{self.vocab_size}", slot)
        return [int(t) for t in ids]

    def bitmask(self, tokens) -> torch.Tensor:
        """The int32 words whose bits mark `tokens` (a list of ids in the vocabulary)."""
        mask = torch.zeros(self.words * 32, dtype=torch.bool)
        if tokens:
            mask[torch.tensor(tokens)] = True
        weights = (1 << torch.arange(32, dtype=torch.int64))
        words = (mask.view(self.words, 32).to(torch.int64) * weights).sum(1)
        return (words - (words >= (1 << 31)).to(torch.int64) * (1 << 32)).to(torch.int32)

    def set_output(self, slot: int, output_token_ids) -> None:
        """Counts and output bits of a slot as if it had generated `output_token_ids` (ids checked by
        the caller); the kernels keep both up to date from then on."""
        out = torch.as_tensor(list(output_token_ids), dtype=torch.int64)
        counts = self._staged(torch.bincount(out, minlength=self.vocab_size).to(torch.int32))
        self.counts[slot].copy_(counts, non_blocking=True)   # from pinned memory: no wait (assign says why)
        self.output_mask[slot].copy_(self._staged(self.bitmask(out.unique().tolist())), non_blocking=True)

    def release(self, slot: int) -> None:
        slot = self._check_slot(slot)
        self.flags[slot].fill_(0)   # a fill: an element assignment waits for the GPU's queued work (assign)
        if self.host[slot] is not None:
            self._tally(slot, -1)
        self.host[slot], self.host_flags[slot] = None, 0
        self.occupied.discard(slot)
        self.version += 1
