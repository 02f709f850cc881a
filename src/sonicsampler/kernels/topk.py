"""The two-stage top-k.

Stage 1, one program per (row, tile) on one flat grid dimension: the tile's exact top E (E <= C, C = k
rounded up to a power of two) as 64-bit row keys, sorted descending, in `cand[row, tile, :]`, plus
whether the tile holds a NaN. Three strategies (emit_tile_candidates):

- "extract": groups of 8 neighbouring keys give their best two by register reductions, and E rounds
  take the best group head (groups_topk). For 16-bit logits the tile is loaded and keyed in a few
  instructions per logit (load_tile_groups). No filter, no scratch, no sort.
- "rank" / "bitonic": the tile is cut into 2E strided groups; tau, the E-th largest group maximum, is a
  lower bound of the tile's E-th largest key (E groups have a maximum >= tau and keys are distinct), so
  every key >= tau is a candidate and nothing below tau can be in the top E. When at most M = 4E keys
  pass (typically about 1.4 E) they are compacted through a small scratch and only those M are ranked
  or sorted; otherwise (heavy ties, adversarial data) "rank" raises tau to the exact E-th key by a
  bitwise search and "bitonic" sorts the whole tile. Every path gives the same exact result.

Stage 2, one program per row: selects the row's top C of the tile lists by a search on their values and
ranks those C against each other (kernels/select.py); each output is stored at its rank, its value
decoded from its key.
That is exact unless some tile is *saturated*: its last emitted key lies above T, the k-th merged key,
so keys it did not emit may belong to the top k. (A tile whose last emitted key is <= T cannot hide
one: its unemitted keys are below T, and k emitted keys are >= T.) At most k/E tiles can be saturated;
stage 2 re-reads each one and ranks the keys it did not emit that lie above T (its best C of them, if
more) into the merged list (merge_tile_above). Realistic logits spread their top k over many tiles, so
this path is rare; adversarial inputs (sorted rows) take it and stay exact.
"""
import triton
import triton.language as tl

from .bitonic import topk_sorted
from .pdl import let_next_start, wait_for_previous
from .keys import (pack_tile_keys, row_key_index, row_key_to_tile_key, row_key_value, tile_key_quotients,
                   tile_keys_to_row_keys)
from .rank import kth_largest, store_top_sorted
from .select import in_rank_order, select_top


@triton.jit
def load_tile_keys(logits_ptr, row, stride_row, V, tile, BLOCK_LOG2: tl.constexpr, KEY64: tl.constexpr):
    """Packed keys of one tile of one row, and its NaN count (NaN lanes get key 0)."""
    local = tl.arange(0, 2 ** BLOCK_LOG2)
    start = tile.to(tl.int64) * (2 ** BLOCK_LOG2)
    offs = start + local
    inb = offs < V
    x = tl.load(logits_ptr + row * stride_row + offs, mask=inb, other=0.0)
    xf = x.to(tl.float32)
    is_nan = xf != xf
    return pack_tile_keys(x, local, offs, inb & (~is_nan), KEY64), tl.sum(is_nan.to(tl.int32))


@triton.jit
def compact_at_least(keys2d, tau, scratch, M_LOG2: tl.constexpr):
    """The keys >= tau of a tile viewed as (R, G) (row r holds lanes r*G .. r*G + G - 1), compacted in
    index order into a zero-padded block of M = 2**M_LOG2 through `scratch`, and their count. The
    block holds them all only when the count is <= M (beyond that nothing is written, and the caller
    takes its fallback).

    Positions come from a prefix sum over the R row counts plus prefix sums along the rows: on the
    H100 that costs less than one prefix sum over the whole tile (run 11, docs/PERFORMANCE.md)."""
    M: tl.constexpr = 2 ** M_LOG2
    sel = (keys2d >= tau).to(tl.int32)
    per_row = tl.sum(sel, axis=1)
    n_sel = tl.sum(per_row)
    pos = (tl.cumsum(per_row, axis=0) - per_row)[:, None] + tl.cumsum(sel, axis=1) - sel
    tl.store(scratch + pos, keys2d, mask=(sel != 0) & (n_sel <= M))
    tl.debug_barrier()
    lane = tl.arange(0, M)
    return tl.load(scratch + lane, mask=lane < n_sel, other=0), n_sel


