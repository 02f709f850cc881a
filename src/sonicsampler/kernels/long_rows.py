"""Exact work on rows whose final set is larger than the candidate bound, by passes over the whole row
inside stage 2. Verification's stage 2 runs each pass over the whole row in the row's program
(long_set_bound, long_set_pass); the sampler's cuts each pass into chunks that all of its stage-2
programs share (kernels/shared_sets.py). Both run the passes' work through chunk_pass.

The set, in SEMANTICS.md's order (min-p, then top-k, then top-p; tokens ordered by value, then lower
index): a token belongs if its rank value (processed, rounded to the input dtype; fp32 rows rank on
fp32) reaches min-p's threshold thr (-inf: no min-p), and it passes two cuts over the tokens' keys
(16-bit value keys, 32-bit for fp32 rows). A cut (lo, f_hi, target) keeps the keys above lo, and the
keys equal to lo in index order while the weight before them (f_hi, the weight above lo, plus the
tied tokens with lower ids) is below target; the trivial cut (-1, 0, inf) keeps everything.
- The top-k cut weighs each token 1 and has target k: lo is the k-th largest key of the min-p set.
- The top-p cut weighs each token by its mass, among the top-k cut's tokens, and has target p times
  their total mass: lo is the largest key T whose mass at or above it still reaches the target.
`long_set_bound` finds each cut a request needs by a search over the keys, one 8-bit digit a pass: 2
passes for 16-bit keys, 4 for 32-bit ones. Each pass sums the weight in 256 key intervals at once, as
integers (round(weight * FIX)) that each token adds by an atomic into its chunk's 256 words: exact
sums, the same whatever the order of the atomics, the chunking or the path of the search. (Until
session 31 a pass summed 16 intervals in lane-wise registers: twice the passes.) The draw's mass and
the weight tied before each sub-tile are integer sums too, so no result depends on how the row's
sub-tiles are grouped into chunks, and the sampler may choose the chunk count per batch. Min-p alone
needs no search: its threshold is known. A top-p cut's search starts from a narrower range where the
candidates bound it (nucleus_start): for 16-bit keys one pass fewer when the bounds span at most 254
keys, and one extra pass, never another cut key, when they do not hold.

`long_set_pass` then walks the row once: it sums the set's mass (its exact log-normalizer), tells
whether a given token is in the set, and draws either the Gumbel-max over the set (the sampler's
token, verification's bonus) or verification's residual max(0, p - q) (kernels/draft.py), with the
reference's per-token noise of the given stream; ties of perturbed scores go to the lower index.

A pass in one program is bound by its latency, not by bandwidth. What keeps it short (H100, V =
151936, one row in 16 beyond the bound, before the sharing: a nucleus 1.56 ms -> 0.65 ms, min-p alone
0.29 -> 0.13 ms; runs 48, 61, 62, 65; shared, the whole 16-row batch 102 and 39 µs, run 87; with
8-bit digits and 64 chunks 64.7 and 32.8 µs, run 172; with the chunks' sums folded into the row's
words and 128 chunks 52.4 and 31.4 µs, run 180):
- sub-tiles of 2**SUB_LOG2 tokens (the launcher's LONG_LOG2: 1024 on the GPU, where 4096 spilled; the
  stage-1 tile in the CPU tests, so that every carry between sub-tiles is exercised), each loaded
  while the one before is processed (the next sub-tile's logits are a loop-carried value);
- lane-wise running results, reduced once after a pass: the draw's argmax, mass and membership of d,
  instead of block reductions per sub-tile; the search's sums go straight to memory by atomics;
- a trivial cut costs nothing: only a real cut scans its tied tokens (a block scan per sub-tile);
- 16-bit rows carry their value keys alone, in 32 bits, and decode a rank value only for min-p.
"""
import triton
import triton.language as tl

from .. import indicators as bits
from . import INTERPRETED
from .draft import better_of, draft_q, residual_scores
from .keys import key16_from_bits, value_key32
from .prologue import bits16_to_f32, ranking_bits16
from .rng import gumbel_noise_tile
from .tile import load_tile, process_tile

TOP_K = tl.constexpr(bits.TOP_K)
TOP_P = tl.constexpr(bits.TOP_P)
TUPLE_REDUCE = tl.constexpr(not INTERPRETED)
# Whether inline PTX runs (on the GPU; the interpreter cannot run it): a lane's warp is read from %tid.x
# (the interpreter has no warps, and takes a fixed split of the sub-tile instead: any split of the tokens
# over copies gives the same sums), and red_add issues its reductions in PTX rather than through
# tl.atomic_add.
PTX_ASM = tl.constexpr(not INTERPRETED)

