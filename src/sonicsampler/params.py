"""SamplingParams: one request's options, validated on the host (SEMANTICS.md sections 1-4 and 6)."""
from __future__ import annotations

import math
import numbers
import struct
from dataclasses import dataclass, field, replace
from typing import Mapping

from .errors import InvalidParameterError
from .rng import draw_seed

MAX_LOGPROBS = 20
LOGPROBS_MODES = ("raw", "processed")
# OpenAI's (and vLLM's) domain for the additive penalties.
MAX_ABS_ADDITIVE_PENALTY = 2.0
# The kernels multiply by 1 / temperature and by the repetition penalty or its inverse in float32: both
# kept well inside float32's normal range (a temperature of 1e-50 is 0 in float32, one of 1e300 inf).
MIN_SCALE, MAX_SCALE = 1e-30, 1e30
# A finite logit bias is held in float32 too (1e39 would be +inf there, which turns the row invalid).
MAX_ABS_BIAS = 1e30


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_finite(v) -> bool:
    """math.isfinite, except that a number too large for a float (e.g. 10**400) counts as not finite."""
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _f32(v: float) -> float:
    """v rounded to float32, as the slot table, the kernels and the reference hold a request's scalars."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


@dataclass(frozen=True)
class SamplingParams:
    """One request's sampling options.

    temperature        0 = greedy; otherwise logits are divided by it, and it is in [1e-30, 1e30].
    top_k              keep the k most likely tokens; 0 (or >= vocabulary size) = off.
    top_p              nucleus mass in (0, 1]; 1 = off.
    min_p              keep tokens with p >= min_p * p_max, in [0, 1]; 0 = off.
    repetition_penalty in [1e-30, 1e30]; 1 = off (HF/vLLM: prompt and output tokens).
    frequency_penalty  in [-2, 2]; 0 = off (OpenAI: output tokens, times their count).
    presence_penalty   in [-2, 2]; 0 = off (OpenAI: output tokens, once).
    logit_bias         {token_id: bias}; bias in [-1e30, 1e30] or -inf (ban); token ids checked against
                       the vocabulary at admission.
    seed               an integer in [-2**63, 2**64) (taken modulo 2**64), or None = drawn at admission.
    logprobs           None = no log-probabilities; n in 0..20 = the sampled token's log-probability
                       plus the top n (as vLLM).
    logprobs_mode      "raw" (log_softmax of the input logits) or "processed" (of the distribution
                       actually sampled from).
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    logit_bias: Mapping[int, float] | None = field(default=None, hash=False)
    seed: int | None = None
    logprobs: int | None = None
    logprobs_mode: str = "raw"

    def __post_init__(self):
        self.validate()
        # Valid integers of other types (numpy's) kept as Python ints: later code tests isinstance(..., int)
        # (an error quotes the value as given: validation comes first).
        for name in ("top_k", "seed", "logprobs"):
            v = getattr(self, name)
            if v is not None and type(v) is not int:
                object.__setattr__(self, name, int(v))

    # -- validation ------------------------------------------------------------------------------
    def validate(self, vocab_size: int | None = None, request: int | str | None = None) -> "SamplingParams":
        """Raise InvalidParameterError naming `request` and the field; return self when valid.

        With `vocab_size`, also checks what depends on the vocabulary (logit_bias token ids).
        """
        def bad(name, why):
            raise InvalidParameterError(name, f"{why}, got {getattr(self, name)!r}", request)

        t = self.temperature
        if not _is_real(t) or not _is_finite(t) or t < 0:
            bad("temperature", "must be a finite number >= 0 (0 = greedy)")
        if t > 0 and not MIN_SCALE <= t <= MAX_SCALE:
            bad("temperature", f"must be 0 (greedy) or in [{MIN_SCALE:g}, {MAX_SCALE:g}]")
        if not _is_int(self.top_k) or self.top_k < 0:
            bad("top_k", "must be an integer >= 0 (0 = off)")
        p = self.top_p
        if not _is_real(p) or not (0.0 < p <= 1.0):
            bad("top_p", "must be a number in (0, 1] (1 = off)")
        m = self.min_p
        if not _is_real(m) or not (0.0 <= m <= 1.0):
            bad("min_p", "must be a number in [0, 1] (0 = off)")
        r = self.repetition_penalty
        if not _is_real(r) or not _is_finite(r) or not MIN_SCALE <= r <= MAX_SCALE:
            bad("repetition_penalty", f"must be a number in [{MIN_SCALE:g}, {MAX_SCALE:g}] (1 = off)")
        for name in ("frequency_penalty", "presence_penalty"):
            v = getattr(self, name)
            if not _is_real(v) or not (-MAX_ABS_ADDITIVE_PENALTY <= v <= MAX_ABS_ADDITIVE_PENALTY):
                bad(name, f"must be a number in [-{MAX_ABS_ADDITIVE_PENALTY:g}, {MAX_ABS_ADDITIVE_PENALTY:g}] (0 = off)")
        if self.logit_bias is not None:
            if not isinstance(self.logit_bias, Mapping):
                bad("logit_bias", "must be a mapping {token_id: bias} or None")
            for tok, b in self.logit_bias.items():
                if not _is_int(tok) or tok < 0:
                    raise InvalidParameterError("logit_bias", f"token id must be an integer >= 0, got {tok!r}", request)
                if vocab_size is not None and tok >= vocab_size:
                    raise InvalidParameterError(
                        "logit_bias", f"token id {tok} is outside the vocabulary of size {vocab_size}", request)
                if not _is_real(b) or not (_is_finite(b) and -MAX_ABS_BIAS <= b <= MAX_ABS_BIAS or b == -math.inf):
                    raise InvalidParameterError(
                        "logit_bias", f"bias of token {tok} must be in [-{MAX_ABS_BIAS:g}, {MAX_ABS_BIAS:g}] or -inf "
                        f"(a ban), got {b!r}", request)
        s = self.seed
        if s is not None and (not _is_int(s) or not (-(1 << 63) <= s < (1 << 64))):
            bad("seed", "must be None or an integer in [-2**63, 2**64)")
        n = self.logprobs
        if n is not None and (not _is_int(n) or not (0 <= n <= MAX_LOGPROBS)):
            bad("logprobs", f"must be None or an integer in 0..{MAX_LOGPROBS}")
        if self.logprobs_mode not in LOGPROBS_MODES:
            bad("logprobs_mode", f"must be one of {LOGPROBS_MODES}")
        return self

    # -- derived views ---------------------------------------------------------------------------
    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def seed_u64(self) -> int:
        """The seed as an unsigned 64-bit integer (the Philox key). Requires a resolved seed."""
        if self.seed is None:
            raise InvalidParameterError("seed", "is None: call resolved() at admission first")
        return int(self.seed) % (1 << 64)  # int(): numpy integers would overflow

    def resolved(self) -> "SamplingParams":
        """A copy whose seed is set (drawn now if the request gave none): done once, at admission."""
        return self if self.seed is not None else replace(self, seed=draw_seed())

    def top_k_active(self, vocab_size: int) -> bool:
        return 0 < self.top_k < vocab_size
