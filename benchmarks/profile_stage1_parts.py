"""Where the top-k's time goes: the ranked stage 1 cut after each of its steps (load and keys, group
maxima and tau, compaction by three methods, ranking), and stage 2's selection cut after each of its
steps, each variant timed alone with CUDA-graph replays (median).
Run on the GPU: python3 benchmarks/profile_stage1_parts.py [--vocab 151936 --rows 1,32,128]."""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
import triton
import triton.language as tl
import triton.testing

from sonicsampler.kernels.keys import tile_keys_to_row_keys
from sonicsampler.kernels.rank import kth_largest, store_top_sorted
from sonicsampler.kernels.select import compact_best, select_top, select_top_sorted, value_threshold
from sonicsampler.kernels.topk import compact_at_least, load_tile_keys, selection_scratch

PARTS = ("load+keys", "+group max, tau", "+count and prefix sum only", "+compaction (prefix sum)",
         "+compaction (atomics)", "+compaction (2-D prefix sums)", "+compaction (2-D), rank and store")
S2_PARTS = ("load lists", "+value search (8-bit digits)", "+value search (6-bit digits)",
            "+value search (5-bit digits)", "+value search (4-bit digits)", "+ties and compaction",
            "+ranks (select_top, unsorted)", "+rank sort (select_top_sorted)")


@triton.jit
def compact_atomic(keys, tau, scratch, counter, M_LOG2: tl.constexpr):
    """compact_at_least's result by one atomic increment per selected key (positions in any order)."""
    M: tl.constexpr = 2 ** M_LOG2
    sel = keys >= tau
    pos = tl.atomic_add(counter + tl.zeros_like(keys).to(tl.int32), 1, mask=sel, sem="relaxed")
    tl.store(scratch + pos, keys, mask=sel & (pos < M))
    tl.debug_barrier()
    n_sel = tl.atomic_xchg(counter, 0)   # read and reset for the next launch
    lane = tl.arange(0, M)
    return tl.load(scratch + lane, mask=lane < n_sel, other=0), n_sel


@triton.jit
def compact_prefix_1d(keys, tau, scratch, M_LOG2: tl.constexpr):
    """compact_at_least's result from one prefix sum over the whole tile (its form before run 11)."""
    M: tl.constexpr = 2 ** M_LOG2
    sel = keys >= tau
    n_sel = tl.sum(sel.to(tl.int32))
    pos = tl.cumsum(sel.to(tl.int32), axis=0) - 1
    tl.store(scratch + pos, keys, mask=sel & (n_sel <= M))
    tl.debug_barrier()
    lane = tl.arange(0, M)
    return tl.load(scratch + lane, mask=lane < n_sel, other=0), n_sel


