"""keys.bf16_tile_keys runs PTX on the GPU (two fp32 values rounded to bf16 and keyed at once), which the
interpreter cannot run. This test executes that PTX text with a small emulator of its instructions (each
written from the PTX ISA's definition) and compares the keys with the integer path the interpreter runs
(pack_bits16_keys(ranking_bits16(x))): on every class of fp32 value (zeros of both signs, subnormals,
values that round up to the next binade or to infinity, ties to even, infinities) and on random patterns.
NaN is left out: its key may differ, and its row is invalid whatever it ranks. The GPU check of the same
equality over all 2**32 patterns is benchmarks/check_keys_gpu.py."""
import numpy as np
import pytest

from sonicsampler.kernels import keys

M32 = np.uint64(0xFFFFFFFF)


def bf16_rne(f32_bits):
    """fp32 bit patterns (uint64 arrays) -> bf16 patterns, round to nearest even; NaN -> 0x7FFF."""
    b = f32_bits
    r = ((b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) & np.uint64(0xFFFF)
    nan = ((b & np.uint64(0x7F800000)) == np.uint64(0x7F800000)) & ((b & np.uint64(0x7FFFFF)) != 0)
    return np.where(nan, np.uint64(0x7FFF), r)


def times_one_plus_zero_bf16(h):
    """bf16 * 1 + (+0.0), round to nearest even: -0.0 becomes +0.0, NaN canonical, every other value kept."""
    nan = ((h & np.uint64(0x7F80)) == np.uint64(0x7F80)) & ((h & np.uint64(0x7F)) != 0)
    h = np.where(h == np.uint64(0x8000), np.uint64(0), h)
    return np.where(nan, np.uint64(0x7FFF), h)


def prmt(a, b, sel):
    """prmt.b32 d, a, b, sel (default mode): byte i of d is byte (sel >> 4i) & 7 of {b, a}, or that byte's
    sign bit replicated when (sel >> 4i) & 8."""
    src = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
    d = np.zeros_like(src)
    for i in range(4):
        nib = (sel >> (4 * i)) & 0xF
        byte = (src >> np.uint64(8 * (nib & 7))) & np.uint64(0xFF)
        if nib & 8:
            byte = np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
        d |= byte << np.uint64(8 * i)
    return d


def lop3(a, b, c, lut):
    """lop3.b32 d, a, b, c, lut: each bit of d is lut's bit at (a << 2 | b << 1 | c)."""
    d = np.zeros_like(a)
    for bit in range(8):
        if lut >> bit & 1:
            sa = a if bit & 4 else ~a & M32
            sb = b if bit & 2 else ~b & M32
            sc = c if bit & 1 else ~c & M32
            d |= sa & sb & sc
    return d & M32


def run_ptx(text, x0, x1):
    """The PTX block of keys._BF16_PAIR_KEYS on operands $2 = x0, $3 = x1 (fp32 patterns): ($0, $1)."""
    regs = {"$2": x0, "$3": x1}

    def val(tok):
        tok = tok.strip()
        return regs[tok] if tok in regs else np.full_like(x0, int(tok, 0))

    for line in text.strip().strip("{}").splitlines():
        line = line.strip().rstrip(";")
        if not line or line.startswith(".reg"):
            continue
        op, args = line.split(None, 1)
        a = [t.strip() for t in args.split(",")]
        if op == "mov.b32":
            regs[a[0]] = val(a[1])
        elif op == "cvt.rn.bf16x2.f32":     # d = {bf16(a) in the upper half, bf16(b) in the lower}
            regs[a[0]] = (bf16_rne(val(a[1])) << np.uint64(16)) | bf16_rne(val(a[2]))
        elif op == "fma.rn.bf16x2":
            assert (val(a[2]) == 0x3F803F80).all() and (val(a[3]) == 0).all(), "the emulator does p * 1 + (+0) only"
            p = val(a[1])
            regs[a[0]] = (times_one_plus_zero_bf16(p >> np.uint64(16)) << np.uint64(16)) | times_one_plus_zero_bf16(p & np.uint64(0xFFFF))
        elif op == "prmt.b32":
            regs[a[0]] = prmt(val(a[1]), val(a[2]), int(a[3], 0))
        elif op == "lop3.b32":
            regs[a[0]] = lop3(val(a[1]), val(a[2]), val(a[3]), int(a[4], 0))
        elif op == "and.b32":
            regs[a[0]] = val(a[1]) & val(a[2])
        else:
            raise AssertionError(f"no emulation of {op}")
    return regs["$0"], regs["$1"]


def integer_keys(f32_bits, inv_idx):
    """pack_bits16_keys(ranking_bits16(x, IS_BF16=True), 0xFFFF - inv_idx), in numpy."""
    bits = ((f32_bits + np.uint64(0x7FFF) + ((f32_bits >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) \
        & np.uint64(0xFFFF)
    s = ((np.uint64(0x8000) - bits) & M32) >> np.uint64(16)
    return ((((bits | np.uint64(0x8000)) ^ s) & np.uint64(0xFFFF)) << np.uint64(16)) | np.uint64(inv_idx)


def value_classes():
    """fp32 patterns of every kind that rounding to bf16 treats differently, both signs."""
    pos = [0, 1, 0x7FFF, 0x8000, 0x8001, 0x18000, 0x7FFFFF, 0x800000, 0x3F800000, 0x3F807FFF, 0x3F808000,
           0x3F808001, 0x3F818000, 0x3F7FFFFF, 0x3F7F8000, 0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0x7F800000,
           0x4049_0FDB, 0x0080_8000, 0x007F_8000, 0x007F_FFFF]
    pos = np.array(pos, dtype=np.uint64)
    rng = np.random.default_rng(7)
    rand = rng.integers(0, 2 ** 32, size=2 ** 20, dtype=np.uint64)
    allp = np.concatenate([pos, pos | np.uint64(0x80000000), rand])
    nan = ((allp & np.uint64(0x7F800000)) == np.uint64(0x7F800000)) & ((allp & np.uint64(0x7FFFFF)) != 0)
    return allp[~nan]


def test_pair_keys_equal_the_integer_keys():
    x = value_classes()
    if len(x) % 2:
        x = x[:-1]
    x0, x1 = x[0::2], x[1::2]
    k0, k1 = run_ptx(keys._BF16_PAIR_KEYS.value, x0, x1)
    # bf16_tile_keys ORs each lane's inverted index into the keys after the PTX
    for j0, j1 in ((7, 6), (1, 0)):
        assert np.array_equal(k0 | np.uint64(j0), integer_keys(x0, j0))
        assert np.array_equal(k1 | np.uint64(j1), integer_keys(x1, j1))


@pytest.mark.parametrize("old,new", [("0x56", "0x96"),                       # (p ^ 0x8000) ^ s: a wrong table
                                     ("0xBB99", "0xAA88"),                   # the signs of the wrong bytes
                                     ("fma.rn.bf16x2 p, p, one, z;", ""),     # -0.0 not turned into +0.0
                                     ("0x1044", "0x3244")])                  # the upper half for the first key
def test_the_emulation_catches_a_wrong_operation(old, new):
    """Each of these slips in the PTX makes the keys differ: the comparison above can fail."""
    assert old in keys._BF16_PAIR_KEYS.value
    text = keys._BF16_PAIR_KEYS.value.replace(old, new)
    x = value_classes()[: 2 ** 12]
    k0, k1 = run_ptx(text, x[0::2], x[1::2])
    assert not (np.array_equal(k0, integer_keys(x[0::2], 0)) and np.array_equal(k1, integer_keys(x[1::2], 0)))
