"""Speculative chain verification (SEMANTICS.md section 5), stage 2: one program per target row, the
request assembled by the last of its rows to finish.

Stage 1 is the sampler's own (kernels/sample.py, `sample_stage1` with PENDING): it runs over all
B·(γ+1) target rows at once, each row with its request's slot and its own position (row l of a
request generates position positions[b] + l), and the l-th row's penalties also count the request's
first l draft tokens (they are the output so far if row l is reached).

Stage 2 runs one program per target row. Row l's distribution p_l is conditioned on drafts 0..l-1
having been accepted, and its random numbers are keyed by its own position, so every row can decide
on its own what it would do if the walk reached it (`verify_row`): it rebuilds the target's truncated
distribution over the row's candidates (the sampler's own stage-2 rules, `sample.row_distribution`),
then
- greedy request: accept d_l iff it is the argmax, else the argmax is the row's token;
- stochastic request: accept d_l iff u·q_l(d_l) <= p_l(d_l), u from the acceptance stream; if not,
  the row's token is a draw from normalize(max(0, p_l - q_l)) (Gumbel-max on the residual stream;
  from p_l itself where the residual is empty);
- row n_b (all drafts accepted): the bonus token, drawn from p_l (the sampling stream).
Each row writes (token, accepted, valid, exact, log-probability) to scratch and counts itself in by
an atomic. The last row of a request to arrive walks the γ+1 results in order (accept while valid and
accepted; stop at the first row that is not), writes the request's outputs, counts the emitted tokens
into the slot's output counts and resets the arrival counter for the next launch. No program waits
for another, so no schedule can deadlock, and the request's latency is one row's, not γ+1 rows' in
turn (the earlier walk by one program per request cost ~4 rows' time at γ = 3, run 21).

Untruncated stochastic rows (no top-k/top-p/min-p) are exact, as in the sampler: p_l(d) uses the
full-vocabulary normalizer, the bonus token is stage 1's full-vocabulary Gumbel-max, and a residual
draw makes one pass over the row's vocabulary. Truncated rows are exact when their set fits the
candidate bound (the sampler's rule); a request that used an inexact row is reported (`exact`).

Precision: p_l, q_l and the residual are fp32 here, float64 in the reference, so the two can differ
where u·q(d) lies within float rounding of p(d), or where two residual scores are that close.

Registers: at a stage-1 tile of 2**13 and 8 warps the sm_90 compile spills about 200 bytes per thread
(the sampler's stage 2 spills none); the residual pass walks 2**11-token sub-tiles, which took most of
an earlier 500 bytes away.
"""
import triton
import triton.language as tl

from .. import indicators as bits
from .prologue import process
from .rng import gumbel_noise, philox_uniform
from .sample import _at, _combine, row_distribution, row_slot, untruncated_token
from .tile import processed_tile

ACTIVE = tl.constexpr(bits.ACTIVE)
GREEDY = tl.constexpr(bits.GREEDY)
LOGPROBS = tl.constexpr(bits.LOGPROBS)
LOGPROBS_PROCESSED = tl.constexpr(bits.LOGPROBS_PROCESSED)

# How the draft distribution q is given (the launcher's DRAFT constexpr).
DRAFT_ONE_HOT = tl.constexpr(0)   # none: q_l is one-hot at d_l
DRAFT_DENSE = tl.constexpr(1)     # (B, γ, V) probabilities
DRAFT_SPARSE = tl.constexpr(2)    # (B, γ, K) token ids (-1 = padding) and probabilities

STREAM_SAMPLE = tl.constexpr(0)
STREAM_ACCEPT = tl.constexpr(1)
STREAM_RESIDUAL = tl.constexpr(2)


@triton.jit
def token_values(tok, logits_ptr, stride_row, V, row, slot, flags,
                 mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                 rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                 pend_ptr, n_pend, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr):
    """Raw and processed value of one token of a row (the token need not be a candidate; tok in 0..V-1)."""
    two = tl.arange(0, 2)
    tok2 = tok + two * 0
    raw2 = tl.load(logits_ptr + row * stride_row + tok2).to(tl.float32)
    x2 = process(raw2, tok2, two >= 0, row, slot, flags, V, mask_ptr, mask_stride, prompt_mask_ptr, words,
                 counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                 HAS_MASK, MAX_BIAS, pend_ptr, n_pend, True)
    return tl.max(raw2), tl.max(x2)


