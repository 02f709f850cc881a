"""sonicsampler.topk against reference.topk, exactly, under the interpreter at small tiles.

The grid crosses every dispatch path of the kernels:
- stage 1, tile no larger than the filter capacity: direct bitonic top-E of the tile;
- stage 1, filter fast path (about 1.4 E keys pass the group-max threshold);
- stage 1, filter overflow -> bitonic over the whole tile ("strided" data: one group holds all large values);
- stage 2, saturated tiles refilled from the logits ("sorted" data with k > emit);
- one tile only (vocabulary smaller than a tile), vocabularies that are not multiples of the tile, V = 1.
"""
import importlib

import pytest
import torch

from sonicsampler import SamplingInputError, reference, topk
from sonicsampler.tuning import STRATEGIES, TopKConfig

from tolerances import poison

pytestmark = pytest.mark.interpreter


def make(kind: str, n: int, v: int, dtype: torch.dtype, gen: torch.Generator, emit: int = 4) -> torch.Tensor:
    if kind == "normal":
        x = torch.randn(n, v, generator=gen)
    elif kind == "zipf":            # Zipf(1.1) magnitudes at random positions: heavy head, long tail
        ranks = torch.randperm(v, generator=gen).float() + 1
        x = (-1.1 * torch.log(ranks)).repeat(n, 1) + 0.01 * torch.randn(n, v, generator=gen)
    elif kind == "equal":
        x = torch.full((n, v), 0.5)
    elif kind == "zero":
        x = torch.zeros(n, v)
    elif kind == "narrow":          # U(128.6, 128.7): a handful of distinct bf16 values
        x = 128.6 + 0.1 * torch.rand(n, v, generator=gen)
    elif kind == "ties":            # adversarial ties: 3 distinct values
        x = torch.randint(0, 3, (n, v), generator=gen).float()
    elif kind == "sorted":          # all of the top k in the last tile: saturates it
        x = torch.arange(v).float().repeat(n, 1) / v
    elif kind == "strided":         # one group of the tile holds every large value: filter overflow
        x = torch.randn(n, v, generator=gen)
        x[:, :: 2 * emit] += 100.0
    else:
        raise ValueError(kind)
    return x.to(dtype)


def check(x: torch.Tensor, k: int, cfg: TopKConfig | None):
    values = poison(torch.empty((x.shape[0], k), dtype=x.dtype))
    indices = poison(torch.empty((x.shape[0], k), dtype=torch.int64))
    topk(x, k, config=cfg, out=(values, indices))
    rv, ri = reference.topk(x, k)
    assert torch.equal(indices, ri), f"indices differ in rows {torch.nonzero((indices != ri).any(1)).flatten().tolist()}"
    same = (values == rv) | (torch.isnan(values) & torch.isnan(rv))
    assert bool(same.all()), "values differ"
    # Bit for bit: stage 2 decodes values from their keys, where -0.0 and +0.0 share one.
    signs = torch.isnan(rv) | (torch.signbit(values) == torch.signbit(rv))
    assert bool(signs.all()), "the sign of a zero differs"


KINDS = ["normal", "zipf", "equal", "zero", "narrow", "ties", "sorted", "strided"]
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_input_kind(kind, dtype, strategy):
    gen = torch.Generator().manual_seed(hash((kind, str(dtype))) % 2**31)
    # 1000 = 3 full tiles of 256 + a partial one; k = 12 > emit = 4 (merge grows lists, saturation possible)
    x = make(kind, 3, 1000, dtype, gen, emit=4)
    check(x, 12, TopKConfig(block=256, emit=4, strategy=strategy))


@pytest.mark.parametrize(
    "n,v,k,block,emit",
    [
        (2, 1, 1, 256, 32),        # V = 1
        (2, 7, 8, 256, 32),        # k > V: padding
        (2, 200, 16, 256, 32),     # one partial tile (Z = 1)
        (2, 256, 32, 256, 32),     # exactly one tile, tile == filter capacity (direct path)
        (2, 3000, 1, 256, 32),     # k = 1
        (2, 3000, 17, 256, 4),     # k not a power of two, emit < k
        (2, 3000, 100, 512, 32),   # k rounds up to 128
        (1, 5000, 128, 1024, 32),  # k = 128
        (3, 4097, 33, 256, 8),     # many tiles (Z = 17 -> 32 lists)
    ],
)
def test_shapes(n, v, k, block, emit):
    gen = torch.Generator().manual_seed(v * 131 + k)
    for kind in ("normal", "sorted"):
        for strategy in STRATEGIES:
            check(make(kind, n, v, torch.bfloat16, gen, emit), k, TopKConfig(block=block, emit=emit, strategy=strategy))


