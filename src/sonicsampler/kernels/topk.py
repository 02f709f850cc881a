"""The two-stage top-k.

Stage 1, one program per (tile, row): the tile's exact top E (E <= C, C = k rounded up to a power of
two) as 64-bit row keys, sorted descending, in `cand[row, tile, :]`, plus the tile's NaN count.

Stage 1's selection avoids sorting the tile. The tile is cut into 2E strided groups; tau, the E-th
largest group maximum, is a lower bound of the tile's E-th largest key (E groups have a maximum >= tau
and keys are distinct), so every key >= tau is a candidate and nothing below tau can be in the top E.
When at most M = 4E keys pass (typically about 1.4 E) they are compacted through a small scratch and
only those M are sorted; otherwise (heavy ties, adversarial data) the whole tile goes through the
bitonic network. Both paths give the same exact result.

Stage 2, one program per row: selects the row's top C of the tile lists by a search on their values and
sorts those C by rank (kernels/select.py).
That is exact unless some tile is *saturated*: its last emitted key lies above T, the k-th merged key,
so keys it did not emit may belong to the top k. (A tile whose last emitted key is <= T cannot hide
one: its unemitted keys are below T, and k emitted keys are >= T.) At most k/E tiles can be saturated;
stage 2 re-reads each one, takes the exact top C of its keys below the ones already emitted, and merges
them in. Realistic logits spread their top k over many tiles, so this path is rare; adversarial inputs
(sorted rows) take it and stay exact.
"""
import triton
import triton.language as tl

