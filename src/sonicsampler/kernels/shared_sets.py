"""The sampler's exact passes over long rows (kernels/long_rows.py), shared among stage 2's programs.

A row whose set exceeds the bound needs up to 10 passes over its whole row (2 search passes per cut
for 16-bit keys, 4 for fp32's, fewer for a top-p cut that the candidates bound and one more where that
bound fails: long_rows.nucleus_start; then the final pass). In its own program a nucleus's 5 passes
of 16-way digits (before session 31) cost ~0.65 ms at V = 151936 on an H100, while the batch's other
programs finish in ~12 us and leave their SMs idle. Here each pass is cut into chunks of sub-tiles
that any program of the batch may run:

- The row's program (its owner) posts a pass on the row's board (its parameters, then the pass
  index in the row's state word, with release semantics), and takes chunks itself from the pass's
  count of chunks taken, kept in the same word (TAKEN_BITS), until none is left; then it waits for
  them to be done, helping no other row meanwhile. Each chunk sums a search pass's 256 intervals
  into its own words (long_rows.chunk_pass), then folds its results into the row's words (TOTAL_W) by atomics: the
  sums by integer adds, the draw's Gumbel-max by an atomic max of one word (_best_word) and its mass
  by an integer add. Then it counts itself done.
- Once every chunk is done the owner reads the row's words (a search step, or the draw), sets them
  for the next pass and posts it. Integer sums and a max do not depend on the order of the atomics:
  the same tokens and log-probabilities whatever the batch and whichever program ran which chunk.
  (Until session 32 the owner added up the chunks' own words itself: with 64 chunks its step from
  the last chunk done to the next post took 6.7 µs of each ~15 µs search pass at 1 row, run 175;
  2.0 since, run 176.) Under the interpreter the programs run one after another and
  the owner runs every chunk itself.
- Tokens tied at a cut's key are kept in index order while the weight before them is below the
  cut's target; the weight before a chunk's first tied token is the sum of the earlier chunks' tied
  weights, from the cut's last search pass (its interval of width 1), kept per chunk for the passes
  after it.
- Programs whose own row is done look for posted passes with chunks left (every row's state in one
  load) and help, until no row is posted or undecided. A program never waits for one that might not
  be running: the owner waits only for chunks already taken, and helpers wait only for rows whose
  program has started (state STARTED, written first thing). A row whose program has not started is
  not waited for; if it turns out long, its owner does the work alone.
- The board's done counters are zeroed by the owner before its first post (a post sets the taken
  count to zero), and every row ends a launch DONE (or DONE plus a late claim, which reads the same);
  so a launch never sees another launch's posts, and nothing is reset between launches (CUDA graphs
  replay as they are).

Only stage 2's SHARED variant, for batches whose requests may have long sets, runs this code; batches
that cannot compile without it. When the batch has fewer rows than a pass has chunks, n_help more
programs, past the rows, only help (a lone long row would otherwise run all its chunks itself):
- Rows are served by program ids 0..n_rows-1, helpers have the ids after them. A helper is optional:
  it never waits for a row whose program might not be running, and it leaves once it sees no row
  STARTED or posted. Rows announce themselves (STARTED) before stage 1's end (the PDL wait), off their
  critical path, and helpers read the board only after it, so a helper normally finds every row
  already STARTED (GPUs usually dispatch lower program ids first; nothing but speed depends on it).
  A helper that finds none (their programs not dispatched yet, or already done) looks again a few
  times, then leaves; a long row it missed runs its chunks itself. The board is stage 2's own: the
  previous launch's stage 2 finished before this launch's stage 1 began, and left every row it used
  DONE, which no program waits on.
- Nothing is counted per launch, so nothing needs resetting between launches. (Until session 28 every
  program took a ticket from a counter, and the ticket said which row it served, so that helpers could
  wait for every row; the ticket's row index was not uniform for ptxas, and cost the 1-row launch
  ~0.5 µs, PERFORMANCE.md run 143.) Only the variant that has helpers (HELPERS in stage 2) compiles
  their code.
The results are the same with or without helpers: the chunks are the same, and their results combine
by integer sums and a max, in any order.
"""
import triton
import triton.language as tl

from .. import indicators as _bits
from .long_rows import (DIGIT_BITS, DIGITS, INV_FIX, PTX_ASM, WIDE, chunk_pass, chunk_sums, nucleus_after_top_k,
                        nucleus_low_key, red_add, search_step, value_key, wide_step, wide_window)
from .tile import token_processed

MAY_EXCEED = tl.constexpr(_bits.MAY_EXCEED)
GREEDY = tl.constexpr(_bits.GREEDY)

