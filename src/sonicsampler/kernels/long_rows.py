"""Exact draws for rows whose truncated set is larger than the candidate bound, by passes over the
whole row inside stage 2 (one program per row: the other rows of the batch are not slowed, but the
batch waits for the longest program).

- min-p alone: the threshold is known (best rank value + ln min_p), so one pass draws.
- top-p (after an optional min-p) on 16-bit logits: the nucleus ends at the largest key T whose
  set mass F(T) (tokens with key >= T) still reaches p times the set's total. Four passes find T by a
  16-way search over the 16-bit keys (each pass sums the mass above 16 keys at once); a last pass
  draws, taking the tokens tied at T in index order while the mass before them is below the target
  (SEMANTICS.md's order: value, then lower index).
- top-k above the bound (after an optional min-p, no top-p) on 16-bit logits: the same search and
  draw with each token weighing 1 instead of its mass, and k as the target: T is the k-th largest key.

Every draw is the Gumbel-max over the set with the reference's per-token noise (stream 0, token
index), so the token is the reference's; ties of perturbed scores go to the lower index.
"""
import triton
import triton.language as tl

from .keys import bits_from_key16
from .prologue import bits16_to_f32
from .rng import gumbel_noise_tile
from .tile import processed_tile

SUB_LOG2 = tl.constexpr(10)   # the passes walk 1024-token sub-tiles: (1024, 16) sums stay in registers


@triton.jit
def _set_tile(logits_ptr, stride_row, V, row, slot, flags, t,
              mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
              rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
              thr, m, TILE_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
              HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr):
    """Tile t (2**TILE_LOG2 tokens) of the row: processed values, token ids, 16-bit keys (16-bit logits
    only), which tokens are in the min-p set (every live token when thr is -inf), and their mass
    relative to exp(m)."""
    _raw, x, offs, _inb, _bad, keys = processed_tile(
        logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
        counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
        TILE_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS)
    if KEY64:
        key16 = (keys >> 48).to(tl.int32)          # unused: the nucleus search is for 16-bit logits
        rank_val = x
    else:
        key16 = (keys >> 16).to(tl.int32)
        rank_val = bits16_to_f32(bits_from_key16(key16), IS_BF16)
    in_set = (keys != 0) & (rank_val >= thr)
    return x, offs, key16, in_set, tl.where(in_set, tl.exp(x - m), 0.0)


@triton.jit
def _running_argmax(best, best_idx, score, offs, V):
    """Fold one tile's Gumbel-max into the row's: the lowest index inside the tile, earlier tiles on ties."""
    tile_best = tl.max(score)
    tile_idx = tl.min(tl.where(score == tile_best, offs, V))
    return tl.maximum(best, tile_best), tl.where(tile_best > best, tile_idx, best_idx)


@triton.jit
def long_min_p_draw(logits_ptr, stride_row, V, row, slot, flags,
                    mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                    rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                    seed, pos, thr, m, Z, BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                    HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr):
    """A min-p set larger than the candidate bound (min-p alone: no top-k, no top-p). Its threshold is
    known (the best rank value + ln min_p), so one pass over the row's tiles draws the Gumbel-max over
    every token that reaches it, with the reference's per-token noise (ties: lowest index), and sums
    the set's mass for its exact log-normalizer (relative to `m`). Returns (token, log-normalizer)."""
    BLOCK: tl.constexpr = 2 ** BLOCK_LOG2
    best = tl.full((), float("-inf"), tl.float32)
    best_idx = tl.full((), 0, tl.int64) + V
    total = tl.full((), 0.0, tl.float32)
    t = 0
    while t < Z:  # a while loop: the interpreter cannot iterate range() over a runtime bound
        x, offs, _key16, in_set, w = _set_tile(
            logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS)
        noise = gumbel_noise_tile(seed, pos, 0, t.to(tl.int64) * BLOCK, BLOCK)
        best, best_idx = _running_argmax(best, best_idx, tl.where(in_set, x + noise, float("-inf")), offs, V)
        total += tl.sum(w)
        t += 1
    return best_idx, m + tl.log(total)


