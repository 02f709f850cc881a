"""Exact work on rows whose final set is larger than the candidate bound, by passes over the whole row
inside stage 2 (one program per row: the other rows of the batch are not slowed, but the batch waits
for the longest program). Shared by the sampler's stage 2 and verification's.

The set, in SEMANTICS.md's order (min-p, then top-k, then top-p; tokens ordered by value, then lower
index): a token belongs if its rank value (processed, rounded to the input dtype; fp32 rows rank on
fp32) reaches min-p's threshold thr (-inf: no min-p), and it passes two cuts over the tokens' keys
(16-bit value keys, 32-bit for fp32 rows). A cut (lo, f_hi, target) keeps the keys above lo, and the
keys equal to lo in index order while the weight before them (f_hi, the weight above lo, plus the
tied tokens with lower ids) is below target; the trivial cut (-1, 0, inf) keeps everything.
- The top-k cut weighs each token 1 and has target k: lo is the k-th largest key of the min-p set.
- The top-p cut weighs each token by its mass, among the top-k cut's tokens, and has target p times
  their total mass: lo is the largest key T whose mass at or above it still reaches the target.
`long_set_bound` finds each cut a request needs by a 16-way search over the keys: 4 passes for
16-bit keys, 8 for 32-bit ones (each pass sums the weight above 16 keys at once). Min-p alone needs no
search: its threshold is known.

`long_set_pass` then walks the row once: it sums the set's mass (its exact log-normalizer), tells
whether a given token is in the set, and draws either the Gumbel-max over the set (the sampler's
token, verification's bonus) or verification's residual max(0, p - q) (kernels/draft.py), with the
reference's per-token noise of the given stream; ties of perturbed scores go to the lower index.

One program walks the whole row, so a pass is bound by its latency, not by bandwidth. What keeps it
short (H100, V = 151936, one row in 16 beyond the bound: a nucleus 1.56 ms -> 0.65 ms, min-p alone
0.29 -> 0.13 ms; runs 48, 61, 62, 65):
- sub-tiles of 2**SUB_LOG2 tokens (the launcher's LONG_LOG2: 1024 on the GPU, where 4096 spilled; the
  stage-1 tile in the CPU tests, so that every carry between sub-tiles is exercised), each loaded
  while the one before is processed (the next sub-tile's logits are a loop-carried value);
- lane-wise running results, reduced once after a pass: the draw's argmax, mass and membership of d,
  and the search's sixteen sums, instead of block reductions per sub-tile;
- a trivial cut costs nothing: only a real cut scans its tied tokens (a block scan per sub-tile);
- 16-bit rows carry their value keys alone, in 32 bits, and decode a rank value only for min-p.
"""
import triton
import triton.language as tl

from .. import indicators as bits
from .draft import draft_q, residual_scores
from .keys import key16_from_bits, value_key32
from .prologue import bits16_to_f32, ranking_bits16
from .rng import gumbel_noise_tile
from .tile import load_tile, process_tile

TOP_K = tl.constexpr(bits.TOP_K)
TOP_P = tl.constexpr(bits.TOP_P)


@triton.jit
def long_set_kinds(flags, exact, valid, EXACT_UNTRUNCATED: tl.constexpr):
    """Whether a row takes the exact passes (a valid row whose set the candidates could not settle,
    unless the bounded approximation was asked for: EXACT_UNTRUNCATED False), and which cuts it
    searches: top-k (a k above the bound) and top-p. Min-p alone searches neither. A greedy row is
    inexact only when its processed log-probabilities need such a set's normalizer (its token is the
    argmax whatever the set)."""
    if EXACT_UNTRUNCATED:
        long_set = ~exact & valid
    else:
        long_set = flags < 0                               # never
    return long_set, long_set & ((flags & TOP_K) != 0), long_set & ((flags & TOP_P) != 0)