BOARD_W = tl.constexpr(64)   # int32 words per row: state (+ the posted pass's taken count), done counters (32 + pass)
DONE_AT = tl.constexpr(32)
# The row's words that the chunks fold their results into (int64, at total_ptr + row * TOTAL_W): a search
# pass's DIGITS integer sums (WIDE for a wide pass), the draw's best (_best_word) at BEST_AT and its mass at
# MASS_AT. The owner sets them before each post, once every chunk of the pass before is done (no chunk then
# writes them).
BEST_AT = tl.constexpr(WIDE.value)
MASS_AT = tl.constexpr(WIDE.value + 1)
TOTAL_W = tl.constexpr(WIDE.value + 8)
LOWEST = tl.constexpr(-2 ** 63)
# Per row: int64 (lo_k, lo, s_lo, shift, by_count, final, slot, flags, seed, position, clamped, early, wide,
# the wide window's w_lo and T), fp32 (thr, m, the cuts' masses). The row's slot, bits, seed and position
# travel with the pass: one round of loads for a helper, where reading them from the slot table took three
# dependent ones.
PARAMS_W = tl.constexpr(16)
# Copies of the search's words (long_rows.chunk_pass COPIES: one per warp of stage 2's 8) per program:
# HIST_COPIES * DIGITS words each, after the chunks' own DIGITS words in the hist scratch (hist_words).
# A program's chunk adds into its copies, adds them up, and leaves the sums in the chunk's words (for the
# weight tied at a cut's key). Only launches cut into at most 2**COPIES_UP_TO_LOG2 chunks per pass use
# them (an explicit long_chunks of 8 or fewer: chunks of many sub-tiles, whose hot words' queues they
# shorten; run 192, 104.9 against 109.1 µs for the long nucleus at 128 rows with 16 chunks); with 128
# chunks of ~1 sub-tile, zeroing and adding up the copies cost more than they save (37.9 / 45.0 against
# 36.0 / 42.3 µs at 1 / 16 rows).
HIST_COPIES = tl.constexpr(8)
COPIES_UP_TO_LOG2 = tl.constexpr(3)
# The launches without copies (cut into more than 2**COPIES_UP_TO_LOG2 chunks: every default launch, 16
# chunks above 16 rows included) give each chunk WIDE words, so that a 16-bit top-p cut's first pass may be
# wide (long_rows.WIDE_BITS): one search pass where two took ~10 µs each. At 128 rows the wide first pass
# without copies beat the narrow passes with them: the long nucleus 1 in 16 93.3 against 101.1 µs (run
# 214). Scratch: 16 KiB per chunk, 2 MiB per row at 128 chunks, 256 KiB per row at 16 (32 MiB at 128 rows).


# The three rules below are the one source of a launch's hist layout, for the launcher (hist_words) and the
# kernels (shared_long_set, sample._sample_row) alike.
@triton.constexpr_function
def hist_copies(chunks_log2):
    """Copies of the search's words per program in a launch whose passes have 2**chunks_log2 chunks."""
    return HIST_COPIES.value if chunks_log2 <= COPIES_UP_TO_LOG2.value else 1


@triton.constexpr_function
def chunk_words(chunks_log2):
    """Each chunk's own words in the hist scratch."""
    return DIGITS.value if chunks_log2 <= COPIES_UP_TO_LOG2.value else WIDE.value


@triton.constexpr_function
def wide_words(chunks_log2, key64):
    """A wide pass's words (0: the launch has none): launches of 16-bit rows whose chunks have WIDE words
    (every SHARED launch of the default chunk counts)."""
    return WIDE.value if not key64 and chunk_words(chunks_log2) == WIDE.value else 0


def hist_words(rows: int, programs: int, chunks: int) -> int:
    """The hist scratch's int64 words for a launch of `rows` rows and `programs` stage-2 programs, its
    passes cut into `chunks` chunks (a power of two): each chunk's words (chunk_words), then each
    program's copies where the launch takes them (hist_copies)."""
    lg = chunks.bit_length() - 1
    copies = hist_copies(lg)
    return rows * chunks * chunk_words(lg) + programs * (copies if copies > 1 else 0) * DIGITS.value


# Row states (0: not used by this launch yet; a fresh board is zero).
STARTED = tl.constexpr(1)    # the row's program is running and has not decided whether its row is long
DONE = tl.constexpr(2)       # the row needs nothing (more) from anyone
# A posted pass: (8 + its index) << TAKEN_BITS, plus the count of its chunks taken so far. The claims add to
# the state word itself, so that a helper learns what is posted and what is left from one load, and its
# claim (an acquire RMW on the word the post released) is also what makes the pass's parameters visible
# to it: one round trip, where a separate taken counter took a dependent load and an acquire RMW more.
# Claims past a pass's chunks (at most one per program at a time) stay far below 2**TAKEN_BITS; one that
# lands after the row is DONE leaves a state that is neither STARTED nor posted, which reads as done.
TAKEN_BITS = tl.constexpr(20)
TAKEN_MASK = tl.constexpr((1 << TAKEN_BITS.value) - 1)
POSTED = tl.constexpr(8 << TAKEN_BITS.value)


@triton.jit
def _pass_of(st):
    """The pass index of a posted state word (_post)."""
    return (st >> TAKEN_BITS) - 8


@triton.jit
def _taken_of(st):
    """The chunks taken of a posted state word's pass."""
    return st & TAKEN_MASK


# How many times a helper that has seen no row running looks at the board again before it leaves
# (each look is a round of loads past L1, ~0.5 us): long enough for a row's program dispatched just
# after it to announce itself.
HELPER_LOOKS = tl.constexpr(8)
# Tests only (under the interpreter, which reads it at run time): discard every pass posted before the
# candidates, as a row whose m differed would (shared_long_set).
FORCE_DISCARD = tl.constexpr(False)


@triton.jit
def batch_may_exceed(slots_ptr, flags_ptr, n_rows, max_slots, ROWS_LOG2: tl.constexpr):
    """Whether a row of the launch belongs to a request whose set may exceed the bound (MAY_EXCEED, set
    at admission). Every program reads the same answer; when none may, the launch shares nothing: no
    row announces itself or touches the board, and helpers leave at once. (A CUDA graph's launches
    always take the SHARED variant, whatever was admitted at capture: this keeps its cost to batches
    that need it.) Read before the PDL wait: stage 1 writes neither the slots nor the table."""
    rr = tl.arange(0, 2 ** ROWS_LOG2)
    found = tl.zeros((), tl.int32)
    b = tl.zeros((), tl.int64)
    while b < n_rows:
        r = b + rr
        s = tl.load(slots_ptr + r, mask=r < n_rows, other=-1).to(tl.int64)
        ok = (s >= 0) & (s < max_slots)
        f = tl.load(flags_ptr + s, mask=ok, other=0)
        found = tl.maximum(found, tl.max(((f & MAY_EXCEED) != 0).to(tl.int32)))
        b += 2 ** ROWS_LOG2
    return found > 0