from .bitonic import merge_sorted_desc, topk_sorted
from .keys import pack_tile_keys, row_key_index, row_key_to_tile_key, tile_keys_to_row_keys
from .rank import kth_largest, store_top_sorted
from .select import select_top_sorted


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
def tile_topk_ranked(keys, scratch, out_ptr, tile_start, BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr,
                     M_LOG2: tl.constexpr, KEY64: tl.constexpr):
    """tile_topk's selection with all-pairs ranking instead of sorting networks: tau is the E-th
    largest of the 2E group maxima by rank, and the <= M filtered keys are stored straight to their
    rank in `out_ptr` (as row keys), sorted descending."""
    E: tl.constexpr = 2 ** E_LOG2
    M: tl.constexpr = 2 ** M_LOG2
    G: tl.constexpr = 2 * E
    if BLOCK_LOG2 <= M_LOG2:
        store_top_sorted(out_ptr, keys, tile_keys_to_row_keys(keys, tile_start, KEY64), 2 ** BLOCK_LOG2, E)
    else:
        keys2d = tl.reshape(keys, [2 ** BLOCK_LOG2 // G, G])
        gmax = tl.max(keys2d, axis=0)
        tau = tl.maximum(kth_largest(gmax, G, E), 1)
        cands, n_sel = compact_at_least(keys2d, tau, scratch, M_LOG2)
        if n_sel <= M:
            store_top_sorted(out_ptr, cands, tile_keys_to_row_keys(cands, tile_start, KEY64), M, E)
        else:
            top = topk_sorted(keys, BLOCK_LOG2, E_LOG2, 1)
            tl.store(out_ptr + tl.arange(0, E), tile_keys_to_row_keys(top, tile_start, KEY64))


@triton.jit
def emit_tile_candidates(keys, tile, slot, cand_ptr, scratch_ptr, BLOCK_LOG2: tl.constexpr,
                         E_LOG2: tl.constexpr, M_LOG2: tl.constexpr, KEY64: tl.constexpr, RANKED: tl.constexpr):
    """Stage 1's output for one tile (the top-k's and the sampler's): the tile's top E keys as row keys,
    sorted descending, at cand[slot], by ranks (RANKED) or by sorting networks. `slot` numbers the
    (row, tile) pair; scratch holds M keys per slot."""
    start = tile.to(tl.int64) * (2 ** BLOCK_LOG2)
    out = cand_ptr + slot * (2 ** E_LOG2)
    scratch = scratch_ptr + slot * (2 ** M_LOG2)
    if RANKED:
        tile_topk_ranked(keys, scratch, out, start, BLOCK_LOG2, E_LOG2, M_LOG2, KEY64)
    else:
        top = tile_topk(keys, scratch, BLOCK_LOG2, E_LOG2, M_LOG2, 1)
        tl.store(out + tl.arange(0, 2 ** E_LOG2), tile_keys_to_row_keys(top, start, KEY64))


@triton.jit
def topk_stage1(logits_ptr, stride_row, V, cand_ptr, scratch_ptr, nan_ptr, Z,
                BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr, M_LOG2: tl.constexpr, KEY64: tl.constexpr,
                RANKED: tl.constexpr):
    tile = tl.program_id(0)
    row = tl.program_id(1).to(tl.int64)
    slot = row * Z + tile
    keys, n_nan = load_tile_keys(logits_ptr, row, stride_row, V, tile, BLOCK_LOG2, KEY64)
    tl.store(nan_ptr + slot, n_nan)
    emit_tile_candidates(keys, tile, slot, cand_ptr, scratch_ptr, BLOCK_LOG2, E_LOG2, M_LOG2, KEY64, RANKED)


@triton.jit
def selection_scratch(refill_ptr, row, C_LOG2: tl.constexpr):
    """The row's 2C 64-bit words for stage 2's selection, inside its refill scratch (4C keys of 32 or
    64 bits: at least 2C words). The selection is done with it before any refill starts."""
    return (refill_ptr + row * (4 * 2 ** C_LOG2)).to(tl.pointer_type(tl.uint64))


@triton.jit
def last_emitted(cand_ptr, row, Z, t, E_LOG2: tl.constexpr):
    """The smallest key tile t of the row emitted (its list is sorted descending)."""
    return tl.load(cand_ptr + (row * Z + t) * (2 ** E_LOG2) + (2 ** E_LOG2 - 1))


@triton.jit
def any_saturated(cand_ptr, row, Z, kth, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr):
    """Whether some tile's last emitted key lies above kth, the k-th merged key: only such a tile can
    hide members of the top k (module docstring)."""
    E: tl.constexpr = 2 ** E_LOG2
    zz = tl.arange(0, 2 ** Z_LOG2)
    last = tl.load(cand_ptr + (row * Z + zz) * E + (E - 1), mask=zz < Z, other=0)
    return tl.sum((last > kth).to(tl.int32)) > 0


@triton.jit
def merge_refill(top, keys, last_t, tile_start, scratch, BLOCK_LOG2: tl.constexpr, C_LOG2: tl.constexpr,
                 KEY64: tl.constexpr):
    """Merge into the sorted `top` the best keys of a saturated tile that lie below those it emitted."""
    keys = tl.where(keys < row_key_to_tile_key(last_t, tile_start, KEY64), keys, 0)
    return merge_tile_top(top, keys, tile_start, scratch, BLOCK_LOG2, C_LOG2, KEY64)


@triton.jit
def merge_tile_top(top, keys, tile_start, scratch, BLOCK_LOG2: tl.constexpr, C_LOG2: tl.constexpr,
                   KEY64: tl.constexpr):
    """Merge into the sorted `top` (2**C_LOG2 row keys) the best 2**C_LOG2 of a tile's keys; `scratch`
    holds 4 * 2**C_LOG2 tile keys."""
    rest = tile_topk(keys, scratch, BLOCK_LOG2, C_LOG2, C_LOG2 + 2, 0)
    return merge_sorted_desc(top, tile_keys_to_row_keys(rest, tile_start, KEY64), C_LOG2)


@triton.jit
def topk_stage2(cand_ptr, nan_ptr, Z, logits_ptr, stride_row, V, k, values_ptr, indices_ptr, scratch_ptr,
                Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr, C_LOG2: tl.constexpr, BLOCK_LOG2: tl.constexpr,
                KEY64: tl.constexpr, NEG_INF_KEY: tl.constexpr):
    C: tl.constexpr = 2 ** C_LOG2
    ZP: tl.constexpr = 2 ** Z_LOG2
    row = tl.program_id(0).to(tl.int64)
    top = select_top_sorted(cand_ptr, row, Z, selection_scratch(scratch_ptr, row, C_LOG2), Z_LOG2, E_LOG2, C_LOG2, KEY64)

    lane = tl.arange(0, C)
    if E_LOG2 < C_LOG2:
        kth = tl.max(tl.where(lane == k - 1, top, 0))
        if any_saturated(cand_ptr, row, Z, kth, Z_LOG2, E_LOG2):
            t = 0
            while t < Z:  # a while loop: the interpreter cannot iterate range() over a runtime bound
                last_t = last_emitted(cand_ptr, row, Z, t, E_LOG2)
                if last_t > kth:
                    keys, _ = load_tile_keys(logits_ptr, row, stride_row, V, t, BLOCK_LOG2, KEY64)
                    top = merge_refill(top, keys, last_t, t.to(tl.int64) * (2 ** BLOCK_LOG2),
                                       scratch_ptr + row * (4 * C), BLOCK_LOG2, C_LOG2, KEY64)
                t += 1

    zz = tl.arange(0, ZP)
    has_nan = tl.sum(tl.load(nan_ptr + row * Z + zz, mask=zz < Z, other=0)) > 0
    real = (top >> 32) > NEG_INF_KEY          # not padding, not -inf
    idx = tl.where(real, row_key_index(top), -1)
    vals = tl.load(logits_ptr + row * stride_row + idx, mask=real, other=float("-inf"))
    idx = tl.where(has_nan, -1, idx)
    vals = tl.where(has_nan, float("nan"), vals.to(tl.float32))
    tl.store(indices_ptr + row * k + lane, idx, mask=lane < k)
    tl.store(values_ptr + row * k + lane, vals, mask=lane < k)