@triton.jit
def draft_q(tok, live, d, q_ptr, q_ids_ptr, K, lo, hi, DRAFT: tl.constexpr):
    """q_l at a block of token ids (all in lo..hi-1): one-hot at d, the dense row at q_ptr, or the sum
    of the sparse entries (q_ids_ptr[j], q_ptr[j]), j < K, naming each token (ids are distinct)."""
    if DRAFT == DRAFT_ONE_HOT:
        q = tl.where(tok == d, 1.0, 0.0)
    elif DRAFT == DRAFT_DENSE:
        q = tl.load(q_ptr + tok, mask=live, other=0.0).to(tl.float32)
    else:
        q = tl.zeros(tok.shape, tl.float32)
        j = 0
        while j < K:
            t = tl.load(q_ids_ptr + j).to(tl.int64)
            if (t >= lo) & (t < hi):      # most entries miss a given tile: skip their block work
                q += tl.where(tok == t, tl.load(q_ptr + j).to(tl.float32), 0.0)
            j += 1
    return q


@triton.jit
def residual_scores(x, log_final, live, q, g):
    """Gumbel scores of the residual max(0, p - q) and of p itself (the fallback where the residual is
    empty), and the block's residual mass. log(p) is taken as x - log_final where q is 0 (exact, no
    underflow), log(p - q) elsewhere."""
    lp = x - log_final
    resid = tl.where(live, tl.maximum(tl.exp(lp) - q, 0.0), 0.0)
    lr = tl.where(q > 0, tl.log(resid), lp)
    s_resid = tl.where(live & (lr > float("-inf")), lr + g, float("-inf"))
    s_p = tl.where(live, lp + g, float("-inf"))
    return s_resid, s_p, tl.sum(resid)


@triton.jit
def argmax_lowest(score, tok, V):
    """(best score, lowest token id reaching it) of a block; ties go to the lower id, as the reference."""
    best = tl.max(score)
    return best, tl.min(tl.where(score == best, tok, V))


@triton.jit
def residual_full_vocab(logits_ptr, stride_row, V, row, slot, flags,
                        mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                        rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                        pend_ptr, n_pend, log_final, seed, pos, d, q_ptr, q_ids_ptr, K, Z,
                        BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                        HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, DRAFT: tl.constexpr):
    """The residual draw of an untruncated row, whose p spans the whole vocabulary: one pass over the
    row's tokens keeping the best residual score and the best fallback score (sub-tiles ascend, so a
    strict improvement keeps the lower id on ties). Sub-tiles of at most 2**11 tokens: a stage-1 tile
    of 2**13 with all this pass's vectors live spilled registers in the sm_90 compile."""
    SUB_LOG2: tl.constexpr = BLOCK_LOG2 if BLOCK_LOG2 < 11 else 11
    n_sub = Z * 2 ** (BLOCK_LOG2 - SUB_LOG2)
    best_r = float("-inf")
    best_p = float("-inf")
    tok_r = tl.full([], 0, tl.int64)
    tok_p = tl.full([], 0, tl.int64)
    mass = 0.0
    t = 0
    while t < n_sub:
        _raw, x, offs, inb, bad, _keys = processed_tile(
            logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, prompt_mask_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, True)
        live = inb & ~bad & (x > float("-inf"))
        start = t.to(tl.int64) * (2 ** SUB_LOG2)
        q = draft_q(offs, live, d, q_ptr, q_ids_ptr, K, start, start + 2 ** SUB_LOG2, DRAFT)
        s_r, s_p, m_t = residual_scores(x, log_final, live, q, gumbel_noise(seed, pos, STREAM_RESIDUAL, offs))
        b_r, i_r = argmax_lowest(s_r, offs, V)
        b_p, i_p = argmax_lowest(s_p, offs, V)
        tok_r = tl.where(b_r > best_r, i_r, tok_r)
        tok_p = tl.where(b_p > best_p, i_p, tok_p)
        best_r = tl.maximum(best_r, b_r)
        best_p = tl.maximum(best_p, b_p)
        mass += m_t
        t += 1
    return tl.where(mass > 0, tok_r, tok_p)


# Bits of a row's result word in scratch (verify_row -> finish_request).
ROW_OK = tl.constexpr(1)
ROW_ACCEPT = tl.constexpr(2)
ROW_EXACT = tl.constexpr(4)