@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_inf_nan_and_short_rows(dtype, strategy):
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(8, 900, generator=gen).to(dtype)
    x[0, :] = float("-inf")                   # nothing selectable: all padding
    x[1, :] = float("-inf"); x[1, 100:105] = 1.0   # fewer than k finite values
    x[2, 333] = float("nan")                  # NaN row: reported, never ranked
    x[3, ::3] = float("-inf")                 # many -inf entries
    x[4, 17] = float("inf")                   # +inf ranks first
    x[5, :] = -0.0; x[5, 500:] = 0.0           # -0.0 and +0.0 tie, broken by index
    x[6, 899] = -float("nan")                 # a negative NaN in the partial last tile
    x[7, :] = float("-inf"); x[7, 3] = float("nan")   # NaN among -inf
    cfg = TopKConfig(block=256, emit=4, strategy=strategy)
    check(x, 10, cfg)
    vals, idx = topk(x, 10, config=cfg)
    assert (idx[0] == -1).all() and torch.isneginf(vals[0].float()).all()
    assert (idx[1, 5:] == -1).all() and (idx[1, :5] == torch.arange(100, 105)).all()
    for r in (2, 6, 7):
        assert (idx[r] == -1).all() and torch.isnan(vals[r].float()).all()


def test_row_stride_and_default_config():
    gen = torch.Generator().manual_seed(3)
    wide = torch.randn(4, 1500, generator=gen).to(torch.bfloat16)
    x = wide[:, 100:1300]                      # row stride 1500, not the row length
    assert x.stride(0) == 1500
    check(x, 20, TopKConfig(block=256, emit=8))
    check(torch.randn(2, 700, generator=gen).to(torch.bfloat16), 5, None)   # heuristic configuration


def test_fp32_ranks_on_full_precision():
    # Distinct in fp32, equal in bf16: fp32 input must rank them apart.
    x = torch.zeros(1, 600)
    x[0, 10] = 1.0
    x[0, 20] = 1.0 + 2 ** -20
    vals, idx = topk(x, 2, config=TopKConfig(block=256, emit=4))
    assert idx.tolist() == [[20, 10]]


def test_new_row_counts_do_not_change_kernel_arguments(monkeypatch):
    """The row count reaches the kernels only through the grid, never as an argument (which would
    specialize and recompile): every scalar argument is the same for 1..70 rows."""
    mod = importlib.import_module("sonicsampler.topk")   # the module, not the function it exports
    seen = {"stage1": set(), "stage2": set()}

    class Spy:
        def __init__(self, name, kern):
            self.name, self.kern = name, kern

        def __getitem__(self, grid):
            # Rows never ride on a grid axis other than the first (CUDA caps the others at 65535).
            assert len(grid) == 1, grid
            def launch(*args, **kwargs):
                scalars = tuple(a for a in args if not torch.is_tensor(a))
                seen[self.name].add((scalars, tuple(sorted(kwargs.items()))))
                return self.kern[grid](*args, **kwargs)
            return launch

    monkeypatch.setattr(mod, "topk_stage1", Spy("stage1", mod.topk_stage1))
    monkeypatch.setattr(mod, "topk_stage2", Spy("stage2", mod.topk_stage2))
    x = torch.randn(70, 300).to(torch.bfloat16)
    for n in (1, 2, 3, 16, 17, 70):
        mod.topk(x[:n], 8, config=TopKConfig(block=256, emit=8))
    assert len(seen["stage1"]) == 1 and len(seen["stage2"]) == 1, seen


def test_warmup_launches_each_bucket_configuration_once(monkeypatch):
    """topk_warmup launches one batch per distinct (configuration, k) that 1..max_rows rows use, so that
    no later batch size compiles: here three row buckets, two of them sharing a configuration."""
    mod = importlib.import_module("sonicsampler.topk")
    small, big = TopKConfig(block=256, emit=4), TopKConfig(block=512, emit=8)
    monkeypatch.setattr(mod, "topk_config", lambda dev, v, n: small if n <= 4 or n > 32 else big)
    launched = []
    monkeypatch.setattr(mod, "INTERPRETED", False)
    monkeypatch.setattr(mod, "topk", lambda x, k: launched.append((x.shape[0], k)))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda dev=None: None)
    assert mod.topk_warmup(1000, 70, ks=(8, 128), device="cpu") == 4
    assert sorted(launched) == [(1, 8), (1, 128), (5, 8), (5, 128)]


@pytest.mark.parametrize(
    "args,field",
    [
        ((torch.zeros(3), 1), "logits"),
        ((torch.zeros(2, 5, dtype=torch.int32), 1), "logits"),
        ((torch.zeros(2, 5), 0), "k"),
        ((torch.zeros(2, 5), 129), "k"),
        ((torch.zeros(2, 5), 2.0), "k"),
        ((torch.zeros(2, 0), 1), "logits"),
        ((torch.zeros(5, 2).t(), 1), "logits"),
    ],
)
def test_bad_input_is_refused_before_launch(args, field):
    with pytest.raises(SamplingInputError) as e:
        topk(*args)
    assert e.value.field == field


def test_cpu_tensor_without_interpreter_is_refused(monkeypatch):
    mod = importlib.import_module("sonicsampler.topk")
    monkeypatch.setattr(mod, "INTERPRETED", False)
    with pytest.raises(SamplingInputError) as e:
        mod.topk(torch.zeros(2, 300), 4)
    assert e.value.field == "logits" and "TRITON_INTERPRET" in str(e.value)