# A search pass splits its key range into 2**DIGIT_BITS intervals (one digit of the key per pass).
DIGIT_BITS = tl.constexpr(8)
DIGITS = tl.constexpr(2 ** DIGIT_BITS.value)
# The passes' weights are summed as integers, round(weight * FIX), so that the sums are exact and do
# not depend on the order in which atomics (or chunks) add them. A weight is a count (1) or a mass
# relative to exp(m), m the row's best rank value: at most 1 for fp32 rows, and below exp(|m| * 2**-9)
# for 16-bit ones, whose m is rounded to bf16 / fp16 (about 1.8 at |m| = 300). A row's sum stays below
# 2**63 while V times the largest weight stays below 2**24 (SlotTable refuses V >= 2**24; served
# vocabularies are below 2**19). A mass below 2**-40 counts as 0: at most V * 2**-40 of a set's mass,
# which is at least 1 (its best token).
FIX = tl.constexpr(2.0 ** 39)
INV_FIX = tl.constexpr(2.0 ** -39)
# A wide pass (the sampler's shared passes in launches cut into more than 8 chunks, the defaults 16, 64
# and 128 included: shared_sets.wide_words) sums 2**WIDE_BITS intervals of one key each at once, over a
# window of the 16-bit keys in which the candidates bound a top-p cut (wide_window), with one interval for
# the magnitudes nearest zero: there bf16 keys are densest (every octave down to 2**-133 has its 128 keys)
# and weigh alike. A nucleus on values that straddle zero spans tens of thousands of keys (two passes of
# 8-bit digits), but the window's keys outside that lump fit 2046 intervals: the cut is then set in one pass
# unless it falls in the lump, or outside the window where its bounds did not hold (the search then starts
# over).
WIDE_BITS = tl.constexpr(11)
WIDE = tl.constexpr(2 ** WIDE_BITS.value)


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
              mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
              rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
              thr, m, SUB_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
              HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, pend_ptr, n_pend, PENDING: tl.constexpr, inv_temp):
    """Sub-tile t (2**SUB_LOG2 tokens) of the row, its raw logits `raw` already loaded: processed
    values, token ids, value keys (int32 for 16-bit keys, int64 for fp32's 32-bit ones; 0 where not
    live), which tokens reach min-p's threshold (every live finite token when thr is -inf), and their
    mass relative to exp(m). inv_temp: the slot's 1 / temperature, loaded once by the caller."""
    offs = t.to(tl.int32) * (2 ** SUB_LOG2) + tl.arange(0, 2 ** SUB_LOG2)
    inb = offs < V
    x, bad = process_tile(raw, offs, inb, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words,
                          counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                          temp_ptr, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING,
                          t.to(tl.int32) * (2 ** SUB_LOG2), 2 ** SUB_LOG2, inv_temp=inv_temp)
    live = inb & ~bad
    in_set = live & (x > float("-inf"))
    # Value keys alone: the tile keys' index half is not needed here.
    key, bits = value_key(x, KEY64, IS_BF16)
    key = tl.where(live, key, 0)
    if KEY64:
        in_set = in_set & (x >= thr)
    elif thr > float("-inf"):
        # The rank value for min-p decoded from the rounded bits only for rows that have a threshold.
        in_set = in_set & (bits16_to_f32(bits, IS_BF16) >= thr)
    return x, offs, key, in_set, tl.where(in_set, tl.exp(x - m), 0.0)


@triton.jit
def value_key(x, KEY64: tl.constexpr, IS_BF16: tl.constexpr):
    """The value key that the passes rank processed values x by (int64: fp32's 32-bit key; int32: the
    16-bit key of x rounded to the input dtype), and for 16-bit rows the rounded bits."""
    if KEY64:
        return value_key32(x).to(tl.int64), x
    else:
        bits = ranking_bits16(x, IS_BF16)
        return key16_from_bits(bits).to(tl.int32), bits


@triton.jit
def _cut(among, key, weight, lo, f_hi, target, tied_before):
    """The tokens of `among` that a cut (lo, f_hi, target) keeps in this sub-tile (module docstring),
    and the weight of those tied at lo, which the next sub-tiles count before theirs: an integer sum of
    round(weight * FIX), as the searches' (tied_before too), so that the weight before a tied token is
    the same whatever the chunks the row's sub-tiles were grouped into (within the sub-tile an fp32
    scan, which does not depend on the chunks either and takes half the shuffles of an int64 one). A
    trivial cut (lo -1: every key is above it) scans nothing."""
    lo = lo.to(key.dtype)
    kept = among & (key > lo)
    w_t = tl.full((), 0, tl.int64)
    if lo >= 0:
        tied = among & (key == lo)
        w_tied = tl.where(tied, weight, 0.0)
        before = (f_hi + tied_before.to(tl.float32) * INV_FIX) + (tl.cumsum(w_tied, axis=0) - w_tied)
        kept = kept | (tied & (before < target))
        w_t = tl.sum(tl.where(tied, (weight * FIX + 0.5).to(tl.int64), 0))
    return kept, w_t


@triton.jit
def _lane_argmax(best, best_idx, score, offs):
    """Fold a sub-tile's scores into per-lane running maxima (token ids held as fp32 values, exact
    below 2**24). A lane meets its tokens in increasing index order, so a strict comparison keeps the
    lower index on ties (the reference's rule)."""
    better = score > best
    return tl.where(better, score, best), tl.where(better, offs.to(tl.float32), best_idx)


