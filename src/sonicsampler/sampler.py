"""Sampler: one decode step's sampling for a batch of rows, in two launches (kernels/sample.py).

The engine admits each request once (`add_request`), then calls `sample(logits, slots, positions)`
every step. Row i belongs to slot slots[i] and generates the token at positions[i]. Everything a
request wants is in the device-resident SlotTable, so a step does no per-request host work. Slots and
positions given as host lists (or CPU tensors) are validated before launch. Given as CUDA tensors
(the CUDA-graph path), they are used as they are: a row whose slot holds no request yields token -1
and valid = False.
"""
from __future__ import annotations

import torch

from . import indicators as bits
from . import verification
from .errors import SamplingInputError
from .kernels import INTERPRETED
from .kernels.sample import sample_stage1, sample_stage2
from .outputs import SampleOutput, VerifyOutput
from .params import MAX_LOGPROBS, SamplingParams
from .slots import SlotTable
from .topk import _log2, _NEG_INF_KEY, _pow2_at_least, _Scratch, topk
from .tuning import topk_config

_SUPPORTED = tuple(_NEG_INF_KEY)


class Sampler:
    """Per-request state on the device plus the scratch of the two launches.

    bound: candidates per row (power of two, at most 128). Truncated sets that fit it are exact; rows
    that need more are flagged (`SampleOutput.exact = False`, with `dropped_mass`).
    Untruncated rows (no top-k, top-p, min-p) are exact draws from the full softmax, unless
    allow_bounded_approximation=True asks for the paper's behaviour: sample among the best `bound`
    tokens (faster: no noise for every token), flagged and with the dropped mass reported.
    """

    def __init__(self, vocab_size: int, max_slots: int, device="cuda", *, bound: int = 128,
                 max_bias: int = 64, block: int | None = None, warps: tuple[int, int] = (8, 8),
                 allow_bounded_approximation: bool = False, emit: int = 32):
        if bound < 2 or bound > 128 or bound & (bound - 1):
            raise ValueError(f"bound must be a power of two in 2..128, got {bound}")
        self.table = SlotTable(vocab_size, max_slots, device, max_bias=max_bias)
        self.vocab_size, self.bound, self.block, self.warps = vocab_size, bound, block, warps
        self.exact_untruncated = not allow_bounded_approximation
        if emit < 2 or emit & (emit - 1):
            raise ValueError(f"emit must be a power of two >= 2, got {emit}")
        self.emit = min(emit, bound)   # keys each stage-1 tile emits (the rest is refilled on demand)
        self._scratch = _Scratch()

    # -- admission --------------------------------------------------------------------------------
    def add_request(self, slot: int, params: SamplingParams, prompt_token_ids=()) -> SamplingParams:
        """Write a request into a slot (its seed is drawn here if it has none); returns the resolved params."""
        return self.table.assign(slot, params, prompt_token_ids)

    def remove_request(self, slot: int) -> None:
        self.table.release(slot)

    # -- one step ---------------------------------------------------------------------------------
    def _rows(self, name, values, n, check):
        dev = self.table.device
        if torch.is_tensor(values) and values.device.type != "cpu":
            if values.shape != (n,) or values.device != dev:
                raise SamplingInputError(name, f"must be a ({n},) tensor on {dev}, got {tuple(values.shape)} on {values.device}")
            return values, None
        host = values.tolist() if torch.is_tensor(values) else list(values)
        if len(host) != n:
            raise SamplingInputError(name, f"expected {n} values (one per logits row), got {len(host)}")
        for i, v in enumerate(host):
            check(i, v)
        return torch.tensor(host, dtype=torch.int64, device=dev), host

    def _check_slot(self, i, s):
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < self.table.max_slots:
            raise SamplingInputError("slots", f"slot {s!r} is not in 0..{self.table.max_slots - 1}", i)
        if self.table.host[s] is None:
            raise SamplingInputError("slots", f"slot {s} holds no request (add_request first)", i)

    @staticmethod
    def _check_position(i, p):
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < (1 << 63):
            raise SamplingInputError("positions", f"must be an integer in [0, 2**63), got {p!r}", i)

    def sample(self, logits: torch.Tensor, slots, positions, grammar_bitmask: torch.Tensor | None = None) -> SampleOutput:
        t, v = self.table, self.vocab_size
        if not torch.is_tensor(logits) or logits.dim() != 2 or logits.shape[1] != v:
            raise SamplingInputError("logits", f"must be a (rows, {v}) tensor, got {getattr(logits, 'shape', type(logits))}")
        if logits.dtype not in _SUPPORTED:
            raise SamplingInputError("logits", f"dtype must be one of {_SUPPORTED}, got {logits.dtype}")
        if logits.device != t.device:
            raise SamplingInputError("logits", f"is on {logits.device}, the Sampler's state is on {t.device}")
        if logits.stride(1) != 1:
            raise SamplingInputError("logits", "last dimension must be contiguous (stride 1)")
        if t.device.type != "cuda" and not INTERPRETED:
            raise SamplingInputError("logits", "CPU tensors need TRITON_INTERPRET=1 set before sonicsampler is imported")
        n = logits.shape[0]
        slots_dev, slots_host = self._rows("slots", slots, n, self._check_slot)
        pos_dev, _ = self._rows("positions", positions, n, self._check_position)
        if grammar_bitmask is not None:
            if (not torch.is_tensor(grammar_bitmask) or grammar_bitmask.dtype != torch.int32
                    or grammar_bitmask.shape != (n, t.words) or grammar_bitmask.device != t.device):
                raise SamplingInputError("grammar_bitmask", f"must be an int32 ({n}, {t.words}) tensor on {t.device}, "
                                         f"got {getattr(grammar_bitmask, 'dtype', None)} {tuple(getattr(grammar_bitmask, 'shape', ()))}")
            if grammar_bitmask.stride(1) != 1:
                raise SamplingInputError("grammar_bitmask", "last dimension must be contiguous")

        # Per-batch decisions from the host mirror (no device read): the rows' slots when known,
        # otherwise every admitted request.
        rows = slots_host if slots_host is not None else [s for s in range(t.max_slots) if t.host[s] is not None]
        n_top = max([t.host[s].logprobs or 0 for s in rows if t.host[s] is not None], default=0)
        raw_rows_processed = any(
            (t.host_flags[s] & bits.LOGPROBS) and not (t.host_flags[s] & bits.LOGPROBS_PROCESSED)
            and (t.host_flags[s] & (bits.REORDERING | bits.TEMPERATURE) or grammar_bitmask is not None)
            for s in rows)

        dev = t.device
        c, e = self.bound, self.emit
        m = 4 * e
        block = max(self.block or topk_config(dev, v, n).block, 4 * c)
        z = -(-v // block)
        key64 = logits.dtype == torch.float32
        key_dtype = torch.uint64 if key64 else torch.uint32
        cand = self._scratch.get("cand", n * z * e, torch.uint64, dev)
        compact = self._scratch.get("compact", n * z * m, key_dtype, dev)
        refill = self._scratch.get("refill", n * 4 * c, key_dtype, dev)
        stats = self._scratch.get("stats", n * z * 5, torch.float32, dev)
        raw_lse = self._scratch.get("raw_lse", n, torch.float32, dev)
        best = self._scratch.get("best", n * z, torch.float32, dev)
        best_idx = self._scratch.get("best_idx", n * z, torch.int64, dev)

        tokens = torch.empty(n, dtype=torch.int64, device=dev)
        valid = torch.empty(n, dtype=torch.int8, device=dev)
        exact = torch.empty(n, dtype=torch.int8, device=dev)
        logprob = torch.full((n,), float("nan"), dtype=torch.float32, device=dev)
        dropped = torch.empty(n, dtype=torch.float32, device=dev)
        top_ids = torch.full((n, n_top), -1, dtype=torch.int64, device=dev)
        top_lp = torch.full((n, n_top), float("-inf"), dtype=torch.float32, device=dev)
        if n == 0:
            return SampleOutput(tokens, valid.bool(), logprob, top_ids, top_lp, exact.bool(), dropped)

        has_mask = grammar_bitmask is not None
        mask = grammar_bitmask if has_mask else t.prompt_mask      # any int32 pointer when unused
        mask_stride = grammar_bitmask.stride(0) if has_mask else 0
        common = (mask, mask_stride, t.prompt_mask, t.words, t.counts, t.repetition, t.frequency, t.presence,
                  t.bias_ids, t.bias_vals, t.bias_count, t.temperature)
        is_bf16 = logits.dtype == torch.bfloat16
        sample_stage1[(z, n)](logits, logits.stride(0), v, slots_dev, t.max_slots, pos_dev, t.flags, *common, t.seed,
                              cand, compact, stats, best, best_idx, z,
                              BLOCK_LOG2=_log2(block), E_LOG2=_log2(e), M_LOG2=_log2(m), KEY64=key64,
                              IS_BF16=is_bf16, HAS_MASK=has_mask, MAX_BIAS=t.max_bias,
                              EXACT_UNTRUNCATED=self.exact_untruncated, num_warps=self.warps[0])
        sample_stage2[(n,)](logits, logits.stride(0), v, slots_dev, t.max_slots, pos_dev, t.flags, *common,
                            t.top_k, t.top_p, t.log_min_p, t.seed, t.n_logprobs, cand, stats, best, best_idx, refill, z,
                            tokens, valid, logprob, top_ids, top_lp, exact, dropped, raw_lse, n_top,
                            Z_LOG2=max(_log2(_pow2_at_least(z)), _log2(c) - _log2(e)), E_LOG2=_log2(e),
                            C_LOG2=_log2(c), BLOCK_LOG2=_log2(block), KEY64=key64, IS_BF16=is_bf16,
                            HAS_MASK=has_mask, MAX_BIAS=t.max_bias, NEG_INF_KEY=_NEG_INF_KEY[logits.dtype],
                            TOP_PAD=max(1, _pow2_at_least(max(n_top, 1))), RAW_TOP_FROM_CANDIDATES=not raw_rows_processed,
                            EXACT_UNTRUNCATED=self.exact_untruncated, num_warps=self.warps[1])
        valid_b, exact_b = valid.view(torch.bool), exact.view(torch.bool)
        if raw_rows_processed and n_top > 0:
            self._raw_top(logits, slots_dev, valid_b, raw_lse, n_top, top_ids, top_lp)
        return SampleOutput(tokens, valid_b, logprob, top_ids, top_lp, exact_b, dropped)

    def verify(self, target_logits: torch.Tensor, draft_token_ids, slots, positions, *, num_draft_tokens=None,
               draft_probs=None, grammar_bitmask: torch.Tensor | None = None) -> VerifyOutput:
        """Speculative chain verification of B requests (SEMANTICS.md section 5), in two launches.

        target_logits (B*(γ+1), V), request-major; draft_token_ids (B, γ); slots and positions (B,):
        positions[b] is the position of the token generated at request b's first target row.
        num_draft_tokens (B,): ragged draft counts in 0..γ (None: all γ). draft_probs: None (one-hot
        drafts), a dense (B, γ, V) float32 tensor or SparseDraftProbs. Emitted tokens are counted into
        the slots' output counts. See sonicsampler/verification.py.
        """
        return verification.verify(self, target_logits, draft_token_ids, slots, positions,
                                   num_draft_tokens=num_draft_tokens, draft_probs=draft_probs,
                                   grammar_bitmask=grammar_bitmask)

    def _raw_top(self, logits, slots_dev, valid, raw_lse, n_top, top_ids, top_lp):
        """Raw top-n log-probabilities of rows whose processing reorders tokens: an exact top-n of the
        raw logits, for those rows only (selected on the device: no host read)."""
        t = self.table
        vals, ids = topk(logits, min(n_top, MAX_LOGPROBS))
        flags = t.flags[slots_dev]
        n_row = t.n_logprobs[slots_dev]
        raw_mode = ((flags & bits.LOGPROBS) != 0) & ((flags & bits.LOGPROBS_PROCESSED) == 0)
        asked = torch.arange(n_top, device=logits.device)[None, :] < n_row[:, None]
        lp = torch.where(valid[:, None], vals.float() - raw_lse[:, None], torch.full_like(top_lp, float("nan")))
        take = raw_mode[:, None] & asked
        top_lp.copy_(torch.where(take, lp, torch.where(raw_mode[:, None], torch.full_like(top_lp, float("-inf")), top_lp)))
        top_ids.copy_(torch.where(take & valid[:, None], ids, torch.where(raw_mode[:, None], -1, top_ids)))


def sample(logits: torch.Tensor, params, *, positions, prompt_token_ids=None, output_token_ids=None,
           grammar_bitmask=None, bound: int = 128, block: int | None = None,
           allow_bounded_approximation: bool = False, emit: int = 32) -> SampleOutput:
    """One-off functional form with the reference's signature: a temporary Sampler, one slot per row."""
    n, v = logits.shape
    plist = [params] * n if isinstance(params, SamplingParams) else list(params)
    if len(plist) != n:
        raise SamplingInputError("params", f"expected one SamplingParams or {n} of them, got {len(plist)}")
    prompts = list(prompt_token_ids) if prompt_token_ids is not None else [()] * n
    outputs = list(output_token_ids) if output_token_ids is not None else [()] * n
    max_bias = max([len(p.logit_bias or {}) for p in plist] + [1])
    s = Sampler(v, max(n, 1), logits.device, bound=bound, max_bias=max_bias, block=block,
                allow_bounded_approximation=allow_bounded_approximation, emit=emit)
    for i, p in enumerate(plist):
        s.add_request(i, p, prompts[i])
        out = torch.as_tensor(list(outputs[i]), dtype=torch.int64)
        if out.numel():
            if int(out.min()) < 0 or int(out.max()) >= v:
                raise SamplingInputError("output_token_ids", f"token ids must be in 0..{v - 1}", i)
            s.table.counts[i] = torch.bincount(out, minlength=v).to(torch.int32).to(logits.device)
    return s.sample(logits, list(range(n)), positions, grammar_bitmask)
