"""One tile of one row, loaded and processed: shared by the sampler's two stages, verification and the
exact full-row passes. Stage 1 takes the three steps (load, process, keys) apart, so that the raw
logits' statistics (log-probability rows only) come before processing and the raw values do not
stay live beside the processed ones: that cost a 1-warp tile of 1024 tokens 84 registers in the
sm_90 compile (189 -> 105), i.e. occupancy."""
import triton
import triton.language as tl

from .keys import bf16_tile_keys, pack_bits16_keys, value_key32
from .prologue import process, ranking_bits16


@triton.jit
def tile_local(BLOCK_LOG2: tl.constexpr, GROUPED: tl.constexpr = False):
    """Token places inside a tile: a 1-D block, or (GROUPED) (groups of 8 neighbours, 8), the layout of
    the "extract" strategy (kernels/topk.py groups_topk): a thread holds a group (one vector load)."""
    if GROUPED:
        return tl.arange(0, 2 ** (BLOCK_LOG2 - 3))[:, None] * 8 + tl.arange(0, 8)[None, :]
    else:
        return tl.arange(0, 2 ** BLOCK_LOG2)


@triton.jit
def load_tile(logits_ptr, stride_row, V, row, tile, BLOCK_LOG2: tl.constexpr, OTHER: tl.constexpr = 0.0,
              GROUPED: tl.constexpr = False):
    """One tile of one row: raw fp32 logits (OTHER past the vocabulary), token ids (int32: vocabularies
    stay far below 2**31, and 64-bit ids cost a tile twice the registers), in-vocabulary lanes; laid
    out as tile_local says.

    Stage 1 and the refills read -inf past the vocabulary (OTHER), which every processing step keeps
    at -inf: such lanes then need no mask of their own (see tile_keys)."""
    offs = tile.to(tl.int32) * (2 ** BLOCK_LOG2) + tile_local(BLOCK_LOG2, GROUPED)
    inb = offs < V
    raw = tl.load(logits_ptr + row * stride_row + offs, mask=inb, other=OTHER).to(tl.float32)
    return raw, offs, inb


@triton.jit
def process_tile(raw, offs, inb, row, slot, flags, V,
                 mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                 rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                 HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                 pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False, span_lo=0, SPAN: tl.constexpr = 0,
                 inv_temp=None):
    """A loaded tile's processed logits and its lanes with NaN or +inf processed values. PENDING: the
    row's pending draft tokens count as output; SPAN: the ids' range; inv_temp: 1 / temperature if the
    caller loaded it (prologue.process)."""
    x = process(raw, offs, inb, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING, span_lo, SPAN, inv_temp=inv_temp)
    return x, inb & ((x != x) | (x == float("inf")))


@triton.jit
def tile_keys(x, offs, BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
              GROUPED: tl.constexpr = False):
    """The tile keys ranking processed values (rounded to the input dtype; fp32 rows on fp32), with no
    mask: lanes past the vocabulary hold -inf (load_tile's OTHER), so their keys tie with the real -inf
    tokens' and come after them (higher index), and stage 2 takes no -inf key as a candidate. NaN or
    +inf lanes get keys too, but such a row is invalid whatever its candidates (the tile statistics
    flag it). Masking here cost stage 1 about a third of its instructions: the compiler kept the 32
    per-thread lane masks of a 1024-token tile packed into bits of registers (ncu, run 67).

    GROUPED (16-bit keys, the (groups, 8) layout): the index bits hold only the place inside the group
    (7 - j, a constant per register); groups_topk adds the group's part to the keys it selects."""
    if KEY64:
        keys = (value_key32(x) << 32) | (0xFFFFFFFF - offs.to(tl.uint64))
    elif GROUPED:
        if IS_BF16:
            # the inverted place in the group, 7 - j, broadcast to the tile's shape
            keys = bf16_tile_keys(x, (7 - tl.arange(0, 8))[None, :])
        else:
            keys = pack_bits16_keys(ranking_bits16(x, IS_BF16), 0xFFF8 + tl.arange(0, 8)[None, :])
    else:
        keys = pack_bits16_keys(ranking_bits16(x, IS_BF16), tl.arange(0, 2 ** BLOCK_LOG2))
    return keys


@triton.jit
def processed_tile(logits_ptr, stride_row, V, row, slot, flags, tile,
                   mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                   rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                   BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                   HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                   pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """load_tile then process_tile: (processed logits, token ids, in-vocabulary lanes, bad lanes, keys),
    the keys as stage 1 builds them (-inf past the vocabulary)."""
    raw, offs, inb = load_tile(logits_ptr, stride_row, V, row, tile, BLOCK_LOG2, float("-inf"))
    x, bad = process_tile(raw, offs, inb, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words,
                          counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                          temp_ptr, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING,
                          tile.to(tl.int32) * (2 ** BLOCK_LOG2), 2 ** BLOCK_LOG2)
    return x, offs, inb, bad, tile_keys(x, offs, BLOCK_LOG2, KEY64, IS_BF16)


@triton.jit
def token_values(tok, logits_ptr, stride_row, V, row, slot, flags,
                 mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                 rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                 HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                 pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """Raw and processed value of one token of a row (the token need not be a candidate; tok in
    0..V-1). Shared by the sampler's and verification's stage 2; PENDING: see prologue.process."""
    raw = tl.load(logits_ptr + row * stride_row + tok).to(tl.float32)
    return raw, token_processed(raw, tok, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words,
                                counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                                temp_ptr, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)


@triton.jit
def token_processed(raw, tok, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                    rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                    HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                    pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False, inv_temp=None):
    """The processed value of one token whose raw value (fp32) is already loaded: a caller can issue
    that load early and do other work while it is in flight (shared_sets._early_token); inv_temp:
    see prologue.process. The token goes through process as a 0-d block (scalars): until session 38 it
    went as two lanes of a block, whose value then took a reduction to read back (warp shuffles; no
    time measured either way, run 221)."""
    return process(raw, tok, tok >= 0, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words,
                   counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                   HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING, inv_temp=inv_temp)