@triton.jit
def _final_combine(sa1, ia1, sb1, ib1, m1, d1, sa2, ia2, sb2, ib2, m2, d2):
    """The final pass's lane results, combined: both argmaxes (a lane that never met a finite score
    holds (-inf, V), which loses to any token), the mass, whether d was met."""
    sa, ia = better_of(sa1, ia1, sa2, ia2)
    sb, ib = better_of(sb1, ib1, sb2, ib2)
    return sa, ia, sb, ib, m1 + m2, tl.maximum(d1, d2)


@triton.jit
def _pick(j, J: tl.constexpr, v):
    return tl.where(j == J, v, 0.0)


@triton.jit
def chunk_pass(logits_ptr, stride_row, V, row, slot, flags,
               mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
               rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
               thr, m, lo_k, f_hi_k, target_k, tied_k, lo, f_hi, target, tied_p, final,
               s_lo, shift, by_count, clamped, seed, pos, stream, d, residual, log_final, q_ptr, q_ids_ptr, K,
               t0, t1, hist_ptr, SUB_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
               HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, DRAFT: tl.constexpr = 0,
               pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False, early=False, COPIES: tl.constexpr = 1,
               wide=False, w_lo=0, w_t=0, WIDE_W: tl.constexpr = 0):
    """Sub-tiles t0..t1-1 of one pass over the row's set (thr and its two cuts; tied_k / tied_p: the
    weight of the tokens tied at each cut's key in the sub-tiles before t0, integers as _cut's).
    Returns 16 values and the set's mass in these sub-tiles (the final pass's; an integer sum of
    round(w * FIX), w relative to exp(m)).
    - A search pass (final False) adds, into this chunk's DIGITS int64 words at hist_ptr (zeroed here
      first), the weight of the top-k cut's tokens whose key lies in each of the intervals
      [s_lo + j * 2**shift, + 2**shift): by count, or by mass relative to exp(m), as integers
      round(weight * FIX), by atomics (integer sums: the same whatever their order). Per interval
      rather than at-or-above, so that the tokens tied at the cut's key (the last pass's interval jj,
      of width 1) have their own sum per chunk. `clamped` (a narrowed first pass, nucleus_start): keys
      below the range count in interval 0, keys above it in the last. Returns 16 zeros and 0.
    - The final pass returns 16 partial results, which chunks combine in index order: [0] the
      Gumbel-max score over the set on `stream` and [1] its token (fp32), [3] whether token d is in it
      (0 / 1); with `residual` (verification's rejected draft d, q given as DRAFT says), [0, 1] are the
      residual max(0, p - q)'s Gumbel-max (p = exp(x - log_final) on the set), [4, 5] p's own and [6]
      the residual mass; and the set's mass.
    - `early` (a search pass of the sampler's shared passes): also [0, 1] the Gumbel-max over the
      pass's tokens (those of both cuts as they stand: a superset of the final set), as the final pass
      computes it. Where that token lies in the final set it is the final pass's token too, and the
      final pass need not run for the draw (shared_sets.py).
    `final` may be a runtime value (the sampler's shared passes run both kinds from one copy of this
    code) or a constexpr (verification's passes, which compile only the one they call).
    COPIES: the search's words come in COPIES copies of DIGITS at hist_ptr, each warp adding into copy
    (its warp % COPIES); chunk_sums adds them up. Atomics on one word from different warps serialise at
    the L2 (~30-40 ns each, run 189), and a first pass puts a third of a row's tokens on one interval
    (a top byte of a bf16 key spans two octaves): one copy per warp keeps each word's queue to its own
    warp's instructions.
    WIDE_W (launches with wide passes, COPIES 1): the chunk has WIDE_W words; a `wide` search pass adds
    each token's weight into its key's interval of the window (w_lo, w_t) (wide_interval), the others
    into the first DIGITS words as above."""
    SUB: tl.constexpr = 2 ** SUB_LOG2
    # The final pass's running results, lane-wise, reduced once after the loop (module docstring): best
    # score, its token, p's best score and token, the mass, whether d is met.
    a0 = tl.full((SUB,), float("-inf"), tl.float32)
    a1 = tl.zeros((SUB,), tl.float32) + V
    a2, a3 = a0, a1
    a4 = tl.zeros((SUB,), tl.int64)      # the mass as integers round(w * FIX): the same whatever the chunks
    a5 = tl.zeros((SUB,), tl.float32)
    resid_mass = tl.full((), 0.0, tl.float32)
    # The first sub-tile's load depends on nothing the pass posts: issued before the branch on `final`
    # (a parameter the sampler's helpers have just loaded) and the zeroing's barrier, so that the two
    # round trips overlap.
    t = tl.zeros((), tl.int32) + t0
    raw, _o, _i = load_tile(logits_ptr, stride_row, V, row, t, SUB_LOG2)
    # Once, not per sub-tile (process would load it each time, and the product waited on it: ncu, run 216).
    inv_temp = tl.load(temp_ptr + slot)
    if not final:
        # This chunk's sums start at zero; every thread's store is done before any thread's atomics.
        if WIDE_W > 0:
            jw = tl.arange(0, WIDE_W)
            tl.store(hist_ptr + jw, tl.zeros((WIDE_W,), tl.int64), mask=jw < tl.where(wide, WIDE_W, DIGITS))
        else:
            tl.store(hist_ptr + tl.arange(0, COPIES * DIGITS), tl.zeros((COPIES * DIGITS,), tl.int64))
        tl.debug_barrier()
    tied_k = tl.zeros((), tl.int64) + tied_k
    tied_p = tl.zeros((), tl.int64) + tied_p
    n_sub = tl.cdiv(V, SUB)
    d_min = tl.where(clamped, 0, -1)
    d_max = tl.where(clamped, DIGITS - 1, DIGITS)
    while t < t1:  # a while loop: the interpreter cannot iterate range() over a runtime bound
        # The next sub-tile's load is issued before this one's work; past the chunk it loads nothing.
        raw_next, _o, _i = load_tile(logits_ptr, stride_row, V, row, tl.where(t + 1 < t1, t + 1, n_sub), SUB_LOG2)
        x, offs, key, in_set, w = _set_tile(
            raw, t, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m, SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING, inv_temp)
        in_k, tk = _cut(in_set, key, in_set.to(tl.float32), lo_k, f_hi_k, target_k, tied_k)
        member, tp = _cut(in_k, key, w, lo, f_hi, target, tied_p)
        tied_k += tk
        tied_p += tp
        if final:
            start = t.to(tl.int64) * SUB
            noise = gumbel_noise_tile(seed, pos, stream, start, SUB)
            s_a = tl.where(member, x + noise, float("-inf"))
            if residual:
                q = draft_q(offs, member, d, q_ptr, q_ids_ptr, K, start, start + SUB, DRAFT)
                s_a, s_b, r_t = residual_scores(x, log_final, member, q, noise)
                resid_mass += r_t
                # p's own Gumbel-max, the fallback where the residual is empty: kept only for residual draws.
                a2, a3 = _lane_argmax(a2, a3, s_b, offs)
            a0, a1 = _lane_argmax(a0, a1, s_a, offs)
            a4 += tl.where(member, (w * FIX + 0.5).to(tl.int64), 0)
            a5 = tl.maximum(a5, (member & (offs == d)).to(tl.float32))
        else:
            # The interval of the token's key: -1 below s_lo, DIGITS above the range (the weight there is
            # known from the pass before), so that the last pass's interval of the cut's key holds its ties
            # only; 0 and DIGITS - 1 in a clamped pass. In the key's width, clamped, then 32 bits.
            dj = tl.minimum(tl.maximum((key - s_lo.to(key.dtype)) >> shift.to(key.dtype), d_min), d_max).to(tl.int32)
            fixed = (tl.where(by_count, 1.0, w) * FIX + 0.5).to(tl.int64)
            hit = member & (dj >= 0) & (dj < DIGITS) & (fixed > 0)
            if WIDE_W > 0:
                dj = tl.where(wide, wide_interval(key, w_lo, w_t, WIDE_W), dj)
                hit = hit | (member & wide & (fixed > 0))
            # What these cost (runs 170-171): ~2 us a pass at 16 rows, ~8 at 128, the lanes of a warp
            # writing words in different lines (atomics on words no two lanes share cost nothing).
            # Spreading them over 8 copies by token (i % 8) was no cheaper (run 171: zeroing and summing the
            # copies); by warp (COPIES) they pay where chunks span many sub-tiles (run 192).
            red_add(hist_ptr + _copy_of(dj, SUB, COPIES) * DIGITS + dj, fixed, hit)
            if early:
                noise = gumbel_noise_tile(seed, pos, stream, t.to(tl.int64) * SUB, SUB)
                a0, a1 = _lane_argmax(a0, a1, tl.where(member, x + noise, float("-inf")), offs)
        raw = raw_next
        t += 1
    j = tl.arange(0, 16)
    out = tl.zeros((16,), tl.float32)
    mass = tl.zeros((), tl.int64)
    if final | early:
        # One block reduction for all the lanes' results on the GPU (a tuple reduction: one exchange
        # between warps). The interpreter runs a tuple reduction element by element in Python (3x slower
        # CPU tests): it reduces each result alone, the same results.
        if TUPLE_REDUCE:
            best_a, idx_a, best_b, idx_b, mass, d_in = tl.reduce((a0, a1, a2, a3, a4, a5), 0, _final_combine)
        else:
            best_a = tl.max(a0)
            idx_a = tl.min(tl.where(a0 == best_a, a1, tl.zeros((), tl.float32) + V))
            best_b = tl.max(a2)
            idx_b = tl.min(tl.where(a2 == best_b, a3, tl.zeros((), tl.float32) + V))
            mass, d_in = tl.sum(a4), tl.max(a5)
        out = _pick(j, 0, best_a) + _pick(j, 1, idx_a) + _pick(j, 3, d_in) \
            + _pick(j, 4, best_b) + _pick(j, 5, idx_b) + _pick(j, 6, resid_mass)
    return out, mass


