"""The fused sampler's two stages (SEMANTICS.md sections 1-4).

Stage 1, one program per (tile, row): the slot's prologue in registers, the tile's statistics (max and
sum of exponentials of the processed and, for raw log-probability rows, raw logits; whether a processed
value is NaN or +inf), and the tile's top E candidates (E <= C) ranked on the processed values rounded
to the input dtype (fp32 inputs rank on fp32), as sorted 64-bit row keys.

Stage 2, one program per row: merges the tile lists into the row's best C candidates (refilling
saturated tiles exactly as the top-k does, kernels/topk.py), recomputes their
fp32 processed values (same prologue), applies min-p, top-k and top-p, draws the Gumbel-max token with
in-kernel Philox noise (greedy rows take the first candidate), writes the log-probabilities with
full-vocabulary normalizers from the statistics, the per-row `exact` flag and the mass a bounded
candidate set drops, and counts the token into the slot's output counts.

Rows whose processing is at most a temperature (raw_ordered) rank their raw values in stage 1 and
convert only the keys each tile emits: the division and its rounding are monotone (see raw_ordered and
docs/ARCHITECTURE.md).

Greedy rows that need only their argmax (greedy_alone: issue 4's scalar argmax path) build no
candidates: each stage-1 tile reports its argmax instead, and stage 2 takes the best over tiles.

Untruncated stochastic rows (no top-k, top-p or min-p: the RL-rollout case) are exact at any size:
stage 1 draws the Philox Gumbel noise for every token of the tile and reports its best perturbed score,
and stage 2 takes the best over tiles, the reference's Gumbel-max over the whole vocabulary. (With
`allow_bounded_approximation` they take the bounded path below instead and are flagged.)

Exactness of the bounded set, decided per row on the device: the survivors of truncation lie among the
C candidates when top-k is active (k <= C), when min-p's threshold cuts inside the candidates, when
the row has at most C selectable tokens, or when top-p's mass is reached inside the candidates
(measured against the exact full-vocabulary normalizer, so only when neither min-p nor top-k acts
before top-p). Otherwise the row is flagged inexact and the mass outside the candidates is reported.
"""
import triton
import triton.language as tl

from .. import indicators as bits
from . import INTERPRETED
from .draft import argmax_lowest
from .keys import (bits_from_key16, bits_from_key32, row_key_ceiling, row_key_index, row_key_to_tile_key,
                   row_key_value, value_key16, value_key32)
from .prologue import bits16_to_f32, count_output, div_exact, process, ranking_bits16
from .rng import gumbel_noise, gumbel_noise_tile
from .select import select_top_sorted
from .rank import ranks
from .topk import (emit_tile_candidates, quotient_list, flat_program, group_bits_of, groups_topk, last_emitted,
                   load_tile_keys, merge_tile_above, next_marked, selection_scratch, store_tile_list, tile_lasts)
from .pdl import let_next_start, wait_for_previous
from .long_rows import long_set_kinds, nucleus_low_key, nucleus_start, set_head
from .shared_sets import announce, batch_may_exceed, post_first_pass, shared_long_set, wide_words
from .tile import load_tile, processed_tile, tile_keys, token_values

ACTIVE = tl.constexpr(bits.ACTIVE)
GREEDY = tl.constexpr(bits.GREEDY)
TEMPERATURE = tl.constexpr(bits.TEMPERATURE)
REORDERING = tl.constexpr(bits.REORDERING)
TOP_K = tl.constexpr(bits.TOP_K)
TOP_P = tl.constexpr(bits.TOP_P)
MIN_P = tl.constexpr(bits.MIN_P)
LOGPROBS = tl.constexpr(bits.LOGPROBS)
LOGPROBS_PROCESSED = tl.constexpr(bits.LOGPROBS_PROCESSED)
UNTRUNCATED_MASK = tl.constexpr(bits.NOT_UNTRUNCATED)
TOP_LOGPROBS = tl.constexpr(bits.TOP_LOGPROBS)
NORMALIZER_FREE = tl.constexpr(bits.NORMALIZER_FREE)
N_STATS = tl.constexpr(5)   # processed max, processed sum-exp, raw max, raw sum-exp, NaN/+inf flag
LOG2E = tl.constexpr(1.4426950408889634)
FAST_EXP2 = tl.constexpr(not INTERPRETED)


@triton.jit
def without_candidates(flags, SKIP_UNTRUNCATED: tl.constexpr):
    """Whether stage 2 selects no candidates for the row (SKIP_UNTRUNCATED: the launch returns no draft
    distributions, and the bounded approximation was not asked for): an untruncated row that asks for no
    top-n log-probabilities (untruncated_alone) or a greedy row that needs only its argmax
    (greedy_alone). Its token is the best of stage 1's per-tile scores (the full-vocabulary Gumbel-max,
    or the argmax), its validity and its own log-probability come from the statistics, so stage 1
    emits no candidates for it: the RL-rollout row costs its noise, not its noise and a top-k, and a
    greedy row its argmax."""
    if SKIP_UNTRUNCATED:
        return untruncated_alone(flags, SKIP_UNTRUNCATED) | greedy_alone(flags, SKIP_UNTRUNCATED)
    else:
        return flags < 0   # never


@triton.jit
def untruncated_alone(flags, SKIP_UNTRUNCATED: tl.constexpr):
    """An untruncated row that asks for no top-n log-probabilities (see without_candidates)."""
    if SKIP_UNTRUNCATED:
        return (flags & (UNTRUNCATED_MASK | TOP_LOGPROBS)) == 0
    else:
        return flags < 0   # never


@triton.jit
def greedy_alone(flags, SKIP_UNTRUNCATED: tl.constexpr):
    """A greedy row whose outputs need nothing but its argmax (issue 4's scalar argmax path): no top-n
    log-probabilities, and no processed log-probability over a truncated set (whose normalizer needs
    the set). Its token, the first of the processed values rounded to the input dtype (ties to the
    lower index), is the best over tiles of each tile's argmax (stage 1, tile_argmax); its validity
    and log-probability come from the statistics, as an untruncated row's do. Without SKIP_UNTRUNCATED
    a constant False: those variants (verification's, the draft launches') compile no scalar path."""
    if SKIP_UNTRUNCATED:
        alone = (flags & (GREEDY | TOP_LOGPROBS)) == GREEDY
        return alone & (((flags & LOGPROBS_PROCESSED) == 0) | ((flags & (TOP_K | TOP_P | MIN_P)) == 0))
    else:
        return False


@triton.jit
def tile_argmax(keys, tile, BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                GROUPED: tl.constexpr):
    """A tile's best rank value (the processed value rounded to the input dtype, as the reference ranks)
    and the lowest token id holding it, from the keys alone (tile_keys' three layouts), in one
    reduction over the tile: the best key's inverted index is the lowest among equal values."""
    if KEY64:
        bk = tl.max(keys)
        return bits_from_key32(bk >> 32).to(tl.float32, bitcast=True), (0xFFFFFFFF - (bk & 0xFFFFFFFF)).to(tl.int32)
    else:
        if GROUPED:
            # The keys hold only 7 - j (j: the place in the group of 8): each group's best, then the
            # group's place added to make tile keys.
            gm = tl.max(keys, axis=1)
            local = tl.arange(0, keys.shape[0]) * 8 + 7 - (gm & 0xFFFF).to(tl.int32)
            bk = tl.max((gm & 0xFFFF0000) | (0xFFFF - local).to(tl.uint32))
        else:
            bk = tl.max(keys)
        best = bits16_to_f32(bits_from_key16(bk >> 16), IS_BF16)
        return best, tile.to(tl.int32) * (2 ** BLOCK_LOG2) + 0xFFFF - (bk & 0xFFFF).to(tl.int32)


@triton.jit
def row_slot(slots_ptr, flags_ptr, row, max_slots):
    """The row's slot and its indicator bits. A slot index outside the table (possible only when slots
    come as a device tensor, unchecked on the host) reads slot 0 with no bits set, so the row comes out
    invalid and touches nothing of any request."""
    s = tl.load(slots_ptr + row).to(tl.int64)
    ok = (s >= 0) & (s < max_slots)
    slot = tl.where(ok, s, 0)
    return slot, tl.where(ok, tl.load(flags_ptr + slot), 0)


@triton.jit
def _exp2_ftz(x):
    # MUFU's ex2 with .ftz: Triton's exp wraps each in three instructions of subnormal scaling, for
    # terms below 2**-126 that add nothing to a sum of terms up to 1.
    if FAST_EXP2:
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return tl.exp2(x)


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _max_propagating(x):
    """A tile's maximum, NaN if any value is NaN (tl.max skips NaN on the GPU): one instruction per value
    either way (max.NaN)."""
    return tl.reduce(x, None, _max_nan)


