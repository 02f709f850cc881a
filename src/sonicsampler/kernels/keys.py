"""Order-preserving integer keys for float values, packed with an inverted index.

A float's bit pattern becomes an unsigned key that compares like the value: non-negative values get
their sign bit set, negative values are complemented. -0.0 is first mapped to +0.0 so that the two tie
(as torch compares them). The index is stored inverted below the value bits, so among equal values the
lower index has the larger key: one unsigned comparison orders by value, then by lower index.

- 16-bit inputs (bf16/fp16): 32-bit keys, value key << 16 | (0xFFFF - index within the tile).
- fp32 inputs: 64-bit keys, value key << 32 | (0xFFFFFFFF - index in the row).
Key 0 is never produced for a real value; it marks padding (lanes past the vocabulary) and NaN.
"""
import triton
import triton.language as tl
from triton.language.target_info import cuda_capability_geq

from . import INTERPRETED
from .prologue import bits16_to_f32, div_exact, ranking_bits16


@triton.constexpr_function
def pair_keys_in_ptx():
    """Whether bf16_tile_keys runs _BF16_PAIR_KEYS: outside the interpreter, for a CUDA target of sm_80 or
    later (cvt.rn.bf16x2.f32 and fma.rn.bf16x2 need it). Decided per compile from the current device's
    target (Triton's target query), which is the launch's device when Triton compiles at launch, so an
    older GPU gets the integer path rather than a ptxas error. An ahead-of-time `triton.compile` for
    another target must answer that query with its target (benchmarks/compile_report.py does)."""
    return not INTERPRETED and cuda_capability_geq(8, 0)


# Two fp32 values ($2, $3) -> their tile keys without the index bits ($0, $1): one conversion rounds both
# to bf16 (cvt.rn: round to nearest even, as ranking_bits16's integers do); p * 1 + (+0) turns -0.0 into
# +0.0 so the two tie (an fma: add.rn.bf16x2 would do the same but ptxas takes it only for sm_90 and
# later); the sign bytes replicated (prmt's mode 8) give 0xFFFF under each negative half;
# (bits | 0x8000) ^ that is key16_from_bits for both halves in one lop3; one prmt per key puts a half
# in the upper 16 bits (the caller ORs in the index).
_BF16_PAIR_KEYS = tl.constexpr("""{
.reg .b32 p, s, one, z;
mov.b32 one, 0x3F803F80;
mov.b32 z, 0;
cvt.rn.bf16x2.f32 p, $3, $2;
fma.rn.bf16x2 p, p, one, z;
prmt.b32 s, p, 0, 0xBB99;
lop3.b32 p, p, 0x80008000, s, 0x56;
prmt.b32 $0, p, 0, 0x1044;
and.b32 $1, p, 0xFFFF0000;
}""")


@triton.jit
def key16_from_bits(bits):
    """Raw 16-bit float patterns (int32 in 0..0xFFFF) -> uint32 holding the order-preserving key.

    Three instructions and no select: s = 0xFFFF exactly when bits > 0x8000 (negative, not -0.0), and
    (bits | 0x8000) ^ s flips the bits of negative values and sets the sign bit of the others, so
    -0.0 lands on +0.0's key (tests/test_keys.py checks all 2**16 patterns)."""
    s = (0x8000 - bits).to(tl.uint32) >> 16
    return (bits | 0x8000).to(tl.uint32) ^ s


@triton.jit
def bits_from_key16(key):
    """Inverse of key16_from_bits (-0.0 comes back as +0.0)."""
    k = key.to(tl.int32)
    return tl.where(k >= 0x8000, k ^ 0x8000, k ^ 0xFFFF)


@triton.jit
def value_key16(x):
    """bf16/fp16 values -> uint32 holding the 16-bit order-preserving key."""
    return key16_from_bits(x.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF)