@triton.jit
def red_add(ptr, val, mask):
    """tl.atomic_add(ptr, val, mask=mask, sem="relaxed") for int64 values whose old values nobody reads.
    On the GPU one `red.relaxed.gpu` per lane from the operands' own layout: Triton's atomic first moves
    its operands through shared memory into a layout of one lane per thread, which in the search passes'
    loop took three conversions (pointers, values, mask) and five barriers per sub-tile (ncu, run 216)."""
    if PTX_ASM:
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.s32 p, $3, 0; @p red.relaxed.gpu.global.add.u64 [$1], $2; mov.u32 $0, 0; }",
            "=r,l,l,r", [ptr, val.to(tl.int64), mask.to(tl.int32)], dtype=tl.int32, is_pure=False, pack=1)
    else:
        tl.atomic_add(ptr, val.to(tl.int64), mask=mask, sem="relaxed")


@triton.jit
def _copy_of(dj, SUB: tl.constexpr, COPIES: tl.constexpr):
    """Which of COPIES copies of the search's words each lane of a sub-tile adds into (chunk_pass): its
    warp's (modulo COPIES) on the GPU, a fixed split of the sub-tile under the interpreter."""
    if COPIES == 1:
        return 0
    elif PTX_ASM:
        w = tl.inline_asm_elementwise("{ .reg .u32 t; mov.u32 t, %tid.x; shr.u32 $0, t, 5; }", "=r,r", [dj],
                                      dtype=tl.int32, is_pure=True, pack=1)
        return w % COPIES
    else:
        return tl.arange(0, SUB) // (SUB // COPIES)


