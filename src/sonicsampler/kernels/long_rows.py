"""Exact work on rows whose final set is larger than the candidate bound, by passes over the whole row
inside stage 2 (one program per row: the other rows of the batch are not slowed, but the batch waits
for the longest program). Shared by the sampler's stage 2 and verification's.

A set is described by (thr, lo, f_hi, target) over the row's processed tokens: a token belongs if its
rank value (processed, rounded to the input dtype) reaches min-p's threshold thr (-inf: no min-p) and
its 16-bit key is above lo, or equals lo while the weight of the set before it (f_hi, the weight above
lo, plus the tokens tied at lo with lower ids) is below target. `long_set_bound` finds it:
- min-p alone, and untruncated rows: every token reaching thr (lo = -1, no search);
- top-p (after an optional min-p) on 16-bit logits: the nucleus ends at the largest key T whose
  set mass F(T) (tokens with key >= T) still reaches p times the set's total. Four passes find T by a
  16-way search over the 16-bit keys (each pass sums the mass above 16 keys at once), and the tokens
  tied at T are taken in index order while the mass before them is below the target (SEMANTICS.md's
  order: value, then lower index);
- top-k above the bound (after an optional min-p, no top-p) on 16-bit logits: the same search with
  each token weighing 1 instead of its mass, and k as the target: T is the k-th largest key.

`long_set_pass` then walks the row once: it sums the set's mass (its exact log-normalizer), tells
whether a given token is in the set, and draws either the Gumbel-max over the set (the sampler's
token, verification's bonus) or verification's residual max(0, p - q) (kernels/draft.py), with the
reference's per-token noise of the given stream; ties of perturbed scores go to the lower index.
"""
import triton
import triton.language as tl

from .. import indicators as bits
from .draft import draft_q, residual_scores
from .keys import bits_from_key16
from .prologue import bits16_to_f32
from .rng import gumbel_noise_tile
from .tile import processed_tile

GREEDY = tl.constexpr(bits.GREEDY)
TOP_K = tl.constexpr(bits.TOP_K)
TOP_P = tl.constexpr(bits.TOP_P)
MIN_P = tl.constexpr(bits.MIN_P)

SUB_LOG2 = tl.constexpr(10)   # the passes walk 1024-token sub-tiles: (1024, 16) sums stay in registers


@triton.jit
def long_set_kinds(flags, exact, valid, KEY64: tl.constexpr, EXACT_UNTRUNCATED: tl.constexpr):
    """Which exact pass a stochastic row whose set the candidates could not settle takes (none unless
    EXACT_UNTRUNCATED, i.e. the bounded approximation was not asked for): min-p alone; and on 16-bit
    logits top-p, or top-k above the bound, each after an optional min-p. Still inexact: top-k above
    the bound followed by top-p, and fp32 nuclei or big k."""
    todo = ~exact & valid & ((flags & GREEDY) == 0)
    if EXACT_UNTRUNCATED:
        min_p = ((flags & (MIN_P | TOP_K | TOP_P)) == MIN_P) & todo
    else:
        min_p = flags < 0                                  # never
    if EXACT_UNTRUNCATED and not KEY64:
        nucleus = ((flags & (TOP_K | TOP_P)) == TOP_P) & todo
        top_k = ((flags & (TOP_K | TOP_P)) == TOP_K) & todo
    else:
        nucleus = flags < 0
        top_k = flags < 0
    return min_p, nucleus, top_k


