"""Bitonic networks on hypercube views of packed keys (unsigned ints, larger = better).

A tensor of 2**n keys is viewed as a hypercube [2]*n; axis "d" below means the hypercube axis whose
stride in the flat order is 2**d. A compare-and-swap (CAS) along d orders every pair that differs only
in bit d: min on the left, max on the right, or the reverse where `flip` is 1.

Two choices, both for the interpreter and the GPU alike:
- CAS is written as min/max + select (the paper's IMNMX form), not as a conditional swap.
- The partner of each element is `sum over the pair - self`, wrapping unsigned arithmetic: exact for
  any key, and about 30x faster under TRITON_INTERPRET than an xor-combine reduction (which runs a
  Python call per element).
"""
import triton
import triton.language as tl


@triton.jit
def _indicator(n: tl.constexpr, d: tl.constexpr):
    """0/1 along hypercube axis d (stride 2**d), broadcastable against [2]*n."""
    return tl.reshape(tl.arange(0, 2), [1] * (n - d - 1) + [2] + [1] * d)


@triton.jit
def _cas(h, flip, n: tl.constexpr, d: tl.constexpr):
    partner = tl.sum(h, axis=n - 1 - d, keep_dims=True) - h
    take_max = (_indicator(n, d) ^ flip) != 0
    return tl.where(take_max, tl.maximum(h, partner), tl.minimum(h, partner))


@triton.jit
def _merge(h, flip, n: tl.constexpr, s: tl.constexpr):
    """Sort every bitonic block of 2**s elements (ascending where flip is 0, descending where 1)."""
    for j in tl.static_range(s):
        h = _cas(h, flip, n, s - 1 - j)
    return h


@triton.jit
def sort_blocks_alternating(h, n: tl.constexpr, s: tl.constexpr):
    """Sort every block of 2**s elements of the hypercube h ([2]*n, s < n): even blocks ascending,
    odd blocks descending, the layout `fold_topk` expects."""
    for i in tl.static_range(1, s + 1):
        h = _merge(h, _indicator(n, i), n, i)
    return h


@triton.jit
def fold_topk(h, n: tl.constexpr, c: tl.constexpr, DESCENDING: tl.constexpr):
    """Top 2**c of a hypercube h ([2]*n) whose 2**c-blocks are sorted, alternating ascending and
    descending. Each fold takes the elementwise max of neighbouring blocks (the top half of their union,
    a bitonic block) and re-sorts it. Returns 2**c keys sorted in the requested order (flat)."""
    for i in tl.static_range(n - c):
        # Before fold i the hypercube has n - i axes; folding axis c leaves n - i - 1.
        h = tl.max(h, axis=n - i - 1 - c)
        if i < n - c - 1:
            h = _merge(h, _indicator(n - i - 1, c), n - i - 1, c)
        else:
            h = _merge(h, DESCENDING, n - i - 1, c)
    return tl.reshape(h, [2 ** c])


@triton.jit
def topk_sorted(x, N_LOG2: tl.constexpr, C_LOG2: tl.constexpr, DESCENDING: tl.constexpr):
    """The 2**C_LOG2 largest keys of a flat tensor of 2**N_LOG2 keys, sorted (C_LOG2 < N_LOG2)."""
    h = tl.reshape(x, [2] * N_LOG2)
    h = sort_blocks_alternating(h, N_LOG2, C_LOG2)
    return fold_topk(h, N_LOG2, C_LOG2, DESCENDING)


@triton.jit
def sort_flat(x, N_LOG2: tl.constexpr, DESCENDING: tl.constexpr):
    """All 2**N_LOG2 keys of a flat tensor, sorted."""
    h = tl.reshape(x, [2] * N_LOG2)
    for i in tl.static_range(1, N_LOG2):
        h = _merge(h, _indicator(N_LOG2, i), N_LOG2, i)
    h = _merge(h, DESCENDING, N_LOG2, N_LOG2)
    return tl.reshape(h, [2 ** N_LOG2])
