"""The logit-processing prologue (SEMANTICS.md section 1), applied in registers to any block of token
ids of one row: stage 1 runs it on a tile, stage 2 on its gathered candidates, with identical arithmetic
so both see the same fp32 values. Each step runs only for slots whose indicator bit asks for it, so a
plain row reads nothing but its logits. The bit values come from `sonicsampler/indicators.py`.

Divisions by a row's scalar (temperature, repetition penalty) are rounded as torch's IEEE fp32
division is (`div_exact`, with the scalar's fp64 reciprocal from the slot table): Triton's `/` on fp32 compiles to div.full.f32 (a reciprocal times x, up
to 2 ulp off), which could move a processed value across a rounding boundary of the 16-bit ranking
keys and so change a set at its edge.
"""
import triton
import triton.language as tl

from .. import indicators as bits

REPETITION = tl.constexpr(bits.REPETITION)
FREQUENCY = tl.constexpr(bits.FREQUENCY)
PRESENCE = tl.constexpr(bits.PRESENCE)
BIAS = tl.constexpr(bits.BIAS)
TEMPERATURE = tl.constexpr(bits.TEMPERATURE)


@triton.jit
def div_exact(x, inv):
    """x / t (fp32 block by a positive fp32 scalar t), correctly rounded, given inv = 1 / t in fp64
    (correctly rounded: the slot table computes it on the host, slots.py).

    x times the fp64 reciprocal, rounded once to fp32: the product is within 2**-52 (relative) of x / t,
    and x / t, when it is not itself a rounding midpoint of fp32, lies at least 2**-49 (relative) away
    from every midpoint (x has 24 significant bits, a midpoint times t at most 49), so the rounding
    is the same; a quotient exactly at a midpoint needs t's odd part to divide x's, which leaves it
    24 bits, not 25. No underflow or overflow can occur in fp64. Checked against torch's division on
    3.6e8 values (random scales, bf16-valued and fp32, nine temperatures): no difference.

    Stage 1 of the sampler at 32 / 128 rows on the H100 (run 37): 38.1 / 94.2 us with div.full (Triton's
    `/`, inexact), 40.1 / 98.7 with this, 41.6 / 106.1 with div_rn (a branchy sequence per element).
    The reciprocal came from the kernel until run 68: its fp64 division (a Newton chain with a slow
    path called as a function) made the compiler convert a whole tile to fp64 ahead of it and spill."""
    return (x.to(tl.float64) * inv).to(tl.float32)


@triton.jit
def _bit(words, idx):
    # LSB-first bit `idx % 32` of each word; `& 1` after the shift, so the sign bit needs no care.
    return ((words >> (idx & 31).to(tl.int32)) & 1) != 0


@triton.jit
def pending_counts(idx, pend_ptr, n_pend):
    """How often each token id of `idx` occurs among the n_pend tokens at pend_ptr (int32)."""
    c = tl.zeros(idx.shape, tl.int32)
    j = 0
    while j < n_pend:
        c += (idx == tl.load(pend_ptr + j).to(idx.dtype)).to(tl.int32)
        j += 1
    return c


@triton.jit
def process(x, idx, live, row, slot, flags, V,
            mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
            rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """Processed logits (fp32) of raw fp32 logits `x` at token ids `idx` (int64) of one row.

    PENDING (speculative verification): the row's output so far also holds the `n_pend` tokens at
    `pend_ptr` (the draft tokens before this target row), which are not in `counts_ptr` yet."""
    if HAS_MASK:
        w = tl.load(mask_ptr + row * mask_stride + (idx >> 5), mask=live, other=-1)
        x = tl.where(_bit(w, idx), x, float("-inf"))
    if (flags & (REPETITION | FREQUENCY | PRESENCE)) != 0:
        c = tl.load(counts_ptr + slot * V + idx, mask=live, other=0)
        if PENDING:
            c += pending_counts(idx, pend_ptr, n_pend)
        if (flags & REPETITION) != 0:
            pw = tl.load(prompt_mask_ptr + slot * words + (idx >> 5), mask=live, other=0)
            r = tl.load(rep_ptr + 2 * slot).to(tl.float32)       # (r, 1 / r) in fp64 (slots.py)
            inv_r = tl.load(rep_ptr + 2 * slot + 1)
            seen = (c > 0) | _bit(pw, idx)
            x = tl.where(seen, tl.where(x > 0, div_exact(x, inv_r), x * r), x)
        if (flags & (FREQUENCY | PRESENCE)) != 0:
            f = tl.load(freq_ptr + slot)
            p = tl.load(pres_ptr + slot)
            cf = c.to(tl.float32)
            x = x - f * cf - p * (c > 0).to(tl.float32)
    if (flags & BIAS) != 0:
        n = tl.load(bias_count_ptr + slot)
        j = 0
        while j < n:
            t = tl.load(bias_ids_ptr + slot * MAX_BIAS + j).to(idx.dtype)
            b = tl.load(bias_vals_ptr + slot * MAX_BIAS + j)
            x = tl.where(idx == t, x + b, x)
            j += 1
    if (flags & TEMPERATURE) != 0:
        x = div_exact(x, tl.load(temp_ptr + slot))             # 1 / temperature in fp64 (slots.py)
    return x


@triton.jit
def ranking_bits16(x, IS_BF16: tl.constexpr):
    """fp32 values rounded to the input's 16-bit dtype (round to nearest even), as raw 16-bit patterns.

    bf16 rounds with integer operations on the fp32 bits: the interpreter's float->bf16 cast truncates
    while the GPU's rounds, and the ranking must not depend on which one runs."""
    if IS_BF16:
        b = x.to(tl.uint32, bitcast=True)
        return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).to(tl.int32)
    else:
        return x.to(tl.float16).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF


@triton.jit
def bits16_to_f32(bits, IS_BF16: tl.constexpr):
    if IS_BF16:
        return (bits.to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    else:
        return bits.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
