"""Stage 2's selection: the row's best C keys out of its Z tile lists, without sorting networks.

The tile lists (E row keys per tile, each list sorted descending, tiles in vocabulary order) are read
as one (Z, E) block. Among keys of equal value its flat order is the vocabulary order:
within a list equal values come in ascending index (the inverted index is the key's low part), and
the lists follow each other in tile order. So the C best keys are found by value alone:

1. a digit-by-digit search on the value part (5 bits per round, by histogram: 4 rounds for 16-bit
   values, 7 for fp32) finds v*, the largest value with at least C keys at or above it;
2. every key above v* is taken, plus the first (C - #above) keys equal to v* in flat order, i.e. the
   lowest indices: a prefix count settles the ties, and is skipped when all of them fit (the usual
   case: the histograms already counted them);
3. the C chosen keys are compacted (a prefix count over the lists) through `scratch` and ranked
   against each other (one C x C comparison). `select_top` returns them unsorted with their ranks:
   the top-k stores each output at its rank and never needs them in order; `select_top_sorted`
   stores them at their ranks in scratch and reads them back sorted (the sampler's rules walk the
   candidates in rank order).

A few dozen barriers in all, where the bitonic merge of the same lists took ~140 (docs/PERFORMANCE.md).
Padding keys (0) rank last, so a row with fewer than C real keys comes out zero-padded.
"""
import triton
import triton.language as tl

from .rank import ranks


@triton.jit
def value_threshold(v, C, VBITS: tl.constexpr, DIGIT: tl.constexpr = 5):
    """The largest t such that at least C of the values `v` (uint32, VBITS significant bits) are >= t
    (0 if fewer than C), digit by digit from the top: per DIGIT-bit digit one histogram of the values
    that share the digits found so far, and a suffix sum. Also returns how many values lie above t
    and how many equal it (from the last histogram).

    Why 5 bits: a histogram of at most 32 bins is one per warp with no exchange between warps. On the
    H100 (run 51, 2048 keys, 8 warps, 16-bit values) the search took 1.9 us in four 5-bit rounds, 2.0
    in four 4-bit rounds, 2.5 in three 6-bit rounds and 3.1 in two 8-bit rounds (256 bins)."""
    BINS: tl.constexpr = 2 ** DIGIT
    ROUNDS: tl.constexpr = (VBITS + DIGIT - 1) // DIGIT
    b = tl.arange(0, BINS)
    prefix = tl.zeros((), tl.uint32)
    above = tl.zeros((), tl.int32)          # values above the prefix's range
    at = tl.zeros((), tl.int32)             # values equal to the prefix (after the last round)
    for r in tl.static_range(ROUNDS):
        lo = DIGIT * (ROUNDS - 1 - r)     # the digit is bits [lo, lo + DIGIT) (the first one narrower)
        d = ((v >> lo) & (BINS - 1)).to(tl.int32)
        if r == 0:
            h = tl.histogram(d, BINS)
        else:
            h = tl.histogram(d, BINS, mask=(v >> (lo + DIGIT)) == (prefix >> (lo + DIGIT)))
        at_least = above + tl.sum(h) - tl.cumsum(h, axis=0) + h   # values >= each candidate digit
        digit = tl.maximum(tl.sum((at_least >= C).to(tl.int32)) - 1, 0)
        above = above + tl.sum(tl.where(b > digit, h, 0))
        at = tl.sum(tl.where(b == digit, h, 0))
        prefix = prefix + (digit.to(tl.uint32) << lo)
    return tl.where(v.shape[0] >= C, prefix, 0), above, at


@triton.jit
def compact_best(keys, C, scratch, KEY64: tl.constexpr):
    """Steps 1-2 of the module docstring and the compaction of step 3: the C best of the row's tile
    lists (keys as (lists, E), each list sorted descending, lists in vocabulary order), stored unsorted
    at scratch[0:C].

    The chosen keys of each list are a prefix of it (they are the C largest keys, and within a list
    ties come in index order), so a key's place is its list's offset (a prefix count over the lists)
    plus its place in the list: no prefix count over every key."""
    ZP: tl.constexpr = keys.shape[0]
    E: tl.constexpr = keys.shape[1]
    v = (keys >> 32).to(tl.uint32)
    flat = tl.reshape(v, [ZP * E], can_reorder=True)   # the histograms ignore the order
    if KEY64:
        thr, n_above, n_at = value_threshold(flat, C, 32)
    else:
        thr, n_above, n_at = value_threshold(flat, C, 16)
    take = v >= thr
    if n_above + n_at > C:
        # More keys tie at thr than fit: the first ones in flat order (lower indices) are taken.
        tie = (v == thr).to(tl.int32)
        per_list = tl.sum(tie, axis=1)
        tie_before = (tl.cumsum(per_list, axis=0) - per_list)[:, None] + tl.cumsum(tie, axis=1) - tie
        take = (v > thr) | ((tie != 0) & (tie_before < C - n_above))
    n_taken = tl.sum(take.to(tl.int32), axis=1)
    pos = (tl.cumsum(n_taken, axis=0) - n_taken)[:, None] + tl.arange(0, E)[None, :]
    tl.store(scratch + pos, keys, mask=take & (pos < C))
    tl.debug_barrier()


@triton.jit
def select_top(cand_ptr, row, Z, scratch, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr,
               C_LOG2: tl.constexpr, KEY64: tl.constexpr):
    """The best 2**C_LOG2 of the row's Z tile lists of 2**E_LOG2 keys each (module docstring), unsorted,
    and the rank of each (0 = best; a permutation of 0..C-1, padding last). `scratch` holds
    2**C_LOG2 keys of this row."""
    C: tl.constexpr = 2 ** C_LOG2
    t = tl.arange(0, 2 ** Z_LOG2)[:, None]
    e = tl.arange(0, 2 ** E_LOG2)[None, :]
    keys = tl.load(cand_ptr + (row * Z + t) * (2 ** E_LOG2) + e, mask=t < Z, other=0)
    compact_best(keys, C, scratch, KEY64)
    chosen = tl.load(scratch + tl.arange(0, C))
    tl.debug_barrier()   # the caller may reuse scratch
    return chosen, ranks(chosen, C)


@triton.jit
def in_rank_order(keys, rank, scratch, C: tl.constexpr):
    """Keys given with their ranks (a permutation of 0..C-1), sorted descending, through `scratch`
    (C keys), with the first and the last of them as scalars read back beside the block: taking one
    element of a block is a block reduction (a shuffle tree and a barrier on stage 2's critical path)."""
    tl.store(scratch + rank, keys)
    tl.debug_barrier()
    top = tl.load(scratch + tl.arange(0, C))
    first = tl.load(scratch)
    last = tl.load(scratch + (C - 1))
    tl.debug_barrier()   # the caller may reuse scratch (the refill path does)
    return top, first, last


@triton.jit
def select_top_sorted(cand_ptr, row, Z, scratch, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr,
                      C_LOG2: tl.constexpr, KEY64: tl.constexpr):
    """Top 2**C_LOG2 (sorted descending) of the row's Z tile lists of 2**E_LOG2 keys each (module
    docstring), with the first and the last of them as scalars (in_rank_order). `scratch` holds
    2 * 2**C_LOG2 keys of this row."""
    C: tl.constexpr = 2 ** C_LOG2
    chosen, rank = select_top(cand_ptr, row, Z, scratch, Z_LOG2, E_LOG2, C_LOG2, KEY64)
    return in_rank_order(chosen, rank, scratch + C, C)
