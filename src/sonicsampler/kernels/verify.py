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

Rows whose set reaches past the candidates are exact through passes over the whole row, as in the
sampler (kernels/long_rows.py): untruncated rows (p_l(d) from the full-vocabulary normalizer, the
bonus token stage 1's full-vocabulary Gumbel-max, a residual draw one pass), and every truncated set
beyond the bound (min-p, top-k above the bound, top-p, in any combination and dtype): search passes
find the set's cuts, one more pass gives its normalizer, whether d is in it and the bonus draw, and
a rejected draft costs one more for the residual. Only `allow_bounded_approximation` leaves rows
inexact (reported, `exact`).

Precision: p_l, q_l and the residual are fp32 here, float64 in the reference, so the two can differ
where u·q(d) lies within float rounding of p(d), or where two residual scores are that close.

Registers: the passes over the row walk 2**10-token sub-tiles whatever stage 1's tile (at a tile of
2**13 with the residual pass's vectors live, the sm_90 compile spilled about 500 bytes per thread).
"""
import triton
import triton.language as tl

from .. import indicators as bits
from .draft import argmax_lowest, draft_q, residual_scores
from .long_rows import DIGITS, long_set_bound, long_set_kinds, long_set_pass, set_head
from .pdl import wait_for_previous
from .prologue import count_output
from .rng import gumbel_noise, philox_uniform
from .sample import chosen_values, row_distribution, row_slot, token_logprobs, untruncated_token
from .tile import token_values

ACTIVE = tl.constexpr(bits.ACTIVE)
GREEDY = tl.constexpr(bits.GREEDY)
LOGPROBS = tl.constexpr(bits.LOGPROBS)

STREAM_SAMPLE = tl.constexpr(0)
STREAM_ACCEPT = tl.constexpr(1)
STREAM_RESIDUAL = tl.constexpr(2)


# Bits of a row's result word in scratch (verify_row -> finish_request).
ROW_OK = tl.constexpr(1)
ROW_ACCEPT = tl.constexpr(2)
ROW_EXACT = tl.constexpr(4)


@triton.jit
def verify_row(logits_ptr, stride_row, V, b, l, n_b, slot, flags, seed, pos,
               mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
               rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
               top_k_ptr, top_p_ptr, log_min_p_ptr,
               pend, q_row, q_ids_row, K, cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, hist_row, Z,
               n_logprobs_ptr, raw_lse_ptr, top_ids_row, top_lp_row, N_TOP,
               G, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
               LONG_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
               MAX_BIAS: tl.constexpr, NEG_INF_KEY: tl.constexpr, DRAFT: tl.constexpr,
               EXACT_UNTRUNCATED: tl.constexpr,
               TOP_PAD: tl.constexpr, RAW_TOP_FROM_CANDIDATES: tl.constexpr, TOP_N: tl.constexpr,
               RAW_KEYS: tl.constexpr = False, REFILL_CALL: tl.constexpr = False):
    """What target row l of request b does if the walk reaches it (module docstring). Returns its
    token (the accepted draft, the residual or argmax token, or the bonus), its result bits (ROW_*)
    and the token's log-probability (NaN if not asked); stores the row's top-n ids and
    log-probabilities at top_ids_row / top_lp_row (sample.token_logprobs)."""
    NEG_INF: tl.constexpr = float("-inf")
    row = b * G + l
    zeros2 = tl.zeros([2], tl.int32)
    n_top = tl.load(n_logprobs_ptr + slot)   # before the chain below, which would wait for it at its end
    (idx, real, raw_c, x, keep, log_final, lse_all, row_ok, row_exact, _dropped, untruncated, thr, rank_val,
     first, m0, _full, raw_lse, w_lo, hi_key, _spec, _m_spec) = row_distribution(
        logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
        rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
        top_k_ptr, top_p_ptr, log_min_p_ptr, cand_ptr, stats_ptr, refill_ptr, Z,
        Z_LOG2, E_LOG2, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, NEG_INF_KEY, EXACT_UNTRUNCATED,
        pend, l, True, RAW_KEYS=RAW_KEYS, REFILL_CALL=REFILL_CALL)
    bonus = l == n_b
    d = tl.load(pend + l, mask=l < n_b, other=-1).to(tl.int64)
    d_ok = (d >= 0) & (d < V)       # an unchecked device tensor may hold anything: never accepted
    d_safe = tl.where(d_ok, d, 0)
    tok = first
    accept = (first == d) & ~bonus          # the greedy rule; stochastic rows decide below
    # Sets the candidates cannot hold: exact through passes over the row (kernels/long_rows.py); a
    # greedy row takes them only for its processed log-probabilities' normalizer. Untruncated rows
    # keep every token (trivial cuts, thr -inf) for their residual pass.
    long_set, search_k, search_p = long_set_kinds(flags, row_exact, row_ok, EXACT_UNTRUNCATED)
    row_exact = row_exact | long_set
    lo_k = tl.full((), -1, tl.int64)
    f_hi_k = tl.full((), 0.0, tl.float32)
    target_k = tl.full((), float("inf"), tl.float32)
    lo, f_hi, target = lo_k, f_hi_k, target_k
    d_in = untruncated
    drawn = first
    if long_set:
        # The set's cuts, then one pass: its normalizer, whether d is in it, and the bonus draw.
        lo_k, f_hi_k, target_k, lo, f_hi, target = long_set_bound(
            logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m0, tl.load(top_p_ptr + slot), tl.load(top_k_ptr + slot), search_k, search_p, w_lo, hi_key,
            hist_row, LONG_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend, l, True)
        drawn, log_final, d_in = long_set_pass(
            logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            thr, m0, lo_k, f_hi_k, target_k, lo, f_hi, target, seed, pos, STREAM_SAMPLE, d_safe, False, 0.0,
            q_row, q_ids_row, K, LONG_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, DRAFT, pend, l, True)
        keep = set_head(keep, x, m0, target, search_p)   # the candidates' part, for top-n
    if row_ok & ((flags & GREEDY) == 0):
        whole_row = untruncated | long_set   # p's support reaches past the candidates
        if bonus:
            if untruncated:
                # stage 1's full-vocabulary Gumbel-max of this row (sampling stream, position pos)
                tok = untruncated_token(best_ptr, best_idx_ptr, row, Z, V, Z_LOG2)
            elif long_set:
                tok = drawn
            else:
                score = tl.where(keep, x + gumbel_noise(seed, pos, STREAM_SAMPLE, idx), NEG_INF)
                _s, tok = argmax_lowest(score, idx)
        else:
            if whole_row:
                _raw_d, x_d = token_values(d_safe, logits_ptr, stride_row, V, row, slot, flags, mask_ptr,
                                           mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr,
                                           pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                                           HAS_MASK, MAX_BIAS, pend, l, True)
                in_p = d_ok & d_in & (x_d > NEG_INF)
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
                if whole_row:
                    tok, _lf, _in = long_set_pass(
                        logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words,
                        counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                        temp_ptr, thr, m0, lo_k, f_hi_k, target_k, lo, f_hi, target, seed, pos, STREAM_RESIDUAL,
                        d_safe, True,
                        log_final, q_row, q_ids_row, K, LONG_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, DRAFT, pend,
                        l, True)
                else:
                    q_c = draft_q(idx, keep, d, q_row, q_ids_row, K, 0, V, DRAFT)
                    s_r, s_p, mass = residual_scores(x, log_final, keep, q_c,
                                                     gumbel_noise(seed, pos, STREAM_RESIDUAL, idx))
                    _b, tok_r = argmax_lowest(s_r, idx)
                    _b, tok_p = argmax_lowest(s_p, idx)
                    tok = tl.where(mass > 0, tok_r, tok_p)
    raw_t = tl.full((), 0.0, tl.float32)
    x_t = raw_t
    if (flags & LOGPROBS) != 0:     # the token's own values (it need not be a candidate)
        raw_t, x_t = chosen_values(tl.where(row_ok, tok, 0), idx, real, raw_c, x, logits_ptr, stride_row, V, row,
                                   slot, flags, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr,
                                   freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                                   HAS_MASK, MAX_BIAS, pend, l, True)
    lp = token_logprobs(
        logits_ptr, stride_row, V, row, flags, n_top, raw_lse, raw_lse_ptr, refill_ptr, Z,
        idx, real, raw_c, x, keep, rank_val, log_final, row_ok, raw_t, x_t,
        top_ids_row, top_lp_row, N_TOP,
        Z_LOG2, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, NEG_INF_KEY, TOP_PAD, RAW_TOP_FROM_CANDIDATES, TOP_N, HAS_MASK)
    res = (row_ok.to(tl.int32) * ROW_OK + accept.to(tl.int32) * ROW_ACCEPT
           + row_exact.to(tl.int32) * ROW_EXACT)
    return tok, res, lp


@triton.jit
def finish_request(b, G, n_b, slot, flags, V, counts_ptr, token_bits_ptr, words, res_tok_ptr, res_bits_ptr, res_lp_ptr,
                   tokens_ptr, n_emit_ptr, n_acc_ptr, valid_ptr, logprob_ptr, exact_ptr, G_PAD: tl.constexpr):
    """The chain walk over request b's row results (rows 0..n_b): accept while a row is valid and
    accepted its draft, stop at the first that is not; emit the rows up to there (the stopping row
    only if valid); count the emitted tokens into the slot. Returns the number emitted. The loads are
    volatile: other programs wrote these words, and this program must not see a stale cached copy."""
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
        count_output(counts_ptr, token_bits_ptr, words, slot, V, tok, emitted)
    tl.store(tokens_ptr + b * G + g_lane, tl.where(emitted, tok, -1), mask=g_lane < G)
    tl.store(logprob_ptr + b * G + g_lane, tl.where(emitted, lp, float("nan")), mask=g_lane < G)
    tl.store(n_emit_ptr + b, n_emit)
    tl.store(n_acc_ptr + b, stop.to(tl.int64))
    tl.store(valid_ptr + b, (active & (stop_ok > 0)).to(tl.int8))
    tl.store(exact_ptr + b, (tl.sum((row_exact | (g_lane > stop)).to(tl.int32)) == G_PAD).to(tl.int8))
    return n_emit


@triton.jit
def verify_stage2(logits_ptr, stride_row, V, req_slots_ptr, max_slots, req_pos_ptr, flags_ptr,
                  mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                  rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                  top_k_ptr, top_p_ptr, log_min_p_ptr, seed_ptr,
                  drafts_ptr, gamma, n_draft_ptr, q_ptr, q_stride_b, q_stride_l, q_ids_ptr, qi_stride_b, qi_stride_l, K,
                  cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, hist_ptr, Z,
                  res_tok_ptr, res_bits_ptr, res_lp_ptr, arrived_ptr,
                  tokens_ptr, n_emit_ptr, n_acc_ptr, valid_ptr, logprob_ptr, exact_ptr,
                  n_logprobs_ptr, raw_lse_ptr, top_ids_ptr, top_lp_ptr, N_TOP,
                  G_PAD: tl.constexpr, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr,
                  BLOCK_LOG2: tl.constexpr, LONG_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                  HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, NEG_INF_KEY: tl.constexpr,
                  DRAFT: tl.constexpr, EXACT_UNTRUNCATED: tl.constexpr,
                  TOP_PAD: tl.constexpr, RAW_TOP_FROM_CANDIDATES: tl.constexpr, TOP_N: tl.constexpr,
                  PDL: tl.constexpr = False, RAW_KEYS: tl.constexpr = False, REFILL_CALL: tl.constexpr = False):
    # One program per target row (module docstring); arrived_ptr holds one zeroed counter per request.
    row = tl.program_id(0).to(tl.int64)
    G = gamma + 1
    b = row // G
    l = row - b * G
    slot, flags = row_slot(req_slots_ptr, flags_ptr, b, max_slots)
    # A device tensor of draft counts is not checked on the host: clamp it into 0..γ.
    n_b = tl.minimum(tl.maximum(tl.load(n_draft_ptr + b).to(tl.int64), 0), gamma)
    seed = tl.load(seed_ptr + slot)
    pos = tl.load(req_pos_ptr + b) + l
    wait_for_previous(PDL)   # everything below reads stage 1's output or writes the counts it reads
    if l <= n_b:                            # rows past a ragged request's drafts only check in
        tok, res, lp = verify_row(
            logits_ptr, stride_row, V, b, l, n_b, slot, flags, seed, pos,
            mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
            rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            top_k_ptr, top_p_ptr, log_min_p_ptr, drafts_ptr + b * gamma,
            q_ptr + b * q_stride_b + l * q_stride_l, q_ids_ptr + b * qi_stride_b + l * qi_stride_l, K,
            cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, hist_ptr + row * DIGITS, Z, n_logprobs_ptr,
            raw_lse_ptr,
            top_ids_ptr + row * N_TOP, top_lp_ptr + row * N_TOP, N_TOP, G,
            Z_LOG2, E_LOG2, C_LOG2, BLOCK_LOG2, LONG_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, NEG_INF_KEY, DRAFT,
            EXACT_UNTRUNCATED, TOP_PAD, RAW_TOP_FROM_CANDIDATES, TOP_N, RAW_KEYS, REFILL_CALL)
        tl.store(res_tok_ptr + row, tok)
        tl.store(res_bits_ptr + row, res)
        tl.store(res_lp_ptr + row, lp)
        # verify_row stored the top-n straight to the output rows; the last to arrive pads those not
        # emitted.
    # Every thread's stores above happen before the release below (the barrier orders them within the
    # program, the acq_rel atomic publishes them to the program that arrives last).
    tl.debug_barrier()
    if tl.atomic_add(arrived_ptr + b, 1, sem="acq_rel") == G - 1:
        tl.store(arrived_ptr + b, 0)        # every row of b has arrived: ready for the next launch
        n_emit = finish_request(b, G, n_b, slot, flags, V, counts_ptr, token_bits_ptr, words, res_tok_ptr,
                                res_bits_ptr, res_lp_ptr, tokens_ptr, n_emit_ptr, n_acc_ptr, valid_ptr, logprob_ptr,
                                exact_ptr, G_PAD)
        g2 = tl.arange(0, G_PAD)[:, None]
        t2 = tl.arange(0, TOP_PAD)[None, :]
        pad = (g2 >= n_emit) & (g2 < G) & (t2 < N_TOP)
        at = (b * G + g2) * N_TOP + t2
        tl.store(top_ids_ptr + at, tl.full((G_PAD, TOP_PAD), -1, tl.int64), mask=pad)
        tl.store(top_lp_ptr + at, tl.full((G_PAD, TOP_PAD), float("-inf"), tl.float32), mask=pad)