@triton.jit
def tile_topk(keys, scratch, BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr, M_LOG2: tl.constexpr,
              DESCENDING: tl.constexpr):
    """Exact top 2**E_LOG2 of 2**BLOCK_LOG2 distinct packed keys (0 = empty), sorted.

    Groups: 2E. Filter capacity: M = 2**M_LOG2 >= 2E keys, compacted through `scratch`. With 2E groups
    about 1.4 E keys pass on typical logits; M = 4E makes an overflow (and its slow path, whose one
    straggling tile would set the whole launch's latency) practically impossible."""
    M: tl.constexpr = 2 ** M_LOG2
    G_LOG2: tl.constexpr = E_LOG2 + 1
    if BLOCK_LOG2 <= M_LOG2:
        top = topk_sorted(keys, BLOCK_LOG2, E_LOG2, DESCENDING)
    else:
        # Strided groups (group g holds the lanes = g mod 2E): the padding of a partial last tile
        # spreads over all groups instead of emptying some and dragging tau down.
        keys2d = tl.reshape(keys, [2 ** (BLOCK_LOG2 - G_LOG2), 2 ** G_LOG2])
        gmax = tl.max(keys2d, axis=0)
        tau = tl.maximum(tl.min(topk_sorted(gmax, G_LOG2, E_LOG2, 1)), 1)
        cands, n_sel = compact_at_least(keys2d, tau, scratch, M_LOG2)
        if n_sel <= M:
            top = topk_sorted(cands, M_LOG2, E_LOG2, DESCENDING)
        else:
            top = topk_sorted(keys, BLOCK_LOG2, E_LOG2, DESCENDING)
    return top


@triton.jit
def kth_key(keys, K, BITS: tl.constexpr):
    """The K-th largest of distinct keys (BITS-bit unsigned, at least K of them), built bit by bit from
    the top: the largest t with at least K keys >= t. One comparison and one block sum per bit, and
    hardly any registers: the fallback of the filter for the rare tile that overflows it."""
    t = tl.zeros((), keys.dtype)
    b = BITS
    while b > 0:
        b -= 1
        trial = t | (tl.full((), 1, keys.dtype) << b.to(keys.dtype))
        if tl.sum((keys >= trial).to(tl.int32)) >= K:
            t = trial
    return t


@triton.jit
def quotient_list(top, remap, inv_t_ptr, IS_BF16: tl.constexpr):
    """A tile's emitted 16-bit keys of raw values, for a row ranked on their quotients by its temperature
    (remap; kernels/sample.py raw_ordered): the quotients' keys, sorted again (keys.tile_key_quotients).
    Unchanged where remap is false (a constexpr False: no code)."""
    if remap:
        top = tl.sort(tile_key_quotients(top, tl.load(inv_t_ptr), IS_BF16), descending=True)
    return top


