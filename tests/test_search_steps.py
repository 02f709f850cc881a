"""The cut searches' steps (kernels/long_rows.search_step and wide_step) under the interpreter, against
their definitions written out here in NumPy: the weight at or above each interval's start (integer sums,
then fp32), the target set by a first pass, the last interval whose weight still reaches it, the weight
above that interval. The kernels take these from fewer block reductions (the intervals that reach are a
prefix); these tests hold them to the plain definitions on random sums, sparse ones, all-zero ones, and a
top-k target above the row's count (no interval reaches)."""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from sonicsampler.kernels.long_rows import DIGIT_BITS, DIGITS, INV_FIX, search_step, wide_step

FIX_SCALE = np.float32(INV_FIX.value)


@triton.jit
def _store_step(out_i_ptr, out_f_ptr, s_lo, shift, s_target, s_f_hi, jj, done):
    """A step's results: (s_lo, shift, s_f_hi, jj, done) as int64, then s_target."""
    tl.store(out_i_ptr, s_lo)
    tl.store(out_i_ptr + 1, shift)
    tl.store(out_i_ptr + 2, s_f_hi)
    tl.store(out_i_ptr + 3, jj.to(tl.int64))
    tl.store(out_i_ptr + 4, done.to(tl.int64))
    tl.store(out_f_ptr, s_target)


@triton.jit
def _search(h_ptr, iv_ptr, fv_ptr, out_i_ptr, out_f_ptr, KEY_BITS: tl.constexpr):
    j = tl.arange(0, DIGITS)
    h = tl.load(h_ptr + j)
    s_lo, shift, s_f_hi, k = tl.load(iv_ptr), tl.load(iv_ptr + 1), tl.load(iv_ptr + 2), tl.load(iv_ptr + 3)
    first, by_count, clamped = tl.load(iv_ptr + 4) != 0, tl.load(iv_ptr + 5) != 0, tl.load(iv_ptr + 6) != 0
    s_target, top_p = tl.load(fv_ptr), tl.load(fv_ptr + 1)
    s_lo, shift, s_target, s_f_hi, jj, done = search_step(h, s_lo, shift, s_target, s_f_hi, first, by_count, k,
                                                          top_p, clamped, KEY_BITS)
    _store_step(out_i_ptr, out_f_ptr, s_lo, shift, s_target, s_f_hi, jj, done)


@triton.jit
def _wide(h_ptr, iv_ptr, top_p, out_i_ptr, out_f_ptr, W: tl.constexpr):
    h = tl.load(h_ptr + tl.arange(0, W))
    s_lo, shift, s_target, s_f_hi, jj, done = wide_step(h, tl.load(iv_ptr), tl.load(iv_ptr + 1), top_p, 16)
    _store_step(out_i_ptr, out_f_ptr, s_lo, shift, s_target, s_f_hi, jj, done)


def _above(h, s_f_hi=0):
    """Integer weight at or above each interval's start, and the same in fp32 as the kernels scale it."""
    f_fix = np.cumsum(h[::-1])[::-1] + s_f_hi
    return f_fix, f_fix.astype(np.float32) * FIX_SCALE


def _search_def(h, s_lo, shift, s_target, s_f_hi, first, by_count, k, top_p, clamped, key_bits):
    f_fix, f = _above(h, s_f_hi)
    if first:
        s_target = np.float32(k) if by_count else np.float32(top_p) * f[0]
    step = 1 << shift
    j = np.arange(DIGITS.value)
    reach = (f >= s_target) & (s_lo + j * step <= 2 ** key_bits - 1)
    jj = int(j[reach].max()) if reach.any() else 0
    edge = clamped and jj in (0, DIGITS.value - 1)
    done = shift == 0 and not edge
    if edge:
        return 0, key_bits - DIGIT_BITS.value, 0, jj, done, s_target
    s_f_hi = int(f_fix[jj + 1]) if jj < DIGITS.value - 1 else s_f_hi
    return s_lo + jj * step, shift - DIGIT_BITS.value, s_f_hi, jj, done, s_target


