"""Selection by all-pairs ranking: the rank of a key is the number of larger keys (keys are distinct).

For the few dozen to few hundred keys stage 1 and stage 2 handle after filtering, one M x M comparison
and one row reduction replace a bitonic network's log^2 M compare-exchange rounds, and with them most
of the layout exchanges through shared memory (each costing a barrier) that dominate the bitonic
version's latency (docs/PERFORMANCE.md).
"""
import triton
import triton.language as tl


@triton.jit
def ranks(keys, N: tl.constexpr):
    """Descending rank of each element of a 1-D block of N keys, a permutation of 0..N-1: the number
    of larger keys, plus the number of equal keys at lower positions (only the empty slots, key 0,
    repeat: real keys are distinct)."""
    i = tl.arange(0, N)
    a = keys[:, None]
    b = keys[None, :]
    before = (b > a) | ((b == a) & (i[None, :] < i[:, None]))
    return tl.sum(before.to(tl.int32), axis=1)


@triton.jit
def kth_largest(keys, N: tl.constexpr, K: tl.constexpr):
    """The K-th largest (K counts from 1) of a 1-D block of N keys."""
    return tl.max(tl.where(ranks(keys, N) == K - 1, keys, tl.zeros_like(keys)))


@triton.jit
def store_top_sorted(out_ptr, keys, values, N: tl.constexpr, K: tl.constexpr):
    """Store `values` of the K largest of N `keys`, descending, at out_ptr[0:K]: each lands at its
    key's rank (`values` may be a wider encoding of the same keys, ranked on the narrower one)."""
    r = ranks(keys, N)
    tl.store(out_ptr + r, values, mask=r < K)
