"""Division by a row's scalar (temperature, repetition penalty) rounds as torch's IEEE fp32 division.

On the GPU Triton's `/` on fp32 is div.full.f32 (a reciprocal times x, up to 2 ulp off); the
interpreter divides exactly, so these tests check the formula the kernels use instead (the fp64
product rounded once, kernels/prologue.div_exact) against torch, bit for bit, and the kernel function
itself under the interpreter."""
import torch
import triton
import triton.language as tl

from sonicsampler.kernels.prologue import div_exact

TEMPERATURES = [0.7, 0.3, 1.3, 0.123456, 1e-3, 7.77, 1 / 3, 0.1, 3e-5, 250.0]


def values(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * torch.exp(torch.randn(n, generator=g) * 4)
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), 1e-38, -3e38, 3e38, 1.5e-45, 128.65])
    return torch.cat([x, x.bfloat16().float(), special])


def test_fp64_product_rounds_as_fp32_division():
    x = values(500_000, 0)
    for t in TEMPERATURES:
        tt = torch.tensor(t, dtype=torch.float32)
        want = x / tt
        got = (x.double() * (1.0 / tt.double())).float()
        same = (got == want) | (got.isnan() & want.isnan())
        assert bool(same.all()), (t, x[~same][:5], got[~same][:5], want[~same][:5])


@triton.jit
def _divide(x_ptr, inv_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, div_exact(tl.load(x_ptr + i), tl.load(inv_ptr)))


def test_div_exact_kernel_matches_torch():
    """The kernel function with the reciprocal the slot table stores (slots.py: 1 / fp32 t in fp64)."""
    from sonicsampler.slots import SlotTable
    from sonicsampler import SamplingParams
    x = values(4000, 1)[:4096]
    x = torch.cat([x, torch.zeros(4096 - x.numel())])
    table = SlotTable(8, 1, "cpu")
    for t in TEMPERATURES[:4]:
        tt = torch.tensor([t], dtype=torch.float32)
        table.assign(0, SamplingParams(temperature=t, repetition_penalty=t + 1.0))
        inv = table.inv_temperature[:1].clone()
        assert table.repetition[0, 0] == torch.tensor(t + 1.0, dtype=torch.float32).double()
        assert table.repetition[0, 1] == 1.0 / torch.tensor(t + 1.0, dtype=torch.float32).double()
        out = torch.full_like(x, float("nan"))        # poisoned
        _divide[(1,)](x, inv, out, N=4096)
        assert torch.equal(out.view(torch.int32), (x / tt).view(torch.int32)), t
