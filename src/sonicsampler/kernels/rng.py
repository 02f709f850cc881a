"""In-kernel counter-based uniforms; the contract (and its torch twin) is in `sonicsampler/rng.py`."""
import triton
import triton.language as tl

from . import INTERPRETED

# The Gumbel noise -log(-log(u)) of every token is the cost of the exact untruncated path, so both
# logarithms avoid Triton's tl.log (a libdevice polynomial, ~26 SASS instructions per element on sm_90):
# - the inner one, e = -log2(u), must be accurate relative to itself (u near 1 makes it tiny): for
#   u >= 3/4 it is d * P(d) with d = 1 - u (exact in fp32) and P the degree-5 fit below, relative error
#   below 2e-7 over every uniform of the contract there (tests/test_rng.py checks all 2**21); below
#   3/4 MUFU's lg2.approx, whose absolute error below 2**-22 is a relative one below 6e-7 there;
# - the outer one only needs absolute accuracy: MUFU's lg2.approx again (~2 ulp, |log2 e| <= 24).
# The noise then moves by at most ~2e-6 from -log(-log(u)) in float64 (1.7e-6 over every uniform on
# an H100, run 44, benchmarks/check_noise_gpu.py), which only reorders perturbed
# scores within the near-tie tolerance that comparisons with the reference allow (1e-5; SEMANTICS.md:
# "up to float rounding of near-equal scores"). Per token of noise: 72 SASS instructions with two
# libdevice logs, 50 with the outer one on MUFU (run 40), 33 now (sm_90 compile). The interpreter
# cannot run inline assembly and takes tl.log2 where the GPU takes MUFU.
FAST_LOG2 = tl.constexpr(not INTERPRETED)
# -log2(1 - d) / d on [0, 1/4], lowest degree first (a weighted least-squares fit; fp32 constants).
NEG_LOG2_1M_COEFFS = (1.4426950216293335, 0.7213626503944397, 0.48021066188812256, 0.3719259202480316,
                      0.20762573182582855, 0.4902239441871643)
Q0, Q1, Q2, Q3, Q4, Q5 = (tl.constexpr(-c) for c in NEG_LOG2_1M_COEFFS)   # log2(1 - d) / d
LN2 = tl.constexpr(0.6931471805599453)
NEG_LN_LN2 = tl.constexpr(0.36651292058166435)   # -ln(ln 2): -ln(e ln 2) = -ln2 log2(e) + this


@triton.jit
def _log2(x):
    # .ftz: no input here is subnormal (u >= 2**-24, -log2(u) >= 8e-8), and without it ptxas wraps
    # each MUFU in three instructions of subnormal scaling.
    if FAST_LOG2:
        return tl.inline_asm_elementwise("lg2.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return tl.log2(x)


@triton.jit
def _log2_of_neg(x):
    """log2(-x) (the negation folds into the MUFU's operand)."""
    if FAST_LOG2:
        return tl.inline_asm_elementwise("{ .reg .f32 t; neg.f32 t, $1; lg2.approx.ftz.f32 $0, t; }", "=r,r", [x],
                                         dtype=tl.float32, is_pure=True, pack=1)
    else:
        return tl.log2(-x)


@triton.jit
def log2_uniform(u):
    """log2(u) for uniforms of the contract (u in [2**-24, 1 - 2**-24]): relative error below 2e-7 from
    the polynomial (u >= 3/4), below 6e-7 from MUFU on a GPU (u < 3/4)."""
    d = 1.0 - u
    near_one = d * (Q0 + d * (Q1 + d * (Q2 + d * (Q3 + d * (Q4 + d * Q5)))))
    return tl.where(u >= 0.75, near_one, _log2(u))


@triton.jit
def _words_to_uniform(x):
    # 23 random bits + 0.5, times 2**-23: exact in fp32, never 0 or 1 (see sonicsampler/rng.py).
    return ((x >> 9).to(tl.float32) + 0.5) * 1.1920928955078125e-07


@triton.jit
def philox_uniform(seed, position, stream, token):
    """u(seed, position, stream, token) for a block of token indices (int32 or int64).

    seed: int64 scalar (the uint64 seed's bit pattern); position: int64 scalar; stream: int.
    """
    pos = position.to(tl.int64)
    c0 = (token >> 2).to(tl.uint32)
    zero = c0 * 0
    c1 = zero + (pos & 0xFFFFFFFF).to(tl.uint32)
    c2 = zero + stream
    c3 = zero + ((pos >> 32) & 0xFFFFFFFF).to(tl.uint32)
    w0, w1, w2, w3 = tl.philox(seed, c0, c1, c2, c3)
    lane = token & 3
    w = tl.where(lane == 0, w0, tl.where(lane == 1, w1, tl.where(lane == 2, w2, w3)))
    return _words_to_uniform(w)


@triton.jit
def noise_from_uniform(u):
    """-log(-log(u)) = -ln2 log2(-log2 u) - ln(ln 2) (module comment)."""
    return _log2_of_neg(log2_uniform(u)) * -LN2 + NEG_LN_LN2


@triton.jit
def gumbel_noise(seed, position, stream, token):
    return noise_from_uniform(philox_uniform(seed, position, stream, token))


@triton.jit
def _philox_calls(seed, position, stream, c0):
    """The uniforms of the Philox calls with counters c0 (a block whose last dimension numbers
    consecutive calls), the four words of each call being its four tokens', interleaved back into
    token order along the last dimension (4x as long)."""
    pos = position.to(tl.int64)
    zero = c0 * 0
    c1 = zero + (pos & 0xFFFFFFFF).to(tl.uint32)
    c2 = zero + stream
    c3 = zero + ((pos >> 32) & 0xFFFFFFFF).to(tl.uint32)
    w0, w1, w2, w3 = tl.philox(seed, c0, c1, c2, c3)
    # interleave(a, b) = a0 b0 a1 b1 ...: the outer interleave gives w0_i w1_i w2_i w3_i per i.
    w = tl.interleave(tl.interleave(w0, w2), tl.interleave(w1, w3))
    return _words_to_uniform(w)


@triton.jit
def philox_uniform_tile(seed, position, stream, start, BLOCK: tl.constexpr):
    """philox_uniform of the BLOCK contiguous tokens start, start+1, ... (start a multiple of 4, BLOCK
    >= 4), with one Philox call per 4 tokens instead of one per token: the call's four words are the
    four tokens' (the counter holds token >> 2)."""
    return _philox_calls(seed, position, stream, ((start >> 2) + tl.arange(0, BLOCK // 4)).to(tl.uint32))


@triton.jit
def philox_uniform_groups(seed, position, stream, start, G: tl.constexpr):
    """philox_uniform_tile of 8 G tokens laid out as (G groups of 8 neighbours, 8): two calls a group."""
    c0 = (start >> 2) + 2 * tl.arange(0, G)[:, None] + tl.arange(0, 2)[None, :]
    return _philox_calls(seed, position, stream, c0.to(tl.uint32))


@triton.jit
def gumbel_noise_tile(seed, position, stream, start, BLOCK: tl.constexpr, GROUPED: tl.constexpr = False):
    """The noise of the BLOCK tokens from start, as a 1-D block or (GROUPED) as (BLOCK / 8, 8)."""
    if GROUPED:
        u = philox_uniform_groups(seed, position, stream, start, BLOCK // 8)
    else:
        u = philox_uniform_tile(seed, position, stream, start, BLOCK)
    return noise_from_uniform(u)
