"""The 16-bit order-preserving keys (kernels/keys.py) on every pattern, under the interpreter: keys
compare as the values do (bf16 and fp16), -0.0 and +0.0 share a key, and key_to_bits inverts it."""
import torch
import triton
import triton.language as tl

from sonicsampler.kernels.keys import bits_from_key16, key16_from_bits


@triton.jit
def _keys(bits_ptr, key_ptr, back_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    k = key16_from_bits(tl.load(bits_ptr + i))
    tl.store(key_ptr + i, k.to(tl.int32))
    tl.store(back_ptr + i, bits_from_key16(k))


def test_key16_orders_every_pattern_as_its_value():
    bits = torch.arange(2 ** 16, dtype=torch.int32)
    keys = torch.full_like(bits, -1)       # poisoned
    back = torch.full_like(bits, -1)
    _keys[(1,)](bits, keys, back, N=2 ** 16)
    assert int(keys.min()) >= 0 and int(keys.max()) <= 0xFFFF
    as16 = bits.to(torch.int16)            # two's complement view of the patterns
    for dtype in (torch.bfloat16, torch.float16):
        v = as16.view(dtype).float()
        ok = ~v.isnan()
        kv, vv = keys[ok].long(), v[ok]
        order = torch.argsort(kv)
        # Sorted by key, the values never decrease; equal keys only for equal values (the two zeros).
        assert bool((vv[order][1:] >= vv[order][:-1]).all()), dtype
        same_key = kv[order][1:] == kv[order][:-1]
        assert bool((vv[order][1:][same_key] == vv[order][:-1][same_key]).all()), dtype
        assert int(same_key.sum()) == 1, dtype  # -0.0 with +0.0
    # The inverse gives the pattern back (-0.0 as +0.0).
    want = torch.where(bits == 0x8000, torch.zeros_like(bits), bits)
    assert torch.equal(back, want)