def _wide_def(h, w_lo, t, top_p):
    w = len(h)
    f_fix, f = _above(h)
    s_target = np.float32(top_p) * f[0]
    j = np.arange(w)
    jj = int(j[f >= s_target].max()) if (f >= s_target).any() else 0
    c = w_lo + jj - 1
    done = 1 <= jj <= w - 2 and c != 0
    if not done:
        return 0, 16 - DIGIT_BITS.value, 0, jj, False, s_target
    key = (c + t - 1 if c > 0 else c - t) + 0x8000
    return key, 0, int(f_fix[jj + 1]), jj, True, s_target


def _sums(rng, n, kind):
    """Per-interval integer sums as a pass leaves them (weights of up to 2**39 each, many tokens)."""
    if kind == "zero":
        return np.zeros(n, np.int64)
    h = rng.integers(0, 2 ** 40, n, dtype=np.int64)
    if kind == "sparse":
        h[rng.random(n) < 0.9] = 0
    if kind == "spike":
        h[rng.integers(0, n)] += 2 ** 52
    return h


def _run_search(h, ints, floats, key_bits):
    out_i = torch.full((5,), -7, dtype=torch.int64)      # poisoned
    out_f = torch.full((1,), float("nan"))
    _search[(1,)](torch.from_numpy(h), torch.tensor(ints, dtype=torch.int64), torch.tensor(floats),
                  out_i, out_f, KEY_BITS=key_bits)
    return [int(v) for v in out_i] + [np.float32(out_f[0])]


@pytest.mark.parametrize("kind", ["random", "sparse", "spike", "zero"])
def test_search_step_matches_its_definition(kind):
    rng = np.random.default_rng(["random", "sparse", "spike", "zero"].index(kind))
    for trial in range(24):
        h = _sums(rng, DIGITS.value, kind)
        key_bits = 32 if trial % 3 == 0 else 16
        first = trial % 2 == 0
        by_count = first and trial % 4 == 0
        total = int(h.sum())
        # A count target: within the row's count, or above it (a top-k over fewer tokens: none reaches).
        k = int(rng.integers(1, 2 ** 20)) if trial % 8 else 10 ** 9
        top_p = float(rng.choice([0.5, 0.9, 0.99, 1.0]))
        shift = key_bits - DIGIT_BITS.value if first else int(rng.choice([0, 8])) % key_bits
        s_lo = 0 if first else int(rng.integers(0, 2 ** key_bits))
        s_f_hi = 0 if first else int(rng.integers(0, 2 ** 45))
        # A later pass's target lies within its range's weight (or just above it, to reach nothing).
        s_target = np.float32(0.0) if first else np.float32((s_f_hi + rng.random() * 1.02 * total) * FIX_SCALE)
        clamped = trial % 5 == 1
        ints = [s_lo, shift, s_f_hi, k, int(first), int(by_count), int(clamped)]
        got = _run_search(h, ints, [float(s_target), top_p], key_bits)
        want = _search_def(h, s_lo, shift, s_target, s_f_hi, first, by_count, k, top_p, clamped, key_bits)
        assert got[:4] == [int(v) for v in want[:4]], (trial, got, want)
        assert bool(got[4]) == bool(want[4]), (trial, got, want)
        assert got[5] == want[5], (trial, got, want)


@pytest.mark.parametrize("kind", ["random", "sparse", "spike", "zero"])
def test_wide_step_matches_its_definition(kind):
    w = 64
    rng = np.random.default_rng(10 + ["random", "sparse", "spike", "zero"].index(kind))
    for trial in range(24):
        h = _sums(rng, w, kind)
        top_p = float(rng.choice([0.3, 0.9, 0.99, 1.0]))
        w_lo, t = int(rng.integers(-40, 40)), int(rng.integers(0, 8))
        out_i = torch.full((5,), -7, dtype=torch.int64)      # poisoned
        out_f = torch.full((1,), float("nan"))
        _wide[(1,)](torch.from_numpy(h), torch.tensor([w_lo, t], dtype=torch.int64), top_p, out_i, out_f, W=w)
        got = [int(v) for v in out_i] + [np.float32(out_f[0])]
        want = _wide_def(h, w_lo, t, top_p)
        assert got[:4] == [int(v) for v in want[:4]], (trial, got, want)
        assert bool(got[4]) == want[4], (trial, got, want)
        assert got[5] == want[5], (trial, got, want)
