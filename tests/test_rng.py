"""Counter-based uniforms (sonicsampler/rng.py and kernels/rng.py).

1. Known answers: `rng.philox4x32` reproduces the Random123 Philox4x32-10 test vectors, and
   `rng.uniforms` follows the documented counter layout and float conversion (checked against a
   pure-Python Philox written here from the Random123 round function).
2. Kernel == torch, bit for bit: a tiny Triton kernel calls `kernels.rng.philox_uniform` (under the
   interpreter when there is no GPU) for seeds 0, 1, 2**31+5, 2**63-1, 2**63, 2**64-1, positions 0 and
   >= 2**32, streams 0..2 and token blocks starting at offsets that are not multiples of 4.
3. Statistical quality over 10**6 draws: range [2**-24, 1-2**-24] (never 0 or 1), chi-square and
   Kolmogorov-Smirnov uniformity, per-bit balance, and independence between streams, positions, seeds
   and tokens sharing a Philox call. Every threshold below has a false-alarm probability <= ~1e-6 for an
   ideal generator (and Philox is deterministic, so a given seed either passes or fails forever).
"""
from __future__ import annotations

import math

import pytest
import torch
import triton
import triton.language as tl

from sonicsampler import rng
from sonicsampler.kernels import rng as kernel_rng
from sonicsampler.kernels.rng import noise_from_uniform, philox_uniform, philox_uniform_groups, philox_uniform_tile

U64 = 1 << 64
M32 = 0xFFFFFFFF