@triton.jit
def chunk_sums(hist_ptr, COPIES: tl.constexpr = 1, WIDE_W: tl.constexpr = 0, wide=False):
    """A search pass's DIGITS sums that chunk_pass added into the words at hist_ptr (COPIES copies of
    them, added up here), once every thread's atomics are done (read past L1, which atomics bypass).
    WIDE_W: WIDE_W words, those past DIGITS zero unless the pass was `wide` (not read then)."""
    tl.debug_barrier()
    if WIDE_W > 0:
        jw = tl.arange(0, WIDE_W)
        return tl.load(hist_ptr + jw, mask=jw < tl.where(wide, WIDE_W, DIGITS), other=0, volatile=True)
    elif COPIES == 1:
        return tl.load(hist_ptr + tl.arange(0, DIGITS), volatile=True)
    else:
        cp = tl.arange(0, COPIES)
        return tl.sum(tl.load(hist_ptr + cp[:, None] * DIGITS + tl.arange(0, DIGITS)[None, :], volatile=True), 0)


@triton.jit
def _count_max(n1, b1, n2, b2):
    return n1 + n2, tl.maximum(b1, b2)


@triton.jit
def search_step(h, s_lo, shift, s_target, s_f_hi, first, by_count, k, top_p, clamped, KEY_BITS: tl.constexpr):
    """One step of a cut's search, from a pass's per-interval weights h (DIGITS integer sums of
    round(weight * FIX), chunk_pass) and the weight s_f_hi above its range (an integer sum as well; 0
    for a first pass, whose range holds every key: all keys, or a clamped range). The first pass sets
    the target (k tokens, or top_p times the whole weight of the top-k cut's tokens). Narrows (s_lo, shift) to the largest
    interval start whose weight at or above it still reaches the target; s_f_hi becomes the weight
    above that interval. Returns those, the interval's digit jj and whether the cut is set (a pass over
    intervals of one key each).

    A clamped pass (nucleus_start) whose cut falls in its first or last interval, which hold every key
    below and above its range, learns only that its bounds did not hold: the search starts over, from
    all keys, with the target it has."""
    j = tl.arange(0, DIGITS)
    # Weight at or above each interval's start, as integers (exact: the same sums however the tokens
    # were grouped into chunks or passes), then in fp32.
    f_fix = tl.cumsum(h, 0, reverse=True) + s_f_hi
    f = f_fix.to(tl.float32) * INV_FIX
    if first:
        # The whole weight, f[0], from its own sum (wide_step says why).
        total = (tl.sum(h) + s_f_hi).to(tl.float32) * INV_FIX
        s_target = tl.where(by_count, k.to(tl.float32), top_p * total)
    step = tl.full((), 1, tl.int64) << shift
    # Both conditions hold on a prefix of the intervals (f does not grow with j), so jj is their count
    # less one (0 if none reaches: a top-k search over fewer than k tokens), and the weight above jj's
    # interval, f_fix[jj + 1], is the largest f_fix past the prefix and past j = 0 (-1 if none): one
    # reduction for both.
    reach = (f >= s_target) & (s_lo + j.to(tl.int64) * step <= 2 ** KEY_BITS - 1)
    n_reach, below = tl.reduce((reach.to(tl.int32), tl.where(reach | (j == 0), -1, f_fix)), 0, _count_max)
    jj = tl.maximum(n_reach - 1, 0)
    edge = clamped & ((jj == 0) | (jj == DIGITS - 1))
    done = (shift == 0) & ~edge
    s_f_hi = tl.where(edge, 0, tl.where(jj < DIGITS - 1, below, s_f_hi))
    s_lo = tl.where(edge, 0, s_lo + jj.to(tl.int64) * step)
    shift = tl.where(edge, KEY_BITS - DIGIT_BITS, shift - DIGIT_BITS)
    return s_lo, shift, s_target, s_f_hi, jj, done