@triton.jit
def announce(board_ptr, row):
    """First thing in a row's program: helpers help while some row is STARTED or posted. It publishes
    no data (the pass's parameters are released with the post)."""
    tl.atomic_xchg(board_ptr + row * BOARD_W, STARTED, sem="relaxed")


@triton.jit
def _post(board_ptr, ipar_ptr, fpar_ptr, row, i, lo_k, lo, s_lo, shift, by_count, final, clamped, who,
          thr, m, f_hi_k, target_k, f_hi, target, early, wide, w_lo, w_t):
    """Post pass i of the row: its parameters, then (released after them) the state word."""
    j = tl.arange(0, PARAMS_W)
    iv = tl.where(j == 0, lo_k, tl.where(j == 1, lo, tl.where(j == 2, s_lo, tl.where(j == 3, shift, 0))))
    iv = tl.where(j == 4, by_count.to(tl.int64), tl.where(j == 5, final.to(tl.int64), iv))
    iv = tl.where((j >= 6) & (j < 10), who, iv)   # (slot, flags, seed, position) in lanes 6..9
    iv = tl.where(j == 10, clamped.to(tl.int64), tl.where(j == 11, early.to(tl.int64), iv))
    iv = tl.where(j == 12, wide.to(tl.int64), tl.where(j == 13, w_lo, tl.where(j == 14, w_t, iv)))
    fv = tl.where(j == 0, thr, tl.where(j == 1, m, tl.where(j == 2, f_hi_k, tl.where(j == 3, target_k, 0.0))))
    fv = tl.where(j == 4, f_hi, tl.where(j == 5, target, fv))
    tl.store(ipar_ptr + row * PARAMS_W + j, iv)
    tl.store(fpar_ptr + row * PARAMS_W + j, fv)
    tl.debug_barrier()           # every thread's stores before the release
    tl.atomic_xchg(board_ptr + row * BOARD_W, (tl.zeros((), tl.int32) + i + 8) << TAKEN_BITS, sem="release")


@triton.jit
def _who(slot, flags, seed, pos):
    """The row's (slot, flags, seed, position) in lanes 6..9 of a PARAMS_W vector, as _post stores them."""
    jp = tl.arange(0, PARAMS_W)
    return tl.where(jp == 6, slot, tl.where(jp == 7, flags.to(tl.int64), tl.where(jp == 8, seed.to(tl.int64), pos)))


@triton.jit
def _param(p, J: tl.constexpr):
    """Word J of a posted pass's parameters at p, as a plain scalar load. A chunk reads them so after the
    claim's acquire, which invalidates the SM's L1 (CCTL.IVALL after the ATOMG in the sm_90 code), so the
    loads see the post's values; cached in L1, a program's warps then send one request per line to the
    L2, not one per warp and word. Run 220: with `.cg` loads (past L1) every helper of a 1-row launch
    sent 21 requests per warp to the same two lines, and its parameters came ~4.6 µs after its claim
    (~1 µs cached): the long and mid nuclei 25.1 / 27.0 µs at 1 row against 25.6 / 28.5. (Before run 212
    one volatile vector load and a block reduction per value, _get, cost more at 128 rows.)"""
    return tl.load(p + J)


@triton.jit
def _get(v, J: tl.constexpr):
    return tl.sum(tl.where(tl.arange(0, v.shape[0]) == J, v, 0))


@triton.jit
def _best_word(score, token):
    """A chunk's Gumbel-max as one int64 that an atomic max combines exactly, as the reference picks:
    the score's order-preserving integer above (-0.0 taken as +0.0, which it equals), 2**32 - 1 - the
    token below, so that of equal scores the lower token wins."""
    b = tl.where(score == 0.0, 0.0, score).to(tl.int32, bitcast=True)
    b = tl.where(b < 0, b ^ 0x7FFFFFFF, b)
    return (b.to(tl.int64) << 32) + (4294967295 - token.to(tl.int64))