# -------------------------------------------------------------------------------------------------
# 1. Known answers
# -------------------------------------------------------------------------------------------------
# Random123 kat_vectors, "philox4x32 10": counter (4 words), key (2 words) -> output (4 words).
PHILOX_KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def py_philox4x32_10(ctr, key):
    """Philox4x32-10 on Python ints, straight from the Random123 round function."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c3 ^ k1) & M32, p0 & M32
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


def py_uniform(seed, position, stream, token):
    """The documented layout (rng.py docstring) on Python ints; the float is exact in binary64."""
    seed %= U64
    position %= U64
    words = py_philox4x32_10((token >> 2, position & M32, stream, position >> 32), (seed & M32, seed >> 32))
    return ((words[token & 3] >> 9) + 0.5) * 2.0 ** -23


@pytest.mark.parametrize("ctr,key,expected", PHILOX_KAT)
def test_philox_known_answers(ctr, key, expected):
    assert py_philox4x32_10(ctr, key) == expected      # the pure-Python helper itself
    seed = key[0] | (key[1] << 32)
    got = rng.philox4x32(seed, *(torch.tensor([c], dtype=torch.int64) for c in ctr))
    assert tuple(int(w) for w in got) == expected


SEEDS = [0, 1, 2**31 + 5, 2**32 + 7, 2**63 - 1, 2**63, 2**63 + 12345, U64 - 1]
POSITIONS = [0, 1, 7, 2**31, 2**32, 2**32 + 3, 2**40 + 1, 2**63 - 1]


@pytest.mark.parametrize("seed", SEEDS)
def test_uniforms_layout_matches_python_philox(seed):
    tokens = torch.tensor([0, 1, 2, 3, 5, 6, 7, 4097, 150_001, 2**31 - 1], dtype=torch.int64)
    for position in POSITIONS:
        for stream in (0, 1, 2):
            got = rng.uniforms(seed, position, stream, tokens)
            assert got.dtype == torch.float32
            expected = torch.tensor([py_uniform(seed, position, stream, int(t)) for t in tokens],
                                    dtype=torch.float64)
            # the conversion is exact in fp32, so the float64 value must be reproduced exactly
            assert torch.equal(got.double(), expected), (seed, position, stream)


def test_negative_seed_is_taken_modulo_2_64():
    t = torch.arange(9)
    assert torch.equal(rng.uniforms(-1, 3, 0, t), rng.uniforms(U64 - 1, 3, 0, t))
    assert torch.equal(rng.uniforms(-(2**63), 3, 0, t), rng.uniforms(2**63, 3, 0, t))


def test_as_int64_holds_the_uint64_bit_pattern():
    t = rng.as_int64([0, 1, 2**63 - 1, 2**63, 2**64 - 1, -1, -(2**63), 2**64 + 5])
    assert t.dtype == torch.int64
    assert t.tolist() == [0, 1, 2**63 - 1, -(2**63), -1, -1, -(2**63), 5]


def test_tensor_seeds_and_positions_match_scalar_calls():
    """Per-element seeds and positions as int64 tensors (uint64 bit patterns: negative for values >= 2**63),
    broadcast against the tokens, give element for element the scalar call's value, for every function."""
    tokens = torch.tensor([0, 1, 2, 3, 5, 6, 4097, 150_001, 2**31 - 1], dtype=torch.int64)
    pairs = [(s, q) for s in SEEDS + [-1, -(2**63)] for q in POSITIONS + [2**63 + 5, U64 - 1]]
    seed_t = rng.as_int64([s for s, _ in pairs])[:, None]            # (P, 1)
    pos_t = rng.as_int64([q for _, q in pairs])[:, None]
    for stream in (0, 1, 2):
        grid = rng.random_words(seed_t, pos_t, stream, tokens[None, :])                     # (P, T)
        flat = rng.uniforms(seed_t.expand(-1, tokens.numel()).flatten(),                     # (P * T,)
                            pos_t.expand(-1, tokens.numel()).flatten(), stream, tokens.repeat(len(pairs)))
        for i, (s, q) in enumerate(pairs):
            assert torch.equal(grid[i], rng.random_words(s, q, stream, tokens)), (s, q, stream)
            assert torch.equal(flat.view(len(pairs), -1)[i], rng.uniforms(s, q, stream, tokens)), (s, q, stream)
            if i % 7 == 0:
                assert flat.view(len(pairs), -1)[i, 4].item() == py_uniform(s, q, stream, 5)
    # mixed forms: tensor seed with an int position and vice versa; gumbel likewise
    s, q = 2**63 + 12345, 2**40 + 1
    one_s, one_q = rng.as_int64([s]), rng.as_int64([q])
    assert torch.equal(rng.uniforms(one_s, q, 1, tokens), rng.uniforms(s, q, 1, tokens))
    assert torch.equal(rng.uniforms(s, one_q, 1, tokens), rng.uniforms(s, q, 1, tokens))
    assert torch.equal(rng.gumbel(seed_t, pos_t, 2, tokens)[3], rng.gumbel(*pairs[3], 2, tokens))
    # Philox itself with per-element keys: the Random123 known answers, two keys in one call
    got = rng.philox4x32(rng.as_int64([k[0] | (k[1] << 32) for _, k, _ in PHILOX_KAT]),
                         *(torch.tensor([c[j] for c, _, _ in PHILOX_KAT]) for j in range(4)))
    assert [tuple(int(w[i]) for w in got) for i in range(len(PHILOX_KAT))] == [e for _, _, e in PHILOX_KAT]


def test_tensor_seed_must_be_int64():
    with pytest.raises(TypeError, match="int64"):
        rng.uniforms(torch.tensor([1], dtype=torch.int32), 0, 0, torch.arange(4))


def test_conversion_extremes():
    w = torch.tensor([0, 1, 511, 512, 2**31, M32 - 511, M32], dtype=torch.int64)
    u = rng.words_to_uniform(w)
    assert u.dtype == torch.float32
    expected = [2.0**-24, 2.0**-24, 2.0**-24, 3 * 2.0**-24, 0.5 + 2.0**-24, 1 - 2.0**-24, 1 - 2.0**-24]
    assert u.double().tolist() == expected
    g = -torch.log(-torch.log(u))
    assert torch.isfinite(g).all()