@triton.jit
def _max_sumexp_unmasked(x, free):
    """Max and sum of exp(x - max) of a tile with no lane mask: lanes past the vocabulary and masked
    tokens hold -inf and add 0. A NaN or +inf value makes the sum NaN (exp(NaN), or exp(inf - inf)),
    which is how stage 1 flags the row invalid without a per-lane test, and how a raw NaN or +inf
    that the processing masked still makes the raw normalizer NaN, as torch's log_softmax of the
    raw row is (SEMANTICS.md section 4, reference._logprob_vector).
    free (a NORMALIZER_FREE row): the maximum alone (NaN for a NaN value, +inf for +inf) and a sum of 1,
    which keeps "some value is finite" (stage 2's normalizer is then finite exactly when it was)."""
    m = _max_propagating(x)
    s = tl.full((), 1.0, tl.float32)
    if not free:
        m_safe = tl.where(m > float("-inf"), m, 0.0)
        s = tl.sum(_exp2_ftz((x - m_safe) * LOG2E))
    return m, s


@triton.jit
def raw_ordered(flags, EXACT_UNTRUNCATED: tl.constexpr):
    """Whether the row's tiles rank its raw values (in launches with RAW_KEYS: 16-bit logits, no grammar
    mask): no penalty or bias, so that its processing is at most a division by its temperature, a
    monotone map of the raw values; and not an exact untruncated row, whose noise needs the processed
    values themselves. Of such a row with a temperature, each tile emits its quotients' keys
    (topk.quotient_list): stage 2 sees processed keys, as from any other row."""
    if EXACT_UNTRUNCATED:
        return ((flags & REORDERING) == 0) & ((flags & UNTRUNCATED_MASK) != 0)
    else:
        return (flags & REORDERING) == 0


@triton.jit
def quotient_keyed(raw_order, flags):
    """Whether a raw_ordered row's tiles emit the quotients of their raw keys (it has a temperature;
    without one the raw keys are the processed ones): stage 1 converts them, stage 2's refill allows
    for what such a tile may hold back. One rule for both stages."""
    return raw_order & ((flags & TEMPERATURE) != 0)


@triton.jit
def _max_sumexp_quotients(raw, flags, inv_t_ptr, free):
    """_max_sumexp_unmasked of raw / t (t the row's temperature, 1 without the TEMPERATURE bit) from the
    raw values: the maximum is the quotient of the raw maximum (division rounds monotonically; NaN stays
    NaN, and a finite maximum whose quotient overflows gives +inf, as the processed value would), the
    terms exp2(raw * (log2(e) / t) - max * log2(e)), one fused multiply-add each."""
    m = _max_propagating(raw)
    c = tl.zeros((), tl.float32) + LOG2E
    if (flags & TEMPERATURE) != 0:
        inv = tl.load(inv_t_ptr)
        m = div_exact(m, inv)
        c = (inv * 1.4426950408889634).to(tl.float32)
    s = tl.full((), 1.0, tl.float32)
    if not free:
        m_safe = tl.where(m > float("-inf"), m, 0.0)
        s = tl.sum(_exp2_ftz(raw * c - m_safe * LOG2E))
    return m, s


@triton.jit
def sample_stage1(logits_ptr, stride_row, V, slots_ptr, max_slots, positions_ptr, flags_ptr,
                  mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                  rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr, seed_ptr,
                  cand_ptr, scratch_ptr, stats_ptr, best_ptr, best_idx_ptr, Z,
                  BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr, M_LOG2: tl.constexpr,
                  KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                  EXACT_UNTRUNCATED: tl.constexpr, STRATEGY: tl.constexpr,
                  drafts_ptr=None, rows_per_request=1, PENDING: tl.constexpr = False, PDL: tl.constexpr = False,
                  SKIP_UNTRUNCATED: tl.constexpr = False, RAW_KEYS: tl.constexpr = False):
    # PENDING (speculative verification, kernels/verify.py): rows come in groups of rows_per_request
    # = γ + 1 target rows of one request, whose γ draft tokens are at drafts_ptr (request-major); the
    # l-th row of a group also counts the first l draft tokens as output (its penalties see them).
    let_next_start(PDL)
    tile_id, row, tile = flat_program(Z)
    # slots_ptr / positions_ptr: per row, or with PENDING per request (row l of a request generates
    # its position + l), so that verification derives no per-row tensors on the host.
    req = row
    n_pend = 0
    pend_ptr = drafts_ptr
    if PENDING:
        req = row // rows_per_request
        n_pend = row % rows_per_request
        pend_ptr = drafts_ptr + req * (rows_per_request - 1)
    slot, flags = row_slot(slots_ptr, flags_ptr, req, max_slots)
    # -inf past the vocabulary: every processing step keeps it, so no lane mask lives through the tile
    # (tile_keys says what masks cost).
    # The extract strategy takes the tile as groups of 8 neighbours (kernels/topk.py groups_topk), with
    # each key's index bits a constant per register (tile_keys).
    GROUPED: tl.constexpr = STRATEGY == "extract" and not KEY64 and BLOCK_LOG2 > E_LOG2 + 3
    raw, offs, inb = load_tile(logits_ptr, stride_row, V, row, tile, BLOCK_LOG2, float("-inf"), GROUPED)
    st = stats_ptr + tile_id * N_STATS
    if (flags & LOGPROBS) != 0:
        # Before processing, so that the raw values need not stay live beside the processed ones.
        m_r, s_r = _max_sumexp_unmasked(raw, False)
        tl.store(st + 2, m_r)
        tl.store(st + 3, s_r)
    skip = untruncated_alone(flags, SKIP_UNTRUNCATED)   # greedy rows alone skip the emission further down
    # A row whose outputs need no full-vocabulary processed normalizer (NORMALIZER_FREE: a top-k within the
    # bound, or greedy without processed log-probabilities) takes each tile's maximum alone: no exponential
    # of processed values per token (raw log-probabilities' sum is taken above).
    free = (flags & NORMALIZER_FREE) != 0
    if RAW_KEYS:
        tl.static_assert(STRATEGY != "rank", "RAW_KEYS: the host leaves it off for the rank strategy")
        raw_order = raw_ordered(flags, EXACT_UNTRUNCATED)
        remap = quotient_keyed(raw_order, flags)
    else:
        raw_order = False
        remap = False
    if raw_order:
        # The row's processing is at most a division by its temperature, which keeps the raw order up
        # to ties its rounding creates: the tile ranks its raw values (no division per token) and
        # turns only the keys it emits into its quotients' keys (topk.quotient_list). The statistics
        # come from the raw values too: the maximum's quotient, and each term's exponent as one fused
        # multiply-add (its quotient within an ulp of the exact one: a sum's rounding, not a set's).
        x = raw    # untruncated rows, the only users of x below beside the keys, are never raw-ordered
        m_p, s_p = _max_sumexp_quotients(raw, flags, temp_ptr + slot, free)
    else:
        x = process(raw, offs, inb, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                    rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                    HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING,
                    tile.to(tl.int32) * (2 ** BLOCK_LOG2), 2 ** BLOCK_LOG2)
        m_p, s_p = _max_sumexp_unmasked(x, free)
    # The keys right away: building them after the untruncated branch, when the processed values are
    # dead, cost 6% at 128 rows on the H100 (run 37 against run 35). Rows without candidates build them
    # too: skipping them as well cost the top-k rows 12% at 128 rows (run 46, more spills under the cap).
    # One construction after both branches: one in each kept two sets of keys live (66 spill stores in
    # the sm_90 compile against 21).
    keys = tile_keys(x, offs, BLOCK_LOG2, KEY64, IS_BF16, GROUPED)
    tl.store(st + 0, m_p)
    tl.store(st + 1, s_p)
    # a NaN or +inf processed value (stage 2: invalid): a NaN sum, or (rows without the sum) a NaN maximum
    tl.store(st + 4, ((s_p != s_p) | (m_p != m_p) | (m_p == float("inf"))).to(tl.float32))
    if EXACT_UNTRUNCATED:
        if (flags & UNTRUNCATED_MASK) == 0:
            # No truncation: the token is the Gumbel-max over the whole vocabulary. Each tile reports
            # its best perturbed score and (lowest) index; stage 2 takes the best over tiles.
            seed = tl.load(seed_ptr + slot)
            pos = tl.load(positions_ptr + req) + n_pend
            noise = gumbel_noise_tile(seed, pos, 0, tile.to(tl.int64) * (2 ** BLOCK_LOG2), 2 ** BLOCK_LOG2, GROUPED)
            score = tl.where(x > float("-inf"), x + noise, float("-inf"))
            best = tl.max(score)
            tl.store(best_ptr + tile_id, best)
            tl.store(best_idx_ptr + tile_id, tl.min(tl.where(score == best, offs, V)))
    if ~skip:
        if greedy_alone(flags, SKIP_UNTRUNCATED):
            # The scalar argmax path: the tile's argmax (from its keys, in one reduction) in the
            # untruncated rows' slots instead of the E rounds of candidates. Here, where only rows that
            # build candidates build keys: taking it after this branch or from the processed values made
            # the compiler build every row's keys before the untruncated branch and spill them, and the
            # untruncated batch 13% slower at 128 rows (run 128f). A tile whose best rank is -inf reports
            # V; stage 2 walks the row if no tile did better (lowest_selectable).
            g_best, g_idx = tile_argmax(keys, tile, BLOCK_LOG2, KEY64, IS_BF16, GROUPED)
            tl.store(best_ptr + tile_id, g_best)
            tl.store(best_idx_ptr + tile_id, tl.where(g_best > float("-inf"), g_idx, V))
        elif GROUPED:
            # quotient_list loads the inverse temperature again (as _max_sumexp_quotients did): one load at
            # the top of the program, live throughout, cost the greedy mix 0.8 us at 128 rows (run 129f).
            store_tile_list(quotient_list(groups_topk(keys, group_bits_of(BLOCK_LOG2), 2 ** E_LOG2), remap,
                                          temp_ptr + slot, IS_BF16), tile, tile_id, cand_ptr, BLOCK_LOG2, E_LOG2, KEY64)
        else:
            emit_tile_candidates(keys, tile, tile_id, cand_ptr, scratch_ptr, BLOCK_LOG2, E_LOG2, M_LOG2, KEY64,
                                 STRATEGY, remap, temp_ptr + slot, IS_BF16)


