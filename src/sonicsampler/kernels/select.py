"""Stage 2's selection: the row's best C keys out of its Z tile lists, sorted descending, without
sorting networks.

The tile lists (E row keys per tile, each list sorted descending, tiles in vocabulary order) are read
as one flat block of Z*E keys. Among keys of equal value that flat order is the vocabulary order:
within a list equal values come in ascending index (the inverted index is the key's low part), and
the lists follow each other in tile order. So the C best keys are found by value alone:

1. a digit-by-digit search on the value part (8 bits per round, by histogram: 2 rounds for 16-bit
   values, 4 for fp32) finds v*, the largest value with at least C keys at or above it;
2. every key above v* is taken, plus the first (C - #above) keys equal to v* in flat order, i.e. the
   lowest indices: a prefix count settles the ties;
3. the C chosen keys are compacted (prefix count) through `scratch`, ranked against each other (one
   C x C comparison) and stored at their ranks.

A few dozen barriers in all, where the bitonic merge of the same lists took ~140 (docs/PERFORMANCE.md).
Padding keys (0) rank last, so a row with fewer than C real keys comes out zero-padded.
"""
import triton
import triton.language as tl

from .rank import ranks


@triton.jit
def value_threshold(v, C, VBITS: tl.constexpr):
    """The largest t such that at least C of the values `v` (uint32, VBITS significant bits) are >= t
    (0 if fewer than C), digit by digit from the top: per 8-bit digit one 256-bin histogram of the
    values that share the digits found so far, and a suffix sum. On the H100 this took 3.0 us where
    a 16-way search by comparisons (twice the rounds) took 3.6 (run 18, docs/PERFORMANCE.md)."""
    b = tl.arange(0, 256)
    prefix = tl.zeros((), tl.uint32)
    above = tl.zeros((), tl.int32)          # values above the prefix's range
    for r in tl.static_range(VBITS // 8):
        shift = VBITS - 8 * (r + 1)
        if r == 0:
            h = tl.histogram(((v >> shift) & 0xFF).to(tl.int32), 256)
        else:
            h = tl.histogram(((v >> shift) & 0xFF).to(tl.int32), 256, mask=(v >> (shift + 8)) == (prefix >> (shift + 8)))
        at_least = above + tl.sum(h) - tl.cumsum(h, axis=0) + h   # values >= each candidate digit
        digit = tl.maximum(tl.sum((at_least >= C).to(tl.int32)) - 1, 0)
        above = above + tl.sum(tl.where(b > digit, h, 0))
        prefix = prefix + (digit.to(tl.uint32) << shift)
    return tl.where(v.shape[0] >= C, prefix, 0)


@triton.jit
def compact_best(keys, C, scratch, KEY64: tl.constexpr):
    """Steps 1-2 of the module docstring and the compaction of step 3: the C best of a flat block of
    row keys in vocabulary order among equal values, stored unsorted at scratch[0:C]."""
    v = (keys >> 32).to(tl.uint32)
    if KEY64:
        thr = value_threshold(v, C, 32)
    else:
        thr = value_threshold(v, C, 16)
    above = v > thr
    tie = v == thr
    tie_before = tl.cumsum(tie.to(tl.int32), axis=0) - tie.to(tl.int32)
    take = above | (tie & (tie_before < C - tl.sum(above.to(tl.int32))))
    pos = tl.cumsum(take.to(tl.int32), axis=0) - 1
    tl.store(scratch + pos, keys, mask=take & (pos < C))
    tl.debug_barrier()


@triton.jit
def select_top_sorted(cand_ptr, row, Z, scratch, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr,
                      C_LOG2: tl.constexpr, KEY64: tl.constexpr):
    """Top 2**C_LOG2 (sorted descending) of the row's Z tile lists of 2**E_LOG2 keys each (module
    docstring). `scratch` holds 2 * 2**C_LOG2 keys of this row."""
    C: tl.constexpr = 2 ** C_LOG2
    N: tl.constexpr = 2 ** (Z_LOG2 + E_LOG2)
    i = tl.arange(0, N)
    keys = tl.load(cand_ptr + row * Z * (2 ** E_LOG2) + i, mask=(i >> E_LOG2) < Z, other=0)
    compact_best(keys, C, scratch, KEY64)
    lane = tl.arange(0, C)
    chosen = tl.load(scratch + lane)
    tl.store(scratch + C + ranks(chosen, C), chosen)
    tl.debug_barrier()
    top = tl.load(scratch + C + lane)
    tl.debug_barrier()   # the caller may reuse scratch (the refill path does)
    return top