@triton.jit
def stage1_part(logits_ptr, stride_row, V, cand_ptr, scratch_ptr, nan_ptr, counter_ptr, Z,
                BLOCK_LOG2: tl.constexpr, E_LOG2: tl.constexpr, M_LOG2: tl.constexpr, PART: tl.constexpr):
    E: tl.constexpr = 2 ** E_LOG2
    G: tl.constexpr = 2 * E
    tile = tl.program_id(0)
    row = tl.program_id(1).to(tl.int64)
    slot = row * Z + tile
    keys, n_nan = load_tile_keys(logits_ptr, row, stride_row, V, tile, BLOCK_LOG2, False)
    tl.store(nan_ptr + slot, n_nan)
    out = cand_ptr + slot * E
    if PART == 0:
        tl.store(out, tl.max(keys).to(tl.uint64))
    else:
        keys2d = tl.reshape(keys, [2 ** BLOCK_LOG2 // G, G])
        gmax = tl.max(keys2d, axis=0)
        tau = tl.maximum(kth_largest(gmax, G, E), 1)
        scratch = scratch_ptr + slot * (2 ** M_LOG2)
        if PART == 1:
            tl.store(out, tau.to(tl.uint64))
        elif PART == 2:
            sel = (keys >= tau).to(tl.int32)
            tl.store(out, (tl.max(tl.cumsum(sel, axis=0)) + tl.sum(sel)).to(tl.uint64))
        elif PART == 3:
            cands, n_sel = compact_prefix_1d(keys, tau, scratch, M_LOG2)
            tl.store(out, (tl.max(cands) + n_sel).to(tl.uint64))
        elif PART == 4:
            cands, n_sel = compact_atomic(keys, tau, scratch, counter_ptr + slot, M_LOG2)
            tl.store(out, (tl.max(cands) + n_sel).to(tl.uint64))
        elif PART == 5:
            cands, n_sel = compact_at_least(keys2d, tau, scratch, M_LOG2)
            tl.store(out, (tl.max(cands) + n_sel).to(tl.uint64))
        else:
            cands, n_sel = compact_at_least(keys2d, tau, scratch, M_LOG2)
            start = tile.to(tl.int64) * (2 ** BLOCK_LOG2)
            store_top_sorted(out, cands, tile_keys_to_row_keys(cands, start, False), 2 ** M_LOG2, E)


@triton.jit
def stage2_part(cand_ptr, Z, scratch_ptr, out_ptr, Z_LOG2: tl.constexpr, E_LOG2: tl.constexpr,
                C_LOG2: tl.constexpr, PART: tl.constexpr):
    C: tl.constexpr = 2 ** C_LOG2
    N: tl.constexpr = 2 ** (Z_LOG2 + E_LOG2)
    row = tl.program_id(0).to(tl.int64)
    scratch = selection_scratch(scratch_ptr, row, C_LOG2)
    t = tl.arange(0, 2 ** Z_LOG2)[:, None]
    e = tl.arange(0, 2 ** E_LOG2)[None, :]
    keys = tl.load(cand_ptr + (row * Z + t) * (2 ** E_LOG2) + e, mask=t < Z, other=0)
    if PART == 0:
        tl.store(out_ptr + row, tl.max(keys))
    elif PART <= 4:
        DIGIT: tl.constexpr = (8, 6, 5, 4)[PART - 1]
        thr, n_above, n_at = value_threshold(tl.reshape((keys >> 32).to(tl.uint32), [N], can_reorder=True), C, 16,
                                             DIGIT)
        tl.store(out_ptr + row, thr.to(tl.uint64) + n_above + n_at)
    elif PART == 5:
        compact_best(keys, C, scratch, False)
        tl.store(out_ptr + row, tl.max(tl.load(scratch + tl.arange(0, C))))
    elif PART == 6:
        top, rank = select_top(cand_ptr, row, Z, scratch, Z_LOG2, E_LOG2, C_LOG2, False)
        tl.store(out_ptr + row * C + rank, top)
    else:
        top, _first, _last = select_top_sorted(cand_ptr, row, Z, scratch, Z_LOG2, E_LOG2, C_LOG2, False)
        tl.store(out_ptr + row * C + tl.arange(0, C), top)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--emit", type=int, default=16)
    ap.add_argument("--warps", default="4,8")
    ap.add_argument("--stage2-only", action="store_true", help="time stage 1 once (whole, for the lists), not its parts")
    a = ap.parse_args()
    v, block, e = a.vocab, a.block, a.emit
    z = -(-v // block)
    for n in map(int, a.rows.split(",")):
        u = torch.rand(n, v, device="cuda").clamp_(1e-20, 1 - 1e-7)
        x = (-torch.log(-torch.log(u))).to(torch.bfloat16)
        cand = torch.empty(n * z * e, dtype=torch.uint64, device="cuda")
        scratch = torch.empty(n * z * 4 * e, dtype=torch.uint32, device="cuda")
        nan = torch.empty(n * z, dtype=torch.int32, device="cuda")
        counter = torch.zeros(n * z, dtype=torch.int32, device="cuda")
        for w in map(int, a.warps.split(",")):
            line = []
            for part, name in ([(len(PARTS) - 1, PARTS[-1])] if a.stage2_only else enumerate(PARTS)):
                def launch():
                    stage1_part[(z, n)](x, x.stride(0), v, cand, scratch, nan, counter, z, BLOCK_LOG2=block.bit_length() - 1,
                                        E_LOG2=e.bit_length() - 1, M_LOG2=e.bit_length() + 1, PART=part, num_warps=w)
                launch()
                us = triton.testing.do_bench_cudagraph(launch, rep=30, return_mode="median") * 1e3
                line.append(f"{name} {us:.1f}")
            print(f"V={v} rows={n} block={block} emit={e} warps={w}: " + ", ".join(line) + " us", flush=True)
        # Stage 2's selection on these tile lists (the last launch above wrote them), cut after each step.
        z_log2 = max((z - 1).bit_length(), 7 - (e.bit_length() - 1))
        sel_scratch = torch.empty(n * 4 * 128, dtype=torch.uint32, device="cuda")
        out = torch.empty(n * 128, dtype=torch.uint64, device="cuda")
        for w in map(int, a.warps.split(",")):
            line = []
            for part, name in enumerate(S2_PARTS):
                def launch2():
                    stage2_part[(n,)](cand, z, sel_scratch, out, Z_LOG2=z_log2, E_LOG2=e.bit_length() - 1, C_LOG2=7,
                                      PART=part, num_warps=w)
                launch2()
                us = triton.testing.do_bench_cudagraph(launch2, rep=30, return_mode="median") * 1e3
                line.append(f"{name} {us:.1f}")
            print(f"stage 2 V={v} rows={n} emit={e} warps={w}: " + ", ".join(line) + " us", flush=True)


if __name__ == "__main__":
    main()
