"""One tile of one row, loaded and processed: shared by the sampler's two stages, verification and the
exact full-row passes."""
import triton
import triton.language as tl

from .keys import pack_bits16_keys, pack_tile_keys
from .prologue import process, ranking_bits16


@triton.jit
def processed_tile(logits_ptr, stride_row, V, row, slot, flags, tile,
                   mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                   rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                   BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                   HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                   pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """One tile of one row: raw fp32 logits, processed logits, token ids, in-vocabulary lanes, lanes
    with NaN or +inf processed values, and the tile keys ranking the processed values (rounded to
    the input dtype; 0 for lanes outside the vocabulary or bad). Stage 1 and stage 2's refill share it.
    PENDING: the row's pending draft tokens count as output (prologue.process)."""
    local = tl.arange(0, 2 ** BLOCK_LOG2)
    offs = tile.to(tl.int64) * (2 ** BLOCK_LOG2) + local
    inb = offs < V
    raw = tl.load(logits_ptr + row * stride_row + offs, mask=inb, other=0.0).to(tl.float32)
    x = process(raw, offs, inb, row, slot, flags, V, mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
    bad = inb & ((x != x) | (x == float("inf")))
    if KEY64:
        keys = pack_tile_keys(x, local, offs, inb & ~bad, True)
    else:
        keys = pack_bits16_keys(ranking_bits16(x, IS_BF16), local, inb & ~bad)
    return raw, x, offs, inb, bad, keys
