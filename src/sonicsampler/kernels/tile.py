"""One tile of one row, loaded and processed: shared by the sampler's two stages, verification and the
exact full-row passes. Stage 1 takes the three steps (load, process, keys) apart, so that the raw
logits' statistics (log-probability rows only) come before processing and the raw values do not
stay live beside the processed ones: that cost a 1-warp tile of 1024 tokens 84 registers in the
sm_90 compile (189 -> 105), i.e. occupancy."""
import triton
import triton.language as tl

from .keys import pack_bits16_keys, pack_tile_keys
from .prologue import process, ranking_bits16


@triton.jit
def load_tile(logits_ptr, stride_row, V, row, tile, BLOCK_LOG2: tl.constexpr):
    """One tile of one row: raw fp32 logits (0 past the vocabulary), token ids (int32: vocabularies
    stay far below 2**31, and 64-bit ids cost a tile twice the registers), in-vocabulary lanes."""
    offs = tile.to(tl.int32) * (2 ** BLOCK_LOG2) + tl.arange(0, 2 ** BLOCK_LOG2)
    inb = offs < V
    raw = tl.load(logits_ptr + row * stride_row + offs, mask=inb, other=0.0).to(tl.float32)
    return raw, offs, inb


@triton.jit
def process_tile(raw, offs, inb, row, slot, flags, V,
                 mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                 rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                 HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                 pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """A loaded tile's processed logits and its lanes with NaN or +inf processed values. PENDING: the
    row's pending draft tokens count as output (prologue.process)."""
    x = process(raw, offs, inb, row, slot, flags, V, mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
    return x, inb & ((x != x) | (x == float("inf")))


@triton.jit
def tile_keys(x, offs, live, BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr):
    """The tile keys ranking processed values (rounded to the input dtype; fp32 rows on fp32), 0 where
    not live (outside the vocabulary, or bad)."""
    local = tl.arange(0, 2 ** BLOCK_LOG2)
    if KEY64:
        keys = pack_tile_keys(x, local, offs, live, True)
    else:
        keys = pack_bits16_keys(ranking_bits16(x, IS_BF16), local, live)
    return keys


@triton.jit
def processed_tile(logits_ptr, stride_row, V, row, slot, flags, tile,
                   mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                   rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                   BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                   HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                   pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """load_tile then process_tile: (processed logits, token ids, in-vocabulary lanes, bad lanes, keys)."""
    raw, offs, inb = load_tile(logits_ptr, stride_row, V, row, tile, BLOCK_LOG2)
    x, bad = process_tile(raw, offs, inb, row, slot, flags, V, mask_ptr, mask_stride, prompt_mask_ptr, words,
                          counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                          temp_ptr, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
    return x, offs, inb, bad, tile_keys(x, offs, inb & ~bad, BLOCK_LOG2, KEY64, IS_BF16)