@triton.jit
def _stat_pairs(stats_ptr, row, Z, which: tl.constexpr, ZP: tl.constexpr, live):
    """The row's per-tile (max, sum of exp(x - max)) pairs of statistic `which` (0 processed, 2 raw),
    (-inf, 0) where not `live`."""
    z = tl.arange(0, ZP)
    base = stats_ptr + (row * Z + z) * N_STATS + which
    return tl.load(base, mask=live, other=float("-inf")), tl.load(base + 1, mask=live, other=0.0)


@triton.jit
def nucleus_beyond(mm, lse_all, top_p, m_t, keys, lasts, C_LOG2: tl.constexpr, KEY64: tl.constexpr,
                   IS_BF16: tl.constexpr, NEG_INF_KEY: tl.constexpr):
    """Before the candidates are merged: whether a nucleus (top-p without top-k or min-p) certainly holds
    more than the C candidates, i.e. its best C tokens certainly weigh less than top_p, and the
    stabiliser m the candidates will give (the best rank value: mm, the largest processed value,
    rounded to the input dtype for 16-bit rows). Such a row's first search pass can then start before
    its candidates are merged (shared_sets.post_first_pass): ~9 µs of stage 2's chain in which helpers
    would idle (run 175). Two bounds of the best C tokens' weight (lse_all: the log-normalizer):
    - from stage 1's statistics alone, C times the best token's probability;
    - where that is not below top_p, from the tiles' emitted candidates, loaded unmerged: the best C
      tokens are emitted ones, whose weights sum to at most the emitted candidates' sum, or tokens a tile
      held back, at most C of them, each at most the largest of the tiles' last emitted values
      (`lasts`, tile_lasts). A candidate's value is its processed value rounded to 16 bits to nearest
      (or its quotient, RAW_KEYS): it is taken halfway to the next 16-bit value (keys.row_key_ceiling),
      which bounds the value it stands for (at logits near 25 the weight rises by at most 6%; run 205's
      version raised values by 2**-6 of their magnitude: up to 48% there). A nucleus whose flat tail
      holds its mass (thousands of tokens at temperature 1.5) has a best token weighing more than
      top_p / C, but its emitted candidates (608 at V = 151936 at 1 row, 1192 at 16) weigh a fraction
      of top_p. Its loads and sums cost a nucleus that fits the bound 1.2-1.6 µs before its candidates
      (run 208: top-p 0.9 at temperature 0.5), so they are skipped where the tiles' best tokens (m_t,
      stage 1's maxima) alone weigh top_p: the emitted candidates include them, so this bound cannot
      hold then (one reduction over the statistics already loaded, instead of the sums). The candidates
      (`keys`, spec_keys) are loaded with the statistics, so that their latency is off the chain.
    Both bounds are kept 2**-10 below top_p (relatively), far beyond the rounding of exp, log and fp32
    sums here and in row_distribution: a row posted here must be one that row_distribution finds beyond
    the bound (only then are its pass's words left as the next launch needs them: shared_sets.py)."""
    if KEY64:
        m = mm
    else:
        m = bits16_to_f32(ranking_bits16(mm, IS_BF16), IS_BF16)
    finite = (m > float("-inf")) & (m < float("inf"))
    beyond = mm - lse_all < tl.log(top_p) - C_LOG2 * 0.6931471805599453 - 2.0 ** -10
    if finite & ~beyond & (tl.sum(tl.exp(m_t - lse_all)) < top_p):
        w = tl.where((keys >> 32) > NEG_INF_KEY, tl.exp(row_key_ceiling(keys, KEY64, IS_BF16) - lse_all), 0.0)
        last = tl.max(lasts)
        w_last = tl.where((last >> 32) > NEG_INF_KEY, tl.exp(row_key_ceiling(last, KEY64, IS_BF16) - lse_all), 0.0)
        beyond = tl.sum(tl.sum(w, 1), 0) + (2 ** C_LOG2) * w_last < top_p * (1.0 - 2.0 ** -10)
    return beyond & finite, m


@triton.jit
def spec_keys(cand_ptr, row, Z, want, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr):
    """The row's tiles' emitted candidates, unmerged (Z x E words, 0 past the last tile), for
    nucleus_beyond's second bound where `want` (a row that may post early), else zeros unloaded."""
    E: tl.constexpr = 2 ** E_LOG2
    zz = tl.arange(0, 2 ** Z_LOG2)[:, None]
    ee = tl.arange(0, E)[None, :]
    return tl.load(cand_ptr + (row * Z + zz) * E + ee, mask=(zz < Z) & want, other=0)


@triton.jit
def _terms(m, s, mm):
    """Each tile's sum of exponentials rescaled to the largest max mm, and mm made finite."""
    mm_safe = tl.where(mm > float("-inf"), mm, 0.0)
    return tl.where(m == float("-inf"), 0.0, s * tl.exp(m - mm_safe)), mm_safe


@triton.jit
def _lse_of(total, mm_safe):
    # NaN stays NaN: a tile's sum is NaN when the row holds a NaN or +inf (_max_sumexp_unmasked; its
    # max may be NaN too where the maximum propagates NaN, as under the interpreter).
    return tl.where(total == 0, float("-inf"), mm_safe + tl.log(total))


@triton.jit
def _lse_of_pairs2(m, s, mm, m2, s2, mm2):
    """log(sum of exp) over the row's tiles of two statistics, from their (max, sum-exp) pairs and
    largest maxima, in one block reduction; -inf if nothing is finite, NaN if some tile's sum is NaN."""
    terms, mm_safe = _terms(m, s, mm)
    terms2, mm2_safe = _terms(m2, s2, mm2)
    total, total2 = tl.reduce((terms, terms2), 0, _sum2)
    return _lse_of(total, mm_safe), _lse_of(total2, mm2_safe)


@triton.jit
def _max_sum_max(a1, n1, b1, a2, n2, b2):
    return tl.maximum(a1, a2), n1 + n2, tl.maximum(b1, b2)


@triton.jit
def _sum2(a1, b1, a2, b2):
    return a1 + a2, b1 + b2


@triton.jit
def _sum3(a1, b1, c1, a2, b2, c2):
    return a1 + a2, b1 + b2, c1 + c2


@triton.jit
def _at3(lane, i, a, b, c):
    """Elements i of three 1-D blocks (scalars), in one block reduction."""
    on = lane == i
    return tl.reduce((tl.where(on, a, tl.zeros_like(a)), tl.where(on, b, tl.zeros_like(b)),
                      tl.where(on, c, tl.zeros_like(c))), 0, _sum3)


@triton.jit
def _at(v, lane, i):
    """Element i of a 1-D block (a scalar)."""
    return tl.sum(tl.where(lane == i, v, tl.zeros_like(v)))


@triton.jit
def untruncated_token(best_ptr, best_idx_ptr, row, Z, V, Z_LOG2: tl.constexpr):
    """An untruncated row's token: the best over tiles of stage 1's per-tile best perturbed scores
    (lowest index on ties), i.e. the Gumbel-max over the whole vocabulary."""
    zt = tl.arange(0, 2 ** Z_LOG2)
    b = tl.load(best_ptr + row * Z + zt, mask=zt < Z, other=float("-inf"))
    bi = tl.load(best_idx_ptr + row * Z + zt, mask=zt < Z, other=V)
    return tl.min(tl.where(b == tl.max(b), bi, V))


@triton.jit
def lowest_selectable(logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words,
                      counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                      Z, BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
                      HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr):
    """The lowest token id of the row whose processed value is above -inf (V if none), tile by tile."""
    found = V
    t = 0
    while (t < Z) & (found == V):   # a while loop: the interpreter cannot iterate range() over a runtime bound
        x, offs, _i, _b, _k = processed_tile(
            logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, token_bits_ptr, words,
            counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
            BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS)
        found = tl.min(tl.where(x > float("-inf"), offs, V))
        t += 1
    return found


@triton.jit
def saturated(lasts, kth, remap):
    """Per tile, whether a tile whose last emitted key is `lasts` may hide members of the row's C best,
    kth being the C-th merged key (topk.any_saturated). A tile of a remapped row (raw_ordered, with a
    temperature) emitted the quotients of its best raw keys: a token it held back may have its last
    key's value and a lower index, so it is saturated when that value reaches the C-th key's."""
    hit = lasts > kth
    if remap:
        hit = (lasts != 0) & ((lasts >> 32) >= (kth >> 32))
    return hit