@triton.jit
def value_key32(x):
    """fp32 values -> uint64 holding the 32-bit order-preserving key."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = tl.where(bits == 0x80000000, 0, bits)
    key = tl.where(bits >= 0x80000000, bits ^ 0xFFFFFFFF, bits | 0x80000000)
    return key.to(tl.uint64)


@triton.jit
def bits_from_key32(key):
    """Inverse of value_key32 (uint32 key -> uint32 fp32 pattern; -0.0 comes back as +0.0)."""
    k = key.to(tl.uint32)
    return tl.where(k >= 0x80000000, k ^ 0x80000000, k ^ 0xFFFFFFFF).to(tl.uint32)


@triton.jit
def row_key_value(key, KEY64: tl.constexpr, IS_BF16: tl.constexpr):
    """The value (fp32) a 64-bit row key encodes: the logit itself for fp32 rows, the 16-bit value
    for bf16/fp16 rows (-0.0 comes back as +0.0; meaningless where key == 0)."""
    if KEY64:
        return bits_from_key32((key >> 32).to(tl.uint32)).to(tl.float32, bitcast=True)
    else:
        return bits16_to_f32(bits_from_key16((key >> 32).to(tl.int32)), IS_BF16)


@triton.jit
def row_key_ceiling(key, KEY64: tl.constexpr, IS_BF16: tl.constexpr):
    """An upper bound of the fp32 values whose row key this is: for bf16/fp16 rows, whose keys hold values
    rounded to the 16-bit dtype to nearest (prologue.ranking_bits16, tile_key_quotients), halfway to the
    next key's value (exact in fp32; +inf past the largest finite value, and the lowest finite value for
    -inf, which every value below it rounds to); for fp32 rows the value itself. Meaningless where key == 0."""
    v = row_key_value(key, KEY64, IS_BF16)
    if KEY64:
        return v
    else:
        k16 = (key >> 32).to(tl.int32)
        nxt = bits16_to_f32(bits_from_key16(tl.minimum(k16 + 1, 0xFFFF)), IS_BF16)
        return tl.where(v == float("-inf"), nxt, tl.where(v < float("inf"), v + (nxt - v) * 0.5, v))


@triton.jit
def pack_bits16_keys(bits, local_idx):
    """Tile keys from raw 16-bit patterns (the sampler's rounded processed values), never 0."""
    return (key16_from_bits(bits) << 16) | (0xFFFF - local_idx).to(tl.uint32)


@triton.jit
def bf16_tile_keys(x, inv_idx):
    """pack_bits16_keys(ranking_bits16(x, IS_BF16=True), 0xFFFF - inv_idx) for fp32 values x, the same
    keys for every value but NaN (a NaN's key may differ; its row is invalid whatever it ranks). On
    the GPU two values at a time in six instructions (_BF16_PAIR_KEYS), about 5 per value fewer than
    the integer rounding and key (sm_90 compile); x's layout must hold neighbours in pairs in one
    thread (the (groups, 8) tiles do). Under the interpreter and before sm_80, the integer path."""
    if pair_keys_in_ptx():
        return tl.inline_asm_elementwise(_BF16_PAIR_KEYS, "=r,=r,r,r", [x], dtype=tl.uint32, is_pure=True,
                                         pack=2) | inv_idx.to(tl.uint32)
    else:
        return pack_bits16_keys(ranking_bits16(x, True), 0xFFFF - inv_idx)


@triton.jit
def pack_tile_keys(x, local_idx, global_idx, live, KEY64: tl.constexpr):
    """Packed keys of a tile; 0 where `live` is false (past the vocabulary, or NaN)."""
    if KEY64:
        key = (value_key32(x) << 32) | (0xFFFFFFFF - global_idx.to(tl.uint64))
        return tl.where(live, key, tl.zeros_like(key))
    else:
        key = (value_key16(x) << 16) | (0xFFFF - local_idx).to(tl.uint32)
        return tl.where(live, key, tl.zeros_like(key))


@triton.jit
def tile_keys_to_row_keys(top, tile_start, KEY64: tl.constexpr):
    """Tile-local packed keys -> 64-bit keys (value key << 32 | inverted row index); 0 stays 0."""
    if KEY64:
        return top
    else:
        local = (0xFFFF - (top & 0xFFFF)).to(tl.uint64)
        key = ((top >> 16).to(tl.uint64) << 32) | (0xFFFFFFFF - (tile_start + local))
        return tl.where(top != 0, key, tl.zeros_like(key))


@triton.jit
def row_key_index(key):
    """Row index of a 64-bit key (meaningless where key == 0)."""
    return (0xFFFFFFFF - (key & 0xFFFFFFFF)).to(tl.int64)


@triton.jit
def row_key_to_tile_key(key, tile_start, KEY64: tl.constexpr):
    """Inverse of tile_keys_to_row_keys for a key of that tile (a scalar or a block)."""
    if KEY64:
        return key
    else:
        local = (row_key_index(key) - tile_start).to(tl.uint32)
        return ((key >> 32).to(tl.uint32) << 16) | (0xFFFF - local)


@triton.jit
def tile_key_quotients(keys, inv_t, IS_BF16: tl.constexpr):
    """16-bit tile keys of raw values -> the keys of their quotients by a temperature t (inv_t = 1 / t in
    fp64), rounded to the input dtype as the sampler ranks processed values; the index part kept, 0
    (empty) kept. Monotone in the value: keys whose quotients round together tie on the value, so their
    order (by index) may differ from the raw keys' (the caller sorts them again)."""
    raw = bits16_to_f32(bits_from_key16((keys >> 16).to(tl.int32)), IS_BF16)
    k16 = key16_from_bits(ranking_bits16(div_exact(raw, inv_t), IS_BF16))
    return tl.where(keys != 0, (k16 << 16) | (keys & 0xFFFF), keys)
