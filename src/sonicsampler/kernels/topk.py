"""The two-stage top-k.

Stage 1, one program per (tile, row): the tile's exact top-C as packed keys, written sorted
descending as 64-bit row keys to `cand[row, tile, :]`, plus the tile's NaN count.
Stage 2, one program per row: merges the sorted tile lists with a bitonic fold tree (even tiles are
read reversed, so neighbouring lists form bitonic pairs without any re-sort) and writes the top k.

Stage 1's selection avoids sorting the whole tile. The tile is cut into M strided groups; tau, the C-th largest
group maximum, is a lower bound of the tile's C-th largest key (C groups have a maximum >= tau, and keys
are distinct). Every key >= tau is therefore a candidate and nothing below tau can be in the top C.
When at most M keys pass (for typical logits about 1.4 C with M = 2 C), they are compacted through a
small scratch and only those M are sorted; otherwise (heavy ties, adversarial data) the whole tile is
reduced with the bitonic network. Both paths give the same, exact, result.
"""
import triton
import triton.language as tl

from .bitonic import fold_topk, topk_sorted
from .keys import pack_tile_keys, row_key_index, tile_keys_to_row_keys


@triton.jit
def tile_topk(keys, scratch, BLOCK_LOG2: tl.constexpr, C_LOG2: tl.constexpr, M_LOG2: tl.constexpr):
    """Exact top 2**C_LOG2 of 2**BLOCK_LOG2 distinct packed keys (0 = empty), sorted descending.

    `scratch` points at 2**M_LOG2 keys this program may use to compact candidates."""
    M: tl.constexpr = 2 ** M_LOG2
    if BLOCK_LOG2 <= M_LOG2:
        top = topk_sorted(keys, BLOCK_LOG2, C_LOG2, 1)
    else:
        # Strided groups (group g holds the lanes = g mod M), so that the padding of a partial last
        # tile spreads over all groups instead of emptying some and dragging tau down.
        gmax = tl.max(tl.reshape(keys, [2 ** (BLOCK_LOG2 - M_LOG2), M]), axis=0)
        if M_LOG2 == C_LOG2:
            tau = tl.min(gmax)
        else:
            tau = tl.min(topk_sorted(gmax, M_LOG2, C_LOG2, 1))
        tau = tl.maximum(tau, 1)
        sel = keys >= tau
        n_sel = tl.sum(sel.to(tl.int32))
        if n_sel <= M:
            pos = tl.cumsum(sel.to(tl.int32), axis=0) - 1
            tl.store(scratch + pos, keys, mask=sel)
            tl.debug_barrier()
            lane = tl.arange(0, M)
            cands = tl.load(scratch + lane, mask=lane < n_sel, other=0)
            top = topk_sorted(cands, M_LOG2, C_LOG2, 1)
        else:
            top = topk_sorted(keys, BLOCK_LOG2, C_LOG2, 1)
    return top


@triton.jit
def topk_stage1(logits_ptr, stride_row, V, cand_ptr, scratch_ptr, nan_ptr, Z,
                BLOCK_LOG2: tl.constexpr, C_LOG2: tl.constexpr, M_LOG2: tl.constexpr, KEY64: tl.constexpr):
    BLOCK: tl.constexpr = 2 ** BLOCK_LOG2
    C: tl.constexpr = 2 ** C_LOG2
    tile = tl.program_id(0)
    row = tl.program_id(1).to(tl.int64)
    slot = row * Z + tile
    local = tl.arange(0, BLOCK)
    start = tile.to(tl.int64) * BLOCK
    offs = start + local
    inb = offs < V
    x = tl.load(logits_ptr + row * stride_row + offs, mask=inb, other=0.0)
    xf = x.to(tl.float32)
    is_nan = xf != xf
    tl.store(nan_ptr + slot, tl.sum(is_nan.to(tl.int32)))
    keys = pack_tile_keys(x, local, offs, inb & (~is_nan), KEY64)
    top = tile_topk(keys, scratch_ptr + slot * (2 ** M_LOG2), BLOCK_LOG2, C_LOG2, M_LOG2)
    tl.store(cand_ptr + slot * C + tl.arange(0, C), tile_keys_to_row_keys(top, start, KEY64))


@triton.jit
def topk_stage2(cand_ptr, nan_ptr, Z, logits_ptr, stride_row, k, values_ptr, indices_ptr,
                Z_LOG2: tl.constexpr, C_LOG2: tl.constexpr, NEG_INF_KEY: tl.constexpr):
    C: tl.constexpr = 2 ** C_LOG2
    ZP: tl.constexpr = 2 ** Z_LOG2
    row = tl.program_id(0).to(tl.int64)
    z = tl.arange(0, ZP)[:, None]
    j = tl.arange(0, C)[None, :]
    # Even tiles read reversed (ascending), odd tiles as written (descending): alternating blocks.
    jj = tl.where(z % 2 == 0, C - 1 - j, j)
    cands = tl.load(cand_ptr + (row * Z + z) * C + jj, mask=z < Z, other=0)
    if Z_LOG2 == 0:
        top = tl.reshape(cands, [C])
        top = tl.flip(top, 0)
    else:
        top = fold_topk(tl.reshape(cands, [2] * (Z_LOG2 + C_LOG2)), Z_LOG2 + C_LOG2, C_LOG2, 1)
    zz = tl.arange(0, ZP)
    has_nan = tl.sum(tl.load(nan_ptr + row * Z + zz, mask=zz < Z, other=0)) > 0
    real = (top >> 32) > NEG_INF_KEY          # not padding, not -inf
    idx = tl.where(real, row_key_index(top), -1)
    vals = tl.load(logits_ptr + row * stride_row + idx, mask=real, other=float("-inf"))
    idx = tl.where(has_nan, -1, idx)
    vals = tl.where(has_nan, float("nan"), vals.to(tl.float32))
    lane = tl.arange(0, C)
    tl.store(indices_ptr + row * k + lane, idx, mask=lane < k)
    tl.store(values_ptr + row * k + lane, vals, mask=lane < k)