# -------------------------------------------------------------------------------------------------
# 2. Kernel == torch, bit for bit
# -------------------------------------------------------------------------------------------------
@triton.jit
def _uniform_scalar_args(out_ptr, seed, position, tok0, STREAM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    u = philox_uniform(seed, position, STREAM, tok0 + offs)
    tl.store(out_ptr + offs, u)


@triton.jit
def _uniform_loaded_args(out_ptr, seed_ptr, pos_ptr, tok_ptr, stream, BLOCK: tl.constexpr):
    # seed and position read from int64 tensors (as a batched kernel reads per-row values), int64 tokens
    offs = tl.arange(0, BLOCK)
    seed = tl.load(seed_ptr)
    position = tl.load(pos_ptr)
    token = tl.load(tok_ptr + offs)
    u = philox_uniform(seed, position, stream, token)
    tl.store(out_ptr + offs, u)


@triton.jit
def _uniform_tile(out_ptr, seed, position, start, STREAM: tl.constexpr, BLOCK: tl.constexpr,
                  GROUPED: tl.constexpr = False):
    if GROUPED:   # (BLOCK / 8, 8): groups of 8 neighbours, as the sampler's stage 1 lays a tile out
        u = philox_uniform_groups(seed, position, STREAM, start, BLOCK // 8)
        tl.store(out_ptr + tl.arange(0, BLOCK // 8)[:, None] * 8 + tl.arange(0, 8)[None, :], u)
    else:
        u = philox_uniform_tile(seed, position, STREAM, start, BLOCK)
        tl.store(out_ptr + tl.arange(0, BLOCK), u)


def _as_i64(seed: int) -> int:
    """The uint64 seed's bit pattern as a signed int64 (how a kernel receives it)."""
    return seed - U64 if seed >= 2**63 else seed


BLOCK = 32


@pytest.mark.interpreter
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("position", [0, 1, 2**32, 2**32 + 3, 2**40 + 1])
def test_kernel_matches_torch_scalar_args(seed, position, device):
    for stream in (0, 1, 2):
        for tok0 in (0, 3, 5, 4 * 1000 + 2, 2**20 + 1):
            out = torch.full((BLOCK,), float("nan"), device=device)
            _uniform_scalar_args[(1,)](out, _as_i64(seed), position, tok0, STREAM=stream, BLOCK=BLOCK)
            expected = rng.uniforms(seed, position, stream, torch.arange(tok0, tok0 + BLOCK))
            assert torch.equal(out.cpu().view(torch.int32), expected.view(torch.int32)), \
                (seed, position, stream, tok0)


@pytest.mark.interpreter
@pytest.mark.parametrize("seed", SEEDS)
def test_kernel_matches_torch_loaded_args(seed, device):
    tokens = torch.tensor([1, 2, 3, 4, 6, 7, 9, 10, 11, 13, 14, 15, 101, 102, 103, 4097,
                           150_001, 150_002, 150_003, 2**31 - 1, 2**31 - 2, 2**31 - 3, 2**33 + 1, 2**33 + 3,
                           17, 18, 19, 21, 22, 23, 25, 27], dtype=torch.int64)
    assert tokens.numel() == BLOCK
    for position in (0, 5, 2**32 - 1, 2**32, 2**32 + 3, 2**62 + 9):
        for stream in (0, 1, 2):
            out = torch.full((BLOCK,), float("nan"), device=device)
            _uniform_loaded_args[(1,)](out, torch.tensor([_as_i64(seed)], device=device),
                                       torch.tensor([position], device=device), tokens.to(device), stream,
                                       BLOCK=BLOCK)
            expected = rng.uniforms(seed, position, stream, tokens)
            assert torch.equal(out.cpu().view(torch.int32), expected.view(torch.int32)), (seed, position, stream)


# -------------------------------------------------------------------------------------------------
# 3. Statistical quality
# -------------------------------------------------------------------------------------------------
N = 10**6
Z_1E6 = 4.753          # one-sided standard-normal quantile for probability 1e-6
Z2_1E6 = 4.892         # two-sided (|Z| > 4.892 has probability 1e-6)


def chi2_bounds(df: int, z: float = Z_1E6) -> tuple[float, float]:
    """Wilson-Hilferty: (X/df)**(1/3) ~ N(1 - 2/(9 df), 2/(9 df)); accurate to <1% in the tail for df >= 100.

    Returns the (lower, upper) thresholds each exceeded with probability ~1e-6 under the null; the lower
    one catches a sequence that is 'too uniform' (e.g. stratified rather than random).
    """
    a = 2.0 / (9.0 * df)
    return df * (1 - a - z * math.sqrt(a)) ** 3, df * (1 - a + z * math.sqrt(a)) ** 3


def chi_square(u: torch.Tensor, bins: int) -> float:
    counts = torch.bincount((u.double() * bins).long().clamp_(0, bins - 1), minlength=bins).double()
    e = u.numel() / bins
    return float(((counts - e) ** 2 / e).sum())


def assert_uniform(u: torch.Tensor, what: str):
    n = u.numel()
    assert u.dtype == torch.float32
    # range: never 0 or 1
    assert float(u.min()) >= 2.0**-24 and float(u.max()) <= 1 - 2.0**-24, what
    # chi-square, 1000 equiprobable bins (df = 999): thresholds ~[800, 1227] at 1e-6 on each side
    lo, hi = chi2_bounds(999)
    x2 = chi_square(u, 1000)
    assert lo < x2 < hi, f"{what}: chi-square {x2:.1f} outside ({lo:.1f}, {hi:.1f})"
    # Kolmogorov-Smirnov: by the DKW inequality P(sqrt(n) D > x) <= 2 exp(-2 x^2) = 9.3e-7 at x = 2.7.
    # (The generator's 2**-23 grid shifts the CDF by at most 2**-24, i.e. 0.0006 in sqrt(n) D units.)
    s, _ = torch.sort(u.double())
    i = torch.arange(1, n + 1, dtype=torch.float64)
    d = max(float((i / n - s).max()), float((s - (i - 1) / n).max()))
    assert math.sqrt(n) * d < 2.7, f"{what}: KS sqrt(n)*D = {math.sqrt(n) * d:.3f}"
    # mean and variance: |z| < 4.892 (two-sided 1e-6); Var(u) = 1/12, Var(u^2 - ...) via 4th moment
    m = float(u.double().mean())
    assert abs(m - 0.5) / math.sqrt(1 / 12 / n) < Z2_1E6, f"{what}: mean {m}"
    v = float(((u.double() - 0.5) ** 2).mean())   # E = 1/12, Var((u-1/2)^2) = 1/80 - 1/144
    assert abs(v - 1 / 12) / math.sqrt((1 / 80 - 1 / 144) / n) < Z2_1E6, f"{what}: variance {v}"


def assert_bits_balanced(words: torch.Tensor, what: str):
    """Each of the 23 bits the conversion uses is 1 with frequency 1/2 (|z| < 4.892 for each)."""
    n = words.numel()
    for b in range(9, 32):
        f = float(((words >> b) & 1).double().mean())
        z = (f - 0.5) / (0.5 / math.sqrt(n))
        assert abs(z) < Z2_1E6, f"{what}: bit {b} frequency {f} (z = {z:.2f})"


def assert_uncorrelated(a: torch.Tensor, b: torch.Tensor, what: str):
    """Pearson correlation of independent uniforms has sd 1/sqrt(n); |r| < 4.892/sqrt(n) (=0.0049 at 1e6)."""
    n = a.numel()
    r = float(torch.corrcoef(torch.stack([a.double(), b.double()]))[0, 1])
    assert abs(r) < Z2_1E6 / math.sqrt(n), f"{what}: correlation {r:.5f}"


def words_grid(seed: int, positions: torch.Tensor, stream: int, token: int) -> torch.Tensor:
    """rng.random_words for one token at many positions (vectorized; checked against rng below)."""
    z = torch.zeros_like(positions)
    w = rng.philox4x32(seed, z + (token >> 2), positions & M32, z + stream, positions >> 32)
    return w[token & 3]


TOKENS = torch.arange(N, dtype=torch.int64)


def test_uniformity_over_tokens():
    seed = 0x5EED_1234_ABCD_0001
    for stream in (0, 1, 2):
        words = rng.random_words(seed, 123, stream, TOKENS)
        assert_bits_balanced(words, f"tokens, stream {stream}")
        assert_uniform(rng.words_to_uniform(words), f"tokens, stream {stream}")


def test_uniformity_over_positions_and_seeds():
    pos = torch.arange(2**32 - N // 2, 2**32 + N // 2, dtype=torch.int64)   # straddles the 2**32 carry
    for token in (0, 3):
        words = words_grid(7, pos, 0, token)
        for j in (0, N // 2 - 1, N // 2, N - 1):       # the vectorized helper is rng's layout
            assert int(words[j]) == int(rng.random_words(7, int(pos[j]), 0, torch.tensor([token]))[0])
        assert_bits_balanced(words, f"positions, token {token}")
        assert_uniform(rng.words_to_uniform(words), f"positions, token {token}")
    # over seeds: 2000 consecutive seeds (straddling 2**63) x 500 tokens at one position
    u = torch.cat([rng.uniforms(s, 42, 0, torch.arange(500)) for s in range(2**63 - 1000, 2**63 + 1000)])
    assert_uniform(u, "seeds")


def test_serial_pairs_within_philox_block():
    """2-D chi-square of (u_t, u_t+1), non-overlapping pairs, 32 x 32 cells (df = 1023)."""
    u = rng.uniforms(99, 5, 0, torch.arange(2 * N))
    a, b = u[0::2].double(), u[1::2].double()
    cell = (a * 32).long() * 32 + (b * 32).long()
    counts = torch.bincount(cell, minlength=1024).double()
    e = a.numel() / 1024
    x2 = float(((counts - e) ** 2 / e).sum())
    lo, hi = chi2_bounds(1023)
    assert lo < x2 < hi, f"pair chi-square {x2:.1f} outside ({lo:.1f}, {hi:.1f})"


def test_independence():
    seed = 2**64 - 3
    u = {s: rng.uniforms(seed, 1000, s, TOKENS) for s in (0, 1, 2)}
    assert_uncorrelated(u[0], u[1], "streams 0/1")
    assert_uncorrelated(u[0], u[2], "streams 0/2")
    assert_uncorrelated(u[1], u[2], "streams 1/2")
    assert_uncorrelated(u[0], rng.uniforms(seed, 1001, 0, TOKENS), "positions 1000/1001")
    assert_uncorrelated(u[0], rng.uniforms(seed, 1000 + 2**32, 0, TOKENS), "positions p / p + 2**32")
    assert_uncorrelated(u[0], rng.uniforms(seed - 1, 1000, 0, TOKENS), "seeds s / s-1")
    assert_uncorrelated(u[0], rng.uniforms(seed ^ (1 << 40), 1000, 0, TOKENS), "seeds differing in the high word")
    # the four lanes of one Philox call
    lanes = u[0].view(-1, 4)
    for i in range(4):
        for j in range(i + 1, 4):
            r = float(torch.corrcoef(torch.stack([lanes[:, i].double(), lanes[:, j].double()]))[0, 1])
            assert abs(r) < Z2_1E6 / math.sqrt(lanes.shape[0]), f"lanes {i}/{j}: correlation {r:.5f}"
    # identical inputs give identical outputs; any changed input changes the stream
    assert torch.equal(u[0], rng.uniforms(seed, 1000, 0, TOKENS))
    for other in (rng.uniforms(seed, 1000, 1, TOKENS[:64]), rng.uniforms(seed, 1001, 0, TOKENS[:64]),
                  rng.uniforms(seed + 1, 1000, 0, TOKENS[:64])):
        assert (other != u[0][:64]).sum() > 60


def test_gumbel_is_standard_gumbel():
    """-log(-log u): mean = Euler-Mascheroni 0.5772, variance pi^2/6; 4.892-sigma bounds (10**6 draws)."""
    g = rng.gumbel(11, 0, 0, TOKENS).double()
    assert torch.isfinite(g).all()
    n = g.numel()
    mean, var = float(g.mean()), float(g.var())
    assert abs(mean - 0.5772156649) < Z2_1E6 * math.sqrt(math.pi**2 / 6 / n)
    # Var of the sample variance ~ (mu4 - sigma^4)/n, Gumbel excess kurtosis 12/5: mu4 = 5.4 sigma^4
    s2 = math.pi**2 / 6
    assert abs(var - s2) < Z2_1E6 * math.sqrt((5.4 - 1) * s2**2 / n)
    # tails: P(g > 5) = 1 - exp(-exp(-5)) = 0.006715
    f = float((g > 5).double().mean())
    pt = 1 - math.exp(-math.exp(-5))
    assert abs(f - pt) < Z2_1E6 * math.sqrt(pt * (1 - pt) / n)


@pytest.mark.interpreter
@pytest.mark.parametrize("seed", SEEDS)
def test_tile_uniforms_equal_per_token_uniforms(seed, device):
    """One Philox call per 4 tokens (the fused sampler's untruncated path) gives each token its own
    uniform, in token order: a permutation of the words would fail here."""
    for position in (0, 7, 2**32 + 3):
        for stream in (0, 2):
            for start in (0, 4, 4096, 150_000, 2**31 - 32):
                expected = rng.uniforms(seed, position, stream, torch.arange(start, start + BLOCK))
                for grouped in (False, True):
                    out = torch.full((BLOCK,), float("nan"), device=device)
                    _uniform_tile[(1,)](out, _as_i64(seed), position, start, STREAM=stream, BLOCK=BLOCK,
                                        GROUPED=grouped)
                    assert torch.equal(out.cpu().view(torch.int32), expected.view(torch.int32)), \
                        (seed, position, stream, start, grouped)


# -------------------------------------------------------------------------------------------------
# 4. The kernels' Gumbel noise (kernels/rng.py): accuracy against float64
# -------------------------------------------------------------------------------------------------
def _all_uniforms() -> torch.Tensor:
    """Every uniform the contract can produce: one word per value of its 23 kept bits."""
    return rng.words_to_uniform(torch.arange(2**23, dtype=torch.int64) << 9)


def test_inner_log_polynomial_is_accurate_on_every_uniform_it_serves():
    """log2(u) = d * Q(d), d = 1 - u, for u >= 3/4: relative error < 2e-7 on all 2**21 such uniforms, in
    fp32 Horner form as the kernel evaluates it (the GPU fuses the multiply-adds: no larger error)."""
    u = _all_uniforms()
    u = u[u >= 0.75]
    assert u.numel() == 2**21
    d = 1.0 - u                                     # exact in fp32 (Sterbenz)
    p = torch.full_like(d, -kernel_rng.NEG_LOG2_1M_COEFFS[-1])
    for c in reversed(kernel_rng.NEG_LOG2_1M_COEFFS[:-1]):
        p = p * d - c
    got = (d * p).double()
    exact = torch.log2(u.double())
    assert float((got / exact - 1).abs().max()) < 2e-7


@triton.jit
def _noise_of(u_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, noise_from_uniform(tl.load(u_ptr + offs)))


@pytest.mark.interpreter
def test_kernel_noise_is_minus_log_minus_log_u(device):
    """noise_from_uniform against -log(-log u) in float64: the extremes, both sides of the branch at
    u = 3/4, and 2**14 uniforms spread over the whole range. Bound 4e-6: the interpreter's path (exact
    log2 below 3/4) and the GPU's (MUFU: 1.7e-6 over all 2**23 in run 44, benchmarks/check_noise_gpu.py)
    both stay inside the 1e-5 near-tie tolerance of the token comparisons."""
    every = _all_uniforms()
    edge = torch.tensor([0, 1, 2, 2**22 - 1, 2**22, 3 * 2**21 - 2, 3 * 2**21 - 1, 3 * 2**21, 3 * 2**21 + 1,
                         2**23 - 2, 2**23 - 1])
    spread = torch.randperm(2**23, generator=torch.Generator().manual_seed(5))[: 2**14 - edge.numel()]
    u = every[torch.cat([edge, spread])].to(device)
    out = torch.full_like(u, float("nan"))
    _noise_of[(u.numel() // 1024,)](u, out, BLOCK=1024)
    exact = -torch.log(-torch.log(u.cpu().double()))
    err = (out.cpu().double() - exact).abs()
    assert float(err.max()) < 4e-6, float(err.max())
