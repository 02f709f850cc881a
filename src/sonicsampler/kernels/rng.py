"""In-kernel counter-based uniforms; the contract (and its torch twin) is in `sonicsampler/rng.py`."""
import triton
import triton.language as tl


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
def gumbel_noise(seed, position, stream, token):
    u = philox_uniform(seed, position, stream, token)
    return -tl.log(-tl.log(u))
