"""Stage 1's L2 prefetch of a later program's tile.

Stage 1 runs one short program per (row, tile) on a flat grid, in waves: each program's first wait is
its tile's load from DRAM (Nsight Compute, run 69: the first use of the loaded logits was the hottest
stall of the sampler's stage 1, about an eighth of its samples). Programs start roughly in grid order,
so program p asks L2 for the tile of program p + AHEAD, which starts about a wave later; that program's
load then hits L2. A prefetch is a hint: it takes no register and no result, and changes nothing
that a program computes. AHEAD = 0 (the default) compiles nothing; so does the interpreter, which
cannot run inline assembly.
"""
import triton
import triton.language as tl

from . import INTERPRETED

_COMPILED = tl.constexpr(not INTERPRETED)
LINE_BYTES = tl.constexpr(128)


@triton.jit
def prefetch_later_tile(logits_ptr, stride_row, V, Z, BLOCK_LOG2: tl.constexpr, AHEAD: tl.constexpr):
    """Prefetch into L2 the tile of program program_id + AHEAD (row = q // Z, tile = q mod Z), one
    128-byte line per lane, if that program exists."""
    if AHEAD > 0 and _COMPILED:
        # 32-bit: a grid has fewer than 2**31 programs, and a 64-bit division cost the sampler's stage 1
        # twice its spill code in the sm_90 compile (ptxas saves registers around its subroutine).
        q = tl.program_id(0) + AHEAD
        exists = q < tl.num_programs(0)
        q = tl.where(exists, q, 0)
        row = q // Z
        tile = q - row * Z
        PER_LINE: tl.constexpr = LINE_BYTES // (logits_ptr.dtype.element_ty.primitive_bitwidth // 8)
        N_LINES: tl.constexpr = max(1, (2 ** BLOCK_LOG2) // PER_LINE)
        offs = tile * (2 ** BLOCK_LOG2) + tl.arange(0, N_LINES) * PER_LINE
        addr = (logits_ptr + row.to(tl.int64) * stride_row + offs).to(tl.int64)
        wanted = (exists & (offs < V)).to(tl.int32)
        tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.b32 p, $2, 0; @p prefetch.global.L2 [$1]; mov.u32 $0, 0; }",
            "=r,l,r", [addr, wanted], dtype=tl.int32, is_pure=False, pack=1)
