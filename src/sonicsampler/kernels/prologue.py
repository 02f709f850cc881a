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
def _words_of(bits_ptr, idx, live, other):
    """The words of a bitmask at bits_ptr (int32, token t's bit in word t // 32) that hold the bits of
    token ids `idx`, as a block that broadcasts against idx; `other` where no lane is live.

    A 2-D idx is stage 1's tile of (groups of 8 neighbours, 8) (kernels/tile.py tile_local), whose
    groups start at multiples of 8: the 8 ids of a group share a word, loaded once per group. A load
    per token cost a one-warp tile of 1024 tokens 32 scalar loads per thread and bitmask."""
    if len(idx.shape) == 2:
        first = tl.min(idx, axis=1, keep_dims=True)
        any_live = tl.max(live.to(tl.int32), axis=1, keep_dims=True) != 0
        return tl.load(bits_ptr + (first >> 5), mask=any_live, other=other)
    else:
        return tl.load(bits_ptr + (idx >> 5), mask=live, other=other)


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
def count_output(counts_ptr, token_bits_ptr, words, slot, V, tok, mask=None):
    """Count the tokens `tok` (where `mask`) into the slot's output counts, and mark them in its output
    mask, which the prologue reads first (process). mask None: every token.

    Relaxed: only the next launch reads them, after this one has finished. Triton's default (acq_rel)
    put a fence before each atomic (MEMBAR.ALL.GPU: the program waits for all its stores) and an L1
    invalidation after it, at the end of stage 2's critical path."""
    tl.atomic_add(counts_ptr + slot * V + tok, 1, mask=mask, sem="relaxed")
    tl.atomic_or(token_bits_ptr + (2 * slot + 1) * words + (tok >> 5), 1 << (tok & 31).to(tl.int32), mask=mask,
                 sem="relaxed")


@triton.jit
def process(x, idx, live, row, slot, flags, V,
            mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
            rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False,
            span_lo=0, SPAN: tl.constexpr = 0, inv_temp=None):
    """Processed logits (fp32) of raw fp32 logits `x` at token ids `idx` (int32 or int64) of one row.

    token_bits_ptr: the slot table's token bits (slots.py), per slot the prompt's mask then the
    output's, `words` int32 words each.

    PENDING (speculative verification): the row's output so far also holds the `n_pend` tokens at
    `pend_ptr` (the draft tokens before this target row), which are not in `counts_ptr` yet.

    SPAN > 0: every id in idx lies in [span_lo, span_lo + SPAN) (a tile), so a bias entry outside that
    range is skipped by one scalar test instead of a compare and a select on every token.

    inv_temp: the slot's 1 / temperature (fp64) where the caller loaded it already (off its chain: a
    load here waits a round trip first)."""
    if HAS_MASK:
        w = _words_of(mask_ptr + row * mask_stride, idx, live, -1)
        x = tl.where(_bit(w, idx), x, float("-inf"))
    if (flags & (REPETITION | FREQUENCY | PRESENCE)) != 0:
        if len(idx.shape) == 2:
            # Stage 1's grouped tile reads counts only in the 32-token words where the output mask has
            # a bit (a count above 0 sets it): elsewhere they are 0. A row's output touches few words,
            # so a penalised row reads 1/32 of the dense counts' bytes plus 128 bytes per word its
            # output touched; the condition is one per group of 8, so the counts still load as vectors.
            # The heavy mix at 128 rows: 128.9-135.5 -> 108.0-109.7 µs on the H100 (runs 109-109c).
            ow = _words_of(token_bits_ptr + (2 * slot + 1) * words, idx, live, 0)
            c = tl.load(counts_ptr + slot * V + idx, mask=live & (ow != 0), other=0)
        else:
            # Elsewhere a word per token is one more load per token, and the per-token condition makes
            # the counts' loads scalar: the 1-row heavy mix (a 1-D tile of 4096) took 22.6 -> 23.6 µs.
            c = tl.load(counts_ptr + slot * V + idx, mask=live, other=0)
        if PENDING:
            c += pending_counts(idx, pend_ptr, n_pend)
        if (flags & REPETITION) != 0:
            pw = _words_of(token_bits_ptr + 2 * slot * words, idx, live, 0)
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
            if SPAN > 0:
                # A tile holds few of a row's biased ids: the others cost it one scalar test, not a
                # compare and a select per token (a stage-1 tile of 1024 with 5 entries: ~10 instructions
                # per token saved where none falls inside).
                if (t >= span_lo) & (t < span_lo + SPAN):
                    x = tl.where(idx == t, x + b, x)
            else:
                x = tl.where(idx == t, x + b, x)
            j += 1
    if (flags & TEMPERATURE) != 0:
        if inv_temp is None:
            x = div_exact(x, tl.load(temp_ptr + slot))         # 1 / temperature in fp64 (slots.py)
        else:
            x = div_exact(x, inv_temp)
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