@triton.jit
def _wide_code(d, T):
    """The wide pass's code of a 16-bit key, from d = key - 0x8000 (the value's magnitude bits, -1 - them
    for negative values): 0 for magnitudes below T (the lump around zero), else one code per key, in key
    order (negative codes below zero, positive above)."""
    mag = tl.where(d >= 0, d, -1 - d)
    return tl.where(mag < T, 0, tl.where(d >= 0, d - T + 1, d + T))


@triton.jit
def wide_interval(key, w_lo, T, W: tl.constexpr):
    """A key's interval in a wide pass over codes w_lo .. w_lo + W - 3 (wide_window): 1 + its code's
    place, 0 below the window, W - 1 above it."""
    c = _wide_code(key.to(tl.int32) - 0x8000, T.to(tl.int32))
    return tl.minimum(tl.maximum(c - w_lo.to(tl.int32) + 1, 0), W - 1)


@triton.jit
def wide_window(k_lo, hi_key, W: tl.constexpr):
    """The window of a wide pass over the keys k_lo .. hi_key + 1 (those a top-p cut's bounds leave,
    nucleus_start): (w_lo, T), T the least lump threshold whose codes of those keys fit the W - 2
    intervals between the one below and the one above (0 where the keys fit as they are)."""
    a = k_lo.to(tl.int32) - 0x8000
    b = hi_key.to(tl.int32) + 1 - 0x8000
    # The span of codes is piecewise linear in T (slope 0, -1 or -2), dropping where T passes a bound's
    # magnitude: the least T that fits is 0, the start of a piece (a magnitude + 1) or where a piece's
    # line crosses W - 2. All six candidates at once, the least that fits taken (no loop on the chain).
    R: tl.constexpr = W - 2
    ma = tl.where(a >= 0, a, -1 - a)
    mb = tl.where(b >= 0, b, -1 - b)
    j = tl.arange(0, 8)
    t = tl.where(j == 1, ma + 1, tl.where(j == 2, mb + 1, tl.where(j == 3, (b - a + 3 - R) // 2,
                 tl.where(j == 4, b + 2 - R, tl.where(j == 5, 1 - a - R, tl.where(j == 6, 0x8000, 0))))))
    t = tl.minimum(tl.maximum(t, 0), 0x8000)
    fits = _wide_code(b, t) - _wide_code(a, t) + 1 <= R
    t_min = tl.min(tl.where(fits, t, 0x8000))
    return _wide_code(a, t_min).to(tl.int64), t_min.to(tl.int64)


@triton.jit
def wide_step(h, w_lo, T, top_p, KEY_BITS: tl.constexpr):
    """search_step for a first top-p pass that was wide (its W integer sums h; the target is top_p times
    their total). Returns (s_lo, shift, s_target, s_f_hi, jj, done) as search_step does: the cut set
    (s_lo its key, shift 0) when the target's interval is one key of the window; otherwise (the lump
    around zero, or outside the window: its bounds did not hold) the search starts over from every key
    with the same target (one pass more than the full search, the same cut: integer sums)."""
    W: tl.constexpr = h.shape[0]
    # Three block operations on the row's chain, not four: the total (the scan's first element) comes from
    # its own sum, and since the sums above an interval (f_fix) do not grow with its index, the intervals
    # at or above the target are a prefix 0..jj, and the sum above the cut's interval, f_fix[jj + 1], is
    # the largest f_fix below the target: one reduction gives both.
    f_fix = tl.cumsum(h, 0, reverse=True)
    f = f_fix.to(tl.float32) * INV_FIX
    s_target = top_p * (tl.sum(h).to(tl.float32) * INV_FIX)
    at = f >= s_target
    n_at, below = tl.reduce((at.to(tl.int32), tl.where(at, 0, f_fix)), 0, _count_max)
    jj = tl.maximum(n_at - 1, 0)
    c = w_lo + jj - 1
    done = (jj >= 1) & (jj <= W - 2) & (c != 0)
    key = tl.where(c > 0, c + T - 1, c - T) + 0x8000
    s_f_hi = tl.where(done, below, 0)
    s_lo = tl.where(done, key, 0)
    shift = tl.where(done, 0, KEY_BITS - DIGIT_BITS).to(tl.int64)
    return s_lo.to(tl.int64), shift, s_target, s_f_hi, jj, done