@triton.jit
def tile_topk_ranked(keys, scratch, out_ptr, tile_start, BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr,
                     M_LOG2: tl.constexpr, KEY64: tl.constexpr):
    """tile_topk's selection with all-pairs ranking instead of sorting networks: tau is the E-th
    largest of the 2E group maxima by rank, and the <= M filtered keys are stored straight to their
    rank in `out_ptr` (as row keys), sorted descending. When more than M keys pass (ties, adversarial
    data) tau is raised to the exact E-th largest key by a bitwise search: then exactly E pass."""
    E: tl.constexpr = 2 ** E_LOG2
    M: tl.constexpr = 2 ** M_LOG2
    G: tl.constexpr = 2 * E
    if BLOCK_LOG2 <= M_LOG2:
        store_top_sorted(out_ptr, keys, tile_keys_to_row_keys(keys, tile_start, KEY64), 2 ** BLOCK_LOG2, E)
    else:
        keys2d = tl.reshape(keys, [2 ** BLOCK_LOG2 // G, G])
        gmax = tl.max(keys2d, axis=0)
        tau = tl.maximum(kth_largest(gmax, G, E), 1)
        if tl.sum((keys >= tau).to(tl.int32)) > M:
            if KEY64:
                tau = kth_key(keys, E, 64)
            else:
                tau = kth_key(keys, E, 32)
        cands, n_sel = compact_at_least(keys2d, tau, scratch, M_LOG2)
        store_top_sorted(out_ptr, cands, tile_keys_to_row_keys(cands, tile_start, KEY64), M, E)


@triton.jit
def extract_rounds(keys, E: tl.constexpr):
    """The top E of distinct packed keys (0 = empty), sorted descending, by E rounds of "take the
    maximum, then blank it": about three instructions per key per round, no scratch, no sort."""
    lane = tl.arange(0, E)
    top = tl.zeros([E], keys.dtype)
    for r in tl.static_range(E):
        best = tl.max(keys)
        top = tl.where(lane == r, best, top)
        keys = tl.where(keys == best, 0, keys)
    return top


@triton.jit
def groups_topk(g, group_bits, E: tl.constexpr):
    """The top E of distinct packed keys laid out as (groups, 8) (0 = empty), sorted descending, without
    a filter. `group_bits` (one value per group) is OR-ed into each group's selected keys: the fast 16-bit
    path keys lanes with only their position inside the group and adds the group's part of the index
    here, once per group instead of once per key.

    A thread holds a group's 8 neighbours (one vector load), so each group's best two keys cost a few
    register instructions per key and no exchange between threads. E rounds then take the best head
    among the groups (a group's head is its best key not yet taken: first its best, then its second)
    and advance the winner's head. While no group has given both its keys, the heads are every
    group's best remaining key, so each round takes the best remaining key of the tile. A group that
    gave both before the last round might hold a third one of the top E: then (about 1 tile in 6 on
    random data at E = 8 and 128 groups) plain rounds over all the keys decide."""
    first = tl.max(g, axis=1)
    second = tl.max(tl.where(g == first[:, None], 0, g), axis=1)
    first = tl.where(first != 0, first | group_bits, 0)
    second = tl.where(second != 0, second | group_bits, 0)
    lane = tl.arange(0, E)
    top = tl.zeros([E], g.dtype)
    head = first
    rest = second
    exhausted = 0
    for r in tl.static_range(E):
        if r == E - 1:
            exhausted = tl.max(tl.where(head == 0, second, 0))
        best = tl.max(head)
        top = tl.where(lane == r, best, top)
        hit = (head == best) & (best != 0)
        head = tl.where(hit, rest, head)
        rest = tl.where(hit, 0, rest)
    if exhausted != 0:
        top = extract_rounds(tl.where(g != 0, g | group_bits[:, None], 0), E)
    return top


@triton.jit
def tile_topk_extract(keys, BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr):
    """The top E of a tile's distinct packed keys (0 = empty), sorted descending: groups_topk over
    groups of 8 neighbours."""
    E: tl.constexpr = 2 ** E_LOG2
    if BLOCK_LOG2 <= E_LOG2 + 3:
        top = extract_rounds(keys, E)
    else:
        top = groups_topk(tl.reshape(keys, [2 ** (BLOCK_LOG2 - 3), 8]),
                          tl.zeros([2 ** (BLOCK_LOG2 - 3)], keys.dtype), E)
    return top


@triton.jit
def load_tile_groups(logits_ptr, row, stride_row, V, tile, BLOCK_LOG2: tl.constexpr):
    """A tile of 16-bit logits as (groups of 8 neighbours, 8) packed keys, built in a few instructions
    per logit, for the "extract" strategy: the key's low bits hold only the inverted position inside
    the group (7 - j: a constant per register); groups_topk adds the group's part (0xFFF8 - 8 g),
    giving the usual 0xFFFF - local index. Lanes past the vocabulary read as -inf (never selected).
    NaN is not masked: its keys lie beyond those of +inf or below those of -inf, which the caller
    detects from the tile's extreme keys.

    The value key: with p the 16 bits, s = 0xFFFF exactly when p > 0x8000 (negative, not -0.0), and
    (p | 0x8000) ^ s flips the bits of negative values and sets the sign bit of the others (-0.0
    lands on +0.0's key)."""
    g = tl.arange(0, 2 ** (BLOCK_LOG2 - 3))[:, None]
    j = tl.arange(0, 8)[None, :]
    offs = tile.to(tl.int64) * (2 ** BLOCK_LOG2) + g * 8 + j
    x = tl.load(logits_ptr + row * stride_row + offs, mask=offs < V, other=float("-inf"))
    p = x.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    s = (0x8000 - p).to(tl.uint32) >> 16
    return (((p | 0x8000).to(tl.uint32) ^ s) << 16) | (7 - j).to(tl.uint32)


@triton.jit
def group_bits_of(BLOCK_LOG2: tl.constexpr):
    """The group's part of each group's inverted tile index (load_tile_groups)."""
    return (0xFFF8 - 8 * tl.arange(0, 2 ** (BLOCK_LOG2 - 3))).to(tl.uint32)


@triton.jit
def emit_tile_candidates(keys, tile, slot, cand_ptr, scratch_ptr, BLOCK_LOG2: tl.constexpr,
                         E_LOG2: tl.constexpr, M_LOG2: tl.constexpr, KEY64: tl.constexpr, STRATEGY: tl.constexpr,
                         remap=False, inv_t_ptr=None, IS_BF16: tl.constexpr = True):
    """Stage 1's output for one tile (the top-k's and the sampler's): the tile's top E keys as row keys,
    sorted descending, at cand[slot]. STRATEGY: "bitonic" (filter, then sorting networks), "rank"
    (filter, then all-pairs ranks) or "extract" (E rounds of maxima). `slot` numbers the (row, tile)
    pair; scratch holds M keys per slot (the filters' compaction). remap, inv_t_ptr: the sampler's rows
    ranked on quotients (quotient_list; not with the rank strategy, kernels/sample.py raw_ordered)."""
    if STRATEGY == "rank":
        tile_topk_ranked(keys, scratch_ptr + slot * (2 ** M_LOG2), cand_ptr + slot * (2 ** E_LOG2),
                         tile.to(tl.int64) * (2 ** BLOCK_LOG2), BLOCK_LOG2, E_LOG2, M_LOG2, KEY64)
    else:
        if STRATEGY == "extract":
            top = tile_topk_extract(keys, BLOCK_LOG2, E_LOG2)
        else:
            top = tile_topk(keys, scratch_ptr + slot * (2 ** M_LOG2), BLOCK_LOG2, E_LOG2, M_LOG2, 1)
        store_tile_list(quotient_list(top, remap, inv_t_ptr, IS_BF16), tile, slot, cand_ptr, BLOCK_LOG2, E_LOG2,
                        KEY64)


@triton.jit
def store_tile_list(top, tile, slot, cand_ptr, BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr,
                    KEY64: tl.constexpr):
    """A tile's sorted top E (tile keys) as row keys at cand[slot]."""
    tl.store(cand_ptr + slot * (2 ** E_LOG2) + tl.arange(0, 2 ** E_LOG2),
             tile_keys_to_row_keys(top, tile.to(tl.int64) * (2 ** BLOCK_LOG2), KEY64))


@triton.jit
def flat_program(Z):
    """This stage-1 program's (row, tile) slot = row * Z + tile, its row and its tile. Stage 1 runs on
    one flat grid dimension: CUDA caps the second at 65535, and a batch of 100 000 rows (RL rollouts;
    the statistical tests on a GPU) failed to launch on a (tiles, rows) grid (run 22)."""
    slot = tl.program_id(0).to(tl.int64)
    row = slot // Z
    return slot, row, (slot - row * Z).to(tl.int32)


@triton.jit
def topk_stage1(logits_ptr, stride_row, V, cand_ptr, scratch_ptr, nan_ptr, Z,
                BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr, M_LOG2: tl.constexpr, KEY64: tl.constexpr,
                STRATEGY: tl.constexpr, NEG_INF_KEY: tl.constexpr = 0, INF_KEY: tl.constexpr = 0,
                PDL: tl.constexpr = False):
    # NEG_INF_KEY, INF_KEY: the 16-bit keys of -inf and +inf (the fast path's NaN test).
    let_next_start(PDL)
    slot, row, tile = flat_program(Z)
    if STRATEGY == "extract" and not KEY64 and BLOCK_LOG2 > E_LOG2 + 3:
        g = load_tile_groups(logits_ptr, row, stride_row, V, tile, BLOCK_LOG2)
        top = groups_topk(g, group_bits_of(BLOCK_LOG2), 2 ** E_LOG2)
        # NaN keys: above +inf's (positive NaN, then the tile's best) or below -inf's (negative NaN).
        has_nan = (tl.max(top) >> 16 > INF_KEY) | (tl.min(g) >> 16 < NEG_INF_KEY)
        tl.store(nan_ptr + slot, has_nan.to(tl.int32))
        store_tile_list(top, tile, slot, cand_ptr, BLOCK_LOG2, E_LOG2, KEY64)
    else:
        keys, n_nan = load_tile_keys(logits_ptr, row, stride_row, V, tile, BLOCK_LOG2, KEY64)
        tl.store(nan_ptr + slot, n_nan)
        emit_tile_candidates(keys, tile, slot, cand_ptr, scratch_ptr, BLOCK_LOG2, E_LOG2, M_LOG2, KEY64, STRATEGY)


@triton.jit
def selection_scratch(refill_ptr, row, C_LOG2: tl.constexpr):
    """The row's 2C 64-bit words for stage 2's selection, inside its refill scratch (4C keys of 32 or
    64 bits: at least 2C words). Words C..2C-1 then hold the sorted candidates, where merge_tile_above
    reads and writes them during a refill (the sampler's out-of-line refill relies on it)."""
    return (refill_ptr + row * (4 * 2 ** C_LOG2)).to(tl.pointer_type(tl.uint64))


@triton.jit
def last_emitted(cand_ptr, row, Z, t, E_LOG2: tl.constexpr):
    """The smallest key tile t of the row emitted (its list is sorted descending)."""
    return tl.load(cand_ptr + (row * Z + t) * (2 ** E_LOG2) + (2 ** E_LOG2 - 1))


@triton.jit
def tile_lasts(cand_ptr, row, Z, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr):
    """The smallest key each of the row's tiles emitted (0 past the last tile). Stage 2 loads them
    beside the lists, so that the saturation test below waits for no load of its own."""
    E: tl.constexpr = 2 ** E_LOG2
    zz = tl.arange(0, 2 ** Z_LOG2)
    return tl.load(cand_ptr + (row * Z + zz) * E + (E - 1), mask=zz < Z, other=0)


@triton.jit
def next_marked(marked, after, ZP: tl.constexpr):
    """The lowest tile index above `after` whose mark (a block of ZP) is set; ZP if none. The refill
    loops walk the saturated tiles alone with it: a walk over every tile, with a load of each one's
    last key, was a chain of Z dependent loads (~10 us of stage 2 at 149 tiles, run 154)."""
    zz = tl.arange(0, ZP)
    return tl.min(tl.where(marked & (zz > after), zz, ZP))


@triton.jit
def any_saturated(lasts, kth):
    """Whether some tile's last emitted key (tile_lasts) lies above kth, the k-th merged key: only such
    a tile can hide members of the top k (module docstring)."""
    return tl.sum((lasts > kth).to(tl.int32)) > 0


@triton.jit
def merge_refill(top, keys, last_t, kth, tile_start, scratch, BLOCK_LOG2: tl.constexpr, C_LOG2: tl.constexpr,
                 KEY64: tl.constexpr):
    """Merge into the sorted `top` the keys of a saturated tile that lie below those it emitted and above
    kth (merge_tile_above)."""
    keys = tl.where(keys < row_key_to_tile_key(last_t, tile_start, KEY64), keys, 0)
    return merge_tile_above(top, keys, kth, tile_start, scratch, BLOCK_LOG2, C_LOG2, KEY64)


@triton.jit
def merge_tile_above(top, keys, kth, tile_start, scratch, BLOCK_LOG2: tl.constexpr, C_LOG2: tl.constexpr,
                     KEY64: tl.constexpr):
    """The refill's merge: the sorted `top` (2**C_LOG2 row keys, descending) with the keys of a tile
    (tile keys, 0 = none) that lie above the row key kth. Exact for any kth at or below top's k-th key
    (the sampler's: its C-th), e.g. the threshold from before the first refilled tile: nothing at or
    below it can enter the top k. Those few keys (usually fewer than C; if more, the tile's best C of
    them, by a bitwise search) are compacted through `scratch` (4C keys of this row) and ranked against
    `top` and each other, X at a time, each stored at its rank in the scratch's 64-bit words C..2C-1
    (selection_scratch + C), where the merged list stays. The bitonic selection of the tile's best C
    (tile_topk) and merge it replaced took ~85 compare-exchange rounds, ~7 us of a 32-row launch's
    stage 2 per refilled tile (run 154), and its code made stage 2 slower where no tile was refilled
    (docs/PERFORMANCE.md, session 29)."""
    C: tl.constexpr = 2 ** C_LOG2
    R: tl.constexpr = 2 ** (BLOCK_LOG2 // 2)
    G: tl.constexpr = 2 ** (BLOCK_LOG2 - BLOCK_LOG2 // 2)
    keys = tl.where(tile_keys_to_row_keys(keys, tile_start, KEY64) > kth, keys, 0)
    if tl.sum((keys != 0).to(tl.int32)) > C:
        # Within a tile, tile keys order as row keys do.
        if KEY64:
            keys = tl.where(keys >= kth_key(keys, C, 64), keys, 0)
        else:
            keys = tl.where(keys >= kth_key(keys, C, 32), keys, 0)
    # The (at most C) nonzero keys compacted in index order: every key >= 1.
    extra, n_extra = compact_at_least(tl.reshape(keys, [R, G]), 1, scratch, C_LOG2)
    extra = tile_keys_to_row_keys(extra, tile_start, KEY64)
    lane = tl.arange(0, C)
    # Ranks in the union (real keys distinct), chunk by chunk of the (usually few) extra keys, so that the
    # comparisons are (C, X) blocks: (C, C) ones took stage 2 to 255 registers and 152 bytes of spills.
    out = scratch.to(tl.pointer_type(tl.uint64)) + C     # past the compacted keys, 32- or 64-bit
    X: tl.constexpr = 16 if C > 16 else C
    xl = tl.arange(0, X)
    r_top = lane
    j = 0
    while j < n_extra:
        chunk = tile_keys_to_row_keys(tl.load(scratch + j + xl, mask=j + xl < n_extra, other=0), tile_start, KEY64)
        r_top += tl.sum((chunk[None, :] > top[:, None]).to(tl.int32), axis=1)
        r_chunk = tl.sum((top[None, :] > chunk[:, None]).to(tl.int32), axis=1) \
            + tl.sum((extra[None, :] > chunk[:, None]).to(tl.int32), axis=1)
        tl.store(out + r_chunk, chunk, mask=(chunk != 0) & (r_chunk < C))
        j += X
    # top's padding zeros (if any) rank past every real key of both, so ranks 0..C-1 are all written.
    tl.store(out + r_top, top, mask=r_top < C)
    tl.debug_barrier()
    merged = tl.load(out + lane)
    tl.debug_barrier()   # the next refill reuses scratch
    return merged


@triton.jit
def key_values(keys, real, logits_ptr, row, stride_row, idx, KEY64: tl.constexpr):
    """The logits of real row keys (as fp32), decoded from the keys' value part (the encoding is a
    bijection of bit patterns, kernels/keys.py) instead of gathered from the row: a dependent load
    fewer at the end of stage 2. Zeros are read from the row all the same: -0.0 and +0.0 share a key.
    -inf where not real."""
    v = row_key_value(keys, KEY64, logits_ptr.dtype.element_ty == tl.bfloat16)
    zero = real & (v == 0)
    v = tl.where(zero, tl.load(logits_ptr + row * stride_row + idx, mask=zero, other=0.0).to(tl.float32), v)
    return tl.where(real, v, float("-inf"))


@triton.jit
def topk_stage2(cand_ptr, nan_ptr, Z, logits_ptr, stride_row, V, k, values_ptr, indices_ptr, scratch_ptr,
                Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
                KEY64: tl.constexpr, NEG_INF_KEY: tl.constexpr, PDL: tl.constexpr = False):
    C: tl.constexpr = 2 ** C_LOG2
    ZP: tl.constexpr = 2 ** Z_LOG2
    row = tl.program_id(0).to(tl.int64)
    wait_for_previous(PDL)
    # The row's NaN flags and its tiles' last keys, loaded with the lists so that their latency
    # overlaps the selection.
    zz = tl.arange(0, ZP)
    has_nan = tl.sum(tl.load(nan_ptr + row * Z + zz, mask=zz < Z, other=0)) > 0
    lasts = tile_lasts(cand_ptr, row, Z, Z_LOG2, E_LOG2)
    scratch = selection_scratch(scratch_ptr, row, C_LOG2)
    top, rank = select_top(cand_ptr, row, Z, scratch, Z_LOG2, E_LOG2, C_LOG2, KEY64)

    lane = tl.arange(0, C)
    if E_LOG2 < C_LOG2:
        kth = tl.max(tl.where(rank == k - 1, top, 0))
        if any_saturated(lasts, kth):
            # Rare (module docstring): the refill merges into the candidates in rank order.
            top, _first, _last = in_rank_order(top, rank, scratch, C)
            rank = lane
            marked = lasts > kth
            t = next_marked(marked, -1, ZP)
            while t < Z:  # over the saturated tiles only, in tile order
                last_t = last_emitted(cand_ptr, row, Z, t, E_LOG2)
                keys, _ = load_tile_keys(logits_ptr, row, stride_row, V, t, BLOCK_LOG2, KEY64)
                top = merge_refill(top, keys, last_t, kth, t.to(tl.int64) * (2 ** BLOCK_LOG2),
                                   scratch_ptr + row * (4 * C), BLOCK_LOG2, C_LOG2, KEY64)
                t = next_marked(marked, t, ZP)

    # Each output lands at its rank: the candidates need never be put in order.
    real = (top >> 32) > NEG_INF_KEY          # not padding, not -inf
    idx = tl.where(real, row_key_index(top), -1)
    vals = key_values(top, real, logits_ptr, row, stride_row, idx, KEY64)
    idx = tl.where(has_nan, -1, idx)
    vals = tl.where(has_nan, float("nan"), vals)
    tl.store(indices_ptr + row * k + rank, idx, mask=rank < k)
    tl.store(values_ptr + row * k + rank, vals, mask=rank < k)