@triton.jit
def _set_tile(logits_ptr, stride_row, V, row, slot, flags, t,
              mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
              rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
              thr, m, by_count, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
              HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, pend_ptr, n_pend, PENDING: tl.constexpr):
    """Sub-tile t (2**SUB_LOG2 tokens) of the row: processed values, token ids, 16-bit keys, which
    tokens reach min-p's threshold (every live finite token when thr is -inf), their mass relative to
    exp(m), and what each weighs in the search: its mass, or 1 when searching by count (top-k)."""
    _raw, x, offs, _inb, _bad, keys = processed_tile(
        logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
        counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
        SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
    if KEY64:
        key16 = (keys >> 48).to(tl.int32)          # above lo = -1: fp32 sets are never searched
        rank_val = x
    else:
        key16 = (keys >> 16).to(tl.int32)
        rank_val = bits16_to_f32(bits_from_key16(key16), IS_BF16)
    in_set = (keys != 0) & (rank_val >= thr) & (x > float("-inf"))
    w = tl.where(in_set, tl.exp(x - m), 0.0)
    return x, offs, key16, in_set, w, tl.where(by_count, in_set.to(tl.float32), w)


@triton.jit
def _running_argmax(best, best_idx, score, offs, V):
    """Fold one tile's Gumbel-max into the row's: the lowest index inside the tile, earlier tiles on ties."""
    tile_best = tl.max(score)
    tile_idx = tl.min(tl.where(score == tile_best, offs, V))
    return tl.maximum(best, tile_best), tl.where(tile_best > best, tile_idx, best_idx)


@triton.jit
def _weight_at_or_above(logits_ptr, stride_row, V, row, slot, flags,
                        mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                        rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                        thr, m, lo, step, by_count, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
                        MAX_BIAS: tl.constexpr, pend_ptr, n_pend, PENDING: tl.constexpr):
    """One search pass: for the 16 keys lo + j * step, the set's weight at keys >= each: its mass
    (relative to exp(m)), or its number of tokens there (by_count)."""
    t_j = lo + tl.arange(0, 16) * step
    acc = tl.zeros((16,), tl.float32)
    n_sub = tl.cdiv(V, 2 ** SUB_LOG2)
    t = 0
    while t < n_sub:  # a while loop: the interpreter cannot iterate range() over a runtime bound
        _x, _offs, key16, _in, _w, weight = _set_tile(
            logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m, by_count, False, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
        acc += tl.sum(tl.where(key16[:, None] >= t_j[None, :], weight[:, None], 0.0), axis=0)
        t += 1
    return acc


@triton.jit
def long_set_bound(logits_ptr, stride_row, V, row, slot, flags,
                   mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                   rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                   thr, m, top_p, k, search, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
                   MAX_BIAS: tl.constexpr, pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """(lo, f_hi, target) of the set (module docstring). With `search` (16-bit logits only), of the
    top-p nucleus (k = 0) or the top k tokens (k > 0) of the min-p set (the whole row when thr is
    -inf); f_hi and target are masses relative to exp(m), or counts. Without, every token reaching
    thr: four fewer passes."""
    by_count = k > 0
    j = tl.arange(0, 16)
    lo = tl.where(search, 0, -1)
    step = 4096
    f_hi = tl.full((), 0.0, tl.float32)     # weight at keys above the search interval
    target = tl.full((), float("inf"), tl.float32)
    n_pass = tl.where(search, 4, 0)         # 65536 keys -> 4096 -> 256 -> 16 -> 1
    p = 0
    while p < n_pass:
        f = _weight_at_or_above(logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride,
                                prompt_mask_ptr, words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr,
                                bias_vals_ptr, bias_count_ptr, temp_ptr, thr, m, lo, step, by_count,
                                IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
        if p == 0:
            # k tokens, or p times F(0): the whole set's mass.
            target = tl.where(by_count, k.to(tl.float32), top_p * tl.sum(tl.where(j == 0, f, 0.0)))
        # The largest j whose key still has weight >= target at or above it (j = 0 always does).
        reach = (f >= target) & (lo + j * step <= 65535)
        jj = tl.max(tl.where(reach, j, 0))
        f_hi = tl.where(jj < 15, tl.sum(tl.where(j == jj + 1, f, 0.0)), f_hi)
        lo = lo + jj * step
        step = step // 16
        p += 1
    return lo, f_hi, target


@triton.jit
def long_set_pass(logits_ptr, stride_row, V, row, slot, flags,
                  mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                  rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                  thr, m, lo, f_hi, target, by_count, seed, pos, stream, d,
                  residual, log_final, q_ptr, q_ids_ptr, K,
                  KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                  DRAFT: tl.constexpr = 0, pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """One pass over the set (thr, lo, f_hi, target) of the row. Returns (token, the set's
    log-normalizer m + log(its mass relative to exp(m)), whether token d is in the set).

    The token is the Gumbel-max over the set on `stream`; with `residual` (verification's rejected
    draft d, q given as DRAFT says), the Gumbel-max of the residual max(0, p - q) with p = exp(x -
    log_final) on the set, or of p itself where the residual is empty."""
    best_a = tl.full((), float("-inf"), tl.float32)
    idx_a = tl.full((), 0, tl.int64) + V
    best_b = tl.full((), float("-inf"), tl.float32)
    idx_b = tl.full((), 0, tl.int64) + V
    tied_before = tl.full((), 0.0, tl.float32)
    total = tl.full((), 0.0, tl.float32)
    resid_mass = tl.full((), 0.0, tl.float32)
    d_in = tl.full((), 0, tl.int32)
    n_sub = tl.cdiv(V, 2 ** SUB_LOG2)
    t = 0
    while t < n_sub:  # a while loop: the interpreter cannot iterate range() over a runtime bound
        x, offs, key16, in_set, w, weight = _set_tile(
            logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m, by_count, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
        tied = in_set & (key16 == lo)
        w_tied = tl.where(tied, weight, 0.0)
        before = f_hi + tied_before + tl.cumsum(w_tied, axis=0) - w_tied
        member = (in_set & (key16 > lo)) | (tied & (before < target))
        start = t.to(tl.int64) * (2 ** SUB_LOG2)
        noise = gumbel_noise_tile(seed, pos, stream, start, 2 ** SUB_LOG2)
        s_a = tl.where(member, x + noise, float("-inf"))
        s_b = s_a
        r_t = tl.full((), 0.0, tl.float32)
        if residual:
            q = draft_q(offs, member, d, q_ptr, q_ids_ptr, K, start, start + 2 ** SUB_LOG2, DRAFT)
            s_a, s_b, r_t = residual_scores(x, log_final, member, q, noise)
        best_a, idx_a = _running_argmax(best_a, idx_a, s_a, offs, V)
        best_b, idx_b = _running_argmax(best_b, idx_b, s_b, offs, V)
        total += tl.sum(tl.where(member, w, 0.0))
        resid_mass += r_t
        d_in += tl.sum((member & (offs == d)).to(tl.int32))
        tied_before += tl.sum(w_tied)
        t += 1
    token = idx_a
    if residual:
        token = tl.where(resid_mass > 0, idx_a, idx_b)
    return token, m + tl.log(total), d_in > 0


@triton.jit
def set_head(keep, x, m, target, nucleus):
    """Which candidates (the row's best C, in rank order) belong to the long set, given the bounded
    `keep`. A nucleus keeps those whose preceding mass (relative to exp(m)) is below its target: the
    bounded top-p normalised by the whole vocabulary, not by the min-p set, so it kept too many. A
    big top-k keeps every candidate (all C lie inside its k > C tokens), and so does a min-p set."""
    w = tl.where(keep, tl.exp(x - m), 0.0)
    return tl.where(nucleus, keep & (tl.cumsum(w, axis=0) - w < target), keep)