@triton.jit
def nucleus_start(search_p, m, kept, top_p, thr, hi_key, V, KEY64: tl.constexpr, IS_BF16: tl.constexpr):
    """Where a top-p cut's search starts: (s_lo, shift, clamped). All keys (s_lo 0, DIGITS intervals of
    2**(KEY_BITS - DIGIT_BITS)) without search_p; narrower when the row's candidates bound the cut's key:
    - below by the key of u = m + log((1 - top_p) * kept / (2 V)), kept being at most the weight W
      (relative to exp(m)) of the set that top-p cuts (sample._cut_bounds): the at most V tokens
      below u weigh less than (1 - top_p) W / 2 together, so the weight at or above u's key exceeds
      top_p W, the target; and by min-p's threshold thr (no token of the set is below it);
    - above by hi_key (sample._cut_bounds): the last (C-th) candidate's key for a nucleus over the
      whole vocabulary, which the candidates could not hold, else the first candidate's.
    Should a bound not hold (rounding at its edge), the clamped pass says so and the search starts
    over from all keys (search_step): one pass more, the same cut (its sums are integers: the same
    however the passes grouped the tokens).
    A range of R keys takes a first pass with intervals of 2**shift keys, shift the least multiple of
    DIGIT_BITS with DIGITS - 2 intervals covering R (later passes divide by DIGITS down to one key), and
    its first and last intervals hold every key below and above (clamped), so that the first pass
    still weighs every token. For 16-bit keys the full search takes 2 passes and a range of at most 254
    keys 1 (at temperature 0.85, top-p 0.9, on standard Gumbel bf16 rows at V = 151936, the range spans
    300-500 keys: 2 passes either way). For fp32's 32-bit keys the full search takes 4."""
    KEY_BITS: tl.constexpr = 32 if KEY64 else 16
    s_lo = tl.full((), 0, tl.int64)
    shift = tl.full((), KEY_BITS - DIGIT_BITS, tl.int64)
    narrow = search_p & (s_lo > 0)                 # false
    if search_p:
        k_lo, ok = nucleus_low_key(m, kept, top_p, thr, V, KEY64, IS_BF16)
        s_lo, shift, narrow = _key_range(k_lo, hi_key, ok, KEY_BITS)
    return s_lo, shift, narrow


@triton.jit
def nucleus_low_key(m, kept, top_p, thr, V, KEY64: tl.constexpr, IS_BF16: tl.constexpr):
    """The key below which a top-p cut cannot lie (nucleus_start: one key below u's), and whether u
    bounds anything (-inf or NaN does not)."""
    t = tl.maximum(m + tl.log(0.5 * (1.0 - top_p) * kept / V), thr)
    if KEY64:
        k_lo = value_key32(t).to(tl.int64)
    else:
        k_lo = key16_from_bits(ranking_bits16(t, IS_BF16)).to(tl.int64)
    # One key lower: every key below k_lo then holds values below t, whatever the rounding to the key.
    return tl.where(t == t, k_lo - 1, 0), t > float("-inf")


@triton.jit
def _key_range(k_lo, hi_key, ok, KEY_BITS: tl.constexpr):
    """The first pass over keys k_lo .. hi_key + 1 (nucleus_start): (s_lo, shift, narrowed)."""
    span = hi_key.to(tl.int64) + 2 - k_lo
    s = tl.zeros((), tl.int64)
    while (s < KEY_BITS - DIGIT_BITS) & (((DIGITS - 2) << s) < span):
        s += DIGIT_BITS
    narrow = (s < KEY_BITS - DIGIT_BITS) & ok
    return tl.where(narrow, k_lo - (1 << s), 0), tl.where(narrow, s, KEY_BITS - DIGIT_BITS), narrow


@triton.jit
def nucleus_after_top_k(p_lo, p_shift, p_clamped, lo_k, hi_key, KEY_BITS: tl.constexpr):
    """Where a top-p cut's search starts once the top-k cut's key lo_k is known: the top-p set lies
    within the top-k's, so its cut's key is at or above lo_k too. The range of nucleus_start (its
    lower end, all keys if it did not narrow) raised to lo_k: at V = 151936 u lies far below a top-k
    of some hundred tokens, whose keys span a few dozen (run 105b: 3 top-p passes after a top-k of
    600, where 1-2 do)."""
    k_lo = tl.maximum(tl.where(p_clamped, p_lo + (tl.full((), 1, tl.int64) << p_shift), 0), lo_k)
    return _key_range(k_lo, hi_key, lo_k >= 0, KEY_BITS)


