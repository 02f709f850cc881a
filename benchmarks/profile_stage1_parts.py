"""Where stage 1's time goes: the ranked tile selection cut after each of its steps (load and keys,
group maxima and tau, compaction, ranking), each variant timed alone with CUDA-graph replays (median).
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
from sonicsampler.kernels.topk import compact_at_least, load_tile_keys

PARTS = ("load+keys", "+group max, tau", "+compaction", "+rank and store")


@triton.jit
def stage1_part(logits_ptr, stride_row, V, cand_ptr, scratch_ptr, nan_ptr, Z,
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
        gmax = tl.max(tl.reshape(keys, [2 ** BLOCK_LOG2 // G, G]), axis=0)
        tau = tl.maximum(kth_largest(gmax, G, E), 1)
        if PART == 1:
            tl.store(out, tau.to(tl.uint64))
        else:
            cands, n_sel = compact_at_least(keys, tau, scratch_ptr + slot * (2 ** M_LOG2), M_LOG2)
            if PART == 2:
                tl.store(out, (tl.max(cands) + n_sel).to(tl.uint64))
            else:
                start = tile.to(tl.int64) * (2 ** BLOCK_LOG2)
                store_top_sorted(out, cands, tile_keys_to_row_keys(cands, start, False), 2 ** M_LOG2, E)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--rows", default="1,32,128")
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--emit", type=int, default=16)
    ap.add_argument("--warps", default="4,8")
    a = ap.parse_args()
    v, block, e = a.vocab, a.block, a.emit
    z = -(-v // block)
    for n in map(int, a.rows.split(",")):
        u = torch.rand(n, v, device="cuda").clamp_(1e-20, 1 - 1e-7)
        x = (-torch.log(-torch.log(u))).to(torch.bfloat16)
        cand = torch.empty(n * z * e, dtype=torch.uint64, device="cuda")
        scratch = torch.empty(n * z * 4 * e, dtype=torch.uint32, device="cuda")
        nan = torch.empty(n * z, dtype=torch.int32, device="cuda")
        for w in map(int, a.warps.split(",")):
            line = []
            for part, name in enumerate(PARTS):
                def launch():
                    stage1_part[(z, n)](x, x.stride(0), v, cand, scratch, nan, z, BLOCK_LOG2=block.bit_length() - 1,
                                        E_LOG2=e.bit_length() - 1, M_LOG2=e.bit_length() + 1, PART=part, num_warps=w)
                launch()
                us = triton.testing.do_bench_cudagraph(launch, rep=30, return_mode="median") * 1e3
                line.append(f"{name} {us:.1f}")
            print(f"V={v} rows={n} block={block} emit={e} warps={w}: " + ", ".join(line) + " us", flush=True)


if __name__ == "__main__":
    main()