@triton.jit(noinline=True)
def refill_saturated(logits_ptr, stride_row, V, row, slot, flags, remap, top_last, cand_ptr, refill_ptr, Z,
                     mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr, pres_ptr,
                     bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                     Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
                     KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                     pend_ptr, n_pend, PENDING: tl.constexpr):
    """refill_tiles out of line (row_distribution's REFILL_CALL), so that its code stays out of the
    launches that never run it. Noinline functions take no blocks: the sorted candidates are read from
    and left in the refill's scratch (where select_top_sorted put them and merge_tile_above writes)."""
    C: tl.constexpr = 2 ** C_LOG2
    refill_tiles(tl.load(selection_scratch(refill_ptr, row, C_LOG2) + C + tl.arange(0, C)),
                 saturated(tile_lasts(cand_ptr, row, Z, Z_LOG2, E_LOG2), top_last, remap), logits_ptr, stride_row,
                 V, row, slot, flags, remap, top_last, cand_ptr, refill_ptr, Z, mask_ptr, mask_stride, token_bits_ptr,
                 words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                 Z_LOG2, E_LOG2, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)


@triton.jit
def refill_tiles(top, marked, logits_ptr, stride_row, V, row, slot, flags, remap, top_last, cand_ptr, refill_ptr, Z,
                 mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr, pres_ptr,
                 bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                 Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
                 KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                 pend_ptr, n_pend, PENDING: tl.constexpr):
    """Stage 2's refill of a row's saturated tiles (row_distribution): re-reads each tile `marked`
    saturated against the C-th candidate `top_last` (`saturated`) and ranks the keys it held back above
    that into the sorted candidates `top`; returns them, also left at selection_scratch + C."""
    C: tl.constexpr = 2 ** C_LOG2
    t = next_marked(marked, -1, 2 ** Z_LOG2)
    while t < Z:  # over the saturated tiles only, in tile order (topk.next_marked)
        last_t = last_emitted(cand_ptr, row, Z, t, E_LOG2)
        _x, _o, _i, _b, keys = processed_tile(
            logits_ptr, stride_row, V, row, slot, flags, t, mask_ptr, mask_stride, token_bits_ptr,
            words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr,
            bias_count_ptr, temp_ptr, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS,
            pend_ptr, n_pend, PENDING)
        start = t.to(tl.int64) * (2 ** BLOCK_LOG2)
        # Merged: the tile's keys it did not emit (those below its last, or for a remapped row those
        # not in its list: a held-back key may lie above the last one) that lie above the C-th
        # candidate. This is topk.merge_refill's filter written out, so that one merge_tile_above
        # serves both.
        if remap:
            listed = row_key_to_tile_key(
                tl.load(cand_ptr + (row * Z + t) * (2 ** E_LOG2) + tl.arange(0, 2 ** E_LOG2)), start, KEY64)
            emitted = tl.max((keys[:, None] == listed[None, :]).to(tl.int32), axis=1) != 0
        else:
            emitted = keys >= row_key_to_tile_key(last_t, start, KEY64)
        top = merge_tile_above(top, tl.where(emitted, 0, keys), top_last, start,
                               refill_ptr + row * (4 * C), BLOCK_LOG2, C_LOG2, KEY64)
        t = next_marked(marked, t, 2 ** Z_LOG2)
    return top


