"""In-kernel counter-based uniforms; the contract (and its torch twin) is in `sonicsampler/rng.py`."""
import triton
import triton.language as tl

from . import INTERPRETED

# The Gumbel noise -log(-log(u)) takes two logarithms, and Triton's tl.log is a libdevice polynomial
# (~26 SASS instructions per element on sm_90, no MUFU). The inner one needs it: -log(u) for u near 1
# is tiny and must be accurate relative to itself. The outer one does not: MUFU's lg2.approx has an
# absolute error below 2**-22 on [0.5, 2] and ~2 ulp elsewhere (|log2| <= 24 here), i.e. the noise
# moves by at most ~3e-6, which only reorders perturbed scores within the near-tie tolerance the
# comparisons with the reference allow (1e-5; SEMANTICS.md: "up to float rounding of near-equal
# scores"). Run 40: 72 -> 50 instructions per token of noise, the untruncated path 233.9 -> 190.2 us
# at 128 rows. The interpreter cannot run inline assembly and keeps tl.log.
FAST_OUTER_LOG = tl.constexpr(not INTERPRETED)


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
    """-log(-log(u)), the outer logarithm by MUFU on a GPU (module comment)."""
    e = -tl.log(u)
    if FAST_OUTER_LOG:
        lg2 = tl.inline_asm_elementwise("lg2.approx.f32 $0, $1;", "=r,r", [e], dtype=tl.float32, is_pure=True,
                                        pack=1)
        return lg2 * -0.6931471805599453
    else:
        return -tl.log(e)


@triton.jit
def gumbel_noise(seed, position, stream, token):
    return noise_from_uniform(philox_uniform(seed, position, stream, token))


@triton.jit
def philox_uniform_tile(seed, position, stream, start, BLOCK: tl.constexpr):
    """philox_uniform of the BLOCK contiguous tokens start, start+1, ... (start a multiple of 4, BLOCK
    >= 4), with one Philox call per 4 tokens instead of one per token: the call's four words are the
    four tokens' (the counter holds token >> 2), interleaved back into token order."""
    pos = position.to(tl.int64)
    c0 = ((start >> 2) + tl.arange(0, BLOCK // 4)).to(tl.uint32)
    zero = c0 * 0
    c1 = zero + (pos & 0xFFFFFFFF).to(tl.uint32)
    c2 = zero + stream
    c3 = zero + ((pos >> 32) & 0xFFFFFFFF).to(tl.uint32)
    w0, w1, w2, w3 = tl.philox(seed, c0, c1, c2, c3)
    # interleave(a, b) = a0 b0 a1 b1 ...: the outer interleave gives w0_i w1_i w2_i w3_i per i.
    w = tl.interleave(tl.interleave(w0, w2), tl.interleave(w1, w3))
    return _words_to_uniform(w)


@triton.jit
def gumbel_noise_tile(seed, position, stream, start, BLOCK: tl.constexpr):
    return noise_from_uniform(philox_uniform_tile(seed, position, stream, start, BLOCK))