@triton.jit
def verify_row(logits_ptr, stride_row, V, b, l, n_b, slot, flags, seed, pos,
               mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
               rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
               top_k_ptr, top_p_ptr, log_min_p_ptr,
               pend, q_row, q_ids_row, K, cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, Z,
               G, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
               KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
               NEG_INF_KEY: tl.constexpr, DRAFT: tl.constexpr, EXACT_UNTRUNCATED: tl.constexpr):
    """What target row l of request b does if the walk reaches it (module docstring). Returns its
    token (the accepted draft, the residual or argmax token, or the bonus), its result bits (ROW_*)
    and the token's log-probability (NaN if not asked)."""
    C: tl.constexpr = 2 ** C_LOG2
    NEG_INF: tl.constexpr = float("-inf")
    row = b * G + l
    lane = tl.arange(0, C)
    zeros2 = tl.zeros([2], tl.int32)
    idx, _real, _raw, x, keep, log_final, lse_all, row_ok, row_exact, _dropped, untruncated, _thr, _rv = row_distribution(
        logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
        rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
        top_k_ptr, top_p_ptr, log_min_p_ptr, cand_ptr, stats_ptr, refill_ptr, Z,
        Z_LOG2, E_LOG2, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, NEG_INF_KEY, EXACT_UNTRUNCATED,
        pend, l, True)
    bonus = l == n_b
    d = tl.load(pend + l, mask=l < n_b, other=-1).to(tl.int64)
    d_ok = (d >= 0) & (d < V)       # an unchecked device tensor may hold anything: never accepted
    d_safe = tl.where(d_ok, d, 0)
    first = _at(idx, lane, 0)
    tok = first
    accept = (first == d) & ~bonus          # the greedy rule; stochastic rows decide below
    if row_ok & ((flags & GREEDY) == 0):
        if bonus:
            if untruncated:
                # stage 1's full-vocabulary Gumbel-max of this row (sampling stream, position pos)
                tok = untruncated_token(best_ptr, best_idx_ptr, row, Z, V, Z_LOG2)
            else:
                score = tl.where(keep, x + gumbel_noise(seed, pos, STREAM_SAMPLE, idx), NEG_INF)
                _s, tok = argmax_lowest(score, idx, V)
        else:
            if untruncated:
                _raw_d, x_d = token_values(d_safe, logits_ptr, stride_row, V, row, slot, flags, mask_ptr,
                                           mask_stride, prompt_mask_ptr, words, counts_ptr, rep_ptr, freq_ptr,
                                           pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                                           pend, l, HAS_MASK, MAX_BIAS)
                in_p = d_ok & (x_d > NEG_INF)
                p_d = tl.where(in_p, tl.exp(x_d - log_final), 0.0)
            else:
                match = keep & (idx == d)
                in_p = tl.sum(match.to(tl.int32)) > 0
                p_d = tl.sum(tl.where(match, tl.exp(x - log_final), 0.0))
            q_d = tl.max(draft_q(d_safe + zeros2, zeros2 == 0, d_safe, q_row, q_ids_row, K, 0, V, DRAFT))
            u = tl.max(philox_uniform(seed, pos, STREAM_ACCEPT, zeros2))
            accept = in_p & (u * q_d <= p_d)
            tok = d_safe
            if ~accept:
                if untruncated:
                    tok = residual_full_vocab(
                        logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, prompt_mask_ptr,
                        words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr,
                        bias_count_ptr, temp_ptr, pend, l, log_final, seed, pos, d, q_row, q_ids_row, K, Z,
                        BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, DRAFT)
                else:
                    q_c = draft_q(idx, keep, d, q_row, q_ids_row, K, 0, V, DRAFT)
                    s_r, s_p, mass = residual_scores(x, log_final, keep, q_c,
                                                     gumbel_noise(seed, pos, STREAM_RESIDUAL, idx))
                    _b, tok_r = argmax_lowest(s_r, idx, V)
                    _b, tok_p = argmax_lowest(s_p, idx, V)
                    tok = tl.where(mass > 0, tok_r, tok_p)
    lp = tl.full((), float("nan"), tl.float32)
    if (flags & LOGPROBS) != 0:
        raw_t, x_t = token_values(tl.where(row_ok, tok, 0), logits_ptr, stride_row, V, row, slot, flags,
                                  mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr, rep_ptr, freq_ptr,
                                  pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                                  pend, l, HAS_MASK, MAX_BIAS)
        if (flags & LOGPROBS_PROCESSED) != 0:
            lp = x_t - log_final
        else:
            lp = raw_t - _combine(stats_ptr, row, Z, 2, 2 ** Z_LOG2)
    res = (row_ok.to(tl.int32) * ROW_OK + accept.to(tl.int32) * ROW_ACCEPT
           + row_exact.to(tl.int32) * ROW_EXACT)
    return tok, res, lp