@triton.jit
def _search_sub_tile(logits_ptr, stride_row, V, row, slot, flags, t,
                     mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                     rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                     thr, m, by_count, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr):
    """Sub-tile t of the search and draw passes (16-bit logits): _set_tile's values, and what each token
    weighs in the search: its mass, or 1 per token of the set when searching by count (top-k)."""
    x, offs, key16, in_set, w = _set_tile(
        logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
        counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
        thr, m, SUB_LOG2, False, IS_BF16, HAS_MASK, MAX_BIAS)
    return x, offs, key16, in_set, w, tl.where(by_count, in_set.to(tl.float32), w)


@triton.jit
def _mass_at_or_above(logits_ptr, stride_row, V, row, slot, flags,
                      mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                      rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                      thr, m, lo, step, by_count, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
                      MAX_BIAS: tl.constexpr):
    """One pass: for the 16 keys lo + j * step, the set's weight at keys >= each: its mass (relative to
    exp(m)), or its number of tokens there (by_count)."""
    t_j = lo + tl.arange(0, 16) * step
    acc = tl.zeros((16,), tl.float32)
    n_sub = tl.cdiv(V, 2 ** SUB_LOG2)
    t = 0
    while t < n_sub:
        _x, _offs, key16, _in, _w, weight = _search_sub_tile(
            logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m, by_count, IS_BF16, HAS_MASK, MAX_BIAS)
        acc += tl.sum(tl.where(key16[:, None] >= t_j[None, :], weight[:, None], 0.0), axis=0)
        t += 1
    return acc


@triton.jit
def long_nucleus_draw(logits_ptr, stride_row, V, row, slot, flags,
                      mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                      rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                      seed, pos, thr, m, top_p, k, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
                      MAX_BIAS: tl.constexpr):
    """A top-p nucleus (k = 0) or the top k tokens (k > 0) of the min-p set (the whole row when thr is
    -inf), larger than the candidate bound, 16-bit logits. Returns (token, log-normalizer of the set,
    the target: the nucleus' mass relative to exp(m), or k)."""
    by_count = k > 0
    j = tl.arange(0, 16)
    lo = 0
    step = 4096
    f_hi = tl.full((), 0.0, tl.float32)     # mass at keys above the search interval
    target = tl.full((), 0.0, tl.float32)
    p = 0
    while p < 4:                            # 65536 keys -> 4096 -> 256 -> 16 -> 1
        f = _mass_at_or_above(logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, prompt_mask_ptr,
                              words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr,
                              bias_count_ptr, temp_ptr, thr, m, lo, step, by_count, IS_BF16, HAS_MASK, MAX_BIAS)
        if p == 0:
            # k tokens, or p times F(0): the whole set's mass.
            target = tl.where(by_count, k.to(tl.float32), top_p * tl.sum(tl.where(j == 0, f, 0.0)))
        # The largest j whose key still has mass >= target at or above it (j = 0 always does).
        reach = (f >= target) & (lo + j * step <= 65535)
        jj = tl.max(tl.where(reach, j, 0))
        f_hi = tl.where(jj < 15, tl.sum(tl.where(j == jj + 1, f, 0.0)), f_hi)
        lo = lo + jj * step
        step = step // 16
        p += 1
    # lo is T; f_hi = F(T + 1). Draw over keys > T, and tokens at T (index order) whose preceding mass
    # (or count) F(T + 1) + (ties before them) is below the target.
    best = tl.full((), float("-inf"), tl.float32)
    best_idx = tl.full((), 0, tl.int64) + V
    tied_before = tl.full((), 0.0, tl.float32)
    total = tl.full((), 0.0, tl.float32)
    n_sub = tl.cdiv(V, 2 ** SUB_LOG2)
    t = 0
    while t < n_sub:
        x, offs, key16, in_set, w, weight = _search_sub_tile(
            logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m, by_count, IS_BF16, HAS_MASK, MAX_BIAS)
        tied = in_set & (key16 == lo)
        w_tied = tl.where(tied, weight, 0.0)
        before = f_hi + tied_before + tl.cumsum(w_tied, axis=0) - w_tied
        in_nucleus = (in_set & (key16 > lo)) | (tied & (before < target))
        noise = gumbel_noise_tile(seed, pos, 0, t.to(tl.int64) * (2 ** SUB_LOG2), 2 ** SUB_LOG2)
        best, best_idx = _running_argmax(best, best_idx, tl.where(in_nucleus, x + noise, float("-inf")), offs, V)
        total += tl.sum(tl.where(in_nucleus, w, 0.0))
        tied_before += tl.sum(w_tied)
        t += 1
    return best_idx, m + tl.log(total), target
