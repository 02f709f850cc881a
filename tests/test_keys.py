"""The 16-bit order-preserving keys (kernels/keys.py) on every pattern, under the interpreter: keys
compare as the values do (bf16 and fp16), -0.0 and +0.0 share a key, and key_to_bits inverts it; a key's
ceiling bounds every fp32 value that rounds to it."""
import torch
import triton
import triton.language as tl

from sonicsampler.kernels.keys import bits_from_key16, key16_from_bits, row_key_ceiling
from sonicsampler.kernels.prologue import ranking_bits16


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


@triton.jit
def _ceilings(x_ptr, out_ptr, N: tl.constexpr, IS_BF16: tl.constexpr):
    i = tl.arange(0, N)
    key = key16_from_bits(ranking_bits16(tl.load(x_ptr + i), IS_BF16)).to(tl.uint64) << 32
    tl.store(out_ptr + i, row_key_ceiling(key, False, IS_BF16))


def test_a_key_ceiling_bounds_the_values_that_round_to_it():
    """row_key_ceiling (sample.nucleus_beyond's bound of the values behind emitted candidates): for fp32
    values of every magnitude and sign, values halfway between two 16-bit values (ties to even), values
    just below such a midpoint, the largest finite ones and zero, the ceiling of the key that the value
    rounds to is at least the value, and below the next 16-bit value above it."""
    gen = torch.Generator().manual_seed(3)
    n = 2 ** 14
    mags = torch.exp2(torch.randint(-130, 128, (n,), generator=gen).float()) * (1 + torch.rand(n, generator=gen))
    x = torch.where(torch.rand(n, generator=gen) < 0.5, -mags, mags)
    for dtype in (torch.bfloat16, torch.float16):
        grid = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16).view(dtype).float()
        grid = grid[grid.isfinite()].unique()
        mid = ((grid[1:].double() + grid[:-1]) / 2).float()   # exact: ties, rounded to even
        below = torch.nextafter(mid, torch.full_like(mid, -float("inf")))
        xs = torch.cat([x.clamp(-torch.finfo(dtype).max, torch.finfo(dtype).max), mid, below, grid,
                        torch.tensor([0.0, -0.0, -3e38, float("-inf")])])
        xs = torch.cat([xs, torch.zeros(2 ** xs.numel().bit_length() - xs.numel())])   # a power of two (tl.arange)
        out = torch.full_like(xs, float("nan"))          # poisoned
        _ceilings[(1,)](xs, out, N=xs.numel(), IS_BF16=dtype == torch.bfloat16)
        assert bool((out >= xs).all()), dtype
        up = torch.nextafter(xs.to(dtype), torch.tensor(float("inf"), dtype=dtype)).float()
        assert bool((out <= torch.maximum(up, xs)).all()), dtype