@triton.jit
def _set_tile(raw, t, V, row, slot, flags,
              mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
              rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
              thr, m, SUB_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
              HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, pend_ptr, n_pend, PENDING: tl.constexpr):
    """Sub-tile t (2**SUB_LOG2 tokens) of the row, its raw logits `raw` already loaded: processed
    values, token ids, value keys (int32 for 16-bit keys, int64 for fp32's 32-bit ones; 0 where not
    live), which tokens reach min-p's threshold (every live finite token when thr is -inf), and their
    mass relative to exp(m)."""
    offs = t.to(tl.int32) * (2 ** SUB_LOG2) + tl.arange(0, 2 ** SUB_LOG2)
    inb = offs < V
    x, bad = process_tile(raw, offs, inb, row, slot, flags, V, mask_ptr, mask_stride, prompt_mask_ptr, words,
                          counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                          temp_ptr, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
    live = inb & ~bad
    in_set = live & (x > float("-inf"))
    # Value keys alone: the tile keys' index half is not needed here.
    if KEY64:
        key = tl.where(live, value_key32(x).to(tl.int64), 0)     # the fp32 value's 32-bit key
        in_set = in_set & (x >= thr)
    else:
        # The 16-bit value key in 32 bits; the rank value for min-p decoded from the rounded bits only
        # for rows that have a threshold.
        bits = ranking_bits16(x, IS_BF16)
        key = tl.where(live, key16_from_bits(bits).to(tl.int32), 0)
        if thr > float("-inf"):
            in_set = in_set & (bits16_to_f32(bits, IS_BF16) >= thr)
    return x, offs, key, in_set, tl.where(in_set, tl.exp(x - m), 0.0)


@triton.jit
def _cut(among, key, weight, lo, f_hi, target, tied_before):
    """The tokens of `among` that a cut (lo, f_hi, target) keeps in this sub-tile (module docstring),
    and the weight of those tied at lo, which the next sub-tiles count before theirs. A trivial cut
    (lo -1: every key is above it) scans nothing."""
    lo = lo.to(key.dtype)
    kept = among & (key > lo)
    w_t = tl.full((), 0.0, tl.float32)
    if lo >= 0:
        tied = among & (key == lo)
        w_tied = tl.where(tied, weight, 0.0)
        before = f_hi + tied_before + tl.cumsum(w_tied, axis=0) - w_tied
        kept = kept | (tied & (before < target))
        w_t = tl.sum(w_tied)
    return kept, w_t


@triton.jit
def _lane_argmax(best, best_idx, score, offs):
    """Fold a sub-tile's scores into per-lane running maxima. A lane meets its tokens in increasing
    index order, so a strict comparison keeps the lower index on ties (the reference's rule)."""
    better = score > best
    return tl.where(better, score, best), tl.where(better, offs, best_idx)


@triton.jit
def _argmax_of_lanes(best, best_idx, V):
    """The row's Gumbel-max from the per-lane maxima: the lowest index reaching the largest score
    (V when no lane holds a finite score)."""
    top = tl.max(best)
    return tl.min(tl.where(best == top, best_idx, V)).to(tl.int64)


@triton.jit
def _above(acc, dj, weight, J: tl.constexpr):
    """Lane-wise running weight of the tokens at or above the search's J-th key (digit dj >= J)."""
    return acc + tl.where(dj >= J, weight, 0.0)


@triton.jit
def _weight_at_or_above(logits_ptr, stride_row, V, row, slot, flags,
                        mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                        rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                        thr, m, lo_k, f_hi_k, target_k, lo, shift, by_count, SUB_LOG2: tl.constexpr,
                        KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
                        MAX_BIAS: tl.constexpr, pend_ptr, n_pend, PENDING: tl.constexpr):
    """One search pass: for the 16 keys lo + j * 2**shift, the weight at keys >= each of the top-k
    cut's tokens: their number (by_count: searching that cut, which is then trivial) or their mass
    (relative to exp(m)).

    Sixteen lane-wise sums, reduced once after the loop. Summing a (sub-tile, 16) comparison per
    sub-tile instead (one block reduction each) cost ~2-3 us per 1024-token sub-tile on the H100 (run
    61: 4 such passes ~1.8 ms of a 1.95 ms nucleus), against ~0.85 us for the final pass's whole work,
    most likely because the broadcast to 16 columns spreads each token's processing over 16 threads."""
    SUB: tl.constexpr = 2 ** SUB_LOG2
    a0 = tl.zeros((SUB,), tl.float32)
    a1, a2, a3, a4, a5, a6, a7 = a0, a0, a0, a0, a0, a0, a0
    a8, a9, a10, a11, a12, a13, a14, a15 = a0, a0, a0, a0, a0, a0, a0, a0
    tied_k = tl.full((), 0.0, tl.float32)
    n_sub = tl.cdiv(V, SUB)
    t = tl.zeros((), tl.int32)
    raw, _o, _i = load_tile(logits_ptr, stride_row, V, row, t, SUB_LOG2)
    while t < n_sub:  # a while loop: the interpreter cannot iterate range() over a runtime bound
        # The next sub-tile's load is issued before this one's work (past the row it loads nothing).
        raw_next, _o, _i = load_tile(logits_ptr, stride_row, V, row, t + 1, SUB_LOG2)
        _x, _offs, key, in_set, w = _set_tile(
            raw, t, V, row, slot, flags, mask_ptr, mask_stride, prompt_mask_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m, SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
        in_k, tk = _cut(in_set, key, in_set.to(tl.float32), lo_k, f_hi_k, target_k, tied_k)
        tied_k += tk
        weight = tl.where(in_k, tl.where(by_count, 1.0, w), 0.0)
        # The highest j whose key a token reaches (-1 below lo), in the key's width, compared in 32 bits.
        dj = tl.minimum(tl.maximum((key - lo.to(key.dtype)) >> shift.to(key.dtype), -1), 15).to(tl.int32)
        a0, a1, a2, a3 = _above(a0, dj, weight, 0), _above(a1, dj, weight, 1), _above(a2, dj, weight, 2), \
            _above(a3, dj, weight, 3)
        a4, a5, a6, a7 = _above(a4, dj, weight, 4), _above(a5, dj, weight, 5), _above(a6, dj, weight, 6), \
            _above(a7, dj, weight, 7)
        a8, a9, a10, a11 = _above(a8, dj, weight, 8), _above(a9, dj, weight, 9), _above(a10, dj, weight, 10), \
            _above(a11, dj, weight, 11)
        a12, a13, a14, a15 = _above(a12, dj, weight, 12), _above(a13, dj, weight, 13), \
            _above(a14, dj, weight, 14), _above(a15, dj, weight, 15)
        raw = raw_next
        t += 1
    j = tl.arange(0, 16)
    f = tl.where(j == 0, tl.sum(a0), 0.0) + tl.where(j == 1, tl.sum(a1), 0.0) + tl.where(j == 2, tl.sum(a2), 0.0) \
        + tl.where(j == 3, tl.sum(a3), 0.0) + tl.where(j == 4, tl.sum(a4), 0.0) + tl.where(j == 5, tl.sum(a5), 0.0) \
        + tl.where(j == 6, tl.sum(a6), 0.0) + tl.where(j == 7, tl.sum(a7), 0.0) + tl.where(j == 8, tl.sum(a8), 0.0) \
        + tl.where(j == 9, tl.sum(a9), 0.0) + tl.where(j == 10, tl.sum(a10), 0.0) \
        + tl.where(j == 11, tl.sum(a11), 0.0) + tl.where(j == 12, tl.sum(a12), 0.0) \
        + tl.where(j == 13, tl.sum(a13), 0.0) + tl.where(j == 14, tl.sum(a14), 0.0) \
        + tl.where(j == 15, tl.sum(a15), 0.0)
    return f


@triton.jit
def long_set_bound(logits_ptr, stride_row, V, row, slot, flags,
                   mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                   rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                   thr, m, top_p, k, search_k, search_p, SUB_LOG2: tl.constexpr, KEY64: tl.constexpr,
                   IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                   pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """The set's two cuts (module docstring): (lo_k, f_hi_k, target_k) of top-k when search_k, then
    (lo, f_hi, target) of top-p among its tokens when search_p; a cut not searched is trivial. f_hi
    and target of the top-p cut are masses relative to exp(m). One search loop serves both cuts (one
    copy of the pass in the compiled kernel)."""
    KEY_BITS: tl.constexpr = 32 if KEY64 else 16
    j = tl.arange(0, 16)
    lo_k = tl.full((), -1, tl.int64)
    f_hi_k = tl.full((), 0.0, tl.float32)
    target_k = tl.full((), float("inf"), tl.float32)
    lo = lo_k
    f_hi = f_hi_k
    target = target_k
    phase = tl.where(search_k, 0, 1)        # 0: the top-k cut (by count), 1: the top-p cut (by mass)
    end = tl.where(search_p, 2, 1)
    while phase < end:
        by_count = phase == 0
        s_lo = tl.full((), 0, tl.int64)
        shift = tl.full((), KEY_BITS - 4, tl.int64)
        s_f_hi = tl.full((), 0.0, tl.float32)   # weight at keys above the search interval
        s_target = tl.full((), 0.0, tl.float32)
        p = 0
        while p < KEY_BITS // 4:                # 2**KEY_BITS keys, 16 times fewer after each pass
            f = _weight_at_or_above(logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride,
                                    prompt_mask_ptr, words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr,
                                    bias_vals_ptr, bias_count_ptr, temp_ptr, thr, m, lo_k, f_hi_k, target_k,
                                    s_lo, shift, by_count, SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS,
                                    pend_ptr, n_pend, PENDING)
            if p == 0:
                # k tokens, or p times F(0): the whole mass of the top-k cut's tokens.
                s_target = tl.where(by_count, k.to(tl.float32), top_p * tl.sum(tl.where(j == 0, f, 0.0)))
            # The largest j whose key still has weight >= target at or above it (j = 0 always does).
            step = tl.full((), 1, tl.int64) << shift
            reach = (f >= s_target) & (s_lo + j.to(tl.int64) * step <= 2 ** KEY_BITS - 1)
            jj = tl.max(tl.where(reach, j, 0))
            s_f_hi = tl.where(jj < 15, tl.sum(tl.where(j == jj + 1, f, 0.0)), s_f_hi)
            s_lo = s_lo + jj.to(tl.int64) * step
            shift -= 4
            p += 1
        if by_count:
            lo_k, f_hi_k, target_k = s_lo, s_f_hi, s_target
        else:
            lo, f_hi, target = s_lo, s_f_hi, s_target
        phase += 1
    return lo_k, f_hi_k, target_k, lo, f_hi, target


@triton.jit
def long_set_pass(logits_ptr, stride_row, V, row, slot, flags,
                  mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                  rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                  thr, m, lo_k, f_hi_k, target_k, lo, f_hi, target, seed, pos, stream, d,
                  residual, log_final, q_ptr, q_ids_ptr, K, SUB_LOG2: tl.constexpr,
                  KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                  DRAFT: tl.constexpr = 0, pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """One pass over the set (thr and its two cuts) of the row. Returns (token, the set's
    log-normalizer m + log(its mass relative to exp(m)), whether token d is in the set).

    The token is the Gumbel-max over the set on `stream`; with `residual` (verification's rejected
    draft d, q given as DRAFT says), the Gumbel-max of the residual max(0, p - q) with p = exp(x -
    log_final) on the set, or of p itself where the residual is empty."""
    SUB: tl.constexpr = 2 ** SUB_LOG2
    # Per-lane running results (module docstring), reduced after the loop.
    best_a = tl.full((SUB,), float("-inf"), tl.float32)
    idx_a = tl.zeros((SUB,), tl.int32) + V
    best_b = best_a
    idx_b = idx_a
    total = tl.zeros((SUB,), tl.float32)
    d_in = tl.zeros((SUB,), tl.int32)
    tied_k = tl.full((), 0.0, tl.float32)
    tied_p = tl.full((), 0.0, tl.float32)
    resid_mass = tl.full((), 0.0, tl.float32)
    n_sub = tl.cdiv(V, SUB)
    t = tl.zeros((), tl.int32)
    raw, _o, _i = load_tile(logits_ptr, stride_row, V, row, t, SUB_LOG2)
    while t < n_sub:  # a while loop: the interpreter cannot iterate range() over a runtime bound
        raw_next, _o, _i = load_tile(logits_ptr, stride_row, V, row, t + 1, SUB_LOG2)
        x, offs, key, in_set, w = _set_tile(
            raw, t, V, row, slot, flags, mask_ptr, mask_stride, prompt_mask_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m, SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
        in_k, tk = _cut(in_set, key, in_set.to(tl.float32), lo_k, f_hi_k, target_k, tied_k)
        member, tp = _cut(in_k, key, w, lo, f_hi, target, tied_p)
        tied_k += tk
        tied_p += tp
        start = t.to(tl.int64) * SUB
        noise = gumbel_noise_tile(seed, pos, stream, start, SUB)
        s_a = tl.where(member, x + noise, float("-inf"))
        if residual:
            q = draft_q(offs, member, d, q_ptr, q_ids_ptr, K, start, start + SUB, DRAFT)
            s_a, s_b, r_t = residual_scores(x, log_final, member, q, noise)
            resid_mass += r_t
            # p's own Gumbel-max, the fallback where the residual is empty: kept only for residual draws.
            best_b, idx_b = _lane_argmax(best_b, idx_b, s_b, offs)
        best_a, idx_a = _lane_argmax(best_a, idx_a, s_a, offs)
        total += tl.where(member, w, 0.0)
        d_in = d_in | (member & (offs == d)).to(tl.int32)
        raw = raw_next
        t += 1
    token = _argmax_of_lanes(best_a, idx_a, V)
    if residual:
        token = tl.where(resid_mass > 0, token, _argmax_of_lanes(best_b, idx_b, V))
    return token, m + tl.log(tl.sum(total)), tl.max(d_in) > 0


@triton.jit
def set_head(keep, x, m, target, nucleus):
    """Which candidates (the row's best C, in rank order) belong to the long set, given the bounded
    `keep`. A nucleus keeps those whose preceding mass (relative to exp(m)) is below its target: the
    bounded top-p normalised by the whole vocabulary, not by the min-p or top-k set, so it kept too
    many. Otherwise every candidate the bounded rules kept: all C lie inside a top-k of k > C, and a
    min-p set's are exactly those reaching its threshold."""
    w = tl.where(keep, tl.exp(x - m), 0.0)
    return tl.where(nucleus, keep & (tl.cumsum(w, axis=0) - w < target), keep)