@triton.jit
def row_distribution(logits_ptr, stride_row, V, row, slot, flags,
                     mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                     rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                     top_k_ptr, top_p_ptr, log_min_p_ptr, cand_ptr, stats_ptr, refill_ptr, Z,
                     Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
                     KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                     NEG_INF_KEY: tl.constexpr, EXACT_UNTRUNCATED: tl.constexpr,
                     pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False, SKIP_UNTRUNCATED: tl.constexpr = False,
                     RAW_KEYS: tl.constexpr = False, REFILL_CALL: tl.constexpr = False,
                     SPEC_POST: tl.constexpr = False, share=False, board_ptr=None, ipar_ptr=None, fpar_ptr=None,
                     total_ptr=None, seed=0, pos=0, spec_early=None, SPEC_WW: tl.constexpr = 0):
    """One row's candidates and truncated distribution: the rules of the sampler's stage 2, shared by
    speculative verification (kernels/verify.py) so that the two can never disagree.

    Returns candidate token ids (C, rank order), which lanes are real candidates, their raw and
    processed values, the survivors `keep`, the final distribution's log-normalizer (p = exp(x -
    log_final) on `keep`), the full-vocabulary processed log-normalizer (for a NORMALIZER_FREE row only a
    bound of it, which none of its outputs reads), validity, exactness, the mass
    the bound dropped, whether the row takes the exact untruncated path, min-p's threshold, the
    values the candidates are ranked on (processed, rounded to the input dtype), the first candidate's
    token id (the greedy token of a row with candidates; 0 if none), a stabiliser m of the candidates'
    exponentials (the first candidate's rank value, or its processed value where that is not finite) and
    whether all C candidates are real, then what bounds a long top-p cut (long_rows.nucleus_start,
    _cut_bounds): a part of its set's weight (relative to exp(m)) and a value key at or above the cut's.
    PENDING: see prologue.process. SKIP_UNTRUNCATED: rows `without_candidates` have none (stage 1
    emitted nothing). RAW_KEYS: the tiles of `raw_ordered` rows emitted the quotients of their best raw
    keys (sample_stage1), which changes what a saturated tile may hold back (saturated). SPEC_POST (the
    sampler's SHARED stage 2, with `share` and the board's pointers): a nucleus that the statistics or
    its tiles' emitted candidates show beyond the bound posts its first search pass before the
    candidates are merged (nucleus_beyond);
    the last two results say whether it did and with which m (false, 0 otherwise).

    Stage 2 at one row is a chain of dependent steps (docs/PERFORMANCE.md), each block reduction a
    shuffle tree and a barrier: scalars are read back with the sorted candidates rather than reduced
    out of them, and independent sums share one reduction."""
    C: tl.constexpr = 2 ** C_LOG2
    NEG_INF: tl.constexpr = float("-inf")
    lane = tl.arange(0, C)
    skip = without_candidates(flags, SKIP_UNTRUNCATED)
    # Everything that does not depend on the candidates is loaded first, so that its latency overlaps
    # the selection's instead of adding a dependent load after it: the statistics, the tiles' last
    # keys (the saturation test) and the truncation parameters.
    # The raw pairs only for rows with log-probabilities (stage 1 writes them for those alone); the
    # three maxima and sums share two block reductions.
    zz = tl.arange(0, 2 ** Z_LOG2)
    bad = tl.load(stats_ptr + (row * Z + zz) * N_STATS + 4, mask=zz < Z, other=0.0)
    if SPEC_POST:
        want_spec = share & ((flags & (TOP_P | TOP_K | MIN_P | GREEDY)) == TOP_P)
        spec_k = spec_keys(cand_ptr, row, Z, want_spec, Z_LOG2, E_LOG2)
    m_t, s_t = _stat_pairs(stats_ptr, row, Z, 0, 2 ** Z_LOG2, zz < Z)
    m_r, s_r = _stat_pairs(stats_ptr, row, Z, 2, 2 ** Z_LOG2, (zz < Z) & ((flags & LOGPROBS) != 0))
    mm, n_bad, mm_r = tl.reduce((m_t, bad, m_r), 0, _max_sum_max)
    lse_all, raw_lse = _lse_of_pairs2(m_t, s_t, mm, m_r, s_r, mm_r)   # over the whole vocabulary
    lasts = tile_lasts(cand_ptr, row, Z, Z_LOG2, E_LOG2)
    log_min_p = tl.load(log_min_p_ptr + slot)
    k = tl.load(top_k_ptr + slot)
    p_top = tl.load(top_p_ptr + slot)
    spec = flags < 0                                      # false
    m_spec = tl.full((), 0.0, tl.float32)
    if SPEC_POST:
        if want_spec:
            spec, m_spec = nucleus_beyond(mm, lse_all, p_top, m_t, spec_k, lasts, C_LOG2, KEY64, IS_BF16,
                                          NEG_INF_KEY)
            if spec:
                post_first_pass(board_ptr, ipar_ptr, fpar_ptr, total_ptr, row, m_spec, slot, flags, seed, pos,
                                spec_early, KEY64, lse_all, p_top, V, IS_BF16, SPEC_WW)
    if skip:
        top = tl.zeros([C], tl.uint64)
        top0 = tl.zeros((), tl.uint64)
        top_last = top0
    else:
        top, top0, top_last = select_top_sorted(cand_ptr, row, Z, selection_scratch(refill_ptr, row, C_LOG2),
                                                Z_LOG2, E_LOG2, C_LOG2, KEY64)
    # Rows ranked on raw keys with a temperature (stage 1's raw_ordered) emitted per tile the quotients of
    # their best raw keys: a token a tile held back may tie with its last emitted quotient at a lower index.
    if RAW_KEYS:
        remap = quotient_keyed(raw_ordered(flags, EXACT_UNTRUNCATED), flags)
    else:
        remap = False
    if E_LOG2 < C_LOG2:
        # Saturated tiles (last emitted key above the C-th merged key) may hide candidates: re-read
        # them and merge their best keys below the ones already emitted (kernels/topk.py explains why
        # that is exact). A tile of a remapped row may hold back keys of its last key's value with lower
        # indices: it is saturated when that value reaches the C-th key's. REFILL_CALL: the refill out of
        # line. Inline, its code cost launches that never run it (the bitonic merge it had cost ~1 us at
        # 128 rows, run 129g; merge_tile_above inline 0.1-1.4 us more than the call at 1-128 rows, run 162).
        # But launches with top-n log-probabilities spilled around the call (the 1-row graph launch's
        # stage 2: 60 -> 228 spill instructions, +5-7 us at 1-128 rows, run 166): the host leaves it
        # inline there.
        marked = saturated(lasts, top_last, remap)
        if (tl.sum(marked.to(tl.int32)) > 0) & ~skip:
            if REFILL_CALL:
                # The sorted candidates are in the refill's scratch already (select_top_sorted put them
                # where merge_tile_above writes), so the call passes no block and the result is reloaded.
                refill_saturated(logits_ptr, stride_row, V, row, slot, flags, remap, top_last, cand_ptr, refill_ptr,
                                 Z, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr,
                                 pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr, Z_LOG2, E_LOG2,
                                 C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
                sorted_ptr = selection_scratch(refill_ptr, row, C_LOG2) + C
                top = tl.load(sorted_ptr + lane)
                top0 = tl.load(sorted_ptr)
                top_last = tl.load(sorted_ptr + (C - 1))
                tl.debug_barrier()
            else:
                top = refill_tiles(top, marked, logits_ptr, stride_row, V, row, slot, flags, remap, top_last, cand_ptr,
                                   refill_ptr, Z, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr,
                                   freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                                   Z_LOG2, E_LOG2, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS,
                                   pend_ptr, n_pend, PENDING)
                top0 = tl.max(top)                                 # the refill keeps `top` sorted
                top_last = _at(top, lane, C - 1)
    real = (top >> 32) > NEG_INF_KEY                      # a candidate that is not -inf (nor padding)
    any_real = (top0 >> 32) > NEG_INF_KEY
    full = (top_last >> 32) > NEG_INF_KEY                 # all C candidates real (sorted: real ones first)
    first = tl.where(any_real, row_key_index(top0), 0)
    rank0 = tl.where(any_real, row_key_value(top0, KEY64, IS_BF16), NEG_INF)
    idx = tl.where(real, row_key_index(top), 0)
    raw_c = tl.load(logits_ptr + row * stride_row + idx, mask=real, other=0.0).to(tl.float32)
    x = process(raw_c, idx, real, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words,
                counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                HAS_MASK, MAX_BIAS, pend_ptr, n_pend, PENDING)
    x = tl.where(real, x, NEG_INF)
    if KEY64:
        rank_val = x
    else:
        rank_val = tl.where(real, row_key_value(top, KEY64, IS_BF16), NEG_INF)

    # Some token is selectable: a real candidate, or, without candidates, a finite normalizer.
    valid = (n_bad == 0) & (any_real | (skip & (lse_all > NEG_INF))) & ((flags & ACTIVE) != 0)

    # The exponentials' stabiliser: the first candidate's rank value, within rounding to the input dtype
    # of the largest processed value (so x - m stays near or below 0); its processed value where the
    # rounding overflowed (or there is no candidate).
    m = rank0
    if (rank0 == float("inf")) | (rank0 == NEG_INF):
        m = _at(x, lane, 0)

    # Truncation: min-p, top-k, top-p; survivors are always a prefix of the candidate order.
    keep = real
    in_bound = ~full                                       # every selectable token is a candidate
    thr = tl.full((), float("-inf"), tl.float32)           # min-p's threshold on rank values
    if (flags & MIN_P) != 0:
        thr = rank0 + log_min_p
        keep = keep & (rank_val >= thr)
        in_bound = in_bound | (row_key_value(top_last, KEY64, IS_BF16) < thr)
    if (flags & TOP_K) != 0:
        keep = keep & (lane < k)
        in_bound = in_bound | (k <= C)                     # a top-k above the bound is not in bound
    ex = tl.where(keep, tl.exp(x - m), 0.0)
    kept_sum = tl.sum(ex)
    # The survivors' normalizer: exact from the candidates when the set is in bound, else the full one.
    log_norm = tl.where(in_bound, m + tl.log(kept_sum), lse_all)
    probs = tl.exp(x - log_norm)
    exact = in_bound
    if (flags & TOP_P) != 0:
        p_kept = tl.where(keep, probs, 0.0)
        before = tl.cumsum(p_kept, axis=0) - p_kept
        reached = tl.sum(p_kept) >= p_top
        # Reaching p inside the candidates settles the set only if the normalizer was the exact one:
        # the full vocabulary's, i.e. with neither min-p nor top-k (top-k above the bound) before top-p.
        exact = exact | (reached & ((flags & (MIN_P | TOP_K)) == 0))
        keep = keep & (before < p_top)
    kept_p, kept_e = tl.reduce((tl.where(keep, probs, 0.0), tl.where(keep, tl.exp(x - m), 0.0)), 0, _sum2)
    dropped = tl.where(exact, 0.0, tl.maximum(1.0 - kept_p, 0.0))
    if EXACT_UNTRUNCATED:
        untruncated = (flags & UNTRUNCATED_MASK) == 0
    else:
        untruncated = flags < 0                            # never: the bounded approximation was asked for
    # A greedy row's token is the first candidate whatever the bound, an untruncated row's the exact
    # Gumbel-max over all tokens: both exact. A greedy row's processed logprobs still need its
    # truncated set's normalizer, so with those it is exact only if the set is.
    greedy_exact = ((flags & GREEDY) != 0) & (((flags & LOGPROBS_PROCESSED) == 0)
                                              | ((flags & (TOP_K | TOP_P | MIN_P)) == 0))
    exact = exact | greedy_exact | untruncated
    dropped = tl.where(exact, 0.0, dropped)
    # The final distribution's normalizer: the full vocabulary's when nothing truncates, else the
    # survivors' (exact when the row is exact, the bounded set's otherwise).
    log_kept = m + tl.log(kept_e)
    log_final = tl.where((flags & (TOP_K | TOP_P | MIN_P)) == 0, lse_all, log_kept)
    w_lo, hi_key = _cut_bounds(flags, top0, top_last, kept_sum, lse_all, m)
    return (idx, real, raw_c, x, keep, log_final, lse_all, valid, exact, dropped, untruncated, thr, rank_val,
            first, m, full, raw_lse, w_lo, hi_key, spec, m_spec)


@triton.jit
def _cut_bounds(flags, top0, top_last, kept_sum, lse_all, m):
    """What bounds a long top-p cut (long_rows.nucleus_start): a part of the weight W of the set it
    cuts, and a value key at or above the cut's. For a nucleus over the whole vocabulary: W itself
    from the full normalizer (the passes sum the same weights in another order: nucleus_start keeps a
    factor 2 of margin), and the last candidate's key (the candidates could not hold the nucleus:
    stage 2 measured their mass against that normalizer). After min-p or top-k: the candidates' weight
    kept before top-p, and the first candidate's key (the nucleus may lie inside the candidates)."""
    alone = (flags & (MIN_P | TOP_K)) == 0
    return tl.where(alone, tl.exp(lse_all - m), kept_sum), (tl.where(alone, top_last, top0) >> 32).to(tl.int64)


@triton.jit
def _head_ranks(word, C: tl.constexpr, HEAD: tl.constexpr):
    """Output order of C candidates (distinct words) when only the first HEAD can be asked for: their
    ranks among themselves, and every other lane its own (>= HEAD: never stored). A HEAD x HEAD
    comparison instead of C x C; the head is taken out of the block as the first row of a (C / HEAD,
    HEAD) view."""
    r = tl.arange(0, C // HEAD)[:, None]
    c = tl.arange(0, HEAD)[None, :]
    head = tl.sum(tl.where(r == 0, tl.reshape(word, (C // HEAD, HEAD)), 0), axis=0)
    order_h = tl.sum((head[None, :] > head[:, None]).to(tl.int32), axis=1)
    return tl.reshape(tl.where(r == 0, order_h[None, :], r * HEAD + c), (C,))


@triton.jit
def raw_top_order(logits_ptr, stride_row, V, row, Z, idx, real, raw_c, rank_val, ids_vec, lp_vec, raw_lse, n_top,
                  whole, refill_ptr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr,
                  IS_BF16: tl.constexpr, NEG_INF_KEY: tl.constexpr, HEAD: tl.constexpr):
    """Output order of the candidates for a temperature-only row's raw top-n log-probabilities, with the
    ids and log-probabilities to order.

    Temperature keeps the raw order, but the candidates are ranked on processed values rounded to the
    input dtype, where distinct raw values can tie and fall back to index order. Re-ranking the C
    candidates on (raw value, lower index) gives the raw top-n exactly when no other token can belong
    to it: every non-candidate has a rounded processed value <= the C-th candidate's, so if that lies
    strictly below the n-th raw-ranked candidate's, the non-candidate's raw value is lower too (or the
    row has fewer than C candidates: then every token is one). Otherwise (over a hundred tokens tied
    after rounding) the exact raw top C is built from the whole row, tile by tile.

    16-bit inputs rank on 32-bit words, the raw value's 16-bit key over the inverted lane: equal raw
    values have equal processed values, so the candidates' order (lower index first) already orders
    them, and the words are distinct, so one unsigned comparison per pair decides. The 64-bit (value,
    index) ranking this replaces cost about four times the instructions (fp32 inputs keep it). They
    rank only the first HEAD candidates when those settle the top n (the condition is argued in the
    code): the logprobs mix's excess over the standard one went from +33% to +16% at 1 row with this
    and stage 2's fewer reductions (docs/PERFORMANCE.md, runs 77-81).

    whole: build the raw top C from the whole row without looking at the candidates, for a row whose
    processing reorders tokens (penalties, bias, a grammar mask) in a launch planned without the
    launcher's raw top-k (a CUDA graph captured before such a request was admitted). A NaN raw
    normalizer (a raw NaN or +inf) then ranks no token, as the launcher's fill does."""
    C: tl.constexpr = 2 ** C_LOG2
    lane = tl.arange(0, C)
    nth = tl.maximum(n_top, 1) - 1
    head_ok = n_top < 0                                    # false, as a runtime boolean
    if KEY64:
        raw_key = tl.where(real, (value_key32(raw_c) << 32) | (0xFFFFFFFF - idx.to(tl.uint64)), 0)
        order = ranks(raw_key, C)
    else:
        k16 = tl.where(real, value_key16(raw_c.to(tl.bfloat16 if IS_BF16 else tl.float16)), 0)
        word = (k16 << 16) | (0xFFFF - lane).to(tl.uint32)
        if HEAD < C:
            # The head (the first HEAD candidates) holds the raw top n when the n-th candidate's rank
            # value lies strictly above the first one's past the head (or no real candidate is past
            # it): rounding ties only reorder candidates of equal rank value, so none of those past
            # the head can overtake the n-th. Then ranking the head alone is exact, and no token
            # outside the candidates can belong (the fallback test below holds).
            rv_n, rv_h = tl.reduce((tl.where(lane == nth, rank_val, 0.0), tl.where(lane == HEAD, rank_val, 0.0)),
                                   0, _sum2)
            head_ok = (rv_n > rv_h) | (rv_h == float("-inf"))
        head_ok = tl.where(whole, False, head_ok)
        if head_ok:
            order = _head_ranks(word, C, HEAD)
        else:
            order = tl.sum((word[None, :] > word[:, None]).to(tl.int32), axis=1)
    if ~head_ok:   # the fallback test's three reductions only where the head did not settle the row
        n_real = tl.sum(real.to(tl.int32))
        rv_nth = tl.max(tl.where(order == nth, rank_val, float("-inf")))
        rv_last = tl.max(tl.where(lane == C - 1, rank_val, float("-inf")))
        # A nested `where`, not `&` of two scalar booleans, which the interpreter mishandles.
        if tl.where(whole, True, tl.where(n_real >= C, rv_last >= rv_nth, False)):
            # Tile by tile, each tile's keys above the running C-th (0 while fewer than C) ranked in: the
            # refill's merge (topk.merge_tile_above), so that no sorting network is compiled into stage 2.
            top = tl.zeros((C,), tl.uint64)
            kth = tl.zeros((), tl.uint64)
            t = 0
            while t < Z:   # a while loop: the interpreter cannot iterate range() over a runtime bound
                keys, _n_nan = load_tile_keys(logits_ptr, row, stride_row, V, t, BLOCK_LOG2, KEY64)
                top = merge_tile_above(top, keys, kth, t.to(tl.int64) * (2 ** BLOCK_LOG2), refill_ptr + row * (4 * C),
                                       BLOCK_LOG2, C_LOG2, KEY64)
                kth = _at(top, lane, C - 1)
                t += 1
            ok = ((top >> 32) > NEG_INF_KEY) & (tl.zeros((C,), tl.float32) + raw_lse == raw_lse)
            ids = tl.where(ok, row_key_index(top), -1)
            raw = tl.load(logits_ptr + row * stride_row + tl.where(ok, ids, 0), mask=ok, other=0.0).to(tl.float32)
            order = lane
            ids_vec = ids
            lp_vec = tl.where(ok, raw - raw_lse, float("-inf"))
    return order, ids_vec, lp_vec


@triton.jit
def chosen_values(tok, idx, real, raw_c, x, logits_ptr, stride_row, V, row, slot, flags,
                  mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                  rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                  HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                  pend_ptr=None, n_pend=0, PENDING: tl.constexpr = False):
    """token_values of the chosen token: taken from its candidate lane when it is a candidate (the same
    arithmetic on the same inputs), so that only tokens from beyond the candidates (untruncated and
    long-set rows) pay a dependent load after the draw."""
    lane = tl.arange(0, idx.shape[0])
    j = tl.min(tl.where(real & (idx == tok), lane, idx.shape[0]))
    _tok, raw_tok, x_tok = _at3(lane, j, idx, raw_c, x)
    if j == idx.shape[0]:
        raw_tok, x_tok = token_values(tok, logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride,
                                      token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr, pres_ptr,
                                      bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr, HAS_MASK, MAX_BIAS,
                                      pend_ptr, n_pend, PENDING)
    return raw_tok, x_tok


@triton.jit
def token_logprobs(logits_ptr, stride_row, V, row, flags, n_top, raw_lse, raw_lse_ptr, refill_ptr, Z,
                   idx, real, raw_c, x, keep, rank_val, log_final, valid, raw_tok, x_tok,
                   top_ids_row, top_lp_row, N_TOP,
                   Z_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr,
                   IS_BF16: tl.constexpr, NEG_INF_KEY: tl.constexpr, TOP_PAD: tl.constexpr,
                   RAW_TOP_FROM_CANDIDATES: tl.constexpr, TOP_N: tl.constexpr, HAS_MASK: tl.constexpr):
    """A row's log-probabilities (SEMANTICS.md section 4), shared by the sampler's and verification's
    stage 2: the token's (raw_tok, x_tok: its raw and processed values) and the top-n (token,
    log-probability) pairs, in the row's mode (n_top of them; raw_lse: the raw full-vocabulary
    log-normalizer, from row_distribution). Both come in as values loaded or computed early, so
    that no load waits at the end of the chain. Returns the token's (NaN if not asked or invalid) and
    stores the top-n at top_ids_row / top_lp_row[0:N_TOP] (ids padded with -1, log-probabilities
    with -inf; NaN in an invalid row's asked lanes). Raw rows store their full-vocabulary normalizer
    at raw_lse_ptr for the launcher.
    TOP_N: some request of the batch asks for top-n pairs; without, their code (the raw re-ranking
    and its whole-row fallback) is not compiled in, which saves about a third of verification's
    stage-2 compile time (measured for sm_90 on the CPU)."""
    C: tl.constexpr = 2 ** C_LOG2
    NEG_INF: tl.constexpr = float("-inf")
    lane = tl.arange(0, C)
    t_lane = tl.arange(0, TOP_PAD)
    # Raw re-ranking looks at the first HEAD candidates when it can (raw_top_order): twice the top-n
    # width, so that a run of rounding ties across the n-th candidate rarely reaches past it.
    HEAD: tl.constexpr = 2 * TOP_PAD if 2 * TOP_PAD < C else C
    stored = flags < 0                                     # false, as a runtime boolean
    lp_out = tl.full((), float("nan"), tl.float32)
    if (flags & LOGPROBS) != 0:
        if (flags & LOGPROBS_PROCESSED) != 0:
            # Normalizer of the final survivors: the exact full-vocabulary one for untruncated rows,
            # else the survivors' (exact when the row is exact, the bounded set's otherwise).
            lp_vec = tl.where(keep, x - log_final, NEG_INF)
            ids_vec = tl.where(keep, idx, -1)
            lp_tok = x_tok - log_final
        else:
            tl.store(raw_lse_ptr + row, raw_lse)
            lp_vec = tl.where(real, raw_c - raw_lse, NEG_INF)
            ids_vec = tl.where(real, idx, -1)
            lp_tok = raw_tok - raw_lse
        lp_out = tl.where(valid, lp_tok, float("nan"))
        # Raw top-n from the candidates: in candidate order for rows with no processing, re-ranked on
        # raw values for temperature-only rows (raw_top_order). Rows whose processing can reorder
        # tokens (penalties, bias, grammar mask) get raw top-n from the launcher's exact top-k of the
        # logits instead: it says so with RAW_TOP_FROM_CANDIDATES = False.
        if TOP_N:
            if ((flags & LOGPROBS_PROCESSED) != 0) | RAW_TOP_FROM_CANDIDATES:
                order = lane
                # A raw row whose processing reorders tokens here (the launch was planned without the
                # launcher's raw top-k: a graph captured before such a request) takes the whole row.
                raw_mode = (flags & LOGPROBS_PROCESSED) == 0
                if HAS_MASK:
                    reorders = raw_mode
                else:
                    reorders = raw_mode & ((flags & REORDERING) != 0)
                if raw_mode & (((flags & TEMPERATURE) != 0) | reorders):
                    order, ids_vec, lp_vec = raw_top_order(
                        logits_ptr, stride_row, V, row, Z, idx, real, raw_c, rank_val, ids_vec, lp_vec, raw_lse,
                        n_top, reorders, refill_ptr, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, NEG_INF_KEY, HEAD)
                # `order` is a permutation of 0..C-1 and N_TOP <= C (Sampler.add_request), so each
                # output position gets exactly one candidate: one scattered store, where a selection
                # per output position took two (TOP_PAD, C) block reductions.
                asked = order < n_top
                out = order < N_TOP
                tl.store(top_ids_row + order, tl.where(asked, tl.where(valid, ids_vec, -1), -1).to(tl.int64),
                         mask=out)
                tl.store(top_lp_row + order, tl.where(asked, tl.where(valid, lp_vec, float("nan")), NEG_INF),
                         mask=out)
                stored = flags >= 0
    if ~stored:
        tl.store(top_ids_row + t_lane, tl.full((TOP_PAD,), -1, tl.int64), mask=t_lane < N_TOP)
        tl.store(top_lp_row + t_lane, tl.full((TOP_PAD,), NEG_INF, tl.float32), mask=t_lane < N_TOP)
    return lp_out


@triton.jit(do_not_specialize=["n_rows", "n_help", "claim"])
def sample_stage2(logits_ptr, stride_row, V, slots_ptr, max_slots, positions_ptr, flags_ptr,
                  mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                  rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                  top_k_ptr, top_p_ptr, log_min_p_ptr, seed_ptr, n_logprobs_ptr,
                  cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, Z,
                  tokens_ptr, valid_ptr, logprob_ptr, top_ids_ptr, top_lp_ptr, exact_ptr, dropped_ptr,
                  raw_lse_ptr, N_TOP, draft_ids_ptr, draft_probs_ptr, draft_complete_ptr,
                  board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr, n_rows, n_help, claim,
                  Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
                  LONG_LOG2: tl.constexpr, CHUNKS_LOG2: tl.constexpr, ROWS_LOG2: tl.constexpr, KEY64: tl.constexpr,
                  IS_BF16: tl.constexpr,
                  HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, NEG_INF_KEY: tl.constexpr,
                  TOP_PAD: tl.constexpr, RAW_TOP_FROM_CANDIDATES: tl.constexpr, TOP_N: tl.constexpr,
                  EXACT_UNTRUNCATED: tl.constexpr,
                  RETURN_DRAFT: tl.constexpr = False, PDL: tl.constexpr = False,
                  SKIP_UNTRUNCATED: tl.constexpr = False, SHARED: tl.constexpr = False,
                  HELPERS: tl.constexpr = False, RAW_KEYS: tl.constexpr = False, REFILL_CALL: tl.constexpr = False):
    """One program per row: the row's selection and outputs (_sample_row). SHARED: the variant for
    batches whose requests may have sets beyond the bound, whose programs share the exact passes over
    such rows (kernels/shared_sets.py), when a row of the launch may have one (batch_may_exceed: a CUDA
    graph always launches this variant). HELPERS (implies SHARED): n_help programs past the n_rows rows
    only help with them (a second copy of the passes' code: only batches that launch helpers compile it).
    claim: the chunks of a long row's pass a program takes at once (0: chosen in the kernel). A long
    row's 16-bit top-p search may start with a wide pass (kernels/long_rows.py, WIDE_BITS) in launches cut
    into more than 8 chunks (shared_sets.wide_words): every SHARED launch of the default chunk counts
    (since run 214 above 16 rows too), 1-row ones included since the pass posted before the candidates
    is then their search's only one (run 207; their bounded rows pay ~0.6 µs for the larger stage 2,
    runs 198, 200)."""
    row = tl.program_id(0).to(tl.int64)
    helper = False
    if HELPERS:   # implies SHARED; the programs past the rows only help
        helper = row >= n_rows
    share = row < 0   # false: whether the launch shares passes (a row's set may exceed the bound)
    if SHARED:
        share = batch_may_exceed(slots_ptr, flags_ptr, n_rows, max_slots, ROWS_LOG2)
    if helper:
        if share:
            _help(row, n_rows, n_help, claim, logits_ptr, stride_row, V, mask_ptr, mask_stride,
                  token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr,
                  bias_count_ptr, temp_ptr, board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr, LONG_LOG2, CHUNKS_LOG2,
                  ROWS_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, PDL)
    else:
        _sample_row(row,
                    logits_ptr, stride_row, V, slots_ptr, max_slots, positions_ptr, flags_ptr,
                    mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                    rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                    top_k_ptr, top_p_ptr, log_min_p_ptr, seed_ptr, n_logprobs_ptr,
                    cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, Z,
                    tokens_ptr, valid_ptr, logprob_ptr, top_ids_ptr, top_lp_ptr, exact_ptr, dropped_ptr,
                    raw_lse_ptr, N_TOP, draft_ids_ptr, draft_probs_ptr, draft_complete_ptr,
                    board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr, n_rows, n_help, claim, share,
                    Z_LOG2, E_LOG2, C_LOG2, BLOCK_LOG2, LONG_LOG2, CHUNKS_LOG2, ROWS_LOG2, KEY64, IS_BF16,
                    HAS_MASK, MAX_BIAS, NEG_INF_KEY, TOP_PAD, RAW_TOP_FROM_CANDIDATES, TOP_N,
                    EXACT_UNTRUNCATED, RETURN_DRAFT, PDL, SKIP_UNTRUNCATED, SHARED=SHARED, RAW_KEYS=RAW_KEYS,
                    REFILL_CALL=REFILL_CALL)


# Out of line: inlined, the helpers' ~2 100 instructions came first in stage 2's SASS and the rows' code
# after them, and the rows of that binary ran slower (instruction-fetch stalls, run 230: stage 2 alone 28.5
# against 20.0 µs at 64 bounded rows, V = 262144; run 231: the same binary without helper programs as slow).
# Out of line the rows' code lies as in the binary without helpers (run 232: 43.6 against 50.2 µs there;
# 15.6 / 21.0 against 16.5 / 21.9 at 1 / 16 bounded rows, the long nucleus 1 in 16 23.2 against 24.9 at 1).
@triton.jit(noinline=True)
def _help(row, n_rows, n_help, claim, logits_ptr, stride_row, V, mask_ptr, mask_stride, token_bits_ptr,
          words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
          board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr, LONG_LOG2: tl.constexpr, CHUNKS_LOG2: tl.constexpr,
          ROWS_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
          MAX_BIAS: tl.constexpr, PDL: tl.constexpr):
    """A helper program (no row of its own) of a launch that shares passes: the rows' passes only."""
    wait_for_previous(PDL)
    no = row < 0
    zero = tl.zeros((), tl.int64)
    _d, _lf, _t = shared_long_set(
        row, n_rows, n_help, claim, no, no, no, 0.0 + zero, 0.0 + zero, 0.0 + zero, zero, zero, zero, no, zero, no,
        zero, zero, zero.to(tl.int32), zero, zero, logits_ptr, stride_row, V, mask_ptr, mask_stride, token_bits_ptr,
        words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
        temp_ptr, board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr, LONG_LOG2, CHUNKS_LOG2, ROWS_LOG2, KEY64,
        IS_BF16, HAS_MASK, MAX_BIAS, no)


@triton.jit
def _sample_row(row, logits_ptr, stride_row, V, slots_ptr, max_slots, positions_ptr, flags_ptr,
                mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                top_k_ptr, top_p_ptr, log_min_p_ptr, seed_ptr, n_logprobs_ptr,
                cand_ptr, stats_ptr, best_ptr, best_idx_ptr, refill_ptr, Z,
                tokens_ptr, valid_ptr, logprob_ptr, top_ids_ptr, top_lp_ptr, exact_ptr, dropped_ptr,
                raw_lse_ptr, N_TOP, draft_ids_ptr, draft_probs_ptr, draft_complete_ptr,
                board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr, n_rows, n_help, claim, share,
                Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
                LONG_LOG2: tl.constexpr, CHUNKS_LOG2: tl.constexpr, ROWS_LOG2: tl.constexpr, KEY64: tl.constexpr,
                IS_BF16: tl.constexpr,
                HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, NEG_INF_KEY: tl.constexpr,
                TOP_PAD: tl.constexpr, RAW_TOP_FROM_CANDIDATES: tl.constexpr, TOP_N: tl.constexpr,
                EXACT_UNTRUNCATED: tl.constexpr, RETURN_DRAFT: tl.constexpr, PDL: tl.constexpr,
                SKIP_UNTRUNCATED: tl.constexpr, SHARED: tl.constexpr, RAW_KEYS: tl.constexpr = False,
                REFILL_CALL: tl.constexpr = False):
    C: tl.constexpr = 2 ** C_LOG2
    NEG_INF: tl.constexpr = float("-inf")
    slot, flags = row_slot(slots_ptr, flags_ptr, row, max_slots)
    # Per-request values stage 1 does not write: loaded before the wait, under stage 1's last wave.
    seed = tl.load(seed_ptr + slot)
    pos = tl.load(positions_ptr + row)
    n_top = tl.load(n_logprobs_ptr + slot)
    if SHARED:
        if share:
            # Other programs may wait for this row's decision. Before the wait: the board is this stage's
            # own (the previous launch's stage 2 finished before this launch's stage 1 began).
            announce(board_ptr, row)
    wait_for_previous(PDL)   # everything below reads stage 1's output or writes the counts it reads
    lane = tl.arange(0, C)
    # Whether a long set's normalizer is needed (processed log-probabilities, draft distributions): the
    # passes then end with the final one (shared_sets.shared_long_set).
    need_lf = RETURN_DRAFT | (((flags & LOGPROBS) != 0) & ((flags & LOGPROBS_PROCESSED) != 0))
    (idx, real, raw_c, x, keep, log_final, lse_all, valid, exact, dropped, untruncated, thr, rank_val,
     first, m0, full, raw_lse, w_lo, hi_key, spec, m_spec) = row_distribution(
        logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
        rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
        top_k_ptr, top_p_ptr, log_min_p_ptr, cand_ptr, stats_ptr, refill_ptr, Z,
        Z_LOG2, E_LOG2, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, NEG_INF_KEY, EXACT_UNTRUNCATED,
        SKIP_UNTRUNCATED=SKIP_UNTRUNCATED, RAW_KEYS=RAW_KEYS, REFILL_CALL=REFILL_CALL,
        SPEC_POST=SHARED & EXACT_UNTRUNCATED, share=share, board_ptr=board_ptr, ipar_ptr=ipar_ptr,
        fpar_ptr=fpar_ptr, total_ptr=total_ptr, seed=seed, pos=pos,
        spec_early=~need_lf, SPEC_WW=wide_words(CHUNKS_LOG2, KEY64))

    # Rows whose set exceeds the bound and that exact passes over the whole row can settle
    # (kernels/long_rows.py), unless the bounded approximation was asked for.
    # Only the SHARED variant has the passes, and only its launches with a request whose set may exceed
    # the bound (indicator MAY_EXCEED) run them; elsewhere no row is long (one would stay flagged inexact).
    if SHARED:
        in_share = tl.where(share, valid, False)   # a launch that shares nothing has no long row
        long_set, search_k, search_p = long_set_kinds(flags, exact, in_share, EXACT_UNTRUNCATED)
    else:
        long_set, search_k, search_p = long_set_kinds(flags, exact, valid, False)
    # The candidates hold the row's whole final distribution: a bounded set proven exact, or a row whose
    # every selectable token is a candidate (untruncated and long-set rows are exact only through
    # passes beyond the candidates). Greedy rows: one-hot at the token.
    complete = (exact & ~untruncated) | ~full | ((flags & GREEDY) != 0)
    exact = exact | long_set
    dropped = tl.where(long_set, 0.0, dropped)

    # Selection. A greedy row in a long set takes the passes for its processed log-probabilities'
    # normalizer only: its token is the first candidate. tok_lane: the token's candidate lane, C where
    # it comes from beyond the candidates (untruncated and long-set draws).
    token = first
    tok_lane = tl.zeros((), tl.int32)
    if SHARED & EXACT_UNTRUNCATED:
        if share:
            # The passes of long rows, this one's and others' (kernels/shared_sets.py).
            top_p = tl.load(top_p_ptr + slot)
            p_lo, p_shift, p_clamped = nucleus_start(search_p, m0, w_lo, top_p, thr, hi_key, V, KEY64, IS_BF16)
            p_klo, p_kok = nucleus_low_key(m0, w_lo, top_p, thr, V, KEY64, IS_BF16)
            drawn, lf, target = shared_long_set(
                row, n_rows, n_help, claim, long_set, search_k, search_p, thr, m0, top_p,
                tl.load(top_k_ptr + slot), p_lo, p_shift, p_clamped, p_klo, p_kok, hi_key, slot, flags, seed, pos,
                logits_ptr, stride_row, V, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr,
                pres_ptr,
                bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr, board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr,
                LONG_LOG2, CHUNKS_LOG2, ROWS_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS,
                need_lf, spec, m_spec)
            if long_set:
                log_final = lf
                # The candidates' part of the set: read only by processed top-n log-probabilities and the
                # draft distribution (a scan over the candidates, skipped at the end of the row's chain).
                if RETURN_DRAFT | ((flags & LOGPROBS_PROCESSED) != 0):
                    keep = set_head(keep, x, m0, target, search_p)
                if (flags & GREEDY) == 0:
                    token = drawn
                    tok_lane = C
    scalar = untruncated
    if SKIP_UNTRUNCATED:
        scalar = scalar | greedy_alone(flags, SKIP_UNTRUNCATED)
    if scalar & ~long_set:
        # The best over tiles of stage 1's per-tile scores: the Gumbel-max, or a greedy row's argmax.
        token = untruncated_token(best_ptr, best_idx_ptr, row, Z, V, Z_LOG2)
        if SKIP_UNTRUNCATED:
            if (token == V) & valid:
                # A greedy row whose every rank is -inf while some processed value is finite (fp16 below
                # -65504): they tie at -inf, and the lowest selectable token wins. Stage 1's tiles do not
                # look for it (that cost the common path spills there); a walk over the row, taken by no
                # row of any other kind.
                token = lowest_selectable(logits_ptr, stride_row, V, row, slot, flags, mask_ptr, mask_stride,
                                          token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr, pres_ptr,
                                          bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr, Z, BLOCK_LOG2,
                                          KEY64, IS_BF16, HAS_MASK, MAX_BIAS).to(token.dtype)
        token = tl.where(token < V, token, 0)   # V: no selectable token (an invalid row); no lookup past the row
        tok_lane = C
    elif ((flags & GREEDY) == 0) & ~long_set:
        _best, tok_lane = argmax_lowest(tl.where(keep, x + gumbel_noise(seed, pos, 0, idx), NEG_INF), lane)
    # The token's raw and processed values (for its log-probability) from its lane, in the reduction
    # that takes the token itself; a token from beyond the candidates is looked up (chosen_values).
    raw_tok = tl.full((), 0.0, tl.float32)
    x_tok = raw_tok
    if tok_lane < C:
        if ((flags & GREEDY) == 0) | ((flags & LOGPROBS) != 0):   # a greedy row's token is `first`
            token, raw_tok, x_tok = _at3(lane, tok_lane, idx, raw_c, x)
    elif (flags & LOGPROBS) != 0:
        raw_tok, x_tok = chosen_values(token, idx, real, raw_c, x, logits_ptr, stride_row, V, row, slot, flags,
                                       mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr,
                                       pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                                       HAS_MASK, MAX_BIAS)
    token = tl.where(valid, token, 0)
    tl.store(tokens_ptr + row, tl.where(valid, token, -1))
    if RETURN_DRAFT:
        # The row's draft distribution for speculative verification: the survivors and their
        # probabilities, complete or not (a row whose distribution reaches past the candidates).
        greedy = (flags & GREEDY) != 0
        d_ids = tl.where(greedy, tl.where(lane == 0, token, -1), tl.where(keep, idx, -1))
        d_p = tl.where(greedy, tl.where(lane == 0, 1.0, 0.0), tl.where(keep, tl.exp(x - log_final), 0.0))
        tl.store(draft_ids_ptr + row * C + lane, tl.where(valid, d_ids, -1))
        tl.store(draft_probs_ptr + row * C + lane, tl.where(valid, d_p, 0.0))
        tl.store(draft_complete_ptr + row, tl.where(valid, complete, False).to(tl.int8))
    tl.store(valid_ptr + row, valid.to(tl.int8))
    tl.store(exact_ptr + row, (exact | ~valid).to(tl.int8))
    tl.store(dropped_ptr + row, tl.where(valid, dropped, 0.0))
    if valid:
        count_output(counts_ptr, token_bits_ptr, words, slot, V, token)

    # Log-probabilities. Every row writes its outputs (defaults where nothing was asked), so the
    # launcher allocates them uninitialised.
    lp_out = token_logprobs(
        logits_ptr, stride_row, V, row, flags, n_top, raw_lse, raw_lse_ptr, refill_ptr, Z,
        idx, real, raw_c, x, keep, rank_val, log_final, valid, raw_tok, x_tok,
        top_ids_ptr + row * N_TOP, top_lp_ptr + row * N_TOP, N_TOP,
        Z_LOG2, C_LOG2, BLOCK_LOG2, KEY64, IS_BF16, NEG_INF_KEY, TOP_PAD, RAW_TOP_FROM_CANDIDATES, TOP_N, HAS_MASK)
    tl.store(logprob_ptr + row, lp_out)