@triton.jit
def _run_chunk(wr, wi, wc, wn, nch, n_sub, logits_ptr, stride_row, V, mask_ptr, mask_stride, token_bits_ptr, words,
               counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
               board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr, copies_ptr,
               SUB_LOG2: tl.constexpr, CHUNKS_LOG2: tl.constexpr, KEY64: tl.constexpr, IS_BF16: tl.constexpr,
               HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr, HC: tl.constexpr, CH_W: tl.constexpr,
               WW: tl.constexpr):
    """Chunks wc..wc+wn-1 of pass wi of row wr (one claim on its counter): run each (a search pass's
    sums in the chunk's own words at hist_ptr, which the weight tied at a cut's key is read from later),
    fold its results into the row's words at total_ptr (TOTAL_W), and count them done (released after
    the atomics).
    Everything about the row comes from the pass's parameters, whoever runs it (_param), once per claim."""
    NCH: tl.constexpr = 2 ** CHUNKS_LOG2
    ip = ipar_ptr + wr * PARAMS_W
    fp = fpar_ptr + wr * PARAMS_W
    lo_k, lo, s_lo, shift = _param(ip, 0), _param(ip, 1), _param(ip, 2), _param(ip, 3)
    slot, flags, seed, pos = _param(ip, 6), _param(ip, 7).to(tl.int32), _param(ip, 8), _param(ip, 9)
    thr, m, f_hi_k, target_k = _param(fp, 0), _param(fp, 1), _param(fp, 2), _param(fp, 3)
    f_hi, target = _param(fp, 4), _param(fp, 5)
    final, by_count = _param(ip, 5) != 0, _param(ip, 4) != 0
    clamped, early = _param(ip, 10) != 0, _param(ip, 11) != 0
    wide, w_lo, w_t = _param(ip, 12) != 0, _param(ip, 13), _param(ip, 14)
    jd = tl.arange(0, DIGITS if WW == 0 else WW)
    c = wc
    while c < wc + wn:
        # The weight tied at each cut's key in the chunks before this one (only once the cut is set).
        tied_k = tl.load(tb_ptr + (wr * 2) * NCH + c, volatile=True)
        tied_p = tl.load(tb_ptr + (wr * 2 + 1) * NCH + c, volatile=True)
        tied_k = tl.where(lo_k >= 0, tied_k, 0)
        tied_p = tl.where(lo >= 0, tied_p, 0)
        words_c = hist_ptr + (wr * NCH + c) * CH_W
        adds_c = words_c
        if HC > 1:
            adds_c = copies_ptr        # the program's copies (HIST_COPIES)
        out, mass = chunk_pass(logits_ptr, stride_row, V, wr, slot, flags, mask_ptr, mask_stride, token_bits_ptr, words,
                         counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                         temp_ptr, thr, m, lo_k, f_hi_k, target_k, tied_k, lo, f_hi, target, tied_p, final,
                         s_lo, shift, by_count, clamped, seed, pos, 0, -1, False, 0.0, None, None, 0,
                         (c * n_sub // nch).to(tl.int32), ((c + 1) * n_sub // nch).to(tl.int32),
                         adds_c, SUB_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, early=early, COPIES=HC, wide=wide,
                         w_lo=w_lo, w_t=w_t, WIDE_W=WW)
        # Fold the chunk's results into the row's words (integer sums and an exact max: the same whatever
        # the order of the chunks), so that the owner reads one row's worth, not one per chunk.
        if final | early:
            tl.atomic_max(total_ptr + wr * TOTAL_W + BEST_AT, _best_word(_get(out, 0), _get(out, 1)), sem="relaxed")
        if final:
            tl.atomic_add(total_ptr + wr * TOTAL_W + MASS_AT, mass, sem="relaxed")
        else:
            h = chunk_sums(adds_c, HC, WW, wide)
            red_add(total_ptr + wr * TOTAL_W + jd, h, h != 0)
            if HC > 1:
                # The chunk's sums in its words, where the owner reads the weight tied at a cut's key; every
                # thread has read the copies before the program's next chunk zeroes them.
                tl.store(words_c + jd, h)
                tl.debug_barrier()
        c += 1
    tl.debug_barrier()
    tl.atomic_add(board_ptr + wr * BOARD_W + DONE_AT + wi, wn, sem="release")


@triton.jit
def _read_state(st, posted, nch):
    """What a row's state word says to a program looking for chunks: whether the row is running
    (STARTED or posted: 1 or 0), and the chunks its posted pass has left untaken (0 unless `posted`,
    which also excludes the looking program's own row)."""
    return (((st == STARTED) | (st >= POSTED)).to(tl.int32),
            tl.where(posted, tl.maximum(nch - _taken_of(st), 0), 0))


@triton.jit
def _look(pend1, free1, first1, pend2, free2, first2):
    return tl.maximum(pend1, pend2), free1 + free2, tl.minimum(first1, first2)


@triton.jit
def _back_off():
    """A program that found nothing to take while some row runs waits 200 ns before its next look, so
    that the idle programs' looks (up to 131 on one row's state line at 1 row) do not crowd the rows' own
    traffic. Since a 1-row look is one scalar load (_scan_board), idle helpers looked ~4x as often as
    with three reductions per look, and a mid nucleus at 1 row, whose owner posts only after its
    candidates, took 28.9-29.1 µs against 26.8; with the back-off 26.4 (run 225). (Run 222's 200 ns
    back-off with the slower looks changed nothing.) No wait under the interpreter."""
    if PTX_ASM:
        tl.inline_asm_elementwise("nanosleep.u32 200; mov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False,
                                  pack=1)


@triton.jit
def _scan_board(board_ptr, row, n_share, home, nch, rr, ROWS: tl.constexpr):
    """One look at the board for a program (its own row `row`, or a helper's id) that seeks chunks to
    run: the first other row, cyclically after `home`, with a posted pass and chunks left (n_share if
    none); whether any row is STARTED or posted (`pending`: 1 or 0); and the chunks left untaken in the
    other rows' posted passes (`free_all`, for _claim). A launch of one row loads its one state word and
    reduces nothing; larger ones take one block reduction of the three per ROWS rows (three block
    reductions made a look ~1.4 µs at 1 row: run 223's timeline; ~0.35 µs as a scalar load, run 224's)."""
    first = tl.full((), 0, tl.int64) + n_share
    pending = tl.zeros((), tl.int32)
    free_all = tl.zeros((), tl.int32)
    if n_share == 1:
        st = tl.load(board_ptr, volatile=True)
        pending, left = _read_state(st, (st >= POSTED) & (row != 0), nch)
        free_all = left
        first = tl.where(left > 0, 0, first)
    else:
        b = tl.zeros((), tl.int64)
        while b < n_share:
            r = b + rr
            inb = r < n_share
            st = tl.load(board_ptr + r * BOARD_W, mask=inb, other=DONE, volatile=True)
            running, left = _read_state(st, inb & (st >= POSTED) & (r != row), nch)
            pend_b, free_b, first_b = tl.reduce(
                (running, left, tl.where(left > 0, (r + n_share - home) % n_share, n_share)), 0, _look)
            pending = tl.maximum(pending, pend_b)
            free_all += free_b
            first = tl.minimum(first, first_b)
            b += ROWS
    return first, pending, free_all


@triton.jit
def _early_token(total_ptr, row, slot, flags, logits_ptr, stride_row, V, mask_ptr, mask_stride, token_bits_ptr,
                 words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                 temp_ptr, KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr,
                 MAX_BIAS: tl.constexpr):
    """The Gumbel-max of the row's first search pass (chunk_pass `early`: over a superset of the set)
    and its value key (-1 if the pass met no token). It is the set's draw if that key lies above both
    cuts' keys (_early_holds): it then belongs to the set, and the argmax over a superset that lies in
    the set is the argmax over the set (the same scores, the same tie rule). The key comes from the
    token's processed value computed again here (one load), while the row's next pass runs."""
    tok, raw, inv_t, met = _early_load(total_ptr, row, slot, logits_ptr, stride_row, temp_ptr)
    return tok, _early_key(tok, raw, inv_t, met, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr,
                           words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr,
                           bias_count_ptr, temp_ptr, KEY64, IS_BF16, HAS_MASK, MAX_BIAS)


@triton.jit
def _early_load(total_ptr, row, slot, logits_ptr, stride_row, temp_ptr):
    """_early_token's loads: the pass's best word, then its token's raw logit, and beside them the slot's
    1 / temperature (prologue.process). Returns the token (0 if the pass met no token), the raw value
    (fp32), 1 / temperature (fp64) and whether the pass met a token. All volatile: issued here, not sunk
    into the branch that uses them (run 210's timeline: the key then waited for the logit after the wide
    step, which had gained what the key lost; run 211's: ~1.2 µs from the wide step to the early draw's
    answer, the temperature's load one round trip of it)."""
    best = tl.load(total_ptr + row * TOTAL_W + BEST_AT, volatile=True)
    inv_t = tl.load(temp_ptr + slot, volatile=True)
    met = best > LOWEST
    tok = tl.where(met, 4294967295 - (best & 4294967295), 0)
    return tok, tl.load(logits_ptr + row * stride_row + tok, volatile=True).to(tl.float32), inv_t, met


@triton.jit
def _early_key(tok, raw, inv_t, met, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
               rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
               KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr):
    """The early draw's value key from _early_load's results (-1 if the pass met no token)."""
    x = token_processed(raw, tok, row, slot, flags, V, mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                        rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                        HAS_MASK, MAX_BIAS, inv_temp=inv_t)
    key, _bits = value_key(x, KEY64, IS_BF16)
    return tl.where(met, key.to(tl.int64), -1)


@triton.jit
def _early_holds(key, lo_k, lo):
    """Whether the early draw (its key, _early_token) lies above both cuts' keys, by a margin of one key:
    that keeps the answer right should its value computed again differ from the chunk's in its last
    bit (it does not: the same arithmetic), at the cost of a final pass for a token one key above the
    cut. A token at the cut's key is left to the final pass (the tie prefix)."""
    return key > tl.maximum(lo_k, lo) + 1


@triton.jit
def _claim(claim, nch, free, progs):
    """How many chunks a program takes at once: `claim` if set, else the chunks left untaken in the
    posted passes (`free`, as the program last saw the board) shared among the launch's programs,
    at least 1 (guided self-scheduling: large takes while many chunks are left, single ones towards
    a pass's end, so that no program sits on chunks while others idle). Chunks' results combine in any
    order, so this changes who runs what, never a result; it cuts the fixed cost per
    take (the counter's atomic, the search for a posted row, a round of parameter loads, the done
    count) when long rows have more chunks than there are programs to run them."""
    return tl.minimum(tl.where(claim > 0, claim, tl.maximum(1, tl.cdiv(free, progs))), nch)


@triton.jit
def _open(board_ptr, total_ptr, row):
    """The row's board and words for this launch: counters zero (no helper touches them before the
    first post), the pass's sums zero, the draw's best at its lowest."""
    z = tl.arange(0, BOARD_W)
    tl.store(board_ptr + row * BOARD_W + z, tl.zeros((BOARD_W,), tl.int32), mask=z > 0)
    # Words DIGITS..WIDE (a wide pass's) are zero already: zero when allocated, and zeroed by the owner
    # after every wide pass (shared_long_set), so that no launch pays for zeroing 2048 words on its chain.
    tl.store(total_ptr + row * TOTAL_W + tl.arange(0, DIGITS), tl.zeros((DIGITS,), tl.int64))
    tl.store(total_ptr + row * TOTAL_W + BEST_AT, LOWEST)
    tl.store(total_ptr + row * TOTAL_W + MASS_AT, tl.zeros((), tl.int64))


@triton.jit
def post_first_pass(board_ptr, ipar_ptr, fpar_ptr, total_ptr, row, m, slot, flags, seed, pos, early,
                    KEY64: tl.constexpr, lse_all, top_p, V, IS_BF16: tl.constexpr, WW: tl.constexpr):
    """Post, before the row's candidates are known, the first search pass of a nucleus over every key
    (by mass relative to exp(m), no other cut): the pass a long nucleus without top-k or min-p starts
    with when its candidates do not narrow it. Helpers run it while the row's program merges its
    candidates; shared_long_set (spec) takes it as its first pass if the row turns out long with this m,
    and otherwise lets it run out. The same integer sums as the pass it stands for: the same result.
    early: it draws early too (shared_long_set's `drew` for such a row). WW > 0 (a launch with wide
    passes): the pass is wide, over the window from the bound below that the full normalizer lse_all
    gives (long_rows.nucleus_low_key, as sample._cut_bounds gives it the candidates) up to m's key;
    shared_long_set reads that window back from the pass's parameters."""
    KEY_BITS: tl.constexpr = 32 if KEY64 else 16
    who = _who(slot, flags, seed, pos)
    _open(board_ptr, total_ptr, row)
    no = tl.full((), -1, tl.int64)
    false = row < 0
    zero = tl.full((), 0.0, tl.float32)
    inf = tl.full((), float("inf"), tl.float32)
    wide = false
    w_lo = no + 1
    w_t = no + 1
    if WW > 0:
        k_lo, wide = nucleus_low_key(m, tl.exp(lse_all - m), top_p, float("-inf"), V, KEY64, IS_BF16)
        hi, _bits = value_key(m, KEY64, IS_BF16)
        w_lo, w_t = wide_window(k_lo, hi.to(tl.int64), WW)
    _post(board_ptr, ipar_ptr, fpar_ptr, row, 0, no, no, no + 1, no + 1 + (KEY_BITS - DIGIT_BITS), false, false, false,
          who, tl.full((), float("-inf"), tl.float32), m, zero, inf, zero, inf, early, wide, w_lo, w_t)


@triton.jit
def shared_long_set(row, n_share, n_help, claim, long_set, search_k, search_p, thr, m, top_p, k, p_lo,
                    p_shift, p_clamped, p_klo, p_kok, hi_key, slot, flags, seed, pos, logits_ptr, stride_row, V,
                    mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr, pres_ptr,
                    bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr, board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr,
                    SUB_LOG2: tl.constexpr, CHUNKS_LOG2: tl.constexpr, ROWS_LOG2: tl.constexpr,
                    KEY64: tl.constexpr, IS_BF16: tl.constexpr, HAS_MASK: tl.constexpr, MAX_BIAS: tl.constexpr,
                    need_lf, spec=False, m_spec=0.0):
    """The row's long set if long_set (its passes, shared: module docstring), and help with the other
    rows' until none is posted or undecided. n_share: the batch's rows; a program with row >= n_share
    is one of n_help helpers and has no row of its own. claim: the chunks a program takes at once
    (0: _claim chooses). (p_lo, p_shift, p_clamped): where the top-p cut's search starts
    (long_rows.nucleus_start; raised to the top-k cut's key once a top-k search has set it, hi_key
    being the range's top: long_rows.nucleus_after_top_k). (p_klo, p_kok): the key below which the cut
    cannot lie, and whether it bounds (long_rows.nucleus_low_key). In a launch cut into more than
    2**COPIES_UP_TO_LOG2 chunks (chunk_words, wide_words), a 16-bit top-p search that the candidates do
    not narrow to one pass, and that was not posted before them, starts with a wide pass over p_klo ..
    hi_key + 1 (long_rows.wide_window). Returns the set's draw on the sampling stream, its
    log-normalizer and its top-p cut's target (kernels/long_rows.set_head), meaningful only for a long
    row. spec, m_spec: whether the row's program posted post_first_pass, with which m.

    A row that draws and does not need the log-normalizer (need_lf false: no processed
    log-probabilities, no draft distribution) has its first search pass draw too (chunk_pass
    `early`); when that token lies above the cuts (_early_holds: about as often as the set's mass
    over the row's, top_p for a nucleus), the final pass is not run, and the log-normalizer is
    NaN."""
    KEY_BITS: tl.constexpr = 32 if KEY64 else 16
    NCH: tl.constexpr = 2 ** CHUNKS_LOG2
    HC: tl.constexpr = hist_copies(CHUNKS_LOG2)
    CH_W: tl.constexpr = chunk_words(CHUNKS_LOG2)
    WW: tl.constexpr = wide_words(CHUNKS_LOG2, KEY64)
    # This program's copies of the search's words (HC > 1): after every chunk's own words.
    copies_ptr = hist_ptr + n_share * NCH * CH_W + tl.program_id(0).to(tl.int64) * (HIST_COPIES * DIGITS)
    ROWS: tl.constexpr = 2 ** ROWS_LOG2
    n_sub = tl.cdiv(V, 2 ** SUB_LOG2)
    nch = tl.minimum(n_sub, NCH)
    own = board_ptr + row * BOARD_W
    cc = tl.arange(0, NCH)
    jd = tl.arange(0, DIGITS)
    rr = tl.arange(0, ROWS)
    who = _who(slot, flags, seed, pos)
    # The owner's search: phase 0 the top-k cut (by count), 1 the top-p cut (by mass), 2 the final pass,
    # 3 nothing (left) to do for the own row. p: pass within the phase; i: pass index in the launch.
    phase = tl.where(long_set, tl.where(search_k, 0, tl.where(search_p, 1, 2)), 3)
    p = tl.zeros((), tl.int32)
    i = tl.zeros((), tl.int32)
    # The top-p cut's search starts at (p_lo, p_shift, p_clamped); the top-k cut's searches all keys.
    s_lo = tl.where(phase == 1, p_lo, 0)
    shift = tl.where(phase == 1, p_shift, KEY_BITS - DIGIT_BITS)
    clamped = (phase == 1) & p_clamped
    s_f_hi = tl.full((), 0, tl.int64)            # integer sums (long_rows.search_step)
    s_target = tl.full((), 0.0, tl.float32)
    lo_k = tl.full((), -1, tl.int64)
    f_hi_k = tl.full((), 0.0, tl.float32)
    target_k = tl.full((), float("inf"), tl.float32)
    lo, f_hi, target = lo_k, f_hi_k, target_k
    drawn = tl.full((), 0, tl.int64)
    log_final = tl.full((), float("nan"), tl.float32)
    progs = n_share + n_help
    # Whether the first pass draws early (a search follows: phase 0 or 1).
    drew = (phase < 2) & ((flags & GREEDY) == 0) & ~need_lf
    # The early draw's token and key, once the first pass is done (_early_token).
    e_tok = tl.zeros((), tl.int64)
    e_key = tl.full((), -1, tl.int64)
    e_have = phase < 0                            # false
    all_taken = phase < 0                         # whether the own posted pass has no chunk left to claim
    # spec: a first pass was posted before the candidates (post_first_pass, drawing early as `drew`
    # says). It is the row's first pass if the row is a long nucleus with that m (its search then starts
    # from every key); else it runs out, and a long row discards its sums (not its early draw, which m
    # does not change) and posts its own first pass after it.
    discard = spec & (phase < 3) & ((phase != 1) | (m != m_spec))
    if FORCE_DISCARD:
        discard = spec & (phase < 3)
    if spec & (phase == 1) & ~discard:
        s_lo = tl.full((), 0, tl.int64)
        shift = tl.full((), KEY_BITS - DIGIT_BITS, tl.int64)
        clamped = phase < 0
    # Whether the row's next post is a wide first top-p pass (over the window w_lo, w_t): not where the
    # candidates narrow the search to one pass (p_clamped) or a pass posted before them is taken as the first.
    wide = phase < 0                              # false
    w_lo = tl.zeros((), tl.int64)
    w_t = tl.zeros((), tl.int64)
    if WW > 0:
        wide = (phase == 1) & ~p_clamped & p_kok & ~(spec & ~discard)
        if wide:
            w_lo, w_t = wide_window(p_klo, hi_key, WW)
        if spec & ~discard:
            # The pass posted before the candidates is the first: wide as post_first_pass made it. Three
            # scalar loads issued together (one vector load and three block reductions took ~1.3 µs from
            # entering here to the loop at 1 row: run 224's timeline).
            ip = ipar_ptr + row * PARAMS_W
            wide = tl.load(ip + 12, volatile=True) != 0
            w_lo, w_t = tl.load(ip + 13, volatile=True), tl.load(ip + 14, volatile=True)
    if (phase < 3) & ~spec:
        _open(board_ptr, total_ptr, row)
        _post(board_ptr, ipar_ptr, fpar_ptr, row, i, lo_k, lo, s_lo, shift, phase == 0, phase == 2, clamped, who,
              thr, m, f_hi_k, target_k, f_hi, target, drew, wide, w_lo, w_t)
    elif (phase == 3) & (row < n_share):
        tl.atomic_xchg(own, DONE, sem="relaxed")   # publishes no data: no fence
    # Whether this program has seen a row running: a helper that has not looks at the board up to
    # HELPER_LOOKS times (looks) before it leaves (module docstring).
    seen = row < n_share
    looks = tl.zeros((), tl.int32)
    # A lone row that is not long has no one to help: it skips the board (its helpers still read it).
    go = (phase < 3) | (n_share > 1) | (row >= n_share)
    # A pass posted before the candidates is often done when its owner gets here (1 row: its chunks ran
    # while the owner merged its candidates): the owner's first round looks at the done count before
    # claiming (a claim then finds every chunk taken: one round trip for nothing, run 224's timeline),
    # and claims in the next round if the pass is not done.
    peek = spec & ~discard
    while go:
        wr = tl.full((), -1, tl.int64)       # the chunk to run this round: row, pass, chunk
        wi = tl.zeros((), tl.int32)
        wc = tl.zeros((), tl.int32)
        wn = tl.zeros((), tl.int32)         # chunks wc..wc+wn-1
        acted = phase > 3                   # false
        if phase < 3:
            # The own row's chunks: one at a time unless `claim`; once they are all taken, no more claims
            # (each was an RMW on the row's chain) until the next post.
            g = _claim(claim, nch, 1, progs)
            c = nch + tl.zeros((), tl.int32)
            if ~all_taken & ~peek:
                c = _taken_of(tl.atomic_add(own, g, sem="relaxed"))
                all_taken = c >= nch
            if c < nch:
                wr, wi, wc, wn = row, i, c, tl.minimum(g, nch - c)
            elif tl.atomic_add(own + DONE_AT + i, 0, sem="acquire") >= nch:
                # Every chunk of the own pass is done (each folded its results into the row's words).
                acted = phase < 3
                if phase == 2:
                    best = tl.load(total_ptr + row * TOTAL_W + BEST_AT, volatile=True)
                    mass = tl.load(total_ptr + row * TOTAL_W + MASS_AT, volatile=True)
                    drawn = 4294967295 - (best & 4294967295)
                    log_final = m + tl.log(mass.to(tl.float32) * INV_FIX)
                    phase = 3
                    go = n_share > 1   # a lone row has no one else to help
                    tl.atomic_xchg(own, DONE, sem="relaxed")
                else:
                    by_count = phase == 0
                    # The pass's sums, which its chunks folded into the row's words; zeroed for the next
                    # pass (the same threads' loads came first; the post releases the stores).
                    done = discard & ~discard     # false
                    jj = tl.zeros((), tl.int32)
                    was_wide = wide & ~discard    # a discarded pass posted before the candidates was not
                    if WW > 0:
                        jw = tl.arange(0, WW)
                        if was_wide:
                            total_w = tl.load(total_ptr + row * TOTAL_W + jw, volatile=True)
                            tl.store(total_ptr + row * TOTAL_W + jw, tl.zeros((WW,), tl.int64))
                            # The early draw (a wide pass is the search's first): its loads (_early_load) are
                            # issued before the step below, which runs while they are in flight, and its key
                            # is computed after. Issued for every row: three words.
                            e_tok, e_raw, e_inv_t, e_met = _early_load(total_ptr, row, slot, logits_ptr, stride_row,
                                                                       temp_ptr)
                            s_lo, shift, s_target, s_f_hi, jj, done = wide_step(total_w, w_lo, w_t, top_p, KEY_BITS)
                            if drew:
                                e_key = _early_key(e_tok, e_raw, e_inv_t, e_met, row, slot, flags, V, mask_ptr,
                                                   mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr,
                                                   pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                                                   KEY64, IS_BF16, HAS_MASK, MAX_BIAS)
                                e_have = drew
                            p += 1
                            clamped = phase < 0
                            wide = phase < 0
                        elif discard:
                            # A pass posted before the candidates may have been wide: its words back to zero.
                            tl.store(total_ptr + row * TOTAL_W + jw, tl.zeros((WW,), tl.int64))
                    if ~was_wide:
                        total = tl.load(total_ptr + row * TOTAL_W + jd, volatile=True)
                        tl.store(total_ptr + row * TOTAL_W + jd, tl.zeros((DIGITS,), tl.int64))
                        if ~discard:
                            s_lo, shift, s_target, s_f_hi, jj, done = search_step(
                                total, s_lo, shift, s_target, s_f_hi, p == 0, by_count, k, top_p, clamped, KEY_BITS)
                            p += 1
                            clamped = phase < 0
                    discard = discard & ~discard
                    if done:
                        cut = phase
                        if by_count:
                            lo_k, f_hi_k, target_k = s_lo, s_f_hi.to(tl.float32) * INV_FIX, s_target
                            phase = tl.where(search_p, 1, 2)
                            p_lo, p_shift, p_clamped = nucleus_after_top_k(p_lo, p_shift, p_clamped, lo_k, hi_key,
                                                                           KEY_BITS)
                        else:
                            lo, f_hi, target = s_lo, s_f_hi.to(tl.float32) * INV_FIX, s_target
                            phase = 2
                        # The cut is set: the weight tied at its key before each chunk, for later passes; none
                        # follows where the early draw (already read) holds.
                        if ~((phase == 2) & e_have & _early_holds(e_key, lo_k, lo)):
                            tied = tl.load(hist_ptr + (row * NCH + cc) * CH_W + jj, mask=cc < nch, other=0,
                                           volatile=True)
                            tl.store(tb_ptr + (row * 2 + cut) * NCH + cc, tl.cumsum(tied, 0) - tied, mask=cc < nch)
                        p = 0
                        s_lo = p_lo       # the top-p cut's start (the final pass ignores these)
                        shift = p_shift
                        clamped = p_clamped & (phase == 1)
                        s_f_hi = tl.full((), 0, tl.int64)
                        s_target = tl.full((), 0.0, tl.float32)
                    i += 1
                    if (phase == 2) & drew:
                        if ~e_have:   # the search took one pass
                            e_tok, e_key = _early_token(total_ptr, row, slot, flags, logits_ptr, stride_row, V,
                                                        mask_ptr, mask_stride, token_bits_ptr, words, counts_ptr,
                                                        rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr,
                                                        bias_count_ptr, temp_ptr, KEY64, IS_BF16, HAS_MASK, MAX_BIAS)
                        if _early_holds(e_key, lo_k, lo):
                            drawn = e_tok
                            phase = 3
                            go = n_share > 1   # a lone row has no one else to help (its helpers leave alone)
                            tl.atomic_xchg(own, DONE, sem="relaxed")
                        else:
                            # The final pass draws again: its chunks start from the lowest word.
                            tl.store(total_ptr + row * TOTAL_W + BEST_AT, LOWEST)
                    if phase < 3:
                        _post(board_ptr, ipar_ptr, fpar_ptr, row, i, lo_k, lo, s_lo, shift, phase == 0, phase == 2,
                              clamped, who, thr, m, f_hi_k, target_k, f_hi, target, phase < 0, wide, w_lo, w_t)
                        all_taken = phase > 3
                    if drew & ~e_have & (phase < 2):
                        # The first pass is done and the search goes on: the early draw's token and key while
                        # the next pass's chunks run (off the row's chain: run 182's timeline showed ~3 us
                        # from the last pass's end to the row's when this came after it).
                        e_tok, e_key = _early_token(total_ptr, row, slot, flags, logits_ptr, stride_row, V, mask_ptr,
                                                    mask_stride, token_bits_ptr, words, counts_ptr, rep_ptr, freq_ptr,
                                                    pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr, temp_ptr,
                                                    KEY64, IS_BF16, HAS_MASK, MAX_BIAS)
                    e_have = e_have | drew
        # An owner whose pass is all taken but not done helps no other row meanwhile: it looks at its done
        # count again at once, so that its next post follows the pass's last chunk by one round trip, not
        # by a scan of the board or another row's chunk (run 196: 1.0-2.1 µs less for the long and mid
        # nuclei at 1 / 16 / 128 rows).
        peeked = peek
        peek = peek & ~peek
        if (wr < 0) & ~acted & ~((phase < 3) & (all_taken | peeked)):
            # Help: the first other row (cyclically after this one) with a posted pass and chunks left.
            home = row % n_share   # helpers spread over the rows too
            first, pending, free_all = _scan_board(board_ptr, row, n_share, home, nch, rr, ROWS)
            if first < n_share:
                r1 = (first + home) % n_share
                # The claim is the acquire of the pass's post (TAKEN_BITS).
                g = _claim(claim, nch, free_all, progs)
                w = tl.atomic_add(board_ptr + r1 * BOARD_W, g, sem="acquire")
                if w >= POSTED:
                    c = _taken_of(w)
                    if c < nch:
                        wr, wi, wc, wn = r1, _pass_of(w), c, tl.minimum(g, nch - c)
            elif (pending == 0) & (phase == 3):
                looks += 1
                if seen | (looks >= HELPER_LOOKS):
                    go = phase > 3
            elif phase == 3:
                _back_off()
            seen = seen | (pending != 0)
        if wr >= 0:
            _run_chunk(wr, wi, wc, wn, nch, n_sub, logits_ptr, stride_row, V, mask_ptr, mask_stride, token_bits_ptr,
                       words, counts_ptr, rep_ptr, freq_ptr, pres_ptr, bias_ids_ptr, bias_vals_ptr, bias_count_ptr,
                       temp_ptr, board_ptr, ipar_ptr, fpar_ptr, total_ptr, tb_ptr, hist_ptr, copies_ptr, SUB_LOG2,
                       CHUNKS_LOG2, KEY64, IS_BF16, HAS_MASK, MAX_BIAS, HC, CH_W, WW)
    return drawn, log_final, target