@triton.jit
def finish_request(b, G, n_b, slot, flags, V, counts_ptr, res_tok_ptr, res_bits_ptr, res_lp_ptr,
                   tokens_ptr, n_emit_ptr, n_acc_ptr, valid_ptr, logprob_ptr, exact_ptr, G_PAD: tl.constexpr):
    """The chain walk over request b's row results (rows 0..n_b): accept while a row is valid and
    accepted its draft, stop at the first that is not; emit the rows up to there (the stopping row
    only if valid); count the emitted tokens into the slot. The loads are volatile: other programs
    wrote these words, and this program must not see a stale cached copy."""
    g_lane = tl.arange(0, G_PAD)
    reached = g_lane <= n_b
    tok = tl.load(res_tok_ptr + b * G + g_lane, mask=reached, other=-1, volatile=True)
    res = tl.load(res_bits_ptr + b * G + g_lane, mask=reached, other=0, volatile=True)
    lp = tl.load(res_lp_ptr + b * G + g_lane, mask=reached, other=float("nan"), volatile=True)
    row_ok = (res & ROW_OK) != 0
    go_on = row_ok & ((res & ROW_ACCEPT) != 0) & (g_lane < n_b)
    stop = tl.min(tl.where(reached & ~go_on, g_lane, G_PAD))   # row n_b (the bonus) always stops
    stop_ok = tl.sum((row_ok & (g_lane == stop)).to(tl.int32))
    emitted = (g_lane < stop) | ((g_lane == stop) & row_ok)
    row_exact = ((res & ROW_EXACT) != 0) | ~row_ok
    n_emit = (stop + stop_ok).to(tl.int64)
    active = (flags & ACTIVE) != 0
    if active:
        tl.atomic_add(counts_ptr + slot * V + tok, 1, mask=emitted)
    tl.store(tokens_ptr + b * G + g_lane, tl.where(emitted, tok, -1), mask=g_lane < G)
    tl.store(logprob_ptr + b * G + g_lane, tl.where(emitted, lp, float("nan")), mask=g_lane < G)
    tl.store(n_emit_ptr + b, n_emit)
    tl.store(n_acc_ptr + b, stop.to(tl.int64))
    tl.store(valid_ptr + b, (active & (stop_ok > 0)).to(tl.int8))
    tl.store(exact_ptr + b, (tl.sum((row_exact | (g_lane > stop)).to(tl.int32)) == G_PAD).to(tl.int8))


@triton.jit
def verify_stage2(logits_ptr, stride_row, V, req_slots_ptr, max_slots, req_pos_ptr, flags_ptr,
                  mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
                  rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                  top_k_ptr, top_p_ptr, log_min_p_ptr, seed_ptr,
                  drafts_ptr, gamma, n_draft_ptr, q_ptr, q_stride_b, q_stride_l, q_ids_ptr, qi_stride_b, qi_stride_l, K,
                  cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, Z,
                  res_tok_ptr, res_bits_ptr, res_lp_ptr, arrived_ptr,
                  tokens_ptr, n_emit_ptr, n_acc_ptr, valid_ptr, logprob_ptr, exact_ptr,
                  G_PAD: tl.constexpr, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr,
                  BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                  HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, NEG_INF_KEY: tl.constexpr,
                  DRAFT: tl.constexpr, EXACT_UNTRUNCATED: tl.constexpr):
    # One program per target row (module docstring); arrived_ptr holds one zeroed counter per request.
    row = tl.program_id(0).to(tl.int64)
    G = gamma + 1
    b = row // G
    l = row - b * G
    slot, flags = row_slot(req_slots_ptr, flags_ptr, b, max_slots)
    # A device tensor of draft counts is not checked on the host: clamp it into 0..γ.
    n_b = tl.minimum(tl.maximum(tl.load(n_draft_ptr + b).to(tl.int64), 0), gamma)
    if l <= n_b:                            # rows past a ragged request's drafts only check in
        tok, res, lp = verify_row(
            logits_ptr, stride_row, V, b, l, n_b, slot, flags, tl.load(seed_ptr + slot), tl.load(req_pos_ptr + b) + l,
            mask_ptr, mask_stride, prompt_mask_ptr, words, counts_ptr,
            rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            top_k_ptr, top_p_ptr, log_min_p_ptr, drafts_ptr + b * gamma,
            q_ptr + b * q_stride_b + l * q_stride_l, q_ids_ptr + b * qi_stride_b + l * qi_stride_l, K,
            cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, Z, G,
            Z_LOG2, E_LOG2, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, NEG_INF_KEY, DRAFT,
            EXACT_UNTRUNCATED)
        tl.store(res_tok_ptr + row, tok)
        tl.store(res_bits_ptr + row, res)
        tl.store(res_lp_ptr + row, lp)
    # Every thread's stores above happen before the release below (the barrier orders them within the
    # program, the acq_rel atomic publishes them to the program that arrives last).
    tl.debug_barrier()
    if tl.atomic_add(arrived_ptr + b, 1, sem="acq_rel") == G - 1:
        tl.store(arrived_ptr + b, 0)        # every row of b has arrived: ready for the next launch
        finish_request(b, G, n_b, slot, flags, V, counts_ptr, res_tok_ptr, res_bits_ptr, res_lp_ptr,
                       tokens_ptr, n_emit_ptr, n_acc_ptr, valid_ptr, logprob_ptr, exact_ptr, G_PAD)
