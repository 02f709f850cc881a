"""GPU check of keys.bf16_tile_keys (PTX: two values rounded to bf16 and keyed at once) against the integer
path it replaces (pack_bits16_keys(ranking_bits16(x))), over every fp32 bit pattern: the keys must be equal
for every value that is not NaN. Prints one JSON line: patterns checked, NaN patterns skipped, mismatches,
and the first mismatching pattern if any; ptx_path says whether this device's compile took the PTX (if
not, both sides are the integer path and the check proves nothing about the PTX).

    python3 benchmarks/check_keys_gpu.py            # all 2**32 patterns (a few hundred ms on an H100)
    python3 benchmarks/check_keys_gpu.py 24         # 2**24 patterns spread over the range (CPU smoke test)
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python benchmarks/<this>.py` from anywhere

import torch
import triton
import triton.language as tl

from sonicsampler.kernels.keys import bf16_tile_keys, pack_bits16_keys, pair_keys_in_ptx
from sonicsampler.kernels.prologue import ranking_bits16


@triton.jit
def _compare(count_ptr, first_ptr, stride, BLOCK_LOG2: tl.constexpr):
    """Program p checks 2**BLOCK_LOG2 patterns starting at p * 2**BLOCK_LOG2 * stride, `stride` apart,
    laid out as (groups, 8) as the sampler's tiles are."""
    g = tl.arange(0, 2 ** (BLOCK_LOG2 - 3))[:, None]
    j = tl.arange(0, 8)[None, :]
    n = (tl.program_id(0).to(tl.int64) * (2 ** BLOCK_LOG2) + g * 8 + j) * stride
    x = (n & 0xFFFFFFFF).to(tl.uint32).to(tl.float32, bitcast=True)
    inv = (7 - j)
    hw = bf16_tile_keys(x, inv)
    ref = pack_bits16_keys(ranking_bits16(x, True), 0xFFFF - inv)
    bad = (hw != ref) & (x == x)
    nb = tl.sum(bad.to(tl.int32))
    if nb > 0:
        tl.atomic_add(count_ptr, nb)
        tl.atomic_min(first_ptr, tl.min(tl.where(bad, n, 2 ** 40)))
    tl.atomic_add(count_ptr + 1, tl.sum((x != x).to(tl.int32)))


def main(log2_patterns=32, block_log2=12):
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    count = torch.zeros(2, dtype=torch.int32, device=dev)
    first = torch.full((1,), 2 ** 40, dtype=torch.int64, device=dev)
    stride = 2 ** (32 - log2_patterns)
    _compare[(2 ** (log2_patterns - block_log2),)](count, first, stride, BLOCK_LOG2=block_log2, num_warps=1)
    mism, nans = count.tolist()
    print(json.dumps({"what": "bf16_tile_keys", "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
                      "ptx_path": bool(pair_keys_in_ptx()), "patterns": 2 ** log2_patterns, "nan_patterns": nans, "mismatches": mism,
                      "first_mismatch": hex(int(first)) if mism else None}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 32)