@triton.jit(noinline=True)
def long_set_bound(logits_ptr, stride_row, V, row, slot, flags,
                   mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                   rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                   thr, m, top_p, k, search_k, search_p, kept, hi_key, hist_ptr, SUB_LOG2: tl.constexpr,
                   KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                   pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """The set's two cuts (module docstring), each pass over the whole row in this program:
    (lo_k, f_hi_k, target_k) of top-k when search_k, then (lo, f_hi, target) of top-p among its
    tokens when search_p; a cut not searched is trivial. f_hi and target of the top-p cut are masses
    relative to exp(m). One search loop serves both cuts (one copy of the pass in the compiled kernel).
    kept, hi_key: what bounds the top-p cut (nucleus_start). hist_ptr: DIGITS int64 words of scratch,
    the row's own (the passes' sums)."""
    KEY_BITS: tl.constexpr = 32 if KEY64 else 16
    lo_k = tl.full((), -1, tl.int64)
    f_hi_k = tl.full((), 0.0, tl.float32)
    target_k = tl.full((), float("inf"), tl.float32)
    lo = lo_k
    f_hi = f_hi_k
    target = target_k
    p_lo, p_shift, p_clamped = nucleus_start(search_p, m, kept, top_p, thr, hi_key, V, KEY64, IS_BF16)
    phase = tl.where(search_k, 0, 1)        # 0: the top-k cut (by count), 1: the top-p cut (by mass)
    end = tl.where(search_p, 2, 1)
    n_sub = tl.cdiv(V, 2 ** SUB_LOG2)
    while phase < end:
        by_count = phase == 0
        s_lo = tl.full((), 0, tl.int64)
        shift = tl.full((), KEY_BITS - DIGIT_BITS, tl.int64)
        clamped = phase < 0                     # false
        if ~by_count:
            s_lo, shift, clamped = p_lo, p_shift, p_clamped
        s_f_hi = tl.full((), 0, tl.int64)       # weight at keys above the search interval (integer sum)
        s_target = tl.full((), 0.0, tl.float32)
        p = 0
        searching = phase >= 0                  # true until a pass over intervals of one key each
        while searching:
            _r, _mass = chunk_pass(
                logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr, thr, m, lo_k,
                f_hi_k, target_k, 0, lo, f_hi, target, 0, False, s_lo, shift, by_count, clamped, 0, 0, 0, -1, False,
                0.0, None, None, 0, 0, n_sub, hist_ptr, SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, 0, pend_ptr,
                n_pend, PENDING)
            h = chunk_sums(hist_ptr)
            s_lo, shift, s_target, s_f_hi, _jj, done = search_step(h, s_lo, shift, s_target, s_f_hi, p == 0,
                                                                   by_count, k, top_p, clamped, KEY_BITS)
            clamped = phase < 0
            searching = ~done
            p += 1
            # The next pass zeroes the words again: no thread may still be reading them.
            tl.debug_barrier()
        if by_count:
            lo_k, f_hi_k, target_k = s_lo, s_f_hi.to(tl.float32) * INV_FIX, s_target
            p_lo, p_shift, p_clamped = nucleus_after_top_k(p_lo, p_shift, p_clamped, lo_k, hi_key, KEY_BITS)
        else:
            lo, f_hi, target = s_lo, s_f_hi.to(tl.float32) * INV_FIX, s_target
        phase += 1
    return lo_k, f_hi_k, target_k, lo, f_hi, target


@triton.jit(noinline=True)
def long_set_pass(logits_ptr, stride_row, V, row, slot, flags,
                  mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                  rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                  thr, m, lo_k, f_hi_k, target_k, lo, f_hi, target, seed, pos, stream, d,
                  residual, log_final, q_ptr, q_ids_ptr, K, SUB_LOG2: tl.constexpr,
                  KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                  DRAFT: tl.constexpr = 0, pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """One pass over the set (thr and its two cuts) of the row, in this program. Returns (token, the
    set's log-normalizer m + log(its mass relative to exp(m)), whether token d is in the set).

    The token is the Gumbel-max over the set on `stream`; with `residual` (verification's rejected
    draft d, q given as DRAFT says), the Gumbel-max of the residual max(0, p - q) with p = exp(x -
    log_final) on the set, or of p itself where the residual is empty."""
    r, mass = chunk_pass(logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words,
                         counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                         temp_ptr, thr, m, lo_k, f_hi_k, target_k, 0, lo, f_hi, target, 0, True, 0, 0, False, False,
                         seed, pos, stream, d, residual, log_final, q_ptr, q_ids_ptr, K, 0, tl.cdiv(V, 2 ** SUB_LOG2),
                         None, SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, DRAFT, pend_ptr, n_pend, PENDING)
    j = tl.arange(0, 16)
    token = tl.sum(tl.where(j == 1, r, 0.0))
    if residual:
        token = tl.where(tl.sum(tl.where(j == 6, r, 0.0)) > 0, token, tl.sum(tl.where(j == 5, r, 0.0)))
    return (token.to(tl.int64), m + tl.log(mass.to(tl.float32) * INV_FIX), tl.sum(tl.where(j == 3, r, 0.0)) > 0)


@triton.jit
def set_head(keep, x, m, target, nucleus):
    """Which candidates (the row's best C, in rank order) belong to the long set, given the bounded
    `keep`. A nucleus keeps those whose preceding mass (relative to exp(m)) is below its target: the
    bounded top-p normalised by the whole vocabulary, not by the min-p or top-k set, so it kept too
    many. Otherwise every candidate the bounded rules kept: all C lie inside a top-k of k > C, and a
    min-p set's are exactly those reaching its threshold."""
    w = tl.where(keep, tl.exp(x - m), 0.0)
    return tl.where(nucleus, keep & (tl.cumsum(w, axis=0) - w < target), keep)
